// Creating rows with their values (docs/ARCHITECTURE.md, Short columns): a new row appends its
// key only, each value set on it is one append to its column, and a column sub-node may be short
// of its leaf's rows inside a write transaction (the missing tail reads as defaults) until the
// commit pads it. cs_obj_create_many / cs_obj_create_many_int append a leaf at a time.

import CStore
import Foundation
import Testing

/// Reads every column of every object as Vals, in key order.
private func rows(_ txn: OpaquePointer, _ t: UInt32, _ cols: [UInt32]) throws -> [[Val]] {
    var out: [[Val]] = []
    for k in try allKeys(txn, t) {
        var o = try openObj(txn, t, k)
        out.append(cols.map { getVal(&o, $0) ?? .null })
    }
    return out
}

private func count(_ txn: OpaquePointer, _ t: UInt32, _ text: String) throws -> Int { try queryKeys(txn, t, text).count }

private func sum(_ txn: OpaquePointer, _ t: UInt32, _ col: UInt32, _ text: String = "TRUEPREDICATE") throws -> Val {
    let (rc, msg, q) = makeQuery(txn, t, text)
    try must(rc, "cs_query_new: \(msg)")
    defer { cs_query_free(q) }
    var v = cs_value()
    try must(cs_query_aggregate(q, col, CS_AGG_SUM, &v), "cs_query_aggregate")
    return toVal(v)
}

@Suite struct BulkInsertTests {
    /// Rows created and left unset, set out of order, deleted, split and merged across leaves,
    /// queried and summed while their columns are short; then committed: every value reads the
    /// same before and after the commit, and the file verifies.
    @Test func unsetRowsReadAsDefaultsInsideAndAfterTheWrite() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("short.cstore"))
            var t: UInt32 = 0, a: UInt32 = 0, s: UInt32 = 0, n: UInt32 = 0, d: UInt32 = 0, m: UInt32 = 0, l: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                a = try addColumn(txn, t, "a", CS_TYPE_INT)
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                n = try addColumn(txn, t, "n", CS_TYPE_INT, flags: Int(CS_COL_NULLABLE))
                d = try addColumn(txn, t, "d", CS_TYPE_DOUBLE)
                m = try addColumn(txn, t, "m", CS_TYPE_MIXED)
                l = try addColumn(txn, t, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
            }
            let cols = [a, s, n, d, m]
            var model: [Int64: [Val]] = [:]
            let defaults: [Val] = [.int(0), .string([]), .null, .double(0), .null]
            var expectedInside: [[Val]] = []
            try db.write { txn throws in
                // 700 rows over three leaves; every third row sets a, every fifth s and d, every
                // seventh n and m; the rest stay unset (so their columns are short of the leaf)
                for i in 0..<700 {
                    var o = try createObj(txn, t)
                    var row = defaults
                    if i % 3 == 0 { try must(setVal(&o, a, .int(Int64(i) * 1000)), "a"); row[0] = .int(Int64(i) * 1000) }
                    if i % 5 == 0 {
                        try must(setVal(&o, s, .string(Array("s\(i)".utf8))), "s"); row[1] = .string(Array("s\(i)".utf8))
                        try must(setVal(&o, d, .double(Double(i) / 4)), "d"); row[3] = .double(Double(i) / 4)
                    }
                    if i % 7 == 0 {
                        try must(setVal(&o, n, .int(-Int64(i))), "n"); row[2] = .int(-Int64(i))
                        try must(setVal(&o, m, .string(Array("m".utf8))), "m"); row[4] = .string(Array("m".utf8))
                    }
                    model[o.key] = row
                }
                // an earlier row set after later rows were created (a set past a short column's end)
                var o = try openObj(txn, t, 10)
                try must(setVal(&o, a, .int(77)), "set a of row 10")
                model[10]![0] = .int(77)
                // a list on a row whose list column is short
                var lo = try openObj(txn, t, 600)
                var list = cs_coll()
                try must(cs_coll_open(&lo, l, &list), "cs_coll_open")
                try withValue(.int(5)) { p in try must(cs_list_insert(&list, 0, p), "cs_list_insert") }
                // deletes: in the short tail, in the full part, and enough to merge leaves
                for k: Int64 in [699, 698, 5, 6, 300] { var x = try openObj(txn, t, k); try must(cs_obj_delete(&x), "delete"); model[k] = nil }
                for k in Int64(260)..<Int64(480) where model[k] != nil { var x = try openObj(txn, t, k); try must(cs_obj_delete(&x), "delete"); model[k] = nil }
                expectedInside = model.keys.sorted().map { model[$0]! }
                #expect(try rows(txn, t, cols) == expectedInside, "values inside the write")
                #expect(try count(txn, t, "a == 0") == expectedInside.filter { $0[0] == .int(0) }.count)
                #expect(try count(txn, t, "a > 100000") == expectedInside.filter { if case .int(let x) = $0[0] { return x > 100000 }; return false }.count)
                let want = expectedInside.reduce(Int64(0)) { if case .int(let x) = $1[0] { return $0 + x }; return $0 }
                #expect(try sum(txn, t, a) == .int(want), "sum inside the write")
                #expect(try sum(txn, t, a, "a >= 0") == .int(want), "sum with a condition inside the write")
                try must(cs_db_verify(db.h), "verify during the write")
            }
            db.verify("after the commit")
            try db.read { txn throws in
                #expect(try rows(txn, t, cols) == expectedInside, "values after the commit")
                var lo = try openObj(txn, t, 600)
                var list = cs_coll()
                try must(cs_coll_open(&lo, l, &list), "cs_coll_open")
                var size = 0
                try must(cs_coll_size(&list, &size), "cs_coll_size")
                #expect(size == 1)
            }
            try db.reopen()
            db.verify("after reopening")
        }
    }

    /// An index on a column whose rows were created before their values: the index holds each
    /// row's value, and a later row's value set out of order moves its entry.
    @Test func indexedColumnsKeepTheirEntries() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("idx.cstore"))
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let a = try addColumn(txn, t, "a", CS_TYPE_INT, flags: Int(CS_COL_INDEXED))
                let b = try addColumn(txn, t, "b", CS_TYPE_INT)
                var objs: [cs_obj] = []
                for _ in 0..<300 { objs.append(try createObj(txn, t)) }
                for i in stride(from: 299, through: 0, by: -2) { try must(cs_obj_set_int(&objs[i], a, Int64(i % 10)), "a") }
                try must(cs_obj_set_int(&objs[7], b, 1), "b")
                #expect(try count(txn, t, "a == 9") == 30)
                #expect(try count(txn, t, "a == 0") == 150 + 0, "the 150 unset rows (even i) hold 0")
                #expect(try count(txn, t, "b == 1") == 1)
            }
            db.verify()
        }
    }

    @Test func createManyIntAppendsRowsWithTheirValues() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("many.cstore"))
            var t: UInt32 = 0
            var cols: [UInt32] = []
            var unset: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                for c in 0..<3 { cols.append(try addColumn(txn, t, "i\(c)", CS_TYPE_INT)) }
                unset = try addColumn(txn, t, "u", CS_TYPE_INT)
                // one object first, so the batch starts inside a leaf
                var o = try createObj(txn, t)
                try must(cs_obj_set_int(&o, cols[0], -1), "set")
            }
            let n = 1000
            let data: [[Int64]] = (0..<3).map { c in (0..<n).map { r in Int64(r) * Int64(c + 1) - (c == 2 ? 1 << 40 : 0) } }
            var first: Int64 = -1
            try db.write { txn throws in
                try data.withPointers { ptrs in
                    try must(cs_obj_create_many_int(txn, t, n, 3, cols, ptrs, &first), "cs_obj_create_many_int")
                }
                #expect(first == 1)
                #expect(try tableCount(txn, t) == UInt64(n + 1))
                var o = try openObj(txn, t, 1 + 999)
                #expect(try getInt(&o, cols[1]) == 999 * 2)
                #expect(try getInt(&o, unset) == 0)
            }
            db.verify()
            try db.read { txn throws in
                let keys = try allKeys(txn, t)
                #expect(keys == Array(0...Int64(n)))
                for (i, k) in keys.enumerated() where k > 0 {
                    var o = try openObj(txn, t, k)
                    for c in 0..<3 { #expect(try getInt(&o, cols[c]) == data[c][i - 1]) }
                    #expect(try getInt(&o, unset) == 0)
                }
            }
            // the change log names the new objects
            try db.write { txn throws in
                try data.withPointers { ptrs in
                    try must(cs_obj_create_many_int(txn, t, 10, 3, cols, ptrs, nil), "again")
                }
                var o = try createObj(txn, t)
                #expect(o.key == Int64(n + 11), "keys continue after a batch")
                try must(cs_obj_set_int(&o, cols[0], 5), "set")
            }
            db.verify()
        }
    }

    @Test func createManyTakesEveryValueType() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("vals.cstore"))
            var t: UInt32 = 0, target: UInt32 = 0
            var cols: [UInt32] = []
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                _ = try createObj(txn, target)
                t = try addTable(txn, "T")
                cols.append(try addColumn(txn, t, "s", CS_TYPE_STRING))
                cols.append(try addColumn(txn, t, "n", CS_TYPE_INT, flags: Int(CS_COL_NULLABLE)))
                cols.append(try addColumn(txn, t, "d", CS_TYPE_DOUBLE))
                cols.append(try addColumn(txn, t, "b", CS_TYPE_BOOL))
            }
            let n = 600
            let vals: [[Val]] = [
                (0..<n).map { .string(Array(String(repeating: "x", count: $0 % 50).utf8)) },
                (0..<n).map { $0 % 3 == 0 ? .null : .int(Int64($0)) },
                (0..<n).map { .double(Double($0) + 0.5) },
                (0..<n).map { .bool($0 % 2 == 0) },
            ]
            try db.write { txn throws in
                try withValues(vals.flatMap { $0 }) { p in
                    try must(cs_obj_create_many(txn, t, n, cols.count, cols, p, nil), "cs_obj_create_many")
                }
            }
            db.verify()
            try db.read { txn throws in
                let got = try rows(txn, t, cols)
                #expect(got.count == n)
                for r in 0..<n { #expect(got[r] == vals.map { $0[r] }, "row \(r)") }
            }
            // a bad value anywhere refuses the whole call before anything is created
            try db.write { txn throws in
                var bad = vals.flatMap { $0 }
                bad[2 * n + 7] = .string(Array("no".utf8))
                withValues(bad) { p in
                    #expect(cs_obj_create_many(txn, t, n, cols.count, cols, p, nil) == Int32(CS_TYPE))
                }
                #expect(try tableCount(txn, t) == UInt64(n))
            }
            // a link column to existing objects: the links and their backlinks
            try db.write { txn throws in
                let lk = try addColumn(txn, t, "link", CS_TYPE_LINK, target: target)
                try withValues([.link(target, 0), .null]) { p in
                    try must(cs_obj_create_many(txn, t, 2, 1, [lk], p, nil), "links")
                }
                var tg = try openObj(txn, target, 0)
                var nb = 0
                try must(cs_obj_backlink_count(&tg, t, lk, &nb), "backlinks")
                #expect(nb == 1)
            }
            db.verify()
            // tables with a primary key refuse it without their primary key among the values
            try db.write { txn throws in
                let p = try addTable(txn, "P")
                let id = try addColumn(txn, p, "id", CS_TYPE_INT)
                try must(cs_table_set_primary_key(txn, p, id), "pk")
                let none: [UnsafePointer<Int64>?] = []
                #expect(cs_obj_create_many_int(txn, p, 0, 0, nil, none, nil) == Int32(CS_MISUSE))
            }
        }
    }
}

extension Array where Element == [Int64] {
    /// Calls body with one pointer per inner array (valid during the call).
    func withPointers<R>(_ body: ([UnsafePointer<Int64>?]) throws -> R) rethrows -> R {
        var ptrs: [UnsafePointer<Int64>?] = []
        var bufs: [UnsafeMutableBufferPointer<Int64>] = []
        for a in self {
            let b = UnsafeMutableBufferPointer<Int64>.allocate(capacity: Swift.max(a.count, 1))
            _ = b.initialize(from: a)
            bufs.append(b)
            ptrs.append(UnsafePointer(b.baseAddress))
        }
        defer { for b in bufs { b.deallocate() } }
        return try body(ptrs)
    }
}

/// Calls body with the Vals as a C array of cs_value (valid during the call).
func withValues<R>(_ vals: [Val], _ body: (UnsafePointer<cs_value>) throws -> R) rethrows -> R {
    var out: [cs_value] = []
    var keep: [UnsafeMutableRawPointer] = []
    defer { for p in keep { p.deallocate() } }
    for v in vals {
        var x = withValue(v) { $0.pointee }
        if case .string(let b) = v, !b.isEmpty {
            let p = UnsafeMutableRawPointer.allocate(byteCount: b.count, alignment: 1)
            p.copyMemory(from: b, byteCount: b.count)
            keep.append(p)
            x.v.bytes.ptr = UnsafeRawPointer(p)
        }
        out.append(x)
    }
    return try out.withUnsafeBufferPointer { try body($0.baseAddress!) }
}
