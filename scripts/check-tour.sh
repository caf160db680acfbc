#!/usr/bin/env bash
# Runs the README's tour (scripts/tour.sh) against a fresh embedded server with the demo data.
# The server runs in a process group of its own and is stopped as a group: nothing is left
# running after this script (checked at the end; issue 23, item 16).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/process-group.sh
DATA=$(mktemp -d) PORT=$((20000 + RANDOM % 20000))
LOG=$(mktemp)
GROUP=""
cleanup() {
  if [ -n "$GROUP" ]; then stop_group "$GROUP" || true; fi
  rm -rf "$DATA" "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
DATA_DIR=$DATA npx bun run src/cli.ts seed-demo >/dev/null
start_group env DATA_DIR="$DATA" PORT="$PORT" PAYMENT_WEBHOOK_SECRET=tour-secret npx bun run src/main.ts >"$LOG" 2>&1
for _ in $(seq 1 120); do curl -fsS "http://127.0.0.1:$PORT/v1/status" >/dev/null 2>&1 && break; sleep 0.5; done
API="http://127.0.0.1:$PORT" bash scripts/tour.sh >/dev/null
# a second run on the same server (issue 34: it failed on the first run's address)
API="http://127.0.0.1:$PORT" bash scripts/tour.sh >/dev/null
echo "README tour: ok (twice)"
stop_group "$GROUP"
group=$GROUP GROUP=""
left=$(procs_with_env "DATA_DIR=$DATA")
if group_alive "$group" || ! port_closed "$PORT" || [ -n "$left" ]; then
  echo "the tour's server is still running after its stop:" >&2
  [ -z "$left" ] || ps -o pid,pgid,etime,cmd -p "$(echo $left | tr ' ' ',')" >&2
  exit 1
fi
echo "README tour: the server (process group $group, port $PORT) is gone"
