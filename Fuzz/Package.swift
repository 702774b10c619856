// swift-tools-version: 6.1
// libFuzzer targets, in their own package so normal builds never see -sanitize=fuzzer.
// Build and run (see Fuzz/run.sh):
//   swift build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -use-ld=lld --product EnvelopeFuzzer
// (and StreamFrameFuzzer, the stream's binary and text frames).
import PackageDescription

let package = Package(
    name: "ConfidantFuzz",
    dependencies: [.package(name: "confidant", path: "..")],
    targets: [
        // libFuzzer's entry point, shared by the targets.
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "EnvelopeFuzzer",
            dependencies: ["FuzzDriver", .product(name: "ConfidantCrypto", package: "confidant")]
        ),
        .executableTarget(
            name: "StreamFrameFuzzer",
            dependencies: ["FuzzDriver", .product(name: "ConfidantAPI", package: "confidant")]
        ),
    ]
)
