// A writer process killed at every write it makes (docs/FORMAT.md §2, Commit protocol: the header
// flip is the only commit point): the file left behind verifies and holds a prefix of the committed batches.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// In a child process only: the pwrite call that kills the process (1-based), and a count.
nonisolated(unsafe) private var killAtWrite = Int.max
nonisolated(unsafe) private var writesSeen = 0

private let batches = 5
private let perBatch = 300

/// In a child process: appends `batches` committed batches of `perBatch` objects to table "T"
/// through a cs_io that kills the process with SIGKILL at write number `killAt`. If it is never
/// killed it exits with the number of writes it made as its status.
private func writerChild(_ path: String, _ killAt: Int) -> Never {
    killAtWrite = killAt
    var io = cs_io()
    io.open = { _, p, flags, mode in Glibc.open(p!, flags, mode) }
    io.close = { _, fd in Glibc.close(fd) }
    io.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
    io.pwrite = { _, fd, buf, n, off in
        writesSeen += 1
        if writesSeen == killAtWrite { raise(SIGKILL) }
        return Glibc.pwrite(fd, buf, n, off)
    }
    io.fdatasync = { _, fd in Glibc.fdatasync(fd) }
    io.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
    io.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
    var opts = cs_options()
    opts.durability = CS_DURABILITY_FULL
    var h: OpaquePointer?
    let rc = withUnsafePointer(to: &io) { p -> Int32 in
        opts.io = p
        let rc = cs_db_open(path, &opts, &h)
        guard rc == Int32(CS_OK), let h else { return rc }
        var table: UInt32 = 0
        for b in 0..<batches {
            var t: OpaquePointer?
            guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &t) == Int32(CS_OK), let txn = t else { return 201 }
            if b == 0 && cs_table_find(txn, "T", &table) != Int32(CS_OK) { return 202 }
            for _ in 0..<perBatch {
                var o = cs_obj()
                guard cs_obj_create(txn, table, &o) == Int32(CS_OK),
                      cs_obj_set_int(&o, 0, Int64(b)) == Int32(CS_OK) else { return 203 }
            }
            guard cs_txn_commit(txn) == Int32(CS_OK) else { return 204 }
            _ = cs_txn_end(txn)
        }
        return cs_db_close(h) == Int32(CS_OK) ? 0 : 205
    }
    exit(rc == 0 ? Int32(min(writesSeen, 199)) : rc)
}

@Suite struct CrashTests {
    @Test func writerKilledAtEveryWrite() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let base = dir.path("base.cstore")
        do {
            let db = try DB(base, durability: CS_DURABILITY_FULL)
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "batch", CS_TYPE_INT)
            }
            db.close()
        }
        let pristine = try Data(contentsOf: URL(fileURLWithPath: base))

        // A run that is never killed reports how many writes the five commits make.
        let probe = dir.path("probe.cstore")
        try pristine.write(to: URL(fileURLWithPath: probe))
        let result = await #expect(processExitsWith: .failure, "the unkilled writer exits with its write count") { [probe = probe as String] in
            writerChild(probe, Int.max)
        }
        guard case .exitCode(let total)? = result?.exitStatus, total > 0, total < 199 else {
            Issue.record("the unkilled writer did not report a write count: \(String(describing: result?.exitStatus))")
            return
        }
        let reference = try DB(probe, flags: 0)
        try reference.read { txn throws in
            #expect(try tableCount(txn, try findTable(txn, "T")) == UInt64(batches * perBatch))
        }
        reference.close()

        var last = 0
        for k in 1...Int(total) {
            let path = dir.path("killed-\(k).cstore")
            try pristine.write(to: URL(fileURLWithPath: path))
            await #expect(processExitsWith: .signal(SIGKILL), "killed at write \(k) of \(total)") { [path = path as String, k = k as Int] in
                writerChild(path, k)
            }
            let db = try DB(path, flags: 0)
            try db.read { txn throws in
                let t = try findTable(txn, "T")
                let n = Int(try tableCount(txn, t))
                #expect(n % perBatch == 0 && n <= batches * perBatch, "killed at write \(k): \(n) objects is not a whole number of batches")
                #expect(n >= last, "killed at write \(k): \(n) objects, fewer than \(last) when killed earlier")
                last = max(last, n)
                // The surviving batches are complete and in order.
                var it = cs_iter()
                try must(cs_iter_init(&it, txn, t), "iter")
                var o = cs_obj()
                var i = 0
                var bad = 0
                while cs_iter_next(&it, &o) == Int32(CS_OK) {
                    if try getInt(&o, 0) != Int64(i / perBatch) { bad += 1 }
                    i += 1
                }
                #expect(bad == 0, "killed at write \(k): \(bad) objects in the wrong batch")
            }
            db.verify("killed at write \(k)")
            // The file takes new commits after the crash.
            try db.write { txn throws in _ = try createObj(txn, try findTable(txn, "T")) }
            db.verify("a commit after the crash at write \(k)")
            db.close()
        }
        #expect(last >= (batches - 1) * perBatch, "late kills keep the earlier batches")
    }
}
