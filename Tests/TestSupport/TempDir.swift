// What both test targets share: temporary directories, finding the child-process executables,
// seeded random numbers.

import Foundation

/// The directory every `TempDir` of this process lives in: `<tmp>/swiftstore-tests-<pid>-<uuid>`,
/// removed when the process exits. A process that does not exit normally (an exit test's child
/// traps, a run is killed) leaves its directory behind, so making one and exiting also remove
/// the directories of processes that are gone: nothing a test run creates outlives it for long.
private let testRoot: URL = {
    sweepDeadTestRoots()
    let root = URL(fileURLWithPath: NSTemporaryDirectory())
        .appendingPathComponent("\(testRootPrefix)\(getpid())-\(UUID().uuidString)", isDirectory: true)
    do {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    } catch {
        fatalError("cannot create the test directory \(root.path): \(error)")
    }
    atexit { sweepDeadTestRoots(includingOwn: true) }
    return root
}()

private let testRootPrefix = "swiftstore-tests-"

/// Removes the test directories whose process no longer runs (and this process's own, if asked).
private func sweepDeadTestRoots(includingOwn: Bool = false) {
    let tmp = URL(fileURLWithPath: NSTemporaryDirectory())
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: tmp.path) else { return }
    for name in names where name.hasPrefix(testRootPrefix) {
        guard let pid = pid_t(name.dropFirst(testRootPrefix.count).prefix { $0 != "-" }) else { continue }
        let gone = kill(pid, 0) != 0 && errno == ESRCH
        if gone || (includingOwn && pid == getpid()) {
            try? FileManager.default.removeItem(at: tmp.appendingPathComponent(name))
        }
    }
}

/// A fresh directory in this process's test directory, named after the test that made it, removed
/// when the value goes away (or by `remove()`), and at the latest when the process ends.
public final class TempDir: @unchecked Sendable {
    /// The directory.
    public let url: URL

    /// Creates `<tmp>/swiftstore-tests-<pid>-<uuid>/<name>-<uuid>`; `name` defaults to the
    /// calling function.
    public init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = testRoot.appendingPathComponent("\(safe)-\(UUID().uuidString)", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            fatalError("cannot create the test directory \(url.path): \(error)")
        }
    }

    deinit { remove() }

    /// The path of a file in the directory.
    public func path(_ name: String = "test.cstore") -> String { url.appendingPathComponent(name).path }

    /// A file in the directory.
    public func file(_ name: String = "test.realm") -> URL { url.appendingPathComponent(name) }

    /// Removes the directory and everything in it.
    public func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Runs `body` with a fresh temporary directory and removes the directory afterwards.
public func withTempDir<R>(_ name: String = #function, _ body: (TempDir) throws -> R) throws -> R {
    let dir = TempDir(name)
    defer { dir.remove() }
    return try body(dir)
}
