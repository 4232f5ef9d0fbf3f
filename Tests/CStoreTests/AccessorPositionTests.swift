// Accessors positioned without a lookup (cs_obj_prepare with a hint, the path of a pass over a
// table in key order) and the read transaction's cache of checked Int column nodes that
// cs_obj_get_int reads through: both must give exactly what a fresh lookup gives.

import CStore
import Foundation
import Testing

/// A table `Rows` of `count` objects with an Int column `v` (= key * 3) and a String column
/// `s`, then every seventh object deleted. Returns the table, the columns and the live keys.
private func makeRows(_ db: DB, count: Int) throws -> (t: UInt32, v: UInt32, s: UInt32, keys: [Int64]) {
    var t: UInt32 = 0, v: UInt32 = 0, s: UInt32 = 0
    var keys: [Int64] = []
    try db.write { txn throws in
        t = try addTable(txn, "Rows")
        v = try addColumn(txn, t, "v", CS_TYPE_INT)
        s = try addColumn(txn, t, "s", CS_TYPE_STRING)
        for _ in 0..<count {
            var o = try createObj(txn, t)
            try must(cs_obj_set_int(&o, v, o.key * 3), "set v")
            #expect(setVal(&o, s, .str("row \(o.key)")) == 0)
            keys.append(o.key)
        }
    }
    try db.write { txn throws in
        for (i, k) in keys.enumerated() where i % 7 == 3 {
            var o = try openObj(txn, t, k)
            try must(cs_obj_delete(&o), "delete")
        }
    }
    let live = keys.enumerated().filter { $0.offset % 7 != 3 }.map(\.element)
    return (t, v, s, live)
}

@Suite struct AccessorPositionTests {
    @Test func passInKeyOrderIsPositionedFromThePreviousRow() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, v, _, keys) = try makeRows(db, count: 2000)
            try db.read { txn throws in
                var cursor = cs_obj()
                var positioned = 0
                for k in keys {
                    var o = cs_obj()
                    cs_obj_prepare(txn, t, k, &cursor, &o)
                    if o.leaf != nil { positioned += 1 } else { #expect(cs_obj_exists(&o)) }
                    #expect(try getInt(&o, v) == k * 3, "object \(k)")
                    cursor = o
                }
                // Only the first object of each leaf (at most 2000 / 256 + 1 of them, the tree
                // splits leaves in halves) needs a descent.
                #expect(positioned >= keys.count - 16, "\(positioned) of \(keys.count) positioned")
                #expect(positioned < keys.count, "the first object has no previous row")
            }
        }
    }

    @Test func hintIsIgnoredUnlessTheKeyIsTheNextRow() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, v, _, keys) = try makeRows(db, count: 600)
            var other: UInt32 = 0
            try db.write { txn throws in
                other = try addTable(txn, "Other")
                _ = try addColumn(txn, other, "v", CS_TYPE_INT)
                _ = try createObj(txn, other)
                _ = try createObj(txn, other)
            }
            try db.read { txn throws in
                var first = try openObj(txn, t, keys[0])
                // The key after the next one: not the next row.
                var o = cs_obj()
                cs_obj_prepare(txn, t, keys[2], &first, &o)
                #expect(o.leaf == nil)
                #expect(try getInt(&o, v) == keys[2] * 3)
                // A hint of another table, even on the "next" key value.
                var hint = try openObj(txn, other, 0)
                cs_obj_prepare(txn, t, 1, &hint, &o)
                #expect(o.leaf == nil)
                // A deleted key (3 was deleted): not positioned, and reading it says so.
                var before = try openObj(txn, t, 2)
                cs_obj_prepare(txn, t, 3, &before, &o)
                #expect(o.leaf == nil)
                var out: Int64 = 0
                #expect(cs_obj_get_int(&o, v, &out) == Int32(CS_NOTFOUND))
                #expect(!cs_obj_exists(&o))
                // No hint at all.
                cs_obj_prepare(txn, t, keys[5], nil, &o)
                #expect(o.leaf == nil)
                #expect(try getInt(&o, v) == keys[5] * 3)
            }
            // A hint from another transaction is not used.
            let a = try db.begin(CS_TXN_READ)
            let b = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(a); _ = cs_txn_end(b) }
            var inA = try openObj(a, t, keys[0])
            var o = cs_obj()
            cs_obj_prepare(b, t, keys[1], &inA, &o)
            #expect(o.leaf == nil)
            #expect(try getInt(&o, v) == keys[1] * 3)
        }
    }

    /// cs_obj_advance moves an accessor in place: positioned exactly when cs_obj_prepare with
    /// the accessor as hint would be, and reading what a fresh lookup of the key reads.
    @Test func advanceInPlaceMatchesPrepare() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, v, s, keys) = try makeRows(db, count: 2000)
            // every live key in order, then some jumps (back, across leaves, a deleted key)
            let visits = keys + [keys[10], keys[11], keys[1500], 3, keys[12], keys[13]]
            try db.read { txn throws in
                var moving = cs_obj()
                cs_obj_prepare(txn, t, visits[0], nil, &moving)
                var cursor = moving
                var positioned = 0
                for (i, k) in visits.enumerated() {
                    var want = cs_obj()
                    if i > 0 {
                        cs_obj_advance(&moving, k)
                        cs_obj_prepare(txn, t, k, &cursor, &want)
                    } else {
                        want = moving
                    }
                    #expect(moving.key == k && moving.table == t && moving.txn == txn)
                    #expect((moving.leaf == nil) == (want.leaf == nil), "visit \(i): key \(k)")
                    #expect(moving.leaf == want.leaf && moving.row == want.row && moving.epoch == want.epoch)
                    if moving.leaf != nil { positioned += 1 }
                    if k == 3 {
                        // deleted: not positioned, and reading it says so
                        var out: Int64 = 0
                        #expect(cs_obj_get_int(&moving, v, &out) == Int32(CS_NOTFOUND))
                        continue
                    }
                    if moving.leaf == nil { #expect(cs_obj_exists(&moving)) }
                    #expect(try getInt(&moving, v) == k * 3, "object \(k)")
                    #expect(getVal(&moving, s) == .str("row \(k)"))
                    cursor = moving
                }
                #expect(positioned >= keys.count - 16, "\(positioned) of \(keys.count) positioned")
            }
            // an accessor of another transaction's epoch is not used as a position
            let a = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(a) }
            var o = try openObj(a, t, keys[0])
            o.epoch &+= 1
            cs_obj_advance(&o, keys[1])
            #expect(o.leaf == nil && o.key == keys[1])
            #expect(try getInt(&o, v) == keys[1] * 3)
            // a zeroed accessor only takes the key
            var zero = cs_obj()
            cs_obj_advance(&zero, 5)
            #expect(zero.key == 5 && zero.leaf == nil && zero.txn == nil)
        }
    }

    @Test func cachedColumnNodesFollowLeavesColumnsAndVersions() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, v, s, keys) = try makeRows(db, count: 1500)
            let reader = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(reader) }
            // Alternate between objects of different leaves, so the cache changes leaf each time.
            let far = keys[keys.count - 1]
            for k in keys.prefix(50) {
                var a = try openObj(reader, t, k)
                var b = try openObj(reader, t, far)
                #expect(try getInt(&a, v) == k * 3)
                #expect(try getInt(&b, v) == far * 3)
                #expect(try getInt(&a, v) == k * 3)
                // A string column of the same cached leaf is not read as an int.
                var out: Int64 = 0
                #expect(cs_obj_get_int(&a, s, &out) == Int32(CS_TYPE))
            }
            // Another writer changes the values; the reader sees them only after advancing.
            var first = try openObj(reader, t, keys[0])
            #expect(try getInt(&first, v) == keys[0] * 3)
            try db.write { txn throws in
                for k in keys.prefix(300) {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_set_int(&o, v, -k), "set")
                }
            }
            #expect(try getInt(&first, v) == keys[0] * 3, "the pinned snapshot is unchanged")
            var changed = false
            try must(cs_txn_advance(reader, &changed), "advance")
            #expect(changed)
            var cursor = cs_obj()
            for k in keys.prefix(400) {
                var o = cs_obj()
                cs_obj_prepare(reader, t, k, &cursor, &o)
                #expect(try getInt(&o, v) == (k < keys[300] ? -k : k * 3), "object \(k) after advancing")
                cursor = o
            }
            #expect(try getInt(&first, v) == -keys[0], "an accessor made before advancing reads the new value")
        }
    }
}

/// A handle keeps the struct of its last ended transaction and, when the next read lands on the
/// same version, its schema and caches: what the next transaction reads must be exactly what a
/// fresh one reads, across commits, schema changes and accessors made before.
@Suite struct TransactionReuseTests {
    @Test func reusedTransactionsSeeEveryCommitAndSchemaChange() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, v: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                v = try addColumn(txn, t, "v", CS_TYPE_INT)
                for i in 0..<600 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, v, Int64(i)), "set")
                }
            }
            var expected = (0..<600).map(Int64.init)
            var before = cs_obj()
            for round in 1...40 {
                // Twice on the same version: the second begin takes the struct over warm.
                for _ in 0..<2 {
                    let r = try db.begin(CS_TXN_READ)
                    for k in [0, 299, 599] {
                        var o = try openObj(r, t, Int64(k))
                        #expect(try getInt(&o, v) == expected[k], "round \(round), object \(k)")
                    }
                    // An accessor made in an earlier transaction of this handle.
                    if before.txn == r {
                        #expect(try getInt(&before, v) == expected[Int(before.key)], "round \(round): older accessor")
                    }
                    before = try openObj(r, t, Int64(round * 7 % 600))
                    _ = try getInt(&before, v)
                    var found: UInt32 = 0
                    #expect(cs_table_find(r, "Extra\(round - 1)", &found) == Int32(round > 1 ? CS_OK : CS_NOTFOUND))
                    check(cs_txn_end(r))
                }
                try db.write { txn throws in
                    for k in stride(from: round % 3, to: 600, by: 3) {
                        var o = try openObj(txn, t, Int64(k))
                        expected[k] = Int64(round * 1000 + k)
                        try must(cs_obj_set_int(&o, v, expected[k]), "update")
                    }
                    _ = try addTable(txn, "Extra\(round)")
                }
            }
        }
    }
}
