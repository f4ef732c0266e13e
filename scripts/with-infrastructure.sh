#!/usr/bin/env bash
# Runs a command with the local infrastructure up: PostgreSQL and the development Kafka broker.
# Starts what is not already running, exports HERALD_POSTGRES_*, HERALD_KAFKA_BROKERS and the
# cluster's HERALD_MASTER_KEY (made once, in .local/postgres/master-key), runs
# the command, and stops what it started, even when the command fails, keeping its exit status.
#
#   scripts/with-infrastructure.sh BUILD_DIR COMMAND [ARGS...]
#
# BUILD_DIR holds herald-kafka-dev (.build/debug or .build/release).
set -uo pipefail
cd "$(dirname "$0")/.."

build_dir=$1
shift

started_postgres=0
started_kafka=0
stop_all() {
  local status=$?
  [ $started_kafka -eq 1 ] && scripts/kafka-dev.sh stop
  [ $started_postgres -eq 1 ] && scripts/postgres.sh stop
  exit $status
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! scripts/postgres.sh status >/dev/null 2>&1; then started_postgres=1; fi
scripts/postgres.sh start || exit 1
if ! scripts/kafka-dev.sh status >/dev/null 2>&1; then started_kafka=1; fi
scripts/kafka-dev.sh start "$build_dir/herald-kafka-dev" || exit 1

export HERALD_POSTGRES_HOST=127.0.0.1
export HERALD_POSTGRES_PORT=${HERALD_POSTGRES_PORT:-54329}
export HERALD_POSTGRES_USER=${HERALD_POSTGRES_USER:-herald}
export HERALD_POSTGRES_PASSWORD=${HERALD_POSTGRES_PASSWORD:-herald-dev}
export HERALD_POSTGRES_DATABASE=${HERALD_POSTGRES_DATABASE:-herald}
HERALD_KAFKA_BROKERS=$(cat .local/kafka-dev.address)
export HERALD_KAFKA_BROKERS
export HERALD_BIN_DIR=$(cd "$build_dir" && pwd)
# One master key per local cluster, as a deployment has one: processes refuse to start with a
# key that did not seal the database's credentials.
if [ -z "${HERALD_MASTER_KEY:-}" ]; then
  key_file=.local/postgres/master-key
  [ -s "$key_file" ] || (umask 077 && head -c 32 /dev/urandom | base64 >"$key_file")
  HERALD_MASTER_KEY=$(cat "$key_file")
fi
export HERALD_MASTER_KEY
# Tests start many herald-api processes side by side: none takes the default operations port
# (9467); tests of that port, and `herald dev up`, give one explicitly.
export HERALD_API_METRICS_PORT=${HERALD_API_METRICS_PORT:-0}

"$@"
