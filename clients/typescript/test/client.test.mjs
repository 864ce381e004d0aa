// The client's retry rules and verdicts, against answers played by an injected fetch (node 18+).
// The browser test (Tests/browser/webview_test.py) runs the same client against a real Berth.
// Usage: node clients/typescript/test/client.test.mjs  (after tsc -p clients/typescript)
import assert from "node:assert/strict";
import { BerthClient, BerthError } from "../dist/index.js";

// Keys as Berth has them (P-256), and the answers Berth would sign with them (the text docs/api.md gives).
async function signingKey(keyId) {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const spki = Buffer.from(await crypto.subtle.exportKey("spki", pair.publicKey)).toString("base64");
  return { keyId, pair, pin: { keyId, publicKeySPKI: spki } };
}
const b64url = (bytes) => Buffer.from(bytes).toString("base64url");
async function signed(key, status, body, init, url, user = "ana", at = Date.now()) {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  const digest = b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
  const path = new URL(url).pathname + new URL(url).search;
  const text = ["berth-answer-v1", key.keyId, init.headers["X-Berth-Nonce"], String(at), String(status), `${init.method} ${path}`, user, digest].join("\n");
  const signature = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key.pair.privateKey, new TextEncoder().encode(text)));
  return new Response(bytes, { status, headers: { "Content-Type": "application/json", "X-Berth-Signature": b64url(signature),
                                                  "X-Berth-Signed-At": String(at), "X-Berth-Key-Id": key.keyId } });
}
const first = await signingKey("seaboo-1"), second = await signingKey("seaboo-2"), stranger = await signingKey("seaboo-1");

function answers(list) {
  const seen = [];
  const fetch = async (url, init) => {
    seen.push({ url, init });
    const next = list.shift();
    if (next instanceof Error) throw next;
    const [status, body, headers = {}] = next;
    return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
  };
  return { fetch, seen };
}

function client(fetch, waits = []) {
  return new BerthClient({ baseURL: "https://berth.test/", clientKey: "berth_app_x", userId: "ana", fetch, retries: 3, backoffMs: 100,
                           sleep: async (ms) => { waits.push(ms); }, random: () => 1 });
}

const refusal = (code, extra = {}) => ({ success: false, error: { code, message: code }, ...extra });
let failures = 0;
async function test(name, body) {
  try { await body(); console.log("ok:", name); } catch (error) { failures += 1; console.log("FAILED:", name, "\n", error); }
}

await test("a 503 with Retry-After is retried after that long, then succeeds; the nonce is fresh each try", async () => {
  const { fetch, seen } = answers([[503, refusal("temporarily_unavailable"), { "Retry-After": "2" }], [200, { credits: [{ balance: 7 }] }]]);
  const waits = [];
  const credits = await client(fetch, waits).credits();
  assert.equal(credits[0].balance, 7);
  assert.deepEqual(waits, [2000]);
  assert.equal(seen.length, 2);
  assert.notEqual(seen[0].init.headers["X-Berth-Nonce"], seen[1].init.headers["X-Berth-Nonce"]);
  assert.equal(seen[0].url, "https://berth.test/api/credits");
  assert.equal(seen[0].init.headers.Authorization, "Bearer berth_app_x");
  assert.equal(seen[0].init.headers["X-User-Id"], "ana");
});

await test("network errors and 5xx back off (doubling, capped), up to the retry limit", async () => {
  const { fetch, seen } = answers([new TypeError("Failed to fetch"), [500, refusal("internal_error")], [502, undefined], [503, refusal("temporarily_unavailable")]]);
  const waits = [];
  await assert.rejects(client(fetch, waits).entitlements(), (error) => error instanceof BerthError && error.retryable && error.status === 503);
  assert.equal(seen.length, 4);
  assert.deepEqual(waits, [100, 200, 400]);
});

await test("a 4xx is never retried: a typed error with code, field and status", async () => {
  const { fetch, seen } = answers([[400, { success: false, error: { code: "invalid_user_id", message: "X-User-Id is limited", field: "X-User-Id" } }]]);
  await assert.rejects(client(fetch).credits(), (error) => error.code === "invalid_user_id" && error.field === "X-User-Id" && error.status === 400 && !error.retryable);
  assert.equal(seen.length, 1);
});

await test("purchase verdicts: applied, partly paid, kept, recorded for refund, already used finish; offline and refused do not", async () => {
  const cases = [
    [[200, { success: true, transactionId: "1", creditType: "credits", creditsAdded: 10, newBalance: 12, purchase: {} }], "applied", true],
    [[202, { success: false, finishTransaction: true, remainingQuantity: 1, booking: { status: "pending_payment" }, purchase: {}, error: { code: "booking_partly_paid", message: "one more" } }], "partly_paid", true],
    [[404, refusal("booking_not_found", { finishTransaction: true, unappliedPayment: { id: 1 } })], "kept", true],
    [[409, refusal("slot_unavailable")], "kept", true],
    [[409, refusal("transaction_already_used")], "already_used", true],
    [[422, refusal("bad_signature")], "refused", false],
  ];
  for (const [answer, kind, finish] of cases) {
    const { fetch } = answers([answer]);
    const verdict = await client(fetch).verifyPurchase("p", { jwsRepresentation: "a.b.c" });
    assert.equal(verdict.kind, kind, JSON.stringify(answer));
    assert.equal(verdict.finish, finish, kind);
  }
  const { fetch } = answers([new TypeError("offline"), new TypeError("offline"), new TypeError("offline"), new TypeError("offline")]);
  const offline = await client(fetch).verifyPurchase("p", { jwsRepresentation: "a.b.c" }, 5);
  assert.equal(offline.kind, "retry_later");
  assert.equal(offline.finish, false);
});

await test("the request body names the product, the proof and the booking", async () => {
  const { fetch, seen } = answers([[200, { success: true, booking: {}, purchase: {} }]]);
  await client(fetch).verifyPurchase("it.seaboo.rental.basic", { receipt: "MIIB", transactionId: "2000" }, 42);
  assert.deepEqual(JSON.parse(seen[0].init.body), { productId: "it.seaboo.rental.basic", receipt: "MIIB", transactionId: "2000", bookingId: 42 });
  assert.equal(seen[0].init.method, "POST");
  assert.equal(seen[0].init.headers["Content-Type"], "application/json");
});

await test("a pinned key makes an unsigned answer of a signed route unverified, never data", async () => {
  const { fetch } = answers([[200, { isPremium: true, entitlements: [] }]]);
  const pinned = new BerthClient({ baseURL: "https://berth.test", clientKey: "k", userId: "ana", fetch, answerKey: first.pin });
  await assert.rejects(pinned.entitlements(), (error) => error.code === "unverified");
});

await test("answerKeys: answers signed by either pinned key are data (a rotation); another key, an altered body or a stale answer is unverified", async () => {
  let signer = first, alter = false, at = () => Date.now();
  const fetch = async (url, init) => {
    const answer = await signed(signer, 200, { isPremium: true, entitlements: [] }, init, url, "ana", at());
    if (!alter) return answer;
    const body = new TextEncoder().encode(JSON.stringify({ isPremium: true, entitlements: [], extra: 1 }));
    return new Response(body, { status: 200, headers: answer.headers });
  };
  const berth = new BerthClient({ baseURL: "https://berth.test", clientKey: "k", userId: "ana", fetch, answerKeys: [first.pin, second.pin], retries: 0 });
  assert.equal((await berth.entitlements()).isPremium, true, "signed by the first key");
  signer = second;
  assert.equal((await berth.entitlements()).isPremium, true, "signed by the second key after the rotation");
  signer = stranger;
  await assert.rejects(berth.entitlements(), (error) => error.code === "unverified" && /changed/.test(error.message), "the right key id, another key");
  signer = await signingKey("seaboo-3");
  await assert.rejects(berth.entitlements(), (error) => error.code === "unverified" && /does not pin/.test(error.message));
  signer = first;
  alter = true;
  await assert.rejects(berth.entitlements(), (error) => error.code === "unverified" && !error.retryable);
  alter = false;
  at = () => Date.now() - 600000;
  await assert.rejects(berth.entitlements(), (error) => error.code === "unverified" && /stale/.test(error.message));
});

await test("a purchase whose answer does not verify is unverified: do not finish, never refused", async () => {
  const fetch = async (url, init) => {
    const answer = await signed(first, 422, refusal("bad_signature"), init, url);
    return new Response(JSON.stringify(refusal("bad_signature", { note: "changed" })), { status: 422, headers: answer.headers });
  };
  const berth = new BerthClient({ baseURL: "https://berth.test", clientKey: "k", userId: "ana", fetch, answerKeys: [first.pin] });
  const verdict = await berth.verifyPurchase("p", { jwsRepresentation: "a.b.c" });
  assert.equal(verdict.kind, "unverified");
  assert.equal(verdict.finish, false);
  const good = new BerthClient({ baseURL: "https://berth.test", clientKey: "k", userId: "ana", answerKeys: [first.pin],
                                 fetch: async (url, init) => signed(first, 422, refusal("bad_signature"), init, url) });
  assert.equal((await good.verifyPurchase("p", { jwsRepresentation: "a.b.c" })).kind, "refused", "a signed refusal is a refusal");
});

await test("a pinned key that is not a P-256 SPKI, or a bad key id, is refused when the client is made", async () => {
  const make = (answerKeys) => new BerthClient({ baseURL: "https://berth.test", clientKey: "k", userId: "ana", answerKeys });
  assert.throws(() => make([{ keyId: "k1", publicKeySPKI: "AAAA" }]), (error) => error.code === "configuration" && /P-256/.test(error.message));
  assert.throws(() => make([{ keyId: "k1", publicKeySPKI: "not base64!" }]), (error) => error.code === "configuration");
  assert.throws(() => make([{ keyId: "", publicKeySPKI: first.pin.publicKeySPKI }]), (error) => error.code === "configuration" && /keyId/.test(error.message));
  const rsa = await crypto.subtle.generateKey({ name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, true, ["sign"]);
  const rsaSPKI = Buffer.from(await crypto.subtle.exportKey("spki", rsa.publicKey)).toString("base64");
  assert.throws(() => make([{ keyId: "k1", publicKeySPKI: rsaSPKI }]), (error) => error.code === "configuration");
  assert.doesNotThrow(() => make([first.pin, second.pin]));
  assert.throws(() => new BerthClient({ baseURL: "berth.example.com", clientKey: "k", userId: "ana" }), (error) => error.code === "configuration");
});

await test("a booking is retried after a 502 with the same Idempotency-Key (V5); each new booking gets its own key", async () => {
  const booking = { booking: { id: 7, status: "pending_payment" } };
  const { fetch, seen } = answers([[502, undefined], [201, booking], [201, booking]]);
  const made = await client(fetch).createBooking({ resourceId: "rib-7m", start: "2027-06-01", end: "2027-06-01" });
  assert.equal(made.id, 7);
  assert.equal(seen.length, 2);
  const key = seen[0].init.headers["Idempotency-Key"];
  assert.ok(typeof key === "string" && key.length > 10, "a key is sent");
  assert.equal(seen[1].init.headers["Idempotency-Key"], key, "the retry repeats the key");
  const second = answers([[201, booking]]);
  await client(second.fetch).createBooking({ resourceId: "rib-7m", start: "2027-06-02", end: "2027-06-02" });
  assert.notEqual(second.seen[0].init.headers["Idempotency-Key"], key, "another booking, another key");
});

await test("a POST without an idempotency key and not idempotent by nature is never repeated after a 5xx", async () => {
  const { fetch, seen } = answers([[503, refusal("temporarily_unavailable")], [200, {}]]);
  await assert.rejects(client(fetch).promotionalOffer({ productId: "p", offerId: "o" }), (error) => error.status === 503);
  assert.equal(seen.length, 1);
});

await test("with a pinned key, every authenticated answer must be signed (V6): bookings too; a proxy's 502 is retried", async () => {
  const options = { baseURL: "https://berth.test", clientKey: "k", userId: "ana", answerKey: first.pin,
                    retries: 2, sleep: async () => {}, random: () => 1 };
  const rewritten = answers([[200, { booking: { id: 1, status: "confirmed" } }]]);
  await assert.rejects(new BerthClient({ ...options, fetch: rewritten.fetch }).booking(1), (error) => error.code === "unverified" && !error.retryable);
  const list = answers([[200, { items: [], total: 0 }]]);
  await assert.rejects(new BerthClient({ ...options, fetch: list.fetch }).bookings(), (error) => error.code === "unverified");
  const proxy = answers([[502, undefined], [502, undefined], [502, undefined]]);
  await assert.rejects(new BerthClient({ ...options, fetch: proxy.fetch }).entitlements(), (error) => error.code === "unverified" && error.retryable);
  assert.equal(proxy.seen.length, 3, "retried");
});

await test("moveBooking posts the new place and is retried after a 502 (a move is idempotent); cancelBooking is not; quoteCancellation reads the quote", async () => {
  const moved = { booking: { id: 7, status: "confirmed", localStart: "2027-06-02T17:30:00+02:00" } };
  const { fetch, seen } = answers([[502, undefined], [200, moved]]);
  const { booking, difference } = await client(fetch).moveBooking("K7MX2QA", { slot: "2027-06-02T17:30" });
  assert.equal(booking.localStart, "2027-06-02T17:30:00+02:00");
  assert.equal(difference, undefined, "a move at the same price has nothing to pay");
  assert.equal(seen.length, 2);
  assert.equal(seen[0].url, "https://berth.test/api/bookings/K7MX2QA/move");
  assert.deepEqual(JSON.parse(seen[1].init.body), { slot: "2027-06-02T17:30" });
  const quote = { bookingId: 7, status: "confirmed", allowed: true, refundPercent: 50, paidMinor: 4500, refundMinor: 2250, currency: "EUR", rail: "card", hoursBefore: 30, message: "50 % back" };
  const quoted = answers([[200, quote]]);
  assert.equal((await client(quoted.fetch).quoteCancellation(7)).refundMinor, 2250);
  assert.equal(quoted.seen[0].init.method, "GET");
  assert.equal(quoted.seen[0].url, "https://berth.test/api/bookings/7/cancellation");
  const lost = answers([[502, undefined], [200, { booking: { id: 7, status: "cancelled" }, cancellation: quote }]]);
  await assert.rejects(client(lost.fetch).cancelBooking(7), (error) => error.status === 502);
  assert.equal(lost.seen.length, 1, "a cancel is not repeated blindly");
  const refused = answers([[409, refusal("change_not_allowed")]]);
  await assert.rejects(client(refused.fetch).moveBooking(7, { slot: "2027-06-02T17:30" }), (error) => error.code === "change_not_allowed" && error.status === 409);
});

await test("a client key without a user, or no credentials at all, is a configuration error", async () => {
  assert.throws(() => new BerthClient({ baseURL: "https://berth.test", clientKey: "k" }), (error) => error.code === "configuration");
  assert.throws(() => new BerthClient({ baseURL: "https://berth.test" }), (error) => error.code === "configuration");
});

if (failures > 0) { console.log(`${failures} test(s) failed`); process.exit(1); }
console.log("client tests: every check passed");
