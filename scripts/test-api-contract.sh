#!/usr/bin/env bash
# Fuzzes a live herald-api against its contract, Schemas/openapi.yaml, with schemathesis (from
# PyPI, in a virtualenv under .local/venv-contract): no answer may be a server error or break the
# contract (status codes, content types, headers, bodies). Besides single requests, the stateful
# phase follows the contract's links: what one operation creates, the next one reads, changes or
# deletes.
#   scripts/test-api-contract.sh BUILD_DIR     (BUILD_DIR holds herald-api; PostgreSQL must be up,
#                                               as scripts/with-infrastructure.sh leaves it)
# Two runs: one with the admin token (apps, keys, credentials are reached), one with a server key
# of a fresh app (devices, pushes, statistics are reached).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: $0 BUILD_DIR}
examples=${HERALD_CONTRACT_EXAMPLES:-30}
source scripts/api-test-server.sh
prepare_venv
start_api "$build_dir"

app=$(curl -sf -X POST "$base/v1/apps" -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
  -d '{"name":"contract","bundle_id":"com.herald.contract"}')
key=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["server_key"]["key"])' "$app")

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance
status=0
output=$(mktemp)
# (replaces start_api's trap: herald-api is stopped here too, or it would outlive the script)
trap 'rm -f "$output"; stop_api' EXIT
fuzz() {
  "$venv/bin/python" Tests/Contract/schemathesis_launcher.py run Schemas/openapi.yaml --url "$base" -H "Authorization: Bearer $1" \
    --checks "$checks" --phases examples,coverage,fuzzing,stateful --max-examples "$examples" --workers 2 \
    --exclude-operation-id streamPushEvents --request-timeout 10 --output-truncate true --warnings off \
    --seed "$2" 2>&1 | tee "$output"
  return "${PIPESTATUS[0]}"
}
for token in "$admin" "$key"; do
  if ! fuzz "$token" 1; then
    # schemathesis itself can crash while drawing a value, reported as a Runtime Error with every
    # test case passed. The one crash seen (CPython's "AST constructor recursion depth mismatch"
    # inside Hypothesis, with seed 1 and then seed 2) is worked around in
    # Tests/Contract/schemathesis_launcher.py; any other is the tool's failure, not Herald's: such
    # a pass runs once more, with another seed. Any failed check, or a second crash, fails the
    # test.
    if grep -q "Runtime Error" "$output" && ! grep -q "FAILURES" "$output"; then
      echo "schemathesis crashed (a Runtime Error, no failed check); running this pass once more, seed 2" >&2
      fuzz "$token" 2 || status=1
    else
      status=1
    fi
  fi
done
if grep -q "operation failed" "$api_log"; then
  echo "herald-api logged failures:" >&2; grep "failed" "$api_log" >&2; status=1
fi
exit $status
