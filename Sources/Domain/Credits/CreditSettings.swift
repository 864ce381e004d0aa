import Foundation

/// A tenant's credits: the credit types it sells and how its ledger behaves (`credits` in products.json).
public struct CreditSettings: Codable, Hashable, Sendable {
    /// The credit types (names such as `credits`, `personality`); every credit product grants one of them.
    public var types: [String]
    /// Free credits every user gets once (on their first credits call, whenever they signed up).
    public var signupBonus: SignupBonus?
    /// How long a reservation holds credits before it expires by itself. Default 10.
    public var reservationMinutes: Int?
    /// Whether a refund may take a balance below zero. Default false: the balance stops at zero and
    /// the rest is recorded as a debt, settled from the next credits the user gets.
    public var allowNegativeBalance: Bool?
    /// Report apps (one credit, one report): refuse a purchase while an unused credit of its type exists.
    public var refusePurchaseWhileUnused: Bool?
    /// `GET /api/products?tenant=<id>` answers without a user (the purchase screen's catalog).
    public var publicProducts: Bool?
    /// Largest amount one reservation may hold. Default 1,000.
    public var maximumReservation: Int?
    /// Serves the `/v1/credits/…` and `/v1/iap/products` routes (snake_case, one credit type,
    /// prices in currency units) for the app's users, as the AI image stylist's client calls them.
    public var v1Routes: Bool?

    public struct SignupBonus: Codable, Hashable, Sendable {
        public var creditType: String
        public var amount: Int

        public init(creditType: String, amount: Int) {
            self.creditType = creditType
            self.amount = amount
        }
    }

    public init(
        types: [String],
        signupBonus: SignupBonus? = nil,
        reservationMinutes: Int? = nil,
        allowNegativeBalance: Bool? = nil,
        refusePurchaseWhileUnused: Bool? = nil,
        publicProducts: Bool? = nil,
        maximumReservation: Int? = nil,
        v1Routes: Bool? = nil
    ) {
        self.types = types
        self.signupBonus = signupBonus
        self.reservationMinutes = reservationMinutes
        self.allowNegativeBalance = allowNegativeBalance
        self.refusePurchaseWhileUnused = refusePurchaseWhileUnused
        self.publicProducts = publicProducts
        self.maximumReservation = maximumReservation
        self.v1Routes = v1Routes
    }

    public var reservationDuration: TimeInterval { TimeInterval((reservationMinutes ?? 10) * 60) }
    public var negativeAllowed: Bool { allowNegativeBalance ?? false }
    public var reservationLimit: Int { maximumReservation ?? 1_000 }

    /// The type a request means when it names none: the only type, if there is one.
    public var defaultType: String? { types.count == 1 ? types[0] : nil }

    /// Credit type names: 1–40 lowercase letters, digits, `.`, `-`, `_`.
    public static func isValidTypeName(_ name: String) -> Bool {
        (1...40).contains(name.count) && name.allSatisfy { ($0.isLetter && $0.isLowercase && $0.isASCII) || $0.isNumber || "._-".contains($0) }
    }

    func validate(tenant: String) throws {
        guard !types.isEmpty else { throw CatalogError("tenant \(tenant): credits.types is empty") }
        var seen = Set<String>()
        for type in types {
            guard Self.isValidTypeName(type) else { throw CatalogError("tenant \(tenant): credit type \"\(type)\" must be 1-40 of a-z 0-9 . - _") }
            guard seen.insert(type).inserted else { throw CatalogError("tenant \(tenant): credit type \(type) appears twice") }
        }
        if let bonus = signupBonus {
            guard seen.contains(bonus.creditType) else {
                throw CatalogError("tenant \(tenant): credits.signupBonus names unknown type \(bonus.creditType)")
            }
            guard (1...1_000).contains(bonus.amount) else { throw CatalogError("tenant \(tenant): credits.signupBonus.amount must be 1...1000") }
        }
        if let minutes = reservationMinutes, !(1...1440).contains(minutes) {
            throw CatalogError("tenant \(tenant): credits.reservationMinutes must be 1...1440")
        }
        if let limit = maximumReservation, !(1...1_000_000).contains(limit) {
            throw CatalogError("tenant \(tenant): credits.maximumReservation must be 1...1000000")
        }
        if v1Routes == true, types.count != 1 {
            throw CatalogError("tenant \(tenant): credits.v1Routes answers one balance: it needs exactly one credit type")
        }
    }
}
