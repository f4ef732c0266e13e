#!/usr/bin/env bash
# `make bench-scale-10m`: is Herald linear to ten million devices on one machine? Runs the
# end-to-end benchmark (Benchmarks/EndToEnd/run.sh: devices imported through the API, then one
# broadcast through the whole `herald dev` stack to apns-sim) at 1,000,000 devices and then at
# LARGE (10,000,000), each on a fresh stack, and compares the two runs: import time per device,
# broadcast time per notification (target, issue 46: grows by at most 10 %), each process's peak
# RSS (target: Herald's processes within 10 % of the 1M run's; apns-sim keeps every device it
# knows in memory, as Apple's service would not, so it grows with the devices by design), and
# PostgreSQL's bytes per device. Peak RSS is each process's high-water mark over the whole run,
# the import included (the 10M run imports 2,000,000-line parts, the 1M run one file).
#
#   Benchmarks/Scale10M/run.sh BIN_DIR [LARGE]
#
# Each run then goes on at its size (E2E_AT_SCALE=1, Benchmarks/Scale10M/at-scale.py): the dry
# runs of everyone, a tag and a segment and the local-time plan, timed; a tag push and a segment
# push end to end; the console's pages, /v1/stats and a push's status at p99 (target ≤ 50 ms,
# Benchmarks/Console/pages.sh). A 10M run needs about 45 minutes and ~8 GB of disk here
# (docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(cd "${1:-.build/release}" && pwd)
large=${2:-10000000}
small=1000000
out=.local/bench-scale-10m
mkdir -p "$out"
export E2E_TABLE_SIZES=1 E2E_AT_SCALE=1
for devices in "$small" "$large"; do
  # SCALE_REUSE=1 keeps a run already in $out whose last line is its figures (a 10M run that
  # failed need not repeat the 1M one).
  if [ "${SCALE_REUSE:-0}" = 1 ] && tail -1 "$out/$devices.txt" 2>/dev/null | grep -q '"import_seconds": [0-9]'; then
    echo "== $devices devices: the run in $out/$devices.txt"
    continue
  fi
  echo "== $devices devices"
  Benchmarks/EndToEnd/run.sh "$bin" "$devices" | tee "$out/$devices.txt"
done

python3 - "$out/$small.txt" "$out/$large.txt" <<'PY'
import json, sys
runs = [json.loads(open(path).read().strip().splitlines()[-1]) for path in sys.argv[1:3]]
small, large = runs
def per(run, key):
    return run[key] / run["accepted"] * 1e6
print(f"{'':34}{small['devices']:>14,}{large['devices']:>14,}{'growth':>10}")
rows = [("import, µs per device", per(small, "import_seconds"), per(large, "import_seconds")),
        ("broadcast, µs per notification", per(small, "seconds"), per(large, "seconds"))]
for label, a, b in rows:
    print(f"{label:34}{a:>14.1f}{b:>14.1f}{(b / a - 1) * 100:>9.1f}%")
print(f"{'broadcast ratio to h2load':34}{small['ratio_to_h2load']:>14.2f}{large['ratio_to_h2load']:>14.2f}")
growth = per(large, "seconds") / per(small, "seconds") - 1
print(f"time per notification from {small['devices']:,} to {large['devices']:,}: {growth * 100:+.1f} % "
      f"(issue 46's target ≤ +10 %: {'met' if growth <= 0.10 else 'NOT met'})")
worst = 0.0
print(f"{'peak RSS MB (the import included)':34}{'':>14}{'':>14}")
for name in sorted(set(small["processes"]) | set(large["processes"])):
    a = small["processes"].get(name, {}).get("peak_rss_mb", 0.0)
    b = large["processes"].get(name, {}).get("peak_rss_mb", 0.0)
    ratio = b / a if a else float("nan")
    if name.startswith("herald-"):
        worst = max(worst, ratio)
    note = "" if name.startswith("herald-") else "  (not Herald's)"
    print(f"  {name:32}{a:>14.1f}{b:>14.1f}{(ratio - 1) * 100:>9.1f}%{note}")
print(f"largest growth of a Herald process's peak RSS: {(worst - 1) * 100:+.1f} % "
      f"(issue 46's target ≤ +10 %: {'met' if worst <= 1.10 else 'NOT met'})")
if small.get("postgres_bytes_per_device") and large.get("postgres_bytes_per_device"):
    print(f"PostgreSQL, bytes per device (relations over 8 MiB): {small['postgres_bytes_per_device']:.0f} and "
          f"{large['postgres_bytes_per_device']:.0f}")
for label, key in (("dry run", "validate"), ("push, µs per notification", "pushes")):
    for name in large.get("at-scale", {}).get(key, {}):
        a = small.get("at-scale", {}).get(key, {}).get(name, {})
        b = large["at-scale"][key][name]
        field = "seconds" if key == "validate" else "us_per_notification"
        if a.get(field):
            print(f"{label + ', ' + name:48}{a[field]:>10.2f}{b[field]:>10.2f}{(b[field] / a[field] - 1) * 100:>9.1f}%")
if "pages" in large:
    print(f"console pages, /v1/stats and a push's status at {large['devices']:,} devices: slowest p99 "
          f"{large['pages']['slowest_p99_ms']} ms (issue 46's target ≤ 50 ms: "
          f"{'met' if large['pages']['slowest_p99_ms'] <= 50 else 'NOT met'})")
print(json.dumps({"small": small, "large": large, "time_per_notification_growth": round(growth, 3),
                  "largest_rss_growth": round(worst - 1, 3)}))
PY
