#!/usr/bin/env bash
# The end-to-end benchmark (`make bench-e2e`): a 1,000,000-device broadcast on the `herald dev`
# stack (PostgreSQL, the development broker, apns-sim, herald-api, herald-center, two senders,
# all on this machine). Prints the time from the API's 202 to the last outcome accounted,
# notifications/s, and CPU seconds and peak RSS of every process; the last line is JSON.
# Target on a 2-core machine: the million delivered and accounted in ≤ 30 s.
#
#   Benchmarks/EndToEnd/run.sh BIN_DIR [DEVICES] [SENDERS]
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
devices=${2:-1000000}
senders=${3:-2}
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/bench-e2e
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-warning}

"$herald" dev down >/dev/null 2>&1 || true
"$herald" dev up --senders "$senders" --api-port 0 --apns-sim-record counts --bin-dir "$bin" >/dev/null
trap '"$herald" dev down >/dev/null' EXIT
eval "$("$herald" dev env)"
echo "stack up in $HERALD_DEV_DIR ($senders senders)"

"$herald" app create --name "e2e benchmark" --bundle-id com.example.bench --save >/dev/null
"$herald" app credentials --dev-stack-key >/dev/null
"$herald" dev devices --count "$devices" --unregistered-percent 0 --bad-percent 0 --out "$HERALD_DEV_DIR/devices.ndjson"
"$herald" devices import "$HERALD_DEV_DIR/devices.ndjson"
"$herald" dev devices --register "$HERALD_DEV_DIR/devices.ndjson" --topic com.example.bench

# CPU seconds and peak RSS of the stack's processes (PostgreSQL: all its server processes).
usage() {
  python3 - "$HERALD_DEV_DIR/stack.json" <<'PY'
import json, os, sys
stack = json.load(open(sys.argv[1]))
tick = os.sysconf("SC_CLK_TCK")
def cpu_rss(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / tick
        hwm = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM"))
        return cpu, hwm / 1024
    except (OSError, StopIteration):
        return 0.0, 0.0
out = {}
for p in stack["processes"]:
    out[p["name"]] = cpu_rss(p["pid"])
data = stack["postgres"]["dataDirectory"]
postmaster = int(open(os.path.join(data, "postmaster.pid")).readline())
pids = [postmaster] + [int(d) for d in os.listdir("/proc") if d.isdigit()
        and open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1] == str(postmaster)]
values = [cpu_rss(pid) for pid in pids]
out["postgres"] = (sum(v[0] for v in values), max(v[1] for v in values))
print(json.dumps(out))
PY
}
before=$(usage)

start=$(date +%s.%N)
push=$("$herald" push --all --title "Benchmark" --body "One million devices" --quiet)
accepted_at=$(date +%s.%N)
while true; do
  status=$("$herald" push status "$push" --json)
  state=$(echo "$status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [ "$state" = completed ] && break
  sleep 0.1
done
finished=$(date +%s.%N)
after=$(usage)

python3 - "$before" "$after" "$status" "$start" "$accepted_at" "$finished" "$devices" <<'PY'
import json, sys
before, after, status = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
start, accepted, finished, devices = float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
c = status["counters"]
seconds = finished - accepted
print(f"push {status['id']}: targeted {c['targeted']:,}, accepted {c['accepted']:,}, rejected {c['rejected']:,}, "
      f"expired {c['expired']:,}, canceled {c['canceled']:,}")
print(f"202 in {accepted - start:.2f} s; from the 202 to the last outcome accounted: {seconds:.1f} s "
      f"= {c['accepted'] / seconds:,.0f} notifications/s (target: {devices:,} in ≤ 30 s: {'met' if seconds <= 30 and c['accepted'] == devices else 'NOT met'})")
print(f"{'process':<16} {'CPU s (push)':>12} {'peak RSS MB':>12}")
rows = {}
for name in after:
    cpu = after[name][0] - before.get(name, [0, 0])[0]
    rows[name] = {"cpu_seconds": round(cpu, 2), "peak_rss_mb": round(after[name][1], 1)}
    print(f"{name:<16} {cpu:>12.2f} {after[name][1]:>12.1f}")
print(json.dumps({"devices": devices, "accepted": c["accepted"], "seconds": round(seconds, 2),
                  "per_second": round(c["accepted"] / seconds), "processes": rows}))
PY
