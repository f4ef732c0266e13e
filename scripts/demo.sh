#!/usr/bin/env bash
# `make demo`: the whole stack on this machine, an app, 100,000 simulated devices, a broadcast
# and a tag-targeted push with live progress, each checked against what apns-sim received.
#
#   scripts/demo.sh BIN_DIR          # BIN_DIR holds herald and the services (.build/release)
#   KEEP=1 scripts/demo.sh BIN_DIR   # leave the stack up afterwards
#   DEMO_DEVICES=20000 …             # fewer devices
set -euo pipefail
cd "$(dirname "$0")/.."

bin=$(cd "${1:-.build/release}" && pwd)
herald=$bin/herald
export HERALD_DEV_DIR=${HERALD_DEV_DIR:-$(pwd)/.local/demo}
devices=${DEMO_DEVICES:-100000}
keep=${KEEP:-0}

step() { echo; echo "== $*"; }
show() { echo "\$ herald $*"; "$herald" "$@"; }

"$herald" dev down >/dev/null 2>&1 || true
step "The stack: PostgreSQL, the development broker, apns-sim, herald-api, herald-center, 2 senders"
"$herald" dev up --senders 2 --bin-dir "$bin"
stop_stack() {
  local status=$?
  if [ "$keep" = 1 ] && [ $status -eq 0 ]; then
    echo
    echo "The stack is still up (KEEP=1). In a shell:"
    echo "  eval \"\$($herald dev env)\"      # HERALD_CLI_CONFIG, HERALD_API_URL, HERALD_ADMIN_TOKEN"
    echo "  $herald push --tag news --body 'Hello' --wait"
    echo "  $herald dev status                # processes, ports, logs"
    echo "The console: $HERALD_API_URL/console (sign in with the server key \"api_key\" in $HERALD_CLI_CONFIG)"
    echo "  $herald dev down                  # stop it"
  else
    "$herald" dev down
  fi
  exit $status
}
trap stop_stack EXIT
eval "$("$herald" dev env)"

step "An app, with the APNs signing key apns-sim trusts"
show app create --name "Herald demo" --bundle-id com.example.demo --save
show app credentials --environment sandbox --dev-stack-key

step "$devices simulated devices: imported into Herald, then known to apns-sim"
show dev devices --count "$devices" --out "$HERALD_DEV_DIR/devices.ndjson"
show devices import "$HERALD_DEV_DIR/devices.ndjson"
show dev devices --register "$HERALD_DEV_DIR/devices.ndjson" --topic com.example.demo

step "A broadcast to everyone"
echo "\$ herald push --all --title 'Storm warning' --body 'Gusts up to 120 km/h tonight' --quiet"
broadcast=$("$herald" push --all --title "Storm warning" --body "Gusts up to 120 km/h tonight" --quiet)
show push status "$broadcast" --watch

step "A push to the devices tagged vip"
echo "\$ herald push --tag vip --body 'Early access starts now' --quiet"
tagged=$("$herald" push --tag vip --body "Early access starts now" --quiet)
show push status "$tagged" --watch

step "Herald's counters against what apns-sim received"
show dev verify "$broadcast" "$tagged"
show stats
