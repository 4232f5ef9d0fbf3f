// cs_obj_create_many with link columns (docs/ARCHITECTURE.md, Bulk creation with primary keys
// and indexes): links to objects that exist go into the new rows with the other values and their
// backlinks in after the rows; a link to a row of the batch or to no object makes the call go
// object by object. Every batch is compared with the same objects created one by one
// (cs_obj_create(_primary) and cs_obj_set) in another file: the same keys, values, backlinks (in
// order), change history, and the file verifies.
import CStore
import Foundation
import Testing

private struct LinkState: Equatable {
    var objects: [Int64: [Val]] = [:]
    var backlinks: [String] = []
    var history: [String] = []
}

/// Tables "O" (targets: an Int "n") and "T" (an Int primary key "id" when `pk`, an Int "a", a
/// link "o" to O and a link "self" to T). `before` targets and `beforeT` rows of T are created
/// one by one in a first write; then `batch` rows of T (values for id (when pk), a, o, self), one
/// by one or in one cs_obj_create_many_keys call.
private func run(_ db: DB, pk: Bool, targets: Int, beforeT: [[Val]], batch: (UInt32, UInt32) -> [[Val]],
                 batched: Bool) throws -> (rc: Int32, keys: [Int64], state: LinkState) {
    var o: UInt32 = 0, t: UInt32 = 0, cols: [UInt32] = []
    func oneByOne(_ txn: OpaquePointer, _ rows: [[Val]]) throws -> [Int64] {
        var keys: [Int64] = []
        for row in rows {
            var obj = cs_obj()
            if pk {
                try withValue(row[0]) { try must(cs_obj_create_primary(txn, t, $0, &obj), "create_primary") }
            } else {
                try must(cs_obj_create(txn, t, &obj), "create")
            }
            for (i, c) in cols.enumerated() where !(pk && i == 0) { try must(setVal(&obj, c, row[i]), "set") }
            keys.append(obj.key)
        }
        return keys
    }
    try db.write { txn throws in
        o = try addTable(txn, "O")
        let n = try addColumn(txn, o, "n", CS_TYPE_INT)
        for i in 0..<targets {
            var obj = cs_obj()
            try must(cs_obj_create(txn, o, &obj), "target")
            try must(setVal(&obj, n, .int(Int64(i))), "n")
        }
        t = try addTable(txn, "T")
        if pk {
            let id = try addColumn(txn, t, "id", CS_TYPE_INT)
            try must(cs_table_set_primary_key(txn, t, id), "pk")
            cols.append(id)
        }
        cols.append(try addColumn(txn, t, "a", CS_TYPE_INT))
        cols.append(try addColumn(txn, t, "o", CS_TYPE_LINK, target: o))
        cols.append(try addColumn(txn, t, "self", CS_TYPE_LINK, target: t))
        _ = try oneByOne(txn, beforeT)
    }
    let pin = try db.begin(CS_TXN_READ)
    defer { _ = cs_txn_end(pin) }
    let since = cs_txn_version(pin)
    let rows = batch(o, t)
    var rc: Int32 = 0
    var keys: [Int64] = []
    try db.write { txn throws in
        if !batched {
            keys = try oneByOne(txn, rows)
            return
        }
        var flat: [Val] = []
        for c in 0..<cols.count { flat += rows.map { $0[c] } }
        keys = [Int64](repeating: -1, count: rows.count)
        rc = withValues(flat) { p in cs_obj_create_many_keys(txn, t, rows.count, cols.count, cols, p, &keys) }
    }
    var st = LinkState()
    try db.read { txn throws in
        for k in try allKeys(txn, t) {
            var obj = try openObj(txn, t, k)
            st.objects[k] = cols.map { getVal(&obj, $0) ?? .null }
        }
        for (table, col) in [(o, cols[cols.count - 2]), (t, cols[cols.count - 1])] {
            for k in try allKeys(txn, table) {
                var obj = try openObj(txn, table, k)
                var nb = 0
                try must(cs_obj_backlink_count(&obj, t, col, &nb), "backlink count")
                var origins: [Int64] = []
                for i in 0..<nb {
                    var key: Int64 = -1
                    try must(cs_obj_backlink_get(&obj, t, col, i, &key), "backlink")
                    origins.append(key)
                }
                st.backlinks.append("\(table) \(k) <- \(origins)")
            }
        }
        st.history = try changes(txn, since: since).map { "\($0.kind.rawValue) \($0.table) \($0.col) \($0.key) \($0.a)" }
    }
    db.verify()
    return (rc, keys, st)
}

private func compareLinks(pk: Bool, targets: Int = 50, beforeT: [[Val]] = [], batch: @escaping (UInt32, UInt32) -> [[Val]],
                          sourceLocation: SourceLocation = #_sourceLocation) throws {
    try withTempDir { dir in
        let single = try run(try DB(dir.path("single.cstore")), pk: pk, targets: targets, beforeT: beforeT, batch: batch, batched: false)
        let many = try run(try DB(dir.path("many.cstore")), pk: pk, targets: targets, beforeT: beforeT, batch: batch, batched: true)
        #expect(many.rc == 0, "cs_obj_create_many_keys: \(many.rc)", sourceLocation: sourceLocation)
        #expect(many.keys == single.keys, "keys", sourceLocation: sourceLocation)
        #expect(many.state.objects == single.state.objects, "objects", sourceLocation: sourceLocation)
        #expect(many.state.backlinks == single.state.backlinks, "backlinks", sourceLocation: sourceLocation)
        #expect(many.state.history == single.state.history, "history", sourceLocation: sourceLocation)
        #expect(many.state.objects.count == beforeT.count + batch(0, 0).count, sourceLocation: sourceLocation)
    }
}

@Suite struct BulkLinkTests {
    /// Links to existing objects (some null, several rows per target), without and with a
    /// primary key (ids in scattered order), into an empty table and after existing rows, and
    /// links from the new rows to existing rows of their own table.
    @Test(arguments: [false, true])
    func linksToExistingObjectsGoInWithTheRows(pk: Bool) throws {
        let before: [[Val]] = (0..<40).map { (i: Int) -> [Val] in
            let id: [Val] = pk ? [.int(Int64(10_000 + i))] : []
            return id + [.int(Int64(i)), .null, .null]
        }
        try compareLinks(pk: pk, beforeT: before) { o, t in
            (0..<900).map { (r: Int) -> [Val] in
                let link: Val = r % 5 == 0 ? .null : .link(o, Int64((r * 7) % 50))
                let own: Val = r % 3 == 0 ? .link(t, pk ? Int64(10_000 + r % 40) : Int64(r % 40)) : .null
                let id: [Val] = pk ? [.int(Int64((r * 7919) % 900))] : []
                return id + [.int(Int64(r)), link, own]
            }
        }
    }

    /// A link to a row the batch creates itself (the row before it), and a link to no object:
    /// the call goes object by object, with the results (or the error) of single creations.
    @Test func linksToRowsOfTheBatchGoObjectByObject() throws {
        try compareLinks(pk: false) { o, t in
            (0..<300).map { (r: Int) -> [Val] in
                let own: Val = r > 0 ? .link(t, Int64(r - 1)) : .null
                return [.int(Int64(r)), .link(o, Int64(r % 50)), own]
            }
        }
        try withTempDir { dir in
            let db = try DB(dir.path("missing.cstore"))
            let got = try run(db, pk: false, targets: 5, beforeT: [], batch: { o, _ in
                [[.int(0), .link(o, 1), .null], [.int(1), .link(o, 99), .null]]
            }, batched: true)
            #expect(got.rc == Int32(CS_NOTFOUND))
        }
    }
}
