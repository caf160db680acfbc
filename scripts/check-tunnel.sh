#!/usr/bin/env bash
# The real-tunnel proof of [D93] (issue 15, "The proof, in CI") and of the subscription links of
# [D122] (issue 37, checks L1-L3) and of the grace speed of [D124] (issue 39, checks 16-17): a
# WireGuard server and two client devices in network namespaces (wireguard-go: no kernel module needed), our API and
# `vpn-api node-agent` serving the server side, configs downloaded through the API.
#
#   bash scripts/check-tunnel.sh         (npm run test:tunnel; root, /dev/net/tun, apt-get or the tools)
#
# Namespaces: <p>s (server: the API on its loopback, the agent, wg interface <p>s0 10.66.0.1/16,
# veth 10.240.1.1 and 10.240.2.1), <p>a and <p>b (one client device each, veth 10.240.1.2 / 10.240.2.2,
# wg interfaces <p>a0 / <p>b0). Both clients reach the server's endpoint 10.240.1.1.
# VPN_API_BIN=dist/vpn-api uses the compiled binary instead of `bun run`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$ROOT/node_modules/.bin:$PATH"
POLL=${NODE_POLL_SECONDS:-1}
say() { printf '  %s\n' "$*"; }
skip() { echo "tunnel check skipped: $*"; exit 0; }
fail() { exec 1>&2; echo "tunnel check FAILED: $*"; [ -n "${WORK:-}" ] && { echo "--- API log (tail)"; tail -n 30 "$WORK/api.log" 2>/dev/null; echo "--- agent log (tail)"; tail -n 30 "$WORK/agent.log" 2>/dev/null; echo "--- interfaces"; wg show all 2>/dev/null; }; exit 1; }

# ---- what the machine allows ------------------------------------------------------------------
[ "$(uname -s)" = Linux ] || skip "not Linux"
[ "$(id -u)" = 0 ] || skip "not root (network namespaces and TUN devices need root)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun (a container without the TUN device)"
missing=()
command -v wireguard-go >/dev/null || missing+=(wireguard-go)
command -v wg >/dev/null || missing+=(wireguard-tools)
command -v ip >/dev/null || missing+=(iproute2)
command -v ping >/dev/null || missing+=(iputils-ping)
command -v curl >/dev/null || missing+=(curl)
command -v iperf3 >/dev/null || missing+=(iperf3)
command -v tc >/dev/null || missing+=(iproute2)
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || skip "missing ${missing[*]} and no apt-get to install them"
  echo "installing ${missing[*]} with apt-get"
  (timeout 300 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "${missing[@]}" >/dev/null) \
    || skip "could not install ${missing[*]} with apt-get"
fi

OPENVPN=1
if ! command -v openvpn >/dev/null || ! command -v openssl >/dev/null; then
  if command -v apt-get >/dev/null && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq openvpn openssl >/dev/null 2>&1; then :; else
    OPENVPN=0; echo "openvpn or openssl missing and not installable: the OpenVPN part is skipped"
  fi
fi

P="vt$(( $$ % 10000 ))"
NS_S="${P}s" NS_A="${P}a" NS_B="${P}b"
WG_S="${P}s0" WG_A="${P}a0" WG_B="${P}b0"
ip netns add "$NS_S" 2>/dev/null || skip "cannot create a network namespace here"
WORK=$(mktemp -d)
PIDS=()
# every background process is started directly (never through a shell function, whose $! would be
# a subshell) and with setsid, so that its whole process group is stopped here
stop_all() {
  local pid alive
  for pid in "$@"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 50); do
    alive=0
    # the group, not only its leader: a leader gone first leaves its children running
    for pid in "$@"; do { kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null; } && alive=1; done
    [ $alive = 0 ] && return 0
    sleep 0.1
  done
  for pid in "$@"; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
}
cleanup() {
  local client
  client=$(cat "$WORK/ovpn/client.pid" 2>/dev/null || true)
  stop_all ${client:+"$client"} "${PIDS[@]}"
  for ns in "$NS_S" "$NS_A" "$NS_B"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -f "/var/run/wireguard/$WG_S.sock" "/var/run/wireguard/$WG_A.sock" "/var/run/wireguard/$WG_B.sock"
  # KEEP_LOGS=<dir>: the API's, the agent's and OpenVPN's logs are copied there
  if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS"; cp "$WORK"/*.log "$WORK"/ovpn/*.log "$KEEP_LOGS"/ 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
in_s() { ip netns exec "$NS_S" "$@"; }

# ---- the network --------------------------------------------------------------------------------
ip netns add "$NS_A"
ip netns add "$NS_B"
for ns in "$NS_S" "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip link add "${P}va" netns "$NS_S" type veth peer name "${P}vA" netns "$NS_A"
ip link add "${P}vb" netns "$NS_S" type veth peer name "${P}vB" netns "$NS_B"
ip -n "$NS_S" addr add 10.240.1.1/24 dev "${P}va"
ip -n "$NS_S" addr add 10.240.2.1/24 dev "${P}vb"
ip -n "$NS_A" addr add 10.240.1.2/24 dev "${P}vA"
ip -n "$NS_B" addr add 10.240.2.2/24 dev "${P}vB"
for l in "${P}va" "${P}vb"; do ip -n "$NS_S" link set "$l" up; done
ip -n "$NS_A" link set "${P}vA" up
ip -n "$NS_B" link set "${P}vB" up
# the server's endpoint is 10.240.1.1: client B reaches it through its own link
ip -n "$NS_B" route add 10.240.1.1/32 via 10.240.2.1

start_wg() { # $1 namespace, $2 interface
  WG_PROCESS_FOREGROUND=1 setsid ip netns exec "$1" wireguard-go "$2" >"$WORK/wg-$2.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 50); do [ -S "/var/run/wireguard/$2.sock" ] && ip -n "$1" link show "$2" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "wireguard-go did not create $2: $(cat "$WORK/wg-$2.log")"
}
start_wg "$NS_S" "$WG_S"
start_wg "$NS_A" "$WG_A"
start_wg "$NS_B" "$WG_B"
(umask 077 && wg genkey >"$WORK/server.key")
SERVER_PUB=$(wg pubkey <"$WORK/server.key")
in_s wg set "$WG_S" private-key "$WORK/server.key" listen-port 51820
ip -n "$NS_S" addr add 10.66.0.1/16 dev "$WG_S"
ip -n "$NS_S" link set "$WG_S" up
say "namespaces $NS_S (server), $NS_A and $NS_B (clients); wireguard-go interfaces up"

# ---- the API, in the server's namespace ---------------------------------------------------------
if [ -n "${VPN_API_BIN:-}" ]; then VPN_API=("$(realpath "$VPN_API_BIN")"); SERVE=("${VPN_API[@]}");
else VPN_API=(bun run "$ROOT/src/cli.ts"); SERVE=(bun run "$ROOT/src/main.ts"); fi
# TUNNEL_API_PORT: another port, so that two copies of this check can run at once
PORT=${TUNNEL_API_PORT:-3900}
API="http://127.0.0.1:$PORT"
ADMIN_EMAIL="admin@tunnel.test" ADMIN_PASSWORD="tunnel-Admin-2026!"
# [D124]: the speed of a service in grace (step 16); the jobs of [D80] every second, so that a
# renewal and its grace come within seconds
GRACE_MBPS=2
setsid ip netns exec "$NS_S" env DATA_DIR="$WORK/data" PORT=$PORT HOST=127.0.0.1 ADMIN_EMAIL="$ADMIN_EMAIL" ADMIN_PASSWORD="$ADMIN_PASSWORD" \
  GENERAL_RATE_LIMIT=0 LOG_LEVEL=info JOBS_INTERVAL_SECONDS=1 GRACE_SPEED_MBPS=$GRACE_MBPS "${SERVE[@]}" >"$WORK/api.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 120); do in_s curl -fsS "$API/v1/status" >/dev/null 2>&1 && break; sleep 0.5; done
in_s curl -fsS "$API/v1/status" >/dev/null || fail "the API did not start"
say "API up in $NS_S"

# call METHOD PATH [TOKEN] [BODY] -> body on stdout, HTTP status in $WORK/status
call() {
  local args=(-sS -o "$WORK/body" -w '%{http_code}' -X "$1" "$API$2" -H 'accept: application/json')
  [ -n "${3:-}" ] && args+=(-H "authorization: Bearer $3")
  [ -n "${4:-}" ] && args+=(-H 'content-type: application/json' -d "$4")
  in_s curl "${args[@]}" >"$WORK/status"
  cat "$WORK/body"
}
status() { cat "$WORK/status"; }
ok() { # METHOD PATH TOKEN BODY: fails the check unless 2xx
  local out; out=$(call "$@")
  case "$(status)" in 2*) printf '%s' "$out" ;; *) fail "$1 $2 answered $(status): $out" ;; esac
}
json() { node -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>{const v=eval("(JSON.parse(s))"+process.argv[1]);process.stdout.write(typeof v==="string"?v:JSON.stringify(v))})' "$1"; }

ADMIN=$(ok POST /v1/auth/login "" "{\"email\":\"$ADMIN_EMAIL\",\"password\":\"$ADMIN_PASSWORD\"}" | json '.data.token')
PLAN=$(ok POST /v1/admin/plans "$ADMIN" '{"name":"Tunnel","bandwidth_limit_gb":10}' | json '.data.id')
CYCLE=$(ok POST "/v1/admin/plans/$PLAN/cycles" "$ADMIN" '{"name":"Monthly","duration_days":30,"price":"5.00","currency":"USD"}' | json '.data.id')
ok POST /v1/admin/servers "$ADMIN" "{\"name\":\"Tunnel 1\",\"country\":\"NL\",\"city\":\"Lab\",\"protocol\":\"wireguard\",\"ip\":\"10.240.1.1\",\"port\":51820,\"public_key\":\"$SERVER_PUB\",\"subnet\":\"10.66.0.0/16\",\"plan_ids\":[$PLAN]}" >"$WORK/server.json"
SERVER=$(json '.data.id' <"$WORK/server.json")
NODE_TOKEN=$(json '.data.node_token' <"$WORK/server.json")
say "admin made plan $PLAN, server $SERVER (endpoint 10.240.1.1:51820, the interface's public key)"

setsid ip netns exec "$NS_S" env NODE_API_URL="$API" NODE_TOKEN="$NODE_TOKEN" WG_INTERFACE="$WG_S" NODE_POLL_SECONDS="$POLL" \
  "${VPN_API[@]}" node-agent >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
AGENT_PID=$!
say "node agent on $WG_S, polling every $POLL s"

# a user who bought the plan: register, order, the admin marks the invoice paid -> token on stdout
subscriber() { # $1 email $2 password [$3 plan $4 cycle: default the tunnel plan]
  local token invoice
  token=$(ok POST /v1/auth/register "" "{\"name\":\"Tunnel User\",\"email\":\"$1\",\"password\":\"$2\",\"password_confirmation\":\"$2\"}" | json '.data.token')
  invoice=$(ok POST /v1/orders "$token" "{\"plan_id\":${3:-$PLAN},\"cycle_id\":${4:-$CYCLE}}" | json '.data.uuid')
  ok POST "/v1/admin/invoices/$invoice/mark-paid" "$ADMIN" >/dev/null
  printf '%s' "$token"
}
EMAIL="tunnel@example.com" PASSWORD="tunnel-Passw0rd-2026"
TOKEN=$(subscriber "$EMAIL" "$PASSWORD")
USER_ID=$(ok GET /v1/user "$TOKEN" | json '.data.id')
say "user $USER_ID registered, ordered, paid"

# ---- two devices ([D90]); without the devices routes: a second user's config stands in for device A
call POST /v1/devices "$TOKEN" '{"name":"laptop","platform":"linux"}' >"$WORK/dev-a.json"
if [ "$(status)" = 404 ]; then
  DEVICES=0
  say "no POST /v1/devices in this build ([D90] not merged): device A is a second user's config, and its 'delete' is that user's POST /v1/account/vpn/revoke-all"
  OTHER=$(subscriber "tunnel-other@example.com" "$PASSWORD")
  download_a() { ok GET "/v1/servers/$SERVER/wireguard" "$OTHER"; }
  download_b() { ok GET "/v1/servers/$SERVER/wireguard" "$TOKEN"; }
  delete_a() { ok POST /v1/account/vpn/revoke-all "$OTHER" >/dev/null; }
else
  [ "$(status)" = 201 ] || fail "POST /v1/devices answered $(status): $(cat "$WORK/dev-a.json")"
  DEVICES=1
  DEV_A=$(json '.data.id' <"$WORK/dev-a.json")
  DEV_B=$(ok POST /v1/devices "$TOKEN" '{"name":"phone","platform":"android"}' | json '.data.id')
  say "devices $DEV_A and $DEV_B created"
  download_a() { ok GET "/v1/devices/$DEV_A/wireguard/$SERVER" "$TOKEN"; }
  download_b() { ok GET "/v1/devices/$DEV_B/wireguard/$SERVER" "$TOKEN"; }
  delete_a() { ok DELETE "/v1/devices/$DEV_A" "$TOKEN" >/dev/null; }
fi

# the downloaded config on a client interface: `wg setconf` of it without wg-quick's own keys
# (what `wg-quick strip` does), plus its addresses and a route to the server's tunnel address
apply_config() { # $1 namespace $2 interface $3 config file
  grep -Eiv '^[[:space:]]*(Address|DNS|MTU|Table|PreUp|PostUp|PreDown|PostDown|SaveConfig)[[:space:]]*=' "$3" >"$3.stripped"
  ip netns exec "$1" wg setconf "$2" "$3.stripped"
  ip -n "$1" addr flush dev "$2"
  local addr
  for addr in $(sed -n 's/^[[:space:]]*Address[[:space:]]*=[[:space:]]*//Ip' "$3" | tr ',' ' '); do
    case "$addr" in *:*) ip -n "$1" -6 addr add "$addr" dev "$2" 2>/dev/null || true ;; *) ip -n "$1" addr add "$addr" dev "$2" ;; esac
  done
  ip -n "$1" link set "$2" up
  ip -n "$1" route replace 10.66.0.1/32 dev "$2"
}
passes() { ip netns exec "$1" ping -c 1 -W 1 -q 10.66.0.1 >/dev/null 2>&1; }
# until it passes, at most $2 seconds
passes_within() { local end=$((SECONDS + $2)); until passes "$1"; do [ $SECONDS -ge $end ] && return 1; done; }
# until it stops passing, at most $2 seconds; how long it took in $WAITED
stops_within() { local start=$SECONDS end=$((SECONDS + $2)); while passes "$1"; do [ $SECONDS -ge $end ] && return 1; sleep 0.2; done; WAITED=$((SECONDS - start)); }
TWO_POLLS=$((2 * POLL + 2))

download_a >"$WORK/a.conf"
download_b >"$WORK/b.conf"
grep -q "^PublicKey = $SERVER_PUB" "$WORK/a.conf" || fail "the config does not name the server's key"
say "device A: $(sed -n 's/^Address = //p' "$WORK/a.conf"), device B: $(sed -n 's/^Address = //p' "$WORK/b.conf")"

# 1. the agent puts each downloaded device on the server's interface within two polls, with its
#    address; then both devices ping the server's tunnel address
key_of() { sed -n 's/^PrivateKey = //p' "$1" | wg pubkey; }
on_server() { # $1 config: its key is on the server's interface with the config's address
  in_s wg show "$WG_S" allowed-ips | grep -q "^$(key_of "$1")[[:space:]]$(sed -n 's/^Address = \([^,]*\).*/\1/p' "$1")"
}
on_server_within() { local end=$((SECONDS + $2)); until on_server "$1"; do [ $SECONDS -ge $end ] && return 1; sleep 0.2; done; }
on_server_within "$WORK/a.conf" "$TWO_POLLS" || fail "device A's peer is not on $WG_S two polls after its download"
on_server_within "$WORK/b.conf" "$TWO_POLLS" || fail "device B's peer is not on $WG_S two polls after its download"
apply_config "$NS_A" "$WG_A" "$WORK/a.conf"
apply_config "$NS_B" "$WG_B" "$WORK/b.conf"
passes_within "$NS_A" 10 || fail "device A does not reach 10.66.0.1 through the tunnel"
passes_within "$NS_B" 10 || fail "device B does not reach 10.66.0.1 through the tunnel"
echo "ok 1 - the agent adds both devices' peers within two polls; both ping the server through the tunnel"

# 2. their bytes appear in /v1/bandwidth/current (the agent reports wg's counters, [D94])
ip netns exec "$NS_A" ping -c 5 -i 0.2 -s 1000 -q 10.66.0.1 >/dev/null
used=0
for _ in $(seq 1 40); do
  used=$(ok GET /v1/bandwidth/current "$([ $DEVICES = 1 ] && echo "$TOKEN" || echo "$OTHER")" | json '.data.used_bytes')
  [ "$used" -ge 10000 ] && break
  sleep 0.5
done
[ "$used" -ge 10000 ] || fail "GET /v1/bandwidth/current shows $used bytes after 5 pings of 1000 bytes each way"
echo "ok 2 - the tunnel's bytes show in /v1/bandwidth/current ($used bytes)"

# 3. device A deleted: its tunnel stops within two polls, device B keeps working
delete_a
stops_within "$NS_A" "$TWO_POLLS" || fail "device A still passes ${TWO_POLLS}s after its deletion"
passes "$NS_B" || fail "device B stopped when device A was deleted"
echo "ok 3 - a deleted device stops passing within two polls (${WAITED}s), the other keeps working"

# 4. the user disabled by an admin: nothing passes; enabled again: back ([D91])
ok PUT "/v1/admin/users/$USER_ID" "$ADMIN" '{"status":0}' >/dev/null
stops_within "$NS_B" "$TWO_POLLS" || fail "device B still passes ${TWO_POLLS}s after its user was disabled"
passes "$NS_A" && fail "device A passes again"
echo "ok 4 - a disabled user's devices stop passing (${WAITED}s)"
ok PUT "/v1/admin/users/$USER_ID" "$ADMIN" '{"status":1}' >/dev/null
# the same config connects again. The server forgot the device's session when its peer left; a
# client still on that session starts a new handshake only on WireGuard's own timers (15 to 50 s
# seen here), so the client reconnects, as an app does when switched off and on
on_server_within "$WORK/b.conf" "$TWO_POLLS" || fail "device B's peer is not back on $WG_S two polls after its user was enabled"
apply_config "$NS_B" "$WG_B" "$WORK/b.conf"
passes_within "$NS_B" 10 || fail "device B does not pass again after its user was enabled"
echo "ok 5 - enabled again: the peer is back within two polls and the same config passes"

# 5. a password reset: the old config stops, a fresh download works ([D91])
ok POST /v1/auth/forgot-password "" "{\"email\":\"$EMAIL\"}" >/dev/null
RESET=""
for _ in $(seq 1 20); do
  RESET=$(grep -o 'reset-password?token=[A-Za-z0-9_-]*' "$WORK/api.log" | tail -n 1 | sed 's/.*token=//') || true
  [ -n "$RESET" ] && break
  sleep 0.5
done
[ -n "$RESET" ] || fail "no reset mail in the API's log"
NEW_PASSWORD="tunnel-Reset-2026!"
ok POST /v1/auth/reset-password "" "{\"token\":\"$RESET\",\"email\":\"$EMAIL\",\"password\":\"$NEW_PASSWORD\",\"password_confirmation\":\"$NEW_PASSWORD\"}" >/dev/null
stops_within "$NS_B" "$TWO_POLLS" || fail "the config from before the password reset still passes ${TWO_POLLS}s after it"
echo "ok 6 - after a password reset the old config stops passing (${WAITED}s)"
TOKEN=$(ok POST /v1/auth/login "" "{\"email\":\"$EMAIL\",\"password\":\"$NEW_PASSWORD\"}" | json '.data.token')
download_b >"$WORK/b2.conf"
cmp -s "$WORK/b.conf" "$WORK/b2.conf" && fail "the fresh download is the old config"
on_server_within "$WORK/b2.conf" "$TWO_POLLS" || fail "the fresh config's peer is not on $WG_S two polls after its download"
apply_config "$NS_B" "$WG_B" "$WORK/b2.conf"
passes_within "$NS_B" 10 || fail "a fresh download after the password reset does not pass"
echo "ok 7 - a fresh download after the reset passes"

# ---- changes pushed ([D105]) and devices you can see ([D107]) (node-push's checks) -------------
# The agent again, with NODE_POLL_SECONDS=60: within 1.5 s only the push stream can do it.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
key_present() { in_s wg show "$WG_S" peers | grep -qxF "$1"; }
# ms from $T0 until the key left the server's interface; fails after 5 s
gone_ms() { local end=$(( $(now_ms) + 5000 )); while key_present "$1"; do [ "$(now_ms)" -ge $end ] && return 1; sleep 0.02; done; echo $(( $(now_ms) - T0 )); }
present_within() { local end=$((SECONDS + $2)); until key_present "$1"; do [ $SECONDS -ge $end ] && return 1; sleep 0.05; done; }
if [ "$DEVICES" = 1 ]; then
  stop_all "$AGENT_PID"
  setsid ip netns exec "$NS_S" env NODE_API_URL="$API" NODE_TOKEN="$NODE_TOKEN" WG_INTERFACE="$WG_S" NODE_POLL_SECONDS=60 NODE_REPORT_SECONDS=1 \
    "${VPN_API[@]}" node-agent >"$WORK/agent-push.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do grep -q "push stream up" "$WORK/agent-push.log" 2>/dev/null && break; sleep 0.2; done
  grep -q "push stream up" "$WORK/agent-push.log" || fail "the agent's push stream did not come up: $(tail -n 5 "$WORK/agent-push.log")"
  say "agent restarted with NODE_POLL_SECONDS=60 NODE_REPORT_SECONDS=1; push stream up"

  # P1. GET /v1/devices: device B online, with bytes ([D107])
  ip netns exec "$NS_B" ping -c 5 -i 0.2 -s 1000 -q 10.66.0.1 >/dev/null || fail "device B does not pass before the push checks"
  seen=""
  for _ in $(seq 1 40); do
    seen=$(ok GET /v1/devices "$TOKEN" | json ".data.find((d) => d.id === $DEV_B)")
    [ "$(printf '%s' "$seen" | json '.online')" = true ] && [ "$(printf '%s' "$seen" | json '.period_bytes')" -ge 10000 ] && break
    sleep 0.5
  done
  [ "$(printf '%s' "$seen" | json '.online')" = true ] || fail "GET /v1/devices does not show device B online: $seen"
  [ "$(printf '%s' "$seen" | json '.period_bytes')" -ge 10000 ] || fail "GET /v1/devices shows device B without its bytes: $seen"
  echo "ok P1 - GET /v1/devices: device B online, last handshake $(printf '%s' "$seen" | json '.last_handshake_at'), $(printf '%s' "$seen" | json '.period_bytes') bytes this period"

  # P2. a deleted device leaves the interface within 1.5 s
  DEV_C=$(ok POST /v1/devices "$TOKEN" '{"name":"tablet","platform":"android"}' | json '.data.id')
  ok GET "/v1/devices/$DEV_C/wireguard/$SERVER" "$TOKEN" >"$WORK/c.conf"
  KEY_C=$(key_of "$WORK/c.conf")
  present_within "$KEY_C" 3 || fail "device C's new peer is not pushed to $WG_S within 3 s"
  T0=$(now_ms); ok DELETE "/v1/devices/$DEV_C" "$TOKEN" >/dev/null
  ms=$(gone_ms "$KEY_C") || fail "a deleted device's key is still on $WG_S 5 s later (NODE_POLL_SECONDS=60)"
  [ "$ms" -le 1500 ] || fail "a deleted device left the interface after $ms ms (> 1500)"
  echo "ok P2 - push: a deleted device leaves the interface in $ms ms (poll 60 s)"

  # P3. a disabled user leaves it within 1.5 s; enabled again, back
  KEY_B=$(key_of "$WORK/b2.conf")
  key_present "$KEY_B" || fail "device B's key is not on $WG_S before P3"
  T0=$(now_ms); ok PUT "/v1/admin/users/$USER_ID" "$ADMIN" '{"status":0}' >/dev/null
  ms=$(gone_ms "$KEY_B") || fail "a disabled user's key is still on $WG_S 5 s later (NODE_POLL_SECONDS=60)"
  [ "$ms" -le 1500 ] || fail "a disabled user's device left the interface after $ms ms (> 1500)"
  echo "ok P3 - push: a disabled user's device leaves the interface in $ms ms"
  ok PUT "/v1/admin/users/$USER_ID" "$ADMIN" '{"status":1}' >/dev/null
  present_within "$KEY_B" 3 || fail "device B is not back on $WG_S within 3 s of its user being enabled"

  # P4. a rotated key leaves it within 1.5 s
  T0=$(now_ms); ok POST "/v1/devices/$DEV_B/rotate" "$TOKEN" >/dev/null
  ms=$(gone_ms "$KEY_B") || fail "a rotated key is still on $WG_S 5 s later (NODE_POLL_SECONDS=60)"
  [ "$ms" -le 1500 ] || fail "a rotated key left the interface after $ms ms (> 1500)"
  echo "ok P4 - push: a rotated key leaves the interface in $ms ms"

  # ---- [D122] one link per device (issue 37): clients configured only from the link -----------
  # The link needs no token: `link GET PATH` fetches it as a VPN app would (only the link's path:
  # PUBLIC_URL is this API's own address). Device D takes the default format (wg-quick) into
  # namespace A; device E takes its server's .conf out of the link's zip into namespace B.
  link_path() { printf '/%s' "${1#*://*/}"; }
  link() { in_s curl -sS -o "$2" -w '%{http_code}' "$API$1"; }
  DEV_D=$(ok POST /v1/devices "$TOKEN" '{"name":"link phone","platform":"ios"}' | json '.data.id')
  DEV_E=$(ok POST /v1/devices "$TOKEN" '{"name":"link laptop","platform":"linux"}' | json '.data.id')
  LINK_D=$(ok GET "/v1/devices/$DEV_D" "$TOKEN" | json '.data.subscription_url')
  LINK_E=$(ok GET "/v1/devices/$DEV_E" "$TOKEN" | json '.data.subscription_url')
  [ "$(link "$(link_path "$LINK_D")" "$WORK/d.conf")" = 200 ] || fail "device D's link answered $(cat "$WORK/d.conf")"
  grep -q "^PublicKey = $SERVER_PUB" "$WORK/d.conf" || fail "device D's link does not answer a config of the server: $(head -c 300 "$WORK/d.conf")"
  [ "$(link "$(link_path "$LINK_E")?format=zip" "$WORK/e.zip")" = 200 ] || fail "device E's zip link answered $(head -c 300 "$WORK/e.zip")"
  node -e '
    const { strFromU8, unzipSync } = require(process.argv[1])
    const files = unzipSync(require("fs").readFileSync(process.argv[2]))
    const conf = files[process.argv[3]]
    if (conf === undefined) { console.error("entries: " + Object.keys(files).join(", ")); process.exit(1) }
    process.stdout.write(strFromU8(conf))
  ' "$ROOT/node_modules/fflate" "$WORK/e.zip" "Tunnel-1.conf" >"$WORK/e.conf" || fail "the zip has no Tunnel-1.conf"
  on_server_within "$WORK/d.conf" 3 || fail "device D's peer (from its link) is not pushed to $WG_S within 3 s"
  on_server_within "$WORK/e.conf" 3 || fail "device E's peer (from its zip) is not pushed to $WG_S within 3 s"
  apply_config "$NS_A" "$WG_A" "$WORK/d.conf"
  apply_config "$NS_B" "$WG_B" "$WORK/e.conf"
  passes_within "$NS_A" 10 || fail "device D, configured from its link, does not reach 10.66.0.1"
  passes_within "$NS_B" 10 || fail "device E, configured from its link's zip, does not reach 10.66.0.1"
  echo "ok L1 - clients configured only from the link (wg-quick, and a .conf out of the zip) connect and ping the server"

  # L2. the link renewed: the old one is 404 within 1 s, the new one answers, the tunnel goes on
  T0=$(now_ms); NEW_D=$(ok POST "/v1/devices/$DEV_D/subscription/rotate" "$TOKEN" | json '.data.subscription_url')
  code=""
  while [ $(( $(now_ms) - T0 )) -lt 1000 ]; do code=$(link "$(link_path "$LINK_D")" "$WORK/old-link"); [ "$code" = 404 ] && break; done
  [ "$code" = 404 ] || fail "the old link still answers $code 1 s after its rotation"
  ms=$(( $(now_ms) - T0 ))
  [ "$NEW_D" != "$LINK_D" ] || fail "the rotation kept the link"
  [ "$(link "$(link_path "$NEW_D")" "$WORK/d2.conf")" = 200 ] || fail "the new link answered $(cat "$WORK/d2.conf")"
  cmp -s "$WORK/d.conf" "$WORK/d2.conf" || fail "the new link answers another config (the link is not the key)"
  sleep 2
  passes "$NS_A" || fail "device D's tunnel stopped when its link was renewed"
  echo "ok L2 - a renewed link: the old one is 404 ($ms ms after the rotation), the new one answers the same config, the tunnel keeps working"

  # L3. the device deleted: its link is 404 and its tunnel stops
  T0=$(now_ms); ok DELETE "/v1/devices/$DEV_D" "$TOKEN" >/dev/null
  [ "$(link "$(link_path "$NEW_D")" "$WORK/gone")" = 404 ] || fail "a deleted device's link answered $(cat "$WORK/gone")"
  stops_within "$NS_A" "$TWO_POLLS" || fail "a deleted device's tunnel (configured from its link) still passes ${TWO_POLLS}s later"
  passes "$NS_B" || fail "device E stopped when device D was deleted"
  echo "ok L3 - a deleted device: its link is 404 and its tunnel stops (${WAITED}s); device E keeps working"
fi
# ---- OpenVPN: the same API and agent binary, the agent as the server's auth-user-pass-verify script
if [ "$OPENVPN" = 1 ]; then
  OV="$WORK/ovpn"; mkdir -m 700 "$OV"
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$OV/ca.key" -out "$OV/ca.crt" -days 2 \
      -subj "/CN=Tunnel Test CA" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$OV/server.key" -out "$OV/server.csr" -subj "/CN=tunnel-server"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyAgreement\nextendedKeyUsage=serverAuth\n' >"$OV/ext.cnf"
    openssl x509 -req -in "$OV/server.csr" -CA "$OV/ca.crt" -CAkey "$OV/ca.key" -CAcreateserial -out "$OV/server.crt" -days 2 -extfile "$OV/ext.cnf"
  ) >"$OV/openssl.log" 2>&1 || fail "openssl could not make the test CA: $(cat "$OV/openssl.log")"
  CA_JSON=$(node -e 'process.stdout.write(JSON.stringify(require("fs").readFileSync(process.argv[1], "utf8")))' "$OV/ca.crt")
  ok POST /v1/admin/servers "$ADMIN" "{\"name\":\"Tunnel OpenVPN\",\"country\":\"NL\",\"city\":\"Lab\",\"protocol\":\"openvpn\",\"ip\":\"10.240.1.1\",\"port\":1194,\"transport\":\"udp\",\"ca_cert\":$CA_JSON,\"plan_ids\":[$PLAN]}" >"$OV/server.json"
  OV_SERVER=$(json '.data.id' <"$OV/server.json")
  OV_TOKEN=$(json '.data.node_token' <"$OV/server.json")
  # OpenVPN runs its scripts with its own environment only (no PATH, nothing inherited): the
  # agent's variables come from `setenv` in the server's config (0600: it holds the node token)
  if [ -n "${VPN_API_BIN:-}" ]; then AUTH_CMD="\"${VPN_API[0]} node-agent openvpn-auth\""; else
    printf '#!/bin/sh\nexec %s run %s node-agent openvpn-auth "$@"\n' "$(command -v bun)" "$ROOT/src/cli.ts" >"$OV/auth.sh"
    chmod 700 "$OV/auth.sh"; AUTH_CMD="$OV/auth.sh"
  fi
  # [D103]: the session's speed on the tun device (client-connect / client-disconnect)
  if [ -n "${VPN_API_BIN:-}" ]; then CONNECT_CMD="\"${VPN_API[0]} node-agent openvpn-connect\""; DISCONNECT_CMD="\"${VPN_API[0]} node-agent openvpn-disconnect\""; else
    for mode in connect disconnect; do
      printf '#!/bin/sh\nexec %s run %s node-agent openvpn-%s "$@"\n' "$(command -v bun)" "$ROOT/src/cli.ts" "$mode" >"$OV/$mode.sh"
      chmod 700 "$OV/$mode.sh"
    done
    CONNECT_CMD="$OV/connect.sh"; DISCONNECT_CMD="$OV/disconnect.sh"
  fi
  (umask 077; cat >"$OV/server.conf" <<CONF
dev tun
proto udp
local 10.240.1.1
port 1194
server 10.8.0.0 255.255.255.0
topology subnet
ca $OV/ca.crt
cert $OV/server.crt
key $OV/server.key
dh none
verify-client-cert none
username-as-common-name
script-security 2
setenv NODE_API_URL $API
setenv NODE_TOKEN $OV_TOKEN
auth-user-pass-verify $AUTH_CMD via-file
setenv OPENVPN_STATE_DIR $OV/state
client-connect $CONNECT_CMD
client-disconnect $DISCONNECT_CMD
tmp-dir $OV
keepalive 2 10
verb 3
management 127.0.0.1 7505
CONF
  )
  setsid ip netns exec "$NS_S" openvpn --config "$OV/server.conf" >"$OV/server.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 50); do grep -q "Initialization Sequence Completed" "$OV/server.log" && break; sleep 0.2; done
  grep -q "Initialization Sequence Completed" "$OV/server.log" || fail "the OpenVPN server did not start: $(tail -n 5 "$OV/server.log")"

  OV_EMAIL="tunnel-ovpn@example.com"
  OV_USER_TOKEN=$(subscriber "$OV_EMAIL" "$PASSWORD")
  OV_USER_ID=$(ok GET /v1/user "$OV_USER_TOKEN" | json '.data.id')
  if [ "$DEVICES" = 1 ]; then
    ok POST /v1/devices "$OV_USER_TOKEN" '{"name":"router","platform":"router"}' >"$OV/device.json"
    OV_DEVICE=$(json '.data.id' <"$OV/device.json")
    (umask 077; json '.data.openvpn.username' <"$OV/device.json" >"$OV/creds"; echo >>"$OV/creds"; json '.data.openvpn.password' <"$OV/device.json" >>"$OV/creds"; echo >>"$OV/creds")
    ok GET "/v1/devices/$OV_DEVICE/openvpn/$OV_SERVER" "$OV_USER_TOKEN" >"$OV/client.ovpn"
  else
    ok GET /v1/account/vpn-credentials "$OV_USER_TOKEN" >"$OV/creds.json"
    (umask 077; json '.data.username' <"$OV/creds.json" >"$OV/creds"; echo >>"$OV/creds"; json '.data.password' <"$OV/creds.json" >>"$OV/creds"; echo >>"$OV/creds")
    ok GET "/v1/servers/$OV_SERVER/openvpn" "$OV_USER_TOKEN" >"$OV/client.ovpn"
  fi
  grep -q "^remote 10.240.1.1 1194" "$OV/client.ovpn" || fail "the OpenVPN profile does not name the server: $(cat "$OV/client.ovpn")"

  # connects the downloaded profile from client namespace A with a credentials file: "connected" or "refused"
  ovpn_client() { # $1 credentials file, $2 log
    setsid ip netns exec "$NS_A" openvpn --config "$OV/client.ovpn" --auth-user-pass "$1" --dev "${P}t" --dev-type tun --connect-retry-max 1 >"$2" 2>&1 &
    local pid=$! outcome=timeout
    for _ in $(seq 1 100); do
      if grep -q "Initialization Sequence Completed" "$2"; then outcome=connected; break; fi
      if grep -q "AUTH_FAILED" "$2"; then outcome=refused; break; fi
      kill -0 "$pid" 2>/dev/null || { outcome=exited; break; }
      sleep 0.2
    done
    echo "$pid" >"$OV/client.pid"
    echo "$outcome"
  }
  # the client of the last ovpn_client (started in a subshell: not our child to wait for)
  stop_client() { stop_all "$(cat "$OV/client.pid")"; rm -f "$OV/client.pid"; }

  outcome=$(ovpn_client "$OV/creds" "$OV/client1.log")
  [ "$outcome" = connected ] || { stop_client; fail "the OpenVPN client with the device's credentials: $outcome; $(tail -n 5 "$OV/client1.log"); server: $(tail -n 8 "$OV/server.log")"; }
  ip netns exec "$NS_A" ping -c 1 -W 2 -q 10.8.0.1 >/dev/null || { stop_client; fail "connected over OpenVPN but 10.8.0.1 does not answer"; }
  stop_client
  echo "ok 8 - OpenVPN: the downloaded profile and the device's credentials connect (the agent's openvpn-auth said yes) and ping the server"

  (umask 077; head -n 1 "$OV/creds" >"$OV/wrong"; echo "not-the-password" >>"$OV/wrong")
  outcome=$(ovpn_client "$OV/wrong" "$OV/client2.log"); stop_client
  [ "$outcome" = refused ] || fail "a wrong OpenVPN password was not refused: $outcome"
  ok PUT "/v1/admin/users/$OV_USER_ID" "$ADMIN" '{"status":0}' >/dev/null
  outcome=$(ovpn_client "$OV/creds" "$OV/client3.log"); stop_client
  [ "$outcome" = refused ] || fail "a disabled user's OpenVPN credentials were not refused: $outcome"
  echo "ok 9 - OpenVPN: a wrong password and a disabled user's credentials are refused (AUTH_FAILED)"

  # ---- [D106] (node-push): the agent with OPENVPN_MANAGEMENT ends a disabled user's open session
  ok PUT "/v1/admin/users/$OV_USER_ID" "$ADMIN" '{"status":1}' >/dev/null
  setsid ip netns exec "$NS_S" env NODE_API_URL="$API" NODE_TOKEN="$OV_TOKEN" OPENVPN_MANAGEMENT=127.0.0.1:7505 NODE_POLL_SECONDS=60 \
    "${VPN_API[@]}" node-agent >"$WORK/agent-ovpn.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do grep -q "push stream up" "$WORK/agent-ovpn.log" 2>/dev/null && break; sleep 0.2; done
  grep -q "push stream up" "$WORK/agent-ovpn.log" || fail "the OpenVPN agent's push stream did not come up: $(tail -n 5 "$WORK/agent-ovpn.log")"
  outcome=$(ovpn_client "$OV/creds" "$OV/client4.log")
  [ "$outcome" = connected ] || { stop_client; fail "the OpenVPN client did not connect again once enabled: $outcome"; }
  ip netns exec "$NS_A" ping -c 1 -W 2 -q 10.8.0.1 >/dev/null || { stop_client; fail "connected over OpenVPN but 10.8.0.1 does not answer (P5)"; }
  T0=$(now_ms); ok PUT "/v1/admin/users/$OV_USER_ID" "$ADMIN" '{"status":0}' >/dev/null
  ended=""
  while [ $(( $(now_ms) - T0 )) -lt 5000 ]; do
    if ! ip netns exec "$NS_A" ping -c 1 -W 0.2 -q 10.8.0.1 >/dev/null 2>&1; then ended=$(( $(now_ms) - T0 )); break; fi
    sleep 0.05
  done
  stop_client
  [ -n "$ended" ] || fail "a disabled user's open OpenVPN session still passes 5 s later"
  # a ping lost on a busy machine (200 ms each) may end the wait before the kill: its log line gets 3 s
  for _ in $(seq 1 30); do grep -q "ended the OpenVPN sessions of" "$WORK/agent-ovpn.log" && break; sleep 0.1; done
  grep -q "ended the OpenVPN sessions of" "$WORK/agent-ovpn.log" || fail "the agent did not kill the session: $(tail -n 5 "$WORK/agent-ovpn.log")"
  [ "$ended" -le 2000 ] || fail "a disabled user's open OpenVPN session ended after $ended ms (> 2000)"
  echo "ok P5 - OpenVPN: a disabled user's open session ends in $ended ms (kill through the management interface)"
fi

# ==== [D103] speed limits and [D104] throttling on the node, measured with iperf3 (issue 25) ========
# Two new subscribers on the same node: device S on a plan of 10 Mbps (1 GB quota, throttle to
# 2 Mbps over it) in namespace A, device F on a plan without a speed limit in namespace B. The
# agent shapes S with tc (an HTB class each way); F is not shaped. iperf3 runs 2 s per direction.
SHAPE_LOG="$WORK/shaping.txt"
plan_with_cycle() { # $1 plan JSON -> "plan cycle"
  local plan cycle
  plan=$(ok POST /v1/admin/plans "$ADMIN" "$1" | json '.data.id')
  cycle=$(ok POST "/v1/admin/plans/$plan/cycles" "$ADMIN" '{"name":"Monthly","duration_days":30,"price":"5.00","currency":"USD"}' | json '.data.id')
  echo "$plan $cycle"
}
read -r SLOW_PLAN SLOW_CYCLE <<<"$(plan_with_cycle '{"name":"Ten Mbps","bandwidth_limit_gb":1,"speed_limit_mbps":10,"quota_action":"throttle","throttle_mbps":2}')"
read -r FAST_PLAN FAST_CYCLE <<<"$(plan_with_cycle '{"name":"No speed limit","bandwidth_limit_gb":0}')"
ok PUT "/v1/admin/servers/$SERVER" "$ADMIN" "{\"plan_ids\":[$PLAN,$SLOW_PLAN,$FAST_PLAN]}" >/dev/null
SLOW_TOKEN=$(subscriber "tunnel-slow@example.com" "$PASSWORD" "$SLOW_PLAN" "$SLOW_CYCLE")
FAST_TOKEN=$(subscriber "tunnel-fast@example.com" "$PASSWORD" "$FAST_PLAN" "$FAST_CYCLE")
SLOW_SERVICE=$(ok GET /v1/services/current "$SLOW_TOKEN" | json '.data.id')
ok GET "/v1/servers/$SERVER/wireguard" "$SLOW_TOKEN" >"$WORK/slow.conf"
ok GET "/v1/servers/$SERVER/wireguard" "$FAST_TOKEN" >"$WORK/fast.conf"
SLOW_ADDR=$(sed -n 's/^Address = \([^,/]*\).*/\1/p' "$WORK/slow.conf")
on_server_within "$WORK/slow.conf" "$TWO_POLLS" || fail "device S's peer is not on $WG_S two polls after its download"
on_server_within "$WORK/fast.conf" "$TWO_POLLS" || fail "device F's peer is not on $WG_S two polls after its download"
apply_config "$NS_A" "$WG_A" "$WORK/slow.conf"
apply_config "$NS_B" "$WG_B" "$WORK/fast.conf"
passes_within "$NS_A" 10 || fail "device S does not reach 10.66.0.1 through the tunnel"
passes_within "$NS_B" 10 || fail "device F does not reach 10.66.0.1 through the tunnel"
setsid ip netns exec "$NS_S" iperf3 -s -B 10.66.0.1 >"$WORK/iperf-server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do grep -q "Server listening" "$WORK/iperf-server.log" && break; sleep 0.1; done

# the class of S's address on the server's interface has this rate (tc prints 10Mbit, 5Mbit, ...)
class_rate_is() { in_s tc class show dev "$WG_S" | grep -q "rate $1Mbit ceil $1Mbit"; }
now_ms() { date +%s%3N; }
# iperf3 from a client namespace: $1 namespace, $2 up|down, [$3 seconds] -> Mbps received, one decimal
measure() {
  local flag=() out="$WORK/iperf-$1-$2.json"
  [ "$2" = down ] && flag=(-R)
  ip netns exec "$1" timeout 20 iperf3 -c 10.66.0.1 -t "${3:-2}" "${flag[@]}" -J >"$out" 2>&1 || fail "iperf3 from $1 ($2): $(tail -n 5 "$out")"
  json '.end.sum_received.bits_per_second' <"$out" | awk '{ printf "%.1f", $1 / 1e6 }'
}
at_most() { awk -v m="$1" -v l="$2" 'BEGIN { exit !(m <= l) }'; }
at_least() { awk -v m="$1" -v l="$2" 'BEGIN { exit !(m >= l) }'; }

# 10. the 10 Mbps device: at most 11 Mbps each way; the device without a limit: at least 3x that
class_rate_is 10 || fail "no 10Mbit class on $WG_S for device S: $(in_s tc class show dev "$WG_S")"
S_DOWN=$(measure "$NS_A" down); S_UP=$(measure "$NS_A" up)
F_DOWN=$(measure "$NS_B" down); F_UP=$(measure "$NS_B" up)
echo "  measured: 10 Mbps plan down $S_DOWN / up $S_UP Mbps; no-limit plan down $F_DOWN / up $F_UP Mbps" | tee -a "$SHAPE_LOG"
at_most "$S_DOWN" 11 && at_most "$S_UP" 11 || fail "the 10 Mbps device measured down $S_DOWN / up $S_UP Mbps (at most 11 each way)"
at_least "$F_DOWN" 33 && at_least "$F_UP" 33 || fail "the device without a limit measured down $F_DOWN / up $F_UP Mbps (at least 33 each way)"
echo "ok 10 - a 10 Mbps plan's device gets at most 11 Mbps each way ($S_DOWN down, $S_UP up); a no-limit device on the same node at least 3x ($F_DOWN down, $F_UP up)"

# 11. an admin sets the plan to 5 Mbps during a download: at most 5.5 Mbps from 3 s after the change
ip netns exec "$NS_A" timeout 20 iperf3 -c 10.66.0.1 -R -t 6 -i 0.5 -J >"$WORK/iperf-change.json" 2>&1 &
IPERF_CLIENT=$!
started=$(now_ms)
sleep 1
changed=$(now_ms)
ok PUT "/v1/admin/plans/$SLOW_PLAN" "$ADMIN" '{"speed_limit_mbps":5}' >/dev/null
until class_rate_is 5; do [ $(( $(now_ms) - changed )) -gt 3000 ] && fail "the 5 Mbps class is not on $WG_S 3 s after the admin's change"; sleep 0.05; done
APPLIED_MS=$(( $(now_ms) - changed ))
wait "$IPERF_CLIENT" || fail "iperf3 during the change: $(tail -n 5 "$WORK/iperf-change.json")"
offset=$(awk -v a="$started" -v b="$changed" 'BEGIN { printf "%.3f", (b - a) / 1000 }')
# the intervals that start 3 s after the change, as the client received them
AFTER=$(node -e '
  const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")), from = Number(process.argv[2]) + 3
  const after = j.intervals.map((i) => i.sum).filter((s) => s.start >= from - 0.01)
  process.stdout.write(after.length === 0 ? "none" : Math.max(...after.map((s) => s.bits_per_second / 1e6)).toFixed(1))
' "$WORK/iperf-change.json" "$offset")
[ "$AFTER" != none ] || fail "no iperf3 interval 3 s after the change"
S5_UP=$(measure "$NS_A" up)
echo "  measured: class at 5 Mbps ${APPLIED_MS} ms after the admin's change; download from 3 s after it at most $AFTER Mbps; upload $S5_UP Mbps" | tee -a "$SHAPE_LOG"
at_most "$AFTER" 5.5 && at_most "$S5_UP" 5.5 || fail "after the change to 5 Mbps the device measured $AFTER down / $S5_UP up (at most 5.5)"
echo "ok 11 - an admin's change to 5 Mbps is on the node in ${APPLIED_MS} ms; from 3 s after it the device measures at most $AFTER Mbps down, $S5_UP up"

# 12. over the quota of a throttle plan the device keeps its tunnel at the throttle speed (2 Mbps)
ok POST "/v1/admin/services/$SLOW_SERVICE/usage" "$ADMIN" '{"bytes":1073741824}' >/dev/null
[ "$(ok GET /v1/bandwidth/current "$SLOW_TOKEN" | json '.data.throttled')" = true ] || fail "/v1/bandwidth/current does not say throttled over the quota of a throttle plan"
end=$((SECONDS + TWO_POLLS))
until class_rate_is 2; do [ $SECONDS -ge $end ] && fail "no 2 Mbps class for the throttled device two polls after its quota ran out"; sleep 0.1; done
passes "$NS_A" || fail "the throttled device lost its tunnel"
T_DOWN=$(measure "$NS_A" down); T_UP=$(measure "$NS_A" up)
echo "  measured: throttled (over quota) down $T_DOWN / up $T_UP Mbps" | tee -a "$SHAPE_LOG"
at_most "$T_DOWN" 2.2 && at_most "$T_UP" 2.2 && at_least "$T_DOWN" 1 && at_least "$T_UP" 1 \
  || fail "the throttled device measured down $T_DOWN / up $T_UP Mbps (between 1 and 2.2)"
[ "$(call GET "/v1/servers/$SERVER/wireguard" "$SLOW_TOKEN" >/dev/null; status)" = 200 ] || fail "a throttled device's config download answered $(status), not 200"
echo "ok 12 - over the quota of a throttle plan the device keeps its tunnel at $T_DOWN down / $T_UP up Mbps (throttle 2), downloads still 200"

# 13. the limit lifted: the class goes, the device is unshaped again
ok PUT "/v1/admin/plans/$SLOW_PLAN" "$ADMIN" '{"quota_action":"suspend","bandwidth_limit_gb":0,"speed_limit_mbps":null}' >/dev/null
end=$((SECONDS + TWO_POLLS))
while in_s tc class show dev "$WG_S" | grep -q "class htb"; do [ $SECONDS -ge $end ] && fail "a class is left on $WG_S two polls after the limit was lifted"; sleep 0.1; done
U_DOWN=$(measure "$NS_A" down)
at_least "$U_DOWN" 6.6 || fail "the unshaped device measured $U_DOWN Mbps down (at least 3x the throttle)"
echo "ok 13 - the limit lifted: no class left on $WG_S, the device measures $U_DOWN Mbps down"

# 14. OpenVPN: a session of a 10 Mbps plan is shaped on the server's tun device by openvpn-connect
if [ "$OPENVPN" = 1 ]; then
  ok PUT "/v1/admin/plans/$SLOW_PLAN" "$ADMIN" '{"speed_limit_mbps":10}' >/dev/null
  ok PUT "/v1/admin/servers/$OV_SERVER" "$ADMIN" "{\"plan_ids\":[$PLAN,$SLOW_PLAN]}" >/dev/null
  if [ "$DEVICES" = 1 ]; then
    ok POST /v1/devices "$SLOW_TOKEN" '{"name":"router","platform":"router"}' >"$OV/slow-device.json"
    (umask 077; json '.data.openvpn.username' <"$OV/slow-device.json" >"$OV/slow-creds"; echo >>"$OV/slow-creds"; json '.data.openvpn.password' <"$OV/slow-device.json" >>"$OV/slow-creds"; echo >>"$OV/slow-creds")
  else
    ok GET /v1/account/vpn-credentials "$SLOW_TOKEN" >"$OV/slow-creds.json"
    (umask 077; json '.data.username' <"$OV/slow-creds.json" >"$OV/slow-creds"; echo >>"$OV/slow-creds"; json '.data.password' <"$OV/slow-creds.json" >>"$OV/slow-creds"; echo >>"$OV/slow-creds")
  fi
  outcome=$(ovpn_client "$OV/slow-creds" "$OV/client-slow.log")
  [ "$outcome" = connected ] || { stop_client; fail "the 10 Mbps plan's OpenVPN client: $outcome; $(tail -n 5 "$OV/client-slow.log"); server: $(tail -n 8 "$OV/server.log")"; }
  OV_DEV=$(sed -n 's/.*TUN\/TAP device \([^ ]*\) opened.*/\1/p' "$OV/server.log" | head -n 1)
  [ -n "$OV_DEV" ] || { stop_client; fail "no TUN device named in the OpenVPN server's log"; }
  end=$((SECONDS + 5))
  until in_s tc class show dev "$OV_DEV" 2>/dev/null | grep -q "rate 10Mbit ceil 10Mbit"; do
    [ $SECONDS -ge $end ] && { stop_client; fail "no 10Mbit class on $OV_DEV for the OpenVPN session: $(in_s tc class show dev "$OV_DEV" 2>&1); $(tail -n 5 "$OV/server.log")"; }
    sleep 0.2
  done
  setsid ip netns exec "$NS_S" iperf3 -s -B 10.8.0.1 -p 5202 >"$WORK/iperf-ovpn-server.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 50); do grep -q "Server listening" "$WORK/iperf-ovpn-server.log" && break; sleep 0.1; done
  ovpn_measure() { # $1 up|down
    local flag=() out="$WORK/iperf-ovpn-$1.json"
    [ "$1" = down ] && flag=(-R)
    ip netns exec "$NS_A" timeout 20 iperf3 -c 10.8.0.1 -p 5202 -t 2 "${flag[@]}" -J >"$out" 2>&1 || { stop_client; fail "iperf3 over OpenVPN ($1): $(tail -n 5 "$out")"; }
    json '.end.sum_received.bits_per_second' <"$out" | awk '{ printf "%.1f", $1 / 1e6 }'
  }
  O_DOWN=$(ovpn_measure down); O_UP=$(ovpn_measure up)
  echo "  measured: OpenVPN session of the 10 Mbps plan down $O_DOWN / up $O_UP Mbps (class on $OV_DEV)" | tee -a "$SHAPE_LOG"
  at_most "$O_DOWN" 11 && at_most "$O_UP" 11 || { stop_client; fail "the OpenVPN session of a 10 Mbps plan measured down $O_DOWN / up $O_UP Mbps (at most 11)"; }
  echo "ok 14 - OpenVPN: openvpn-connect shapes a 10 Mbps plan's session on $OV_DEV ($O_DOWN down, $O_UP up Mbps)"

  # 15. issue 34: the same credentials connected a second time (from namespace B) while the first
  # session runs: OpenVPN drops the first, whose client-disconnect ran between the second's auth
  # and connect scripts and took its speed along (per username): the second went unshaped. The
  # speed is kept per session now, and a session without one is refused.
  setsid ip netns exec "$NS_B" openvpn --config "$OV/client.ovpn" --auth-user-pass "$OV/slow-creds" --dev "${P}u" --dev-type tun --connect-retry-max 1 >"$OV/client-slow2.log" 2>&1 &
  OV_B=$!
  PIDS+=("$OV_B")
  for _ in $(seq 1 100); do grep -q "Initialization Sequence Completed" "$OV/client-slow2.log" && break; sleep 0.2; done
  # the first client would come back and take the name again: it goes
  stop_client
  grep -q "Initialization Sequence Completed" "$OV/client-slow2.log" || { stop_all "$OV_B"; fail "the second OpenVPN client with the same credentials did not connect: $(tail -n 5 "$OV/client-slow2.log"); server: $(tail -n 8 "$OV/server.log")"; }
  ovpn_measure_b() { # $1 up|down
    local flag=() out="$WORK/iperf-ovpn2-$1.json"
    [ "$1" = down ] && flag=(-R)
    ip netns exec "$NS_B" timeout 20 iperf3 -c 10.8.0.1 -p 5202 -t 2 "${flag[@]}" -J >"$out" 2>&1 || { stop_all "$OV_B"; fail "iperf3 over the second OpenVPN session ($1): $(tail -n 5 "$out")"; }
    json '.end.sum_received.bits_per_second' <"$out" | awk '{ printf "%.1f", $1 / 1e6 }'
  }
  T_DOWN=$(ovpn_measure_b down); T_UP=$(ovpn_measure_b up)
  stop_all "$OV_B"
  echo "  measured: the same credentials' second session down $T_DOWN / up $T_UP Mbps" | tee -a "$SHAPE_LOG"
  at_most "$T_DOWN" 11 && at_most "$T_UP" 11 || fail "the second OpenVPN session with the same credentials measured down $T_DOWN / up $T_UP Mbps (at most 11): the limit was bypassed"
  echo "ok 15 - OpenVPN: connecting twice with the same credentials keeps the limit ($T_DOWN down, $T_UP up Mbps)"
fi

# ==== [D124] a service in grace at GRACE_SPEED_MBPS, then paid: full speed (issue 39) =============
# Device G, of a subscriber to the no-limit plan, in namespace B. The admin moves the service's
# expiry to 8 s from now (the renewal must be made before it, even on a loaded machine); the jobs (JOBS_INTERVAL_SECONDS=1) make its renewal invoice, and at
# expires_at, with no balance and no saved card to pay it, put the service in grace: the node shapes
# G to GRACE_SPEED_MBPS. The admin marks the renewal invoice paid during a download: the class goes
# and the download runs at full speed again within 3 s (iperf3 reports every 0.25 s, each report
# timestamped as it arrives).
GRACE_STARTED=$SECONDS
GRACE_TOKEN=$(subscriber "tunnel-grace@example.com" "$PASSWORD" "$FAST_PLAN" "$FAST_CYCLE")
GRACE_SERVICE=$(ok GET /v1/services/current "$GRACE_TOKEN" | json '.data.id')
ok GET "/v1/servers/$SERVER/wireguard" "$GRACE_TOKEN" >"$WORK/grace.conf"
on_server_within "$WORK/grace.conf" "$TWO_POLLS" || fail "device G's peer is not on $WG_S two polls after its download"
apply_config "$NS_B" "$WG_B" "$WORK/grace.conf"
passes_within "$NS_B" 10 || fail "device G does not reach 10.66.0.1 through the tunnel"
EXPIRES=$(node -e 'process.stdout.write(new Date(Date.now() + 8000).toISOString())')
ok PUT "/v1/admin/services/$GRACE_SERVICE" "$ADMIN" "{\"expires_at\":\"$EXPIRES\"}" >/dev/null
end=$((SECONDS + 24))
until [ "$(ok GET /v1/services/current "$GRACE_TOKEN" | json '.data.status')" = grace ]; do
  [ $SECONDS -ge $end ] && fail "the service is not in grace 16 s after its expiry ($EXPIRES): $(ok GET /v1/services/current "$GRACE_TOKEN")"
  sleep 0.25
done
GRACE_UNTIL=$(ok GET /v1/services/current "$GRACE_TOKEN" | json '.data.grace_until')
RENEWAL=$(ok GET "/v1/invoices?status=pending" "$GRACE_TOKEN" | json '.data[0].uuid')
[ -n "$RENEWAL" ] && [ "$RENEWAL" != undefined ] || fail "no pending renewal invoice for the service in grace"
# the class of G's address (the one tc shows for it: HTB classes carry no address, so by its rate)
end=$((SECONDS + 3))
until class_rate_is "$GRACE_MBPS"; do [ $SECONDS -ge $end ] && fail "no ${GRACE_MBPS}Mbit class on $WG_S 3 s after the service went into grace: $(in_s tc class show dev "$WG_S")"; sleep 0.05; done
[ "$(call GET "/v1/servers/$SERVER/wireguard" "$GRACE_TOKEN" >/dev/null; status)" = 200 ] || fail "a config download in grace answered $(status), not 200"
G_DOWN=$(measure "$NS_B" down); G_UP=$(measure "$NS_B" up)
G_MAX=$(awk -v g="$GRACE_MBPS" 'BEGIN { printf "%.1f", g * 1.1 }')
echo "  measured: in grace (GRACE_SPEED_MBPS=$GRACE_MBPS, grace until $GRACE_UNTIL) down $G_DOWN / up $G_UP Mbps" | tee -a "$SHAPE_LOG"
at_most "$G_DOWN" "$G_MAX" && at_most "$G_UP" "$G_MAX" || fail "the device in grace measured down $G_DOWN / up $G_UP Mbps (at most $G_MAX)"
echo "ok 16 - a service whose renewal went unpaid is in grace (until $GRACE_UNTIL): its device keeps its tunnel at $G_DOWN down / $G_UP up Mbps (GRACE_SPEED_MBPS=$GRACE_MBPS, at most $G_MAX)"

# 17. the renewal paid during a download: full speed (over 3x the grace speed) within 3 s
FULL=$(awk -v g="$GRACE_MBPS" 'BEGIN { print g * 3 }')
setsid ip netns exec "$NS_B" timeout 20 iperf3 -c 10.66.0.1 -R -t 10 -i 0.25 -f m --forceflush >"$WORK/iperf-grace-pay.txt" 2>&1 &
IPERF_PAY=$!
PIDS+=("$IPERF_PAY")
# an interval's line: "[  5]   1.00-1.25   sec  0.06 MBytes  2.01 Mbits/sec"; its rate
rates() { awk '/^\[ *[0-9]+\] +[0-9.]+-[0-9.]+ +sec/ && $NF == "Mbits/sec" { print $(NF - 1) }' "$WORK/iperf-grace-pay.txt"; }
end=$((SECONDS + 5))
until [ "$(rates | wc -l)" -ge 4 ]; do [ $SECONDS -ge $end ] && fail "iperf3 in grace reported nothing: $(tail -n 5 "$WORK/iperf-grace-pay.txt")"; sleep 0.05; done
BEFORE=$(rates | sort -g | tail -n 1)
seen=$(rates | wc -l)
T0=$(now_ms)
ok POST "/v1/admin/invoices/$RENEWAL/mark-paid" "$ADMIN" >/dev/null
PAID_MS=$(( $(now_ms) - T0 ))
UNSHAPED_MS="" FULL_MS="" FULL_RATE=""
while [ $(( $(now_ms) - T0 )) -lt 5000 ]; do
  [ -z "$UNSHAPED_MS" ] && ! class_rate_is "$GRACE_MBPS" && UNSHAPED_MS=$(( $(now_ms) - T0 ))
  FULL_RATE=$(rates | tail -n +$((seen + 1)) | awk -v f="$FULL" '$1 > f { print; exit }')
  if [ -n "$FULL_RATE" ]; then FULL_MS=$(( $(now_ms) - T0 )); break; fi
  sleep 0.05
done
AFTER_PAY=$(rates | tail -n +$((seen + 1)) | tr '\n' ' ')
stop_all "$IPERF_PAY"
[ -n "$FULL_MS" ] || fail "no iperf3 interval over $FULL Mbps within 5 s of the payment: $(rates | tail -n +$((seen + 1)) | tr '\n' ' ')"
STATUS_PAID=$(ok GET /v1/services/current "$GRACE_TOKEN" | json '.data.status')
echo "  measured: before the payment 0.25 s intervals of at most $BEFORE Mbps; paid (mark-paid answered in $PAID_MS ms), grace class gone after ${UNSHAPED_MS:-?} ms, first interval over $FULL Mbps ($FULL_RATE Mbps) reported $FULL_MS ms after the payment (intervals since: $AFTER_PAY)" | tee -a "$SHAPE_LOG"
[ "$STATUS_PAID" = active ] || fail "the service is $STATUS_PAID after its renewal was paid, not active"
[ "$FULL_MS" -le 3000 ] || fail "full speed came back $FULL_MS ms after the payment (> 3000)"
echo "ok 17 - the renewal paid in grace: the service is active and the device is over $FULL Mbps ($FULL_RATE) $FULL_MS ms after the payment (checks 16-17: $((SECONDS - GRACE_STARTED)) s)"

echo "tunnel check passed ($([ $DEVICES = 1 ] && echo "with devices" || echo "devices stood in by a second user"); OpenVPN $([ "$OPENVPN" = 1 ] && echo "checked" || echo "skipped")), poll ${POLL}s"
