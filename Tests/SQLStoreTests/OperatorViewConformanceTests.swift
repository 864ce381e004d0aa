import Domain
import Foundation
import SQLStore
import StoreTesting
import Testing

/// What operators read about bookings (references, time zones), on every backend.
extension StoreConformance {
    @Test(
        "references and zones: a booking keeps both; it is found by its reference within its tenant only; a taken reference is known; the export lists oldest first",
        arguments: StoreBackend.available
    )
    func bookingReferencesAndZones(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var quote = Self.quote(Self.experience, start: Self.now.addingTimeInterval(86_400))
            quote.timeZone = "Europe/Rome"
            let booking = try await Self.admit(store, user: "ann", quote: quote)
            #expect(BookingReference.normalized(booking.reference) == booking.reference)
            let read = try await store.read { try $0.bookings.booking(id: booking.id, tenantId: "a", forUpdate: false) }
            #expect(read?.reference == booking.reference && read?.timeZone == "Europe/Rome")
            #expect(read?.localStart == booking.localStart)
            #expect(try await store.read { try $0.bookings.booking(reference: booking.reference, tenantId: "a") }?.id == booking.id)
            #expect(try await store.read { try $0.bookings.booking(reference: booking.reference, tenantId: "b") } == nil)
            #expect(try await store.read { try $0.bookings.referenceTaken(booking.reference, tenantId: "a") })
            #expect(try await !store.read { try $0.bookings.referenceTaken(booking.reference, tenantId: "b") })
            // Listings carry both.
            let listed = try await store.read {
                try $0.bookings.bookings(tenantId: "a", filter: BookingFilter(userId: "ann"), page: Page(limit: 10, offset: 0))
            }
            #expect(listed.items.first?.reference == booking.reference && listed.items.first?.timeZone == "Europe/Rome")
            // The CSV export: oldest first, the filter applied, both new columns.
            let later = try await Self.admit(
                store,
                user: "ann",
                quote: Self.quote(Self.rental, start: Self.now.addingTimeInterval(5 * 86_400)),
                now: Self.now.addingTimeInterval(1)
            )
            _ = try await Self.admit(
                store,
                user: "bob",
                quote: Self.quote(Self.rental, start: Self.now.addingTimeInterval(6 * 86_400)),
                now: Self.now.addingTimeInterval(2)
            )
            let exported = try await store.read { try $0.bookings.exportBookings(tenantId: "a", filter: BookingFilter(userId: "ann"), limit: 10) }
            #expect(
                exported.map(\.id) == [booking.id, later.id] && exported.first?.timeZone == "Europe/Rome"
                    && exported.last?.reference == later.reference
            )
            #expect(try await store.read { try $0.bookings.exportBookings(tenantId: "a", filter: BookingFilter(), limit: 2) }.count == 2)
            #expect(try await store.read { try $0.bookings.exportBookings(tenantId: "b", filter: BookingFilter(), limit: 10) }.isEmpty)
        }
    }

    static func sale(
        _ id: String,
        user: String,
        tenant: String = "a",
        product: String = "p",
        store: StoreName = .appStore,
        price: Int64 = 4_990,
        at: Date,
        status: PurchaseStatus = .applied,
        target: PurchaseTarget? = nil,
        order: String? = nil,
        original: String? = nil
    ) -> Purchase {
        var purchase = Purchase(
            id: RecordID.next(),
            tenantId: tenant,
            userId: user,
            target: target,
            store: store,
            environment: .sandbox,
            transactionId: id,
            originalTransactionId: original ?? id,
            productId: product,
            status: status,
            outcomeCode: nil,
            purchasedAt: at,
            createdAt: at,
            priceMilliunits: price,
            currency: "EUR",
            quantity: 1
        )
        purchase.orderId = order
        return purchase
    }

    @Test(
        "search finds, within its tenant only, a booking by reference or id, purchases by id, transaction, original transaction and order number, a PaymentIntent, an unapplied payment and a user; nothing for a stranger",
        arguments: StoreBackend.available
    )
    func operatorSearch(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let booking = try await Self.admit(store, user: "ann", quote: Self.quote(Self.rental, start: Self.now.addingTimeInterval(86_400)))
            let play = Self.sale("play-token-1", user: "ann", store: .googlePlay, at: Self.now, order: "GPA.3345-1234-5678-90123")
            let renewal = Self.sale("2000000000000102", user: "ann", at: Self.now.addingTimeInterval(60), original: "2000000000000101")
            let other = Self.sale("2000000000000999", user: "zed", tenant: "b", at: Self.now)
            let payment = CardPaymentConformance.payment(booking, ref: "pi_3Q0search", key: "search-key", status: .open)
            try await store.write { tx in
                try tx.purchases.insert(play, proofHash: "h1")
                try tx.purchases.insert(renewal, proofHash: "h2")
                try tx.purchases.insert(other, proofHash: "h3")
                try tx.cardPayments.insert(payment)
            }
            func search(_ text: String, tenant: String = "a") async throws -> [SearchHit] {
                try await store.read {
                    try $0.operatorViews.search(tenantId: tenant, text: text, reference: BookingReference.normalized(text), limit: 50)
                }
            }
            let byReference = try await search(booking.reference.lowercased())
            #expect(byReference.map(\.kind) == [.booking] && byReference.first?.bookingId == booking.id && byReference.first?.matched == "reference")
            #expect(try await search(String(booking.id)).contains { $0.kind == .booking && $0.matched == "id" })
            #expect(try await search(String(play.id)).contains { $0.kind == .purchase && $0.purchaseId == play.id })
            let byOrder = try await search("GPA.3345-1234-5678-90123")
            #expect(byOrder.map(\.matched) == ["orderId"] && byOrder.first?.purchaseId == play.id && byOrder.first?.userId == "ann")
            #expect(try await search("play-token-1").map(\.matched) == ["transactionId"])
            #expect(
                try await search("2000000000000101").map(\.matched) == ["originalTransactionId"],
                "a renewal found by its original transaction id"
            )
            let card = try await search("pi_3Q0search")
            #expect(card.map(\.kind) == [.cardPayment] && card.first?.bookingId == booking.id)
            let user = try await search("ann")
            #expect(user.map(\.kind) == [.user])
            #expect(try await search("zed").isEmpty, "a user of another tenant is not found")
            #expect(try await search("2000000000000999").isEmpty, "another tenant's purchase is not found")
            #expect(try await search(booking.reference, tenant: "b").isEmpty)
            #expect(try await search("nobody-at-all").isEmpty)
            let order = try await store.read {
                try $0.operatorViews.purchases(tenantId: "a", transactionIds: ["2000000000000102", "2000000000000999"])
            }
            #expect(order.map(\.purchaseId) == [renewal.id], "an Apple order's transactions, this tenant's only")
            // The order number is stored with the purchase.
            #expect(
                try await store.read {
                    try $0.purchases.purchase(store: .googlePlay, environment: .sandbox, transactionId: "play-token-1", forUpdate: false)
                }?.orderId
                    == "GPA.3345-1234-5678-90123"
            )
        }
    }

    @Test(
        "a customer's timeline: purchases, bookings and their changes, credits, subscriptions and their notifications, grants, unapplied payments, card payments, consent and webhooks, newest first, one user and tenant only",
        arguments: StoreBackend.available
    )
    func customerTimeline(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var quote = Self.quote(Self.experience, start: Self.now.addingTimeInterval(2 * 86_400))
            quote.timeZone = "Europe/Rome"
            let booking = try await Self.admit(store, user: "ann", quote: quote)
            _ = try await Self.admit(store, user: "bob", quote: Self.quote(Self.rental, start: Self.now.addingTimeInterval(3 * 86_400)))
            let later = Self.now.addingTimeInterval(600)
            let sale = Self.sale("2000000000000201", user: "ann", at: Self.now.addingTimeInterval(60), target: .booking(id: booking.id))
            try await store.write { tx in
                try tx.purchases.insert(sale, proofHash: "h")
                var cancelled = booking
                cancelled.status = .cancelled
                cancelled.statusReason = "storm warning"
                cancelled.updatedAt = later
                try tx.bookings.update(cancelled, now: later)
                try tx.audit.append(
                    AuditRecord(
                        tenantId: "a",
                        actor: .admin(keyId: 77),
                        action: .bookingCancelled,
                        bookingId: booking.id,
                        purchaseId: nil,
                        detail: ["from": "pending_payment", "to": "cancelled", "reason": "storm warning"],
                        at: later
                    )
                )
                try tx.outbox.enqueue(
                    [
                        WebhookEvent(
                            type: .bookingCancelled,
                            data: ["bookingId": String(booking.id)],
                            subject: WebhookEvent.bookingSubject(booking.id)
                        )
                    ],
                    tenantId: "a",
                    now: later
                )
                try tx.subscriptions.save(Self.subscription("2000000000000301", owner: "ann"))
                try tx.consents.record(ConsumptionConsent(tenantId: "a", userId: "ann", consented: true, textVersion: "v1", recordedAt: later))
                try tx.cardPayments.insert(CardPaymentConformance.payment(booking, ref: "pi_timeline", key: "timeline-key", status: .open))
                try tx.notifications.insert(
                    IncomingNotification(
                        tenantId: "a",
                        uuid: "n-1",
                        type: NotificationType(rawValue: "REFUND"),
                        subtype: nil,
                        environment: .sandbox,
                        signedAt: later,
                        transactionId: "2000000000000201",
                        payloadHash: "ph"
                    ),
                    outcome: "booking_refunded",
                    receivedAt: later
                )
            }
            let entries = try await store.read { try $0.operatorViews.timeline(tenantId: "a", userId: "ann", limit: 100) }
            let kinds = Set(entries.map(\.kind))
            for kind in ["purchase", "booking", "booking_change", "subscription", "consent", "card_payment", "webhook", "notification"] {
                #expect(kinds.contains(kind), "no \(kind) in \(entries.map(\.kind))")
            }
            #expect(entries.map(\.at) == entries.map(\.at).sorted(by: >), "newest first")
            let change = try #require(entries.first { $0.kind == "booking_change" })
            #expect(change.detail["reason"] == "storm warning" && change.detail["actor"] != nil)
            #expect(entries.allSatisfy { $0.summary.isEmpty }, "the store returns facts; Domain's CustomerStory words them")
            // The header's totals agree with the timeline's rows (which are all of ann's here).
            let facts = try await store.read { try $0.operatorViews.customerFacts(tenantId: "a", userId: "ann") }
            let purchases = entries.filter { $0.kind == "purchase" }
            #expect(facts.purchases == purchases.count && facts.bookings == entries.filter { $0.kind == "booking" }.count, "\(facts)")
            #expect(facts.stores == Array(Set(purchases.compactMap { $0.detail["store"] })).sorted())
            let priced = purchases.compactMap { $0.detail["priceMilliunits"].flatMap { Int64($0) } }.reduce(0, +)
            #expect(facts.paid.reduce(0) { $0 + $1.milliunits } == priced && facts.firstSeen != nil)
            let stranger = try await store.read { try $0.operatorViews.customerFacts(tenantId: "b", userId: "ann") }
            #expect(stranger == CustomerFacts(), "another tenant's customer of the same name is someone else")
            let made = try #require(entries.first { $0.kind == "booking" })
            #expect(made.detail["timeZone"] == "Europe/Rome" && made.detail["reference"] == booking.reference)
            #expect(made.detail["localStart"] == booking.localStart)
            #expect(entries.allSatisfy { $0.bookingId == nil || $0.bookingId == booking.id }, "bob's booking is not ann's")
            #expect(try await store.read { try $0.operatorViews.timeline(tenantId: "b", userId: "ann", limit: 100) }.isEmpty)
            let bob = try await store.read { try $0.operatorViews.timeline(tenantId: "a", userId: "bob", limit: 100) }
            #expect(bob.map(\.kind) == ["booking"])
            // Credit webhooks are a user's by their subject; `_` in a user id matches itself only.
            try await store.write { tx in
                for user in ["an_n", "anXn"] {
                    try tx.outbox.enqueue(
                        [
                            WebhookEvent(
                                type: WebhookEventType(rawValue: "credits.changed"),
                                data: ["userId": user],
                                subject: "credits:credits:\(user)"
                            )
                        ],
                        tenantId: "a",
                        now: later
                    )
                }
            }
            let underscore = try await store.read { try $0.operatorViews.timeline(tenantId: "a", userId: "an_n", limit: 1) }
            #expect(underscore.map(\.kind) == ["webhook"] && underscore.first?.detail["subject"] == "credits:credits:an_n")
        }
    }

    @Test(
        "overview facts: money per hour, store, currency and status; subscriptions new, ended and active with their last price; held slots; what needs action — this tenant's only",
        arguments: StoreBackend.available
    )
    func overviewFacts(backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let held = try await Self.admit(store, user: "ann", quote: Self.quote(Self.rental, start: Self.now.addingTimeInterval(3600)))
            try await store.write { tx in
                try tx.purchases.insert(Self.sale("t1", user: "ann", price: 10_000, at: Self.now), proofHash: "h")
                try tx.purchases.insert(Self.sale("t2", user: "bob", price: 5_000, at: Self.now.addingTimeInterval(60)), proofHash: "h")
                try tx.purchases.insert(
                    Self.sale("t3", user: "cy", store: .googlePlay, price: 2_000, at: Self.now.addingTimeInterval(120), status: .refunded),
                    proofHash: "h"
                )
                try tx.purchases.insert(
                    Self.sale("t4", user: "cy", price: 1_000, at: Self.now.addingTimeInterval(7200), target: .credits(type: "credits")),
                    proofHash: "h"
                )
                try tx.purchases.insert(Self.sale("t9", user: "zed", tenant: "b", price: 99_000, at: Self.now), proofHash: "h")
                try tx.purchases.insert(
                    Self.sale("s-renewal", user: "ann", price: 9_990, at: Self.now.addingTimeInterval(30), original: "sub-1"),
                    proofHash: "h"
                )
                try tx.subscriptions.save(Self.subscription("sub-1", owner: "ann"))
                var ended = Self.subscription("sub-2", owner: "bob", purchased: -40 * 86_400)
                ended.expiresAt = Self.now.addingTimeInterval(-3600)
                try tx.subscriptions.save(ended)
            }
            let facts = try await store.read {
                try $0.operatorViews.overview(
                    tenantId: "a",
                    from: Self.now.addingTimeInterval(-86_400),
                    to: Self.now.addingTimeInterval(86_400),
                    now: Self.now.addingTimeInterval(60),
                    heldUntil: Self.now.addingTimeInterval(8 * 86_400),
                    playOverdueBefore: Self.now
                )
            }
            let hour = Self.now.epochMilliseconds / 3_600_000
            let applied = facts.money.filter { $0.hour == hour && $0.store == "app_store" && $0.status == "applied" }
            #expect(applied.map(\.count).reduce(0, +) == 3 && applied.map(\.milliunits).reduce(0, +) == 24_990, "\(facts.money)")
            #expect(facts.money.contains { $0.store == "google_play" && $0.status == "refunded" && $0.milliunits == 2_000 })
            #expect(!facts.money.contains { $0.milliunits == 99_000 }, "another tenant's money is not counted")
            #expect(facts.creditPacks.map(\.count).reduce(0, +) == 1)
            #expect(facts.newSubscriptions.map(\.count).reduce(0, +) == 2)
            #expect(facts.endedSubscriptions.map(\.count).reduce(0, +) == 1, "the subscription that expired an hour ago")
            #expect(
                facts.activeSubscriptions.count == 1 && facts.activeSubscriptions.first?.milliunits == 9_990
                    && facts.activeSubscriptions.first?.currency == "EUR"
            )
            #expect(facts.held.map(\.resourceId) == ["boat"] && facts.held.first?.start == held.start && facts.held.first?.confirmed == false)
            #expect(facts.unappliedPayments == 0 && facts.deadLetters == 0 && facts.webhookBacklog == 0 && facts.purchasesNeedingRefund == 0)
        }
    }
}
