/// A stable, machine-readable refusal code (`product_mismatch`, `slot_unavailable`, …). Every code
/// Berth's own layers produce is a static member here and listed in ``all``, so the contract can be
/// checked against the list; codes of Apple-data verification come from `SignedDataError.Code` and
/// `AppStoreAPIError.Code`, passed through with ``init(rawValue:)``.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let accountTokenMismatch = ErrorCode("account_token_mismatch")
    public static let accountTokenMissing = ErrorCode("account_token_missing")
    public static let appleNotConfigured = ErrorCode("apple_not_configured")
    public static let badRequest = ErrorCode("bad_request")
    public static let bodyTooLarge = ErrorCode("body_too_large")
    public static let bookingAlreadyPaid = ErrorCode("booking_already_paid")
    public static let bookingNotFound = ErrorCode("booking_not_found")
    public static let bookingNotPayable = ErrorCode("booking_not_payable")
    /// Not a refusal: the payment was applied, and the booking still waits for more units.
    public static let bookingPartlyPaid = ErrorCode("booking_partly_paid")
    public static let bookingsNotOffered = ErrorCode("bookings_not_offered")
    public static let deliveryNotFound = ErrorCode("delivery_not_found")
    public static let forbidden = ErrorCode("forbidden")
    public static let internalError = ErrorCode("internal_error")
    public static let invalidField = ErrorCode("invalid_field")
    public static let invalidJson = ErrorCode("invalid_json")
    public static let invalidQuery = ErrorCode("invalid_query")
    public static let invalidRequest = ErrorCode("invalid_request")
    public static let invalidTransition = ErrorCode("invalid_transition")
    public static let invalidUserId = ErrorCode("invalid_user_id")
    public static let insufficientScope = ErrorCode("insufficient_scope")
    public static let keyNotFound = ErrorCode("key_not_found")
    public static let malformed = ErrorCode("malformed")
    public static let methodNotAllowed = ErrorCode("method_not_allowed")
    public static let missingField = ErrorCode("missing_field")
    public static let missingUser = ErrorCode("missing_user")
    public static let noProductForBooking = ErrorCode("no_product_for_booking")
    public static let notFound = ErrorCode("not_found")
    public static let priceAboveLimit = ErrorCode("price_above_limit")
    public static let productMismatch = ErrorCode("product_mismatch")
    public static let proofRequired = ErrorCode("proof_required")
    public static let quantityInsufficient = ErrorCode("quantity_insufficient")
    public static let rateLimited = ErrorCode("rate_limited")
    public static let resourceNotFound = ErrorCode("resource_not_found")
    /// The resource is retired: it keeps its bookings and takes no new ones.
    public static let resourceRetired = ErrorCode("resource_retired")
    /// A resource (`POST /api/admin/resources`) with an id the tenant already has.
    public static let resourceExists = ErrorCode("resource_exists")
    /// The resource is closed for that time (weather, maintenance): no new booking inside.
    public static let resourceClosed = ErrorCode("resource_closed")
    /// No closure of this app has that id (or it was deleted).
    public static let closureNotFound = ErrorCode("closure_not_found")
    /// A paid booking whose app (and resource) has no cancellation policy: the operator cancels it.
    public static let cancellationNotOffered = ErrorCode("cancellation_not_offered")
    /// The booking's trip has begun: it can no longer be cancelled or moved by the customer.
    public static let bookingStarted = ErrorCode("booking_started")
    /// The policy's `changeUntilHoursBefore` has passed: the booking can no longer be moved.
    public static let changeNotAllowed = ErrorCode("change_not_allowed")
    /// The new slot costs more than what was paid: the move waits for the difference.
    public static let moveCostsMore = ErrorCode("move_costs_more")
    public static let sandboxNotAllowed = ErrorCode("sandbox_not_allowed")
    public static let slotNotOffered = ErrorCode("slot_not_offered")
    public static let slotUnavailable = ErrorCode("slot_unavailable")
    /// Money owed to customers: the booking owes nothing (open) / what it owed was closed already.
    public static let owedNotFound = ErrorCode("owed_not_found")
    public static let owedResolved = ErrorCode("owed_resolved")
    /// A booking asked for a slot someone else holds, before any payment.
    public static let slotTaken = ErrorCode("slot_taken")
    public static let temporarilyUnavailable = ErrorCode("temporarily_unavailable")
    public static let tenantNotFound = ErrorCode("tenant_not_found")
    public static let tooManyPendingBookings = ErrorCode("too_many_pending_bookings")
    public static let transactionAlreadyUsed = ErrorCode("transaction_already_used")
    public static let transactionLookupUnavailable = ErrorCode("transaction_lookup_unavailable")
    public static let transactionMismatch = ErrorCode("transaction_mismatch")
    public static let transactionNotInReceipt = ErrorCode("transaction_not_in_receipt")
    public static let receiptWithoutPurchases = ErrorCode("receipt_without_purchases")
    public static let transactionRevoked = ErrorCode("transaction_revoked")
    public static let unauthenticated = ErrorCode("unauthenticated")
    public static let wrongBundle = ErrorCode("wrong_bundle")
    public static let wrongEnvironment = ErrorCode("wrong_environment")
    public static let creditsNotOffered = ErrorCode("credits_not_offered")
    public static let insufficientCredits = ErrorCode("insufficient_credits")
    public static let productExists = ErrorCode("product_exists")
    public static let productNotFound = ErrorCode("product_not_found")
    public static let referenceInUse = ErrorCode("reference_in_use")
    public static let reservationNotFound = ErrorCode("reservation_not_found")
    public static let reservationNotHeld = ErrorCode("reservation_not_held")
    public static let unknownCreditType = ErrorCode("unknown_credit_type")
    public static let unknownProduct = ErrorCode("unknown_product")
    public static let productNotSupported = ErrorCode("product_not_supported")
    public static let linkedToOtherAccount = ErrorCode("linked_to_other_account")
    public static let linkedToOtherIAP = ErrorCode("linked_to_other_iap")
    public static let hasValidNonIAP = ErrorCode("has_valid_non_iap")
    public static let invalid = ErrorCode("invalid")
    public static let subscriptionNotFound = ErrorCode("subscription_not_found")
    public static let refreshUnavailable = ErrorCode("refresh_unavailable")
    public static let unappliedPaymentNotFound = ErrorCode("unapplied_payment_not_found")
    public static let unappliedPaymentResolved = ErrorCode("unapplied_payment_resolved")
    public static let amountMismatch = ErrorCode("amount_mismatch")
    public static let invalidSignature = ErrorCode("invalid_signature")
    public static let depositHeld = ErrorCode("deposit_held")
    public static let depositNotHeld = ErrorCode("deposit_not_held")
    public static let holdExpired = ErrorCode("hold_expired")
    public static let cardPaymentsNotOffered = ErrorCode("card_payments_not_offered")
    public static let paymentProviderUnavailable = ErrorCode("payment_provider_unavailable")
    /// Google Play: the tenant sells nothing there (or its service account is not set).
    public static let googlePlayNotConfigured = ErrorCode("google_play_not_configured")
    /// Google Play does not know the purchase token (for this package and product).
    public static let purchaseTokenInvalid = ErrorCode("purchase_token_invalid")
    /// Google Play: the purchase waits for payment (a pending purchase); send it again once it is paid.
    public static let purchasePending = ErrorCode("purchase_pending")
    /// Google Play could not be reached, or refused Berth's credentials; try again shortly.
    public static let googlePlayUnavailable = ErrorCode("google_play_unavailable")
    public static let refundViaApple = ErrorCode("refund_via_apple")
    public static let bookingNotPaid = ErrorCode("booking_not_paid")
    public static let refundInProgress = ErrorCode("refund_in_progress")
    public static let invalidAmount = ErrorCode("invalid_amount")
    public static let storePurchasesNotOffered = ErrorCode("store_purchases_not_offered")
    /// Offers: the tenant has no In-App Purchase key (apple.serverAPI) to sign them with.
    public static let offersNotConfigured = ErrorCode("offers_not_configured")
    /// Offers: the catalog does not sign this offer for this product.
    public static let offerUnknown = ErrorCode("offer_unknown")
    /// Offers: the tenant's rule does not give this offer to this user.
    public static let offerNotEligible = ErrorCode("offer_not_eligible")

    /// Every code above.
    public static let all: [ErrorCode] = [
        .accountTokenMismatch,
        .accountTokenMissing,
        .appleNotConfigured,
        .badRequest,
        .bodyTooLarge,
        .bookingAlreadyPaid,
        .bookingNotFound,
        .bookingNotPayable,
        .bookingPartlyPaid,
        .bookingsNotOffered,
        .deliveryNotFound,
        .forbidden,
        .internalError,
        .invalidField,
        .invalidJson,
        .invalidQuery,
        .invalidRequest,
        .invalidTransition,
        .invalidUserId,
        .insufficientScope,
        .keyNotFound,
        .malformed,
        .methodNotAllowed,
        .missingField,
        .missingUser,
        .noProductForBooking,
        .notFound,
        .priceAboveLimit,
        .productMismatch,
        .proofRequired,
        .quantityInsufficient,
        .rateLimited,
        .resourceNotFound,
        .resourceRetired,
        .resourceExists,
        .resourceClosed,
        .closureNotFound,
        .cancellationNotOffered,
        .bookingStarted,
        .changeNotAllowed,
        .moveCostsMore,
        .sandboxNotAllowed,
        .slotNotOffered,
        .slotUnavailable,
        .slotTaken,
        .owedNotFound,
        .owedResolved,
        .temporarilyUnavailable,
        .tenantNotFound,
        .tooManyPendingBookings,
        .transactionAlreadyUsed,
        .transactionLookupUnavailable,
        .transactionMismatch,
        .transactionNotInReceipt,
        .receiptWithoutPurchases,
        .transactionRevoked,
        .unauthenticated,
        .wrongBundle,
        .wrongEnvironment,
        .creditsNotOffered,
        .insufficientCredits,
        .productExists,
        .productNotFound,
        .referenceInUse,
        .reservationNotFound,
        .reservationNotHeld,
        .unknownCreditType,
        .unknownProduct,
        .productNotSupported,
        .linkedToOtherAccount,
        .linkedToOtherIAP,
        .hasValidNonIAP,
        .invalid,
        .subscriptionNotFound,
        .refreshUnavailable,
        .unappliedPaymentNotFound,
        .unappliedPaymentResolved,
        .amountMismatch,
        .invalidSignature,
        .depositHeld,
        .depositNotHeld,
        .holdExpired,
        .cardPaymentsNotOffered,
        .paymentProviderUnavailable,
        .refundViaApple,
        .bookingNotPaid,
        .refundInProgress,
        .invalidAmount,
        .storePurchasesNotOffered,
        .offersNotConfigured,
        .offerUnknown,
        .offerNotEligible,
        .googlePlayNotConfigured,
        .purchaseTokenInvalid,
        .purchasePending,
        .googlePlayUnavailable,
    ]
}
