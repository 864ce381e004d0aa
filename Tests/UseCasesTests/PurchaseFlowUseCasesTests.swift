import AppleSignedData
import AsyncHTTPClient
import Domain
import Foundation
import Logging
import SQLStore
import StoreTesting
import TestKit
import Testing
import UseCases

/// A store-signed purchase from proof to effect through the use cases (``VerifyPurchase``,
/// ``ReceiveNotification``), signed by a TestKit CA the tenant trusts, on every backend.
enum PurchaseFixture {
    static let now = StoreBackend.now
    static let bundleId = "com.example.a"

    /// The CA and the folder holding its root (the tenant's `trustedRootFiles` is relative to it).
    static let signing: (ca: TestCA, folder: URL) = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("berth-usecases-ca-\(UUID().uuidString)")
        do {
            let ca = try TestCA.generate(.init(now: now.addingTimeInterval(-86_400)))
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try ca.write(to: folder)
            return (ca, folder)
        } catch {
            fatalError("the test CA could not be made: \(error)")
        }
    }()

    static func runtime() async throws -> TenantRuntime {
        let json = """
            {"id": "a", "name": "A", "currency": "EUR", "timeZone": "Europe/Rome", "holdMinutes": 30,
             "apple": {"bundleId": "\(bundleId)", "environments": ["Sandbox"], "trustedRootFiles": ["root.pem"]},
             "auth": {"algorithm": "HS256", "issuer": "https://a.example", "secretEnv": "A_SECRET"},
             "credits": {"types": ["c"]},
             "products": [
               {"id": "rental.day", "kind": "booking", "type": "Consumable", "title": "Rental"},
               {"id": "pack10", "kind": "credits", "type": "Consumable", "title": "Ten", "credits": 10, "priceMinor": 99},
               {"id": "pro.lifetime", "kind": "unlock", "type": "Non-Consumable", "title": "Pro", "entitlement": "pro"},
               {"id": "premium.monthly", "kind": "subscription", "type": "Auto-Renewable Subscription", "title": "Premium",
                "entitlement": "premium", "tier": "standard", "cycle": "month"}
             ],
             "resources": [{"id": "boat", "kind": "rental", "name": "Gozzo", "pricePerDayMinor": 5000, "units": 2}],
             "bookingRules": {"rentalPriceBands": [{"maxPriceMinor": 1000000, "productId": "rental.day"}], "experienceProducts": {}}}
            """
        let tenant = try JSONDecoder().decode(Tenant.self, from: Data(json.utf8))
        try Catalog(tenants: [tenant]).validate()
        return try await TenantRuntime(
            tenant: tenant,
            // The folder's URL was made before the folder, so it has no trailing slash: the runtime
            // still reads it as a folder (its root.pem is trusted, or every purchase here fails).
            baseDirectory: signing.folder,
            environment: [:],
            clock: ManualClock(now),
            httpClient: .shared,
            logger: Logger(label: "use-cases-test")
        )
    }

    /// Apple's REFUND of `transaction`: marks it revoked at `at` (the caller's copy too, for a later
    /// notification of it) and signs the notification, at `signedAt` or at the revocation.
    static func refund(of transaction: inout TransactionPayload, at: Date, signedAt: Date? = nil) throws -> String {
        transaction.revocationDate = AppleTimestamp(at)
        transaction.revocationReason = .other
        return try signing.ca.signNotification(type: .refund, bundleId: bundleId, transaction: transaction, signedDate: signedAt ?? at)
    }

    /// The stored credit pack `pack10` (10 credits of type `c`), as an operator's catalog holds it.
    static func sellPack10(_ store: any Store) async throws {
        try await store.write { tx in
            try tx.credits.insert(
                CreditProduct(
                    tenantId: "a",
                    productId: "pack10",
                    creditType: "c",
                    credits: 10,
                    title: "Ten",
                    currency: "EUR",
                    createdAt: now,
                    updatedAt: now
                )
            )
        }
    }

    static func transaction(_ product: String, id: String) -> TransactionPayload {
        TransactionPayload.testPurchase(bundleId: bundleId, productId: product, transactionId: id, purchaseDate: now, signedDate: now)
    }

    struct Services {
        let store: any Store
        let clock: ManualClock
        let verify: VerifyPurchase
        let notifications: ReceiveNotification
        let create: CreateBooking

        init(_ store: any Store) {
            let clock = ManualClock(PurchaseFixture.now)
            let logger = Logger(label: "use-cases-test")
            self.store = store
            self.clock = clock
            verify = VerifyPurchase(store: store, prover: PurchaseProver(logger: logger, clock: clock), kinds: .all, clock: clock, logger: logger)
            notifications = ReceiveNotification(store: store, kinds: .all, clock: clock, logger: logger, claims: verify.claims)
            create = CreateBooking(store: store, clock: clock)
        }

        func book(_ runtime: TenantRuntime, user: String, day: Int) async throws -> Booking {
            try await create(
                .init(
                    runtime: runtime,
                    userId: user,
                    createdVia: .user(user),
                    request: BookingRequest(resourceId: "boat", start: SeasonFixture.day(day), end: SeasonFixture.day(day + 1), slot: nil, seats: nil)
                )
            )
        }

        func pay(
            _ runtime: TenantRuntime,
            user: String,
            booking: Int64?,
            jws: String,
            product: String = "rental.day"
        ) async throws -> VerifyPurchase.Result {
            try await verify(
                .init(
                    runtime: runtime,
                    userId: user,
                    productId: product,
                    proof: .jws(jws),
                    target: booking.map { .booking(id: $0) },
                    callerProvesUser: true
                )
            )
        }

        func booking(_ id: Int64) async throws -> Booking? {
            try await store.read { try $0.bookings.booking(id: id, tenantId: "a", forUpdate: false) }
        }
    }

    static func outcome(_ outcome: PurchaseOutcome) -> String {
        switch outcome {
        case .applied: "applied"
        case .repeated: "repeated"
        case .replay: "replay"
        case .needsRefund(_, let code, _): "needs_refund:\(code.rawValue)"
        case .refused(let code, _): code.rawValue
        }
    }
}

@Suite("Purchases from proof to effect through the use cases, on every backend")
struct PurchaseFlowUseCasesTests {
    @Test(
        "a signed transaction pays a held booking once: confirmed, the purchase recorded; sent again it is a repeat",
        arguments: StoreBackend.available
    )
    func paysBooking(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 3)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000101"))
            let paid = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws)
            #expect(PurchaseFixture.outcome(paid.outcome) == "applied")
            #expect(try await services.booking(booking.id)?.status == .confirmed)
            let again = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws)
            #expect(PurchaseFixture.outcome(again.outcome) == "repeated")
            let purchases = try await store.read { try $0.purchases.purchases(tenantId: "a", page: Page()) }
            #expect(purchases.total == 1, "one purchase row for one transaction")
        }
    }

    @Test("one transaction for another user's booking is a replay: nothing applied, that booking still unpaid", arguments: StoreBackend.available)
    func replayAcrossUsers(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let mine = try await services.book(runtime, user: "ana", day: 5)
            let theirs = try await services.book(runtime, user: "bea", day: 5)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000102"))
            _ = try await services.pay(runtime, user: "ana", booking: mine.id, jws: jws)
            let replayed = try await services.pay(runtime, user: "bea", booking: theirs.id, jws: jws)
            #expect(PurchaseFixture.outcome(replayed.outcome) == "replay")
            #expect(try await services.booking(theirs.id)?.status == .pendingPayment)
        }
    }

    @Test("a transaction for another product does not pay the booking", arguments: StoreBackend.available)
    func productMismatch(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 7)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("pack10", id: "2000000000000103"))
            let answer = await SeasonFixture.refusal {
                let result = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws, product: "rental.day")
                Issue.record("a pack10 transaction answered \(PurchaseFixture.outcome(result.outcome)) for a rental")
            }
            #expect(answer == .productMismatch, "\(String(describing: answer))")
            #expect(try await services.booking(booking.id)?.status == .pendingPayment)
        }
    }

    @Test("a transaction signed by a CA the tenant does not trust is refused before anything is read or written", arguments: StoreBackend.available)
    func untrustedSigner(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        let stranger = try TestCA.generate(.init(now: PurchaseFixture.now.addingTimeInterval(-86_400)))
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 9)
            let jws = try stranger.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000104"))
            let refused = await SeasonFixture.refusal { _ = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws) }
            #expect(refused != nil, "an untrusted signature is refused")
            #expect(try await services.booking(booking.id)?.status == .pendingPayment)
            let purchases = try await store.read { try $0.purchases.purchases(tenantId: "a", page: Page()) }
            #expect(purchases.total == 0)
        }
    }

    @Test(
        "Apple's REFUND of a paid booking marks it refunded and frees its unit; the same notification again changes nothing",
        arguments: StoreBackend.available
    )
    func refundCancelsBooking(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let booking = try await services.book(runtime, user: "ana", day: 11)
            var transaction = PurchaseFixture.transaction("rental.day", id: "2000000000000105")
            let jws = try PurchaseFixture.signing.ca.signTransaction(transaction)
            _ = try await services.pay(runtime, user: "ana", booking: booking.id, jws: jws)
            services.clock.advance(3600)
            let refund = try PurchaseFixture.refund(of: &transaction, at: PurchaseFixture.now.addingTimeInterval(3600))
            let received = try await services.notifications(signedPayload: refund, runtime: runtime)
            #expect(!received.duplicate)
            let after = try #require(try await services.booking(booking.id))
            #expect(after.status == .refunded, "\(after.status)")
            // Both units of the day are free again (the refunded booking holds nothing).
            _ = try await services.book(runtime, user: "bea", day: 11)
            _ = try await services.book(runtime, user: "cai", day: 11)
            let again = try await services.notifications(signedPayload: refund, runtime: runtime)
            #expect(again.duplicate, "the same notification is recognised, not applied twice")
        }
    }

    @Test("a credit pack adds its credits once; its refund takes them back", arguments: StoreBackend.available)
    func creditsAndRefund(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            try await PurchaseFixture.sellPack10(store)
            var transaction = PurchaseFixture.transaction("pack10", id: "2000000000000106")
            let jws = try PurchaseFixture.signing.ca.signTransaction(transaction)
            let bought = try await services.pay(runtime, user: "ana", booking: nil, jws: jws, product: "pack10")
            #expect(PurchaseFixture.outcome(bought.outcome) == "applied")
            func balance() async throws -> Int64 {
                let account = try await store.read { tx in
                    try tx.credits.account(tenantId: "a", userId: "ana", creditType: "c", now: PurchaseFixture.now, forUpdate: false)
                }
                return account.summary.balance
            }
            #expect(try await balance() == 10)
            _ = try await services.pay(runtime, user: "ana", booking: nil, jws: jws, product: "pack10")
            #expect(try await balance() == 10, "the same transaction again adds nothing")
            let refund = try PurchaseFixture.refund(of: &transaction, at: PurchaseFixture.now.addingTimeInterval(60))
            services.clock.advance(60)
            _ = try await services.notifications(signedPayload: refund, runtime: runtime)
            #expect(try await balance() == 0, "the refunded pack's credits are taken back")
        }
    }

    @Test(
        "a paid transaction naming a booking that is not there is kept unapplied, counted once per retry; an operator applies it to the right booking",
        arguments: StoreBackend.available
    )
    func unappliedThenApplied(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let right = try await services.book(runtime, user: "ana", day: 13)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000107"))
            var kept: UnappliedPayment?
            for _ in 0..<2 {
                do {
                    _ = try await services.pay(runtime, user: "ana", booking: 424_242, jws: jws)
                    Issue.record("a payment for a booking that is not there was applied")
                } catch let error as DomainError {
                    #expect(error.code == .bookingNotFound)
                    kept = error.unappliedPayment
                }
            }
            let payment = try #require(kept)
            #expect(payment.status == .open && payment.attempts == 2, "one row for the transaction, the retry counted")
            let resolve = ResolveUnappliedPayment(store: store, claims: services.verify.claims, clock: services.clock)
            let (applied, result) = try await resolve.apply(payment.id, runtime: runtime, actor: .admin(keyId: 1), userId: nil, bookingId: right.id)
            #expect(PurchaseFixture.outcome(result.outcome) == "applied")
            #expect(applied.status == .applied)
            #expect(try await services.booking(right.id)?.status == .confirmed)
            let again = await SeasonFixture.refusal {
                _ = try await resolve.markForRefund(payment.id, runtime: runtime, actor: .admin(keyId: 1), note: "late")
            }
            #expect(again != nil, "an applied payment is not marked for refund")
        }
    }

    @Test("an unapplied payment the operator sends back is marked for refund with its note, and is no longer open", arguments: StoreBackend.available)
    func unappliedRefund(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let jws = try PurchaseFixture.signing.ca.signTransaction(PurchaseFixture.transaction("rental.day", id: "2000000000000108"))
            var kept: UnappliedPayment?
            do {
                _ = try await services.pay(runtime, user: "ana", booking: 515_151, jws: jws)
            } catch let error as DomainError {
                kept = error.unappliedPayment
            }
            let payment = try #require(kept)
            let resolve = ResolveUnappliedPayment(store: store, claims: services.verify.claims, clock: services.clock)
            let marked = try await resolve.markForRefund(payment.id, runtime: runtime, actor: .admin(keyId: 1), note: "customer left")
            #expect(marked.status == .refundRequested && marked.note == "customer left")
            let open = try await store.read { try $0.purchases.unappliedPayments(tenantId: "a", status: .open, page: Page()) }
            #expect(open.total == 0)
        }
    }

    @Test(
        "a subscription gives premium until it expires; Apple's DID_RENEW carries it into the next month; its REFUND ends it",
        arguments: StoreBackend.available
    )
    func subscriptionLifecycle(backend: StoreBackend) async throws {
        let runtime = try await PurchaseFixture.runtime()
        try await backend.run { store in
            let services = PurchaseFixture.Services(store)
            let month: TimeInterval = 30 * 86_400
            let first = TransactionPayload.testPurchase(
                bundleId: PurchaseFixture.bundleId,
                productId: "premium.monthly",
                transactionId: "2000000000000301",
                type: .autoRenewableSubscription,
                purchaseDate: PurchaseFixture.now,
                expiresDate: PurchaseFixture.now.addingTimeInterval(month)
            )
            let bought = try await services.pay(
                runtime,
                user: "ana",
                booking: nil,
                jws: try PurchaseFixture.signing.ca.signTransaction(first),
                product: "premium.monthly"
            )
            #expect(PurchaseFixture.outcome(bought.outcome) == "applied")
            let entitlements = UserEntitlements(store: store, clock: services.clock)
            #expect(try await entitlements(runtime: runtime, userId: "ana").isPremium)
            #expect(try await !entitlements(runtime: runtime, userId: "bea").isPremium, "another user holds nothing")
            // The month passes without a renewal: premium ends.
            services.clock.advance(month + 60)
            #expect(try await !entitlements(runtime: runtime, userId: "ana").isPremium)
            // Apple renews it (a new transaction of the same original): premium again until the next expiry.
            var renewal = TransactionPayload.testPurchase(
                bundleId: PurchaseFixture.bundleId,
                productId: "premium.monthly",
                transactionId: "2000000000000302",
                originalTransactionId: "2000000000000301",
                type: .autoRenewableSubscription,
                purchaseDate: PurchaseFixture.now.addingTimeInterval(month),
                expiresDate: PurchaseFixture.now.addingTimeInterval(2 * month)
            )
            let renewed = try PurchaseFixture.signing.ca.signNotification(
                type: .didRenew,
                bundleId: PurchaseFixture.bundleId,
                transaction: renewal,
                signedDate: PurchaseFixture.now.addingTimeInterval(month + 60)
            )
            _ = try await services.notifications(signedPayload: renewed, runtime: runtime)
            #expect(try await entitlements(runtime: runtime, userId: "ana").isPremium, "renewed by Apple's notification")
            // Refunded: premium ends at once, before its expiry.
            services.clock.advance(120)
            let refunded = try PurchaseFixture.refund(
                of: &renewal,
                at: PurchaseFixture.now.addingTimeInterval(month + 120),
                signedAt: PurchaseFixture.now.addingTimeInterval(month + 180)
            )
            _ = try await services.notifications(signedPayload: refunded, runtime: runtime)
            #expect(try await !entitlements(runtime: runtime, userId: "ana").isPremium, "a refunded subscription gives nothing")
        }
    }
}
