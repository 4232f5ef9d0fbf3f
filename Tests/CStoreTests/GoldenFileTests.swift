// The golden files, one per format version (docs/FORMAT.md, Format version):
// - Tests/Fixtures/format-v1.cstore, a small database that uses every type, collection kind,
//   link kind and a change history, with its contents dumped to format-v1.txt;
// - Tests/Fixtures/format-v2.cstore, the same contents plus Mixed indexes (the version-2 key
//   tags 0x07-0x0D of FORMAT.md §6.5), with its contents and index lookups in format-v2.txt.
// - Tests/Fixtures/format-v3.cstore, written by the version-3 library (format-v3-writer.c beside
//   it says how): plain integer nodes of every width over several leaves and a chunked free list;
// - Tests/Fixtures/format-v4.cstore, the version-2 contents plus a table of integer columns whose
//   nodes are framed (FORMAT.md §3): every width, negative bases, Int64.min and Int64.max,
//   nullable columns;
// - Tests/Fixtures/format-v5.cstore, the version-4 contents plus a pk-keyed table (FORMAT.md
//   §6.1): objects keyed by their Int primary keys, counter keys for negative and huge ones,
//   retired keys and a primary key created again after its delete.
// - Tests/Fixtures/format-v6.cstore, the version-5 contents plus a pk-keyed table that keeps no
//   index of its Int primary key (FORMAT.md §6.1, keying flag 0x02), loaded in scattered key
//   order, with some keys retired.
// Every later library must open and verify each one, read the same contents and write on top of
// it. STORE_WRITE_GOLDEN=N rewrites the pair of version N (only ever for a new format version:
// add a new pair, keep the old ones).

import CStore
import Foundation
import Testing

private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures")

/// Writes the golden contents: three commits, so the file has free space and a history.
private func writeGolden(_ db: DB) throws {
    try db.write { txn throws in
        let target = try addTable(txn, "Target")
        let tname = try addColumn(txn, target, "name", CS_TYPE_STRING)
        let emb = try addTable(txn, "Address", flags: CS_TABLE_EMBEDDED)
        let street = try addColumn(txn, emb, "street", CS_TYPE_STRING)
        let o = try addTable(txn, "Owner")
        let scalars: [(String, cs_type)] = [
            ("int", CS_TYPE_INT), ("bool", CS_TYPE_BOOL), ("float", CS_TYPE_FLOAT),
            ("double", CS_TYPE_DOUBLE), ("string", CS_TYPE_STRING), ("binary", CS_TYPE_BINARY),
            ("date", CS_TYPE_TIMESTAMP), ("oid", CS_TYPE_OBJECTID), ("uuid", CS_TYPE_UUID),
            ("decimal", CS_TYPE_DECIMAL),
        ]
        var cols: [UInt32] = []
        var optCols: [UInt32] = []
        for (name, type) in scalars {
            cols.append(try addColumn(txn, o, name, type))
            optCols.append(try addColumn(txn, o, "opt_" + name, type, flags: CS_COL_NULLABLE))
        }
        let mixed = try addColumn(txn, o, "mixed", CS_TYPE_MIXED)
        let mixedNest = try addColumn(txn, o, "mixedNest", CS_TYPE_MIXED)
        let link = try addColumn(txn, o, "link", CS_TYPE_LINK, target: target)
        let address = try addColumn(txn, o, "address", CS_TYPE_LINK, target: emb)
        let ints = try addColumn(txn, o, "ints", CS_TYPE_INT, coll: CS_COLL_LIST)
        let strs = try addColumn(txn, o, "strs", CS_TYPE_STRING, coll: CS_COLL_LIST, flags: CS_COL_NULLABLE)
        let links = try addColumn(txn, o, "links", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
        let tags = try addColumn(txn, o, "tags", CS_TYPE_STRING, coll: CS_COLL_SET)
        let doubles = try addColumn(txn, o, "doubles", CS_TYPE_DOUBLE, coll: CS_COLL_SET)
        let scores = try addColumn(txn, o, "scores", CS_TYPE_INT, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE)
        let friends = try addColumn(txn, o, "friends", CS_TYPE_LINK, coll: CS_COLL_MAP, target: target)
        let anys = try addColumn(txn, o, "anys", CS_TYPE_MIXED, coll: CS_COLL_LIST)
        // The primary key is set after the objects exist (below), so Owner keeps counter keys
        // 0-3 as the library that wrote the version-1 file gave them: a table given an Int
        // primary key while empty would use the keys as object keys (FORMAT.md §6.1).
        check(cs_column_set_indexed(txn, o, cols[6], true))     // date
        check(cs_column_set_indexed(txn, o, optCols[4], true))  // opt_string
        check(cs_schema_version_set(txn, 3))

        var targets: [Int64] = []
        for name in ["alpha", "beta", "gamma"] {
            var t = try createObj(txn, target)
            check(setVal(&t, tname, .string(Array(name.utf8))))
            targets.append(t.key)
        }
        for i in 0..<4 {
            let n = Int64(i)
            var x = try createObj(txn, o)
            check(setVal(&x, cols[0], .int(n * 1_000_000_007 - 3)))
            let values: [Val] = [
                .int(n * 1_000_000_007 - 3), .bool(i % 2 == 0), .float(Float(i) * 1.5 - 0.25),
                .double(Double(i) / 3), .string(Array("owner \(i) ✓".utf8)),
                .binary([UInt8](repeating: UInt8(i), count: i * 5000)),
                .timestamp(n * 86_400 - 1, Int32(i * 1000)),
                .objectId((0..<12).map { UInt8(($0 + i) & 0xff) }),
                .uuid((0..<16).map { UInt8(($0 * 7 + i) & 0xff) }),
                .decimal(UInt64(i * 125), 0x3040_0000_0000_0000 - (UInt64(i) << 49)),
            ]
            for (c, v) in zip(cols, values).dropFirst() { check(setVal(&x, c, v)) }
            #expect(getVal(&x, cols[0]) == values[0], "the primary key is set at creation")
            for (k, c) in optCols.enumerated() where (k + i) % 2 == 0 { check(setVal(&x, c, values[k])) }
            check(setVal(&x, mixed, [Val.int(n), .string(Array("m\(i)".utf8)), .link(target, targets[i % 3]), .double(2.5)][i]))
            check(setVal(&x, link, i == 3 ? .null : .link(target, targets[i % 3])))
            var a = cs_obj()
            check(cs_obj_create_embedded(&x, address, &a))
            check(setVal(&a, street, .string(Array("\(i) Main Street".utf8))))
            var l = try openColl(&x, ints)
            for j in 0..<(i * 300) { check(listAppend(&l, .int(Int64(j * j - 7)))) }
            var s = try openColl(&x, strs)
            for j in 0..<3 { check(listAppend(&s, j == 1 ? .null : .string(Array("s\(i)\(j)".utf8)))) }
            var ls = try openColl(&x, links)
            for j in 0...i { check(listAppend(&ls, .link(target, targets[j % 3]))) }
            var tg = try openColl(&x, tags)
            for w in ["red", "green", "blue"].prefix(i + 1) { _ = setInsert(&tg, .string(Array(w.utf8))) }
            var ds = try openColl(&x, doubles)
            for d in [Double.nan, -1, 0.5, Double(i)] { _ = setInsert(&ds, .double(d)) }
            var sc = try openColl(&x, scores)
            for (k, v) in [("a", Val.int(n)), ("b", .null), ("ç", .int(-n))] { check(mapSet(&sc, Array(k.utf8), v)) }
            var fr = try openColl(&x, friends)
            check(mapSet(&fr, Array("best".utf8), .link(target, targets[(i + 1) % 3])))
            var an = try openColl(&x, anys)
            check(listAppend(&an, .int(n)))
            check(listAppend(&an, .string(Array("any".utf8))))
            check(cs_obj_set_collection(&x, mixedNest, i % 2 == 0 ? CS_TYPE_LIST : CS_TYPE_DICT))
            var nest = try openColl(&x, mixedNest)
            if i % 2 == 0 {
                check(listAppend(&nest, .int(n)))
                check(listAppend(&nest, .bool(true)))
            } else {
                check(mapSet(&nest, Array("k".utf8), .double(Double(i))))
                // A nested accessor borrows its key: keep it alive while the accessor is used.
                let innerKey = strdup("inner")!
                defer { free(innerKey) }
                check(cs_map_set_collection(&nest, innerKey, 5, CS_TYPE_LIST))
                var inner = cs_coll()
                check(cs_coll_open_nested(&nest, -1, innerKey, 5, &inner))
                check(listAppend(&inner, .string(Array("deep".utf8))))
            }
        }
        check(cs_table_set_primary_key(txn, o, cols[0]))
    }
    try db.write { txn throws in
        let o = try findTable(txn, "Owner")
        var x = try openObj(txn, o, 1)
        check(cs_obj_delete(&x))
        var y = try openObj(txn, o, 2)
        check(setVal(&y, try findColumn(txn, o, "string"), .string(Array("rewritten".utf8))))
    }
    try db.write { txn throws in
        let t = try findTable(txn, "Target")
        var x = try openObj(txn, t, 2)
        check(cs_obj_delete(&x))
    }
}

/// The values of the version-2 table's indexed Mixed column: one of every Mixed key tag, numbers
/// of four types that share one key (1, 1.0, 1.0f, 1.00), a decimal no double holds, NaN and
/// infinity, a string and a binary with the same bytes, and a nested list and dictionary.
private func keyedValues(target: UInt32) -> [Val] {
    [.null, .bool(false), .bool(true), .int(1), .double(1.0), .float(1.0),
     .decimal(100, 0x303C_0000_0000_0000), // 1.00
     .decimal(1, 0x303E_0000_0000_0000),   // 0.1
     .double(2.5), .double(-7), .int(-9_000_000_000), .double(.nan), .double(.infinity),
     .string(Array("ab\u{0}c".utf8)), .binary(Array("ab\u{0}c".utf8)), .string([]),
     .timestamp(-86_400, 5), .objectId((0..<12).map { UInt8($0 * 3) }), .uuid((0..<16).map { UInt8(255 - $0) }),
     .link(target, 0), .link(target, 1), .list, .dict]
}

/// The golden contents of format version 2: those of version 1, then a table whose Mixed column
/// has an index from the start, then an index built on Owner's populated Mixed column.
private func writeGoldenV2(_ db: DB) throws {
    try writeGolden(db)
    try db.write { txn throws in
        let target = try findTable(txn, "Target")
        let k = try addTable(txn, "Keyed")
        let m = try addColumn(txn, k, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE | CS_COL_INDEXED)
        for v in keyedValues(target: target) {
            var o = try createObj(txn, k)
            switch v {
            case .list: check(cs_obj_set_collection(&o, m, CS_TYPE_LIST))
            case .dict: check(cs_obj_set_collection(&o, m, CS_TYPE_DICT))
            default: check(setVal(&o, m, v))
            }
        }
    }
    try db.write { txn throws in
        let o = try findTable(txn, "Owner")
        check(cs_column_set_indexed(txn, o, try findColumn(txn, o, "mixed"), true))
    }
}

/// The golden contents of format version 4: those of version 2, then a table of Int columns
/// whose leaves a commit packs as frame of reference at each width (FORMAT.md §3), with a nullable
/// column, negative values and both ends of Int64, then a commit that changes some of them.
private func writeGoldenV4(_ db: DB) throws {
    try writeGoldenV2(db)
    try db.write { txn throws in
        let t = try addTable(txn, "Framed")
        let widths = [0, 1, 2, 4, 8, 16, 32]
        var cols: [UInt32] = []
        for w in widths { cols.append(try addColumn(txn, t, "w\(w)", CS_TYPE_INT)) }
        let opt = try addColumn(txn, t, "opt", CS_TYPE_INT, flags: CS_COL_NULLABLE)
        let edge = try addColumn(txn, t, "edge", CS_TYPE_INT)
        let link = try addColumn(txn, t, "link", CS_TYPE_LINK, target: t)
        let flag = try addColumn(txn, t, "flag", CS_TYPE_BOOL)
        for r in 0..<600 {
            var o = try createObj(txn, t)
            for (w, c) in zip(widths, cols) {
                // a base per leaf and column, negative for half the columns
                let span = w == 0 ? 0 : (Int64(1) << w) - 1
                let base = (Int64(r / 256) - 1) * 1_000_000_000_007 * (w % 2 == 0 ? -1 : 1) + Int64(w)
                check(cs_obj_set_int(&o, c, base + Int64(r) * 2_654_435_761 % (span + 1)))
            }
            if r % 5 != 0 { check(cs_obj_set_int(&o, opt, 9_000_000_000 + Int64(r))) }
            check(cs_obj_set_int(&o, edge, r < 256 ? Int64.max - Int64(r) : r < 512 ? Int64.min + Int64(r) : Int64(r)))
            if r > 0 { check(setVal(&o, link, .link(t, Int64(r - 1)))) }
            check(setVal(&o, flag, .bool(r % 3 == 0)))
        }
    }
    try db.write { txn throws in
        let t = try findTable(txn, "Framed")
        let edge = try findColumn(txn, t, "edge")
        for k in Int64(100)..<110 {
            var o = try openObj(txn, t, k)
            check(cs_obj_set_int(&o, edge, -k))
        }
        for k in Int64(300)..<310 {
            var o = try openObj(txn, t, k)
            check(cs_obj_delete(&o))
        }
    }
}

/// The primary keys of the version-5 table "ByPk", in creation order: small, huge, negative, both
/// ends of the key range a primary key may be a key in, and a leaf's worth of consecutive ones.
private let goldenV5Pks: [Int64] = [0, 5, 1_000_003, -7, (1 << 61) - 1, 1 << 61, Int64.max, Int64.min]
    + (300..<560).map { Int64($0) }

/// The golden contents of format version 5: those of version 4, then a table whose Int primary
/// key was set while it was empty (pk-keyed, FORMAT.md §6.1), so its objects' keys are their
/// primary keys where they can be; then a commit that deletes some (their keys are retired) and
/// creates one of them again (it takes a counter key).
private func writeGoldenV5(_ db: DB) throws {
    try writeGoldenV4(db)
    try db.write { txn throws in
        let t = try addTable(txn, "ByPk")
        let id = try addColumn(txn, t, "id", CS_TYPE_INT)
        let name = try addColumn(txn, t, "name", CS_TYPE_STRING)
        let next = try addColumn(txn, t, "next", CS_TYPE_LINK, target: t)
        check(cs_table_set_primary_key(txn, t, id))
        var prev: Int64?
        for pk in goldenV5Pks {
            var o = cs_obj()
            try withValue(.int(pk)) { p in try must(cs_obj_create_primary(txn, t, p, &o), "create \(pk)") }
            check(setVal(&o, name, .str("pk \(pk)")))
            if let prev { check(setVal(&o, next, .link(t, prev))) }
            prev = o.key
        }
    }
    try db.write { txn throws in
        let t = try findTable(txn, "ByPk")
        for k in [5] + Array(300..<310) {
            var o = try openObj(txn, t, Int64(k))
            check(cs_obj_delete(&o))
        }
        var o = cs_obj()
        try withValue(.int(5)) { p in try must(cs_obj_create_primary(txn, t, p, &o), "create 5 again") }
        check(setVal(&o, try findColumn(txn, t, "name"), .str("five again")))
    }
}

/// The primary keys of the version-6 table "NoPkIndex": 0..<600 in the order 7919·i mod 600.
private let goldenV6Pks: [Int64] = (0..<600).map { Int64(($0 * 7919) % 600) }

/// The golden contents of format version 6: those of version 5, then a table whose Int primary
/// key was set while it was empty and that never gave out a counter key, so it keeps no index of
/// its primary key (FORMAT.md §6.1, flag 0x02); then a commit that deletes some of its objects
/// (their keys are retired, the flag stays).
private func writeGoldenV6(_ db: DB) throws {
    try writeGoldenV5(db)
    try db.write { txn throws in
        let t = try addTable(txn, "NoPkIndex")
        let id = try addColumn(txn, t, "id", CS_TYPE_INT)
        let v = try addColumn(txn, t, "v", CS_TYPE_INT)
        check(cs_table_set_primary_key(txn, t, id))
        for pk in goldenV6Pks {
            var o = cs_obj()
            try withValue(.int(pk)) { p in try must(cs_obj_create_primary(txn, t, p, &o), "create \(pk)") }
            check(cs_obj_set_int(&o, v, pk * 3))
        }
    }
    try db.write { txn throws in
        let t = try findTable(txn, "NoPkIndex")
        for k in stride(from: 100, to: 200, by: 10) {
            var o = try openObj(txn, t, Int64(k))
            check(cs_obj_delete(&o))
        }
    }
}

/// What the Mixed indexes of the version-2 contents answer: the keys cs_index_find_all gives
/// for every value of keyedValues and of Owner.mixed, one line each.
private func dumpIndexes(_ txn: OpaquePointer) throws -> [String] {
    var out: [String] = []
    let target = try findTable(txn, "Target")
    let probes = keyedValues(target: target).filter { $0 != .list && $0 != .dict } +
        [.int(0), .str("m1"), .double(3), .link(target, 2)]
    for (table, column) in [("Keyed", "m"), ("Owner", "mixed")] {
        let t = try findTable(txn, table)
        let c = try findColumn(txn, t, column)
        for v in probes {
            var keys: UnsafeMutablePointer<Int64>?
            var n = 0
            try withValue(v) { p in try must(cs_index_find_all(txn, t, c, p, &keys, &n), "cs_index_find_all") }
            let found = n == 0 ? [] : Array(UnsafeBufferPointer(start: keys, count: n))
            cs_keys_free(keys)
            out.append("index \(table).\(column) == \(v): keys \(found)")
        }
    }
    return out
}

/// The header's read and write format versions (FORMAT.md §2, bytes 8 and 10).
private func headerVersions(_ path: String) throws -> (Int, Int) {
    let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(12))
    return (Int(b[8]) | Int(b[9]) << 8, Int(b[10]) | Int(b[11]) << 8)
}

/// Everything a database holds, rendered through the API one line per value, and what its
/// indexes answer for the golden values (for comparing a file with a copy of it).
func contentsAndIndexDump(_ txn: OpaquePointer) throws -> [String] {
    try dump(txn) + dumpIndexes(txn)
}

/// The header's read and write format versions of a file.
func fileFormatVersions(_ path: String) throws -> (Int, Int) { try headerVersions(path) }

/// Renders everything a database holds through the API, one line per value.
private func dump(_ txn: OpaquePointer) throws -> [String] {
    var out = ["schema version \(cs_schema_version(txn))"]
    func render(_ v: Val) -> String {
        switch v {
        case .float(let f): return "float(\(f.bitPattern))"
        case .double(let d): return "double(\(d.bitPattern))"
        case .string(let b):
            // control bytes (a NUL in a key) are written as \u{..} so the dump stays text
            let text = String(decoding: b, as: UTF8.self).unicodeScalars
                .map { $0.value < 0x20 ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
            return "string(\(text))"
        case .binary(let b): return "binary(\(b.count) bytes, sum \(b.reduce(0) { $0 &+ Int($1) }))"
        default: return "\(v)"
        }
    }
    func renderColl(_ c: inout cs_coll, _ prefix: String) throws {
        var n = 0
        try must(cs_coll_size(&c, &n), "size")
        out.append("\(prefix) size \(n)")
        for i in 0..<n {
            var k = cs_value(), v = cs_value()
            if cs_coll_kind_of(&c) == CS_COLL_MAP {
                try must(cs_map_get_at(&c, i, &k, &v), "map get")
                out.append("\(prefix)[\(render(toVal(k)))] = \(render(toVal(v)))")
            } else {
                try must(cs_list_get(&c, i, &v), "list get")
                out.append("\(prefix)[\(i)] = \(render(toVal(v)))")
            }
            let val = toVal(v)
            if val == .list || val == .dict {
                var nested = cs_coll()
                let key = toVal(k)
                if case .string(let kb) = key {
                    try withKey(kb) { p, len in try must(cs_coll_open_nested(&c, -1, p, len, &nested), "nested") ; try renderColl(&nested, "\(prefix)[\(render(key))]") }
                } else {
                    try must(cs_coll_open_nested(&c, Int64(i), nil, 0, &nested), "nested")
                    try renderColl(&nested, "\(prefix)[\(i)]")
                }
            }
        }
    }
    for table in 0..<cs_table_slots(txn) {
        var info = cs_table_info()
        guard cs_table_info_get(txn, table, &info) == Int32(CS_OK) else { continue }
        let tname = String(cString: info.name)
        out.append("table \(table) \(tname) flags \(info.flags) primary \(info.primary) count \(info.count)")
        var columns: [(UInt32, cs_column_info)] = []
        for col in 0..<info.col_slots {
            var ci = cs_column_info()
            guard cs_column_info_get(txn, table, col, &ci) == Int32(CS_OK) else { continue }
            columns.append((col, ci))
            out.append("  column \(col) \(String(cString: ci.name)) type \(ci.type.rawValue) coll \(ci.coll.rawValue) flags \(ci.flags) target \(ci.target)")
        }
        for key in try allKeys(txn, table) {
            var o = try openObj(txn, table, key)
            for (col, ci) in columns {
                let name = "  \(tname)[\(key)].\(String(cString: ci.name))"
                if ci.type == CS_TYPE_BACKLINK {
                    var n = 0
                    try must(cs_obj_backlink_count(&o, ci.target, ci.origin_col, &n), "backlinks")
                    out.append("\(name) backlinks \(n)")
                } else if ci.coll != CS_COLL_NONE {
                    var c = try openColl(&o, col)
                    try renderColl(&c, name)
                } else {
                    let v = getVal(&o, col) ?? .null
                    out.append("\(name) = \(render(v))")
                    if v == .list || v == .dict {
                        var c = try openColl(&o, col)
                        try renderColl(&c, name)
                    }
                }
            }
        }
    }
    return out
}

/// With STORE_WRITE_GOLDEN=<version>, writes that version's golden pair anew: the file (cut at
/// its logical end, so the fixture keeps no growth slack) and the dump it must read as.
private func writeGoldenIfAsked(_ version: Int, _ golden: URL, _ expected: URL, indexes: Bool,
                                _ write: (DB) throws -> Void) throws {
    guard ProcessInfo.processInfo.environment["STORE_WRITE_GOLDEN"] == String(version) else { return }
    try? FileManager.default.removeItem(at: golden)
    let db = try DB(golden.path, durability: CS_DURABILITY_FULL)
    try write(db)
    let lines = try db.read { try dump($0) + (indexes ? dumpIndexes($0) : []) }
    let logical = try db.stats().logical_size
    db.close()
    try? FileManager.default.removeItem(atPath: golden.path + ".lock")
    check(truncate(golden.path, off_t(logical)))
    try (lines.joined(separator: "\n") + "\n").write(to: expected, atomically: true, encoding: .utf8)
}

/// Expects the file to read as the golden dump, line for line (the first differing line reported).
private func expectDump(_ db: DB, _ expected: URL, indexes: Bool,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
    let lines = try db.read { try dump($0) + (indexes ? dumpIndexes($0) : []) }
    let want = try String(contentsOf: expected, encoding: .utf8).split(separator: "\n").map(String.init)
    #expect(lines.count == want.count, sourceLocation: sourceLocation)
    for (i, (got, exp)) in zip(lines, want).enumerated() where got != exp {
        Issue.record("line \(i + 1): read \(got), expected \(exp)", sourceLocation: sourceLocation)
        break
    }
}

@Suite struct GoldenFileTests {
    @Test func formatVersionOneStillOpens() throws {
        let golden = fixtures.appendingPathComponent("format-v1.cstore")
        let expected = fixtures.appendingPathComponent("format-v1.txt")
        try writeGoldenIfAsked(1, golden, expected, indexes: false, writeGolden)
        try withTempDir { dir in
            // Work on a copy: the fixture itself is never written.
            let copy = dir.path("v1.cstore")
            try FileManager.default.copyItem(atPath: golden.path, toPath: copy)
            check(cs_file_verify(copy), "the golden file verifies")
            let db = try DB(copy, flags: 0)
            try expectDump(db, expected, indexes: false)
            // The library writes on top of a version-1 file and it stays healthy.
            try db.write { txn throws in
                let t = try findTable(txn, "Target")
                var x = try createObj(txn, t)
                check(setVal(&x, 0, .string(Array("delta".utf8))))
            }
            db.verify("after writing to the golden copy")
            db.close()
        }
    }

    @Test func anOlderFilesHistoryHasNoCommitTimesAndNewCommitsDo() throws {
        // The golden files predate commit times (FORMAT.md §8.2): their history reads as before,
        // its versions with time 0, and a commit on top of them records its time.
        try withTempDir { dir in
            let copy = dir.path("v1.cstore")
            try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("format-v1.cstore").path, toPath: copy)
            let db = try DB(copy, flags: 0)
            func records(_ txn: OpaquePointer, since: UInt64) throws -> [cs_change] {
                var h: OpaquePointer?
                try must(cs_changes_open(txn, since, &h), "cs_changes_open(\(since))")
                defer { cs_changes_close(h) }
                var out: [cs_change] = []
                var c = cs_change()
                while cs_changes_next(h, &c) == Int32(CS_OK) { out.append(c) }
                return out
            }
            let pinned = try db.begin(Int(CS_TXN_READ))
            let old = cs_txn_version(pinned)
            let before = try records(pinned, since: old - 1)
            #expect(!before.isEmpty && before.allSatisfy { $0.version == old && $0.time_us == 0 })
            try db.write { txn throws in
                let t = try findTable(txn, "Target")
                var x = try createObj(txn, t)
                check(setVal(&x, 0, .string(Array("epsilon".utf8))))
            }
            let after = try db.read { try records($0, since: old) }
            cs_txn_end(pinned)
            #expect(!after.isEmpty && after.allSatisfy { $0.version == old + 1 && $0.time_us > 1_700_000_000_000_000 })
            db.verify("after a commit with a time on the golden copy")
            db.close()
        }
    }

    @Test func goldenContentsAreWhatTheWriterMakes() throws {
        // The dump of a freshly written database equals the committed dump, so the golden file
        // holds exactly the documented contents (and the writer is deterministic).
        try withTempDir { dir in
            let db = try DB(dir.path("fresh.cstore"))
            try writeGolden(db)
            let lines = try db.read { try dump($0) }
            db.close()
            let want = try String(contentsOf: fixtures.appendingPathComponent("format-v1.txt"), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            #expect(lines == want)
        }
    }

    @Test func formatVersionTwoStillOpens() throws {
        let golden = fixtures.appendingPathComponent("format-v2.cstore")
        let expected = fixtures.appendingPathComponent("format-v2.txt")
        try writeGoldenIfAsked(2, golden, expected, indexes: true, writeGoldenV2)
        try withTempDir { dir in
            let copy = dir.path("v2.cstore")
            try FileManager.default.copyItem(atPath: golden.path, toPath: copy)
            #expect(try headerVersions(copy) == (2, 2), "a file with a Mixed index is format version 2")
            check(cs_file_verify(copy), "the golden file verifies")
            let db = try DB(copy, flags: 0)
            try expectDump(db, expected, indexes: true)
            // Writing on top keeps the indexes in step; the commit (a chunked free list, packed
            // nodes) makes the file version 4 (FORMAT.md §2).
            try db.write { txn throws in
                let k = try findTable(txn, "Keyed")
                var x = try createObj(txn, k)
                check(setVal(&x, try findColumn(txn, k, "m"), .double(1.0)))
            }
            db.verify("after writing to the golden copy")
            try db.read { txn throws in
                let k = try findTable(txn, "Keyed")
                var keys: UnsafeMutablePointer<Int64>?
                var n = 0
                try withValue(.int(1)) { p in try must(cs_index_find_all(txn, k, try findColumn(txn, k, "m"), p, &keys, &n), "find") }
                #expect(n == 5, "1, 1.0, 1.0f, 1.00 and the new 1.0 share one key")
                cs_keys_free(keys)
            }
            db.close()
            #expect(try headerVersions(copy) == (6, 6))
        }
    }

    @Test func formatVersionThreeStillOpens() throws {
        // Written by the version-3 library; its text lists every object as that library read it.
        try withTempDir { dir in
            let copy = dir.path("v3.cstore")
            try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("format-v3.cstore").path, toPath: copy)
            #expect(try headerVersions(copy) == (3, 3))
            check(cs_file_verify(copy), "the golden file verifies")
            #expect(try rawNodesOfCopy(copy, dir).allSatisfy { !$0.framed }, "a version-3 file has no framed node")
            let db = try DB(copy, flags: 0)
            func lines(_ txn: OpaquePointer) throws -> [String] {
                let t = try findTable(txn, "Ints")
                let c = try ["wide", "opt", "flag", "link", "name"].map { try findColumn(txn, t, $0) }
                return try allKeys(txn, t).map { k in
                    var o = try openObj(txn, t, k)
                    func text(_ v: Val?) -> String {
                        switch v {
                        case .int(let i)?: return "\(i)"
                        case .bool(let b)?: return b ? "1" : "0"
                        case .link(_, let key)?: return "\(key)"
                        case .string(let s)?: return String(decoding: s, as: UTF8.self)
                        default: return "null"
                        }
                    }
                    return "\(k) wide \(text(getVal(&o, c[0]))) opt \(text(getVal(&o, c[1]))) flag \(text(getVal(&o, c[2])))"
                        + " link \(text(getVal(&o, c[3]))) name \(text(getVal(&o, c[4])))"
                }
            }
            var want = try String(contentsOf: fixtures.appendingPathComponent("format-v3.txt"), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            #expect(try db.read(lines) == want)
            // Writing on top: the commit packs the leaves it changed (framed), the others stay
            // plain as the version-3 library wrote them, and the file becomes version 4.
            try db.write { txn throws in
                let t = try findTable(txn, "Ints")
                let c = try ["wide", "opt", "name"].map { try findColumn(txn, t, $0) }
                var o = try openObj(txn, t, 5)
                check(cs_obj_set_int(&o, c[0], 12345))
                var n = try createObj(txn, t)
                check(cs_obj_set_int(&n, c[0], 777))
                check(cs_obj_set_int(&n, c[1], -1))
                check(setVal(&n, c[2], .str("new")))
                want[5] = want[5].replacingOccurrences(of: "wide \(5 * 1_000_003 - 400_000_000) ", with: "wide 12345 ")
                want.append("\(n.key) wide 777 opt -1 flag 0 link null name new")
            }
            db.verify("after writing to the version-3 copy")
            #expect(try db.read(lines) == want)
            db.close()
            #expect(try headerVersions(copy) == (6, 6))
            let nodes = try rawNodesOfCopy(copy, dir)
            #expect(nodes.contains { $0.framed } && nodes.contains { !$0.framed && $0.flags == 0 && $0.width == 32 },
                    "framed nodes from the new commit beside plain ones from the version-3 library")
            check(cs_file_verify(copy))
        }
    }

    @Test func formatVersionFourStillOpens() throws {
        let golden = fixtures.appendingPathComponent("format-v4.cstore")
        let expected = fixtures.appendingPathComponent("format-v4.txt")
        try writeGoldenIfAsked(4, golden, expected, indexes: true, writeGoldenV4)
        try withTempDir { dir in
            let copy = dir.path("v4.cstore")
            try FileManager.default.copyItem(atPath: golden.path, toPath: copy)
            #expect(try headerVersions(copy) == (4, 4))
            check(cs_file_verify(copy), "the golden file verifies")
            let nodes = try rawNodesOfCopy(copy, dir)
            for w in [0, 1, 2, 4, 8, 16, 32] {
                #expect(nodes.contains { $0.framed && $0.width == w }, "a framed node of width \(w); framed: \(Set(nodes.filter { $0.framed }.map { $0.width }).sorted())")
            }
            #expect(nodes.contains { $0.framed && ($0.base ?? 0) < 0 }, "a negative base")
            #expect(nodes.contains { $0.flags == 0x30 }, "a framed nullable node")
            let db = try DB(copy, flags: 0)
            try expectDump(db, expected, indexes: true)
            try db.write { txn throws in
                let t = try findTable(txn, "Framed")
                var o = try openObj(txn, t, 7)
                check(cs_obj_set_int(&o, 6, Int64.min))
            }
            db.verify("after writing to the golden copy")
            try db.read { txn throws in
                var o = try openObj(txn, try findTable(txn, "Framed"), 7)
                #expect(try getInt(&o, 6) == Int64.min)
            }
            db.close()
        }
    }

    @Test func formatVersionFiveStillOpens() throws {
        let golden = fixtures.appendingPathComponent("format-v5.cstore")
        let expected = fixtures.appendingPathComponent("format-v5.txt")
        try writeGoldenIfAsked(5, golden, expected, indexes: true, writeGoldenV5)
        try withTempDir { dir in
            let copy = dir.path("v5.cstore")
            try FileManager.default.copyItem(atPath: golden.path, toPath: copy)
            #expect(try headerVersions(copy) == (5, 5))
            check(cs_file_verify(copy), "the golden file verifies")
            let db = try DB(copy, flags: 0)
            try expectDump(db, expected, indexes: true)
            func find(_ txn: OpaquePointer, _ t: UInt32, _ pk: Int64) -> Int64? {
                var key: Int64 = -1
                let rc = withValue(.int(pk)) { cs_table_find_primary(txn, t, $0, &key) }
                return rc == 0 ? key : nil
            }
            try db.read { txn throws in
                let t = try findTable(txn, "ByPk")
                for pk in goldenV5Pks where pk != 5 && !(300..<310).contains(pk) {
                    let k = find(txn, t, pk)
                    if pk >= 0 && pk < 1 << 61 { #expect(k == pk, "pk \(pk) is its key") } else { #expect(k ?? 0 >= 1 << 61, "pk \(pk)") }
                }
                #expect((find(txn, t, 5) ?? 0) >= 1 << 61, "5 again has a counter key")
                #expect(find(txn, t, 301) == nil && find(txn, t, 6) == nil)
            }
            try db.write { txn throws in
                let t = try findTable(txn, "ByPk")
                var o = cs_obj()
                try withValue(.int(301)) { p in try must(cs_obj_create_primary(txn, t, p, &o), "create 301") }
                #expect(o.key >= 1 << 61, "301 was retired in the golden file")
                try withValue(.int(6)) { p in try must(cs_obj_create_primary(txn, t, p, &o), "create 6") }
                #expect(o.key == 6, "a never-used pk is its key")
            }
            db.verify("after writing to the golden copy")
            db.close()
        }
    }

    @Test func formatVersionSixStillOpens() throws {
        let golden = fixtures.appendingPathComponent("format-v6.cstore")
        let expected = fixtures.appendingPathComponent("format-v6.txt")
        try writeGoldenIfAsked(6, golden, expected, indexes: true, writeGoldenV6)
        try withTempDir { dir in
            let copy = dir.path("v6.cstore")
            try FileManager.default.copyItem(atPath: golden.path, toPath: copy)
            #expect(try headerVersions(copy) == (6, 6))
            check(cs_file_verify(copy), "the golden file verifies")
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: copy)))
            let db = try DB(copy, flags: 0)
            let t = try db.read { try findTable($0, "NoPkIndex") }
            #expect(rawLE64(bytes, rawTableNode(bytes, t) + 8 + 8 * 4) == (3 << 1) | 1, "pk-keyed, no primary-key index")
            try expectDump(db, expected, indexes: true)
            func find(_ txn: OpaquePointer, _ pk: Int64) -> Int64? {
                var key: Int64 = -1
                let rc = withValue(.int(pk)) { cs_table_find_primary(txn, t, $0, &key) }
                return rc == 0 ? key : nil
            }
            try db.read { txn throws in
                #expect(find(txn, 0) == 0 && find(txn, 599) == 599 && find(txn, 110) == nil && find(txn, 600) == nil)
                #expect(try queryKeys(txn, t, "id BETWEEN {95, 125}") == [95, 96, 97, 98, 99, 101, 102, 103, 104, 105, 106, 107,
                                                                          108, 109, 111, 112, 113, 114, 115, 116, 117, 118, 119, 121,
                                                                          122, 123, 124, 125])
            }
            try db.write { txn throws in
                var o = cs_obj()
                try withValue(.int(110)) { p in try must(cs_obj_create_primary(txn, t, p, &o), "create 110") }
                let k110 = o.key
                #expect(k110 >= 1 << 61, "110 was retired in the golden file: a counter key, the index back")
                var dup = cs_obj()
                withValue(.int(7)) { p in expectCode(cs_obj_create_primary(txn, t, p, &dup), CS_CONSTRAINT, "7 exists") }
                #expect(find(txn, 110) == k110 && find(txn, 7) == 7)
            }
            db.verify("after writing to the golden copy")
            db.close()
        }
    }

    /// A version-7 file with commits in its journal (layout 1, records of bytes only), as a
    /// power cut left it under the version-7 library (format-v7-journal-writer.c): the open
    /// replays the twelve records onto the file (FORMAT.md §13, Recovery), whose in-place writes
    /// after the first commit were lost, and the file holds the twelfth commit's version. The
    /// next journaled commit's checkpoint writes a layout-2 journal and marks the file 8; the
    /// close marks it 6.
    @Test func formatVersionSevenJournalStillReplays() throws {
        let golden = fixtures.appendingPathComponent("format-v7-journal.cstore")
        try withTempDir { dir in
            let copy = dir.path("v7.cstore")
            try FileManager.default.copyItem(atPath: golden.path, toPath: copy)
            try FileManager.default.copyItem(atPath: golden.path + ".journal", toPath: copy + ".journal")
            #expect(try headerVersions(copy) == (7, 7))
            let journal = [UInt8](try Data(contentsOf: URL(fileURLWithPath: copy + ".journal")))
            #expect(journal[8] == 1, "a layout-1 journal")
            #expect(journalRecordRuns(journal).count == 12)
            var sum: Int64 = 0
            for i in 0..<380 { sum += (1...12).contains(i % 37) ? -Int64(i % 37) : Int64(i) }
            for i in [380] + Array(393..<400) { sum += Int64(i) }
            let db = try DB(copy, durability: CS_DURABILITY_FULL)
            #expect(cs_db_recovered_commits(db.h) == 12)
            db.verify("the replayed golden copy")
            try db.read { txn throws in
                let t = try findTable(txn, "T")
                let keys = try allKeys(txn, t)
                #expect(keys.count == 388)
                var got: Int64 = 0
                for k in keys {
                    var o = try openObj(txn, t, k)
                    got += try getInt(&o, 0)
                }
                #expect(got == sum, "the twelfth commit's values")
            }
            try db.write { txn throws in
                let t = try findTable(txn, "T")
                var o = try openObj(txn, t, 0)
                try must(cs_obj_set_int(&o, 0, 1000), "set")
            }
            #expect(try headerVersions(copy) == (8, 8), "a journaled commit of this library marks 8")
            let j2 = [UInt8](try Data(contentsOf: URL(fileURLWithPath: copy + ".journal")))
            #expect(j2[8] == 2, "the checkpoint wrote a layout-2 journal header")
            db.close()
            #expect(try headerVersions(copy) == (6, 6), "a clean close rests at 6")
            check(cs_file_verify(copy), "verifies after the close")
        }
    }

    /// FORMAT.md §7.2: the order of a commit's runs in its run list is the writer's choice. The
    /// golden files of versions 3, 4 and 6 were written while run lists followed plan order (the
    /// selected slot's list is not in file order); each opens at that slot's version, the slot's
    /// one-sync hash taken over the runs in the order listed, with no commit rejected.
    @Test func runListsNotInFileOrderStillOpen() throws {
        for v in [3, 4, 6] {
            let golden = fixtures.appendingPathComponent("format-v\(v).cstore")
            try withTempDir { dir in
                let copy = dir.path("v\(v).cstore")
                try FileManager.default.copyItem(atPath: golden.path, toPath: copy)
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: copy)))
                let slot = 16 + 64 * Int(bytes[12]) // header: magic, versions, selector; slots of 8 words
                let version = rawLE64(bytes, slot + 8)
                #expect(rawLE64(bytes, slot + 24) & 1 == 1, "v\(v): the selected slot is a one-sync commit's")
                let list = rawLE64(bytes, slot + 32)
                let count = Int(bytes[list + 4]) | Int(bytes[list + 5]) << 8 | Int(bytes[list + 6]) << 16 | Int(bytes[list + 7]) << 24
                let starts = stride(from: 0, to: count, by: 2).compactMap { i -> Int? in
                    rawLE64(bytes, list + 8 + 16 * (i / 2) + 8) == 0 ? nil : rawLE64(bytes, list + 8 + 8 * i)
                }
                #expect(starts.count > 1 && starts != starts.sorted(), "v\(v): the run list is not in file order: \(starts)")
                let (rc, opened) = openRaw(copy, flags: 0, durability: CS_DURABILITY_NOSYNC)
                try must(rc, "open v\(v)")
                let h = opened!
                defer { _ = cs_db_close(h) }
                var why = [CChar](repeating: 0, count: 256)
                #expect(!cs_db_rejected_commit(h, nil, nil, &why, why.count), "v\(v): \(String(cString: why))")
                var txn: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_READ), &txn), "begin")
                #expect(Int(cs_txn_version(txn)) == version, "v\(v) opens at the selected slot's version")
                check(cs_txn_end(txn))
            }
        }
    }

    @Test func goldenVersionSixContentsAreWhatTheWriterMakes() throws {
        try withTempDir { dir in
            let path = dir.path("fresh.cstore")
            let db = try DB(path)
            try writeGoldenV6(db)
            let lines = try db.read { try dump($0) + dumpIndexes($0) }
            db.close()
            let want = try String(contentsOf: fixtures.appendingPathComponent("format-v6.txt"), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            #expect(lines == want)
        }
    }

    @Test func goldenVersionFiveContentsAreWhatTheWriterMakes() throws {
        try withTempDir { dir in
            let path = dir.path("fresh.cstore")
            let db = try DB(path)
            try writeGoldenV5(db)
            let lines = try db.read { try dump($0) + dumpIndexes($0) }
            db.close()
            let want = try String(contentsOf: fixtures.appendingPathComponent("format-v5.txt"), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            #expect(lines == want)
        }
    }

    @Test func goldenVersionFourContentsAreWhatTheWriterMakes() throws {
        try withTempDir { dir in
            let path = dir.path("fresh.cstore")
            let db = try DB(path)
            try writeGoldenV4(db)
            let lines = try db.read { try dump($0) + dumpIndexes($0) }
            db.close()
            let want = try String(contentsOf: fixtures.appendingPathComponent("format-v4.txt"), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            #expect(lines == want)
        }
    }

    @Test func goldenVersionTwoContentsAreWhatTheWriterMakes() throws {
        try withTempDir { dir in
            let path = dir.path("fresh.cstore")
            let db = try DB(path)
            try writeGoldenV2(db)
            let lines = try db.read { try dump($0) + dumpIndexes($0) }
            db.close()
            #expect(try headerVersions(path) == (6, 6), "the writer's commits make version 6")
            let want = try String(contentsOf: fixtures.appendingPathComponent("format-v2.txt"), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            #expect(lines == want)
        }
    }
}

/// The nodes of a compacted copy of the file at `path` (made in `dir`), whose nodes lie back to
/// back (FORMAT.md §11): compaction copies every node as it is, so these are the file's encodings.
private func rawNodesOfCopy(_ path: String, _ dir: TempDir) throws -> [RawNode] {
    let out = dir.path("raw-\(URL(fileURLWithPath: path).lastPathComponent)")
    try? FileManager.default.removeItem(atPath: out)
    let db = try DB(path, flags: 0)
    defer { db.close() }
    try db.read { txn in try must(cs_txn_write_copy(txn, out, nil, nil), "cs_txn_write_copy") }
    return try rawNodes(out)
}
