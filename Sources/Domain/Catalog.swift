import Foundation

/// The catalog (`products.json`): every tenant (app) Berth serves, with its Apple identity, how its
/// users authenticate, what it sells and the rules that tie a sale to a booking.
public struct Catalog: Codable, Hashable, Sendable {
    public var tenants: [Tenant]

    public init(tenants: [Tenant]) { self.tenants = tenants }

    public func tenant(id: String) -> Tenant? { tenants.first { $0.id == id } }

    /// Decodes and validates a catalog (the composition root reads the file). `name` names it in errors.
    public static func decode(_ data: Data, name: String = "products.json") throws -> Catalog {
        let catalog: Catalog
        do { catalog = try JSONDecoder().decode(Catalog.self, from: data) } catch {
            throw CatalogError("catalog \(name) is not valid: \(error)")
        }
        try catalog.validate()
        return catalog
    }

    /// Checks the cross-references and rules a JSON schema cannot express.
    public func validate() throws {
        var ids = Set<String>()
        var issuers = Set<String>()
        var prefixes = Set<String>()
        for tenant in tenants {
            for routes in tenant.subscriptions?.ftcRoutes ?? [] {
                guard prefixes.insert(routes.prefix).inserted else {
                    throw CatalogError("subscriptions.ftcRoutes prefix \(routes.prefix) is used twice")
                }
            }
            guard ids.insert(tenant.id).inserted else { throw CatalogError("tenant id \(tenant.id) appears twice") }
            guard issuers.insert(tenant.auth.issuer).inserted else {
                throw CatalogError("issuer \(tenant.auth.issuer) is used by two tenants; tokens could not be routed")
            }
            try tenant.validate()
        }
    }
}

/// A catalog that cannot be used, and why.
public struct CatalogError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One app served by Berth.
public struct Tenant: Codable, Hashable, Sendable {
    public var id: String
    public var name: String
    /// ISO 4217 currency of the tenant's prices.
    public var currency: String
    public var apple: AppleIdentity
    public var auth: UserAuth
    /// How long a pending booking holds its slot.
    public var holdMinutes: Int?
    /// Whether a transaction's appAccountToken, when present, must name the user (a token derived
    /// from the user id, or the id itself for apps whose user ids are UUIDs: ``userIdFormat``).
    public var appAccountTokenMatchesUserId: Bool?
    /// How the app spells its user ids: `text` (the default: any id; an appAccountToken names a user
    /// only when derived from the id) or `uuid` (every user id is a UUID in canonical lowercase form,
    /// refused otherwise at every entry, and is itself the user's appAccountToken).
    public var userIdFormat: UserIdFormat?
    /// The IANA time zone the operator lives in (`Europe/Rome`): experiences' `slotTimes` are local
    /// times there (a resource may name its own). Without it, UTC.
    public var timeZone: String?
    /// The web origins the app calls Berth from (CORS): its WebView's (`capacitor://localhost`,
    /// `https://localhost`, `ionic://localhost`, `app://localhost`) and, for development,
    /// `http://localhost:*`. Exact origins; none by default (no browser may call).
    public var allowedOrigins: [String]?
    /// The language of user-facing refusals when the request's Accept-Language names none Berth
    /// speaks: one of ``Tenant/languages``. Default English.
    public var defaultLanguage: String?
    /// The languages of Berth's user-facing messages.
    public static let languages = ["en", "vi", "it", "uk", "zh"]
    public var products: [Product]
    public var resources: [Resource]
    public var bookingRules: BookingRules?
    /// Verification endpoints' limit per user (or server key): a token bucket.
    public var rateLimit: RateLimit?
    /// Limits on booking creation, unpaid holds and the notification endpoint (defaults apply).
    public var limits: Limits?
    /// Where the tenant's own backend receives signed webhooks.
    public var webhook: Webhook?
    /// The credit types it sells and how its ledger behaves (tenants with credit products).
    public var credits: CreditSettings?
    /// How its auto-renewable subscriptions are served (tenants with subscription products).
    public var subscriptions: SubscriptionSettings?
    /// What the app's `client` keys (the ones shipped in the app) may do beyond submitting proofs.
    public var clientKeys: ClientKeySettings?
    /// The card rail for bookings (card, Apple Pay, Google Pay through Stripe).
    public var stripe: StripeSettings?
    /// The Android app on Google Play (purchase tokens, acknowledgements, real-time notifications).
    public var googlePlay: GooglePlaySettings?
    /// Settings of stores registered beyond the App Store and Google Play, by store name; each
    /// store's module reads its own (``StoreSettings``).
    public var stores: [String: StoreSettings]?
    /// Signs the answers an app decides access from (entitlements, balances, validator), so that a
    /// proxy or a jailbroken device cannot rewrite them unnoticed.
    public var answerSigning: AnswerSigningSettings?
    /// What customers get back when they cancel, and until when they may move a trip; a resource's
    /// own `cancellation` takes its place. Absent: paid bookings are cancelled by the operator only.
    public var cancellation: CancellationPolicy?

    /// Client keys are public: by default they submit proofs and read the named user's state.
    public struct ClientKeySettings: Codable, Hashable, Sendable {
        /// Let client keys create bookings (holds) for the user they name. Off by default: anyone
        /// holding the app could hold inventory under invented users, up to the hold caps.
        public var createBookings: Bool?

        public init(createBookings: Bool? = nil) { self.createBookings = createBookings }
    }

    /// Whether the app's client keys may create bookings.
    public var clientKeysCreateBookings: Bool { clientKeys?.createBookings ?? false }

    /// How an app spells its user ids.
    public enum UserIdFormat: String, Codable, Hashable, Sendable {
        /// Any text (at most 200 UTF-8 bytes in NFC).
        case text
        /// A UUID in canonical lowercase form (`7c9e6679-7425-40de-944b-e07fc1f90ae7`); the id is the
        /// user's appAccountToken.
        case uuid
    }

    /// The origins of ``allowedOrigins``, parsed (entries that are not origins are refused by ``validate()``).
    public var origins: [AllowedOrigin] { (allowedOrigins ?? []).compactMap(AllowedOrigin.init) }

    /// Whether every user id is a canonical lowercase UUID that is also the user's appAccountToken.
    public var userIdsAreUUIDs: Bool { userIdFormat == .uuid }

    /// Per-tenant limits that keep one caller from taking inventory or CPU from everyone else.
    public struct Limits: Codable, Hashable, Sendable {
        /// Booking creation per user (and per server key): a token bucket. Default burst 10, 0.2/s.
        public var bookings: RateLimit?
        /// Unpaid holds one user may keep at once. Default 3.
        public var pendingHoldsPerUser: Int?
        /// Unpaid holds one API key may keep at once, over all the users it acts for: a ceiling far
        /// above normal traffic (the per-user and per-resource caps do the work). Default 5,000.
        public var pendingHoldsPerServerKey: Int?
        /// Unpaid holds on one resource at once, whoever holds them. Default 100.
        public var pendingHoldsPerResource: Int?
        /// The unauthenticated notification endpoint, per client address. Default burst 60, 20/s.
        public var notifications: RateLimit?

        public init(
            bookings: RateLimit? = nil,
            pendingHoldsPerUser: Int? = nil,
            pendingHoldsPerServerKey: Int? = nil,
            pendingHoldsPerResource: Int? = nil,
            notifications: RateLimit? = nil
        ) {
            self.pendingHoldsPerResource = pendingHoldsPerResource
            self.bookings = bookings
            self.pendingHoldsPerUser = pendingHoldsPerUser
            self.pendingHoldsPerServerKey = pendingHoldsPerServerKey
            self.notifications = notifications
        }
    }

    public static let defaultVerificationLimit = RateLimit(burst: 60, perSecond: 10)
    public static let defaultBookingLimit = RateLimit(burst: 10, perSecond: 0.2)
    public static let defaultNotificationLimit = RateLimit(burst: 60, perSecond: 20)

    public var verificationLimit: RateLimit { rateLimit ?? Self.defaultVerificationLimit }
    public var bookingLimit: RateLimit { limits?.bookings ?? Self.defaultBookingLimit }
    /// Each resource's name by its id (the operators' listings name resources, not ids).
    public var resourceNames: [String: String] {
        Dictionary(resources.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
    }
    public var notificationLimit: RateLimit { limits?.notifications ?? Self.defaultNotificationLimit }
    public var holdLimits: HoldLimits {
        HoldLimits(
            perUser: limits?.pendingHoldsPerUser ?? HoldLimits.defaultPerUser,
            perServerKey: limits?.pendingHoldsPerServerKey ?? HoldLimits.defaultPerServerKey,
            perResource: limits?.pendingHoldsPerResource ?? HoldLimits.defaultPerResource
        )
    }

    public struct Webhook: Codable, Hashable, Sendable {
        /// An `https` URL. Its host must resolve to public addresses unless allowed below.
        public var url: String
        /// The environment variable holding the HMAC-SHA256 signing secret.
        public var secretEnv: String
        /// Deliver to private-network addresses (10/8, 172.16/12, 192.168/16, fc00::/7…): for a
        /// receiver inside the operator's own network. Default false.
        public var allowPrivateAddresses: Bool?
        /// Deliver over plain `http` to a loopback address (127.0.0.0/8, ::1): for tests and a receiver
        /// on the same machine. Default false.
        public var allowLoopbackHTTP: Bool?

        public init(url: String, secretEnv: String, allowPrivateAddresses: Bool? = nil, allowLoopbackHTTP: Bool? = nil) {
            self.url = url
            self.secretEnv = secretEnv
            self.allowPrivateAddresses = allowPrivateAddresses
            self.allowLoopbackHTTP = allowLoopbackHTTP
        }

        func validate(tenant: String) throws {
            guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), let host = components.host, !host.isEmpty
            else {
                throw CatalogError("tenant \(tenant): webhook.url \(url) is not an absolute URL")
            }
            guard components.user == nil, components.password == nil else {
                throw CatalogError("tenant \(tenant): webhook.url must not carry credentials; the signature authenticates Berth")
            }
            guard scheme == "https" || (scheme == "http" && allowLoopbackHTTP == true) else {
                throw CatalogError("tenant \(tenant): webhook.url must be https (plain http only with allowLoopbackHTTP, to a loopback address)")
            }
        }
    }

    public struct RateLimit: Codable, Hashable, Sendable {
        /// Requests allowed at once.
        public var burst: Int
        /// Refill rate.
        public var perSecond: Double

        public init(burst: Int, perSecond: Double) {
            self.burst = burst
            self.perSecond = perSecond
        }
    }

    public var holdDuration: TimeInterval { TimeInterval((holdMinutes ?? 15) * 60) }

    public func product(id: String) -> Product? { products.first { $0.id == id } }
    public func resource(id: String) -> Resource? { resources.first { $0.id == id } }

    func validate() throws {
        guard !id.isEmpty, id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw CatalogError("tenant id \"\(id)\" must be letters, digits, - or _")
        }
        guard currency.count == 3 else { throw CatalogError("tenant \(id): currency must be an ISO 4217 code") }
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw CatalogError("tenant \(id): timeZone \(timeZone) is not an IANA time zone (Europe/Rome, America/New_York…)")
        }
        for origin in allowedOrigins ?? [] where AllowedOrigin(origin) == nil {
            throw CatalogError(
                "tenant \(id): allowedOrigins entry \"\(origin)\" is not an origin (scheme://host, scheme://host:port or scheme://host:* for any port; never * or a path)"
            )
        }
        try apple.validate(tenant: id)
        try auth.validate(tenant: id)
        try cancellation?.validate(owner: "tenant \(id)")
        if let minutes = holdMinutes, !(1...1440).contains(minutes) {
            throw CatalogError("tenant \(id): holdMinutes must be 1...1440")
        }
        for (name, limit) in [("rateLimit", rateLimit), ("limits.bookings", limits?.bookings), ("limits.notifications", limits?.notifications)] {
            if let limit, limit.burst < 1 || !(limit.perSecond > 0) {
                throw CatalogError("tenant \(id): \(name) needs burst >= 1 and perSecond > 0")
            }
        }
        for (name, value) in [
            ("limits.pendingHoldsPerUser", limits?.pendingHoldsPerUser), ("limits.pendingHoldsPerServerKey", limits?.pendingHoldsPerServerKey),
            ("limits.pendingHoldsPerResource", limits?.pendingHoldsPerResource),
        ] {
            if let value, value < 1 { throw CatalogError("tenant \(id): \(name) must be at least 1") }
        }
        var productIds = Set<String>()
        for product in products where !productIds.insert(product.id).inserted {
            throw CatalogError("tenant \(id): product \(product.id) appears twice")
        }
        var resourceIds = Set<String>()
        for resource in resources {
            guard resourceIds.insert(resource.id).inserted else { throw CatalogError("tenant \(id): resource \(resource.id) appears twice") }
            try resource.validate(tenant: id)
        }
        if let language = defaultLanguage, !Self.languages.contains(language) {
            throw CatalogError("tenant \(id): defaultLanguage must be one of \(Self.languages.joined(separator: ", "))")
        }
        try webhook?.validate(tenant: id)
        try stripe?.validate(tenant: id)
        try googlePlay?.validate(tenant: id)
        try answerSigning?.validate(tenant: id)
        if answerSigning?.testPrivateKeyPEM != nil, apple.allowsProduction {
            throw CatalogError(
                "tenant \(id): answerSigning.testPrivateKeyPEM is a key everyone can read, for test tenants only; a tenant that accepts Production purchases takes its key from privateKeyEnv or privateKeyFileEnv"
            )
        }
        try apple.offers?.validate(tenant: self)
        try credits?.validate(tenant: id)
        try subscriptions?.validate(tenant: id)
        for product in products {
            try product.validate(tenant: self)
        }
        if !resources.isEmpty {
            guard let rules = bookingRules else { throw CatalogError("tenant \(id): resources need bookingRules") }
            try rules.validate(tenant: self)
        }
    }
}

/// The app's identity at Apple and what signed data Berth accepts for it.
public struct AppleIdentity: Codable, Hashable, Sendable {
    public var bundleId: String
    /// The App Store app id; required when Production is allowed.
    public var appAppleId: Int64?
    /// `Production` and/or `Sandbox`.
    public var environments: [StoreEnvironment]
    /// Extra trusted roots (PEM/DER files, relative to the catalog). Only for tenants without Production.
    public var trustedRootFiles: [String]?
    /// Accept Xcode/LocalTesting data. Only for tenants without Production.
    public var allowLocalTesting: Bool?
    /// Credentials of the App Store Server API (In-App Purchase key), to resolve bare transaction ids.
    public var serverAPI: ServerAPICredentials?
    /// Answer CONSUMPTION_REQUEST notifications with Send Consumption Information (needs `serverAPI`;
    /// the app's terms must cover sharing this with Apple).
    public var answerConsumptionRequests: Bool?
    /// What Berth asks Apple to do with refund requests it answers (`auto`, `DECLINE`, `GRANT_FULL`,
    /// `GRANT_PRORATED`); absent: no preference is sent.
    public var refundPreference: RefundPreferencePolicy?
    /// With `serverAPI`: how often Get Notification History is read to recover missed notifications
    /// (default 60 minutes; 0 turns it off).
    public var notificationHistoryMinutes: Int?
    /// For a tenant that accepts Production: the user ids (testers) whose Sandbox purchases may pay for
    /// bookings. Sandbox purchases cost nothing (TestFlight, sandbox accounts); nobody else's confirm.
    public var sandboxTesters: [String]?
    /// The subscription offers Berth signs for the app, and who may have them (needs `serverAPI`: the
    /// In-App Purchase key signs them).
    public var offers: AppleOffers?

    public var allowsProduction: Bool { environments.contains(.production) }

    /// App Apple IDs that are examples, not apps: sample catalogs (Berth's earlier one shipped
    /// 6450000001) and the usual made-up values. A Production tenant with one of these would verify
    /// purchases but refuse every Production notification (refunds lost), so it does not start.
    public static let placeholderAppAppleIds: Set<Int64> = [6450000001, 1234567890, 123456789, 9999999999, 1111111111]

    func validate(tenant: String) throws {
        guard !bundleId.isEmpty else { throw CatalogError("tenant \(tenant): apple.bundleId is empty") }
        guard !environments.isEmpty, environments.allSatisfy(StoreEnvironment.stores.contains) else {
            throw CatalogError("tenant \(tenant): apple.environments must list Production and/or Sandbox")
        }
        if let minutes = notificationHistoryMinutes, !(0...10_080).contains(minutes) {
            throw CatalogError("tenant \(tenant): apple.notificationHistoryMinutes must be 0 (off) to 10080")
        }
        if sandboxTesters != nil, !allowsProduction {
            throw CatalogError(
                "tenant \(tenant): apple.sandboxTesters applies to tenants that accept Production (every user of a Sandbox-only tenant is a tester)"
            )
        }
        if allowsProduction {
            guard let appAppleId else { throw CatalogError("tenant \(tenant): Production needs apple.appAppleId") }
            guard appAppleId >= 100_000_000, !Self.placeholderAppAppleIds.contains(appAppleId) else {
                throw CatalogError(
                    "tenant \(tenant): apple.appAppleId \(appAppleId) is a placeholder; set the app's Apple ID from App Store Connect (App Information → Apple ID) before accepting Production, or Production notifications (refunds) would all be refused"
                )
            }
            guard (trustedRootFiles ?? []).isEmpty else {
                throw CatalogError("tenant \(tenant): a tenant with Production may not trust extra (test) roots")
            }
            guard allowLocalTesting != true else {
                throw CatalogError("tenant \(tenant): a tenant with Production may not allow local testing data")
            }
        }
    }
}

/// Where an App Store Server API key lives. Base URLs default to Apple's; tests point them at a
/// local stand-in.
public struct ServerAPICredentials: Codable, Hashable, Sendable {
    public var issuerId: String
    public var keyId: String
    /// The `.p8` PEM file App Store Connect issued, relative to the catalog.
    public var privateKeyFile: String
    public var productionURL: String?
    public var sandboxURL: String?

    public init(issuerId: String, keyId: String, privateKeyFile: String, productionURL: String? = nil, sandboxURL: String? = nil) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKeyFile = privateKeyFile
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
    }
}

/// How the tenant's user tokens are verified (the tenant is chosen by the token's issuer).
public struct UserAuth: Codable, Hashable, Sendable {
    /// `HS256`, `ES256` or `RS256`.
    public var algorithm: String
    public var issuer: String
    public var audience: String?
    /// HS256: the environment variable holding the shared secret.
    public var secretEnv: String?
    /// ES256/RS256: a PEM public key file, relative to the catalog.
    public var publicKeyFile: String?
    /// RS256: a JSON Web Key Set URL (Firebase: https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com),
    /// fetched at start, cached, and fetched again when a token names an unknown `kid`.
    public var jwksURL: String?

    public init(
        algorithm: String,
        issuer: String,
        audience: String? = nil,
        secretEnv: String? = nil,
        publicKeyFile: String? = nil,
        jwksURL: String? = nil
    ) {
        self.algorithm = algorithm
        self.issuer = issuer
        self.audience = audience
        self.secretEnv = secretEnv
        self.publicKeyFile = publicKeyFile
        self.jwksURL = jwksURL
    }

    func validate(tenant: String) throws {
        switch algorithm {
        case "HS256":
            guard let secretEnv, !secretEnv.isEmpty else { throw CatalogError("tenant \(tenant): HS256 needs auth.secretEnv") }
        case "RS256" where jwksURL != nil:
            // https only; plain http only to this machine (a local key publisher or a test).
            guard let url = URL(string: jwksURL ?? ""), let host = url.host, !host.isEmpty,
                url.scheme == "https" || (url.scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host))
            else {
                throw CatalogError("tenant \(tenant): auth.jwksURL must be an https URL (http only to 127.0.0.1, ::1 or localhost)")
            }
            guard publicKeyFile == nil else { throw CatalogError("tenant \(tenant): auth takes publicKeyFile or jwksURL, not both") }
        case "ES256", "RS256":
            guard let publicKeyFile, !publicKeyFile.isEmpty else {
                throw CatalogError("tenant \(tenant): \(algorithm) needs auth.publicKeyFile (or, for RS256, auth.jwksURL)")
            }
        default:
            throw CatalogError("tenant \(tenant): auth.algorithm must be HS256, ES256 or RS256")
        }
        guard !issuer.isEmpty else { throw CatalogError("tenant \(tenant): auth.issuer is empty") }
    }
}

extension Tenant {
    /// What the app sells: bookings when it has booking rules, credits when it has credit
    /// settings, subscriptions when a product is one. The admin page shows only these views.
    public var sells: [ProductKind] {
        var kinds: [ProductKind] = []
        if bookingRules != nil { kinds.append(.booking) }
        if credits != nil { kinds.append(.credits) }
        if products.contains(where: { $0.kind == .subscription }) { kinds.append(.subscription) }
        if products.contains(where: { $0.kind == .unlock }) { kinds.append(.unlock) }
        return kinds
    }

    /// What Berth cannot recover for this app while it has no App Store Server API key: a consumable
    /// the store's client finishes without sending it. cordova-plugin-purchase, holding several
    /// unfinished transactions at launch, posts only the newest and finishes them all; the others
    /// reach Berth only through Apple's `ONE_TIME_CHARGE` notification, or through the customer's
    /// history, which needs the key. `nil` when the app sells no consumable.
    public static let withoutServerAPINote =
        "No App Store Server API key (apple.serverAPI): a consumable the app finishes without sending it (cordova-plugin-purchase posts only the newest of several unfinished at launch) reaches Berth only through Apple's ONE_TIME_CHARGE notification; with the key, Berth reads the customer's history and applies it"

    public var withoutServerAPI: String? {
        products.contains(where: { $0.type == "Consumable" }) ? Self.withoutServerAPINote : nil
    }
}

/// What a catalog product's purchase does, one case per kind (decoded from the flat fields of
/// `products.json` and checked by the catalog's validation).
public enum ProductTerms: Hashable, Sendable {
    case booking
    case credits(amount: Int64, creditType: String?)
    case subscription(SubscriptionProductInfo)
    case unlock(UnlockTerms)
}

/// What a product does when bought. Each kind is one module (`UseCases/Kinds/`); the compiler's
/// exhaustive switches over this enum, ``PurchaseTarget`` and ``ProductTerms`` list what a new kind handles.
public enum ProductKind: String, Codable, Hashable, Sendable, CaseIterable {
    case booking, credits, subscription, unlock
}

/// A product sold through the App Store.
public struct Product: Codable, Hashable, Sendable {
    public var id: String
    public var kind: ProductKind
    /// Apple's product type: Consumable, Non-Consumable, Auto-Renewable Subscription, Non-Renewing Subscription.
    public var type: String
    public var title: String
    /// For `credits`: how many credits one purchase adds.
    public var credits: Int?
    /// For `credits`: the credit type it grants (default: the tenant's only type).
    public var creditType: String?
    /// For `subscription`: the entitlement it grants (default `premium`), and its tier and billing
    /// cycle as the app names them (`standard`/`premium`, `month`/`year`).
    public var entitlement: String?
    public var tier: String?
    public var cycle: String?
    /// For `unlock`: how many days one purchase grants (a non-renewing pass); absent for a lifetime
    /// unlock (a non-consumable). The entitlement is `entitlement` (required for unlocks).
    public var durationDays: Int?
    /// What the purchase screen shows: a description, a price in minor units of the tenant's
    /// currency, the order (ascending) and whether it is offered. Seeds only: operators edit credit
    /// products at run time and the stored product wins.
    public var description: String?
    public var priceMinor: Int64?
    public var displayOrder: Int?
    public var active: Bool?
    /// How it is sold on Google Play when its id there is not `id` (or a subscription's base plans).
    public var google: GoogleProduct?

    public init(
        id: String,
        kind: ProductKind,
        type: String,
        title: String,
        credits: Int? = nil,
        creditType: String? = nil,
        entitlement: String? = nil,
        description: String? = nil,
        priceMinor: Int64? = nil,
        displayOrder: Int? = nil,
        active: Bool? = nil,
        tier: String? = nil,
        cycle: String? = nil,
        durationDays: Int? = nil
    ) {
        self.durationDays = durationDays
        self.tier = tier
        self.cycle = cycle
        self.id = id
        self.kind = kind
        self.type = type
        self.title = title
        self.credits = credits
        self.creditType = creditType
        self.entitlement = entitlement
        self.description = description
        self.priceMinor = priceMinor
        self.displayOrder = displayOrder
        self.active = active
    }

    /// For a subscription product: what a subscription record says of it.
    public var subscriptionInfo: SubscriptionProductInfo? {
        guard kind == .subscription else { return nil }
        return SubscriptionProductInfo(entitlement: entitlement ?? "premium", tier: tier, cycle: cycle)
    }

    /// What buying the product does, as one case per kind (the flat JSON fields, checked by `validate`).
    public var terms: ProductTerms {
        switch kind {
        case .booking: .booking
        case .credits: .credits(amount: Int64(credits ?? 0), creditType: creditType)
        case .subscription: .subscription(SubscriptionProductInfo(entitlement: entitlement ?? "premium", tier: tier, cycle: cycle))
        case .unlock: .unlock(UnlockTerms(entitlement: entitlement ?? "premium", durationDays: durationDays))
        }
    }

    func validate(tenant: Tenant) throws {
        if kind == .subscription, type != "Auto-Renewable Subscription" {
            throw CatalogError("tenant \(tenant.id): product \(id) is a subscription; its type must be Auto-Renewable Subscription")
        }
        if kind != .unlock, durationDays != nil {
            throw CatalogError("tenant \(tenant.id): product \(id): durationDays applies to unlock products only")
        }
        if kind == .unlock { try UnlockTerms.validate(self, tenant: tenant.id) }
        guard kind == .credits else { return }
        guard let settings = tenant.credits else {
            throw CatalogError("tenant \(tenant.id): product \(id) sells credits but the tenant has no credits settings")
        }
        guard let credits, (1...1_000_000).contains(credits) else {
            throw CatalogError("tenant \(tenant.id): product \(id) needs credits 1...1000000")
        }
        guard let type = creditType ?? settings.defaultType else {
            throw CatalogError("tenant \(tenant.id): product \(id) must name its creditType (the tenant has several)")
        }
        guard settings.types.contains(type) else { throw CatalogError("tenant \(tenant.id): product \(id) names unknown credit type \(type)") }
        if let price = priceMinor, price < 0 { throw CatalogError("tenant \(tenant.id): product \(id) has a negative priceMinor") }
    }
}
