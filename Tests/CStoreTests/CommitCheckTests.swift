// A commit's own checks that fail in every build (docs/ARCHITECTURE.md, Errors): the size check
// of the free-list and run-list nodes a commit builds (commit.c, `serialise`), made to fail by
// the test hook cs_test_fail_commit_check (docs/CONTRIBUTING.md, "Injected allocation failures").

import CStore
import Foundation
import Testing

@Suite(.enabled(if: cs_test_fail_node_allocation(0), "the test hooks exist only in builds with the core's assertions"))
struct CommitCheckTests {
    /// Sets v of every tenth object of T to -k (one commit's worth of changed leaves).
    private func change(_ txn: OpaquePointer) throws {
        let t = try findTable(txn, "T")
        for k in stride(from: Int64(0), to: 2000, by: 10) {
            var o = try openObj(txn, t, k)
            try must(cs_obj_set_int(&o, 0, -k), "set v")
        }
    }

    /// A commit whose size check fails (an error of the library, injected) fails with
    /// CS_INTERNAL and changes nothing: the file keeps every byte and its version. The same
    /// commit made again then succeeds, verifies, and leaves the file as the same commit does on
    /// a copy that never failed (the same size, the same free space: nothing the failed commit
    /// had placed is lost).
    @Test func aFailedSizeCheckFailsTheCommitAndChangesNothing() throws {
        try withTempDir { dir in
            let path = dir.path("a.cstore"), copy = dir.path("b.cstore")
            do {
                let db = try DB(path)
                try db.write { txn throws in
                    let t = try addTable(txn, "T")
                    _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                    for i in 0..<2000 {
                        var o = try createObj(txn, t)
                        try must(cs_obj_set_int(&o, 0, Int64(i)), "set v")
                    }
                }
                try db.write { try change($0) } // free space from the old leaves
                db.close()
            }
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            let db = try DB(path, flags: 0)
            defer { db.close() }
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            let version = cs_db_version(db.h)
            var t: OpaquePointer?
            try must(cs_txn_begin(db.h, Int32(CS_TXN_WRITE), &t), "begin")
            try change(t!)
            #expect(cs_test_fail_commit_check())
            let rc = cs_txn_commit(t!)
            let message = lastMessage()
            _ = cs_txn_end(t)
            #expect(rc == Int32(CS_INTERNAL), "\(codeName(rc)) \(message)")
            #expect(message.contains("an error of the library; nothing was written"), "\(message)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the file keeps every byte")
            #expect(cs_db_version(db.h) == version)
            try db.write { try change($0) }
            db.verify()
            let other = try DB(copy, flags: 0)
            try other.write { try change($0) }
            let (a, b) = (try db.stats(), try other.stats())
            other.close()
            #expect(a.version == b.version && a.file_size == b.file_size && a.logical_size == b.logical_size
                    && a.free_bytes == b.free_bytes, "after the failed commit: \(a); never failed: \(b)")
        }
    }
}
