#!/usr/bin/env bash
# Runs apns-sim's conformance tests with clients that are not Herald's own (curl, Python's h2,
# httpx), and checks the gateway's frames as Python's protobuf reads them.
# Usage: scripts/test-external-clients.sh BUILD_DIR   (BUILD_DIR holds apns-sim)
# The Python packages live in a virtualenv under .local/venv, made on first use from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: $0 BUILD_DIR}
venv=.local/venv
requirements=Tests/ExternalClients/requirements.txt

scripts/python-venv.sh "$venv" "$requirements" "h2, httpx, cryptography, protobuf, grpcio-tools"
command -v curl >/dev/null || { echo "curl is missing: run scripts/install-dependencies.sh" >&2; exit 1; }

HERALD_BIN_DIR="$build_dir" "$venv/bin/python" -m unittest -v Tests/ExternalClients/test_apns_sim.py Tests/ExternalClients/test_gateway_frames.py
