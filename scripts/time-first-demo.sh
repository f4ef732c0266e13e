#!/usr/bin/env bash
# Time to a first demo, as a newcomer meets it: clones this repository's HEAD into a new folder,
# runs `make demo` there (and, with --test, `make test` after it), and prints where the time went:
# the install, the release build (when each product was linked), its compile time by kind (C and
# C++, Swift, linking) and by module, and the demo's own run.
#
#   scripts/time-first-demo.sh [--test] [FOLDER]     # FOLDER defaults to a new one under /tmp
#   scripts/time-first-demo.sh --report LOG          # the figures of an earlier run's stamped log
#
# Each line of the commands' output is stamped with the seconds since the start, in
# FOLDER/.local/first-demo.log (and first-test.log). SwiftPM prints a job's line as the job
# finishes, so the time since the line before is credited to it; with two jobs at once on two
# cores the split by kind and module is an estimate, the totals are wall-clock. The Swift packages
# come from the machine's package cache and the system packages may already be installed: a
# newcomer's first download is not in these figures.
set -euo pipefail
repository=$(cd "$(dirname "$0")/.." && pwd)
# Prints the figures of a stamped `make demo` log.
report() {
  python3 - "$1" <<'PY'
import collections, re, sys

lines = [line.rstrip("\n") for line in open(sys.argv[1]) if re.match(r"\s*[\d.]+ ", line)]
stamp = lambda line: float(line.split(None, 1)[0])
# The Makefile echoes the release build's command line; SwiftPM ends it with "Build complete!".
build_start = next((stamp(l) for l in lines if "swift build" in l and "-c release" in l), 0.0)
build_end = next((stamp(l) for l in lines if "Build complete!" in l), build_start)
links = {}
for l in lines:
    if (m := re.search(r"\] Linking (\S+)", l)):
        links.setdefault(m.group(1), stamp(l))
total = stamp(lines[-1]) if lines else 0.0

kinds, modules = collections.Counter(), collections.Counter()
previous_at = build_start
for line in lines:
    m = re.match(r"\s*([\d.]+) \[\d+/\d+\] (.*)", line)
    if not m:
        continue
    at, job = float(m.group(1)), m.group(2)
    if re.search(r"\.(c|cc|cpp|S)$", job):
        kind, module = "C and C++", "C and C++ sources (BoringSSL ×2 and other C libraries)"
    elif job.startswith(("Compiling", "Emitting module")):
        kind, module = "Swift", job.split()[2 if job.startswith("Emitting") else 1]
    elif job.startswith("Linking"):
        kind, module = "linking", "linking " + job.split()[1]
    else:
        kind, module = "other", "other"
    # SwiftPM prints a job's line when it finishes: the time since the line before is this job's.
    kinds[kind] += at - previous_at
    modules[module] += at - previous_at
    previous_at = at

print(f"make demo from a new clone: {total / 60:.1f} min in all")
print(f"  before the build (the install): {build_start:.0f} s")
print(f"  release build (every product): {build_end - build_start:.0f} s")
for name, at in links.items():
    print(f"    {name:<24} linked at {at - build_start:>5.0f} s")
print(f"  the demo itself (stack, import, two pushes, verify, stop): {total - build_end:.0f} s")
print("  the build's time by kind of job (estimated from its progress lines):")
for kind, seconds in kinds.most_common():
    print(f"    {kind:<12} {seconds:>6.0f} s")
print("  the modules that took longest (estimated):")
for module, seconds in modules.most_common(15):
    print(f"    {module:<40} {seconds:>6.0f} s")
PY
}

if [ "${1:-}" = --report ]; then
  report "${2:?usage: scripts/time-first-demo.sh --report LOG}"
  exit 0
fi
with_test=0
if [ "${1:-}" = --test ]; then
  with_test=1
  shift
fi
folder=${1:-$(mktemp -d /tmp/herald-first-demo.XXXXXX)}
if [ -e "$folder/.git" ]; then
  echo "$folder already holds a clone: name a new folder" >&2
  exit 2
fi

git clone -q "$repository" "$folder"
cd "$folder"
mkdir -p .local

stamp() {
  python3 -u -c '
import sys, time
start = time.monotonic()
for line in sys.stdin:
    sys.stdout.write(f"{time.monotonic() - start:8.1f} {line}")'
}

run() {
  local name=$1
  shift
  local began
  began=$(date +%s)
  set +e
  "$@" 2>&1 | stamp >".local/$name.log"
  local status=${PIPESTATUS[0]}
  set -e
  echo "== $* : exit $status in $(($(date +%s) - began)) s (log: $folder/.local/$name.log)"
  return "$status"
}

echo "make demo in $folder; its stamped output: $folder/.local/first-demo.log"
run first-demo make demo || { tail -20 .local/first-demo.log; exit 1; }
report .local/first-demo.log

# make test after the demo reuses the demo's release build: not a fresh clone's figure for it.
if [ "$with_test" = 1 ]; then
  : >.local/step-times.txt
  status=0
  run first-test make test || status=$?
  echo "make test's steps after the demo (.local/step-times.txt):"
  cat .local/step-times.txt
  exit "$status"
fi
