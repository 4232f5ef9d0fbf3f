// Objects as RealmSwift defines them: init(value:) from dictionaries, arrays and objects
// (nested values become links, embedded objects and lists); realm, objectSchema,
// isInvalidated, isSameObject, equality and hashing, description; key-value coding on
// unmanaged and managed objects; embedded objects' ownership; links and LinkingObjects as
// objects are deleted; the dynamic API.
import Foundation
import Testing
@testable import SwiftStore

/// Embedded objects as map values.
final class ObjAddressBook: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var byName: Map<String, Address?>
}

private func openRealm(_ dir: TempDir) throws -> Realm {
    try Realm(configuration: dir.config(objectModels + [ObjAddressBook.self]))
}

/// Ann (30) owning Rex (3) and Fido (5), added to `realm`.
@discardableResult
private func addAnnWithDogs(_ realm: Realm) throws -> Person {
    let ann = Person(name: "Ann", age: 30)
    ann.dogs.append(Dog(value: ["name": "Rex", "age": 3]))
    ann.dogs.append(Dog(value: ["name": "Fido", "age": 5]))
    try realm.write { realm.add(ann) }
    return ann
}

@Suite struct ObjectTests {
    // MARK: init(value:)

    @Test func initFromDictionary() {
        let dog = Dog(value: ["name": "Rex", "age": 3])
        #expect(dog.name == "Rex")
        #expect(dog.age == 3)
        #expect(dog.owner == nil)
        #expect(dog.realm == nil)
        #expect(!dog.isInvalidated)
    }

    @Test func initFromDictionaryLeavesOtherPropertiesAtTheirDefaults() {
        let p = Person(value: ["name": "Ann"])
        #expect(p.name == "Ann")
        #expect(p.age == 0)
        #expect(p.dogs.isEmpty && p.favorites.isEmpty && p.dogsByName.isEmpty)
        #expect(p.address == nil && p.bestFriend == nil)
    }

    @Test func initFromDictionaryWithNSNullMeansNil() {
        let o = AllTypes(value: ["id": 1, "optInt": NSNull(), "optString": NSNull()])
        #expect(o.id == 1)
        #expect(o.optInt == nil)
        #expect(o.optString == nil)
    }

    @Test func initFromArrayInPropertyOrder() {
        let dog = Dog(value: ["Rex", 3])
        #expect(dog.name == "Rex")
        #expect(dog.age == 3)
        #expect(dog.owner == nil)
        let p = Person(value: ["Ann", 30, [["Rex", 2], ["name": "Fido"]]])
        #expect(p.name == "Ann" && p.age == 30)
        #expect(p.dogs.map(\.name) == ["Rex", "Fido"])
        #expect(p.dogs[0].age == 2)
    }

    @Test func initFromAnotherObject() {
        let src = Person(name: "Ann", age: 30)
        src.dogs.append(Dog(value: ["name": "Rex"]))
        src.address = Address(value: ["street": "Main", "city": "Oslo"])
        let copy = Person(value: src)
        #expect(copy !== src)
        #expect(copy.name == "Ann" && copy.age == 30)
        #expect(copy.dogs.map(\.name) == ["Rex"])
        #expect(copy.address?.city == "Oslo")
        #expect(copy.realm == nil)
    }

    /// RealmSwift copies a collection into the new object's own List (it empties its list and
    /// adds the values), so the two objects do not share one list.
    @Test func initFromAnotherObjectGivesTheCopyItsOwnLists() {
        let src = Person(name: "Ann", age: 30)
        src.dogs.append(Dog(value: ["name": "Rex"]))
        src.favorites.insert(src.dogs[0])
        let copy = Person(value: src)
        copy.dogs.append(Dog(value: ["name": "Fido"]))
        copy.favorites.removeAll()
        #expect(src.dogs.map(\.name) == ["Rex"])
        #expect(src.favorites.count == 1)
        #expect(copy.dogs.count == 2)
        #expect(src.dogs !== copy.dogs)
    }

    @Test func initFromDictionaryCopiesAListValue() {
        let dogs = List<Dog>()
        dogs.append(Dog(value: ["name": "Rex"]))
        let p = Person(value: ["name": "Ann", "dogs": dogs])
        p.dogs.append(Dog(value: ["name": "Fido"]))
        #expect(dogs.count == 1)
        #expect(p.dogs.count == 2)
    }

    @Test func initFromManagedObjectIsUnmanaged() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = try addAnnWithDogs(realm)
        let copy = Person(value: ann)
        #expect(copy.realm == nil)
        #expect(copy.name == "Ann" && copy.age == 30)
        #expect(copy.dogs.map(\.name) == ["Rex", "Fido"])
    }

    @Test func nestedDictionariesBecomeLinkedAndEmbeddedObjects() throws {
        let value: [String: Any] = [
            "name": "Ann", "age": 30,
            "dogs": [["name": "Rex", "age": 3], ["name": "Fido", "age": 5]],
            "favorites": [["name": "Bella"]],
            "dogsByName": ["max": ["name": "Max", "age": 1]],
            "address": ["street": "Main St", "city": "Oslo"],
            "pastAddresses": [["street": "Old St", "city": "Bergen"], ["Elm St", "Tromsø"]],
            "bestFriend": ["name": "Bob", "age": 40],
        ]
        let ann = Person(value: value)
        #expect(ann.dogs.map(\.name) == ["Rex", "Fido"])
        #expect(ann.dogs.map(\.age) == [3, 5])
        #expect(ann.favorites.first?.name == "Bella")
        #expect(ann.dogsByName["max"]??.name == "Max")
        #expect(ann.address?.street == "Main St")
        #expect(ann.pastAddresses.map(\.city) == ["Bergen", "Tromsø"])
        #expect(ann.bestFriend?.name == "Bob")
        #expect(ann.bestFriend?.age == 40)

        let dir = TempDir()
        let realm = try openRealm(dir)
        try realm.write { realm.add(ann) }
        #expect(realm.objects(Person.self).count == 2)
        #expect(realm.objects(Dog.self).count == 4)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: "Bob")?.age == 40)
        #expect(ann.address?.realm != nil)
        #expect(ann.pastAddresses[1].street == "Elm St")
        #expect(ann.dogsByName["max"]??.realm != nil)
    }

    @Test func createWithNestedValues() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = try realm.write {
            realm.create(Person.self, value: [
                "name": "Ann",
                "dogs": [["name": "Rex"]],
                "address": ["street": "Main St", "city": "Oslo"],
                "pastAddresses": [["street": "Old St"]],
            ])
        }
        #expect(ann.realm != nil)
        #expect(ann.dogs.first?.name == "Rex")
        #expect(ann.dogs.first?.realm != nil)
        #expect(ann.address?.city == "Oslo")
        #expect(ann.pastAddresses.first?.street == "Old St")
        #expect(realm.objects(Dog.self).count == 1)
    }

    /// RealmSwift reads the values of the schema's properties from the dictionary and ignores
    /// other keys (JSON with extra fields is a common input).
    @Test func initFromDictionaryIgnoresUnknownKeys() async {
        await #expect(processExitsWith: .success) {
            let dog = Dog(value: ["name": "Rex", "age": 3, "color": "brown"])
            precondition(dog.name == "Rex" && dog.age == 3)
        }
    }

    @Test func createFromDictionaryIgnoresUnknownKeys() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir("createFromDictionaryIgnoresUnknownKeys")
            let realm = try! Realm(configuration: dir.config(objectModels))
            let dog = try! realm.write { realm.create(Dog.self, value: ["name": "Rex", "weight": 12]) }
            precondition(dog.name == "Rex")
        }
    }

    @Test func initFromArrayWithTooManyValuesTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = Dog(value: ["Rex", 3, NSNull(), "extra"])
        }
    }

    @Test func addWithUpdateModifiedOverwritesTheExistingObject() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = try addAnnWithDogs(realm)
        try realm.write {
            realm.add(Person(value: ["name": "Ann", "age": 31, "dogs": [["name": "X"]]]), update: .modified)
        }
        #expect(realm.objects(Person.self).count == 1)
        #expect(ann.age == 31)
        #expect(ann.dogs.map(\.name) == ["X"])
        #expect(realm.objects(Dog.self).count == 3, "the old dogs stay in the Realm")
    }

    @Test func createWithUpdateModifiedSetsOnlyTheGivenValues() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = try addAnnWithDogs(realm)
        let same = try realm.write { realm.create(Person.self, value: ["name": "Ann", "age": 32], update: .modified) }
        #expect(same == ann)
        #expect(ann.age == 32)
        #expect(ann.dogs.map(\.name) == ["Rex", "Fido"], "properties not given keep their values")
        #expect(realm.objects(Person.self).count == 1)
    }

    @Test func addingACycleOfLinks() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 1)
        let bob = Person(name: "Bob", age: 2)
        ann.bestFriend = bob
        bob.bestFriend = ann
        let solo = Person(name: "Solo", age: 3)
        solo.bestFriend = solo
        try realm.write {
            realm.add(ann)
            realm.add(solo)
        }
        #expect(realm.objects(Person.self).count == 3)
        #expect(bob.realm == realm)
        #expect(ann.bestFriend?.bestFriend?.name == "Ann")
        #expect(solo.bestFriend?.isSameObject(as: solo) == true)
    }

    // MARK: realm, objectSchema

    @Test func realmIsNilUntilManaged() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let dog = Dog()
        #expect(dog.realm == nil)
        try realm.write { realm.add(dog) }
        #expect(dog.realm == realm)
        #expect(realm.objects(Dog.self).first?.realm == realm)
    }

    @Test func objectSchemaDescribesTheClass() throws {
        let schema = Dog().objectSchema
        #expect(schema.className == "Dog")
        #expect(schema.primaryKeyProperty == nil)
        #expect(schema["name"]?.type == .string)
        #expect(schema["age"]?.isIndexed == true)
        #expect(schema["owner"]?.objectClassName == "Person")
        #expect(Person().objectSchema.primaryKeyProperty?.name == "name")

        let dir = TempDir()
        let realm = try openRealm(dir)
        let dog = Dog()
        try realm.write { realm.add(dog) }
        #expect(dog.objectSchema.className == "Dog")
        #expect(dog.objectSchema == schema)
    }

    /// RealmSwift's `ObjectSchema.properties` lists the persisted properties; LinkingObjects are
    /// computed properties and are not among them.
    @Test func objectSchemaPropertiesExcludeLinkingObjects() {
        #expect(Dog().objectSchema.properties.map(\.name) == ["name", "age", "owner"])
    }

    // MARK: isInvalidated

    @Test func deletedObjectsAreInvalidated() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let dog = Dog(value: ["name": "Rex"])
        #expect(!dog.isInvalidated)
        try realm.write { realm.add(dog) }
        let other = try #require(realm.objects(Dog.self).first)
        #expect(!dog.isInvalidated && !other.isInvalidated)
        try realm.write { realm.delete(dog) }
        #expect(dog.isInvalidated)
        #expect(other.isInvalidated)
        #expect(realm.objects(Dog.self).isEmpty)
        #expect(dog.description == "[invalid object]")
    }

    @Test func realmInvalidateInvalidatesObjects() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let dog = Dog(value: ["name": "Rex"])
        try realm.write { realm.add(dog) }
        realm.invalidate()
        #expect(dog.isInvalidated)
        #expect(realm.objects(Dog.self).first?.name == "Rex")
        #expect(realm.objects(Dog.self).first?.isInvalidated == false)
    }

    @Test func cancelledWriteInvalidatesObjectsAddedInIt() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let dog = Dog()
        realm.beginWrite()
        realm.add(dog)
        realm.cancelWrite()
        #expect(dog.isInvalidated)
        #expect(realm.objects(Dog.self).isEmpty)
    }

    // MARK: Identity, equality and hashing

    @Test func accessorsToOneRowAreTheSameObject() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        try realm.write {
            realm.add(Dog(value: ["name": "Rex"]))
            realm.add(Dog(value: ["name": "Fido"]))
        }
        let a = realm.objects(Dog.self)[0]
        let b = realm.objects(Dog.self)[0]
        let fido = realm.objects(Dog.self)[1]
        #expect(a !== b)
        #expect(a.isSameObject(as: b))
        #expect(!a.isSameObject(as: fido))
        #expect(!a.isSameObject(as: nil))
        let unmanaged = Dog()
        #expect(unmanaged.isSameObject(as: unmanaged))
        #expect(!unmanaged.isSameObject(as: Dog()))
        #expect(!unmanaged.isSameObject(as: a))
    }

    @Test func aDeletedObjectIsNoLongerTheSameObjectAsAnotherAccessor() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        try realm.write { realm.add(Dog(value: ["name": "Rex"])) }
        let a = realm.objects(Dog.self)[0]
        let b = realm.objects(Dog.self)[0]
        try realm.write { realm.delete(a) }
        #expect(!a.isSameObject(as: b))
        #expect(a.isSameObject(as: a))
    }

    /// Without a primary key, only the same instance is ==.
    @Test func objectsWithoutPrimaryKeyAreEqualOnlyToThemselves() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let rex = Dog(value: ["name": "Rex"])
        try realm.write { realm.add(rex) }
        let again = try #require(realm.objects(Dog.self).first)
        #expect(rex == rex)
        #expect(rex != again)
        #expect(!rex.isEqual(again))
        #expect(Dog(value: ["name": "A"]) != Dog(value: ["name": "A"]))
    }

    /// With a primary key, two accessors to one row are == and hash alike.
    @Test func objectsWithPrimaryKeyAreEqualByRow() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        try realm.write {
            realm.add(Person(name: "Ann", age: 30))
            realm.add(Person(name: "Bob", age: 40))
        }
        let a1 = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        let a2 = try #require(realm.objects(Person.self).first { $0.name == "Ann" })
        let bob = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Bob"))
        #expect(a1 !== a2)
        #expect(a1 == a2)
        #expect(a1.hash == a2.hash)
        #expect(a1.hashValue == a2.hashValue)
        #expect(a1 != bob)
        #expect(Set([a1, a2, bob]).count == 2)
    }

    @Test func unmanagedObjectsWithTheSamePrimaryKeyAreNotEqual() {
        let a = Person(name: "Ann", age: 1)
        let b = Person(name: "Ann", age: 1)
        #expect(a == a)
        #expect(a != b)
    }

    /// RealmSwift hashes an object with a primary key by the key's value, managed or not, so an
    /// object keeps its hash (and its place in a Set) when it is added.
    @Test func hashOfAnObjectWithPrimaryKeyIsKeptWhenAdded() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        let before = ann.hash
        let set: Set<Person> = [ann]
        try realm.write { realm.add(ann) }
        #expect(ann.hash == before)
        // (inserting it again would trap in Set if the hash had changed, so only look it up)
        #expect(set.contains(ann))
    }

    // MARK: description

    @Test func descriptionOfAnUnmanagedObject() {
        let dog = Dog(value: ["name": "Rex", "age": 3])
        #expect(dog.description == "Dog {\n\tname = Rex;\n\tage = 3;\n\towner = (null);\n}")
    }

    @Test func descriptionOfAManagedObject() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let dog = Dog(value: ["name": "Rex", "age": 3])
        try realm.write { realm.add(dog) }
        #expect(dog.description == "Dog {\n\tname = Rex;\n\tage = 3;\n\towner = (null);\n}")
        try realm.write { dog.owner = Person(name: "Ann", age: 30) }
        #expect(dog.description.hasPrefix("Dog {\n\tname = Rex;\n\tage = 3;\n\towner = Person {\n\t\tname = Ann;\n\t\tage = 30;\n"))
        #expect(dog.description.hasSuffix("\n\t};\n}"))
    }

    // MARK: Key-value coding

    @Test func keyValueCodingOnAnUnmanagedObject() {
        let dog = Dog()
        dog["name"] = "Rex"
        dog.setValue(4, forKey: "age")
        #expect(dog.name == "Rex" && dog.age == 4)
        #expect(dog["name"] as? String == "Rex")
        #expect(dog.value(forKey: "age") as? Int == 4)
        #expect(dog["owner"] == nil)
        let ann = Person(name: "Ann", age: 30)
        dog["owner"] = ann
        #expect(dog.owner === ann)
        #expect(dog["owner"] as? Person === ann)
        dog.setValue(nil, forKey: "owner")
        #expect(dog.owner == nil)
        dog.setValuesForKeys(["name": "Max", "age": 9])
        #expect(dog.name == "Max" && dog.age == 9)
    }

    @Test func keyValueCodingOnAManagedObject() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let dog = Dog(value: ["name": "Rex", "age": 3])
        try realm.write { realm.add(dog) }
        #expect(dog["name"] as? String == "Rex")
        #expect(dog.value(forKey: "age") as? Int == 3)
        try realm.write {
            dog["name"] = "Max"
            dog.setValue(7, forKey: "age")
        }
        let read = try #require(realm.objects(Dog.self).first)
        #expect(read.name == "Max" && read.age == 7)
        try realm.write { read.setValuesForKeys(["name": "Bo", "age": 1]) }
        #expect(dog.name == "Bo" && dog.age == 1)
        try realm.write { dog["owner"] = Person(name: "Ann", age: 30) }
        #expect(dog.owner?.name == "Ann")
        #expect(realm.objects(Person.self).count == 1)
        try realm.write { dog["owner"] = nil }
        #expect(dog.owner == nil)
    }

    @Test func keyValueCodingOfOptionalsAndScalars() throws {
        let o = AllTypes()
        o["optInt"] = 5
        o["optString"] = "s"
        o["double"] = 2.5
        o["date"] = Date(timeIntervalSince1970: 10)
        #expect(o.optInt == 5 && o.optString == "s" && o.double == 2.5)
        #expect(o.date == Date(timeIntervalSince1970: 10))
        #expect(o["optInt"] as? Int == 5)
        o["optInt"] = nil
        #expect(o.optInt == nil)
        #expect(o["optInt"] == nil)
        let dir = TempDir()
        let realm = try openRealm(dir)
        try realm.write { realm.add(o) }
        try realm.write {
            o["optInt"] = 6
            o["optString"] = nil
        }
        #expect(o.optInt == 6 && o.optString == nil)
        #expect(o["optString"] == nil)
    }

    @Test func keyValueCodingOfListProperties() throws {
        let ann = Person(name: "Ann", age: 30)
        ann.setValue([Dog(value: ["name": "Rex"])], forKey: "dogs")
        #expect(ann.dogs.map(\.name) == ["Rex"])
        #expect((ann.value(forKey: "dogs") as? List<Dog>)?.count == 1)
        let dir = TempDir()
        let realm = try openRealm(dir)
        try realm.write { realm.add(ann) }
        #expect((ann["dogs"] as? List<Dog>)?.first?.name == "Rex")
        try realm.write {
            ann.setValue([Dog(value: ["name": "A"]), Dog(value: ["name": "B"])], forKey: "dogs")
        }
        #expect(ann.dogs.map(\.name) == ["A", "B"])
        #expect(realm.objects(Dog.self).count == 3, "replacing the list's contents does not delete Rex")
    }

    @Test func keyValueCodingOfAnInvalidKeyTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = Dog().value(forKey: "noSuchProperty")
        }
    }

    @Test func settingAManagedObjectOutsideAWriteTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir("settingAManagedObjectOutsideAWriteTraps")
            let realm = try! Realm(configuration: dir.config(objectModels))
            let dog = Dog()
            try! realm.write { realm.add(dog) }
            dog["name"] = "Rex"
        }
    }

    // MARK: Embedded objects

    @Test func assigningAnEmbeddedObjectMakesItManaged() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        try realm.write { realm.add(ann) }
        let home = Address(value: ["street": "Main St", "city": "Oslo"])
        #expect(home.realm == nil)
        try realm.write { ann.address = home }
        #expect(ann.address?.realm == realm)
        #expect(ann.address?.street == "Main St")
        #expect(home.realm == realm)
        #expect(home.isSameObject(as: ann.address))
        #expect(realm.object(ofType: Person.self, forPrimaryKey: "Ann")?.address?.city == "Oslo")
    }

    @Test func replacingAnEmbeddedObjectDeletesTheOldOne() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        ann.address = Address(value: ["street": "Old St", "city": "Bergen"])
        try realm.write { realm.add(ann) }
        let old = try #require(ann.address)
        try realm.write { ann.address = Address(value: ["street": "New St", "city": "Oslo"]) }
        #expect(old.isInvalidated)
        #expect(ann.address?.street == "New St")
        #expect(!(ann.address?.isInvalidated ?? true))
    }

    @Test func settingAnEmbeddedObjectToNilDeletesIt() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        ann.address = Address(value: ["street": "Main St"])
        try realm.write { realm.add(ann) }
        let old = try #require(ann.address)
        try realm.write { ann.address = nil }
        #expect(old.isInvalidated)
        #expect(ann.address == nil)
    }

    @Test func deletingTheOwnerDeletesEmbeddedObjects() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        ann.address = Address(value: ["street": "Main St"])
        ann.pastAddresses.append(Address(value: ["street": "A"]))
        ann.pastAddresses.append(Address(value: ["street": "B"]))
        try realm.write { realm.add(ann) }
        let home = try #require(ann.address)
        let past = Array(ann.pastAddresses)
        #expect(past.count == 2)
        try realm.write { realm.delete(ann) }
        #expect(home.isInvalidated)
        #expect(past.allSatisfy { $0.isInvalidated })
    }

    @Test func embeddedObjectsInAList() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        try realm.write { realm.add(ann) }
        try realm.write {
            ann.pastAddresses.append(Address(value: ["street": "A"]))
            ann.pastAddresses.append(Address(value: ["street": "C"]))
            ann.pastAddresses.insert(Address(value: ["street": "B"]), at: 1)
        }
        #expect(ann.pastAddresses.map(\.street) == ["A", "B", "C"])
        #expect(ann.pastAddresses.allSatisfy { $0.realm == realm })
        let b = ann.pastAddresses[1]
        try realm.write { ann.pastAddresses.remove(at: 1) }
        #expect(b.isInvalidated, "an embedded object removed from its list is deleted")
        #expect(ann.pastAddresses.count == 2)
        let a = ann.pastAddresses[0]
        try realm.write { ann.pastAddresses[0] = Address(value: ["street": "Z"]) }
        #expect(a.isInvalidated, "a replaced embedded object is deleted")
        #expect(ann.pastAddresses.map(\.street) == ["Z", "C"])
        let remaining = Array(ann.pastAddresses)
        try realm.write { ann.pastAddresses.removeAll() }
        #expect(remaining.allSatisfy { $0.isInvalidated })
        #expect(ann.pastAddresses.isEmpty)
    }

    @Test func movingAndSwappingEmbeddedObjectsKeepsThem() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        for street in ["A", "B", "C"] { ann.pastAddresses.append(Address(value: ["street": street])) }
        try realm.write { realm.add(ann) }
        let held = Array(ann.pastAddresses)
        try realm.write { ann.pastAddresses.move(from: 0, to: 2) }
        #expect(ann.pastAddresses.map(\.street) == ["B", "C", "A"])
        try realm.write { ann.pastAddresses.swapAt(0, 2) }
        #expect(ann.pastAddresses.map(\.street) == ["A", "C", "B"])
        #expect(held.allSatisfy { !$0.isInvalidated }, "moved embedded objects are not deleted")
        #expect(held[0].street == "A" && held[1].street == "B")
    }

    /// `move(fromOffsets:toOffset:)` (SwiftUI's onMove) moves embedded objects like any others.
    /// (Run in a child process: it traps today.)
    @Test func moveFromOffsetsOfEmbeddedObjects() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir("moveFromOffsetsOfEmbeddedObjects")
            let realm = try! Realm(configuration: dir.config(objectModels))
            let ann = Person(name: "Ann", age: 30)
            for street in ["A", "B", "C", "D"] { ann.pastAddresses.append(Address(value: ["street": street])) }
            try! realm.write { realm.add(ann) }
            try! realm.write { ann.pastAddresses.move(fromOffsets: IndexSet([0]), toOffset: 3) }
            precondition(ann.pastAddresses.map(\.street) == ["B", "C", "A", "D"])
        }
    }

    @Test func deletingAnEmbeddedObjectDirectlyClearsTheOwnersLink() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        ann.address = Address(value: ["street": "Main St"])
        ann.pastAddresses.append(Address(value: ["street": "A"]))
        ann.pastAddresses.append(Address(value: ["street": "B"]))
        try realm.write { realm.add(ann) }
        try realm.write {
            realm.delete(ann.address!)
            realm.delete(ann.pastAddresses[0])
        }
        #expect(ann.address == nil)
        #expect(ann.pastAddresses.map(\.street) == ["B"])
    }

    @Test func embeddedObjectsAsMapValues() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let book = ObjAddressBook()
        book.byName["home"] = Address(value: ["street": "Main St"])
        try realm.write { realm.add(book) }
        let home = try #require(book.byName["home"] ?? nil)
        #expect(home.realm == realm)
        #expect(home.street == "Main St")
        try realm.write { book.byName["home"] = Address(value: ["street": "New St"]) }
        #expect(home.isInvalidated, "a replaced embedded value is deleted")
        #expect(book.byName["home"]??.street == "New St")
        let newHome = try #require(book.byName["home"] ?? nil)
        try realm.write { book.byName["home"] = nil }
        #expect(newHome.isInvalidated, "an embedded value whose key is removed is deleted")
        #expect(book.byName.isEmpty)
        try realm.write { book.byName["work"] = Address(value: ["street": "Office Rd"]) }
        let work = try #require(book.byName["work"] ?? nil)
        try realm.write { realm.delete(book) }
        #expect(work.isInvalidated)
    }

    @Test func embeddedObjectFromADictionaryThroughKeyValueCoding() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        try realm.write { realm.add(ann) }
        try realm.write { ann["address"] = ["street": "Main St", "city": "Oslo"] }
        #expect(ann.address?.street == "Main St")
        #expect(ann.address?.city == "Oslo")
    }

    @Test func assigningAManagedEmbeddedObjectToAnotherOwnerTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir("assigningAManagedEmbeddedObjectToAnotherOwnerTraps")
            let realm = try! Realm(configuration: dir.config(objectModels))
            let ann = Person(name: "Ann", age: 1)
            ann.address = Address(value: ["street": "Main"])
            let bob = Person(name: "Bob", age: 2)
            try! realm.write {
                realm.add(ann)
                realm.add(bob)
                bob.address = ann.address
            }
        }
    }

    // MARK: Links

    @Test func linkingToAnUnmanagedObjectAddsIt() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        try realm.write { realm.add(ann) }
        let bob = Person(name: "Bob", age: 40)
        try realm.write { ann.bestFriend = bob }
        #expect(bob.realm == realm)
        #expect(realm.objects(Person.self).count == 2)
        #expect(ann.bestFriend?.isSameObject(as: bob) == true)
    }

    @Test func addingAnObjectTwiceAddsItOnce() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let rex = Dog(value: ["name": "Rex"])
        try realm.write {
            realm.add(rex)
            realm.add(rex)
        }
        try realm.write { realm.add(rex) }
        #expect(realm.objects(Dog.self).count == 1)
    }

    @Test func deletingALinkedObjectNilsTheLink() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        let bob = Person(name: "Bob", age: 40)
        ann.bestFriend = bob
        let rex = Dog(value: ["name": "Rex"])
        rex.owner = ann
        try realm.write { realm.add(rex) }
        #expect(realm.objects(Person.self).count == 2)
        try realm.write { realm.delete(bob) }
        #expect(ann.bestFriend == nil)
        try realm.write { realm.delete(ann) }
        #expect(rex.owner == nil)
    }

    @Test func deletingALinkedObjectRemovesItFromListsAndSets() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = try addAnnWithDogs(realm)
        let rex = ann.dogs[0]
        let fido = ann.dogs[1]
        try realm.write {
            ann.dogs.append(rex) // Rex twice
            ann.favorites.insert(rex)
            ann.favorites.insert(fido)
        }
        #expect(ann.dogs.map(\.name) == ["Rex", "Fido", "Rex"])
        try realm.write { realm.delete(rex) }
        #expect(ann.dogs.map(\.name) == ["Fido"])
        #expect(ann.favorites.map(\.name) == ["Fido"])
    }

    @Test func deletingAnObjectInAMapLeavesTheKeyWithNil() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let ann = Person(name: "Ann", age: 30)
        ann.dogsByName["rex"] = Dog(value: ["name": "Rex"])
        ann.dogsByName["fido"] = Dog(value: ["name": "Fido"])
        try realm.write { realm.add(ann) }
        let rex = try #require(ann.dogsByName["rex"] ?? nil)
        try realm.write { realm.delete(rex) }
        #expect(ann.dogsByName.count == 2)
        #expect(ann.dogsByName.keys == ["fido", "rex"])
        #expect(ann.dogsByName["rex"] == .some(nil))
        #expect(ann.dogsByName["fido"]??.name == "Fido")
    }

    @Test func deletingAnObjectHeldInAnAnyRealmValueLeavesNone() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let o = AllTypes()
        let rex = Dog(value: ["name": "Rex"])
        o.any = .object(rex)
        try realm.write { realm.add(o) }
        try realm.write { realm.delete(rex) }
        #expect(o.any == .none)
    }

    @Test func changingThePrimaryKeyOfAManagedObjectTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir("changingThePrimaryKeyOfAManagedObjectTraps")
            let realm = try! Realm(configuration: dir.config(objectModels))
            let ann = Person(name: "Ann", age: 1)
            try! realm.write {
                realm.add(ann)
                ann.setValue("Bob", forKey: "name")
            }
        }
    }

    // MARK: LinkingObjects

    @Test func linkingObjectsFollowLinksAsTheyChange() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let rex = Dog(value: ["name": "Rex"])
        let ann = Person(name: "Ann", age: 30)
        let bob = Person(name: "Bob", age: 40)
        try realm.write {
            realm.add(rex)
            realm.add(ann)
            realm.add(bob)
        }
        let owners = rex.owners
        #expect(owners.count == 0)
        try realm.write {
            ann.dogs.append(rex)
            #expect(owners.count == 1, "seen inside the write")
        }
        #expect(owners.count == 1)
        #expect(owners.first?.name == "Ann")
        try realm.write { bob.dogs.append(rex) }
        #expect(owners.count == 2)
        #expect(Set(owners.map(\.name)) == ["Ann", "Bob"])
        #expect(rex.owners.count == 2)
        try realm.write { ann.dogs.removeAll() }
        #expect(owners.count == 1)
        #expect(owners[0].name == "Bob")
        try realm.write { realm.delete(bob) }
        #expect(owners.count == 0)
        #expect(owners.isEmpty)
    }

    @Test func linkingObjectsOfAnUnmanagedObjectAreEmpty() {
        let rex = Dog(value: ["name": "Rex"])
        let ann = Person(name: "Ann", age: 30)
        ann.dogs.append(rex)
        #expect(rex.owners.count == 0)
        #expect(rex.owners.isEmpty)
        #expect(rex.owners.first == nil)
        #expect(rex.owners.realm == nil)
        #expect(Array(rex.owners).isEmpty)
    }

    @Test func linkingObjectsAfterReopen() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        do {
            let realm = try Realm(configuration: config)
            try addAnnWithDogs(realm)
        }
        let realm = try Realm(configuration: config)
        let rex = try #require(realm.objects(Dog.self).first { $0.name == "Rex" })
        #expect(rex.owners.map(\.name) == ["Ann"])
        #expect(rex.owners.realm == realm)
    }

    // MARK: DynamicObject

    @Test func dynamicObjectsOfAClass() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        try addAnnWithDogs(realm)
        let dogs = realm.dynamicObjects("Dog")
        #expect(dogs.count == 2)
        let rex = try #require(dogs.first { $0["name"] as? String == "Rex" })
        #expect(rex.name as? String == "Rex")
        #expect(rex["age"] as? Int == 3)
        #expect(rex.age as? Int == 3)
        #expect(rex.objectSchema.className == "Dog")
        #expect(Set(dogs.map { $0.name as? String ?? "" }) == ["Rex", "Fido"])
    }

    @Test func dynamicObjectForPrimaryKey() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        try addAnnWithDogs(realm)
        let ann = try #require(realm.dynamicObject(ofType: "Person", forPrimaryKey: "Ann"))
        #expect(ann["age"] as? Int == 30)
        #expect(ann.name as? String == "Ann")
        #expect(realm.dynamicObject(ofType: "Person", forPrimaryKey: "Nobody") == nil)
        let dogs = try #require(ann["dogs"] as? List<DynamicObject>)
        #expect(dogs.count == 2)
        #expect(ann.dynamicList("dogs").count == 2)
        #expect(ann["address"] == nil)
        #expect(ann["bestFriend"] == nil)
    }

    /// The elements of a DynamicObject's list of links are DynamicObjects. (Run in a child
    /// process: reading them traps today.)
    @Test func dynamicListElementsAreDynamicObjects() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir("dynamicListElementsAreDynamicObjects")
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! addAnnWithDogs(realm)
            let ann = realm.dynamicObject(ofType: "Person", forPrimaryKey: "Ann")!
            let dogs = ann.dynamicList("dogs")
            precondition(dogs.map { $0["name"] as? String } == ["Rex", "Fido"])
            precondition(dogs[0].objectSchema.className == "Dog")
        }
    }

    @Test func dynamicCreate() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let dyn = try realm.write { realm.dynamicCreate("Dog", value: ["name": "Rex", "age": 4]) }
        #expect(dyn.name as? String == "Rex")
        #expect(dyn["age"] as? Int == 4)
        let typed = try #require(realm.objects(Dog.self).first)
        #expect(typed.name == "Rex" && typed.age == 4)
        try realm.write { realm.dynamicCreate("Person", value: ["name": "Zed", "age": 5]) }
        #expect(realm.object(ofType: Person.self, forPrimaryKey: "Zed")?.age == 5)
    }

    @Test func dynamicSettersWriteTheRow() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        try addAnnWithDogs(realm)
        let dyn = try #require(realm.dynamicObjects("Dog").first { $0["name"] as? String == "Rex" })
        try realm.write {
            dyn.age = 9
            dyn["name"] = "Max"
        }
        let typed = try #require(realm.objects(Dog.self).first { $0.age == 9 })
        #expect(typed.name == "Max")
        #expect(dyn["name"] as? String == "Max")
    }

    @Test func dynamicLinksReadAsDynamicObjects() throws {
        let dir = TempDir()
        let realm = try openRealm(dir)
        let rex = Dog(value: ["name": "Rex"])
        rex.owner = Person(name: "Ann", age: 30)
        try realm.write { realm.add(rex) }
        let dyn = try #require(realm.dynamicObjects("Dog").first)
        let owner = try #require(dyn.owner as? DynamicObject)
        #expect(owner["name"] as? String == "Ann")
        #expect(owner.objectSchema.className == "Person")
    }
}
