// Several processes on one file (docs/ARCHITECTURE.md, Processes): a commit made by a child process is seen by a
// reader in this process after it advances, and a child that dies inside a write transaction
// leaves the writer lock usable and the file intact.

import CStore
import Foundation
import Testing

/// In a child process: opens `path`, appends `count` objects to table "T" (column 0 set to
/// 7), commits, and exits with a failure status on any error.
private func childAppend(_ path: String, _ count: Int) {
    var opts = cs_options()
    opts.durability = CS_DURABILITY_NOSYNC
    var h: OpaquePointer?
    guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
    var t: OpaquePointer?
    guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &t) == Int32(CS_OK), let txn = t else { exit(11) }
    var table: UInt32 = 0
    guard cs_table_find(txn, "T", &table) == Int32(CS_OK) else { exit(12) }
    for _ in 0..<count {
        var o = cs_obj()
        guard cs_obj_create(txn, table, &o) == Int32(CS_OK) else { exit(13) }
        guard cs_obj_set_int(&o, 0, 7) == Int32(CS_OK) else { exit(14) }
    }
    guard cs_txn_commit(txn) == Int32(CS_OK) else { exit(15) }
    guard cs_txn_end(txn) == Int32(CS_OK) else { exit(16) }
    guard cs_db_close(h) == Int32(CS_OK) else { exit(17) }
    exit(0)
}

@Suite struct MultiProcessTests {
    @Test func commitFromAnotherProcessIsSeenAfterAdvance() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let db = try DB(path)
        let t = try db.write { txn throws -> UInt32 in
            let t = try addTable(txn, "T")
            _ = try addColumn(txn, t, "v", CS_TYPE_INT)
            return t
        }
        let reader = try db.begin(CS_TXN_READ)
        let before = cs_txn_version(reader)
        await #expect(processExitsWith: .success, "a child process appends 5000 objects") { [path = path as String] in
            childAppend(path, 5000)
        }
        #expect(try tableCount(reader, t) == 0, "the reader keeps its snapshot")
        var changed = false
        check(cs_txn_advance(reader, &changed))
        #expect(changed, "the other process's commit is a newer version")
        #expect(cs_txn_version(reader) > before)
        #expect(try tableCount(reader, t) == 5000)
        check(cs_txn_end(reader))
        // This process can write on top of it.
        try db.write { txn throws in
            var o = try createObj(txn, t)
            #expect(try getInt(&o, 0) == 0)
        }
        await #expect(processExitsWith: .success, "a second child appends after this process wrote") { [path = path as String] in
            childAppend(path, 10)
        }
        try db.read { txn throws in
            let n = try tableCount(txn, t)
            #expect(n == 5011, "5000 + 1 + 10 objects; found \(n) at version \(cs_txn_version(txn))")
        }
        db.verify()
        db.close()
        check(cs_file_verify(path))
    }

    @Test func writerDyingInsideATransactionReleasesTheLock() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let db = try DB(path)
        let t = try db.write { txn throws -> UInt32 in
            let t = try addTable(txn, "T")
            _ = try addColumn(txn, t, "v", CS_TYPE_INT)
            for _ in 0..<10 { _ = try createObj(txn, t) }
            return t
        }
        await #expect(processExitsWith: .exitCode(3), "a child dies holding the writer lock") { [path = path as String] in
            var opts = cs_options()
            var h: OpaquePointer?
            guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
            var txn: OpaquePointer?
            guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn) == Int32(CS_OK), let txn else { exit(11) }
            var table: UInt32 = 0
            guard cs_table_find(txn, "T", &table) == Int32(CS_OK) else { exit(12) }
            for _ in 0..<1000 {
                var o = cs_obj()
                _ = cs_obj_create(txn, table, &o)
            }
            _exit(3) // no commit, no end, no close
        }
        // The writer lock must be free again: take it on a thread and give up after 60 s (it
        // takes milliseconds; the bound is for a busy machine under a sanitizer).
        let handle = Shared(db.h)
        let result = Shared<Int32>(-1)
        let taker = Thread {
            var w: OpaquePointer?
            let rc = cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w)
            if rc == Int32(CS_OK), let w {
                var o = cs_obj()
                _ = cs_obj_create(w, t, &o)
                result.value = cs_txn_commit(w)
                _ = cs_txn_end(w)
            } else {
                result.value = rc
            }
        }
        taker.start()
        let deadline = Date().addingTimeInterval(60)
        while result.value == -1 && Date() < deadline {
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        #expect(result.value == Int32(CS_OK), "a write after the dead writer: \(result.value == -1 ? "still waiting after 60 s" : codeName(result.value))")
        guard result.value != -1 else { return } // the thread is stuck; leave the handle open
        try db.read { txn throws in #expect(try tableCount(txn, t) == 11, "the dead writer's objects never appear") }
        db.verify()
        db.close()
        check(cs_file_verify(path))
    }
}
