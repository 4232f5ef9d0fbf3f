import Foundation

/// Runs `swiftstore-testchild` (Tests/SwiftStoreChild), which SwiftPM builds next to the test
/// binary, and returns its exit status and output.
enum ChildProcess {
    static let path: String? = testExecutable(named: "swiftstore-testchild")

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs the child with `args` and waits for it (at most `timeout` seconds, then kills it).
    static func run(_ args: [String], in dir: TempDir, timeout: Double = 60) throws -> Result {
        guard let path else { throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "swiftstore-testchild"]) }
        let r = try runProcess(path, args, outputIn: dir.url, timeout: timeout)
        return Result(status: r.status, stdout: r.stdout.trimmingCharacters(in: .whitespacesAndNewlines), stderr: r.stderr)
    }
}
