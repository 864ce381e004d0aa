#!/usr/bin/env python3
"""Crash test of Berth on PostgreSQL with two instances (run through benchmarks/crash.sh).

Phase 1 drives a bounded burst of verify-purchase calls (bookings and credit packs, each with its
own TestKit-signed transaction) over two `berth serve` instances on one PostgreSQL, and kills one
instance with SIGKILL several times mid-burst (each comes back a moment later). Phase 2 drives
another burst and restarts PostgreSQL itself (immediate shutdown) in the middle. A call that fails
on one instance is tried once on the other, as a load balancer would. Then every call that was
never acknowledged is sent once more (a client's retry).

Phase 3 pays bookings by card through the Stripe stand-in: each payment succeeds at "Stripe" while
its webhook goes to one of the instances, and instances are killed with SIGKILL in the middle (between
the provider's success and Berth's answer, or before the event arrives at all: then nothing but
Berth's own check of overdue payments can find it). Every payment Stripe took must end as exactly one
purchase confirming its booking.

Phase 4 sells credit packs on Google Play through the Play stand-in: each purchase token is sent to
one instance, some instances are killed while the call is in flight, and Google fails the first
consumptions. Every token Berth acknowledged must be credited once and consumed at Google exactly
once (the consumption is owed in the purchase's unit of work and done by whichever instance is alive).

Afterwards it reads the database and prints attempted, acknowledged, present, duplicated and lost;
it exits non-zero unless every acknowledged purchase is present and applied (booking confirmed by
it, or exactly one credit grant for it) and none is applied twice.

Talks to 127.0.0.1 only; every phase is bounded in count and time.
"""
import base64
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

BERTH = os.environ["BERTH"]
WORK = os.environ["WORK"]
DB_URL = os.environ["DB_URL"]          # postgres://… of the database under test
PSQL_URL = os.environ["PSQL_URL"]      # the same database, as psql takes it
PG_DIR = os.environ["PG_DIR"]
REPO = os.environ["REPO"]
BOOKINGS = int(os.environ.get("BOOKINGS", "60"))
CREDITS = int(os.environ.get("CREDITS", "60"))
KILLS = int(os.environ.get("KILLS", "5"))
CARDS = int(os.environ.get("CARDS", "30"))
STRIPE_PORT = int(os.environ["STRIPE_PORT"])
PLAY_PORT = int(os.environ["PLAY_PORT"])
PLAYS = int(os.environ.get("PLAYS", "30"))
RATE = float(os.environ.get("RATE", "40"))          # calls started per second
CONCURRENCY = int(os.environ.get("CONCURRENCY", "8"))
DEADLINE = time.time() + float(os.environ.get("TIME_LIMIT", "600"))


def log(message):
    print(f"crash: {message}", flush=True)


def berth(*arguments, env=None):
    result = subprocess.run([BERTH, *arguments], cwd=WORK, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120)
    if result.returncode != 0:
        raise SystemExit(f"berth {' '.join(arguments[:3])} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def psql(sql):
    result = subprocess.run(["psql", "-At", "-X", "-q", PSQL_URL, "-c", sql], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise SystemExit(f"psql failed: {result.stderr.strip()}")
    return [line.split("|") for line in result.stdout.splitlines() if line]


class Instance:
    def __init__(self, name):
        self.name = name
        self.process = None
        self.port = None
        self.lock = threading.Lock()

    def start(self):
        port_file = os.path.join(WORK, f"{self.name}.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        log_file = open(os.path.join(WORK, f"{self.name}.log"), "a")
        process = subprocess.Popen([BERTH, "serve", "--port", "0", "--port-file", port_file], cwd=WORK, stdout=log_file, stderr=log_file,
                                   env={**os.environ, "BERTH_DATABASE": DB_URL, "BERTH_LOG_LEVEL": "notice"})
        for _ in range(300):
            if os.path.exists(port_file):
                port = int(open(port_file).read().strip() or 0)
                if port and get(port, "/healthz")[0] == 200:
                    with self.lock:
                        self.process, self.port = process, port
                    return
            time.sleep(0.1)
        raise SystemExit(f"{self.name} did not start")

    def kill9(self):
        with self.lock:
            process, self.process, self.port = self.process, None, None
        if process:
            process.send_signal(signal.SIGKILL)
            process.wait()

    def current_port(self):
        with self.lock:
            return self.port


def request(port, method, path, headers, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers={**headers, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=15) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")
    except (OSError, ValueError):
        return None, None


def get(port, path, headers=None):
    return request(port, "GET", path, headers or {})


def transaction_id(jws):
    payload = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["transactionId"]


def prepare(instances, seaboo_key, prefix, hour):
    """Bookings (one user each) and credit-pack purchases (one user each), each with its signed transaction.

    Each phase books the same boat on the same days, so each phase takes its own hour: two phases must
    never ask for overlapping slots (Python's str hash is salted per process, so it cannot pick them)."""
    calls = []
    day0 = int(time.time() // 86400) + 2
    for index in range(BOOKINGS):
        user = f"{prefix}-sailor{index}"
        start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((day0 + index) * 86400 + hour * 3600))
        end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((day0 + index) * 86400 + (hour + 1) * 3600))
        status, body = request(instances[0].current_port(), "POST", "/api/bookings", {"Authorization": f"Bearer {seaboo_key}", "X-User-Id": user},
                               {"resourceId": "gozzo-5m", "start": start, "end": end})
        if status != 201:
            raise SystemExit(f"booking {index} not created: {status} {body}")
        calls.append({"kind": "booking", "user": user, "booking": body["booking"]["id"], "product": "it.seaboo.rental.basic",
                      "bundle": "it.seaboo.app"})
    for index in range(CREDITS):
        calls.append({"kind": "credits", "user": f"{prefix}-painter{index}", "product": "com.aiimagestylist.credits.starter",
                      "bundle": "com.aiimagestylist.app"})

    def sign(call):
        txid = str(random.randrange(10**15, 10**16))
        call["jws"] = berth("testkit", "sign-transaction", "--ca", "berth-ca", "--bundle-id", call["bundle"], "--product", call["product"],
                            "--transaction-id", txid)
        call["transaction"] = transaction_id(call["jws"])
        return call

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(sign, calls))


def send(call, instances, keys, first):
    headers = {"Authorization": f"Bearer {keys[call['kind']]}", "X-User-Id": call["user"]}
    body = {"productId": call["product"], "jwsRepresentation": call["jws"]}
    if call["kind"] == "booking":
        body["bookingId"] = call["booking"]
    for instance in (instances[first], instances[1 - first]):
        port = instance.current_port()
        if port is None:
            continue
        status, answer = request(port, "POST", "/api/verify-purchase", headers, body)
        call.setdefault("statuses", []).append(status)
        if status == 200:
            call["acknowledged"] = True
            return
        if status is not None and status not in (500, 502, 503):
            return  # a refusal: trying elsewhere would not change it


def burst(calls, instances, keys, disrupt):
    """Sends every call at RATE per second over both instances while `disrupt` runs beside it."""
    done = [0]
    lock = threading.Lock()

    def one(index_call):
        index, call = index_call
        send(call, instances, keys, index % 2)
        with lock:
            done[0] += 1

    stop = threading.Event()
    disruptor = threading.Thread(target=disrupt, args=(lambda: done[0], len(calls), stop))
    disruptor.start()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        futures = []
        for index_call in enumerate(calls):
            if time.time() > DEADLINE:
                break
            futures.append(pool.submit(one, index_call))
            time.sleep(1 / RATE)
        for future in futures:
            future.result()
    stop.set()
    disruptor.join()


def stripe(method, path):
    req = urllib.request.Request(f"http://127.0.0.1:{STRIPE_PORT}{path}", method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def card_phase(instances, seaboo_key):
    """Phase 3: bookings paid by card while instances die; returns what the database shows of them."""
    headers = {"Authorization": f"Bearer {seaboo_key}"}
    bookings = {}
    for number in range(CARDS):
        user = f"card-{number}"
        day = time.strftime("%Y-%m-%d", time.gmtime(time.time() + (number + 400) * 86400))
        body = {"resourceId": "gozzo-5m", "start": f"{day}T14:00:00Z", "end": f"{day}T15:00:00Z"}
        for instance in instances * 3:
            port = instance.current_port()
            status, answer = request(port, "POST", "/api/bookings", {**headers, "X-User-Id": user}, body) if port else (None, None)
            if status == 201:
                booking = answer["booking"]["id"]
                break
        else:
            raise SystemExit(f"card phase: booking of {user} failed")
        for instance in instances * 3:
            port = instance.current_port()
            status, answer = request(port, "POST", f"/api/bookings/{booking}/card-payment", {**headers, "X-User-Id": user}) if port else (None, None)
            if status in (200, 201):
                bookings[answer["paymentIntentId"]] = booking
                break
        else:
            raise SystemExit(f"card phase: card payment of booking {booking} failed")
    kills = 0
    for index, intent in enumerate(bookings):
        target = instances[index % 2]
        port = target.current_port() or instances[1 - index % 2].current_port()
        stripe("POST", f"/_standin/webhook-url?url=http://127.0.0.1:{port}/api/stripe/webhooks/seaboo-test")
        if index % 6 == 3:
            # Killed while Stripe's event is on its way: the delivery fails or is cut mid-request.
            threading.Timer(0.002, target.kill9).start()
            kills += 1
        stripe("POST", f"/_standin/payment_intents/{intent}/succeed")
        if target.current_port() is None:
            time.sleep(0.1)
            target.start()
    log(f"card phase: {len(bookings)} payments succeeded at Stripe, {kills} instances killed in flight; waiting for Berth to have them all")
    wanted = ",".join(f"'{intent}'" for intent in bookings)
    deadline = time.time() + 150
    while time.time() < deadline:
        confirmed = psql(f"""SELECT COUNT(*) FROM bookings b JOIN purchases p ON p.id = b.purchase_id
                              WHERE b.status = 'confirmed' AND p.store = 'stripe' AND p.transaction_id IN ({wanted})""")[0][0]
        if int(confirmed) == len(bookings):
            break
        time.sleep(1)
    counts = {tx: int(n) for tx, n in psql(f"SELECT transaction_id, COUNT(*) FROM purchases WHERE store = 'stripe' AND transaction_id IN ({wanted}) GROUP BY transaction_id")}
    confirmed = {int(b): tx for b, tx in psql(f"""SELECT b.id, p.transaction_id FROM bookings b JOIN purchases p ON p.id = b.purchase_id
                                                 WHERE b.status = 'confirmed' AND p.store = 'stripe'""")}
    lost = [intent for intent, booking in bookings.items() if confirmed.get(booking) != intent]
    duplicated = [intent for intent in bookings if counts.get(intent, 0) > 1]
    for intent in lost:
        log(f"LOST: card payment {intent} succeeded at Stripe but booking {bookings[intent]} is not confirmed by it")
    for intent in duplicated:
        log(f"DUPLICATED: card payment {intent}")
    _, deliveries = stripe("GET", "/_standin/deliveries")
    undelivered = sum(1 for delivery in deliveries if delivery.get("status") != 200)
    return {"paid": len(bookings), "events_not_acknowledged": undelivered, "present": sum(1 for intent in bookings if counts.get(intent, 0) >= 1), "lost": len(lost), "duplicated": len(duplicated),
            "kills": kills}


def play_phase(instances, client_key):
    """Phase 4: credit packs bought on Google Play while instances die; returns what Berth and the stand-in show of them."""
    headers = {"Authorization": f"Bearer {client_key}"}
    product = "com.aiimagestylist.credits.popular"
    # Google is down for the first consumptions: they wait in the database for a retry.
    req = urllib.request.Request(f"http://127.0.0.1:{PLAY_PORT}/_standin/fail?call=consume&count=5", method="POST", data=b"")
    urllib.request.urlopen(req, timeout=30).read()
    tokens = {}
    kills = 0
    for number in range(PLAYS):
        user = f"play-{number}"
        token = berth("testkit", "play", "purchase", "--dir", os.path.join(WORK, "play-kit"), "--package", "com.aiimagestylist.app", "--product", product,
                      "--account-id", user)
        target = instances[number % 2]
        if number % 6 == 3:
            threading.Timer(0.002, target.kill9).start()
            kills += 1
        acknowledged = False
        for instance in [target, instances[1 - number % 2], target]:
            port = instance.current_port()
            status, _ = request(port, "POST", "/api/verify-purchase", {**headers, "X-User-Id": user}, {"productId": product, "purchaseToken": token}) if port else (None, None)
            if status == 200:
                acknowledged = True
                break
        tokens[token] = (user, acknowledged)
        if target.current_port() is None:
            time.sleep(0.1)
            target.start()
    log(f"play phase: {len(tokens)} purchases, {kills} instances killed in flight; waiting for Google to have every consumption")
    wanted = ",".join(f"'{token}'" for token in tokens)
    deadline = time.time() + 120
    while time.time() < deadline:
        pending = psql(f"SELECT COUNT(*) FROM play_acknowledgements WHERE status <> 'done' AND purchase_token IN ({wanted})")[0][0]
        if pending == "0":
            break
        time.sleep(1)
    counts = {tx: int(n) for tx, n in psql(f"SELECT transaction_id, COUNT(*) FROM purchases WHERE store = 'google_play' AND transaction_id IN ({wanted}) GROUP BY transaction_id")}
    grants = {tx: int(n) for tx, n in psql(f"""SELECT p.transaction_id, COUNT(l.id) FROM purchases p JOIN credit_ledger l ON l.purchase_id = p.id AND l.type = 'purchase'
                                               WHERE p.store = 'google_play' AND p.transaction_id IN ({wanted}) GROUP BY p.transaction_id""")}
    lost = duplicated = unconsumed = 0
    for token, (user, acknowledged) in tokens.items():
        record = json.load(open(os.path.join(WORK, "play-kit", "purchases", token + ".json")))
        if acknowledged and (counts.get(token, 0) != 1 or grants.get(token, 0) != 1):
            lost += 1
            log(f"LOST: play purchase of {user} acknowledged but not credited once")
        if counts.get(token, 0) > 1 or grants.get(token, 0) > 1 or record["consumeCalls"] > 1:
            duplicated += 1
            log(f"DUPLICATED: play purchase of {user}")
        if counts.get(token, 0) == 1 and record["consumeCalls"] != 1:
            unconsumed += 1
            log(f"NOT CONSUMED: play purchase of {user} credited but Google consumed it {record['consumeCalls']} times")
    return {"purchases": len(tokens), "acknowledged": sum(1 for _, a in tokens.values() if a), "present": sum(1 for t in tokens if counts.get(t, 0) >= 1),
            "lost": lost, "duplicated": duplicated, "not_consumed_once": unconsumed, "kills": kills}


def main():
    seaboo_key = berth("keys", "create", "--tenant", "seaboo-test", "--role", "server", "--database", DB_URL)
    credits_key = berth("keys", "create", "--tenant", "aistylist-test", "--role", "server", "--database", DB_URL)
    keys = {"booking": seaboo_key, "credits": credits_key}
    instances = [Instance("a"), Instance("b")]
    for instance in instances:
        instance.start()

    # Phase 1: kill -9 one instance at a time, KILLS times, spread over the burst.
    calls1 = prepare(instances, seaboo_key, "k", hour=8)
    kills = [0]

    def killer(progress, total, stop):
        for number in range(KILLS):
            target = (number + 1) * total // (KILLS + 2)
            while progress() < target and not stop.is_set():
                time.sleep(0.005)
            victim = instances[number % 2]
            victim.kill9()
            kills[0] += 1
            log(f"kill -9 {victim.name} after {progress()} of {total} calls")
            time.sleep(0.2)
            victim.start()

    log(f"phase 1: {len(calls1)} calls, {KILLS} kills")
    burst(calls1, instances, keys, killer)

    # Phase 2: restart PostgreSQL (immediate shutdown) in the middle of a burst.
    calls2 = prepare(instances, seaboo_key, "r", hour=10)
    restarts = [0]

    def restarter(progress, total, stop):
        while progress() < total // 3 and not stop.is_set():
            time.sleep(0.005)
        log(f"restarting PostgreSQL (immediate) after {progress()} of {total} calls")
        subprocess.run([os.path.join(REPO, "scripts/postgres-temp"), "restart", PG_DIR], check=True, timeout=120)
        restarts[0] += 1
        log(f"PostgreSQL is back after {progress()} of {total} calls")

    log(f"phase 2: {len(calls2)} calls, a database restart")
    burst(calls2, instances, keys, restarter)

    card_report = card_phase(instances, seaboo_key)
    play_report = play_phase(instances, berth("keys", "create", "--tenant", "aistylist-test", "--role", "client", "--database", DB_URL))

    calls = calls1 + calls2
    acknowledged_first = sum(1 for call in calls if call.get("acknowledged"))
    # Clients retry what was never acknowledged: a retry applies it now or answers the earlier success.
    for index, call in enumerate(calls):
        if not call.get("acknowledged"):
            send(call, instances, keys, index % 2)
    for instance in instances:
        instance.kill9()

    # What the database holds.
    txids = [call["transaction"] for call in calls]
    quoted = ",".join(f"'{t}'" for t in txids)
    rows = psql(f"SELECT transaction_id, COUNT(*) FROM purchases WHERE transaction_id IN ({quoted}) GROUP BY transaction_id")
    purchases = {tx: int(count) for tx, count in rows}
    confirmed = {int(b): p for b, p in psql("SELECT b.id, p.transaction_id FROM bookings b JOIN purchases p ON p.id = b.purchase_id WHERE b.status = 'confirmed'")}
    grants = {}
    for tx, count in psql(f"""SELECT p.transaction_id, COUNT(l.id) FROM purchases p LEFT JOIN credit_ledger l ON l.purchase_id = p.id AND l.type = 'purchase'
                              WHERE p.transaction_id IN ({quoted}) GROUP BY p.transaction_id"""):
        grants[tx] = int(count)
    balances_ok = psql("""SELECT COUNT(*) FROM credit_balances b WHERE b.balance <> (SELECT COALESCE(SUM(l.amount), 0) FROM credit_ledger l
                          WHERE l.tenant_id = b.tenant_id AND l.user_id = b.user_id AND l.credit_type = b.credit_type)""")[0][0] == "0"

    attempted = len(calls)
    acknowledged = [call for call in calls if call.get("acknowledged")]
    present = duplicated = lost = 0
    for call in acknowledged:
        tx = call["transaction"]
        applied = purchases.get(tx, 0) == 1 and (confirmed.get(call["booking"]) == tx if call["kind"] == "booking" else grants.get(tx) == 1)
        if purchases.get(tx, 0) >= 1:
            present += 1
        if not applied:
            lost += 1
            log(f"LOST: {call['kind']} transaction {tx} acknowledged ({call.get('statuses')}) but not applied")
    for call in calls:
        tx = call["transaction"]
        if purchases.get(tx, 0) > 1 or grants.get(tx, 0) > 1:
            duplicated += 1
            log(f"DUPLICATED: {call['kind']} transaction {tx}")
    interrupted = sum(1 for call in calls if None in call.get("statuses", []))
    print(json.dumps({"attempted": attempted, "interrupted_in_flight": interrupted, "acknowledged_before_retry": acknowledged_first, "acknowledged": len(acknowledged),
                      "present": present, "duplicated": duplicated, "lost": lost, "instance_kills": kills[0], "database_restarts": restarts[0],
                      "balances_match_ledger": balances_ok, "card_payments": card_report,
                      "play_purchases": play_report}))
    failed = lost > 0 or duplicated > 0 or present != len(acknowledged) or not balances_ok or kills[0] < KILLS or restarts[0] < 1
    failed = failed or card_report["lost"] > 0 or card_report["duplicated"] > 0 or card_report["paid"] < 1 or card_report["kills"] < 2
    failed = failed or play_report["lost"] > 0 or play_report["duplicated"] > 0 or play_report["not_consumed_once"] > 0 or play_report["present"] < 1
    if failed:
        log("FAILED")
        sys.exit(1)
    log("ok: every acknowledged purchase is present and applied once")


if __name__ == "__main__":
    main()
