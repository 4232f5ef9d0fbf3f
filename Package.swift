// swift-tools-version:6.1
import PackageDescription
import Foundation

// No package dependencies: a program that depends on SwiftStore fetches nothing else. The
// `swiftstore` tool is its own package in tools/swiftstore (it needs swift-argument-parser).

// With STORE_C_CORE_ONLY set, the package is only the C core, its Swift call helpers and the
// C core's tests: `make asan` runs just those tests, and this keeps its sanitizer build from
// compiling the Swift layer it does not run (docs/CONTRIBUTING.md, Building and testing).
let cCoreOnly = ProcessInfo.processInfo.environment["STORE_C_CORE_ONLY"] != nil

let coreTargets: [Target] = [
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
    // What both test targets share: temporary directories, the child-process locator, a
    // seeded generator.
    .target(
        name: "TestSupport",
        path: "Tests/TestSupport",
        swiftSettings: [.swiftLanguageMode(.v6)]
    ),
]

let swiftTargets: [Target] = [
    .target(
        name: "SwiftStore",
        dependencies: ["CStore", "CStoreCall"],
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
]

let package = Package(
    name: "SwiftStore",
    products: (cCoreOnly ? [] : [.library(name: "SwiftStore", targets: ["SwiftStore"])]) + [
        .library(name: "CStore", targets: ["CStore"]),
        .library(name: "CStoreCall", targets: ["CStoreCall"]),
    ],
    targets: coreTargets + (cCoreOnly ? [] : swiftTargets),
    cLanguageStandard: .c11
)
