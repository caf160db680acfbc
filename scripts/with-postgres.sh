#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL 15 cluster on a loopback port, then stops it.
#   scripts/with-postgres.sh <command...>   (the command sees PG_URL, e.g. postgres://postgres@127.0.0.1:54329/postgres)
# Installs the server with apt-get when /usr/lib/postgresql/15/bin is missing. initdb refuses root,
# so the cluster is made and run as the postgres user in a directory it owns.
set -euo pipefail
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PORT=${PG_PORT:-54329}
if [ ! -x "$PGBIN/initdb" ]; then
  echo "PostgreSQL 15 not found in $PGBIN: installing it with apt-get" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null) || {
    echo "could not install postgresql-15" >&2; exit 1; }
fi
as_pg() { if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
DIR=$(mktemp -d /tmp/vpn-pg.XXXXXX)
chmod 755 "$DIR"
[ "$(id -u)" = "0" ] && chown postgres "$DIR"
cleanup() {
  as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup EXIT
# a SIGINT or SIGTERM to this script runs the cleanup too: the cluster never outlives it
trap 'exit 130' INT
trap 'exit 143' TERM
as_pg "$PGBIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w \
  -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
export PG_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
export PG_DATA_DIR="$DIR/data"
"$@"
