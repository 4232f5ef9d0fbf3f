import Foundation
import Testing
import TestSupport
@testable import SwiftStore

final class BKOwner: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<BKDog>
    @Persisted var pet: BKDog?
}

final class BKDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<BKOwner>
    @Persisted(originProperty: "pet") var keepers: LinkingObjects<BKOwner>
}

private let backlinkModels: [ObjectBase.Type] = [BKOwner.self, BKDog.self]

/// A test's Realm on its run-loop thread, with a Realm observer registered last: Realm
/// observers are called after every other observer of the same delivery, so once it reports a
/// commit, every observer that the commit concerns has been called.
private final class BacklinkFixture: @unchecked Sendable {
    let dir = TempDir()
    let thread = RunLoopThread()
    var realm: Realm!
    var tokens: [NotificationToken] = []
    let done = Events<Realm.Notification>()
    var config: Realm.Configuration { dir.config(backlinkModels) }

    init(_ setUp: @escaping (Realm) throws -> Void) throws {
        let config = self.config
        try thread.sync {
            self.realm = try Realm(configuration: config)
            try self.realm.write { try setUp(self.realm) }
        }
    }

    func run<R>(_ body: @escaping (Realm) throws -> R) throws -> R {
        try thread.sync { try body(self.realm) }
    }

    /// Registers the Realm observer that marks the end of each delivery; call after the others.
    func markDeliveries() throws {
        try run { realm in self.tokens.append(realm.observe { n, _ in self.done.add(n) }) }
    }

    /// Another thread's commit, then waits until this Realm's observers were given it.
    func commitElsewhere(_ body: @escaping @Sendable (Realm) -> Void) {
        let config = self.config
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write { body(r) }
        }
        #expect(done.next() == .didChange)
    }

    func finish() throws {
        try thread.sync {
            for t in self.tokens { t.invalidate() }
            self.tokens = []
            self.realm = nil
        }
        thread.stop()
    }
}

/// Object changes as property names, one array per call.
private func names(_ c: ObjectChange<BKDog>) -> [String] {
    switch c {
    case .deleted: return ["<deleted>"]
    case .change(_, let props): return props.map(\.name)
    case .error: return ["<error>"]
    }
}

private func dog(_ r: Realm, _ name: String) -> BKDog { r.objects(BKDog.self).filter("name == %@", name).first! }
private func owner(_ r: Realm, _ name: String) -> BKOwner { r.objects(BKOwner.self).filter("name == %@", name).first! }

@Suite struct BacklinkKeyPathNotificationTests {
    /// Object observers with key paths through a LinkingObjects property: "owners" fires when the
    /// set of owners changes (a link added by a new or an existing owner, a link removed, an owner
    /// deleted), "owners.name" also when an owner's name is written; neither fires for another
    /// property of an owner or of the dog itself, and the default (shallow) observer sees no
    /// backlink change.
    @Test func objectObserverThroughBacklinks() throws {
        let f = try BacklinkFixture { r in
            let rex = r.create(BKDog.self, value: ["name": "Rex"])
            r.create(BKDog.self, value: ["name": "Fido"])
            let ann = r.create(BKOwner.self, value: ["name": "Ann"])
            ann.dogs.append(rex)
            r.create(BKOwner.self, value: ["name": "Bob"])
        }
        let owners = Events<[String]>(), ownerNames = Events<[String]>(), swiftOwners = Events<[String]>(),
            shallow = Events<[String]>(), dogName = Events<[String]>()
        try f.run { realm in
            let rex = dog(realm, "Rex")
            f.tokens.append(rex.observe(keyPaths: ["owners"]) { owners.add(names($0)) })
            f.tokens.append(rex.observe(keyPaths: ["owners.name"]) { ownerNames.add(names($0)) })
            f.tokens.append(rex.observe(keyPaths: [\BKDog.owners]) { swiftOwners.add(names($0)) })
            f.tokens.append(rex.observe { shallow.add(names($0)) })
            f.tokens.append(rex.observe(keyPaths: ["name"]) { dogName.add(names($0)) })
        }
        try f.markDeliveries()
        let all = [owners, ownerNames, swiftOwners, shallow, dogName]

        // an owner's name: only "owners.name", reported as the dog's "owners" property
        f.commitElsewhere { r in owner(r, "Ann").name = "Anna" }
        #expect(ownerNames.next(timeout: 0) == ["owners"])
        for e in all { #expect(e.waiting == 0) }

        // another property of the owner: nothing
        f.commitElsewhere { r in owner(r, "Anna").age = 40 }
        for e in all { #expect(e.waiting == 0) }

        // a link from another dog's owner to another dog: nothing
        f.commitElsewhere { r in owner(r, "Bob").dogs.append(dog(r, "Fido")) }
        for e in all { #expect(e.waiting == 0) }

        // a new owner linking the dog: "owners" in both forms and "owners.name"
        f.commitElsewhere { r in
            let c = r.create(BKOwner.self, value: ["name": "Cy"])
            c.dogs.append(dog(r, "Rex"))
        }
        for e in [owners, ownerNames, swiftOwners] { #expect(e.next(timeout: 0) == ["owners"]) }
        for e in all { #expect(e.waiting == 0) }

        // an existing owner linking the dog
        f.commitElsewhere { r in owner(r, "Bob").dogs.append(dog(r, "Rex")) }
        for e in [owners, ownerNames, swiftOwners] { #expect(e.next(timeout: 0) == ["owners"]) }
        for e in all { #expect(e.waiting == 0) }

        // moving the dog inside an owner's list leaves the owners as they are
        f.commitElsewhere { r in owner(r, "Bob").dogs.move(from: 1, to: 0) }
        for e in all { #expect(e.waiting == 0) }

        // the link removed
        f.commitElsewhere { r in owner(r, "Bob").dogs.remove(at: 0) }
        for e in [owners, ownerNames, swiftOwners] { #expect(e.next(timeout: 0) == ["owners"]) }
        for e in all { #expect(e.waiting == 0) }

        // the owner deleted
        f.commitElsewhere { r in r.delete(owner(r, "Cy")) }
        for e in [owners, ownerNames, swiftOwners] { #expect(e.next(timeout: 0) == ["owners"]) }
        for e in all { #expect(e.waiting == 0) }

        // the dog's own name: "name" and the shallow observer, not "owners"
        f.commitElsewhere { r in dog(r, "Rex").name = "Max" }
        #expect(dogName.next(timeout: 0) == ["name"])
        #expect(shallow.next(timeout: 0) == ["name"])
        for e in all { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// A single-link backlink ("keepers", from `pet`): setting, replacing and clearing the link
    /// change the backlinks of the old and the new target.
    @Test func singleLinkBacklinks() throws {
        let f = try BacklinkFixture { r in
            let rex = r.create(BKDog.self, value: ["name": "Rex"])
            r.create(BKDog.self, value: ["name": "Fido"])
            r.create(BKOwner.self, value: ["name": "Ann", "pet": rex])
        }
        let rexKeepers = Events<[String]>(), fidoKeepers = Events<[String]>(), fidoOwners = Events<[String]>()
        try f.run { realm in
            f.tokens.append(dog(realm, "Rex").observe(keyPaths: ["keepers"]) { rexKeepers.add(names($0)) })
            f.tokens.append(dog(realm, "Fido").observe(keyPaths: ["keepers.name"]) { fidoKeepers.add(names($0)) })
            f.tokens.append(dog(realm, "Fido").observe(keyPaths: ["owners"]) { fidoOwners.add(names($0)) })
        }
        try f.markDeliveries()
        let all = [rexKeepers, fidoKeepers, fidoOwners]
        // the link moves from Rex to Fido: both change
        f.commitElsewhere { r in owner(r, "Ann").pet = dog(r, "Fido") }
        #expect(rexKeepers.next(timeout: 0) == ["keepers"])
        #expect(fidoKeepers.next(timeout: 0) == ["keepers"])
        for e in all { #expect(e.waiting == 0) }
        // the same link written again: the backlinks are as they were
        f.commitElsewhere { r in owner(r, "Ann").pet = dog(r, "Fido") }
        for e in all { #expect(e.waiting == 0) }
        // the keeper's name
        f.commitElsewhere { r in owner(r, "Ann").name = "Anna" }
        #expect(fidoKeepers.next(timeout: 0) == ["keepers"])
        for e in all { #expect(e.waiting == 0) }
        // cleared
        f.commitElsewhere { r in owner(r, "Anna").pet = nil }
        #expect(fidoKeepers.next(timeout: 0) == ["keepers"])
        for e in all { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// A Results observer with key paths through backlinks reports the dog reached as modified,
    /// at its index; the default deep observer does not follow backlinks (as in RealmSwift, only
    /// key paths that name a LinkingObjects property do).
    @Test func resultsObserverThroughBacklinks() throws {
        let f = try BacklinkFixture { r in
            for n in ["a", "b", "c"] { r.create(BKDog.self, value: ["name": n]) }
            let ann = r.create(BKOwner.self, value: ["name": "Ann"])
            ann.dogs.append(objectsIn: r.objects(BKDog.self).filter("name != 'a'"))
            r.create(BKOwner.self, value: ["name": "Bob"])
        }
        let byOwners = Events<Seen>(), byOwnerNames = Events<Seen>(), swiftOwners = Events<Seen>(), deep = Events<Seen>(),
            sortedOwnerNames = Events<Seen>()
        try f.run { realm in
            let dogs = realm.objects(BKDog.self)
            f.tokens.append(dogs.observe(keyPaths: ["owners"]) { byOwners.add(Seen($0)) })
            f.tokens.append(dogs.observe(keyPaths: ["owners.name"]) { byOwnerNames.add(Seen($0)) })
            f.tokens.append(dogs.observe(keyPaths: [\BKDog.owners]) { swiftOwners.add(Seen($0)) })
            f.tokens.append(dogs.observe { deep.add(Seen($0)) })
            f.tokens.append(dogs.sorted(byKeyPath: "name", ascending: false).observe(keyPaths: ["owners.name"]) {
                sortedOwnerNames.add(Seen($0))
            })
        }
        let all = [byOwners, byOwnerNames, swiftOwners, deep, sortedOwnerNames]
        for e in all { #expect(e.next()?.initial == true) }
        try f.markDeliveries()

        // Ann (owning b and c) renamed: "owners.name" reports b and c
        f.commitElsewhere { r in owner(r, "Ann").name = "Anna" }
        #expect(byOwnerNames.next(timeout: 0) == Seen(count: 3, mod: [1, 2]))
        #expect(sortedOwnerNames.next(timeout: 0) == Seen(count: 3, mod: [0, 1]))
        for e in all { #expect(e.waiting == 0) }

        // Ann's age: nothing
        f.commitElsewhere { r in owner(r, "Anna").age = 3 }
        for e in all { #expect(e.waiting == 0) }

        // Bob links a: a's owners change ("owners", both forms, and "owners.name")
        f.commitElsewhere { r in owner(r, "Bob").dogs.append(dog(r, "a")) }
        for e in [byOwners, byOwnerNames, swiftOwners] { #expect(e.next(timeout: 0) == Seen(count: 3, mod: [0])) }
        #expect(sortedOwnerNames.next(timeout: 0) == Seen(count: 3, mod: [2]))
        for e in all { #expect(e.waiting == 0) }

        // Ann unlinks c
        f.commitElsewhere { r in owner(r, "Anna").dogs.remove(at: 1) }
        for e in [byOwners, byOwnerNames, swiftOwners] { #expect(e.next(timeout: 0) == Seen(count: 3, mod: [2])) }
        #expect(sortedOwnerNames.next(timeout: 0) == Seen(count: 3, mod: [0]))
        for e in all { #expect(e.waiting == 0) }

        // Bob deleted: a loses an owner
        f.commitElsewhere { r in r.delete(owner(r, "Bob")) }
        for e in [byOwners, byOwnerNames, swiftOwners] { #expect(e.next(timeout: 0) == Seen(count: 3, mod: [0])) }
        #expect(sortedOwnerNames.next(timeout: 0) == Seen(count: 3, mod: [2]))
        for e in all { #expect(e.waiting == 0) }

        // a dog's own property reaches the deep observer only
        f.commitElsewhere { r in dog(r, "b").age = 7 }
        #expect(deep.next(timeout: 0) == Seen(count: 3, mod: [1]))
        for e in all { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// A List observer whose elements are reached through backlinks: key paths from the list's
    /// elements (dogs) through "owners", and a LinkingObjects observer with a key path through
    /// the owners' links and back ("dogs.owners.name").
    @Test func listAndLinkingObjectsObserversThroughBacklinks() throws {
        let f = try BacklinkFixture { r in
            let a = r.create(BKDog.self, value: ["name": "a"]), b = r.create(BKDog.self, value: ["name": "b"])
            let ann = r.create(BKOwner.self, value: ["name": "Ann"])
            ann.dogs.append(objectsIn: [a, b])
            let bob = r.create(BKOwner.self, value: ["name": "Bob"])
            bob.dogs.append(b)
            r.create(BKOwner.self, value: ["name": "Cy"])
        }
        let list = Events<Seen>(), listDeep = Events<Seen>(), backAndForth = Events<Seen>()
        try f.run { realm in
            let ann = owner(realm, "Ann")
            f.tokens.append(ann.dogs.observe(keyPaths: ["owners.name"]) { list.add(Seen($0)) })
            f.tokens.append(ann.dogs.observe { listDeep.add(Seen($0)) })
            // a's owners (Ann), observed through their dogs' owners' names
            f.tokens.append(dog(realm, "a").owners.observe(keyPaths: ["dogs.owners.name"]) { backAndForth.add(Seen($0)) })
        }
        let all = [list, listDeep, backAndForth]
        for e in all { #expect(e.next()?.initial == true) }
        try f.markDeliveries()

        // Bob (owner of b) renamed: b of Ann's list; Ann reaches Bob through b
        f.commitElsewhere { r in owner(r, "Bob").name = "Bobby" }
        #expect(list.next(timeout: 0) == Seen(count: 2, mod: [1]))
        #expect(backAndForth.next(timeout: 0) == Seen(count: 1, mod: [0]))
        for e in all { #expect(e.waiting == 0) }

        // Cy links a: a's owners change (the list observer); a's own owners now hold Cy too
        f.commitElsewhere { r in owner(r, "Cy").dogs.append(dog(r, "a")) }
        #expect(list.next(timeout: 0) == Seen(count: 2, mod: [0]))
        #expect(backAndForth.next(timeout: 0) == Seen(count: 2, ins: [1], mod: [0]))
        for e in all { #expect(e.waiting == 0) }

        // Cy's age: nothing
        f.commitElsewhere { r in owner(r, "Cy").age = 9 }
        for e in all { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// A key path may not go on after a LinkingObjects property into a property its origin
    /// class lacks; the message names the property and its class.
    @Test func unknownPropertyAfterBacklinksTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([BKOwner.self, BKDog.self]))
            try! realm.write { realm.create(BKDog.self) }
            _ = realm.objects(BKDog.self).observe(keyPaths: ["owners.color"], on: DispatchQueue(label: "q")) { _ in }
        }
        expectMessage(result, "Invalid argument: Property 'color' not found in object of type 'BKOwner'")
    }
}
