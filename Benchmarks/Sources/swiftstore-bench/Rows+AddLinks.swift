// add.sequence.links.50k: `realm.add` of a sequence of 50k new objects that each link one of
// 1k existing owners and hold a List of 3 Ints, against GRDB inserting the same records: a
// foreign-key column to the owners' table and a child table for the list items (a row per item:
// the item's id, its position and its value, keyed by the first two), in one transaction.
//
// Both sides start each repetition from a new file holding the 1k owners (ids 0 ..< 1000, made
// untimed). Timed: making the 50k objects (records) and adding (inserting) them in one write
// transaction, committed durably. Object r has n = r, the owner r mod 1000 and the list
// [r, r + 1, r + 2].

import Foundation
import GRDB
import SwiftStore

/// The owners the objects link to.
final class LinkOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

/// An object with a link and a List.
final class LinkedItem: Object {
    @Persisted var n = 0
    @Persisted var owner: LinkOwner?
    @Persisted var values: List<Int>
}

private let linkOwners = 1_000

func addSequenceLinksRow() -> Row {
    Row(
        id: "add.sequence.links.50k", size: 50_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: swiftstoreAddLinked,
        peerSide: grdbInsertLinked)
}

/// What both sides check: sum over objects of n + owner id + the 3 list values, and the count.
private func linkedWant(_ n: Int) -> Int64 {
    var s: Int64 = 0
    for r in 0..<n { s += Int64(r) + Int64(r % linkOwners) + Int64(3 * r + 3) }
    return s
}

private func linkedConfiguration(_ url: URL) -> Realm.Configuration {
    Realm.Configuration(fileURL: url, objectTypes: [LinkOwner.self, LinkedItem.self])
}

/// One repetition's SwiftStore work: the owners (untimed), then the timed write. The Realm is
/// released when this returns.
@inline(never)
private func timedAddLinked(_ url: URL, count n: Int) throws -> Double {
    let realm = try Realm(configuration: linkedConfiguration(url))
    try realm.write {
        for id in 0..<linkOwners {
            let o = LinkOwner()
            o.id = id
            o.name = "owner \(id)"
            realm.add(o)
        }
    }
    let owners = Array(realm.objects(LinkOwner.self).sorted(byKeyPath: "id"))
    return try measure {
        try realm.write {
            realm.add((0..<n).map { r in
                let o = LinkedItem()
                o.n = r
                o.owner = owners[r % linkOwners]
                o.values.append(objectsIn: [r, r + 1, r + 2])
                return o
            })
        }
    }
}

@inline(never)
private func sumLinked(_ url: URL) throws -> (sum: Int64, count: Int64) {
    let realm = try Realm(configuration: linkedConfiguration(url))
    var sum: Int64 = 0, count: Int64 = 0
    for o in realm.objects(LinkedItem.self) {
        sum &+= Int64(o.n) &+ Int64(o.owner?.id ?? -1_000_000)
        for v in o.values { sum &+= Int64(v) }
        count += 1
    }
    return (sum, count)
}

func swiftstoreAddLinked(_ ctx: RowContext) throws -> Runner {
    let want = linkedWant(ctx.size)
    return Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let url = dir.appendingPathComponent("bench.realm")
        let ms = try timedAddLinked(url, count: ctx.size)
        let (sum, count) = try sumLinked(url)
        if count != Int64(ctx.size) {
            return Sample(ms: ms, check: Check(what: "object count", got: count, want: Int64(ctx.size)))
        }
        return Sample(ms: ms, check: Check(what: "sum of n, owner ids and list values", got: sum, want: want))
    })
}

/// The GRDB records: an item with its owner's id, and a list item.
struct GRDBLinkedItem: PersistableRecord {
    static let databaseTableName = "item"
    var id: Int
    var n: Int
    var ownerId: Int

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["n"] = n
        container["owner_id"] = ownerId
    }
}

struct GRDBLinkedValue: PersistableRecord {
    static let databaseTableName = "item_value"
    var itemId: Int
    var idx: Int
    var value: Int

    func encode(to container: inout PersistenceContainer) {
        container["item_id"] = itemId
        container["idx"] = idx
        container["value"] = value
    }
}

/// GRDB: the tables and the owners (untimed), then one `inTransaction` making and inserting
/// each item record and its 3 value records (GRDB checks the foreign keys: it enables them).
func grdbInsertLinked(_ ctx: RowContext) throws -> Runner {
    let want = linkedWant(ctx.size)
    return Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let path = dir.appendingPathComponent("bench.sqlite").path
        let n = ctx.size
        let queue = try grdbQueue(path)
        try queue.inDatabase { db in
            try db.execute(sql: """
                CREATE TABLE owner(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE item(id INTEGER PRIMARY KEY, n INTEGER NOT NULL, \
                owner_id INTEGER REFERENCES owner(id));
                CREATE TABLE item_value(item_id INTEGER NOT NULL REFERENCES item(id), \
                idx INTEGER NOT NULL, value INTEGER NOT NULL, PRIMARY KEY(item_id, idx)) WITHOUT ROWID;
                """)
        }
        try queue.inTransaction { db in
            for id in 0..<linkOwners {
                try db.execute(sql: "INSERT INTO owner(id, name) VALUES (?, ?)", arguments: [id, "owner \(id)"])
            }
            return .commit
        }
        let ms = try measure {
            try queue.inTransaction { db in
                for r in 0..<n {
                    try GRDBLinkedItem(id: r + 1, n: r, ownerId: r % linkOwners).insert(db)
                    for k in 0..<3 { try GRDBLinkedValue(itemId: r + 1, idx: k, value: r + k).insert(db) }
                }
                return .commit
            }
        }
        let (sum, count) = try queue.read { db in
            let s = try Int64.fetchOne(db, sql: """
                SELECT (SELECT SUM(n + owner_id) FROM item JOIN owner ON owner.id = item.owner_id) \
                + (SELECT SUM(value) FROM item_value)
                """) ?? 0
            let c = try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM item") ?? 0
            return (s, c)
        }
        try queue.close()
        if count != Int64(n) {
            return Sample(ms: ms, check: Check(what: "record count", got: count, want: Int64(n)))
        }
        return Sample(ms: ms, check: Check(what: "sum of n, owner ids and list values", got: sum, want: want))
    })
}
