#!/usr/bin/env bash
# herald-gateway's conformance suite (Tests/ExternalClients/test_gateway_conformance.py): a Python
# client written from docs/gateway.md talks to live gateways, framed over TLS and over WebSocket.
# Usage: scripts/with-infrastructure.sh BUILD_DIR scripts/test-gateway.sh BUILD_DIR
# (PostgreSQL from with-infrastructure.sh; herald-api started here makes the apps and devices; the
# suite starts its own herald-gateway processes from BUILD_DIR.)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: $0 BUILD_DIR}
source scripts/api-test-server.sh
client_venv=.local/venv
scripts/python-venv.sh "$client_venv" Tests/ExternalClients/requirements.txt "protobuf, grpcio-tools, cryptography, websockets"
start_api "$build_dir"
cd Tests/ExternalClients
HERALD_BIN_DIR="../../$build_dir" HERALD_API_BASE="$base" HERALD_TEST_ADMIN_TOKEN="$admin" \
  HERALD_LOG_LEVEL="${HERALD_LOG_LEVEL:-notice}" \
  "../../$client_venv/bin/python" -m unittest -v test_gateway_conformance
