#!/usr/bin/env bash
# The sender at APNs' real round trip (`make bench-sender-latency`): sender-throughput
# (Benchmarks/SenderThroughput) once per latency of apns-sim's latency fault — fixed 0, 20, 50 and
# 100 ms, uniform 20–80 ms, exponential with a mean of 50 ms — each on a fresh PostgreSQL and
# development broker, each against h2load with the sender's own connections and streams (so the
# reference is what those connections can carry at that latency), then one table: the sender's
# rate, its ratio to h2load, the bound in-flight ÷ latency, and CPU per notification against the
# zero-latency run's and against h2load's per request at the same latency.
#
#   Benchmarks/SenderLatency/run.sh BIN_DIR [BATCHES] [LATENCY...]
#
# LATENCY: some of fixed-0 fixed-20 fixed-50 fixed-100 uniform-20-80 exponential-50 (default all;
# CPU is compared with fixed-0's, so keep it in the list).
# BATCHES of 500 notifications (default 1,000: 500,000 notifications a run). The sender runs with
# its defaults unless HERALD_SENDER_* settings are exported; h2load gets the same connection count
# (HERALD_SENDER_CONNECTIONS, default 2) and the streams one connection may carry (apns-sim's
# 1,000, or fewer when HERALD_SENDER_MAX_IN_FLIGHT spread over the connections is less).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${1:-.build/release}
batches=${2:-1000}
shift $(( $# < 2 ? $# : 2 ))
labels=("$@")
[ ${#labels[@]} -gt 0 ] || labels=(fixed-0 fixed-20 fixed-50 fixed-100 uniform-20-80 exponential-50)
connections=${HERALD_SENDER_CONNECTIONS:-2}
in_flight=${HERALD_SENDER_MAX_IN_FLIGHT:-2000}
streams=$(( in_flight / connections < 1000 ? in_flight / connections : 1000 ))
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
export HERALD_LOG_LEVEL=warning

run() {  # label, faults JSON, mean latency in ms
  local label=$1 faults=$2 mean=$3 requests
  # h2load's requests: about as many seconds of work as the sender's run at the bound.
  requests=$(( mean == 0 ? 200000 : (in_flight * 1000 / mean) * 5 ))
  [ "$requests" -le 200000 ] || requests=200000
  echo "── $label: apns-sim faults $faults; h2load $connections connections × $streams streams, $requests requests"
  scripts/with-infrastructure.sh "$bin" "$bin/sender-throughput" --batches "$batches" --faults "$faults" \
    --h2load-connections "$connections" --h2load-streams "$streams" --h2load-requests "$requests" \
    --sim-port $((23000 + RANDOM % 2000)) | tee "$results/$label.log"
  grep '^{"batches"' "$results/$label.log" | tail -1 | python3 -c 'import json, sys; r = json.load(sys.stdin); r["label"] = sys.argv[1]; r["mean_ms"] = float(sys.argv[2]); print(json.dumps(r))' "$label" "$mean" >"$results/$label.json"
}

for label in "${labels[@]}"; do
  case $label in
    fixed-0) run fixed-0 '{}' 0 ;;
    fixed-20) run fixed-20 '{"latency":{"distribution":"fixed","milliseconds":20}}' 20 ;;
    fixed-50) run fixed-50 '{"latency":{"distribution":"fixed","milliseconds":50}}' 50 ;;
    fixed-100) run fixed-100 '{"latency":{"distribution":"fixed","milliseconds":100}}' 100 ;;
    uniform-20-80) run uniform-20-80 '{"latency":{"distribution":"uniform","milliseconds":20,"maxMilliseconds":80}}' 50 ;;
    exponential-50) run exponential-50 '{"latency":{"distribution":"exponential","milliseconds":50}}' 50 ;;
    *) echo "unknown latency $label" >&2; exit 2 ;;
  esac
done

python3 - "$results" "$in_flight" "$connections" "$streams" "${labels[@]}" <<'PY'
import json, os, sys
folder, in_flight, connections, streams = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rows = [json.load(open(os.path.join(folder, f"{label}.json"))) for label in sys.argv[5:]]
zero_cpu = next((r["senderCPUMicrosecondsPerNotification"] for r in rows if r["label"] == "fixed-0"), float("nan"))
batches_in_flight = int(os.environ.get("HERALD_SENDER_MAX_BATCHES_IN_FLIGHT", "32"))
print(f"\nherald-sender at APNs latency: {connections} connections, {in_flight} in flight, {batches_in_flight} batches in flight;"
      f" h2load {connections} × {streams} streams")
print(f"{'latency':>16}{'sender/s':>11}{'h2load/s':>11}{'ratio':>8}{'bound/s':>10}{'of bound':>10}{'CPU µs':>9}{'× 0 ms':>8}"
      f"{'h2load µs':>11}{'÷ h2load':>10}")
verdicts = []
for row in rows:
    bound = min(in_flight, connections * streams) * 1000 / row["mean_ms"] if row["mean_ms"] else float("inf")
    ratio = row["notificationsPerSecond"] / row["h2loadRequestsPerSecond"]
    cpu = row["senderCPUMicrosecondsPerNotification"] / zero_cpu
    verdicts.append(ratio >= 0.9 and cpu <= 1.2)
    print(f"{row['label']:>16}{row['notificationsPerSecond']:>11,}{row['h2loadRequestsPerSecond']:>11,}{ratio:>8.2f}"
          f"{bound:>10,.0f}{row['notificationsPerSecond'] / bound if bound != float('inf') else float('nan'):>10.2f}"
          f"{row['senderCPUMicrosecondsPerNotification']:>9.1f}{cpu:>8.2f}"
          f"{row['h2loadCPUMicrosecondsPerRequest']:>11.1f}{row['cpuRatioToH2load']:>10.2f}")
print(f"target (issue 46): ≥ 0.9 of h2load at every latency and CPU per notification within 1.2× the 0 ms run's: "
      f"{'met' if all(verdicts) else 'NOT met'}")
print(json.dumps({"benchmark": "sender-latency", "connections": connections, "inFlight": in_flight,
                  "batchesInFlight": batches_in_flight, "runs": rows}))
PY
