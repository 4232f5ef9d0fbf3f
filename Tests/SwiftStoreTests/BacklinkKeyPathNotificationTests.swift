import Foundation
import Testing
import TestSupport
@testable import SwiftStore

final class BKOwner: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<BKDog>
    @Persisted var pet: BKDog?
    @Persisted var kennel: MutableSet<BKDog>
    @Persisted var named: Map<String, BKDog?>
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

    /// A query whose filter or sort reads backlinks ("owners.@count", "ANY owners.name") sees a
    /// change that touches only the backlinks: another object linking or unlinking an element,
    /// the name of an object linking to it written, an object linking to it deleted. Over a List
    /// (run loop, queue, with key paths that leave "owners" out), over LinkingObjects, and over
    /// the table (filtered and sorted). Before, the List's and the LinkingObjects' queries missed
    /// every one of these (their watch followed the collection and its elements' own columns).
    @Test func queriesThroughBacklinksSeeBacklinkChanges() throws {
        let f = try BacklinkFixture { r in
            let dogs = ["a", "b", "c"].map { r.create(BKDog.self, value: ["name": $0]) }
            let ann = r.create(BKOwner.self, value: ["name": "Ann"])
            ann.dogs.append(objectsIn: dogs)
            r.create(BKOwner.self, value: ["name": "Bob"])
            r.create(BKOwner.self, value: ["name": "Cy", "pet": dogs[1]])
        }
        let queue = DispatchQueue(label: "queries-through-backlinks")
        let shared = Events<Seen>(), bobs = Events<Seen>(), bobsByName = Events<Seen>(), sharedOnQueue = Events<Seen>(),
            keepersShared = Events<Seen>(), table = Events<Seen>(), tableSorted = Events<Seen>()
        try f.run { realm in
            let ann = owner(realm, "Ann")
            f.tokens.append(ann.dogs.filter("owners.@count > 1").observe { shared.add(Seen($0)) })
            f.tokens.append(ann.dogs.filter("ANY owners.name == 'Bob'").observe { bobs.add(Seen($0)) })
            f.tokens.append(ann.dogs.filter("ANY @links.BKOwner.dogs.name == 'Bob'").observe(keyPaths: ["name"]) {
                bobsByName.add(Seen($0))
            })
            f.tokens.append(ann.dogs.filter("owners.@count > 1").observe(on: queue) { sharedOnQueue.add(Seen($0)) })
            // b's keepers (Cy), filtered by how many owners their pet has
            f.tokens.append(dog(realm, "b").keepers.filter("pet.owners.@count > 1").observe { keepersShared.add(Seen($0)) })
            f.tokens.append(realm.objects(BKDog.self).filter("owners.@count > 1").observe { table.add(Seen($0)) })
            f.tokens.append(realm.objects(BKDog.self).filter("ANY owners.name == 'Bob'")
                .sorted(byKeyPath: "name", ascending: false).observe { tableSorted.add(Seen($0)) })
        }
        // (the queue observer is left out of the checks that nothing came: its deliveries are not
        // ordered with the run loop's, so a late one would pass them unseen)
        let all = [shared, bobs, bobsByName, keepersShared, table, tableSorted]
        #expect(sharedOnQueue.next() == Seen(initial: true, count: 0))
        for e in all { #expect(e.next() == Seen(initial: true, count: 0)) }
        try f.markDeliveries()

        // Bob links b: b has two owners, one of them Bob
        f.commitElsewhere { r in owner(r, "Bob").dogs.append(dog(r, "b")) }
        for e in [shared, bobs, bobsByName, keepersShared, table, tableSorted] {
            #expect(e.next(timeout: 0) == Seen(count: 1, ins: [0]))
        }
        #expect(sharedOnQueue.next() == Seen(count: 1, ins: [0]))
        for e in all { #expect(e.waiting == 0) }

        // Bob renamed: no owner of b is called Bob any more
        f.commitElsewhere { r in owner(r, "Bob").name = "Bobby" }
        for e in [bobs, bobsByName, tableSorted] { #expect(e.next(timeout: 0) == Seen(count: 0, del: [0])) }
        for e in all { #expect(e.waiting == 0) }

        // Bobby deleted: b loses an owner
        f.commitElsewhere { r in r.delete(owner(r, "Bobby")) }
        for e in [shared, keepersShared, table] { #expect(e.next(timeout: 0) == Seen(count: 0, del: [0])) }
        #expect(sharedOnQueue.next() == Seen(count: 0, del: [0]))
        for e in all { #expect(e.waiting == 0) }

        // a property no query reads: nothing
        f.commitElsewhere { r in owner(r, "Cy").age = 5 }
        for e in all { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// The same for what a filter reads through a link when the observer's key paths leave it out
    /// (before, only the elements' own properties were followed then), and for a SUBQUERY over
    /// backlinks (no key path: any write of a property it reads makes the results be compared).
    @Test func queriesThroughLinksWithKeyPathsAndSubqueries() throws {
        let f = try BacklinkFixture { r in
            let dogs = ["a", "b"].map { r.create(BKDog.self, value: ["name": $0]) }
            let ann = r.create(BKOwner.self, value: ["name": "Ann", "pet": dogs[0]])
            ann.dogs.append(objectsIn: dogs)
            r.create(BKOwner.self, value: ["name": "Bob"])
        }
        let petNamed = Events<Seen>(), subquery = Events<Seen>()
        try f.run { realm in
            f.tokens.append(dog(realm, "a").keepers.filter("pet.name == 'z'").observe(keyPaths: ["age"]) {
                petNamed.add(Seen($0))
            })
            f.tokens.append(owner(realm, "Ann").dogs.filter("SUBQUERY(owners, $o, $o.age > 3).@count > 0").observe {
                subquery.add(Seen($0))
            })
        }
        let all = [petNamed, subquery]
        for e in all { #expect(e.next() == Seen(initial: true, count: 0)) }
        try f.markDeliveries()

        // the name of the keeper's pet
        f.commitElsewhere { r in dog(r, "a").name = "z" }
        #expect(petNamed.next(timeout: 0) == Seen(count: 1, ins: [0]))
        for e in all { #expect(e.waiting == 0) }

        // an owner's age, then another owner linking b
        // (Ann is a's keeper: her age is a modification for the key paths ["age"])
        f.commitElsewhere { r in owner(r, "Ann").age = 4 }
        #expect(subquery.next(timeout: 0) == Seen(count: 2, ins: [0, 1]))
        #expect(petNamed.next(timeout: 0) == Seen(count: 1, mod: [0]))
        f.commitElsewhere { r in owner(r, "Ann").age = 1 }
        #expect(subquery.next(timeout: 0) == Seen(count: 0, del: [0, 1]))
        #expect(petNamed.next(timeout: 0) == Seen(count: 1, mod: [0]))
        f.commitElsewhere { r in
            owner(r, "Bob").age = 9
            owner(r, "Bob").dogs.append(dog(r, "b"))
        }
        #expect(subquery.next(timeout: 0) == Seen(count: 1, ins: [0]))
        for e in all { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// A query over a List observed with key paths reports modifications for those key paths
    /// only: a write of a property the filter reads but the key paths leave out moves elements
    /// in or out of the results, and is no modification of one that stays (as in RealmSwift).
    /// Before, every property of the elements counted as a modification then.
    @Test func aQueryOverAListWithKeyPathsModifiesOnlyForThem() throws {
        let f = try BacklinkFixture { r in
            let dogs = ["a", "b"].map { r.create(BKDog.self, value: ["name": $0]) }
            r.create(BKOwner.self, value: ["name": "Ann"]).dogs.append(objectsIn: dogs)
        }
        let named = Events<Seen>(), aged = Events<Seen>()
        try f.run { realm in
            f.tokens.append(owner(realm, "Ann").dogs.filter("name != 'q'").observe(keyPaths: ["name"]) { named.add(Seen($0)) })
            f.tokens.append(owner(realm, "Ann").dogs.filter("age > 3").observe(keyPaths: ["name"]) { aged.add(Seen($0)) })
        }
        #expect(named.next() == Seen(initial: true, count: 2))
        #expect(aged.next() == Seen(initial: true, count: 0))
        try f.markDeliveries()
        f.commitElsewhere { r in dog(r, "a").age = 7 }
        #expect(aged.next(timeout: 0) == Seen(count: 1, ins: [0]))
        #expect(named.next(timeout: 0) == nil)
        f.commitElsewhere { r in dog(r, "a").age = 8 }
        #expect(aged.next(timeout: 0) == nil)
        f.commitElsewhere { r in dog(r, "a").name = "a2" }
        #expect(aged.next(timeout: 0) == Seen(count: 1, mod: [0]))
        #expect(named.next(timeout: 0) == Seen(count: 2, mod: [0]))
        try f.finish()
    }

    /// An aggregate over linked objects (`dogs.@max.age`) reads the linked objects' property: a
    /// write of it reaches a table query and a query over LinkingObjects (by key path, and by
    /// column through a SUBQUERY). Before, the table query and the SUBQUERY's missed it.
    @Test func aggregatesOverLinkedObjectsAreDependencies() throws {
        let f = try BacklinkFixture { r in
            let dogs = ["a", "b"].map { r.create(BKDog.self, value: ["name": $0]) }
            r.create(BKOwner.self, value: ["name": "Ann"]).dogs.append(objectsIn: dogs)
        }
        let table = Events<Seen>(), bySubquery = Events<Seen>(), byPath = Events<Seen>()
        try f.run { realm in
            f.tokens.append(realm.objects(BKOwner.self).filter("dogs.@max.age > 5").observe { table.add(Seen($0)) })
            f.tokens.append(dog(realm, "b").owners.filter("SUBQUERY(dogs, $d, $d.name == 'x').@count == 0 AND dogs.@max.age > 5")
                .observe(keyPaths: ["name"]) { bySubquery.add(Seen($0)) })
            f.tokens.append(dog(realm, "b").owners.filter("dogs.@max.age > 5").observe(keyPaths: ["name"]) { byPath.add(Seen($0)) })
        }
        for e in [table, bySubquery, byPath] { #expect(e.next() == Seen(initial: true, count: 0)) }
        try f.markDeliveries()
        f.commitElsewhere { r in dog(r, "a").age = 10 }
        for e in [table, bySubquery, byPath] { #expect(e.next(timeout: 0) == Seen(count: 1, ins: [0])) }
        try f.finish()
    }

    /// A write made without notifying the observers of queries over a List (one through
    /// backlinks, one through the elements' own properties) is not in their next change sets:
    /// they start from the results the write left. Before, the next commit's change set was
    /// compared with the results before the skipped write and reported its changes again.
    @Test func aWriteWithoutNotifyingIsNotReportedLater() throws {
        let f = try BacklinkFixture { r in
            let dogs = ["a", "b", "c"].map { r.create(BKDog.self, value: ["name": $0]) }
            r.create(BKOwner.self, value: ["name": "Ann"]).dogs.append(objectsIn: dogs)
            r.create(BKOwner.self, value: ["name": "Bob"])
        }
        let shared = Events<Seen>(), plain = Events<Seen>()
        let skipped = try f.run { realm -> [NotificationToken] in
            let ann = owner(realm, "Ann")
            let t = [ann.dogs.filter("owners.@count > 1").observe { shared.add(Seen($0)) },
                     ann.dogs.filter("name != 'zz'").observe { plain.add(Seen($0)) }]
            f.tokens += t
            return t
        }
        #expect(shared.next() == Seen(initial: true, count: 0))
        #expect(plain.next() == Seen(initial: true, count: 3))
        try f.markDeliveries()
        try f.run { realm in
            try realm.write(withoutNotifying: skipped) {
                owner(realm, "Bob").dogs.append(dog(realm, "b"))
                owner(realm, "Ann").dogs.append(realm.create(BKDog.self, value: ["name": "d"]))
            }
        }
        _ = f.done.next(timeout: 2)
        #expect(shared.waiting == 0 && plain.waiting == 0)
        f.commitElsewhere { r in
            owner(r, "Bob").dogs.append(dog(r, "c"))
            dog(r, "a").name = "a2"
        }
        #expect(shared.next(timeout: 0) == Seen(count: 2, ins: [1]))
        #expect(plain.next(timeout: 0) == Seen(count: 4, mod: [0]))
        try f.finish()
    }

    /// Queries over a MutableSet and a Map see a backlink change (another owner linking an
    /// element); a LinkingObjects query sorted through a link (`pet.name`) and observed with key
    /// paths that leave it out sees the order change; a filter whose path is longer than a key
    /// path can be (five columns) sees a write of the column it ends in.
    @Test func setMapSortAndLongPathQueries() throws {
        let f = try BacklinkFixture { r in
            let dogs = ["a", "b", "p", "q"].map { r.create(BKDog.self, value: ["name": $0]) }
            let ann = r.create(BKOwner.self, value: ["name": "Ann", "pet": dogs[2]])
            ann.dogs.append(objectsIn: dogs[0...2])
            ann.kennel.insert(objectsIn: dogs[0...1])
            ann.named["x"] = dogs[0]
            ann.named["y"] = dogs[1]
            let bob = r.create(BKOwner.self, value: ["name": "Bob", "pet": dogs[3]])
            bob.dogs.append(dogs[0])
        }
        let kennel = Events<Seen>(), named = Events<Seen>(), byPet = Events<Seen>(), long = Events<Seen>()
        var byPetNames = Events<[String]>()
        try f.run { realm in
            let ann = owner(realm, "Ann")
            f.tokens.append(ann.kennel.filter("owners.@count > 1").observe { kennel.add(Seen($0)) })
            f.tokens.append(ann.named.filter("owners.@count > 1").observe { named.add(Seen($0)) })
            f.tokens.append(dog(realm, "a").owners.sorted(byKeyPath: "pet.name").observe(keyPaths: ["age"]) { c in
                byPet.add(Seen(c))
                if case .update(let r, _, _, _) = c { byPetNames.add(r.map(\.name)) }
            })
            f.tokens.append(ann.dogs.filter("ANY owners.pet.owners.pet.name == 'zz'").observe(keyPaths: ["age"]) {
                long.add(Seen($0))
            })
        }
        #expect(kennel.next() == Seen(initial: true, count: 1))
        #expect(named.next() == Seen(initial: true, count: 1))
        #expect(byPet.next() == Seen(initial: true, count: 2))
        #expect(long.next() == Seen(initial: true, count: 0))
        try f.markDeliveries()
        // Bob links b: b has two owners, in the set and the map
        f.commitElsewhere { r in owner(r, "Bob").dogs.append(dog(r, "b")) }
        #expect(kennel.next(timeout: 0)?.insertions.count == 1)
        #expect(named.next(timeout: 0)?.insertions.count == 1)
        // the owners' pets renamed so that their order swaps (p -> r, after q)
        f.commitElsewhere { r in dog(r, "p").name = "r" }
        #expect(byPet.next(timeout: 0)?.count == 2)
        #expect(byPetNames.next(timeout: 0) == ["Bob", "Ann"])
        // Ann's pet (in her dogs), reached from each of her dogs through owners.pet.owners.pet,
        // called zz
        f.commitElsewhere { r in dog(r, "r").name = "zz" }
        #expect(long.next(timeout: 0) == Seen(count: 3, ins: [0, 1, 2]))
        for e in [kennel, named, byPet, long] { #expect(e.waiting == 0) }
        byPetNames = Events()
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
