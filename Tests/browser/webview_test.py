#!/usr/bin/env python3
"""A hybrid app's WebView, played by headless Chromium on another origin than Berth.

Berth runs on http://127.0.0.1:B; the app's page is served on http://localhost:A (an origin the
shipped test tenants allow, as Capacitor's and Cordova's WebViews have their own). The browser
enforces CORS, as a WebView does. The page drives:

  (a) the TypeScript client (clients/typescript, built with tsc): a credit pack bought with a
      StoreKit 2 transaction, the balance and entitlements read with their signatures verified
      against the pinned key, a booking created with the user's token and paid by StoreKit, a replay
      of that transaction by another user (already_used, finish), a 2-seat booking paid by one unit
      (partly_paid: success false, finish, one unit to go);
  (b) the exact requests cordova-plugin-purchase's validator sends (XMLHttpRequest, its headers and
      body) for StoreKit 2 and StoreKit 1;
  (c) the same page on http://127.0.0.1:A, an origin no tenant allows: the browser refuses the
      answer (fetch rejects), although Berth served it, and the client's error names allowedOrigins;
  (d) through a loopback proxy that plays a hostile network: two pinned keys while the tenant
      rotates from the first to the second (Berth restarted on the same port with the second key),
      an altered answer (unverified, never data, never refused), and a 502 after Berth made a
      booking (the client retries with the same Idempotency-Key: one booking).

The page imports the client as an app does: `npm pack` in clients/typescript makes the tarball,
unpacked into the site's own node_modules folder and imported by its package name (an import map).

Exits non-zero on the first failed check; every wait is bounded; the server is killed at the end.

Usage: Tests/browser/webview_test.py [path to berth binary]
"""
import base64
import datetime
import hashlib
import hmac
import http.client
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BERTH = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build", "debug", "berth"))
JWT_SECRET = "seaboo-test-secret-0123456789-abcdefgh"
STYLIST = "aistylist-test"
STYLIST_BUNDLE = "com.aiimagestylist.app"
POPULAR = "com.aiimagestylist.credits.popular"
STARTER = "com.aiimagestylist.credits.starter"


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print("ok:", message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def user_token(user, issuer="https://auth.seaboo.test"):
    """An HS256 token as the app's identity provider signs it."""
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    now = int(time.time())
    claims = b64url(json.dumps({"sub": user, "iss": issuer, "aud": "berth", "iat": now, "exp": now + 3600}).encode())
    signature = hmac.new(JWT_SECRET.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64url(signature)}"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main():
    work = tempfile.mkdtemp(prefix="berth-webview-")
    server = None
    driver = None
    pages = None
    try:
        # The client library as an app adds it: the tarball `npm pack` makes, unpacked in the app's own folder.
        site = os.path.join(work, "site")
        package = os.path.join(site, "node_modules", "berth-client")
        os.makedirs(package)
        subprocess.run([os.path.join(ROOT, "clients", "typescript", "test", "pack-test.sh"), work], check=True, timeout=600)
        tarballs = [name for name in os.listdir(work) if name.startswith("berth-client-") and name.endswith(".tgz")]
        check(len(tarballs) == 1, "npm pack made one tarball (%s)" % tarballs)
        subprocess.run(["tar", "-xzf", os.path.join(work, tarballs[0]), "-C", package, "--strip-components=1"], check=True, timeout=60)
        with open(os.path.join(site, "index.html"), "w") as page:
            page.write('<!doctype html><meta charset="utf-8"><title>app</title>'
                       '<script type="importmap">{"imports": {"berth-client": "./node_modules/berth-client/dist/index.js"}}</script>'
                       '<script type="module">import * as Berth from "berth-client"; window.Berth = Berth; window.berthReady = true;</script>')

        # Berth: the shipped catalog (seaboo-test signs with its shipped test key), the credits app with keys of this run.
        def new_key():
            return subprocess.run("openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt", shell=True, check=True,
                                  capture_output=True, text=True, timeout=60).stdout
        first_key, second_key = new_key(), new_key()
        catalog = json.load(open(os.path.join(ROOT, "products.json")))

        def write_catalog(key_id):
            for tenant in catalog["tenants"]:
                if tenant["id"] == STYLIST:
                    tenant["answerSigning"] = {"keyId": key_id, "privateKeyEnv": "STYLIST_ANSWER_KEY"}
            json.dump(catalog, open(os.path.join(work, "products.json"), "w"))
        write_catalog("webview-1")
        env = dict(os.environ, BERTH_CATALOG=os.path.join(work, "products.json"), BERTH_DATABASE="sqlite:" + os.path.join(work, "berth.sqlite"),
                   STYLIST_ANSWER_KEY=first_key, SEABOO_TEST_JWT_SECRET=JWT_SECRET, BERTH_LOG_LEVEL="warning")

        def berth(*arguments):
            return subprocess.run([BERTH, *arguments], cwd=work, env=env, check=True, capture_output=True, text=True, timeout=120).stdout.strip()

        berth("testkit", "init", "berth-ca")
        stylist_key = berth("keys", "create", "--tenant", STYLIST, "--role", "client")
        port_file = os.path.join(work, "port")

        def start(port):
            if os.path.exists(port_file):
                os.remove(port_file)
            process = subprocess.Popen([BERTH, "serve", "--port", str(port), "--port-file", port_file], cwd=work, env=env,
                                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "a"))
            deadline = time.time() + 60
            while time.time() < deadline and process.poll() is None:
                if os.path.exists(port_file) and open(port_file).read().strip():
                    address = "http://127.0.0.1:" + open(port_file).read().strip()
                    try:
                        if urllib.request.urlopen(address + "/healthz", timeout=2).status == 200:
                            return process, address
                    except OSError:
                        pass
                time.sleep(0.2)
            raise AssertionError("berth serve did not answer /healthz: " + open(os.path.join(work, "serve.log")).read()[-2000:])
        server, base = start(0)
        check(base is not None, "berth serve answers /healthz")
        pinned = json.loads(urllib.request.urlopen(base + "/api/answer-signing/" + STYLIST, timeout=10).read())
        seaboo_pinned = json.loads(urllib.request.urlopen(base + "/api/answer-signing/seaboo-test", timeout=10).read())
        check(seaboo_pinned["keyId"] == "seaboo-test-1", "the shipped seaboo-test tenant signs with its shipped test key")

        # The app's page, on another origin.
        page_port = free_port()
        pages = http.server.ThreadingHTTPServer(("127.0.0.1", page_port), lambda *a, **k: Quiet(*a, directory=site, **k))
        threading.Thread(target=pages.serve_forever, daemon=True).start()

        options = webdriver.ChromeOptions()
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
            options.add_argument(flag)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        driver.set_script_timeout(90)
        driver.set_page_load_timeout(60)

        def open_page(host):
            driver.get(f"http://{host}:{page_port}/index.html")
            for _ in range(200):
                if driver.execute_script("return window.berthReady === true"):
                    return
                time.sleep(0.05)
            raise AssertionError("the page did not load the client")

        def run(script, *arguments):
            """Runs an async function body in the page; it gets `args` and returns JSON-able data."""
            wrapped = ("const done = arguments[arguments.length - 1]; const args = Array.from(arguments).slice(0, -1);"
                       "(async () => { " + script + " })().then((value) => done({value}), (error) => done({error: String(error && error.stack || error)}));")
            result = driver.execute_async_script(wrapped, *arguments)
            if "error" in result:
                raise AssertionError("in the page: " + result["error"])
            return result["value"]

        def sign_transaction(bundle, product, transaction_id):
            return berth("testkit", "sign-transaction", "--ca", "berth-ca", "--bundle-id", bundle, "--product", product,
                         "--transaction-id", transaction_id)

        open_page("localhost")
        check(driver.execute_script("return location.origin") == f"http://localhost:{page_port}", "the page runs on its own origin")

        # (a) The client library through a credit pack, with signed answers checked.
        jws = sign_transaction(STYLIST_BUNDLE, POPULAR, "3000000000770001")
        result = run("""
            const [base, key, pinned, jws] = args;
            const berth = new Berth.BerthClient({ baseURL: base, clientKey: key, userId: "mai", answerKey: { keyId: pinned.keyId, publicKeySPKI: pinned.publicKeySPKI } });
            const verdict = await berth.verifyPurchase("com.aiimagestylist.credits.popular", { jwsRepresentation: jws });
            const again = await berth.verifyPurchase("com.aiimagestylist.credits.popular", { jwsRepresentation: jws });
            const credits = await berth.credits();
            const entitlements = await berth.entitlements();
            const history = await berth.creditHistory({ limit: 1 });
            let forged = null;
            try {
                await new Berth.BerthClient({ baseURL: base, clientKey: key, userId: "mai", answerKey: { keyId: "other-key", publicKeySPKI: pinned.publicKeySPKI } }).credits();
            } catch (error) { forged = error.code; }
            return { verdict: [verdict.kind, verdict.finish], again: [again.kind, again.finish], balance: credits[0].balance,
                     premium: entitlements.isPremium, history: history.transactions.length, forged };
        """, base, stylist_key, pinned, jws)
        check(result["verdict"] == ["applied", True], "a credit pack: applied, finish the transaction (%s)" % result)
        check(result["again"] == ["applied", True], "the same transaction again: the same verdict, nothing added")
        check(result["balance"] == 52, "the balance, read with its signature verified: 2 free + 50")
        check(result["premium"] is False and result["history"] == 1, "entitlements and a page of history, signed and verified")
        check(result["forged"] == "unverified", "an answer not signed with a pinned key is unverified, not used")

        # A booking created with the user's token, paid by StoreKit; a replay by another user.
        day = (datetime.datetime.utcnow() + datetime.timedelta(days=7)).date().isoformat()
        day2 = (datetime.datetime.utcnow() + datetime.timedelta(days=8)).date().isoformat()
        rental = sign_transaction("it.seaboo.app", "it.seaboo.rental.basic", "2000000000770001")
        result = run("""
            const [base, alice, bob, jws, day, day2, seaboo] = args;
            const answerKeys = [{ keyId: seaboo.keyId, publicKeySPKI: seaboo.publicKeySPKI }];
            const forAlice = new Berth.BerthClient({ baseURL: base, userToken: () => alice, answerKeys });
            const forBob = new Berth.BerthClient({ baseURL: base, userToken: () => bob, answerKeys });
            const booking = await forAlice.createBooking({ resourceId: "gozzo-5m", start: day + "T08:00:00Z", end: day + "T18:00:00Z" });
            const paid = await forAlice.verifyPurchase(booking.requiredProductId, { jwsRepresentation: jws }, booking.id);
            const bobs = await forBob.createBooking({ resourceId: "gozzo-5m", start: day2 + "T08:00:00Z", end: day2 + "T18:00:00Z" });
            const replay = await forBob.verifyPurchase(bobs.requiredProductId, { jwsRepresentation: jws }, bobs.id);
            let taken = null;
            try { await forBob.createBooking({ resourceId: "gozzo-5m", start: day + "T08:00:00Z", end: day + "T18:00:00Z" }); }
            catch (error) { taken = [error.code, error.status]; }
            return { product: booking.requiredProductId, paid: [paid.kind, paid.finish, paid.answer.booking.status],
                     replay: [replay.kind, replay.finish, replay.error.code], taken };
        """, base, user_token("alice"), user_token("bob"), rental, day, day2, seaboo_pinned)
        check(result["product"] == "it.seaboo.rental.basic", "the booking names the product to buy")
        check(result["paid"] == ["applied", True, "confirmed"], "the booking is paid: confirmed, finish (%s)" % result)
        check(result["replay"] == ["already_used", True, "transaction_already_used"], "another user's replay: already used, finish, tell the user")
        check(result["taken"] == ["slot_taken", 409], "a taken slot is a typed error (code, status)")

        # A 2-seat sunset cruise paid by one unit: applied, not complete.
        slot_day = (datetime.datetime.utcnow() + datetime.timedelta(days=9)).date().isoformat()
        seat = sign_transaction("it.seaboo.app", "it.seaboo.experience.sunset", "2000000000770002")
        result = run("""
            const [base, token, jws, day] = args;
            const berth = new Berth.BerthClient({ baseURL: base, userToken: () => token });
            const booking = await berth.createBooking({ resourceId: "sunset-cruise", slot: day + "T17:30", seats: 2 });
            const verdict = await berth.verifyPurchase(booking.requiredProductId, { jwsRepresentation: jws }, booking.id);
            return [verdict.kind, verdict.finish, verdict.remainingQuantity, verdict.answer.success];
        """, base, user_token("giulia"), seat, slot_day)
        check(result == ["partly_paid", True, 1, False], "one unit of two: partly paid, finish, one more to buy, success false (%s)" % result)

        # (b) cordova-plugin-purchase's own requests: XMLHttpRequest, JSON body, its headers.
        sk2 = sign_transaction(STYLIST_BUNDLE, STARTER, "3000000000770003")
        receipt = berth("testkit", "sign-receipt", "--ca", "berth-ca", "--bundle-id", STYLIST_BUNDLE, "--product", STARTER,
                        "--transaction-id", "3000000000770004")
        result = run("""
            const [url, key, sk2, receipt] = args;
            function post(body) {
                return new Promise((resolve, reject) => {
                    const xhr = new XMLHttpRequest();
                    xhr.open("POST", url, true);
                    xhr.setRequestHeader("Content-Type", "application/json");
                    xhr.setRequestHeader("Authorization", "Bearer " + key);
                    xhr.onload = () => resolve({ status: xhr.status, body: JSON.parse(xhr.responseText) });
                    xhr.onerror = () => reject(new Error("XMLHttpRequest failed: status " + xhr.status));
                    xhr.send(JSON.stringify(body));
                });
            }
            const device = { plugin: "cordova-plugin-purchase/13.18.0", platform: "ios" };
            const additionalData = { applicationUsername: "lan" };
            const storeKit2 = await post({ id: "com.aiimagestylist.app", type: "application",
                transaction: { type: "apple-sk2", id: "com.aiimagestylist.credits.starter", jwsRepresentation: sk2 }, additionalData, device });
            const storeKit1 = await post({ id: "com.aiimagestylist.app", type: "application",
                products: [{ type: "consumable", id: "com.aiimagestylist.credits.starter", offers: [] }],
                transaction: { type: "ios-appstore", id: "3000000000770004", appStoreReceipt: receipt }, additionalData, device });
            return [storeKit2.status, storeKit2.body.ok, storeKit1.status, storeKit1.body.ok];
        """, base + "/api/validator/" + STYLIST, stylist_key, sk2, receipt)
        check(result == [200, True, 200, True], "the plugin's validator calls (StoreKit 2 and 1) pass the browser's CORS checks (%s)" % result)
        status, credits = 0, None
        request = urllib.request.Request(base + "/api/credits", headers={"Authorization": "Bearer " + stylist_key, "X-User-Id": "lan"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, credits = answer.status, json.loads(answer.read())
        check(status == 200 and credits["credits"][0]["balance"] == 22, "both plugin purchases credited: 2 free + 10 + 10 (%s)" % credits)

        # (c) An origin no tenant allows: Berth answers, the browser refuses to hand the answer over.
        open_page("127.0.0.1")
        result = run("""
            const [base, key] = args;
            try {
                await fetch(base + "/api/credits", { headers: { Authorization: "Bearer " + key, "X-User-Id": "mai" } });
                return "answered";
            } catch (error) { return error.name; }
        """, base, stylist_key)
        check(result == "TypeError", "an origin the app does not allow is refused by the browser (%s)" % result)
        result = run("""
            const [base, key, pinned] = args;
            const berth = new Berth.BerthClient({ baseURL: base, clientKey: key, userId: "mai", retries: 0, answerKey: { keyId: pinned.keyId, publicKeySPKI: pinned.publicKeySPKI } });
            let failure = null;
            try { await berth.credits(); } catch (error) { failure = { code: error.code, hint: error.hint || "", message: error.message }; }
            const verdict = await berth.verifyPurchase("com.aiimagestylist.credits.popular", { transactionId: "3000000000770009" });
            return { failure, verdict: [verdict.kind, verdict.finish, verdict.reason] };
        """, base, stylist_key, pinned)
        check(result["failure"] is not None and result["failure"]["code"] == "network" and "allowedOrigins" in result["failure"]["hint"]
              and "127.0.0.1" in result["failure"]["hint"], "the client's error names the page's origin and allowedOrigins (%s)" % result)
        check(result["verdict"][:2] == ["retry_later", False] and "allowedOrigins" in result["verdict"][2],
              "a purchase from that origin: retry later, do not finish, and the reason says what to check (%s)" % result["verdict"])

        # (d) A hostile network between the page and Berth: a proxy on loopback that can alter an answer or lose one.
        network = {"alter": None, "lose": None, "bookings": []}

        class Proxy(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                target = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=30)
                headers = {name: value for name, value in self.headers.items() if name.lower() not in ("host", "connection")}
                target.request(self.command, self.path, body=body, headers=headers)
                answer = target.getresponse()
                data = answer.read()
                answer_headers = [(n, v) for n, v in answer.getheaders() if n.lower() not in ("connection", "transfer-encoding", "content-length")]
                target.close()
                route = self.command + " " + self.path.split("?")[0]
                if route == "POST /api/bookings":
                    network["bookings"].append(self.headers.get("Idempotency-Key"))
                if network["lose"] == route:
                    # Berth acted; its answer is lost and a gateway answers 502 (with CORS, as a real one would).
                    network["lose"] = None
                    self.send_response(502)
                    self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if network["alter"] == route:
                    # One value changed, as a proxy or a patched WebView would (the signature was Berth's).
                    network["alter"] = None
                    changed = data.replace(b'"balance":', b'"balance":9', 1) if b'"balance":' in data else data.replace(b'true', b'false', 1)
                    if changed == data:
                        raise AssertionError("the proxy found nothing to alter in " + route)
                    data = changed
                self.send_response(answer.status)
                for name, value in answer_headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_OPTIONS = do_PATCH = do_DELETE = forward

        proxy_port = free_port()
        proxy = http.server.ThreadingHTTPServer(("127.0.0.1", proxy_port), Proxy)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        via = f"http://127.0.0.1:{proxy_port}"
        second_pem = subprocess.run(["openssl", "pkey", "-pubout", "-outform", "DER"], input=second_key.encode(), check=True, capture_output=True,
                                    timeout=60).stdout
        second = {"keyId": "webview-2", "publicKeySPKI": base64.b64encode(second_pem).decode()}
        try:
            open_page("localhost")
            result = run("""
                const [via, key, first, second] = args;
                window.rotating = new Berth.BerthClient({ baseURL: via, clientKey: key, userId: "mai", retries: 0,
                    answerKeys: [{ keyId: first.keyId, publicKeySPKI: first.publicKeySPKI }, second] });
                return (await window.rotating.credits())[0].balance;
            """, via, stylist_key, pinned, second)
            check(result == 52, "through the proxy, signed by the first pinned key: the balance (%s)" % result)
            network["alter"] = "GET /api/credits"
            result = run("""
                try { const credits = await window.rotating.credits(); return ["data", credits[0].balance]; }
                catch (error) { return [error.code, error.retryable]; }
            """)
            check(result == ["unverified", False], "an answer altered on its way is unverified, never data (%s)" % result)
            network["alter"] = "POST /api/verify-purchase"
            jws = sign_transaction(STYLIST_BUNDLE, POPULAR, "3000000000770001")
            result = run("""
                const [jws] = args;
                const verdict = await window.rotating.verifyPurchase("com.aiimagestylist.credits.popular", { jwsRepresentation: jws });
                return [verdict.kind, verdict.finish];
            """, jws)
            check(result == ["unverified", False], "a purchase answer altered on its way: unverified, do not finish, not refused (%s)" % result)

            # The tenant rotates: Berth restarts on the same port signing with the second key; the page keeps its client.
            port = int(base.rsplit(":", 1)[1])
            server.terminate()
            server.wait(timeout=60)
            write_catalog("webview-2")
            env["STYLIST_ANSWER_KEY"] = second_key
            server, base = start(port)
            result = run("return (await window.rotating.credits())[0].balance;")
            check(result == 52, "after the rotation the same client verifies answers signed by the second pinned key (%s)" % result)
            result = run("""
                const [via, key, first] = args;
                const old = new Berth.BerthClient({ baseURL: via, clientKey: key, userId: "mai", retries: 0, answerKeys: [first] });
                try { await old.credits(); return "data"; } catch (error) { return error.code; }
            """, via, stylist_key, {"keyId": pinned["keyId"], "publicKeySPKI": pinned["publicKeySPKI"]})
            check(result == "unverified", "an app that pins only the old key reads nothing from the new one (%s)" % result)

            # A booking whose answer is lost after Berth made it: retried with the same key, one booking.
            network["lose"] = "POST /api/bookings"
            lost_day = (datetime.datetime.utcnow() + datetime.timedelta(days=12)).date().isoformat()
            lost_end = (datetime.datetime.utcnow() + datetime.timedelta(days=13)).date().isoformat()
            result = run("""
                const [via, token, day, end, seaboo] = args;
                const berth = new Berth.BerthClient({ baseURL: via, userToken: () => token, backoffMs: 50,
                    answerKeys: [{ keyId: seaboo.keyId, publicKeySPKI: seaboo.publicKeySPKI }] });
                const booking = await berth.createBooking({ resourceId: "gozzo-5m", start: day, end });
                const mine = await berth.bookings();
                return { id: booking.id, status: booking.status, count: mine.length, same: mine.length === 1 && mine[0].id === booking.id };
            """, via, user_token("rosa"), lost_day, lost_end, seaboo_pinned)
            keys = network["bookings"]
            check(len(keys) == 2 and keys[0] is not None and keys[0] == keys[1], "the booking was sent twice with one Idempotency-Key (%s)" % keys)
            check(result["count"] == 1 and result["same"] and result["status"] == "pending_payment", "a 502 after Berth booked: the retry answers that booking, one in all (%s)" % result)
        finally:
            proxy.shutdown()
        print("webview test: every check passed")
    finally:
        if driver is not None:
            driver.quit()
        if pages is not None:
            pages.shutdown()
        if server is not None:
            server.kill()
            server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
