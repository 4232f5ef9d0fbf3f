// SORT on one column has a path of its own in the core (docs/ARCHITECTURE.md, Sorting on one
// column): fixed-size order keys compared as integers, the bytes after the eighth of a string
// only on a tie. Its order must be exactly the general sort's. These tests sort random values of
// every type it takes (strings with shared 8-byte prefixes, zero bytes, non-ASCII, empty and
// null; binaries with bytes above 0x7F; Ints at the extremes; Doubles and Floats with NaN, -0.0
// and the infinities; Timestamps with equal seconds; Bools; nulls) and compare the result with
//  - an order computed here in Swift from the values read back (null first; numbers by value,
//    NaN before every number, -0.0 equal to 0.0; strings and binaries by bytes, then length;
//    timestamps by seconds then nanoseconds; ties in key order, in both directions), and
//  - the general sort's order for the same column (`SORT(c ASC, c ASC)` sorts by two keys, so it
//    never takes the one-column path).

import CStore
import Foundation
import Testing
import TestSupport

@Suite struct SortOneColumnTests {
    /// The order of two values as the query language sorts them (written here, not the core's).
    static func order(_ a: Val, _ b: Val) -> Int {
        func num(_ x: Double, _ y: Double) -> Int {
            if x.isNaN || y.isNaN { return x.isNaN && y.isNaN ? 0 : (x.isNaN ? -1 : 1) }
            return x < y ? -1 : (x > y ? 1 : 0)
        }
        func bytes(_ x: [UInt8], _ y: [UInt8]) -> Int {
            x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        }
        switch (a, b) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        case let (.int(x), .int(y)): return x < y ? -1 : (x > y ? 1 : 0)
        case let (.bool(x), .bool(y)): return x == y ? 0 : (x ? 1 : -1)
        case let (.double(x), .double(y)): return num(x, y)
        case let (.float(x), .float(y)): return num(Double(x), Double(y))
        case let (.string(x), .string(y)), let (.binary(x), .binary(y)): return bytes(x, y)
        case let (.timestamp(s1, n1), .timestamp(s2, n2)):
            return s1 != s2 ? (s1 < s2 ? -1 : 1) : (n1 < n2 ? -1 : (n1 > n2 ? 1 : 0))
        default:
            Issue.record("unexpected pair \(a) \(b)")
            return 0
        }
    }

    /// `keys` stably sorted by their values (in `values`), ascending or descending.
    static func expected(_ keys: [Int64], _ values: [Int64: Val], ascending: Bool) -> [Int64] {
        keys.enumerated().sorted { x, y in
            let c = order(values[x.element]!, values[y.element]!) * (ascending ? 1 : -1)
            return c != 0 ? c < 0 : x.offset < y.offset
        }.map(\.element)
    }

    static func randomString(_ rng: inout SeededRNG) -> Val {
        if rng.next() % 8 == 0 { return .null }
        let fixed = ["", "a", "a\u{0}", "\u{0}", "abcdefgh", "abcdefgh\u{0}", "abcdefgha", "abcdefghb",
                     "abcdefg", "abcdefgi", "Zebra", "zebra", "Äpfel", "apfel", "Grüße", "grüße",
                     "日本語", "日本", "🙂", "abcdefgh🙂", "abcdefghabcdefghZ", "abcdefghabcdefgh"]
        if rng.next() % 3 == 0 { return .str(fixed[Int(rng.next() % UInt64(fixed.count))]) }
        // a shared 8-byte start half of the time, then pieces that include zero bytes and
        // multi-byte characters
        let pieces = ["a", "b", "A", "é", "日", "\u{0}", "🙂", "z", "\u{7F}"]
        var s = rng.next() % 2 == 0 ? "abcdefgh" : ""
        for _ in 0..<Int(rng.next() % 12) { s += pieces[Int(rng.next() % UInt64(pieces.count))] }
        return .str(s)
    }

    static func randomBinary(_ rng: inout SeededRNG) -> Val {
        if rng.next() % 8 == 0 { return .null }
        let alphabet: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xC3, 0xFF]
        return .binary((0..<Int(rng.next() % 14)).map { _ in alphabet[Int(rng.next() % 6)] })
    }

    static func randomInt(_ rng: inout SeededRNG) -> Val {
        switch rng.next() % 6 {
        case 0: return .null
        case 1: return .int([Int64.min, Int64.min + 1, -1, 0, 1, Int64.max][Int(rng.next() % 6)])
        case 2: return .int(Int64(bitPattern: rng.next()))
        default: return .int(Int64(rng.next() % 50) - 25)
        }
    }

    static func randomDouble(_ rng: inout SeededRNG) -> Val {
        let special: [Double] = [.nan, -Double.nan, .infinity, -.infinity, 0.0, -0.0, .greatestFiniteMagnitude,
                                 -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 1.5, -1.5]
        switch rng.next() % 5 {
        case 0: return .null
        case 1, 2: return .double(special[Int(rng.next() % UInt64(special.count))])
        default: return .double(Double(Int64(rng.next() % 200) - 100) / 8)
        }
    }

    static func randomFloat(_ rng: inout SeededRNG) -> Val {
        let special: [Float] = [.nan, .infinity, -.infinity, 0.0, -0.0, .greatestFiniteMagnitude, -1.25]
        switch rng.next() % 5 {
        case 0: return .null
        case 1: return .float(special[Int(rng.next() % UInt64(special.count))])
        default: return .float(Float(Int64(rng.next() % 200) - 100) / 4)
        }
    }

    static func randomTimestamp(_ rng: inout SeededRNG) -> Val {
        if rng.next() % 6 == 0 { return .null }
        let secs: [Int64] = [Int64.min, -2, -1, 0, 1, 2, 1_700_000_000, Int64.max]
        let sec = secs[Int(rng.next() % UInt64(secs.count))]
        let n = Int32(rng.next() % 4) * 333_333_333
        return .timestamp(sec, sec < 0 ? -n : n)
    }

    static func randomBool(_ rng: inout SeededRNG) -> Val {
        rng.next() % 4 == 0 ? .null : .bool(rng.next() % 2 == 0)
    }

    @Test func oneColumnSortsAsTheGeneralSortAndTheOracle() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var rng = SeededRNG(seed: 0x5047_7A11)
            let n = 2600 // about ten cluster leaves
            let columns: [(String, cs_type, (inout SeededRNG) -> Val)] = [
                ("s", CS_TYPE_STRING, Self.randomString), ("b", CS_TYPE_BINARY, Self.randomBinary),
                ("i", CS_TYPE_INT, Self.randomInt), ("d", CS_TYPE_DOUBLE, Self.randomDouble),
                ("f", CS_TYPE_FLOAT, Self.randomFloat), ("t", CS_TYPE_TIMESTAMP, Self.randomTimestamp),
                ("flag", CS_TYPE_BOOL, Self.randomBool),
            ]
            var t: UInt32 = 0, holder: UInt32 = 0, g: UInt32 = 0, items: UInt32 = 0
            var cols: [String: UInt32] = [:]
            var values: [String: [Int64: Val]] = [:]
            var listed: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "Thing")
                g = try addColumn(txn, t, "g", CS_TYPE_INT)
                for (name, type, _) in columns {
                    cols[name] = try addColumn(txn, t, name, type, flags: CS_COL_NULLABLE)
                }
                holder = try addTable(txn, "Holder")
                items = try addColumn(txn, holder, "items", CS_TYPE_LINK, coll: CS_COLL_LIST, target: t)
                for k in 0..<n {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, g, Int64(k % 5)), "set g")
                    for (name, _, make) in columns {
                        let v = make(&rng)
                        try must(setVal(&o, cols[name]!, v), "set \(name) = \(v)")
                        values[name, default: [:]][o.key] = v
                    }
                }
                // gaps in the keys
                for k in stride(from: 3, to: n, by: 7) {
                    var o = try openObj(txn, t, Int64(k))
                    try must(cs_obj_delete(&o), "delete")
                }
                // a list holding objects out of key order, some twice
                var h = try createObj(txn, holder)
                var list = try openColl(&h, items)
                for k in (0..<n).reversed() where k % 7 != 3 && k % 3 != 0 {
                    try must(listAppend(&list, .link(t, Int64(k))), "append")
                    listed.append(Int64(k))
                }
                for k in stride(from: 1, to: n, by: 50) where k % 7 != 3 {
                    try must(listAppend(&list, .link(t, Int64(k))), "append")
                    listed.append(Int64(k))
                }
            }
            // the values as read back (a Float or a Double keeps its bits; NaN stays NaN)
            try db.read { txn in
                let all = try allKeys(txn, t)
                #expect(all.count == n - (n - 3 + 6) / 7)
                let kept = try queryKeys(txn, t, "g != 2")
                for (name, _, _) in columns {
                    let c = cols[name]!
                    var read: [Int64: Val] = [:]
                    for k in all {
                        var o = try openObj(txn, t, k)
                        read[k] = getVal(&o, c)
                        #expect(read[k] == values[name]![k], "\(name) of \(k)")
                    }
                    for dir in ["ASC", "DESC"] {
                        let asc = dir == "ASC"
                        let text = "TRUEPREDICATE SORT(\(name) \(dir))"
                        let got = try queryKeys(txn, t, text)
                        #expect(got == Self.expected(all, read, ascending: asc), "\(text)")
                        #expect(got == (try queryKeys(txn, t, "TRUEPREDICATE SORT(\(name) \(dir), \(name) \(dir))")),
                                "\(text) against the general sort")
                        let filtered = try queryKeys(txn, t, "g != 2 SORT(\(name) \(dir))")
                        #expect(filtered == Self.expected(kept, read, ascending: asc), "g != 2 SORT(\(name) \(dir))")
                        let limited = try queryKeys(txn, t, "TRUEPREDICATE SORT(\(name) \(dir)) LIMIT(40)")
                        #expect(limited == Array(Self.expected(all, read, ascending: asc).prefix(40)), "LIMIT(40)")
                        // over the list: its own order breaks ties, duplicates included
                        var h = try openObj(txn, holder, 0)
                        var list = try openColl(&h, items)
                        var q: OpaquePointer?
                        try must(cs_query_new_coll(&list, text, text.utf8.count, nil, 0, &q), text)
                        defer { cs_query_free(q) }
                        let inList = try keysOf(q!, text)
                        #expect(inList == Self.expected(listed, read, ascending: asc), "\(text) over the list")
                    }
                }
            }
        }
    }

    /// The one-column sort reads a read transaction's values a run of rows of one leaf at a time
    /// (big values stored apart from their leaf, nulls, leaves written before the column was
    /// added, which hold no values for it, and keys with gaps); a write transaction reads them
    /// object by object. Both orders must be the oracle's.
    @Test func runsOfRowsAcrossLeavesBigValuesAndLaterColumns() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var rng = SeededRNG(seed: 0x52_554E_53)
            let n = 1500 // several cluster leaves
            var t: UInt32 = 0, s: UInt32 = 0, late: UInt32 = 0
            var values: [Int64: Val] = [:]
            func value() -> Val {
                switch rng.next() % 6 {
                case 0: return .null
                case 1: // over the size kept inside a leaf, with a shared start
                    return .str("abcdefgh" + String(repeating: "x", count: 4100 + Int(rng.next() % 300)) + "\(rng.next() % 10)")
                case 2: return .str("abcdefgh\(rng.next() % 50)")
                default: return .str(String(rng.next() % 100_000))
                }
            }
            try db.write { txn throws in
                t = try addTable(txn, "Thing")
                s = try addColumn(txn, t, "s", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
                for _ in 0..<n {
                    var o = try createObj(txn, t)
                    let v = value()
                    try must(setVal(&o, s, v), "set s = \(v)")
                    values[o.key] = v
                }
                for k in stride(from: 5, to: n, by: 11) {
                    var o = try openObj(txn, t, Int64(k))
                    try must(cs_obj_delete(&o), "delete")
                    values[Int64(k)] = nil
                }
            }
            // a column added once the leaves exist, set only for objects added after it
            var lateValues: [Int64: Val] = [:]
            try db.write { txn throws in
                late = try addColumn(txn, t, "late", CS_TYPE_STRING)
                for k in values.keys { lateValues[k] = .str("") }
                for _ in 0..<300 {
                    var o = try createObj(txn, t)
                    let v = value()
                    try must(setVal(&o, s, v), "set s")
                    let l: Val = .str("late\(rng.next() % 40)")
                    try must(setVal(&o, late, l), "set late")
                    values[o.key] = v
                    lateValues[o.key] = l
                }
            }
            func check(_ txn: OpaquePointer, _ phase: String) throws {
                let all = try allKeys(txn, t)
                #expect(all == values.keys.sorted(), "\(phase)")
                for (name, vals) in [("s", values), ("late", lateValues)] {
                    for dir in ["ASC", "DESC"] {
                        let text = "TRUEPREDICATE SORT(\(name) \(dir))"
                        let got = try queryKeys(txn, t, text)
                        #expect(got == Self.expected(all, vals, ascending: dir == "ASC"), "\(phase): \(text)")
                    }
                }
            }
            try db.read { txn in try check(txn, "read") }
            try db.write { txn throws in try check(txn, "write") }
        }
    }
}
