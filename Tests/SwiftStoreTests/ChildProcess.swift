import Foundation

/// Runs `swiftstore-testchild` (Tests/SwiftStoreChild), which SwiftPM builds next to the test
/// binary, and returns its exit status and output.
enum ChildProcess {
    static let path: String? = {
        let fm = FileManager.default
        var dirs: [URL] = []
        if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            dirs.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        if let first = CommandLine.arguments.first {
            dirs.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        var candidates: [URL] = []
        for d in dirs {
            var u = d
            for _ in 0..<4 {
                candidates.append(u.appendingPathComponent("swiftstore-testchild"))
                u = u.deletingLastPathComponent()
            }
        }
        return candidates.first { fm.isExecutableFile(atPath: $0.path) }?.path
    }()

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
