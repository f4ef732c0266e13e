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
#
# TLS is on (clients may still connect without it), with a certificate authority made on first
# start in .local/postgres/tls: ca.crt signs server.crt (valid for the name "localhost" only, not
# for 127.0.0.1, so that a verify-full test can get the host name wrong) and client.crt for the
# role herald_tls_client, which may log in only with that certificate (pg_hba "cert").
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

# The development CA, the server's certificate and a client certificate, made once.
make_tls() {
  local dir=$root_dir/tls
  [ -s "$dir/client.key" ] && return 0
  mkdir -p "$dir"
  (
    cd "$dir"
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj "/CN=Herald development CA" -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
      -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile server.ext -out server.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=herald_tls_client" \
      -keyout client.key.new -out client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out client.crt 2>/dev/null
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 644 ca.crt server.crt client.crt
    mv client.key.new client.key
  ) || { echo "postgres: could not make the development TLS certificates (openssl)" >&2; exit 1; }
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$dir/server.key" "$dir/server.crt" "$dir/ca.crt"
    chmod o+x "$dir"
  fi
}

# Who may log in how: the certificate role only over TLS with its certificate, everyone else
# with a password (TLS or not).
write_hba() {
  cat >"$root_dir/pg_hba.conf" <<HBA
local   all  all                          scram-sha-256
hostssl all  herald_tls_client 127.0.0.1/32 cert
hostssl all  herald_tls_client ::1/128      cert
host    all  herald_tls_client 0.0.0.0/0    reject
host    all  all               127.0.0.1/32 scram-sha-256
host    all  all               ::1/128      scram-sha-256
HBA
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$root_dir/pg_hba.conf"
  return 0
}

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
  make_tls
  write_hba
  tls=$root_dir/tls
  if as_owner "$bin_dir/pg_ctl" -D "$data_dir" status >/dev/null 2>&1; then
    echo "postgres: already running on 127.0.0.1:$port"
  else
    as_owner "$bin_dir/pg_ctl" -D "$data_dir" -l "$log_file" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$socket_dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=256MB -c hba_file=$root_dir/pg_hba.conf -c ssl=on -c ssl_cert_file=$tls/server.crt -c ssl_key_file=$tls/server.key -c ssl_ca_file=$tls/ca.crt" \
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
  if ! PGPASSWORD=$password psql -h 127.0.0.1 -p "$port" -U "$user" -d postgres -Atqc "select 1 from pg_roles where rolname = 'herald_tls_client'" | grep -q 1; then
    PGPASSWORD=$password psql -h 127.0.0.1 -p "$port" -U "$user" -d postgres -qc "create role herald_tls_client login" >/dev/null
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
