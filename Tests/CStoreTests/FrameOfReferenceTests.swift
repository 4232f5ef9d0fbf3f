// Frame-of-reference packed integers (docs/FORMAT.md §3, the BASE flag): a commit packs each
// integer node of the cluster trees it changed in the smaller of plain and framed. These tests
// read values back at every width and base (negative bases, Int64.min and Int64.max, nullable
// columns), write into framed nodes (widening, moving the minimum, deleting, inserting), run the
// query loops and aggregates over them, and check what the file holds: the nodes of a compacted
// copy (which lies back to back from byte 4096) and the format version in the header.

import CStore
import Foundation
import Testing

/// One node of a compacted file, as its header and (when framed) its base say.
struct RawNode {
    let pos: Int
    let flags: UInt8
    let width: Int
    let count: Int
    let base: Int64?
    var framed: Bool { flags & 0x20 != 0 }
}

private func le<T: FixedWidthInteger>(_ d: [UInt8], _ at: Int, _: T.Type) -> T {
    var v: T = 0
    for i in 0..<(T.bitWidth / 8) { v |= T(truncatingIfNeeded: d[at + i]) << (8 * i) }
    return v
}

/// The nodes of a compacted file in file order (FORMAT.md §3 sizes, §11 layout).
func rawNodes(_ path: String) throws -> [RawNode] {
    let d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    var out: [RawNode] = []
    var pos = 4096
    while pos + 8 <= d.count {
        let flags = d[pos + 2], width = Int(d[pos + 3])
        let count = Int(le(d, pos + 4, UInt32.self))
        let bitmap = flags & 0x10 != 0 ? (count + 63) / 64 * 8 : 0
        var payload = flags & 0x08 != 0 ? count * width : (count * width + 7) / 8
        payload += bitmap + (flags & 0x20 != 0 ? 8 : 0)
        let base: Int64? = flags & 0x20 != 0 ? le(d, pos + 8 + bitmap, Int64.self) : nil
        out.append(RawNode(pos: pos, flags: flags, width: width, count: count, base: base))
        pos += 8 + (payload + 7) / 8 * 8
    }
    #expect(pos == d.count, "the nodes of a compacted file end at its end")
    return out
}

/// The plain width FORMAT.md §3 gives a value: 0, 1, 2, 4 unsigned, then 8-64 signed.
func plainWidth(_ v: Int64) -> Int {
    if v == 0 { return 0 }
    if v > 0 && v <= 1 { return 1 }
    if v > 0 && v <= 3 { return 2 }
    if v > 0 && v <= 15 { return 4 }
    if v >= Int64(Int8.min) && v <= Int64(Int8.max) { return 8 }
    if v >= Int64(Int16.min) && v <= Int64(Int16.max) { return 16 }
    if v >= Int64(Int32.min) && v <= Int64(Int32.max) { return 32 }
    return 64
}

/// What FORMAT.md §3 says a commit writes for `n` non-null values from lo to hi (no nulls):
/// framed (width, base) when that node is strictly smaller, else nil (plain).
func expectedFrame(lo: Int64, hi: Int64, n: Int) -> (width: Int, base: Int64)? {
    let span = UInt64(bitPattern: hi &- lo)
    let wf = span == 0 ? 0 : span <= 1 ? 1 : span <= 3 ? 2 : span <= 15 ? 4 : span <= 0xff ? 8
        : span <= 0xffff ? 16 : span <= 0xffff_ffff ? 32 : 64
    if wf == 64 { return nil }
    let wp = max(plainWidth(lo), plainWidth(hi))
    func size(_ payload: Int) -> Int { 8 + (payload + 7) / 8 * 8 }
    guard size(8 + (n * wf + 7) / 8) < size((n * wp + 7) / 8) else { return nil }
    let elo: Int128 = wf < 8 ? 0 : -(Int128(1) << (wf - 1))
    let ehi: Int128 = wf < 8 ? (Int128(1) << wf) - 1 : (Int128(1) << (wf - 1)) - 1
    var b = Int128(lo) - elo
    if b + ehi > Int128(Int64.max) { b = Int128(Int64.max) - ehi }
    return (wf, Int64(b))
}

private func countWhere(_ txn: OpaquePointer, _ table: UInt32, _ text: String) throws -> UInt64 {
    let (rc, msg, q) = makeQuery(txn, table, text)
    if rc != Int32(CS_OK) { throw CStoreError(code: rc, message: msg, context: text) }
    defer { cs_query_free(q) }
    var n: UInt64 = 0
    try must(cs_query_count(q, &n), "count \(text)")
    return n
}

private func aggregate(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ col: UInt32,
                       _ op: cs_aggregate) throws -> Val {
    let (rc, msg, q) = makeQuery(txn, table, text)
    if rc != Int32(CS_OK) { throw CStoreError(code: rc, message: msg, context: text) }
    defer { cs_query_free(q) }
    var out = cs_value()
    try must(cs_query_aggregate(q, col, op, &out), "aggregate \(text)")
    return toVal(out)
}

private func compactCopy(_ db: DB, _ path: String) throws {
    try db.read { txn in try must(cs_txn_write_copy(txn, path, nil, nil), "cs_txn_write_copy") }
}

@Suite struct FrameOfReferenceTests {
    static let rows = 200 // one leaf (a leaf holds up to 256 rows)
    static let widths = [0, 1, 2, 4, 8, 16, 32]
    static let lows: [Int64] = [-(1 << 40), -5_000, 0, 1_000_000, Int64.min]

    /// Values from lo to lo + 2^w - 1, both ends present (w = 0: lo only).
    static func values(lo: Int64, width w: Int) -> [Int64] {
        let span: Int64 = w == 0 ? 0 : (Int64(1) << w) - 1
        return (0..<rows).map { lo &+ Int64((Int128(span) * Int128($0)) / Int128(rows - 1)) }
    }

    @Test func everyWidthAndBaseReadsBackAndIsFramedAsDocumented() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("w.cstore"))
            var cases: [(table: UInt32, values: [Int64])] = []
            // the lows above, and a high end that must lower the base to stay below Int64.max
            var combos: [(Int, Int64)] = []
            for w in Self.widths {
                for lo in Self.lows { combos.append((w, lo)) }
                combos.append((w, Int64.max - (w == 0 ? 0 : (Int64(1) << w) - 1)))
            }
            try db.write { txn throws in
                for (i, (w, lo)) in combos.enumerated() {
                    let t = try addTable(txn, "T\(i)")
                    let c = try addColumn(txn, t, "v", CS_TYPE_INT)
                    let vals = Self.values(lo: lo, width: w)
                    for v in vals {
                        var o = try createObj(txn, t)
                        check(cs_obj_set_int(&o, c, v))
                    }
                    cases.append((t, vals))
                }
            }
            func readAll(_ phase: String) throws {
                try db.read { txn in
                    for (t, vals) in cases {
                        for (k, want) in vals.enumerated() {
                            var o = try openObj(txn, t, Int64(k))
                            let got = try getInt(&o, 0)
                            if got != want { Issue.record("\(phase): table \(t) row \(k) reads \(got), expected \(want)"); return }
                        }
                        // the leaf loops and aggregates over the same node
                        let lo = vals.min()!, hi = vals.max()!
                        #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MIN) == .int(lo), "\(phase) min")
                        #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MAX) == .int(hi), "\(phase) max")
                        #expect(try countWhere(txn, t, "v >= \(lo)") == UInt64(vals.count), "\(phase) >= lo")
                        #expect(try countWhere(txn, t, "v == \(vals[Self.rows / 2])") ==
                                UInt64(vals.filter { $0 == vals[Self.rows / 2] }.count), "\(phase) == mid")
                        #expect(try countWhere(txn, t, "v > \(vals[Self.rows / 2])") ==
                                UInt64(vals.filter { $0 > vals[Self.rows / 2] }.count), "\(phase) > mid")
                    }
                }
            }
            try readAll("after commit")
            db.verify()
            try db.reopen()
            try readAll("after reopen")
            let copy = dir.path("w-copy.cstore")
            try compactCopy(db, copy)
            check(cs_file_verify(copy), "the compacted copy verifies")
            #expect(try fileFormatVersions(copy) == (4, 4), "a copy holding framed nodes is version 4")
            let nodes = try rawNodes(copy)
            for (t, vals) in cases {
                let lo = vals.min()!, hi = vals.max()!
                if let (w, b) = expectedFrame(lo: lo, hi: hi, n: vals.count) {
                    #expect(nodes.contains { $0.framed && $0.width == w && $0.count == vals.count && $0.base == b },
                            "table \(t): values \(lo)...\(hi) framed at width \(w), base \(b)")
                } else {
                    let wp = max(plainWidth(lo), plainWidth(hi))
                    #expect(nodes.contains { !$0.framed && $0.flags == 0 && $0.width == wp && $0.count == vals.count },
                            "table \(t): values \(lo)...\(hi) plain at width \(wp)")
                }
            }
            // the keys 0..199 of every leaf: framed at width 8 around 128 (plain would be 16 bits)
            #expect(nodes.contains { $0.framed && $0.width == 8 && $0.count == Self.rows && $0.base == 128 })
        }
    }

    @Test func int64MinAndMaxTogetherStayPlainAt64Bits() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("m.cstore"))
            let vals: [Int64] = [Int64.min, -1, 0, 1, Int64.max, Int64.min + 1, Int64.max - 1]
            var t: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                for v in vals {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, 0, v))
                }
            }
            try db.read { txn in
                for (k, v) in vals.enumerated() {
                    var o = try openObj(txn, t, Int64(k))
                    #expect(try getInt(&o, 0) == v)
                }
                #expect(try countWhere(txn, t, "v < 0") == 3)
                #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MIN) == .int(Int64.min))
                #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MAX) == .int(Int64.max))
            }
            let copy = dir.path("m-copy.cstore")
            try compactCopy(db, copy)
            #expect(try rawNodes(copy).contains { !$0.framed && $0.width == 64 && $0.count == vals.count })
            db.verify()
        }
    }

    @Test(arguments: [(Int64(10), 4), (Int64(200), 8), (Int64(40_000), 16), (Int64(3_000_000_000), 32)])
    func nearInt64MaxTheBaseIsLowered(span: Int64, width: Int) throws {
        // values Int64.max - span ... Int64.max: the width's range is wider than the span, and a
        // base putting the minimum at the lowest element would let the highest pass Int64.max
        try withTempDir { dir in
            let db = try DB(dir.path("x.cstore"))
            let vals = (0..<Self.rows).map { Int64.max - span + Int64(Int128(span) * Int128($0) / Int128(Self.rows - 1)) }
            var t: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                for v in vals {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, 0, v))
                }
            }
            try db.read { txn in
                for (k, v) in vals.enumerated() {
                    var o = try openObj(txn, t, Int64(k))
                    #expect(try getInt(&o, 0) == v)
                }
                #expect(try countWhere(txn, t, "v >= \(Int64.max - span / 2)") == UInt64(vals.filter { $0 >= Int64.max - span / 2 }.count))
            }
            let copy = dir.path("x-copy.cstore")
            try compactCopy(db, copy)
            let ehi: Int64 = width < 8 ? (Int64(1) << width) - 1 : (Int64(1) << (width - 1)) - 1
            let frame = try #require(expectedFrame(lo: vals.first!, hi: vals.last!, n: vals.count))
            #expect(frame.width == width && frame.base == Int64.max - ehi)
            #expect(try rawNodes(copy).contains { $0.framed && $0.width == width && $0.base == Int64.max - ehi })
            check(cs_file_verify(copy))
        }
    }

    @Test func writesIntoFramedNodesReencodeThem() throws {
        // 1,000 rows over four leaves, values 1,000,000 + key: every column leaf and key list
        // is framed at width 8. Then: a value below the minimum, one at Int64.max, one inside
        // the range, deletes and inserts, checked against a model in the open write (decoded
        // nodes), after the commit (packed again) and after a reopen.
        try withTempDir { dir in
            let db = try DB(dir.path("rw.cstore"))
            var t: UInt32 = 0
            var model: [Int64: Int64] = [:]
            try db.write { txn throws in
                t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                for _ in 0..<1000 {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, 0, 1_000_000 + o.key))
                    model[o.key] = 1_000_000 + o.key
                }
            }
            let copy1 = dir.path("rw1.cstore")
            try compactCopy(db, copy1)
            #expect(try rawNodes(copy1).filter { $0.framed && $0.width == 8 }.count >= 8,
                    "four leaves, each with framed keys and values")
            func checkModel(_ txn: OpaquePointer, _ phase: String) throws {
                #expect(try tableCount(txn, t) == UInt64(model.count), "\(phase) count")
                for (k, v) in model {
                    var o = try openObj(txn, t, k)
                    let got = try getInt(&o, 0)
                    if got != v { Issue.record("\(phase): key \(k) reads \(got), expected \(v)"); return }
                }
                let vals = Array(model.values)
                for k: Int64 in [-6, 0, 1_000_100, 1_000_500, 1_000_999, Int64.max] {
                    #expect(try countWhere(txn, t, "v > \(k)") == UInt64(vals.filter { $0 > k }.count), "\(phase) v > \(k)")
                    #expect(try countWhere(txn, t, "v == \(k)") == UInt64(vals.filter { $0 == k }.count), "\(phase) v == \(k)")
                }
                #expect(try aggregate(txn, t, "v < 1000600", 0, CS_AGG_SUM) == .int(vals.filter { $0 < 1_000_600 }.reduce(0, +)),
                        "\(phase) sum")
                #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MIN) == .int(vals.min()!), "\(phase) min")
                #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MAX) == .int(vals.max()!), "\(phase) max")
            }
            let txn = try db.begin(CS_TXN_WRITE)
            for (k, v) in [(Int64(10), Int64(-5)), (20, Int64.max), (30, 1_000_010), (600, 7)] {
                var o = try openObj(txn, t, k)
                check(cs_obj_set_int(&o, 0, v))
                model[k] = v
            }
            for k in Int64(500)..<520 {
                var o = try openObj(txn, t, k)
                check(cs_obj_delete(&o))
                model[k] = nil
            }
            for _ in 0..<40 {
                var o = try createObj(txn, t)
                check(cs_obj_set_int(&o, 0, 2_000_000 - o.key))
                model[o.key] = 2_000_000 - o.key
            }
            try checkModel(txn, "in the write")
            try must(cs_txn_commit(txn), "commit")
            check(cs_txn_end(txn))
            try db.read { try checkModel($0, "after the commit") }
            db.verify()
            try db.reopen()
            try db.read { try checkModel($0, "after reopen") }
            db.verify("after reopen")
        }
    }

    /// A value its frame holds is written into a framed node in place (node.c, invariant 4), and
    /// the commit keeps that node as it is: at each framed width, values at both ends of the
    /// frame (base plus the width's lowest and highest element) go in place, twice in one write
    /// (the file node, then its framed copy), and the node keeps its width and base even when
    /// every value becomes one (a re-pack would give width 0). One past either end widens the
    /// node to plain, and the commit packs it again; so does a write outside the frame after
    /// writes inside it in the same transaction. Checked in the write, after the commit, after a
    /// reopen, and in the nodes of a compacted copy.
    @Test(arguments: [4, 8, 16, 32])
    func inFrameWritesKeepTheFrameAndOneStepOutsideWidens(width w: Int) throws {
        try withTempDir { dir in
            let db = try DB(dir.path("f\(w).cstore"))
            let lo: Int64 = 5_000_000_000_000
            let vals = Self.values(lo: lo, width: w)
            let hi = vals.last!
            let frame = try #require(expectedFrame(lo: lo, hi: hi, n: vals.count))
            #expect(frame.width == w, "the values make a frame of width \(w)")
            var t: UInt32 = 0
            var model = vals
            try db.write { txn throws in
                t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                for v in vals {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, 0, v))
                }
            }
            func checkModel(_ txn: OpaquePointer, _ phase: String) throws {
                for (k, v) in model.enumerated() {
                    var o = try openObj(txn, t, Int64(k))
                    let got = try getInt(&o, 0)
                    if got != v { Issue.record("\(phase): row \(k) reads \(got), expected \(v)"); return }
                }
                #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MIN) == .int(model.min()!), "\(phase) min")
                #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MAX) == .int(model.max()!), "\(phase) max")
            }
            /// The value column's node in a compacted copy (the one node of `count` elements
            /// that is not the key list, whose values are 0..<count).
            func valueNode(_ phase: String) throws -> RawNode? {
                let copy = dir.path("copy-\(phase.filter { $0.isLetter }).cstore")
                try? FileManager.default.removeItem(atPath: copy)
                try compactCopy(db, copy)
                let keys = expectedFrame(lo: 0, hi: Int64(model.count - 1), n: model.count)
                let nodes = try rawNodes(copy).filter {
                    $0.count == model.count && $0.flags & 0x0a == 0
                        && !($0.framed && $0.width == keys?.width && $0.base == keys?.base)
                }
                #expect(nodes.count == 1, "\(phase): one value node")
                return nodes.first
            }
            func write(_ changes: [(Int, Int64)], _ phase: String) throws {
                let txn = try db.begin(CS_TXN_WRITE)
                for (row, v) in changes {
                    var o = try openObj(txn, t, Int64(row))
                    check(cs_obj_set_int(&o, 0, v))
                    model[row] = v
                }
                try checkModel(txn, "\(phase), in the write")
                try must(cs_txn_commit(txn), "commit")
                check(cs_txn_end(txn))
                try db.read { try checkModel($0, "\(phase), after the commit") }
                db.verify(phase)
            }
            // both ends of the frame, each twice (the second write finds the framed copy)
            let mid = vals[vals.count / 2]
            try write([(1, lo), (2, hi), (1, hi), (2, lo), (3, mid)], "ends")
            var n = try #require(try valueNode("ends"))
            #expect(n.framed && n.width == w && n.base == frame.base, "ends: framed \(n.width) base \(String(describing: n.base))")
            // every value one: the frame is kept (a re-pack would make it width 0)
            try write(model.indices.map { ($0, mid) }, "all one")
            n = try #require(try valueNode("all one"))
            #expect(n.framed && n.width == w && n.base == frame.base, "all one: kept framed \(n.width) base \(String(describing: n.base))")
            try db.reopen()
            try db.read { try checkModel($0, "all one, after reopen") }
            // one below the frame: widened, packed again at the commit
            try write([(4, lo - 1)], "below")
            n = try #require(try valueNode("below"))
            let below = expectedFrame(lo: lo - 1, hi: mid, n: model.count)
            #expect(n.framed == (below != nil) && n.base == below?.base, "below: \(n)")
            // a frame again from the values now there; one above it, after writes inside it
            let f2 = try #require(below)
            var e2lo: Int64 = 0, e2hi: Int64 = 0
            if f2.width < 8 { e2hi = (Int64(1) << f2.width) - 1 } else {
                e2lo = -(Int64(1) << (f2.width - 1)); e2hi = (Int64(1) << (f2.width - 1)) - 1
            }
            let top = f2.base + e2hi, bottom = f2.base + e2lo
            try write([(5, top), (6, bottom), (7, top + 1)], "above")
            try db.reopen()
            try db.read { try checkModel($0, "above, after reopen") }
            n = try #require(try valueNode("above"))
            let above = expectedFrame(lo: model.min()!, hi: model.max()!, n: model.count)
            #expect(n.framed == (above != nil) && n.base == above?.base && (above == nil || n.width == above!.width),
                    "above: \(n)")
            db.verify("after reopen")
        }
    }

    @Test func nullableColumnsFrameTheirNonNullValues() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("n.cstore"))
            var t: UInt32 = 0
            var model: [Int64?] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT, flags: CS_COL_NULLABLE)
                for i in 0..<Self.rows {
                    var o = try createObj(txn, t)
                    let v: Int64? = i % 3 == 0 ? nil : -7_000_000_000 + Int64(i) * 3
                    if let v { check(cs_obj_set_int(&o, 0, v)) }
                    model.append(v)
                }
            }
            func checkAll(_ phase: String) throws {
                try db.read { txn in
                    for (k, v) in model.enumerated() {
                        var o = try openObj(txn, t, Int64(k))
                        #expect(getVal(&o, 0) == (v.map { Val.int($0) } ?? .null), "\(phase) row \(k)")
                    }
                    #expect(try countWhere(txn, t, "v == nil") == UInt64(model.filter { $0 == nil }.count), "\(phase) nulls")
                    let present = model.compactMap { $0 }
                    #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_MIN) == .int(present.min()!), "\(phase) min")
                    #expect(try aggregate(txn, t, "TRUEPREDICATE", 0, CS_AGG_SUM) == .int(present.reduce(0, +)), "\(phase) sum")
                }
            }
            try checkAll("after commit")
            let copy = dir.path("n-copy.cstore")
            try compactCopy(db, copy)
            let present = model.compactMap { $0 }
            let (w, b) = try #require(expectedFrame(lo: present.min()!, hi: present.max()!, n: Self.rows))
            #expect(try rawNodes(copy).contains { $0.flags == 0x30 && $0.width == w && $0.base == b && $0.count == Self.rows },
                    "a nullable framed node: NULLS | BASE, its base after the bitmap")
            // a null becomes a value and a value becomes null
            try db.write { txn throws in
                var a = try openObj(txn, t, 0)
                check(cs_obj_set_int(&a, 0, 42))
                var b = try openObj(txn, t, 1)
                check(setVal(&b, 0, .null))
            }
            model[0] = 42
            model[1] = nil
            try checkAll("after the second commit")
            db.verify()
            try db.reopen()
            try checkAll("after reopen")
        }
    }

    @Test func damagedFramedNodesAreFoundNotMisread() throws {
        try withTempDir { dir in
            let db = try DB(dir.path("d.cstore"))
            var t: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                for i in 0..<Self.rows {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, 0, 1_000_000 + Int64(i) * 5))
                }
            }
            let copy = dir.path("d-copy.cstore")
            try compactCopy(db, copy)
            db.close()
            let (w, b) = try #require(expectedFrame(lo: 1_000_000, hi: 1_000_000 + 199 * 5, n: Self.rows))
            let node = try #require(try rawNodes(copy).first { $0.framed && $0.width == w && $0.base == b })
            let original = try Data(contentsOf: URL(fileURLWithPath: copy))

            // 1. a base that lets base + element pass Int64.max: refused as a damaged node
            // header by every read, and by verify, before any checksum is looked at
            var bad = original
            withUnsafeBytes(of: Int64.max.littleEndian) { bad.replaceSubrange(node.pos + 8..<(node.pos + 16), with: $0) }
            let p1 = dir.path("base.cstore")
            try bad.write(to: URL(fileURLWithPath: p1))
            expectCode(cs_file_verify(p1), CS_CORRUPT, "verify of a base out of range")
            #expect(lastMessage().contains("base out of range"), "\(lastMessage())")
            let db1 = try DB(p1, flags: 0)
            try db1.read { txn in
                var o = try openObj(txn, t, 3)
                var v: Int64 = 0
                expectCode(cs_obj_get_int(&o, 0, &v), CS_CORRUPT, "reading a value of the damaged node")
            }
            db1.close()

            // 2. one element changed: verify finds the checksum mismatch at the node
            bad = original
            bad[node.pos + 16 + 7] ^= 0x40
            let p2 = dir.path("elem.cstore")
            try bad.write(to: URL(fileURLWithPath: p2))
            expectCode(cs_file_verify(p2), CS_CORRUPT, "verify of a changed element")
            #expect(lastMessage().contains("\(node.pos)"), "names the node: \(lastMessage())")

            // 3. BASE on a width-64 node is not a node
            bad = original
            bad[node.pos + 3] = 64
            let p3 = dir.path("w64.cstore")
            try bad.write(to: URL(fileURLWithPath: p3))
            expectCode(cs_file_verify(p3), CS_CORRUPT, "verify of a framed width-64 node")
        }
    }

    @Test func everyCommitMarksVersionFiveAndACopyWithoutFramedNodesStaysOne() throws {
        try withTempDir { dir in
            let path = dir.path("v.cstore")
            let db = try DB(path)
            try db.write { txn throws in
                let t = try addTable(txn, "S")
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                var o = try createObj(txn, t)
                check(setVal(&o, 0, .str("one")))
            }
            #expect(try fileFormatVersions(path) == (6, 6), "every commit marks version 6 (FORMAT.md §2)")
            let copy = dir.path("v-copy.cstore")
            try compactCopy(db, copy)
            #expect(try rawNodes(copy).allSatisfy { !$0.framed })
            #expect(try fileFormatVersions(copy) == (1, 1), "a copy without framed nodes needs version 1")
            db.close()
        }
    }
}
