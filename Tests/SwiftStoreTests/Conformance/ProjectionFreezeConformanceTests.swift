// RealmSwift conformance: a projection is ThreadConfined, as RealmSwift's is. It freezes (a
// projection of the frozen object, readable from another thread), thaws (nil once its object
// is deleted), and goes through a ThreadSafeReference.
import Foundation
import Testing
import TestSupport
import SwiftStore

final class CfPfPerson: Object {
    @Persisted var firstName = ""
    @Persisted var age = 0
    @Persisted var friends: List<CfPfPerson>
}

final class CfPfProjection: Projection<CfPfPerson> {
    @Projected(\CfPfPerson.firstName) var name
    @Projected(\CfPfPerson.age) var years
    @Projected(\CfPfPerson.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>
}

@Suite("Conformance: freezing projections")
struct ProjectionFreezeConformanceTests {
    @Test func freezeThawAndHandOver() throws {
        let dir = TempDir()
        let config = dir.config([CfPfPerson.self])
        let realm = try Realm(configuration: config)
        try realm.write { realm.create(CfPfPerson.self, value: ["firstName": "Ann", "age": 30]) }
        let live = realm.objects(CfPfProjection.self).first!
        #expect(!live.isFrozen)
        #expect(live.thaw() === live)

        let frozen = live.freeze()
        #expect(frozen.isFrozen && frozen.realm?.isFrozen == true)
        #expect(frozen.freeze() === frozen)
        try realm.write { live.years = 31 }
        #expect(frozen.years == 30 && live.years == 31)
        // a frozen projection is read from another thread
        nonisolated(unsafe) var readElsewhere = ""
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let shared = frozen
        Thread.detachNewThread {
            readElsewhere = shared.name
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(readElsewhere == "Ann")

        let thawed = frozen.thaw()
        #expect(thawed?.isFrozen == false && thawed?.years == 31)

        // through a ThreadSafeReference to another thread's Realm
        let ref = ThreadSafeReference(to: live)
        nonisolated(unsafe) var resolvedAge = -1
        Thread.detachNewThread {
            let other = try! Realm(configuration: config)
            resolvedAge = other.resolve(ref)?.years ?? -2
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(resolvedAge == 31)

        try realm.write { realm.delete(realm.objects(CfPfPerson.self)) }
        #expect(frozen.thaw() == nil)
    }

    /// A projected collection freezes and thaws with its backing collection, and
    /// `index(matching:)` searches the backing objects, as RealmSwift's projected lists do.
    @Test func projectedCollectionsFreezeThawAndSearch() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfPfPerson.self]))
        try realm.write {
            let ann = realm.create(CfPfPerson.self, value: ["firstName": "Ann", "age": 30])
            ann.friends.append(realm.create(CfPfPerson.self, value: ["firstName": "Bob", "age": 40]))
            ann.friends.append(realm.create(CfPfPerson.self, value: ["firstName": "Cat", "age": 50]))
        }
        let ann = realm.objects(CfPfProjection.self).filter("firstName == 'Ann'").first!
        let names = ann.friendNames
        #expect(!names.isFrozen)
        #expect(names.index(matching: NSPredicate(format: "age > %@", 45 as NSNumber)) == 1)
        #expect(names.index(matching: NSPredicate(format: "age > 99")) == nil)
        let frozen = names.freeze()
        #expect(frozen.isFrozen && Array(frozen) == ["Bob", "Cat"])
        try realm.write { realm.objects(CfPfPerson.self).filter("firstName == 'Ann'").first!.friends.removeFirst() }
        #expect(Array(frozen) == ["Bob", "Cat"] && Array(names) == ["Cat"])
        #expect(frozen.thaw().map(Array.init) == ["Cat"])
        try realm.write { realm.delete(realm.objects(CfPfPerson.self).filter("firstName == 'Ann'")) }
        #expect(frozen.thaw() == nil)
    }
}
