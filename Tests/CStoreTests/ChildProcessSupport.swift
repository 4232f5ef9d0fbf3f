// Starting, waiting for and killing `cstore-testchild` (Tests/CStoreChild), the executable the
// multi-process, crash and read-only tests run as separate processes, and the seeded schema
// and payloads they share with it.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The path of `cstore-testchild` (nil if it cannot be found).
let testChildPath: String? = testExecutable(named: "cstore-testchild")

/// A started child process, its output captured in files (a pipe could fill up and block it).
final class Child {
    let process = Process()
    let out: URL
    let err: URL
    let args: [String]

    init(_ args: [String], in dir: TempDir) throws {
        guard let exe = testChildPath else {
            throw CStoreError(code: -1, message: "not found next to the test binary; build with --build-tests", context: "cstore-testchild")
        }
        self.args = args
        let id = UUID().uuidString.prefix(8)
        out = dir.url.appendingPathComponent("child-\(id).out")
        err = dir.url.appendingPathComponent("child-\(id).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: exe)
        process.arguments = args
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
    }

    var pid: pid_t { process.processIdentifier }
    var stdout: String { readText(out.path) }
    var stderr: String { readText(err.path) }

    /// Waits up to `seconds` for the process to end; kills it (SIGKILL) if it does not.
    /// Returns false on a timeout.
    @discardableResult
    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(2000) }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
            return false
        }
        process.waitUntilExit()
        return true
    }

    func killNow() {
        kill(pid, SIGKILL)
        process.waitUntilExit()
    }

    /// True if the process ended with status 0.
    var succeeded: Bool { process.terminationReason == .exit && process.terminationStatus == 0 }
    var killedBySIGKILL: Bool { process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL }

    var summary: String {
        let how = process.terminationReason == .exit ? "exit \(process.terminationStatus)" : "signal \(process.terminationStatus)"
        return "cstore-testchild \(args.joined(separator: " ")): \(how); stderr: \(stderr)"
    }
}

/// Runs a child to completion (at most `seconds`) and expects status 0. Returns its stdout.
@discardableResult
func runChild(_ args: [String], in dir: TempDir, seconds: Double = 60,
              sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let c = try Child(args, in: dir)
    let finished = c.wait(seconds: seconds)
    #expect(finished, "\(args.first ?? "") did not finish in \(seconds) s", sourceLocation: sourceLocation)
    #expect(c.succeeded, "\(c.summary)", sourceLocation: sourceLocation)
    return c.stdout
}

/// Polls until `condition` holds or `seconds` pass. Returns whether it held.
func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

/// The lines of a log file a child appended to ("" lines dropped).
func logLines(_ path: String) -> [String] {
    readText(path).split(separator: "\n").map(String.init)
}

/// The schema `cstore-testchild setup` makes: Counter(n, sum) with one object,
/// Rows(writer, seq, payload).
struct ChildSchema {
    let counter: UInt32
    let rows: UInt32
    let counterKey: Int64
    let n: UInt32 = 0, sum: UInt32 = 1
    let writer: UInt32 = 0, seq: UInt32 = 1, payload: UInt32 = 2

    init(_ txn: OpaquePointer) throws {
        counter = try findTable(txn, "Counter")
        rows = try findTable(txn, "Rows")
        guard let k = try allKeys(txn, counter).first else {
            throw CStoreError(code: Int32(CS_NOTFOUND), message: "missing", context: "the counter object")
        }
        counterKey = k
    }

    func counterValues(_ txn: OpaquePointer) throws -> (n: Int64, sum: Int64) {
        var o = try openObj(txn, counter, counterKey)
        return (try getInt(&o, n), try getInt(&o, sum))
    }
}

/// The payload `cstore-testchild commit-loop` stores with row `seq` (must match its payloadFor).
func childPayload(_ seq: Int64) -> [UInt8] {
    let len = 1 + Int((UInt64(seq) &* 2_654_435_761) % 3000)
    return (0..<len).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seq) &* 13) }
}

/// True when the long campaigns run at full size (`make test-full`).
let fullCampaign = ProcessInfo.processInfo.environment["STORE_FULL_CAMPAIGN"] == "1"
/// Set by `make asan` / `make tsan`: the sanitizers make every test several times slower, so the
/// long randomized loops run a smaller (still meaningful) share there; `make test` runs them whole.
let underSanitizer = ProcessInfo.processInfo.environment["STORE_SANITIZER"] == "1"
