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
        let id = UUID().uuidString.prefix(8)
        let out = dir.url.appendingPathComponent("child-\(id).out")
        let err = dir.url.appendingPathComponent("child-\(id).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        p.standardOutput = try FileHandle(forWritingTo: out)
        p.standardError = try FileHandle(forWritingTo: err)
        try p.run()
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(2000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        let text = { (u: URL) in (try? String(contentsOf: u, encoding: .utf8)) ?? "" }
        return Result(status: p.terminationStatus,
                      stdout: text(out).trimmingCharacters(in: .whitespacesAndNewlines),
                      stderr: text(err))
    }
}
