#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the history tests (Debian's postgresql package, as root without
# systemd): initdb into a scratch folder as the postgres user (the server refuses to run as root), listen
# on 127.0.0.1 only with trust authentication, create the database `trtmc`. Idempotent.
#   .ci/postgres.sh up     install if needed, start the server, print the URL (also in $STATE/url)
#   .ci/postgres.sh down   stop the server started here
# Then: export TRTMC_TEST_POSTGRES=$(cat "$STATE/url")
set -euo pipefail
# shellcheck source=.ci/apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
STATE=${POSTGRES_CI_DIR:-/tmp/postgres-ci}
PORT=${POSTGRES_CI_PORT:-55432}

say() { printf '[postgres] %s\n' "$*"; }

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && printf '%s\n' "$d"
}

install_packages() {
  bindir >/dev/null && return
  say "installing postgresql"
  # The package's postinst would start a cluster of its own (the cluster used here is the throwaway
  # one below).
  apt_install_quietly postgresql
  bindir >/dev/null || { say "postgresql installed but no initdb found"; return 1; }
}

as_postgres() { runuser -u postgres -- "$@"; }

up() {
  install_packages
  local bin url
  bin=$(bindir)
  url="postgres://postgres@127.0.0.1:$PORT/trtmc"
  if as_postgres "$bin/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
    say "already up: $url"
    printf '%s\n' "$url" >"$STATE/url"
    return
  fi
  rm -rf "$STATE"
  install -d -o postgres -g postgres -m 0700 "$STATE" "$STATE/data"
  as_postgres "$bin/initdb" -D "$STATE/data" -U postgres --auth=trust --no-sync -E UTF8 >"$STATE/initdb.log"
  # fsync off: a scratch server for tests (a crash loses the test data, never anything else).
  as_postgres "$bin/pg_ctl" -D "$STATE/data" -l "$STATE/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $PORT -k $STATE -c fsync=off -c max_connections=200" start
  as_postgres "$bin/createdb" -h 127.0.0.1 -p "$PORT" -U postgres trtmc
  chmod 0755 "$STATE"
  printf '%s\n' "$url" >"$STATE/url"
  say "up: $url"
}

down() {
  local bin
  bin=$(bindir) || return 0
  [ -d "$STATE/data" ] || return 0
  as_postgres "$bin/pg_ctl" -D "$STATE/data" -m fast -w stop || true
}

"${1:-up}"
