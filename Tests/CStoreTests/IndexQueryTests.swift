// Queries answered from ordered indexes (docs/ARCHITECTURE.md, Indexes and Queries; docs/FORMAT.md §6.5): for every indexable type,
// a column with an index and an identical twin column without one are queried with the same
// conditions (==, IN, <, <=, >, >=, BETWEEN, BEGINSWITH, ==[c], BEGINSWITH[c], alone and in AND
// chains): the answers must be equal, and cs_query_last_plan must show that the indexed column
// was answered from its index and the twin by a scan. Also: Mixed indexes (cross-type numeric
// equality, strings vs binary, null and links to deleted objects, maintenance, build and drop,
// the format version they need), map keys with NUL bytes, and SORT/DISTINCT on @type.

import CStore
import Foundation
import Testing

// MARK: - Helpers

private func plan(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ args: [QArg]) throws -> ([Int64], cs_query_plan) {
    try keysAndPlan(txn, table, text, args)
}

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

private func le16(_ path: String, _ at: Int) throws -> Int {
    let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(16))
    return Int(b[at]) | Int(b[at + 1]) << 8
}

/// Decimal128 helpers: coefficient * 10^exp (coefficient below 2^64).
private func dec(_ coeff: UInt64, exp: Int, negative: Bool = false) -> Val {
    let biased = UInt64(exp + 6176)
    return .decimal(coeff, (negative ? 1 << 63 : 0) | (biased << 49))
}

private let decNaN = Val.decimal(0, 0x7C00_0000_0000_0000)

/// A column pair: the indexed one and its twin without an index.
private struct Pair {
    let name: String
    let type: cs_type
    let nullable: Bool
    var idx: UInt32 = 0
    var twin: UInt32 = 0
}

private struct Rng {
    var s: UInt64
    mutating func next() -> UInt64 {
        s = s &* 6364136223846793005 &+ 1442695040888963407
        return s >> 11
    }
    mutating func pick<T>(_ a: [T]) -> T { a[Int(next() % UInt64(a.count))] }
}

private let strings: [[UInt8]] = [
    [], bytes("a"), bytes("A"), bytes("ab"), bytes("aB"), bytes("Ab"), bytes("b"), bytes("ba"), bytes("s"),
    bytes("S"), bytes("ſ"), bytes("ss"), bytes("ſs"), bytes("µ"), bytes("μ"), bytes("é"), bytes("É"),
    bytes("éa"), bytes("中"), bytes("中文"), bytes("😀"), bytes("a😀"), [0x61, 0], [0x61, 0, 0x62], [0],
    [0xC1, 0x81], [0xE0, 0x81, 0x81], [0xC9], [0xC9, 0x61], [0xFF], [0x61, 0xFF], bytes("İ"), bytes("ı"),
    bytes("I"), bytes("i"), bytes("ÿ"), bytes("Ÿ"), bytes("hello"), bytes("HeLLo"), bytes("hellO world"),
]
private let ints: [Int64] = [Int64.min, -5, -1, 0, 1, 2, 3, 7, 100, Int64.max]
private let stamps: [Val] = [
    .timestamp(-100, -5), .timestamp(-1, 0), .timestamp(0, 0), .timestamp(0, 1), .timestamp(5, 999_999_999),
    .timestamp(6, 0), .timestamp(1_700_000_000, 42),
]
// (closure types written out: inferred, these two took seconds to type-check)
private let oids: [Val] = (0..<5).map { (i: Int) -> Val in .objectId((0..<12).map { (k: Int) -> UInt8 in UInt8((k * 3 + i * 50) & 0xFF) }) }
private let uuids: [Val] = (0..<5).map { (i: Int) -> Val in .uuid((0..<16).map { (k: Int) -> UInt8 in UInt8((k * 11 + i * 40) & 0xFF) }) }

// MARK: - Tests

@Suite struct IndexQueryTests {
    /// Every indexable type: the index's answers equal the scan's, and the index is what answered.
    @Test func indexAnswersEqualScanAnswers() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var pairs: [Pair] = [
                Pair(name: "i", type: CS_TYPE_INT, nullable: true), Pair(name: "ni", type: CS_TYPE_INT, nullable: false),
                Pair(name: "b", type: CS_TYPE_BOOL, nullable: true), Pair(name: "s", type: CS_TYPE_STRING, nullable: true),
                Pair(name: "t", type: CS_TYPE_TIMESTAMP, nullable: false), Pair(name: "o", type: CS_TYPE_OBJECTID, nullable: true),
                Pair(name: "u", type: CS_TYPE_UUID, nullable: false), Pair(name: "m", type: CS_TYPE_MIXED, nullable: true),
            ]
            var table: UInt32 = 0
            var target: UInt32 = 0
            var targets: [Int64] = []
            var rng = Rng(s: 20240607)
            func value(_ p: Pair, _ rng: inout Rng) -> Val {
                if p.nullable && rng.next() % 9 == 0 { return .null }
                switch p.type {
                case CS_TYPE_INT: return .int(rng.pick(ints))
                case CS_TYPE_BOOL: return .bool(rng.next() % 2 == 0)
                case CS_TYPE_STRING: return .string(rng.pick(strings))
                case CS_TYPE_TIMESTAMP: return rng.pick(stamps)
                case CS_TYPE_OBJECTID: return rng.pick(oids)
                case CS_TYPE_UUID: return rng.pick(uuids)
                default:
                    return rng.pick([
                        .int(1), .int(2), .int(-3), .double(1), .double(2.5), .double(-0.0), .int(0), .float(1),
                        .float(2.5), dec(1, exp: 0), dec(100, exp: -2), dec(25, exp: -1), dec(1, exp: -1),
                        dec(3, exp: 0, negative: true), .double(.nan), .float(.nan), decNaN, .double(0.1),
                        .double(.infinity), .double(1e300), dec(1, exp: 300), .string(bytes("a")), .binary(bytes("a")),
                        .string(bytes("b")), .bool(true), .bool(false), .null, stamps[1], oids[0], uuids[2],
                        .link(target, targets[0]), .link(target, targets[1]), .list, .dict,
                    ])
                }
            }
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                for _ in 0..<3 { targets.append(try createObj(txn, target).key) }
                table = try addTable(txn, "T")
                for k in pairs.indices {
                    let flags = pairs[k].nullable ? CS_COL_NULLABLE : 0
                    pairs[k].idx = try addColumn(txn, table, pairs[k].name, pairs[k].type, flags: flags | CS_COL_INDEXED)
                    pairs[k].twin = try addColumn(txn, table, pairs[k].name + "_twin", pairs[k].type, flags: flags)
                }
                for n in 0..<400 {
                    var o = try createObj(txn, table)
                    for p in pairs {
                        let v = value(p, &rng)
                        for col in [p.idx, p.twin] {
                            if v == .list || v == .dict {
                                check(cs_obj_set_collection(&o, col, v == .list ? CS_TYPE_LIST : CS_TYPE_DICT))
                            } else if n % 7 != 0 {  // some objects keep their defaults
                                check(setVal(&o, col, v), "set \(p.name) = \(v)")
                            }
                        }
                    }
                }
            }
            // Updates, deletions (also of a link target, so a Mixed link dangles) and creations
            // after the fact keep the indexes in step.
            try db.write { txn throws in
                for key in try allKeys(txn, table) where key % 5 == 0 {
                    var o = try openObj(txn, table, key)
                    if key % 3 == 0 { check(cs_obj_delete(&o)); continue }
                    for p in pairs {
                        let v = value(p, &rng)
                        if v == .list || v == .dict { continue }
                        check(setVal(&o, p.idx, v))
                        check(setVal(&o, p.twin, v))
                    }
                }
                var t = try openObj(txn, target, targets[1])
                check(cs_obj_delete(&t))
            }
            db.verify("after the workload")
            try db.read { txn throws in
                func compare(_ p: Pair, _ template: String, _ args: [QArg], indexed: Bool = true) throws {
                    let a = template.replacingOccurrences(of: "@", with: p.name)
                    let b = template.replacingOccurrences(of: "@", with: p.name + "_twin")
                    let (ka, pa) = try plan(txn, table, a, args)
                    let (kb, pb) = try plan(txn, table, b, args)
                    #expect(ka == kb, "\(a) with \(args): index gave \(ka.count) keys, scan \(kb.count)")
                    if indexed {
                        #expect(pa.kind == CS_PLAN_INDEX.rawValue && pa.col == p.idx, "\(a) with \(args) was not answered from the index (plan \(pa.kind))")
                        #expect(pa.candidates <= UInt64(try tableCount(txn, table)))
                    }
                    #expect(pb.kind != CS_PLAN_INDEX.rawValue, "\(b) has no index")
                }
                var checked = 0
                for p in pairs {
                    let domain: [Val]
                    switch p.type {
                    case CS_TYPE_INT: domain = ints.map { .int($0) } + [.int(4)]
                    case CS_TYPE_BOOL: domain = [.bool(false), .bool(true)]
                    case CS_TYPE_STRING: domain = strings.map { .string($0) } + [.string(bytes("z")), .string(bytes("h"))]
                    case CS_TYPE_TIMESTAMP: domain = stamps + [.timestamp(3, 0)]
                    case CS_TYPE_OBJECTID: domain = oids
                    case CS_TYPE_UUID: domain = uuids
                    default:
                        domain = [
                            .int(1), .int(2), .int(0), .int(-3), .double(1), .float(2.5), dec(10, exp: -1), dec(25, exp: -1),
                            dec(1, exp: -1), .double(0.1), .float(0.1), .double(.nan), decNaN, .double(.infinity),
                            .double(1e300), dec(1, exp: 300), .string(bytes("a")), .binary(bytes("a")), .bool(true),
                            .bool(false), .null, stamps[1], oids[0], uuids[2], .link(target, targets[0]), .link(target, targets[1]),
                        ]
                    }
                    let withNull = p.nullable && p.type != CS_TYPE_MIXED ? domain + [.null] : domain
                    for v in withNull {
                        try compare(p, "@ == $0", [.v(v)])
                        try compare(p, "$0 == @", [.v(v)])
                        checked += 2
                    }
                    try compare(p, "@ IN $0", [.list(Array(withNull.prefix(4)))])
                    try compare(p, "@ IN $0", [.list(Array(withNull.suffix(3)))])
                    try compare(p, "@ IN $0", [.list([])])
                    let orderable = p.type == CS_TYPE_INT || p.type == CS_TYPE_STRING || p.type == CS_TYPE_TIMESTAMP
                    if orderable {
                        for v in domain {
                            for op in ["<", "<=", ">", ">="] {
                                try compare(p, "@ \(op) $0", [.v(v)])
                                try compare(p, "$0 \(op) @", [.v(v)])
                                checked += 2
                            }
                        }
                    }
                    if p.type == CS_TYPE_INT || p.type == CS_TYPE_TIMESTAMP {
                        for (lo, hi) in zip(domain, domain.reversed()) {
                            try compare(p, "@ BETWEEN {$0, $1}", [.v(lo), .v(hi)])
                        }
                    }
                    if p.type == CS_TYPE_STRING {
                        for v in domain {
                            for t in ["@ BEGINSWITH $0", "@ ==[c] $0", "@ BEGINSWITH[c] $0"] {
                                try compare(p, t, [.v(v)])
                                checked += 1
                            }
                        }
                        // [d] is not answered from the index, but must still agree
                        try compare(p, "@ ==[cd] $0", [.v(.string(bytes("E")))], indexed: false)
                    }
                    // One leg of an AND chain (with a condition the index cannot answer).
                    if let v = domain.first {
                        try compare(p, "ni_twin > 0 AND @ == $0", [.v(v)])
                        try compare(p, "@ == $0 AND (b_twin == true OR i_twin < 3)", [.v(v)])
                    }
                    if orderable, domain.count > 3 {
                        try compare(p, "ni_twin != 2 AND @ >= $0", [.v(domain[3])])
                    }
                }
                #expect(checked > 500)
                // An AND of two indexed conditions picks one and checks the other.
                let (k1, p1) = try plan(txn, table, "i == 1 AND s BEGINSWITH 'a'", [])
                let (k2, _) = try plan(txn, table, "i_twin == 1 AND s_twin BEGINSWITH 'a'", [])
                #expect(k1 == k2 && p1.kind == CS_PLAN_INDEX.rawValue && p1.col == pairs[0].idx, "equality is preferred")
                // OR is not a seed: it is scanned, with the same answer.
                let (k3, p3) = try plan(txn, table, "i == 1 OR i == 2", [])
                let (k4, _) = try plan(txn, table, "i IN {1, 2}", [])
                #expect(k3 == k4 && p3.kind != CS_PLAN_INDEX.rawValue)
            }
            db.close()
        }
    }

    /// A range seed reads only its part of the index: the candidates are the matches.
    @Test func rangeCandidatesAreTheMatches() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, c: UInt32 = 0, s: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "n", CS_TYPE_INT, flags: CS_COL_INDEXED)
                s = try addColumn(txn, t, "name", CS_TYPE_STRING, flags: CS_COL_INDEXED)
                for i in 0..<1000 {
                    var o = try createObj(txn, t)
                    check(setVal(&o, c, .int(Int64(i))))
                    check(setVal(&o, s, .string(bytes(i % 2 == 0 ? "Item\(i)" : "item\(i)"))))
                }
            }
            try db.read { txn throws in
                let (k, p) = try plan(txn, t, "n >= 10 AND n < 20", [])
                #expect(k.count == 10 && p.kind == CS_PLAN_INDEX.rawValue && p.candidates <= 990)
                let (k2, p2) = try plan(txn, t, "n BETWEEN {100, 149}", [])
                #expect(k2.count == 50 && p2.candidates == 50)
                let (k3, p3) = try plan(txn, t, "name BEGINSWITH 'item99'", [])
                #expect(k3.count == 6 && p3.candidates == 6, "item99, item991 .. item999 (odd)")
                let (k4, p4) = try plan(txn, t, "name ==[c] 'ITEM7'", [])
                // candidates: every name whose folded form starts with "item7" (item7, item70..79, item700..799)
                #expect(k4.count == 1 && p4.kind == CS_PLAN_INDEX.rawValue && p4.candidates == 111, "candidates \(p4.candidates)")
            }
            db.close()
        }
    }

    /// Mixed indexes: Realm's equality across numeric types, strings apart from binaries, null,
    /// kept on every write, built on a populated column, dropped with the flag or the column.
    @Test func mixedIndexMaintenanceAndSemantics() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var t: UInt32 = 0, m: UInt32 = 0, tag: UInt32 = 0
            var keys: [Int64] = []
            let values: [Val] = [
                .int(1), .double(1), .float(1), dec(100, exp: -2), .double(1.5), dec(15, exp: -1), .string(bytes("x")),
                .binary(bytes("x")), .null, .bool(true), .int(-7), dec(7, exp: 0, negative: true), .double(.nan), decNaN,
            ]
            try db.write { txn throws in
                t = try addTable(txn, "T")
                m = try addColumn(txn, t, "m", CS_TYPE_MIXED)
                tag = try addColumn(txn, t, "tag", CS_TYPE_INT)
                for (i, v) in values.enumerated() {
                    var o = try createObj(txn, t)
                    check(setVal(&o, m, v))
                    check(setVal(&o, tag, .int(Int64(i))))
                    keys.append(o.key)
                }
            }
            // Every commit writes a chunked free list and may write framed nodes and pk-keyed table
            // nodes with or without a primary-key index, which is format version 6 (FORMAT.md §2);
            // version 6 includes Mixed indexes, so from here on the file stays 6.
            #expect(try le16(path, 8) == 6 && le16(path, 10) == 6, "a committed file is format version 6")
            // Building the index on the populated column.
            try db.write { txn throws in check(cs_column_set_indexed(txn, t, m, true)) }
            db.verify("after building the Mixed index")
            #expect(try le16(path, 8) == 6 && le16(path, 10) == 6, "version 6 holds a Mixed index too")
            #expect(try db.stats().read_format == 6)
            try db.read { txn throws in
                func expectKeys(_ v: Val, _ want: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
                    let (k, p) = try plan(txn, t, "m == $0", [.v(v)])
                    #expect(k == want.map { keys[$0] }, "m == \(v)", sourceLocation: sourceLocation)
                    #expect(p.kind == CS_PLAN_INDEX.rawValue, sourceLocation: sourceLocation)
                }
                try expectKeys(.int(1), [0, 1, 2, 3])
                try expectKeys(dec(1, exp: 0), [0, 1, 2, 3])
                try expectKeys(.float(1.5), [4, 5])
                try expectKeys(.string(bytes("x")), [6])
                try expectKeys(.binary(bytes("x")), [7])
                try expectKeys(.null, [8])
                try expectKeys(.bool(true), [9])
                try expectKeys(.double(-7), [10, 11])
                try expectKeys(.float(.nan), [12, 13])
                let (k, _) = try plan(txn, t, "m IN {1, 'x', nil}", [])
                #expect(k == [0, 1, 2, 3, 6, 8].map { keys[$0] })
                // cs_index_find_all on a Mixed index, and ranges refused with a clear error.
                var out: UnsafeMutablePointer<Int64>?
                var n = 0
                try withValue(.double(1)) { v in try must(cs_index_find_all(txn, t, m, v, &out, &n), "find_all") }
                #expect(n == 4)
                cs_keys_free(out)
                expectCode(withValue(.int(0)) { v in cs_index_range(txn, t, m, v, nil, &out, &n) }, CS_MISUSE, "Mixed range")
                #expect(lastMessage().contains("equality"))
            }
            // Writes keep it: retype values, delete, create, nested collections, links.
            var target: UInt32 = 0
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                let x = try createObj(txn, target)
                var o0 = try openObj(txn, t, keys[0])
                check(setVal(&o0, m, .string(bytes("one"))))
                var o1 = try openObj(txn, t, keys[1])
                check(cs_obj_delete(&o1))
                var o2 = try openObj(txn, t, keys[2])
                check(cs_obj_set_collection(&o2, m, CS_TYPE_LIST))
                var o3 = try openObj(txn, t, keys[3])
                check(setVal(&o3, m, .link(target, x.key)))
                var n = try createObj(txn, t)  // a new object: null
                keys.append(n.key)
                check(setVal(&n, tag, .int(99)))
            }
            db.verify("after writes through the Mixed index")
            try db.read { txn throws in
                #expect(try plan(txn, t, "m == 1", []).0.isEmpty)
                #expect(try plan(txn, t, "m == 'one'", []).0 == [keys[0]])
                #expect(try plan(txn, t, "m == nil", []).0 == [keys[8], keys[14]])
            }
            // A link to a deleted object reads as null: the index still answers == nil right.
            try db.write { txn throws in
                var x = try openObj(txn, target, 0)
                check(cs_obj_delete(&x))
            }
            db.verify("after the link target went away")
            try db.read { txn throws in
                let (k, p) = try plan(txn, t, "m == nil", [])
                #expect(k == [keys[3], keys[8], keys[14]] && p.kind == CS_PLAN_INDEX.rawValue)
            }
            // The golden rule: setting the stored value over the dangling link keeps the index sound.
            try db.write { txn throws in
                var o3 = try openObj(txn, t, keys[3])
                check(setVal(&o3, m, .int(5)))
            }
            db.verify("after overwriting the dangling link")
            // Reopening keeps it (and the version).
            try db.reopen()
            try db.read { txn throws in #expect(try plan(txn, t, "m == 5.0", []).0 == [keys[3]]) }
            // Dropping the index: the file stays version 6 (its free list is chunked).
            try db.write { txn throws in check(cs_column_set_indexed(txn, t, m, false)) }
            #expect(try le16(path, 8) == 6)
            try db.write { txn throws in var o = try createObj(txn, t); check(setVal(&o, tag, .int(1))) }
            #expect(try le16(path, 8) == 6 && le16(path, 10) == 6, "a committed file is version 6")
            try db.read { txn throws in
                let (k, p) = try plan(txn, t, "m == 5", [])
                #expect(k == [keys[3]] && p.kind != CS_PLAN_INDEX.rawValue)
            }
            // An indexed Mixed column added to a populated table, then removed with its index.
            try db.write { txn throws in
                let m2 = try addColumn(txn, t, "m2", CS_TYPE_MIXED, flags: CS_COL_INDEXED)
                var o = try openObj(txn, t, keys[4])
                check(setVal(&o, m2, .int(3)))
                #expect(try plan(txn, t, "m2 == 3.0", []).0 == [keys[4]])
                #expect(try plan(txn, t, "m2 == nil", []).0.count == Int(try tableCount(txn, t)) - 1)
            }
            #expect(try le16(path, 8) == 6)
            db.verify("after adding an indexed Mixed column")
            try db.write { txn throws in check(cs_column_remove(txn, t, try findColumn(txn, t, "m2"))) }
            try db.write { txn throws in _ = try createObj(txn, t) }
            #expect(try le16(path, 8) == 6)
            db.verify("after removing it")
            db.close()
        }
    }

    /// A version-1 file opens and is written; the commit writes a chunked free list and packs the
    /// nodes it wrote, so the file becomes version 4 (a library that reads only versions 1 to 3
    /// refuses it by its read version), with or without a Mixed index. Compaction writes no free list and brings a file
    /// back to 1 or 2 (CompactTests).
    @Test func formatVersionRule() throws {
        try withTempDir { dir in
            let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures")
            let copy = dir.path("v1.cstore")
            try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("format-v1.cstore").path, toPath: copy)
            #expect(try le16(copy, 8) == 1)
            let db = try DB(copy, flags: 0)
            try db.write { txn throws in _ = try createObj(txn, try findTable(txn, "Target")) }
            #expect(try le16(copy, 8) == 6 && le16(copy, 10) == 6, "a written version-1 file becomes version 6")
            try db.write { txn throws in
                let owner = try findTable(txn, "Owner")
                check(cs_column_set_indexed(txn, owner, try findColumn(txn, owner, "mixed"), true))
            }
            #expect(try le16(copy, 8) == 6 && le16(copy, 10) == 6)
            db.verify("the golden copy with a Mixed index")
            db.close()
            // This library opens it; one that reads up to version 5 refuses read version 6, as
            // FormatTests.newerReadVersionIsVersionError shows for cs_format_version() + 1.
            // (Versions 7 and 8 mark a file while its journal may hold commits: FORMAT.md §13.)
            #expect(cs_format_version() == 8)
            check(cs_file_verify(copy))
        }
    }

    /// A conjunct whose constant has no index key (an argument of the column-only type Mixed)
    /// fails the run with CS_TYPE after an earlier conjunct of the AND chain has planned its
    /// index ranges: those ranges are freed on that path too (LeakSanitizer, `make asan`).
    @Test func seedRangesAreFreedWhenALaterConjunctFails() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let m = try addColumn(txn, t, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE | CS_COL_INDEXED)
                var o = try createObj(txn, t)
                check(setVal(&o, m, .int(1)))
                var arg = cs_value()
                arg.type = CS_TYPE_MIXED
                let text = "m == 1 AND m == $0"
                var q: OpaquePointer?
                try must(cs_query_new(txn, t, text, text.utf8.count, &arg, 1, &q), "cs_query_new")
                defer { cs_query_free(q) }
                var n: UInt64 = 0
                expectCode(cs_query_count(q, &n), CS_TYPE, "a constant with no index key")
                var keys: UnsafeMutablePointer<Int64>?
                var count = 0
                expectCode(cs_query_keys(q, &keys, &count), CS_TYPE, "the same through cs_query_keys")
                #expect(keys == nil)
            }
        }
    }

    /// map['key'] keys are compared whole, NUL bytes included, as literals and as %@ arguments.
    @Test func mapKeysWithNulBytes() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var ks: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                let mc = try addColumn(txn, t, "m", CS_TYPE_INT, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE)
                let entries: [[([UInt8], Int64)]] = [
                    [(bytes("a"), 1)], [([0x61, 0, 0x62], 2)], [([0x61, 0, 0x63], 3), (bytes("a"), 2)], [([0x61, 0], 4)],
                ]
                for e in entries {
                    var o = try createObj(txn, t)
                    var c = try openColl(&o, mc)
                    for (k, v) in e { check(mapSet(&c, k, .int(v))) }
                    ks.append(o.key)
                }
            }
            try db.read { txn throws in
                #expect(try queryKeys(txn, t, "m['a\\0b'] == 2") == [ks[1]])
                #expect(try queryKeys(txn, t, "m['a\\0c'] == 3") == [ks[2]])
                #expect(try queryKeys(txn, t, "m['a\\0'] == 4") == [ks[3]])
                #expect(try queryKeys(txn, t, "m['a'] == 2") == [ks[2]])
                #expect(try queryKeys(txn, t, "m[%@] == 2", [.v(.string([0x61, 0, 0x62]))]) == [ks[1]])
                #expect(try queryKeys(txn, t, "m[%@] == nil", [.v(.string([0x61, 0, 0x62]))]) == [ks[0], ks[2], ks[3]])
                #expect(try queryKeys(txn, t, "m[$0] == 4", [.v(.string([0x61, 0]))]) == [ks[3]])
            }
            db.close()
        }
    }

    /// SORT and DISTINCT on mixed.@type order and group by the type's name.
    @Test func sortAndDistinctOnType() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var ks: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                let m = try addColumn(txn, t, "m", CS_TYPE_MIXED)
                // stored values chosen so that value order and type-name order disagree
                let vs: [Val] = [.string(bytes("a")), .int(5), .bool(true), .double(-1), .null, .int(-2), .string(bytes("0")), .bool(false)]
                for v in vs {
                    var o = try createObj(txn, t)
                    check(setVal(&o, m, v))
                    ks.append(o.key)
                }
            }
            try db.read { txn throws in
                // bool bool double int int null string string (stable within a type)
                #expect(try queryKeys(txn, t, "TRUEPREDICATE SORT(m.@type ASC)") == [2, 7, 3, 1, 5, 4, 0, 6].map { ks[$0] })
                #expect(try queryKeys(txn, t, "TRUEPREDICATE SORT(m.@type DESC)") == [0, 6, 4, 1, 5, 3, 2, 7].map { ks[$0] })
                #expect(try queryKeys(txn, t, "TRUEPREDICATE DISTINCT(m.@type)") == [0, 1, 2, 3, 4].map { ks[$0] })
                #expect(try queryKeys(txn, t, "TRUEPREDICATE SORT(m.@type ASC, m DESC)") == [2, 7, 3, 1, 5, 4, 0, 6].map { ks[$0] })
                #expect(try queryKeys(txn, t, "m != nil DISTINCT(m.@type) SORT(m.@type DESC)") == [0, 1, 3, 2].map { ks[$0] })
            }
            db.close()
        }
    }
}
