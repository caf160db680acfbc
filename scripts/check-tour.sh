#!/usr/bin/env bash
# Runs the README's tour (scripts/tour.sh) against a fresh embedded server with the demo data.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=$(mktemp -d) PORT=$((20000 + RANDOM % 20000))
LOG=$(mktemp)
DATA_DIR=$DATA npx bun run src/cli.ts seed-demo >/dev/null
DATA_DIR=$DATA PORT=$PORT PAYMENT_WEBHOOK_SECRET=tour-secret npx bun run src/main.ts >"$LOG" 2>&1 &
PID=$!
trap 'kill -TERM $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$DATA" "$LOG"' EXIT
for _ in $(seq 1 120); do curl -fsS "http://127.0.0.1:$PORT/v1/status" >/dev/null 2>&1 && break; sleep 0.5; done
API="http://127.0.0.1:$PORT" bash scripts/tour.sh >/dev/null
echo "README tour: ok"
