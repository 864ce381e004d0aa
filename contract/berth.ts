// Berth HTTP API: the TypeScript-facing contract.
//
// Conventions
// - Money is an integer in minor units of `currency` (8000 + "EUR" = €80.00).
// - Times are ISO 8601 UTC strings with milliseconds ("2026-07-01T09:00:00.000Z"). Requests send
//   RFC 3339 date-times: 0 to 9 fraction digits, then Z or an offset ("+02:00"); anything else
//   (no zone, a trailing character, an impossible date) is refused with 400.
// - Free text that must not be blank (reasons, ids) is trimmed of white space; lengths count
//   Unicode code points, as JSON Schema's maxLength does.
// - Ids of bookings and purchases are integers below 2^53 (safe JavaScript numbers).
// - Optional fields are omitted when they have no value (never null).
// - Every error has the shape `ErrorResponse`, with a stable `code`.
// - Authentication: `Authorization: Bearer <token>` where token is the user's JWT (the tenant is
//   chosen by its issuer), a server API key plus `X-User-Id: <user id>`, or an admin API key.

export type ISODateTime = string;

// ---------------------------------------------------------------- errors

export type VerificationErrorCode =
  | "malformed"
  | "unsupported_algorithm"
  | "bad_chain"
  | "untrusted_root"
  | "missing_apple_oid"
  | "certificate_expired"
  | "certificate_not_yet_valid"
  | "bad_signature"
  | "wrong_bundle"
  | "wrong_app_apple_id"
  | "wrong_environment"
  // configuration problems (reported by the CLI; not expected from a running server)
  | "invalid_root"
  | "missing_app_apple_id";

export type ErrorCode =
  // request shape (400, 413)
  | "invalid_json"
  | "invalid_field"
  | "missing_field"
  | "invalid_query"
  | "invalid_request"
  | "body_too_large"
  | "bad_request"
  | "not_found"
  | "method_not_allowed"
  // authentication (401, 403, 400)
  | "unauthenticated"
  | "forbidden"
  | "missing_user"
  | "invalid_user_id"
  | "insufficient_scope"
  | "key_not_found"
  // bookings, tenants, admin
  | "tenant_not_found"
  | "delivery_not_found"
  | "resource_not_found"
  /** 409: the resource is retired (kept for its bookings) and takes no new booking */
  | "resource_retired"
  /** 409 (POST /api/admin/resources): the tenant already has a resource with that id (PATCH changes it) */
  | "resource_exists"
  /** 409: the resource is closed for that time (weather, maintenance); the message names the closure */
  | "resource_closed"
  /** 404: no closure of this app has that id */
  | "closure_not_found"
  /** 409 (POST /api/bookings/{id}/cancel): a paid booking of an app without a cancellation policy; the operator cancels it */
  | "cancellation_not_offered"
  /** 409: the trip has begun; the customer can no longer cancel or move it */
  | "booking_started"
  /** 409 (POST /api/bookings/{id}/move): the policy's changeUntilHoursBefore has passed */
  | "change_not_allowed"
  /** 409 (move): the new place costs more than was paid; pick one at the same price or less */
  | "move_costs_more"
  | "bookings_not_offered"
  | "no_product_for_booking"
  | "slot_not_offered"
  /** 404 / 409 (POST /api/admin/owed/{id}/resolve): the booking owes nothing open / what it owed was closed already */
  | "owed_not_found"
  | "owed_resolved"
  /** 409 (POST /api/bookings): the slot is held by other bookings; nothing was paid, choose another time */
  | "slot_taken"
  /** 409 (verify-purchase, a card payment): paid, but the slot was lost meanwhile; the payment is recorded for a refund */
  | "slot_unavailable"
  /** 409: the user, the resource, or the API key over its users already holds the most unpaid bookings allowed */
  | "too_many_pending_bookings"
  /** 422: no product of the app pays for a booking this expensive (above the last price band) */
  | "price_above_limit"
  | "booking_not_found"
  | "invalid_transition"
  // verify-purchase
  | "product_mismatch"
  | "transaction_not_in_receipt"
  | "receipt_without_purchases"
  | "transaction_lookup_unavailable"
  | "transaction_not_found"
  | "rate_limited"
  // Apple's network services (503 = retry later, except apple_rejected: 422)
  | "apple_unavailable"
  | "apple_timeout"
  | "apple_rate_limited"
  | "apple_unauthorized"
  | "apple_rejected"
  | "apple_invalid_response"
  | "apple_not_configured"
  // legacy verifyReceipt statuses (the client exists; no endpoint forwards them yet)
  | "receipt_invalid"
  | "shared_secret_mismatch"
  | "transaction_mismatch"
  | "account_token_mismatch"
  /** 422: the app ties purchases to accounts and the signed transaction carries no appAccountToken */
  | "account_token_missing"
  /** 422: a bare transactionId is accepted only when Apple's transaction carries the user's appAccountToken */
  | "proof_required"
  /** no longer answered: a purchase of fewer units than booking.requiredQuantity now pays part of the booking (kept so that clients naming it still compile) */
  | "quantity_insufficient"
  /** 422: a Production app takes Sandbox purchases only from its listed testers */
  | "sandbox_not_allowed"
  /** 422: Apple refunded or revoked the transaction (shown by the proof, or reported before any claim) */
  | "transaction_revoked"
  | "transaction_already_used"
  | "booking_already_paid"
  | "booking_not_payable"
  /** 202 from verify-purchase: the payment was applied (finish the transaction) and the booking still needs more units */
  | "booking_partly_paid"
  /** 422: the product is not a credit product of the app (verify-purchase without bookingId) */
  | "unknown_product"
  /** 422: the transaction is not what the product says (a subscription product proven by a transaction that is no subscription period) */
  | "product_not_supported"
  // subscriptions
  /** 409 (verify-purchase, verify-receipt) or 422 (link): the Apple subscription belongs to another account; recorded as a cheat attempt */
  | "linked_to_other_account"
  /** 422 (link): the account already uses another Apple subscription; send force to switch */
  | "linked_to_other_iap"
  /** 422 (link): the account has an unexpired membership paid outside the App Store */
  | "has_valid_non_iap"
  /** 422 (unlink): the subscription is not linked to this account */
  | "invalid"
  /** 404: no subscription with this originalTransactionId (or not this account's) */
  | "subscription_not_found"
  /** 422 (refresh): the app has no App Store Server API key and keeps no receipts */
  | "refresh_unavailable"
  // credits
  /** 404: the app sells no credits */
  | "credits_not_offered"
  /** 403 (reserve) or 409 (an adjustment): too few credits; `credits` carries the balance */
  | "insufficient_credits"
  /** 400: creditType is not one of the app's credit types */
  | "unknown_credit_type"
  | "reservation_not_found"
  /** 409: commit of a released or expired reservation, release of a committed one */
  | "reservation_not_held"
  /** 409: the reference already holds a reservation of another amount, type or profile; or the Idempotency-Key of POST /api/bookings already made another booking */
  | "reference_in_use"
  /** 409 / 404: CMS product create of an existing id / edit of an unknown one */
  | "product_exists"
  | "product_not_found"
  /** 404 / 409: an operator's action on an unknown unapplied payment / one already applied or marked for refund */
  | "unapplied_payment_not_found"
  | "unapplied_payment_resolved"
  // the card rail (POST /api/bookings/{id}/card-payment, POST /api/admin/bookings/{id}/refund, Stripe's webhook)
  /** 422: the app takes no card payments (no `stripe` in the catalog, its secrets unset, or not a payment rail) */
  | "card_payments_not_offered"
  /** 409: the booking's hold expired before its card payment started; book again */
  | "hold_expired"
  /** 409: an App Store purchase of a booking whose app takes card payments only (kept as an unapplied payment) */
  | "store_purchases_not_offered"
  /** 503: Stripe could not be reached or refused; retry after `Retry-After` */
  | "payment_provider_unavailable"
  // Google Play (purchaseToken on POST /api/verify-purchase, android-playstore on the validator)
  /** 422: the app sells nothing on Google Play (no `googlePlay` in the catalog, or its service account is not set) */
  | "google_play_not_configured"
  /** 422: Google Play knows no purchase of this product (and package) with this token */
  | "purchase_token_invalid"
  /** 409: the purchase waits for payment (Play's pending purchases); send it again once it is paid */
  | "purchase_pending"
  /** 503: Google Play could not be reached or refused Berth's credentials; retry after `Retry-After` */
  | "google_play_unavailable"
  // Subscription offers (POST /api/offers/apple/…)
  /** 422: the app's In-App Purchase key (apple.serverAPI) is not configured: Berth cannot sign offers */
  | "offers_not_configured"
  /** 422: the catalog does not sign this offer for this product (or the product is not a subscription) */
  | "offer_unknown"
  /** 403: the app's rule does not give this offer to this user (for example: only lapsed subscribers) */
  | "offer_not_eligible"
  /** 400: a Stripe event whose signature is missing, wrong or outside the 300 s tolerance */
  | "invalid_signature"
  /** purchases' outcomeCode: a card payment of another amount than the booking's price (refunded) */
  | "amount_mismatch"
  /** 409: the booking has no card payment left to refund / was paid through the App Store (Apple refunds it) / a refund is still being processed */
  | "booking_not_paid"
  | "refund_via_apple"
  | "refund_in_progress"
  /** 422: amountMinor outside 1…what is left of the payment (or the authorized deposit) */
  | "invalid_amount"
  /** 409: a deposit is already authorized for the booking (capture or release it first) / the booking holds no authorized deposit */
  | "deposit_held"
  | "deposit_not_held"
  | VerificationErrorCode
  // server side: nothing was applied (500), or retry later (503)
  | "internal_error"
  | "temporarily_unavailable";

export interface ErrorResponse {
  success: false;
  error: {
    code: ErrorCode;
    message: string;
    /** The request field (or header, or query parameter) at fault, when there is one. */
    field?: string;
    /** Purchase refusals: a title and a sentence to show as they are, in the caller's language
     *  (Accept-Language: en, vi, it, uk, zh; else the app's defaultLanguage; else English).
     *  `message` is in that language too where Berth has one for the code; `code` never changes. */
    title?: string;
    description?: string;
  };
  /** with insufficient_credits: the balance of the credit type asked for */
  credits?: CreditBalance;
  /**
   * A proven, paid transaction that could not be applied: Berth kept it (an operator applies it or
   * marks it for refund), so the app may finish the transaction.
   */
  unappliedPayment?: UnappliedPayment;
  /** Present with unappliedPayment: true, the payment is safe with Berth. */
  finishTransaction?: boolean;
}

/** POST /api/admin/unapplied-payments/{id}/apply: the user (default: the one it was claimed for) and booking to apply it to */
export interface ApplyUnappliedPaymentRequest {
  userId?: string;
  /** the booking's id, or its reference (K7MX2QA) */
  bookingId?: number | string;
}

/** POST /api/admin/unapplied-payments/{id}/refund */
export interface RefundUnappliedPaymentRequest {
  note: string;
}

export interface UnappliedPaymentResponse {
  unappliedPayment: UnappliedPayment;
}

/** A paid transaction Berth could not apply, kept with its reason (GET /api/admin/unapplied-payments). */
export interface UnappliedPayment {
  id: number;
  /** open: waiting for an operator; applied: by an operator or a later claim; refund_requested: an operator decided to refund */
  status: "open" | "applied" | "refund_requested";
  userId: string;
  bookingId?: number;
  transactionId: string;
  originalTransactionId: string;
  productId: string;
  environment: string;
  quantity: number;
  /** What Apple signed as paid, in milliunits of currency (absent for legacy receipts) */
  priceMilliunits?: number;
  currency?: string;
  /** the refusal's code and message */
  reasonCode: ErrorCode;
  reason: string;
  attempts: number;
  firstSeenAt: string;
  lastSeenAt: string;
  resolvedAt?: string;
  resolvedBy?: string;
  purchaseId?: number;
  note?: string;
}

// ---------------------------------------------------------------- catalog

export interface HealthResponse {
  status: "ok";
}

/** GET /readyz: 200 when the database answers, 503 (with Retry-After) when it does not. */
export interface ReadinessResponse {
  status: "ready" | "unavailable";
  database: "reachable" | "unreachable";
  /** omitted while the database is unreachable */
  migrations?: "applied" | "pending";
}

export type ProductKind = "booking" | "credits" | "subscription" | "unlock";

export interface Product {
  id: string;
  kind: ProductKind;
  /** Apple's product type: "Consumable", "Non-Consumable", "Auto-Renewable Subscription", … */
  type: string;
  title: string;
  /** credit packs: the credit type and the credits one purchase (of quantity 1) grants */
  creditType?: string;
  credits?: number;
  description?: string;
  /** minor units of currency, for the purchase screen (the App Store's price is the one charged) */
  price?: number;
  currency?: string;
  /** ascending */
  displayOrder?: number;
  /** unlocks: the entitlement one purchase grants */
  entitlement?: string;
  /** passes (Non-Renewing Subscription unlocks): the days one purchase grants; absent for a lifetime unlock */
  durationDays?: number;
  /** listed for sale; an inactive pack still grants its credits when a paid transaction arrives */
  active?: boolean;
}

export interface ProductsResponse {
  products: Product[];
}

export type ResourceKind = "rental" | "experience";

export interface Resource {
  id: string;
  kind: ResourceKind;
  name: string;
  currency: string;
  /** rental: price of one day, minor units */
  pricePerDay?: number;
  /** rental: how many bookings may overlap */
  units?: number;
  /** experience: "sunset" | "diving" | "fishing" | … */
  experienceType?: string;
  /** experience: price of one seat, minor units */
  pricePerSeat?: number;
  seatsPerSlot?: number;
  /** experience: daily start times, "HH:mm" local time in `timeZone` */
  slotTimes?: string[];
  durationMinutes?: number;
  /** experience: the IANA time zone slotTimes are in ("UTC" unless the catalog names one, e.g. "Europe/Rome") */
  timeZone?: string;
}

export interface ResourcesResponse {
  resources: Resource[];
}

// ---------------------------------------------------------------- bookings

/** A rental takes start and end; an experience takes slot (one of its slotTimes) and seats. */
export interface CreateBookingRequest {
  resourceId: string;
  start?: BookingTime;
  end?: BookingTime;
  slot?: BookingTime;
  seats?: number;
}

/**
 * A time in a booking request: an instant (`2026-07-14T15:30:00Z`, or with an offset), a wall-clock
 * time in the resource's time zone (`2026-07-14T17:30`), or for a rental's start and end a day
 * (`2026-07-14`, local midnight). A local time a daylight-saving change skips is refused; one it
 * repeats is refused with both offsets named (send one of them).
 */
export type BookingTime = string;

export type BookingStatus =
  | "pending_payment"
  | "confirmed"
  | "cancelled"
  | "refunded"
  | "payment_needs_refund";

export interface Booking {
  id: number;
  /** the short reference people read out (7 characters without 0, O, 1, I); accepted wherever a booking id is */
  reference: string;
  /** start and end as the wall-clock time where the booking happens, with its offset (2026-07-14T17:30:00+02:00) */
  localStart: string;
  localEnd: string;
  /** "UTC" or the IANA zone the booking was made in (its resource's, else its app's) */
  timeZone: string;
  /** the operators' listing only: the resource's name, the rails it was paid through, minor units paid, a pending hold that ran out */
  resourceName?: string;
  paidVia?: ("app_store" | "google_play" | "card")[];
  amountPaid?: number;
  holdLapsed?: boolean;
  userId: string;
  resourceId: string;
  resourceKind: ResourceKind;
  start: ISODateTime;
  end: ISODateTime;
  seats: number;
  /** minor units of currency, computed by the server */
  price: number;
  currency: string;
  /** the product that must pay for this booking */
  requiredProductId: string;
  status: BookingStatus;
  /** a pending booking holds its slot until then */
  holdExpiresAt: ISODateTime;
  createdAt: ISODateTime;
  updatedAt: ISODateTime;
  confirmedAt?: ISODateTime;
  purchaseId?: number;
  /** why the status last changed (admin reason, or the refund code) */
  statusReason?: string;
  /** units of requiredProductId that pay the booking (seats or days where the app sells per unit; else 1): one transaction of this quantity, or several adding up to it */
  requiredQuantity: number;
  /** units paid so far */
  paidQuantity: number;
  /** units still to buy before the booking is confirmed (0 once confirmed): a client that always buys quantity 1 buys this many more */
  remainingQuantity: number;
  /** the environment of the purchase that confirmed it (live or test: a card payment's Stripe mode); absent until then */
  environment?: "Production" | "Sandbox" | "Xcode" | "LocalTesting" | "live" | "test";
  /** the latest card payment (GET /api/bookings/{id} only) */
  payment?: BookingPayment;
}

/** What the app polls after the Payment Sheet closes. */
export interface BookingPayment {
  provider: "stripe";
  status: "requires_payment" | "requires_action" | "processing" | "succeeded" | "partially_refunded" | "refunded" | "disputed" | "canceled";
  paymentIntentId?: string;
  /** minor units of currency */
  amount: number;
  amountRefunded: number;
  currency: string;
}

/** `POST /api/bookings/{id}/card-payment` → 201 (200: the open one): what the Payment Sheet needs. */
export interface CardPaymentStart {
  provider: "stripe";
  paymentIntentId: string;
  /** paymentIntentClientSecret of @capacitor-community/stripe's createPaymentSheet */
  clientSecret: string;
  publishableKey: string;
  /** the booking's price, minor units */
  amount: number;
  currency: string;
  holdExpiresAt: ISODateTime;
}

/** `POST /api/stripe/webhooks/{tenant}` → 200 */
export interface StripeWebhookAck {
  received: true;
  outcome: string;
  duplicate: boolean;
}

/** `POST /api/admin/bookings/{id}/refund` */
export interface AdminRefundRequest {
  reason: string;
  /** minor units; default what is left of the payment */
  amountMinor?: number;
}

export interface CardRefund {
  id: number;
  providerRef?: string;
  amount: number;
  /** pending: Stripe has not answered yet (Berth keeps asking with the same key) */
  status: "pending" | "succeeded" | "failed";
  reason: string;
  initiatedBy: "admin" | "auto_late_payment";
  actor: string;
  attempts: number;
  lastError?: string;
  createdAt: ISODateTime;
}

export interface CardPayment {
  id: number;
  bookingId: number;
  userId: string;
  /** booking: the price; deposit: authorized at check-in, captured in part or released */
  purpose: "booking" | "deposit";
  /** a deposit: what was captured */
  amountCaptured: number;
  /** an authorized deposit: when Berth releases it unless captured */
  captureBefore?: ISODateTime;
  provider: "stripe";
  environment: "live" | "test";
  paymentIntentId?: string;
  amount: number;
  currency: string;
  status: "creating" | "open" | "authorized" | "succeeded" | "canceled";
  displayStatus: BookingPayment["status"] | "authorized" | "captured" | "released";
  providerStatus?: string;
  amountRefunded: number;
  disputeStatus?: string;
  purchaseId?: number;
  createdAt: ISODateTime;
  updatedAt: ISODateTime;
  refunds: CardRefund[];
}

/** `GET /api/admin/bookings/{id}/payments` */
export interface CardPaymentList {
  payments: CardPayment[];
}

/** `POST /api/admin/bookings/{id}/deposit` */
export interface DepositRequest {
  amountMinor: number;
}

/** `POST /api/admin/bookings/{id}/deposit/capture`: default all of the authorized deposit */
export interface DepositCaptureRequest {
  amountMinor?: number;
}

/** `POST /api/admin/bookings/{id}/deposit` → 201 (200: the one waiting): for the Payment Sheet (manual capture) */
export interface DepositStart {
  provider: "stripe";
  paymentIntentId: string;
  clientSecret: string;
  publishableKey: string;
  amount: number;
  currency: string;
}

/** `POST /api/admin/bookings/{id}/deposit/capture` and `…/deposit/release` → 200 */
export interface DepositResponse {
  deposit: CardPayment;
}

/** `POST /api/admin/bookings/{id}/refund` → 200 (502 when Stripe refused: refund.status "failed") */
export interface AdminRefundResponse {
  refund: CardRefund;
  payment: CardPayment;
  booking: Booking;
}

export interface BookingResponse {
  booking: Booking;
}

export interface ListResponse<Item> {
  items: Item[];
  total: number;
  limit: number;
  offset: number;
}

export type BookingListResponse = ListResponse<Booking>;

/** `GET /api/admin/search?q=` (admin key): what the query names exactly, within the app */
export interface SearchResponse {
  query: string;
  items: SearchHit[];
  /** present when the query looked like an Apple order ID (App Store Server API Look Up Order ID) */
  appleOrderLookup?: "found" | "found_not_recorded" | "not_found" | "unavailable" | "not_configured";
}

export interface SearchHit {
  kind: "booking" | "purchase" | "user" | "card_payment" | "unapplied_payment";
  id: string;
  matched: "reference" | "id" | "transactionId" | "originalTransactionId" | "orderId" | "appleOrderId" | "paymentIntent" | "userId";
  summary: string;
  userId?: string;
  bookingId?: number;
  purchaseId?: number;
  at?: ISODateTime;
  /** its amount as the currency writes it ("135.00 EUR"), where it has one */
  amount?: string;
}

/** `GET /api/admin/customers/{userId}/timeline` (admin key): everything about one user, newest first */
/** A resource exactly as products.json writes one (`POST /api/admin/resources` takes it as its body) */
export interface CatalogResource {
  id: string;
  kind: "rental" | "experience";
  name: string;
  /** rental: price of one day, minor units */
  pricePerDayMinor?: number;
  /** rental: boats of the model (bookings that may overlap) */
  units?: number;
  /** experience: its type (selects its product) */
  experienceType?: string;
  pricePerSeatMinor?: number;
  seatsPerSlot?: number;
  /** experience: daily start times, "HH:mm" local */
  slotTimes?: string[];
  durationMinutes?: number;
  timeZone?: string;
  /** kept for its bookings, takes no new one */
  retired?: boolean;
  /** season prices by local date and weekday; the last rule covering a day wins */
  prices?: PriceRule[];
  /** this resource's cancellation policy, in place of the app's */
  cancellation?: CancellationPolicy;
}

/** `POST /api/admin/resources/{id}/prices` (admin key): a season's price, added after the others */
export interface PriceRule {
  /** first local day, YYYY-MM-DD in the resource's zone */
  from: string;
  /** last local day, included */
  to: string;
  /** absent: every day */
  weekdays?: ("mon" | "tue" | "wed" | "thu" | "fri" | "sat" | "sun")[];
  /** a rental's day */
  pricePerDayMinor?: number;
  /** an experience's seat */
  pricePerSeatMinor?: number;
}

/** products.json: a tenant's (or a resource's) `cancellation` */
export interface CancellationPolicy {
  /** cancelled at least hoursBefore hours before the start, refundPercent of what was paid goes back (the tier with the most hours reached) */
  tiers: { hoursBefore: number; refundPercent: number }[];
  /** moves allowed until this many hours before the start (absent: until the start) */
  changeUntilHoursBefore?: number;
  /** a customer's move of a card-paid booking to a cheaper place refunds the difference (absent: the booking keeps what was paid) */
  refundPriceDifference?: boolean;
}

/** `POST /api/bookings/{id}/move` (user token, server key: the own booking) and `POST /api/admin/bookings/{id}/move` (admin key: any booking) */
export interface MoveBookingRequest {
  /** a rental's new start and end */
  start?: BookingTime;
  end?: BookingTime;
  /** an experience's new slot (its seats stay) */
  slot?: BookingTime;
  /** operators only: another resource sold by the same product */
  resourceId?: string;
}

/** The answer of a move: 200 with the booking at its new place; 202 when the new place costs more than was paid:
 *  the booking as it is, and `difference`, a booking of the new place at the difference (it holds the place until
 *  its holdExpiresAt). Pay `difference` like any booking (card, or a rental's band product); then the booking moves
 *  there with both payments, `difference` is gone, and the webhook says booking.moved. An operator's move keeps the price. */
export interface MoveBookingResponse {
  booking: Booking;
  difference?: Booking;
  message?: string;
}

/** `GET /api/bookings/{id}/cancellation`: what cancelling now gives back, before the customer confirms */
export interface CancellationQuote {
  bookingId: number;
  status: BookingStatus;
  /** whether the customer may cancel now; when not, code says why */
  allowed: boolean;
  code?: "cancellation_not_offered" | "booking_started" | "invalid_transition";
  refundPercent: number;
  /** what was paid through Berth, and what goes back (minor units) */
  paidMinor: number;
  refundMinor: number;
  currency: string;
  /** card: Berth refunds through Stripe; app_store / google_play: the store decides, the amount is owed; none: nothing was paid */
  rail: "card" | "app_store" | "google_play" | "none";
  /** whole hours left before the start */
  hoursBefore: number;
  /** what the app shows the customer */
  message: string;
}

/** `POST /api/bookings/{id}/cancel` (user token, server key) */
export interface CancelBookingResponse {
  booking: Booking;
  cancellation: CancellationQuote;
  /** the card refund asked of Stripe (status follows Stripe's answer) */
  refund?: { id: number; amountMinor: number; status: "pending" | "succeeded" | "failed" };
}

export interface InventoryItem {
  resource: CatalogResource;
  /** the tenant's inventory version that last changed it */
  version: number;
  createdAt: ISODateTime;
  updatedAt: ISODateTime;
}

/** `GET /api/admin/resources` (admin key): the inventory, retired resources included */
export interface InventoryListResponse {
  resources: InventoryItem[];
}

/** `POST /api/admin/resources`, `PATCH /api/admin/resources/{id}` (a JSON merge patch), `POST /api/admin/resources/{id}/retire` */
export interface InventoryItemResponse {
  resource: InventoryItem;
}

/** `POST /api/admin/closures` (admin key): a resource, or every resource, closed for a time */
export interface CreateClosureRequest {
  /** absent: every resource of the app */
  resourceId?: string;
  /** a local date (from its midnight), a local time in the resource's zone, or an instant with its offset */
  from: string;
  /** a local date (the last day closed, whole), a local time or an instant */
  to: string;
  /** said to customers whose booking is refused (resource_closed) */
  reason: string;
}

export interface Closure {
  id: number;
  resourceId?: string;
  from: ISODateTime;
  to: ISODateTime;
  localFrom: string;
  localTo: string;
  timeZone: string;
  reason: string;
  createdAt: ISODateTime;
  deletedAt?: ISODateTime;
  /** confirmed bookings, and pending ones still in their hold, that the closure covers */
  bookingsInside: Booking[];
}

/** `POST /api/admin/closures/{id}/resolve` (admin key) */
export interface ResolveClosureRequest {
  /** cancel: card payments refunded in full, store-paid bookings owed, unpaid ones cancelled; move: each booking in moves to its new place */
  action: "cancel" | "move";
  /** action move: a place each customer accepted (bookingId: the id or the reference) */
  moves?: ({ bookingId: number | string; resourceId?: string } & MoveBookingRequest)[];
}

export interface ResolveClosureResponse {
  closure: Closure;
  results: { booking: Booking; outcome: "refunded" | "cancelled_owed" | "cancelled" | "moved" | "failed"; message?: string }[];
}

/** `GET /api/admin/closures[?deleted=true]` */
export interface ClosureListResponse {
  closures: Closure[];
}

export interface TimelineResponse {
  userId: string;
  /** the customer page's header, over the whole history (the items are limited per kind) */
  customer: CustomerTotals;
  items: TimelineEntry[];
  /** entries of each kind at most (`limit`, default 200) */
  limitPerKind: number;
}

export interface CustomerTotals {
  /** every purchase with a known price, per currency (refunded ones too) */
  paid: OverviewAmount[];
  /** store refunds at the purchase's price, card refunds at their amount */
  refunded: OverviewAmount[];
  purchases: number;
  /** purchases whose store signed no price (not in paid) */
  purchasesWithoutAmount: number;
  bookings: number;
  firstSeen?: ISODateTime;
  /** app_store, google_play, stripe */
  stores: string[];
}

export interface TimelineEntry {
  kind: "purchase" | "booking" | "booking_change" | "credits" | "subscription" | "notification" | "grant" | "unapplied_payment" | "card_payment" | "refund" | "consent" | "webhook";
  at: ISODateTime;
  summary: string;
  detail: Record<string, string>;
  bookingId?: number;
  purchaseId?: number;
}

/** `GET /api/admin/overview?from=&to=&interval=day|week|month` (admin key) */
export interface OverviewResponse {
  from: ISODateTime;
  to: ISODateTime;
  interval: "day" | "week" | "month";
  /** the app's zone: buckets are its local days, weeks (Monday first) or months */
  timeZone: string;
  buckets: OverviewBucket[];
  moneyIn: OverviewAmount[];
  refunds: OverviewAmount[];
  bookingsToday: ResourceLoad[];
  bookingsNext7Days: ResourceLoad[];
  activeSubscriptions: { productId: string; count: number }[];
  /** per currency, no conversion: each active subscription's last price per month of its cycle */
  monthlyRecurringRevenue: OverviewAmount[];
  /** counts: owedToCustomers (GET /api/admin/owed), unappliedPayments, purchasesNeedingRefund, bookingsNeedingRefund, deadLetters, webhookBacklog, overduePlayAcknowledgements */
  needsAction: Record<string, number>;
  /** money owed to customers now, per currency */
  owedToCustomers: OwedTotal[];
  /** per store: purchases of the period whose store signed no price (StoreKit 1 receipts, test transactions), counted here, not in moneyIn */
  purchasesWithoutAmount: Record<string, number>;
}

/** GET /api/admin/manifest?date=YYYY-MM-DD[&resourceId=]: the day's departures in each resource's local day. */
export interface ManifestResponse {
  date: string;
  resources: {
    resourceId: string;
    name: string;
    kind: "rental" | "experience";
    timeZone: string;
    dayStart: ISODateTime;
    dayEnd: ISODateTime;
    seats: number;
    slots: {
      start: ISODateTime;
      localStart: string;
      localEnd: string;
      seats: number;
      bookings: {
        bookingId: number;
        reference: string;
        userId: string;
        seats: number;
        payment: "paid" | "part_paid" | "unpaid";
        paidVia: ("app_store" | "google_play" | "card")[];
        /** minor units */
        amountPaid: number;
        currency: string;
        status: string;
        statusReason?: string;
        holdExpiresAt?: ISODateTime;
      }[];
    }[];
  }[];
}

export interface OwedTotal {
  currency: string;
  count: number;
  /** minor units of the currency */
  amountMinor: number;
}

/** GET /api/admin/owed: money paid for a booking that will not take place, per rail. */
export interface OwedPayment {
  bookingId: number;
  reference: string;
  userId: string;
  resourceId: string;
  resourceName?: string;
  start: ISODateTime;
  end: ISODateTime;
  localStart: string;
  localEnd: string;
  timeZone: string;
  bookingStatus: string;
  statusReason?: string;
  rail: "app_store" | "google_play" | "card";
  /** cancelled (operator or closure), hold_lapsed (part-paid), slot_lost (paid after the slot was taken), not_honoured (paid twice) */
  reason: "cancelled" | "hold_lapsed" | "slot_lost" | "not_honoured";
  /** minor units: the store's signed price, else the booking's price for the units paid (amountFromBooking); for a card, what is left to refund */
  amountMinor: number;
  currency: string;
  amountFromBooking: boolean;
  purchaseIds: number[];
  since: ISODateTime;
  /** refund: Berth refunds the card payment (POST /api/admin/bookings/{id}/refund); customer: the store refunds it, tell the customer (guidance) */
  resolvedBy: "refund" | "customer";
  /** what the operator does or tells the customer, in plain words */
  guidance: string;
  resolution?: { how: OwedResolution; note?: string; actor: string; at: ISODateTime };
}

/** policy_kept: set by Berth when a customer cancelled late and the policy kept the rest (not an operator's choice) */
export type OwedResolution = "customer_told" | "credited" | "refunded_elsewhere" | "policy_kept";

export interface OwedListResponse {
  status: "open" | "resolved";
  items: OwedPayment[];
  totals: OwedTotal[];
}

/** POST /api/admin/owed/{id}/resolve (a store-paid booking; a card payment is refunded instead). */
export interface ResolveOwedRequest {
  how: OwedResolution;
  note?: string;
}

export interface ResolveOwedResponse {
  items: OwedPayment[];
}

export interface OverviewBucket {
  start: ISODateTime;
  /** 2026-07-14, the Monday of a week, or 2026-07 */
  label: string;
  moneyIn: OverviewMoney[];
  /** of the period's purchases, those refunded or to refund */
  refunds: OverviewMoney[];
  newSubscriptions: number;
  endedSubscriptions: number;
  creditPacksSold: number;
  creditsSpent: number;
  /** Bookings made in the bucket that something was paid for (in full or in part). */
  bookingsMade: number;
  /** Bookings made in the bucket that nothing was paid for (a hold waiting for payment or lapsed). */
  bookingsUnpaid: number;
}

export interface OverviewMoney {
  currency: string;
  /** app_store, google_play or stripe (the card rail) */
  store: string;
  count: number;
  amountMilliunits: number;
}

export interface OverviewAmount {
  currency: string;
  amountMilliunits: number;
}

export interface ResourceLoad {
  resourceId: string;
  name: string;
  kind: ResourceKind;
  confirmed: number;
  /** unpaid bookings still holding their slot */
  pending: number;
  seats: number;
  /** booked share (0…1) of the unit-days or seats the resource offers in the window */
  occupancy?: number;
}

// ---------------------------------------------------------------- purchases

/**
 * The fields the Capacitor StoreKit plugins hand to JavaScript. Send `jwsRepresentation`
 * (StoreKit 2) or `receipt` (the base64 app receipt of StoreKit 1 plugins); with a receipt,
 * `transactionId` picks its entry, else the newest purchase of the booking's product is used.
 */
export interface VerifyPurchaseRequest {
  /** the booking a booking product pays for; omit it for a credit pack */
  bookingId?: number | string;
  productId: string;
  /** alone (no jwsRepresentation, no receipt): resolved through Apple's App Store Server API */
  transactionId?: string;
  /** StoreKit 2 `Transaction.jwsRepresentation` */
  jwsRepresentation?: string;
  /** base64 app receipt (verified offline; only its SHA-256 is kept) */
  receipt?: string;
  /** Google Play: `Purchase.getPurchaseToken()`; proven with the Play Developer API. `productId` is the
   *  catalog's id or the Play Console's. Its transactionId (and originalTransactionId) in answers is the token. */
  purchaseToken?: string;
  /** Google Play: the app's package, when the tenant has several (default: its own) */
  packageName?: string;
}

export type PurchaseStatus = "applied" | "needs_refund" | "refunded";

export interface Purchase {
  id: number;
  userId: string;
  bookingId?: number;
  store: "app_store" | "google_play" | "stripe";
  /** Google Play: a license tester's purchase is Sandbox */
  environment: "Production" | "Sandbox" | "Xcode" | "LocalTesting" | "live" | "test";
  transactionId: string;
  originalTransactionId: string;
  productId: string;
  status: PurchaseStatus;
  /** why a payment awaits a refund: "slot_unavailable", "booking_already_paid", "booking_not_payable" */
  outcomeCode?: string;
  purchasedAt: ISODateTime;
  createdAt: ISODateTime;
  /** what Apple signed as paid: price in milliunits of currency (1/1000), absent for receipts */
  priceMilliunits?: number;
  currency?: string;
  /** how many units were bought */
  quantity?: number;
  /** a credit pack: its credit type and the credits it granted (credits × quantity) */
  creditType?: string;
  credits?: number;
}

export interface VerifyPurchaseResponse {
  success: true;
  booking: Booking;
  purchase: Purchase;
}

/** verify-purchase of a booking that this payment does not complete (a client that buys one unit of
 *  an N-seat experience): HTTP 202. The payment is applied and kept: finish the store transaction,
 *  then buy `remainingQuantity` more units of `booking.requiredProductId`. `success` is false so that
 *  a client testing `success` does not tell the customer the booking is paid. */
export interface PartialPaymentResponse {
  success: false;
  finishTransaction: true;
  remainingQuantity: number;
  booking: Booking;
  purchase: Purchase;
  error: { code: "booking_partly_paid"; message: string; field?: string };
}

/** verify-purchase of a credit pack (no bookingId). A retry of the same transaction by the same user
 * answers the same creditsAdded (nothing is added twice); newBalance is the balance now. */
export interface CreditPurchaseResponse {
  success: true;
  transactionId: string;
  creditType: string;
  creditsAdded: number;
  newBalance: number;
  purchase: Purchase;
}

// ---------------------------------------------------------------- credits

export interface CreditBalance {
  creditType: string;
  /** credits owned, held ones included */
  balance: number;
  /** credits live reservations hold */
  held: number;
  /** credits a new reservation may take: balance − held (never below 0) */
  available: number;
  /** credits a refund could not take back; settled from the next credits granted */
  debt: number;
  /** report apps: a credit of this type is there to use (available > 0) */
  unlocked: boolean;
}

/** GET /api/credits: every credit type of the app */
export interface CreditsResponse {
  credits: CreditBalance[];
}

export type LedgerEntryType = "purchase" | "bonus" | "usage" | "refund" | "refund_reversal" | "adjustment" | "debt_settlement";
export type LedgerEntryStatus = "completed" | "refunded";

export interface LedgerEntry {
  id: number;
  userId: string;
  creditType: string;
  type: LedgerEntryType;
  /** signed change of the balance */
  amount: number;
  /** signed change of the debt */
  debtChange: number;
  balanceAfter: number;
  /** "refunded" marks a purchase Apple refunded (its refund entry follows) */
  status: LedgerEntryStatus;
  /** "user:<id>", "admin:<key id>", "server:<key id>", "apple", "system" */
  actor: string;
  reason?: string;
  productId?: string;
  transactionId?: string;
  purchaseId?: number;
  reservationId?: number;
  /** the profile a usage was for (kept for ever) */
  profileId?: string;
  reference?: string;
  createdAt: ISODateTime;
}

/** GET /api/credits/transactions?limit=&offset=&type=&creditType=&status=&from=&to= (newest first) */
export interface CreditTransactionsResponse {
  transactions: LedgerEntry[];
  meta: { total: number; limit: number; offset: number };
}

/** The credits one grant brought, spent oldest first (FIFO per credit type). */
export interface CreditLot {
  id: number;
  creditType: string;
  /** the ledger entry that granted it */
  entryId: number;
  purchaseId?: number;
  amount: number;
  remaining: number;
  state: "unused" | "partly_used" | "consumed" | "refunded";
  grantedAt: ISODateTime;
  consumedAt?: ISODateTime;
  refundedAt?: ISODateTime;
  /** which entry took credits from it, and for which profile */
  uses: { entryId: number; amount: number; profileId?: string; at: ISODateTime }[];
}

/** GET /api/credits/lots?creditType= */
/** GET /api/credits/lots?creditType=&limit=&offset= : a page of lots, oldest first */
export interface CreditLotsResponse {
  lots: CreditLot[];
  meta: { total: number; limit: number; offset: number };
}

/** POST /api/credits/reservations (201; 200 when `reference` found the live reservation of a retry) */
export interface ReserveCreditsRequest {
  /** 1 … the app's maximumReservation (default 1000) */
  amount: number;
  /** required when the app has several credit types */
  creditType?: string;
  /** the app's id of the work (a generation): a retry with it finds the same reservation */
  reference?: string;
  /** the profile the work is for (recorded on the usage entry and the lots) */
  profileId?: string;
}

export type ReservationStatus = "held" | "committed" | "released" | "expired";

export interface Reservation {
  id: number;
  creditType: string;
  amount: number;
  status: ReservationStatus;
  reference?: string;
  profileId?: string;
  createdAt: ISODateTime;
  expiresAt: ISODateTime;
  settledAt?: ISODateTime;
  /** the usage entry of a committed reservation */
  entryId?: number;
}

/** reserve, POST /api/credits/reservations/{id}/commit and …/release */
export interface ReservationResponse {
  success: true;
  reservation: Reservation;
  credits: CreditBalance;
}

/** GET /api/credits/purchase-eligibility?productId= */
export interface EligibilityResponse {
  productId: string;
  creditType: string;
  eligible: boolean;
  /** "eligible", "unused_credit" (report apps: a credit of this type waits to be used), "product_inactive" */
  reason: "eligible" | "unused_credit" | "product_inactive";
}

/** POST /api/admin/credit-products: a new credit product (409 product_exists if the id is taken).
 * productId and title: 1-200 characters; creditType: one of the app's (required if it has several). */
export interface CreditProductRequest {
  productId: string;
  creditType?: string;
  /** 1...1000000 */
  credits: number;
  title: string;
  /** up to 2000 characters */
  description?: string | null;
  /** 0...100000000 minor units */
  priceMinor?: number | null;
  /** within ±1000000 */
  displayOrder?: number;
  active?: boolean;
}

/** PATCH /api/admin/credit-products/{productId}: an absent field is left as it is; description or
 * priceMinor null clears it; null elsewhere, or a productId, is refused with 400. */
export type CreditProductPatch = Partial<Omit<CreditProductRequest, "productId">>;

export interface CreditProductResponse {
  product: Product;
}

/** POST /api/admin/credits/adjustments (201) */
export interface AdjustmentRequest {
  userId: string;
  creditType?: string;
  /** non-zero; negative removes credits (never more than are available, unless the app allows negative balances) */
  amount: number;
  reason: string;
}

export interface AdjustmentResponse {
  success: true;
  entry: LedgerEntry;
  credits: CreditBalance;
}

/** GET /api/admin/credits/ledger?userId=&productId=&creditType=&type=&status=&from=&to= (format=csv or Accept: text/csv for CSV) */
export type LedgerListResponse = ListResponse<LedgerEntry>;

/** GET /api/admin/credits/stats?from=&to= */
export interface CreditStatsResponse {
  from?: ISODateTime;
  to?: ISODateTime;
  products: { productId: string; purchases: number; creditsGranted: number; refunds: number; creditsRefunded: number }[];
}

/** GET /api/admin/credits/check */
export interface LedgerCheckResponse {
  /** every account's balance, debt and lots agree with the ledger */
  consistent: boolean;
  accounts: number;
  /** accounts that disagree; `problems` lists the first 100 (checked in batches of 500 accounts) */
  problemCount: number;
  problems: { userId: string; creditType: string; problems: string[] }[];
}

// ---------------------------------------------------------------- existing iOS clients

/** `POST /api/verify-receipt`: the receipt is verified offline; only its SHA-256 is kept. */
/** Also read in snake_case (receipt_data, user_id, device_info, app_version, bundle_id); camelCase wins. */
export interface VerifyReceiptRequest {
  /** base64 app receipt */
  receiptData: string;
  userId?: string | null;
  deviceInfo?: Record<string, string>;
  appVersion?: string;
  bundleId?: string;
}

/**
 * 200: the receipt is genuine (isPremium tells whether a subscription is active).
 * 4xx: do not retry. 5xx: retry later. Refusals also carry Berth's `error` object.
 */
export interface VerifyReceiptResponse {
  success: boolean;
  isPremium: boolean;
  productId?: string;
  /** Whole seconds ("2026-10-14T12:00:00Z"): Swift's default .iso8601 decoding reads it. From the subscription Berth stores for the user. */
  expirationDate?: string;
  environment?: "production" | "sandbox";
  message: string;
  error?: ErrorResponse["error"];
}

// ---------------------------------------------------------------- cordova-plugin-purchase validator

/**
 * What cordova-plugin-purchase (and capacitor-plugin-cdv-purchase) POSTs to
 * `/api/validator/{tenant}` (`?key=<client key>` or `Authorization: Bearer <client key or user token>`). Other fields it sends
 * (products, device, offers) are ignored.
 */
export interface ValidatorRequest {
  /** the product or application id */
  id?: string;
  type?: string;
  transaction: {
    type: "ios-appstore" | "apple-sk2" | "android-playstore";
    /** apple-sk2: the product id; ios-appstore: the transaction id, or the bundle id for the receipt's newest purchase; android-playstore: the order id */
    id?: string;
    /** ios-appstore: the base64 app receipt */
    appStoreReceipt?: string;
    /** apple-sk2: the signed transaction */
    jwsRepresentation?: string;
    /** android-playstore: the purchase token (proven with the Play Developer API; the product is the request's `id`) */
    purchaseToken?: string;
    /** android-playstore: the purchase's original JSON (its packageName and productId are read; nothing else is trusted) */
    receipt?: string;
    /** android-playstore: Google's signature of `receipt` (not needed: the token is checked with Google) */
    signature?: string;
  };
  additionalData?: {
    /** the user the purchase is applied to (store.applicationUsername) */
    applicationUsername?: string | number;
    /** the booking paid for (also ?bookingId= in the URL) */
    bookingId?: number | string;
  };
  /** sent by the plugin, ignored */
  products?: unknown[];
  /** sent by the plugin, ignored */
  device?: Record<string, unknown>;
}

/** One entry of `collection` (the plugin's VerifiedPurchase); dates in milliseconds since 1970. */
export interface ValidatorPurchase {
  /** the product id */
  id: string;
  /** the store of the purchase (android-playstore for Google Play's) */
  platform: "ios-appstore" | "android-playstore";
  transactionId: string;
  purchaseDate: number;
  /** subscriptions: the start of the latest period */
  lastRenewalDate?: number;
  expiryDate?: number;
  isExpired?: boolean;
  renewalIntent?: "Renew" | "Lapse";
  isBillingRetryPeriod?: boolean;
  /** the plugin's CancelationReason; "" (NOT_CANCELED) when nothing was cancelled */
  cancelationReason?: "" | "Customer" | "System" | "System.BillingError" | "Customer.PriceIncrease" | "System.ProductUnavailable" | "System.Replaced" | "Unknown";
}

/**
 * Always HTTP 200. `ok: true`: the named purchase is applied (exactly once; the same again answers
 * the same) and, for a receipt, every other unapplied purchase in it; `collection` is everything the
 * user owns in the app (subscriptions with expiry, unlocks and passes) plus the consumables this call
 * applied, so the plugin's `owned()` holds after each answer. `ok: false`: `code`
 * is the plugin's ErrorCode (6777005 client invalid, 6777007 payment invalid, 6777012 invalid
 * product, 6777014 communication: retry, 6777016 missing data, 6777017 verification failed),
 * `status` the HTTP status Berth's own API would answer, `error` Berth's code.
 */
export type ValidatorResponse =
  | {
      ok: true;
      data: {
        id: string;
        latest_receipt: true;
        transaction: {
          type: "ios-appstore" | "apple-sk2" | "android-playstore";
          /** the bundle id; the package name on Google Play */
          bundle_id?: string;
          transaction_id?: string;
          original_transaction_id?: string;
          product_id?: string;
          purchase_date_ms?: string;
          expires_date_ms?: string;
          environment?: "Production" | "Sandbox";
          quantity?: number;
          /** the application receipt itself (no transaction named) */
          original_application_version?: string;
        };
        collection: ValidatorPurchase[];
      };
    }
  | {
      ok: false;
      code: 6777005 | 6777007 | 6777012 | 6777014 | 6777016 | 6777017;
      status: number;
      message: string;
      error: { code: ErrorCode; field?: string };
      data: { latest_receipt: true };
    };

// ---------------------------------------------------------------- App Store Server Notifications

/** What Apple POSTs to /api/apple/notifications/{tenant}. */
export interface AppleNotificationRequest {
  signedPayload: string;
}

/**
 * What Pub/Sub POSTs to /api/google/notifications/{tenant} (a push subscription with an OIDC token:
 * `Authorization: Bearer <Google-signed JWT>` for the tenant's `googlePlay.push.audience` and service
 * account). `message.data` is base64 of Google Play's DeveloperNotification. Answered with a
 * NotificationAck (outcomes "credits_refunded", "purchase_refunded", "booking_refunded", "subscription_active",
 * "subscription_expired", "revoked_unclaimed", "recorded", "unknown_purchase", …); 401 for a token that is not Google's for this endpoint.
 */
export interface GooglePlayPush {
  message: {
    data: string;
    messageId: string;
    message_id?: string;
    publishTime?: string;
    attributes?: Record<string, string>;
  };
  subscription: string;
}

/** 200 once the notification and its effect are stored (also for a redelivered uuid). */
export interface NotificationAck {
  received: true;
  /** "booking_refunded", "purchase_refunded", "part_refunded", "booking_reinstated", "reinstated_needs_refund",
   *  "test", "refund_declined", "consumption_requested", "unknown_transaction", "recorded", "unclaimed_purchase",
   *  "applied_to_token_user" (claimed for the user its appAccountToken names), "unapplied_payment" (that claim was refused and kept), … */
  outcome: string;
  duplicate: boolean;
}

export interface StoredNotification {
  notificationUUID: string;
  notificationType: string;
  subtype?: string;
  environment: string;
  transactionId?: string;
  outcome: string;
  /** SHA-256 (hex) of the signedPayload; the payload itself is not stored */
  payloadHash: string;
  signedDate: ISODateTime;
  receivedAt: ISODateTime;
}

export type NotificationListResponse = ListResponse<StoredNotification>;

/** A transaction Apple reported (ONE_TIME_CHARGE, SUBSCRIBED, …) before any user claimed it. */
export interface UnclaimedTransaction {
  environment: string;
  transactionId: string;
  productId: string;
  purchasedAt: ISODateTime;
  receivedAt: ISODateTime;
  /** set once a user's verify-purchase claimed it (one purchase, never two) */
  claimedByPurchaseId?: number;
}

export type UnclaimedListResponse = ListResponse<UnclaimedTransaction>;

export interface TestNotificationResponse {
  testNotificationToken: string;
}

// ---------------------------------------------------------------- webhooks (Berth → the tenant's backend)

export type WebhookEventType =
  | "booking.confirmed"
  | "booking.refunded"
  /** the booking was cancelled; data.reason: operator (POST /api/admin/bookings/{id}/cancel), closure (a closure resolved by cancel)
   *  or customer (POST /api/bookings/{id}/cancel); an operator's confirmation is booking.confirmed */
  | "booking.cancelled"
  /** the booking moved; data carries the new start/end/resourceId and previousStart, previousEnd, previousLocalStart, previousResourceId */
  | "booking.moved"
  | "purchase.refunded"
  | "replay.detected"
  /** data: userId, creditType, balance, available, debt, change, reason (the entry type), entryId, transactionId.
   *  Events about a purchase (booking.*, replay.detected, payment.*, subscription.updated) carry its `store`:
   *  app_store, google_play or stripe. */
  | "credits.changed"
  /** data: unappliedPaymentId, userId, bookingId?, transactionId, productId, environment, quantity,
   *  priceMilliunits?, currency?, reasonCode, status, purchaseId? (a paid transaction Berth could not
   *  apply; then an operator applied it or marked it for a refund) */
  | "payment.unapplied"
  | "payment.applied"
  | "payment.refund_requested"
  /** data: bookingId, reference, userId, rails (app_store, google_play, card; comma-separated), how
   *  (customer_told, credited, refunded_elsewhere), note?, amounts ("135.00 EUR", comma-separated) */
  | "owed.resolved"
  // reserved for the subscriptions work:
  | "subscription.updated";

/**
 * The JSON body POSTed to the tenant's webhook URL. Headers: `Berth-Event: <type>`,
 * `Berth-Delivery: <id>`, `Berth-Signature: t=<unix seconds>,v1=<hex>` where v1 is
 * HMAC-SHA256(secret, "<t>.<raw body>"). Answer 2xx; anything else is retried with
 * exponential backoff (5 s doubling, at most 1 h). Deliveries can repeat: use `id` to de-duplicate.
 */
export interface WebhookPayload {
  id: string;
  type: WebhookEventType;
  tenant: string;
  createdAt: ISODateTime;
  /** bookingId, userId, status, resourceId, purchaseId, transactionId, productId, reason (all strings); booking events also reference, start and end (UTC), localStart and localEnd (the wall-clock times with their offset) and timeZone */
  data: Record<string, string>;
}

export interface WebhookDelivery {
  id: number;
  eventId: number;
  eventType: string;
  attempt: number;
  statusCode?: number;
  error?: string;
  at: ISODateTime;
}

export type WebhookDeliveryListResponse = ListResponse<WebhookDelivery>;

/** GET /api/admin/webhooks/dead-letters: events given up after 30 attempts; re-send through lastDeliveryId. */
export interface DeadLetter {
  eventId: number;
  eventType: string;
  subject?: string;
  attempts: number;
  createdAt: ISODateTime;
  deadAt: ISODateTime;
  lastDeliveryId?: number;
}

export type DeadLetterListResponse = ListResponse<DeadLetter>;

export interface ResendResponse {
  queued: true;
}

// ---------------------------------------------------------------- admin

/** Who holds an API key: `client` ships in the app, `server` in its backend, `admin` with operators. */
export type KeyRole = "client" | "server" | "admin";
export type KeyScope = "purchases" | "read" | "bookings" | "credits" | "subscriptions" | "memberships" | "admin";

/** An API key as GET /api/admin/keys lists it: never the key itself, only `hint`, its first characters. */
export interface Key {
  id: number;
  role: KeyRole;
  scopes: KeyScope[];
  name: string;
  hint: string;
  /** `expiring`: rotated out, valid until `expiresAt`. */
  status: "active" | "expiring" | "expired" | "revoked";
  createdAt: ISODateTime;
  expiresAt?: ISODateTime;
  revokedAt?: ISODateTime;
  /** Recorded about once a minute. */
  lastUsedAt?: ISODateTime;
  rotatedFrom?: number;
}

/** GET /api/admin/keys */
export interface KeyListResponse {
  keys: Key[];
}

/** POST /api/admin/keys/{id}/revoke: every instance refuses the key within 2 s. */
export interface KeyResponse {
  key: Key;
}

/** POST /api/admin/keys {role, scopes?, name?} → 201; 400 invalid_field for scopes outside the role's. */
export interface CreateKeyRequest {
  role: KeyRole;
  scopes?: KeyScope[];
  name?: string;
}

/** POST /api/admin/keys/{id}/rotate → 201; 409 invalid_transition when the key no longer works. */
export interface RotateKeyRequest {
  /** How long the old key keeps working (default 86400, at most 7776000). */
  overlapSeconds?: number;
}

/** A new key (create or rotate): `secret` is shown this once. */
export interface IssuedKeyResponse {
  key: Key;
  secret: string;
  /** Rotation: the key replaced, with its new `expiresAt`. */
  previous?: Key;
}

/** GET /api/admin/app: the app the admin key belongs to; the admin page shows only what it sells. */
export interface AppResponse {
  app: {
    id: string;
    name: string;
    bundleId: string;
    environments: ("Production" | "Sandbox")[];
    currency: string;
    /** empty until the catalog gives it booking rules, credit settings or a subscription product */
    sells: ProductKind[];
    /** present when it sells credits */
    creditTypes?: string[];
    /** an App Store Server API key is configured (bare transaction ids, test notifications, subscription refresh) */
    appStoreServerAPI: boolean;
    /** bookings can be paid and refunded by card (a card rail with its secrets set) */
    cardPayments: boolean;
    /** signed webhooks go to the app's backend */
    webhook: boolean;
    /** the app's IANA zone (UTC without one) */
    timeZone: string;
    /** what the app's settings leave Berth unable to do (empty when nothing): `no_app_store_server_api`, a consumable
     * the app finishes without sending it (cordova-plugin-purchase at launch) is recovered only with apple.serverAPI */
    notices: { code: "no_app_store_server_api"; message: string }[];
  };
}

export interface AdminConfirmRequest {
  reason: string;
}

export interface AdminCancelRequest {
  reason?: string;
}

export interface ReplayAttempt {
  id: number;
  userId: string;
  bookingId?: number;
  environment: string;
  transactionId: string;
  existingPurchaseId: number;
  reason: string;
  /** SHA-256 (hex) of the refused signed data; the data itself is never stored */
  proofHash: string;
  at: ISODateTime;
}

export interface AuditEntry {
  id: number;
  /** "user:<id>", "server:<key id>", "admin:<key id>", "system" */
  actor: string;
  action: string;
  bookingId?: number;
  purchaseId?: number;
  /** a JSON object as text */
  detail?: string;
  at: ISODateTime;
}

export type PurchaseListResponse = ListResponse<Purchase>;
export type ReplayListResponse = ListResponse<ReplayAttempt>;
export type AuditListResponse = ListResponse<AuditEntry>;

// ---- subscriptions (issue 11)

/** Where a subscription stands at the time of the answer (expiry and grace follow the server's clock). */
export type SubscriptionState = "active" | "grace_period" | "billing_retry" | "expired" | "revoked" | "upgraded";

/** An auto-renewable subscription, keyed by Apple's originalTransactionId. */
export interface Subscription {
  originalTransactionId: string;
  productId: string;
  entitlement: string;
  tier?: string;
  cycle?: string;
  environment: "Production" | "Sandbox";
  state: SubscriptionState;
  latestTransactionId: string;
  purchasedAt: string;
  expiresAt?: string;
  gracePeriodExpiresAt?: string;
  /** Absent until a source (renewal info, a notification, verifyReceipt) says. */
  autoRenew?: boolean;
  autoRenewProductId?: string;
  revokedAt?: string;
  /** Whether the account uses it as its membership (an account may own several). */
  inUse: boolean;
  userId?: string;
  updatedAt: string;
  /** the win-back offers Apple's latest renewal info lets the customer redeem (App Store; absent when none) */
  eligibleWinBackOfferIds?: string[];
  /** present when the user has it through Family Sharing, not by paying */
  familyShared?: true;
}

/** POST /api/verify-purchase with a subscription product (JWS, receipt or transaction id): 200; 409 linked_to_other_account when another account owns it. */
export interface SubscriptionPurchaseResponse {
  subscription: Subscription;
  purchase: Purchase;
}

/**
 * GET /api/answer-signing/{tenant}: the key a tenant with answerSigning signs its answers with.
 * Signed answers carry these headers (the request sends X-Berth-Nonce); see docs/api.md "Signed answers"
 * and the README's verifyBerthAnswer.
 */
export interface AnswerSigningKey {
  tenant: string;
  format: "berth-answer-v1";
  keyId: string;
  algorithm: "ES256";
  /** SubjectPublicKeyInfo DER, base64: WebCrypto importKey("spki"), CryptoKit derRepresentation. */
  publicKeySPKI: string;
  publicKeyPEM: string;
  jwk: { kty: "EC"; crv: "P-256"; x: string; y: string; kid: string; alg: "ES256"; use: "sig" };
}

/** The headers of a signed answer. */
export interface SignedAnswerHeaders {
  "X-Berth-Signature": string;
  /** Milliseconds since 1970, as signed. */
  "X-Berth-Signed-At": string;
  "X-Berth-Key-Id": string;
  /** The request's nonce, echoed when it sent one. */
  "X-Berth-Nonce"?: string;
}

/** GET /api/entitlements */
export interface EntitlementsResponse {
  /** An owned subscription is active or in its grace period, or a membership paid elsewhere has not expired. */
  isPremium: boolean;
  entitlements: {
    entitlement: string;
    productId: string;
    /** Until when it grants access (the grace period's end while in grace). */
    expiresAt?: string;
    state: SubscriptionState;
    autoRenew?: boolean;
    environment: "Production" | "Sandbox";
    /** subscriptions: the originalTransactionId; unlocks: the transaction id */
    originalTransactionId: string;
    inUse: boolean;
    source?: "app_store_subscription" | "google_play_subscription" | "unlock";
    /** subscriptions: the win-back offers Apple lets the customer redeem (absent when none) */
    eligibleWinBackOfferIds?: string[];
    /** present for a subscription the user has through Family Sharing */
    familyShared?: true;
  }[];
  /** each entitlement the user has or had, with every grant that gives it */
  byEntitlement?: HeldEntitlement[];
  membership?: MembershipDTO;
}

/** An entitlement as the user holds it, derived from its grants (live ones first). */
export interface HeldEntitlement {
  entitlement: string;
  /** some grant gives it now */
  active: boolean;
  /** until when the live grants give it; absent while active: for ever (a lifetime unlock) */
  expiresAt?: string;
  grants: {
    source: "app_store_subscription" | "google_play_subscription" | "unlock" | "membership";
    /** the unlock's transaction id, the subscription's originalTransactionId, the member's user id */
    reference: string;
    productId?: string;
    from: string;
    until?: string;
    /** ended: refunded or revoked */
    state: "active" | "expired" | "ended";
    endedReason?: string;
  }[];
}

/** POST /api/verify-purchase of an unlock (lifetime or pass): the entitlement after it. */
export interface UnlockPurchaseResponse {
  entitlement: HeldEntitlement;
  purchase: Purchase;
}

/** GET /api/subscriptions?page=&per_page= (page from 1, per_page 1…200, default 20) */
export interface SubscriptionPage {
  total: number;
  page: number;
  limit: number;
  data: Subscription[];
}

// ── Renewal-date extensions (admin) ───────────────────────────────────────

/** POST /api/admin/subscriptions/{originalTransactionId}/extend → Subscription with its new expiresAt. */
export interface ExtendRequest {
  /** 1…90 */
  days: number;
  /** 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage (default). */
  reasonCode?: 0 | 1 | 2 | 3;
}

/** POST /api/admin/subscriptions/extend-all (202). */
export interface ExtendAllRequest {
  productId: string;
  days: number;
  reasonCode?: 0 | 1 | 2 | 3;
  storefronts?: string[];
  environment?: "Production" | "Sandbox";
}

export interface ExtendAllResponse {
  requestIdentifier: string;
  productId: string;
  environment: string;
}

/** GET /api/admin/subscriptions/extend-all/{productId}/{requestIdentifier}?environment= */
export interface ExtendAllStatus {
  requestIdentifier?: string;
  complete: boolean;
  completeDate?: ISODateTime;
  succeededCount: number;
  failedCount: number;
}

// ── Restore ───────────────────────────────────────────────────────────────

/** POST /api/restore-purchases: one proof that the App Store history is the caller's. */
export interface RestoreRequest {
  /** A StoreKit 2 signed transaction the device holds. */
  jwsRepresentation?: string;
  /** Or one of the user's purchases Berth already applied. */
  transactionId?: string;
}

export interface RestoreResponse {
  /** How many transactions were applied now. */
  restored: number;
  /** Every transaction of the history: `restored`, `known` (Berth had it), or a refusal's code. */
  items: { transactionId: string; productId: string; outcome: string }[];
}

// ── Refund defence: the customer's consent ────────────────────────────────

/** PUT /api/consumption-consent: the user's answer in the app, with the version of the wording shown. */
export interface ConsumptionConsentRequest {
  consented: boolean;
  textVersion: string;
}

/** GET|PUT /api/consumption-consent. Berth answers Apple's CONSUMPTION_REQUEST only while `consented` is true. */
export interface ConsumptionConsent {
  userId: string;
  consented: boolean;
  textVersion?: string;
  recordedAt?: ISODateTime;
}

// ── Subscription offers ───────────────────────────────────────────────────

/** POST /api/offers/apple/promotional: an offer the catalog's apple.offers lists for the product, for the calling user. */
export interface PromotionalOfferRequest {
  productId: string;
  offerId: string;
  /** What the payment's applicationUsername will be: "", the user id, or (the default) cordova-plugin-purchase's token for the user. */
  applicationUsername?: string;
  /** For the JWS: one of the customer's transaction ids, or their appTransactionId (digits). */
  transactionId?: string;
}

/**
 * A signed promotional offer. StoreKit 1 / cordova-plugin-purchase: `{id: offerId, key: keyIdentifier, nonce,
 * signature, timestamp}` as the payment discount, with `applicationUsername` on the payment. StoreKit 2:
 * `.promotionalOffer(offerID:, compactJWS:)`.
 */
export interface PromotionalOfferResponse {
  productId: string;
  offerId: string;
  keyIdentifier: string;
  /** A lowercase UUID, new for every signature. */
  nonce: string;
  /** Milliseconds since 1970; Apple honours the signature for 24 hours. */
  timestamp: number;
  /** Base64 DER ECDSA (P-256, SHA-256) over bundle id, key id, product, offer, applicationUsername, nonce, timestamp joined by U+2063. */
  signature: string;
  applicationUsername: string;
  compactJWS: string;
}

/** POST /api/offers/apple/introductory-eligibility */
export interface IntroductoryEligibilityRequest {
  productId: string;
  /** One of the customer's transaction ids, or their appTransactionId (Apple requires one). */
  transactionId: string;
}

/** Allowed for users who never subscribed to the product's entitlement; pass compactJWS to introductoryOfferEligibility(compactJWS:). */
export interface IntroductoryEligibilityResponse {
  productId: string;
  allowIntroductoryOffer: boolean;
  compactJWS: string;
}


/** POST /api/subscriptions/link → MembershipDTO; 422 linked_to_other_account | linked_to_other_iap | has_valid_non_iap; 404 subscription_not_found */
export interface LinkRequest extends LinkProof {
  originalTransactionId: string;
  /** Switch the account from the Apple subscription it uses to this one. */
  force?: boolean;
}

/** POST /api/subscriptions/unlink → 204; 422 invalid when it is not this account's */
export interface UnlinkRequest extends LinkProof {
  originalTransactionId: string;
}

/**
 * From the app (a user token or a client key), link and unlink carry the store's proof that the
 * device holds the subscription (403 proof_required without it; 422 transaction_mismatch when it
 * proves another one). The app's backend (server key) may name the subscription alone.
 */
export interface LinkProof {
  /** A StoreKit 2 signed transaction of the subscription. */
  jwsRepresentation?: string;
  /** The base64 app receipt (transactionId picks its entry, else the subscription's first). */
  receipt?: string;
  /** Alone: a transaction whose appAccountToken is the user's, looked up with Apple. */
  transactionId?: string;
}

/** PUT /api/admin/memberships/{userId} (server or admin key): a membership paid outside the App Store. 409 linked_to_other_iap while the account uses an Apple subscription. */
export interface MembershipRequest {
  /** "alipay", "wechat", "stripe", …; omit when unknown (then a subscription that expires later may replace it). */
  payMethod?: string;
  tier?: string;
  cycle?: string;
  expiresAt: string;
  autoRenew?: boolean;
}

export interface MembershipDTO {
  userId: string;
  /** Absent for a membership paid elsewhere. */
  originalTransactionId?: string;
  payMethod?: string;
  tier?: string;
  cycle?: string;
  expiresAt?: string;
  autoRenew: boolean;
  updatedAt: string;
}

// ---- FT Chinese's API (seed 003), served under a tenant prefix such as /ftc/api/sandbox

/** apple.Subscription: POST /apple/subs, GET|PATCH /apple/subs/{id}, GET /apple/receipt/{id} (with receipt), rows of GET /apple/subs (with inUse). Dates in whole seconds. */
export interface FTCSubscription {
  environment: "Production" | "Sandbox";
  originalTransactionId: string;
  lastTransactionId: string;
  productId: string;
  purchaseDateUtc: string;
  expiresDateUtc?: string;
  tier?: string;
  cycle?: string;
  autoRenewal: boolean;
  createdUtc: string;
  updatedUtc: string;
  /** "" when no account is linked. */
  ftcUserId: string;
  inUse?: boolean;
  receipt?: string;
}

/** GET /apple/subs?page=&per_page= with X-Ftc-Id */
export interface FTCSubscriptionList {
  total: number;
  page: number;
  limit: number;
  data: FTCSubscription[];
}

/** POST /apple/link → 200 (POST /apple/unlink → 204) */
export interface FTCMembership {
  ftcId: string;
  unionId: string | null;
  tier: string | null;
  cycle: string | null;
  /** "2019-11-22" */
  expireDate: string | null;
  payMethod: string | null;
  ftcPlanId: string | null;
  stripeSubsId: string | null;
  autoRenew: boolean;
  status: string | null;
  appleSubsId: string | null;
  b2bLicenceId: string | null;
}

/** Every FT Chinese refusal: 400 (unparsable body), 401, 404, 422 (with error), 429, 503. */
export interface FTCError {
  message: string;
  /** Only on 422: code missing_field | invalid | linked_to_other_ftc | linked_to_other_iap | has_valid_non_iap. */
  error?: { field: string; code: string };
}
