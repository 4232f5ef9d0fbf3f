import Foundation
import Testing
@testable import SwiftStore

@Suite struct WriteTests {
    @Test func writeCommitsAndAThrowCancels() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write { realm.add(Person(name: "Ann", age: 1)) }
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try realm.write {
                realm.add(Person(name: "Bob", age: 2))
                realm.objects(Person.self).first!.age = 99
                throw Stop()
            }
        }
        #expect(!realm.isInWriteTransaction)
        #expect(realm.objects(Person.self).count == 1)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: "Ann")?.age == 1)
        let value = try realm.write { () -> Int in
            realm.add(Person(name: "Cy", age: 3))
            return 42
        }
        #expect(value == 42)
        #expect(realm.objects(Person.self).count == 2)
    }

    @Test func beginCommitAndCancel() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        #expect(!realm.isInWriteTransaction)
        realm.beginWrite()
        #expect(realm.isInWriteTransaction)
        let dog = Dog()
        realm.add(dog)
        dog.name = "Rex"
        try realm.commitWrite()
        #expect(!realm.isInWriteTransaction)
        realm.beginWrite()
        let other = Dog()
        realm.add(other)
        dog.name = "Changed"
        realm.cancelWrite()
        #expect(dog.name == "Rex")
        #expect(other.isInvalidated)
        #expect(realm.objects(Dog.self).count == 1)
    }

    @Test func addWithUpdatePolicies() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            realm.add(Person(value: ["name": "Ann", "age": 30, "address": ["street": "Main", "city": "Oslo"]]))
        }
        // .modified: only differing values are written; the same row stays.
        let update = Person(name: "Ann", age: 31)
        update.address = Address(value: ["street": "Side", "city": "Oslo"])
        try realm.write { realm.add(update, update: .modified) }
        #expect(realm.objects(Person.self).count == 1)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        #expect(ann.age == 31)
        #expect(ann.address?.street == "Side")
        #expect(update.realm != nil && update.isSameObject(as: ann))
        // .all writes every property, including defaults.
        try realm.write { realm.add(Person(name: "Ann", age: 0), update: .all) }
        #expect(ann.age == 0)
        #expect(ann.address == nil)
        #expect(realm.objects(Address.self).count == 0)
        // A sequence.
        try realm.write { realm.add([Person(name: "B", age: 1), Person(name: "C", age: 2)]) }
        #expect(realm.objects(Person.self).count == 3)
    }

    @Test func createFromValues() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        let ann = try realm.write {
            realm.create(Person.self, value: ["name": "Ann", "age": 5, "dogs": [["name": "Rex", "age": 2], ["name": "Fido"]]])
        }
        #expect(ann.realm != nil)
        #expect(ann.dogs.map(\.name) == ["Rex", "Fido"])
        #expect(ann.dogs[1].age == 0)
        // Update by primary key with only some values.
        try realm.write { realm.create(Person.self, value: ["name": "Ann", "age": 6], update: .modified) }
        #expect(ann.age == 6)
        #expect(ann.dogs.count == 2)
        // From an array in property order.
        let bob = try realm.write { realm.create(Person.self, value: ["Bob", 40]) }
        #expect(bob.name == "Bob" && bob.age == 40)
        // From another object (copied, even when it is managed).
        let copy = try realm.write { realm.create(Dog.self, value: ann.dogs[0]) }
        #expect(copy.name == "Rex")
        #expect(!copy.isSameObject(as: ann.dogs[0]))
        #expect(realm.objects(Dog.self).count == 3)
    }

    @Test func deleteObjectsSequencesAndAll() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            for i in 0..<10 { realm.add(Dog(value: ["name": "d\(i)", "age": i])) }
            realm.add(Person(value: ["name": "Ann", "dogs": [["name": "x"], ["name": "y"]]]))
        }
        let dogs = realm.objects(Dog.self)
        #expect(dogs.count == 12)
        let first = dogs[0]
        try realm.write { realm.delete(first) }
        #expect(first.isInvalidated)
        #expect(dogs.count == 11)
        try realm.write { realm.delete(Array(dogs.prefix(3))) }
        #expect(dogs.count == 8)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        try realm.write { realm.delete(ann.dogs) }
        #expect(dogs.count == 6)
        #expect(ann.dogs.isEmpty)
        try realm.write { realm.delete(realm.objects(Dog.self)) }
        #expect(dogs.isEmpty)
        try realm.write { realm.deleteAll() }
        #expect(realm.isEmpty)
    }

    @Test func embeddedObjectsAreDeletedWithTheirOwner() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            realm.add(Person(value: ["name": "Ann", "address": ["street": "a"],
                                     "pastAddresses": [["street": "b"], ["street": "c"]]]))
        }
        #expect(realm.objects(Address.self).count == 3)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        try realm.write { ann.address = Address(value: ["street": "d"]) }
        #expect(realm.objects(Address.self).count == 3)
        #expect(Set(realm.objects(Address.self).map(\.street)) == ["b", "c", "d"])
        try realm.write { realm.delete(ann) }
        #expect(realm.objects(Address.self).count == 0)
    }

    @Test func anotherThreadsCommitIsSeenAfterRefresh() async throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        let realm = try Realm(configuration: config, queue: nil)
        let people = realm.objects(Person.self)
        #expect(people.count == 0)
        onNewThread {
            let other = try! Realm(configuration: config)
            try! other.write { other.add(Person(name: "FromThread", age: 7)) }
        }
        #expect(people.count == 0)
        #expect(realm.refresh())
        #expect(people.count == 1)
        #expect(people.first?.name == "FromThread")
        #expect(!realm.refresh())
    }

    @Test func anotherProcessCommitIsSeenAfterRefresh() throws {
        let dir = TempDir()
        let config = Realm.Configuration(fileURL: dir.file(), objectTypes: [ProcPerson.self])
        let realm = try Realm(configuration: config)
        let people = realm.objects(ProcPerson.self)
        #expect(people.isEmpty)
        let r = try ChildProcess.run(["add", dir.file().path, "Zed", "44"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(people.isEmpty)
        realm.refresh()
        #expect(people.count == 1)
        #expect(realm.object(ofType: ProcPerson.self, forPrimaryKey: "Zed")?.age == 44)
        // And a write begun here starts on the newest version too.
        let r2 = try ChildProcess.run(["add", dir.file().path, "Yan", "45"], in: dir)
        #expect(r2.status == 0, "\(r2.stderr)")
        try realm.write { realm.add(ProcPerson(value: ["name": "Xi", "age": 46])) }
        #expect(people.count == 3)
        let c = try ChildProcess.run(["count", dir.file().path], in: dir)
        #expect(c.stdout == "3")
    }

    @Test func instancesAreCachedPerThread() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        let a = try Realm(configuration: config)
        let b = try Realm(configuration: config)
        #expect(a == b)
        let box = UncheckedBox<Realm?>(nil)
        onNewThread { box.value = try? Realm(configuration: config) }
        #expect(box.value != nil)
        #expect(box.value! != a)
    }

    @Test func invalidateEndsTheReadAndInvalidatesObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write { realm.add(Person(name: "Ann", age: 1)) }
        let ann = try #require(realm.objects(Person.self).first)
        realm.invalidate()
        #expect(ann.isInvalidated)
        #expect(realm.objects(Person.self).first?.name == "Ann")
    }

    @Test func defaultSchemaIsEveryModelClassInTheProcess() throws {
        let dir = TempDir()
        let r = try ChildProcess.run(["default-schema", dir.file().path], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "ProcAddress,ProcDog,ProcKennel,ProcPerson Ann Oslo 1")
    }
}

/// The shared model of the multi-process tests (the child declares the same class).
final class ProcPerson: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
}

/// Runs `body` on a new thread and waits for it.
func onNewThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    Thread { body(); done.signal() }.start()
    done.wait()
}

/// Carries a value out of a thread in a test.
final class UncheckedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

@Suite struct DynamicEmbeddedTests {
    /// A migration creates objects through the dynamic API: an embedded object given as a
    /// dictionary keeps its values, in a single link and in a list.
    @Test func migrationCreatesEmbeddedObjectsFromDictionaries() throws {
        let dir = TempDir()
        do { _ = try Realm(configuration: dir.config(objectModels)) }
        var config = dir.config(objectModels, version: 1)
        config.migrationBlock = { migration, _ in
            migration.create("Person", value: ["name": "Mig", "address": ["street": "Main", "city": "Oslo"]])
        }
        let realm = try Realm(configuration: config)
        let p = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Mig"))
        #expect(p.address?.street == "Main")
        #expect(p.address?.city == "Oslo")
    }
}
