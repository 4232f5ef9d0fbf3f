// swift-tools-version:6.1
// The `swiftstore` command-line tool (info, verify, query, dump, changes, mirror). A package of
// its own so that a program depending on the SwiftStore library fetches nothing else: only the
// tool needs swift-argument-parser, and only the tool links libpq (PostgreSQL's C client, for
// `swiftstore mirror`; a system library, so CI builds no client package). Build it with `make tool` (or `swift build` here); the binary is
// `.build/debug/swiftstore` (`-c release` for `.build/release/swiftstore`).
import PackageDescription

let package = Package(
    name: "swiftstore-tool",
    products: [
        .executable(name: "swiftstore", targets: ["swiftstore"]),
    ],
    dependencies: [
        .package(name: "SwiftStore", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .executableTarget(
            name: "swiftstore",
            dependencies: [
                .product(name: "CStore", package: "SwiftStore"),
                .product(name: "CStoreCall", package: "SwiftStore"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "CLibPQ",
            ],
            path: "Sources/swiftstore",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
