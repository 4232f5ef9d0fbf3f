import Foundation
import Testing
@testable import SwiftStore

/// Frozen snapshots: freeze and thaw of every type, reads at the frozen version from many
/// threads while another thread writes, deleted objects, and the caching of frozen Realms.
@Suite struct FreezeTests {
    /// A Realm with one person (two dogs, a favorite, a map entry) and a third dog.
    func seeded(_ dir: TempDir) throws -> Realm {
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            let p = Person(name: "Ann", age: 30)
            let rex = Dog()
            rex.name = "Rex"
            rex.age = 3
            let fido = Dog()
            fido.name = "Fido"
            fido.age = 5
            p.dogs.append(objectsIn: [rex, fido])
            p.favorites.insert(rex)
            p.dogsByName["rex"] = rex
            realm.add(p)
            let stray = Dog()
            stray.name = "Stray"
            stray.age = 1
            realm.add(stray)
        }
        return realm
    }

    @Test func realmFreezeAndThaw() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        #expect(!realm.isFrozen)
        let frozen = realm.freeze()
        #expect(frozen.isFrozen)
        #expect(frozen.freeze() == frozen)
        #expect(realm.freeze() == frozen, "one frozen Realm per version")
        try realm.write { realm.add(Dog()) }
        #expect(frozen.objects(Dog.self).count == 3)
        #expect(realm.objects(Dog.self).count == 4)
        #expect(realm.freeze() != frozen, "a new version freezes to a new Realm")
        let thawed = frozen.thaw()
        #expect(!thawed.isFrozen)
        #expect(thawed == realm)
        #expect(realm.thaw() == realm)
    }

    @Test func objectFreezeThawRoundTrip() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        #expect(!ann.isFrozen)
        let frozen = ann.freeze()
        #expect(frozen.isFrozen)
        #expect(frozen.realm?.isFrozen == true)
        #expect(frozen.freeze() === frozen)
        #expect(frozen.name == "Ann")
        #expect(frozen.dogs.count == 2)
        #expect(frozen.dogs.isFrozen)
        #expect(frozen.dogs[0].isFrozen)
        try realm.write { ann.age = 31 }
        #expect(frozen.age == 30, "a frozen object keeps its version")
        let thawed = try #require(frozen.thaw())
        #expect(!thawed.isFrozen)
        #expect(thawed.age == 31, "thaw shows the live Realm's version")
        #expect(thawed.realm == realm)
        #expect(ann.thaw() === ann)
        #expect(realm.freeze(ann).age == 31)
        #expect(realm.thaw(frozen)?.age == 31)
        // Frozen objects of one row and version are equal (also without a primary key).
        let d1 = realm.objects(Dog.self).first!.freeze()
        let d2 = realm.objects(Dog.self).first!.freeze()
        #expect(d1 == d2)
        #expect(d1.isSameObject(as: realm.objects(Dog.self).first!))
    }

    @Test func frozenObjectOfADeletedRowStillReadsAndThawsToNil() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let stray = try #require(realm.objects(Dog.self).filter("name == 'Stray'").first)
        let frozen = stray.freeze()
        try realm.write { realm.delete(stray) }
        #expect(stray.isInvalidated)
        #expect(!frozen.isInvalidated)
        #expect(frozen.name == "Stray")
        #expect(frozen.age == 1)
        #expect(frozen.thaw() == nil)
        // Thawing on another thread opens that thread's Realm, where the row is gone too.
        let box = UncheckedBox(frozen)
        let thawedElsewhere = UncheckedBox<Bool?>(nil)
        onNewThread { thawedElsewhere.value = box.value.thaw() == nil }
        #expect(thawedElsewhere.value == true)
    }

    @Test func resultsFreezeQueriesAndThaw() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let dogs = realm.objects(Dog.self).sorted(byKeyPath: "age")
        let frozen = dogs.freeze()
        #expect(frozen.isFrozen)
        #expect(frozen.freeze().isFrozen)
        try realm.write {
            realm.delete(realm.objects(Dog.self).filter("name == 'Fido'"))
            let d = Dog()
            d.name = "Zed"
            d.age = 9
            realm.add(d)
        }
        #expect(frozen.map(\.name) == ["Stray", "Rex", "Fido"])
        #expect(frozen.filter("age > 2").count == 2)
        #expect(frozen.filter("age > 2").isFrozen)
        #expect(frozen.where { $0.age > 2 }.count == 2)
        #expect(frozen.sum(ofProperty: "age") as Int == 9)
        #expect(frozen.max(ofProperty: "age") as Int? == 5)
        #expect(frozen.sorted(byKeyPath: "name").map(\.name) == ["Fido", "Rex", "Stray"])
        #expect(frozen[0].isFrozen)
        let thawed = try #require(frozen.thaw())
        #expect(!thawed.isFrozen)
        #expect(thawed.map(\.name) == ["Stray", "Rex", "Zed"])
        #expect(dogs.thaw()?.count == 3)
    }

    /// Results filtered with an object as argument, frozen and thawed: the thawed results are
    /// the same query as the original (their arguments compared as the links they stand for),
    /// and one with another object as argument is not.
    @Test func thawedResultsWithAnObjectArgumentEqualTheOriginal() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        let rex = ann.dogs[0]
        let owners = realm.objects(Person.self).filter("ANY dogs == %@", rex)
        let thawed = try #require(owners.freeze().thaw())
        #expect(thawed.count == owners.count)
        #expect(thawed == owners)
        #expect(realm.objects(Person.self).filter("ANY dogs IN %@", [rex]).freeze().thaw()
                == realm.objects(Person.self).filter("ANY dogs IN %@", [rex]))
        #expect(thawed != realm.objects(Person.self).filter("ANY dogs == %@", ann.dogs[1]))
    }

    /// Results filtered with an object, and with an array of objects, as arguments: frozen and
    /// read on another thread, and handed to another thread through a ThreadSafeReference, they
    /// run their query there with the objects as links (docs/ARCHITECTURE.md, Frozen snapshots).
    @Test func resultsWithObjectArgumentsReadOnAnotherThread() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        let rex = ann.dogs[0]
        let byObject = realm.objects(Person.self).filter("ANY dogs == %@", rex)
        let byArray = realm.objects(Dog.self).filter("ANY owners IN %@ OR age > %@", [ann], 100)
        let frozen = UncheckedBox((byObject.freeze(), byArray.freeze()))
        let references = UncheckedBox((ThreadSafeReference(to: byObject), ThreadSafeReference(to: byArray)))
        let config = realm.configuration
        let counts = UncheckedBox<[Int]>([])
        onNewThread {
            let (o, a) = frozen.value
            let r = try! Realm(configuration: config)
            let (ro, ra) = references.value
            counts.value = [o.count, a.count, r.resolve(ro)!.count, r.resolve(ra)!.count,
                            o.filter("age == %@", 30).count]
        }
        #expect(counts.value == [1, 2, 1, 2, 1])
    }

    @Test func listSetMapLinkingObjectsAndAnyCollectionRoundTrip() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        let rex = ann.dogs[0]

        let list = ann.dogs.freeze()
        let set = ann.favorites.freeze()
        let map = ann.dogsByName.freeze()
        let owners = rex.owners.freeze()
        let any = AnyRealmCollection(ann.dogs).freeze()
        #expect(list.isFrozen && set.isFrozen && map.isFrozen && owners.isFrozen && any.isFrozen)
        #expect(!ann.dogs.isFrozen && !ann.favorites.isFrozen && !ann.dogsByName.isFrozen && !rex.owners.isFrozen)
        #expect(list.freeze() === list && set.freeze() === set && map.freeze() === map)

        try realm.write {
            ann.dogs.removeAll()
            ann.favorites.removeAll()
            ann.dogsByName.removeAll()
        }
        #expect(list.map(\.name) == ["Rex", "Fido"])
        #expect(list.filter("age > 3").map(\.name) == ["Fido"])
        #expect(list.sum(ofProperty: "age") as Int == 8)
        #expect(set.map(\.name) == ["Rex"])
        #expect(map["rex"]??.name == "Rex")
        #expect(map.count == 1)
        #expect(owners.map(\.name) == ["Ann"])
        #expect(any.count == 2)
        #expect(any[1].name == "Fido")

        let tl = try #require(list.thaw())
        let ts = try #require(set.thaw())
        let tm = try #require(map.thaw())
        let to = try #require(owners.thaw())
        let ta = try #require(any.thaw())
        #expect(!tl.isFrozen && !ts.isFrozen && !tm.isFrozen && !to.isFrozen && !ta.isFrozen)
        #expect(tl.count == 0 && ts.count == 0 && tm.count == 0 && ta.count == 0)
        #expect(to.count == 0, "Ann no longer lists Rex")

        // A collection whose owner was deleted thaws to nil; its frozen form still reads.
        try realm.write { realm.delete(ann) }
        #expect(list.thaw() == nil)
        #expect(map.thaw() == nil)
        #expect(list.count == 2)
    }

    @Test func frozenValuesAreReadFromManyThreadsAndTasksWhileAnotherThreadWrites() async throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        let realm = try Realm(configuration: config, queue: nil)
        try realm.write {
            let p = Person(name: "Owner", age: 1)
            for i in 0..<200 {
                let d = Dog()
                d.name = "d\(i)"
                d.age = i
                p.dogs.append(d)
            }
            realm.add(p)
        }
        let frozenDogs = realm.objects(Dog.self).sorted(byKeyPath: "age").freeze()
        let frozenOwner = realm.object(ofType: Person.self, forPrimaryKey: "Owner")!.freeze()
        let shared = UncheckedBox((frozenDogs, frozenOwner))
        let expectedSum = (0..<200).reduce(0, +)

        // A writer changes every dog while the readers run.
        let writerDone = DispatchSemaphore(value: 0)
        Thread {
            let r = try! Realm(configuration: config)
            for round in 0..<20 {
                try! r.write { for d in r.objects(Dog.self) { d.age += round } }
            }
            writerDone.signal()
        }.start()

        let bad = UncheckedBox(0)
        let lock = NSLock()
        let threads = 4
        let group = DispatchGroup()
        for _ in 0..<threads {
            group.enter()
            Thread {
                let (dogs, owner) = shared.value
                var errors = 0
                for _ in 0..<5 {
                    var sum = 0
                    for d in dogs { sum += d.age }
                    if sum != expectedSum { errors += 1 }
                    if dogs.count != 200 || dogs.filter("age < 100").count != 100 { errors += 1 }
                    if owner.dogs.count != 200 || owner.dogs[199].name != "d199" { errors += 1 }
                    if (dogs.sum(ofProperty: "age") as Int) != expectedSum { errors += 1 }
                }
                lock.lock(); bad.value += errors; lock.unlock()
                group.leave()
            }.start()
        }
        await withTaskGroup(of: Int.self) { tasks in
            for _ in 0..<4 {
                tasks.addTask {
                    let (dogs, owner) = shared.value
                    var errors = 0
                    for _ in 0..<5 {
                        if dogs.map(\.age).reduce(0, +) != expectedSum { errors += 1 }
                        if owner.dogs.filter("age >= 150").count != 50 { errors += 1 }
                    }
                    return errors
                }
            }
            for await e in tasks { lock.withLock { bad.value += e } }
        }
        group.wait()
        writerDone.wait()
        #expect(bad.value == 0)
        // After an await the test may run on another thread than the one `realm` belongs to:
        // the live check reads through a Realm of the current thread.
        let now = try Realm(configuration: config, queue: nil)
        now.refresh()
        #expect(now.objects(Dog.self).sum(ofProperty: "age") as Int != expectedSum)
    }

    @Test func aFrozenRealmIsReleasedWithItsLastValue() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        weak var weakFrozen: RealmCore?
        do {
            let dog = realm.objects(Dog.self).first!.freeze()
            weakFrozen = dog.realm?.core
            #expect(weakFrozen != nil)
            #expect(realm.objects(Dog.self).first!.freeze().realm == dog.realm, "cached while in use")
        }
        #expect(weakFrozen == nil, "released with the last frozen value")
    }

    @Test func frozenRealmsCountAgainstTheActiveVersionLimit() throws {
        let dir = TempDir()
        var config = dir.config(objectModels)
        config.maximumNumberOfActiveVersions = 2
        let realm = try Realm(configuration: config)
        try realm.write { realm.add(Dog(value: ["name": "a"])) }
        var frozen: Realm? = realm.freeze()
        try realm.write { realm.add(Dog(value: ["name": "b"])) }
        let second = realm.freeze()
        // Two frozen versions are pinned (the second is also the live one's): a write would
        // make a third.
        var message = ""
        do {
            try realm.write { realm.add(Dog(value: ["name": "c"])) }
        } catch let error as Realm.Error {
            message = error.localizedDescription
        }
        #expect(message.contains("too many active versions"), "\(message)")
        #expect(frozen?.objects(Dog.self).count == 1)
        // Releasing the last frozen value of that version makes room again.
        frozen = nil
        try realm.write { realm.add(Dog(value: ["name": "c"])) }
        #expect(realm.objects(Dog.self).count == 3)
        #expect(second.objects(Dog.self).count == 2)
    }
}

/// Misusing frozen data traps with RealmSwift's messages (each case in a child process).
@Suite struct FreezeTrapTests {
    @Test func writingAFrozenObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.add(Dog()) }
            let frozen = realm.objects(Dog.self).first!.freeze()
            frozen.name = "x"
        }
        expectMessage(result, "Attempting to modify a frozen object - call thaw on the Object instance first.")
    }

    @Test func writingAnIntegerOfAFrozenObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.write { realm.add(Dog()) }
            let frozen = realm.objects(Dog.self).first!.freeze()
            frozen.age = 4
        }
        expectMessage(result, "Attempting to modify a frozen object - call thaw on the Object instance first.")
    }

    @Test func aWriteTransactionOnAFrozenRealmTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            try! realm.freeze().write {}
        }
        expectMessage(result, "Can't perform transactions on a frozen Realm")
    }

    @Test func observingFrozenResultsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            _ = realm.objects(Dog.self).freeze().observe { _ in }
        }
        expectMessage(result, "Frozen Realms do not change and do not have change notifications.")
    }

    @Test func freezingAnUnmanagedObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Dog().freeze()
        }
        expectMessage(result, "Unmanaged objects cannot be frozen.")
    }
}
