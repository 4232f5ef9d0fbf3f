// The unindexed Int primary key (TBLK_NOIDX): a table without the index ("A")
// against the same objects in a table that keeps it ("B", forced by one counter key), and both
// against a scan of a plain column "v" holding the same values.
import CStore
import Foundation
import Testing

private struct T { var t: UInt32; var id: UInt32; var v: UInt32 }

private func mk(_ txn: OpaquePointer, _ name: String, nullable: Bool, keepIndex: Bool) throws -> T {
    let t = try addTable(txn, name)
    let id = try addColumn(txn, t, "id", CS_TYPE_INT, flags: nullable ? Int(CS_COL_NULLABLE) : 0)
    let v = try addColumn(txn, t, "v", CS_TYPE_INT, flags: nullable ? Int(CS_COL_NULLABLE) : 0)
    try must(cs_table_set_primary_key(txn, t, id), "pk")
    if keepIndex {
        // a negative primary key takes a counter key: the index comes back for good
        var o = cs_obj()
        var p = cs_int(-777_777)
        try must(cs_obj_create_primary(txn, t, &p, &o), "create -777777")
        try must(cs_obj_delete(&o), "delete")
    }
    return T(t: t, id: id, v: v)
}

private func put(_ txn: OpaquePointer, _ c: T, _ pk: Val) throws {
    var o = cs_obj()
    try withValue(pk) { p in try must(cs_obj_create_primary(txn, c.t, p, &o), "create \(pk)") }
    try withValue(pk) { p in try must(cs_obj_set(&o, c.v, p), "set v") }
}

private func findPk(_ txn: OpaquePointer, _ t: UInt32, _ pk: Val) -> (Int32, Int64) {
    var key: Int64 = -1
    let rc = withValue(pk) { p in cs_table_find_primary(txn, t, p, &key) }
    return (rc, rc == 0 ? key : -1)
}

/// The values of "v" of the given keys, sorted (table A and B give different keys to counter-keyed objects).
private func vals(_ txn: OpaquePointer, _ c: T, _ keys: [Int64]) throws -> [String] {
    try keys.map { k -> String in
        var o = try openObj(txn, c.t, k)
        var x = cs_value()
        try must(cs_obj_get(&o, c.v, &x), "get v")
        return x.type == CS_TYPE_NULL ? "nil" : "\(x.v.i)"
    }.sorted()
}

private func qvals(_ txn: OpaquePointer, _ c: T, _ q: String) throws -> [String]? {
    guard let k = try? queryKeys(txn, c.t, q) else { return nil }
    return try vals(txn, c, k)
}

private struct LCG {
    var s: UInt64
    mutating func next() -> UInt64 { s = s &* 6364136223846793005 &+ 1442695040888963407; return s >> 11 }
    mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

@Suite struct UnindexedPrimaryKeyOracleTests {
    /// Random data and random predicates: the unindexed pk, the indexed pk and a scanned column agree.
    @Test(arguments: [false, true]) func randomPredicatesAgree(nullable: Bool) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var a = T(t: 0, id: 0, v: 0), b = a
            var rng = LCG(s: nullable ? 99 : 7)
            var live = Set<Int64>()
            try db.write { txn throws in
                a = try mk(txn, "A", nullable: nullable, keepIndex: false)
                b = try mk(txn, "B", nullable: nullable, keepIndex: true)
                for _ in 0..<600 {
                    let p = Int64(rng.int(1200))
                    if live.insert(p).inserted { try put(txn, a, .int(p)); try put(txn, b, .int(p)) }
                }
                // deletions (retired keys in A: not re-inserted here, that would bring the index back)
                for p in live.sorted() where rng.int(5) == 0 {
                    var o = try openObj(txn, a.t, findPk(txn, a.t, .int(p)).1)
                    try must(cs_obj_delete(&o), "del a")
                    var o2 = try openObj(txn, b.t, findPk(txn, b.t, .int(p)).1)
                    try must(cs_obj_delete(&o2), "del b")
                    live.remove(p)
                }
            }
            db.verify("random")
            let specials: [String] = ["0", "-1", "1", "2.5", "-0.5", "1199.5", "9223372036854775807", "-9223372036854775808",
                                      "2305843009213693951", "2305843009213693952", "nil", "'x'", "1e30", "-1e30", "600.0"]
            func arg(_ r: inout LCG) -> String { r.int(3) == 0 ? specials[r.int(specials.count)] : "\(r.int(1300) - 50)" }
            try db.read { txn throws in
                var bad: [String] = []
                for i in 0..<3000 {
                    let x = arg(&rng), y = arg(&rng)
                    let q: String
                    switch i % 9 {
                    case 0: q = "id == \(x)"
                    case 1: q = "id < \(x)"
                    case 2: q = "id <= \(x)"
                    case 3: q = "id > \(x)"
                    case 4: q = "id >= \(x)"
                    case 5: q = "id BETWEEN {\(x), \(y)}"
                    case 6: q = "id IN {\(x), \(y), \(x)}"
                    case 7: q = "id > \(x) AND id <= \(y)"
                    default: q = "\(x) < id AND id != \(y)"
                    }
                    let ra = try qvals(txn, a, q), rb = try qvals(txn, b, q)
                    let rv = try qvals(txn, a, q.replacingOccurrences(of: "id", with: "v"))
                    if ra != rb || ra != rv { bad.append("\(q): A \(ra?.count ?? -1) B \(rb?.count ?? -1) scan \(rv?.count ?? -1)") }
                }
                #expect(bad.isEmpty, "\(bad.prefix(10))")
                // lookups and cs_index_* calls
                var badL: [String] = []
                let probes: [Val] = [.int(0), .int(-1), .int(5), .int(1199), .int(Int64.max), .int(Int64.min), .int(1 << 61), .null]
                for p in probes + (0..<200).map({ _ in Val.int(Int64(rng.int(1300))) }) {
                    let fa = findPk(txn, a.t, p), fb = findPk(txn, b.t, p)
                    if fa.0 != fb.0 { badL.append("find \(p): \(fa.0) vs \(fb.0)") }
                    var ka: UnsafeMutablePointer<Int64>?, kb: UnsafeMutablePointer<Int64>?
                    var na = 0, nb = 0
                    let r1 = withValue(p) { cs_index_find_all(txn, a.t, a.id, $0, &ka, &na) }
                    let r2 = withValue(p) { cs_index_find_all(txn, b.t, b.id, $0, &kb, &nb) }
                    if r1 != r2 || na != nb { badL.append("find_all \(p): \(r1)/\(na) vs \(r2)/\(nb)") }
                    cs_keys_free(ka); cs_keys_free(kb)
                }
                let bounds: [Val?] = [nil, .int(-3), .int(0), .int(17), .int(1199), .int(Int64.max), .int(Int64.min), .double(2.5),
                                      .double(-0.5), .double(.nan), .double(1e300), .double(-1e300), .float(33.5), .int(1 << 61)]
                for lo in bounds {
                    for hi in bounds {
                        var ka: UnsafeMutablePointer<Int64>?, kb: UnsafeMutablePointer<Int64>?
                        var na = 0, nb = 0
                        func call(_ c: T, _ k: inout UnsafeMutablePointer<Int64>?, _ n: inout Int) -> Int32 {
                            var kk: UnsafeMutablePointer<Int64>?
                            var nn = 0
                            let rc: Int32
                            switch (lo, hi) {
                            case (nil, nil): rc = cs_index_range(txn, c.t, c.id, nil, nil, &kk, &nn)
                            case (let l?, nil): rc = withValue(l) { cs_index_range(txn, c.t, c.id, $0, nil, &kk, &nn) }
                            case (nil, let h?): rc = withValue(h) { cs_index_range(txn, c.t, c.id, nil, $0, &kk, &nn) }
                            case (let l?, let h?): rc = withValue(l) { lp in withValue(h) { cs_index_range(txn, c.t, c.id, lp, $0, &kk, &nn) } }
                            }
                            k = kk
                            n = nn
                            return rc
                        }
                        let r1 = call(a, &ka, &na), r2 = call(b, &kb, &nb)
                        let va = r1 == 0 ? try vals(txn, a, Array(UnsafeBufferPointer(start: ka, count: na))) : []
                        let vb = r2 == 0 ? try vals(txn, b, Array(UnsafeBufferPointer(start: kb, count: nb))) : []
                        if r1 != r2 || va != vb { badL.append("range \(String(describing: lo))..\(String(describing: hi)): \(r1)/\(na) vs \(r2)/\(nb)") }
                        cs_keys_free(ka); cs_keys_free(kb)
                    }
                }
                #expect(badL.isEmpty, "\(badL.prefix(10))")
            }
        }
    }

    /// An Optional Int primary key: nil takes a counter key, which brings the index back; nil is
    /// found, a second nil is refused, and queries on nil agree with a scan.
    @Test func aNilPrimaryKey() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var a = T(t: 0, id: 0, v: 0)
            try db.write { txn throws in
                a = try mk(txn, "A", nullable: true, keepIndex: false)
                for p: Int64 in [3, 1, 2] { try put(txn, a, .int(p)) }
                #expect(try queryKeys(txn, a.t, "id == nil").isEmpty)
                try put(txn, a, .null)
                #expect(findPk(txn, a.t, .null).0 == 0, "nil found")
                var o = cs_obj()
                expectCode(withValue(.null) { cs_obj_create_primary(txn, a.t, $0, &o) }, CS_CONSTRAINT, "a second nil")
                #expect(try qvals(txn, a, "id == nil") == ["nil"])
                #expect(try qvals(txn, a, "id IN {nil, 2, 2}") == ["2", "nil"])
                #expect(try qvals(txn, a, "id >= 2") == ["2", "3"])
            }
            db.verify("nil pk")
            try db.reopen()
            try db.read { txn throws in
                #expect(findPk(txn, a.t, .null).0 == 0, "nil found after reopening")
                #expect(try qvals(txn, a, "id == nil") == ["nil"])
            }
        }
    }

    /// A failed primary-key change (duplicates in the new column) leaves the table as it was:
    /// the old pk, its lookups, and verify passes; the same after a commit.
    @Test func aRefusedPrimaryKeyChange() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var a = T(t: 0, id: 0, v: 0)
            var dup: UInt32 = 0
            try db.write { txn throws in
                a = try mk(txn, "A", nullable: false, keepIndex: false)
                dup = try addColumn(txn, a.t, "d", CS_TYPE_INT)
                for p: Int64 in 0..<50 { try put(txn, a, .int(p)) }
            }
            try db.write { txn throws in
                expectCode(cs_table_set_primary_key(txn, a.t, dup), CS_CONSTRAINT, "duplicates in d")
                #expect(findPk(txn, a.t, .int(7)).1 == 7)
                #expect(try qvals(txn, a, "id BETWEEN {3, 5}") == ["3", "4", "5"])
                var o = cs_obj()
                expectCode(withValue(.int(7)) { cs_obj_create_primary(txn, a.t, $0, &o) }, CS_CONSTRAINT, "duplicate 7")
            }
            db.verify("refused change")
            // pk to another Int column holding the same values: stays unindexed (or indexed) but right
            try db.write { txn throws in
                try must(cs_table_set_primary_key(txn, a.t, a.v), "pk v")
                #expect(try qvals(txn, a, "v BETWEEN {3, 5}") == ["3", "4", "5"])
                #expect(try qvals(txn, a, "id BETWEEN {3, 5}") == ["3", "4", "5"])
                var o = cs_obj()
                expectCode(withValue(.int(9)) { cs_obj_create_primary(txn, a.t, $0, &o) }, CS_CONSTRAINT, "duplicate 9 in v")
            }
            db.verify("pk moved to v")
            try db.write { txn throws in
                try must(cs_table_set_primary_key(txn, a.t, a.id), "pk id again")
                #expect(try qvals(txn, a, "id BETWEEN {3, 5}") == ["3", "4", "5"])
                #expect(try qvals(txn, a, "v BETWEEN {3, 5}") == ["3", "4", "5"])
            }
            db.verify("pk back on id")
        }
    }

    /// Deleting and re-creating the same primary keys many times, in one write and across
    /// writes, with batches: lookups, queries and verify agree with the live set.
    @Test func deleteAndRecreate() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var a = T(t: 0, id: 0, v: 0)
            try db.write { txn throws in
                a = try mk(txn, "A", nullable: false, keepIndex: false)
                for p: Int64 in 0..<100 { try put(txn, a, .int(p)) }
            }
            for round in 0..<3 {
                try db.write { txn throws in
                    for p: Int64 in stride(from: Int64(round), to: 100, by: 3) {
                        var o = try openObj(txn, a.t, findPk(txn, a.t, .int(p)).1)
                        try must(cs_obj_delete(&o), "del")
                    }
                    let ps = Array(stride(from: Int64(round), to: 100, by: 3))
                    try withValues(ps.map { Val.int($0) } + ps.map { Val.int($0) }) { vals in
                        var cols = [a.id, a.v]
                        try must(cs_obj_create_many_keys(txn, a.t, ps.count, 2, &cols, vals, nil), "batch")
                    }
                }
                db.verify("round \(round)")
                try db.read { txn throws in
                    #expect(try qvals(txn, a, "id < 10")?.map { Int($0)! }.sorted() == Array(0..<10), "round \(round)")
                    #expect(try queryKeys(txn, a.t, "TRUEPREDICATE").count == 100)
                    for p: Int64 in 0..<100 { #expect(findPk(txn, a.t, .int(p)).0 == 0) }
                }
            }
        }
    }
}

/// The table's keying flags as the file holds them (slot 4 of its table node, untagged).
private func flagsOnDisk(_ path: String, _ t: UInt32) throws -> Int {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let node = rawTableNode(bytes, t)
    let count = Int(bytes[node + 4]) | Int(bytes[node + 5]) << 8
    if count <= 4 { return 0 }
    return rawLE64(bytes, node + 8 + 8 * 4) >> 1
}

@Suite struct UnindexedPrimaryKeySideEffectTests {
    /// cs_table_set_primary_key refused for duplicates changes nothing: the table still keeps
    /// no index of its primary key (flags 3 after the commit).
    @Test func aRefusedPrimaryKeyChangeKeepsTheTableUnindexed() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var a = T(t: 0, id: 0, v: 0)
            try db.write { txn throws in
                a = try mk(txn, "A", nullable: false, keepIndex: false)
                let d = try addColumn(txn, a.t, "d", CS_TYPE_INT)
                for p: Int64 in 0..<50 { try put(txn, a, .int(p)) }
                expectCode(cs_table_set_primary_key(txn, a.t, d), CS_CONSTRAINT, "duplicates in d")
            }
            db.close()
            #expect(try flagsOnDisk(db.path, a.t) == 3, "a refused change left the table unindexed")
        }
    }
}
