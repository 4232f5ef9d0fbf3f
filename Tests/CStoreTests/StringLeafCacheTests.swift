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
