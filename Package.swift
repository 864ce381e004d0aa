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
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "5.0.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Microbenchmarks only (Benchmarks/BerthMicro): allocation and instruction counts checked by scripts/bench-check.
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "AppleSignedData",
            dependencies: [
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            resources: [.embedInCode("Resources/AppleRootCA-G3.pem"), .embedInCode("Resources/AppleIncRootCertificate.pem")]
        ),
        .target(
            name: "TestKit",
            dependencies: [
                "AppleSignedData",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "AppStoreAPI",
            dependencies: [
                "OutboundHTTP",
                "AppleSignedData",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "StripeAPI",
            dependencies: [
                "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Google Play: service-account OAuth (RS256 assertion), the Play Developer API, push tokens. No Google SDK.
        .target(
            name: "GooglePlayAPI",
            dependencies: [
                "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "PlayStandIn",
            dependencies: [
                "GooglePlayAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "StripeStandIn",
            dependencies: [
                "StripeAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "AppleStandIn",
            dependencies: [
                "AppleSignedData",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // How an outbound request failed, in an operator's words (shared by every outbound client).
        .target(
            name: "OutboundHTTP",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The C allocator's figures for /metrics (glibc's mallinfo2 is not in Swift's Glibc module).
        .target(name: "CHeapStats"),
        .target(
            name: "Domain",
            dependencies: []
        ),
        .target(
            name: "SQLStore",
            dependencies: [
                "Domain",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The migrations (Sources/SQLStore/Resources/migrations is a link to migrations/) are compiled into
            // the binary: one file runs the service. EmbeddedMigrationsTests fails when a file is not listed here.
            resources: [
                .embedInCode("Resources/migrations/001_initial.sql"),
                .embedInCode("Resources/migrations/002_receipt_checks.sql"),
                .embedInCode("Resources/migrations/003_apple_notifications.sql"),
                .embedInCode("Resources/migrations/004_webhooks.sql"),
                .embedInCode("Resources/migrations/005_unclaimed_transactions.sql"),
                .embedInCode("Resources/migrations/006_hardening.sql"),
                .embedInCode("Resources/migrations/007_core.sql"),
                .embedInCode("Resources/migrations/008_credits.sql"),
                .embedInCode("Resources/migrations/009_subscriptions.sql"),
                .embedInCode("Resources/migrations/010_key_roles.sql"),
                .embedInCode("Resources/migrations/011_webhook_dead_letters.sql"),
                .embedInCode("Resources/migrations/012_product_kinds.sql"),
                .embedInCode("Resources/migrations/013_part_payments.sql"),
                .embedInCode("Resources/migrations/014_unapplied_payments.sql"),
                .embedInCode("Resources/migrations/015_account_tokens.sql"),
                .embedInCode("Resources/migrations/016_card_payments.sql"),
                .embedInCode("Resources/migrations/017_google_play.sql"),
                .embedInCode("Resources/migrations/018_apple_lifecycle.sql"),
                .embedInCode("Resources/migrations/019_subscription_offers.sql"),
                .embedInCode("Resources/migrations/020_consumption_answers.sql"),
                .embedInCode("Resources/migrations/021_booking_references.sql"),
                .embedInCode("Resources/migrations/022_order_ids.sql"),
                .embedInCode("Resources/migrations/023_outbox_claim.sql"),
                .embedInCode("Resources/migrations/024_play_pending_claims.sql"),
                .embedInCode("Resources/migrations/025_slot_holds.sql"),
                .embedInCode("Resources/migrations/026_owed_resolutions.sql"),
                .embedInCode("Resources/migrations/027_refund_times.sql"),
                .embedInCode("Resources/migrations/028_inventory.sql"),
                .embedInCode("Resources/migrations/029_closures.sql"),
                .embedInCode("Resources/migrations/030_booking_changes.sql"),
            ]
        ),
        .target(
            name: "UseCases",
            dependencies: [
                "Domain",
                "AppleSignedData",
                "AppStoreAPI",
                "StripeAPI",
                "GooglePlayAPI",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .target(
            name: "BerthApp",
            dependencies: [
                "Domain",
                "UseCases",
                "SQLStore",
                "HTTPAPI",
                "BerthWorkers",
                "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "BerthWorkers",
            dependencies: [
                "Domain",
                "UseCases",
                "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "HTTPAPI",
            dependencies: [
                "Domain",
                "CHeapStats",
                "OutboundHTTP",
                "UseCases",
                "AppleSignedData",
                "AppStoreAPI",
                "StripeAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            // Embedded in the binary: `berth` runs from any folder without a resource bundle beside it.
            resources: [
                .embedInCode("Resources/web/admin.html"), .embedInCode("Resources/web/admin.js"), .embedInCode("Resources/web/admin.css"),
                .embedInCode("Resources/openapi.yaml"),
            ]
        ),
        .executableTarget(
            name: "berth",
            dependencies: [
                "AppleSignedData",
                "OutboundHTTP",
                "TestKit",
                "Domain",
                "SQLStore",
                "HTTPAPI",
                "UseCases",
                "BerthApp",
                "StripeAPI",
                "StripeStandIn",
                "GooglePlayAPI",
                "PlayStandIn",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The parsers under libFuzzer (scripts/fuzz builds it with -sanitize=fuzzer -D FUZZING);
        // in a normal build, a tool that replays saved inputs and writes seeds.
        .executableTarget(
            name: "BerthFuzz",
            dependencies: [
                "AppleSignedData", "TestKit", "Domain", "SQLStore", "HTTPAPI", "UseCases", "BerthApp", "GooglePlayAPI", "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "BerthBenchmarks",
            dependencies: ["AppleSignedData", "TestKit", "Domain", "SQLStore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The HTTP stack alone (Hummingbird, one route): benchmarks/run measures it beside Berth for the
        // "× bare" column. Not part of the `berth` binary.
        .executableTarget(
            name: "BareHummingbird",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log")]
        ),
        // ordo-one/benchmark's microbenchmarks: `swift package benchmark`, and scripts/bench-check against
        // benchmarks/thresholds/ (CI). Not part of the `berth` binary.
        .executableTarget(
            name: "BerthMicro",
            dependencies: [
                "AppleSignedData", "TestKit", "Domain", "SQLStore", "HTTPAPI", "UseCases", "BerthApp",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/BerthMicro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .testTarget(
            name: "AppleSignedDataTests",
            dependencies: ["AppleSignedData", "TestKit", .product(name: "X509", package: "swift-certificates")]
        ),
        .testTarget(
            name: "AppStoreAPITests",
            dependencies: [
                "AppStoreAPI", "AppleSignedData", "TestKit", "AppleStandIn", "OutboundHTTP", "StoreTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "DomainTests",
            dependencies: ["Domain"]
        ),
        .testTarget(
            name: "SQLStoreTests",
            dependencies: [
                "SQLStore", "Domain", "UseCases", "StoreTesting", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"), .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        // The backends every store and use-case suite runs on (SQLite; PostgreSQL when the test command started one).
        .target(
            name: "StoreTesting",
            dependencies: ["SQLStore", "Domain", .product(name: "Logging", package: "swift-log")],
            path: "Tests/StoreTesting"
        ),
        // The shipped use cases' units of work, on every backend.
        .testTarget(
            name: "UseCasesTests",
            dependencies: [
                "UseCases", "Domain", "SQLStore", "StoreTesting", "TestKit", "AppleSignedData", "AppleStandIn", "AppStoreAPI", "PlayStandIn",
                "StripeStandIn", "StripeAPI",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "HTTPAPITests",
            dependencies: [
                "HTTPAPI", "BerthWorkers", "BerthApp", "OutboundHTTP", "UseCases", "SQLStore", "Domain", "TestKit", "AppleSignedData", "AppleStandIn",
                "AppStoreAPI",
                "StripeAPI", "StripeStandIn", "GooglePlayAPI", "PlayStandIn", "StoreTesting",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .testTarget(
            name: "TestKitTests",
            dependencies: ["TestKit", "AppleSignedData"]
        ),
        .testTarget(
            name: "BerthCLITests",
            dependencies: [
                "berth", "TestKit", "AppleSignedData", "SQLStore", "StoreTesting", .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Upcoming language features on every Swift target of Berth: existential types spelled `any`, and
// members visible only from modules a file imports itself.
for target in package.targets where target.name != "CHeapStats" && target.type != .plugin {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [.enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility")]
}
