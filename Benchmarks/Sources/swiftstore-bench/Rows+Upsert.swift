// upsert.objects.50k: updating existing objects by primary key through the object APIs.
// SwiftStore: `realm.add(_, update: .modified)` of unmanaged objects whose primary keys exist
// (the lookup by primary key, then the update of the object found). GRDB: `save(db)` of records
// whose ids exist (an UPDATE by primary key, and an INSERT only when it changed no row): GRDB's
// `upsert(db)` (INSERT ... ON CONFLICT DO UPDATE ... RETURNING) measured about 18 times slower
// per record, too weak a peer.
//
// Both sides hold a file of 50k objects with ids 0 ..< 50k (built untimed, once, opened once).
// Each repetition is one write transaction (committed durably) that upserts every id, in a fixed
// scattered order (7919 * i mod n), with 10 values that differ from the ones stored (the
// repetition's number is added), so every property of every object changes.

import Foundation
import GRDB
import SwiftStore

/// The model of the upsert row: an Int primary key and 10 Ints.
final class PkItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var i0 = 0
    @Persisted var i1 = 0
    @Persisted var i2 = 0
    @Persisted var i3 = 0
    @Persisted var i4 = 0
    @Persisted var i5 = 0
    @Persisted var i6 = 0
    @Persisted var i7 = 0
    @Persisted var i8 = 0
    @Persisted var i9 = 0
}

/// The record GRDB upserts: the table `p(id INTEGER PRIMARY KEY, i0 ... i9)`.
struct GRDBPkItem: PersistableRecord {
    static let databaseTableName = "p"

    var id: Int
    var v: Int

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["i0"] = v
        container["i1"] = v
        container["i2"] = v
        container["i3"] = v
        container["i4"] = v
        container["i5"] = v
        container["i6"] = v
        container["i7"] = v
        container["i8"] = v
        container["i9"] = v
    }
}

/// The id upserted at step `i` of `n` (a permutation of 0 ..< n: 7919 is prime and n is not a
/// multiple of it).
private func scatteredId(_ i: Int, _ n: Int) -> Int { (i * 7919) % n }

/// Upserts every id of 0 ..< n with `value(id) = id + delta` in all 10 properties.
@inline(never)
func upsertPkItems(_ realm: Realm, count n: Int, delta: Int) {
    for i in 0..<n {
        let id = scatteredId(i, n)
        let v = id + delta
        let o = PkItem()
        o.id = id
        o.i0 = v
        o.i1 = v
        o.i2 = v
        o.i3 = v
        o.i4 = v
        o.i5 = v
        o.i6 = v
        o.i7 = v
        o.i8 = v
        o.i9 = v
        realm.add(o, update: .modified)
    }
}

/// Sum of every value of every PkItem (10 properties, not the id) and the count.
private func sumPkItems(_ realm: Realm) -> (sum: Int64, count: Int64) {
    var sum: Int64 = 0
    var count: Int64 = 0
    for o in realm.objects(PkItem.self) {
        sum &+= Int64(o.i0) &+ Int64(o.i1) &+ Int64(o.i2) &+ Int64(o.i3) &+ Int64(o.i4)
        sum &+= Int64(o.i5) &+ Int64(o.i6) &+ Int64(o.i7) &+ Int64(o.i8) &+ Int64(o.i9)
        count += 1
    }
    return (sum, count)
}

/// 10 * sum over ids of (id + delta).
private func upsertWant(_ n: Int, delta: Int) -> Int64 {
    10 * (triangle(n) + Int64(n) * Int64(delta))
}

func upsertObjectsRow() -> Row {
    Row(
        id: "upsert.objects.50k", size: 50_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: swiftstoreUpsertObjects,
        peerSide: grdbUpsertRecords)
}

/// The SwiftStore side: the file is built (untimed) with `realm.add` of new PkItems holding
/// their id in every property, the Realm is kept open, each repetition times one `realm.write`
/// of `realm.add(_, update: .modified)` for every id, then checks the count and the sum.
func swiftstoreUpsertObjects(_ ctx: RowContext) throws -> Runner {
    let url = ctx.directory.appendingPathComponent("upsert.realm")
    let n = ctx.size
    let config = Realm.Configuration(fileURL: url, objectTypes: [PkItem.self])
    let box = RealmBox(try Realm(configuration: config))
    try box.realm!.write { upsertPkItems(box.realm!, count: n, delta: 0) }
    return Runner(
        run: { rep in
            guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
            let delta = rep + 1
            let ms = try measure {
                try realm.write { upsertPkItems(realm, count: n, delta: delta) }
            }
            let (sum, count) = sumPkItems(realm)
            if count != Int64(n) {
                return Sample(ms: ms, check: Check(what: "object count", got: count, want: Int64(n)))
            }
            return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: upsertWant(n, delta: delta)))
        },
        tearDown: { box.realm = nil })
}

/// The GRDB side: the table `p` with an INTEGER PRIMARY KEY and the rows built (untimed) by
/// `insert(db)`, one queue; each repetition times one `inTransaction` of `save(db)` for every
/// id, then checks the count and the sum.
func grdbUpsertRecords(_ ctx: RowContext) throws -> Runner {
    let path = ctx.directory.appendingPathComponent("upsert.sqlite").path
    let n = ctx.size
    let queue = try grdbQueue(path)
    try queue.inDatabase { db in
        try db.execute(sql: """
            CREATE TABLE p(id INTEGER PRIMARY KEY, i0 INTEGER NOT NULL, i1 INTEGER NOT NULL, \
            i2 INTEGER NOT NULL, i3 INTEGER NOT NULL, i4 INTEGER NOT NULL, i5 INTEGER NOT NULL, \
            i6 INTEGER NOT NULL, i7 INTEGER NOT NULL, i8 INTEGER NOT NULL, i9 INTEGER NOT NULL)
            """)
    }
    try queue.inTransaction { db in
        for i in 0..<n { try GRDBPkItem(id: scatteredId(i, n), v: scatteredId(i, n)).insert(db) }
        return .commit
    }
    return Runner(
        run: { rep in
            let delta = rep + 1
            let ms = try measure {
                try queue.inTransaction { db in
                    for i in 0..<n {
                        let id = scatteredId(i, n)
                        try GRDBPkItem(id: id, v: id + delta).save(db)
                    }
                    return .commit
                }
            }
            let (sum, count) = try queue.read { db in
                (try Int64.fetchOne(db, sql: "SELECT SUM(i0+i1+i2+i3+i4+i5+i6+i7+i8+i9) FROM p") ?? 0,
                 try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM p") ?? 0)
            }
            if count != Int64(n) {
                return Sample(ms: ms, check: Check(what: "row count", got: count, want: Int64(n)))
            }
            return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: upsertWant(n, delta: delta)))
        },
        tearDown: { try? queue.close() })
}

// MARK: - insert.pk.scattered.200k and add.pk.scattered.200k

// Loading new objects with Int primary keys in a scattered order (7919 * i mod n) into a new
// file: object by object (`realm.add` of each PkItem, as insert.objects.50k) and as one
// `realm.add` of the array (the batched path, which creates the objects in key order). GRDB
// inserts the same records into `p` in the same order. Timed: one write transaction (the objects
// are made inside it) and its durable commit; the open and the schema are not.

/// The scattered-order load rows (`sequence`: one `realm.add` of the array).
func scatteredLoadRow(sequence: Bool) -> Row {
    Row(
        id: sequence ? "add.pk.scattered.200k" : "insert.pk.scattered.200k", size: 200_000, mode: "durable",
        peer: "grdb", goal: "<= 0.5x",
        swiftstore: { ctx in try swiftstoreScatteredLoad(ctx, sequence: sequence) },
        peerSide: grdbScatteredLoad)
}

private func makePkItem(_ id: Int) -> PkItem {
    let o = PkItem()
    o.id = id
    o.i0 = id
    o.i1 = id
    o.i2 = id
    o.i3 = id
    o.i4 = id
    o.i5 = id
    o.i6 = id
    o.i7 = id
    o.i8 = id
    o.i9 = id
    return o
}

func swiftstoreScatteredLoad(_ ctx: RowContext, sequence: Bool) throws -> Runner {
    let n = ctx.size
    return Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let config = Realm.Configuration(fileURL: dir.appendingPathComponent("load.realm"), objectTypes: [PkItem.self])
        var ms = 0.0
        var sum: Int64 = 0, count: Int64 = 0
        do {
            let realm = try Realm(configuration: config)
            ms = try measure {
                try realm.write {
                    if sequence {
                        realm.add((0..<n).map { makePkItem(scatteredId($0, n)) })
                    } else {
                        for i in 0..<n { realm.add(makePkItem(scatteredId(i, n))) }
                    }
                }
            }
            (sum, count) = sumPkItems(realm)
        }
        if count != Int64(n) { return Sample(ms: ms, check: Check(what: "object count", got: count, want: Int64(n))) }
        return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: upsertWant(n, delta: 0)))
    })
}

func grdbScatteredLoad(_ ctx: RowContext) throws -> Runner {
    let n = ctx.size
    return Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let queue = try grdbQueue(dir.appendingPathComponent("load.sqlite").path)
        defer { try? queue.close() }
        try queue.inDatabase { db in
            try db.execute(sql: """
                CREATE TABLE p(id INTEGER PRIMARY KEY, i0 INTEGER NOT NULL, i1 INTEGER NOT NULL, \
                i2 INTEGER NOT NULL, i3 INTEGER NOT NULL, i4 INTEGER NOT NULL, i5 INTEGER NOT NULL, \
                i6 INTEGER NOT NULL, i7 INTEGER NOT NULL, i8 INTEGER NOT NULL, i9 INTEGER NOT NULL)
                """)
        }
        let ms = try measure {
            try queue.inTransaction { db in
                for i in 0..<n { try GRDBPkItem(id: scatteredId(i, n), v: scatteredId(i, n)).insert(db) }
                return .commit
            }
        }
        let (sum, count) = try queue.read { db in
            (try Int64.fetchOne(db, sql: "SELECT SUM(i0+i1+i2+i3+i4+i5+i6+i7+i8+i9) FROM p") ?? 0,
             try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM p") ?? 0)
        }
        if count != Int64(n) { return Sample(ms: ms, check: Check(what: "row count", got: count, want: Int64(n))) }
        return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: upsertWant(n, delta: 0)))
    })
}
