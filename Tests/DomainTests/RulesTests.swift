import Domain
import Foundation
import Testing

@Suite("Domain rules")
struct RulesTests {
    static let catalogURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("products.json")

    /// The shipped seaboo tenant with its zone taken away: the rules below are stated in UTC
    /// instants (17:30Z is the sunset slot); the tests of local time set `Europe/Rome` themselves.
    func seaboo() throws -> Tenant {
        var tenant = try #require(try Catalog.decode(Data(contentsOf: Self.catalogURL)).tenant(id: "seaboo"))
        tenant.timeZone = nil
        return tenant
    }

    @Test("the shipped seaboo tenants live in Europe/Rome (their slot times, rental days and the operator's page)")
    func shippedZone() throws {
        let catalog = try Catalog.decode(Data(contentsOf: Self.catalogURL))
        #expect(catalog.tenant(id: "seaboo")?.timeZone == "Europe/Rome" && catalog.tenant(id: "seaboo-test")?.timeZone == "Europe/Rome")
    }

    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(
        "rental price bands: up to €100 basic, above premium",
        arguments: [
            (1, Int64(8000), "it.seaboo.rental.basic"),
            (2, Int64(16000), "it.seaboo.rental.premium"),
        ]
    )
    func priceBands(days: Int, price: Int64, product: String) throws {
        let start = now.addingTimeInterval(86_400)
        let quote = try seaboo().quote(
            BookingRequest(resourceId: "gozzo-5m", start: start, end: start.addingTimeInterval(TimeInterval(days) * 86_400)),
            now: now
        )
        #expect(quote.priceMinor == price)
        #expect(quote.requiredProductId == product)
    }

    @Test("exactly €100 is still basic")
    func bandEdge() throws {
        var rules = try #require(try seaboo().bookingRules)
        #expect(rules.rentalProduct(priceMinor: 10000) == "it.seaboo.rental.basic")
        #expect(rules.rentalProduct(priceMinor: 10001) == "it.seaboo.rental.premium")
        rules.rentalPriceBands = []
        #expect(rules.rentalProduct(priceMinor: 1) == nil)
    }

    @Test(
        "experience types map to their products",
        arguments: [
            ("sunset-cruise", 17, 30, "it.seaboo.experience.sunset"),
            ("diving-intro", 12, 0, "it.seaboo.experience.diving"),
            ("fishing-morning", 5, 0, "it.seaboo.experience.fishing"),
        ]
    )
    func experienceProducts(resource: String, hour: Int, minute: Int, product: String) throws {
        let day = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + 2 * 86_400
        let slot = Date(timeIntervalSince1970: day + TimeInterval(hour * 3600 + minute * 60))
        let quote = try seaboo().quote(BookingRequest(resourceId: resource, slot: slot, seats: 2), now: now)
        #expect(quote.requiredProductId == product)
        #expect(quote.seats == 2)
    }

    func booking(status: BookingStatus, holdExpiresAt: Date, user: String = "u", id: Int64 = 1) -> Booking {
        Booking(
            id: id,
            tenantId: "t",
            userId: user,
            resourceId: "gozzo-5m",
            resourceKind: .rental,
            start: now,
            end: now.addingTimeInterval(3600),
            seats: 1,
            priceMinor: 8000,
            currency: "EUR",
            requiredProductId: "p",
            status: status,
            holdExpiresAt: holdExpiresAt,
            createdAt: now,
            updatedAt: now
        )
    }

    func claim(user: String = "u", booking: Int64 = 1, tenant: String = "t") -> PurchaseClaim {
        PurchaseClaim(
            tenantId: tenant,
            userId: user,
            target: .booking(id: booking),
            environment: .sandbox,
            transactionId: "1",
            originalTransactionId: "1",
            productId: "p",
            purchasedAt: now,
            proofHash: "h"
        )
    }

    func purchase(user: String = "u", booking: Int64 = 1, tenant: String = "t") -> Purchase {
        Purchase(
            id: 9,
            tenantId: tenant,
            userId: user,
            target: .booking(id: booking),
            store: .appStore,
            environment: .sandbox,
            transactionId: "1",
            originalTransactionId: "1",
            productId: "p",
            status: .applied,
            outcomeCode: nil,
            purchasedAt: now,
            createdAt: now
        )
    }

    @Test(
        "a booking's payment is decided in one call: the proof is checked first, then the claim policy, then the plan; a lapsed hold needs the slot's occupancy"
    )
    func bookingDecision() throws {
        let proven = ProvenTransaction(
            transactionId: "1",
            originalTransactionId: "1",
            productId: "p",
            environment: .sandbox,
            purchasedAt: now,
            revoked: false,
            appAccountToken: nil,
            proofHash: "h"
        )
        func decide(_ booking: Booking, existing: Purchase? = nil, product: String = "p", occupancy: Occupancy? = nil) throws -> PurchaseOutcome {
            try BookingPurchaseRules.decide(
                claim(),
                proven: proven,
                claimedProductId: product,
                claimedTransactionId: "1",
                policy: PurchasePolicy(),
                booking: booking,
                resource: nil,
                existing: existing,
                revokedByApple: false,
                holdExtension: 900,
                occupancy: occupancy,
                now: now
            )
            .outcome
        }
        // A live hold: applied without the slot's occupancy.
        guard case .applied = try decide(booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(600))) else {
            Issue.record("a live hold is paid")
            return
        }
        // The same transaction again: a repeat.
        guard case .repeated = try decide(booking(status: .confirmed, holdExpiresAt: now), existing: purchase()) else {
            Issue.record("a repeat")
            return
        }
        // Another product than the booking's: refused before the policy, whatever is stored.
        #expect(throws: DomainError.self) { _ = try decide(booking(status: .confirmed, holdExpiresAt: now), existing: purchase(), product: "q") }
        // A lapsed hold is not decided without the slot's occupancy, and with it (no resource here) is kept for a refund.
        let lapsed = booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(-1))
        #expect(throws: DomainError.self) { _ = try decide(lapsed) }
        guard case .needsRefund(_, let code, _) = try decide(lapsed, occupancy: Occupancy.none) else {
            Issue.record("a lapsed hold without room")
            return
        }
        #expect(code == .slotUnavailable)
    }

    @Test("exactly once: the same claim repeats, every other claim is a replay")
    func replayRules() throws {
        #expect(ClaimPolicy.settle(claim(), existing: nil) == nil)
        #expect(ClaimPolicy.settle(claim(), existing: purchase()) == .repeatOf(purchase()))
        guard case .replay = ClaimPolicy.settle(claim(user: "other"), existing: purchase()) else {
            Issue.record("other user")
            return
        }
        guard case .replay = ClaimPolicy.settle(claim(booking: 2), existing: purchase()) else {
            Issue.record("other booking")
            return
        }
        guard case .replay = ClaimPolicy.settle(claim(tenant: "x"), existing: purchase()) else {
            Issue.record("other tenant")
            return
        }

        // A replay plan records the attempt and refers to the original purchase; a repeat writes nothing.
        let replay = try #require(ClaimPolicy.plan(claim(user: "other"), existing: purchase(), revokedByApple: false, now: now))
        #expect(replay.outcome == .replay(reason: "transaction already used by another user"))
        #expect(replay.replay?.existingPurchaseId == 9)
        #expect(replay.purchase == nil && replay.effects.isEmpty)
        #expect(replay.audit.map(\.action) == [.replayDetected])
        let repeated = try #require(ClaimPolicy.plan(claim(), existing: purchase(), revokedByApple: false, now: now))
        #expect(repeated == PurchasePlan(outcome: .repeated(purchase())))
        // A repeat of a payment that could not be honoured answers the same refusal again.
        var unhonoured = purchase()
        unhonoured.status = .needsRefund
        unhonoured.outcomeCode = "slot_unavailable"
        guard case .needsRefund(_, let code, _) = ClaimPolicy.plan(claim(), existing: unhonoured, revokedByApple: false, now: now)?.outcome else {
            Issue.record("an unhonoured repeat must answer needsRefund")
            return
        }
        #expect(code == .slotUnavailable)
        // Money Apple gave back pays for nothing.
        #expect(
            ClaimPolicy.plan(claim(), existing: nil, revokedByApple: true, now: now)?.outcome
                == .refused(code: .transactionRevoked, message: "Apple reported this transaction refunded or revoked before it was claimed")
        )
        var revoked = claim()
        revoked.revoked = true
        #expect(ClaimPolicy.plan(revoked, existing: nil, revokedByApple: false, now: now)?.purchase == nil)
        #expect(ClaimPolicy.plan(claim(), existing: nil, revokedByApple: false, now: now) == nil)
    }

    @Test("T1: a token names a user only when derived from the id, or, where ids are UUIDs, when it is the id in its one canonical spelling")
    func tokensNameUsersOneWay() {
        let uuid = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
        let text = PurchasePolicy(accountTokenIsUserId: true, derivedAccountTokens: { ["d-" + $0] })
        #expect(!text.token(uuid, names: uuid), "on a text-id app, an id equal to a token owns nothing")
        #expect(text.tokens(naming: uuid) == ["d-" + uuid])
        #expect(text.token("D-" + uuid.uppercased(), names: uuid), "tokens compare in any case")
        let uuids = PurchasePolicy(accountTokenIsUserId: true, userIdIsToken: true, derivedAccountTokens: { ["d-" + $0] })
        #expect(uuids.token(uuid.uppercased(), names: uuid), "the id is its user's token")
        #expect(!uuids.token(uuid, names: uuid.uppercased()), "a second spelling of the id is nobody's")
        #expect(uuids.tokens(naming: uuid.uppercased()) == ["d-" + uuid.uppercased()])
        #expect(uuids.tokens(naming: uuid) == ["d-" + uuid, uuid])
        #expect(
            CanonicalUUID.isCanonical(uuid) && !CanonicalUUID.isCanonical(uuid.uppercased()) && !CanonicalUUID.isCanonical("{\(uuid)}")
                && !CanonicalUUID.isCanonical(String(uuid.dropLast())) && !CanonicalUUID.isCanonical(uuid.replacingOccurrences(of: "-", with: "_"))
        )
    }

    @Test("a proven transaction must match the app's product, the booking's product and quantity, the claimed id, and the user's token")
    func proofChecks() throws {
        var target = booking(status: .pendingPayment, holdExpiresAt: now)
        target.requiredProductId = "basic"
        let proven = ProvenTransaction(
            transactionId: "1",
            originalTransactionId: "1",
            productId: "basic",
            environment: .sandbox,
            purchasedAt: now,
            revoked: false,
            appAccountToken: "D-U-1",
            proofHash: "h"
        )
        // A token names the user it is derived from (here "d-" + the id), in any case.
        let tokens = PurchasePolicy(accountTokenIsUserId: true, derivedAccountTokens: { ["d-" + $0] })
        let open = PurchasePolicy()
        try BookingPurchaseRules.check(proven, claimedProductId: "basic", claimedTransactionId: "1", booking: target, userId: "u-1", policy: tokens)
        func code(_ body: () throws -> Void) -> String? {
            do {
                try body()
                return nil
            } catch { return (error as? DomainError)?.code.rawValue ?? "not a DomainError" }
        }
        #expect(
            code {
                try BookingPurchaseRules.check(
                    proven,
                    claimedProductId: "premium",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-1",
                    policy: open
                )
            } == "product_mismatch"
        )
        var premium = proven
        premium.productId = "premium"
        #expect(
            code {
                try BookingPurchaseRules.check(
                    premium,
                    claimedProductId: "premium",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-1",
                    policy: open
                )
            } == "product_mismatch"
        )
        #expect(
            code {
                try BookingPurchaseRules.check(
                    proven,
                    claimedProductId: "basic",
                    claimedTransactionId: "2",
                    booking: target,
                    userId: "u-1",
                    policy: open
                )
            } == "transaction_mismatch"
        )
        #expect(
            code {
                try BookingPurchaseRules.check(
                    proven,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-2",
                    policy: tokens
                )
            } == "account_token_mismatch"
        )
        #expect(
            code {
                try BookingPurchaseRules.check(
                    proven,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-2",
                    policy: open
                )
            } == nil
        )

        // Where tokens are tied to users, a signed transaction without one is refused; a receipt has no such field.
        var tokenless = proven
        tokenless.appAccountToken = nil
        #expect(
            code {
                try BookingPurchaseRules.check(
                    tokenless,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-1",
                    policy: tokens
                )
            } == "account_token_missing"
        )
        tokenless.kind = .lookup
        #expect(
            code {
                try BookingPurchaseRules.check(
                    tokenless,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-1",
                    policy: tokens
                )
            } == "account_token_missing"
        )
        tokenless.kind = .receipt
        #expect(
            code {
                try BookingPurchaseRules.check(
                    tokenless,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-1",
                    policy: tokens
                )
            } == nil
        )

        // Quantity: a 5-seat booking sold per seat needs 5 units; fewer pass the check and pay part of it (see partPayments).
        target.requiredQuantity = 5
        #expect(
            code {
                try BookingPurchaseRules.check(
                    proven,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-1",
                    policy: open
                )
            } == nil
        )
        var five = proven
        five.quantity = 5
        #expect(
            code {
                try BookingPurchaseRules.check(
                    five,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: "u-1",
                    policy: open
                )
            } == nil
        )
    }

    @Test("a Production tenant takes Sandbox purchases only from its listed testers")
    func sandboxTesters() throws {
        var target = booking(status: .pendingPayment, holdExpiresAt: now)
        target.requiredProductId = "basic"
        var proven = ProvenTransaction(
            transactionId: "1",
            originalTransactionId: "1",
            productId: "basic",
            environment: .sandbox,
            purchasedAt: now,
            revoked: false,
            appAccountToken: nil,
            proofHash: "h"
        )
        let production = PurchasePolicy(acceptsProduction: true, sandboxTesters: ["tester"])
        func code(_ user: String, _ policy: PurchasePolicy) -> String? {
            do {
                try BookingPurchaseRules.check(
                    proven,
                    claimedProductId: "basic",
                    claimedTransactionId: nil,
                    booking: target,
                    userId: user,
                    policy: policy
                )
                return nil
            } catch { return error.code.rawValue }
        }
        #expect(code("someone", production) == "sandbox_not_allowed")
        #expect(code("tester", production) == nil)
        #expect(code("someone", PurchasePolicy()) == nil, "a Sandbox-only tenant: every user is a tester")
        proven.environment = .production
        #expect(code("someone", production) == nil)
    }

    @Test("a refunded or revoked transaction never pays: shown by its proof or reported by Apple before the claim")
    func revoked() throws {
        var revokedClaim = claim()
        revokedClaim.revoked = true
        guard case .refused(let code, _) = ClaimPolicy.plan(revokedClaim, existing: nil, revokedByApple: false, now: now)?.outcome else {
            Issue.record("a revoked proof must be refused")
            return
        }
        #expect(code == .transactionRevoked)
        let reported = ClaimPolicy.plan(claim(), existing: nil, revokedByApple: true, now: now)
        #expect(
            reported?.outcome
                == .refused(code: .transactionRevoked, message: "Apple reported this transaction refunded or revoked before it was claimed")
        )
        #expect(reported?.audit.map(\.action) == [.purchaseRefused] && reported?.purchase == nil)
        // A claim seen before still answers as before (its purchase row tells what happened since).
        #expect(ClaimPolicy.plan(claim(), existing: purchase(), revokedByApple: true, now: now)?.outcome == .repeated(purchase()))
    }

    @Test("holds: a user, a resource, and an API key over its users, may keep only so many unpaid bookings")
    func holdLimits() throws {
        let resource = try #require(try seaboo().resource(id: "gozzo-5m"))
        let limits = HoldLimits(perUser: 2, perServerKey: 3, perResource: 4)
        func code(_ load: BookingLoad, viaServerKey: Bool = false) -> String? {
            do {
                try BookingAdmission.check(load, resource: resource, seats: 1, limits: limits, viaKey: viaServerKey)
                return nil
            } catch { return error.code.rawValue }
        }
        #expect(code(BookingLoad(occupancy: .none, userHolds: 0, creatorHolds: 0, resourceHolds: 3)) == nil)
        #expect(
            code(BookingLoad(occupancy: .none, userHolds: 0, creatorHolds: 0, resourceHolds: 4)) == "too_many_pending_bookings",
            "invented users cannot hold more than the resource's cap"
        )
        #expect(HoldLimits().perServerKey >= 5_000, "the key-wide cap is a ceiling, not everyone's quota")
        #expect(code(BookingLoad(occupancy: .none, userHolds: 1, creatorHolds: 0)) == nil)
        #expect(code(BookingLoad(occupancy: .none, userHolds: 2, creatorHolds: 0)) == "too_many_pending_bookings")
        #expect(code(BookingLoad(occupancy: .none, userHolds: 0, creatorHolds: 3), viaServerKey: true) == "too_many_pending_bookings")
        #expect(code(BookingLoad(occupancy: .none, userHolds: 0, creatorHolds: 3)) == nil, "a user's own token is not capped by a key's count")
        #expect(code(BookingLoad(occupancy: Occupancy(bookings: 1, seats: 1), userHolds: 0, creatorHolds: 0)) == "slot_taken")
    }

    @Test("rentals above the last price band are refused at booking time; experiences sold per seat need a unit per seat")
    func priceLimits() throws {
        let start = now.addingTimeInterval(86_400)
        let tenant = try seaboo()
        // gozzo: €80/day; 6 days = €480 (premium, within €500), 7 days = €560: no product pays for it.
        let six = try tenant.quote(BookingRequest(resourceId: "gozzo-5m", start: start, end: start.addingTimeInterval(6 * 86_400)), now: now)
        #expect(six.requiredProductId == "it.seaboo.rental.premium")
        #expect(six.requiredQuantity == 1)
        #expect(
            throws: DomainError(
                .unprocessable,
                .priceAboveLimit,
                "no product of this app pays for a rental of this price (at most 50000 minor units); book fewer days",
                field: "end"
            )
        ) {
            _ = try tenant.quote(BookingRequest(resourceId: "gozzo-5m", start: start, end: start.addingTimeInterval(7 * 86_400)), now: now)
        }
        let day = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + 2 * 86_400
        let slot = Date(timeIntervalSince1970: day + TimeInterval(17 * 3600 + 30 * 60))
        #expect(try tenant.quote(BookingRequest(resourceId: "sunset-cruise", slot: slot, seats: 4), now: now).requiredQuantity == 4)
        var perDay = tenant
        perDay.bookingRules?.rentalQuantity = .perDay
        #expect(
            try perDay.quote(BookingRequest(resourceId: "gozzo-5m", start: start, end: start.addingTimeInterval(3 * 86_400)), now: now)
                .requiredQuantity == 3
        )
    }

    @Test("payments that cannot be honoured are kept for a refund")
    func needsRefund() throws {
        let resource = try #require(try seaboo().resource(id: "gozzo-5m"))
        let expired = booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(-1))
        #expect(BookingPurchaseRules.needsOccupancy(expired, now: now))
        let free = BookingPurchaseRules.plan(claim(), booking: expired, resource: resource, occupancy: .none, now: now)
        guard case .applied(let purchase) = free.outcome else {
            Issue.record("a free slot confirms")
            return
        }
        #expect(free.effects.booking?.status == .confirmed && free.effects.booking?.purchaseId == purchase.id && free.purchase == purchase)
        #expect(free.events.map(\.type) == [.bookingConfirmed])
        let taken = BookingPurchaseRules.plan(claim(), booking: expired, resource: resource, occupancy: Occupancy(bookings: 1, seats: 1), now: now)
        #expect(
            taken.outcome
                == .needsRefund(
                    try #require(taken.purchase),
                    code: .slotUnavailable,
                    message: "the hold expired and the slot was taken; the payment is recorded for a refund"
                )
        )
        #expect(taken.effects.booking?.status == .paymentNeedsRefund && taken.purchase?.status == .needsRefund && taken.events.isEmpty)
        // L15: a late payment for a booking whose time is over never confirms it, free slot or not.
        let over = BookingPurchaseRules.plan(claim(), booking: expired, resource: resource, occupancy: .none, now: expired.end)
        #expect(
            over.outcome
                == .needsRefund(
                    try #require(over.purchase),
                    code: .bookingNotPayable,
                    message: "the hold expired and the booking's time has passed; the payment is recorded for a refund"
                )
        )
        #expect(over.effects.booking?.status == .paymentNeedsRefund && over.events.isEmpty)
        for status in [BookingStatus.confirmed, .cancelled, .refunded, .paymentNeedsRefund] {
            let plan = BookingPurchaseRules.plan(
                claim(),
                booking: booking(status: status, holdExpiresAt: now),
                resource: resource,
                occupancy: .none,
                now: now
            )
            guard case .needsRefund = plan.outcome else {
                Issue.record("\(status) must not confirm")
                continue
            }
            #expect(plan.purchase?.status == .needsRefund && plan.effects.booking?.purchaseId == nil, "\(status) must not take the payment")
            #expect(plan.effects.booking?.status == (status == .confirmed || status == .paymentNeedsRefund ? status : .paymentNeedsRefund))
        }
    }

    @Test("a booking of N units is paid by transactions adding up to N: each part is applied and extends the hold; the last one confirms")
    func partPayments() throws {
        let resource = try #require(try seaboo().resource(id: "gozzo-5m"))
        var target = booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(60))
        target.requiredQuantity = 3
        var one = claim()
        one.quantity = 1
        let first = BookingPurchaseRules.plan(one, booking: target, resource: resource, occupancy: .none, now: now, holdExtension: 900)
        guard case .applied(let purchase) = first.outcome else {
            Issue.record("a part payment is applied")
            return
        }
        #expect(purchase.status == .applied)
        let partly = try #require(first.effects.booking)
        #expect(partly.status == .pendingPayment && partly.paidQuantity == 1 && partly.remainingQuantity == 2 && partly.purchaseId == nil)
        #expect(partly.holdExpiresAt == now.addingTimeInterval(900))
        #expect(first.events.isEmpty && first.audit.map(\.action) == [.bookingPartlyPaid])
        var two = claim()
        two.transactionId = "2"
        two.quantity = 2
        let last = BookingPurchaseRules.plan(two, booking: partly, resource: resource, occupancy: .none, now: now)
        #expect(last.effects.booking?.status == .confirmed && last.effects.booking?.remainingQuantity == 0 && last.effects.booking?.paidQuantity == 3)
        #expect(last.events.map(\.type) == [.bookingConfirmed] && last.audit.map(\.action) == [.bookingConfirmed])
        // A part payment after the hold expired, when the slot was taken meanwhile, is kept for a refund.
        var lapsed = partly
        lapsed.holdExpiresAt = now.addingTimeInterval(-1)
        let refused = BookingPurchaseRules.plan(two, booking: lapsed, resource: resource, occupancy: Occupancy(bookings: 1, seats: 1), now: now)
        guard case .needsRefund(_, let code, _) = refused.outcome else {
            Issue.record("a taken slot keeps the payment for a refund")
            return
        }
        #expect(code == .slotUnavailable)
    }

    @Test(
        "a refund of one of several payments of a booking takes its units back: a pending booking stays pending, a confirmed one awaits an operator"
    )
    func partRefunds() {
        var part = purchase()
        part.quantity = 1
        let refund = IncomingNotification(
            tenantId: "t",
            uuid: "n1",
            type: .refund,
            subtype: nil,
            environment: .sandbox,
            signedAt: now,
            transactionId: "1",
            payloadHash: "h"
        )
        var pending = booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(60))
        (pending.requiredQuantity, pending.paidQuantity) = (3, 2)
        let waiting = BookingRefundRules.plan(refund, purchase: part, booking: pending, slotStillFree: true, now: now)
        #expect(waiting.effect == .appliedByKind("part_refunded"))
        #expect(
            waiting.effects.booking?.status == .pendingPayment && waiting.effects.booking?.paidQuantity == 1 && waiting.purchase?.status == .refunded
        )
        var confirmed = pending
        (confirmed.status, confirmed.paidQuantity, confirmed.purchaseId) = (.confirmed, 3, 77)
        let broken = BookingRefundRules.plan(refund, purchase: part, booking: confirmed, slotStillFree: true, now: now)
        #expect(broken.effects.booking?.status == .paymentNeedsRefund && broken.effects.booking?.paidQuantity == 2)
        #expect(broken.events.map(\.type) == [.purchaseRefunded])
        // A booking paid by one transaction: the refund refunds the booking, as before.
        var single = confirmed
        (single.requiredQuantity, single.paidQuantity, single.purchaseId) = (1, 1, part.id)
        #expect(BookingRefundRules.decide(refund, purchase: part, booking: single, slotStillFree: true) == .refundBooking)
    }

    @Test("a slot is held by confirmed bookings and by pending ones within their hold")
    func holds() {
        #expect(booking(status: .confirmed, holdExpiresAt: now.addingTimeInterval(-1)).holdsSlot(at: now))
        #expect(booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(1)).holdsSlot(at: now))
        #expect(!booking(status: .pendingPayment, holdExpiresAt: now).holdsSlot(at: now))
        #expect(!booking(status: .cancelled, holdExpiresAt: now.addingTimeInterval(60)).holdsSlot(at: now))
    }

    @Test("catalog validation refuses unsafe or inconsistent tenants")
    func catalogValidation() throws {
        var original = try Catalog.decode(Data(contentsOf: Self.catalogURL))
        // The shipped Seaboo tenant is Sandbox-only until its real App Store id is set; go live here.
        original.tenants[0].apple.environments = [.production, .sandbox]
        original.tenants[0].apple.appAppleId = 6_449_123_456
        try original.validate()
        for placeholder: Int64 in [6_450_000_001, 1_234_567_890, 42] {
            var fake = original
            fake.tenants[0].apple.appAppleId = placeholder
            #expect(throws: CatalogError.self) { try fake.validate() }
        }
        var testersWithoutProduction = original
        testersWithoutProduction.tenants[1].apple.sandboxTesters = ["tester"]
        #expect(throws: CatalogError.self) { try testersWithoutProduction.validate() }
        var badLimit = original
        badLimit.tenants[0].limits = Tenant.Limits(pendingHoldsPerUser: 0)
        #expect(throws: CatalogError.self) { try badLimit.validate() }
        var production = original
        production.tenants[0].apple.trustedRootFiles = ["test-root.pem"]
        #expect(throws: CatalogError.self) { try production.validate() }
        var noAppId = original
        noAppId.tenants[0].apple.appAppleId = nil
        #expect(throws: CatalogError.self) { try noAppId.validate() }
        var local = original
        local.tenants[0].apple.allowLocalTesting = true
        #expect(throws: CatalogError.self) { try local.validate() }
        var sameIssuer = original
        sameIssuer.tenants[1].auth.issuer = sameIssuer.tenants[0].auth.issuer
        #expect(throws: CatalogError.self) { try sameIssuer.validate() }
        var badBand = original
        badBand.tenants[0].bookingRules?.rentalPriceBands[0].productId = "unknown"
        #expect(throws: CatalogError.self) { try badBand.validate() }
        var unbounded = original
        unbounded.tenants[0].bookingRules?.rentalPriceBands[1].maxPriceMinor = nil
        #expect(throws: CatalogError.self) { try unbounded.validate() }
        var falling = original
        falling.tenants[0].bookingRules?.rentalPriceBands[1].maxPriceMinor = 9000
        #expect(throws: CatalogError.self) { try falling.validate() }
    }

    @Test(
        "Apple lifecycle settings: offers need the In-App Purchase key, unique ids and the tenant's own subscription products; history minutes 0…10080; refund preference one of Apple's values or auto"
    )
    func appleLifecycleSettings() throws {
        var catalog = try Catalog.decode(Data(contentsOf: Self.catalogURL))
        let index = try #require(catalog.tenants.firstIndex { $0.id == "braindumpster-test" })
        let yearly = "brain_dumpster_yearly_premium"
        catalog.tenants[index].apple.serverAPI = ServerAPICredentials(issuerId: "i", keyId: "K", privateKeyFile: "key.p8")
        catalog.tenants[index].apple.offers = AppleOffers(promotional: [.init(id: "winback", productIds: [yearly], eligibility: .lapsed)])
        catalog.tenants[index].apple.notificationHistoryMinutes = 0
        try catalog.validate()
        func refused(_ change: (inout Tenant) -> Void) -> Bool {
            var copy = catalog
            change(&copy.tenants[index])
            return (try? copy.validate()) == nil
        }
        #expect(refused { $0.apple.serverAPI = nil }, "offers are signed with the In-App Purchase key")
        #expect(refused { $0.apple.offers?.promotional.append(.init(id: "winback")) }, "an offer id twice")
        #expect(refused { $0.apple.offers?.promotional.append(.init(id: "")) })
        #expect(refused { $0.apple.offers?.promotional.append(.init(id: "x", productIds: ["not-a-subscription"])) })
        #expect(refused { $0.apple.notificationHistoryMinutes = -1 } && refused { $0.apple.notificationHistoryMinutes = 10_081 })
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(
                AppleIdentity.self,
                from: Data(#"{"bundleId": "b", "environments": ["Sandbox"], "refundPreference": "MAYBE"}"#.utf8)
            )
        }
        let auto = try JSONDecoder().decode(
            AppleIdentity.self,
            from: Data(#"{"bundleId": "b", "environments": ["Sandbox"], "refundPreference": "auto"}"#.utf8)
        )
        #expect(auto.refundPreference == .auto)
    }
}

@Suite("Entitlement rules")
struct EntitlementRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("the newest non-cancelled period of a subscription product decides")
    func newestDecides() {
        let periods = [
            SubscriptionPeriod(productId: "monthly", expiresAt: now.addingTimeInterval(-86_400), cancelled: false),
            SubscriptionPeriod(productId: "yearly", expiresAt: now.addingTimeInterval(86_400), cancelled: false),
            SubscriptionPeriod(productId: "yearly", expiresAt: now.addingTimeInterval(9 * 86_400), cancelled: true),
            SubscriptionPeriod(productId: "other-app-thing", expiresAt: now.addingTimeInterval(99 * 86_400), cancelled: false),
        ]
        let active = EntitlementRules.entitlement(from: periods, subscriptionProducts: ["monthly", "yearly"], now: now)
        #expect(active.isPremium)
        #expect(active.productId == "yearly")
        #expect(active.expiresAt == now.addingTimeInterval(86_400))
        let later = EntitlementRules.entitlement(from: periods, subscriptionProducts: ["monthly", "yearly"], now: now.addingTimeInterval(2 * 86_400))
        #expect(!later.isPremium)
        #expect(later.productId == "yearly")
        #expect(!EntitlementRules.entitlement(from: [], subscriptionProducts: [], now: now).isPremium)
        #expect(EntitlementRules.entitlement(from: periods, subscriptionProducts: [], now: now).productId == "other-app-thing")
    }

    @Test(
        "consumption for Apple (V2): a booking's elapsed share, a pass's, a lifetime unlock in full, none for subscriptions (Apple computes), 0 and UNDELIVERED when not applied; auto refund preference"
    )
    func consumptionReport() {
        func paid(_ target: PurchaseTarget, status: PurchaseStatus = .applied, at: Date? = nil) -> Purchase {
            Purchase(
                id: 1,
                tenantId: "t",
                userId: "u",
                target: target,
                store: .appStore,
                environment: .sandbox,
                transactionId: "1",
                originalTransactionId: "1",
                productId: "p",
                status: status,
                outcomeCode: nil,
                purchasedAt: at ?? now,
                createdAt: now
            )
        }
        var trip = Booking(
            id: 1,
            tenantId: "t",
            userId: "u",
            resourceId: "gozzo-5m",
            resourceKind: .rental,
            start: now,
            end: now.addingTimeInterval(3600),
            seats: 1,
            priceMinor: 8000,
            currency: "EUR",
            requiredProductId: "p",
            status: .confirmed,
            holdExpiresAt: now,
            createdAt: now,
            updatedAt: now
        )  // now … now + 1 h
        let halfway = now.addingTimeInterval(1800)
        let report = ConsumptionReport(purchase: paid(.booking(id: 1)), product: nil, booking: trip, lot: nil, preference: .auto, now: halfway)
        #expect(report.deliveryStatus == "DELIVERED" && report.consumptionPercentage == 50_000 && report.refundPreference == "GRANT_PRORATED")
        #expect(
            ConsumptionReport(
                purchase: paid(.booking(id: 1)),
                product: nil,
                booking: trip,
                lot: nil,
                preference: .auto,
                now: now.addingTimeInterval(-60)
            ).refundPreference == "GRANT_FULL"
        )
        #expect(
            ConsumptionReport(
                purchase: paid(.booking(id: 1)),
                product: nil,
                booking: trip,
                lot: nil,
                preference: .auto,
                now: now.addingTimeInterval(7200)
            ).refundPreference == "DECLINE"
        )
        trip.status = .cancelled
        let cancelled = ConsumptionReport(purchase: paid(.booking(id: 1)), product: nil, booking: trip, lot: nil, preference: .decline, now: halfway)
        #expect(cancelled.deliveryStatus == "UNDELIVERED_OTHER" && cancelled.consumptionPercentage == 0 && cancelled.refundPreference == "DECLINE")
        let refunded = ConsumptionReport(
            purchase: paid(.credits(type: "c"), status: .refunded),
            product: nil,
            booking: nil,
            lot: nil,
            preference: nil,
            now: now
        )
        #expect(refunded.deliveryStatus == "UNDELIVERED_OTHER" && refunded.consumptionPercentage == 0 && refunded.refundPreference == nil)
        let subscription = ConsumptionReport(
            purchase: paid(.subscription(originalTransactionId: "1")),
            product: nil,
            booking: nil,
            lot: nil,
            preference: .auto,
            now: now
        )
        #expect(subscription.deliveryStatus == "DELIVERED" && subscription.consumptionPercentage == nil)
        let lifetime = Product(id: "p", kind: .unlock, type: "Non-Consumable", title: "Lifetime", entitlement: "pro")
        #expect(
            ConsumptionReport(purchase: paid(.unlock(productId: "p")), product: lifetime, booking: nil, lot: nil, preference: nil, now: now)
                .consumptionPercentage == 100_000
        )
        let pass = Product(id: "p", kind: .unlock, type: "Non-Renewing Subscription", title: "Pass", entitlement: "pro", durationDays: 10)
        #expect(
            ConsumptionReport(
                purchase: paid(.unlock(productId: "p"), at: now),
                product: pass,
                booking: nil,
                lot: nil,
                preference: nil,
                now: now.addingTimeInterval(2.5 * 86_400)
            ).consumptionPercentage == 25_000
        )
        let lot = CreditLot(id: 1, tenantId: "t", userId: "u", creditType: "c", entryId: 1, purchaseId: 1, amount: 3, remaining: 2, grantedAt: now)
        #expect(
            ConsumptionReport(purchase: paid(.credits(type: "c")), product: nil, booking: nil, lot: lot, preference: nil, now: now)
                .consumptionPercentage == 33_333
        )
    }
}

extension RulesTests {
    static func instant(_ text: String) throws -> Date {
        try #require(ISO8601DateFormatter().date(from: text))
    }

    func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch { return (error as? DomainError)?.code.rawValue ?? "not a DomainError" }
    }

    @Test("time zones: with timeZone Europe/Rome the 17:30 sunset cruise is 15:30Z in July and 16:30Z in January; the other instant is refused")
    func slotsInLocalTime() throws {
        var tenant = try seaboo()
        tenant.timeZone = "Europe/Rome"
        let now = try Self.instant("2026-12-01T00:00:00Z")
        func book(_ at: String) throws -> BookingQuote {
            try tenant.quote(BookingRequest(resourceId: "sunset-cruise", slot: try Self.instant(at), seats: 1), now: now)
        }
        #expect(try book("2027-07-14T15:30:00Z").start == (try Self.instant("2027-07-14T15:30:00Z")))
        #expect(try book("2027-01-14T16:30:00Z").start == (try Self.instant("2027-01-14T16:30:00Z")))
        #expect(code { _ = try book("2027-07-14T16:30:00Z") } == "slot_not_offered", "17:30 UTC is 19:30 in Rome in July")
        #expect(code { _ = try book("2027-01-14T17:30:00Z") } == "slot_not_offered")
        // Without a time zone the catalog keeps UTC.
        #expect(
            try seaboo().quote(BookingRequest(resourceId: "sunset-cruise", slot: try Self.instant("2027-07-14T17:30:00Z"), seats: 1), now: now).seats
                == 1
        )
        // A resource may name its own zone.
        var lisbon = tenant
        if let index = lisbon.resources.firstIndex(where: { $0.id == "sunset-cruise" }) { lisbon.resources[index].timeZone = "Europe/Lisbon" }
        #expect(
            try lisbon.quote(BookingRequest(resourceId: "sunset-cruise", slot: try Self.instant("2027-07-14T16:30:00Z"), seats: 1), now: now).seats
                == 1
        )
    }

    @Test(
        "local requests: a wall-clock slot in the resource's zone, a skipped one refused, a repeated one refused with both offsets named; answers' local times carry the offset"
    )
    func localRequests() throws {
        var tenant = try seaboo()
        tenant.timeZone = "Europe/Rome"
        let now = try Self.instant("2026-12-01T00:00:00Z")
        func local(_ text: String) throws -> BookingTime { .local(try #require(LocalDateTime.parse(text))) }
        func book(_ slot: String) throws -> BookingQuote {
            try tenant.quote(BookingRequest(resourceId: "sunset-cruise", start: nil, end: nil, slot: try local(slot), seats: 1), now: now)
        }
        let july = try book("2027-07-14T17:30")
        #expect(july.start == (try Self.instant("2027-07-14T15:30:00Z")))
        #expect(july.timeZone == "Europe/Rome")
        #expect(try book("2027-01-14T17:30:00").start == (try Self.instant("2027-01-14T16:30:00Z")))
        #expect(code { _ = try book("2027-07-14T19:30") } == "slot_not_offered")
        #expect(
            code {
                _ = try tenant.quote(
                    BookingRequest(resourceId: "sunset-cruise", start: nil, end: nil, slot: try local("2027-07-14"), seats: 1),
                    now: now
                )
            }
                == "invalid_request",
            "a slot needs a time of day"
        )
        // The booking shows its wall-clock time with the offset of that day.
        let booking = Booking(
            id: 1,
            tenantId: "t",
            userId: "u",
            resourceId: "sunset-cruise",
            resourceKind: .experience,
            start: july.start,
            end: july.end,
            seats: 1,
            priceMinor: 1,
            currency: "EUR",
            requiredProductId: "p",
            status: .pendingPayment,
            holdExpiresAt: now,
            createdAt: now,
            updatedAt: now,
            timeZone: july.timeZone
        )
        #expect(booking.localStart == "2027-07-14T17:30:00+02:00")
        #expect(booking.zoneName == "Europe/Rome")
        var winter = booking
        winter.start = try book("2027-01-14T17:30").start
        #expect(winter.localStart == "2027-01-14T17:30:00+01:00")
        var utc = booking
        utc.timeZone = nil
        #expect(utc.localStart == "2027-07-14T15:30:00+00:00" && utc.zoneName == "UTC")
        // Daylight-saving days, named as local times.
        if let index = tenant.resources.firstIndex(where: { $0.id == "sunset-cruise" }) { tenant.resources[index].slotTimes = ["02:30"] }
        do {
            _ = try book("2027-03-28T02:30")
            Issue.record("a skipped local time was booked")
        } catch let error as DomainError {
            #expect(error.message.contains("does not exist in Europe/Rome"), "\(error.message)")
        }
        do {
            _ = try book("2027-10-31T02:30")
            Issue.record("a repeated local time was booked without its offset")
        } catch let error as DomainError {
            #expect(error.message.contains("2027-10-31T02:30:00+02:00 or 2027-10-31T02:30:00+01:00"), "\(error.message)")
        }
        // The offset picks one of the pair.
        let second = try tenant.quote(
            BookingRequest(resourceId: "sunset-cruise", slot: try Self.instant("2027-10-31T02:30:00+01:00"), seats: 1),
            now: now
        )
        #expect(second.start == (try Self.instant("2027-10-31T01:30:00Z")))
    }

    @Test(
        "local rental days: dates are local midnights and a day across a daylight-saving change is still one day; UTC catalogs count 24-hour days as before"
    )
    func localRentalDays() throws {
        var tenant = try seaboo()
        tenant.timeZone = "Europe/Rome"
        let now = try Self.instant("2026-12-01T00:00:00Z")
        func day(_ text: String) throws -> BookingTime { .local(try #require(LocalDateTime.parse(text))) }
        let autumn = try tenant.quote(
            BookingRequest(resourceId: "gozzo-5m", start: try day("2027-10-30"), end: try day("2027-11-01"), slot: nil, seats: nil),
            now: now
        )
        #expect(autumn.start == (try Self.instant("2027-10-29T22:00:00Z")), "local midnight, CEST")
        #expect(autumn.end == (try Self.instant("2027-10-31T23:00:00Z")), "local midnight, CET: 49 hours later")
        let perDay = try #require(tenant.resources.first { $0.id == "gozzo-5m" }?.pricePerDayMinor)
        #expect(autumn.priceMinor == 2 * perDay, "two days, not three")
        let utc = try seaboo().quote(
            BookingRequest(resourceId: "gozzo-5m", start: try Self.instant("2027-10-30T00:00:00Z"), end: try Self.instant("2027-11-01T01:00:00Z")),
            now: now
        )
        #expect(utc.priceMinor == 3 * perDay, "a part day counts as a day, as before")
        #expect(
            LocalDateTime.parse("2027-02-29") == nil && LocalDateTime.parse("2027-07-14T25:00") == nil
                && LocalDateTime.parse("2027-07-14 17:30") == nil
        )
    }

    @Test("booking references: 7 characters without 0, O, 1, I; read back in any case with spaces or dashes; nothing else is one")
    func bookingReferences() {
        var seen = Set<String>()
        for _ in 0..<2000 {
            let reference = BookingReference.random()
            #expect(reference.count == 7 && !reference.contains { "01OI".contains($0) })
            seen.insert(reference)
        }
        #expect(seen.count == 2000)
        #expect(BookingReference.normalized("k7m-x2q a") == "K7MX2QA")
        #expect(BookingReference.normalized("K7MX2Q0") == nil, "0 is not in the alphabet")
        #expect(BookingReference.normalized("K7MX2Q") == nil && BookingReference.normalized("K7MX2QAB") == nil)
        #expect(BookingReference.normalized("K7MX2QÄ") == nil)
    }

    @Test("daylight-saving days: a local time the change skips cannot be booked; one it repeats is two slots, each its own instant, never moved")
    func daylightSavingDays() throws {
        var tenant = try seaboo()
        tenant.timeZone = "Europe/Rome"
        if let index = tenant.resources.firstIndex(where: { $0.id == "sunset-cruise" }) { tenant.resources[index].slotTimes = ["02:30"] }
        let now = try Self.instant("2026-12-01T00:00:00Z")
        func book(_ at: String) -> String? {
            code { _ = try tenant.quote(BookingRequest(resourceId: "sunset-cruise", slot: try Self.instant(at), seats: 1), now: now) }
        }
        // 28 March 2027: 02:00 becomes 03:00 in Rome; the instants around 02:30 are 01:30 CET and 03:30 CEST.
        for at in ["2027-03-28T00:30:00Z", "2027-03-28T01:30:00Z", "2027-03-28T02:30:00Z"] { #expect(book(at) == "slot_not_offered", "\(at)") }
        #expect(book("2027-03-27T01:30:00Z") == nil, "the day before: 02:30 CET")
        #expect(book("2027-03-29T00:30:00Z") == nil, "the day after: 02:30 CEST")
        // 31 October 2027: 03:00 becomes 02:00; 02:30 happens twice, 00:30Z (CEST) and 01:30Z (CET).
        #expect(book("2027-10-31T00:30:00Z") == nil)
        #expect(book("2027-10-31T01:30:00Z") == nil)
        #expect(book("2027-10-31T02:30:00Z") == "slot_not_offered")
    }

    @Test("a time zone that is not IANA's is refused by the catalog")
    func unknownTimeZone() throws {
        var catalog = try Catalog.decode(Data(contentsOf: Self.catalogURL))
        catalog.tenants[0].timeZone = "Europe/Atlantis"
        #expect(throws: CatalogError.self) { try catalog.validate() }
        catalog.tenants[0].timeZone = "Europe/Rome"
        #expect(throws: Never.self) { try catalog.validate() }
    }
}
