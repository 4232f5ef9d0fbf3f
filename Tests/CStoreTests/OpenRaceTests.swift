// Opening a file while other processes commit (docs/FORMAT.md, Opening a file). An opener reads
// the header before it holds a pin or the lock file: commits made meanwhile can reuse the space
// of both header slots' commits, grow the file past the size the opener saw, or (when every
// other process has exited by the time the opener joins the lock file) leave the opener with a
// version that is no longer the newest. The tests make those commits happen at exact points
// of the opener's reads: the I/O layer runs a child process that commits to the file from
// inside the opener's read of the header or its opening of the lock file.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where the hooked I/O layer runs `cstore-testchild increment` to completion on `path`.
enum OpenRacePoint: String, CaseIterable, Sendable {
    /// right after the opener's first read of the header, before it checks the slots
    case afterFirstHeaderRead
    /// when the opener opens the lock file to join it (after its last read of the header)
    case beforeJoiningTheLockFile
}

private struct HeaderHook {
    nonisolated(unsafe) static var path = ""
    nonisolated(unsafe) static var point: OpenRacePoint?
    nonisolated(unsafe) static var headerReads = 0
    nonisolated(unsafe) static var commits = 0
    nonisolated(unsafe) static var ran = false
    nonisolated(unsafe) static var childFailure: String?

    static func runChild() {
        guard let exe = testChildPath else { childFailure = "cstore-testchild not found"; return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = ["increment", path, "2", String(commits)]
        let err = Pipe()
        p.standardError = err
        do { try p.run() } catch { childFailure = "\(error)"; return }
        let text = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        if p.terminationStatus != 0 {
            childFailure = "status \(p.terminationStatus): \(String(decoding: text, as: UTF8.self))"
        }
        ran = true
    }
}

private func hookedIO() -> UnsafeMutablePointer<cs_io> {
    let io = UnsafeMutablePointer<cs_io>.allocate(capacity: 1)
    io.initialize(to: cs_io_default().pointee)
    io.pointee.pread = { _, fd, buf, n, off in
        let r = Glibc.pread(fd, buf, n, off)
        if off == 0 && n >= 64 {
            HeaderHook.headerReads += 1
            if HeaderHook.point == .afterFirstHeaderRead && HeaderHook.headerReads == 1 { HeaderHook.runChild() }
        }
        return r
    }
    io.pointee.open = { _, path, flags, mode in
        if HeaderHook.point == .beforeJoiningTheLockFile && String(cString: path!).hasSuffix(".lock") {
            HeaderHook.runChild()
        }
        return Glibc.open(path!, flags, mode)
    }
    return io
}

@Suite(.serialized) struct OpenRaceTests {
    /// The file `cstore-testchild setup` makes, with `before` increments committed.
    static func prepared(_ dir: TempDir, before: Int) throws -> String {
        let path = dir.file().path
        try runChild(["setup", path], in: dir)
        try runChild(["increment", path, "1", String(before)], in: dir)
        return path
    }

    /// Another process commits 40 times and exits while this one checks the header slots it
    /// read, or after its checks and before it joins the lock file (where it finds itself
    /// alone). Either way the open succeeds without reporting damage, sees every commit, and a
    /// commit made through it keeps them all.
    @Test(arguments: OpenRacePoint.allCases)
    func commitsWhileOpeningAreNeitherLostNorReportedAsDamage(at point: OpenRacePoint) throws {
        let dir = TempDir()
        let path = try Self.prepared(dir, before: 5)
        HeaderHook.path = path
        HeaderHook.point = point
        HeaderHook.headerReads = 0
        HeaderHook.commits = 40
        HeaderHook.ran = false
        HeaderHook.childFailure = nil
        let io = hookedIO()
        defer { io.deinitialize(count: 1); io.deallocate() }
        var opts = cs_options()
        opts.durability = CS_DURABILITY_NOSYNC
        opts.io = UnsafePointer(io)
        var handle: OpaquePointer?
        let rc = cs_db_open(path, &opts, &handle)
        let reads = HeaderHook.headerReads
        HeaderHook.point = nil // the hook is for the open only (a commit reads the header too)
        #expect(HeaderHook.ran, "the hook did not run (the opener read the header \(reads) times)")
        #expect(HeaderHook.childFailure == nil, "\(HeaderHook.childFailure ?? "")")
        try #require(rc == CS_OK, "cs_db_open: \(String(cString: cs_errmsg()))")
        let h = try #require(handle)
        var rejected = [CChar](repeating: 0, count: 256)
        var rv: UInt64 = 0, ov: UInt64 = 0
        #expect(!cs_db_rejected_commit(h, &rv, &ov, &rejected, rejected.count),
                "a commit was reported rejected: \(String(decoding: rejected.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")

        func counter() throws -> Int64 {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "cs_txn_begin")
            defer { _ = cs_txn_end(t) }
            return try ChildSchema(t!).counterValues(t!).n
        }
        #expect(try counter() == 45, "the opener does not see every commit")
        var t: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "cs_txn_begin(WRITE)")
        let s = try ChildSchema(t!)
        var o = try openObj(t!, s.counter, s.counterKey)
        try must(cs_obj_set_int(&o, s.n, try getInt(&o, s.n) + 1), "set n")
        try must(cs_txn_commit(t), "cs_txn_commit")
        _ = cs_txn_end(t)
        #expect(cs_db_close(h) == CS_OK)
        #expect(cs_file_verify(path) == CS_OK, "\(String(cString: cs_errmsg()))")
        let again = try DB(path, flags: 0)
        let n = try again.read { try ChildSchema($0).counterValues($0).n }
        #expect(n == 46, "after reopening")
    }
}
