#!/usr/bin/env python3
"""The admin web page in a real headless Chromium (Debian's chromium + chromium-driver, selenium).

Starts the built `berth serve` on a free loopback port with its own SQLite file, makes keys and
bookings through the real CLI and API, then drives the page: the sign-in page at /, a refused
key, sign in, confirm a pending booking, a refused action's message, CSV export. Takes
screenshots of the main views: into docs/screenshots/ with BERTH_WRITE_SCREENSHOTS=1 (to refresh
the README's), else into a temporary folder. Exits non-zero on the first failed check;
bounded in time (every wait has a timeout, the server is killed at the end).

Usage: Tests/browser/admin_test.py [path to berth binary]
"""
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BERTH = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build", "debug", "berth"))
SHOTS = (os.path.join(ROOT, "docs", "screenshots") if os.environ.get("BERTH_WRITE_SCREENSHOTS") == "1"
         else tempfile.mkdtemp(prefix="berth-screenshots-"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(url, method="GET", key=None, body=None, user=None):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    if key:
        request.add_header("Authorization", "Bearer " + key)
    if user:
        request.add_header("X-User-Id", user)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def visible_tabs(driver):
    return [b.get_attribute("data-view") for b in driver.find_elements(By.CSS_SELECTOR, "#tabs button") if b.is_displayed()]


def console_errors(driver):
    """The page's console errors since the last call. Chromium also logs, as errors, the answers with a
    4xx status that the test provokes on purpose (a refused key, a refused refund): those are the
    page's expected refusals, shown to the operator, and are left out; anything else fails the test
    (a Content-Security-Policy violation, an exception, a failed script)."""
    errors = []
    for entry in driver.get_log("browser"):
        if entry.get("level") != "SEVERE":
            continue
        message = entry.get("message", "")
        if re.search(r"Failed to load resource: the server responded with a status of 4[0-9][0-9]", message):
            continue
        errors.append(message)
    return errors


def shot(driver, name):
    """A screenshot of the view, which must have logged no console error."""
    driver.save_screenshot(os.path.join(SHOTS, name))
    errors = console_errors(driver)
    check(not errors, f"no console error on {name}: {errors[:3]}")


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print("  ok:", what)


def main():
    work = tempfile.mkdtemp(prefix="berth-browser-")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # The shipped catalog beside a fresh test CA, which its test tenants trust (./berth-ca).
    # seaboo-test in Italian time: its 17:30 sunset cruise is 15:30Z in July and 16:30Z in January.
    with open(os.path.join(ROOT, "products.json")) as f:
        catalog = json.load(f)
    for tenant in catalog["tenants"]:
        if tenant["id"] == "seaboo-test":
            tenant["timeZone"] = "Europe/Rome"
    with open(os.path.join(work, "products.json"), "w") as f:
        json.dump(catalog, f)
    env = dict(os.environ, BERTH_DATABASE=f"sqlite:{work}/berth.sqlite", BERTH_CATALOG=os.path.join(work, "products.json"),
               BERTH_MIGRATIONS=os.path.join(ROOT, "migrations"))
    subprocess.run([BERTH, "testkit", "init", os.path.join(work, "berth-ca")], env=env, check=True, capture_output=True, timeout=60)
    keys = lambda role, tenant="seaboo-test": subprocess.run([BERTH, "keys", "create", "--tenant", tenant, "--role", role], env=env, check=True,
                                                             capture_output=True, text=True, timeout=60).stdout.strip()
    subprocess.run([BERTH, "migrate"], env=env, check=True, capture_output=True, timeout=60)
    admin, server = keys("admin"), keys("server")
    credits_admin = keys("admin", "aistylist-test")
    log = open(os.path.join(work, "berth.log"), "w")
    # Stripe's stand-in for the card rail of seaboo-test (refunds from the page).
    stripe_port = free_port()
    env.update(SEABOO_TEST_STRIPE_SECRET_KEY="sk_test_berth_standin", SEABOO_TEST_STRIPE_WEBHOOK_SECRET="whsec_browser_test_0123456789",
               SEABOO_TEST_STRIPE_API_BASE=f"http://127.0.0.1:{stripe_port}")
    stand_in = subprocess.Popen([BERTH, "testkit", "stripe", "serve", "--port", str(stripe_port), "--webhook-url", f"{url}/api/stripe/webhooks/seaboo-test",
                                 "--webhook-secret", env["SEABOO_TEST_STRIPE_WEBHOOK_SECRET"]], env=env, stdout=log, stderr=subprocess.STDOUT)
    process = subprocess.Popen([BERTH, "serve", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    driver = None
    try:
        deadline = time.time() + 30
        while True:
            try:
                if call(url + "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise AssertionError("berth serve did not answer within 30 s")
            time.sleep(0.2)

        day = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=7)).date()
        bookings = []
        for offset, user in enumerate(["alice", "bob"]):
            d = day + datetime.timedelta(days=offset)
            status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "gozzo-5m", "start": f"{d}T08:00:00Z", "end": f"{d}T18:00:00Z"}, user)
            check(status == 201 or status == 200, f"booking for {user} created ({status})")
            bookings.append(body["booking"])

        options = webdriver.ChromeOptions()
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900", "--disable-gpu"]:
            options.add_argument(argument)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        downloads = os.path.join(work, "downloads")
        os.makedirs(downloads)
        options.add_experimental_option("prefs", {"download.default_directory": downloads, "download.prompt_for_download": False})
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        driver.set_page_load_timeout(20)
        wait = WebDriverWait(driver, 15)

        print("sign-in page")
        driver.get(url + "/")
        check(driver.current_url.rstrip("/").endswith("/admin"), "/ leads to /admin")
        wait.until(EC.visibility_of_element_located((By.ID, "key")))
        os.makedirs(SHOTS, exist_ok=True)
        shot(driver, "sign-in.png")

        driver.find_element(By.ID, "key").send_keys("berth_not_a_key")
        driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
        error = wait.until(lambda d: d.find_element(By.ID, "signin-error").text or None)
        check("refused" in error.lower(), f"a wrong key is refused with a message: {error!r}")
        check("berth_not_a_key" not in driver.current_url, "the key is never in the URL")

        print("sign in: the overview is home; bookings")
        driver.find_element(By.ID, "key").send_keys(admin)
        driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
        wait.until(EC.visibility_of_element_located((By.ID, "overview-cards")))
        check(driver.find_element(By.CSS_SELECTOR, "#view h2").text == "Overview", "the first view is the overview")
        notice = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, '#setup-notices [data-code="no_app_store_server_api"]')))
        check("apple.serverAPI" in notice.text and "cordova-plugin-purchase" in notice.text,
              f"the overview says what Berth cannot recover without the App Store Server API key: {notice.text[:100]!r}")
        today = wait.until(EC.visibility_of_element_located((By.ID, "overview-week")))
        check("Gozzo" in today.text, f"the week's bookings per resource: {today.text[:120]!r}")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="bookings"]').click()
        wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{bookings[0]["id"]}"]')))
        check(admin not in driver.current_url, "signed in; the key is not in the URL")
        pager = wait.until(lambda d: d.find_element(By.ID, "pager").text)
        check(pager.startswith("1–2 of 2") and "null" not in pager, f"the pager counts the bookings: {pager!r}")
        check(driver.execute_script("return sessionStorage.getItem('berth.adminKey')") == admin, "the key is kept in session storage")
        check(driver.find_element(By.ID, "app-name").text.startswith("Seaboo"), "the header names the app")
        check(visible_tabs(driver) == ["overview", "departures", "calendar", "owed", "bookings", "inventory", "purchases", "unapplied", "notifications", "webhooks", "deadLetters", "replays", "audit", "keys"],
              f"a booking app's admin sees no credit or subscription views: {visible_tabs(driver)}")
        shot(driver, "bookings.png")

        print("confirm a pending booking")
        first = bookings[0]["id"]
        driver.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{first}"] button').click()  # Confirm
        wait.until(EC.visibility_of_element_located((By.ID, "reason"))).send_keys("paid at the harbour office")
        driver.find_element(By.ID, "action-submit").click()
        message = wait.until(lambda d: "confirmed" in d.find_element(By.ID, "message").text and d.find_element(By.ID, "message").text)
        check(f"#{first}" in message, f"the page says so: {message!r}")
        status, body = call(url + "/api/admin/audit?bookingId=%d" % first, key=admin)
        check(status == 200 and any(e["action"] == "booking.manual_confirm" for e in body["items"]),
              f"the audit trail has the admin's confirmation ({[e['action'] for e in body['items']]})")
        status, body = call(url + "/api/admin/bookings?status=confirmed", key=admin)
        check([b["id"] for b in body["items"]] == [first], "the API shows the booking confirmed")

        print("a refused action shows its message")
        second = bookings[1]["id"]
        status, _ = call(url + f"/api/admin/bookings/{second}/cancel", "POST", admin, {"reason": "another admin cancelled it"})
        check(status == 200, "meanwhile, another admin cancels the second booking through the API")
        driver.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{second}"] button').click()  # stale row: Confirm
        wait.until(EC.visibility_of_element_located((By.ID, "reason"))).send_keys("customer called")
        driver.find_element(By.ID, "action-submit").click()
        message = wait.until(lambda d: d.find_element(By.ID, "message").text.startswith("Refused") and d.find_element(By.ID, "message").text)
        check("invalid_transition" in message or "cancelled" in message, f"the refusal is shown: {message!r}")
        check(driver.find_element(By.ID, "message").get_attribute("class") == "error", "as an error")
        status, body = call(url + f"/api/admin/bookings?status=cancelled", key=admin)
        check([b["id"] for b in body["items"]] == [second], "and nothing changed: the booking is still cancelled")

        print("audit trail of a booking")
        driver.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{first}"] button.secondary').click()
        panel = wait.until(EC.visibility_of_element_located((By.ID, "audit-panel")))
        check("paid at the harbour office" in panel.text, "the booking's audit trail shows the reason")

        print("purchases: filters and CSV export")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="purchases"]').click()
        wait.until(EC.visibility_of_element_located((By.ID, "export-csv")))
        driver.find_element(By.ID, "filter-userId").send_keys("alice")
        driver.find_element(By.ID, "export-csv").click()
        path = os.path.join(downloads, "berth-purchases.csv")
        deadline = time.time() + 15
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.2)
        check(os.path.exists(path), "the CSV was downloaded")
        with open(path, newline="") as f:
            header = f.readline().strip()
        check(header.startswith("id,createdAt,purchasedAt,userId,productId,status"), f"it has the purchase columns: {header[:60]}…")
        shot(driver, "purchases.png")

        print("unapplied payments: a paid transaction for a booking that does not exist, applied by the operator")
        status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "gozzo-5m", "start": f"{day + datetime.timedelta(days=5)}T08:00:00Z",
                                                                   "end": f"{day + datetime.timedelta(days=5)}T18:00:00Z"}, "alice")
        check(status == 201, f"a third booking ({status})")
        third = body["booking"]
        jws = subprocess.run([BERTH, "testkit", "sign-transaction", "--ca", os.path.join(work, "berth-ca"), "--bundle-id", "it.seaboo.app",
                              "--product", third["requiredProductId"], "--transaction-id", "2000000000123001", "--price", "45000", "--currency", "EUR"],
                             env=env, check=True, capture_output=True, text=True, timeout=60).stdout.strip()
        status, body = call(url + "/api/verify-purchase", "POST", server, {"bookingId": 987654, "productId": third["requiredProductId"],
                                                                           "jwsRepresentation": jws}, "alice")
        check(status == 404 and body.get("finishTransaction") is True and body["unappliedPayment"]["status"] == "open",
              f"refused, kept, the app may finish ({status} {body})")
        kept = body["unappliedPayment"]["id"]
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="unapplied"]').click()
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{kept}"]')))
        check("45.00 EUR" in row.text and "paid for a booking that does not exist" in row.text, f"the row shows the amount and the reason in words: {row.text!r}")
        shot(driver, "unapplied.png")
        row.find_element(By.CSS_SELECTOR, "button").click()  # Apply
        wait.until(EC.visibility_of_element_located((By.ID, "apply-booking"))).send_keys(str(third["id"]))
        driver.find_element(By.ID, "payment-submit").click()
        message = wait.until(lambda d: "applied" in d.find_element(By.ID, "message").text and d.find_element(By.ID, "message").text)
        check(f"#{kept}" in message, f"the page says so: {message!r}")
        status, body = call(url + "/api/admin/bookings?status=confirmed&userId=alice", key=admin)
        check(third["id"] in [b["id"] for b in body["items"]], "the booking it should have paid is confirmed")

        print("card payments: a booking paid by card, refunded in part, then in full, from the page")
        card_day = day + datetime.timedelta(days=6)
        status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "gozzo-5m", "start": f"{card_day}T08:00:00Z", "end": f"{card_day}T18:00:00Z"}, "carla")
        check(status == 201, f"carla's booking ({status})")
        card_booking = body["booking"]["id"]
        status, body = call(url + f"/api/bookings/{card_booking}/card-payment", "POST", server, None, "carla")
        check(status == 201 and body["amount"] == 8000, f"a PaymentIntent for its price ({status} {body})")
        paid = subprocess.run([BERTH, "testkit", "stripe", "pay", "--port", str(stripe_port), "--intent", body["paymentIntentId"]], env=env,
                              capture_output=True, text=True, timeout=60)
        check(paid.returncode == 0 and "booking_confirmed" in paid.stdout, f"Stripe's success confirms it ({paid.stdout.strip()[:200]})")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="bookings"]').click()
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{card_booking}"]')))
        row.find_element(By.CSS_SELECTOR, "button.refund").click()
        wait.until(EC.visibility_of_element_located((By.ID, "refund-reason"))).send_keys("fuel not used")
        driver.find_element(By.ID, "refund-amount").send_keys("1500")
        shot(driver, "card-refund.png")
        driver.find_element(By.ID, "refund-submit").click()
        message = wait.until(lambda d: "refund of" in d.find_element(By.ID, "message").text and d.find_element(By.ID, "message").text)
        check("15.00 EUR succeeded" in message and "partially_refunded" in message and "booking confirmed" in message, f"a partial refund keeps the booking: {message!r}")
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{card_booking}"]')))
        row.find_element(By.CSS_SELECTOR, "button.refund").click()
        wait.until(EC.visibility_of_element_located((By.ID, "refund-reason"))).send_keys("storm warning")
        driver.find_element(By.ID, "refund-submit").click()
        message = wait.until(lambda d: "65.00 EUR" in d.find_element(By.ID, "message").text and d.find_element(By.ID, "message").text)
        check("booking refunded" in message, f"the rest refunds the booking: {message!r}")
        status, body = call(url + f"/api/admin/bookings?status=refunded&userId=carla", key=admin)
        check([b["id"] for b in body["items"]] == [card_booking], "the API shows it refunded")
        refunds = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{stripe_port}/_standin/refunds", timeout=10).read())
        check([r["amount"] for r in refunds] == [1500, 6500], f"Stripe made exactly these refunds: {[r['amount'] for r in refunds]}")
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{card_booking}"]')))
        row.find_element(By.CSS_SELECTOR, "button.payments").click()
        panel = wait.until(EC.visibility_of_element_located((By.ID, "payments-panel")))
        check("refunded" in panel.text and "storm warning" in panel.text and "fuel not used" in panel.text, f"the payments panel says who and why: {panel.text!r}")
        shot(driver, "card-payments.png")

        print("money owed to customers: an App Store booking cancelled in a storm, a part-paid hold that lapsed, a card booking cancelled")
        def sign(product, quantity=1, price=None):
            args = [BERTH, "testkit", "sign-transaction", "--ca", os.path.join(work, "berth-ca"), "--bundle-id", "it.seaboo.app", "--product", product,
                    "--quantity", str(quantity)]
            if price is not None:
                args += ["--price", str(price), "--currency", "EUR"]
            return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
        cruise_day = day + datetime.timedelta(days=9)
        status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "sunset-cruise", "slot": f"{cruise_day}T17:30", "seats": 3}, "ivo")
        check(status == 201, f"ivo's sunset cruise for 3 ({status} {body})")
        ivo = body["booking"]
        status, body = call(url + "/api/verify-purchase", "POST", server,
                            {"bookingId": ivo["id"], "productId": "it.seaboo.experience.sunset", "jwsRepresentation": sign("it.seaboo.experience.sunset", 3, 135000)}, "ivo")
        check(status == 200 and body["booking"]["status"] == "confirmed", f"paid €135 through the App Store ({status})")
        dive_day = day + datetime.timedelta(days=10)
        status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "diving-intro", "slot": f"{dive_day}T07:00", "seats": 2}, "giulia")
        check(status == 201, f"giulia's dive for 2 ({status} {body})")
        giulia = body["booking"]
        status, body = call(url + "/api/verify-purchase", "POST", server,
                            {"bookingId": giulia["id"], "productId": "it.seaboo.experience.diving", "jwsRepresentation": sign("it.seaboo.experience.diving")}, "giulia")
        check(status == 202, f"one seat of two paid ({status})")
        # Her hold runs out: the clock of a running server cannot be moved, so the hold's end is.
        import sqlite3
        with sqlite3.connect(os.path.join(work, "berth.sqlite"), timeout=10) as db:
            db.execute("UPDATE bookings SET hold_expires_at = ? WHERE id = ?", (int(time.time() * 1000) - 60_000, giulia["id"]))
        card_day2 = day + datetime.timedelta(days=11)
        status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "gozzo-5m", "start": f"{card_day2}T08:00:00Z", "end": f"{card_day2}T18:00:00Z"}, "marco")
        marco = body["booking"]
        status, body = call(url + f"/api/bookings/{marco['id']}/card-payment", "POST", server, None, "marco")
        paid = subprocess.run([BERTH, "testkit", "stripe", "pay", "--port", str(stripe_port), "--intent", body["paymentIntentId"]], env=env,
                              capture_output=True, text=True, timeout=60)
        check(paid.returncode == 0 and "booking_confirmed" in paid.stdout, "marco paid by card")

        driver.set_window_size(1400, 1000)
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="bookings"]').click()
        for booking, user in [(ivo, "ivo"), (marco, "marco")]:
            row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{booking["id"]}"]')))
            if user == "ivo":
                check("App Store" in row.text and "3 of 3" in row.text and "135.00 EUR" in row.text, f"the list shows seats paid, amount and rail: {row.text!r}")
                row.find_element(By.CSS_SELECTOR, "button.refund").click()
                panel = wait.until(EC.visibility_of_element_located((By.ID, "store-refund")))
                check("Apple" in panel.text and not driver.find_elements(By.ID, "refund-form"), f"Refund on an App Store booking shows Apple's path, no card form: {panel.text[:80]!r}")
                shot(driver, "refund-appstore-1400.png")
            row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{booking["id"]}"]')))
            [b for b in row.find_elements(By.TAG_NAME, "button") if b.text == "Cancel"][0].click()
            note = wait.until(EC.visibility_of_element_located((By.ID, "cancel-paid"))).text
            check(("135.00 EUR through App Store" if user == "ivo" else "80.00 EUR through card") in note, f"the cancel dialog says what was paid and how: {note!r}")
            driver.find_element(By.ID, "reason").send_keys("storm: port closed")
            if user == "ivo":
                shot(driver, "cancel-paid-1400.png")
            driver.find_element(By.ID, "action-submit").click()
            wait.until(lambda d: "cancelled" in d.find_element(By.ID, "message").text)

        status, body = call(url + "/api/admin/overview", key=admin)
        check(status == 200 and body["needsAction"].get("owedToCustomers") == 3, f"the overview counts three owed ({status} {body.get('needsAction', body)})")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="overview"]').click()
        first_card = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, "#overview-cards .card")))
        check(first_card.get_attribute("data-key") == "owedToCustomers" and "300.00 EUR" in first_card.text,
              f"money owed comes first on the overview: {first_card.text!r}")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="owed"]').click()
        owed = wait.until(EC.visibility_of_element_located((By.ID, "owed-list")))
        entries = {e.get_attribute("data-booking"): e for e in owed.find_elements(By.CSS_SELECTOR, ".owed")}
        check(set(entries) == {str(ivo["id"]), str(giulia["id"]), str(marco["id"])}, f"three bookings owe their customers: {list(entries)}")
        check("hold lapsed" in entries[str(giulia["id"])].text and "85.00 EUR" in entries[str(giulia["id"])].text, f"the part-paid lapsed hold: {entries[str(giulia['id'])].text!r}")
        check("Apple" in entries[str(ivo["id"])].text and "135.00 EUR" in entries[str(ivo["id"])].text, "the App Store one says what to tell the customer")
        shot(driver, "owed-1400.png")
        entries[str(ivo["id"])].find_element(By.CSS_SELECTOR, 'button[data-how="customer_told"]').click()
        wait.until(EC.visibility_of_element_located((By.ID, "owed-note"))).send_keys("told him to ask Apple")
        driver.find_element(By.ID, "owed-submit").click()
        wait.until(lambda d: "Closed:" in d.find_element(By.ID, "message").text)
        owed = wait.until(EC.visibility_of_element_located((By.ID, "owed-list")))
        card_entry = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'.owed[data-booking="{marco["id"]}"]'))
        check(not driver.find_elements(By.CSS_SELECTOR, f'.owed[data-booking="{ivo["id"]}"]'), "resolved as customer_told, it is owed no more")
        card_entry.find_element(By.CSS_SELECTOR, "button.refund").click()
        wait.until(EC.visibility_of_element_located((By.ID, "refund-reason"))).send_keys("storm: port closed")
        driver.find_element(By.ID, "refund-submit").click()
        wait.until(lambda d: "refund of" in d.find_element(By.ID, "message").text)
        status, body = call(url + "/api/admin/owed", key=admin)
        check([i["bookingId"] for i in body["items"]] == [giulia["id"]], f"the card one is refunded from its owed entry; the lapsed hold remains: {[i['bookingId'] for i in body['items']]}")
        status, body = call(url + "/api/admin/owed?status=resolved", key=admin)
        check([(i["bookingId"], i["resolution"]["how"]) for i in body["items"]] == [(ivo["id"], "customer_told")], "the closed one is kept with how it was closed")
        driver.set_window_size(390, 844)
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="owed"]').click()
        wait.until(EC.visibility_of_element_located((By.ID, "owed-list")))
        check(driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"), "the owed view fits a 390 px phone")
        shot(driver, "owed-390.png")
        driver.set_window_size(1400, 1000)

        print("the day's departures: alice's confirmed boat; every view fits 1400 px and a 390 px phone")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="departures"]').click()
        wait.until(EC.visibility_of_element_located((By.ID, "manifest-date")))
        driver.execute_script("const d = document.getElementById('manifest-date'); d.value = arguments[0]; d.dispatchEvent(new Event('change'));", str(day))
        boat = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'.manifest-resource[data-resource="gozzo-5m"] tr[data-id="{first}"]') or None)[0]
        check("paid" in boat.text and "alice" in boat.text, f"alice sails that day, paid: {boat.text!r}")
        status, body = call(url + f"/api/admin/manifest?date={day}&resourceId=gozzo-5m", key=admin)
        ids = [b["bookingId"] for slot in body["resources"][0]["slots"] for b in slot["bookings"]]
        check(status == 200 and ids == [first], f"the manifest API lists the same ({status} {ids})")
        shot(driver, "departures-1400.png")
        fits = "return document.documentElement.scrollWidth <= window.innerWidth"
        for width, height in [(1400, 1000), (390, 844)]:
            driver.set_window_size(width, height)
            for view in visible_tabs(driver):
                driver.find_element(By.CSS_SELECTOR, f'#tabs button[data-view="{view}"]').click()
                wait.until(lambda d: d.find_element(By.ID, "view").text.strip() != "")
                wait.until(lambda d: d.execute_script("return document.querySelector('#view h2') !== null"))
                check(driver.execute_script(fits), f"{view} fits {width} px: {driver.execute_script('return document.documentElement.scrollWidth')}px")
            if width == 390:
                driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="departures"]').click()
                driver.execute_script("const d = document.getElementById('manifest-date'); d.value = arguments[0]; d.dispatchEvent(new Event('change'));", str(day))
                wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'.manifest-resource tr[data-id="{first}"]') or None)
                shot(driver, "departures-390.png")
                driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="bookings"]').click()
                wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#rows tr[data-id]") or None)
                shot(driver, "bookings-390.png")
        driver.set_window_size(1400, 1000)

        print("other views load without errors")
        for view in ["webhooks", "deadLetters", "replays", "audit", "notifications"]:
            driver.find_element(By.CSS_SELECTOR, f'#tabs button[data-view="{view}"]').click()
            wait.until(lambda d: d.find_element(By.ID, "pager").text or d.find_element(By.ID, "message").text)
            check(not driver.find_element(By.ID, "message").text.startswith(("Refused", "Failed")), f"{view} loads")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="audit"]').click()
        wait.until(lambda d: d.find_element(By.ID, "pager").text)
        shot(driver, "audit.png")

        print("API keys: create a client key, use it, revoke it")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="keys"]').click()
        wait.until(EC.visibility_of_element_located((By.ID, "key-form")))
        Select(driver.find_element(By.ID, "key-role")).select_by_value("client")
        driver.find_element(By.ID, "key-name").send_keys("iOS app")
        driver.find_element(By.ID, "key-create").click()
        secret = wait.until(lambda d: d.find_element(By.ID, "key-secret-value").text or None)
        check(secret.startswith("berth_seaboo-test_"), "a new client key is shown once")
        status, body = call(url + "/api/bookings", key=secret, user="alice")
        check(status == 200, f"the new client key reads the user's bookings ({status})")
        status, body = call(url + "/api/credits/reservations", "POST", secret, {"amount": 1}, "alice")
        check(status == 403, f"the client key cannot spend credits ({status})")
        status, listing = call(url + "/api/admin/keys", key=admin)
        created = next(k for k in listing["keys"] if k["name"] == "iOS app")
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{created["id"]}"]')))
        check(secret not in driver.page_source.replace(driver.find_element(By.ID, "key-secret-value").text, ""), "the listing never shows the key")
        shot(driver, "keys.png")
        row.find_element(By.XPATH, ".//button[text()='Revoke']").click()
        WebDriverWait(driver, 5).until(EC.alert_is_present())
        driver.switch_to.alert.accept()
        wait.until(lambda d: "revoked" in d.find_element(By.ID, "message").text)
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{created["id"]}"]')))
        check("revoked" in row.text, "the listing shows the key revoked")
        revoked_at = time.time()
        while call(url + "/api/bookings", key=secret, user="alice")[0] != 401:
            if time.time() - revoked_at > 5:
                break
            time.sleep(0.2)
        elapsed = time.time() - revoked_at
        check(elapsed <= 5, f"the revoked key is refused within 5 s (after {elapsed:.1f} s)")

        print("the operator's world: local times, references, search, a customer's timeline, the overview; 1400 px and a phone")
        year = datetime.date.today().year
        july = datetime.date(year + 1, 7, 14)
        january = datetime.date(year + 1 if datetime.date.today() >= datetime.date(year, 1, 7) else year, 1, 14)
        rosa = {}
        for name, date, expected in [("july", july, "15:30:00"), ("january", january, "16:30:00")]:
            status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "sunset-cruise", "slot": f"{date}T17:30", "seats": 2}, "rosa")
            check(status == 201 and body["booking"]["start"].startswith(f"{date}T{expected}"),
                  f"17:30 in Rome on {date} is {expected}Z ({status} {body.get('booking', body)})")
            rosa[name] = body["booking"]
        check(rosa["july"]["localStart"] == f"{july}T17:30:00+02:00" and rosa["january"]["localStart"] == f"{january}T17:30:00+01:00",
              f"answers carry the local time with its offset: {rosa['july']['localStart']}, {rosa['january']['localStart']}")
        status, body = call(url + f"/api/bookings/{rosa['july']['reference'].lower()}", key=server, user="rosa")
        check(status == 200 and body["booking"]["id"] == rosa["july"]["id"], f"a reference is accepted wherever a booking id is ({status})")

        driver.set_window_size(1400, 1000)
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="bookings"]').click()
        # The tab draws its filters after the click: wait for the field, do not race the page.
        wait.until(EC.visibility_of_element_located((By.ID, "filter-userId"))).send_keys("rosa")
        driver.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
        wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{rosa["january"]["id"]}"]')))
        rows = driver.find_element(By.ID, "rows").text
        check("17:30–19:30 (+02:00)" in rows and "17:30–19:30 (+01:00)" in rows, f"the page shows 17:30–19:30 on both days: {rows!r}")
        check(rosa["july"]["reference"] in rows, "and the references people read out")
        driver.find_element(By.ID, "filter-userId").clear()
        driver.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{card_booking}"]')))
        check("storm warning" in row.text, f"the operator's typed refund reason is shown, not a code: {row.text!r}")
        fits = "const w = document.querySelector('.table-wrap'); return w.scrollWidth <= w.clientWidth + 1;"
        check(driver.execute_script(fits), "at 1400 px the bookings table needs no sideways scrolling")
        shot(driver, "bookings-1400.png")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="purchases"]').click()
        wait.until(lambda d: d.find_element(By.ID, "pager").text)
        check(driver.execute_script(fits), "nor the purchases table")

        def search(text):
            box = driver.find_element(By.ID, "search")
            box.clear()
            box.send_keys(text)
            driver.find_element(By.CSS_SELECTOR, "#search-form button").click()
            return wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#search-results tr[data-kind]") or d.find_elements(By.ID, "search-empty") or None)

        hits = search("  " + rosa["july"]["reference"].lower()[:3] + "-" + rosa["july"]["reference"].lower()[3:])
        check([h.get_attribute("data-id") for h in hits] == [str(rosa["july"]["id"])], f"the reference, as a customer spells it, finds the booking: {[h.text for h in hits]}")
        hit_when = hits[0].find_element(By.CSS_SELECTOR, ".hit-when").text
        hit_amount = hits[0].find_element(By.CSS_SELECTOR, ".hit-amount").text
        check(re.search(r"\d+ Jul \d{4} 17:30 \(\+02:00\)", hit_when) is not None, f"a hit shows its date in the app's zone: {hit_when!r}")
        check(hit_amount.endswith(" EUR") and "null" not in driver.find_element(By.ID, "view").text, f"a hit shows its amount, and no stray null: {hit_amount!r}")
        check("times in Europe/Rome" in driver.find_element(By.ID, "app-zone").text, "the header names the zone every time is in")
        shot(driver, "search-1400.png")
        hits = search("carla")
        check(any(h.get_attribute("data-kind") == "user" for h in hits), f"a user id finds the customer: {[h.text for h in hits]}")
        hits = search("MK5TTTVWJH")
        check(driver.find_elements(By.ID, "search-empty") and "App Store Server API" in driver.find_element(By.ID, "apple-lookup").text,
              "an Apple order id without Apple's API key says what is missing")
        search("carla")
        driver.find_element(By.CSS_SELECTOR, '#search-results a.user[data-user="carla"]').click()
        timeline = wait.until(EC.visibility_of_element_located((By.ID, "timeline")))
        kinds = {li.get_attribute("data-kind") for li in timeline.find_elements(By.TAG_NAME, "li")}
        check({"booking", "booking_change", "card_payment", "refund", "purchase"} <= kinds, f"carla's timeline has her booking and its changes, card payment, refunds and purchase: {kinds}")
        check("storm warning" in timeline.text and "fuel not used" in timeline.text, "with the operator's reasons")
        words = [li.find_elements(By.TAG_NAME, "span")[2].text for li in timeline.find_elements(By.TAG_NAME, "li")]
        codes = [w for w in words if re.search(r"notification\.|admin:|user:|_|→ [a-z]+_", w)]
        check(not codes, f"the timeline is in plain words, no internal codes: {codes}")
        check(any(w.startswith("Card refund of ") and " EUR" in w for w in words), f"card refunds with their amount: {words}")
        header = driver.find_element(By.ID, "customer-header").text
        paid = driver.find_element(By.ID, "customer-paid").text
        check("Paid" in header and "Refunded" in header and "First seen" in header and "EUR" in paid, f"the customer page's header: {header!r}")
        shot(driver, "timeline-1400.png")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="overview"]').click()
        wait.until(EC.visibility_of_element_located((By.ID, "chart-bookings")))
        bars = driver.find_elements(By.CSS_SELECTOR, "#chart-bookings rect")
        check(len(bars) >= 1, f"the bookings chart draws a bar per day with bookings ({len(bars)})")
        money = driver.find_element(By.ID, "overview-totals").text
        check("EUR" in money, f"money in per currency: {money!r}")
        check(driver.find_elements(By.CSS_SELECTOR, "#chart-money-EUR rect"), "a money chart for EUR")
        shot(driver, "overview-1400.png")

        driver.set_window_size(390, 844)
        wait.until(EC.visibility_of_element_located((By.ID, "chart-bookings")))
        width = driver.execute_script("return document.documentElement.scrollWidth")
        check(width <= 400, f"the overview fits a 390 px phone: {width}px")
        nav = driver.execute_script("return document.getElementById('tabs').getBoundingClientRect().height")
        check(nav <= 56, f"the navigation is one compact line on a phone ({nav}px high)")
        shot(driver, "overview-390.png")
        search(rosa["january"]["reference"])
        check(driver.execute_script("return document.documentElement.scrollWidth") <= 400, "search results fit the phone")
        shot(driver, "search-390.png")
        driver.find_element(By.CSS_SELECTOR, '#search-results a.user[data-user="rosa"]').click()
        wait.until(EC.visibility_of_element_located((By.ID, "timeline")))
        check(driver.execute_script("return document.documentElement.scrollWidth") <= 400, "the timeline fits the phone")
        shot(driver, "timeline-390.png")

        print("the season: a boat added with a season price, the week's calendar, a booking moved, dates closed and resolved")
        driver.set_window_size(1400, 1000)
        set_value = "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'));"
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="inventory"]').click()
        wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, '#inventory tr[data-id="gozzo-5m"]')))
        driver.find_element(By.ID, "add-resource").click()
        wait.until(EC.visibility_of_element_located((By.ID, "resource-id"))).send_keys("gozzo-6m")
        driver.find_element(By.ID, "resource-name").send_keys("Gozzo 6 m")
        driver.find_element(By.ID, "resource-price").send_keys("90")
        driver.find_element(By.ID, "resource-submit").click()
        row = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, '#inventory tr[data-id="gozzo-6m"]')))
        check("90.00" in row.text and "on sale" in row.text, f"the new boat is listed, on sale: {row.text!r}")
        status, body = call(url + "/api/resources", key=server)
        check(status == 200 and "gozzo-6m" in [r["id"] for r in body["resources"]], "customers can book it at once, without a restart")
        august = f"{day.year + 1}-08"
        row.find_element(By.CSS_SELECTOR, "button.season").click()
        driver.execute_script(set_value, wait.until(EC.visibility_of_element_located((By.ID, "season-from"))), f"{august}-01")
        driver.execute_script(set_value, driver.find_element(By.ID, "season-to"), f"{august}-31")
        driver.find_element(By.ID, "season-price").send_keys("95")
        driver.find_element(By.CSS_SELECTOR, '#season-form input[value="sat"]').click()
        driver.find_element(By.ID, "season-submit").click()
        # The list is drawn anew after each change: read it by script, never through an element that may be replaced.
        row_text = "const r = document.querySelector('#inventory tr[data-id=\"gozzo-6m\"]'); return r ? r.innerText : '';"
        text = wait.until(lambda d: "95.00" in d.execute_script(row_text) and d.execute_script(row_text))
        check(f"{august}-01" in text and "sat" in text, f"the season is shown with its days: {text!r}")
        row = driver.find_element(By.CSS_SELECTOR, '#inventory tr[data-id="gozzo-6m"]')
        status, body = call(url + "/api/admin/resources", key=admin)
        prices = [i["resource"].get("prices") for i in body["resources"] if i["resource"]["id"] == "gozzo-6m"][0]
        check(prices == [{"from": f"{august}-01", "to": f"{august}-31", "weekdays": ["sat"], "pricePerDayMinor": 9500}], f"the API has the rule: {prices}")
        row.find_element(By.CSS_SELECTOR, "button.season").click()
        driver.execute_script(set_value, wait.until(EC.visibility_of_element_located((By.ID, "season-from"))), f"{august}-01")
        driver.execute_script(set_value, driver.find_element(By.ID, "season-to"), f"{august}-31")
        driver.find_element(By.ID, "season-price").send_keys("990")
        driver.find_element(By.ID, "season-submit").click()
        message = wait.until(lambda d: d.find_element(By.ID, "message").text.startswith("Refused") and d.find_element(By.ID, "message").text)
        check("price band" in message, f"a day price no product pays for is refused with why: {message!r}")
        shot(driver, "inventory-1400.png")

        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="calendar"]').click()
        picker = wait.until(EC.visibility_of_element_located((By.ID, "calendar-resource")))
        check(Select(picker).first_selected_option.get_attribute("value") == "gozzo-5m", "the calendar opens on the first resource")
        wait.until(EC.visibility_of_element_located((By.ID, "calendar-week-grid")))
        driver.execute_script(set_value, driver.find_element(By.ID, "calendar-week"), str(day))
        cell = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#calendar-week-grid button.cal-booking[data-id="{first}"]')))
        check("alice" in cell.text, f"alice's boat is in its day's column: {cell.text!r}")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#calendar-week-grid .day")) == 7, "seven days, one column each")
        shot(driver, "calendar-1400.png")
        target = day + datetime.timedelta(days=3)
        cell.click()
        driver.execute_script(set_value, wait.until(EC.visibility_of_element_located((By.ID, "move-start"))), str(target))
        driver.execute_script(set_value, driver.find_element(By.ID, "move-end"), str(target + datetime.timedelta(days=1)))
        driver.find_element(By.ID, "move-submit").click()
        message = wait.until(lambda d: "moved" in d.find_element(By.ID, "message").text and d.find_element(By.ID, "message").text)
        check(str(target.day) in message, f"the page says where it went: {message!r}")
        status, body = call(url + f"/api/admin/bookings?resourceId=gozzo-5m&status=confirmed", key=admin)
        moved = [b for b in body["items"] if b["id"] == first]
        check(moved and moved[0]["localStart"].startswith(str(target)), f"the API has it on {target}: {moved[0]['localStart'] if moved else None}")
        wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#calendar-week-grid .day[data-day="{target}"] button.cal-booking[data-id="{first}"]')))

        driver.find_element(By.ID, "close-dates").click()
        driver.execute_script(set_value, wait.until(EC.visibility_of_element_located((By.ID, "closure-from"))), str(target))
        driver.execute_script(set_value, driver.find_element(By.ID, "closure-to"), str(target))
        driver.find_element(By.ID, "closure-reason").send_keys("storm: the harbour master closed the port")
        driver.find_element(By.ID, "closure-submit").click()
        inside = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#closure-bookings li[data-id="{first}"]')))
        check("alice" in inside.text, f"the closure lists what is already sold inside: {inside.text!r}")
        closed = wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#calendar-week-grid .day[data-day="{target}"] .closure')))
        check("storm" in closed.text, f"the day shows it closed, with the reason: {closed.text!r}")
        status, body = call(url + "/api/bookings", "POST", server, {"resourceId": "gozzo-5m", "start": str(target), "end": str(target + datetime.timedelta(days=1))}, "zed")
        check(status == 409 and body["error"]["code"] == "resource_closed", f"a new booking that day is refused ({status} {body.get('error', {}).get('code')})")
        shot(driver, "calendar-closure-1400.png")
        driver.find_element(By.ID, "closure-cancel-all").click()
        message = wait.until(lambda d: d.find_element(By.ID, "message").text.startswith("Resolved") and d.find_element(By.ID, "message").text)
        check("1 cancelled" in message, f"the page says what became of each: {message!r}")
        status, body = call(url + f"/api/admin/bookings?resourceId=gozzo-5m&status=cancelled", key=admin)
        check(first in [b["id"] for b in body["items"]], "alice's booking is cancelled")

        fits = "return document.documentElement.scrollWidth <= window.innerWidth"
        driver.set_window_size(390, 844)
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="calendar"]').click()
        driver.execute_script(set_value, wait.until(EC.visibility_of_element_located((By.ID, "calendar-week"))), str(target))
        wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#calendar-week-grid .day[data-day="{target}"] .closure')))
        check(driver.execute_script(fits), f"the calendar fits a 390 px phone: {driver.execute_script('return document.documentElement.scrollWidth')}px")
        shot(driver, "calendar-390.png")
        driver.find_element(By.ID, "close-dates").click()
        wait.until(EC.visibility_of_element_located((By.ID, "closure-reason")))
        check(driver.execute_script(fits), "the closure form fits the phone")
        shot(driver, "closure-390.png")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="inventory"]').click()
        wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, '#inventory tr[data-id="gozzo-6m"]')))
        check(driver.execute_script(fits), "the inventory fits the phone")
        shot(driver, "inventory-390.png")

        print("narrow screen (phone)")
        driver.set_window_size(400, 860)
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="bookings"]').click()
        wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, f'#rows tr[data-id="{first}"]')))
        width = driver.execute_script("return document.documentElement.scrollWidth")
        check(width <= 420, f"the page fits a phone's width (the table scrolls inside its frame): {width}px")
        shot(driver, "bookings-phone.png")

        print("sign out")
        driver.find_element(By.ID, "signout").click()
        check(driver.execute_script("return sessionStorage.getItem('berth.adminKey')") is None, "the key is forgotten")

        print("a credits app's admin")
        for user, amount, reason in [("mai", 20, "launch promotion"), ("ana", 5, "generation failed after commit (ticket 4411)")]:
            status, _ = call(url + "/api/admin/credits/adjustments", "POST", credits_admin, {"userId": user, "amount": amount, "reason": reason})
            check(status == 201, f"an operator adjusts {user}'s balance through the API ({status})")
        driver.set_window_size(1280, 900)
        wait.until(EC.visibility_of_element_located((By.ID, "key"))).send_keys(credits_admin)
        driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
        wait.until(lambda d: d.find_element(By.ID, "app-name").text.startswith("AI Image Stylist"))
        wait.until(EC.visibility_of_element_located((By.ID, "chart-credits")))
        check(not driver.find_elements(By.ID, "chart-bookings"), "a credits app's overview draws credits, not bookings")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="ledger"]').click()
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#view h2").text == "Credit ledger")
        wait.until(lambda d: d.find_element(By.ID, "pager").text or d.find_element(By.ID, "message").text)
        check(visible_tabs(driver) == ["overview", "ledger", "products", "purchases", "unapplied", "notifications", "webhooks", "deadLetters", "replays", "audit", "keys"],
              f"no bookings or subscriptions views: {visible_tabs(driver)}")
        types = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#filter-creditType option")]
        check(types == ["", "credits"], f"the credit type filter offers the app's types: {types}")
        ledger = driver.find_element(By.ID, "rows").text
        check("ticket 4411" in ledger and "launch promotion" in ledger, "the ledger lists the adjustments with their reasons")
        shot(driver, "ledger.png")
        driver.find_element(By.CSS_SELECTOR, '#tabs button[data-view="products"]').click()
        rows = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#view table tr") or None)
        text = driver.find_element(By.ID, "view").text
        check("com.aiimagestylist.credits.starter" in text and len(rows) > 1, "its credit products are listed")
        check(not driver.find_element(By.ID, "message").text.startswith(("Refused", "Failed")), "without a refusal")
        driver.find_element(By.ID, "signout").click()
        errors = console_errors(driver)
        check(not errors, f"no console error at the end: {errors[:3]}")
        print(f"browser test: all checks passed (screenshots in {SHOTS})")
    finally:
        if driver:
            driver.quit()
        process.kill()
        process.wait(timeout=10)
        stand_in.kill()
        stand_in.wait(timeout=10)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
