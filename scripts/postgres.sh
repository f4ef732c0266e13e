#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for development and tests, in .local/postgres of the project.
#
#   scripts/postgres.sh start   # initdb on first use, start, wait until it accepts connections
#   scripts/postgres.sh stop
#   scripts/postgres.sh status  # exit 0 when running
#   scripts/postgres.sh reset   # stop and delete the cluster's data
#
# Listens on 127.0.0.1:${HERALD_POSTGRES_PORT:-54329} only; user herald, password herald-dev,
# database herald (development only). As root, the server runs as the unprivileged
# "postgres" user (PostgreSQL refuses to run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

root_dir=$(pwd)/.local/postgres
data_dir=$root_dir/data
socket_dir=$root_dir/run
log_file=$root_dir/server.log
port=${HERALD_POSTGRES_PORT:-54329}
user=${HERALD_POSTGRES_USER:-herald}
password=${HERALD_POSTGRES_PASSWORD:-herald-dev}
database=${HERALD_POSTGRES_DATABASE:-herald}

bin_dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin_dir" ] || { echo "postgres: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

start() {
  mkdir -p "$root_dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$root_dir"
    # The server user must be able to reach the folder.
    chmod o+x "$(pwd)" "$(pwd)/.local" 2>/dev/null || true
  fi
  if [ ! -f "$data_dir/PG_VERSION" ]; then
    echo "postgres: creating a cluster in $data_dir"
    pwfile=$(mktemp)
    echo "$password" > "$pwfile"
    chmod 644 "$pwfile"
    as_owner "$bin_dir/initdb" -D "$data_dir" -U "$user" --pwfile="$pwfile" --auth=scram-sha-256 \
      --encoding=UTF8 --locale=C.UTF-8 >"$root_dir/initdb.log" 2>&1 || { cat "$root_dir/initdb.log" >&2; rm -f "$pwfile"; exit 1; }
    rm -f "$pwfile"
  fi
  as_owner mkdir -p "$socket_dir"
  if as_owner "$bin_dir/pg_ctl" -D "$data_dir" status >/dev/null 2>&1; then
    echo "postgres: already running on 127.0.0.1:$port"
  else
    as_owner "$bin_dir/pg_ctl" -D "$data_dir" -l "$log_file" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$socket_dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=256MB" \
      start >/dev/null || { tail -n 30 "$log_file" >&2; exit 1; }
  fi
  for _ in $(seq 1 60); do
    if PGPASSWORD=$password psql -h 127.0.0.1 -p "$port" -U "$user" -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
      break
    fi
    sleep 0.5
  done
  if ! PGPASSWORD=$password psql -h 127.0.0.1 -p "$port" -U "$user" -d postgres -Atqc "select 1 from pg_database where datname = '$database'" | grep -q 1; then
    PGPASSWORD=$password psql -h 127.0.0.1 -p "$port" -U "$user" -d postgres -qc "create database $database" >/dev/null
  fi
  echo "postgres: ready on 127.0.0.1:$port (user $user, database $database)"
}

stop() {
  if [ -f "$data_dir/PG_VERSION" ] && as_owner "$bin_dir/pg_ctl" -D "$data_dir" status >/dev/null 2>&1; then
    as_owner "$bin_dir/pg_ctl" -D "$data_dir" -m fast -w stop >/dev/null
    echo "postgres: stopped"
  fi
}

status() {
  [ -f "$data_dir/PG_VERSION" ] && as_owner "$bin_dir/pg_ctl" -D "$data_dir" status >/dev/null 2>&1
}

case "${1:-}" in
  start) start ;;
  status) status ;;
  stop) stop ;;
  reset) stop; rm -rf "$root_dir"; echo "postgres: data deleted" ;;
  *) echo "usage: $0 start|stop|status|reset" >&2; exit 2 ;;
esac
