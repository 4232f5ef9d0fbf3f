// cs_obj_create_many in tables with a primary key and with indexed columns (docs/ARCHITECTURE.md,
// Bulk creation with primary keys and indexes): every batch is compared with the same objects
// created one by one (cs_obj_create_primary / cs_obj_create and cs_obj_set) in another file: the
// same keys, values, index answers, change history and next key; a duplicate primary key is
// refused before anything is created.
import CStore
import Foundation
import Testing

/// A table "P": primary key column "id" of `pkType` (none when nil), an Int "a" (indexed when
/// `indexA`), a nullable String "s" (indexed) and a Double "d".
private struct Shape {
    var pkType: cs_type?
    var indexA: Bool
}

private struct Made {
    var t: UInt32 = 0
    var cols: [UInt32] = [] // id (when a primary key), a, s, d
}

private func makeTable(_ txn: OpaquePointer, _ shape: Shape) throws -> Made {
    var m = Made()
    m.t = try addTable(txn, "P")
    if let pk = shape.pkType {
        let id = try addColumn(txn, m.t, "id", pk)
        try must(cs_table_set_primary_key(txn, m.t, id), "cs_table_set_primary_key")
        m.cols.append(id)
    }
    m.cols.append(try addColumn(txn, m.t, "a", CS_TYPE_INT, flags: shape.indexA ? Int(CS_COL_INDEXED) : 0))
    m.cols.append(try addColumn(txn, m.t, "s", CS_TYPE_STRING, flags: Int(CS_COL_NULLABLE | CS_COL_INDEXED)))
    m.cols.append(try addColumn(txn, m.t, "d", CS_TYPE_DOUBLE))
    return m
}

/// Creates the rows (one array of Vals per row, in `m.cols` order) one object at a time; the
/// keys in row order.
private func createOneByOne(_ txn: OpaquePointer, _ m: Made, _ shape: Shape, _ rows: [[Val]]) throws -> [Int64] {
    var keys: [Int64] = []
    for row in rows {
        var o = cs_obj()
        if shape.pkType != nil {
            try withValue(row[0]) { try must(cs_obj_create_primary(txn, m.t, $0, &o), "cs_obj_create_primary") }
        } else {
            try must(cs_obj_create(txn, m.t, &o), "cs_obj_create")
        }
        for (i, c) in m.cols.enumerated() where !(shape.pkType != nil && i == 0) {
            try must(setVal(&o, c, row[i]), "set")
        }
        keys.append(o.key)
    }
    return keys
}

/// The same rows in one cs_obj_create_many_keys call: its result code and keys.
private func createBatch(_ txn: OpaquePointer, _ m: Made, _ rows: [[Val]]) -> (Int32, [Int64]) {
    var flat: [Val] = []
    for c in 0..<m.cols.count { flat += rows.map { $0[c] } }
    var keys = [Int64](repeating: -1, count: rows.count)
    let rc = withValues(flat) { p in cs_obj_create_many_keys(txn, m.t, rows.count, m.cols.count, m.cols, p, &keys) }
    return (rc, keys)
}

/// What a file holds: every object's key and values, the index answers for each row's values,
/// and the history of the version after `since`.
private struct State: Equatable {
    var objects: [Int64: [Val]] = [:]
    var lookups: [String] = []
    var history: [String] = []
    var nextKey: Int64 = 0
}

private func state(_ db: DB, _ m: Made, _ shape: Shape, _ rows: [[Val]], since: UInt64) throws -> State {
    var st = State()
    try db.read { txn throws in
        for k in try allKeys(txn, m.t) {
            var o = try openObj(txn, m.t, k)
            st.objects[k] = m.cols.map { getVal(&o, $0) ?? .null }
        }
        let aCol = m.cols[shape.pkType != nil ? 1 : 0], sCol = m.cols[shape.pkType != nil ? 2 : 1]
        for row in rows {
            let a = row[shape.pkType != nil ? 1 : 0], s = row[shape.pkType != nil ? 2 : 1]
            if shape.pkType != nil {
                var key: Int64 = -1
                let rc = withValue(row[0]) { cs_table_find_primary(txn, m.t, $0, &key) }
                st.lookups.append("pk \(row[0]) -> \(rc) \(key)")
            }
            if shape.indexA {
                var key: Int64 = -1
                let rc = withValue(a) { cs_index_find(txn, m.t, aCol, $0, &key) }
                st.lookups.append("a \(a) -> \(rc) \(key)")
            }
            var key: Int64 = -1
            let rc = withValue(s) { cs_index_find(txn, m.t, sCol, $0, &key) }
            st.lookups.append("s \(s) -> \(rc) \(key)")
        }
        st.history = try changes(txn, since: since).map { "\($0.kind.rawValue) \($0.table) \($0.col) \($0.key) \($0.a)" }
    }
    // the key the next object gets (in a write rolled back)
    let txn = try db.begin(CS_TXN_WRITE)
    defer { _ = cs_txn_end(txn) }
    do {
        var o = cs_obj()
        if shape.pkType == CS_TYPE_INT {
            var p = cs_int(-1_000_000)
            try must(cs_obj_create_primary(txn, m.t, &p, &o), "next")
        } else if shape.pkType == CS_TYPE_STRING {
            try withValue(.str("zz-next")) { try must(cs_obj_create_primary(txn, m.t, $0, &o), "next") }
        } else {
            try must(cs_obj_create(txn, m.t, &o), "next")
        }
        st.nextKey = o.key
        try must(cs_txn_rollback(txn), "rollback")
    }
    return st
}

/// Runs `before` (objects created one by one in a first write) and then the batch, in two files:
/// one by one and with cs_obj_create_many_keys. Both must end in the same state.
private func compare(_ dir: TempDir, _ shape: Shape, before: [[Val]], batch: [[Val]], prefix: String = "",
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
    var states: [State] = []
    var keySets: [[Int64]] = []
    for (i, name) in ["one-by-one.cstore", "batch.cstore"].enumerated() {
        let db = try DB(dir.path(prefix + name))
        var m = Made()
        try db.write { txn throws in
            m = try makeTable(txn, shape)
            _ = try createOneByOne(txn, m, shape, before)
        }
        let pin = try db.begin(CS_TXN_READ)
        let since = cs_txn_version(pin)
        let keys: [Int64] = try db.write { txn throws in
            if i == 0 { return try createOneByOne(txn, m, shape, batch) }
            let (rc, keys) = createBatch(txn, m, batch)
            try must(rc, "cs_obj_create_many_keys")
            return keys
        }
        keySets.append(keys)
        states.append(try state(db, m, shape, before + batch, since: since))
        check(cs_txn_end(pin), "end the pin")
        db.verify(name, sourceLocation: sourceLocation)
    }
    #expect(keySets[0] == keySets[1], "keys", sourceLocation: sourceLocation)
    #expect(states[0].objects == states[1].objects, "objects", sourceLocation: sourceLocation)
    #expect(states[0].lookups == states[1].lookups, "index answers", sourceLocation: sourceLocation)
    #expect(states[0].history == states[1].history, "history", sourceLocation: sourceLocation)
    #expect(states[0].nextKey == states[1].nextKey, "next key", sourceLocation: sourceLocation)
    #expect(states[1].objects.count == before.count + batch.count, sourceLocation: sourceLocation)
}

private func intRows(_ pks: [Int64], seed: UInt64) -> [[Val]] {
    var rng = SeededRNG(seed: seed)
    return pks.map { pk in
        let s: Val = Int.random(in: 0..<5, using: &rng) == 0 ? .null : .str("s\(Int.random(in: 0..<50, using: &rng))")
        return [.int(pk), .int(Int64.random(in: -20..<20, using: &rng)), s, .double(Double(pk) / 4)]
    }
}

@Suite struct BulkPrimaryKeyTests {
    /// An Int primary key in a pk-keyed table: keys in random order, some inside the keys of
    /// objects made before (rows go into the middle of leaves), negative and huge ones (counter
    /// keys), a retired one; `a` indexed too.
    @Test func intPrimaryKeysInRandomOrderAsOneByOne() throws {
        try withTempDir { dir in
            var rng = SeededRNG(seed: 21)
            let before = intRows(Array(stride(from: Int64(0), to: 3000, by: 3)), seed: 1)
            var pks = (0..<Int64(4000)).filter { $0 % 3 != 0 }.shuffled(using: &rng)
            pks.insert(contentsOf: [-7, 1 << 62, Int64.min], at: 40)
            let shape = Shape(pkType: CS_TYPE_INT, indexA: true)
            try compare(dir, shape, before: before, batch: intRows(pks, seed: 2))
        }
    }

    /// A batch into an empty pk-keyed table (no created-key set), and one whose table already
    /// has a counter key (the index checks the primary keys).
    @Test func intPrimaryKeysIntoAnEmptyTableAndAfterCounterKeys() throws {
        try withTempDir { dir in
            var rng = SeededRNG(seed: 5)
            let shape = Shape(pkType: CS_TYPE_INT, indexA: false)
            try compare(dir, shape, before: [], batch: intRows((0..<Int64(2000)).shuffled(using: &rng), seed: 3), prefix: "empty-")
            try compare(dir, shape, before: intRows([-1, 5, 9], seed: 4),
                        batch: intRows((10..<Int64(900)).shuffled(using: &rng) + [0, -2], seed: 6), prefix: "counter-")
        }
    }

    /// A String primary key (kept in its index, never the object key).
    @Test func stringPrimaryKeysAsOneByOne() throws {
        try withTempDir { dir in
            var rng = SeededRNG(seed: 8)
            let names = (0..<1500).map { "k\($0 * 7919 % 1500)" }.shuffled(using: &rng)
            var rows = intRows(Array(0..<Int64(names.count)), seed: 9)
            for i in rows.indices { rows[i][0] = .str(names[i]) }
            let before = Array(rows[0..<100]), batch = Array(rows[100...])
            try compare(dir, Shape(pkType: CS_TYPE_STRING, indexA: true), before: before, batch: batch)
        }
    }

    /// No primary key, indexed columns: the leaf-at-a-time path with the index entries of each
    /// new row's values.
    @Test func indexedColumnsWithoutAPrimaryKeyAsOneByOne() throws {
        try withTempDir { dir in
            let rows = intRows(Array(0..<Int64(1200)), seed: 12).map { Array($0.dropFirst()) }
            try compare(dir, Shape(pkType: nil, indexA: true), before: Array(rows[0..<300]), batch: Array(rows[300...]))
        }
    }

    /// A primary key twice in the batch, or one an object has: CS_CONSTRAINT and nothing created,
    /// no history; the primary key column not named: CS_MISUSE.
    @Test func duplicatePrimaryKeysRefuseTheWholeBatch() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            for pkType in [CS_TYPE_INT, CS_TYPE_STRING] {
                var m = Made()
                let shape = Shape(pkType: pkType, indexA: true)
                func pk(_ i: Int64) -> Val { pkType == CS_TYPE_INT ? .int(i) : .str("p\(i)") }
                try db.write { txn throws in
                    if pkType == CS_TYPE_STRING { try must(cs_table_remove(txn, try findTable(txn, "P")), "drop") }
                    m = try makeTable(txn, shape)
                    _ = try createOneByOne(txn, m, shape, [[pk(5), .int(1), .null, .double(0)]])
                }
                let pin = try db.begin(CS_TXN_READ) // keeps the history after its version
                let version = cs_txn_version(pin)
                try db.write { txn throws in
                    var rows = intRows(Array(10..<Int64(400)), seed: 13)
                    for i in rows.indices { rows[i][0] = pk(10 + Int64(i)) }
                    var twice = rows
                    twice[300][0] = pk(17)
                    expectCode(createBatch(txn, m, twice).0, CS_CONSTRAINT, "a primary key twice in the batch")
                    var existing = rows
                    existing[389][0] = pk(5)
                    expectCode(createBatch(txn, m, existing).0, CS_CONSTRAINT, "an existing object's primary key")
                    #expect(try tableCount(txn, m.t) == 1, "nothing created")
                    let noPk = Made(t: m.t, cols: Array(m.cols.dropFirst()))
                    expectCode(createBatch(txn, noPk, rows.map { Array($0.dropFirst()) }).0, CS_MISUSE, "no primary key named")
                    try must(createBatch(txn, m, rows).0, "the good batch")
                    #expect(try tableCount(txn, m.t) == 391)
                }
                try db.read { txn throws in
                    let created = try changes(txn, since: version).filter { $0.kind == CS_CHANGE_CREATE }.reduce(0) { $0 + $1.a }
                    #expect(created == 390, "only the good batch is in the history")
                }
                check(cs_txn_end(pin), "end the pin")
                db.verify("\(pkType)")
            }
        }
    }
}
