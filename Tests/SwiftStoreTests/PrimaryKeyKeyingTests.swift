import Foundation
import Testing
@testable import SwiftStore

/// A class whose Int primary keys are its object keys (docs/ARCHITECTURE.md, Primary keys as
/// object keys).
final class KeyedItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

@Suite struct PrimaryKeyKeyingSwiftTests {
    /// Present, absent, negative and huge primary keys through add, create and lookups.
    @Test func lookupsOfEveryKindOfIntPrimaryKey() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([KeyedItem.self]))
        let ids = [7, 0, -5, Int.max, Int.min, 1 << 61, (1 << 61) - 1, 123_456_789]
        try realm.write {
            for id in ids { realm.add(KeyedItem(value: ["id": id, "name": "n\(id)"])) }
        }
        for id in ids { #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: id)?.name == "n\(id)") }
        for id in [1, 8, -1, Int.max - 1, (1 << 61) + 1] {
            #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: id) == nil, "absent \(id)")
        }
        // upserts by primary key reach the same objects
        try realm.write {
            realm.create(KeyedItem.self, value: ["id": 7, "name": "seven"], update: .modified)
            realm.add(KeyedItem(value: ["id": -5, "name": "minus five"]), update: .all)
            realm.create(KeyedItem.self, value: ["id": 8, "name": "eight"], update: .modified)
        }
        #expect(realm.objects(KeyedItem.self).count == ids.count + 1)
        #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: 7)?.name == "seven")
        #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: -5)?.name == "minus five")
        #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: 8)?.name == "eight")
    }

    /// Deleting an object and adding one with the same primary key: the old accessor stays
    /// invalidated, the lookup finds the new object, and a notification sees a delete and an
    /// insert rather than a modification.
    @Test func aDeletedAndReaddedPrimaryKeyIsANewObject() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([KeyedItem.self]))
        try realm.write { for id in 1...3 { realm.add(KeyedItem(value: ["id": id, "name": "old\(id)"])) } }
        let old = realm.object(ofType: KeyedItem.self, forPrimaryKey: 2)!
        try realm.write { realm.delete(old) }
        #expect(old.isInvalidated)
        try realm.write { realm.add(KeyedItem(value: ["id": 2, "name": "new"])) }
        #expect(old.isInvalidated, "the deleted object's accessor does not come back with the new 2")
        let found = realm.object(ofType: KeyedItem.self, forPrimaryKey: 2)
        #expect(found?.name == "new")
        #expect(!(found?.isSameObject(as: old) ?? true))
        #expect(Set(realm.objects(KeyedItem.self).map(\.id)) == [1, 2, 3])
        // after reopening, the same
        let again = try Realm(configuration: dir.config([KeyedItem.self]))
        #expect(again.object(ofType: KeyedItem.self, forPrimaryKey: 2)?.name == "new")
    }

    /// A new class with an Int primary key keeps no index of it (docs/FORMAT.md §6.1): queries on
    /// the primary key (==, IN, ranges), sorting by it and a collection observer's change sets
    /// answer as a scan of another property holding the same values does, before and after the
    /// first counter key (a re-added deleted id, a negative id) brings the index back.
    @Test func queriesSortingAndNotificationsOnAnUnindexedPrimaryKey() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([KeyedItem.self]))
        let n = 2000
        try realm.write {
            for i in 0..<n { let id = (i * 7919) % n; realm.add(KeyedItem(value: ["id": id, "name": "\(id)"])) }
        }
        func check(_ phase: String) {
            let all = Array(realm.objects(KeyedItem.self))
            func ids(_ pred: (Int) -> Bool) -> [Int] { all.map(\.id).filter(pred).sorted() }
            let cases: [(String, (Int) -> Bool)] = [
                ("id == 5", { $0 == 5 }), ("id == -5", { $0 == -5 }), ("id IN {1, 99, 1999, 4000, -5}", { [1, 99, 1999, -5].contains($0) }),
                ("id < 10", { $0 < 10 }), ("id >= 1990", { $0 >= 1990 }), ("id BETWEEN {100, 120}", { (100...120).contains($0) }),
                ("id > 500 AND id <= 510", { $0 > 500 && $0 <= 510 }),
            ]
            for (q, pred) in cases {
                #expect(realm.objects(KeyedItem.self).filter(q).map(\.id).sorted() == ids(pred), "\(phase): \(q)")
            }
            let sorted = realm.objects(KeyedItem.self).filter("id >= 1000").sorted(byKeyPath: "id", ascending: false).map(\.id)
            #expect(Array(sorted) == ids { $0 >= 1000 }.reversed(), "\(phase): sorted")
            for id in [0, 1234, 1999] { #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: id)?.name == "\(id)", "\(phase): \(id)") }
        }
        check("no index")
        let events = Events<Seen>()
        let token = realm.objects(KeyedItem.self).filter("id > 1990").observe(on: DispatchQueue(label: "unindexed-pk")) {
            events.add(Seen($0))
        }
        #expect(events.next() == Seen(initial: true, count: 9))
        try realm.write {
            realm.delete(realm.object(ofType: KeyedItem.self, forPrimaryKey: 1995)!)
            realm.add(KeyedItem(value: ["id": 5000, "name": "5000"]))
        }
        #expect(events.next() == Seen(count: 9, del: [4], ins: [8]), "1995 deleted, 5000 added")
        token.invalidate()
        try realm.write {
            realm.add(KeyedItem(value: ["id": 1995, "name": "1995"])) // a retired key: a counter key
            realm.add(KeyedItem(value: ["id": -5, "name": "-5"]))
        }
        check("index back")
        let again = try Realm(configuration: dir.config([KeyedItem.self]))
        #expect(again.objects(KeyedItem.self).filter("id IN {1995, -5, 5000}").count == 3)
    }

    /// A migration turns primary keys off and on: objects keep their keys and stay found.
    @Test func aMigrationKeepsLookupsWorking() throws {
        let dir = TempDir()
        do {
            let realm = try Realm(configuration: dir.config([KeyedItem.self]))
            try realm.write { for id in 1...50 { realm.add(KeyedItem(value: ["id": id, "name": "v\(id)"])) } }
        }
        var config = dir.config([KeyedItem.self], version: 1)
        config.migrationBlock = { migration, _ in
            migration.enumerateObjects(ofType: "KeyedItem") { _, new in
                guard let new, let id = new["id"] as? Int, id % 10 == 0 else { return }
                new["id"] = id + 1000
            }
        }
        let realm = try Realm(configuration: config)
        for id in 1...50 {
            let want = id % 10 == 0 ? nil : "v\(id)"
            #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: id)?.name == want, "\(id)")
        }
        for id in [1010, 1020, 1050] { #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: id)?.name == "v\(id - 1000)") }
        try realm.write { realm.add(KeyedItem(value: ["id": 10, "name": "ten"])) }
        #expect(realm.object(ofType: KeyedItem.self, forPrimaryKey: 10)?.name == "ten")
        #expect(realm.objects(KeyedItem.self).count == 51)
    }
}
