#!/usr/bin/env bash
# Regenerates Sources/HeraldRecords/Generated from Schemas/kafka/*.proto, and
# Clients/HeraldKit/Sources/HeraldGatewayProtocol/Generated (the SDK's package, which the server
# depends on for the gateway's frames) from Schemas/gateway/*.proto.
#
# The generated Swift is committed, so neither CI nor a newcomer needs this. It needs protoc
# (apt: protobuf-compiler) and protoc-gen-swift 1.39.0, built once from the package mirror:
#   git clone <mirror>/apple/swift-protobuf.git /tmp/swift-protobuf && cd /tmp/swift-protobuf \
#     && git checkout 1.39.0 && swift build -c release --product protoc-gen-swift
# then: PROTOC_GEN_SWIFT=/tmp/swift-protobuf/.build/release/protoc-gen-swift scripts/generate-records.sh
set -euo pipefail
cd "$(dirname "$0")/.."
plugin=${PROTOC_GEN_SWIFT:-$(command -v protoc-gen-swift || true)}
if [ -z "$plugin" ]; then
  echo "protoc-gen-swift not found: build it (see the top of this script) and set PROTOC_GEN_SWIFT" >&2
  exit 1
fi
out=Sources/HeraldRecords/Generated
rm -f "$out"/*.pb.swift
protoc --plugin=protoc-gen-swift="$plugin" --swift_out="$out" --swift_opt=Visibility=Public \
  -I Schemas/kafka Schemas/kafka/*.proto
echo "generated: $(ls "$out")"
gateway=Clients/HeraldKit/Sources/HeraldGatewayProtocol/Generated
mkdir -p "$gateway"
rm -f "$gateway"/*.pb.swift
protoc --plugin=protoc-gen-swift="$plugin" --swift_out="$gateway" --swift_opt=Visibility=Public \
  -I Schemas/gateway Schemas/gateway/*.proto
echo "generated: $(ls "$gateway")"
