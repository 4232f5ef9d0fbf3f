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
// runs (its --filter) and the files they need: its ThreadSanitizer build then compiles about a
// third of the tests instead of all of them, which took most of that build's three minutes
// (docs/CONTRIBUTING.md, CI). `make tsan` checks that the filter selects the same tests in this
// build as in the whole one, so a test that matches the filter in a file missing here fails it.
let tsanTests = ProcessInfo.processInfo.environment["STORE_TSAN_TESTS"] != nil
let tsanCStoreTests = [
    "ConcurrencyTests.swift", "NestedNotifyTests.swift", "NotifyTests.swift", "PlacementIndexTests.swift",
    "SnapshotConcurrencyTests.swift",
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
/// Every Swift file under `dir` (a test target's directory) but those in `keep`: what the target
/// excludes in the tsan build.
func tsanExclude(_ dir: String, keep: [String]) -> [String] {
    guard tsanTests else { return [] }
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(dir).path
    let files = FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? []
    return files.filter { $0.hasSuffix(".swift") && !keep.contains($0) }.sorted()
}

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
        exclude: tsanExclude("Tests/CStoreTests", keep: tsanCStoreTests),
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
        exclude: tsanExclude("Tests/SwiftStoreTests", keep: tsanSwiftStoreTests),
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
