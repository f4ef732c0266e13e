#!/usr/bin/env bash
# The development Kafka broker (herald-kafka-dev) in the background.
#
#   scripts/kafka-dev.sh start BINARY   # start it, wait until its address file appears
#   scripts/kafka-dev.sh stop           # SIGTERM, wait for it to exit
#   scripts/kafka-dev.sh status         # exit 0 when running
#
# Listens on 127.0.0.1:${HERALD_KAFKA_DEV_PORT:-9092} (one port per broker from there). Log:
# .local/kafka-dev.log. Its data lives in memory and is gone when it stops.
set -euo pipefail
cd "$(dirname "$0")/.."

state_dir=$(pwd)/.local
pid_file=$state_dir/kafka-dev.pid
address_file=$state_dir/kafka-dev.address
log_file=$state_dir/kafka-dev.log

start() {
  local binary=$1
  mkdir -p "$state_dir"
  if [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "kafka-dev: already running ($(cat "$address_file" 2>/dev/null))"
    return
  fi
  rm -f "$address_file"
  HERALD_KAFKA_DEV_BOOTSTRAP_FILE=$address_file nohup "$binary" >"$log_file" 2>&1 &
  echo $! > "$pid_file"
  for _ in $(seq 1 100); do
    if [ -s "$address_file" ]; then
      echo "kafka-dev: ready on $(cat "$address_file")"
      return
    fi
    if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
      echo "kafka-dev: exited during start:" >&2
      tail -n 20 "$log_file" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "kafka-dev: not ready after 10 s; see $log_file" >&2
  exit 1
}

stop() {
  if [ -f "$pid_file" ]; then
    local pid
    pid=$(cat "$pid_file")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -KILL "$pid" 2>/dev/null || true
      echo "kafka-dev: stopped"
    fi
    rm -f "$pid_file" "$address_file"
  fi
}

status() {
  [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

case "${1:-}" in
  status) status ;;
  start) start "${2:?usage: $0 start BINARY}" ;;
  stop) stop ;;
  *) echo "usage: $0 start BINARY|stop|status" >&2; exit 2 ;;
esac
