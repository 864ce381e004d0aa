// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Berth",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AppleSignedData", targets: ["AppleSignedData"]),
        .library(name: "TestKit", targets: ["TestKit"]),
        .executable(name: "berth", targets: ["berth"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "AppleSignedData",
            dependencies: [
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            resources: [.copy("Resources/AppleRootCA-G3.pem"), .copy("Resources/AppleIncRootCertificate.pem")]
        ),
        .target(
            name: "TestKit",
            dependencies: [
                "AppleSignedData",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .executableTarget(
            name: "berth",
            dependencies: [
                "AppleSignedData",
                "TestKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "BerthBenchmarks",
            dependencies: ["AppleSignedData", "TestKit"]
        ),
        .testTarget(
            name: "AppleSignedDataTests",
            dependencies: ["AppleSignedData", "TestKit", .product(name: "X509", package: "swift-certificates")],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "TestKitTests",
            dependencies: ["TestKit", "AppleSignedData"]
        ),
        .testTarget(
            name: "BerthCLITests",
            dependencies: ["berth", "TestKit", "AppleSignedData"],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
