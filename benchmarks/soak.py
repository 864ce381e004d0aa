#!/usr/bin/env python3
"""The load half of benchmarks/soak: holds a mixed load on a running Berth for a set time and
prints, every INTERVAL seconds, the server's resident memory (with its C heap in use and freed-but-kept
and SQLite's part, from /metrics), open descriptors and each kind of
request's rate and latency. Talks to 127.0.0.1 only; stops by itself after DURATION seconds.

    soak.py URL SERVER_PID KEY PURCHASES_TSV RENEWALS_TSV REPORT_JSON

Kinds, each paced to its own rate by its own threads (keep-alive connections):
  purchase      POST /api/verify-purchase, a new credit-pack purchase each (PURCHASE_RATE/s)
  read          GET /api/entitlements and GET /api/credits for users who bought (READ_RATE/s)
  notification  POST /api/apple/notifications/bench, signed DID_RENEW renewals (NOTIFY_RATE/s)
  webhook       what Berth delivers to the tenant's endpoint (served here; counted and timed)
"""
import http.client
import http.server
import json
import os
import statistics
import sys
import threading
import time

URL, PID, KEY, PURCHASES, RENEWALS, REPORT = sys.argv[1:7]
DURATION = float(os.environ.get("DURATION", "1800"))
INTERVAL = float(os.environ.get("INTERVAL", "60"))
WARMUP = float(os.environ.get("WARMUP", str(min(300.0, DURATION / 4))))
RATES = {"purchase": float(os.environ.get("PURCHASE_RATE", "40")),
         "read": float(os.environ.get("READ_RATE", "150")),
         "notification": float(os.environ.get("NOTIFY_RATE", "20"))}
WORKERS = {"purchase": 4, "read": 6, "notification": 2}
WEBHOOK_PORT = int(os.environ.get("WEBHOOK_PORT", "0"))
host, port = URL.split("//")[1].split(":")
port = int(port)


def lines(path):
    with open(path) as handle:
        return [line.rstrip("\n").split("\t", 1) for line in handle if "\t" in line]


purchases = lines(PURCHASES)
renewals = lines(RENEWALS)
lock = threading.Lock()
samples = {kind: [] for kind in list(RATES) + ["webhook"]}   # (seconds, ok) of the current interval
errors = {kind: 0 for kind in samples}
totals = {kind: 0 for kind in samples}
bought = []          # users whose purchase was answered 200 (read by the readers)
next_purchase = [0]
next_renewal = [0]
stop = threading.Event()
began = time.monotonic()


def record(kind, seconds, ok):
    with lock:
        samples[kind].append(seconds)
        totals[kind] += 1
        if not ok:
            errors[kind] += 1


def take(counter, items):
    with lock:
        index = counter[0]
        counter[0] += 1
    return items[index] if index < len(items) else None


def worker(kind, index):
    rate = RATES[kind] / WORKERS[kind]
    if rate <= 0:
        return
    connection = http.client.HTTPConnection(host, port, timeout=30)
    due = time.monotonic() + index / RATES[kind]
    n = 0
    while not stop.is_set():
        now = time.monotonic()
        if due > now:
            stop.wait(due - now)
            if stop.is_set():
                break
        due += 1 / rate
        n += 1
        if kind == "purchase":
            item = take(next_purchase, purchases)
            if item is None:
                continue
            user, body = item
            method, path, headers = "POST", "/api/verify-purchase", {"Authorization": f"Bearer {KEY}", "X-User-Id": user, "Content-Type": "application/json"}
        elif kind == "notification":
            item = take(next_renewal, renewals)
            if item is None:
                continue
            body = item[1]
            method, path, headers = "POST", "/api/apple/notifications/bench", {"Content-Type": "application/json"}
        else:
            with lock:
                user = bought[(n * 7919 + index) % len(bought)] if bought else "nobody"
            body = None
            method, path, headers = "GET", ("/api/entitlements" if n % 2 else "/api/credits"), {"Authorization": f"Bearer {KEY}", "X-User-Id": user}
        started = time.monotonic()
        ok = False
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            ok = response.status == 200
            if ok and kind == "purchase":
                with lock:
                    bought.append(user)
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection(host, port, timeout=30)
        record(kind, time.monotonic() - started, ok)
    connection.close()


class Hooks(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        started = time.monotonic()
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
        record("webhook", time.monotonic() - started, True)

    def log_message(self, *args):
        pass


def process(pid):
    rss = 0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return rss, fds, cpu


def engine(url):
    """The server's own account of its memory, from /metrics: the C heap in use and freed-but-kept,
    and SQLite's part of the heap (absent on PostgreSQL)."""
    figures = {}
    try:
        connection = http.client.HTTPConnection(host, port, timeout=10)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
    except OSError:
        return figures
    wanted = {'berth_process_heap_bytes{state="in_use"}': "heap_in_use", 'berth_process_heap_bytes{state="free"}': "heap_free",
              "berth_sqlite_memory_bytes": "sqlite"}
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name in wanted:
            try:
                figures[wanted[name]] = float(value)
            except ValueError:
                pass
    return figures


def percentile(values, q):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main():
    hooks = http.server.ThreadingHTTPServer(("127.0.0.1", WEBHOOK_PORT), Hooks)
    threading.Thread(target=hooks.serve_forever, daemon=True).start()
    threads = [threading.Thread(target=worker, args=(kind, i), daemon=True) for kind in RATES for i in range(WORKERS[kind])]
    for thread in threads:
        thread.start()
    rows = []
    header = f"{'min':>6} {'RSS MB':>7} {'heap':>6} {'free':>6} {'sqlite':>6} {'fds':>5} {'CPU %':>6} | " + " | ".join(f"{kind[:5]:>5}/s p50 ms p99 ms err" for kind in ["purchase", "read", "notification"]) + f" | {'hooks/s':>7}"
    print(header, flush=True)
    last_cpu = process(PID)[2]
    last = time.monotonic()
    while time.monotonic() - began < DURATION:
        stop.wait(min(INTERVAL, max(0.0, DURATION - (time.monotonic() - began))))
        now = time.monotonic()
        try:
            rss, fds, cpu = process(PID)
        except OSError:
            print("the server is gone", flush=True)
            stop.set()
            sys.exit(1)
        with lock:
            taken = {kind: samples[kind] for kind in samples}
            for kind in samples:
                samples[kind] = []
            errs = dict(errors)
        span = now - last
        row = {"seconds": round(now - began, 1), "rss": rss, "fds": fds, "cpu_percent": round(100 * (cpu - last_cpu) / span, 1)}
        row.update(engine(URL))
        for kind, values in taken.items():
            row[kind] = {"rate": round(len(values) / span, 1), "p50_ms": round(1000 * percentile(values, 0.5), 2),
                         "p99_ms": round(1000 * percentile(values, 0.99), 2), "errors": errs[kind]}
        rows.append(row)
        last, last_cpu = now, cpu
        mb = lambda key: f"{row[key] / 1048576:6.1f}" if key in row else f"{'-':>6}"
        print(f"{row['seconds'] / 60:6.1f} {rss / 1048576:7.1f} {mb('heap_in_use')} {mb('heap_free')} {mb('sqlite')} {fds:5d} {row['cpu_percent']:6.1f} | " + " | ".join(
            f"{row[k]['rate']:7.1f} {row[k]['p50_ms']:6.2f} {row[k]['p99_ms']:6.2f} {row[k]['errors']:3d}" for k in ["purchase", "read", "notification"])
            + f" | {row['webhook']['rate']:7.1f}", flush=True)
    stop.set()
    for thread in threads:
        thread.join(timeout=35)
    hooks.shutdown()

    settled = [row for row in rows if row["seconds"] > WARMUP]
    if not settled:
        settled = rows[-1:]
    warm_rss = settled[0]["rss"]
    third = max(1, len(settled) // 3)
    middle = statistics.mean(row["rss"] for row in settled[third:2 * third] or settled)
    final = statistics.mean(row["rss"] for row in settled[-third:])
    summary = {
        "duration_s": DURATION, "warmup_s": WARMUP, "rates": RATES,
        "rss_after_warmup_mb": round(warm_rss / 1048576, 1),
        "rss_max_after_warmup_mb": round(max(row["rss"] for row in settled) / 1048576, 1),
        "rss_last_mb": round(rows[-1]["rss"] / 1048576, 1),
        "rss_middle_third_mean_mb": round(middle / 1048576, 1), "rss_last_third_mean_mb": round(final / 1048576, 1),
        "heap_in_use_last_mb": round(rows[-1].get("heap_in_use", 0) / 1048576, 1),
        "heap_free_last_mb": round(rows[-1].get("heap_free", 0) / 1048576, 1),
        "sqlite_last_mb": round(rows[-1].get("sqlite", 0) / 1048576, 1),
        "fds_first": rows[0]["fds"], "fds_last": rows[-1]["fds"], "fds_max": max(row["fds"] for row in rows),
        "totals": totals, "errors": errors,
        "p99_ms_worst_interval": {kind: max(row[kind]["p99_ms"] for row in rows) for kind in ["purchase", "read", "notification", "webhook"]},
        "purchases_answered": len(bought), "purchases_prepared": len(purchases), "renewals_prepared": len(renewals),
        "intervals": rows,
    }
    # Memory that grows after warm-up: the last third's mean more than 5 % (and 4 MB) above the middle third's.
    summary["rss_growing"] = final > middle * 1.05 and final - middle > 4 * 1048576
    with open(REPORT, "w") as handle:
        json.dump(summary, handle, indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k != "intervals"}, indent=1), flush=True)
    ran_out = next_purchase[0] > len(purchases) or next_renewal[0] > len(renewals)
    if ran_out:
        print("NOTE: the prepared purchases or renewals ran out before the end (raise their counts)", flush=True)
    sys.exit(1 if summary["rss_growing"] else 0)


main()
