#!/usr/bin/env bash
# The abuse suite (docs/security.md): the authorization matrix — every operation of
# Schemas/openapi.yaml called by every kind of caller against a live herald-api and compared with
# Tests/Security/authorization-matrix.tsv — and the hostile APNs server against the sender's APNs
# client (HostileServerTests, run here alone: its floods would slow the timing of other tests).
#   scripts/test-abuse.sh BUILD_DIR    (PostgreSQL must be up, as scripts/with-infrastructure.sh leaves it)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: $0 BUILD_DIR}
source scripts/api-test-server.sh
prepare_venv
# Wrong keys are part of the matrix: the failed-authentication throttle would answer them 429.
start_api "$build_dir" HERALD_API_AUTH_FAILURES_PER_MINUTE=0
status=0
"$venv/bin/python" Tests/Security/test_authorization_matrix.py "$base" "$admin" || status=1
if grep -q "operation failed" "$api_log"; then
  echo "herald-api logged failures:" >&2; grep "failed" "$api_log" >&2; status=1
fi
swift test --skip-build --filter HostileServerTests || status=1
exit $status
