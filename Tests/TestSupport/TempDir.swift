// What both test targets share: temporary directories, finding the child-process executables,
// seeded random numbers.

import Foundation

/// A fresh directory under the system temporary directory, named after the test that made it,
/// removed when the value goes away (or by `remove()`).
public final class TempDir: @unchecked Sendable {
    /// The directory.
    public let url: URL

    /// Creates `<tmp>/swiftstore-<name>-<uuid>`; `name` defaults to the calling function.
    public init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("swiftstore-\(safe)-\(UUID().uuidString)", isDirectory: true)
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
