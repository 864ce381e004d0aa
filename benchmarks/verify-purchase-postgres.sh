#!/usr/bin/env bash
# Load benchmark of POST /api/verify-purchase on PostgreSQL (not a test; nothing here runs in CI):
# one or two `berth serve` instances (release build) on one throwaway PostgreSQL on 127.0.0.1,
# first-time purchases then replays, with requests/s and p50/p99 per instance, and the consistency
# check (purchase rows = confirmed bookings). With two instances, one wrk drives each, at the same time.
#
#   benchmarks/verify-purchase-postgres.sh            # INSTANCES=1 COUNT=20000 MEASURE=8 CONNECTIONS=16 POOL=16
#   INSTANCES=2 benchmarks/verify-purchase-postgres.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
INSTANCES=${INSTANCES:-1}
COUNT=${COUNT:-20000}
MEASURE=${MEASURE:-8}
REPLAY_DURATION=${REPLAY_DURATION:-5}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-2}
POOL=${POOL:-16}

if ! command -v wrk >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
(cd "$repo" && swift build -c release --product berth >/dev/null && swift build -c release --product BerthBenchmarks >/dev/null)
berth="$repo/.build/release/berth"
bench="$repo/.build/release/BerthBenchmarks"

work=$(mktemp -d /tmp/berth-bench-pg.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    "$repo/scripts/postgres-temp" stop "$work/pg" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
"$repo/scripts/postgres-temp" start "$work/pg" >/dev/null
pgport=$(cat "$work/pg/port")
psql -X -q "postgres://berth@127.0.0.1:$pgport/postgres" -c "CREATE DATABASE bench" >/dev/null
database="postgres://berth@127.0.0.1:$pgport/bench?sslmode=disable&pool_size=$POOL"

# The benchmark tenant (one place for every benchmark: benchmarks/catalog.json).
cp "$repo/benchmarks/catalog.json" "$work/catalog.json"
export BENCH_JWT_SECRET="benchmark-secret-$(date +%s)-berth"
"$berth" testkit init "$work/ca" >/dev/null
storage=(--database "$database" --catalog "$work/catalog.json" --migrations "$repo/migrations")
"$berth" migrate "${storage[@]}" >/dev/null 2>&1
key=$("$berth" keys create --tenant bench --role server "${storage[@]}" 2>/dev/null)
admin=$("$berth" keys create --tenant bench --role admin "${storage[@]}" 2>/dev/null)

ports=()
for index in $(seq 1 "$INSTANCES"); do
    BERTH_LOG_LEVEL=error "$berth" serve --port 0 --port-file "$work/port$index" "${storage[@]}" &
    pids+=($!)
    until [ -s "$work/port$index" ] && curl -sf "http://127.0.0.1:$(cat "$work/port$index")/healthz" >/dev/null 2>&1; do sleep 0.05; done
    ports+=("$(cat "$work/port$index")")
done
echo "== $INSTANCES instance(s) on one PostgreSQL 15 (pool_size=$POOL each), release build"

prepare() { # NAME COUNT PREFIX PORT
    "$bench" prepare-purchases --url "http://127.0.0.1:$4" --jwt-secret "$BENCH_JWT_SECRET" --issuer https://bench.invalid \
        --ca "$work/ca" --count "$2" --user-prefix "$3" --out "$work/$1.tsv"
}
drive() { # NAME SECONDS [replay]: one wrk per instance at once, each on its own share of the calls
    local index=0 outputs=()
    for port in "${ports[@]}"; do
        index=$((index + 1))
        wrk -t"$THREADS" -c"$CONNECTIONS" -d"$2s" --latency -s "$repo/benchmarks/verify-purchase.lua" \
            "http://127.0.0.1:$port" -- "$work/$1-$index.tsv" "$key" "$THREADS" ${3:-} > "$work/wrk$index.out" &
        outputs+=("$work/wrk$index.out")
    done
    while pgrep -x wrk >/dev/null; do sleep 0.1; done
    local sum=0
    for output in "${outputs[@]}"; do
        grep -E "Requests/sec|Latency |50%|99%|wrk:|Non-2xx" "$output" | sed "s|^|   [$(basename "$output" .out)] |"
        sum=$(awk -v s="$sum" '/Requests\/sec/ {print s + $2}' "$output")
    done
    echo "   total: $sum requests/s"
}
total() { curl -sf "http://127.0.0.1:${ports[0]}$1" -H "Authorization: Bearer $admin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])'; }

echo "== preparing $COUNT pending bookings and signed transactions per instance (+500 for the warm-up)"
index=0
for port in "${ports[@]}"; do
    index=$((index + 1))
    prepare "warm-$index" 500 "w$index-" "$port"
    prepare "run-$index" "$COUNT" "r$index-" "$port"
done
drive warm 3 >/dev/null
echo "== first-time verify-purchase: ${MEASURE}s, $CONNECTIONS connections per instance"
drive run "$MEASURE"
echo "== replays of confirmed purchases (same user, same booking): ${REPLAY_DURATION}s"
drive warm "$REPLAY_DURATION" replay

echo "== servers"
for pid in "${pids[@]}"; do grep -E "VmHWM" "/proc/$pid/status" | sed 's/^/   /'; done
purchases=$(total '/api/admin/purchases?limit=1')
confirmed=$(total '/api/admin/bookings?status=confirmed&limit=1')
echo "   purchase rows: $purchases, confirmed bookings: $confirmed"
if [ "$purchases" != "$confirmed" ]; then echo "MISMATCH: confirmed bookings != purchase rows"; exit 1; fi
echo "   consistent: every purchase confirmed exactly one booking"
