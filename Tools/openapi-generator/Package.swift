// swift-tools-version: 6.1
import PackageDescription

/// Runs swift-openapi-generator on `Schemas/openapi.yaml` (see scripts/generate-openapi.sh).
/// Kept apart from Herald's package so that building Herald never builds the generator.
let package = Package(
    name: "herald-openapi-generator",
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"),
    ]
)
