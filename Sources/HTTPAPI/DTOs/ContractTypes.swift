import Domain
import Foundation
import UseCases

// The JSON contract of the API. contract/berth.ts and contract/openapi.yaml describe these types;
// the contract tests compare real responses with both.

/// A booking id in requests: a JSON number, or a string of digits (some clients send strings).
struct BookingID: Codable, Hashable, Sendable {
    var value: Int64

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            value = number
        } else if let text = try? container.decode(String.self), let number = Int64(text) {
            value = number
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be a booking id (an integer)")
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

struct ProductDTO: Codable {
    var id: String
    var kind: String
    var type: String
    var title: String
    /// Credit packs: the credit type and credits one purchase grants, what the purchase screen shows.
    var creditType: String?
    var credits: Int64?
    var description: String?
    /// Minor units of `currency`.
    var price: Int64?
    var currency: String?
    var displayOrder: Int?
    var active: Bool?
    /// Unlocks: the entitlement one purchase grants, and for a pass the days it lasts.
    var entitlement: String?
    var durationDays: Int?

    init(_ product: Product) {
        id = product.id
        kind = product.kind.rawValue
        type = product.type
        title = product.title
        if case .unlock(let terms) = product.terms {
            entitlement = terms.entitlement
            durationDays = terms.durationDays
        }
    }

    init(_ product: CreditProduct) {
        id = product.productId
        kind = ProductKind.credits.rawValue
        type = "Consumable"
        title = product.title
        creditType = product.creditType
        credits = product.credits
        description = product.description
        price = product.priceMinor
        currency = product.currency
        displayOrder = product.displayOrder
        active = product.active
    }
}

struct ProductsResponse: Codable {
    var products: [ProductDTO]
}

struct ResourceDTO: Codable {
    var id: String
    var kind: String
    var name: String
    var currency: String
    var pricePerDay: Int64?
    var units: Int?
    var experienceType: String?
    var pricePerSeat: Int64?
    var seatsPerSlot: Int?
    var slotTimes: [String]?
    var durationMinutes: Int?
    /// Experiences: the IANA time zone `slotTimes` are in (`UTC` unless the catalog names one).
    var timeZone: String?

    init(_ resource: Resource, currency: String, tenantTimeZone: String? = nil) {
        id = resource.id
        kind = resource.kind.rawValue
        name = resource.name
        self.currency = currency
        pricePerDay = resource.pricePerDayMinor
        units = resource.kind == .rental ? (resource.units ?? 1) : nil
        experienceType = resource.experienceType
        pricePerSeat = resource.pricePerSeatMinor
        seatsPerSlot = resource.seatsPerSlot
        slotTimes = resource.slotTimes
        durationMinutes = resource.durationMinutes
        timeZone = resource.kind == .experience ? (resource.timeZone ?? tenantTimeZone ?? "UTC") : nil
    }
}

/// A time in a booking request: an RFC 3339 instant (`2026-07-14T15:30:00Z`, `…+02:00`), or a
/// wall-clock time in the resource's zone (`2026-07-14T17:30`), or for rentals a day (`2026-07-14`).
struct BookingTimeText: Codable, Hashable {
    var time: BookingTime

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        if let date = APITime.parse(text) {
            time = .instant(date)
        } else if let local = LocalDateTime.parse(text) {
            time = .local(local)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription:
                    "must be an ISO 8601 date-time (2026-07-14T15:30:00Z, or with an offset), a local date-time in the resource's time zone (2026-07-14T17:30) or a date (2026-07-14)"
            )
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch time {
        case .instant(let date): try container.encode(APITime(date))
        case .local(let local): try container.encode(local.description)
        }
    }
}

struct BookingDTO: Codable {
    var id: Int64
    var userId: String
    var resourceId: String
    var resourceKind: String
    var start: APITime
    var end: APITime
    var seats: Int
    /// Minor units of `currency`.
    var price: Int64
    var currency: String
    var requiredProductId: String
    var status: String
    var holdExpiresAt: APITime
    var createdAt: APITime
    var updatedAt: APITime
    var confirmedAt: APITime?
    var purchaseId: Int64?
    var statusReason: String?
    /// Units of `requiredProductId` that pay the booking: one transaction of this quantity, or
    /// several transactions whose quantities add up to it.
    var requiredQuantity: Int
    /// Units paid so far.
    var paidQuantity: Int
    /// Units still to buy before the booking is confirmed (0 once confirmed).
    var remainingQuantity: Int
    /// `Production` or `Sandbox`: the environment of the purchase that confirmed it (absent until then).
    var environment: StoreEnvironment?
    /// The latest card payment of the booking (`GET /api/bookings/{id}` and the card-payment answer; absent otherwise).
    var payment: BookingPaymentDTO?
    /// The short reference people read out (7 characters without 0, O, 1, I); accepted wherever a booking id is.
    var reference: String
    /// `UTC` or the IANA zone the booking happens in; `localStart`/`localEnd` are its wall-clock times with their offset.
    var timeZone: String
    var localStart: String
    var localEnd: String
    /// The operators' listing only: the resource's name, the rails it was paid through and how much
    /// is paid (minor units), and whether its hold lapsed unpaid.
    var resourceName: String?
    var paidVia: [String]?
    var amountPaid: Int64?
    var holdLapsed: Bool?

    init(_ booking: Booking, payment: CardPayment? = nil) {
        reference = booking.reference
        timeZone = booking.zoneName
        localStart = booking.localStart
        localEnd = booking.localEnd
        self.payment = payment.map(BookingPaymentDTO.init)
        requiredQuantity = booking.requiredQuantity
        paidQuantity = booking.paidQuantity
        remainingQuantity = booking.remainingQuantity
        environment = booking.environment
        id = booking.id
        userId = booking.userId
        resourceId = booking.resourceId
        resourceKind = booking.resourceKind.rawValue
        start = APITime(booking.start)
        end = APITime(booking.end)
        seats = booking.seats
        price = booking.priceMinor
        currency = booking.currency
        requiredProductId = booking.requiredProductId
        status = booking.status.rawValue
        holdExpiresAt = APITime(booking.holdExpiresAt)
        createdAt = APITime(booking.createdAt)
        updatedAt = APITime(booking.updatedAt)
        confirmedAt = booking.confirmedAt.map(APITime.init)
        purchaseId = booking.purchaseId
        statusReason = booking.statusReason
    }
}

struct PurchaseDTO: Codable {
    var id: Int64
    var userId: String
    var bookingId: Int64?
    var store: String
    var environment: StoreEnvironment
    var transactionId: String
    var originalTransactionId: String
    var productId: String
    var status: String
    var outcomeCode: String?
    var purchasedAt: APITime
    var createdAt: APITime
    /// What Apple signed as paid: price in milliunits of `currency` (1/1000 of the unit), quantity.
    var priceMilliunits: Int64?
    var currency: String?
    var quantity: Int?
    /// A credits purchase: the credit type and the credits it granted.
    var creditType: String?
    var credits: Int64?

    init(_ purchase: Purchase) {
        creditType = purchase.creditType
        credits = purchase.credits
        priceMilliunits = purchase.priceMilliunits
        currency = purchase.currency
        quantity = purchase.quantity
        id = purchase.id
        userId = purchase.userId
        bookingId = purchase.bookingId
        store = purchase.store.rawValue
        environment = purchase.environment
        transactionId = purchase.transactionId
        originalTransactionId = purchase.originalTransactionId
        productId = purchase.productId
        status = purchase.status.rawValue
        outcomeCode = purchase.outcomeCode
        purchasedAt = APITime(purchase.purchasedAt)
        createdAt = APITime(purchase.createdAt)
    }
}

struct VerifyPurchaseRequest: Codable, RefusesNull {
    /// The booking a booking product pays for; absent for a credit pack.
    var bookingId: BookingID?
    var productId: String
    var transactionId: String?
    var jwsRepresentation: String?
    var receipt: String?
    /// Google Play: the purchase token (`Purchase.getPurchaseToken()`), and the app's package when the tenant has several.
    var purchaseToken: String?
    var packageName: String?

    /// The proof fields, by their names, for the stores to read (``PurchaseSources``).
    var proofFields: ProofFields {
        ProofFields([
            "jwsRepresentation": jwsRepresentation, "receipt": receipt, "transactionId": transactionId,
            "purchaseToken": purchaseToken, "packageName": packageName,
        ])
    }
}

struct VerifyPurchaseResponse: Codable {
    var success = true
    var booking: BookingDTO
    var purchase: PurchaseDTO
}

struct ListResponse<Item: Codable>: Codable {
    var items: [Item]
    var total: Int
    var limit: Int
    var offset: Int
}

struct BookingResponse: Codable {
    var booking: BookingDTO
}

/// The answer to Apple (it only reads the status).
struct NotificationAck: Codable {
    var received = true
    var outcome: String
    var duplicate: Bool
}

/// A paid transaction Berth could not apply (`GET /api/admin/unapplied-payments`, and beside the
/// refusal that kept it).
struct UnappliedPaymentDTO: Codable {
    var id: Int64
    var status: String
    var userId: String
    var bookingId: Int64?
    var transactionId: String
    var originalTransactionId: String
    var productId: String
    var environment: StoreEnvironment
    var quantity: Int
    var priceMilliunits: Int64?
    var currency: String?
    var reasonCode: String
    var reason: String
    var attempts: Int64
    var firstSeenAt: APITime
    var lastSeenAt: APITime
    var resolvedAt: APITime?
    var resolvedBy: String?
    var purchaseId: Int64?
    var note: String?

    init(_ p: UnappliedPayment) {
        id = p.id
        status = p.currentStatus.rawValue
        userId = p.userId
        bookingId = p.bookingId
        transactionId = p.proven.transactionId
        originalTransactionId = p.proven.originalTransactionId
        productId = p.proven.productId
        environment = p.proven.environment
        quantity = p.proven.quantity ?? 1
        priceMilliunits = p.proven.priceMilliunits
        currency = p.proven.currency
        reasonCode = p.reasonCode.rawValue
        reason = p.reason
        attempts = p.attempts
        firstSeenAt = APITime(p.firstSeenAt)
        lastSeenAt = APITime(p.lastSeenAt)
        resolvedAt = p.resolvedAt.map(APITime.init)
        resolvedBy = p.resolvedBy
        purchaseId = p.appliedPurchaseId
        note = p.note
    }
}

/// A booking named in a body: its id (a number) or its reference (a string).
enum BookingKey: Codable, Hashable {
    case id(Int64)
    case text(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let id = try? container.decode(Int64.self) { self = .id(id) } else { self = .text(try container.decode(String.self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .id(let id): try container.encode(id)
        case .text(let text): try container.encode(text)
        }
    }

    func resolve(field: String, tenantId: String, lookup: BookingLookup) async throws -> Int64 {
        switch self {
        case .id(let id): try await Paging.bookingId(String(id), field: field, tenantId: tenantId, lookup: lookup)
        case .text(let text): try await Paging.bookingId(text, field: field, tenantId: tenantId, lookup: lookup)
        }
    }
}

struct AppDTO: Codable {
    var id: String
    var name: String
    var bundleId: String
    var environments: [StoreEnvironment]
    var currency: String
    /// `booking`, `credits`, `subscription`: what it sells (an empty list sells nothing yet).
    var sells: [String]
    /// The credit types, when it sells credits.
    var creditTypes: [String]?
    /// Whether an App Store Server API key is configured (bare transaction ids, test notifications, refreshes).
    var appStoreServerAPI: Bool
    /// Whether signed webhooks go to the app's backend.
    var webhook: Bool
    /// Whether bookings can be paid (and refunded) by card: the app has a card rail and its secrets are set.
    var cardPayments: Bool

    /// The app's IANA zone (`UTC` without one): the page writes times in it.
    var timeZone: String
    /// What the app's settings leave Berth unable to do, for the operator to see (empty when nothing).
    var notices: [Notice]

    struct Notice: Codable {
        /// `no_app_store_server_api`: consumables the app finishes without sending cannot be recovered.
        var code: String
        var message: String
    }

    init(_ tenant: Tenant, appStoreServerAPI: Bool, webhook: Bool, cardPayments: Bool) {
        self.cardPayments = cardPayments
        notices = appStoreServerAPI ? [] : tenant.withoutServerAPI.map { [Notice(code: "no_app_store_server_api", message: $0)] } ?? []
        timeZone = tenant.timeZone ?? "UTC"
        id = tenant.id
        name = tenant.name
        bundleId = tenant.apple.bundleId
        environments = tenant.apple.environments
        currency = tenant.currency
        sells = tenant.sells.map(\.rawValue)
        creditTypes = tenant.credits?.types
        self.appStoreServerAPI = appStoreServerAPI
        self.webhook = webhook
    }
}
