// Integer leaves are bit-packed at 0, 1, 2, 4, 8, 16, 32 or 64 bits per element (docs/FORMAT.md §3).
// These tests set a small value and then ever wider ones in one leaf, and check that every
// other row keeps its value through each widening, each commit and a reopen.

import CStore
import Foundation
import Testing

@Suite struct NodeWidthTests {
    /// Values that need exactly 0, 1, 2, 4, 8, 16, 32 and 64 bits (unsigned), then negatives.
    static let widening: [Int64] = [0, 1, 3, 15, 255, 65_535, 4_294_967_295, Int64.max,
                                    -1, -2, -128, -32_768, -2_147_483_648, Int64.min]

    private func checkAll(_ txn: OpaquePointer, _ t: UInt32, _ col: UInt32, _ keys: [Int64],
                          _ model: [Int64], _ phase: String) throws {
        var mismatches = 0
        for (i, k) in keys.enumerated() {
            var o = try openObj(txn, t, k)
            let v = try getInt(&o, col)
            if v != model[i] {
                mismatches += 1
                if mismatches <= 5 { Issue.record("\(phase): row \(i) reads \(v), expected \(model[i])") }
            }
        }
        #expect(mismatches == 0, "\(phase): \(mismatches) rows differ")
    }

    @Test(arguments: [false, true])
    func wideningKeepsOtherRows(commitEachStep: Bool) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let rows = 200 // all in one leaf (a leaf holds up to 256 rows)
            var t: UInt32 = 0
            var col: UInt32 = 0
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                col = try addColumn(txn, t, "v", CS_TYPE_INT)
                for _ in 0..<rows { keys.append(try createObj(txn, t).key) }
            }
            var model = [Int64](repeating: 0, count: rows)
            let txn = try db.begin(CS_TXN_WRITE)
            for (step, value) in Self.widening.enumerated() {
                let row = (step * 37 + 5) % rows
                var o = try openObj(txn, t, keys[row])
                check(cs_obj_set_int(&o, col, value), "set \(value)")
                model[row] = value
                try checkAll(txn, t, col, keys, model, "step \(step) (value \(value))")
                if commitEachStep {
                    try must(cs_txn_commit(txn), "commit")
                    try must(cs_txn_promote(txn), "promote")
                }
            }
            // Narrow values written after the widest still read back exactly.
            for (i, v) in [Int64(2), -3, 1 << 20].enumerated() {
                var o = try openObj(txn, t, keys[190 + i])
                check(cs_obj_set_int(&o, col, v))
                model[190 + i] = v
            }
            try must(cs_txn_commit(txn), "commit")
            check(cs_txn_end(txn))
            try db.read { try checkAll($0, t, col, keys, model, "after commit") }
            db.verify()
            try db.reopen()
            try db.read { try checkAll($0, t, col, keys, model, "after reopen") }
            db.verify("after reopen")
        }
    }

    @Test func everyWidthInItsOwnLeafAcrossLeaves() throws {
        // 8 leaves' worth of rows; leaf i holds only values of width class i, then one row of
        // each leaf is widened to 64 bits.
        try withTempDir { dir in
            let db = try DB(dir.path())
            let perClass = 300
            let maxima: [Int64] = [0, 1, 3, 15, 255, 65_535, 4_294_967_295, Int64.max]
            var t: UInt32 = 0
            var col: UInt32 = 0
            var nullableCol: UInt32 = 0
            var keys: [Int64] = []
            var model: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                col = try addColumn(txn, t, "v", CS_TYPE_INT)
                nullableCol = try addColumn(txn, t, "n", CS_TYPE_INT, flags: CS_COL_NULLABLE)
                for m in maxima {
                    for j in 0..<perClass {
                        var o = try createObj(txn, t)
                        keys.append(o.key)
                        let v = m == 0 ? 0 : Int64(j) % m + (j % 2 == 0 ? 0 : m - Int64(j) % m)
                        check(cs_obj_set_int(&o, col, v))
                        if j % 3 == 0 { check(cs_obj_set_int(&o, nullableCol, -v)) }
                        model.append(v)
                    }
                }
            }
            try db.write { txn throws in
                for c in 0..<maxima.count {
                    let row = c * perClass + 17
                    var o = try openObj(txn, t, keys[row])
                    check(cs_obj_set_int(&o, col, Int64.min))
                    model[row] = Int64.min
                }
            }
            try db.reopen()
            try db.read { txn throws in
                try checkAll(txn, t, col, keys, model, "after reopen")
                for (i, k) in keys.enumerated() where i % 7 == 0 {
                    var o = try openObj(txn, t, k)
                    let j = i % perClass
                    let expected: Val = j % 3 == 0 ? .int(-originalValue(i, perClass, maxima)) : .null
                    #expect(getVal(&o, nullableCol) == expected, "nullable row \(i)")
                }
            }
            db.verify()
        }
    }

    private func originalValue(_ i: Int, _ perClass: Int, _ maxima: [Int64]) -> Int64 {
        let m = maxima[i / perClass]
        let j = i % perClass
        return m == 0 ? 0 : Int64(j) % m + (j % 2 == 0 ? 0 : m - Int64(j) % m)
    }

    /// String and binary leaves change layout as values grow (fixed slots, offsets + blob, own
    /// blobs). Each step writes one row of a 100-row leaf and checks every row.
    @Test(arguments: ["string", "binary"])
    func byteLeavesKeepOtherRowsThroughLayoutChanges(_ kind: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let type = kind == "string" ? CS_TYPE_STRING : CS_TYPE_BINARY
            func make(_ n: Int, _ seed: Int) -> Val {
                let bytes = (0..<n).map { UInt8(97 + ($0 * 7 + seed) % 26) }
                return type == CS_TYPE_STRING ? .string(bytes) : .binary(bytes)
            }
            var t: UInt32 = 0
            var col: UInt32 = 0
            var keys: [Int64] = []
            var model: [Val] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                col = try addColumn(txn, t, "v", type, flags: CS_COL_NULLABLE)
                for i in 0..<100 {
                    var o = try createObj(txn, t)
                    keys.append(o.key)
                    let v = i % 10 == 0 ? Val.null : make(i % 4, i)
                    check(setVal(&o, col, v))
                    model.append(v)
                }
            }
            let sizes = [0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256, 4095, 4096, 65_535, 65_536, 1 << 20, 300, 2, 0]
            for (step, n) in sizes.enumerated() {
                let row = (step * 13 + 3) % 100
                try db.write { txn throws in
                    var o = try openObj(txn, t, keys[row])
                    let v = make(n, step)
                    check(setVal(&o, col, v), "set \(n) bytes")
                    model[row] = v
                    if step % 4 == 0 {
                        var p = try openObj(txn, t, keys[(row + 50) % 100])
                        check(setVal(&p, col, .null))
                        model[(row + 50) % 100] = .null
                    }
                }
                try db.read { txn throws in
                    var bad = 0
                    for (i, k) in keys.enumerated() {
                        var o = try openObj(txn, t, k)
                        if getVal(&o, col) != model[i] {
                            bad += 1
                            if bad <= 3 { Issue.record("step \(step) (\(n) bytes into row \(row)): row \(i) differs") }
                        }
                    }
                    #expect(bad == 0, "step \(step)")
                }
            }
            try db.reopen()
            try db.read { txn throws in
                for (i, k) in keys.enumerated() {
                    var o = try openObj(txn, t, k)
                    #expect(getVal(&o, col) == model[i], "row \(i) after reopen")
                }
            }
            db.verify()
        }
    }
}
