// swift-tools-version:6.1
import PackageDescription

// No package dependencies: a program that depends on SwiftStore fetches nothing else. The
// `swiftstore` tool is its own package in tools/swiftstore (it needs swift-argument-parser).
let package = Package(
    name: "SwiftStore",
    products: [
        .library(name: "SwiftStore", targets: ["SwiftStore"]),
        .library(name: "CStore", targets: ["CStore"]),
        .library(name: "CStoreCall", targets: ["CStoreCall"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"])]
        ),
        .target(
            name: "CStore",
            dependencies: ["CLZ4"],
            cSettings: [
                .define("_GNU_SOURCE"),
            ]
        ),
        .target(
            name: "CStoreCall",
            dependencies: ["CStore"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SwiftStore",
            dependencies: ["CStore", "CStoreCall"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "cstore-testchild",
            dependencies: ["CStore", "CStoreCall"],
            path: "Tests/CStoreChild",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "CStoreTests",
            dependencies: ["CStore", "CStoreCall", "TestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "swiftstore-testchild",
            dependencies: ["SwiftStore"],
            path: "Tests/SwiftStoreChild",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "SwiftStoreTests",
            dependencies: ["SwiftStore", "CStoreCall", "TestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What both test targets share: temporary directories, the child-process locator, a
        // seeded generator.
        .target(
            name: "TestSupport",
            path: "Tests/TestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ],
    cLanguageStandard: .c11
)
