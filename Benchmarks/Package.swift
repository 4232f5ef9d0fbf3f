// swift-tools-version:6.1
// The side-by-side benchmarks of SwiftStore against SQLite (raw C API) and GRDB.
// A separate package so that the root's `swift build` and `swift test` never build GRDB.
// Build and run in release: `swift build -c release && .build/release/swiftstore-bench`.
import PackageDescription

let package = Package(
    name: "SwiftStoreBenchmarks",
    dependencies: [
        .package(name: "SwiftStore", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // The system SQLite (Debian: libsqlite3-dev), for the raw C API peers.
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The system libpq (Debian: libpq-dev), for the mirror rows' reads of PostgreSQL.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .executableTarget(
            name: "swiftstore-bench",
            dependencies: [
                "CSQLite",
                "CLibPQ",
                .product(name: "CStore", package: "SwiftStore"),
                .product(name: "CStoreCall", package: "SwiftStore"),
                .product(name: "SwiftStore", package: "SwiftStore"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
