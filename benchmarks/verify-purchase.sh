#!/usr/bin/env bash
# Load benchmark of POST /api/verify-purchase (not a test; nothing here runs in CI).
#
# Starts `berth serve` (release build) on a fresh SQLite file on 127.0.0.1, creates COUNT pending
# bookings, then drives first-time verify-purchase calls with distinct TestKit-signed transactions
# from wrk for at most DURATION seconds, then replays already-confirmed ones for REPLAY_DURATION
# seconds. Prints requests/s, p50/p99 latency, errors and the server's peak RSS, and checks that
# confirmed bookings = purchase rows. Everything stops by itself.
#
#   benchmarks/verify-purchase.sh            # COUNT=60000 DURATION=10 REPLAY_DURATION=5 CONNECTIONS=16 THREADS=2
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
COUNT=${COUNT:-60000}
DURATION=${DURATION:-10}
REPLAY_DURATION=${REPLAY_DURATION:-5}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-2}
PORT=${PORT:-18080}

if ! command -v wrk >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
(cd "$repo" && swift build -c release --product berth >/dev/null && swift build -c release --product BerthBenchmarks >/dev/null)
berth="$repo/.build/release/berth"
bench="$repo/.build/release/BerthBenchmarks"

work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cat > "$work/catalog.json" <<'JSON'
{ "tenants": [ {
  "id": "bench", "name": "Benchmark", "currency": "EUR",
  "apple": { "bundleId": "it.seaboo.app", "environments": ["Sandbox"], "trustedRootFiles": ["ca/root.pem"] },
  "auth": { "algorithm": "HS256", "issuer": "https://bench.invalid", "secretEnv": "BENCH_JWT_SECRET" },
  "holdMinutes": 60,
  "products": [ { "id": "it.seaboo.rental.basic", "kind": "booking", "type": "Consumable", "title": "Rental" } ],
  "resources": [ { "id": "fleet", "kind": "rental", "name": "A large fleet", "pricePerDayMinor": 5000, "units": 1000000 } ],
  "bookingRules": { "rentalPriceBands": [ { "maxPriceMinor": 10000, "productId": "it.seaboo.rental.basic" } ], "experienceProducts": {} },
  "rateLimit": { "burst": 100000000, "perSecond": 100000000 },
  "limits": { "bookings": { "burst": 100000000, "perSecond": 100000000 }, "pendingHoldsPerServerKey": 100000000 }
} ] }
JSON
"$berth" testkit init "$work/ca" >/dev/null
storage=(--database "sqlite:$work/bench.sqlite" --catalog "$work/catalog.json" --migrations "$repo/migrations")
BERTH_LOG_LEVEL=error "$berth" serve --port "$PORT" "${storage[@]}" &
server_pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
key=$("$berth" keys create --tenant bench --role server "${storage[@]}")
admin=$("$berth" keys create --tenant bench --role admin "${storage[@]}")

echo "== preparing $COUNT pending bookings and signed transactions"
"$bench" prepare-purchases --url "http://127.0.0.1:$PORT" --key "$key" --ca "$work/ca" --count "$COUNT" --out "$work/requests.tsv"

echo "== first-time verify-purchase: $CONNECTIONS connections, $THREADS wrk threads, at most ${DURATION}s"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$repo/benchmarks/verify-purchase.lua" \
    "http://127.0.0.1:$PORT" -- "$work/requests.tsv" "$key" "$THREADS" | grep -E "Requests/sec|Latency|50%|90%|99%|wrk:|requests in"

echo "== replays of confirmed purchases (same user, same booking): ${REPLAY_DURATION}s"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"${REPLAY_DURATION}s" --latency -s "$repo/benchmarks/verify-purchase.lua" \
    "http://127.0.0.1:$PORT" -- "$work/requests.tsv" "$key" "$THREADS" replay | grep -E "Requests/sec|Latency|50%|90%|99%|wrk:|requests in"

echo "== server"
grep -E "VmHWM|VmRSS" "/proc/$server_pid/status" | sed 's/^/   /'
purchases=$(curl -sf "http://127.0.0.1:$PORT/api/admin/purchases?limit=1" -H "Authorization: Bearer $admin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
confirmed=$(curl -sf "http://127.0.0.1:$PORT/api/admin/bookings?status=confirmed&limit=1" -H "Authorization: Bearer $admin" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
echo "   purchase rows: $purchases, confirmed bookings: $confirmed"
if [ "$purchases" != "$confirmed" ]; then echo "MISMATCH: confirmed bookings != purchase rows"; exit 1; fi
echo "   consistent: every purchase confirmed exactly one booking"
