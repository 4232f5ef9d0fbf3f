import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What a finished child process left: its status (the signal number when `signalled`), and
/// everything it wrote to standard output and standard error.
public struct ProcessOutput: Sendable {
    public let status: Int32
    public let signalled: Bool
    public let stdout: String
    public let stderr: String
}

/// Runs the executable at `path` with `args`, its output going to files in `dir`, and waits for
/// it: at most `timeout` seconds, then it is killed with SIGKILL.
public func runProcess(_ path: String, _ args: [String], outputIn dir: URL, timeout: Double = 60) throws -> ProcessOutput {
    let id = UUID().uuidString.prefix(8)
    let out = dir.appendingPathComponent("proc-\(id).out")
    let err = dir.appendingPathComponent("proc-\(id).err")
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
    return ProcessOutput(status: p.terminationStatus, signalled: p.terminationReason == .uncaughtSignal,
                         stdout: readText(out.path), stderr: readText(err.path))
}

/// A text file's contents ("" if it cannot be read). Plain read(2): Foundation's file reading
/// leaks a buffer for empty files (LeakSanitizer reports it under `make asan`).
public func readText(_ path: String) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        bytes += buf[..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

