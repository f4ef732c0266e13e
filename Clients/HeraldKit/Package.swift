// swift-tools-version: 6.1
import PackageDescription

/// HeraldKit: the client SDK an app adds to register with Herald, keep the long connection to
/// herald-gateway, remove recalled notifications and report what its users did (docs/sdk.md).
///
/// A package of its own, apart from the server's, so an app resolves only what these modules use:
/// - `HeraldGatewayProtocol`: the gateway's frames (Schemas/gateway/gateway.proto) and framing
///   rules, shared with the server — plain Swift and SwiftProtobuf, no IO.
/// - `HeraldKit`: the core — configuration, registration and token rotation, the long connection
///   (SwiftNIO: NIOTransportServices on Apple platforms, NIOPosix and NIOSSL on Linux), the
///   de-duplication of pushes that came both ways, recall and replace as pure decisions over a
///   notification centre behind a protocol, and engagement events queued on disk. Tested on Linux.
///   It reaches herald-api through a transport protocol and links no HTTP stack itself.
/// - `HeraldKitURLSession`: that transport over URLSession, what an app uses (on Linux URLSession
///   is FoundationNetworking's, which needs libcurl: a program that must not link it, such as
///   herald-admin's simulated phones, brings its own transport).
/// - `HeraldKitNotifications`: the thin adapter to Apple's `UNUserNotificationCenter`; compiled
///   only where UserNotifications exists (not on Linux, so not by this repository's tests).
let package = Package(
    name: "HeraldKit",
    platforms: [.iOS(.v15), .macOS(.v12)],
    products: [
        .library(name: "HeraldKit", targets: ["HeraldKit"]),
        .library(name: "HeraldKitURLSession", targets: ["HeraldKitURLSession"]),
        .library(name: "HeraldKitNotifications", targets: ["HeraldKitNotifications"]),
        .library(name: "HeraldGatewayProtocol", targets: ["HeraldGatewayProtocol"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-transport-services", from: "1.28.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    ],
    targets: [
        .target(
            name: "HeraldGatewayProtocol",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        .target(
            name: "HeraldKit",
            dependencies: [
                "HeraldGatewayProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(platforms: [.linux])),
                .product(
                    name: "NIOTransportServices", package: "swift-nio-transport-services",
                    condition: .when(platforms: [.iOS, .macOS, .tvOS, .watchOS, .visionOS])),
            ]
        ),
        .target(name: "HeraldKitURLSession", dependencies: ["HeraldKit"]),
        .target(name: "HeraldKitNotifications", dependencies: ["HeraldKit"]),
        .testTarget(name: "HeraldKitTests", dependencies: ["HeraldKit", "HeraldGatewayProtocol"]),
        // Against a running herald-api and herald-gateway: scripts/test-heraldkit.sh starts them.
        .testTarget(name: "HeraldKitIntegrationTests", dependencies: ["HeraldKit", "HeraldKitURLSession"]),
    ]
)
