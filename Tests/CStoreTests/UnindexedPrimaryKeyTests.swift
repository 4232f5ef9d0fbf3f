// An Int primary key without its index (docs/FORMAT.md §6.1, TBLK_NOIDX; docs/ARCHITECTURE.md,
// Primary keys as object keys): while every object's key is its Int primary key, the table's
// cluster keys answer what the primary key's index would (lookups, uniqueness, the query
// engine's ==, IN and ranges), so the index is not kept. The first counter key, a change of the
// primary key or the removal of its column bring the index back; setting the primary key again
// on a table whose keys are its values drops it again.
import CStore
import Foundation
import Testing

private let pkEnd: Int64 = 1 << 61

/// A table "U" with an Int primary key "id" set while empty, an Int "v" holding the same value
/// as "id" (no index: the scanned oracle of every query on "id") and a String "s".
private func makeTable(_ txn: OpaquePointer) throws -> (t: UInt32, id: UInt32, v: UInt32, s: UInt32) {
    let t = try addTable(txn, "U")
    let id = try addColumn(txn, t, "id", CS_TYPE_INT)
    let v = try addColumn(txn, t, "v", CS_TYPE_INT)
    let s = try addColumn(txn, t, "s", CS_TYPE_STRING)
    try must(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
    return (t, id, v, s)
}

private func create(_ txn: OpaquePointer, _ c: (t: UInt32, id: UInt32, v: UInt32, s: UInt32), _ pk: Int64) throws -> Int64 {
    var o = cs_obj()
    var p = cs_int(pk)
    try must(cs_obj_create_primary(txn, c.t, &p, &o), "cs_obj_create_primary(\(pk))")
    try must(cs_obj_set_int(&o, c.v, pk), "set v")
    return o.key
}

/// The table's keying flags as the file holds them (slot 4 of its table node, untagged).
private func keyingFlags(_ path: String, _ t: UInt32) throws -> Int {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let node = rawTableNode(bytes, t)
    let count = Int(bytes[node + 4]) | Int(bytes[node + 5]) << 8
    if count <= 4 { return 0 }
    return rawLE64(bytes, node + 8 + 8 * 4) >> 1
}

/// Every query on "id" against the same query on "v" (scanned): the same keys, and the plan says
/// "id" was answered as an index (its cluster keys when the index is not kept).
private func expectQueriesAgree(_ txn: OpaquePointer, _ c: (t: UInt32, id: UInt32, v: UInt32, s: UInt32), _ what: String,
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
    let conds = ["== 0", "== 7", "== 123456", "== -1", "IN {3, 9, 100, 5000, -4}", "< 50", "<= 50", "> 990",
                 ">= 990", "BETWEEN {10, 20}", "> -5", "< 0", "== 2305843009213693951", ">= 2305843009213693952"]
    for cond in conds {
        let (a, pa) = try keysAndPlan(txn, c.t, "id \(cond)", [])
        let b = try queryKeys(txn, c.t, "v \(cond)")
        #expect(a == b, "\(what): id \(cond) gave \(a.count) keys, v \(cond) \(b.count)", sourceLocation: sourceLocation)
        #expect(pa.kind == CS_PLAN_INDEX.rawValue && pa.col == c.id, "\(what): id \(cond) planned as \(pa.kind)",
                sourceLocation: sourceLocation)
    }
    let sortedA = try queryKeys(txn, c.t, "id > 100 SORT(id DESC)")
    let sortedB = try queryKeys(txn, c.t, "v > 100 SORT(v DESC)")
    #expect(sortedA == sortedB, "\(what): sorted by id", sourceLocation: sourceLocation)
}

private func findPk(_ txn: OpaquePointer, _ t: UInt32, _ pk: Int64) -> Int64? {
    var p = cs_int(pk)
    var key: Int64 = -1
    let rc = cs_table_find_primary(txn, t, &p, &key)
    return rc == 0 ? key : nil
}

@Suite struct UnindexedPrimaryKeyTests {
    /// A new table with an Int primary key keeps no index of it (flags pk-keyed and no index,
    /// format 6); lookups, cs_index_find/_find_all/_range, queries and the uniqueness checks of
    /// single and batched creates all answer from the cluster keys, in the write, after the
    /// commit and after reopening; verify passes.
    @Test func aNewIntPrimaryKeyKeepsNoIndex() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0), s: UInt32(0))
            let n: Int64 = 1000
            try db.write { txn throws in
                c = try makeTable(txn)
                for i in 0..<n { #expect(try create(txn, c, (i * 7919) % n) == (i * 7919) % n) }
                try expectQueriesAgree(txn, c, "in the write")
            }
            func lookups(_ phase: String) throws {
                try db.read { txn throws in
                    for pk: Int64 in [0, 1, 500, 999] {
                        #expect(findPk(txn, c.t, pk) == pk, "\(phase): find \(pk)")
                        var key: Int64 = -1
                        try withValue(.int(pk)) { p in try must(cs_index_find(txn, c.t, c.id, p, &key), "cs_index_find") }
                        #expect(key == pk)
                        var keys: UnsafeMutablePointer<Int64>?
                        var cnt = 0
                        try withValue(.int(pk)) { p in try must(cs_index_find_all(txn, c.t, c.id, p, &keys, &cnt), "find_all") }
                        #expect(cnt == 1 && keys?[0] == pk, "\(phase): find_all \(pk)")
                        cs_keys_free(keys)
                    }
                    for pk: Int64 in [-1, 1000, pkEnd - 1, pkEnd, Int64.max] {
                        #expect(findPk(txn, c.t, pk) == nil, "\(phase): absent \(pk)")
                        var key: Int64 = -1
                        withValue(.int(pk)) { p in expectCode(cs_index_find(txn, c.t, c.id, p, &key), CS_NOTFOUND, "absent") }
                    }
                    var keys: UnsafeMutablePointer<Int64>?
                    var cnt = 0
                    try withValue(.int(10)) { lo in
                        try withValue(.double(19.5)) { hi in
                            try must(cs_index_range(txn, c.t, c.id, lo, hi, &keys, &cnt), "cs_index_range")
                        }
                    }
                    #expect(cnt == 10 && keys?[0] == 10 && keys?[9] == 19, "\(phase): range [10, 19.5]")
                    cs_keys_free(keys)
                    try expectQueriesAgree(txn, c, phase)
                }
            }
            try lookups("read")
            try db.write { txn throws in
                var o = cs_obj()
                var p = cs_int(500)
                expectCode(cs_obj_create_primary(txn, c.t, &p, &o), CS_CONSTRAINT, "a duplicate")
                withValues([.int(2000), .int(7)]) { vals in
                    var cols = [c.id]
                    expectCode(cs_obj_create_many_keys(txn, c.t, 2, 1, &cols, vals, nil), CS_CONSTRAINT, "a batch with a duplicate")
                }
                #expect(findPk(txn, c.t, 2000) == nil, "the refused batch created nothing")
            }
            db.verify("unindexed")
            try db.reopen()
            try lookups("reopened")
            db.close()
            #expect(try keyingFlags(db.path, c.t) == 3, "pk-keyed and no index")
            #expect(try fileFormatVersions(db.path) == (6, 6))
        }
    }

    /// A retired primary key created again takes a counter key: the index is built first and
    /// kept from then on (flags back to pk-keyed alone), and everything answers through it. A
    /// batch holding a negative primary key does the same.
    @Test func aCounterKeyBringsTheIndexBack() throws {
        for batch in [false, true] {
            try withTempDir { dir in
                let db = try DB(dir.path())
                var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0), s: UInt32(0))
                try db.write { txn throws in
                    c = try makeTable(txn)
                    for pk: Int64 in 0..<1000 { _ = try create(txn, c, pk) }
                    var o = try openObj(txn, c.t, 7)
                    try must(cs_obj_delete(&o), "delete 7")
                }
                db.close()
                #expect(try keyingFlags(db.path, c.t) == 3)
                try db.reopen()
                try db.write { txn throws in
                    if batch {
                        try withValues([.int(-4), .int(5000), .int(-4), .int(5000)]) { vals in
                            var cols = [c.id, c.v]
                            var keys = [Int64](repeating: 0, count: 2)
                            try must(cs_obj_create_many_keys(txn, c.t, 2, 2, &cols, vals, &keys), "batch")
                            #expect(keys[0] == pkEnd && keys[1] == 5000)
                        }
                        _ = try create(txn, c, 7)
                    } else {
                        #expect(try create(txn, c, 7) == pkEnd, "7 was retired: a counter key")
                        _ = try create(txn, c, -4)
                    }
                    var o = cs_obj()
                    var p = cs_int(500)
                    expectCode(cs_obj_create_primary(txn, c.t, &p, &o), CS_CONSTRAINT, "a duplicate, through the index")
                    try expectQueriesAgree(txn, c, "after the index came back")
                }
                db.verify("the index came back")
                db.close()
                #expect(try keyingFlags(db.path, c.t) == 1, "pk-keyed, the index kept")
                try db.reopen()
                try db.read { txn throws in
                    #expect(findPk(txn, c.t, 7) != nil && findPk(txn, c.t, -4) != nil && findPk(txn, c.t, 8) == 8)
                    try expectQueriesAgree(txn, c, "reopened")
                }
            }
        }
    }

    /// Turning the primary key off brings its index back (kept when the column is indexed on
    /// its own); setting it again on objects whose keys are their values drops it again; a
    /// removed primary-key column clears the flag. Verify passes after each step.
    @Test func primaryKeyChangesBringTheIndexBackOrDropIt() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0), s: UInt32(0))
            try db.write { txn throws in
                c = try makeTable(txn)
                for pk: Int64 in 0..<300 { _ = try create(txn, c, (pk * 7) % 300) }
            }
            try db.write { txn throws in
                try must(cs_column_set_indexed(txn, c.t, c.id, true), "index id on its own")
                try must(cs_table_set_primary_key(txn, c.t, CS_NONE), "pk off")
                let (k, p) = try keysAndPlan(txn, c.t, "id == 42", [])
                #expect(k == [42] && p.kind == CS_PLAN_INDEX.rawValue, "the column's own index answers")
            }
            db.verify("pk off, id indexed")
            db.close()
            #expect(try keyingFlags(db.path, c.t) == 1)
            try db.reopen()
            try db.write { txn throws in
                try must(cs_table_set_primary_key(txn, c.t, c.id), "pk on again")
                try expectQueriesAgree(txn, c, "pk on again")
            }
            db.verify("pk on again")
            db.close()
            #expect(try keyingFlags(db.path, c.t) == 3, "the keys are the values: no index again")
            try db.reopen()
            try db.write { txn throws in
                try must(cs_column_remove(txn, c.t, c.id), "remove id")
                var o = try createObj(txn, c.t)
                #expect(o.key >= pkEnd, "no primary key: a counter key")
                try must(cs_obj_set_int(&o, c.v, -1), "set v")
            }
            db.verify("pk column removed")
            db.close()
            #expect(try keyingFlags(db.path, c.t) == 1)
        }
    }

    /// Compaction and backups copy the flag: the copy is format 6, verifies, answers lookups and
    /// queries and still refuses a duplicate.
    @Test func compactionAndBackupKeepTheUnindexedKey() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0), s: UInt32(0))
            try db.write { txn throws in
                c = try makeTable(txn)
                for pk: Int64 in 0..<500 { _ = try create(txn, c, (pk * 13) % 500) }
            }
            let copy = dir.path("copy.cstore")
            try db.read { txn throws in try must(cs_txn_write_copy(txn, copy, nil, nil), "write copy") }
            let backup = dir.path("b.csbackup")
            try must(cs_backup_write(db.h, backup, nil, nil, nil), "backup")
            let restored = dir.path("restored.cstore")
            try must(cs_backup_restore(backup, restored, nil, 0, nil, nil, nil), "restore")
            for path in [copy, restored] {
                #expect(try fileFormatVersions(path).0 == 6, "\(path)")
                #expect(try keyingFlags(path, c.t) == 3, "\(path)")
                let d = try DB(path)
                d.verify(path)
                try d.write { txn throws in
                    #expect(findPk(txn, c.t, 77) == 77)
                    try expectQueriesAgree(txn, c, path)
                    var o = cs_obj()
                    var p = cs_int(77)
                    expectCode(cs_obj_create_primary(txn, c.t, &p, &o), CS_CONSTRAINT, "a duplicate in \(path)")
                }
                d.close()
            }
        }
    }

    /// verify refuses the flag where invariant 5 does not hold: a table that gave out counter
    /// keys marked as keeping no index.
    @Test func verifyRefusesTheFlagWithCounterKeys() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0), s: UInt32(0))
            try db.write { txn throws in
                c = try makeTable(txn)
                for pk: Int64 in [1, 2, -3] { _ = try create(txn, c, pk) }
            }
            for i in 0..<2 {
                try db.write { txn throws in _ = try createObj(txn, try addTable(txn, "Other\(i)")) }
            }
            db.verify("healthy")
            db.close()
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let node = rawTableNode(bytes, c.t)
            #expect(rawLE64(bytes, node + 8 + 8 * 4) == (1 << 1) | 1, "pk-keyed, indexed")
            bytes[node + 8 + 8 * 4] = (3 << 1) | 1
            let count = Int(bytes[node + 4]) | Int(bytes[node + 5]) << 8
            let sum = checksum(bytes, at: node, payload: 8 * count)
            bytes[node] = UInt8(sum & 0xFF)
            bytes[node + 1] = UInt8(sum >> 8)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            expectCode(cs_file_verify(path), CS_CORRUPT, "cs_file_verify of the flag with counter keys")
            #expect(lastMessage().contains("no primary-key index"), "the message: \(lastMessage())")
        }
    }
}

/// A node's check (docs/FORMAT.md §3) as the writer computes it, for `payload` bytes at `at`.
private func checksum(_ b: [UInt8], at: Int, payload: Int) -> UInt16 {
    func le(_ i: Int, _ n: Int) -> UInt64 { (0..<n).reduce(UInt64(0)) { $0 | UInt64(b[i + $1]) << (8 * UInt64($1)) } }
    let flags = UInt64(b[at + 2]), width = UInt64(b[at + 3]), count = le(at + 4, 4)
    let words = (payload + 7) / 8
    var a: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ (flags << 40) ^ (width << 32) ^ count
    var s: UInt64 = 0
    for i in 0..<words {
        let w = le(at + 8 + i * 8, 8)
        a = (a ^ w) &* 0x1_0000_0001_b3
        s = s &+ (w ^ (a >> 29))
    }
    a ^= s &* 0xff51_afd7_ed55_8ccd
    a ^= a >> 33
    return UInt16(truncatingIfNeeded: a ^ (a >> 16) ^ (a >> 32) ^ (a >> 48))
}

/// The root of the index of column `col` of table `t` as the file holds it (slot 3 of the table
/// node: 0, or a list with one entry per column; docs/FORMAT.md §6.1).
private func indexRoot(_ path: String, _ t: UInt32, _ col: UInt32) throws -> Int {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let list = rawLE64(bytes, rawTableNode(bytes, t) + 8 + 8 * 3)
    if list == 0 { return 0 }
    let count = Int(bytes[list + 4]) | Int(bytes[list + 5]) << 8
    return Int(col) < count ? rawLE64(bytes, list + 8 + 8 * Int(col)) : 0
}

/// Damages column `id`'s slot in the cluster's second leaf (docs/FORMAT.md §6.2: the root an
/// inner node [first, child0, child1, ...], a leaf [keys, col0, ...]): a number where the ref
/// is, which every read of that column in that leaf reports as CS_CORRUPT; its keys stay readable.
private func damageIdInSecondLeaf(_ path: String, _ t: UInt32, _ id: UInt32) throws {
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let root = rawLE64(bytes, rawTableNode(bytes, t) + 8)
    #expect(bytes[root + 2] & 0x01 != 0, "the cluster root is an inner node")
    let leaf = rawLE64(bytes, root + 8 + 8 * 2)
    #expect(bytes[leaf + 2] & 0x01 == 0, "its second child is a leaf")
    let at = leaf + 8 + 8 * (1 + Int(id))
    for i in 0..<8 { bytes[at + i] = i == 0 ? 3 : 0 }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// 600 objects in table `t`, created by their Int primary keys 0..<600 (the table's keys): v =
/// the key, w = the key + 1000, and s = "s" + the key when given.
private func createKeyed(_ txn: OpaquePointer, _ t: UInt32, v: UInt32, w: UInt32, s: UInt32? = nil) throws {
    for pk in Int64(0)..<600 {
        var o = cs_obj()
        var p = cs_int(pk)
        try must(cs_obj_create_primary(txn, t, &p, &o), "create \(pk)")
        try must(cs_obj_set_int(&o, v, pk), "set v")
        try must(cs_obj_set_int(&o, w, pk + 1000), "set w")
        if let s { try must(setVal(&o, s, .string(Array("s\(pk)".utf8))), "set s") }
    }
}

/// A rebuild of the primary key's index that fails part way (here on a damaged leaf; running
/// out of memory fails the same way) must leave the table as it was: still without the index
/// (TBLK_NOIDX set), no partial index, and for cs_table_set_primary_key the old primary key and
/// no index of the new column either (docs/FORMAT.md §6.1, keying.c invariant 5).
@Suite struct UnindexedPrimaryKeyRollbackTests {
    /// A table "U" (id: Int primary key, indexed on its own too; v; w = id + 1000, unique) with
    /// 600 objects keyed by id, so the cluster has more than one leaf; its second leaf's "id"
    /// damaged.
    private func damagedTable(_ path: String, wIndexed: Bool = false, damaging: String = "id") throws -> (t: UInt32, id: UInt32, v: UInt32, w: UInt32) {
        var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0), w: UInt32(0))
        let db = try DB(path)
        try db.write { txn throws in
            c.t = try addTable(txn, "U")
            c.id = try addColumn(txn, c.t, "id", CS_TYPE_INT, flags: Int(CS_COL_INDEXED))
            c.v = try addColumn(txn, c.t, "v", CS_TYPE_INT)
            c.w = try addColumn(txn, c.t, "w", CS_TYPE_INT, flags: wIndexed ? Int(CS_COL_INDEXED) : 0)
            try must(cs_table_set_primary_key(txn, c.t, c.id), "cs_table_set_primary_key")
            try createKeyed(txn, c.t, v: c.v, w: c.w)
        }
        db.close()
        #expect(try keyingFlags(path, c.t) == 3, "pk-keyed, no primary-key index")
        #expect(try indexRoot(path, c.t, c.id) == 0)
        try damageIdInSecondLeaf(path, c.t, damaging == "id" ? c.id : c.w)
        return c
    }

    private func expectAsBefore(_ txn: OpaquePointer, _ c: (t: UInt32, id: UInt32, v: UInt32, w: UInt32), _ what: String) {
        // by key while the flag is set; a partial index would miss the objects past the
        // first leaf
        #expect(findPk(txn, c.t, 5) == 5, "\(what)")
        #expect(findPk(txn, c.t, 599) == 599, "\(what): an object past the damaged leaf is found by its primary key")
        var info = cs_column_info()
        #expect(cs_column_info_get(txn, c.t, c.id, &info) == 0 && info.flags & UInt32(CS_COL_PRIMARY) != 0,
                "\(what): id is still the primary key")
        #expect(cs_column_info_get(txn, c.t, c.w, &info) == 0 && info.flags & UInt32(CS_COL_PRIMARY) == 0,
                "\(what): w is not")
    }

    private func expectFileAsBefore(_ path: String, _ c: (t: UInt32, id: UInt32, v: UInt32, w: UInt32), _ what: String) throws {
        #expect(try keyingFlags(path, c.t) == 3, "\(what): the table still keeps no primary-key index")
        #expect(try indexRoot(path, c.t, c.id) == 0, "\(what): no partial index of id")
        #expect(try indexRoot(path, c.t, c.w) == 0, "\(what): no index of w")
    }

    /// A rebuild of the old primary key's index that meets the damaged leaf, reached two ways:
    /// a negative primary key takes a counter key, which brings the index back first (the create
    /// fails); cs_table_set_primary_key to w builds w's unique index, then rebuilds the index of
    /// id (indexed on its own too), which fails. Either way the call returns CS_CORRUPT and the
    /// write goes on (and commits) with the table as it was: id the primary key, without its
    /// index, and w without one.
    @Test(arguments: ["a create with a counter key", "a change of the primary key"])
    func aFailedRebuildLeavesTheTableAsItWas(_ what: String) throws {
        try withTempDir { dir in
            let path = dir.path()
            let c = try damagedTable(path)
            let db = try DB(path)
            try db.write { txn throws in
                var rc: Int32
                if what == "a create with a counter key" {
                    var o = cs_obj()
                    var p = cs_int(-1)
                    rc = cs_obj_create_primary(txn, c.t, &p, &o)
                } else {
                    rc = cs_table_set_primary_key(txn, c.t, c.w)
                }
                #expect(rc == Int32(CS_CORRUPT), "\(what): \(codeName(rc)) \(lastMessage())")
                expectAsBefore(txn, c, "after the failure of \(what)")
            }
            db.close()
            try expectFileAsBefore(path, c, "committed after the failure of \(what)")
        }
    }
    /// cs_table_set_primary_key to a column with an index of its own whose values cannot all be
    /// read (w damaged in the second leaf): that index must not be torn down and rebuilt part
    /// way. The index already holds the entries a unique one would (its uniqueness is checked on
    /// it), so it still finds an object past the damaged leaf whatever the call returns.
    @Test func anIndexedColumnKeepsItsIndexWhenItBecomesThePrimaryKey() throws {
        try withTempDir { dir in
            let path = dir.path()
            let c = try damagedTable(path, wIndexed: true, damaging: "w")
            let db = try DB(path)
            try db.write { txn throws in
                let rc = cs_table_set_primary_key(txn, c.t, c.w)
                var v = cs_int(1599)
                var key: Int64 = -1
                let frc = cs_index_find(txn, c.t, c.w, &v, &key)
                #expect(frc == 0 && key == 599, "w's index finds w = 1599 after the call (\(codeName(rc))): \(codeName(frc)) \(key)")
            }
            db.close()
            #expect(try indexRoot(path, c.t, c.w) != 0, "w keeps an index")
        }
    }
}

/// Out of memory at each node allocation of cs_table_set_primary_key in turn (a node made, or a
/// writable copy of one; docs/CONTRIBUTING.md, "Injected allocation failures"): a call that
/// fails leaves the table as it was (the same primary key, every object found by it, no index
/// added or lost), and a caller that commits anyway commits a file that verifies. The campaign
/// ends at the first call that makes every allocation it needs.
@Suite(.enabled(if: cs_test_fail_node_allocation(0), "the allocation-failure hook exists only in builds with the core's assertions"))
struct PrimaryKeyOutOfMemoryTests {
    typealias Cols = (t: UInt32, id: UInt32, v: UInt32, w: UInt32, s: UInt32)

    /// Table "P" of 600 objects: id (the Int primary key, set while the table was empty, so its
    /// keys are its ids and it keeps no index of id; indexed on its own too when `idIndexed`),
    /// v = id, w = id + 1000 (indexed when `wIndexed`), s = "s" + id.
    private func makeFile(_ path: String, idIndexed: Bool, wIndexed: Bool) throws -> Cols {
        var c: Cols = (0, 0, 0, 0, 0)
        let db = try DB(path)
        try db.write { txn throws in
            c.t = try addTable(txn, "P")
            c.id = try addColumn(txn, c.t, "id", CS_TYPE_INT, flags: idIndexed ? Int(CS_COL_INDEXED) : 0)
            c.v = try addColumn(txn, c.t, "v", CS_TYPE_INT)
            c.w = try addColumn(txn, c.t, "w", CS_TYPE_INT, flags: wIndexed ? Int(CS_COL_INDEXED) : 0)
            c.s = try addColumn(txn, c.t, "s", CS_TYPE_STRING)
            try must(cs_table_set_primary_key(txn, c.t, c.id), "cs_table_set_primary_key")
            try createKeyed(txn, c.t, v: c.v, w: c.w, s: c.s)
        }
        db.close()
        return c
    }

    /// The column with the PRIMARY flag (CS_NONE: none); a second one is an issue.
    private func primary(_ txn: OpaquePointer, _ c: Cols) -> UInt32 {
        var found = UInt32(CS_NONE)
        for col in [c.id, c.v, c.w, c.s] {
            var info = cs_column_info()
            if cs_column_info_get(txn, c.t, col, &info) == 0 && info.flags & UInt32(CS_COL_PRIMARY) != 0 {
                #expect(found == UInt32(CS_NONE), "two primary keys: \(found) and \(col)")
                found = col
            }
        }
        return found
    }

    /// Every tenth object, and the last, is found by its value of `pk` (the primary key), and
    /// w's index (when it has one) finds w = 1599.
    private func expectFound(_ txn: OpaquePointer, _ c: Cols, _ pk: UInt32, wIndexed: Bool, _ what: String) throws {
        if pk != UInt32(CS_NONE) {
            var missed: [Int64] = []
            for k in Array(stride(from: Int64(0), to: 600, by: 10)) + [599] {
                var o = try openObj(txn, c.t, k)
                var v = cs_value()
                try must(cs_obj_get(&o, pk, &v), "get the primary key of \(k)")
                var key: Int64 = -1
                if cs_table_find_primary(txn, c.t, &v, &key) != 0 || key != k { missed.append(k) }
            }
            #expect(missed.isEmpty, "\(what): objects not found by their primary key: \(missed)")
        }
        if wIndexed {
            var v = cs_int(1599)
            var key: Int64 = -1
            #expect(cs_index_find(txn, c.t, c.w, &v, &key) == 0 && key == 599, "\(what): w's index")
        }
    }

    /// Out of memory at the 1st, 2nd, ... node allocation of a change of P's primary key to
    /// `target(c)` (after removing it first when `removeFirst`).
    private func campaign(_ name: String, idIndexed: Bool = false, wIndexed: Bool = false, removeFirst: Bool = false,
                          _ target: (Cols) -> UInt32) throws {
        try withTempDir { dir in
            let path = dir.path()
            let c = try makeFile(path, idIndexed: idIndexed, wIndexed: wIndexed)
            let db = try DB(path)
            defer { db.close() }
            if removeFirst { try db.write { try must(cs_table_set_primary_key($0, c.t, UInt32(CS_NONE)), "remove the primary key") } }
            let to = target(c)
            let from = try db.read { primary($0, c) }
            var failures = 0
            for n in UInt32(1)... {
                var fired = false
                var rc: Int32 = 0
                try db.write { txn throws in
                    _ = cs_test_fail_node_allocation(n)
                    rc = cs_table_set_primary_key(txn, c.t, to)
                    fired = cs_test_node_allocation_failed()
                    _ = cs_test_fail_node_allocation(0)
                    if rc != 0 {
                        #expect(rc == Int32(CS_NOMEM) && fired, "\(name), allocation \(n): \(codeName(rc)) \(lastMessage())")
                        #expect(primary(txn, c) == from, "\(name), allocation \(n): the primary key changed")
                        try expectFound(txn, c, from, wIndexed: wIndexed, "\(name), allocation \(n), in the transaction")
                    }
                }
                // committed whatever the call returned
                let vrc = cs_db_verify(db.h)
                #expect(vrc == 0, "\(name), allocation \(n): \(codeName(vrc)) \(lastMessage())")
                let now = try db.read { txn in
                    let p = primary(txn, c)
                    try expectFound(txn, c, p, wIndexed: wIndexed, "\(name), allocation \(n), committed")
                    return p
                }
                #expect(now == (rc == 0 ? to : from), "\(name), allocation \(n): primary key \(now)")
                // a failed call leaves no index on the column it was to make the primary key
                // (a unique index built first must go again)
                if rc != 0 && to != UInt32(CS_NONE) && !(to == c.w && wIndexed) && !(to == c.id && idIndexed) {
                    #expect(try indexRoot(path, c.t, to) == 0, "\(name), allocation \(n): an index left on column \(to)")
                }
                if rc == 0 && !fired { break }
                if rc != 0 { failures += 1 }
                if now != from { try db.write { try must(cs_table_set_primary_key($0, c.t, from), "back to \(from)") } }
                if n > 400 { Issue.record("\(name): no end after 400 allocations"); break }
            }
            #expect(failures > 0, "\(name): no allocation failed")
            print("primary key out of memory, \(name): \(failures) allocations failed in turn")
        }
    }

    @Test func toAnotherIntColumn() throws { try campaign("id to w") { $0.w } }
    @Test func toAStringColumn() throws { try campaign("id to s") { $0.s } }
    @Test func toNone() throws { try campaign("id to none") { _ in UInt32(CS_NONE) } }
    @Test func toAColumnHoldingTheKeys() throws { try campaign("id to v") { $0.v } }
    @Test func fromAKeyIndexedOnItsOwn() throws { try campaign("indexed id to w", idIndexed: true) { $0.w } }
    @Test func toAnIndexedColumn() throws { try campaign("id to indexed w", wIndexed: true) { $0.w } }
    @Test func backAfterItWasRemoved() throws { try campaign("none to id", removeFirst: true) { $0.id } }
}
