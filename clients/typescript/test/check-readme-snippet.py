#!/usr/bin/env python3
"""Type-checks the TypeScript snippet of clients/typescript/README.md against the client's source
with tsc (strict): the names the snippet takes from the app (its auth, StoreKit's transaction, its
own screens) are declared here; everything it calls on Berth must exist with those types."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

here = pathlib.Path(__file__).resolve().parent.parent
readme = (here / "README.md").read_text()
blocks = re.findall(r"```ts\n(.*?)\n```", readme, re.S)
if len(blocks) != 1:
    sys.exit(f"expected one ts block in {here / 'README.md'}, found {len(blocks)}")
snippet = blocks[0].replace('from "berth-client"', 'from "./src/index.js"')
app = """
declare const auth: { currentUser: { getIdToken(): Promise<string> } };
declare const transaction: { productId: string; jwsRepresentation: string; finish(): Promise<void> };
declare const booking: { id: number } | undefined;
declare function showThanks(answer: unknown): void;
declare function askForMore(units: number): void;
declare function scheduleRetry(): void;
declare function showProblem(reason: string): void;
export {};
"""
with tempfile.TemporaryDirectory() as work:
    (pathlib.Path(work) / "src").symlink_to(here / "src")
    path = pathlib.Path(work) / "snippet.ts"
    path.write_text(snippet + "\n" + app)
    result = subprocess.run(["tsc", "--noEmit", "--strict", "--target", "es2022", "--module", "es2022", "--moduleResolution", "node",
                             "--lib", "es2020,dom", str(path)], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        print(result.stdout, result.stderr)
        sys.exit("the README's TypeScript snippet does not type-check against clients/typescript/src")
print("clients/typescript/README.md: the snippet type-checks")
