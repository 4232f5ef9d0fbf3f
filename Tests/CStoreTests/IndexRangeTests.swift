// Ordering comparisons that the index answers since the range work: ObjectId and UUID order as
// unsigned big-endian byte strings (scan answers checked against a Swift computation over the
// stored bytes, index answers against scan answers, SORT against the same order), Bool ordering
// stays refused, and Mixed indexes answer <, <=, >, >=, BETWEEN and BEGINSWITH over a mix of
// numbers, strings, binaries and other types (index answers equal scan answers).

import CStore
import Foundation
import Testing

// MARK: - Helpers

private func answer(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ args: [QArg]) throws -> ([Int64], cs_query_plan) {
    try keysAndPlan(txn, table, text, args)
}

/// -1, 0 or 1: the unsigned lexicographic order of two byte strings of one length.
private func byteOrder(_ a: [UInt8], _ b: [UInt8]) -> Int {
    for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
    return 0
}

private func holds(_ op: String, _ c: Int) -> Bool {
    switch op {
    case "<": return c < 0
    case "<=": return c <= 0
    case ">": return c > 0
    default: return c >= 0
    }
}

private func decimal(_ coeff: UInt64, exp: Int, negative: Bool = false) -> Val {
    .decimal(coeff, (negative ? 1 << 63 : 0) | (UInt64(exp + 6176) << 49))
}

private func idBytes(_ v: Val) -> [UInt8]? {
    switch v {
    case .objectId(let b), .uuid(let b): return b
    default: return nil
    }
}

// MARK: - Tests

@Suite struct IndexRangeTests {
    /// ObjectId and UUID: every ordering operator and BETWEEN, scanned and from the index.
    @Test func idsOrderByTheirBytes() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0
            var cols: [(name: String, idx: UInt32, twin: UInt32, pool: [Val])] = []
            var rng = SeededRNG(seed: stableSeed("idsOrderByTheirBytes"))
            // Pools with bytes on both sides of 0x80 (a signed comparison would order them
            // differently), ids differing only in their last byte, and the extremes.
            func pool(_ n: Int, _ make: ([UInt8]) -> Val) -> [Val] {
                var p: [[UInt8]] = [[UInt8](repeating: 0, count: n), [UInt8](repeating: 0xFF, count: n)]
                p.append([0x7F] + [UInt8](repeating: 0xFF, count: n - 1))
                p.append([0x80] + [UInt8](repeating: 0, count: n - 1))
                var near = randomBytes(n, &rng)
                p.append(near)
                near[n - 1] ^= 0x81
                p.append(near)
                for _ in 0..<10 { p.append(randomBytes(n, &rng)) }
                return p.map(make)
            }
            try db.write { txn throws in
                table = try addTable(txn, "T")
                for (name, type, p) in [("o", CS_TYPE_OBJECTID, pool(12) { .objectId($0) }), ("u", CS_TYPE_UUID, pool(16) { .uuid($0) })] {
                    let idx = try addColumn(txn, table, name, type, flags: CS_COL_NULLABLE | CS_COL_INDEXED)
                    let twin = try addColumn(txn, table, name + "_twin", type, flags: CS_COL_NULLABLE)
                    cols.append((name, idx, twin, p))
                }
                for _ in 0..<300 {
                    var o = try createObj(txn, table)
                    for c in cols {
                        // one pool value in nine is left out of the data, so constants also fall between stored values
                        let v: Val = rng.next() % 8 == 0 ? .null : c.pool[Int(rng.next() % UInt64(c.pool.count - 1))]
                        check(setVal(&o, c.idx, v))
                        check(setVal(&o, c.twin, v))
                    }
                }
            }
            try db.read { txn throws in
                let keys = try allKeys(txn, table)
                for c in cols {
                    // the stored bytes, read back
                    var stored: [Int64: [UInt8]] = [:]
                    for k in keys {
                        var o = try openObj(txn, table, k)
                        if let v = getVal(&o, c.twin), let b = idBytes(v) { stored[k] = b }
                    }
                    #expect(stored.count > 200 && stored.count < 300, "nulls and values both present")
                    func run(_ template: String, _ args: [QArg], _ expected: (([UInt8]) -> Bool)) throws {
                        let want = keys.filter { k in stored[k].map(expected) ?? false }
                        let (scan, ps) = try answer(txn, table, template.replacingOccurrences(of: "@", with: c.name + "_twin"), args)
                        let (index, pi) = try answer(txn, table, template.replacingOccurrences(of: "@", with: c.name), args)
                        #expect(scan == want, "\(c.name) \(template) \(args): scan gave \(scan.count) keys, bytes say \(want.count)")
                        #expect(index == scan, "\(c.name) \(template) \(args): index gave \(index.count) keys, scan \(scan.count)")
                        #expect(ps.kind != CS_PLAN_INDEX.rawValue)
                        #expect(pi.kind == CS_PLAN_INDEX.rawValue && pi.col == c.idx, "\(c.name) \(template) not from the index")
                        #expect(pi.candidates == UInt64(index.count), "a lone range is exact")
                    }
                    var nonEmpty = 0
                    for k in c.pool {
                        let kb = idBytes(k)!
                        for op in ["<", "<=", ">", ">="] {
                            try run("@ \(op) $0", [.v(k)]) { holds(op, byteOrder($0, kb)) }
                            try run("$0 \(op) @", [.v(k)]) { holds(op, byteOrder(kb, $0)) }
                            if stored.values.contains(where: { holds(op, byteOrder($0, kb)) }) { nonEmpty += 1 }
                        }
                        for hi in c.pool.prefix(6) {
                            let hb = idBytes(hi)!
                            try run("@ BETWEEN {$0, $1}", [.v(k), .v(hi)]) { byteOrder($0, kb) >= 0 && byteOrder($0, hb) <= 0 }
                        }
                    }
                    #expect(nonEmpty > 30)
                    // SORT orders by the same bytes as the comparisons
                    for col in [c.name, c.name + "_twin"] {
                        let sorted = try queryKeys(txn, table, "\(col) != nil SORT(\(col) ASC)")
                        let got = sorted.map { stored[$0]! }
                        let want = stored.values.sorted { byteOrder($0, $1) < 0 }
                        #expect(got == want, "SORT(\(col)) follows the byte order")
                    }
                }
            }
            db.close()
        }
    }

    /// Realm's query language has no order for bools: refused with a clear message, while == works.
    @Test func boolOrderingIsRefused() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0, col: UInt32 = 0
            try db.write { txn throws in
                table = try addTable(txn, "T")
                col = try addColumn(txn, table, "flag", CS_TYPE_BOOL, flags: CS_COL_INDEXED)
                for i in 0..<10 {
                    var o = try createObj(txn, table)
                    check(setVal(&o, col, .bool(i % 3 == 0)))
                }
            }
            try db.read { txn throws in
                for text in ["flag < true", "flag <= $0", "flag > false", "flag >= $0", "$0 < flag", "flag BETWEEN {false, true}"] {
                    let (rc, msg, q) = makeQuery(txn, table, text, [.v(.bool(true))])
                    if let q { cs_query_free(q) }
                    #expect(rc == Int32(CS_QUERY), "\(text): \(codeName(rc))")
                    #expect(msg.contains("Bool values have no order") && msg.contains("use == or !="), "\(text): \(msg)")
                    #expect(msg.contains("at 1:1"), "\(text): \(msg)")
                }
                let (k, p) = try answer(txn, table, "flag == true", [])
                #expect(k.count == 4 && p.kind == CS_PLAN_INDEX.rawValue)
            }
            db.close()
        }
    }

    /// Mixed indexes answer ranges, BETWEEN and BEGINSWITH; the answers equal the scan's.
    @Test func mixedRangesEqualScans() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0, m: UInt32 = 0, twin: UInt32 = 0, target: UInt32 = 0
            var targets: [Int64] = []
            let two53 = Int64(1) << 53
            let numbers: [Val] = [
                .int(.min), .int(.max), .int(-7), .int(-1), .int(0), .int(1), .int(2), .int(3), .int(10), .int(1000),
                .int(two53), .int(two53 + 1), .double(-0.0), .double(0.5), .double(2.5), .double(-2.5), .double(1e300),
                .double(-1e300), .double(.infinity), .double(-.infinity), .double(.nan), .double(9.3e18), .double(-9.3e18),
                .double(9223372036854775808.0), .double(Double(two53)), .float(2.5), .float(-0.25), .float(.nan),
                decimal(25, exp: -1), decimal(1, exp: -1), decimal(3, exp: 0, negative: true), decimal(1, exp: 400),
                decimal(1, exp: 400, negative: true), decimal(123_456_789_012_345_678, exp: -9), decimal(9, exp: -30),
                .decimal(0, 0x7C00_0000_0000_0000),
            ]
            let texts: [Val] = [
                .string([]), .string(Array("a".utf8)), .string(Array("ab".utf8)), .string(Array("b".utf8)),
                .string([0x61, 0]), .string([0x61, 0, 0x62]), .string([0xFF]), .string(Array("é".utf8)),
                .binary([]), .binary(Array("a".utf8)), .binary(Array("abc".utf8)), .binary([0x61, 0xFF]), .binary([0]),
            ]
            let others: [Val] = [
                .null, .timestamp(-5, 0), .timestamp(7, 1), .objectId([UInt8](repeating: 0x90, count: 12)),
                .objectId([UInt8](repeating: 0x10, count: 12)), .uuid([UInt8](repeating: 0x80, count: 16)),
                .uuid([UInt8](repeating: 0x7F, count: 16)),
            ]
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                for _ in 0..<2 { targets.append(try createObj(txn, target).key) }
                table = try addTable(txn, "T")
                m = try addColumn(txn, table, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE | CS_COL_INDEXED)
                twin = try addColumn(txn, table, "m_twin", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                var rng = SeededRNG(seed: stableSeed("mixedRangesEqualScans"))
                let all = numbers + texts + others + [.bool(false), .bool(true), .link(target, targets[0]), .link(target, targets[1]), .list]
                for _ in 0..<500 {
                    var o = try createObj(txn, table)
                    let v = all[Int(rng.next() % UInt64(all.count))]
                    for c in [m, twin] {
                        if v == .list { check(cs_obj_set_collection(&o, c, CS_TYPE_LIST)) } else { check(setVal(&o, c, v)) }
                    }
                }
                var t = try openObj(txn, target, targets[1])
                check(cs_obj_delete(&t))  // a dangling link reads as null
            }
            db.verify("after the Mixed workload")
            try db.read { txn throws in
                let total = try tableCount(txn, table)
                var nonEmpty = 0, compared = 0
                func compare(_ template: String, _ args: [QArg], indexed: Bool) throws {
                    let (ka, pa) = try answer(txn, table, template.replacingOccurrences(of: "@", with: "m"), args)
                    let (kb, pb) = try answer(txn, table, template.replacingOccurrences(of: "@", with: "m_twin"), args)
                    var missed: [Val] = []
                    if ka != kb {
                        for k in Set(ka).symmetricDifference(kb).sorted().prefix(4) {
                            var o = try openObj(txn, table, k)
                            if let v = getVal(&o, twin) { missed.append(v) }
                        }
                    }
                    #expect(ka == kb, "\(template) \(args): index gave \(ka.count) keys, scan \(kb.count), differing values \(missed)")
                    #expect(pb.kind != CS_PLAN_INDEX.rawValue)
                    if indexed {
                        #expect(pa.kind == CS_PLAN_INDEX.rawValue && pa.col == m, "\(template) \(args) not from the index")
                        #expect(pa.candidates <= total)
                    }
                    if !ka.isEmpty { nonEmpty += 1 }
                    compared += 1
                }
                func seeds(_ v: Val) -> Bool {
                    switch v {
                    case .null, .link, .list, .dict: return false
                    case .double(let d): return !d.isNaN
                    case .float(let f): return !f.isNaN
                    case .decimal(_, let hi): return hi & 0x7C00_0000_0000_0000 != 0x7C00_0000_0000_0000
                    default: return true
                    }
                }
                // Bools and links have no order, stored in a Mixed or not.
                for (text, v) in [("m > $0", Val.bool(true)), ("$0 <= m", .bool(false)), ("m BETWEEN {$0, $0}", .bool(true)),
                                  ("$0 > m", .link(target, targets[0])), ("m < $0", .link(target, targets[0]))] {
                    let (rc, msg, q) = makeQuery(txn, table, text, [.v(v)])
                    if let q { cs_query_free(q) }
                    #expect(rc == Int32(CS_QUERY) && msg.contains("values have no order"), "\(text): \(codeName(rc)) \(msg)")
                }
                let constants = numbers + texts + others
                for v in constants {
                    for op in ["<", "<=", ">", ">="] {
                        try compare("@ \(op) $0", [.v(v)], indexed: seeds(v))
                        try compare("$0 \(op) @", [.v(v)], indexed: seeds(v))
                    }
                }
                for v in texts {
                    try compare("@ BEGINSWITH $0", [.v(v)], indexed: true)
                    try compare("@ BEGINSWITH $0 AND @ != 'ab'", [.v(v)], indexed: true)
                }
                let pairs: [(Val, Val)] = [
                    (.int(0), .int(3)), (.double(-2.5), .int(2)), (.float(0.5), decimal(25, exp: -1)), (.int(3), .int(0)),
                    (.double(-.infinity), .double(.infinity)), (.int(.min), .int(.max)), (decimal(9, exp: -30), .double(1e300)),
                    (.string(Array("a".utf8)), .string(Array("b".utf8))), (.binary([]), .string([0xFF])),
                    (.timestamp(-10, 0), .timestamp(7, 0)), (others[4], others[3]), (others[5], others[6]),
                ]
                for (lo, hi) in pairs {
                    try compare("@ BETWEEN {$0, $1}", [.v(lo), .v(hi)], indexed: true)
                }
                // not answered from the index, but still the same answers
                try compare("@ BETWEEN {$0, $1}", [.v(.int(0)), .v(.string(Array("a".utf8)))], indexed: false)
                try compare("@ BETWEEN {$0, $1}", [.v(.double(.nan)), .v(.int(3))], indexed: false)
                #expect(compared > 400 && nonEmpty > 250, "\(compared) comparisons, \(nonEmpty) with matches")
                // A narrow range reads a small part of the index.
                let (k, p) = try answer(txn, table, "m >= 1e299", [])
                #expect(p.kind == CS_PLAN_INDEX.rawValue && !k.isEmpty && p.candidates < total / 4,
                        "\(p.candidates) candidates of \(total)")
            }
            db.close()
        }
    }
}
