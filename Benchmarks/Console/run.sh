#!/usr/bin/env bash
# The console benchmark (`make bench-console`, not part of `make test`): server-side rendering
# of every console page with a million devices in the app, on the `herald dev` stack. Each page
# is requested one at a time for a while by wrk (with a signed-in session's cookie), and so is
# herald-api's /healthz as the reference of the same run; prints each page's p50/p99 latency,
# its ratio to /healthz, and the last line as JSON. Target: every page ≤ 50 ms at p99.
#
#   Benchmarks/Console/run.sh BIN_DIR [DEVICES] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
devices=${2:-1000000}
seconds=${3:-10}
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/bench-console
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-warning}
# The console counts against the app's rate limit like the API: lifted, to measure rendering.
export HERALD_API_RATE_LIMIT_PER_SECOND=1000000 HERALD_API_RATE_LIMIT_BURST=1000000

"$herald" dev down >/dev/null 2>&1 || true
"$herald" dev up --senders 1 --api-port 0 --apns-sim-record counts --bin-dir "$bin" >/dev/null
trap '"$herald" dev down >/dev/null' EXIT
eval "$("$herald" dev env)"
echo "stack up in $HERALD_DEV_DIR; $devices devices"

"$herald" app create --name "console benchmark" --bundle-id com.example.console --save >/dev/null
"$herald" app credentials --dev-stack-key >/dev/null
"$herald" dev devices --count "$devices" --out "$HERALD_DEV_DIR/devices.ndjson" >/dev/null
"$herald" devices import "$HERALD_DEV_DIR/devices.ndjson"
"$herald" dev devices --register "$HERALD_DEV_DIR/devices.ndjson" --topic com.example.console >/dev/null
# Pushes for the list and a push's page: finished ones with failures, and one still sending.
for n in $(seq 1 30); do "$herald" push --tag vip --body "push $n" --quiet >/dev/null; done
push=$("$herald" push --tag vip --body "watched" --quiet)
"$herald" push status "$push" --watch >/dev/null
"$herald" push --all --body "a throttled broadcast" --rate 500 --quiet >/dev/null

key=$(python3 -c 'import json, os; print(json.load(open(os.environ["HERALD_CLI_CONFIG"]))["api_key"])')
Benchmarks/Console/pages.sh "$HERALD_API_URL" "$key" "$HERALD_DEV_DIR/devices.ndjson" "$push" "$seconds" \
  | tee "$HERALD_DEV_DIR/pages.txt"
tail -1 "$HERALD_DEV_DIR/pages.txt" \
  | python3 -c 'import json, sys; print(json.dumps({"devices": int(sys.argv[1]), **json.load(sys.stdin)}))' "$devices"
