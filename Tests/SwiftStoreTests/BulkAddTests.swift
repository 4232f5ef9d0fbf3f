import Foundation
import Testing
@testable import SwiftStore

/// `realm.add` of a sequence creates runs of new plain-value objects in one batch
/// (docs/ARCHITECTURE.md, Bulk creation with primary keys and indexes): every test adds the same
/// objects object by object into a second Realm and expects the same contents.
final class BulkItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted(indexed: true) var tag = 0
    @Persisted var when: Date?
    @Persisted var score = 0.0
    @Persisted var blob: Data?
}

final class BulkNamed: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted(indexed: true) var tag = 0
}

final class BulkPlain: Object {
    @Persisted(indexed: true) var tag = 0
    @Persisted var label = ""
}

final class BulkHolder: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var items: List<BulkPlain>
}

private let bulkTypes: [ObjectBase.Type] = [BulkItem.self, BulkNamed.self, BulkPlain.self, BulkHolder.self]

private func item(_ id: Int, _ rng: inout SeededRNG) -> BulkItem {
    let o = BulkItem()
    o.id = id
    o.name = id % 7 == 0 ? "" : "n\(id)"
    o.tag = Int.random(in: 0..<10, using: &rng)
    o.when = id % 3 == 0 || abs(id) > 1_000_000 ? nil : Date(timeIntervalSince1970: Double(id) * 1.5)
    o.score = Double(id % 1_000_000) / 8
    o.blob = id % 5 == 0 ? Data([UInt8(id & 0xff), 1, 2]) : nil
    return o
}

private func dump(_ realm: Realm) -> [String] {
    var out: [String] = []
    for o in realm.objects(BulkItem.self).sorted(byKeyPath: "id") {
        out.append("item \(o.id) \(o.name) \(o.tag) \(String(describing: o.when)) \(o.score) \(String(describing: o.blob))")
    }
    for o in realm.objects(BulkNamed.self).sorted(byKeyPath: "name") { out.append("named \(o.name) \(o.tag)") }
    for o in realm.objects(BulkPlain.self) { out.append("plain \(o.tag) \(o.label)") }
    for o in realm.objects(BulkHolder.self) { out.append("holder \(o.id) \(o.items.map(\.tag))") }
    for t in 0..<10 {
        out.append("tag \(t): \(realm.objects(BulkItem.self).filter("tag == %@", t).count) "
                   + "\(realm.objects(BulkNamed.self).filter("tag == %@", t).count) \(realm.objects(BulkPlain.self).filter("tag == %@", t).count)")
    }
    return out
}

/// Runs `body` once adding sequences with `add(_:update:)` of the sequence and once adding each
/// object alone, and expects the same contents.
private func expectSameAsOneByOne(_ body: (_ realm: Realm, _ add: ([Object], Realm.UpdatePolicy) -> Void) throws -> Void,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
    var dumps: [[String]] = []
    for batched in [true, false] {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(bulkTypes))
        try body(realm) { objects, policy in
            if batched { realm.add(objects, update: policy) } else { for o in objects { realm.add(o, update: policy) } }
        }
        dumps.append(dump(realm))
        #expect((realm.core.batchedAdds > 0) == batched, "batches made: \(realm.core.batchedAdds)", sourceLocation: sourceLocation)
        let again = try Realm(configuration: dir.config(bulkTypes))
        #expect(dump(again) == dumps.last!, "after reopening", sourceLocation: sourceLocation)
    }
    #expect(dumps[0] == dumps[1], sourceLocation: sourceLocation)
    #expect(dumps[0].count > 10, sourceLocation: sourceLocation)
}

private func plainItem(_ id: Int) -> BulkItem {
    let o = BulkItem()
    o.id = id
    o.name = "n\(id)"
    o.tag = id % 10
    return o
}

@Suite struct BulkAddTests {
    /// Observers of the class see the same change set from another thread's batched add as from
    /// its single adds: the insertions at their exact positions, and an upserted object as a
    /// modification.
    @Test func notificationsSeeTheSameChanges() throws {
        var seen: [[Seen?]] = []
        for batched in [true, false] {
            let f = try Fixture(models: bulkTypes)
            let all = Events<Seen>(), sorted = Events<Seen>()
            try f.run { realm in
                try realm.write { for id in [10, 20, 30] { realm.add(plainItem(id)) } }
                f.tokens.append(realm.objects(BulkItem.self).observe { all.add(Seen($0)) })
                f.tokens.append(realm.objects(BulkItem.self).sorted(byKeyPath: "name", ascending: false).observe { sorted.add(Seen($0)) })
            }
            var got = [all.next(), sorted.next()]
            f.writeElsewhere { r in
                let objects = [25, 5, 20, 35, 15, 31].map { plainItem($0) }
                objects[2].tag = 7 // 20 exists: updated
                if batched { r.add(objects, update: .modified) } else { for o in objects { r.add(o, update: .modified) } }
            }
            got.append(all.next())
            got.append(sorted.next())
            seen.append(got)
            try f.finish()
        }
        #expect(seen[0] == seen[1])
        // key order (the keys are the ids): 5 10 15 20 25 30 31 35; a modification is at its
        // index before the write (20 was at 1)
        #expect(seen[0][2] == Seen(count: 8, ins: [0, 2, 4, 6, 7], mod: [1]))
        // names descending: n5 n35 n31 n30 n25 n20 n15 n10 (n20 was at 1 of n30 n20 n10)
        #expect(seen[0][3] == Seen(count: 8, ins: [0, 1, 2, 4, 6], mod: [1]))
    }

    /// Int primary keys in random order into an empty table, then into the same table around
    /// and between its keys; the added objects are managed and read their values.
    @Test func intPrimaryKeysInRandomOrder() throws {
        try expectSameAsOneByOne { realm, add in
            var rng = SeededRNG(seed: 3)
            let first = (0..<3000).shuffled(using: &rng).map { item($0 * 2, &rng) }
            try realm.write { add(first, .error) }
            #expect(first.allSatisfy { $0.realm != nil && !$0.isInvalidated })
            #expect(first[10].name == (first[10].id % 7 == 0 ? "" : "n\(first[10].id)"))
            let second = ((0..<3000).map { $0 * 2 + 1 } + [-4, Int.max]).shuffled(using: &rng).map { item($0, &rng) }
            try realm.write { add(second, .error) }
            #expect(realm.object(ofType: BulkItem.self, forPrimaryKey: 2001)?.score == 2001.0 / 8)
            try realm.write { second[5].tag = 42 }
            #expect(realm.objects(BulkItem.self).filter("tag == 42").count == 1)
        }
    }

    /// String primary keys and indexed columns with no primary key.
    @Test func stringPrimaryKeysAndIndexedColumns() throws {
        try expectSameAsOneByOne { realm, add in
            var rng = SeededRNG(seed: 4)
            let named: [Object] = (0..<800).shuffled(using: &rng).map { i in
                let o = BulkNamed()
                o.name = "k\(i * 7919 % 800)"
                o.tag = i % 10
                return o
            }
            var plain: [Object] = (0..<900).map { i in
                let o = BulkPlain()
                o.tag = (i * 7) % 10
                o.label = "p\(i)"
                return o
            }
            plain.insert(plain[3], at: 10) // the same instance twice: added once
            try realm.write {
                add(named, .error)
                add(plain, .error)
            }
            #expect(realm.objects(BulkPlain.self).count == 900)
        }
    }

    /// `.modified` and `.all`: objects whose primary key exists update them, new ones are
    /// created, and a primary key twice in the sequence creates then updates, in sequence order.
    @Test func upsertsMixUpdatesAndCreates() throws {
        try expectSameAsOneByOne { realm, add in
            var rng = SeededRNG(seed: 5)
            try realm.write { add((0..<500).map { item($0 * 3, &rng) }, .error) }
            for policy in [Realm.UpdatePolicy.modified, .all] {
                var objects = (0..<1200).shuffled(using: &rng).map { item($0, &rng) }
                let twice = item(2000, &rng)
                twice.name = "second"
                objects.insert(item(2000, &rng), at: 100)
                objects.append(twice)
                try realm.write { add(objects, policy) }
                #expect(realm.object(ofType: BulkItem.self, forPrimaryKey: 2000)?.name == "second")
            }
        }
    }

    /// A sequence mixing batchable objects, objects with a list, and objects already managed.
    @Test func mixedSequencesKeepTheirOrder() throws {
        try expectSameAsOneByOne { realm, add in
            var rng = SeededRNG(seed: 6)
            let managed = item(10_000, &rng)
            try realm.write { realm.add(managed) }
            var objects: [Object] = []
            for i in 0..<300 {
                objects.append(item(i, &rng))
                if i % 50 == 0 {
                    let h = BulkHolder()
                    h.id = i
                    let p = BulkPlain()
                    p.tag = i % 10
                    h.items.append(p)
                    objects.append(h)
                    objects.append(managed)
                }
            }
            try realm.write { add(objects, .error) }
        }
    }
}
