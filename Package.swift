// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "confidant",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "ConfidantCrypto", targets: ["ConfidantCrypto"]),
        .library(name: "CipherLab", targets: ["CipherLab"]),
        .library(name: "ConfidantVault", targets: ["ConfidantVault"]),
        .library(name: "ConfidantAuth", targets: ["ConfidantAuth"]),
        .library(name: "ConfidantAPI", targets: ["ConfidantAPI"]),
        .library(name: "ConfidantServer", targets: ["ConfidantServer"]),
        .library(name: "ConfidantKit", targets: ["ConfidantKit"]),
        .library(name: "ConfidantApp", targets: ["ConfidantApp"]),
        .executable(name: "confidant", targets: ["confidant"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/vapor/swift-openapi-vapor.git", from: "1.2.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
        .package(url: "https://github.com/vapor/fluent.git", from: "4.13.0"),
        .package(url: "https://github.com/vapor/fluent-sqlite-driver.git", from: "4.9.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver.git", from: "2.14.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/async-kit.git", from: "1.22.0"),
        .package(url: "https://github.com/vapor/websocket-kit.git", from: "2.16.2"),
        .package(url: "https://github.com/vapor/leaf.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // `swift package generate-documentation` for the DocC catalogs of the libraries.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "ConfidantCrypto",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "CipherLab",
            dependencies: [
                "ConfidantCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "ConfidantVault",
            dependencies: [
                "ConfidantCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "ConfidantAuth",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(
            name: "ConfidantAPI",
            dependencies: [
                "ConfidantAuth",
                "ConfidantCrypto",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            resources: [.copy("openapi.yaml")],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .target(
            name: "ConfidantServer",
            dependencies: [
                "ConfidantAPI",
                "ConfidantCrypto",
                "ConfidantAuth",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Fluent", package: "fluent"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "AsyncKit", package: "async-kit"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIVapor", package: "swift-openapi-vapor"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "ConfidantKit",
            dependencies: [
                "ConfidantAPI",
                "ConfidantVault",
                "ConfidantAuth",
                "ConfidantCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's log hook (`LogCheckpoints`), which GRDB does not expose.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WebSocketKit", package: "websocket-kit"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The graphical app: ConfidantKit's view models rendered as HTML on 127.0.0.1 by the
        // user's own process; templates and assets are compiled into the binary.
        .target(
            name: "ConfidantApp",
            dependencies: [
                "ConfidantKit",
                "ConfidantCrypto",
                "ConfidantAuth",
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Leaf", package: "leaf"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.embedInCode("Resources")]
        ),
        .executableTarget(
            name: "confidant",
            dependencies: [
                "ConfidantApp",
                "ConfidantKit",
                "ConfidantCrypto",
                "ConfidantVault",
                "ConfidantAuth",
                "ConfidantServer",
                "ConfidantAPI",
                "CipherLab",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WebSocketKit", package: "websocket-kit"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // Writes a synthetic profile (1,000 conversations, a 10,000-line chat) for
        // Benchmarks/app-render.sh. It stays in this package, unlike the rest of the benchmark
        // harness (Benchmarks/Package.swift), because it writes the local store directly through
        // ConfidantKit's package-only `SyntheticProfile`, which must not become public API.
        .executableTarget(
            name: "app-fixture",
            dependencies: ["ConfidantKit", "ConfidantCrypto"],
            path: "Benchmarks/AppFixture"
        ),
        // Local search over a synthetic profile of 100,000 messages (Benchmarks/search.sh), in
        // this package for the same reason as app-fixture.
        .executableTarget(
            name: "search-bench",
            dependencies: ["ConfidantKit", "ConfidantCrypto"],
            path: "Benchmarks/SearchBench"
        ),
        // The relay in a process of its own for the tests, with cheap password hashing: a switch
        // that exists only here, never in the `confidant` binary.
        .executableTarget(
            name: "confidant-test-relay",
            dependencies: [
                "ConfidantServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/TestRelayServer"
        ),
        .testTarget(
            name: "ConfidantCryptoTests",
            dependencies: [
                "ConfidantCrypto", "ConfidantAuth", .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ConfidantVaultTests",
            dependencies: ["ConfidantVault", "ConfidantCrypto"]
        ),
        .testTarget(
            name: "ConfidantAuthTests",
            dependencies: ["ConfidantAuth"]
        ),
        .testTarget(
            name: "CipherLabTests",
            dependencies: ["CipherLab", "ConfidantCrypto"]
        ),
        // Starts relays for the server's and the client library's tests.
        .target(
            name: "ConfidantTestSupport",
            dependencies: [
                "ConfidantServer",
                "ConfidantCrypto",
                "ConfidantAPI",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/ConfidantTestSupport"
        ),
        .testTarget(
            name: "ConfidantKitTests",
            dependencies: [
                "ConfidantKit", "ConfidantTestSupport", "ConfidantCrypto", "ConfidantAPI", "ConfidantVault",
                "ConfidantAuth", .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's own counters (statements compiled again), which GRDB does not expose.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The stream's sender over a socket on a channel of the test's own.
                .product(name: "WebSocketKit", package: "websocket-kit"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ConfidantServerTests",
            dependencies: [
                "ConfidantTestSupport",
                "confidant",
                "confidant-test-relay",
                "ConfidantServer",
                "ConfidantAPI",
                "ConfidantCrypto",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WebSocketKit", package: "websocket-kit"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "FluentSQLiteDriver", package: "fluent-sqlite-driver"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
            ]
        ),
        // The app's routes and page models, without a browser.
        .testTarget(
            name: "ConfidantAppTests",
            dependencies: [
                "ConfidantApp", "ConfidantKit", "ConfidantCrypto", "ConfidantVault", "ConfidantAPI", "ConfidantAuth",
                .product(name: "Vapor", package: "vapor"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ConfidantCLITests",
            dependencies: ["confidant", "confidant-test-relay", "ConfidantTestSupport", "ConfidantAuth"]
        ),
    ]
)
