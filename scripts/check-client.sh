#!/usr/bin/env bash
# The typed client as another project gets it (issue 34), outside the repository:
#  1. `npm pack` the built `@vpn-api/client`; its bundle imports nothing but its peers (effect,
#     @effect/platform): no server module, no node:net/dns/child_process, no @effect/sql;
#     its declarations name nothing else either;
#  2. a scratch project in /tmp installs the tarball with the documented peers only, type-checks
#     the package's example (strict, no @types/mustache) and runs it against a fresh server;
#  3. the docs' other route: a project that imports the repository's `src/Api.ts` type-checks
#     with the same peers (+ the contract's one runtime dependency) and reads `/v1/status`.
# The server runs in a process group of its own and is stopped as a group.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
BUN="$REPO/node_modules/.bin/bun"
TSC="$REPO/node_modules/.bin/tsc"
. scripts/lib/process-group.sh
WORK=$(mktemp -d /tmp/vpn-client-check-XXXXXX)
PORT=$((20000 + RANDOM % 20000))
GROUP=""
cleanup() {
  if [ -n "$GROUP" ]; then stop_group "$GROUP" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() { echo "check-client: $*" >&2; exit 1; }

# the server, started first: a fresh embedded database takes a few seconds
start_group env DATA_DIR="$WORK/data" PORT="$PORT" HOST=127.0.0.1 LOG_LEVEL=error "$BUN" run src/main.ts >"$WORK/server.log" 2>&1

# 1. the package as npm would publish it
npm run build --workspace @vpn-api/client >/dev/null
TARBALL=$(npm pack --workspace @vpn-api/client --pack-destination "$WORK" --silent | tail -n 1)
[ -f "$WORK/$TARBALL" ] || fail "npm pack wrote no tarball"
mkdir "$WORK/pkg"
tar -xzf "$WORK/$TARBALL" -C "$WORK/pkg"
specifiers() { grep -rhoP '(?<![\w"'"'"'$.])(from|import|require)\s*\(?\s*"[^"./][^"]*"' "$@" | sed -E 's/.*"([^"]+)"/\1/' | sort -u; }
foreign=$(specifiers "$WORK/pkg/package/dist/index.js" | grep -vE '^(effect|@effect/platform)(/|$)' || true)
[ -z "$foreign" ] || fail "the bundle imports more than its peers: $(echo $foreign)"
foreign=$(specifiers $(find "$WORK/pkg/package/dist" -name '*.d.ts') | grep -vE '^(effect|@effect/platform)(/|$)' || true)
[ -z "$foreign" ] || fail "the declarations import more than the peers: $(echo $foreign)"
PEERS=$(node -e 'const p = require(process.argv[1]); console.log(JSON.stringify(p.peerDependencies))' "$WORK/pkg/package/package.json")

# 2. a project of its own, with the documented peers only
mkdir "$WORK/app"
cd "$WORK/app"
node -e '
const [tarball, peers, bunTypes] = process.argv.slice(1)
const pkg = { name: "scratch-client", private: true, type: "module",
  dependencies: { "@vpn-api/client": `file:${tarball}`, ...JSON.parse(peers) },
  devDependencies: { "@types/bun": bunTypes } }
require("fs").writeFileSync("package.json", JSON.stringify(pkg, null, 2))
' "$WORK/$TARBALL" "$PEERS" "$(node -p 'require(process.argv[1]).version' "$REPO/node_modules/@types/bun/package.json")"
npm install --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null
sed 's#"./src/index.ts"#"@vpn-api/client"#' "$REPO/packages/client/example.ts" >example.ts
# the types are the contract's, not `any`: a wrong payload must not compile
cat >wrong.ts <<'EOF'
import { Effect } from "effect"
import { client } from "@vpn-api/client"
export const wrong = Effect.flatMap(client({ baseUrl: "http://localhost" }), (c) =>
  // @ts-expect-error: `name` is a string in the contract
  c.accounts.register({ payload: { name: 1, email: "a@b.c", password: "x", password_confirmation: "x" } }))
EOF
cat >tsconfig.json <<'EOF'
{ "compilerOptions": { "target": "ES2022", "module": "ESNext", "moduleResolution": "bundler", "strict": true,
  "noEmit": true, "skipLibCheck": true, "types": ["bun"] }, "include": ["*.ts"] }
EOF
"$TSC" -p . || fail "the example does not type-check against the packed declarations"
[ ! -e node_modules/@effect/sql ] || fail "installing the client pulled @effect/sql"
node -e 'import("@vpn-api/client").then((m) => { if (typeof m.client !== "function") process.exit(1) })' \
  || fail "the bundle does not load in Node.js"

for _ in $(seq 1 240); do curl -fsS "http://127.0.0.1:$PORT/v1/status" >/dev/null 2>&1 && break; sleep 0.5; done
OUT=$(BASE_URL="http://127.0.0.1:$PORT" "$BUN" run example.ts) || fail "the example failed: $OUT"
grep -q "database: ok" <<<"$OUT" && grep -qE "pending invoices: [0-9]+" <<<"$OUT" || fail "unexpected output: $OUT"
echo "client package: packed, installed with its peers outside the repository, example ok"

# 3. the contract from the repository's sources (docs/client.md, "Without the package")
mkdir -p "$WORK/src-route/node_modules/vpn-api"
cd "$REPO"
git ls-files -z --cached --others --exclude-standard src | xargs -0 -I{} cp --parents {} "$WORK/src-route/node_modules/vpn-api/"
cp package.json "$WORK/src-route/node_modules/vpn-api/"
cd "$WORK/src-route"
node -e '
const [peers, bunTypes, zx] = process.argv.slice(1)
const pkg = { name: "scratch-src", private: true, type: "module",
  dependencies: { ...JSON.parse(peers), "@zxcvbn-ts/language-common": zx }, devDependencies: { "@types/bun": bunTypes } }
require("fs").writeFileSync("package.json", JSON.stringify(pkg, null, 2))
' "$PEERS" "$(node -p 'require(process.argv[1]).version' "$REPO/node_modules/@types/bun/package.json")" \
  "$(node -p 'require(process.argv[1]).version' "$REPO/node_modules/@zxcvbn-ts/language-common/package.json")"
# the copied package.json's own dependencies are not installed: only what the contract needs
node -e 'const f = "node_modules/vpn-api/package.json"; const p = require("./" + f); require("fs").writeFileSync(f, JSON.stringify({ name: p.name, version: p.version, type: "module" }))'
mv node_modules/vpn-api "$WORK/vpn-api" && npm install --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null && mv "$WORK/vpn-api" node_modules/vpn-api
cat >status.ts <<'EOF'
import { FetchHttpClient, HttpApiClient } from "@effect/platform"
import { Console, Effect } from "effect"
import { Api } from "vpn-api/src/Api.ts"

const program = Effect.gen(function*() {
  const api = yield* HttpApiClient.make(Api, { baseUrl: process.env["BASE_URL"] ?? "http://localhost:3000" })
  const status = yield* api.system.status()
  yield* Console.log(`database: ${status.data.database}`)
}).pipe(Effect.provide(FetchHttpClient.layer))

Effect.runPromise(program)
EOF
cat >tsconfig.json <<'EOF'
{ "compilerOptions": { "target": "ES2022", "module": "ESNext", "moduleResolution": "bundler", "strict": true,
  "noEmit": true, "skipLibCheck": true, "allowImportingTsExtensions": true, "types": ["bun"] }, "include": ["*.ts"] }
EOF
"$TSC" -p . || fail "a project importing src/Api.ts does not type-check with the peers alone"
OUT=$(BASE_URL="http://127.0.0.1:$PORT" "$BUN" run status.ts) || fail "src/Api.ts as a client failed: $OUT"
grep -q "database: ok" <<<"$OUT" || fail "unexpected output: $OUT"
echo "client from src/Api.ts: type-checks and runs with the peers alone"
