#!/usr/bin/env bash
# Runs one step of `make test` or `make check-image` and notes how long it took:
#   scripts/step.sh LABEL COMMAND [ARGS...]
# appends "LABEL  SECONDS  ok|failed" to .local/step-times.txt; exits with the command's status.
# .ci/run empties that file first and prints it at the end, so a CI log says where the time went.
set -uo pipefail
cd "$(dirname "$0")/.."
label=$1
shift
mkdir -p .local
start=$(date +%s)
"$@"
status=$?
outcome=ok
[ $status -eq 0 ] || outcome=failed
printf '%-24s %6d s  %s\n' "$label" $(($(date +%s) - start)) "$outcome" >>.local/step-times.txt
exit $status
