// Berth's client for apps (Capacitor, Cordova, Ionic WebViews, browsers, Node 18+).
//
// No dependencies: the platform's `fetch` and WebCrypto. Types come from the contract
// (`contract.ts` is the repository's contract/berth.ts). Build: `tsc -p clients/typescript`.
//
// What it does for the app:
// - every call with the app's credentials (the user's token, or the app's client key naming the user);
// - a fresh X-Berth-Nonce per call, and, when the app pins Berth's answer-signing keys, the
//   signature of every answer checked before the answer is used (an unsigned, altered or stale
//   answer is `unverified`: no answer, never data and never a refusal);
// - retries with backoff on network errors, 5xx and 429 (honouring Retry-After), never on 4xx; a
//   POST only with an Idempotency-Key Berth honours, or where repeating it cannot act twice;
// - from a browser page, a call the browser blocked says which setting to check (allowedOrigins);
// - every purchase answer as a verdict: whether to finish the store transaction now, and why.

import type {
  AnswerSigningKey,
  Booking,
  BookingListResponse,
  BookingResponse,
  CancelBookingResponse,
  CancellationQuote,
  CardPaymentStart,
  CreateBookingRequest,
  CreditBalance,
  CreditPurchaseResponse,
  CreditsResponse,
  CreditTransactionsResponse,
  EntitlementsResponse,
  ErrorResponse,
  IntroductoryEligibilityRequest,
  IntroductoryEligibilityResponse,
  MoveBookingRequest,
  MoveBookingResponse,
  PartialPaymentResponse,
  PromotionalOfferRequest,
  PromotionalOfferResponse,
  ReservationResponse,
  ReserveCreditsRequest,
  RestoreRequest,
  RestoreResponse,
  SubscriptionPurchaseResponse,
  UnlockPurchaseResponse,
  VerifyPurchaseRequest,
  VerifyPurchaseResponse,
} from "./contract.js";

export * from "./contract.js";

/** The public key an app pins at build time (`GET /api/answer-signing/{app}`). */
export interface PinnedAnswerKey {
  keyId: string;
  /** base64 DER SubjectPublicKeyInfo of the P-256 key */
  publicKeySPKI: string;
}

export interface BerthClientOptions {
  /** Berth's base URL, e.g. `https://berth.example.com` (no trailing path). */
  baseURL: string;
  /** The signed-in user's token (a JWT of the app's identity provider): the preferred credential. */
  userToken?: () => string | Promise<string>;
  /** The app's public client key (ships in the app); names the user with `userId`. */
  clientKey?: string;
  /** The user a client key acts for (X-User-Id). With a user token it is the token's subject. */
  userId?: string;
  /**
   * The answer-signing keys the app pins (from `GET /api/answer-signing/{app}` at build time). With any,
   * every answer of a call with the app's credentials must carry a valid signature by one of them, or the
   * call fails as `unverified`. Pin the next key beside the current one before the tenant rotates: the
   * answer's `X-Berth-Key-Id` says which one signed. Checked when the client is made.
   */
  answerKeys?: PinnedAnswerKey[];
  /** One pinned key: the same as `answerKeys: [answerKey]`. */
  answerKey?: PinnedAnswerKey;
  /** Retries after the first try of a retryable failure (default 3). */
  retries?: number;
  /** First backoff in ms, doubled each retry with jitter (default 400). */
  backoffMs?: number;
  /** Longest wait between tries in ms, Retry-After included (default 30000). */
  maxBackoffMs?: number;
  /** `Accept-Language` for refusals (en, vi, it, uk, zh). */
  language?: string;
  /** Answers older than this (ms) fail the signature check (default 300000). */
  maxAnswerAgeMs?: number;
  /** Injectable for tests and unusual runtimes. */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  random?: () => number;
}

/** A refusal or failure, typed: Berth's stable `code`, the message in the caller's language. */
export class BerthError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly field?: string,
    /** Whether trying again later may succeed (network, 5xx, 429). */
    readonly retryable: boolean = false,
    /** Berth's answer, when there was one. */
    readonly body?: unknown,
    /** What to check when the cause is likely a setting (a browser hiding a cross-origin answer). */
    readonly hint?: string,
  ) {
    super(hint ? `${message} (${hint})` : message);
    this.name = "BerthError";
  }
}

/** The code of a failure whose answer could not be trusted: unsigned, signed by a key the app does not pin, altered or stale. */
export const UNVERIFIED = "unverified";

/** What a store proof sent to Berth resolved to, and whether to finish the store transaction. */
export type PurchaseVerdict =
  /** Applied now or before (a retry): finish the transaction. */
  | { kind: "applied"; finish: true; reason: string; answer: VerifyPurchaseResponse | CreditPurchaseResponse | SubscriptionPurchaseResponse | UnlockPurchaseResponse }
  /** A booking paid in part: finish, then buy `remainingQuantity` more units of `booking.requiredProductId`. */
  | { kind: "partly_paid"; finish: true; reason: string; remainingQuantity: number; booking: Booking; answer: PartialPaymentResponse }
  /** Paid, but not applicable (kept for an operator, or recorded for a refund): the money is safe with Berth; finish. */
  | { kind: "kept"; finish: true; reason: string; error: BerthError }
  /** Another account already used this transaction: it is spent; finish and tell the user. */
  | { kind: "already_used"; finish: true; reason: string; error: BerthError }
  /** Berth could not decide now (offline, 5xx, 429): do not finish; send it again later (the store redelivers it). */
  | { kind: "retry_later"; finish: false; reason: string; error: BerthError }
  /** An answer came that is not provably Berth's (unsigned, another key, altered, stale): no answer, never a refusal.
   * Do not finish, keep the last trusted state, send it again later. */
  | { kind: "unverified"; finish: false; reason: string; error: BerthError }
  /** Refused (the proof does not verify or match): do not finish; the transaction stays with the store for support. */
  | { kind: "refused"; finish: false; reason: string; error: BerthError };

/** What to send for one store transaction. */
export type PurchaseProof =
  | { jwsRepresentation: string }
  | { receipt: string; transactionId?: string }
  | { transactionId: string }
  | { purchaseToken: string; packageName?: string };

interface Answer<T> {
  status: number;
  body: T;
  headers: Headers;
}

const RETRYABLE_STATUS = (status: number) => status === 429 || status >= 500;

export class BerthClient {
  private readonly options: Required<Pick<BerthClientOptions, "retries" | "backoffMs" | "maxBackoffMs" | "maxAnswerAgeMs">> & BerthClientOptions;
  private readonly doFetch: typeof fetch;
  /** The pinned keys by key id, each imported once (the first call waits for it). */
  private readonly pinned = new Map<string, { spki: Uint8Array; key?: Promise<CryptoKey> }>();

  constructor(options: BerthClientOptions) {
    if (!options.userToken && !options.clientKey) throw new BerthError("configuration", "give userToken or clientKey", 0);
    if (options.clientKey && !options.userToken && !options.userId) throw new BerthError("configuration", "a client key acts for the user in userId", 0);
    try {
      new URL(options.baseURL);
    } catch {
      throw new BerthError("configuration", `baseURL is not a URL: ${JSON.stringify(options.baseURL)}`, 0);
    }
    for (const pin of [...(options.answerKeys ?? []), ...(options.answerKey ? [options.answerKey] : [])]) {
      if (this.pinned.has(pin.keyId)) continue;
      this.pinned.set(pin.keyId, { spki: BerthClient.checkedKey(pin) });
    }
    this.options = { retries: 3, backoffMs: 400, maxBackoffMs: 30000, maxAnswerAgeMs: 300000, ...options };
    const platformFetch = options.fetch ?? globalThis.fetch;
    // Bound to globalThis: some WebViews throw "Illegal invocation" for an unbound fetch.
    this.doFetch = (input, init) => platformFetch.call(globalThis, input, init);
  }

  // ------------------------------------------------------------------ purchases

  /**
   * Sends what the store gave the app and says whether to finish the transaction. Never throws for
   * an answer about the purchase: every outcome is a verdict.
   */
  async verifyPurchase(productId: string, proof: PurchaseProof, bookingId?: number): Promise<PurchaseVerdict> {
    const body: VerifyPurchaseRequest = { productId, ...proof };
    if (bookingId !== undefined) body.bookingId = bookingId;
    try {
      const answer = await this.call<VerifyPurchaseResponse | CreditPurchaseResponse | SubscriptionPurchaseResponse | UnlockPurchaseResponse | PartialPaymentResponse>(
        "POST", "/api/verify-purchase", body);
      if (answer.status === 202 && (answer.body as PartialPaymentResponse).finishTransaction) {
        const partial = answer.body as PartialPaymentResponse;
        return { kind: "partly_paid", finish: true, reason: partial.error.message, remainingQuantity: partial.remainingQuantity, booking: partial.booking, answer: partial };
      }
      return { kind: "applied", finish: true, reason: "Berth applied the purchase", answer: answer.body as VerifyPurchaseResponse };
    } catch (error) {
      return BerthClient.verdict(error);
    }
  }

  /** The verdict for a failed purchase call (exported for apps that call Berth themselves). */
  static verdict(error: unknown): PurchaseVerdict {
    const failure = error instanceof BerthError ? error : new BerthError("network", String(error), 0, undefined, true);
    // Checked first: the body of an answer that does not verify is nobody's word.
    if (failure.code === UNVERIFIED) return { kind: "unverified", finish: false, reason: failure.message, error: failure };
    const body = failure.body as ErrorResponse | undefined;
    if (body && body.finishTransaction === true) {
      return { kind: "kept", finish: true, reason: "the payment is kept by Berth for an operator: " + failure.message, error: failure };
    }
    if (failure.code === "transaction_already_used") {
      return { kind: "already_used", finish: true, reason: failure.message, error: failure };
    }
    if (failure.status === 409 && ["slot_unavailable", "booking_already_paid", "booking_not_payable"].includes(failure.code)) {
      return { kind: "kept", finish: true, reason: "the payment is recorded for a refund: " + failure.message, error: failure };
    }
    if (failure.retryable) return { kind: "retry_later", finish: false, reason: failure.message, error: failure };
    return { kind: "refused", finish: false, reason: failure.message, error: failure };
  }

  /** Reads the customer's App Store history from a transaction the device holds and applies what Berth lacks. */
  async restorePurchases(proof: RestoreRequest): Promise<RestoreResponse> {
    return (await this.call<RestoreResponse>("POST", "/api/restore-purchases", proof)).body;
  }

  // ------------------------------------------------------------------ state

  async entitlements(): Promise<EntitlementsResponse> {
    return (await this.call<EntitlementsResponse>("GET", "/api/entitlements")).body;
  }

  async credits(): Promise<CreditBalance[]> {
    return (await this.call<CreditsResponse>("GET", "/api/credits")).body.credits;
  }

  async creditHistory(query: { limit?: number; offset?: number; type?: string } = {}): Promise<CreditTransactionsResponse> {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
    const text = search.toString();
    return (await this.call<CreditTransactionsResponse>("GET", "/api/credits/transactions" + (text ? "?" + text : ""))).body;
  }

  /** Holds credits for a piece of work (user tokens and server keys only; a client key is refused). */
  async reserveCredits(request: ReserveCreditsRequest): Promise<ReservationResponse> {
    // One Idempotency-Key for the call and its retries: a retry after a lost answer finds the first hold.
    return (await this.call<ReservationResponse>("POST", "/api/credits/reservations", request, { idempotencyKey: BerthClient.nonce() })).body;
  }

  async commitReservation(id: number): Promise<ReservationResponse> {
    return (await this.call<ReservationResponse>("POST", `/api/credits/reservations/${id}/commit`)).body;
  }

  async releaseReservation(id: number): Promise<ReservationResponse> {
    return (await this.call<ReservationResponse>("POST", `/api/credits/reservations/${id}/release`)).body;
  }

  // ------------------------------------------------------------------ bookings

  /** Creates a booking (a hold on the slot) for the user. */
  async createBooking(request: CreateBookingRequest): Promise<Booking> {
    // One Idempotency-Key for the call and its retries: a retry after a lost answer gets the first booking, not a second hold.
    return (await this.call<BookingResponse>("POST", "/api/bookings", request, { idempotencyKey: BerthClient.nonce() })).body.booking;
  }

  async booking(id: number): Promise<Booking> {
    return (await this.call<BookingResponse>("GET", `/api/bookings/${id}`)).body.booking;
  }

  async bookings(): Promise<Booking[]> {
    return (await this.call<BookingListResponse>("GET", "/api/bookings")).body.items;
  }

  /** Moves the user's booking to another slot (`{slot}`) or days (`{start, end}`) of the same resource,
   * while the app's cancellation policy allows. When the new place costs more than was paid, the answer's
   * `difference` is a booking to pay (card or store) before the move happens. A repeat after a lost answer
   * finds it moved already (or the same difference). */
  async moveBooking(id: number | string, request: MoveBookingRequest): Promise<MoveBookingResponse> {
    return (await this.call<MoveBookingResponse>("POST", `/api/bookings/${encodeURIComponent(String(id))}/move`, request)).body;
  }

  /** What cancelling the booking now gives back, with the words to show before the customer confirms. */
  async quoteCancellation(id: number | string): Promise<CancellationQuote> {
    return (await this.call<CancellationQuote>("GET", `/api/bookings/${encodeURIComponent(String(id))}/cancellation`)).body;
  }

  /** Cancels the booking as `quoteCancellation` said (a card share refunded by Berth; store purchases owed). Not retried
   * after a lost answer: read the booking to see whether it was cancelled. */
  async cancelBooking(id: number | string): Promise<CancelBookingResponse> {
    return (await this.call<CancelBookingResponse>("POST", `/api/bookings/${encodeURIComponent(String(id))}/cancel`)).body;
  }

  /** Starts (or finds) the card payment of a booking: what Stripe's Payment Sheet needs. */
  async startCardPayment(bookingId: number): Promise<CardPaymentStart> {
    return (await this.call<CardPaymentStart>("POST", `/api/bookings/${bookingId}/card-payment`, {})).body;
  }

  // ------------------------------------------------------------------ offers

  async promotionalOffer(request: PromotionalOfferRequest): Promise<PromotionalOfferResponse> {
    return (await this.call<PromotionalOfferResponse>("POST", "/api/offers/apple/promotional", request)).body;
  }

  async introductoryEligibility(request: IntroductoryEligibilityRequest): Promise<IntroductoryEligibilityResponse> {
    return (await this.call<IntroductoryEligibilityResponse>("POST", "/api/offers/apple/introductory-eligibility", request)).body;
  }

  /** The app's answer-signing key, to pin at build time (fetching it at run time trusts whoever answers). */
  async answerSigningKey(app: string): Promise<AnswerSigningKey> {
    return (await this.call<AnswerSigningKey>("GET", `/api/answer-signing/${encodeURIComponent(app)}`, undefined, { anonymous: true })).body;
  }

  // ------------------------------------------------------------------ transport

  private async headers(nonce: string, anonymous: boolean, hasBody: boolean): Promise<Record<string, string>> {
    const headers: Record<string, string> = { Accept: "application/json", "X-Berth-Nonce": nonce };
    if (hasBody) headers["Content-Type"] = "application/json";
    if (this.options.language) headers["Accept-Language"] = this.options.language;
    if (anonymous) return headers;
    if (this.options.userToken) {
      headers.Authorization = "Bearer " + (await this.options.userToken());
    } else if (this.options.clientKey) {
      headers.Authorization = "Bearer " + this.options.clientKey;
      if (this.options.userId) headers["X-User-Id"] = this.options.userId;
    }
    return headers;
  }

  /**
   * One call, retried on network errors, 5xx and 429; a 4xx is thrown at once as a BerthError. A POST
   * is retried only when repeating it cannot act twice: with an Idempotency-Key Berth honours, or on
   * a route that is idempotent by its nature (a proof applies once; a reservation commits once).
   */
  private async call<T>(method: string, path: string, body?: unknown, flags: { anonymous?: boolean; idempotencyKey?: string } = {}): Promise<Answer<T>> {
    const sleep = this.options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
    const random = this.options.random ?? Math.random;
    let attempt = 0;
    for (;;) {
      let failure: BerthError;
      let wait: number | undefined;
      try {
        return await this.once<T>(method, path, body, flags.anonymous === true, flags.idempotencyKey);
      } catch (error) {
        failure = error instanceof BerthError ? error
          : new BerthError("network", "Berth could not be reached: " + String(error), 0, undefined, true, undefined, this.crossOriginHint());
        if (failure instanceof RetryAfter) wait = failure.waitMs;
      }
      const repeatable = method !== "POST" || flags.idempotencyKey !== undefined || BerthClient.idempotentPost(path);
      if (!failure.retryable || !repeatable || attempt >= this.options.retries) throw failure;
      const backoff = Math.min(this.options.maxBackoffMs, this.options.backoffMs * 2 ** attempt) * (0.5 + random() / 2);
      await sleep(Math.min(this.options.maxBackoffMs, Math.max(backoff, wait ?? 0)));
      attempt += 1;
    }
  }

  private async once<T>(method: string, path: string, body: unknown, anonymous: boolean, idempotencyKey?: string): Promise<Answer<T>> {
    const nonce = BerthClient.nonce();
    const headers = await this.headers(nonce, anonymous, body !== undefined);
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    const response = await this.doFetch(this.options.baseURL.replace(/\/+$/, "") + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (this.pinned.size > 0 && !anonymous) {
      // With pinned keys every answer of an authenticated call must be Berth's (Berth signs every
      // route an app calls with its credentials): one that does not verify is never read as data,
      // nor as a refusal. A proxy's own 5xx or 429 carries no signature: it is tried again.
      if (response.headers.get("X-Berth-Signature") === null) {
        throw new BerthError(UNVERIFIED, "the answer is not signed: it is not Berth's (keep the last trusted state)", response.status,
                             undefined, RETRYABLE_STATUS(response.status));
      }
      await this.checkSignature(response, bytes, { nonce, method, path });
    }
    let parsed: unknown = undefined;
    if (bytes.length > 0) {
      try {
        parsed = JSON.parse(new TextDecoder().decode(bytes));
      } catch {
        throw new BerthError("invalid_answer", "the answer is not JSON", response.status, undefined, RETRYABLE_STATUS(response.status));
      }
    }
    if (response.ok) return { status: response.status, body: parsed as T, headers: response.headers };
    const error = (parsed as ErrorResponse | undefined)?.error;
    const retryable = RETRYABLE_STATUS(response.status);
    const message = error?.description ?? error?.message ?? `HTTP ${response.status}`;
    const after = response.headers.get("Retry-After");
    const seconds = after !== null && /^[0-9]+$/.test(after) ? Number(after) : undefined;
    if (retryable && seconds !== undefined) throw new RetryAfter(error?.code ?? "http_" + response.status, message, response.status, error?.field, parsed, seconds * 1000);
    throw new BerthError(error?.code ?? "http_" + response.status, message, response.status, error?.field, retryable, parsed);
  }

  /** POST routes that act once whatever the repeats: a proof applies once, a restore reads history, a
   * reservation commits or releases once, a booking has one card payment. */
  private static idempotentPost(path: string): boolean {
    const bare = path.split("?")[0];
    return ["/api/verify-purchase", "/api/restore-purchases", "/api/offers/apple/introductory-eligibility"].includes(bare)
      || /^\/api\/credits\/reservations\/[0-9]+\/(commit|release)$/.test(bare)
      || /^\/api\/bookings\/[^/]+\/(card-payment|move)$/.test(bare);
  }

  /** Checks Berth's signature over the answer (the text the README documents) with the pinned key it names. */
  private async checkSignature(response: Response, body: Uint8Array, request: { nonce: string; method: string; path: string }): Promise<void> {
    const header = (name: string) => response.headers.get(name) ?? "";
    const signedAt = header("X-Berth-Signed-At");
    const refuse = (why: string): never => { throw new BerthError(UNVERIFIED, why + ": it is not provably Berth's (keep the last trusted state)", response.status); };
    const keyId = header("X-Berth-Key-Id");
    const pinned = this.pinned.get(keyId);
    if (pinned === undefined) return refuse(`the answer is signed with key ${JSON.stringify(keyId)}, which the app does not pin`);
    if (!/^[0-9]+$/.test(signedAt) || Math.abs((this.options.now ?? Date.now)() - Number(signedAt)) > this.options.maxAnswerAgeMs) refuse("the answer is stale");
    const user = await this.answerUser();
    const digest = base64URL(new Uint8Array(await crypto.subtle.digest("SHA-256", body)));
    const text = ["berth-answer-v1", keyId, request.nonce, signedAt, String(response.status), `${request.method} ${request.path}`, user, digest].join("\n");
    pinned.key ??= crypto.subtle.importKey("spki", pinned.spki, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
    let signature: Uint8Array;
    try {
      signature = fromBase64(header("X-Berth-Signature"));
    } catch {
      return refuse("the answer's signature is not base64url");
    }
    const valid = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, await pinned.key, signature, new TextEncoder().encode(text));
    if (!valid) refuse("the answer was changed on its way");
  }

  /**
   * A pinned key's SPKI, checked now rather than at the first call: the base64 DER of a P-256
   * SubjectPublicKeyInfo (what `GET /api/answer-signing/{app}` gives as `publicKeySPKI`).
   */
  private static checkedKey(pin: PinnedAnswerKey): Uint8Array {
    const wrong = (why: string): never => { throw new BerthError("configuration", `answer key ${JSON.stringify(pin?.keyId)}: ${why}`, 0); };
    if (typeof pin !== "object" || pin === null || typeof pin.keyId !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(pin.keyId)) {
      wrong("keyId must be 1 to 64 letters, digits, '.', '_' or '-' (the keyId of GET /api/answer-signing/{app})");
    }
    let der: Uint8Array = new Uint8Array();
    try {
      der = fromBase64(String(pin.publicKeySPKI));
    } catch {
      wrong("publicKeySPKI is not base64");
    }
    // SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING { 04 ‖ X ‖ Y } }: 91 bytes, this prefix.
    const prefix = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03,
                    0x01, 0x07, 0x03, 0x42, 0x00, 0x04];
    if (der.length !== 91 || prefix.some((byte, index) => der[index] !== byte)) {
      wrong("publicKeySPKI is not a P-256 public key (the publicKeySPKI of GET /api/answer-signing/{app}, base64 DER)");
    }
    return der;
  }

  /**
   * Why a browser page's call may have failed although Berth is up: a browser hides every answer to
   * an origin the tenant does not allow, and the call looks like a network failure.
   */
  private crossOriginHint(): string | undefined {
    const origin = (globalThis as { location?: { origin?: string } }).location?.origin;
    if (typeof origin !== "string" || typeof (globalThis as { document?: unknown }).document !== "object") return undefined;
    let target: string;
    try {
      target = new URL(this.options.baseURL).origin;
    } catch {
      return undefined;
    }
    if (origin === target) return undefined;
    return `if Berth is up, add this page's origin ${origin} to the tenant's allowedOrigins: a browser hides answers to origins Berth does not allow`;
  }

  /** The user the answers are about: the token's subject, or the user a client key names. */
  private async answerUser(): Promise<string> {
    if (this.options.userToken) {
      const token = await this.options.userToken();
      const payload = token.split(".")[1] ?? "";
      try {
        const claims = JSON.parse(new TextDecoder().decode(fromBase64(payload))) as { sub?: string };
        return claims.sub ?? "";
      } catch {
        return "";
      }
    }
    return this.options.userId ?? "";
  }

  /** 16 random bytes, base64url: a fresh X-Berth-Nonce. */
  static nonce(): string {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return base64URL(bytes);
  }
}

/** A retryable refusal that says when to come back (429 or 503 with Retry-After). */
class RetryAfter extends BerthError {
  constructor(code: string, message: string, status: number, field: string | undefined, body: unknown, readonly waitMs: number) {
    super(code, message, status, field, true, body);
  }
}

function base64URL(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64(text: string): Uint8Array {
  const standard = text.replace(/-/g, "+").replace(/_/g, "/");
  const padded = standard + "===".slice((standard.length + 3) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
  return bytes;
}
