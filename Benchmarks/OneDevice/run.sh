#!/usr/bin/env bash
# Where a one-device push's time goes (`make bench-one-device`): on an idle `herald dev` stack (one
# sender), PUSHES single-device pushes, one every 50 ms after 40 unmeasured ones, each timed from
# the Open API's 202 to apns-sim's receipt and split at the records' produce times (librdkafka's
# CreateTime, read back with kcat): 202 → the outbox relay's `herald.pushes` record → the fan-out's
# `herald.jobs.transactional` record → apns-sim → the sender's `herald.outcomes` record. The
# reference, in the same run: kcat producing to and consuming from the same broker with Herald's
# linger and fetch wait — what one hop through this broker costs by itself, an upper bound (each
# record's kcat producer starts and connects first; the development broker holds a fetch for the
# whole fetch wait, where a real Kafka answers as soon as a record comes).
# Prints each stage's p10/p50/p90/p99 and the reference; the last line is JSON.
#
#   Benchmarks/OneDevice/run.sh BIN_DIR [PUSHES]
#
# HERALD_KAFKA_LINGER_MS and HERALD_KAFKA_FETCH_WAIT_MAX_MS in the environment reach the stack
# (and the reference).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
pushes=${2:-300}
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/bench-one-device
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-warning}
command -v kcat >/dev/null || { echo "kcat not found: apt-get install kcat (scripts/install-dependencies.sh test)" >&2; exit 1; }

"$herald" dev down >/dev/null 2>&1 || true
"$herald" dev up --senders 1 --api-port 0 --bin-dir "$bin" >/dev/null
trap '"$herald" dev down >/dev/null' EXIT
eval "$("$herald" dev env)"
echo "stack up in $HERALD_DEV_DIR (one sender)"
"$herald" app create --name "one device" --bundle-id com.example.onedevice --save >/dev/null
"$herald" app credentials --dev-stack-key >/dev/null
"$herald" dev devices --count 200 --unregistered-percent 0 --bad-percent 0 --out "$HERALD_DEV_DIR/all.ndjson" >/dev/null
"$herald" devices import "$HERALD_DEV_DIR/all.ndjson" >/dev/null
"$herald" dev devices --register "$HERALD_DEV_DIR/all.ndjson" --topic com.example.onedevice >/dev/null

python3 Benchmarks/OneDevice/measure.py --stack "$HERALD_DEV_DIR/stack.json" --config "$HERALD_CLI_CONFIG" \
  --api "$HERALD_API_URL" --sim-admin "$HERALD_DEV_APNS_SIM_ADMIN" --pushes "$pushes" --state "$HERALD_DEV_DIR"
