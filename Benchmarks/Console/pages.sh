#!/usr/bin/env bash
# Measures the console's pages and the Open API's statistics on a running stack: signs in with
# the app's server key, then requests each page one at a time with wrk for SECONDS (with the
# session's cookie; /v1/stats with the key), herald-api's /healthz first as the reference of the
# same run. Prints each page's p50/p99 latency and its ratio to /healthz; the last line is JSON.
# Used by `make bench-console` and, at ten million devices, by `make bench-scale-10m`.
#
#   Benchmarks/Console/pages.sh API_URL SERVER_KEY DEVICES_NDJSON PUSH_ID SECONDS
#
# The app's rate limit must be lifted for the stack (HERALD_API_RATE_LIMIT_PER_SECOND and
# _BURST): the console counts against it like the API, and this measures rendering.
set -euo pipefail
api=$1 key=$2 devices_file=$3 push=$4 seconds=$5

# A device with an alias (one in ten of `herald dev devices`), its alias URL-encoded.
read -r alias token < <(python3 -c '
import json, sys, urllib.parse
for line in open(sys.argv[1]):
    device = json.loads(line)
    if device.get("alias"):
        print(urllib.parse.quote(device["alias"], safe=""), device["token"][:8]); break
else:
    sys.exit("no device of " + sys.argv[1] + " has an alias")' "$devices_file")
[ -n "${alias:-}" ] || { echo "no device with an alias to look up"; exit 1; }
jar=$(mktemp)
csrf=$(curl -s -c "$jar" "$api/console/sign-in" | sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p' | head -1)
curl -s -b "$jar" -c "$jar" -o /dev/null --data-urlencode "csrf=$csrf" --data-urlencode "key=$key" "$api/console/sign-in"
session=$(awk '$6 == "herald_console" { print $7 }' "$jar")
rm -f "$jar"
[ -n "$session" ] || { echo "could not sign in to the console"; exit 1; }

# wrk, one connection, for $seconds, with header $2: "p50_ms p99_ms requests/s non-2xx".
measure() {
  wrk -t1 -c1 -d"${seconds}s" --latency -H "$2" "$1" | python3 -c '
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

cookie="Cookie: herald_console=$session"
bearer="Authorization: Bearer $key"
pages=(
  "healthz|$api/healthz|$cookie"
  "pushes|$api/console/pushes|$cookie"
  "pushes, state filter|$api/console/pushes?state=completed|$cookie"
  "push (finished)|$api/console/pushes/$push|$cookie"
  "compose|$api/console/compose|$cookie"
  "devices by alias|$api/console/devices?by=alias&q=$alias|$cookie"
  "devices by token prefix|$api/console/devices?by=token&q=$token|$cookie"
  "devices by tag|$api/console/devices?by=tag&q=vip|$cookie"
  "devices, counts by tag|$api/console/devices|$cookie"
  "statistics, 24 hours|$api/console/stats?range=24h|$cookie"
  "statistics, 30 days|$api/console/stats?range=30d|$cookie"
  "GET /v1/stats|$api/v1/stats|$bearer"
  "GET /v1/pushes/{id}|$api/v1/pushes/$push|$bearer"
)
printf "%-26s %9s %9s %9s %9s %10s\n" page "p50 ms" "p99 ms" "req/s" "p99/ref" "errors"
json="{\"seconds_per_page\": $seconds"
reference=""
worst=0
for entry in "${pages[@]}"; do
  IFS='|' read -r name url header <<< "$entry"
  read -r p50 p99 rate bad <<< "$(measure "$url" "$header")"
  [ -n "${p99:-}" ] || { echo "wrk could not measure $name ($url)"; exit 1; }
  [ -n "$reference" ] || reference=$p99
  ratio=$(python3 -c "print(f'{$p99 / max($reference, 0.001):.1f}')")
  printf "%-26s %9s %9s %9s %9s %10s\n" "$name" "$p50" "$p99" "$rate" "$ratio" "$bad"
  json+=", \"$name\": {\"p50_ms\": $p50, \"p99_ms\": $p99, \"requests_per_second\": $rate, \"non_2xx\": $bad}"
  [ "$name" = healthz ] || worst=$(python3 -c "print(max($worst, $p99))")
done
echo "slowest page at p99: $worst ms (issue 46's target ≤ 50 ms: $(python3 -c "print('met' if $worst <= 50 else 'NOT met')"))"
echo "$json, \"slowest_p99_ms\": $worst}"
