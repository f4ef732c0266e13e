#!/usr/bin/env bash
# Generates Herald's Open API server types from the contract, Schemas/openapi.yaml, with
# swift-openapi-generator (built from Tools/openapi-generator, apart from Herald's package).
#   scripts/generate-openapi.sh          rewrite Sources/HeraldAPI/Generated
#   scripts/generate-openapi.sh --check  fail if the committed code is not what the contract makes
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --package-path Tools/openapi-generator --product swift-openapi-generator >/dev/null
generator=Tools/openapi-generator/.build/release/swift-openapi-generator
target=Sources/HeraldAPI/Generated
output=$target
if [[ "${1:-}" == "--check" ]]; then
    output=$(mktemp -d)
    trap 'rm -rf "$output"' EXIT
fi
log=$(mktemp)
if ! "$generator" generate Schemas/openapi.yaml --config "$target/openapi-generator-config.yaml" \
    --output-directory "$output" >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"; exit 1
fi
rm -f "$log"
if [[ "${1:-}" == "--check" ]]; then
    for file in "$output"/*.swift "$target"/*.swift; do
        name=$(basename "$file")
        if ! cmp -s "$output/$name" "$target/$name"; then
            echo "$target/$name is not what Schemas/openapi.yaml makes: run scripts/generate-openapi.sh and commit" >&2
            exit 1
        fi
    done
    echo "generated Open API code matches Schemas/openapi.yaml"
fi
