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
