// swift-tools-version: 6.1
// Benchmarks live in their own package so the main build and CI do not compile the harness.
// Run from this directory: swift package --allow-writing-to-package-directory benchmark
import PackageDescription

let package = Package(
    name: "ConfidantBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "confidant", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
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
        )
    ]
)
