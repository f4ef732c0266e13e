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
read -r alias token < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    device = json.loads(line)
    if device.get("alias"):
        print(device["alias"], device["token"][:8]); break' "$HERALD_DEV_DIR/devices.ndjson")
jar=$(mktemp)
csrf=$(curl -s -c "$jar" "$HERALD_API_URL/console/sign-in" | sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p' | head -1)
curl -s -b "$jar" -c "$jar" -o /dev/null --data-urlencode "csrf=$csrf" --data-urlencode "key=$key" "$HERALD_API_URL/console/sign-in"
session=$(awk '$6 == "herald_console" { print $7 }' "$jar")
rm -f "$jar"
[ -n "$session" ] || { echo "could not sign in to the console"; exit 1; }

# wrk, one connection, for $seconds: "p50_ms p99_ms requests/s non-2xx".
measure() {
  wrk -t1 -c1 -d"${seconds}s" --latency -H "Cookie: herald_console=$session" "$1" | python3 -c '
import re, sys
text = sys.stdin.read()
def ms(label):
    m = re.search(r"^\s+" + label + r"%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    value, unit = float(m[1]), m[2]
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text)[1])
bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
print("%.2f %.2f %.0f %s" % (ms("50"), ms("99"), rate, bad[1] if bad else 0))'
}

pages=(
  "healthz|$HERALD_API_URL/healthz"
  "pushes|$HERALD_API_URL/console/pushes"
  "pushes, state filter|$HERALD_API_URL/console/pushes?state=completed"
  "push (finished)|$HERALD_API_URL/console/pushes/$push"
  "compose|$HERALD_API_URL/console/compose"
  "devices by alias|$HERALD_API_URL/console/devices?by=alias&q=$alias"
  "devices by token prefix|$HERALD_API_URL/console/devices?by=token&q=$token"
  "devices by tag|$HERALD_API_URL/console/devices?by=tag&q=vip"
  "devices, counts by tag|$HERALD_API_URL/console/devices"
  "statistics, 24 hours|$HERALD_API_URL/console/stats?range=24h"
  "statistics, 30 days|$HERALD_API_URL/console/stats?range=30d"
)
printf "%-26s %9s %9s %9s %9s %10s\n" page "p50 ms" "p99 ms" "req/s" "p99/ref" "errors"
json="{\"devices\": $devices"
reference=""
for entry in "${pages[@]}"; do
  name=${entry%%|*}; url=${entry#*|}
  read -r p50 p99 rate bad <<< "$(measure "$url")"
  [ -n "$reference" ] || reference=$p99
  ratio=$(python3 -c "print(f'{$p99 / max($reference, 0.001):.1f}')")
  printf "%-26s %9s %9s %9s %9s %10s\n" "$name" "$p50" "$p99" "$rate" "$ratio" "$bad"
  json+=", \"$name\": {\"p50_ms\": $p50, \"p99_ms\": $p99, \"requests_per_second\": $rate, \"non_2xx\": $bad}"
done
echo "$json}"
