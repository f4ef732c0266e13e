#!/usr/bin/env bash
# Formats Herald's Swift code with `swift format` (it ships with the toolchain) and the
# repository's .swift-format, or checks it.
#   scripts/format.sh          rewrite every file that is not formatted
#   scripts/format.sh --check  list what is not formatted and fail (make test runs this)
# Generated code (Open API, protobuf) is left as its generator wrote it.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(find Sources Tests Benchmarks Clients -name '*.swift' \
    -not -path '*/Generated/*' -not -path '*/.build/*' | sort; echo Package.swift; echo Clients/HeraldKit/Package.swift)
if [[ "${1:-}" == "--check" ]]; then
    if ! output=$(swift format lint --strict --configuration .swift-format --parallel "${files[@]}" 2>&1); then
        echo "$output" | head -40 >&2
        echo "format: $(echo "$output" | grep -c 'warning\|error') problems; run scripts/format.sh and commit" >&2
        exit 1
    fi
    echo "format: ${#files[@]} files formatted as .swift-format says"
else
    swift format format --configuration .swift-format --parallel --in-place "${files[@]}"
fi
