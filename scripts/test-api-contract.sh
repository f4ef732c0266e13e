#!/usr/bin/env bash
# Fuzzes a live herald-api against its contract, Schemas/openapi.yaml, with schemathesis (from
# PyPI, in a virtualenv under .local/venv-contract): no answer may be a server error or break the
# contract (status codes, content types, headers, bodies).
#   scripts/test-api-contract.sh BUILD_DIR     (BUILD_DIR holds herald-api; PostgreSQL must be up,
#                                               as scripts/with-infrastructure.sh leaves it)
# Two runs: one with the admin token (apps, keys, credentials are reached), one with a server key
# of a fresh app (devices, pushes, statistics are reached).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: $0 BUILD_DIR}
venv=.local/venv-contract
requirements=Tests/Contract/requirements.txt
examples=${HERALD_CONTRACT_EXAMPLES:-30}

if [ ! -x "$venv/bin/schemathesis" ] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
  echo "api contract: preparing $venv (schemathesis from PyPI)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
admin="contract-admin-$(head -c 32 /dev/urandom | base64 | tr -d "/+=")"
log=$(mktemp)
HERALD_ADMIN_TOKEN=$admin HERALD_MASTER_KEY=${HERALD_MASTER_KEY:?run it through scripts/with-infrastructure.sh} HERALD_API_PORT=$port \
  HERALD_API_RATE_LIMIT_PER_SECOND=100000 HERALD_API_RATE_LIMIT_BURST=100000 HERALD_LOG_LEVEL=warning \
  "$build_dir/herald-api" >"$log" 2>&1 &
api=$!
trap 'kill $api 2>/dev/null; wait $api 2>/dev/null; rm -f "$log"' EXIT
base=http://127.0.0.1:$port
for _ in $(seq 1 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "$base/healthz" >/dev/null || { echo "herald-api did not start:" >&2; cat "$log" >&2; exit 1; }

app=$(curl -sf -X POST "$base/v1/apps" -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
  -d '{"name":"contract","bundle_id":"com.herald.contract"}')
key=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["server_key"]["key"])' "$app")

checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance
status=0
for token in "$admin" "$key"; do
  "$venv/bin/schemathesis" run Schemas/openapi.yaml --url "$base" -H "Authorization: Bearer $token" \
    --checks "$checks" --phases examples,coverage,fuzzing --max-examples "$examples" --workers 2 \
    --exclude-operation-id streamPushEvents --request-timeout 10 --output-truncate true --warnings off \
    --seed 1 || status=1
done
if grep -q "operation failed" "$log"; then
  echo "herald-api logged failures:" >&2; grep "failed" "$log" >&2; status=1
fi
exit $status
