import Domain
import Foundation
import Testing

@Suite("Domain rules")
struct RulesTests {
    static let catalogURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("products.json")

    func seaboo() throws -> Tenant {
        try #require(try Catalog.load(contentsOf: Self.catalogURL).tenant(id: "seaboo"))
    }

    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("rental price bands: up to €100 basic, above premium", arguments: [
        (1, Int64(8000), "it.seaboo.rental.basic"),
        (2, Int64(16000), "it.seaboo.rental.premium"),
    ])
    func priceBands(days: Int, price: Int64, product: String) throws {
        let start = now.addingTimeInterval(86_400)
        let quote = try seaboo().quote(BookingRequest(resourceId: "gozzo-5m", start: start, end: start.addingTimeInterval(TimeInterval(days) * 86_400)), now: now)
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

    @Test("experience types map to their products", arguments: [
        ("sunset-cruise", 17, 30, "it.seaboo.experience.sunset"),
        ("diving-intro", 12, 0, "it.seaboo.experience.diving"),
        ("fishing-morning", 5, 0, "it.seaboo.experience.fishing"),
    ])
    func experienceProducts(resource: String, hour: Int, minute: Int, product: String) throws {
        let day = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + 2 * 86_400
        let slot = Date(timeIntervalSince1970: day + TimeInterval(hour * 3600 + minute * 60))
        let quote = try seaboo().quote(BookingRequest(resourceId: resource, slot: slot, seats: 2), now: now)
        #expect(quote.requiredProductId == product)
        #expect(quote.seats == 2)
    }

    func booking(status: BookingStatus, holdExpiresAt: Date, user: String = "u", id: Int64 = 1) -> Booking {
        Booking(id: id, tenantId: "t", userId: user, resourceId: "gozzo-5m", resourceKind: .rental, start: now, end: now.addingTimeInterval(3600),
                seats: 1, priceMinor: 8000, currency: "EUR", requiredProductId: "p", status: status, holdExpiresAt: holdExpiresAt,
                createdAt: now, updatedAt: now)
    }

    func claim(user: String = "u", booking: Int64 = 1, tenant: String = "t") -> PurchaseClaim {
        PurchaseClaim(tenantId: tenant, userId: user, bookingId: booking, environment: "Sandbox", transactionId: "1",
                      originalTransactionId: "1", productId: "p", purchasedAt: now, proofHash: "h")
    }

    func purchase(user: String = "u", booking: Int64 = 1, tenant: String = "t") -> Purchase {
        Purchase(id: 9, tenantId: tenant, userId: user, bookingId: booking, store: "app_store", environment: "Sandbox", transactionId: "1",
                 originalTransactionId: "1", productId: "p", status: .applied, outcomeCode: nil, purchasedAt: now, createdAt: now)
    }

    @Test("exactly once: the same claim repeats, every other claim is a replay")
    func replayRules() throws {
        let pending = booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(60))
        func decide(_ claim: PurchaseClaim, _ existing: Purchase?) -> PurchaseDecision {
            PurchaseRules.decide(PurchaseContext(claim: claim, existing: existing, booking: pending, resource: nil, occupancy: .none, now: now))
        }
        #expect(decide(claim(), nil) == .confirm)
        #expect(decide(claim(), purchase()) == .repeatOf(purchase()))
        guard case .replay = decide(claim(user: "other"), purchase()) else { Issue.record("other user"); return }
        guard case .replay = decide(claim(booking: 2), purchase()) else { Issue.record("other booking"); return }
        guard case .replay = decide(claim(tenant: "x"), purchase()) else { Issue.record("other tenant"); return }
    }

    @Test("a proven transaction must match the app's product, the booking's product, the claimed id, the user's token, and not be revoked")
    func proofChecks() throws {
        var target = booking(status: .pendingPayment, holdExpiresAt: now)
        target.requiredProductId = "basic"
        let proven = ProvenTransaction(transactionId: "1", originalTransactionId: "1", productId: "basic", environment: "Sandbox",
                                       purchasedAt: now, revoked: false, appAccountToken: "U-1", proofHash: "h")
        try PurchaseRules.check(proven, claimedProductId: "basic", claimedTransactionId: "1", booking: target, userId: "u-1", accountTokenIsUserId: true)
        func code(_ body: () throws -> Void) -> String? {
            do { try body(); return nil } catch { return (error as? DomainError)?.code ?? "not a DomainError" }
        }
        #expect(code { try PurchaseRules.check(proven, claimedProductId: "premium", claimedTransactionId: nil, booking: target, userId: "u-1", accountTokenIsUserId: false) } == "product_mismatch")
        var premium = proven
        premium.productId = "premium"
        #expect(code { try PurchaseRules.check(premium, claimedProductId: "premium", claimedTransactionId: nil, booking: target, userId: "u-1", accountTokenIsUserId: false) } == "product_mismatch")
        #expect(code { try PurchaseRules.check(proven, claimedProductId: "basic", claimedTransactionId: "2", booking: target, userId: "u-1", accountTokenIsUserId: false) } == "transaction_mismatch")
        #expect(code { try PurchaseRules.check(proven, claimedProductId: "basic", claimedTransactionId: nil, booking: target, userId: "u-2", accountTokenIsUserId: true) } == "account_token_mismatch")
        #expect(code { try PurchaseRules.check(proven, claimedProductId: "basic", claimedTransactionId: nil, booking: target, userId: "u-2", accountTokenIsUserId: false) } == nil)
        var revoked = proven
        revoked.revoked = true
        #expect(code { try PurchaseRules.check(revoked, claimedProductId: "basic", claimedTransactionId: nil, booking: target, userId: "u-1", accountTokenIsUserId: false) } == "transaction_revoked")
    }

    @Test("payments that cannot be honoured are kept for a refund")
    func needsRefund() throws {
        let resource = try #require(try seaboo().resource(id: "gozzo-5m"))
        let expired = booking(status: .pendingPayment, holdExpiresAt: now.addingTimeInterval(-1))
        let free = PurchaseRules.decide(PurchaseContext(claim: claim(), existing: nil, booking: expired, resource: resource, occupancy: .none, now: now))
        #expect(free == .confirm)
        let taken = PurchaseRules.decide(PurchaseContext(claim: claim(), existing: nil, booking: expired, resource: resource, occupancy: Occupancy(bookings: 1, seats: 1), now: now))
        #expect(taken == .needsRefund(code: "slot_unavailable", message: "the hold expired and the slot was taken; the payment is recorded for a refund", bookingStatus: .paymentNeedsRefund))
        for status in [BookingStatus.confirmed, .cancelled, .refunded, .paymentNeedsRefund] {
            guard case .needsRefund = PurchaseRules.decide(PurchaseContext(claim: claim(), existing: nil, booking: booking(status: status, holdExpiresAt: now), resource: resource, occupancy: .none, now: now)) else {
                Issue.record("\(status) must not confirm"); continue
            }
        }
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
        let original = try Catalog.load(contentsOf: Self.catalogURL)
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
        unbounded.tenants[0].bookingRules?.rentalPriceBands.removeLast()
        #expect(throws: CatalogError.self) { try unbounded.validate() }
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
}
