// The lookup hot paths (index.c, cluster.c): index leaves whose entries all have one length are
// searched by position with an interpolated first probe, and a read transaction keeps the last
// table and index roots it found. These tests check the answers of those paths against what the
// data must give: dense and sparse keys, leaves of null entries next to leaves of values, runs
// of one value across leaves, and caches that must follow the snapshot (advance, promote,
// rollback, commit).

import CStore
import Foundation
import Testing

private func findIndexed(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32, _ v: Val) -> (Int32, Int64) {
    var key: Int64 = -1
    let rc = withValue(v) { cs_index_find(txn, t, c, $0, &key) }
    return (rc, key)
}

private func findAllIndexed(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32, _ v: Val) -> (Int32, [Int64]) {
    var keys: UnsafeMutablePointer<Int64>?
    var n = 0
    let rc = withValue(v) { cs_index_find_all(txn, t, c, $0, &keys, &n) }
    defer { cs_keys_free(keys) }
    guard rc == Int32(CS_OK), let keys, n > 0 else { return (rc, []) }
    return (rc, Array(UnsafeBufferPointer(start: keys, count: n)))
}

private func rangeIndexed(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32, _ lo: Val, _ hi: Val) -> (Int32, [Int64]) {
    var keys: UnsafeMutablePointer<Int64>?
    var n = 0
    let rc = withValue(lo) { pl in withValue(hi) { ph in cs_index_range(txn, t, c, pl, ph, &keys, &n) } }
    defer { cs_keys_free(keys) }
    guard rc == Int32(CS_OK), let keys, n > 0 else { return (rc, []) }
    return (rc, Array(UnsafeBufferPointer(start: keys, count: n)))
}

private func findPK(_ txn: OpaquePointer, _ t: UInt32, _ v: Int64) -> (Int32, Int64) {
    var key: Int64 = -1
    var pk = cs_int(v)
    let rc = cs_table_find_primary(txn, t, &pk, &key)
    return (rc, key)
}

@Suite struct LookupPathTests {
    /// Primary keys 3·π(i) for a permutation π of 0..<n, inserted in scrambled order, so index
    /// leaves are full of fixed-length entries with gaps between values: every present value is
    /// found with the object that holds it, every absent one (the gaps, below, above) is not,
    /// inside the writing transaction and after the commit.
    @Test func densePrimaryKeysAreFoundAndGapsAreNot() throws {
        let n = 30_000
        func pkOf(_ i: Int) -> Int64 { Int64((i * 7919) % n) * 3 }
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, id: UInt32 = 0, seq: UInt32 = 0
            func checkAll(_ txn: OpaquePointer, _ phase: String) throws {
                var wrong = 0
                for v in Int64(-4)...Int64(3 * n + 4) {
                    let (rc, key) = findPK(txn, t, v)
                    if v >= 0 && v < Int64(3 * n) && v % 3 == 0 {
                        guard rc == Int32(CS_OK) else {
                            Issue.record("\(phase): pk \(v) not found (\(codeName(rc)))")
                            wrong += 1
                            if wrong > 5 { return }
                            continue
                        }
                        var o = try openObj(txn, t, key)
                        let got = try getInt(&o, id)
                        if got != v {
                            Issue.record("\(phase): pk \(v) found object \(key), whose pk is \(got)")
                            wrong += 1
                        }
                    } else if rc != Int32(CS_NOTFOUND) {
                        Issue.record("\(phase): absent pk \(v) gave \(codeName(rc)) (key \(key))")
                        wrong += 1
                    }
                    if wrong > 5 { return }
                }
                // windows of the index in value order
                for (lo, hi) in [(Int64(-10), Int64(10)), (Int64(3 * n - 7), Int64(3 * n + 7)), (Int64(4000), Int64(4600))] {
                    let (rc, keys) = rangeIndexed(txn, t, id, .int(lo), .int(hi))
                    expectCode(rc, CS_OK, "\(phase): range \(lo)...\(hi)")
                    var values: [Int64] = []
                    for k in keys {
                        var o = try openObj(txn, t, k)
                        values.append(try getInt(&o, id))
                    }
                    let want = Array(stride(from: max(0, (lo + 2) / 3 * 3), through: min(hi, Int64(3 * n - 3)), by: 3))
                    #expect(values == want, "\(phase): range \(lo)...\(hi) gave values \(values.prefix(8))…")
                }
            }
            let txn = try db.begin(CS_TXN_WRITE)
            t = try addTable(txn, "P")
            id = try addColumn(txn, t, "id", CS_TYPE_INT)
            seq = try addColumn(txn, t, "seq", CS_TYPE_INT)
            try must(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
            for i in 0..<n {
                var o = cs_obj()
                var pk = cs_int(pkOf(i))
                try must(cs_obj_create_primary(txn, t, &pk, &o), "create pk \(pkOf(i))")
                try must(cs_obj_set_int(&o, seq, Int64(i)), "set seq")
            }
            try checkAll(txn, "uncommitted")
            try must(cs_txn_commit(txn), "commit")
            _ = cs_txn_end(txn)
            try db.read { txn in try checkAll(txn, "committed") }
            db.verify("dense primary keys")
        }
    }

    /// A nullable indexed Int column whose index has leaves holding only null entries, leaves
    /// holding only values, and one value repeated over several leaves.
    @Test func nullLeavesValueLeavesAndLongRunsOfOneValue() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, c: UInt32 = 0
            var nulls: [Int64] = [], fives: [Int64] = [], byValue: [Int64: Int64] = [:]
            try db.write { txn in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "v", CS_TYPE_INT, flags: CS_COL_INDEXED | CS_COL_NULLABLE)
                for i in 0..<3000 {
                    var o = try createObj(txn, t)
                    switch i % 3 {
                    case 0: nulls.append(o.key) // never set: null
                    case 1:
                        try must(setVal(&o, c, .int(5)), "set 5")
                        fives.append(o.key)
                    default:
                        let v = Int64(i) * 1_000_003 - 1_500_000_000
                        try must(setVal(&o, c, .int(v)), "set \(v)")
                        byValue[v] = o.key
                    }
                }
            }
            try db.read { txn in
                let (rcN, gotNulls) = findAllIndexed(txn, t, c, .null)
                expectCode(rcN, CS_OK, "find_all(null)")
                #expect(gotNulls == nulls, "find_all(null): \(gotNulls.count) keys, want \(nulls.count)")
                let (rc1, firstNull) = findIndexed(txn, t, c, .null)
                expectCode(rc1, CS_OK, "find(null)")
                #expect(firstNull == nulls.first, "find(null) gave \(firstNull)")
                let (rc5, gotFives) = findAllIndexed(txn, t, c, .int(5))
                expectCode(rc5, CS_OK, "find_all(5)")
                #expect(gotFives == fives, "find_all(5): \(gotFives.count) keys, want \(fives.count)")
                for (v, k) in byValue {
                    let (rc, key) = findIndexed(txn, t, c, .int(v))
                    if rc != Int32(CS_OK) || key != k {
                        Issue.record("find(\(v)) gave \(codeName(rc)) key \(key), want \(k)")
                        return
                    }
                    expectCode(findIndexed(txn, t, c, .int(v + 1)).0, CS_NOTFOUND, "find(\(v + 1))")
                }
                expectCode(findIndexed(txn, t, c, .int(4)).0, CS_NOTFOUND, "find(4)")
                expectCode(findIndexed(txn, t, c, .int(.min)).0, CS_NOTFOUND, "find(min)")
                expectCode(findIndexed(txn, t, c, .int(.max)).0, CS_NOTFOUND, "find(max)")
            }
            db.verify("nullable index")
        }
    }

    /// The roots a read transaction remembers belong to its snapshot: a commit made elsewhere is
    /// invisible until it advances, visible after; a promoted transaction sees its own writes and,
    /// after a rollback, no longer sees them.
    @Test func rootCachesFollowTheSnapshot() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, id: UInt32 = 0
            try db.write { txn in
                t = try addTable(txn, "P")
                id = try addColumn(txn, t, "id", CS_TYPE_INT)
                try must(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
                for v in 0..<500 {
                    var o = cs_obj()
                    var pk = cs_int(Int64(v) * 2)
                    try must(cs_obj_create_primary(txn, t, &pk, &o), "create")
                }
            }
            let reader = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(reader) }
            expectCode(findPK(reader, t, 10).0, CS_OK, "pk 10 before")
            expectCode(findPK(reader, t, 11).0, CS_NOTFOUND, "pk 11 before")

            // another handle commits enough objects to change both trees' roots
            let other = try DB(dir.path())
            var added: [Int64] = []
            try other.write { txn in
                for v in 0..<2000 {
                    var o = cs_obj()
                    var pk = cs_int(Int64(v) * 2 + 1)
                    try must(cs_obj_create_primary(txn, t, &pk, &o), "create odd")
                    added.append(o.key)
                }
            }
            other.close()

            expectCode(findPK(reader, t, 11).0, CS_NOTFOUND, "pk 11 in the old snapshot")
            var o = cs_obj()
            expectCode(cs_obj_open(reader, t, added.last!, &o), CS_NOTFOUND, "new object in the old snapshot")

            var changed = false
            try must(cs_txn_advance(reader, &changed), "advance")
            #expect(changed)
            let (rc11, k11) = findPK(reader, t, 11)
            expectCode(rc11, CS_OK, "pk 11 after advancing")
            #expect(k11 == added[5], "pk 11 is object \(k11), want \(added[5])")
            try must(cs_obj_open(reader, t, added.last!, &o), "new object after advancing")
            #expect(try getInt(&o, id) == 3999)

            // promoted: its own write is visible; rolled back: gone again
            try must(cs_txn_promote(reader), "promote")
            var n = cs_obj()
            var pk = cs_int(100_000)
            try must(cs_obj_create_primary(reader, t, &pk, &n), "create in the promoted transaction")
            let (rcNew, kNew) = findPK(reader, t, 100_000)
            expectCode(rcNew, CS_OK, "own write")
            #expect(kNew == n.key)
            try must(cs_txn_rollback(reader), "rollback")
            expectCode(findPK(reader, t, 100_000).0, CS_NOTFOUND, "rolled-back write")
            expectCode(cs_obj_open(reader, t, n.key, &o), CS_NOTFOUND, "rolled-back object")
            expectCode(findPK(reader, t, 3999).0, CS_OK, "pk 3999 after the rollback")
        }
    }
}
