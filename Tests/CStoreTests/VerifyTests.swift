// cs_db_verify and cs_file_verify (docs/ARCHITECTURE.md, Errors and untrusted bytes): healthy files verify, damaged ones are
// reported as CS_CORRUPT by open or verify, never a crash.

import CStore
import Foundation
import Testing

/// Writes a file with ints, strings, a list and links in one commit and returns its bytes.
func buildSample(_ path: String, rows: Int = 20_000) throws -> (Data, cs_db_stats) {
    let db = try DB(path)
    try db.write { txn throws in
        let target = try addTable(txn, "Target")
        let t = try addTable(txn, "T")
        let a = try addColumn(txn, t, "a", CS_TYPE_INT)
        let s = try addColumn(txn, t, "s", CS_TYPE_STRING)
        let l = try addColumn(txn, t, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
        let k = try addColumn(txn, t, "k", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
        var targets: [Int64] = []
        for _ in 0..<100 { targets.append(try createObj(txn, target).key) }
        for i in 0..<rows {
            var o = try createObj(txn, t)
            try must(cs_obj_set_int(&o, a, Int64(i) * 7919), "set a")
            try must(setVal(&o, s, .str("row \(i) text text text")), "set s")
            try must(setVal(&o, k, .link(target, targets[i % 100])), "set k")
            if i % 10 == 0 {
                var c = try openColl(&o, l)
                for j in 0..<5 { try must(listAppend(&c, .int(Int64(i + j))), "append") }
            }
        }
    }
    db.verify("sample")
    let st = try db.stats()
    db.close()
    return (try Data(contentsOf: URL(fileURLWithPath: path)), st)
}

/// Expects the file at `path` to be reported as corrupt by open, cs_db_verify or cs_file_verify.
private func expectCorrupt(_ path: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let (rc, h) = openRaw(path, flags: 0)
    if let h, rc == Int32(CS_OK) {
        let v = cs_db_verify(h)
        // or the damage made opening pass over the newest commit, which it reports
        let rolledBack = cs_db_rejected_commit(h, nil, nil, nil, 0)
        #expect(v == Int32(CS_CORRUPT) || rolledBack,
                "\(what): open succeeded and cs_db_verify returned \(codeName(v))",
                sourceLocation: sourceLocation)
        if v == Int32(CS_CORRUPT) {
            #expect(!lastMessage().isEmpty, "\(what): the message says where", sourceLocation: sourceLocation)
        }
        _ = cs_db_close(h)
    } else {
        #expect(rc == Int32(CS_CORRUPT), "\(what): open returned \(codeName(rc))", sourceLocation: sourceLocation)
    }
    let f = cs_file_verify(path)
    #expect(f == Int32(CS_CORRUPT), "\(what): cs_file_verify returned \(codeName(f))", sourceLocation: sourceLocation)
}

@Suite struct VerifyTests {
    @Test func healthyFilesVerify() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            #expect(cs_db_verify(db.h) == Int32(CS_OK), "an empty database verifies")
            db.close()
            check(cs_file_verify(path), "cs_file_verify of an empty database")
            _ = try buildSample(path, rows: 3000)
            check(cs_file_verify(path), "cs_file_verify of a populated database")
            let again = try DB(path)
            check(cs_db_verify(again.h), "cs_db_verify after reopen")
            again.close()
        }
    }

    @Test func verifyOfMissingFileIsNotFound() throws {
        try withTempDir { dir in
            expectCode(cs_file_verify(dir.path("nope.cstore")), CS_NOTFOUND, "cs_file_verify of a missing file")
        }
    }

    @Test(arguments: [0.3, 0.45, 0.6, 0.75, 0.9])
    func flippedBytesInNodesAreCorrupt(_ fraction: Double) throws {
        try withTempDir { dir in
            let (pristine, st) = try buildSample(dir.path("pristine.cstore"))
            #expect(st.used_bytes * 10 >= st.logical_size * 7, "the sample file is mostly nodes: \(st.used_bytes) of \(st.logical_size)")
            var bytes = [UInt8](pristine)
            let off = (Int(Double(st.logical_size) * fraction) / 8) * 8
            for i in off..<(off + 24) { bytes[i] ^= 0x5A }
            let path = dir.path("damaged.cstore")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            expectCorrupt(path, "24 bytes flipped at \(off) of \(st.logical_size)")
        }
    }

    @Test func damagedHeaderIsCorrupt() throws {
        try withTempDir { dir in
            let (pristine, _) = try buildSample(dir.path("pristine.cstore"), rows: 2000)
            var bytes = [UInt8](pristine)
            for i in 0..<16 { bytes[i] ^= 0xFF }
            let path = dir.path("damaged.cstore")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let (rc, h) = openRaw(path, flags: 0)
            expectCode(rc, CS_CORRUPT, "open with a damaged header")
            if let h, rc == Int32(CS_OK) { _ = cs_db_close(h) }
            expectCode(cs_file_verify(path), CS_CORRUPT, "cs_file_verify with a damaged header")
        }
    }

    /// An object whose cluster leaf is damaged is not "deleted": opening its list reports
    /// CS_CORRUPT, not CS_NOTFOUND (the existence check behind it can report corruption).
    @Test func damagedLeafIsCorruptNotDeleted() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var t: UInt32 = 0, l: UInt32 = 0, key: Int64 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                l = try addColumn(txn, t, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
                var o = try createObj(txn, t)
                key = o.key
                var c = try openColl(&o, l)
                try must(listAppend(&c, .int(7)), "append")
            }
            db.close()
            // top (header slot) -> table list (top slot 1) -> table 0's node -> its cluster root
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            func le64(_ at: Int) -> Int { rawLE64(bytes, at) }
            let tableNode = rawTableNode(bytes, t)
            let root = le64(tableNode + 8)
            #expect(root > 4096 && root % 8 == 0)
            bytes[root + 2] = 0xFF // flags no node has
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let damaged = try DB(path)
            try damaged.read { txn throws in
                var o = cs_obj()
                cs_obj_prepare(txn, t, key, nil, &o)
                var c = cs_coll()
                expectCode(cs_coll_open(&o, l, &c), CS_CORRUPT, "cs_coll_open on a damaged leaf")
                var exists = true
                expectCode(cs_obj_check_exists(&o, &exists), CS_CORRUPT, "cs_obj_check_exists on a damaged leaf")
                #expect(!cs_obj_exists(&o), "the bool form reads a damaged node as absent, as documented")
                var other = cs_obj()
                cs_obj_prepare(txn, t, key + 1, nil, &other)
                expectCode(cs_obj_check_exists(&other, &exists), CS_CORRUPT, "no key can be looked up in a damaged leaf")
            }
            // In a healthy file the check tells an object from a deleted one.
            let healthy = try DB(dir.path("healthy.cstore"))
            try healthy.write { txn throws in
                let h = try addTable(txn, "H")
                var a = try createObj(txn, h)
                let b = try createObj(txn, h)
                try must(cs_obj_delete(&a), "delete")
                var exists = true
                try must(cs_obj_check_exists(&a, &exists), "check a deleted object")
                #expect(!exists)
                var bb = b
                try must(cs_obj_check_exists(&bb, &exists), "check a live object")
                #expect(exists)
                var none = cs_obj()
                try must(cs_obj_check_exists(&none, &exists), "check a zeroed accessor")
                #expect(!exists)
            }
            healthy.close()
            damaged.close()
        }
    }

    @Test func truncatedFileIsCorrupt() throws {
        try withTempDir { dir in
            let (pristine, st) = try buildSample(dir.path("pristine.cstore"))
            let path = dir.path("truncated.cstore")
            try pristine.prefix(Int(st.logical_size / 2)).write(to: URL(fileURLWithPath: path))
            expectCorrupt(path, "truncated to half its logical size")
        }
    }
}

/// Opens a (possibly damaged) file and reads everything reachable through the API, ignoring
/// the result codes: the point is that nothing crashes.
func readEverything(_ path: String) {
    let (rc, h) = openRaw(path, flags: CS_OPEN_READONLY)
    guard rc == Int32(CS_OK), let h else { return }
    defer { _ = cs_db_close(h) }
    _ = cs_db_verify(h)
    var s = cs_db_stats()
    _ = cs_db_stats_get(h, &s)
    var t: OpaquePointer?
    guard cs_txn_begin(h, Int32(CS_TXN_READ), &t) == Int32(CS_OK), let txn = t else { return }
    defer { _ = cs_txn_end(txn) }
    for table in 0..<min(cs_table_slots(txn), 64) {
        var info = cs_table_info()
        guard cs_table_info_get(txn, table, &info) == Int32(CS_OK) else { continue }
        var n: UInt64 = 0
        _ = cs_table_count(txn, table, &n)
        var it = cs_iter()
        guard cs_iter_init(&it, txn, table) == Int32(CS_OK) else { continue }
        var o = cs_obj()
        var seen = 0
        while seen < 100_000 && cs_iter_next(&it, &o) == Int32(CS_OK) {
            seen += 1
            for col in 0..<min(info.col_slots, 32) {
                var ci = cs_column_info()
                guard cs_column_info_get(txn, table, col, &ci) == Int32(CS_OK) else { continue }
                if ci.coll == CS_COLL_NONE && ci.type != CS_TYPE_BACKLINK {
                    var v = cs_value()
                    _ = cs_obj_get(&o, col, &v)
                } else if ci.type != CS_TYPE_BACKLINK {
                    var c = cs_coll()
                    guard cs_coll_open(&o, col, &c) == Int32(CS_OK) else { continue }
                    var size = 0
                    guard cs_coll_size(&c, &size) == Int32(CS_OK) else { continue }
                    for i in 0..<min(size, 1000) {
                        var v = cs_value()
                        _ = cs_list_get(&c, i, &v)
                    }
                }
            }
        }
    }
}

@Suite struct CorruptionSweepTests {
    /// Damages a one-commit file at 40 places between 5% and 95% of its logical size, one place
    /// per copy, and expects every copy to be reported as corrupt. A child process then opens
    /// and reads each damaged copy through the API, and must exit normally.
    @Test func sweepOfDamagedCopies() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (pristine, st) = try buildSample(dir.path("pristine.cstore"), rows: 8000)
        for step in 0..<40 {
            var bytes = [UInt8](pristine)
            let fraction = 0.05 + 0.9 * Double(step) / 39.0
            let off = (Int(Double(st.logical_size) * fraction) / 8) * 8 + (step % 3) * 3
            for i in off..<(off + 8) { bytes[i] = ~bytes[i] }
            let path = dir.path("damaged-\(step).cstore")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            expectCorrupt(path, "8 bytes inverted at \(off) of \(st.logical_size)")
            await #expect(processExitsWith: .success, "reading the copy damaged at \(off) must not crash") { [path = path as String] in
                readEverything(path)
            }
        }
    }
}
