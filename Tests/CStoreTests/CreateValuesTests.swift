// cs_obj_create_values (docs/ARCHITECTURE.md, Creating an object with its values): each object
// created with its values in one call must end as the same object created by cs_obj_create /
// cs_obj_create_primary and a cs_obj_set per value, in another file: the same keys, values,
// index answers, change history and next key. Bad calls are refused before anything is created.
import CStore
import Foundation
import Testing

/// A table "V": an optional primary key "id" of `pk`, an Int "a" (indexed), a nullable String
/// "s" (indexed), a Double "d", a Bool "b", and a list of Ints "l" and a link "to" (never named).
private struct VTable {
    var t: UInt32 = 0
    var cols: [UInt32] = [] // id (with a primary key), a, s, d, b
    var list: UInt32 = 0
    var link: UInt32 = 0
}

private func makeVTable(_ txn: OpaquePointer, pk: cs_type?) throws -> VTable {
    var m = VTable()
    m.t = try addTable(txn, "V")
    if let pk {
        let id = try addColumn(txn, m.t, "id", pk)
        try must(cs_table_set_primary_key(txn, m.t, id), "cs_table_set_primary_key")
        m.cols.append(id)
    }
    m.cols.append(try addColumn(txn, m.t, "a", CS_TYPE_INT, flags: Int(CS_COL_INDEXED)))
    m.cols.append(try addColumn(txn, m.t, "s", CS_TYPE_STRING, flags: Int(CS_COL_NULLABLE | CS_COL_INDEXED)))
    m.cols.append(try addColumn(txn, m.t, "d", CS_TYPE_DOUBLE))
    m.cols.append(try addColumn(txn, m.t, "b", CS_TYPE_BOOL))
    m.list = try addColumn(txn, m.t, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
    m.link = try addColumn(txn, m.t, "to", CS_TYPE_LINK, flags: Int(CS_COL_NULLABLE), target: m.t)
    return m
}

/// One object to create: the values of the named columns (indices into `VTable.cols`).
private typealias NewRow = [(col: Int, value: Val)]

/// Creates `row` one call at a time (create, then a cs_obj_set per value) or with one
/// cs_obj_create_values call; the new key.
private func create(_ txn: OpaquePointer, _ m: VTable, pk: Bool, _ row: NewRow, batched: Bool) throws -> Int64 {
    var o = cs_obj()
    if batched {
        let cols = row.map { m.cols[$0.col] }
        try withValues(row.map(\.value)) { p in try must(cs_obj_create_values(txn, m.t, cols.count, cols, p, &o), "cs_obj_create_values") }
        return o.key
    }
    if pk {
        let id = row.first { $0.col == 0 }!.value
        try withValue(id) { try must(cs_obj_create_primary(txn, m.t, $0, &o), "cs_obj_create_primary") }
    } else {
        try must(cs_obj_create(txn, m.t, &o), "cs_obj_create")
    }
    for (c, v) in row where !(pk && c == 0) { try must(setVal(&o, m.cols[c], v), "set") }
    return o.key
}

/// Every object's values, the index answers for `probes`, the history after `since`, the next key.
private func snapshot(_ db: DB, _ m: VTable, pk: cs_type?, probes: [Val], since: UInt64) throws -> [String] {
    var out: [String] = []
    try db.read { txn throws in
        for k in try allKeys(txn, m.t) {
            var o = try openObj(txn, m.t, k)
            out.append("\(k): " + m.cols.map { "\(getVal(&o, $0) ?? .null)" }.joined(separator: " "))
        }
        for v in probes {
            for c in m.cols.indices where c < 3 || pk == nil && c < 2 {
                var key: Int64 = -1
                let col = m.cols[c]
                let rc = withValue(v) { p in
                    col == m.cols.first && pk != nil ? cs_table_find_primary(txn, m.t, p, &key) : cs_index_find(txn, m.t, col, p, &key)
                }
                out.append("find \(c) \(v) -> \(rc) \(key)")
            }
        }
        out += try changes(txn, since: since).map { "change \($0.kind.rawValue) \($0.table) \($0.col) \($0.key) \($0.a)" }
    }
    let txn = try db.begin(CS_TXN_WRITE)
    defer { _ = cs_txn_end(txn) }
    var o = cs_obj()
    if pk == CS_TYPE_INT {
        var p = cs_int(-5_000_000)
        try must(cs_obj_create_primary(txn, m.t, &p, &o), "next")
    } else if pk == CS_TYPE_STRING {
        try withValue(.str("zz-next")) { try must(cs_obj_create_primary(txn, m.t, $0, &o), "next") }
    } else {
        try must(cs_obj_create(txn, m.t, &o), "next")
    }
    out.append("next \(o.key)")
    try must(cs_txn_rollback(txn), "rollback")
    return out
}

/// Random rows: each names the primary key (`pks[i]`, when there is one) and a random subset
/// of the other columns, in a random order.
private func randomRows(_ pks: [Val?], seed: UInt64) -> [NewRow] {
    var rng = SeededRNG(seed: seed)
    return pks.map { pk in
        let off = pk == nil ? 0 : 1
        var row: NewRow = []
        if let pk { row.append((0, pk)) }
        if Bool.random(using: &rng) { row.append((off, .int(Int64.random(in: -20..<20, using: &rng)))) }
        if Bool.random(using: &rng) {
            row.append((off + 1, Int.random(in: 0..<4, using: &rng) == 0 ? .null : .str("s\(Int.random(in: 0..<30, using: &rng))")))
        }
        if Bool.random(using: &rng) { row.append((off + 2, .double(Double(Int.random(in: 0..<1000, using: &rng)) / 8))) }
        if Bool.random(using: &rng) { row.append((off + 3, .bool(Bool.random(using: &rng)))) }
        row.shuffle(using: &rng)
        return row
    }
}

/// Creates `before` one by one and then `rows` (one by one, or each with cs_obj_create_values)
/// in two files; both must end in the same state.
private func compareCreates(_ dir: TempDir, pk: cs_type?, before: [NewRow], rows: [NewRow], probes: [Val], prefix: String = "",
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
    var snaps: [[String]] = []
    var keySets: [[Int64]] = []
    for (i, name) in ["single.cstore", "values.cstore"].enumerated() {
        let db = try DB(dir.path(prefix + name))
        var m = VTable()
        try db.write { txn throws in
            m = try makeVTable(txn, pk: pk)
            for r in before { _ = try create(txn, m, pk: pk != nil, r, batched: false) }
        }
        let pin = try db.begin(CS_TXN_READ)
        let since = cs_txn_version(pin)
        let keys: [Int64] = try db.write { txn throws in
            try rows.map { try create(txn, m, pk: pk != nil, $0, batched: i == 1) }
        }
        keySets.append(keys)
        snaps.append(try snapshot(db, m, pk: pk, probes: probes, since: since))
        check(cs_txn_end(pin), "end the pin")
        db.verify(name, sourceLocation: sourceLocation)
    }
    #expect(keySets[0] == keySets[1], "keys", sourceLocation: sourceLocation)
    #expect(snaps[0] == snaps[1], sourceLocation: sourceLocation)
    #expect(snaps[1].filter { $0.hasPrefix("change ") }.count > 0, "the creates are in the history", sourceLocation: sourceLocation)
}

@Suite struct CreateValuesTests {
    /// Int primary keys (the object keys): scattered order into and between the keys of objects
    /// made before (rows in the middle of leaves), then negative and huge ones (counter keys, the
    /// primary key's index back).
    @Test func intPrimaryKeysAsCreateThenSets() throws {
        try withTempDir { dir in
            var rng = SeededRNG(seed: 31)
            let before = randomRows(stride(from: Int64(0), to: 3000, by: 3).map { .int($0) }, seed: 1)
            var pks: [Val?] = (0..<Int64(3000)).filter { $0 % 3 != 0 }.shuffled(using: &rng).map { .int($0) }
            pks += [.int(-7), .int(1 << 62), .int(Int64.min), .int(4001)]
            let probes: [Val] = [.int(0), .int(1), .int(5), .int(-7), .int(4001), .str("s3"), .null]
            try compareCreates(dir, pk: CS_TYPE_INT, before: before, rows: randomRows(pks, seed: 2), probes: probes)
        }
    }

    /// A String primary key (in its index) and a table without one (counter keys).
    @Test func stringPrimaryKeysAndNoPrimaryKeyAsCreateThenSets() throws {
        try withTempDir { dir in
            let names: [Val?] = (0..<900).map { .str("k\($0 * 7919 % 900)") }
            let probes: [Val] = [.str("k0"), .str("k7"), .str("s5"), .int(3), .null]
            try compareCreates(dir, pk: CS_TYPE_STRING, before: randomRows(Array(names[0..<100]), seed: 3),
                               rows: randomRows(Array(names[100...]), seed: 4), probes: probes, prefix: "string-")
            let none = [Val?](repeating: nil, count: 700)
            try compareCreates(dir, pk: nil, before: randomRows(Array(none[0..<200]), seed: 5),
                               rows: randomRows(Array(none[200...]), seed: 6), probes: [.int(3), .str("s1"), .null], prefix: "none-")
        }
    }

    /// Values for columns the leaves do not hold yet: a column added after the objects were made
    /// (leaves without its slot), one never written (no sub-node), one written in some leaves
    /// only; rows go into the middle of leaves, at their ends and into new ones.
    @Test func valuesForColumnsTheLeavesDoNotHold() throws {
        try withTempDir { dir in
            var outs: [[String]] = []
            for batched in [false, true] {
                let db = try DB(dir.path(batched ? "values.cstore" : "single.cstore"))
                var t: UInt32 = 0, id: UInt32 = 0, a: UInt32 = 0, s: UInt32 = 0, late: UInt32 = 0, lateS: UInt32 = 0
                try db.write { txn throws in
                    t = try addTable(txn, "L")
                    id = try addColumn(txn, t, "id", CS_TYPE_INT)
                    try must(cs_table_set_primary_key(txn, t, id), "pk")
                    a = try addColumn(txn, t, "a", CS_TYPE_INT)
                    s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                    for k in stride(from: Int64(0), to: 2000, by: 4) {
                        var o = cs_obj()
                        var p = cs_int(k)
                        try must(cs_obj_create_primary(txn, t, &p, &o), "create")
                        if k >= 1000 { try must(setVal(&o, s, .str("old \(k)")), "s") } // in the later leaves only
                    }
                }
                try db.write { txn throws in
                    late = try addColumn(txn, t, "late", CS_TYPE_INT, flags: Int(CS_COL_NULLABLE))
                    lateS = try addColumn(txn, t, "lateS", CS_TYPE_STRING, flags: Int(CS_COL_INDEXED))
                    var rng = SeededRNG(seed: 41)
                    let keys = ((0..<Int64(2400)).filter { $0 % 4 != 0 }).shuffled(using: &rng)
                    for k in keys {
                        var row: [(UInt32, Val)] = [(id, .int(k))]
                        if k % 3 == 0 { row.append((a, .int(k * 2))) }
                        if k % 5 != 0 { row.append((s, .str("s \(k)"))) }
                        if k % 2 == 0 { row.append((late, k % 7 == 0 ? .null : .int(-k))) }
                        if k % 3 != 1 { row.append((lateS, .str("l \(k % 50)"))) }
                        row.shuffle(using: &rng)
                        var o = cs_obj()
                        if batched {
                            try withValues(row.map(\.1)) { p in
                                try must(cs_obj_create_values(txn, t, row.count, row.map(\.0), p, &o), "cs_obj_create_values")
                            }
                        } else {
                            try withValue(.int(k)) { try must(cs_obj_create_primary(txn, t, $0, &o), "create") }
                            for (c, v) in row where c != id { try must(setVal(&o, c, v), "set") }
                        }
                        #expect(o.key == k)
                    }
                }
                var out: [String] = []
                try db.read { txn throws in
                    for k in try allKeys(txn, t) {
                        var o = try openObj(txn, t, k)
                        out.append("\(k): " + [id, a, s, late, lateS].map { "\(getVal(&o, $0) ?? .null)" }.joined(separator: " "))
                    }
                    for i in 0..<50 {
                        var key: Int64 = -1
                        let rc = withValue(.str("l \(i)")) { cs_index_find(txn, t, lateS, $0, &key) }
                        out.append("l \(i) -> \(rc) \(key)")
                    }
                }
                db.verify(batched ? "values" : "single")
                outs.append(out)
            }
            #expect(outs[0].count == 500 + 1800 + 50) // objects made before and after, index answers
            #expect(outs[0] == outs[1])
        }
    }

    /// Refused before anything is created: an existing primary key (CS_CONSTRAINT, whether the
    /// object key is the primary key or the index answers), the primary key not named, a column
    /// named twice (CS_MISUSE), a collection or link column, a value of the wrong type (CS_TYPE),
    /// an embedded table (CS_MISUSE).
    @Test func badCallsCreateNothing() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            for pk in [CS_TYPE_INT, CS_TYPE_STRING] {
                let name = pk == CS_TYPE_INT ? "int" : "string"
                func id(_ i: Int64) -> Val { pk == CS_TYPE_INT ? .int(i) : .str("p\(i)") }
                var m = VTable()
                try db.write { txn throws in
                    if pk == CS_TYPE_STRING { try must(cs_table_remove(txn, try findTable(txn, "V")), "drop") }
                    m = try makeVTable(txn, pk: pk)
                    _ = try create(txn, m, pk: true, [(0, id(5)), (1, .int(1))], batched: false)
                }
                let pin = try db.begin(CS_TXN_READ)
                let version = cs_txn_version(pin)
                try db.write { txn throws in
                    func call(_ cols: [UInt32], _ vals: [Val]) -> Int32 {
                        var o = cs_obj()
                        return withValues(vals) { cs_obj_create_values(txn, m.t, cols.count, cols, $0, &o) }
                    }
                    expectCode(call([m.cols[1], m.cols[0]], [.int(2), id(5)]), CS_CONSTRAINT, "\(name): an existing primary key")
                    expectCode(call([m.cols[1]], [.int(2)]), CS_MISUSE, "\(name): no primary key")
                    expectCode(call([m.cols[0], m.cols[1], m.cols[1]], [id(6), .int(2), .int(3)]), CS_MISUSE, "\(name): a column twice")
                    expectCode(call([m.cols[0], m.list], [id(6), .int(2)]), CS_TYPE, "\(name): a list column")
                    expectCode(call([m.cols[0], m.link], [id(6), .null]), CS_TYPE, "\(name): a link column")
                    expectCode(call([m.cols[0], m.cols[1]], [id(6), .str("x")]), CS_TYPE, "\(name): a String for an Int")
                    expectCode(call([m.cols[0], m.cols[2]], [id(6), .int(1)]), CS_TYPE, "\(name): an Int for a String")
                    expectCode(call([m.cols[0], m.cols[1]], [id(6), .null]), CS_TYPE, "\(name): a null for an Int")
                    expectCode(call([m.cols[0], 999], [id(6), .int(1)]), CS_NOTFOUND, "\(name): no such column")
                    var none = cs_obj()
                    let two = [m.cols[0], m.cols[1]]
                    expectCode(withValues([id(6), .int(1)]) { cs_obj_create_values(txn, m.t, 2, nil, $0, &none) }, CS_MISUSE,
                               "\(name): no column list")
                    expectCode(cs_obj_create_values(txn, m.t, 2, two, nil, &none), CS_MISUSE, "\(name): no values")
                    expectCode(withValues([id(6), .int(1)]) { cs_obj_create_values(txn, m.t, 2, two, $0, nil) }, CS_MISUSE,
                               "\(name): no accessor")
                    #expect(try tableCount(txn, m.t) == 1, "\(name): nothing created")
                    var o = cs_obj()
                    let cols = [m.cols[2], m.cols[0]]
                    try withValues([.str("made"), id(6)]) { try must(cs_obj_create_values(txn, m.t, 2, cols, $0, &o), "the good call") }
                    #expect(getVal(&o, m.cols[2]) == .str("made"))
                    #expect(getVal(&o, m.cols[1]) == .int(0), "a column not named holds its default")
                    #expect(try tableCount(txn, m.t) == 2)
                }
                try db.read { txn throws in
                    var o = cs_obj()
                    var v = cs_int(1)
                    var c = m.cols[1]
                    expectCode(cs_obj_create_values(txn, m.t, 1, &c, &v, &o), CS_READONLY, "\(name): a read transaction")
                    let all = try changes(txn, since: version)
                    #expect(all.count == 1 && all[0].kind == CS_CHANGE_CREATE && all[0].a == 1, "\(name): only the good call, one create")
                }
                check(cs_txn_end(pin), "end the pin")
                db.verify(name)
            }
            try db.write { txn throws in
                let e = try addTable(txn, "E", flags: Int(CS_TABLE_EMBEDDED))
                let x = try addColumn(txn, e, "x", CS_TYPE_INT)
                var o = cs_obj()
                var v = cs_int(1)
                expectCode(cs_obj_create_values(txn, e, 1, [x], &v, &o), CS_MISUSE, "an embedded table")
                expectCode(cs_obj_create_values(txn, e, 1, nil, &v, &o), CS_MISUSE, "no column list")
            }
        }
    }
}

/// Out of memory at each node allocation of a create in turn (docs/CONTRIBUTING.md, "Injected
/// allocation failures"): a create that fails part-way may leave its transaction's nodes half
/// changed (the key in the tree, some columns shifted, no count), so the commit refuses that
/// transaction and rolls it back. Whatever the call returned, the caller commits: the file then
/// verifies, holds every object it held with its values, and the next create succeeds. The
/// campaign ends at the first call that makes every allocation it needs.
@Suite(.enabled(if: cs_test_fail_node_allocation(0), "the allocation-failure hook exists only in builds with the core's assertions"))
struct CreateOutOfMemoryTests {
    /// Table "M" of 600 objects with ids 0, 2, 4, ...: `id` the primary key (Int: the object
    /// keys; String: in its index), `a` an indexed Int, `s` a String, `d` a Double.
    private func campaign(_ name: String, pk: cs_type, create: (OpaquePointer, UInt32, [UInt32], Int64, inout cs_obj) -> Int32) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            defer { db.close() }
            var t: UInt32 = 0
            var cols: [UInt32] = []
            func id(_ k: Int64) -> Val { pk == CS_TYPE_INT ? .int(k) : .str("k\(k)") }
            try db.write { txn throws in
                t = try addTable(txn, "M")
                cols.append(try addColumn(txn, t, "id", pk))
                try must(cs_table_set_primary_key(txn, t, cols[0]), "pk")
                cols.append(try addColumn(txn, t, "a", CS_TYPE_INT, flags: Int(CS_COL_INDEXED)))
                cols.append(try addColumn(txn, t, "s", CS_TYPE_STRING))
                cols.append(try addColumn(txn, t, "d", CS_TYPE_DOUBLE))
                for k in stride(from: Int64(0), to: 1200, by: 2) {
                    var o = cs_obj()
                    let vals: [Val] = [id(k), .int(k * 3), .str("s\(k)"), .double(Double(k))]
                    try withValues(vals) { try must(cs_obj_create_values(txn, t, 4, cols, $0, &o), "create \(k)") }
                }
            }
            func state() throws -> [String] {
                try db.read { txn in
                    try allKeys(txn, t).map { k in
                        var o = try openObj(txn, t, k)
                        return "\(k): " + cols.map { "\(getVal(&o, $0) ?? .null)" }.joined(separator: " ")
                    }
                }
            }
            let before = try state()
            var failures = 0, refused = 0
            for n in UInt32(1)... {
                let txn = try db.begin(CS_TXN_WRITE)
                _ = cs_test_fail_node_allocation(n)
                var o = cs_obj()
                let rc = create(txn, t, cols, 701, &o)
                let fired = cs_test_node_allocation_failed()
                _ = cs_test_fail_node_allocation(0)
                let crc = cs_txn_commit(txn) // committed whatever the call returned
                _ = cs_txn_end(txn)
                let vrc = cs_db_verify(db.h)
                #expect(vrc == 0, "\(name), allocation \(n): \(codeName(vrc)) \(lastMessage())")
                if rc != 0 {
                    #expect(rc == Int32(CS_NOMEM) && fired, "\(name), allocation \(n): \(codeName(rc))")
                    // refused (the create had changed nodes), or committed with nothing changed
                    #expect(crc == Int32(CS_NOMEM) || crc == 0, "\(name), allocation \(n): the commit after a failed create gave \(codeName(crc))")
                    if crc != 0 { refused += 1 }
                    #expect(try state() == before, "\(name), allocation \(n): the objects changed")
                    failures += 1
                } else {
                    try must(crc, "\(name), allocation \(n): commit")
                    #expect(try state().count == before.count + 1, "\(name), allocation \(n): created")
                    if !fired { break }
                    try db.write { txn throws in
                        var p = cs_obj()
                        try must(withValue(id(701)) { v in
                            var k: Int64 = 0
                            let r = cs_table_find_primary(txn, t, v, &k)
                            if r == 0 { try? must(cs_obj_open(txn, t, k, &p), "open") }
                            return r
                        }, "find 701")
                        try must(cs_obj_delete(&p), "delete 701")
                    }
                }
                if n > 400 { Issue.record("\(name): no end after 400 allocations"); break }
            }
            #expect(failures > 0 && refused > 0, "\(name): \(failures) allocations failed, \(refused) commits refused")
        }
    }

    private static func withNewValues(_ k: Int64, _ pk: cs_type, _ body: (UnsafePointer<cs_value>) -> Int32) -> Int32 {
        let id: Val = pk == CS_TYPE_INT ? .int(k) : .str("k\(k)")
        return withValues([id, .int(k * 3), .str("new \(k)"), .double(0.5)], body)
    }

    @Test(arguments: [CS_TYPE_INT, CS_TYPE_STRING])
    func createValues(_ pk: cs_type) throws {
        try campaign("cs_obj_create_values \(pk)", pk: pk) { txn, t, cols, k, o in
            Self.withNewValues(k, pk) { cs_obj_create_values(txn, t, cols.count, cols, $0, &o) }
        }
    }

    /// cs_obj_create_embedded replacing an owner's embedded object: after the new object is
    /// made, linking it (the old one dropped, the backlinks) can fail too.
    @Test func createEmbedded() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            defer { db.close() }
            var o: UInt32 = 0, e: UInt32 = 0, link: UInt32 = 0, x: UInt32 = 0
            var owners: [Int64] = []
            try db.write { txn throws in
                e = try addTable(txn, "E", flags: Int(CS_TABLE_EMBEDDED))
                x = try addColumn(txn, e, "x", CS_TYPE_INT)
                o = try addTable(txn, "O")
                link = try addColumn(txn, o, "e", CS_TYPE_LINK, flags: Int(CS_COL_NULLABLE), target: e)
                for i in 0..<600 {
                    var owner = try createObj(txn, o)
                    var emb = cs_obj()
                    try must(cs_obj_create_embedded(&owner, link, &emb), "embed")
                    try must(cs_obj_set_int(&emb, x, Int64(i)), "x")
                    owners.append(owner.key)
                }
            }
            func state() throws -> [String] {
                try db.read { txn in
                    var out = ["E \(try tableCount(txn, e))"]
                    for k in owners {
                        var owner = try openObj(txn, o, k)
                        var v = cs_value()
                        try must(cs_obj_get(&owner, link, &v), "link")
                        var emb = try openObj(txn, e, v.v.link.key)
                        out.append("\(k) -> \(try getInt(&emb, x))")
                    }
                    return out
                }
            }
            let before = try state()
            var failures = 0, refused = 0
            for n in UInt32(1)... {
                let txn = try db.begin(CS_TXN_WRITE)
                var owner = try openObj(txn, o, owners[300])
                _ = cs_test_fail_node_allocation(n)
                var emb = cs_obj()
                let rc = cs_obj_create_embedded(&owner, link, &emb)
                let fired = cs_test_node_allocation_failed()
                _ = cs_test_fail_node_allocation(0)
                let crc = cs_txn_commit(txn) // committed whatever the call returned
                _ = cs_txn_end(txn)
                let vrc = cs_db_verify(db.h)
                #expect(vrc == 0, "allocation \(n): \(codeName(vrc)) \(lastMessage())")
                if rc != 0 {
                    #expect(rc == Int32(CS_NOMEM) && fired, "allocation \(n): \(codeName(rc))")
                    #expect(crc == Int32(CS_NOMEM) || crc == 0, "allocation \(n): the commit gave \(codeName(crc))")
                    if crc != 0 { refused += 1 }
                    #expect(try state() == before, "allocation \(n): the objects changed")
                    failures += 1
                } else {
                    try must(crc, "allocation \(n): commit")
                    if !fired { break }
                    Issue.record("allocation \(n): a failed allocation and a create that succeeded")
                    break
                }
                if n > 400 { Issue.record("no end after 400 allocations"); break }
            }
            #expect(failures > 0 && refused > 0, "\(failures) allocations failed, \(refused) commits refused")
            // the last call succeeded: the owner holds a new embedded object (x 0), the old one is gone
            let after = try state()
            #expect(after[0] == "E 600" && after[301] == "\(owners[300]) -> 0")
        }
    }

    @Test(arguments: [CS_TYPE_INT, CS_TYPE_STRING])
    func createPrimary(_ pk: cs_type) throws {
        try campaign("cs_obj_create_primary \(pk)", pk: pk) { txn, t, cols, k, o in
            Self.withNewValues(k, pk) { cs_obj_create_primary(txn, t, $0, &o) }
        }
    }

    /// cs_obj_create_many's own path (rows in key order, a leaf at a time, their index entries
    /// after them) fails part-way as a single create does, and its write is refused the same way.
    @Test(arguments: [CS_TYPE_INT, CS_TYPE_STRING])
    func createMany(_ pk: cs_type) throws {
        try campaign("cs_obj_create_many \(pk)", pk: pk) { txn, t, cols, k, _ in
            Self.withNewValues(k, pk) { cs_obj_create_many(txn, t, 1, cols.count, cols, $0, nil) }
        }
    }
}
