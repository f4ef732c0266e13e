#!/usr/bin/env bash
# Generates Herald's Open API code from the contract, Schemas/openapi.yaml, with
# swift-openapi-generator (built from Tools/openapi-generator, apart from Herald's package):
#   Sources/HeraldAPIContract/Generated  the types (public), shared by the server and the CLI
#   Sources/HeraldAPI/Generated          the server side herald-api implements
#   Sources/HeraldCLI/Generated             the client the herald CLI calls
# so that a change of the contract that the server or the CLI does not follow fails to compile.
#   scripts/generate-openapi.sh               rewrite the three Generated folders, and the stamp
#   scripts/generate-openapi.sh --check       fail if the committed code is not what the contract makes
#   scripts/generate-openapi.sh --check-full  the same, always by generating it again
#
# The stamp, Schemas/openapi.generated.sha256, holds the SHA-256 of every input (the contract,
# the three configurations, the generator's package and its resolved versions) and of every
# generated file, as this script last wrote them. --check compares it first: when nothing was
# changed since, it is done in a second, without building the generator (three minutes of a clean
# clone's CI on two cores); an edit of the contract, a configuration, the generator's version or a
# generated file by hand changes a sum, and the code is generated again and compared.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(Sources/HeraldAPIContract/Generated Sources/HeraldAPI/Generated Sources/HeraldCLI/Generated)
stamp=Schemas/openapi.generated.sha256
mode=write
case "${1:-}" in
    --check) mode=check ;;
    --check-full) mode=full ;;
    "") ;;
    *) echo "usage: scripts/generate-openapi.sh [--check | --check-full]" >&2; exit 2 ;;
esac

sums() {
    local files=(Schemas/openapi.yaml Tools/openapi-generator/Package.swift Tools/openapi-generator/Package.resolved)
    for target in "${targets[@]}"; do files+=("$target"/openapi-generator-config.yaml "$target"/*.swift); done
    sha256sum "${files[@]}"
}

if [[ $mode == check && -f $stamp ]] && sums 2>/dev/null | cmp -s - "$stamp"; then
    echo "generated Open API code matches Schemas/openapi.yaml (nothing changed since it was generated: $stamp)"
    exit 0
fi

swift build -c release --package-path Tools/openapi-generator --product swift-openapi-generator >/dev/null
generator=Tools/openapi-generator/.build/release/swift-openapi-generator
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in "${targets[@]}"; do
    output=$target
    if [[ $mode != write ]]; then
        output="$scratch/$(echo "$target" | tr / _)"
        mkdir -p "$output"
    fi
    if ! "$generator" generate Schemas/openapi.yaml --config "$target/openapi-generator-config.yaml" \
        --output-directory "$output" >"$scratch/log" 2>&1; then
        cat "$scratch/log" >&2
        exit 1
    fi
    if [[ $mode != write ]]; then
        for file in "$output"/*.swift "$target"/*.swift; do
            name=$(basename "$file")
            if ! cmp -s "$output/$name" "$target/$name"; then
                echo "$target/$name is not what Schemas/openapi.yaml makes: run scripts/generate-openapi.sh and commit" >&2
                exit 1
            fi
        done
    fi
done
if [[ $mode == write ]]; then
    sums >"$stamp"
    echo "generated; $stamp written"
elif ! sums | cmp -s - "$stamp"; then
    echo "the generated code matches Schemas/openapi.yaml, but $stamp is stale: run scripts/generate-openapi.sh and commit" >&2
    exit 1
else
    echo "generated Open API code matches Schemas/openapi.yaml (generated again and compared)"
fi
