// Berth admin: a static page over the JSON API. Every action is an API call with the admin key
// (Authorization: Bearer), so it is checked and audited exactly like any other client's. The key
// lives in sessionStorage (this tab only) and never in a URL. Text is set with textContent only.
"use strict";

const KEY = "berth.adminKey";
const PAGE = 50;
const $ = (selector) => document.querySelector(selector);

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    // Through the CSSOM: the page's Content-Security-Policy (style-src 'self') refuses style attributes.
    else if (name === "style") for (const [property, setting] of Object.entries(value)) node.style.setProperty(property, setting);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

class APIFailure extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

async function api(method, path, body, accept = "application/json") {
  const headers = { Authorization: "Bearer " + sessionStorage.getItem(KEY), Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) {
    let code = "http_" + response.status, message = response.statusText;
    try {
      const error = (await response.json()).error;
      if (error) { code = error.code; message = error.message; }
    } catch (_) { /* not JSON */ }
    if (response.status === 401) signOut("The key was refused: " + message);
    throw new APIFailure(response.status, code, message);
  }
  return accept === "text/csv" ? response.text() : response.json();
}

function say(text, kind = "ok") {
  const message = $("#message");
  message.textContent = text;
  message.className = kind;
}

function failed(error) {
  say(error instanceof APIFailure ? `Refused: ${error.message} (${error.code})` : `Failed: ${error.message}`, "error");
}

// Dates: the API takes ISO 8601 instants; the page shows every time in the app's zone with its offset.
// Days are the app's local days: "2026-12-01" is [local midnight, the next local midnight) as instants.
function offsetMinutes(instant, zone) {
  try {
    const name = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" }).formatToParts(new Date(instant)).find((p) => p.type === "timeZoneName");
    const match = /GMT([+-])(\d\d):(\d\d)/.exec(name ? name.value : "");
    return match ? (match[1] === "-" ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3])) : 0;
  } catch {
    return 0;
  }
}
function zonedMidnight(day) {
  const zone = app && app.timeZone;
  const utc = Date.parse(day + "T00:00:00Z");
  if (!zone || zone === "UTC" || Number.isNaN(utc)) return day + "T00:00:00Z";
  let instant = utc - offsetMinutes(utc, zone) * 60000;
  instant = utc - offsetMinutes(instant, zone) * 60000;  // the offset in force at that midnight (a daylight-saving day)
  return new Date(instant).toISOString();
}
const dayStart = (day) => zonedMidnight(day);
function nextDay(day) {
  const date = new Date(day + "T00:00:00Z");
  date.setUTCDate(date.getUTCDate() + 1);
  return zonedMidnight(date.toISOString().slice(0, 10));
}
const utcText = (iso) => (iso ? iso.replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, "Z") : "");
// Every instant on the page: in the app's zone, with its offset (localStamp, below).
const when = (iso) => localStamp(iso);
// Minor units as the currency writes them: 13500 EUR → "135.00 EUR", 25000 VND → "25000 VND".
const FRACTION_DIGITS = { BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3 };
const money = (minor, currency) => {
  if (minor === undefined || minor === null) return "";
  const digits = FRACTION_DIGITS[(currency || "").toUpperCase()] ?? 2;
  return (minor / 10 ** digits).toFixed(digits) + " " + (currency || "");
};
// Why a payment was not applied, as an operator would say it (the code stays in the tooltip).
const UNAPPLIED_REASONS = {
  missing_field: "paid without naming what for (no booking)", booking_not_found: "paid for a booking that does not exist",
  product_mismatch: "paid for another product than the booking's", slot_unavailable: "paid, but the slot was taken",
  booking_not_payable: "paid for a booking that was no longer payable", booking_already_paid: "the booking was already paid",
};
const RAIL_NAMES = { app_store: "App Store", google_play: "Google Play", card: "card" };
const STORE_GUIDANCE = {
  app_store: "Apple refunds App Store purchases, not Berth: tell the customer to ask Apple at reportaproblem.apple.com (or in the App Store: account, Purchase History, Report a Problem). When Apple refunds it, Berth records Apple's refund notice by itself. Cancel the booking if it will not take place: it is then listed under Owed to customers until you record that the customer was told.",
  google_play: "Google refunds Google Play purchases: tell the customer to ask in Google Play (Order history, Request a refund), or refund the order in the Play Console. Berth records Google's notice by itself. Cancel the booking if it will not take place: it is then listed under Owed to customers.",
};

function statusCell(value) { return el("span", { class: "status-" + value, text: value.replaceAll("_", " ") }); }
// A booking's status, with its hold: "pending payment · 12 min left" or "hold lapsed".
function bookingStatus(value, b) {
  if (value !== "pending_payment") return statusCell(value);
  if (b.holdLapsed) return el("span", { class: "status-lapsed", text: b.paidQuantity > 0 ? "hold lapsed (part paid)" : "hold lapsed" });
  const left = Math.max(0, Math.round((Date.parse(b.holdExpiresAt) - Date.now()) / 60000));
  return el("span", { class: "status-pending_payment", text: `pending payment · ${left} min left` });
}

// A booking's wall-clock time where it happens: "2026-07-14 17:30 (+02:00)", "… (UTC)".
function localTime(text) {
  const match = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d):\d\d([+-]\d\d:\d\d)$/.exec(text || "");
  if (!match) return utcText(text);
  return `${match[1]} ${match[2]} (${match[3] === "+00:00" ? "UTC" : match[3]})`;
}
const bookingWhen = (v, b) => el("span", { title: `${b.timeZone}: ${b.localStart} → ${b.localEnd}; UTC ${b.start}`, text: localTime(b.localStart) });

// One vocabulary for environments: the App Store's words; a card payment's Stripe mode maps onto them.
const environmentLabel = (value) => ({ live: "Production (card)", test: "Sandbox (card)" })[value] || value || "";

// Every user id shown leads to that customer's timeline.
function userLink(userId) {
  if (!userId) return "";
  return el("a", { class: "user", href: "#", "data-user": userId, text: userId, onclick: (event) => { event.preventDefault(); showTimeline(userId); } });
}

// Each view: where it reads, its filters, its columns, its row actions.
const views = {
  bookings: {
    title: "Bookings", path: "/api/admin/bookings", csv: "bookings",
    filters: [
      { name: "day", label: "Day (local)", type: "date" },
      { name: "resourceId", label: "Resource", type: "select", options: async () => (await api("GET", "/api/resources")).resources.map((r) => [r.id, r.name]) },
      { name: "status", label: "Status", type: "select", options: ["pending_payment", "confirmed", "cancelled", "refunded", "payment_needs_refund"] },
      { name: "userId", label: "User" },
    ],
    columns: [["reference", "Ref", (v) => el("span", { class: "ref", text: v })], ["resourceName", "Resource", (v, b) => v || b.resourceId],
      ["localStart", "When (local)", (v, b) => el("span", { class: "nowrap", title: `${b.timeZone}: ${b.localStart} → ${b.localEnd}; UTC ${b.start}`, text: tripWhen(b) })],
      ["seats", "Seats"], ["paidQuantity", "Paid", (v, b) => `${v} of ${b.requiredQuantity}${b.amountPaid ? " · " + money(b.amountPaid, b.currency) : ""}`],
      ["paidVia", "Rail", (v) => el("span", { class: "nowrap", text: (v || []).map((r) => RAIL_NAMES[r] || r).join(", ") })], ["userId", "User", userLink],
      ["price", "Price", (v, b) => el("span", { class: "nowrap", text: money(v, b.currency) })], ["status", "Status", bookingStatus], ["statusReason", "Reason"]],
    actions: (booking) => [
      booking.status === "pending_payment" || booking.status === "payment_needs_refund" ? el("button", { text: "Confirm", onclick: () => askReason(booking, "confirm") }) : null,
      booking.status !== "cancelled" && booking.status !== "refunded" ? el("button", { class: "danger", text: "Cancel", onclick: () => askReason(booking, "cancel") }) : null,
      (booking.paidVia || []).length && ["confirmed", "payment_needs_refund", "cancelled"].includes(booking.status)
        ? el("button", { class: "danger refund", text: "Refund", onclick: () => askRefund(booking) }) : null,
      el("button", { class: "secondary", text: "Audit", onclick: () => showAudit(booking) }),
      app.cardPayments ? el("button", { class: "secondary payments", text: "Payments", onclick: () => showPayments(booking) }) : null,
    ],
  },
  purchases: {
    title: "Purchases", path: "/api/admin/purchases", csv: "purchases",
    filters: [
      { name: "userId", label: "User" }, { name: "productId", label: "Product" },
      { name: "status", label: "Status", type: "select", options: ["applied", "needs_refund", "refunded"] },
      { name: "environment", label: "Environment", type: "select", options: async () => ["Production", "Sandbox", "live", "test"].map((v) => [v, environmentLabel(v)]) },
      { name: "from", label: "From (local day)", type: "date" }, { name: "to", label: "To (local day)", type: "date" },
    ],
    columns: [["createdAt", "Recorded", when], ["userId", "User", userLink], ["productId", "Product"], ["status", "Status", statusCell],
      ["outcomeCode", "Outcome"], ["store", "Store", (v, p) => `${v} · ${environmentLabel(p.environment)}`], ["transactionId", "Transaction"], ["credits", "Credits"],
      ["priceMilliunits", "Price", (v, p) => (v === undefined ? "" : (v / 1000).toFixed(2) + " " + (p.currency || ""))]],
  },
  unapplied: {
    title: "Unapplied payments (paid, not applied)", path: "/api/admin/unapplied-payments",
    filters: [{ name: "status", label: "Status", type: "select", options: ["open", "applied", "refund_requested"] }],
    columns: [["lastSeenAt", "Last seen", when], ["userId", "User", userLink], ["productId", "Product"],
      ["priceMilliunits", "Amount", (v, p) => (v === undefined ? "" : (v / 1000).toFixed(2) + " " + (p.currency || "") + (p.quantity > 1 ? ` (${p.quantity})` : ""))],
      ["reasonCode", "Reason", (v, p) => el("span", { title: v, text: UNAPPLIED_REASONS[v] || p.reason || v })], ["bookingId", "Booking"], ["attempts", "Tries"], ["status", "Status", statusCell], ["transactionId", "Transaction"]],
    actions: (payment) => payment.status !== "open" ? [] : [
      el("button", { text: "Apply", onclick: () => decidePayment(payment, "apply") }),
      el("button", { class: "danger", text: "Refund", onclick: () => decidePayment(payment, "refund") }),
    ],
  },
  ledger: {
    title: "Credit ledger", path: "/api/admin/credits/ledger", csv: "ledger",
    filters: [
      { name: "userId", label: "User" }, { name: "productId", label: "Product" },
      { name: "creditType", label: "Credit type", type: "select", options: async () => (app.creditTypes || []).map((t) => [t, t]) },
      { name: "type", label: "Type", type: "select", options: ["purchase", "bonus", "usage", "refund", "refund_reversal", "adjustment", "debt_settlement"] },
      { name: "status", label: "Status", type: "select", options: ["completed", "refunded"] },
      { name: "from", label: "From (local day)", type: "date" }, { name: "to", label: "To (local day)", type: "date" },
    ],
    columns: [["id", "#"], ["createdAt", "At", when], ["userId", "User", userLink], ["creditType", "Credit type"], ["type", "Type"], ["amount", "Amount"],
      ["balanceAfter", "Balance"], ["status", "Status", statusCell], ["actor", "Actor"], ["reason", "Reason"], ["productId", "Product"]],
  },
  overview: { title: "Overview", custom: renderOverview },
  owed: { title: "Owed to customers", custom: renderOwed },
  departures: { title: "Departures", custom: renderDepartures },
  calendar: { title: "Calendar", custom: renderCalendar },
  inventory: { title: "Inventory", custom: renderInventory },
  products: { title: "Credit products", custom: renderProducts },
  keys: { title: "API keys", custom: renderKeys },
  subscriptions: {
    title: "Subscriptions", path: "/api/admin/subscriptions",
    filters: [{ name: "userId", label: "User" }],
    columns: [["originalTransactionId", "Original transaction"], ["productId", "Product"], ["userId", "User", userLink], ["state", "State", statusCell],
      ["environment", "Env", environmentLabel], ["expiresAt", "Expires", when], ["autoRenew", "Auto-renew", (v) => (v === undefined ? "" : v ? "on" : "off")], ["updatedAt", "Updated", when]],
  },
  cheats: {
    title: "Subscription cheats", path: "/api/admin/subscriptions/cheats", filters: [],
    columns: null,
  },
  notifications: {
    title: "Apple notifications", path: "/api/admin/notifications", filters: [], columns: null,
  },
  webhooks: {
    title: "Webhook deliveries", path: "/api/admin/webhooks/deliveries", filters: [],
    columns: [["id", "#"], ["eventId", "Event"], ["eventType", "Type"], ["attempt", "Attempt"], ["statusCode", "Status"], ["error", "Error"], ["at", "At", when]],
    actions: (delivery) => [el("button", { class: "secondary", text: "Re-send", onclick: () => resend(delivery) })],
  },
  deadLetters: {
    title: "Webhook dead letters (gave up after 30 attempts)", path: "/api/admin/webhooks/dead-letters", filters: [],
    columns: [["eventId", "Event"], ["eventType", "Type"], ["subject", "Subject"], ["attempts", "Attempts"], ["createdAt", "Created", when], ["deadAt", "Gave up", when]],
    actions: (letter) => [letter.lastDeliveryId === undefined ? null
      : el("button", { class: "secondary", text: "Re-send", onclick: () => resend({ id: letter.lastDeliveryId, eventId: letter.eventId, eventType: letter.eventType }) })],
  },
  replays: {
    title: "Refused replays", path: "/api/admin/replays", filters: [],
    columns: [["id", "#"], ["at", "At", when], ["userId", "User", userLink], ["transactionId", "Transaction"], ["existingPurchaseId", "Purchase"], ["bookingId", "Booking"], ["reason", "Reason"]],
  },
  audit: {
    title: "Audit trail", path: "/api/admin/audit", filters: [{ name: "bookingId", label: "Booking (ref or #)" }],
    columns: [["id", "#"], ["at", "At", when], ["actor", "Actor"], ["action", "Action"], ["bookingId", "Booking"], ["purchaseId", "Purchase"], ["detail", "Detail"]],
  },
};

let current = { name: null, offset: 0, query: {} };

// The app the key belongs to (GET /api/admin/app). A view listed here appears only when the app
// sells that kind of product; the others apply to every app.
let app = null;
const needs = { departures: "booking", calendar: "booking", inventory: "booking", owed: "booking", bookings: "booking", ledger: "credits", products: "credits", subscriptions: "subscription", cheats: "subscription" };

function queryString(view, values, offset, extra = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (!value) continue;
    if (name === "day") { query.set("from", dayStart(value)); query.set("to", nextDay(value)); }
    else if (view.filters.find((f) => f.name === name && f.type === "date")) query.set(name, name === "to" ? nextDay(value) : dayStart(value));
    else query.set(name, value);
  }
  for (const [name, value] of Object.entries(extra)) query.set(name, value);
  return query.toString();
}

async function show(name, query = {}) {
  const view = views[name];
  current = { name, offset: 0, query };
  for (const button of document.querySelectorAll("#tabs button")) button.classList.toggle("active", button.dataset.view === name);
  const main = $("#view");
  main.replaceChildren(el("h2", { text: view.title }));
  say("");
  if (view.custom) return view.custom(main);
  const form = el("form", { class: "filters", id: "filters" });
  for (const filter of view.filters) {
    let input;
    if (filter.type === "select") {
      input = el("select", { name: filter.name, id: "filter-" + filter.name }, el("option", { value: "", text: "any" }));
      const options = typeof filter.options === "function" ? await filter.options().catch(() => []) : filter.options.map((o) => [o, o]);
      for (const [value, label] of options) input.append(el("option", { value, text: label }));
    } else {
      input = el("input", { name: filter.name, id: "filter-" + filter.name, type: filter.type || "text", size: 14 });
    }
    if (query[filter.name]) input.value = query[filter.name];
    form.append(el("label", {}, filter.label, input));
  }
  form.append(el("button", { type: "submit", text: "Show" }));
  if (view.csv) form.append(el("button", { type: "button", class: "secondary", id: "export-csv", text: "Export CSV", onclick: () => exportCSV(view, form) }));
  form.addEventListener("submit", (event) => { event.preventDefault(); current.offset = 0; current.query = values(form); load(view); });
  main.append(form, el("div", { id: "detail" }), el("div", { class: "table-wrap" }, el("table", { id: "rows" })), el("div", { class: "pager", id: "pager" }));
  current.query = values(form);
  await load(view);
}

function values(form) {
  return Object.fromEntries([...new FormData(form).entries()].map(([k, v]) => [k, String(v).trim()]));
}

async function load(view) {
  const table = $("#rows"), pager = $("#pager");
  try {
    const page = await api("GET", view.path + "?" + queryString(view, current.query, current.offset, { limit: PAGE, offset: current.offset }));
    const items = page.items || [];
    const columns = view.columns || (items[0] ? Object.keys(items[0]).map((k) => [k, k]) : []);
    table.replaceChildren(el("tr", {}, ...columns.map(([, label]) => el("th", { text: label })), view.actions ? el("th", { text: "" }) : null));
    table.classList.add("stack");  // one card per row on a phone (admin.css)
    for (const item of items) {
      const row = el("tr", { "data-id": item.id ?? item.originalTransactionId });
      for (const [key, , format] of columns) {
        const value = format ? format(item[key], item) : item[key];
        const kind = key === "detail" || key === "reason" || key === "error" ? "wrap" : /At$|^start$|^end$|^localStart$/.test(key) ? "when" : null;
        row.append(el("td", { class: kind, "data-label": columns.find((c) => c[0] === key)[1] }, value instanceof Node ? value : String(value ?? "")));
      }
      if (view.actions) row.append(el("td", { class: "row-actions" }, el("div", { class: "actions" }, ...view.actions(item))));
      table.append(row);
    }
    if (items.length === 0) table.append(el("tr", {}, el("td", { colspan: columns.length + 1, text: "Nothing here yet." })));
    const last = Math.min(current.offset + items.length, page.total);
    pager.replaceChildren(...[el("span", { text: `${page.total ? current.offset + 1 : 0}–${last} of ${page.total}` }),
      current.offset > 0 ? el("button", { class: "secondary", text: "Previous", onclick: () => { current.offset = Math.max(0, current.offset - PAGE); load(view); } }) : null,
      last < page.total ? el("button", { class: "secondary", text: "Next", onclick: () => { current.offset += PAGE; load(view); } }) : null].filter(Boolean));
  } catch (error) {
    table.replaceChildren();
    pager.replaceChildren();
    failed(error);
  }
}

async function exportCSV(view, form) {
  try {
    const text = await api("GET", view.path + "?" + queryString(view, values(form), 0, { format: "csv" }), undefined, "text/csv");
    const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    const link = el("a", { href: url, download: `berth-${view.csv}.csv` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    say(`Exported ${Math.max(0, text.trim().split("\n").length - 1)} rows to berth-${view.csv}.csv.`);
  } catch (error) {
    failed(error);
  }
}

// The operator's home: money in, subscriptions, credits and bookings per local day, week or month,
// today's and the week's bookings per resource, and what needs action (GET /api/admin/overview).
const PALETTE = ["#0b63c5", "#1e7b34", "#b86e00", "#7b3fb3", "#b3261e", "#00838f"];
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  for (const child of children) if (child) node.append(child);
  return node;
}

// A bar chart drawn here (no external script): one bar per bucket, stacked by series.
function barChart(id, title, labels, series, format) {
  // Drawn at about the size it is shown, so that its text stays readable on a phone.
  const width = window.innerWidth < 640 ? 360 : 720, height = 220, left = 48, bottom = 28, top = 12;
  const totals = labels.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] || 0), 0));
  const max = Math.max(1, ...totals);
  const plot = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, id });
  const step = (width - left - 8) / Math.max(1, labels.length);
  for (const fraction of [0, 0.5, 1]) {
    const y = top + (height - top - bottom) * (1 - fraction);
    plot.append(svg("line", { x1: left, x2: width - 4, y1: y, y2: y, stroke: "#d8dee6" }));
    const label = svg("text", { x: left - 6, y: y + 4, "text-anchor": "end", "font-size": 11, fill: "#5b6675" });
    label.textContent = format(max * fraction);
    plot.append(label);
  }
  labels.forEach((text, i) => {
    let base = height - bottom;
    series.forEach((s, k) => {
      const value = s.values[i] || 0;
      if (value <= 0) return;
      const h = (height - top - bottom) * value / max;
      base -= h;
      const bar = svg("rect", { x: left + i * step + step * 0.15, y: base, width: Math.max(1, step * 0.7), height: h, fill: PALETTE[k % PALETTE.length] });
      const tip = svg("title");
      tip.textContent = `${text} · ${s.name}: ${format(value)}`;
      bar.append(tip);
      plot.append(bar);
    });
    const every = Math.ceil(labels.length / (width < 500 ? 5 : 8));
    if (i % every === 0) {
      const label = svg("text", { x: left + i * step + step / 2, y: height - 10, "text-anchor": "middle", "font-size": 11, fill: "#5b6675" });
      label.textContent = text.length > 7 ? text.slice(5) : text;
      plot.append(label);
    }
  });
  const legend = el("div", { class: "legend" }, ...series.map((s, k) => el("span", {}, el("span", { class: "swatch", style: { background: PALETTE[k % PALETTE.length] } }), s.name)));
  return el("div", { class: "chart" }, el("strong", { text: title }), plot, legend);
}

const amount = (milliunits, currency) => `${(milliunits / 1000).toFixed(2)} ${currency}`;

async function renderOverview(main, query = {}) {
  const interval = query.interval || "day";
  const choose = el("select", { id: "overview-interval", name: "interval" }, ...["day", "week", "month"].map((v) => el("option", { value: v, text: v === "day" ? "last 30 days" : v === "week" ? "last 12 weeks" : "last 12 months", selected: v === interval })));
  choose.addEventListener("change", () => renderOverview(main, { interval: choose.value }));
  main.replaceChildren(el("h2", { text: "Overview" }), el("form", { class: "filters" }, el("label", {}, "Period", choose)));
  let data;
  try {
    data = await api("GET", "/api/admin/overview?interval=" + interval);
  } catch (error) {
    failed(error);
    return;
  }
  const action = data.needsAction;
  const owedText = (data.owedToCustomers || []).map((t) => money(t.amountMinor, t.currency)).join(" · ");
  const actions = [
    ["owedToCustomers", "Owed to customers", "owed", owedText],
    ["unappliedPayments", "Unapplied payments", "unapplied"], ["purchasesNeedingRefund", "Purchases to refund", "purchases"],
    ["bookingsNeedingRefund", "Bookings to refund", "bookings"], ["deadLetters", "Webhook dead letters", "deadLetters"],
    ["webhookBacklog", "Webhooks waiting", "webhooks"], ["overduePlayAcknowledgements", "Play acknowledgements overdue", null],
  ];
  // What needs action first, money owed to customers before anything else; the all-clear is one line.
  const cards = el("div", { class: "cards", id: "overview-cards" });
  for (const [key, label, view, detail] of actions) {
    const count = action[key] || 0;
    if (count === 0) continue;
    cards.append(el("div", { class: "card alert", "data-key": key }, el("div", { class: "muted", text: label }),
      el("div", { class: "figure", text: detail ? `${count} · ${detail}` : String(count) }),
      view ? el("a", { href: "#", class: "user", text: "show", onclick: (event) => { event.preventDefault(); show(view); } }) : null));
  }
  if (!cards.childElementCount) cards.append(el("p", { id: "all-clear", class: "all-clear", text: "All clear: nothing needs action." }));
  const moneyIn = data.moneyIn.map((m) => amount(m.amountMilliunits, m.currency)).join(" · ") || "nothing yet";
  const unpriced = Object.entries(data.purchasesWithoutAmount || {}).map(([store, n]) => `${n} ${RAIL_NAMES[store === "stripe" ? "card" : store] || store}`);
  const unpricedCount = Object.values(data.purchasesWithoutAmount || {}).reduce((a, b) => a + b, 0);
  const refunds = data.refunds.map((m) => amount(m.amountMilliunits, m.currency)).join(" · ") || "none";
  const mrr = data.monthlyRecurringRevenue.map((m) => amount(m.amountMilliunits, m.currency)).join(" · ") || "—";
  const active = data.activeSubscriptions.reduce((sum, s) => sum + s.count, 0);
  const totals = el("div", { class: "cards", id: "overview-totals" },
    el("div", { class: "card" }, el("div", { class: "muted", text: "Money in" }), el("div", { class: "figure", text: moneyIn }),
      unpricedCount ? el("div", { class: "muted", id: "without-amount", text: `and ${unpricedCount} purchase${unpricedCount === 1 ? "" : "s"} without an amount (${unpriced.join(", ")}): the store signed no price` }) : null),
    el("div", { class: "card" }, el("div", { class: "muted", text: "Refunded" }), el("div", { class: "figure", text: refunds })),
    app.sells.includes("subscription") ? el("div", { class: "card" }, el("div", { class: "muted", text: `Active subscriptions (MRR)` }), el("div", { class: "figure", text: `${active} (${mrr})` })) : null);
  main.append(el("h3", { text: "Needs action" }), cards, el("h3", { text: `Period (${data.timeZone})` }), totals);
  // What the app's settings leave Berth unable to do (GET /api/admin/app's notices): on the home view, after the day's money.
  const notices = (app.notices || []).map((n) => el("p", { class: "setup-notice", "data-code": n.code, text: n.message }));
  if (notices.length) main.append(el("h3", { text: "Setup" }), el("div", { id: "setup-notices" }, ...notices));

  const labels = data.buckets.map((b) => b.label);
  const currencies = [...new Set(data.buckets.flatMap((b) => b.moneyIn.map((m) => m.currency)))].sort();
  for (const currency of currencies.length ? currencies : [app.currency]) {
    const stores = [...new Set(data.buckets.flatMap((b) => b.moneyIn.filter((m) => m.currency === currency).map((m) => m.store)))].sort();
    const series = (stores.length ? stores : ["app_store"]).map((store) => ({
      name: store === "stripe" ? "card" : store.replace("_", " "),
      values: data.buckets.map((b) => b.moneyIn.filter((m) => m.currency === currency && m.store === store).reduce((sum, m) => sum + m.amountMilliunits, 0) / 1000),
    }));
    main.append(barChart(`chart-money-${currency}`, `Money in (${currency}) per ${interval}`, labels, series, (v) => v.toFixed(v >= 100 ? 0 : 2)));
  }
  if (app.sells.includes("booking")) {
    main.append(barChart("chart-bookings", `Bookings made per ${interval}`, labels, [{ name: "paid", values: data.buckets.map((b) => b.bookingsMade) }, { name: "unpaid", values: data.buckets.map((b) => b.bookingsUnpaid) }], (v) => v.toFixed(0)));
    for (const [title, rows, id] of [["Today", data.bookingsToday, "overview-today"], ["Next 7 days", data.bookingsNext7Days, "overview-week"]]) {
      const table = el("table", { id }, el("tr", {}, ...["Resource", "Confirmed", "Unpaid holds", "Seats", "Occupancy"].map((text) => el("th", { text }))));
      for (const r of rows) {
        const share = r.occupancy === undefined ? null : Math.round(r.occupancy * 100);
        table.append(el("tr", { "data-id": r.resourceId }, el("td", { text: r.name }), el("td", { text: String(r.confirmed) }), el("td", { text: String(r.pending) }),
          el("td", { text: String(r.seats) }), el("td", {}, share === null ? "" : el("div", { class: "bar", title: `${share} %` }, el("span", { style: { width: `${share}%` } })), share === null ? "" : ` ${share} %`)));
      }
      main.append(el("h3", { text: title }), el("div", { class: "table-wrap" }, table));
    }
  }
  if (app.sells.includes("subscription")) {
    main.append(barChart("chart-subscriptions", `Subscriptions per ${interval}`, labels, [
      { name: "new", values: data.buckets.map((b) => b.newSubscriptions) }, { name: "ended", values: data.buckets.map((b) => b.endedSubscriptions) }], (v) => v.toFixed(0)));
  }
  if (app.sells.includes("credits")) {
    main.append(barChart("chart-credits", `Credits per ${interval}`, labels, [
      { name: "packs sold", values: data.buckets.map((b) => b.creditPacksSold) }, { name: "credits spent", values: data.buckets.map((b) => b.creditsSpent) }], (v) => v.toFixed(0)));
  }
}

// Money owed to customers (GET /api/admin/owed): one card per booking and rail, the amount first;
// a card payment is refunded from here, a store-paid one closed once the customer was told.
async function renderOwed(main, query = {}) {
  const status = query.status || "open";
  const choose = el("select", { id: "owed-status", name: "status" }, el("option", { value: "open", text: "owed now", selected: status === "open" }),
    el("option", { value: "resolved", text: "closed", selected: status === "resolved" }));
  choose.addEventListener("change", () => renderOwed(main, { status: choose.value }));
  main.replaceChildren(el("h2", { text: "Owed to customers" }), el("form", { class: "filters" }, el("label", {}, "Show", choose)), el("div", { id: "detail" }));
  let data;
  try {
    data = await api("GET", "/api/admin/owed?status=" + status);
  } catch (error) {
    failed(error);
    return;
  }
  const reasons = { cancelled: "cancelled", hold_lapsed: "hold lapsed after a part payment", slot_lost: "paid after the slot was taken", not_honoured: "paid twice" };
  if (data.totals.length) main.append(el("p", { id: "owed-totals", class: "figure-line", text: data.totals.map((t) => `${t.count} · ${money(t.amountMinor, t.currency)}`).join("   ") }));
  const list = el("div", { class: "owed-list", id: "owed-list" });
  for (const item of data.items) {
    const actions = el("div", { class: "actions" });
    if (!item.resolution) {
      if (item.rail === "card") {
        actions.append(el("button", { class: "danger refund", text: "Refund", onclick: () => askRefund({ id: item.bookingId, reference: item.reference, resourceId: item.resourceId,
          resourceName: item.resourceName, start: item.start, localStart: item.localStart, price: item.amountMinor, currency: item.currency, paidVia: ["card"] }) }));
      } else {
        for (const [how, label] of [["customer_told", "Customer told"], ["credited", "Credited"], ["refunded_elsewhere", "Refunded elsewhere"]]) {
          actions.append(el("button", { class: how === "customer_told" ? null : "secondary", "data-how": how, text: label, onclick: () => resolveOwed(item, how) }));
        }
      }
    }
    list.append(el("div", { class: "owed card", "data-booking": String(item.bookingId), "data-rail": item.rail },
      el("div", { class: "owed-head" }, el("span", { class: "figure", text: money(item.amountMinor, item.currency) }), el("span", { class: "ref", text: item.reference }),
        el("span", { class: "rail", text: RAIL_NAMES[item.rail] || item.rail })),
      el("div", { text: `${item.resourceName || item.resourceId} · ${tripWhen(item)}` }),
      el("div", {}, "Customer ", userLink(item.userId), ` · ${reasons[item.reason] || item.reason}${item.statusReason ? ` (${item.statusReason})` : ""}`),
      item.amountFromBooking ? el("div", { class: "muted", text: "The store signed no price: the amount is the booking's price for what was paid." }) : null,
      item.resolution ? el("div", { class: "muted", text: `Closed: ${item.resolution.how.replace("_", " ")}${item.resolution.note ? ` (${item.resolution.note})` : ""}, ${localStamp(item.resolution.at)}` })
        : el("p", { class: "guidance", text: item.guidance }),
      actions));
  }
  main.append(data.items.length ? list : el("p", { id: "owed-empty", text: status === "open" ? "Nobody is owed money." : "Nothing closed yet." }));
}

// The day's departures (GET /api/admin/manifest): per boat and slot, who sails, seats, paid or not;
// prints one boat per A4 page.
function todayLocal() {
  const zone = (app && app.timeZone) || "UTC";
  const parts = Object.fromEntries(new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" })
    .formatToParts(new Date()).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day}`;
}

async function renderDepartures(main, query = {}) {
  const date = query.date || todayLocal();
  const picker = el("input", { type: "date", id: "manifest-date", name: "date", value: date });
  picker.addEventListener("change", () => renderDepartures(main, { date: picker.value }));
  const csv = el("button", { type: "button", class: "secondary", text: "Export CSV", onclick: async () => {
    try {
      const text = await api("GET", `/api/admin/manifest?date=${date}&format=csv`, undefined, "text/csv");
      const link = el("a", { href: URL.createObjectURL(new Blob([text], { type: "text/csv" })), download: `manifest-${date}.csv` });
      document.body.append(link); link.click(); link.remove();
    } catch (error) { failed(error); }
  } });
  const print = el("button", { type: "button", class: "secondary", text: "Print", onclick: () => window.print() });
  main.replaceChildren(el("h2", { text: "Departures" }), el("form", { class: "filters" }, el("label", {}, "Day (local)", picker), csv, print));
  let data;
  try {
    data = await api("GET", `/api/admin/manifest?date=${date}`);
  } catch (error) {
    failed(error);
    return;
  }
  const payments = { paid: "paid", part_paid: "part paid", unpaid: "unpaid" };
  for (const boat of data.resources) {
    const section = el("section", { class: "manifest-resource", "data-resource": boat.resourceId },
      el("h3", { text: `${boat.name} · ${date} · ${boat.seats} ${boat.kind === "rental" ? "booked" : "seats"}` }));
    if (!boat.slots.length) section.append(el("p", { class: "muted", text: "No departures." }));
    for (const slot of boat.slots) {
      const table = el("table", { class: "stack manifest" }, el("tr", {}, ...["Ref", "Customer", "Seats", "Paid", "Status"].map((t) => el("th", { text: t }))));
      for (const b of slot.bookings) {
        table.append(el("tr", { "data-id": String(b.bookingId) }, el("td", { "data-label": "Ref" }, el("span", { class: "ref", text: b.reference })),
          el("td", { "data-label": "Customer", text: b.userId }), el("td", { "data-label": "Seats", text: String(b.seats) }),
          el("td", { "data-label": "Paid", class: "payment-" + b.payment,
            text: `${payments[b.payment]}${b.amountPaid ? " · " + money(b.amountPaid, b.currency) : ""}${b.paidVia.length ? " · " + b.paidVia.map((r) => RAIL_NAMES[r] || r).join(", ") : ""}` }),
          el("td", { "data-label": "Status", text: b.status.replaceAll("_", " ") })));
      }
      section.append(el("h4", { text: `${tripWhen({ localStart: slot.localStart, localEnd: slot.localEnd, start: slot.start, end: slot.start, resourceKind: boat.kind })} · ${slot.seats} ${slot.seats === 1 ? "seat" : "seats"}` }),
        el("div", { class: "table-wrap" }, table));
    }
    main.append(section);
  }
}

function resolveOwed(item, how) {
  const detail = $("#detail");
  const note = el("input", { id: "owed-note", name: "note", size: 40, placeholder: "what you told them (optional)" });
  const form = el("form", { class: "panel", id: "owed-form" },
    el("strong", { text: `${RAIL_NAMES[item.rail]}: ${money(item.amountMinor, item.currency)} owed to ${item.userId} for ${item.reference}` }),
    el("label", {}, "Note", note),
    el("button", { type: "submit", id: "owed-submit", text: how === "customer_told" ? "The customer was told" : how === "credited" ? "The customer was credited" : "Refunded elsewhere" }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("POST", `/api/admin/owed/${item.bookingId}/resolve`, note.value.trim() ? { how, note: note.value.trim() } : { how });
      await show("owed");
      say(`Closed: ${money(item.amountMinor, item.currency)} of ${item.reference} (${how.replace("_", " ")}).`);
    } catch (error) {
      failed(error);
    }
  });
  detail.replaceChildren(form);
  note.focus();
}

// A trip's local time: a rental by its days ("2 Dec, full day", "2–4 Dec"), an experience by its hours ("17:30–19:30").
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
function tripWhen(b) {
  const parse = (text) => /^(\d{4})-(\d\d)-(\d\d)T(\d\d:\d\d):\d\d([+-]\d\d:\d\d)$/.exec(text || "");
  const s = parse(b.localStart), e = parse(b.localEnd);
  if (!s || !e) return localTime(b.localStart);
  const day = (m) => `${Number(m[3])} ${MONTHS[Number(m[2]) - 1]}`;
  const offset = s[5] === "+00:00" ? "UTC" : s[5];
  if (b.resourceKind === "rental" || (s[4] === "00:00" && e[4] === "00:00")) {
    const sameDay = s[1] === e[1] && s[2] === e[2] && s[3] === e[3];
    const endsAtMidnight = e[4] === "00:00";
    if (sameDay || (endsAtMidnight && Date.parse(b.end) - Date.parse(b.start) <= 86400000)) return `${day(s)} ${s[1]}, ${s[4] === "00:00" ? "full day" : `${s[4]}–${e[4]}`}`;
    return `${day(s)}–${day(e)} ${e[1]}`;
  }
  return `${day(s)} ${s[1]}, ${s[4]}–${e[4]} (${offset})`;
}

// An instant in the app's zone when the page knows it, else UTC: "2 Dec 2026 09:14 (+01:00)".
function localStamp(iso) {
  if (!iso) return "";
  const zone = app && app.timeZone;
  if (!zone) return utcText(iso);
  try {
    const parts = Object.fromEntries(new Intl.DateTimeFormat("en-GB", { timeZone: zone, year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
      hourCycle: "h23", timeZoneName: "longOffset" }).formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
    return `${parts.day} ${parts.month} ${parts.year} ${parts.hour}:${parts.minute} (${(parts.timeZoneName || "").replace("GMT", "") || "UTC"})`;
  } catch {
    return utcText(iso);
  }
}

// Search (the header's box): a booking reference or id, a transaction or order number, a PaymentIntent, a user.
async function showSearch(text) {
  current = { name: "search", offset: 0, query: {} };
  for (const button of document.querySelectorAll("#tabs button")) button.classList.remove("active");
  const main = $("#view");
  main.replaceChildren(el("h2", { text: `Search: ${text}` }));
  say("");
  try {
    const result = await api("GET", "/api/admin/search?q=" + encodeURIComponent(text));
    const list = el("table", { id: "search-results", class: "stack" }, el("tr", {}, ...["Found", "When", "What", "Amount", "Customer", ""].map((t) => el("th", { text: t }))));
    for (const hit of result.items) {
      list.append(el("tr", { "data-kind": hit.kind, "data-id": hit.id }, el("td", { "data-label": "Found", text: `${hit.kind.replace("_", " ")} (${hit.matched})` }),
        el("td", { "data-label": "When", class: "nowrap hit-when", text: hit.at ? when(hit.at) : "" }),
        el("td", { "data-label": "What", class: "wrap", text: hit.summary }), el("td", { "data-label": "Amount", class: "nowrap hit-amount", text: hit.amount || "" }),
        el("td", { "data-label": "Customer" }, userLink(hit.userId)),
        el("td", {}, el("div", { class: "actions" },
          hit.userId ? el("button", { class: "secondary", text: "Timeline", onclick: () => showTimeline(hit.userId) }) : null,
          hit.bookingId ? el("button", { class: "secondary", text: "Booking audit", onclick: () => showAudit({ id: hit.bookingId }) }) : null))));
    }
    const lookup = { found: "Apple found this order.", found_not_recorded: "Apple knows this order, but Berth has no purchase of it.", not_found: "Apple does not know this order id.",
      unavailable: "Apple's order lookup did not answer; try again.", not_configured: "Apple order ids need the App Store Server API key." }[result.appleOrderLookup];
    main.append(el("div", { id: "detail" }), result.items.length ? el("div", { class: "table-wrap" }, list) : el("p", { id: "search-empty", text: "Nothing of this app matches." }));
    if (lookup) main.append(el("p", { class: "muted", id: "apple-lookup", text: lookup }));
  } catch (error) {
    failed(error);
  }
}

// A customer's whole history, newest first (GET /api/admin/customers/{userId}/timeline).
async function showTimeline(userId) {
  current = { name: "timeline", offset: 0, query: {} };
  for (const button of document.querySelectorAll("#tabs button")) button.classList.remove("active");
  const main = $("#view");
  main.replaceChildren(el("h2", { text: `Customer ${userId}` }));
  say("");
  try {
    const result = await api("GET", `/api/admin/customers/${encodeURIComponent(userId)}/timeline`);
    const c = result.customer;
    const sums = (list) => (list.length ? list.map((a) => amount(a.amountMilliunits, a.currency)).join(" + ") : "nothing");
    main.append(el("dl", { class: "customer-header", id: "customer-header" },
      el("div", {}, el("dt", { text: "Paid" }), el("dd", { id: "customer-paid", text: sums(c.paid) + (c.purchasesWithoutAmount ? ` (+ ${c.purchasesWithoutAmount} without an amount)` : "") })),
      el("div", {}, el("dt", { text: "Refunded" }), el("dd", { id: "customer-refunded", text: sums(c.refunded) })),
      el("div", {}, el("dt", { text: "Bookings" }), el("dd", { text: String(c.bookings) })),
      el("div", {}, el("dt", { text: "Purchases" }), el("dd", { text: String(c.purchases) })),
      el("div", {}, el("dt", { text: "First seen" }), el("dd", { text: c.firstSeen ? when(c.firstSeen) : "—" })),
      el("div", {}, el("dt", { text: "Paid through" }), el("dd", { text: c.stores.length ? c.stores.map((s) => RAIL_NAMES[s === "stripe" ? "card" : s] || s).join(", ") : "—" }))));
    const list = el("ol", { class: "timeline", id: "timeline" });
    for (const entry of result.items) {
      const facts = Object.entries(entry.detail).filter(([, v]) => v !== "").map(([k, v]) => `${k}: ${v}`).join(" · ");
      list.append(el("li", { "data-kind": entry.kind }, el("span", { class: "when", text: when(entry.at) }), el("span", { class: "kind", text: entry.kind.replace("_", " ") }),
        el("span", { text: entry.summary }), facts ? el("details", {}, el("summary", { text: "details" }), facts) : null));
    }
    main.append(result.items.length ? list : el("p", { text: "Nothing recorded for this customer." }));
  } catch (error) {
    failed(error);
  }
}

// Confirm needs a reason (it overrides payment); cancel takes an optional one.
function askReason(booking, action) {
  const detail = $("#detail");
  const reason = el("input", { id: "reason", name: "reason", size: 40, required: action === "confirm", placeholder: action === "confirm" ? "why (required)" : "why (optional)" });
  const paidNote = action === "cancel" && booking.paidVia
    ? el("p", { id: "cancel-paid", class: "alert-note", text: `Paid: ${money(booking.amountPaid, booking.currency)} through ${booking.paidVia.map((r) => RAIL_NAMES[r] || r).join(" and ")}. `
      + (booking.paidVia.includes("card") ? "Cancelling leaves it owed to the customer until you refund it (Owed to customers)." : "Cancelling leaves it owed to the customer: the store refunds it; Owed to customers says what to tell them.") })
    : null;
  const partNote = action === "confirm" && booking.paidQuantity > 0 && booking.paidQuantity < booking.requiredQuantity
    ? el("p", { id: "confirm-part-paid", class: "alert-note", text: `Paid ${booking.paidQuantity} of ${booking.requiredQuantity}`
      + `${booking.amountPaid ? ` (${money(booking.amountPaid, booking.currency)} of ${money(booking.price, booking.currency)})` : ""}. Confirming gives the whole booking without the rest being paid.` })
    : null;
  const form = el("form", { class: "panel", id: "action-form" },
    el("strong", { text: `${action === "confirm" ? "Confirm" : "Cancel"} booking ${booking.reference || "#" + booking.id} (${booking.resourceName || booking.resourceId}, ${tripWhen(booking)})` }),
    paidNote, partNote,
    el("label", {}, "Reason", reason),
    el("button", { type: "submit", id: "action-submit", class: action === "cancel" ? "danger" : null, text: action === "confirm" ? "Confirm booking" : "Cancel booking" }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = reason.value.trim();
    try {
      const result = await api("POST", `/api/admin/bookings/${booking.id}/${action}`, action === "confirm" || text ? { reason: text } : undefined);
      detail.replaceChildren();
      say(`Booking ${booking.reference || ""} #${booking.id} is ${result.booking.status}.`);
      await load(views.bookings);
    } catch (error) {
      failed(error);
    }
  });
  detail.replaceChildren(form);
  reason.focus();
}

// Refund a booking's card payment: all that is left, or an amount in minor units (a fee kept).
function askRefund(booking) {
  const detail = $("#detail");
  if (booking.paidVia && !booking.paidVia.includes("card")) {
    // The stores refund their own purchases: the store's path, never a card form.
    const rail = booking.paidVia[0];
    detail.replaceChildren(el("div", { class: "panel", id: "store-refund" },
      el("strong", { text: `Booking ${booking.reference} was paid through ${RAIL_NAMES[rail] || rail}` }),
      el("p", { text: STORE_GUIDANCE[rail] || "" }),
      el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() })));
    return;
  }
  const reason = el("input", { id: "refund-reason", name: "reason", size: 40, required: true, placeholder: "why (required)" });
  const amount = el("input", { id: "refund-amount", name: "amountMinor", size: 10, inputmode: "numeric", placeholder: "all that is left" });
  const form = el("form", { class: "panel", id: "refund-form" },
    el("strong", { text: `Refund booking #${booking.id} (${booking.resourceName || booking.resourceId}, ${tripWhen(booking)}, paid ${money(booking.price, booking.currency)}) by card` }),
    el("label", {}, "Reason", reason),
    el("label", {}, `Amount (minor units of ${booking.currency})`, amount),
    el("button", { type: "submit", id: "refund-submit", class: "danger", text: "Refund" }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { reason: reason.value.trim() };
    if (amount.value.trim()) {
      const minor = Number(amount.value.trim());
      if (!Number.isInteger(minor) || minor < 1) { say("The amount is a whole number of minor units (cents), at least 1.", "error"); return; }
      body.amountMinor = minor;
    }
    try {
      const result = await api("POST", `/api/admin/bookings/${booking.id}/refund`, body);
      detail.replaceChildren();
      if (current.name === "owed") await show("owed");
      say(`Booking ${booking.reference || "#" + booking.id}: refund of ${money(result.refund.amount, result.payment.currency)} ${result.refund.status}; the payment is ${result.payment.displayStatus}, the booking ${result.booking.status}.`);
      if (current.name !== "owed") await load(views.bookings);
    } catch (error) {
      failed(error);
    }
  });
  detail.replaceChildren(form);
  reason.focus();
}

// A booking's card payments and their refunds: who asked, why, what the provider answered.
async function showPayments(booking) {
  const detail = $("#detail");
  try {
    const list = await api("GET", `/api/admin/bookings/${booking.id}/payments`);
    const table = el("table", {}, el("tr", {}, ...["Payment", "Status", "Amount", "Refunded", "Dispute", "Refunds"].map((text) => el("th", { text }))));
    for (const payment of list.payments) {
      const refunds = payment.refunds.map((r) => `${money(r.amount, payment.currency)} ${r.status} (${r.initiatedBy}: ${r.reason}${r.lastError ? "; " + r.lastError : ""})`).join("; ");
      table.append(el("tr", {}, el("td", { text: payment.paymentIntentId || `#${payment.id}` }), el("td", {}, statusCell(payment.displayStatus)),
        el("td", { text: money(payment.amount, payment.currency) }), el("td", { text: money(payment.amountRefunded, payment.currency) }),
        el("td", { text: payment.disputeStatus || "" }), el("td", { class: "wrap", text: refunds })));
    }
    detail.replaceChildren(el("div", { class: "panel", id: "payments-panel" }, el("strong", { text: `Card payments of booking #${booking.id}` }),
      list.payments.length ? el("div", { class: "table-wrap" }, table) : el("p", { text: "No card payment." }),
      el("button", { class: "secondary", text: "Close", onclick: () => detail.replaceChildren() })));
  } catch (error) {
    failed(error);
  }
}

async function showAudit(booking) {
  const detail = $("#detail");
  try {
    const page = await api("GET", `/api/admin/audit?bookingId=${booking.id}&limit=100`);
    const table = el("table", {}, el("tr", {}, el("th", { text: "At" }), el("th", { text: "Actor" }), el("th", { text: "Action" }), el("th", { text: "Detail" })));
    for (const entry of page.items) table.append(el("tr", {}, el("td", { text: when(entry.at) }), el("td", { text: entry.actor }), el("td", { text: entry.action }), el("td", { class: "wrap", text: entry.detail || "" })));
    detail.replaceChildren(el("div", { class: "panel", id: "audit-panel" }, el("strong", { text: `Audit trail of booking #${booking.id}` }),
      el("div", { class: "table-wrap" }, table), el("button", { class: "secondary", text: "Close", onclick: () => detail.replaceChildren() })));
  } catch (error) {
    failed(error);
  }
}

// Apply a kept payment (to a booking and/or another user) or mark it for a refund (a note is required).
function decidePayment(payment, action) {
  const detail = $("#detail");
  const fields = action === "apply"
    ? [el("label", {}, "Booking (ref or #)", el("input", { id: "apply-booking", name: "bookingId", size: 10 })),
       el("label", {}, "User", el("input", { id: "apply-user", name: "userId", size: 14, placeholder: payment.userId }))]
    : [el("label", {}, "Note", el("input", { id: "refund-note", name: "note", size: 40, required: true, placeholder: "why (required)" }))];
  const amount = payment.priceMilliunits === undefined ? "" : ` ${(payment.priceMilliunits / 1000).toFixed(2)} ${payment.currency || ""}`;
  const form = el("form", { class: "panel", id: "payment-form" },
    el("strong", { text: `${action === "apply" ? "Apply" : "Refund"} payment #${payment.id} (${payment.productId}${amount}, ${payment.reasonCode})` }),
    ...fields,
    el("button", { type: "submit", id: "payment-submit", class: action === "refund" ? "danger" : null, text: action === "apply" ? "Apply payment" : "Mark for refund" }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = values(form);
    const body = action === "apply"
      ? Object.fromEntries([["bookingId", data.bookingId ? (/^\d+$/.test(data.bookingId) ? Number(data.bookingId) : data.bookingId) : undefined],
        ["userId", data.userId || undefined]].filter(([, v]) => v !== undefined))
      : { note: data.note };
    try {
      const result = await api("POST", `/api/admin/unapplied-payments/${payment.id}/${action}`, body);
      detail.replaceChildren();
      say(`Payment #${payment.id} is ${result.unappliedPayment.status}.`);
      await load(views.unapplied);
    } catch (error) {
      failed(error);
    }
  });
  detail.replaceChildren(form);
}

async function resend(delivery) {
  try {
    await api("POST", `/api/admin/webhooks/deliveries/${delivery.id}/resend`);
    say(`Event ${delivery.eventId} (${delivery.eventType}) is queued again.`);
  } catch (error) {
    failed(error);
  }
}

async function renderProducts(main) {
  const field = (name, label, type = "text", size = 10) => el("label", {}, label, el("input", { name, id: "product-" + name, type, size }));
  const form = el("form", { id: "product-form" }, field("productId", "Product id", "text", 28), field("creditType", "Credit type"), field("credits", "Credits", "number", 6),
    field("title", "Title", "text", 20), field("priceMinor", "Price (minor units)", "number", 8), field("displayOrder", "Order", "number", 4),
    el("label", {}, "Active", el("select", { name: "active", id: "product-active" }, el("option", { value: "true", text: "yes" }), el("option", { value: "false", text: "no" }))),
    el("button", { type: "submit", id: "product-save", text: "Create" }),
    el("button", { type: "button", class: "secondary", text: "New", onclick: () => { form.reset(); form.dataset.editing = ""; form.elements.productId.disabled = false; $("#product-save").textContent = "Create"; } }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const v = values(form), editing = form.dataset.editing;
    const body = { title: v.title || undefined, creditType: v.creditType || undefined, credits: v.credits ? Number(v.credits) : undefined,
      priceMinor: v.priceMinor ? Number(v.priceMinor) : undefined, displayOrder: v.displayOrder ? Number(v.displayOrder) : undefined, active: v.active === "true" };
    try {
      if (editing) await api("PATCH", "/api/admin/credit-products/" + encodeURIComponent(editing), body);
      else await api("POST", "/api/admin/credit-products", { productId: v.productId, ...body });
      say(`Saved ${editing || v.productId}.`);
      await renderProducts(main);
    } catch (error) {
      failed(error);
    }
  });
  const table = el("table", { id: "rows" });
  main.replaceChildren(el("h2", { text: "Credit products" }), el("div", { class: "panel" }, form), el("div", { class: "table-wrap" }, table));
  try {
    const { products } = await api("GET", "/api/admin/credit-products");
    table.append(el("tr", {}, ...["Order", "Product", "Title", "Credit type", "Credits", "Price", "Active", ""].map((t) => el("th", { text: t }))));
    for (const p of products) {
      table.append(el("tr", { "data-id": p.id }, el("td", { text: String(p.displayOrder ?? "") }), el("td", { text: p.id }), el("td", { text: p.title }),
        el("td", { text: p.creditType || "" }), el("td", { text: String(p.credits ?? "") }), el("td", { text: money(p.price, p.currency) }),
        el("td", { text: p.active === false ? "no" : "yes" }),
        el("td", {}, el("div", { class: "actions" },
          el("button", { class: "secondary", text: "Edit", onclick: () => {
            form.dataset.editing = p.id;
            for (const [name, value] of Object.entries({ productId: p.id, creditType: p.creditType, credits: p.credits, title: p.title, priceMinor: p.price, displayOrder: p.displayOrder, active: String(p.active !== false) })) {
              form.elements[name].value = value ?? "";
            }
            form.elements.productId.disabled = true;
            $("#product-save").textContent = "Save " + p.id;
          } }),
          el("button", { class: p.active === false ? null : "danger", text: p.active === false ? "Enable" : "Disable", onclick: async () => {
            try { await api("PATCH", "/api/admin/credit-products/" + encodeURIComponent(p.id), { active: p.active === false }); await renderProducts(main); say(`${p.id} is ${p.active === false ? "enabled" : "disabled"}.`); }
            catch (error) { failed(error); }
          } })))));
    }
  } catch (error) {
    failed(error);
  }
}

// API keys: client keys go into the app, server keys into its backend, admin keys to operators.
// A new key's secret is shown once, here, and never again.
async function renderKeys(main) {
  const form = el("form", { id: "key-form" },
    el("label", {}, "Role", el("select", { name: "role", id: "key-role" },
      el("option", { value: "client", text: "client (ship in the app)" }), el("option", { value: "server", text: "server (your backend)" }),
      el("option", { value: "admin", text: "admin (operators)" }))),
    el("label", {}, "Name", el("input", { name: "name", id: "key-name", size: 24, maxlength: 100 })),
    el("button", { type: "submit", id: "key-create", text: "Create key" }));
  const secret = el("div", { id: "key-secret" });
  const table = el("table", { id: "rows" });
  main.replaceChildren(el("h2", { text: "API keys" }), el("div", { class: "panel" }, form), secret, el("div", { class: "table-wrap" }, table));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const v = values(form);
    try {
      const issued = await api("POST", "/api/admin/keys", { role: v.role, name: v.name || undefined });
      await renderKeys(main);
      showSecretIn(main, issued, `New ${issued.key.role} key ${issued.key.id}`);
    } catch (error) { failed(error); }
  });
  function showSecretIn(root, issued, what) {
    const box = root.querySelector("#key-secret");
    box.replaceChildren(el("div", { class: "panel" }, el("p", { text: `${what}: copy it now, it is not shown again.` }),
      el("code", { id: "key-secret-value", class: "wrap", text: issued.secret })));
  }
  try {
    const { keys } = await api("GET", "/api/admin/keys");
    table.append(el("tr", {}, ...["#", "Role", "Name", "Key", "Status", "Created", "Expires", "Last used", "Scopes", ""].map((t) => el("th", { text: t }))));
    for (const k of keys) {
      const live = k.status === "active" || k.status === "expiring";
      table.append(el("tr", { "data-id": String(k.id) }, el("td", { text: String(k.id) }), el("td", { text: k.role }), el("td", { text: k.name }),
        el("td", { text: k.hint }), el("td", {}, statusCell(k.status)), el("td", { text: when(k.createdAt) }), el("td", { text: when(k.expiresAt) }),
        el("td", { text: k.lastUsedAt ? when(k.lastUsedAt) : "never" }), el("td", { class: "wrap", text: k.scopes.join(", ") }),
        el("td", {}, el("div", { class: "actions" },
          live ? el("button", { class: "secondary", text: "Rotate", onclick: async () => {
            if (!confirm(`Rotate key ${k.id}? The old key keeps working for 24 hours.`)) return;
            try { const issued = await api("POST", `/api/admin/keys/${k.id}/rotate`, {}); await renderKeys(main); showSecretIn(main, issued, `Key ${issued.key.id} replaces key ${k.id}`); }
            catch (error) { failed(error); }
          } }) : null,
          k.status !== "revoked" ? el("button", { class: "danger", text: "Revoke", onclick: async () => {
            if (!confirm(`Revoke key ${k.id}? Every instance refuses it within seconds.`)) return;
            try { await api("POST", `/api/admin/keys/${k.id}/revoke`); await renderKeys(main); say(`Key ${k.id} is revoked.`); }
            catch (error) { failed(error); }
          } }) : null))));
    }
  } catch (error) {
    failed(error);
  }
}

// The season: a week per resource (bookings by day, closures shown, a booking opens its actions),
// closing dates for weather or maintenance, and the inventory (boats, prices, seasons).
const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
function addDays(day, count) {
  const d = new Date(day + "T12:00:00Z");
  d.setUTCDate(d.getUTCDate() + count);
  return d.toISOString().slice(0, 10);
}
function mondayOf(day) {
  const index = (new Date(day + "T12:00:00Z").getUTCDay() + 6) % 7;
  return addDays(day, -index);
}
const dayLabel = (day) => `${WEEKDAYS[(new Date(day + "T12:00:00Z").getUTCDay() + 6) % 7]} ${Number(day.slice(8))} ${MONTHS[Number(day.slice(5, 7)) - 1]}`;
// A local day's instants in the app's zone: [midnight, next midnight).
const localDayOf = (iso) => {
  const zone = (app && app.timeZone) || "UTC";
  const parts = Object.fromEntries(new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" })
    .formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day}`;
};
// Money typed by an operator ("95", "95.50") in minor units of the app's currency; NaN when it is not an amount.
function minorUnits(text) {
  const digits = FRACTION_DIGITS[app.currency] ?? 2;
  if (!/^\d+([.,]\d+)?$/.test(text.trim())) return NaN;
  const [whole, fraction = ""] = text.trim().replace(",", ".").split(".");
  if (fraction.length > digits) return NaN;
  return Number(whole) * 10 ** digits + Number((fraction + "0".repeat(digits)).slice(0, digits) || 0);
}
const resourcePrice = (r) => money(r.kind === "rental" ? r.pricePerDayMinor : r.pricePerSeatMinor, app.currency) + (r.kind === "rental" ? " a day" : " a seat");

async function renderCalendar(main, query = {}) {
  let inventory;
  try {
    inventory = (await api("GET", "/api/admin/resources")).resources.map((i) => i.resource).filter((r) => !r.retired);
  } catch (error) { failed(error); return; }
  if (!inventory.length) { main.append(el("p", { class: "muted", text: "No resources yet: add one under Inventory." })); return; }
  const resourceId = query.resourceId && inventory.some((r) => r.id === query.resourceId) ? query.resourceId : inventory[0].id;
  const resource = inventory.find((r) => r.id === resourceId);
  const week = mondayOf(query.week || todayLocal());
  const redraw = (changes) => renderCalendar(main, { resourceId, week, ...changes });
  const picker = el("select", { id: "calendar-resource", name: "resourceId" }, ...inventory.map((r) => el("option", { value: r.id, text: r.name, selected: r.id === resourceId })));
  picker.addEventListener("change", () => redraw({ resourceId: picker.value }));
  const weekInput = el("input", { type: "date", id: "calendar-week", name: "week", value: week });
  weekInput.addEventListener("change", () => weekInput.value && redraw({ week: weekInput.value }));
  main.replaceChildren(el("h2", { text: "Calendar" }),
    el("form", { class: "filters", id: "calendar-controls" }, el("label", {}, "Resource", picker), el("label", {}, "Week of", weekInput),
      el("button", { type: "button", class: "secondary", id: "calendar-previous", text: "← Week", onclick: () => redraw({ week: addDays(week, -7) }) }),
      el("button", { type: "button", class: "secondary", id: "calendar-next", text: "Week →", onclick: () => redraw({ week: addDays(week, 7) }) }),
      el("button", { type: "button", class: "danger", id: "close-dates", text: "Close dates…", onclick: () => askClosure(resource, week, redraw) })),
    el("div", { id: "detail" }));
  let bookings, closures;
  try {
    const from = dayStart(week), to = dayStart(addDays(week, 7));
    const page = await api("GET", `/api/admin/bookings?resourceId=${encodeURIComponent(resourceId)}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&limit=200`);
    if (page.total > page.items.length) say(`This week has ${page.total} bookings of ${resource.name}; the calendar shows the first ${page.items.length} (Bookings lists them all).`, "error");
    bookings = page.items.filter((b) => b.status === "confirmed" || (b.status === "pending_payment" && !b.holdLapsed));
    closures = (await api("GET", "/api/admin/closures")).closures.filter((c) => (!c.resourceId || c.resourceId === resourceId) && c.from < to && c.to > from);
  } catch (error) { failed(error); return; }
  const grid = el("div", { class: "week", id: "calendar-week-grid" });
  for (let index = 0; index < 7; index += 1) {
    const day = addDays(week, index), from = Date.parse(dayStart(day)), to = Date.parse(dayStart(addDays(day, 1)));
    const cell = el("section", { class: "day" + (day === todayLocal() ? " today" : ""), "data-day": day }, el("h3", { text: dayLabel(day) }));
    for (const closure of closures.filter((c) => Date.parse(c.from) < to && Date.parse(c.to) > from)) {
      cell.append(el("div", { class: "closure", "data-closure": String(closure.id) },
        el("strong", { text: "Closed" }), ` ${closure.reason}${closure.resourceId ? "" : " (every resource)"}`,
        el("div", { class: "actions" },
          el("button", { class: "danger", text: "Resolve…", onclick: () => showClosure(closure, redraw) }),
          el("button", { class: "secondary", text: "Reopen", onclick: async () => {
            try { await api("DELETE", `/api/admin/closures/${closure.id}`); say(`Reopened: ${closure.reason}.`); redraw({}); } catch (error) { failed(error); }
          } }))));
    }
    const sailing = bookings.filter((b) => Date.parse(b.start) < to && Date.parse(b.end) > from);
    for (const b of sailing) {
      cell.append(el("button", { class: "cal-booking status-" + b.status, "data-id": String(b.id), onclick: () => showBookingActions(b, resource, redraw),
        text: `${calendarTime(b, day, resource)} · ${b.reference} · ${b.userId}${resource.kind === "experience" ? ` · ${b.seats} ${b.seats === 1 ? "seat" : "seats"}` : ""} · ${paidWords(b)}` }));
    }
    if (!sailing.length && !cell.querySelector(".closure")) cell.append(el("p", { class: "muted", text: "Free" }));
    grid.append(cell);
  }
  main.append(el("p", { class: "muted", text: `${resource.name}: ${resourcePrice(resource)}${resource.kind === "rental" ? `, ${resource.units || 1} ${resource.units > 1 ? "boats" : "boat"}` : `, ${resource.seatsPerSlot} seats at ${(resource.slotTimes || []).join(", ")}`}` }), grid);
}

// When a booking sails on `day`: a trip's start and end; a rental's hours that day (a whole day, or from or until).
function calendarTime(b, day, resource) {
  const startsToday = localDayOf(b.start) === day, endsToday = localDayOf(new Date(Date.parse(b.end) - 1).toISOString()) === day;
  const from = b.localStart.slice(11, 16), until = b.localEnd.slice(11, 16);
  if (resource.kind === "experience" || (startsToday && endsToday)) return from === "00:00" && until === "00:00" ? "all day" : `${from}–${until}`;
  if (startsToday) return from === "00:00" ? "all day" : `from ${from}`;
  if (endsToday) return until === "00:00" ? "all day" : `until ${until}`;
  return "all day";
}
// Paid (how), confirmed without payment, or unpaid: what the operator needs at a glance.
function paidWords(b) {
  if ((b.paidVia || []).length) return `${b.status === "confirmed" ? "paid" : "part paid"} (${b.paidVia.map((r) => RAIL_NAMES[r] || r).join(", ")})`;
  return b.status === "confirmed" ? "confirmed, not paid" : "unpaid";
}
// A closure's dates as a person says them: "Sat 12 Dec" for one whole day, "12 Dec 14:00 → 13 Dec 10:00" otherwise.
function closureWhen(c) {
  const [fromDay, fromTime] = [c.localFrom.slice(0, 10), c.localFrom.slice(11, 16)], [toDay, toTime] = [c.localTo.slice(0, 10), c.localTo.slice(11, 16)];
  if (fromTime === "00:00" && toTime === "00:00") {
    const last = addDays(toDay, -1);
    return last === fromDay ? dayLabel(fromDay) : `${dayLabel(fromDay)} – ${dayLabel(last)}`;
  }
  return `${dayLabel(fromDay)} ${fromTime} → ${dayLabel(toDay)} ${toTime}`;
}

// A booking in the calendar: move it (to another day or slot), or cancel it, or see its customer.
function showBookingActions(b, resource, redraw) {
  const detail = $("#detail");
  const rental = resource.kind === "rental";
  const start = el("input", { type: rental ? "date" : "datetime-local", id: "move-start", value: rental ? b.localStart.slice(0, 10) : b.localStart.slice(0, 16) });
  const end = rental ? el("input", { type: "date", id: "move-end", value: b.localEnd.slice(0, 10) }) : null;
  const form = el("form", { class: "panel", id: "move-form" },
    el("strong", { text: `${b.reference} · ${b.userId} · ${tripWhen(b)} · ${b.status.replaceAll("_", " ")}${b.amountPaid ? " · paid " + money(b.amountPaid, b.currency) : ""}` }),
    el("label", {}, rental ? "New first day" : "New slot (local)", start), rental ? el("label", {}, "Until (day it ends)", end) : null,
    el("button", { type: "submit", id: "move-submit", text: "Move booking" }),
    el("button", { type: "button", class: "danger", text: "Cancel booking…", onclick: () => askReason(b, "cancel") }),
    el("button", { type: "button", class: "secondary", text: "Customer", onclick: () => showTimeline(b.userId) }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = rental ? { start: start.value, end: end.value } : { slot: start.value };
    try {
      const moved = (await api("POST", `/api/admin/bookings/${b.id}/move`, body)).booking;
      say(`Booking ${moved.reference} moved to ${tripWhen(moved)}.`);
      redraw({ week: mondayOf(moved.localStart.slice(0, 10)) });
    } catch (error) { failed(error); }
  });
  detail.replaceChildren(form);
}

// Close dates: from, to, why, this resource or every one; the answer lists what is already sold inside.
function askClosure(resource, week, redraw) {
  const detail = $("#detail");
  const from = el("input", { type: "date", id: "closure-from", required: true, value: week });
  const to = el("input", { type: "date", id: "closure-to", required: true, value: week });
  const reason = el("input", { id: "closure-reason", required: true, size: 30, placeholder: "storm: the port is closed" });
  const every = el("input", { type: "checkbox", id: "closure-every" });
  const form = el("form", { class: "panel", id: "closure-form" }, el("strong", { text: "Close dates (no new booking inside; customers see your reason)" }),
    el("label", {}, "First day", from), el("label", {}, "Last day", to), el("label", {}, "Reason", reason),
    el("label", { class: "check" }, every, el("span", { text: `Every resource, not only ${resource.name}` })),
    el("button", { type: "submit", class: "danger", id: "closure-submit", text: "Close" }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const closure = await api("POST", "/api/admin/closures", { ...(every.checked ? {} : { resourceId: resource.id }), from: from.value, to: to.value, reason: reason.value.trim() });
      say(`Closed ${from.value === to.value ? from.value : from.value + " to " + to.value}: ${closure.bookingsInside.length} booking(s) already inside.`);
      await redraw({ week: mondayOf(from.value) });
      showClosure(closure, redraw);
    } catch (error) { failed(error); }
  });
  detail.replaceChildren(form);
  reason.focus();
}

// A closure's bookings, resolved in one action: card payments refunded, store-paid ones owed, unpaid ones cancelled.
async function showClosure(closure, redraw) {
  const detail = $("#detail");
  let inside = closure.bookingsInside;
  if (!inside) {
    try { inside = (await api("GET", "/api/admin/closures")).closures.find((c) => c.id === closure.id)?.bookingsInside || []; } catch (error) { failed(error); return; }
  }
  const list = el("ul", { class: "closure-bookings", id: "closure-bookings" }, ...inside.map((b) =>
    el("li", { "data-id": String(b.id), text: `${b.reference} · ${b.userId} · ${tripWhen(b)} · ${b.status.replaceAll("_", " ")}` })));
  const panel = el("div", { class: "panel", id: "closure-panel" },
    el("strong", { text: `Closed ${closureWhen(closure)}${closure.resourceId ? "" : " (every resource)"}: ${closure.reason}` }),
    inside.length ? el("p", { text: `${inside.length} booking(s) inside. Cancelling them refunds card payments in full through Stripe (once), leaves App Store and Google Play payments owed to their customers (Owed to customers says what to tell them) and frees unpaid holds. To move one instead, open it in the calendar.` })
      : el("p", { class: "muted", text: "No booking inside." }),
    list,
    inside.length ? el("button", { class: "danger", id: "closure-cancel-all", text: `Cancel all ${inside.length} and refund`, onclick: async () => {
      try {
        const result = await api("POST", `/api/admin/closures/${closure.id}/resolve`, { action: "cancel" });
        const counts = {};
        for (const r of result.results) counts[r.outcome] = (counts[r.outcome] || 0) + 1;
        const words = { refunded: "refunded by card", cancelled_owed: "cancelled, owed (store)", cancelled: "cancelled (unpaid)", failed: "left as they were" };
        say(`Resolved: ${Object.entries(counts).map(([k, n]) => `${n} ${words[k] || k}`).join(", ")}.`, counts.failed ? "error" : "ok");
        await redraw({});
      } catch (error) { failed(error); }
    } }) : null,
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  $("#detail").replaceChildren(panel);
}

async function renderInventory(main) {
  main.append(el("div", { id: "detail" }));
  let items;
  try { items = (await api("GET", "/api/admin/resources")).resources; } catch (error) { failed(error); return; }
  const table = el("table", { class: "stack", id: "inventory" }, el("tr", {}, ...["Resource", "Kind", "Price", "Capacity", "Seasons", "Status", ""].map((t) => el("th", { text: t }))));
  for (const { resource: r } of items) {
    const seasons = (r.prices || []).map((p) => `${p.from}–${p.to}${p.weekdays ? " " + p.weekdays.join(",") : ""}: ${money(p.pricePerDayMinor ?? p.pricePerSeatMinor, app.currency)}`);
    table.append(el("tr", { "data-id": r.id },
      el("td", { "data-label": "Resource" }, el("strong", { text: r.name }), el("span", { class: "muted", text: " " + r.id })),
      el("td", { "data-label": "Kind", class: "nowrap", text: r.kind === "rental" ? "rental (days)" : "trip (seats)" }),
      el("td", { "data-label": "Price", class: "nowrap", text: resourcePrice(r) }),
      el("td", { "data-label": "Capacity", text: r.kind === "rental" ? `${r.units || 1} boat(s)` : `${r.seatsPerSlot} seats · ${(r.slotTimes || []).join(", ")} · ${r.durationMinutes} min` }),
      el("td", { "data-label": "Seasons", class: "wrap", text: seasons.join("; ") || "—" }),
      el("td", { "data-label": "Status", text: r.retired ? "retired" : "on sale" }),
      el("td", { class: "row-actions" }, el("div", { class: "actions" },
        el("button", { class: "secondary", text: "Edit", onclick: () => editResource(r) }),
        el("button", { class: "secondary season", text: "Season price", onclick: () => addSeason(r) }),
        el("button", { class: r.retired ? "secondary" : "danger", text: r.retired ? "Put back on sale" : "Retire", onclick: async () => {
          try {
            if (r.retired) await api("PATCH", `/api/admin/resources/${encodeURIComponent(r.id)}`, { retired: false });
            else await api("POST", `/api/admin/resources/${encodeURIComponent(r.id)}/retire`);
            say(`${r.name} is ${r.retired ? "on sale again" : "retired (its bookings stay)"}.`);
            await show("inventory");
          } catch (error) { failed(error); }
        } })))));
  }
  main.append(el("button", { id: "add-resource", text: "Add a boat or trip", onclick: () => editResource(null) }), el("div", { class: "table-wrap" }, table));
}

// A resource's form: new (id and kind chosen once) or changed (a merge patch of what the form shows).
function editResource(r) {
  const detail = $("#detail");
  const kind = el("select", { id: "resource-kind", disabled: Boolean(r) }, el("option", { value: "rental", text: "Rental (by the day)" }), el("option", { value: "experience", text: "Trip (seats at set times)" }));
  if (r) kind.value = r.kind;
  const id = el("input", { id: "resource-id", required: true, size: 14, value: r ? r.id : "", disabled: Boolean(r), placeholder: "gozzo-6m" });
  const name = el("input", { id: "resource-name", required: true, size: 24, value: r ? r.name : "" });
  const unitPrice = r ? (r.kind === "rental" ? r.pricePerDayMinor : r.pricePerSeatMinor) : null;
  const price = el("input", { id: "resource-price", required: true, size: 8, inputmode: "decimal", value: unitPrice ? String(unitPrice / 10 ** (FRACTION_DIGITS[app.currency] ?? 2)) : "" });
  const units = el("input", { id: "resource-units", type: "number", min: 1, size: 5, value: r ? r.units || r.seatsPerSlot || 1 : 1 });
  const type = el("input", { id: "resource-type", size: 10, value: r ? r.experienceType || "" : "", placeholder: "sunset" });
  const times = el("input", { id: "resource-times", size: 12, value: r ? (r.slotTimes || []).join(", ") : "", placeholder: "17:30, 19:00" });
  const duration = el("input", { id: "resource-duration", type: "number", min: 1, size: 5, value: r ? r.durationMinutes || 120 : 120 });
  const tripOnly = [el("label", {}, "Trip type", type), el("label", {}, "Start times (local)", times), el("label", {}, "Minutes", duration)];
  const sync = () => { for (const field of tripOnly) field.hidden = kind.value !== "experience"; };
  kind.addEventListener("change", sync);
  const form = el("form", { class: "panel", id: "resource-form" }, el("strong", { text: r ? `Change ${r.name}` : "Add a boat or trip (on sale at once)" }),
    el("label", {}, "Kind", kind), el("label", {}, "Id", id), el("label", {}, "Name", name), el("label", {}, `Price (${app.currency}, a day or a seat)`, price),
    el("label", {}, "Boats / seats", units), ...tripOnly,
    el("button", { type: "submit", id: "resource-submit", text: r ? "Save" : "Add" }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  sync();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const minor = minorUnits(price.value);
    if (!Number.isFinite(minor) || minor < 1) { say(`The price is an amount in ${app.currency}, such as 90 or 90.50.`, "error"); return; }
    const body = { name: name.value.trim() };
    if (kind.value === "rental") Object.assign(body, { pricePerDayMinor: minor, units: Number(units.value) || 1 });
    else Object.assign(body, { pricePerSeatMinor: minor, seatsPerSlot: Number(units.value) || 1, experienceType: type.value.trim(),
      slotTimes: times.value.split(",").map((t) => t.trim()).filter(Boolean), durationMinutes: Number(duration.value) || 60 });
    try {
      if (r) await api("PATCH", `/api/admin/resources/${encodeURIComponent(r.id)}`, body);
      else await api("POST", "/api/admin/resources", { id: id.value.trim(), kind: kind.value, ...body });
      say(`${body.name} ${r ? "saved" : "added: on sale now"}.`);
      await show("inventory");
    } catch (error) { failed(error); }
  });
  detail.replaceChildren(form);
  name.focus();
}

// A season's price: local days from and to (both included), some weekdays or all, the price that replaces the usual one.
function addSeason(r) {
  const detail = $("#detail");
  const from = el("input", { type: "date", id: "season-from", required: true });
  const to = el("input", { type: "date", id: "season-to", required: true });
  const price = el("input", { id: "season-price", required: true, size: 8, inputmode: "decimal" });
  const days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d, i) => el("label", { class: "check" }, el("span", { text: WEEKDAYS[i] }), el("input", { type: "checkbox", name: "weekday", value: d })));
  const form = el("form", { class: "panel", id: "season-form" }, el("strong", { text: `Season price for ${r.name} (${r.kind === "rental" ? "a day" : "a seat"}; the newest rule wins)` }),
    el("label", {}, "From", from), el("label", {}, "To", to), el("label", {}, `Price (${app.currency})`, price),
    el("div", { class: "weekdays" }, el("span", { class: "muted", text: "Only on (none: every day)" }), ...days),
    el("button", { type: "submit", id: "season-submit", text: "Add season price" }),
    el("button", { type: "button", class: "secondary", text: "Back", onclick: () => detail.replaceChildren() }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const minor = minorUnits(price.value);
    if (!Number.isFinite(minor) || minor < 1) { say(`The price is an amount in ${app.currency}, such as 95.`, "error"); return; }
    const weekdays = [...form.querySelectorAll('input[name="weekday"]:checked')].map((c) => c.value);
    const body = { from: from.value, to: to.value, ...(weekdays.length ? { weekdays } : {}), [r.kind === "rental" ? "pricePerDayMinor" : "pricePerSeatMinor"]: minor };
    try {
      await api("POST", `/api/admin/resources/${encodeURIComponent(r.id)}/prices`, body);
      say(`${r.name}: ${money(minor, app.currency)} from ${from.value} to ${to.value}${weekdays.length ? " on " + weekdays.join(", ") : ""}.`);
      await show("inventory");
    } catch (error) { failed(error); }
  });
  detail.replaceChildren(form);
}

function signOut(reason) {
  sessionStorage.removeItem(KEY);
  app = null;
  $("#app").hidden = true;
  $("#signin").hidden = false;
  $("#signin-error").textContent = reason || "";
}

async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  try {
    app = (await api("GET", "/api/admin/app")).app;
  } catch (error) {
    signOut(error instanceof APIFailure ? `Sign-in refused: ${error.message} (${error.code})` : `Sign-in failed: ${error.message}`);
    return;
  }
  $("#app-name").textContent = app.name;
  // Every time on the page is in this zone (with its offset); the header says which.
  $("#app-zone").textContent = `times in ${app.timeZone || "UTC"}`;
  let first = null;
  for (const button of document.querySelectorAll("#tabs button")) {
    const need = needs[button.dataset.view];
    button.hidden = need !== undefined && !app.sells.includes(need);
    if (!button.hidden && first === null) first = button.dataset.view;
  }
  $("#signin").hidden = true;
  $("#app").hidden = false;
  $("#signin-error").textContent = "";
  await show(first);
}

document.addEventListener("DOMContentLoaded", () => {
  $("#signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("#key");
    const key = input.value.trim();
    input.value = "";
    signIn(key);
  });
  $("#signout").addEventListener("click", () => signOut("Signed out."));
  $("#search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("#search").value.trim();
    if (text) showSearch(text);
  });
  for (const button of document.querySelectorAll("#tabs button")) button.addEventListener("click", () => show(button.dataset.view));
  if (sessionStorage.getItem(KEY)) signIn(sessionStorage.getItem(KEY));
});
