#!/usr/bin/env bash
# Crash test on PostgreSQL with two instances (App Store purchases, credit packs, card payments and Google Play purchases) (see benchmarks/crash.py for what it does and checks).
# Starts its own throwaway PostgreSQL on 127.0.0.1 and stops it at the end; bounded and self-stopping.
#
#   benchmarks/crash.sh                                  # BOOKINGS=60 CREDITS=60 KILLS=5 (what CI runs)
#   BOOKINGS=500 CREDITS=500 KILLS=10 RATE=100 benchmarks/crash.sh   # the full run (docs/benchmarks.md)
#   BERTH=.build/release/berth benchmarks/crash.sh       # another build (default: the debug build)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export REPO=$repo
export BERTH=${BERTH:-$repo/.build/debug/berth}
[ -x "$BERTH" ] || swift build --product berth >/dev/null
export WORK=$(mktemp -d /tmp/berth-crash.XXXXXX)
export PG_DIR=$WORK/pg
chmod 755 "$WORK"   # the PostgreSQL server runs as the postgres user when we are root
cleanup() {
    pkill -9 -f "$WORK" 2>/dev/null || true
    "$repo/scripts/postgres-temp" stop "$PG_DIR" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
server=$("$repo/scripts/postgres-temp" start "$PG_DIR")
port=$(cat "$PG_DIR/port")
psql -X -q "postgres://berth@127.0.0.1:$port/postgres" -c "CREATE DATABASE crash" >/dev/null
export DB_URL="postgres://berth@127.0.0.1:$port/crash?sslmode=disable&pool_size=8&acquire_timeout=3"
export PSQL_URL="postgres://berth@127.0.0.1:$port/crash"
cp -r products.json migrations "$WORK/"
# Each phase holds up to BOOKINGS unpaid bookings of one boat before paying them: lift the
# per-resource cap on holds (default 100) for this run, so the full run (500) is not refused.
python3 - "$WORK/products.json" <<'PY'
import json, sys
catalog = json.load(open(sys.argv[1]))
for tenant in catalog["tenants"]:
    if tenant["id"] == "seaboo-test":
        tenant.setdefault("limits", {})["pendingHoldsPerResource"] = 100000
        # Card payments whose events were lost are looked up after a minute (the default is 10).
        tenant["stripe"]["reconcileAfterMinutes"] = 1
json.dump(catalog, open(sys.argv[1], "w"), indent=2)
PY
(cd "$WORK" && "$BERTH" testkit init berth-ca >/dev/null)
# The card phase's Stripe: the stand-in, signing with the secret the instances verify.
export SEABOO_TEST_STRIPE_SECRET_KEY=sk_test_berth_standin SEABOO_TEST_STRIPE_WEBHOOK_SECRET=whsec_crash_test_0123456789
"$BERTH" testkit stripe serve --port 0 --port-file "$WORK/stripe.port" --webhook-secret "$SEABOO_TEST_STRIPE_WEBHOOK_SECRET" > "$WORK/stripe.log" 2>&1 &
for _ in $(seq 100); do [ -s "$WORK/stripe.port" ] && break; sleep 0.1; done
export STRIPE_PORT=$(cat "$WORK/stripe.port")
export SEABOO_TEST_STRIPE_API_BASE=http://127.0.0.1:$STRIPE_PORT
# The Play phase's Google: the stand-in, its service account given to the test tenants.
"$BERTH" testkit play init "$WORK/play-kit" >/dev/null
"$BERTH" testkit play serve --dir "$WORK/play-kit" --port 0 --port-file "$WORK/play.port" > "$WORK/play.log" 2>&1 &
for _ in $(seq 100); do [ -s "$WORK/play.port" ] && break; sleep 0.1; done
export PLAY_PORT=$(cat "$WORK/play.port")
export PLAY_TEST_BASE_URL=http://127.0.0.1:$PLAY_PORT PLAY_TEST_SERVICE_ACCOUNT=$WORK/play-kit/service-account.json
python3 "$repo/benchmarks/crash.py"
