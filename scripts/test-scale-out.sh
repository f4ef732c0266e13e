#!/usr/bin/env bash
# Scale-out tests on real processes: `herald dev up --apis 2 --centers 2 --senders 4` (two
# herald-api behind HAProxy, two centers, four senders) and 100,000 simulated devices. Run by
# `make test` after the end-to-end tests.
#
#   kill      a broadcast while the center fanning it out is SIGKILLed, and a stream of
#             single-device pushes, each with an Idempotency-Key and retried by the test until
#             answered, while one herald-api is SIGKILLed: every accepted push completes and is
#             verified against apns-sim, no device gets the broadcast twice, each key made one
#             push whatever the retries (the test's and the load balancer's).
#   ratelimit an app's rate limit holds across both herald-api processes: wrk through the load
#             balancer for 10 s, accepted requests within ±10% of limit × seconds + burst.
#
#   scripts/test-scale-out.sh BIN_DIR [TEST...]
set -uo pipefail
cd "$(dirname "$0")/.."

bin=$(cd "${1:-.build/debug}" && pwd)
shift || true
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/e2e-scale
devices=${E2E_DEVICES:-100000}
singles=${SCALE_SINGLES:-120}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(kill ratelimit)
# The rate limit the ratelimit test measures: above the stream of single-device pushes (20 a
# second), below what wrk sends through two debug-build herald-api (about 400 a second here).
export HERALD_API_RATE_LIMIT_PER_SECOND=100
export HERALD_API_RATE_LIMIT_BURST=100
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-info}

failures=()
log_prefix=scale
source scripts/e2e-support.sh

"$herald" dev down >/dev/null 2>&1 || true
log "starting two herald-api behind HAProxy, two centers, four senders"
"$herald" dev up --apis 2 --centers 2 --senders 4 --api-port 0 --bin-dir "$bin" || { echo "the stack did not start"; exit 1; }
eval "$("$herald" dev env)"
sim_admin=$HERALD_DEV_APNS_SIM_ADMIN

log "an app with the stack's signing key and $devices simulated devices"
"$herald" app create --name "scale-out" --bundle-id com.example.scale --save >/dev/null || exit 1
api_key=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['api_key'])" "$HERALD_CLI_CONFIG")
"$herald" app credentials --dev-stack-key || exit 1
"$herald" dev devices --count "$devices" --out "$HERALD_DEV_DIR/devices.ndjson" || exit 1
"$herald" devices import "$HERALD_DEV_DIR/devices.ndjson" || exit 1
"$herald" dev devices --register "$HERALD_DEV_DIR/devices.ndjson" --topic com.example.scale || exit 1

test_kill() {
  curl -sf -X POST "$sim_admin/reset" >/dev/null
  local run; run=$(date +%s)
  # Throttled, so the fan-out is still going when its center dies.
  local broadcast; broadcast=$("$herald" push --all --body "Through a center that dies" --rate 10000 --quiet) || { fail "broadcast refused"; return; }
  local start=$SECONDS threshold=$((devices / 5))
  until [ "$(field "$broadcast" targeted)" -ge "$threshold" ] || [ $((SECONDS - start)) -gt 120 ]; do sleep 0.2; done
  local claimant; claimant=$(stack_psql -c "SELECT claimed_by FROM pushes WHERE id = '$broadcast'")
  [ -n "$claimant" ] || { fail "no center holds the broadcast's fan-out"; return; }

  # Single-device pushes through the load balancer, each with its own Idempotency-Key, each
  # retried (same key) until a 202: 20 a second, for as long as the kills take.
  python3 - "$HERALD_API_URL" "$api_key" "$HERALD_DEV_DIR/devices.ndjson" "$singles" "scale-$run" \
    >"$HERALD_DEV_DIR/singles.json" 2>"$HERALD_DEV_DIR/singles.log" <<'PY' &
import json, sys, time, urllib.request, urllib.error
url, key, devices_file, count, prefix = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
aliases = []
for line in open(devices_file):
    device = json.loads(line)
    # Deliverable devices only (dead… and bad… tokens are refused by APNs on purpose).
    if device.get("alias") and not device["token"].startswith(("dead", "bad")):
        aliases.append(device["alias"])
    if len(aliases) >= count:
        break
answers = {}
for index, alias in enumerate(aliases):
    idempotency_key = f"{prefix}-{index}"
    body = json.dumps({"audience": {"aliases": [alias]},
                       "notification": {"alert": {"body": f"single {index}"}}}).encode()
    ids, statuses = [], []
    for attempt in range(40):
        request = urllib.request.Request(f"{url}/v1/pushes", data=body, method="POST", headers={
            "Authorization": f"Bearer {key}", "Content-Type": "application/json", "Idempotency-Key": idempotency_key})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                statuses.append(response.status)
                ids.append(json.load(response)["id"])
                break
        except urllib.error.HTTPError as error:
            statuses.append(error.code)
        except Exception as error:
            statuses.append(type(error).__name__)
        time.sleep(0.25)
    answers[idempotency_key] = {"alias": alias, "ids": ids, "statuses": statuses}
    # A second request with the same key, as a client unsure of the first answer would send.
    if index % 10 == 0 and ids:
        request = urllib.request.Request(f"{url}/v1/pushes", data=body, method="POST", headers={
            "Authorization": f"Bearer {key}", "Content-Type": "application/json", "Idempotency-Key": idempotency_key})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answers[idempotency_key]["ids"].append(json.load(response)["id"])
        except Exception as error:
            answers[idempotency_key]["statuses"].append(f"repeat: {error}")
    time.sleep(0.05)
json.dump(answers, sys.stdout)
PY
  local stream=$!
  sleep 3
  "$herald" dev stop herald-api-1 --kill
  log "killed herald-api-1 under the stream of single-device pushes"
  local center_name=herald-$claimant
  "$herald" dev stop "$center_name" --kill
  log "killed $center_name, which held the broadcast's fan-out, at $(field "$broadcast" targeted) targets"
  wait "$stream"

  # Every key made exactly one push, whatever the retries.
  local report
  report=$(python3 - "$HERALD_DEV_DIR/singles.json" <<'PY'
import json, sys
answers = json.load(open(sys.argv[1]))
unanswered = [k for k, a in answers.items() if not a["ids"]]
split = [k for k, a in answers.items() if len(set(a["ids"])) > 1]
retried = sum(1 for a in answers.values() if len(a["statuses"]) > 1)
print(len(answers), len(unanswered), len(split), retried)
for a in answers.values():
    if a["ids"]: print("id", a["ids"][0])
PY
)
  local total unanswered split retried
  read -r total unanswered split retried <<< "$(echo "$report" | head -1)"
  local ids; ids=$(echo "$report" | sed -n 's/^id //p')
  log "single-device pushes: $total sent, $retried needed a retry by the client, $unanswered never accepted, $split keys with two push ids"
  [ "$total" -ge "$singles" ] || fail "only $total single-device pushes had a deliverable alias"
  [ "$unanswered" = 0 ] || fail "$unanswered single-device pushes never accepted"
  [ "$split" = 0 ] || fail "$split idempotency keys made more than one push"
  local stored; stored=$(stack_psql -c "SELECT count(*) FROM pushes WHERE idempotency_key LIKE 'scale-$run-%'")
  [ "$stored" = "$total" ] || fail "$stored pushes stored for $total idempotency keys"

  wait_completed "$broadcast" 300 && {
    if "$herald" dev verify "$broadcast"; then log "✔ the broadcast: every device once, none missing"; else fail "verify $broadcast"; fi
  }
  local id unfinished=0
  for id in $ids; do
    [ "$(field "$id" state)" = completed ] || { wait_completed "$id" 60 || unfinished=$((unfinished + 1)); }
  done
  [ "$unfinished" = 0 ] || fail "$unfinished accepted single-device pushes did not complete"
  # shellcheck disable=SC2086
  if "$herald" dev verify $ids >"$HERALD_DEV_DIR/verify-singles.log" 2>&1; then
    log "✔ $total single-device pushes completed, each verified against apns-sim"
  else
    fail "verify of the single-device pushes: $(grep -v '✔' "$HERALD_DEV_DIR/verify-singles.log" | head -3)"
  fi
  "$herald" dev start herald-api-1 >/dev/null || fail "herald-api-1 did not start again"
  "$herald" dev start "$center_name" >/dev/null || fail "$center_name did not start again"
}

test_ratelimit() {
  command -v wrk >/dev/null || { fail "wrk not found"; return; }
  # Let both processes count each other again (one was restarted).
  sleep 4
  local script=$HERALD_DEV_DIR/validate.lua
  cat >"$script" <<EOF
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $api_key"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"audience":{"aliases":["user-0"]},"notification":{"alert":{"body":"rate"}}}'
EOF
  local seconds=10 output
  output=$(wrk -t 2 -c 16 -d ${seconds}s -s "$script" "$HERALD_API_URL/v1/pushes/validate" 2>&1)
  local total refused
  total=$(echo "$output" | awk '/requests in/ { print $1 }')
  refused=$(echo "$output" | awk '/Non-2xx or 3xx responses/ { print $5 }')
  refused=${refused:-0}
  local accepted=$((total - refused))
  local expected=$((HERALD_API_RATE_LIMIT_PER_SECOND * seconds + HERALD_API_RATE_LIMIT_BURST))
  local ratio; ratio=$(python3 -c "print(f'{$accepted / $expected:.3f}')")
  log "rate limit across two herald-api: $accepted of $total requests accepted in ${seconds}s; limit × seconds + burst = $expected; ratio $ratio"
  python3 -c "import sys; sys.exit(0 if 0.9 <= $accepted / $expected <= 1.1 else 1)" \
    || fail "accepted $accepted requests, outside ±10% of $expected"
  [ "$refused" -gt 0 ] || fail "nothing was refused: the load did not reach the limit"
}

for current in "${tests[@]}"; do
  log "── $current"
  "test_$current"
  stack_alive || { log "stopping here: a process of the stack died (above)"; break; }
done

if [ ${#failures[@]} -gt 0 ]; then
  log "${#failures[@]} failure(s):"
  printf '  %s\n' "${failures[@]}"
  print_crashes
  exit 1
fi
log "all scale-out tests passed"
