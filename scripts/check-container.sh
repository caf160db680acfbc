#!/usr/bin/env bash
# The container, proven (issue 18): builds the project's Dockerfile with podman, as a user's
# `docker build .` would, then runs the image on the embedded database and on PostgreSQL 15 and
# checks, for each: /v1/status answers with the database ok, the process runs as a non-root user,
# the image's HEALTHCHECK passes, and `podman stop` (SIGTERM) ends it with exit code 0.
#
# This machine reaches no image registry, so the two base images the Dockerfile names
# (node:20-bookworm-slim and debian:bookworm-slim) are made locally once: a `debootstrap
# --variant=minbase bookworm` root imported with `podman import`, plus, for the node image, this
# machine's Node.js and npm. The bases (never the project's Dockerfile) trust this machine's CA
# bundle so that npm reaches the registry from inside the build.
#
# Needs root and apt-get (podman, runc, debootstrap); says so and skips when it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
skip() { echo "container check skipped: $*"; exit 0; }
step() { printf '  - %s\n' "$*"; }

[ "$(id -u)" = "0" ] || skip "it needs root (podman with runc, debootstrap)"
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || skip "no apt-get to install ${missing[*]}"
  echo "  installing ${missing[*]} with apt-get"
  (timeout 600 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq "${missing[@]}" >/dev/null) \
    || skip "could not install ${missing[*]}"
fi

PODMAN=(podman --runtime runc)
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
NODE_BASE=docker.io/library/node:20-bookworm-slim
DEBIAN_BASE=docker.io/library/debian:bookworm-slim
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
WORK=$(mktemp -d /var/tmp/vpn-container.XXXXXX)
NAME=vpn-api-check-$$
IMAGE=localhost/vpn-api:check-$$

# the compose project's containers too, should the script stop half-way through its check
# (issue 23, item 16: a CI step leaves nothing running)
COMPOSE_PROJECT=vpnapicheck$$
cleanup() {
  "${PODMAN[@]}" rm -f "$NAME" >/dev/null 2>&1 || true
  local leftovers
  leftovers=$("${PODMAN[@]}" ps -aq --filter "name=^${COMPOSE_PROJECT}_" 2>/dev/null || true)
  [ -z "$leftovers" ] || "${PODMAN[@]}" rm -f $leftovers >/dev/null 2>&1 || true
  "${PODMAN[@]}" rmi -f "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

make_bases() {
  if "${PODMAN[@]}" image exists "$DEBIAN_BASE" && "${PODMAN[@]}" image exists "$NODE_BASE"; then
    step "base images present: $DEBIAN_BASE, $NODE_BASE"
    return
  fi
  step "making the base images locally (debootstrap --variant=minbase bookworm from $MIRROR)"
  local rootfs="$WORK/rootfs"
  timeout 900 debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log"; echo "debootstrap failed"; return 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  # trust this machine's CA bundle (its TLS-inspecting proxy is how the registry is reached)
  mkdir -p "$rootfs/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  tar -C "$rootfs" -c . | "${PODMAN[@]}" import --change 'CMD ["bash"]' - "$DEBIAN_BASE" >/dev/null
  # node:20: the same root plus this machine's Node.js 20 and npm
  local node_bin npm_dir
  node_bin=$(command -v node)
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  cp "$node_bin" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$rootfs/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  mkdir -p "$rootfs/usr/local/etc"
  printf 'cafile=/etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/usr/local/etc/npmrc"
  tar -C "$rootfs" -c . | "${PODMAN[@]}" import \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["node"]' - "$NODE_BASE" >/dev/null
  rm -rf "$rootfs"
}

make_bases
step "podman build . (docker format, so the HEALTHCHECK is kept)"
start=$(date +%s)
"${PODMAN[@]}" build --format docker --network host "${LIMITS[@]}" -t "$IMAGE" . >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log"; echo "podman build failed"; exit 1; }
step "built in $(( $(date +%s) - start )) s: $("${PODMAN[@]}" image inspect "$IMAGE" --format '{{.Size}}') bytes"
user=$("${PODMAN[@]}" image inspect "$IMAGE" --format '{{.Config.User}}')
[ -n "$user" ] && [ "$user" != "root" ] && [ "$user" != "0" ] || { echo "the image's USER is '$user', not a non-root user"; exit 1; }
"${PODMAN[@]}" image inspect "$IMAGE" --format '{{json .Config.Healthcheck}}' | grep -q '/v1/status' \
  || { echo "the image has no HEALTHCHECK on /v1/status"; exit 1; }

# $1 label, then `-e` options; the container shares the host network on a free port
run_image() {
  local label=$1; shift
  local port=$((20000 + RANDOM % 20000))
  step "run on $label (port $port)"
  # the image's HEALTHCHECK is run by hand below: no systemd here for podman's periodic timer
  "${PODMAN[@]}" run -d --name "$NAME" --network host "${LIMITS[@]}" --health-interval disable \
    -e PORT="$port" "$@" "$IMAGE" >/dev/null
  local body=""
  for _ in $(seq 1 120); do
    body=$(curl -fsS "http://127.0.0.1:$port/v1/status" 2>/dev/null) && echo "$body" | grep -q '"database":"ok"' && break
    body=""
    sleep 0.5
  done
  if [ -z "$body" ]; then "${PODMAN[@]}" logs "$NAME" | tail -40; echo "no /v1/status from the container"; return 1; fi
  step "/v1/status: $body"
  # [D118]: the portal and the console are in the image's binary
  local page
  page=$(curl -fsS "http://127.0.0.1:$port/" 2>/dev/null) && echo "$page" | grep -q '<div id="root">' \
    || { echo "no portal page at / from the container"; return 1; }
  curl -fsS "http://127.0.0.1:$port/admin/" 2>/dev/null | grep -q '<div id="root">' || { echo "no console page at /admin/ from the container"; return 1; }
  step "the portal at / and the console at /admin/ are served"
  local uid
  uid=$("${PODMAN[@]}" exec "$NAME" id -u)
  [ "$uid" != "0" ] || { echo "the server runs as root"; return 1; }
  step "runs as uid $uid ($("${PODMAN[@]}" exec "$NAME" id -un))"
  "${PODMAN[@]}" healthcheck run "$NAME" >/dev/null || { echo "HEALTHCHECK failed"; return 1; }
  step "HEALTHCHECK passes"
  "${PODMAN[@]}" stop -t 20 "$NAME" >/dev/null
  local code
  code=$("${PODMAN[@]}" inspect "$NAME" --format '{{.State.ExitCode}}')
  [ "$code" = "0" ] || { "${PODMAN[@]}" logs "$NAME" | tail -20; echo "podman stop (SIGTERM): exit code $code, not 0"; return 1; }
  step "podman stop (SIGTERM): exit code 0"
  "${PODMAN[@]}" rm -f "$NAME" >/dev/null
}

run_image "the embedded database"
export -f run_image step
export NAME IMAGE
export PODMAN_CMD="${PODMAN[*]}" LIMITS_CMD="${LIMITS[*]}"
"$ROOT/scripts/with-postgres.sh" bash -c '
  PODMAN=($PODMAN_CMD); LIMITS=($LIMITS_CMD)
  run_image "PostgreSQL 15" -e DATABASE_URL="$PG_URL" -e APP_KEY="$(head -c 32 /dev/urandom | base64)"'

# compose.yaml, the documented way to run it with PostgreSQL: podman-compose brings it up on a
# bridge network of its own (service names resolve), with a locally made postgres:15 (see below)
compose_check() {
  command -v podman-compose >/dev/null || {
    command -v apt-get >/dev/null && (DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq podman-compose >/dev/null 2>&1) || true; }
  command -v podman-compose >/dev/null || { step "compose check skipped: podman-compose cannot be installed here"; return 0; }
  make_postgres_base
  local project=$COMPOSE_PROJECT
  # the image just built stands for compose's `build: .` (podman-compose builds only a missing image)
  "${PODMAN[@]}" tag "$IMAGE" "localhost/${project}_api:latest"
  cat >"$WORK/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
CONF
  # as the deploy guide says: compose.yaml with a .env beside it (made here from .env.example's names)
  mkdir -p "$WORK/compose"
  cp compose.yaml "$WORK/compose/compose.yaml"
  printf 'APP_KEY=%s\nADMIN_EMAIL=ops@example.com\nADMIN_PASSWORD=Compose-Check-Passw0rd\n' "$(head -c 32 /dev/urandom | base64)" >"$WORK/compose/.env"
  local compose=(env CONTAINERS_CONF="$WORK/containers.conf" podman-compose -p "$project" -f "$WORK/compose/compose.yaml")
  compose_down() { "${compose[@]}" down -v >/dev/null 2>&1 || true; "${PODMAN[@]}" rmi -f "localhost/${project}_api:latest" >/dev/null 2>&1 || true; }
  step "podman-compose up (compose.yaml: PostgreSQL 15 and the API)"
  "${compose[@]}" up -d >"$WORK/compose.log" 2>&1 || { tail -30 "$WORK/compose.log"; compose_down; echo "podman-compose up failed"; return 1; }
  local body=""
  for _ in $(seq 1 120); do
    body=$(curl -fsS "http://127.0.0.1:3000/v1/status" 2>/dev/null) && echo "$body" | grep -q '"database":"ok"' && break
    body=""
    sleep 0.5
  done
  if [ -z "$body" ]; then "${compose[@]}" logs 2>&1 | tail -40; compose_down; echo "compose: no /v1/status on port 3000"; return 1; fi
  step "compose: /v1/status $body"
  local token
  token=$(curl -fsS -H 'content-type: application/json' -d '{"email":"ops@example.com","password":"Compose-Check-Passw0rd"}' \
    http://127.0.0.1:3000/v1/auth/login | grep -o '"token":"[^"]*"' || true)
  [ -n "$token" ] || { compose_down; echo "compose: the admin could not log in on PostgreSQL"; return 1; }
  step "compose: the admin logs in (data on the db service)"
  compose_down
}

# a stand-in for the registry's postgres:15, made locally: Debian's PostgreSQL 15 with an entrypoint
# that honours POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB as the official image does
make_postgres_base() {
  local pg=docker.io/library/postgres:15
  "${PODMAN[@]}" image exists "$pg" && return 0
  step "making a local postgres:15 (Debian's postgresql-15 on the bookworm base)"
  mkdir -p "$WORK/pg"
  cat >"$WORK/pg/entrypoint.sh" <<'ENTRY'
#!/bin/sh
set -e
mkdir -p "$PGDATA" /var/run/postgresql
chown -R postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "$POSTGRES_PASSWORD" >/tmp/pwfile && chown postgres /tmp/pwfile
  runuser -u postgres -- initdb -D "$PGDATA" -U "${POSTGRES_USER:-postgres}" --pwfile=/tmp/pwfile \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f /tmp/pwfile
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  db="${POSTGRES_DB:-${POSTGRES_USER:-postgres}}"
  if [ "$db" != "postgres" ]; then
    runuser -u postgres -- pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
    runuser -u postgres -- psql -q -U "${POSTGRES_USER:-postgres}" -d postgres -c "create database \"$db\""
    runuser -u postgres -- pg_ctl -D "$PGDATA" -w stop >/dev/null
  fi
fi
exec runuser -u postgres -- postgres -D "$PGDATA" -c listen_addresses='*'
ENTRY
  cat >"$WORK/pg/Containerfile" <<'FILE'
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
  && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN chmod +x /usr/local/bin/docker-entrypoint.sh
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
FILE
  "${PODMAN[@]}" build --network host "${LIMITS[@]}" -t "$pg" "$WORK/pg" >"$WORK/pg.log" 2>&1 \
    || { tail -20 "$WORK/pg.log"; echo "could not make postgres:15"; return 1; }
}

compose_check
echo "container check passed"
