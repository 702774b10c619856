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
        .executable(name: "confidant", targets: ["confidant"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
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
        .executableTarget(
            name: "confidant",
            dependencies: [
                "ConfidantCrypto",
                "ConfidantVault",
                "ConfidantAuth",
                "CipherLab",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "ConfidantCryptoTests",
            dependencies: ["ConfidantCrypto", .product(name: "PropertyBased", package: "swift-property-based")]
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
        .testTarget(
            name: "ConfidantCLITests",
            dependencies: ["confidant"]
        ),
    ]
)
