#!/usr/bin/env bash
# The priority benchmark (`make bench-priority`, not part of `make test`): how long a one-device
# push of one app takes — from POST /v1/pushes to its status `completed` (its outcome accounted)
# — on the `herald dev` stack (two senders), in three phases of at most PHASE_SECONDS each, five
# pushes a second:
#   quiet         nothing else running;
#   campaigns     another app's throttled broadcast (2,000/s) and an unthrottled one to all its
#                 DEVICES devices running (the phase ends early if the unthrottled one completes);
#                 the one-device pushes are transactional (their default);
#   as campaign   the same campaigns (a fresh unthrottled broadcast), the one-device pushes sent with
#                 "priority_class":"campaign": what the transactional class saves.
# Prints each phase's distribution (p50, p90, p99, max) and the ratios of the campaign phases'
# p99 to the quiet one's, measured in the same run; the last line is JSON.
#
#   Benchmarks/PriorityLatency/run.sh BIN_DIR [DEVICES] [PHASE_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
devices=${2:-1000000}
phase_seconds=${3:-40}
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/bench-priority
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-warning}

"$herald" dev down >/dev/null 2>&1 || true
"$herald" dev up --senders 2 --api-port 0 --apns-sim-record counts --bin-dir "$bin" >/dev/null
trap '"$herald" dev down >/dev/null' EXIT
eval "$("$herald" dev env)"
echo "stack up in $HERALD_DEV_DIR (2 senders)"

# The app that sends one-time codes: 1,000 devices, every tenth with an alias (user-0, user-10, …).
"$herald" app create --name "codes" --bundle-id com.example.codes --save >/dev/null
"$herald" app credentials --dev-stack-key >/dev/null
"$herald" dev devices --count 1000 --unregistered-percent 0 --bad-percent 0 --out "$HERALD_DEV_DIR/codes.ndjson" >/dev/null
"$herald" devices import "$HERALD_DEV_DIR/codes.ndjson" >/dev/null
"$herald" dev devices --register "$HERALD_DEV_DIR/codes.ndjson" --topic com.example.codes >/dev/null
codes_key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api_key"])' "$HERALD_CLI_CONFIG")

# The app that runs the campaigns.
"$herald" app create --name "campaigns" --bundle-id com.example.campaigns --save >/dev/null
"$herald" app credentials --dev-stack-key >/dev/null
"$herald" dev devices --count "$devices" --unregistered-percent 0 --bad-percent 0 --out "$HERALD_DEV_DIR/campaigns.ndjson"
"$herald" devices import "$HERALD_DEV_DIR/campaigns.ndjson"
"$herald" dev devices --register "$HERALD_DEV_DIR/campaigns.ndjson" --topic com.example.campaigns
campaigns_key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api_key"])' "$HERALD_CLI_CONFIG")

python3 - "$HERALD_API_URL" "$codes_key" "$campaigns_key" "$devices" "$phase_seconds" <<'PY'
import http.client, json, sys, time, urllib.parse
url, codes_key, campaigns_key = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], sys.argv[3]
devices, phase_seconds = int(sys.argv[4]), float(sys.argv[5])
connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)

def call(method, path, key, body=None):
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    connection.request(method, path, json.dumps(body) if body is not None else None, headers)
    response = connection.getresponse()
    data = response.read()
    return response.status, json.loads(data) if data else None

def broadcast(options=None):
    body = {"audience": {"all": True}, "notification": {"alert": {"title": "Sale", "body": "Everything must go"}}}
    if options:
        body["options"] = options
    status, answer = call("POST", "/v1/pushes", campaigns_key, body)
    assert status == 202, (status, answer)
    return answer["id"]

def progress(push):
    _, status = call("GET", f"/v1/pushes/{push}", campaigns_key)
    c = status["counters"]
    done = c["accepted"] + c["rejected"] + c["expired"] + c["canceled"]
    return status["state"], done

def phase(name, priority_class=None, while_running=None):
    """One-device pushes at 5/s for phase_seconds, or until the broadcast `while_running`
    completes if that is sooner; each one's seconds from POST to completed."""
    latencies, outstanding, sent, refused = [], {}, 0, 0
    start = time.monotonic()
    next_push = start
    alias = 0
    sending, checked = True, start
    while sending or outstanding:
        now = time.monotonic()
        if sending and (now - start >= phase_seconds):
            sending = False
        if sending and while_running and now - checked >= 1:
            checked = now
            if progress(while_running)[0] == "completed":
                sending = False
        if sending and now >= next_push:
            body = {"audience": {"aliases": [f"user-{(alias % 100) * 10}"]},
                    "notification": {"alert": {"body": "Your code is 482913"}}}
            if priority_class:
                body["options"] = {"priority_class": priority_class}
            alias += 1
            posted = time.monotonic()
            status, answer = call("POST", "/v1/pushes", codes_key, body)
            sent += 1
            if status == 202:
                outstanding[answer["id"]] = posted
            else:
                refused += 1
            next_push += 0.2
        for push, posted in list(outstanding.items()):
            _, status = call("GET", f"/v1/pushes/{push}", codes_key)
            if status["state"] == "completed":
                latencies.append(time.monotonic() - posted)
                del outstanding[push]
        if time.monotonic() - start > phase_seconds + 120:
            print(f"  {name}: {len(outstanding)} pushes still not completed 120 s after the phase; left out")
            break
        time.sleep(0.01)
    latencies.sort()
    def pct(p):
        return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] * 1000 if latencies else float("nan")
    result = {"pushes": sent, "refused": refused, "completed": len(latencies), "seconds": round(sent / 5, 1),
              "p50_ms": round(pct(50), 1), "p90_ms": round(pct(90), 1), "p99_ms": round(pct(99), 1),
              "max_ms": round(latencies[-1] * 1000, 1) if latencies else None}
    print(f"  {name:<12} {result['completed']:>4} of {sent} completed ({result['seconds']} s): p50 {result['p50_ms']} ms, "
          f"p90 {result['p90_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms")
    return result

results = {}
print(f"phase 1: quiet ({phase_seconds:.0f} s of one-device pushes at 5/s)")
results["quiet"] = phase("quiet")

throttled = broadcast({"throttle": {"per_second": 2000}})
first = broadcast()
time.sleep(2)
print(f"phase 2: a throttled broadcast at 2,000/s and an unthrottled one to {devices:,} devices running")
results["campaigns"] = phase("campaigns", while_running=first)
state, done = progress(first)
results["campaigns"]["unthrottled_done_at_end"] = done
print(f"  the unthrottled broadcast at the phase's end: {state}, {done:,} of {devices:,} done")

second = broadcast()
time.sleep(2)
print("phase 3: the same campaigns (a fresh unthrottled broadcast); the one-device pushes sent as campaigns")
results["as_campaign"] = phase("as campaign", "campaign", while_running=second)
state, done = progress(second)
results["as_campaign"]["unthrottled_done_at_end"] = done
print(f"  the unthrottled broadcast at the phase's end: {state}, {done:,} of {devices:,} done")
call("DELETE", f"/v1/pushes/{throttled}", campaigns_key)

quiet = results["quiet"]["p99_ms"]
results["ratio_p99_campaigns_to_quiet"] = round(results["campaigns"]["p99_ms"] / quiet, 2)
results["ratio_p99_as_campaign_to_quiet"] = round(results["as_campaign"]["p99_ms"] / quiet, 2)
print(f"p99 with campaigns running / quiet p99: {results['ratio_p99_campaigns_to_quiet']} (transactional), "
      f"{results['ratio_p99_as_campaign_to_quiet']} (the same pushes sent as campaigns)")
results["devices"] = devices
print(json.dumps(results))
PY
