// swift-tools-version: 6.1
import PackageDescription

/// Herald: a self-hosted push-notification platform.
///
/// Layout: each C library is reached only through its `C*` target and the one Swift module that
/// wraps it: `HeraldKafka` (librdkafka), `HeraldHTTP2` (libnghttp2), `HeraldPostgresCopy` (libpq).
/// `HeraldTiming` holds `Backoff` and Duration helpers; `HeraldCore` configuration, key hashing
/// and credential sealing (no Kafka); `HeraldRecords` the Kafka record formats;
/// `HeraldMessaging` Herald's use of Kafka (settings into client configurations, dead letters);
/// `HeraldAPNsVocabulary` the words of APNs (no NIO), `HeraldAPNs` the APNs client;
/// `HeraldDomain` what Herald knows without a database (models, audiences, policy, recurrence,
/// waves), `HeraldStore` the PostgreSQL store;
/// `HeraldMetrics` Prometheus text and the metrics endpoint; `HeraldAPI`, `HeraldCenter` and
/// `HeraldSender` the three services, `APNsSimulator` apns-sim. Executables are thin: they read
/// configuration and start a `ServiceGroup`.
let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .executable(name: "herald-admin", targets: ["herald-admin"]),
        .executable(name: "herald-kafka-dev", targets: ["herald-kafka-dev"]),
        .executable(name: "kafka-throughput", targets: ["kafka-throughput"]),
        .executable(name: "apns-sim", targets: ["apns-sim"]),
        .executable(name: "herald-sender", targets: ["herald-sender"]),
        .executable(name: "herald-center", targets: ["herald-center"]),
        .executable(name: "herald-api", targets: ["herald-api"]),
        .executable(name: "herald-gateway", targets: ["herald-gateway"]),
        .executable(name: "fanout-throughput", targets: ["fanout-throughput"]),
        .executable(name: "api-throughput", targets: ["api-throughput"]),
        .executable(name: "apns-sim-throughput", targets: ["apns-sim-throughput"]),
        .executable(name: "apns-client-throughput", targets: ["apns-client-throughput"]),
        .executable(name: "sender-throughput", targets: ["sender-throughput"]),
        .library(name: "HeraldHTTP2", targets: ["HeraldHTTP2"]),
        .library(name: "APNsSimulator", targets: ["APNsSimulator"]),
        .library(name: "HeraldAPNs", targets: ["HeraldAPNs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird", from: "2.1.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The client SDK (Clients/HeraldKit): the gateway's frames come from it, and `herald dev
        // phones` runs its core.
        .package(path: "Clients/HeraldKit"),
    ],
    targets: [
        // MARK: C libraries (system packages, installed by scripts/install-dependencies.sh)
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .target(name: "CRdKafkaShim", dependencies: ["CRdKafka"]),
        .target(name: "CKafkaDevBind", linkerSettings: [.linkedLibrary("dl")]),

        // MARK: Libraries
        // Backoff and Duration helpers, shared by every module; depends on nothing.
        .target(name: "HeraldTiming"),
        .target(
            name: "HeraldKafka",
            dependencies: [
                "CRdKafka", "CRdKafkaShim", "HeraldTiming",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldRecords",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        // The long connection's frames (Schemas/gateway/gateway.proto) and its rules as a state
        // machine: no IO, so the gateway and its tests share one definition.
        .target(
            name: "HeraldCore",
            dependencies: [
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "HeraldAPNsVocabulary", "HeraldTiming",
            ]
        ),
        // Herald's use of Kafka: settings into client configurations, dead letters.
        .target(
            name: "HeraldMessaging",
            dependencies: [
                "HeraldCore", "HeraldKafka", "HeraldMetrics", "HeraldRecords", "HeraldTiming",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HeraldPostgresCopy",
            dependencies: ["CLibPQ"]
        ),
        // What Herald knows without a database: audiences and their filters, recurrence, waves and
        // local time, delivery policy, and the models the store reads and writes.
        .target(
            name: "HeraldDomain",
            dependencies: ["HeraldAPNsVocabulary", "HeraldRecords"]
        ),
        .target(
            name: "HeraldStore",
            dependencies: [
                "HeraldAPNsVocabulary", "HeraldCore", "HeraldDomain", "HeraldMetrics", "HeraldPostgresCopy",
                "HeraldRecords",
                "HeraldTiming",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Migrations")]
        ),

        // A lock ThreadSanitizer can see, for the modules `make test-tsan` checks (VisibleMutex).
        .target(
            name: "HeraldLocking",
            dependencies: [.product(name: "NIOConcurrencyHelpers", package: "swift-nio")]
        ),
        .target(
            name: "HeraldHTTP2",
            dependencies: [
                "CNGHTTP2", "HeraldLocking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            // Per-request state lives in class properties touched from nghttp2 callbacks on one
            // event loop; Swift's dynamic exclusivity checks on them cost about 2% of a request
            // (measured with perf against h2load). Off in release builds only: the debug build
            // `make test` runs keeps them, so an overlapping access traps in a test.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
        ),
        // The words of APNs without a connection: environments, push types, reasons, the payload
        // and its JSON, templates, hexadecimal. The store, the API, the console and the center
        // speak them without linking nghttp2 or NIO.
        .target(name: "HeraldAPNsVocabulary"),
        .target(
            name: "HeraldAPNs",
            dependencies: [
                "HeraldAPNsVocabulary", "HeraldHTTP2", "HeraldTiming", "HeraldLocking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldMetrics",
            dependencies: [
                "HeraldTiming",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldCenter",
            dependencies: [
                "HeraldAPNsVocabulary", "HeraldRecords", "HeraldKafka", "HeraldMessaging", "HeraldDomain",
                "HeraldStore",
                "HeraldCore", "HeraldMetrics", "HeraldTiming",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The Open API's types, generated from Schemas/openapi.yaml by scripts/generate-openapi.sh
        // (`make test` checks they are current): one definition for the server and the CLI.
        .target(
            name: "HeraldAPIContract",
            dependencies: [.product(name: "OpenAPIRuntime", package: "swift-openapi-runtime")],
            exclude: ["Generated/openapi-generator-config.yaml"]
        ),
        // The operations console: server-rendered pages over the Open API's operations.
        .target(
            name: "HeraldConsole",
            dependencies: [
                "HeraldAPIContract", "HeraldCore", "HeraldDomain", "HeraldStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Who may come in: key look-ups and their cache, alias signatures, failed-authentication
        // throttles and rate limits, shared by herald-api and herald-gateway.
        .target(
            name: "HeraldAccess",
            dependencies: [
                "HeraldAPNsVocabulary", "HeraldCore", "HeraldDomain", "HeraldStore",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // herald-gateway: the long connections (TLS, framed or WebSocket) of apps in the foreground.
        .target(
            name: "HeraldGateway",
            dependencies: [
                "HeraldAccess", "HeraldAPNsVocabulary", "HeraldCore", "HeraldDomain",
                .product(name: "HeraldGatewayProtocol", package: "HeraldKit"),
                "HeraldMetrics", "HeraldStore", "HeraldTiming",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HeraldAPI",
            dependencies: [
                "HeraldAccess", "HeraldAPIContract", "HeraldConsole", "HeraldAPNsVocabulary", "HeraldRecords",
                "HeraldDomain",
                "HeraldStore",
                "HeraldCore",
                "HeraldMetrics", "HeraldTiming",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // Generated/ holds the server side of the contract (scripts/generate-openapi.sh).
            exclude: ["Generated/openapi-generator-config.yaml"]
        ),
        .target(
            name: "HeraldSender",
            dependencies: [
                "HeraldAPNs", "HeraldAPNsVocabulary", "HeraldHTTP2", "HeraldRecords", "HeraldKafka", "HeraldMessaging",
                "HeraldDomain", "HeraldStore", "HeraldAccess",
                .product(name: "HeraldGatewayProtocol", package: "HeraldKit"),
                "HeraldCore", "HeraldMetrics", "HeraldTiming",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "APNsSimulator",
            dependencies: [
                "HeraldHTTP2", "HeraldAPNsVocabulary", "HeraldMetrics", "HeraldLocking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // As HeraldHTTP2.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
        ),

        // MARK: Executables
        // The operator's CLI: the Open API client and its commands, no server libraries.
        .target(
            name: "HeraldCLI",
            dependencies: [
                "HeraldAPIContract", "HeraldTiming",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The operator CLI's commands; Generated/ holds the Open API client (scripts/generate-openapi.sh).
            exclude: ["Generated/openapi-generator-config.yaml"]
        ),
        .executableTarget(
            name: "herald",
            dependencies: ["HeraldCLI"]
        ),
        // herald-admin: the server-side tools (the dev stack, migrations, Kafka, credentials).
        .target(
            name: "HeraldAdminCLI",
            dependencies: [
                "HeraldCLI", "HeraldAPIContract", "HeraldCore", "HeraldKafka", "HeraldMessaging", "HeraldTiming",
                "HeraldRecords", "HeraldDomain", "HeraldStore", "HeraldAPNs", "HeraldAPNsVocabulary", "APNsSimulator",
                // `herald dev phones` runs HeraldKit's core (not HeraldKitURLSession: no libcurl here).
                .product(name: "HeraldKit", package: "HeraldKit"),
                .product(name: "HeraldGatewayProtocol", package: "HeraldKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "herald-admin",
            dependencies: ["HeraldAdminCLI"]
        ),
        .executableTarget(
            name: "herald-kafka-dev",
            dependencies: [
                "HeraldCore", "HeraldKafka", "CKafkaDevBind",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "kafka-throughput",
            dependencies: [
                "HeraldCore", "HeraldKafka", "HeraldMessaging", "HeraldRecords",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/KafkaThroughput"
        ),

        .executableTarget(
            name: "herald-sender",
            dependencies: [
                "HeraldSender", "HeraldCore", "HeraldStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "herald-center",
            dependencies: [
                "HeraldCenter", "HeraldCore", "HeraldStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "herald-api",
            dependencies: [
                "HeraldAPI", "HeraldCore", "HeraldStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "herald-gateway",
            dependencies: [
                "HeraldGateway", "HeraldAccess", "HeraldCore", "HeraldStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "apns-sim",
            dependencies: [
                "APNsSimulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(name: "BenchmarkSupport", path: "Benchmarks/Support"),
        .executableTarget(
            name: "apns-sim-throughput",
            dependencies: [
                "HeraldAPNsVocabulary",
                "APNsSimulator", "HeraldAPNs", "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/APNsSimThroughput"
        ),
        .executableTarget(
            name: "apns-client-throughput",
            dependencies: [
                "APNsSimulator", "HeraldAPNs", "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/APNsClientThroughput"
        ),
        .executableTarget(
            name: "sender-throughput",
            dependencies: [
                "APNsSimulator", "HeraldAPNs", "HeraldCore", "HeraldKafka", "HeraldMessaging", "HeraldRecords",
                "HeraldDomain", "HeraldStore",
                "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/SenderThroughput"
        ),

        .executableTarget(
            name: "fanout-throughput",
            dependencies: [
                "HeraldAPNsVocabulary", "HeraldCore", "HeraldRecords", "HeraldDomain", "HeraldStore",
                "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Benchmarks/FanoutThroughput"
        ),

        .executableTarget(
            name: "api-throughput",
            dependencies: [
                "HeraldCore", "HeraldStore", "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Benchmarks/APIThroughput"
        ),

        // MARK: Tests
        .testTarget(
            name: "HeraldKafkaTests",
            dependencies: [
                "HeraldKafka", "HeraldCore", "HeraldMessaging", "HeraldMetrics", "HeraldRecords",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "HeraldTimingTests", dependencies: ["HeraldTiming"]),
        .testTarget(
            name: "HeraldConsoleTests",
            dependencies: [
                "HeraldConsole", "HeraldAPIContract", .product(name: "Mustache", package: "swift-mustache"),
            ]),
        .testTarget(
            name: "HeraldCLITests",
            dependencies: [
                "HeraldCLI", "HeraldAPIContract",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore", "HeraldTiming", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "HeraldMetricsTests", dependencies: ["HeraldMetrics", "HeraldCore"]),
        .testTarget(name: "HeraldRecordsTests", dependencies: ["HeraldRecords"]),
        .testTarget(
            name: "HeraldGatewayTests",
            dependencies: [
                "HeraldAccess", "HeraldCore", "HeraldGateway", "HeraldStore",
                .product(name: "HeraldGatewayProtocol", package: "HeraldKit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]),
        // Plays herald-center's accounting through the store's production paths, for tests of
        // other modules (a test-support library, not a test target).
        .target(
            name: "StoreTestSupport",
            dependencies: [
                "HeraldAPNsVocabulary", "HeraldDomain", "HeraldStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/StoreTestSupport"
        ),
        .testTarget(
            name: "HeraldStoreTests",
            dependencies: [
                "HeraldDomain", "HeraldStore", "HeraldCore", "HeraldAPNs", "HeraldAPNsVocabulary", "HeraldPostgresCopy",
                "StoreTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "APNsTestSupport",
            dependencies: [
                "APNsSimulator", "HeraldAPNs",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/APNsTestSupport"
        ),
        .testTarget(name: "HeraldDomainTests", dependencies: ["HeraldDomain"]),
        .testTarget(
            name: "HeraldAPNsVocabularyTests",
            dependencies: ["HeraldAPNsVocabulary"]
        ),
        .testTarget(
            name: "HeraldAPNsTests",
            dependencies: [
                "HeraldAPNs", "APNsSimulator", "HeraldHTTP2", "CNGHTTP2", "APNsTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "HeraldSenderTests",
            dependencies: [
                "HeraldSender", "HeraldAPNs", "HeraldAPNsVocabulary", "HeraldRecords", "APNsSimulator", "HeraldDomain",
                "HeraldStore",
                "HeraldCore",
                "HeraldKafka",
                "HeraldMessaging", "HeraldTiming", "HeraldHTTP2", "APNsTestSupport",
                "HeraldGateway", .product(name: "HeraldGatewayProtocol", package: "HeraldKit"), "HeraldAccess",
                "StoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HeraldCenterTests",
            dependencies: [
                "HeraldCenter", "HeraldAPNs", "HeraldAPNsVocabulary", "HeraldRecords", "HeraldDomain", "HeraldStore",
                "HeraldCore",
                "HeraldKafka",
                "HeraldMessaging",
                "StoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "HeraldAPITests",
            dependencies: [
                "HeraldAPI", "HeraldAccess", "HeraldAPIContract", "HeraldAPNs", "HeraldAPNsVocabulary", "HeraldRecords",
                "HeraldDomain",
                "HeraldStore",
                "HeraldCore",
                "StoreTestSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),
        .testTarget(
            name: "APNsSimulatorTests",
            dependencies: [
                "APNsSimulator", "HeraldHTTP2", "HeraldAPNsVocabulary",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
