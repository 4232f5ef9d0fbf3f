import Foundation
import Testing
@testable import SwiftStore

/// ThreadSafeReference and @ThreadSafe: objects and every collection handed to another thread
/// or actor, resolved once, nil when deleted.
@Suite struct ThreadSafeReferenceTests {
    func seeded(_ dir: TempDir) throws -> (Realm, Person) {
        let realm = try Realm(configuration: dir.config(objectModels))
        let p = Person(name: "Ann", age: 30)
        try realm.write {
            let rex = Dog(value: ["name": "Rex", "age": 3])
            p.dogs.append(rex)
            p.dogs.append(Dog(value: ["name": "Fido", "age": 5]))
            p.favorites.insert(rex)
            p.dogsByName["rex"] = rex
            realm.add(p)
        }
        return (realm, p)
    }

    @Test func everyTypeResolvesOnAnotherThread() throws {
        let dir = TempDir()
        let (realm, ann) = try seeded(dir)
        let config = realm.configuration
        let refs = UncheckedBox((
            ThreadSafeReference(to: ann),
            ThreadSafeReference(to: realm.objects(Dog.self).filter("age > 3")),
            ThreadSafeReference(to: ann.dogs),
            ThreadSafeReference(to: ann.favorites),
            ThreadSafeReference(to: ann.dogsByName),
            ThreadSafeReference(to: ann.dogs[0].owners),
            ThreadSafeReference(to: AnyRealmCollection(ann.dogs))
        ))
        let seen = UncheckedBox<[String]>([])
        onNewThread {
            let r = try! Realm(configuration: config)
            let (p, q, l, s, m, o, a) = refs.value
            let person = r.resolve(p)!
            #expect(!person.isFrozen)
            seen.value.append(person.name)
            seen.value.append(r.resolve(q)!.map(\.name).joined())
            let list = r.resolve(l)!
            seen.value.append(list.map(\.name).joined(separator: ","))
            seen.value.append(r.resolve(s)!.map(\.name).joined())
            seen.value.append(r.resolve(m)!["rex"]!!.name)
            seen.value.append(r.resolve(o)!.map(\.name).joined())
            seen.value.append("\(r.resolve(a)!.count)")
            // Live on this thread: writable here.
            try! r.write { list.append(Dog(value: ["name": "Pup"])) }
        }
        #expect(seen.value == ["Ann", "Fido", "Rex,Fido", "Rex", "Rex", "Ann", "2"])
        realm.refresh()
        #expect(ann.dogs.count == 3)
    }

    @Test func aReferenceResolvesInARealmThatIsBehind() throws {
        let dir = TempDir()
        let (realm, _) = try seeded(dir)
        let config = realm.configuration
        // This thread's Realm stays at its version while another thread adds and refers.
        _ = realm.objects(Dog.self).count
        let ref = UncheckedBox<ThreadSafeReference<Dog>?>(nil)
        onNewThread {
            let r = try! Realm(configuration: config)
            let d = Dog(value: ["name": "New"])
            try! r.write { r.add(d) }
            ref.value = ThreadSafeReference(to: d)
        }
        let dog = realm.resolve(ref.value!)
        #expect(dog?.name == "New", "the resolving Realm is moved to the reference's version")
    }

    @Test func aDeletedObjectResolvesToNil() throws {
        let dir = TempDir()
        let (realm, ann) = try seeded(dir)
        let config = realm.configuration
        let ref = UncheckedBox(ThreadSafeReference(to: ann))
        let listRef = UncheckedBox(ThreadSafeReference(to: ann.dogs))
        try realm.write { realm.delete(ann) }
        let results = UncheckedBox<[Bool]>([])
        onNewThread {
            let r = try! Realm(configuration: config)
            results.value = [r.resolve(ref.value) == nil, r.resolve(listRef.value) == nil]
        }
        #expect(results.value == [true, true])
    }

    @Test func aReferenceResolvesOnAnActor() async throws {
        let dir = TempDir()
        let (realm, ann) = try seeded(dir)
        let ref = ThreadSafeReference(to: ann)
        let keeper = NameKeeper()
        let name = await keeper.resolveName(ref, config: realm.configuration)
        #expect(name == "Ann")
        #expect(ref.isInvalidated)
    }

    @Test func threadSafeWrapperReadsOnAnyThread() throws {
        let dir = TempDir()
        let (realm, ann) = try seeded(dir)
        let holder = Holder()
        holder.person = ann
        let config = realm.configuration
        let names = UncheckedBox<[String?]>([])
        onNewThread {
            let r = try! Realm(configuration: config)
            names.value.append(holder.person?.name)
            try! r.write { holder.person!.age = 31 }
            names.value.append(holder.person.map { "\($0.age)" })
        }
        realm.refresh()
        #expect(names.value == ["Ann", "31"])
        #expect(holder.person?.age == 31)
        try realm.write { realm.delete(ann) }
        #expect(holder.person == nil)
    }
}

/// An actor that resolves a reference inside one of its methods.
actor NameKeeper {
    func resolveName(_ ref: ThreadSafeReference<Person>, config: Realm.Configuration) -> String? {
        let realm = try! Realm(configuration: config)
        return realm.resolve(ref)?.name
    }
}

final class Holder: @unchecked Sendable {
    @ThreadSafe var person: Person?
}

/// Resolving a reference twice traps with RealmSwift's message.
@Suite struct ThreadSafeReferenceTrapTests {
    @Test func resolvingTwiceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            let dog = Dog()
            try! realm.write { realm.add(dog) }
            let ref = ThreadSafeReference(to: dog)
            _ = realm.resolve(ref)
            _ = realm.resolve(ref)
        }
        expectMessage(result, "Can only resolve a thread safe reference once.")
    }
}
