// Counting matches of one Int condition: the engine counts each cluster leaf in one fused
// loop per column width (no per-row mask), and decides a leaf without reading it when the
// constant lies outside what its width can hold. The counts must equal a count made here in
// Swift over the same values, for every operator, every width and leaves that lack the column.

import CStore
import Foundation
import Testing

@Suite struct QueryCountTests {
    /// Row i's value: 8-bit values first, then 16-, 32- and 64-bit ones, so leaves of every
    /// width exist (about 256 rows a leaf).
    static func value(_ i: Int) -> Int64 {
        switch i {
        case 10: return 127 // the ends of the 8-bit range
        case 20: return -128
        case ..<700: return Int64(i % 100) - 50
        case ..<1400: return Int64(i) * 37 - 30_000
        case ..<2100: return Int64(i) * 1_000_003 - 1_700_000_000
        default: return (Int64(i) << 40) * (i % 2 == 0 ? 1 : -1)
        }
    }

    @Test func countsEqualACountOfTheValuesForEveryOperatorAndWidth() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let n = 2800
            var t: UInt32 = 0, v: UInt32 = 0, small: UInt32 = 0
            // `small` holds 0...1 in the first leaves, 0...3 next, then 0...15: leaves of the
            // unsigned packed widths 1, 2 and 4.
            func smallValue(_ i: Int) -> Int64 { Int64(i < 900 ? i % 2 : i < 1800 ? i % 4 : i % 16) }
            try db.write { txn throws in
                t = try addTable(txn, "Rows")
                v = try addColumn(txn, t, "v", CS_TYPE_INT)
                small = try addColumn(txn, t, "small", CS_TYPE_INT)
                for i in 0..<n {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, v, Self.value(i)), "set")
                    try must(cs_obj_set_int(&o, small, smallValue(i)), "set small")
                }
            }
            // A column added to the populated table, set in a few rows only: most leaves do not
            // materialise it and count as holding 0.
            var late: UInt32 = 0
            var lateValues = [Int64](repeating: 0, count: n)
            try db.write { txn throws in
                late = try addColumn(txn, t, "late", CS_TYPE_INT)
                for i in stride(from: 2300, to: 2400, by: 3) {
                    var o = try openObj(txn, t, Int64(i))
                    try must(cs_obj_set_int(&o, late, Int64(i)), "set late")
                    lateValues[i] = Int64(i)
                }
            }
            let values = (0..<n).map(Self.value)
            let smallValues = (0..<n).map(smallValue)
            let ops: [(String, (Int64, Int64) -> Bool)] = [
                ("==", { $0 == $1 }), ("!=", { $0 != $1 }), ("<", { $0 < $1 }),
                ("<=", { $0 <= $1 }), (">", { $0 > $1 }), (">=", { $0 >= $1 }),
            ]
            // Constants inside and outside the range of each leaf width, so leaves are both
            // scanned and decided by their width alone.
            let constants: [Int64] = [-50, -1, 0, 1, 2, 3, 7, 15, 16, 49, 200, -30_000, 20_000, 40_000,
                                      1_000_003, -1_700_000_000, 3_000_000_000,
                                      127, 128, -128, -129, 32_767, 32_768, -32_768, -32_769,
                                      Int64(Int32.max), Int64(Int32.max) + 1, Int64(Int32.min), Int64(Int32.min) - 1,
                                      Int64(2200) << 40, -(Int64(2201) << 40), .max, .min]
            try db.read { txn throws in
                for (op, holds) in ops {
                    for k in constants {
                        for (name, column) in [("v", values), ("late", lateValues), ("small", smallValues)] {
                            let text = "\(name) \(op) \(k)"
                            let (rc, msg, q) = makeQuery(txn, t, text)
                            try must(rc, "\(text): \(msg)")
                            defer { cs_query_free(q) }
                            var c: UInt64 = 0
                            try must(cs_query_count(q, &c), "count \(text)")
                            let want = column.filter { holds($0, k) }.count
                            #expect(Int(c) == want, "\(text)")
                        }
                    }
                }
                // Two conditions take the masked path; it must agree too.
                let (rc, _, q) = makeQuery(txn, t, "v > -40 AND late == 0")
                try must(rc)
                defer { cs_query_free(q) }
                var c: UInt64 = 0
                try must(cs_query_count(q, &c))
                #expect(Int(c) == (0..<n).filter { values[$0] > -40 && lateValues[$0] == 0 }.count)
            }
        }
    }

    /// An Int aggregate runs the leaf loops and says so in cs_query_last_plan, as a count does;
    /// with a condition the loops cannot run it falls back to the matches (a scan).
    @Test func aggregatesReportTheirPlan() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let n = 700
            var t: UInt32 = 0, v: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "Rows")
                v = try addColumn(txn, t, "v", CS_TYPE_INT)
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                for i in 0..<n {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, v, Self.value(i)), "set")
                }
            }
            let values = (0..<n).map(Self.value)
            try db.read { txn throws in
                let positive: Int64 = values.filter { $0 > 0 }.reduce(0, +), all: Int64 = values.reduce(0, +)
                let cases: [(String, Int64, cs_plan_kind)] = [("v > 0", positive, CS_PLAN_LEAVES),
                                                              ("TRUEPREDICATE", all, CS_PLAN_LEAVES),
                                                              ("v > 0 AND s == ''", positive, CS_PLAN_SCAN)]
                for (text, want, kind) in cases {
                    let (rc, msg, q) = makeQuery(txn, t, text)
                    try must(rc, "\(text): \(msg)")
                    defer { cs_query_free(q) }
                    var sum = cs_value()
                    try must(cs_query_aggregate(q, v, CS_AGG_SUM, &sum), "sum \(text)")
                    #expect(sum.type == CS_TYPE_INT && sum.v.i == want, "\(text)")
                    var p = cs_query_plan()
                    try must(cs_query_last_plan(q, &p))
                    #expect(p.kind == kind.rawValue && p.candidates == UInt64(n), "\(text): plan \(p.kind)")
                }
            }
        }
    }
}
