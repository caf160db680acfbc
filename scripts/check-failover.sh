#!/usr/bin/env bash
# [D126], issue 41: the API on a real highly available PostgreSQL. Starts etcd, three Patroni
# members of PostgreSQL 15 (synchronous_mode) and HAProxy (a read-write port that follows the
# primary by Patroni's REST /primary), two API instances on that port and a write load, then a
# planned switchover, a kill -9 of the primary's postmaster and the loss of the primary's node.
# scripts/failover/run.ts prints the figures of each event and exits non-zero on any lost
# acknowledged write, any 5xx other than 503, any request over 10 s, a device deleted through one
# instance not off a node agent's interface (scripts/failover/agent.ts) within 2 s, or an instance
# that does not recover. It runs twice: on HAProxy's port, then through PgBouncer in transaction mode. Needs root (Patroni runs PostgreSQL as `postgres`) and Debian's packages; skips, saying
# why, without them. Everything is torn down on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "check-failover: skipped: $*"; exit 0; }
[ "$(id -u)" = "0" ] || skip "needs root (Patroni runs PostgreSQL as the postgres user)"
[ -x /usr/lib/postgresql/15/bin/postgres ] || skip "PostgreSQL 15 is not installed"
if ! command -v patroni >/dev/null || ! command -v etcd >/dev/null || ! command -v haproxy >/dev/null; then
  command -v apt-get >/dev/null || skip "patroni, etcd and haproxy are missing and there is no apt-get"
  (timeout 600 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends \
    patroni etcd-server etcd-client haproxy pgbouncer python3-etcd >/dev/null) || skip "could not install patroni, etcd and haproxy"
fi
id postgres >/dev/null 2>&1 || skip "no postgres user"

HA=""
cleanup() {
  [ -n "$HA" ] || return 0
  set +e
  [ -f "$HA/pgbouncer/pgbouncer.pid" ] && kill "$(cat "$HA/pgbouncer/pgbouncer.pid")" 2>/dev/null
  # the API instances and the load are children of run.ts (it stops them itself); then the cluster
  pkill -TERM -f "haproxy -f $HA/" 2>/dev/null
  for f in "$HA"/pg*.yml; do pkill -KILL -f "patroni $f" 2>/dev/null; done
  for d in "$HA"/pg*/data; do
    [ -f "$d/postmaster.pid" ] && kill -9 "$(head -1 "$d/postmaster.pid")" 2>/dev/null
  done
  pkill -KILL -f "postgres -D $HA/" 2>/dev/null
  pkill -TERM -f "etcd --name vpn-ha-etcd --data-dir $HA/" 2>/dev/null
  sleep 0.5
  # the cluster's logs stay for a look after a failure
  if [ "${FAILOVER_OK:-}" != "1" ]; then mkdir -p /tmp/vpn-ha-logs && cp "$HA"/*.log /tmp/vpn-ha-logs/ 2>/dev/null && echo "check-failover: the cluster's logs are in /tmp/vpn-ha-logs"; fi
  rm -rf "$HA"
  HA=""
  set -e
}
trap cleanup EXIT

export PATH="$PWD/node_modules/.bin:$PATH"
# the first run on HAProxy's read-write port; the second through PgBouncer in transaction mode in
# front of it (DATABASE_DIRECT_URL on HAProxy for LISTEN and the migrations' lock), each on a
# cluster of its own
for pooler in none pgbouncer; do
  FAILOVER_OK=""
  HA=$(mktemp -d /tmp/vpn-ha.XXXXXX)
  chmod 755 "$HA"
  export HA
  if [ "$pooler" = "pgbouncer" ] && ! command -v pgbouncer >/dev/null; then
    echo "check-failover: the PgBouncer run skipped: pgbouncer is not installed"
    cleanup
    continue
  fi
  FAILOVER_POOLER=$pooler bun run scripts/failover/run.ts
  FAILOVER_OK=1
  cleanup
done
