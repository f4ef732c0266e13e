#!/usr/bin/env bash
# HeraldKit's tests (Clients/HeraldKit, a package of its own, built in its own .build): the unit
# tests of its pure logic, then its integration tests against a real herald-api and herald-gateway
# — `herald dev up` from BUILD_DIR's binaries (PostgreSQL, the development broker, apns-sim,
# herald-api, herald-center, one sender, one gateway) — which register, rotate, bind signed
# aliases, receive and acknowledge pushes over the long connection, handle a recall (over the
# connection, and through APNs as apns-sim took it) and report engagement across an offline
# period (Tests/HeraldKitIntegrationTests).
# Usage: scripts/test-heraldkit.sh BUILD_DIR   (make test runs it with .build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
herald=$bin/herald
export HERALD_DEV_DIR=$(pwd)/.local/heraldkit-dev
export HERALD_LOG_LEVEL=${HERALD_LOG_LEVEL:-notice}

echo "heraldkit: building the package and its tests (Clients/HeraldKit/.build)"
swift build --package-path Clients/HeraldKit --build-tests --force-resolved-versions

"$herald" dev down >/dev/null 2>&1 || true
trap '"$herald" dev down >/dev/null 2>&1 || true' EXIT
"$herald" dev up --senders 1 --gateways 1 --api-port 0 --gateway-port 0 --bin-dir "$bin" >"$HERALD_DEV_DIR.up.log" 2>&1 ||
  { cat "$HERALD_DEV_DIR.up.log"; echo "heraldkit: the stack did not start" >&2; exit 1; }
eval "$("$herald" dev env)"

# HERALDKIT_REQUIRE_STACK: the integration tests fail, rather than skip, if the stack's addresses are missing.
HERALDKIT_REQUIRE_STACK=1 swift test --package-path Clients/HeraldKit --skip-build 2>&1 |
  grep -v '^◇ .* started\.$' | tee .local/heraldkit-tests.log
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "heraldkit: tests failed; the stack's logs are in $HERALD_DEV_DIR/logs" >&2
  tail -20 "$HERALD_DEV_DIR"/logs/herald-gateway*.log 2>/dev/null >&2 || true
fi
exit "$status"
