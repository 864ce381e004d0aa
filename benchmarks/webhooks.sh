#!/usr/bin/env bash
# Webhook deliveries against the writes that make them (issue "Performance III", item 2): one tenant
# whose receiver, on 127.0.0.1, answers 200 at once; credits adjustments for WRITE_SECONDS (default 5), each
# for a user of its own, so each write queues one credits.changed event with a subject of its own;
# wrk sends them as fast as Berth takes them. For each BERTH_WEBHOOK_PARALLEL in PARALLEL (default
# "1 8"), on a fresh SQLite database: the writes' rate, the deliveries' rate (first to last arrival),
# the backlog when the writes ended (queued, not yet delivered), and how long it took to drain.
# Not a test (CI does not run it). 127.0.0.1 only; every wait is bounded; everything stops by itself.
#   benchmarks/webhooks.sh                              # the release build of this checkout
#   BERTH=.build/debug/berth benchmarks/webhooks.sh     # another binary
#   WRITE_SECONDS=5 PARALLEL="1 8 16" CONNECTIONS=16 THREADS=2
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
WRITE_SECONDS=${WRITE_SECONDS:-5}
PARALLEL=${PARALLEL:-"1 8"}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-2}
if ! command -v wrk >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
if [ -z "${BERTH:-}" ]; then (cd "$repo" && swift build -c release --product berth >/dev/null); fi
berth="${BERTH:-$repo/.build/release/berth}"

work=$(mktemp -d /tmp/berth-webhooks.XXXXXX)
server_pid=""
receiver_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    [ -n "$receiver_pid" ] && kill "$receiver_pid" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
export BENCH_JWT_SECRET="benchmark-secret-$(date +%s)-berth"
export BENCH_WEBHOOK_SECRET="webhook-benchmark-secret-0123456789"
"$berth" testkit init "$work/ca" >/dev/null
now() { python3 -c 'import time; print(time.monotonic())'; }
# The server's CPU time so far (user + system, clock ticks), from /proc.
server_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
# Waits (bounded) until FILE holds something.
await_file() { for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.05; done; echo "no $1"; exit 1; }

echo "berth: $("$berth" --version 2>/dev/null || echo "$berth"); ${WRITE_SECONDS} s of writes, wrk -t$THREADS -c$CONNECTIONS"
for parallel in $PARALLEL; do
    rm -f "$work/receiver.port" "$work/receiver.out" "$work/bench.sqlite"* "$work/port"
    python3 "$repo/benchmarks/webhook-receiver.py" "$work/receiver.port" "$work/receiver.out" &
    receiver_pid=$!
    await_file "$work/receiver.port"
    python3 - "$repo/benchmarks/catalog.json" "$work/catalog.json" "$(cat "$work/receiver.port")" <<'PY'
import json, sys
catalog = json.load(open(sys.argv[1]))
for tenant in catalog["tenants"]:
    tenant["webhook"] = {"url": f"http://127.0.0.1:{sys.argv[3]}/hooks", "secretEnv": "BENCH_WEBHOOK_SECRET", "allowLoopbackHTTP": True}
json.dump(catalog, open(sys.argv[2], "w"))
PY
    storage=(--database "sqlite:$work/bench.sqlite" --catalog "$work/catalog.json")
    "$berth" migrate "${storage[@]}" >/dev/null 2>&1
    admin=$("$berth" keys create --tenant bench --role admin "${storage[@]}" 2>/dev/null)
    BERTH_WEBHOOK_PARALLEL=$parallel BERTH_LOG_LEVEL=error "$berth" serve --port 0 --port-file "$work/port" "${storage[@]}" &
    server_pid=$!
    await_file "$work/port"
    url="http://127.0.0.1:$(cat "$work/port")"
    until curl -sf "$url/healthz" >/dev/null 2>&1; do kill -0 "$server_pid" || exit 1; sleep 0.05; done

    cpu_before=$(server_ticks)
    started=$(now)
    output=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${WRITE_SECONDS}s" -s "$repo/benchmarks/adjust.lua" "$url" -- "$admin" "p$parallel-")
    written_at=$(now)
    if echo "$output" | grep -q BERTH-REFUSED; then echo "$output" | grep BERTH-REFUSED | head -3; exit 1; fi
    written=$(echo "$output" | awk '/^BERTH-RESULT/ { print $2 }')
    kill -USR1 "$receiver_pid"
    await_file "$work/receiver.out"
    at_end=$(cut -d' ' -f1 "$work/receiver.out")
    # Drained: nothing left in the outbox (berth_webhook_queue_depth 0), bounded at 5 minutes.
    for _ in $(seq 3000); do
        depth=$(curl -sf "$url/metrics" | awk '/^berth_webhook_queue_depth/ { print $2 }')
        [ "${depth%.*}" = 0 ] && break
        sleep 0.1
    done
    cpu_after=$(server_ticks)
    rm -f "$work/receiver.out"
    kill -USR1 "$receiver_pid"
    await_file "$work/receiver.out"
    read -r count first last < "$work/receiver.out"
    python3 - "$parallel" "$written" "$started" "$written_at" "$at_end" "$count" "$first" "$last" "$((cpu_after - cpu_before))" "$(getconf CLK_TCK)" <<'PY'
import sys
parallel, written, started, written_at, at_end, count, first, last, ticks, hz = sys.argv[1:]
written, at_end, count, ticks, hz = int(written), int(at_end), int(count), int(ticks), int(hz)
started, written_at, first, last = map(float, (started, written_at, first, last))
print(f"BERTH_WEBHOOK_PARALLEL={parallel}: {written} writes answered at {written / (written_at - started):.0f}/s; "
      f"{count} deliveries at {count / max(last - first, 1e-6):.0f}/s "
      f"({count / max(last - first, 1e-6) / max(written / (written_at - started), 1e-6):.2f}× the writes' rate); backlog {count - at_end} when the writes ended, "
      f"drained {max(0.0, last - written_at):.2f} s after; Berth's CPU {ticks * 1e6 / hz / max(written + count, 1):.0f} µs per write+delivery")
PY
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
    kill "$receiver_pid"; wait "$receiver_pid" 2>/dev/null || true; receiver_pid=""
done
