#!/usr/bin/env bash
# Load benchmark of the credits flow (not a test; nothing here runs in CI): per user, buy a pack
# (verify-purchase), reserve 1 credit, commit it, against `berth serve` (release build) on a fresh
# SQLite file on 127.0.0.1, then the ledger check. Bounded by USERS; stops by itself.
#
#   benchmarks/credits.sh     # USERS=5000 CONCURRENCY=16
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
USERS=${USERS:-5000}
CONCURRENCY=${CONCURRENCY:-16}
PORT=${PORT:-18081}

cd "$repo"
swift build -c release --product berth >/dev/null
swift build -c release --product BerthBenchmarks >/dev/null
bin=$(swift build -c release --show-bin-path)
work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
cp -r products.json migrations "$work/"
cd "$work"
"$bin/berth" testkit init berth-ca >/dev/null
SECRET=benchmark-secret-for-aistylist-test-users
ADMIN=$("$bin/berth" keys create --tenant aistylist-test --role admin)
AISTYLIST_TEST_JWT_SECRET=$SECRET "$bin/berth" serve --port "$PORT" > berth.log 2>&1 &
server=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
# Users call with their own HS256 tokens: each has its own verification rate limit, as in production.
"$bin/BerthBenchmarks" credits-flow --url "http://127.0.0.1:$PORT" --jwt-secret "$SECRET" --issuer https://auth.aiimagestylist.test \
  --ca berth-ca --users "$USERS" --concurrency "$CONCURRENCY"
curl -s "http://127.0.0.1:$PORT/api/admin/credits/check" -H "Authorization: Bearer $ADMIN" \
  | python3 -c 'import json, sys; r = json.load(sys.stdin); print("ledger check:", "consistent" if r["consistent"] else r["problems"][:3], "over", r["accounts"], "accounts"); sys.exit(0 if r["consistent"] else 1)'
echo "server peak RSS: $(grep VmHWM /proc/$server/status | awk '{print $2/1024 " MB"}')"
