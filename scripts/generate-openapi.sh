#!/usr/bin/env bash
# Generates Herald's Open API code from the contract, Schemas/openapi.yaml, with
# swift-openapi-generator (built from Tools/openapi-generator, apart from Herald's package):
#   Sources/HeraldAPIContract/Generated  the types (public), shared by the server and the CLI
#   Sources/HeraldAPI/Generated          the server side herald-api implements
#   Sources/HeraldCLI/Generated             the client the herald CLI calls
# so that a change of the contract that the server or the CLI does not follow fails to compile.
#   scripts/generate-openapi.sh          rewrite the three Generated folders
#   scripts/generate-openapi.sh --check  fail if the committed code is not what the contract makes
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --package-path Tools/openapi-generator --product swift-openapi-generator >/dev/null
generator=Tools/openapi-generator/.build/release/swift-openapi-generator
check=0
[[ "${1:-}" == "--check" ]] && check=1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in Sources/HeraldAPIContract/Generated Sources/HeraldAPI/Generated Sources/HeraldCLI/Generated; do
    output=$target
    if [[ $check == 1 ]]; then
        output="$scratch/$(echo "$target" | tr / _)"
        mkdir -p "$output"
    fi
    if ! "$generator" generate Schemas/openapi.yaml --config "$target/openapi-generator-config.yaml" \
        --output-directory "$output" >"$scratch/log" 2>&1; then
        cat "$scratch/log" >&2
        exit 1
    fi
    if [[ $check == 1 ]]; then
        for file in "$output"/*.swift "$target"/*.swift; do
            name=$(basename "$file")
            if ! cmp -s "$output/$name" "$target/$name"; then
                echo "$target/$name is not what Schemas/openapi.yaml makes: run scripts/generate-openapi.sh and commit" >&2
                exit 1
            fi
        done
    fi
done
if [[ $check == 1 ]]; then echo "generated Open API code matches Schemas/openapi.yaml"; fi
