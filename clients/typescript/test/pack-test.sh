#!/usr/bin/env bash
# The client as an app adds it: `npm pack` in clients/typescript (offline; prepack builds dist/ with
# tsc), the tarball installed into an app in another folder, then imported by node and type-checked by
# tsc the way an app's build resolves it (package.json's exports and types).
# Usage: clients/typescript/test/pack-test.sh [folder to leave the tarball in]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/berth-pack.XXXXXX)
trap 'rm -rf "$work"' EXIT
out=${1:-$work}
version=$(node -p 'require(process.argv[1]).version' "$here/package.json")
changelog=$(sed -n 's/^## \([0-9][0-9.]*\) .*/\1/p' "$here/../../CHANGELOG.md" | head -1)
[ "$version" = "$changelog" ] || { echo "pack-test: package.json's version $version is not the CHANGELOG's $changelog"; exit 1; }

(cd "$here" && npm pack --offline --silent --pack-destination "$out" > "$work/name")
tarball="$out/$(tail -1 "$work/name")"
[ -f "$tarball" ] || { echo "pack-test: npm pack wrote no tarball"; exit 1; }
tar -tzf "$tarball" | sort > "$work/files"
for file in package/package.json package/README.md package/dist/index.js package/dist/index.d.ts package/dist/contract.js package/dist/contract.d.ts; do
    grep -qx "$file" "$work/files" || { echo "pack-test: $file is not in the tarball"; cat "$work/files"; exit 1; }
done

mkdir "$work/app"
cd "$work/app"
printf '{"name": "an-app", "version": "1.0.0", "type": "module", "private": true}\n' > package.json
npm install --offline --no-audit --no-fund --silent "$tarball"
node --input-type=module -e '
import { BerthClient, BerthError, UNVERIFIED } from "berth-client";
if (typeof BerthClient !== "function" || typeof BerthError !== "function" || UNVERIFIED !== "unverified") throw new Error("the package does not export the client");
new BerthClient({ baseURL: "https://berth.example", clientKey: "k", userId: "u" });
'
cat > app.ts <<'TS'
import { BerthClient, type Booking, type PurchaseVerdict } from "berth-client";
const berth = new BerthClient({ baseURL: "https://berth.example", userToken: () => "token" });
export async function pay(booking: Booking, jws: string): Promise<boolean> {
  const verdict: PurchaseVerdict = await berth.verifyPurchase(booking.requiredProductId, { jwsRepresentation: jws }, booking.id);
  return verdict.finish;
}
TS
tsc --noEmit --strict --module nodenext --moduleResolution nodenext --target es2020 --lib es2020,dom app.ts
echo "pack-test: $(basename "$tarball") installs into another folder; node imports it and tsc types an app against it"
