import Foundation
import Testing
@testable import SwiftStore

/// Misuse traps with a RealmSwift-like message, as RealmSwift raises an exception; each case
/// runs in a child process (Swift Testing exit tests).
@Suite struct PreconditionTests {
    @Test func writingOutsideAWriteTransactionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.add(Dog()) }
            realm.objects(Dog.self).first!.name = "x"
        }
        expectMessage(result, "Cannot modify managed objects outside of a write transaction.")
    }

    @Test func addingOutsideAWriteTransactionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            realm.add(Dog())
        }
        expectMessage(result, "Cannot add objects to a Realm outside of a write transaction.")
    }

    @Test func usingAnObjectOnAnotherThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.add(Dog()) }
            let dog = UncheckedBox(realm.objects(Dog.self).first!)
            onNewThread { _ = dog.value.name }
        }
        expectMessage(result, "Realm accessed from incorrect thread.")
    }

    @Test func addingAnObjectOfAnotherRealmTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let a = try! Realm(configuration: dir.config(objectModels, file: "a.realm"))
            let b = try! Realm(configuration: dir.config(objectModels, file: "b.realm"))
            let dog = Dog()
            try! a.write { a.add(dog) }
            try! b.write { b.add(dog) }
        }
        expectMessage(result, "Object is already managed by another Realm.")
    }

    @Test func aDuplicatePrimaryKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write {
                realm.add(Person(name: "Ann", age: 1))
                realm.add(Person(name: "Ann", age: 2))
            }
        }
        expectMessage(result, "Attempting to create an object of type 'Person' with an existing primary key value 'Ann'.")
    }

    /// `.modified`/`.all` on a class without a primary key traps with RealmSwift's message, for
    /// `add` of an object, of an array and of another sequence, and for `create`.
    @Test func addWithAnUpdatePolicyWithoutAPrimaryKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.add(Dog(), update: .modified) }
        }
        expectMessage(result, "'Dog' does not have a primary key and can not be updated")
    }

    @Test func addOfAnArrayWithAnUpdatePolicyWithoutAPrimaryKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.add([Person(name: "Ann", age: 1), Dog()] as [Object], update: .all) }
        }
        expectMessage(result, "'Dog' does not have a primary key and can not be updated")
    }

    @Test func addOfASequenceWithAnUpdatePolicyWithoutAPrimaryKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.add((0..<2).lazy.map { _ in Dog() }, update: .modified) }
        }
        expectMessage(result, "'Dog' does not have a primary key and can not be updated")
    }

    @Test func createWithAnUpdatePolicyWithoutAPrimaryKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.create(Dog.self, value: ["name": "Rex"], update: .all) }
        }
        expectMessage(result, "'Dog' does not have a primary key and can not be updated")
    }

    /// The same with an Int primary key that is the object key and has no index (docs/FORMAT.md
    /// §6.1): the cluster key is the uniqueness check.
    @Test func aDuplicateIntPrimaryKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([KeyedItem.self]))
            try! realm.write {
                realm.add(KeyedItem(value: ["id": 41, "name": "a"]))
                realm.add(KeyedItem(value: ["id": 41, "name": "b"]))
            }
        }
        expectMessage(result, "Attempting to create an object of type 'KeyedItem' with an existing primary key value '41'.")
    }

    @Test func changingAPrimaryKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            let ann = Person(name: "Ann", age: 1)
            try! realm.write { realm.add(ann) }
            try! realm.write { ann.name = "Bob" }
        }
        expectMessage(result, "Primary key can't be changed after an object is inserted.")
    }

    @Test func readingADeletedObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            let dog = Dog()
            try! realm.write { realm.add(dog) }
            try! realm.write { realm.delete(dog) }
            _ = dog.name
        }
        expectMessage(result, "Object has been deleted or invalidated.")
    }

    @Test func aClassOutsideTheSchemaTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([Dog.self, Person.self, Address.self]))
            _ = realm.objects(AllTypes.self)
        }
        expectMessage(result, "Object type 'AllTypes' is not managed by the Realm.")
    }

    @Test func nestedWriteTransactionsTrap() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            realm.beginWrite()
            realm.beginWrite()
        }
        expectMessage(result, "The Realm is already in a write transaction")
    }

    @Test func addingAnEmbeddedObjectAloneTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            realm.beginWrite()
            realm.create(Person.self, value: ["name": "A", "address": ["street": "x"]])
            let address = realm.objects(Person.self).first!.address!
            realm.objects(Person.self).first!.pastAddresses.append(address)
        }
        expectMessage(result, "Cannot add an existing managed embedded object to a List.")
    }

    @Test func theSameCodeWithoutMisuseRuns() throws {
        // The control: every step the traps above misuse, done right, runs cleanly.
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        let ann = Person(name: "Ann", age: 1)
        try realm.write {
            realm.add(ann)
            realm.add(Dog())
        }
        try realm.write { ann.age = 2 }
        #expect(ann.age == 2)
    }
}

/// Checks that an exit test's standard error holds `message`.
func expectMessage(_ result: ExitTest.Result?, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(text.contains(message), "stderr was: \(text.suffix(400))", sourceLocation: sourceLocation)
}
