#!/usr/bin/env bash
# Load benchmark of POST /api/verify-purchase (not a test; nothing here runs in CI).
#
# Starts `berth serve` (release build) on a fresh SQLite file on 127.0.0.1 and reports:
#   - cold start: launch to the first answer of /healthz;
#   - first-time verify-purchase with about 1,000 purchases in the database (after a warm-up);
#   - first-time verify-purchase again once COUNT more purchases are in the database (cost must
#     not grow with history);
#   - replays of confirmed purchases (same user, same booking);
#   - requests/s, p50/p99 latency and errors of each phase, the server's peak RSS, and a
#     consistency check (purchase rows = confirmed bookings, nothing lost or doubled).
# Bookings are created by their users (HS256 tokens of the benchmark tenant), each with its own
# TestKit-signed transaction. wrk talks to 127.0.0.1 only; every phase is bounded in time and
# count, and everything stops by itself.
#
#   benchmarks/verify-purchase.sh     # COUNT=100000 MEASURE=8 BATCH=60000 REPLAY_DURATION=5 CONNECTIONS=16 THREADS=2
#   BERTH=/tmp/berth-before benchmarks/verify-purchase.sh   # another release binary (BENCH=…: another benchmark tool)
# The four batches of pending bookings are created in turn, so their rates (printed) show whether a
# new booking gets slower as pending bookings of its slot accumulate (all are on one slot).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
COUNT=${COUNT:-100000}
MEASURE=${MEASURE:-8}
BATCH=${BATCH:-60000}
REPLAY_DURATION=${REPLAY_DURATION:-5}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-2}
PORT=${PORT:-18080}
WARM=1000

if ! command -v wrk >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
# BERTH=path/to/berth measures another build (say, a copy of an earlier commit's release binary,
# for a before/after on the same machine); the default builds and uses this checkout's release build.
if [ -z "${BERTH:-}" ]; then
    (cd "$repo" && swift build -c release --product berth >/dev/null)
fi
[ -n "${BENCH:-}" ] || (cd "$repo" && swift build -c release --product BerthBenchmarks >/dev/null)
berth="${BERTH:-$repo/.build/release/berth}"
bench="${BENCH:-$repo/.build/release/BerthBenchmarks}"

work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# The benchmark tenant (one place for every benchmark: benchmarks/catalog.json).
cp "$repo/benchmarks/catalog.json" "$work/catalog.json"
export BENCH_JWT_SECRET="benchmark-secret-$(date +%s)-berth"
"$berth" testkit init "$work/ca" >/dev/null
storage=(--database "sqlite:$work/bench.sqlite" --catalog "$work/catalog.json" --migrations "$repo/migrations")
"$berth" migrate "${storage[@]}" >/dev/null
key=$("$berth" keys create --tenant bench --role server "${storage[@]}")
admin=$("$berth" keys create --tenant bench --role admin "${storage[@]}")

launched=$(date +%s%N)
BERTH_LOG_LEVEL=error "$berth" serve --port "$PORT" "${storage[@]}" &
server_pid=$!
until curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; do
    kill -0 "$server_pid" 2>/dev/null || { echo "server died"; exit 1; }
    sleep 0.005
done
echo "== cold start to first answer: $(( ($(date +%s%N) - launched) / 1000000 )) ms (migrated database, release build)"

prepare() { # NAME COUNT PREFIX
    "$bench" prepare-purchases --url "http://127.0.0.1:$PORT" --jwt-secret "$BENCH_JWT_SECRET" --issuer https://bench.invalid \
        --ca "$work/ca" --count "$2" --user-prefix "$3" --out "$work/$1.tsv"
}
drive() { # NAME SECONDS [replay]
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2s" --latency -s "$repo/benchmarks/verify-purchase.lua" \
        "http://127.0.0.1:$PORT" -- "$work/$1.tsv" "$key" "$THREADS" ${3:-} | grep -E "Requests/sec|Latency |50%|99%|wrk:" | sed 's/^/   /'
}
total() { # admin listing path → its total
    curl -sf "http://127.0.0.1:$PORT$1" -H "Authorization: Bearer $admin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])'
}

echo "== preparing $WARM + $BATCH + $COUNT + $BATCH pending bookings and signed transactions"
prepare warm "$WARM" w-
prepare early "$BATCH" a-
prepare fill "$COUNT" f-
prepare late "$BATCH" b-

drive warm 4 >/dev/null
echo "== first-time verify-purchase with $(total '/api/admin/purchases?limit=1') purchases in the database: ${MEASURE}s, $CONNECTIONS connections"
early=$(drive early "$MEASURE")
echo "$early"
rate=$(echo "$early" | awk '/Requests\/sec/ {print int($2)}')
# Long enough for every fill line at 75 % of the rate just measured (then wrk repeats the last line).
fill_seconds=$(( COUNT * 4 / (3 * (rate > 100 ? rate : 100)) + 5 ))
echo "== filling: $COUNT more first-time purchases (${fill_seconds}s)"
drive fill "$fill_seconds" | grep "Requests/sec" || true
echo "== first-time verify-purchase with $(total '/api/admin/purchases?limit=1') purchases in the database: ${MEASURE}s"
drive late "$MEASURE"
echo "== replays of confirmed purchases (same user, same booking): ${REPLAY_DURATION}s"
drive warm "$REPLAY_DURATION" replay

echo "== server"
grep -E "VmHWM|VmRSS" "/proc/$server_pid/status" | sed 's/^/   /'
purchases=$(total '/api/admin/purchases?limit=1')
confirmed=$(total '/api/admin/bookings?status=confirmed&limit=1')
echo "   purchase rows: $purchases, confirmed bookings: $confirmed"
if [ "$purchases" != "$confirmed" ]; then echo "MISMATCH: confirmed bookings != purchase rows"; exit 1; fi
echo "   consistent: every purchase confirmed exactly one booking"
