#!/usr/bin/env bash
# End-to-end and failure tests on real processes: `herald dev up` (PostgreSQL, the development
# broker, apns-sim, herald-api, herald-center, two gateways behind HAProxy, two senders), 100,000
# simulated devices (8,000 of them phones on the long connection in the online test, 2,000 in
# the background on APNs), then
# pushes while processes are killed, PostgreSQL and the broker are stopped and apns-sim answers
# 503. Every push is checked with `herald dev verify` (counters add up; apns-sim received
# exactly the accepted devices). Run by `make test`.
#
#   scripts/test-end-to-end.sh BIN_DIR [TEST...]   # tests: broadcast online sender-kill center-kill ab-test
#                                                   #        postgres-outage broker-restart apns-outage
#                                                   #        device-counts segments templates delivery-policy local-time schedules webhooks
#                                                   #        metrics prometheus
#                                                   #        dashboard console
#                                                   #        secrets (last: reads every log)
set -uo pipefail
cd "$(dirname "$0")/.."

bin=$(cd "${1:-.build/debug}" && pwd)
shift || true
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/e2e
devices=${E2E_DEVICES:-100000}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(broadcast online sender-kill center-kill ab-test postgres-outage broker-restart apns-outage device-counts segments templates delivery-policy local-time schedules webhooks metrics prometheus dashboard console secrets)

# The stack's settings for these tests: a notification is tried up to 20 times with back-off
# capped at 5 s (a 30 s APNs outage outlasts the default 8 attempts' back-off). `herald dev up`
# re-drives a batch without an outcome after 60 s (the broker restart loses what it held); a
# batch a live sender still holds then (retrying through the outage) is not re-driven: the sender
# notes it every 10 s (a third of the stack's 30 s takeover), and no other copy is sent beside it.
export HERALD_SENDER_MAX_ATTEMPTS=20
export HERALD_SENDER_RETRY_MAX_MS=5000
# Webhook retries in seconds, not minutes: the webhooks test sees a delivery die and replays it.
export HERALD_CENTER_WEBHOOK_FIRST_RETRY_MS=1000
export HERALD_CENTER_WEBHOOK_RETRY_WINDOW_MS=8000
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-info}

failures=()
log_prefix=e2e
source scripts/e2e-support.sh

"$herald" dev down >/dev/null 2>&1 || true
log "starting the stack"
# Prometheus scrapes the stack with Herald's alert rules, their `for` windows scaled from minutes
# to 5 s each (2m → 10s), so an alert can fire within a test.
rules=$(pwd)/.local/e2e-herald-rules.yml
mkdir -p .local
python3 -c '
import re, sys
scale = {"m": 5, "h": 300}
text = open(sys.argv[1]).read()
print(re.sub(r"for: (\d+)([mh])$", lambda m: f"for: {int(m[1]) * scale[m[2]]}s", text, flags=re.M), end="")
' Deploy/prometheus/herald-rules.yml >"$rules"
"$herald" dev up --senders 2 --gateways 2 --api-port 0 --gateway-port 0 --bin-dir "$bin" --prometheus-rules "$rules" || { echo "the stack did not start"; exit 1; }
eval "$("$herald" dev env)"
sim_admin=$HERALD_DEV_APNS_SIM_ADMIN

# Waits until the push's `done` reaches $2 (or it completes), at most $3 seconds.
wait_done_at_least() {
  local push=$1 want=$2 limit=$3 start=$SECONDS state done
  while [ $((SECONDS - start)) -lt "$limit" ]; do
    read -r state done <<< "$(field "$push" state done)"
    if [ "${done:-0}" -ge "$want" ] || [ "$state" = completed ]; then return 0; fi
    sleep 0.2
  done
  return 1
}

# Waits up to $4 s until GET $2 on the operations port of process $1 answers HTTP $3 — with a
# fifth argument, also with that check failing in the JSON body — and says what it saw.
expect_probe() {
  local name=$1 path=$2 want=$3 limit=$4 check=${5:-} start=$SECONDS url answer code body
  url=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metricsURLs'][sys.argv[2]].rsplit('/',1)[0])" \
    "$HERALD_DEV_DIR/stack.json" "$name")$path
  while :; do
    answer=$(curl -s --max-time 5 -w '\n%{http_code}' "$url"); code=${answer##*$'\n'}; body=${answer%$'\n'*}
    if [ "$code" = "$want" ] && { [ -z "$check" ] || echo "$body" | python3 -c "
import json, sys; sys.exit(0 if json.load(sys.stdin)['checks'][sys.argv[1]]['status'] == 'fail' else 1)" "$check" 2>/dev/null; }; then
      log "✔ $name $path $code after $((SECONDS - start)) s: $(echo "$body" | cut -c1-200)"
      return 0
    fi
    [ $((SECONDS - start)) -lt "$limit" ] || break
    sleep 0.5
  done
  fail "$name $path: wanted $want${check:+ with $check failing} within ${limit}s; last answer $code $body"
}

verify() {
  if "$herald" dev verify "$@"; then log "✔ verified $*"; else fail "verify $* failed"; fi
}

push_all() { "$herald" push --all --body "$1" --quiet "${@:2}"; }
reset_sim() { curl -sf -X POST "$sim_admin/reset" >/dev/null; }

log "an app with the stack's signing key and $devices simulated devices"
"$herald" app create --name "end-to-end" --bundle-id com.example.e2e --save >/dev/null || exit 1
"$herald" app credentials --dev-stack-key || exit 1
"$herald" dev devices --count "$devices" --out "$HERALD_DEV_DIR/devices.ndjson" || exit 1
"$herald" devices import "$HERALD_DEV_DIR/devices.ndjson" || exit 1
"$herald" dev devices --register "$HERALD_DEV_DIR/devices.ndjson" --topic com.example.e2e || exit 1

test_broadcast() {
  reset_sim
  local push; push=$(push_all "A broadcast to $devices devices") || { fail "push refused"; return; }
  wait_completed "$push" 300 && verify "$push"
}

# The long connection (docs/gateway.md): 8,000 deliverable devices without an alias connect as
# phones in the foreground (`herald dev phones`: HeraldKit's core, the SDK's connection state
# machine, acks and back-off; every tenth does not acknowledge) through HAProxy to the stack's two gateways. A broadcast reaches each acknowledging
# phone exactly once over its connection (delivered_online), everyone else — the silent phones
# too — through apns-sim, and `herald dev verify` adds it up. A second broadcast loses gateway-1
# to SIGKILL halfway: its phones reconnect through the proxy with back-off, and every phone gets
# the push by one road or the other, each copy carrying its push id. A recall of the first
# reaches every connected phone as a revoke frame. 2,000 more phones are in the background: no
# connection, they get what apns-sim accepted for them, and each shows the first push once; the
# silent foreground phones show it once too, though it reached them by both roads. The phones report
# received, opened and an action for what they acknowledged (in the background: opened and an action
# for what APNs showed them), each batch twice, through POST /v1/events with the client key; the
# first push's engagement counts exactly what they stored, once. (8,000, not more: a process here
# may hold 20,000 descriptors, and HAProxy holds two a connection.)
test_online() {
  reset_sim
  local key state=$HERALD_DEV_DIR/phones online=8000 background=2000 phones first second recall
  key=$("$herald" app keys create --kind client --name phones --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])') || { fail "online: no client key"; return; }
  python3 - "$HERALD_DEV_DIR/devices.ndjson" "$online" "$background" "$HERALD_DEV_DIR" <<'PY'
import json, sys
source, online, background, folder = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
foreground, away = open(f"{folder}/online.ndjson", "w"), open(f"{folder}/background.ndjson", "w")
count = 0
for line in open(source):
    device = json.loads(line)
    if device["token"].startswith(("dead", "badd")) or "alias" in device:
        continue
    (foreground if count < online else away).write(line)
    count += 1
    if count == online + background:
        break
PY
  rm -rf "$state"
  # The phones are HeraldKit's core (herald dev phones): the SDK's connection, acks, back-off and
  # engagement events, exercised here on every make test.
  "$herald" dev phones --devices "$HERALD_DEV_DIR/online.ndjson" --key "$key" \
    --background "$HERALD_DEV_DIR/background.ndjson" --apns-sim "$sim_admin" \
    --address "$HERALD_DEV_GATEWAY" --ca "$HERALD_DEV_GATEWAY_CA" --state "$state" --silent-every 10 \
    --api "$HERALD_API_URL" --open-share 0.3 --action-share 0.25 \
    >"$HERALD_DEV_DIR/logs/phones.log" 2>&1 &
  phones=$!
  live() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("live", 0))' "$state/status.json" 2>/dev/null || echo 0; }
  wait_live() {
    local start=$SECONDS
    until [ "$(live)" -ge "$online" ]; do
      [ $((SECONDS - start)) -lt "$1" ] || { fail "online: $(live) of $online phones connected after $1 s"; return 1; }
      sleep 0.5
    done
  }
  if ! wait_live 240; then kill -TERM "$phones"; wait "$phones"; return; fi
  log "$online phones connected through HAProxy to two gateways"

  first=$(push_all "Online first") || { fail "online: push refused"; kill -TERM "$phones"; return; }
  wait_completed "$first" 300 && verify "$first"
  second=$(push_all "Through a gateway that dies" --rate 20000) || { fail "online: push refused"; kill -TERM "$phones"; return; }
  wait_done_at_least "$second" 30000 120 || fail "online: no progress before the gateway's kill"
  "$herald" dev stop herald-gateway-1 --kill
  log "killed herald-gateway-1 at $(field "$second" done) notifications accounted"
  wait_completed "$second" 300 && verify --allow-duplicates "$second"
  "$herald" dev start herald-gateway-1 >/dev/null || fail "online: herald-gateway-1 did not start again"
  wait_live 120
  recall=$("$herald" push recall "$first" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
  wait_completed "$recall" 120
  # The phones' engagement reports (each sent twice) are all answered before they stop: a
  # backlog that drains is waited for, one that stops draining for 60 s fails.
  local pending least=-1 since=$SECONDS
  while :; do
    pending=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("reports_pending", 0))' "$state/status.json" 2>/dev/null || echo 1)
    [ "$pending" = 0 ] && break
    if [ "$least" -lt 0 ] || [ "$pending" -lt "$least" ]; then least=$pending since=$SECONDS; fi
    [ $((SECONDS - since)) -lt 60 ] || {
      fail "online: $pending engagement reports still pending, none answered for 60 s ($(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["counters"])' "$state/status.json"))"
      break
    }
    sleep 0.5
  done
  kill -TERM "$phones"; wait "$phones"

  local report
  if report=$(python3 - "$state/report.json" "$sim_admin" "$first" "$second" "$recall" "$herald" 2>&1 <<'PY'
import json, subprocess, sys, urllib.request
report, sim, first, second, recall, herald = sys.argv[1:]
everyone = json.load(open(report))["phones"]
phones = {token: phone for token, phone in everyone.items() if phone["foreground"]}
away = {token: phone for token, phone in everyone.items() if not phone["foreground"]}
tokens = list(phones)
silent = {token for token in tokens if not phones[token]["acknowledges"]}
if len(silent) != (len(tokens) + 9) // 10:
    sys.exit(f"{len(silent)} silent phones; --silent-every 10 makes {(len(tokens) + 9) // 10}")
def counters(push):
    return json.loads(subprocess.run([herald, "push", "status", push, "--json"], capture_output=True, text=True).stdout)["counters"]
def over_connection(token, push):
    return [entry for entry in phones[token]["pushes"] if entry[0] == push]
# Every copy names its push, on either road.
unmarked = [token[:8] for token in tokens for entry in phones[token]["pushes"] if entry[0] != entry[1]]
if unmarked:
    sys.exit(f"{len(unmarked)} pushes over a connection carry another herald.push_id, e.g. {unmarked[:3]}")
apns = {}
with urllib.request.urlopen(f"{sim}/notifications", timeout=60) as answer:
    for line in answer:
        if line.strip():
            entry = json.loads(line)
            push = json.loads(entry["payload"]).get("herald", {}).get("push_id")
            apns.setdefault(push, []).append(entry["token"])
# The first broadcast: each acknowledging phone once over its connection and never through APNs;
# the silent ones through APNs as well.
acknowledging = [token for token in tokens if token not in silent]
wrong = [token[:8] for token in acknowledging if len(over_connection(token, first)) != 1]
if wrong:
    sys.exit(f"{len(wrong)} acknowledging phones did not get the first push exactly once over their connection, e.g. {wrong[:3]}")
twice = set(acknowledging) & set(apns.get(first, []))
if twice:
    sys.exit(f"{len(twice)} phones that acknowledged the first push got it through APNs too")
missing = [token[:8] for token in silent if token not in apns.get(first, [])]
if missing:
    sys.exit(f"{len(missing)} silent phones never got the first push through APNs, e.g. {missing[:3]}")
online = counters(first)["delivered_online"]
if online != len(acknowledging):
    sys.exit(f"the first push counts {online} delivered_online; {len(acknowledging)} phones acknowledged it")
# The broadcast across the gateway's death: nothing lost.
lost = [token[:8] for token in tokens if not over_connection(token, second) and token not in apns.get(second, [])]
if lost:
    sys.exit(f"{len(lost)} phones got the second push by neither road, e.g. {lost[:3]}")
both = sum(1 for token in tokens if over_connection(token, second) and token in apns.get(second, []))
# The recall: a revoke to every connected phone.
unrevoked = [token[:8] for token in tokens if first not in phones[token]["revokes"]]
if unrevoked:
    sys.exit(f"{len(unrevoked)} connected phones got no revoke of the first push, e.g. {unrevoked[:3]}")
# The phones in the background: the first push through APNs, as the phone read it, shown once;
# the silent foreground phones got it by both roads and showed it once, the APNs copy a duplicate.
if len(away) != 2000:
    sys.exit(f"{len(away)} phones in the background; 2,000 were started")
unseen = [token[:8] for token, phone in away.items() if [e for e in phone["apns"] if e[1] == first] == [] or first not in phone["shown"]]
if unseen:
    sys.exit(f"{len(unseen)} phones in the background never showed the first push from APNs, e.g. {unseen[:3]}")
undeduplicated = [token[:8] for token in silent if first not in phones[token]["duplicates"] or first not in phones[token]["shown"]]
if undeduplicated:
    sys.exit(f"{len(undeduplicated)} silent phones did not show the first push once from two copies, e.g. {undeduplicated[:3]}")
# Engagement (docs/engagement.md): the phones reported received, opened and replied for the first
# push, each batch twice; the push counts exactly the distinct events they stored, the repeats nothing.
def status(push):
    return json.loads(subprocess.run([herald, "push", "status", push, "--json"], capture_output=True, text=True).stdout)
failed = [(token[:8], entry) for token in everyone for entry in everyone[token]["event_failures"] if entry[0] == first]
if failed:
    sys.exit(f"{len(failed)} engagement reports about the first push were refused, e.g. {failed[:3]}")
reported = {kind: 0 for kind in ("received", "opened", "reply")}
opened_away = 0
for token in acknowledging + list(away):
    for push, kind, action in everyone[token]["events"]:
        if push == first:
            reported["reply" if kind == "action" else kind] += 1
            opened_away += token in away and kind == "opened"
if not opened_away:
    sys.exit("no phone in the background reported opening the first push (--open-share 0.3 of 2,000)")
engagement = status(first).get("engagement", {})
counted = {"received": engagement.get("received"), "opened": engagement.get("opened"),
           "reply": engagement.get("actions", {}).get("reply", 0)}
if counted != reported or reported["received"] != len(acknowledging):
    sys.exit(f"the first push's engagement counts {counted}; the phones stored {reported}")
recounted = sum(phone["recounted"] for phone in everyone.values())
if recounted:
    sys.exit(f"repeated engagement batches counted {recounted} events again")
second_counters, recall_counters = counters(second), counters(recall)
print(f"the first broadcast reached {online} phones over their connections once each (and {len(silent)} silent ones "
      f"through APNs); across gateway-1's SIGKILL all {len(tokens)} phones got the second one "
      f"({second_counters['delivered_online']} online, {both} by both roads, shown once by push id); "
      f"the recall revoked it on all {len(tokens)} over their connections ({recall_counters['delivered_online']} online); "
      f"{len(away)} phones in the background showed it once from APNs, the silent ones once from two copies; "
      f"the phones reported {reported['received']} received, {reported['opened']} opened and {reported['reply']} replies "
      f"for the first push ({opened_away} opened in the background; open rate {engagement.get('open_rate', 0):.3f}), each batch twice, counted once")
PY
  ); then
    log "✔ online: $report"
  else
    fail "online: $report"
  fi
}

test_sender-kill() {
  reset_sim
  # Throttled, so the senders are still busy when one dies.
  local push; push=$(push_all "Through a sender that dies" --rate 20000) || { fail "push refused"; return; }
  wait_done_at_least "$push" 10000 120 || { fail "no progress before the kill"; return; }
  "$herald" dev stop herald-sender-1 --kill
  log "killed herald-sender-1 at $(field "$push" done) notifications accounted"
  wait_completed "$push" 300 && verify --allow-duplicates "$push"
  "$herald" dev start herald-sender-1 >/dev/null || fail "herald-sender-1 did not start again"
  # Let the consumer group take the restarted sender in before the next test.
  sleep 8
}

test_center-kill() {
  reset_sim
  # Throttled, so the fan-out is still going when the center dies.
  local push; push=$(push_all "Through a center that dies" --rate 10000) || { fail "push refused"; return; }
  local start=$SECONDS
  until [ "$(field "$push" targeted)" -ge 20000 ] || [ $((SECONDS - start)) -gt 120 ]; do sleep 0.2; done
  [ "$(field "$push" state)" = fanning_out ] || { fail "the fan-out was not running when the center was to be killed"; return; }
  "$herald" dev stop herald-center --kill
  log "killed herald-center at $(field "$push" targeted) targets fanned out"
  sleep 2
  "$herald" dev start herald-center >/dev/null || { fail "herald-center did not start again"; return; }
  wait_completed "$push" 300 && verify "$push"
}

# An A/B test to the whole audience: three variants weighted 5:3:2, a 10 % holdout, winner mode
# with a 30 % sample, throttled so that herald-center is SIGKILLed while it fans out the sample.
# The operator picks the winner; it goes to the rest. Every device of apns-sim's record got the
# variant its (push, device) hash gives (the hash computed again here, from docs/engagement.md),
# exactly once; the split follows the weights within a point; every counter adds up.
test_ab-test() {
  reset_sim
  local push
  push=$("$herald" push --all --channel apns --title "Summer" --variant short:5='Sale today' \
    --variant long:3='Our summer sale starts now' --variant sun:2='Sun, sea, sale' --holdout 0.1 \
    --winner-sample 0.3 --winner-wait 3600 --rate 8000 --quiet) || { fail "the A/B test was refused"; return; }
  local start=$SECONDS
  until [ "$(field "$push" targeted)" -ge 10000 ] || [ $((SECONDS - start)) -gt 120 ]; do sleep 0.2; done
  [ "$(field "$push" state)" = fanning_out ] || { fail "the sample's fan-out was not running when the center was to be killed"; return; }
  "$herald" dev stop herald-center --kill
  log "killed herald-center at $(field "$push" targeted) targets of the sample fanned out"
  sleep 2
  "$herald" dev start herald-center >/dev/null || { fail "herald-center did not start again"; return; }
  start=$SECONDS
  until [ "$(field "$push" state)" = scheduled ] || [ $((SECONDS - start)) -gt 180 ]; do sleep 0.5; done
  [ "$(field "$push" state)" = scheduled ] || { fail "the A/B test did not wait for its winner after the sample"; return; }
  "$herald" push winner "$push" sun >/dev/null || { fail "herald push winner was refused"; return; }
  wait_completed "$push" 300 && verify "$push"
  local devices_file=$HERALD_DEV_DIR/ab-devices.txt
  # Each device, and whether this push's APNs answer rejected it ('r'), or it was no longer active
  # when the push went out ('x': an earlier test's dead token) and so not in the audience.
  stack_psql -F ' ' -c "
    SELECT d.id, encode(d.token, 'hex'),
           CASE WHEN f.device_id IS NOT NULL THEN 'r' WHEN d.invalidated_at < p.created_at THEN 'x' ELSE 'a' END
    FROM pushes p JOIN devices d ON d.app_id = p.app_id
    LEFT JOIN failed_deliveries f ON f.push_id = p.id AND f.device_id = d.id
    WHERE p.id = '$push'" >"$devices_file"
  local report
  if report=$(python3 - "$push" "$sim_admin" "$devices_file" "$herald" <<'PY'
import json, subprocess, sys, urllib.request, uuid
push, sim, devices_file, herald = sys.argv[1:5]
status = json.loads(subprocess.run([herald, "push", "status", push, "--json"],
                                   check=True, capture_output=True, text=True).stdout)
MASK = 2**64 - 1
def mix(value):
    z = (value + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)
raw = uuid.UUID(push).bytes
high, low = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
def draw(device):
    return (mix(high ^ mix(low ^ mix(device & MASK))) >> 11) * 2.0**-53
SALT = 0x5A17C0DE5A17C0DE
names, weights, holdout, sample = ["short", "long", "sun"], [5, 3, 2], 0.1, 0.3
winner = names.index(status["winner"])
def expected(device):
    d = draw(device)
    if d < holdout: return None, None
    if draw(device ^ SALT) >= sample: return winner, 1
    position, end = (d - holdout) / (1 - holdout) * sum(weights), 0.0
    for index, weight in enumerate(weights):
        end += weight
        if position < end: return index, 0
    return len(weights) - 1, 0
bodies = {"Sale today": 0, "Our summer sale starts now": 1, "Sun, sea, sale": 2}
got = {}
with urllib.request.urlopen(f"{sim}/notifications") as answer:
    for line in answer:
        note = json.loads(line)
        payload = json.loads(note["payload"])
        if payload.get("herald", {}).get("push_id") != push: continue
        got.setdefault(note["token"], []).append(bodies[payload["aps"]["alert"]["body"]])
wrong, twice, total, held, per_variant = 0, 0, 0, 0, [0, 0, 0]
rejected = 0
for line in open(devices_file):
    device, token, state = line.split()
    if state == "x": continue
    total += 1
    variant, phase = expected(int(device))
    received = got.get(token, [])
    if len(received) > 1: twice += 1
    if variant is None:
        held += 1
        if received: wrong += 1
    else:
        # A token APNs rejected has no copy at apns-sim; it still counts toward its variant.
        if received != ([] if state == "r" else [variant]): wrong += 1
        rejected += state == "r"
        if phase == 0: per_variant[variant] += 1
problems = []
if wrong: problems.append(f"{wrong} devices got another variant than their hash gives (or none)")
if twice: problems.append(f"{twice} devices got it twice")
counters, variants = status["counters"], status["variants"]
if abs(held / total - holdout) > 0.01: problems.append(f"held out {held / total:.3f}, not 0.1 ± 0.01")
if counters["skipped_by_reason"].get("holdout") != held: problems.append(f"holdout counted {counters['skipped_by_reason']} of {held}")
in_sample = sum(per_variant)
for index, weight in enumerate(weights):
    share = per_variant[index] / in_sample
    if abs(share - weight / 10) > 0.01: problems.append(f"{names[index]} {share:.3f} of the sample, not {weight / 10} ± 0.01")
for key in ["targeted", "accepted", "rejected", "expired", "canceled"]:
    summed = sum(v["counters"][key] for v in variants) + (held if key == "targeted" else 0)
    if summed != counters[key]: problems.append(f"the variants' {key} sum to {summed}, the push's is {counters[key]}")
for v in variants:
    c = v["counters"]
    if c["targeted"] != c["accepted"] + c["delivered_online"] + c["rejected"] + c["expired"] + c["canceled"] + c["skipped"]:
        problems.append(f"variant {v['name']}'s counters do not add up: {c}")
if status.get("ab_phase") != "rest": problems.append(f"phase {status.get('ab_phase')}, not rest")
if problems:
    print("; ".join(problems)); sys.exit(1)
print(f"{total} devices: {held} held out ({held / total:.3f}), the sample split "
      + ", ".join(f"{names[i]} {per_variant[i] / in_sample:.3f}" for i in range(3))
      + f", the rest ({total - held - in_sample}) got the winner {names[winner]}; every device got its hash's variant once "
      + f"({rejected} rejected by APNs) "
      + "across the center's SIGKILL; the variants and the holdout add up to the push's counters")
PY
  ); then
    log "✔ ab-test: $report"
  else
    fail "ab-test: $report"
  fi
}

test_postgres-outage() {
  reset_sim
  local push; push=$(push_all "Across a database outage" --rate 5000) || { fail "push refused"; return; }
  wait_done_at_least "$push" 5000 120 || { fail "no progress before the outage"; return; }
  "$herald" dev stop postgres
  log "PostgreSQL stopped for ${E2E_POSTGRES_OUTAGE_SECONDS:-10} s"
  # Each process turns not ready (naming the database) and stays alive.
  expect_probe herald-sender-1 /readyz 503 20 postgres
  expect_probe herald-center /readyz 503 20 postgres
  expect_probe herald-api /readyz 503 20 postgres
  expect_probe herald-sender-1 /healthz 200 5
  local answer
  answer=$("$herald" push --all --body "During the outage" --quiet 2>&1)
  if echo "$answer" | grep -q "503"; then log "✔ during the outage the API answers: $answer"; else fail "expected a 503 during the outage, got: $answer"; fi
  sleep "${E2E_POSTGRES_OUTAGE_SECONDS:-10}"
  "$herald" dev start postgres
  log "PostgreSQL started again"
  expect_probe herald-sender-1 /readyz 200 60
  expect_probe herald-center /readyz 200 60
  expect_probe herald-api /readyz 200 60
  # A batch the broker acknowledged just as the database went away could not be recorded as
  # produced; the resumed fan-out produces it again, and if its first outcome is not accounted
  # yet, its devices get it twice — with the same apns-id and collapse id (at least once).
  wait_completed "$push" 300 && verify --allow-duplicates "$push"
  local after; after=$("$herald" push --tag vip --body "After the outage" --quiet) || { fail "the API did not recover"; return; }
  wait_completed "$after" 120 && verify "$after"
}

test_broker-restart() {
  reset_sim
  "$herald" dev stop kafka
  log "the broker is stopped; pushes are still accepted (the outbox keeps them)"
  local push; push=$("$herald" push --tag news --body "Accepted while the broker was down" --quiet) || { fail "push refused without the broker"; return; }
  expect_probe herald-sender-1 /readyz 503 30 kafka_consumer_jobs
  expect_probe herald-center /readyz 503 30 kafka_producer
  expect_probe herald-sender-1 /healthz 200 5
  "$herald" dev start kafka
  log "the broker is back"
  expect_probe herald-sender-1 /readyz 200 60
  expect_probe herald-center /readyz 200 60
  wait_completed "$push" 300 && verify --allow-duplicates "$push"
}

test_apns-outage() {
  reset_sim
  curl -sf -X PUT "$sim_admin/faults" -H 'Content-Type: application/json' -d '{"serviceUnavailable":1}' >/dev/null
  log "apns-sim answers 503 to everything for 30 s"
  local push; push=$("$herald" push --tag vip --body "Across an APNs outage" --ttl 3600 --quiet) || { fail "push refused"; return; }
  sleep 30
  curl -sf -X PUT "$sim_admin/faults" -H 'Content-Type: application/json' -d '{}' >/dev/null
  log "apns-sim recovered"
  wait_completed "$push" 300 && verify "$push"
  local targeted accepted
  read -r targeted accepted <<< "$(field "$push" targeted accepted)"
  if [ "$targeted" = "$accepted" ]; then log "✔ all $accepted accepted after the outage"; else fail "$accepted of $targeted accepted after the outage"; fi
}

# The kept device counts: the app's devices and every tag's add up to what the stack imported
# (active or invalidated by APNs since), a device registered counts at once and leaves with its
# deletion, and the centers fold the counts' changes.
test_device-counts() {
  local report
  if report=$(python3 - "$herald" "$HERALD_DEV_DIR/devices.ndjson" <<'PY'
import collections, json, subprocess, sys
herald, path = sys.argv[1], sys.argv[2]
def run(*args):
    return json.loads(subprocess.run([herald, *args, "--json"], check=True, capture_output=True, text=True).stdout)
imported, tags = 0, collections.Counter()
for line in open(path):
    imported += 1
    tags.update(set(json.loads(line).get("tags", [])))
devices = run("stats")["devices"]
if devices["active"] + devices["invalid"] != imported:
    sys.exit(f"the statistics count {devices}, the stack imported {imported}")
kept = {entry["tag"]: entry["devices"]["active"] + entry["devices"]["invalid"] for entry in run("stats", "--tags")}
if kept != dict(tags):
    sys.exit(f"tags kept {kept}, imported {dict(tags)}")
registered = run("devices", "register", "ab" * 32, "--environment", "production", "--tag", "e2e-counted")
counted = run("stats", "--tags", "--prefix", "e2e-count")
if [(entry["tag"], entry["devices"]["active"]) for entry in counted] != [("e2e-counted", 1)]:
    sys.exit(f"a device registered with tag e2e-counted: {counted}")
subprocess.run([herald, "devices", "delete", str(registered["registration_id"])], check=True, capture_output=True)
if run("stats", "--tags", "--prefix", "e2e-count") != []:
    sys.exit("the deleted device's tag is still counted")
print(f"{imported} devices, {len(kept)} tags: {', '.join(f'{tag} {count}' for tag, count in sorted(kept.items()))}")
PY
  ); then
    log "✔ device counts add up: $report; a device registered counted at once, gone with its deletion"
  else
    fail "device counts: $report"
  fi
  local start=$SECONDS folded=0 name url value
  while [ $((SECONDS - start)) -lt 30 ]; do
    folded=0
    for name in $(python3 -c "import json,sys; print(' '.join(n for n in json.load(open(sys.argv[1]))['metricsURLs'] if 'center' in n))" "$HERALD_DEV_DIR/stack.json"); do
      url=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metricsURLs'][sys.argv[2]])" "$HERALD_DEV_DIR/stack.json" "$name")
      value=$(curl -sf --max-time 5 "$url" | sed -n 's/^herald_center_device_count_changes_folded_total \([0-9]*\)$/\1/p')
      folded=$((folded + ${value:-0}))
    done
    [ "$folded" -gt 0 ] && break
    sleep 1
  done
  if [ "$folded" -gt 0 ]; then log "✔ the centers folded $folded changes of the device counts"; else fail "no center folded the device counts' changes within 30 s"; fi
}

# Segments through the whole pipeline: 400 deliverable devices of the stack get app versions,
# countries and a custom plan by a re-import; a segment (plan gold AND app_version >= 5.2, or DE)
# is saved with `herald segments`, validated to the size the test computes itself, and pushed:
# apns-sim receives it on exactly the devices the test expects, and on no other.
test_segments() {
  reset_sim
  local report
  if report=$(python3 - "$herald" "$HERALD_DEV_DIR" "$sim_admin" 2>&1 <<'PY'
import json, os, subprocess, sys, time, urllib.request
herald, directory, sim = sys.argv[1], sys.argv[2], sys.argv[3]
def run(*arguments):
    answer = subprocess.run([herald, *arguments], capture_output=True, text=True)
    if answer.returncode != 0:
        sys.exit(f"herald {' '.join(arguments)}: {answer.stderr.strip()}")
    return answer.stdout
deliverable = []
for line in open(os.path.join(directory, "devices.ndjson")):
    device = json.loads(line)
    if not device["token"].startswith(("dead", "badd")):
        deliverable.append(device)
    if len(deliverable) == 400:
        break
versions = ["5.1.9", "5.2", "5.2.0", "5.10.1"]
countries = ["DE", "FR", "US", "JP", "BR"]
expected = set()
with open(os.path.join(directory, "segment-devices.ndjson"), "w") as out:
    for index, device in enumerate(deliverable):
        line = {"token": device["token"], "environment": device["environment"], "app_version": versions[index % 4],
                "country": countries[index % 5], "attributes": {"plan": "gold" if index % 3 == 0 else "free"}}
        out.write(json.dumps(line) + "\n")
        gold_and_recent = index % 3 == 0 and versions[index % 4] != "5.1.9"
        if gold_and_recent or countries[index % 5] == "DE":
            expected.add(device["token"])
run("devices", "import", os.path.join(directory, "segment-devices.ndjson"))
segment_filter = {"or": [{"and": [{"attribute": "attributes.plan", "op": "eq", "value": "gold"},
                                  {"attribute": "app_version", "op": "gte", "value": "5.2"}]},
                         {"attribute": "country", "op": "eq", "value": "DE"}]}
segment = json.loads(run("segments", "create", "--name", f"e2e-{time.time_ns()}", "--filter", json.dumps(segment_filter),
                         "--json"))["id"]
validation = json.loads(run("push", "validate", "--segment", segment, "--body", "segment", "--json"))
if validation["audience_size"] != len(expected):
    sys.exit(f"validate says {validation['audience_size']} devices, the test expects {len(expected)}")
push = run("push", "--segment", segment, "--body", "Only for this segment", "--quiet").strip()
deadline = time.time() + 180
while time.time() < deadline:
    status = json.loads(run("push", "status", push, "--json"))
    if status["state"] == "completed":
        break
    time.sleep(0.5)
else:
    sys.exit(f"the segment push did not complete: {status}")
received = set()
with urllib.request.urlopen(f"{sim}/notifications", timeout=30) as answer:
    for line in answer:
        if line.strip():
            received.add(json.loads(line)["token"])
if received != expected:
    sys.exit(f"apns-sim received {len(received)} devices, {len(received - expected)} unexpected and "
             f"{len(expected - received)} missing, of {len(expected)} expected")
counters = status["counters"]
print(f"segment of {len(expected)} of {len(deliverable)} devices: validate agreed, apns-sim received exactly them "
      f"({counters['accepted']} accepted of {counters['targeted']} targeted)")
PY
  ); then
    log "✔ segments: $report"
  else
    fail "segments: $report"
  fi
}

# Templates through the whole pipeline: 300 deliverable devices get locales, first names and
# (some) a long bio by a re-import; a stored template (a personalized title with a default, texts
# for de and de-AT) is pushed with `herald push --template`: apns-sim receives on each device the
# payload the test renders itself — its locale's, else its language's, else the default texts,
# with its name or the default. A second push with `{{bio}}` 17 times and no default is refused
# without a filter that guarantees a bio, then sent with one: devices whose render is over 4 KB end
# rejected (RenderedPayloadTooLarge, never sent), the others receive their bio.
test_templates() {
  reset_sim
  local report
  if report=$(python3 - "$herald" "$HERALD_DEV_DIR" "$sim_admin" 2>&1 <<'PY'
import json, os, subprocess, sys, time, urllib.request
herald, directory, sim = sys.argv[1], sys.argv[2], sys.argv[3]
def run(*arguments, ok=True):
    answer = subprocess.run([herald, *arguments], capture_output=True, text=True)
    if ok and answer.returncode != 0:
        sys.exit(f"herald {' '.join(arguments)}: {answer.stderr.strip()}")
    return answer if not ok else answer.stdout
def wait(push):
    deadline = time.time() + 180
    while time.time() < deadline:
        status = json.loads(run("push", "status", push, "--json"))
        if status["state"] == "completed":
            return status
        time.sleep(0.5)
    sys.exit(f"push {push} did not complete: {status}")
def received():
    payloads = {}
    with urllib.request.urlopen(f"{sim}/notifications", timeout=30) as answer:
        for line in answer:
            if line.strip():
                entry = json.loads(line)
                payloads[entry["token"]] = json.loads(entry["payload"])
    return payloads
deliverable = []
for line in open(os.path.join(directory, "devices.ndjson")):
    device = json.loads(line)
    if not device["token"].startswith(("dead", "badd")):
        deliverable.append(device)
    if len(deliverable) == 300:
        break
run_id = f"t{time.time_ns()}"
locales = ["de_AT", "de-DE", "de", "fr-FR", None, "DE-at"]
names = ["Zoë \"Z\"", "Jürgen", None, "Ana\\Maria", "李"]
expected_title, bios = {}, {}
with open(os.path.join(directory, "template-devices.ndjson"), "w") as out:
    for index, device in enumerate(deliverable):
        locale, name = locales[index % 6], names[index % 5]
        attributes = {"e2e_templates": run_id}
        if name is not None:
            attributes["first_name"] = name
        if index % 4 == 0:
            attributes["bio"] = ("x" * 250) if index % 8 == 0 else f"bio {index}"
            bios[device["token"]] = attributes["bio"]
        line = {"token": device["token"], "environment": device["environment"], "attributes": attributes}
        if locale is not None:
            line["locale"] = locale
        out.write(json.dumps(line) + "\n")
        normalized = (locale or "").lower().replace("_", "-")
        if normalized == "de-at":
            title = f"Servus {name or 'Freund'}"
        elif normalized.split("-")[0] == "de":
            title = f"Hallo {name or 'du'}"
        else:
            title = f"Hi {name or 'there'}"
        expected_title[device["token"]] = title
run("devices", "import", os.path.join(directory, "template-devices.ndjson"))
mine = json.dumps({"attribute": "attributes.e2e_templates", "op": "eq", "value": run_id})
template = json.loads(run("templates", "create", "--name", f"e2e-{run_id}", "--title", 'Hi {{first_name | default: "there"}}',
                          "--body", "Your weekly news", "--localized-title", 'de=Hallo {{first_name | default: "du"}}',
                          "--localized-title", 'de-AT=Servus {{ first_name | default: "Freund" }}', "--json"))
if template["placeholders"] != ["first_name"] or template["localizations"] != ["de", "de-at"]:
    sys.exit(f"the stored template reports {template['placeholders']} and {template['localizations']}")
push = run("push", "--filter", mine, "--template", template["id"], "--quiet").strip()
status = wait(push)
payloads = received()
if set(payloads) != set(expected_title):
    sys.exit(f"apns-sim received {len(payloads)} devices of the {len(expected_title)} expected")
wrong = [(token[:8], payloads[token]["aps"]["alert"], title) for token, title in expected_title.items()
         if payloads[token]["aps"]["alert"] != {"title": title, "body": "Your weekly news"}]
if wrong:
    sys.exit(f"{len(wrong)} devices got another payload than the test rendered, e.g. {wrong[:3]}")
unmarked = [token[:8] for token, payload in payloads.items() if payload.get("herald") != {"push_id": push.lower()}]
if unmarked:
    sys.exit(f"{len(unmarked)} payloads lack the push id under the herald key, e.g. {unmarked[:3]}")
first = (f"{len(payloads)} devices each got their own title in their language and the push id "
         f"({status['counters']['accepted']} accepted)")

urllib.request.urlopen(urllib.request.Request(f"{sim}/reset", method="POST"), timeout=10)
body = "{{bio}}" * 17
refused = run("push", "--filter", mine, "--body", body, "--json", ok=False)
if refused.returncode == 0 or "no default" not in refused.stderr:
    sys.exit(f"a placeholder without a default and no filter guaranteeing it was not refused: {refused.stderr.strip()}")
guaranteed = json.dumps({"and": [json.loads(mine), {"attribute": "attributes.bio", "op": "exists"}]})
push = run("push", "--filter", guaranteed, "--body", body, "--quiet").strip()
status = wait(push)
counters = status["counters"]
long_bios = {token for token, bio in bios.items() if len(bio) * 17 > 4000}
payloads = received()
if set(payloads) != set(bios) - long_bios:
    sys.exit(f"apns-sim received {len(payloads)} devices; expected the {len(bios) - len(long_bios)} with short bios")
if any(payloads[token]["aps"]["alert"]["body"] != bios[token] * 17 for token in payloads):
    sys.exit("a device got another body than its bio 17 times")
if counters["rejected_by_reason"].get("RenderedPayloadTooLarge") != len(long_bios) or counters["accepted"] != len(payloads):
    sys.exit(f"counters {counters}: expected {len(long_bios)} RenderedPayloadTooLarge and {len(payloads)} accepted")
print(f"{first}; {{{{bio}}}} without a default refused until the audience required a bio, then "
      f"{len(payloads)} received it and {len(long_bios)} renders over 4 KB ended RenderedPayloadTooLarge, unsent")
PY
  ); then
    log "✔ templates: $report"
  else
    fail "templates: $report"
  fi
}

# Outcome webhooks through the real herald-center, driven with `herald webhooks`: a receiver on
# loopback that refuses its first request gets a tag push's push.completed, device.invalidated for
# its four dead tokens (Unregistered with apns-sim's timestamp, BadDeviceToken without) and
# delivery.batch events (which add up to the push's counters) and a test event, each signed with
# the endpoint's secret; after a rotation with a grace period a request verifies under both secrets;
# an endpoint that keeps failing has its delivery die (the stack's retry window is 8 s), listed as
# dead and, once the receiver answers again, replayed and delivered.
# The app's delivery policy on the real stack: with a cap of one campaign a day, a second tag
# push reaches nobody who got the first (every device skipped as capped, apns-sim gets nothing),
# while a transactional push to one of them is delivered; removing the policy lifts it.
test_delivery-policy() {
  reset_sim
  "$herald" app update --cap 1/24 >/dev/null || { fail "delivery policy: the cap was refused"; return; }
  local first second code
  first=$("$herald" push --tag weather --body "Storm tonight" --quiet) || { fail "delivery policy: push refused"; return; }
  wait_completed "$first" 300 && verify "$first"
  read -r targeted accepted skipped <<< "$(field "$first" targeted accepted skipped)"
  [ "$skipped" = 0 ] && [ "$accepted" -gt 0 ] || fail "delivery policy: the first campaign skipped $skipped of $targeted"
  reset_sim
  second=$("$herald" push --tag weather --body "Storm, again" --quiet) || { fail "delivery policy: push refused"; return; }
  wait_completed "$second" 300 && verify "$second"
  local capped
  capped=$("$herald" push status "$second" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"]["skipped_by_reason"].get("capped", 0))')
  read -r targeted2 accepted2 skipped2 <<< "$(field "$second" targeted accepted skipped)"
  if [ "$accepted2" = 0 ] && [ "$targeted2" -gt 0 ] && [ "$skipped2" = "$targeted2" ] && [ "$capped" = "$targeted2" ]; then
    log "✔ delivery policy: the second campaign skipped all $skipped2 of $targeted2 as capped (the first reached $accepted)"
  else
    fail "delivery policy: the second campaign accepted $accepted2, skipped $skipped2 ($capped capped) of $targeted2; the first reached $accepted"
  fi
  # Weather devices with aliases (`herald dev devices`: every tenth has one, every third from the
  # third on is tagged weather).
  code=$("$herald" push --alias user-20 --alias user-50 --alias user-80 --alias user-110 --body "Your code is 482913" --quiet) || { fail "delivery policy: code refused"; return; }
  wait_completed "$code" 120 && verify "$code"
  read -r class <<< "$("$herald" push status "$code" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["priority_class"])')"
  if [ "$class" = transactional ] && [ "$(field "$code" accepted)" -ge 1 ]; then
    log "✔ delivery policy: a transactional push to a capped device was delivered"
  else
    fail "delivery policy: the code ($class) was not delivered: $(field "$code" accepted skipped)"
  fi
  "$herald" app update --no-delivery-policy >/dev/null || fail "delivery policy: could not remove it"
}

# Local-time delivery on the real stack (docs/local-time.md): 100 devices in Tokyo and 100 in Los
# Angeles get a push "at the time Tokyo shows now, on Tokyo's date". validate reports the two waves;
# herald-center sends Tokyo's at once and schedules the push again for Los Angeles' (17 hours on),
# apns-sim gets exactly the Tokyo devices; canceled between the waves, the Los Angeles devices count
# as canceled and the counters add up.
test_local-time() {
  reset_sim
  local report
  if report=$(python3 - "$herald" "$HERALD_DEV_DIR" "$sim_admin" 2>&1 <<'PY'
import datetime, json, os, subprocess, sys, time, urllib.request, zoneinfo
herald, directory, sim = sys.argv[1], sys.argv[2], sys.argv[3]
def run(*arguments):
    answer = subprocess.run([herald, *arguments], capture_output=True, text=True)
    if answer.returncode != 0:
        sys.exit(f"herald {' '.join(arguments)}: {answer.stderr.strip()}")
    return answer.stdout
def status(push):
    return json.loads(run("push", "status", push, "--json"))
def until(push, condition, what, limit=120):
    deadline = time.time() + limit
    while time.time() < deadline:
        current = status(push)
        if condition(current):
            return current
        time.sleep(0.5)
    sys.exit(f"push {push}: not {what} within {limit} s: {current}")
def received():
    tokens = set()
    with urllib.request.urlopen(f"{sim}/notifications", timeout=30) as answer:
        for line in answer:
            if line.strip():
                tokens.add(json.loads(line)["token"])
    return tokens
deliverable = []
for line in open(os.path.join(directory, "devices.ndjson")):
    device = json.loads(line)
    if not device["token"].startswith(("dead", "badd")):
        deliverable.append(device)
deliverable = deliverable[-200:]
run_id = f"l{time.time_ns()}"
zones = {}
with open(os.path.join(directory, "local-time-devices.ndjson"), "w") as out:
    for index, device in enumerate(deliverable):
        zone = "Asia/Tokyo" if index % 2 == 0 else "America/Los_Angeles"
        zones[device["token"]] = zone
        out.write(json.dumps({"token": device["token"], "environment": device["environment"], "time_zone": zone,
                              "attributes": {"e2e_local": run_id}}) + "\n")
run("devices", "import", os.path.join(directory, "local-time-devices.ndjson"))
mine = json.dumps({"attribute": "attributes.e2e_local", "op": "eq", "value": run_id})
tokyo = datetime.datetime.now(zoneinfo.ZoneInfo("Asia/Tokyo"))
if tokyo.second > 50:  # not across a minute's end
    time.sleep(11)
    tokyo = datetime.datetime.now(zoneinfo.ZoneInfo("Asia/Tokyo"))
when = ["--local-time", tokyo.strftime("%H:%M"), "--local-date", tokyo.strftime("%Y-%m-%d")]
validation = json.loads(run("push", "validate", "--filter", mine, "--body", "Good morning", *when, "--json"))
waves = [(w["time_zones"], w["devices"]) for w in validation.get("waves", [])]
if waves != [(["Asia/Tokyo"], 100), (["America/Los_Angeles"], 100)]:
    sys.exit(f"validate reported the waves {waves}")
push = run("push", "--filter", mine, "--body", "Good morning", *when, "--quiet").strip()
between = until(push, lambda s: s["state"] == "scheduled" and s["counters"]["accepted"] == 100 and s.get("waves")
                and s["waves"][0]["started"], "sent to Tokyo and waiting for Los Angeles")
later = datetime.datetime.fromisoformat(between["waves"][1]["send_at"].replace("Z", "+00:00"))
hours = (later - datetime.datetime.now(datetime.timezone.utc)).total_seconds() / 3600
if not 16 < hours < 18:
    sys.exit(f"the Los Angeles wave is {hours:.1f} h away, not 17")
got = received()
if got != {token for token, zone in zones.items() if zone == "Asia/Tokyo"}:
    sys.exit(f"apns-sim got {len(got)} devices, {sum(zones.get(t) == 'America/Los_Angeles' for t in got)} of them in Los Angeles")
run("push", "cancel", push)
final = until(push, lambda s: s["state"] == "canceled" and s["counters"]["targeted"] == 200, "canceled and counted")
counters = final["counters"]
if (counters["accepted"], counters["canceled"]) != (100, 100):
    sys.exit(f"canceled between waves: {counters}")
print(f"Tokyo's 100 devices got it at once, Los Angeles' 100 waited for their wave {hours:.1f} h on; "
      f"canceled between the waves: 100 accepted + 100 canceled = 200 targeted")
PY
  ); then
    log "✔ local time: $report"
  else
    fail "local time: $report"
  fi
}

# A schedule on the real stack: saved with the CLI for the next minute, its occurrence becomes one
# push that herald-center fans out like any other (counters add up, apns-sim got exactly it), and
# the schedule moves to its next occurrence.
test_schedules() {
  reset_sim
  local at schedule push="" start=$SECONDS details
  at=$(date -u -d '+1 minute' +%Y-%m-%dT%H:%M)
  schedule=$("$herald" schedules create --name "e2e-$at" --rrule "FREQ=DAILY;COUNT=2" --time-zone UTC --starts-at "$at" \
    --tag sports --body "Today's sports" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') \
    || { fail "schedules: the schedule was refused"; return; }
  while [ -z "$push" ] && [ $((SECONDS - start)) -lt 180 ]; do
    sleep 2
    push=$("$herald" push list --schedule "$schedule" --json | python3 -c 'import json,sys; p=json.load(sys.stdin); print(p[0]["id"] if p else "")')
  done
  [ -n "$push" ] || { fail "schedules: no push for the occurrence at $at UTC within 180 s"; return; }
  wait_completed "$push" 300 && verify "$push"
  details=$("$herald" schedules get "$schedule" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(s["pushes_created"], len(s["next_occurrences"]), s["state"])')
  if [ "$details" = "1 1 active" ] && [ "$("$herald" push list --schedule "$schedule" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 1 ]; then
    log "✔ schedules: the occurrence at $at UTC became one push ($(field "$push" accepted) accepted); one occurrence left"
  else
    fail "schedules: after the occurrence, pushes created / occurrences left / state: $details"
  fi
  "$herald" schedules delete "$schedule" >/dev/null || fail "schedules: delete failed"
}

test_webhooks() {
  reset_sim
  local dir=$HERALD_DEV_DIR/webhooks report
  rm -rf "$dir"; mkdir -p "$dir"
  python3 - "$dir" <<'PY' &
import http.server, json, os, sys
directory = sys.argv[1]
class Receiver(http.server.BaseHTTPRequestHandler):
    count = 0
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/dead":
            status = 200 if os.path.exists(os.path.join(directory, "dead-answers")) else 500
        else:
            Receiver.count += 1
            status = 500 if Receiver.count == 1 else 200
        with open(os.path.join(directory, "received.ndjson"), "a") as out:
            out.write(json.dumps({"path": self.path, "status": status,
                                  "signature": self.headers.get("Herald-Signature", ""), "body": body.decode()}) + "\n")
        self.send_response(status); self.end_headers()
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
open(os.path.join(directory, "port"), "w").write(str(server.server_port))
server.serve_forever()
PY
  local receiver=$!
  local start=$SECONDS
  while [ ! -s "$dir/port" ] && [ $((SECONDS - start)) -lt 10 ]; do sleep 0.1; done
  if report=$(python3 - "$herald" "$dir" "$(cat "$dir/port")" 2>&1 <<'PY'
import hashlib, hmac, json, os, secrets, subprocess, sys, time, urllib.request
herald, directory, port = sys.argv[1], sys.argv[2], sys.argv[3]
def cli(*arguments):
    answer = subprocess.run([herald, "webhooks", *arguments], capture_output=True, text=True)
    if answer.returncode != 0:
        sys.exit(f"herald webhooks {' '.join(arguments)}: {answer.stderr.strip()}")
    return json.loads(answer.stdout) if "--json" in arguments else answer.stdout
def received(path):
    log = os.path.join(directory, "received.ndjson")
    entries = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    return [entry for entry in entries if entry["path"] == path]
def delivered(path):
    return [(json.loads(entry["body"]), entry["signature"], entry["body"]) for entry in received(path) if entry["status"] == 200]
def verifies(signature, body, secret):
    fields = signature.split(",")
    t = next(field[2:] for field in fields if field.startswith("t="))
    expected = hmac.new(secret.encode(), f"{t}.{body}".encode(), hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, field[3:]) for field in fields if field.startswith("v1="))
def wait(what, check, seconds=180):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.5)
    sys.exit(f"{what}: not within {seconds} s; received {open(os.path.join(directory, 'received.ndjson')).read()[-3000:]}")

refused = subprocess.run([herald, "webhooks", "create", "--url", "https://169.254.169.254/latest", "--events",
                          "push.completed"], capture_output=True, text=True)
if refused.returncode == 0 or "not a public address" not in refused.stderr:
    sys.exit(f"an endpoint on the metadata address was not refused: {refused.stderr or refused.stdout}")
created = cli("create", "--url", f"http://127.0.0.1:{port}/herald", "--description", "e2e",
              "--events", "push.completed,push.failed,device.invalidated,delivery.batch", "--json")
secret, webhook = created["secret"], created["webhook"]["id"]
if "secret" in cli("list", "--json")["webhooks"][0]:
    sys.exit("the list shows a secret")
# Six new devices under their own tag: two apns-sim delivers to, two it says were unregistered (410
# with a timestamp after their registration), two it does not know (BadDeviceToken).
config = json.load(open(os.environ["HERALD_CLI_CONFIG"]))
tokens = [secrets.token_hex(32) for _ in range(6)]
for token in tokens:
    request = urllib.request.Request(os.environ["HERALD_API_URL"] + "/v1/devices", method="POST",
        data=json.dumps({"token": token, "environment": "sandbox", "tags": ["webhooks-e2e"]}).encode(),
        headers={"Authorization": f"Bearer {config['api_key']}", "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
time.sleep(0.01)
now = int(time.time() * 1000)
sim = [{"token": t, "topic": "com.example.e2e"} for t in tokens[:2]] + \
      [{"token": t, "topic": "com.example.e2e", "unregisteredAt": now} for t in tokens[2:4]]
urllib.request.urlopen(urllib.request.Request(os.environ["HERALD_DEV_APNS_SIM_ADMIN"] + "/devices", method="POST",
    data=json.dumps({"devices": sim}).encode(), headers={"Content-Type": "application/json"}), timeout=10).read()
push = subprocess.run([herald, "push", "--tag", "webhooks-e2e", "--body", "webhooks", "--quiet"], check=True,
                      capture_output=True, text=True).stdout.strip()
test = cli("test", webhook, "--json")["event_id"]

def mine():
    events = [event for event, _, _ in delivered("/herald")]
    unique = {event["id"]: event for event in events}.values()
    completed = [e for e in unique if e["type"] == "push.completed" and e["data"]["push_id"] == push]
    invalidated = [e for e in unique if e["type"] == "device.invalidated"]
    batches = [e for e in unique if e["type"] == "delivery.batch" and e["data"]["push_id"] == push]
    return completed, invalidated, batches, any(e["id"] == test for e in unique)
def complete():
    completed, invalidated, batches, tested = mine()
    if not completed or not tested:
        return False
    counters = completed[0]["data"]["counters"]
    return (len(invalidated) == counters["tokens_invalidated"]
            and sum(len(b["data"]["accepted"]) for b in batches) == counters["accepted"]
            and sum(len(b["data"]["failed"]) for b in batches) == counters["rejected"] + counters["expired"])
wait("push.completed, device.invalidated and delivery.batch adding up to the counters, and webhook.test", complete)
completed, invalidated, batches, _ = mine()
counters = completed[0]["data"]["counters"]
if (counters["targeted"], counters["accepted"], counters["tokens_invalidated"]) != (6, 2, 4):
    sys.exit(f"the push's counters are not 6 targeted, 2 accepted, 4 invalidated: {counters}")
seen = {e["data"]["token_prefix"]: e["data"] for e in invalidated}
if set(seen) != {token[:8] for token in tokens[2:]} or any("token" in e["data"] for e in invalidated):
    sys.exit(f"device.invalidated for {sorted(seen)}, not for the four dead tokens (by their prefixes, never whole)")
for token in (token[:8] for token in tokens[2:4]):
    if seen[token]["reason"] != "Unregistered" or not seen[token].get("apns_timestamp", "").startswith(
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now / 1000))):
        sys.exit(f"an Unregistered device without APNs' timestamp ({now} ms): {seen[token]}")
for token in (token[:8] for token in tokens[4:]):
    if seen[token]["reason"] != "BadDeviceToken" or "apns_timestamp" in seen[token]:
        sys.exit(f"a BadDeviceToken device.invalidated: {seen[token]}")
for _, signature, body in delivered("/herald"):
    if not verifies(signature, body, secret):
        sys.exit(f"a bad signature: {signature}")
attempts = cli("attempts", webhook, "--json")["attempts"]
if not any(attempt.get("status") == 500 for attempt in attempts):
    sys.exit(f"the refused attempt is not listed: {attempts}")

# A production device: the stack's app has a sandbox credential only, so the sender refuses the
# batch (MissingCredential) and the push fails on its credential: push.failed, once.
prod = secrets.token_hex(32)
request = urllib.request.Request(os.environ["HERALD_API_URL"] + "/v1/devices", method="POST",
    data=json.dumps({"token": prod, "environment": "production", "tags": ["webhooks-e2e-production"]}).encode(),
    headers={"Authorization": f"Bearer {config['api_key']}", "Content-Type": "application/json"})
urllib.request.urlopen(request, timeout=10).read()
failing = subprocess.run([herald, "push", "--tag", "webhooks-e2e-production", "--body", "no credential", "--quiet"],
                         check=True, capture_output=True, text=True).stdout.strip()
def failed_events():
    return [e for e, _, _ in delivered("/herald") if e["type"] == "push.failed" and e["data"]["push_id"] == failing]
wait("push.failed for a push without a production credential", lambda: failed_events(), 60)
if failed_events()[0]["data"]["reason"] != "MissingCredential":
    sys.exit(f"push.failed says {failed_events()[0]['data']}")

# Rotation with a grace period: the next request is signed under both secrets.
rotated = cli("rotate-secret", webhook, "--grace", "3600", "--json")
after_rotation = cli("test", webhook, "--json")["event_id"]
wait("the test event after the rotation", lambda: any(e["id"] == after_rotation for e, _, _ in delivered("/herald")), 60)
_, signature, body = next(entry for entry in delivered("/herald") if entry[0]["id"] == after_rotation)
if not (verifies(signature, body, rotated["secret"]) and verifies(signature, body, secret)):
    sys.exit(f"after the rotation, not signed under both secrets: {signature}")

# An endpoint that keeps failing: its delivery dies, is listed, and is replayed once it answers.
dead = cli("create", "--url", f"http://127.0.0.1:{port}/dead", "--events", "push.canceled", "--json")["webhook"]["id"]
dying = cli("test", dead, "--json")["event_id"]
wait("the failing delivery dead", lambda: [d["event_id"] for d in cli("deliveries", dead, "--state", "dead", "--json")["deliveries"]] == [dying], 120)
open(os.path.join(directory, "dead-answers"), "w").close()
replayed = cli("replay", dead, "--json")["replayed"]
if replayed != 1:
    sys.exit(f"replay made {replayed} deliveries pending, not 1")
wait("the replayed delivery", lambda: any(e["id"] == dying for e, _, _ in delivered("/dead")), 60)
failed_before = sum(1 for entry in received("/dead") if entry["status"] == 500)
for hook in (webhook, dead):
    cli("delete", hook)
print(f"an endpoint on the metadata address refused; push.failed (MissingCredential) for a push without a credential; "
      f"push.completed ({counters['accepted']} accepted of {counters['targeted']}), {len(invalidated)} device.invalidated, "
      f"{len(batches)} delivery.batch adding up, webhook.test delivered after a refusal and signed under both secrets "
      f"after a rotation; a delivery dead after {failed_before} failures replayed and delivered")
PY
  ); then
    log "✔ webhooks: $report"
  else
    fail "webhooks: $report"
  fi
  kill "$receiver" 2>/dev/null; wait "$receiver" 2>/dev/null
}

# Every process's /metrics passes promtool's lint (names, units, types, help), and the whole
# system's gauges come from exactly one center.
test_metrics() {
  local name url text reporters=0
  for name in $(python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['metricsURLs']))" "$HERALD_DEV_DIR/stack.json"); do
    url=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metricsURLs'][sys.argv[2]])" "$HERALD_DEV_DIR/stack.json" "$name")
    text=$(curl -sf --max-time 5 "$url") || { fail "$name: no /metrics"; continue; }
    if problems=$(echo "$text" | promtool check metrics 2>&1); then
      log "✔ $name /metrics: $(echo "$text" | grep -vc '^#') samples, promtool finds nothing to say"
    else
      fail "$name /metrics: promtool: $problems"
    fi
    echo "$text" | grep -q '^herald_center_system_reporter 1$' && reporters=$((reporters + 1))
  done
  if [ "$reporters" = 1 ]; then log "✔ one center reports the whole system's gauges"; else fail "$reporters centers report the whole system's gauges"; fi
}

# Prometheus, scraping the stack with the alert rules (scaled): every metric the rules read has
# data there (but the certificate expiry: the stack's apps use token keys), and a SIGKILLed sender
# fires HeraldSenderDown within its window.
test_prometheus() {
  [ -n "${HERALD_DEV_PROMETHEUS:-}" ] || { fail "the stack has no Prometheus"; return; }
  local report
  if report=$(python3 - "$HERALD_DEV_PROMETHEUS" Deploy/prometheus/herald-rules.yml <<'PY'
import json, re, sys, urllib.parse, urllib.request
base, rules = sys.argv[1], sys.argv[2]
names = sorted(set(re.findall(r"\bherald_[a-z0-9_]+", open(rules).read())) - {"herald_apns_certificate_expiry_timestamp_seconds"})
def query(expression):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    return json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]
# A histogram's family (named so in an alert's description) has its data under _count.
missing = [name for name in names if not query(f"count({name}) or count({name}_count)")]
print(f"{len(names) - len(missing)} of {len(names)} metrics the rules read have data in Prometheus" + (f"; none for {', '.join(missing)}" if missing else ""))
sys.exit(1 if missing else 0)
PY
  ); then log "✔ $report"; else fail "$report"; fi
  "$herald" dev stop herald-sender-2 --kill >/dev/null
  local start=$SECONDS firing=""
  while [ $((SECONDS - start)) -lt 90 ]; do
    firing=$(curl -sf "$HERALD_DEV_PROMETHEUS/api/v1/query" --data-urlencode 'query=ALERTS{alertname="HeraldSenderDown",alertstate="firing"}' \
      | python3 -c "import json,sys; print(' '.join(r['metric'].get('process','?') for r in json.load(sys.stdin)['data']['result']))")
    [ -n "$firing" ] && break
    sleep 1
  done
  if [ -n "$firing" ]; then log "✔ HeraldSenderDown fired for $firing $((SECONDS - start)) s after the SIGKILL (for: 10s, scaled)"; else fail "HeraldSenderDown did not fire within 90 s"; fi
  "$herald" dev start herald-sender-2 >/dev/null || fail "herald-sender-2 did not start again"
}

# The Grafana dashboard (Grafana is not installable here): every panel's query runs against the
# stack's Prometheus and returns data.
test_dashboard() {
  [ -n "${HERALD_DEV_PROMETHEUS:-}" ] || { fail "the stack has no Prometheus"; return; }
  # Something for the error panel to show: an app that does not exist (404).
  curl -s -o /dev/null -H "Authorization: Bearer $HERALD_ADMIN_TOKEN" \
    "$HERALD_API_URL/v1/apps/00000000-0000-0000-0000-000000000000"
  local report
  if report=$(python3 - "$HERALD_DEV_PROMETHEUS" Deploy/grafana/herald-dashboard.json <<'PY'
import json, sys, time, urllib.error, urllib.parse, urllib.request
base, path = sys.argv[1], sys.argv[2]
dashboard = json.load(open(path))
# A counter born in the last seconds needs two scrapes (2 s apart) before rate() has a value: ask
# again for up to 30 s before calling a panel empty.
for attempt in range(7):
    problems, queries = [], 0
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            queries += 1
            url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": target["expr"]})
            try:
                answer = json.load(urllib.request.urlopen(url, timeout=5))
            except urllib.error.HTTPError as error:
                problems.append(f"{panel['title']}: {json.load(error).get('error')}"); continue
            if not answer["data"]["result"]:
                problems.append(f"{panel['title']}: no data for {target['expr']}")
    if not problems:
        break
    time.sleep(5)
print(f"{queries - len(problems)} of {queries} queries of {len(dashboard['panels'])} panels return data" + ("; " + "; ".join(problems) if problems else ""))
sys.exit(1 if problems else 0)
PY
  ); then log "✔ $report"; else fail "$report"; fi
}

# After the run: no secret of the stack (admin token, master key, database password, the app's
# keys from the CLI's configuration, the APNs signing key, and a fresh app's client key,
# identity secret and an alias signature it made) in any process's log, on any operations port,
# in its audit log, or in an error body that answers a request made with it.
test_secrets() {
  local report
  report=$(python3 - "$HERALD_DEV_DIR" "$HERALD_API_URL" <<'PY'
import glob, json, os, sys, urllib.request, urllib.error
directory, api = sys.argv[1], sys.argv[2]
stack = json.load(open(os.path.join(directory, "stack.json")))
secrets = {"admin token": stack["adminToken"], "master key": stack["masterKey"],
           "database password": stack["postgres"]["password"]}
key = open(stack["signingKey"]["privateKeyFile"]).read()
body = "".join(line for line in key.splitlines() if "-----" not in line)
secrets["APNs signing key"] = body[:40]
try:
    cli = json.load(open(os.path.join(directory, "cli.json")))
    def walk(value, path):
        if isinstance(value, dict):
            for name, inner in value.items(): walk(inner, path + [name])
        elif isinstance(value, str) and any(word in path[-1].lower() for word in ("key", "token", "secret")) and len(value) >= 20:
            secrets["cli " + ".".join(path)] = value
    walk(cli, [])
except FileNotFoundError:
    pass
texts = {}
import hashlib, hmac, secrets as randomness
def call(method, path, key, body=None):
    request = urllib.request.Request(api + path, method=method, headers={"Authorization": "Bearer " + key,
        "Content-Type": "application/json"}, data=json.dumps(body).encode() if body is not None else None)
    try: return urllib.request.urlopen(request, timeout=10).read().decode()
    except urllib.error.HTTPError as error: return error.read().decode()
# A fresh app whose client key binds an alias: with the back-end's signature, with a wrong one,
# without one. Its identity secret, client key and the signature must show nowhere.
app = json.loads(call("POST", "/v1/apps", stack["adminToken"], {"name": "secrets", "bundle_id": "com.herald.secrets"}))
identity = app["identity_secret"]
secrets["identity secret"], secrets["client key"] = identity, app["client_key"]["key"]
# The v2 signature as docs/security.md defines it: bound to the device's token and an expiry.
import time
token = randomness.token_hex(32)
expires = int(time.time()) + 3600
mac = hmac.new(identity.encode(), f"herald-alias-v2\n{token}\nuser-7\n{expires}".encode(), hashlib.sha256).hexdigest()
signature = f"v2.{expires}.{mac}"
secrets["alias signature"] = mac
texts["signed registration"] = call("POST", "/v1/devices", app["client_key"]["key"],
    {"token": token, "environment": "sandbox", "alias": "user-7", "alias_signature": signature})
if '"alias":"user-7"' not in texts["signed registration"].replace(" ", ""):
    print("the v2 alias signature computed from docs/security.md was refused: " + texts["signed registration"])
    sys.exit(1)
texts["forged registration"] = call("POST", "/v1/devices", app["client_key"]["key"],
    {"token": token, "environment": "sandbox", "alias": "user-8", "alias_signature": signature})
texts["unsigned registration"] = call("PATCH", f"/v1/devices/by-token/{token}", app["client_key"]["key"], {"alias": "user-9"})
texts["audit log"] = call("GET", f"/v1/apps/{app['app']['id']}/audit-events", stack["adminToken"])
for file in glob.glob(os.path.join(directory, "logs", "*.log")):
    texts[os.path.basename(file)] = open(file, errors="replace").read()
for name, url in stack.get("metricsURLs", {}).items():
    base = url.rsplit("/", 1)[0]
    for path in ("/metrics", "/healthz", "/readyz"):
        try: texts[f"{name}{path}"] = urllib.request.urlopen(base + path, timeout=5).read().decode()
        except urllib.error.HTTPError as error: texts[f"{name}{path}"] = error.read().decode()
for label, secret in secrets.items():
    request = urllib.request.Request(api + "/v1/pushes", headers={"Authorization": "Bearer " + secret + "x"})
    try: urllib.request.urlopen(request, timeout=5)
    except urllib.error.HTTPError as error: texts[f"error body for a wrong {label}"] = error.read().decode()
leaks = [f"{label} in {where}" for label, secret in secrets.items() for where, text in texts.items() if secret in text]
print(f"{len(secrets)} secrets, {len(texts)} logs and answers: " + ("; ".join(leaks) if leaks else "no secret found"))
sys.exit(1 if leaks else 0)
PY
  ) && log "✔ $report" || fail "secrets leaked: $report"
}

# The operations console in headless Chromium (Selenium): sign-in, a tag push watched to 100 %,
# a throttled broadcast paused, resumed and canceled, a recall, CSRF refusals, narrow pages.
# Screenshots: .local/console-screenshots (kept: the stack's folder goes when the tests pass).
test_console() {
  reset_sim
  local venv=.local/venv-console requirements=Tests/Console/requirements.txt
  scripts/python-venv.sh "$venv" "$requirements" "Selenium" || { fail "could not install Selenium"; return; }
  local key; key=$(python3 -c 'import json, os; print(json.load(open(os.environ["HERALD_CLI_CONFIG"]))["api_key"])')
  local shots=$(pwd)/.local/console-screenshots
  rm -rf "$shots"
  if "$venv/bin/python" Tests/Console/test_console.py "$HERALD_API_URL" "$key" "$herald" "$shots"; then
    log "✔ the console in a browser (screenshots in $shots)"
  else
    fail "the console in a browser (screenshots in $shots)"
  fi
}

for current in "${tests[@]}"; do
  log "── $current"
  "test_$current"
  stack_alive || { log "stopping here: a process of the stack died (above)"; break; }
done

if [ ${#failures[@]} -gt 0 ]; then
  log "FAILED:"; printf '  %s\n' "${failures[@]}"
  print_crashes
  exit 1
fi
log "all end-to-end tests passed: ${tests[*]}"
