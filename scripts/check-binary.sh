#!/usr/bin/env bash
# Starts the compiled binary on PostgreSQL 15 and on the embedded database, checks /v1/status.
set -euo pipefail
BIN=$(realpath "${1:-dist/vpn-api}")
HERE=$(cd "$(dirname "$0")" && pwd)
# the binary runs in a process group of its own, stopped as a group (issue 23, item 16)
. "$HERE/lib/process-group.sh"

probe() { # $1 port, $2 log
  for _ in $(seq 1 60); do
    if body=$(curl -fsS "http://127.0.0.1:$1/v1/status" 2>/dev/null); then
      echo "$body" | grep -q '"database":"ok"' && { echo "  /v1/status: $body"; return 0; }
    fi
    sleep 0.5
  done
  echo "binary did not answer /v1/status; log:"; cat "$2"; return 1
}

portal() { # $1 port: [D118] the portal and its assets come from the binary itself
  local html asset
  html=$(curl -fsS -D - "http://127.0.0.1:$1/") || { echo "  /: no portal"; return 1; }
  echo "$html" | grep -qi "^content-security-policy: default-src 'self'; script-src 'self'" || { echo "  /: no CSP"; return 1; }
  asset=$(echo "$html" | grep -o 'src="/[^"]*\.js"' | head -1 | sed 's/src="//;s/"//')
  [ -n "$asset" ] && curl -fsS -D - -o /dev/null "http://127.0.0.1:$1$asset" | grep -qi "^cache-control: public, max-age=31536000, immutable" \
    || { echo "  $asset: not served from the binary"; return 1; }
  echo "  /: the portal, $asset immutable"
}

run_on() { # $1 label, then env assignments
  local label=$1; shift
  local port=$((20000 + RANDOM % 20000)) log data
  log=$(mktemp) data=$(mktemp -d)
  start_group env "$@" PORT=$port DATA_DIR="$data" "$BIN" >"$log" 2>&1
  local group=$GROUP
  echo "binary on $label (port $port)"
  local ok=0
  probe "$port" "$log" || ok=1
  portal "$port" || ok=1
  stop_group "$group" || ok=1
  port_closed "$port" || { echo "port $port still answers after the binary's stop"; ok=1; }
  rm -rf "$data" "$log"
  return $ok
}

run_on embedded
"$HERE/with-postgres.sh" bash -c "$(declare -f probe portal run_on start_group stop_group group_alive port_closed); BIN='$BIN'; run_on postgresql DATABASE_URL=\"\$PG_URL\" APP_KEY=$(head -c 32 /dev/urandom | base64)"
