#!/usr/bin/env bash
# The soak benchmark (`make bench-soak`, not part of `make test`): the `herald dev` stack under a
# steady mix of pushes for SOAK_MINUTES (30 by default) — single-device pushes by alias, tag pushes
# and, every minute, a broadcast to every device — with the retention running at short intervals.
# Prints, at the start and at the end, every process's resident memory and the rows and bytes of
# every table that grows with traffic, so a reader sees what stays bounded and what grows within
# its retention window. The last line is JSON.
#
#   Benchmarks/Soak/run.sh BIN_DIR [MINUTES] [DEVICES]
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
minutes=${2:-${SOAK_MINUTES:-30}}
devices=${3:-10000}
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/bench-soak
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-warning}
# Retention at soak speed: the outbox keeps a minute, and the sweeps run every minute. Pushes are
# kept their default 90 days, so their tables grow for the whole soak, as they would in a
# deployment's first 90 days.
export HERALD_CENTER_OUTBOX_RETENTION_MS=60000
export HERALD_CENTER_RETENTION_INTERVAL_MS=60000

"$herald" dev down >/dev/null 2>&1 || true
"$herald" dev up --senders 2 --api-port 0 --apns-sim-record counts --bin-dir "$bin" >/dev/null
trap '"$herald" dev down >/dev/null' EXIT
eval "$("$herald" dev env)"
echo "stack up in $HERALD_DEV_DIR; soaking $minutes min with $devices devices"

"$herald" app create --name "soak" --bundle-id com.example.soak --save >/dev/null
"$herald" app credentials --dev-stack-key >/dev/null
"$herald" dev devices --count "$devices" --unregistered-percent 1 --bad-percent 1 --out "$HERALD_DEV_DIR/devices.ndjson"
"$herald" devices import "$HERALD_DEV_DIR/devices.ndjson" >/dev/null
"$herald" dev devices --register "$HERALD_DEV_DIR/devices.ndjson" --topic com.example.soak >/dev/null

# Resident memory of each process (PostgreSQL: all its server processes) and the traffic tables.
snapshot() {
  python3 - "$HERALD_DEV_DIR/stack.json" <<'PY'
import json, os, subprocess, sys
stack = json.load(open(sys.argv[1]))
def rss(pid):
    try:
        return next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")) / 1024
    except (OSError, StopIteration):
        return 0.0
# Proportional set size: memory shared by several processes (PostgreSQL's shared buffers, which
# every backend maps) counts once in the sum, where RSS counts it in every backend.
def pss(pid):
    try:
        return next(int(l.split()[1]) for l in open(f"/proc/{pid}/smaps_rollup") if l.startswith("Pss:")) / 1024
    except (OSError, StopIteration):
        return 0.0
out = {"rss_mib": {p["name"]: round(rss(p["pid"]), 1) for p in stack["processes"]},
       "pss_mib": {p["name"]: round(pss(p["pid"]), 1) for p in stack["processes"]}}
data = stack["postgres"]["dataDirectory"]
postmaster = int(open(os.path.join(data, "postmaster.pid")).readline())
pids = [postmaster] + [int(d) for d in os.listdir("/proc") if d.isdigit()
        and open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1] == str(postmaster)]
out["rss_mib"]["postgres"] = round(sum(rss(pid) for pid in pids), 1)
out["pss_mib"]["postgres"] = round(sum(pss(pid) for pid in pids), 1)
postgres = stack["postgres"]
tables = ["pushes", "push_counters", "push_batches", "failed_deliveries", "outbox", "audit_events",
          "push_statistics_daily", "devices", "device_tags"]
query = " UNION ALL ".join(f"SELECT '{t}', count(*), pg_total_relation_size('{t}') FROM {t}" for t in tables)
rows = subprocess.run([os.path.join(postgres["binDirectory"], "psql"), "-h", "127.0.0.1", "-p", str(postgres["port"]), "-U", postgres["user"],
                       "-d", postgres["database"], "-Atc", query], capture_output=True, text=True,
                      env={**os.environ, "PGPASSWORD": postgres["password"]}, check=True).stdout.split()
out["tables"] = {}
for row in rows:
    name, count, size = row.split("|")
    out["tables"][name] = {"rows": int(count), "mib": round(int(size) / 1048576, 2)}
print(json.dumps(out))
PY
}

start=$(snapshot)
echo "start: $start"
python3 - "$HERALD_API_URL" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api_key"])' "$HERALD_CLI_CONFIG")" "$minutes" "$devices" <<'PY' &
import http.client, json, random, sys, time, urllib.parse
url, key, minutes = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], float(sys.argv[3])
aliases = max(1, int(sys.argv[4]) // 10)  # `herald dev devices` gives every tenth device the alias user-<index>
connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
def push(audience, body):
    connection.request("POST", "/v1/pushes", json.dumps({"audience": audience,
                       "notification": {"alert": {"title": "Soak", "body": body}}}), headers)
    response = connection.getresponse(); response.read()
    return response.status
end = time.time() + minutes * 60
sent, refused, last_broadcast, last_report = 0, 0, 0.0, time.time()
while time.time() < end:
    now = time.time()
    if now - last_broadcast >= 60:
        status = push({"all": True}, "everyone"); last_broadcast = now
    else:
        status = push({"aliases": [f"user-{random.randrange(aliases) * 10}"]} if random.random() < 0.8
                      else {"tags": {"any": ["news"]}}, "one")
    sent += 1; refused += status != 202
    time.sleep(0.05)
    if now - last_report >= 60:
        print(f"  {int((end - now) / 60)} min left: {sent} pushes sent, {refused} refused", flush=True)
        last_report = now
print(f"  {sent} pushes sent, {refused} refused")
PY
pusher=$!
# Every 5 minutes, each process's PSS: the slope, not only the two ends.
elapsed=0
while kill -0 "$pusher" 2>/dev/null; do
  sleep 10; elapsed=$((elapsed + 10))
  if [ $((elapsed % 300)) -eq 0 ] && kill -0 "$pusher" 2>/dev/null; then
    snapshot | python3 -c 'import json, sys; print("  at '"$((elapsed / 60))"' min, PSS MiB: " + ", ".join(f"{k} {v}" for k, v in json.load(sys.stdin)["pss_mib"].items()))'
  fi
done
wait "$pusher"
sleep 30  # the last pushes finish
end=$(snapshot)
echo "end: $end"
python3 - "$start" "$end" <<'PY'
import json, sys
start, end = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"{'process':<16}{'RSS start MiB':>15}{'RSS end MiB':>13}{'PSS start MiB':>15}{'PSS end MiB':>13}")
for name in start["rss_mib"]:
    print(f"{name:<16}{start['rss_mib'][name]:>15}{end['rss_mib'].get(name, 0):>13}"
          f"{start['pss_mib'].get(name, 0):>15}{end['pss_mib'].get(name, 0):>13}")
print(f"{'table':<24}{'rows start':>12}{'rows end':>12}{'MiB start':>11}{'MiB end':>9}")
for name in start["tables"]:
    a, b = start["tables"][name], end["tables"][name]
    print(f"{name:<24}{a['rows']:>12}{b['rows']:>12}{a['mib']:>11}{b['mib']:>9}")
print(json.dumps({"start": start, "end": end}))
PY
