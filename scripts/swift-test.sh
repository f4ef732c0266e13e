#!/usr/bin/env bash
# `swift test` with its whole output kept in .local/swift-tests.log and, when it fails, a digest
# printed last: the failing expectations, the tests that had started and not finished, and the
# crashed thread's frames. CI shows only the end of a failed step's output, and a crash report
# ends in registers and a list of images, which name no test.
#
# usage: [SWIFT=swift] scripts/swift-test.sh [swift test arguments...]
#        (run under scripts/with-infrastructure.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .local
log=.local/swift-tests.log
read -r -a swift_command <<<"${SWIFT:-swift}"

# A crash report with the crashed thread only, demangled, no prompts: shorter and readable.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=yes,interactive=no,color=no,threads=crashed,registers=none,images=none}"

# Ends every process this script started (the run, its tests, tee).
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill -KILL "$1" 2>/dev/null
}
stop_run() {
  local child
  for child in $(pgrep -P $$); do kill_tree "$child"; done
}
trap 'stop_run; exit 130' INT
trap 'stop_run; exit 143' TERM

# A run that goes quiet this long has hung: the longest test takes about two minutes on a busy
# 2-core machine, and Swift Testing prints each test's start and end while the tests here log as
# they go. Its test process is killed and the digest says which tests were still running, instead
# of CI's 90 minutes running out.
quiet_limit=${HERALD_TEST_QUIET_LIMIT_S:-600}
rm -f .local/swift-tests.status
# Standard output line-buffered, so the log is current when the watchdog reads it (swift test
# buffers its child's output when writing to a pipe).
(
  stdbuf -oL "${swift_command[@]}" test "$@" 2>&1
  echo $? >.local/swift-tests.status
) | tee "$log" &
run=$!
last_size=-1
quiet=0
hung=0
while kill -0 "$run" 2>/dev/null; do
  sleep 5
  size=$(stat -c %s "$log" 2>/dev/null || echo 0)
  if [ "$size" != "$last_size" ]; then
    last_size=$size
    quiet=0
  else
    quiet=$((quiet + 5))
  fi
  if [ "$quiet" -ge "$quiet_limit" ]; then
    hung=1
    echo "== no output for $quiet_limit s: the test process is taken as hung and killed" | tee -a "$log"
    stop_run
    break
  fi
done
wait "$run"
status=$(cat .local/swift-tests.status 2>/dev/null || echo 1)
[ "$hung" -eq 1 ] && status=124
[ "$status" -eq 0 ] && exit 0

python3 - "$log" <<'PYTHON'
import re, sys

lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
print("\n== swift test failed: digest of", sys.argv[1], "==")

# Swift Testing runs suites in parallel: what was running when it stopped is what started and
# never passed, failed or was skipped (✔ passed, ✘ failed, ➜ skipped, ━ passed with known issues;
# "✘ … recorded an issue" is not an end).
running = {}
name = r'(Test|Suite) ("(?:[^"\\]|\\.)*"|\S+)'
for line in lines:
    started = re.search("◇ " + name + r" started\.", line)
    if started and started.group(2) != "run":
        running[started.group(1) + " " + started.group(2)] = True
        continue
    ended = re.search("[✔✘➜━] " + name + r" .*\b(passed|failed|skipped)\b", line)
    if ended and "recorded an issue" not in line:
        running.pop(ended.group(1) + " " + ended.group(2), None)
xctest_open = None
for line in lines:
    m = re.search(r"Test Case '(.+?)' (started|passed|failed|skipped)", line)
    if m:
        xctest_open = m.group(1) if m.group(2) == "started" else None

# A runtime trap prints "File.swift:12: Fatal error: …" before the crash report.
failures = [
    l for l in lines
    if re.match(r"\s*(✘ Test |error: |.*: error: |.*XCTAssert)", l)
    or re.search(r"\b(Fatal error|Precondition failed|Assertion failed)\b", l)
]
if failures:
    print("-- failures (first 25):")
    for l in failures[:25]:
        print("  " + l[:400])
open_tests = [n for n in running if n.startswith("Test ")] + ([f"Test {xctest_open}"] if xctest_open else [])
open_suites = [n for n in running if n.startswith("Suite ")]
if open_tests or open_suites:
    print(f"-- started and never finished: {len(open_tests)} tests, {len(open_suites)} suites")
    for n in (open_tests + open_suites)[:40]:
        print("  " + n)

crash = next((i for i, l in enumerate(lines) if "💣" in l or "Program crashed" in l), None)
if crash is not None:
    print("-- crash report (up to 60 lines):")
    for l in lines[crash:crash + 60]:
        if l.startswith("Registers:") or l.startswith("Images"):
            break
        print("  " + l[:300])
PYTHON
exit "$status"
