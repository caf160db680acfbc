#!/usr/bin/env bash
# Runs a command with PgBouncer in transaction mode in front of the PostgreSQL of PG_URL ([D126],
# issue 41), then stops it. Meant inside scripts/with-postgres.sh:
#   scripts/with-postgres.sh scripts/with-pgbouncer.sh <command...>
# The command sees PGBOUNCER_URL (PG_URL's user and database, PgBouncer's port) and PG_URL
# unchanged (the direct connection, for DATABASE_DIRECT_URL). Every database name is passed
# through (`* =`), so databases created later work too. PgBouncer runs as the postgres user when
# started by root (it refuses root). Installs Debian's pgbouncer with apt-get when missing.
set -euo pipefail
: "${PG_URL:?PG_URL is not set: run this inside scripts/with-postgres.sh}"
if ! command -v pgbouncer >/dev/null; then
  echo "pgbouncer not found: installing it with apt-get" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null) || {
    echo "could not install pgbouncer" >&2; exit 1; }
fi
PGB_PORT=${PGBOUNCER_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
# host, port and user of PG_URL (postgres://user[:password]@host:port/db)
rest=${PG_URL#*://}
userinfo=${rest%%@*}
hostport=${rest#*@}
hostport=${hostport%%/*}
PG_USER=${userinfo%%:*}
PG_HOST=${hostport%%:*}
PG_PORT_OF_URL=${hostport##*:}
DIR=$(mktemp -d /tmp/vpn-pgbouncer.XXXXXX)
chmod 755 "$DIR"
as_pg() { if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = "0" ] && chown postgres "$DIR"
cat > "$DIR/pgbouncer.ini" <<EOF
[databases]
* = host=$PG_HOST port=$PG_PORT_OF_URL
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
server_login_retry = 1
ignore_startup_parameters = extra_float_digits
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
EOF
echo "\"$PG_USER\" \"\"" > "$DIR/userlist.txt"
[ "$(id -u)" = "0" ] && chown postgres "$DIR"/*
cleanup() {
  [ -f "$DIR/pgbouncer.pid" ] && kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null
  sleep 0.2
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
as_pg pgbouncer -d "$DIR/pgbouncer.ini"
for _ in $(seq 1 50); do
  (echo > "/dev/tcp/127.0.0.1/$PGB_PORT") 2>/dev/null && break
  sleep 0.1
done
export PGBOUNCER_URL="${PG_URL/$hostport/127.0.0.1:$PGB_PORT}"
"$@"
