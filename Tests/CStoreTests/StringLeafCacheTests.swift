// The read transaction's cache of the last string leaf opened (leaf.c, str_get): a pass over
// one string column opens each leaf once. Whatever it reads must be exactly what a fresh open
// reads: across leaves, columns of one leaf, versions, reused transactions and frozen ones.

import CStore
import Foundation
import Testing

/// A table of `count` objects with two String columns `a` ("a<key>") and `b` ("b<key>" for even
/// keys, null for odd ones), two of every nine values longer than a leaf keeps inline.
private func makeStrings(_ db: DB, count: Int) throws -> (t: UInt32, a: UInt32, b: UInt32, keys: [Int64]) {
    var t: UInt32 = 0, a: UInt32 = 0, b: UInt32 = 0
    var keys: [Int64] = []
    try db.write { txn throws in
        t = try addTable(txn, "S")
        a = try addColumn(txn, t, "a", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
        b = try addColumn(txn, t, "b", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
        for _ in 0..<count {
            var o = try createObj(txn, t)
            #expect(setVal(&o, a, .str(aValue(o.key))) == 0)
            if o.key % 2 == 0 { #expect(setVal(&o, b, .str("b\(o.key)")) == 0) }
            keys.append(o.key)
        }
    }
    return (t, a, b, keys)
}

/// Column `a`'s value of object `key` (long for keys 3 and 7 mod 9).
private func aValue(_ key: Int64, round: Int = 0) -> String {
    let base = round == 0 ? "a\(key)" : "r\(round)-\(key)"
    return key % 9 == 3 || key % 9 == 7 ? base + String(repeating: "x", count: 300) : base
}

@Suite struct StringLeafCacheTests {
    @Test func readsFollowLeavesColumnsAndVersions() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, a, b, keys) = try makeStrings(db, count: 1500)
            let reader = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(reader) }
            // Alternate between leaves and between the two columns of one leaf.
            let far = keys[keys.count - 1]
            for k in keys.prefix(300) {
                var x = try openObj(reader, t, k)
                var y = try openObj(reader, t, far)
                #expect(getVal(&x, a) == .str(aValue(k)))
                #expect(getVal(&y, a) == .str(aValue(far)))
                #expect(getVal(&x, b) == (k % 2 == 0 ? .str("b\(k)") : .null))
                #expect(getVal(&x, a) == .str(aValue(k)))
            }
            // A writer changes column a; the reader sees the change only after advancing.
            var first = try openObj(reader, t, keys[0])
            #expect(getVal(&first, a) == .str(aValue(keys[0])))
            try db.write { txn throws in
                for k in keys.prefix(700) {
                    var o = try openObj(txn, t, k)
                    #expect(setVal(&o, a, .str(aValue(k, round: 1))) == 0)
                    // read back within the write (no cache while writing)
                    #expect(getVal(&o, a) == .str(aValue(k, round: 1)))
                }
            }
            #expect(getVal(&first, a) == .str(aValue(keys[0])), "the pinned snapshot is unchanged")
            var changed = false
            try must(cs_txn_advance(reader, &changed), "advance")
            #expect(changed)
            var cursor = cs_obj()
            for k in keys {
                var o = cs_obj()
                cs_obj_prepare(reader, t, k, &cursor, &o)
                #expect(getVal(&o, a) == .str(aValue(k, round: k < keys[700] ? 1 : 0)), "object \(k)")
                cursor = o
            }
        }
    }

    /// cs_obj_get's shortcut for a pass over one String or Binary column (the column and leaf of
    /// its last such read) must not answer for another table, column or type: two tables whose
    /// String columns have the same number, a Binary column, and an Int column in between.
    @Test func readsOfOtherTablesAndColumnsAreNotTakenForTheLastOne() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t1: UInt32 = 0, t2: UInt32 = 0, s1: UInt32 = 0, s2: UInt32 = 0, bin: UInt32 = 0, n: UInt32 = 0
            var keys: [Int64] = []
            try db.write { txn throws in
                t1 = try addTable(txn, "One")
                t2 = try addTable(txn, "Two")
                s1 = try addColumn(txn, t1, "s", CS_TYPE_STRING)
                bin = try addColumn(txn, t1, "d", CS_TYPE_BINARY, flags: CS_COL_NULLABLE)
                n = try addColumn(txn, t1, "n", CS_TYPE_INT)
                s2 = try addColumn(txn, t2, "s", CS_TYPE_STRING)
                for i in 0..<600 {
                    var o = try createObj(txn, t1)
                    #expect(setVal(&o, s1, .str("one\(o.key)")) == 0)
                    if i % 3 != 0 { #expect(setVal(&o, bin, .binary([UInt8(i % 256), 7])) == 0) }
                    try must(cs_obj_set_int(&o, n, Int64(i)), "set n")
                    var p = try createObj(txn, t2)
                    #expect(setVal(&p, s2, .str("two\(p.key)")) == 0)
                    keys.append(o.key)
                }
            }
            #expect(s1 == s2, "the test needs both String columns at one number")
            try db.read { r throws in
                var c1 = cs_obj(), c2 = cs_obj()
                for (i, k) in keys.enumerated() {
                    var o = cs_obj(), p = cs_obj()
                    cs_obj_prepare(r, t1, k, &c1, &o)
                    cs_obj_prepare(r, t2, k, &c2, &p)
                    #expect(getVal(&o, s1) == .str("one\(k)"))
                    #expect(getVal(&p, s2) == .str("two\(k)"), "object \(k) of the other table")
                    #expect(getVal(&o, bin) == (i % 3 != 0 ? .binary([UInt8(i % 256), 7]) : .null))
                    #expect(getVal(&o, n) == .int(Int64(i)))
                    #expect(getVal(&o, s1) == .str("one\(k)"))
                    c1 = o
                    c2 = p
                }
            }
        }
    }

    @Test func reusedTransactionsReadEveryCommit() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            // one leaf, values of one length: with no reader pinning old versions, the space
            // of a leaf freed by one commit is taken by a later one, so a new version's leaf
            // may sit at a ref an earlier version's leaf had
            let (t, a, _, keys) = try makeStrings(db, count: 40)
            func value(_ k: Int64, _ round: Int) -> String { round == 0 ? aValue(k) : "v\(round % 10)-\(k)" }
            for round in 0..<30 {
                // Twice on the same version: the second begin takes the struct and caches over.
                for _ in 0..<2 {
                    try db.read { r throws in
                        var cursor = cs_obj()
                        for k in keys {
                            var o = cs_obj()
                            cs_obj_prepare(r, t, k, &cursor, &o)
                            #expect(getVal(&o, a) == .str(value(k, round)), "round \(round), object \(k)")
                            cursor = o
                        }
                    }
                }
                for _ in 0..<3 {
                    try db.write { txn throws in
                        for k in keys {
                            var o = try openObj(txn, t, k)
                            #expect(setVal(&o, a, .str(value(k, round + 1))) == 0)
                        }
                    }
                }
            }
        }
    }

    @Test func frozenTransactionsReadOnSeveralThreads() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, a, b, keys) = try makeStrings(db, count: 2000)
            let live = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(live) }
            var frozenTxn: OpaquePointer?
            try must(cs_txn_freeze(db.h, live, &frozenTxn), "freeze")
            nonisolated(unsafe) let frozen = frozenTxn!
            defer { _ = cs_txn_end(frozen) }
            let failures = Shared(0)
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                // each thread its own order, so the threads' caches hold different leaves
                let order = thread % 2 == 0 ? keys : keys.reversed()
                for k in order {
                    var o = cs_obj()
                    guard cs_obj_open(frozen, t, k, &o) == 0 else { failures.mutate { $0 += 1 }; continue }
                    var va = cs_value(), vb = cs_value()
                    guard cs_obj_get(&o, a, &va) == 0, cs_obj_get(&o, b, &vb) == 0 else {
                        failures.mutate { $0 += 1 }
                        continue
                    }
                    let sa = String(decoding: UnsafeRawBufferPointer(start: va.v.bytes.ptr, count: va.v.bytes.len), as: UTF8.self)
                    let okB = k % 2 == 0
                        ? vb.type == CS_TYPE_STRING
                            && String(decoding: UnsafeRawBufferPointer(start: vb.v.bytes.ptr, count: vb.v.bytes.len), as: UTF8.self) == "b\(k)"
                        : vb.type == CS_TYPE_NULL
                    if sa != aValue(k) || !okB { failures.mutate { $0 += 1 } }
                }
            }
            #expect(failures.value == 0)
        }
    }
}
