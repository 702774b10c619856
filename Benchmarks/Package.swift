// swift-tools-version: 6.1
// The benchmark harness, in a package of its own so that the product's build does not include it:
// the Swift benchmarks (ordo-one/benchmark) and the relay's load generator (`relay-load`, which also
// drives ConfidantKit end to end). `.ci/run` builds it, so a change to the product's API cannot
// break it unseen. (`app-fixture` stays in the main package: see there.)
// From this directory: swift package --allow-writing-to-package-directory benchmark
// From the repository's root: swift build -c release --package-path Benchmarks --product relay-load
import PackageDescription

let package = Package(
    name: "ConfidantBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "confidant", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/websocket-kit.git", from: "2.16.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "CryptoBenchmarks",
            dependencies: [
                .product(name: "ConfidantCrypto", package: "confidant"),
                .product(name: "CipherLab", package: "confidant"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/CryptoBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The relay load generator (Benchmarks/relay.sh, ejabberd.sh, kit-ab.sh).
        .executableTarget(
            name: "relay-load",
            dependencies: [
                .product(name: "ConfidantServer", package: "confidant"),
                .product(name: "ConfidantAPI", package: "confidant"),
                .product(name: "ConfidantCrypto", package: "confidant"),
                .product(name: "ConfidantKit", package: "confidant"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WebSocketKit", package: "websocket-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "RelayLoad"
        ),
    ]
)
