// Transactions (cstore.h "Transaction states"): rollback, snapshots, advance, promote, commit
// versions, refused writes, and the errors of opening missing, foreign and read-only files.

import CStore
import Foundation
import Testing

@Suite struct TxnTests {
    @Test func rollbackDiscardsObjectsAndSchema() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, c): (UInt32, UInt32) = (0, 0)
            var k0: Int64 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "v", CS_TYPE_INT)
                var o = try createObj(txn, t)
                k0 = o.key
                check(cs_obj_set_int(&o, c, 1))
            }
            let txn = try db.begin(CS_TXN_WRITE)
            let v0 = cs_txn_version(txn)
            for _ in 0..<500 { _ = try createObj(txn, t) }
            var o = try openObj(txn, t, k0)
            check(cs_obj_set_int(&o, c, 2))
            let t2 = try addTable(txn, "Added")
            _ = try addColumn(txn, t, "added", CS_TYPE_STRING)
            check(cs_table_rename(txn, t, "Renamed"))
            _ = t2
            try must(cs_txn_rollback(txn), "cs_txn_rollback")
            #expect(!cs_txn_is_writing(txn), "a rollback leaves a read transaction")
            #expect(cs_txn_version(txn) == v0, "reading the version it began writing on")
            #expect(try tableCount(txn, t) == 1)
            var x = try openObj(txn, t, k0)
            #expect(try getInt(&x, c) == 1)
            var found: UInt32 = 0
            expectCode(cs_table_find(txn, "Added", &found), CS_NOTFOUND, "rolled back table")
            expectCode(cs_column_find(txn, t, "added", &found), CS_NOTFOUND, "rolled back column")
            #expect(try findTable(txn, "T") == t, "rolled back rename")
            check(cs_txn_end(txn))
            // cs_txn_end on a writing transaction rolls back too.
            let w = try db.begin(CS_TXN_WRITE)
            _ = try createObj(w, t)
            check(cs_txn_end(w))
            try db.read { txn throws in #expect(try tableCount(txn, t) == 1) }
            try db.reopen()
            try db.read { txn throws in
                #expect(try tableCount(txn, t) == 1)
                expectCode(cs_table_find(txn, "Added", &found), CS_NOTFOUND, "after reopen")
            }
            db.verify()
        }
    }

    @Test func readSnapshotIsStableUntilAdvance() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, c): (UInt32, UInt32) = (0, 0)
            var k: Int64 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "v", CS_TYPE_INT)
                var o = try createObj(txn, t)
                k = o.key
                check(cs_obj_set_int(&o, c, 10))
            }
            let reader = try db.begin(CS_TXN_READ)
            let rv = cs_txn_version(reader)
            #expect(rv == cs_db_version(db.h))
            var ro = try openObj(reader, t, k)
            for round in 1...3 {
                try db.write { txn throws in
                    var o = try openObj(txn, t, k)
                    check(cs_obj_set_int(&o, c, 10 + Int64(round)))
                    _ = try createObj(txn, t)
                    _ = try addTable(txn, "New\(round)")
                }
                #expect(try getInt(&ro, c) == 10, "the reader keeps its snapshot (round \(round))")
                #expect(try tableCount(reader, t) == 1)
                var f: UInt32 = 0
                expectCode(cs_table_find(reader, "New\(round)", &f), CS_NOTFOUND, "schema of the snapshot")
                #expect(cs_txn_version(reader) == rv)
            }
            #expect(cs_db_version(db.h) > rv)
            var changed = false
            try must(cs_txn_advance(reader, &changed), "cs_txn_advance")
            #expect(changed)
            #expect(cs_txn_version(reader) == cs_db_version(db.h))
            #expect(try getInt(&ro, c) == 13, "the accessor reads the new version after advance")
            #expect(try tableCount(reader, t) == 4)
            #expect(try findTable(reader, "New3") != CS_NONE)
            try must(cs_txn_advance(reader, &changed), "cs_txn_advance")
            #expect(!changed, "nothing new to advance to")
            check(cs_txn_advance(reader, nil), "cs_txn_advance(NULL)")
            check(cs_txn_end(reader))
        }
    }

    @Test func promoteCommitAndVersions() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let t = try db.write { try addTable($0, "T") }
            let txn = try db.begin(CS_TXN_READ)
            let v0 = cs_txn_version(txn)
            #expect(!cs_txn_is_writing(txn))
            // Another transaction commits; promote moves to the newest version.
            try db.write { _ = try createObj($0, t) }
            let v1 = cs_db_version(db.h)
            #expect(v1 > v0)
            try must(cs_txn_promote(txn), "cs_txn_promote")
            #expect(cs_txn_is_writing(txn))
            #expect(cs_txn_version(txn) == v1, "promote advances to the newest version")
            #expect(try tableCount(txn, t) == 1)
            expectCode(cs_txn_promote(txn), CS_MISUSE, "promote while writing")
            expectCode(cs_txn_advance(txn, nil), CS_MISUSE, "advance while writing")
            _ = try createObj(txn, t)
            try must(cs_txn_commit(txn), "cs_txn_commit")
            #expect(!cs_txn_is_writing(txn))
            let v2 = cs_txn_version(txn)
            #expect(v2 > v1, "commit leaves the transaction reading the version it wrote")
            #expect(v2 == cs_db_version(db.h))
            #expect(cs_txn_last_commit_bytes(txn) > 0)
            #expect(try tableCount(txn, t) == 2)
            expectCode(cs_txn_commit(txn), CS_MISUSE, "commit of a read transaction")
            check(cs_txn_end(txn))
            try db.reopen()
            #expect(cs_db_version(db.h) == v2, "the version survives a reopen")
        }
    }

    @Test func writesOutsideWriteTransactionAreReadOnly() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, c, l): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var k: Int64 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "v", CS_TYPE_INT)
                l = try addColumn(txn, t, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
                k = try createObj(txn, t).key
            }
            try db.read { txn throws in
                var o = try openObj(txn, t, k)
                expectCode(cs_obj_set_int(&o, c, 1), CS_READONLY, "cs_obj_set_int in a read transaction")
                expectCode(setVal(&o, c, .int(1)), CS_READONLY, "cs_obj_set in a read transaction")
                var n = cs_obj()
                expectCode(cs_obj_create(txn, t, &n), CS_READONLY, "cs_obj_create in a read transaction")
                expectCode(cs_obj_delete(&o), CS_READONLY, "cs_obj_delete in a read transaction")
                var x: UInt32 = 0
                expectCode(cs_table_add(txn, "X", 0, &x), CS_READONLY, "cs_table_add in a read transaction")
                expectCode(cs_column_add(txn, t, "x", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &x), CS_READONLY,
                           "cs_column_add in a read transaction")
                expectCode(cs_table_clear(txn, t), CS_READONLY, "cs_table_clear in a read transaction")
                var coll = try openColl(&o, l)
                expectCode(listAppend(&coll, .int(1)), CS_READONLY, "cs_list_append in a read transaction")
                expectCode(cs_txn_rollback(txn), CS_MISUSE, "rollback of a read transaction")
                #expect(try getInt(&o, c) == 0)
            }
        }
    }

    @Test func closeWithLiveTransactionIsMisuse() throws {
        try withTempDir { dir in
            let (rc, h) = openRaw(dir.path(), flags: CS_OPEN_CREATE)
            try must(rc, "open")
            var txn: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &txn), "begin")
            expectCode(cs_db_close(h), CS_MISUSE, "cs_db_close with a live transaction")
            check(cs_txn_end(txn))
            check(cs_db_close(h))
        }
    }

    @Test func openMissingFileWithoutCreateIsNotFound() throws {
        try withTempDir { dir in
            let path = dir.path("missing.cstore")
            let (rc, h) = openRaw(path, flags: 0)
            expectCode(rc, CS_NOTFOUND, "open a missing file")
            if let h { _ = cs_db_close(h) }
            #expect(!FileManager.default.fileExists(atPath: path), "no file is created")
            let (rc2, h2) = openRaw(path, flags: CS_OPEN_READONLY)
            expectCode(rc2, CS_NOTFOUND, "read-only open of a missing file")
            if let h2 { _ = cs_db_close(h2) }
        }
    }

    @Test(arguments: ["text", "zeros", "random"])
    func foreignFileIsCorrupt(_ kind: String) throws {
        try withTempDir { dir in
            let path = dir.path("foreign.cstore")
            var rng = SeededRNG(seed: 99)
            let data: [UInt8]
            switch kind {
            case "text": data = Array(String(repeating: "This is not a database file.\n", count: 400).utf8)
            case "zeros": data = [UInt8](repeating: 0, count: 16384)
            default: data = randomBytes(16384, &rng)
            }
            #expect(FileManager.default.createFile(atPath: path, contents: Data(data)))
            for flags in [0, CS_OPEN_CREATE, CS_OPEN_READONLY] {
                let (rc, h) = openRaw(path, flags: flags)
                expectCode(rc, CS_CORRUPT, "open a \(kind) file with flags \(flags)")
                if let h, rc == Int32(CS_OK) { _ = cs_db_close(h) }
            }
            expectCode(cs_file_verify(path), CS_CORRUPT, "cs_file_verify of a \(kind) file")
            // The file is left as it was.
            #expect(FileManager.default.contents(atPath: path) == Data(data))
        }
    }

    @Test func readOnlyOpenRefusesWrites() throws {
        try withTempDir { dir in
            let path = dir.path()
            var (t, c): (UInt32, UInt32) = (0, 0)
            var k: Int64 = 0
            do {
                let db = try DB(path)
                try db.write { txn throws in
                    t = try addTable(txn, "T")
                    c = try addColumn(txn, t, "v", CS_TYPE_INT)
                    var o = try createObj(txn, t)
                    k = o.key
                    check(cs_obj_set_int(&o, c, 5))
                }
                db.close()
            }
            let before = FileManager.default.contents(atPath: path)
            let db = try DB(path, flags: CS_OPEN_READONLY)
            var txn: OpaquePointer?
            expectCode(cs_txn_begin(db.h, Int32(CS_TXN_WRITE), &txn), CS_READONLY, "begin WRITE on a read-only database")
            if let txn { _ = cs_txn_end(txn) }
            try db.read { txn throws in
                var o = try openObj(txn, t, k)
                #expect(try getInt(&o, c) == 5, "reads work")
                expectCode(cs_txn_promote(txn), CS_READONLY, "promote on a read-only database")
                expectCode(cs_obj_set_int(&o, c, 6), CS_READONLY, "set on a read-only database")
            }
            check(cs_db_verify(db.h), "verify read-only")
            db.close()
            #expect(FileManager.default.contents(atPath: path) == before, "the file is unchanged")
        }
    }

    @Test func sameFileOpenedTwiceSharesState() throws {
        try withTempDir { dir in
            let a = try DB(dir.path())
            let b = try DB(dir.path())
            let t = try a.write { try addTable($0, "T") }
            try b.read { txn throws in
                #expect(try findTable(txn, "T") == t, "the second handle sees the first one's commit")
            }
            try b.write { txn throws in _ = try createObj(txn, t) }
            try a.read { txn throws in #expect(try tableCount(txn, t) == 1) }
            #expect(cs_db_version(a.h) == cs_db_version(b.h))
            a.close()
            try b.read { txn throws in #expect(try tableCount(txn, t) == 1, "still open through the other handle") }
            b.close()
        }
    }

    @Test func tooManyPinnedVersionsIsBusy() throws {
        try withTempDir { dir in
            let (rc, hh) = openRaw(dir.path(), flags: CS_OPEN_CREATE, maxVersions: 2)
            try must(rc, "open with max_active_versions 2")
            let h = hh!
            defer { _ = cs_db_close(h) }
            func commitOne() -> Int32 {
                var w: OpaquePointer?
                let rc = cs_txn_begin(h, Int32(CS_TXN_WRITE), &w)
                guard rc == Int32(CS_OK), let w else { return rc }
                var t: UInt32 = 0
                _ = cs_table_add(w, "T\(cs_txn_version(w))", 0, &t)
                let c = cs_txn_commit(w)
                _ = cs_txn_end(w)
                return c
            }
            var r1: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &r1), "first reader")
            check(commitOne(), "commit with one pinned version")
            var r2: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &r2), "second reader on a newer version")
            #expect(cs_txn_version(r2) > cs_txn_version(r1))
            let c = commitOne()
            var r3: OpaquePointer?
            let third = cs_txn_begin(h, Int32(CS_TXN_READ), &r3)
            if c == Int32(CS_OK) {
                expectCode(third, CS_BUSY, "a third pinned version with max_active_versions 2")
                #expect(!lastMessage().isEmpty, "CS_BUSY says which version is pinned")
            } else {
                expectCode(c, CS_BUSY, "a commit that would make a third live version")
            }
            if third == Int32(CS_OK) { check(cs_txn_end(r3)) }
            check(cs_txn_end(r1))
            var r4: OpaquePointer?
            check(cs_txn_begin(h, Int32(CS_TXN_READ), &r4), "a reader after the oldest one ended")
            #expect(cs_txn_version(r4) == cs_db_version(h))
            check(cs_txn_end(r4))
            check(cs_txn_end(r2))
        }
    }

    @Test func aCommitThatWouldPinOneVersionTooManyIsRolledBackBeforeWriting() throws {
        try withTempDir { dir in
            let (rc, hh) = openRaw(dir.path(), flags: CS_OPEN_CREATE, maxVersions: 2)
            try must(rc, "open with max_active_versions 2")
            let h = hh!
            defer { _ = cs_db_close(h) }
            func tables(_ txn: OpaquePointer) -> UInt32 {
                var n: UInt32 = 0
                while true {
                    var t: UInt32 = 0
                    if cs_table_find(txn, "T\(n)", &t) != Int32(CS_OK) { return n }
                    n += 1
                }
            }
            var r1: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &r1), "first reader")
            var w: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &w), "writer")
            var t: UInt32 = 0
            try must(cs_table_add(w, "T0", 0, &t), "T0")
            try must(cs_txn_commit(w), "a commit next to one older reader")
            #expect(tables(w!) == 1, "the writer reads its commit")
            // r2 pins the current version; a commit now would pin a third.
            var r2: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &r2), "second reader")
            let before = cs_db_version(h)
            try must(cs_txn_promote(w), "promote")
            try must(cs_table_add(w, "T1", 0, &t), "T1")
            expectCode(cs_txn_commit(w), CS_BUSY, "a commit making a third live version")
            #expect(lastMessage().contains("too many active versions"), "\(lastMessage())")
            #expect(lastMessage().contains("rolled back"), "\(lastMessage())")
            #expect(cs_db_version(h) == before, "nothing was committed")
            #expect(cs_txn_version(w) == before)
            #expect(tables(w!) == 1, "the writer still reads the version it pins")
            #expect(!cs_txn_is_writing(w))
            // Once the oldest reader ends, the same commit goes through.
            check(cs_txn_end(r1))
            try must(cs_txn_promote(w), "promote again")
            try must(cs_table_add(w, "T1", 0, &t), "T1 again")
            try must(cs_txn_commit(w), "the commit after the oldest reader ended")
            #expect(tables(w!) == 2)
            #expect(tables(r2!) == 1, "the second reader keeps its snapshot")
            check(cs_txn_end(w))
            check(cs_txn_end(r2))
        }
    }

    @Test func statsCountPinnedVersions() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            #expect(try db.stats().pinned == 0, "no transaction, nothing pinned")
            let r1 = try db.begin(CS_TXN_READ)
            let r1b = try db.begin(CS_TXN_READ)
            let both = try db.stats().pinned
            #expect(both == 1, "two readers of one version pin one version (stats say \(both))")
            try db.write { txn throws in _ = try addTable(txn, "T") }
            let r2 = try db.begin(CS_TXN_READ)
            #expect(try db.stats().pinned == 2)
            check(cs_txn_end(r1))
            #expect(try db.stats().pinned == 2, "the other reader still pins the first version")
            check(cs_txn_end(r1b))
            #expect(try db.stats().pinned == 1)
            check(cs_txn_end(r2))
            #expect(try db.stats().pinned == 0)
        }
    }

    @Test func readersOfOneVersionCountOnceTowardsTheLimit() throws {
        try withTempDir { dir in
            var opts = cs_options()
            opts.flags = UInt32(CS_OPEN_CREATE)
            opts.durability = CS_DURABILITY_NOSYNC
            opts.max_active_versions = 1
            var hh: OpaquePointer?
            try must(cs_db_open(dir.path(), &opts, &hh), "open with max_active_versions 1")
            let h = hh!
            defer { _ = cs_db_close(h) }
            var readers: [OpaquePointer] = []
            for i in 0..<4 {
                var r: OpaquePointer?
                let rc = cs_txn_begin(h, Int32(CS_TXN_READ), &r)
                expectCode(rc, CS_OK, "reader \(i) of the one and only version")
                if rc == Int32(CS_OK), let r { readers.append(r) }
            }
            #expect(Set(readers.map { cs_txn_version($0) }).count == 1)
            for r in readers { check(cs_txn_end(r)) }
        }
    }

    @Test func rolledBackBulkInsertLeavesTheFileAsItWas() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let t = try db.write { txn throws -> UInt32 in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                return t
            }
            let before = try db.stats()
            let bytesBefore = try Data(contentsOf: URL(fileURLWithPath: dir.path()))
            let txn = try db.begin(CS_TXN_WRITE)
            for i in 0..<200_000 {
                var o = try createObj(txn, t)
                try must(setVal(&o, 0, .str("bulk \(i)")), "set")
            }
            check(cs_txn_rollback(txn))
            #expect(try tableCount(txn, t) == 0)
            check(cs_txn_end(txn))
            let after = try db.stats()
            #expect(after.version == before.version)
            #expect(after.logical_size == before.logical_size)
            #expect(after.used_bytes == before.used_bytes)
            #expect(after.free_bytes == before.free_bytes)
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path())).prefix(4096) == bytesBefore.prefix(4096),
                    "the header is unchanged")
            // The next commit behaves normally.
            try db.write { txn throws in _ = try createObj(txn, t) }
            try db.read { txn throws in #expect(try tableCount(txn, t) == 1) }
            db.verify()
        }
    }
}
