// swift-tools-version:6.1
import PackageDescription
import Foundation

// No package dependencies: a program that depends on SwiftStore fetches nothing else. The
// `swiftstore` tool is its own package in tools/swiftstore (it needs swift-argument-parser).

// With STORE_C_CORE_ONLY set, the package is only the C core, its Swift call helpers and the
// C core's tests: `make asan` runs just those tests, and this keeps its sanitizer build from
// compiling the Swift layer it does not run (docs/CONTRIBUTING.md, Building and testing).
let cCoreOnly = ProcessInfo.processInfo.environment["STORE_C_CORE_ONLY"] != nil

// With STORE_TSAN_TESTS set, the two test targets hold only the files of the suites `make tsan`
// runs (its --filter) and the files whose helpers they use: its ThreadSanitizer build then
// compiles about a quarter of the tests' lines instead of all of them, which took most of that
// build's three minutes (docs/CONTRIBUTING.md, CI). `make tsan` checks (.ci/tsan-check) that the
// filter selects the same tests in this build as in the whole one, so a test that matches the
// filter in a file missing here fails it. Listed as the targets' sources, not computed from the
// directories: SwiftPM caches the manifest's result, which must not depend on what files exist.
let tsanTests = ProcessInfo.processInfo.environment["STORE_TSAN_TESTS"] != nil
let tsanCStoreTests = [
    "ConcurrencyTests.swift", "NestedNotifyTests.swift", "NotifyTests.swift", "PlacementIndexTests.swift",
    "SnapshotConcurrencyTests.swift", "WriterLockTests.swift",
    // support (IOFaultTests.swift: FaultIO, for PlacementIndexTests.swift)
    "Support.swift", "ChildProcessSupport.swift", "QuerySupport.swift", "IOFaultTests.swift",
]
let tsanSwiftStoreTests = [
    "ActorNotificationTests.swift", "AsyncOpenTests.swift", "AsyncWriteTests.swift",
    "BacklinkKeyPathNotificationTests.swift", "DeliveredResultsTests.swift",
    "DerivedCollectionNotificationTests.swift", "FreezeTests.swift", "IterationAccessorTests.swift",
    "NestedCollectionNotificationTests.swift", "NotificationMakingTests.swift",
    "NotificationReleaseTests.swift", "NotificationStressTests.swift", "NotificationTests.swift",
    "NotificationWakeTests.swift", "PrimaryKeyKeyingTests.swift", "RealmNotificationNestingTests.swift",
    "RefreshNotificationTests.swift", "SectionedResultsFreezeTests.swift",
    "SectionedValuesNotificationTests.swift", "SkippedWriteNotificationTests.swift",
    "ThreadSafeReferenceTests.swift", "WatchVersionTests.swift", "WriteNotificationTests.swift",
    "Conformance/LoggerConformanceTests.swift",
    // support; WriteTests.swift: ProcPerson, UncheckedBox, onNewThread; SectionedResultsTests.swift:
    // its models; PreconditionTests.swift: expectMessage
    "Support.swift", "ChildProcess.swift", "LockFileSleepers.swift",
    "WriteTests.swift", "SectionedResultsTests.swift", "PreconditionTests.swift",
]
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
        dependencies: ["CStore", "CStoreCall", "TestSupport"],
        path: "Tests/CStoreChild",
        swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .testTarget(
        name: "CStoreTests",
        dependencies: ["CStore", "CStoreCall", "TestSupport"],
        sources: tsanTests ? tsanCStoreTests : nil,
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
        dependencies: ["SwiftStore", "TestSupport"],
        path: "Tests/SwiftStoreChild",
        swiftSettings: [.swiftLanguageMode(.v6)]
    ),
    .testTarget(
        name: "SwiftStoreTests",
        dependencies: ["SwiftStore", "CStoreCall", "TestSupport"],
        sources: tsanTests ? tsanSwiftStoreTests : nil,
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
