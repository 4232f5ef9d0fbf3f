// RealmSwift conformance: Projection and @Projected. Passthrough, renamed, transformed and
// linked properties, collections mapped with projectTo, reads and writes through the
// projection, realm.objects(SomeProjection.self), and object notifications that fire only for
// the projected properties.
import Foundation
import Testing
import TestSupport
import SwiftStore

final class CfPjAddress: EmbeddedObject {
    @Persisted var city = ""
    @Persisted var country = ""
}

final class CfPjPerson: Object {
    @Persisted var firstName = ""
    @Persisted var lastName = ""
    @Persisted var age = 0
    @Persisted var address: CfPjAddress?
    @Persisted var friends: List<CfPjPerson>
    @Persisted var clubs: MutableSet<CfPjPerson>
    @Persisted var notes: List<String>
}

final class CfPjPersonProjection: Projection<CfPjPerson> {
    @Projected(\CfPjPerson.firstName) var firstName
    @Projected(\CfPjPerson.lastName) var surname
    @Projected(\CfPjPerson.lastName.localizedUppercase) var lastNameCaps
    @Projected(\CfPjPerson.address?.city) var homeCity
    @Projected(\CfPjPerson.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>
    @Projected(\CfPjPerson.clubs.projectTo.age) var clubAges: ProjectedCollection<Int>
    @Projected(\CfPjPerson.notes) var notes
}

@Suite("Conformance: projections")
struct ProjectionConformanceTests {
    private func people(_ realm: Realm) throws {
        try realm.write {
            let ann = realm.create(CfPjPerson.self, value: ["firstName": "Ann", "lastName": "Lee", "age": 30,
                                                            "address": ["city": "Oslo", "country": "NO"]])
            let bob = realm.create(CfPjPerson.self, value: ["firstName": "Bob", "lastName": "Ray", "age": 40])
            let cat = realm.create(CfPjPerson.self, value: ["firstName": "Cat", "lastName": "Fox", "age": 50])
            ann.friends.append(objectsIn: [bob, cat])
            ann.clubs.insert(cat)
            ann.notes.append(objectsIn: ["a", "b"])
        }
    }

    @Test func readsThroughTheKeyPaths() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfPjPerson.self, CfPjAddress.self]))
        try people(realm)
        let ann = realm.objects(CfPjPerson.self).filter("firstName == 'Ann'").first!
        let p = CfPjPersonProjection(projecting: ann)
        #expect(p.rootObject == ann)
        #expect(p.firstName == "Ann" && p.surname == "Lee" && p.lastNameCaps == "LEE")
        #expect(p.homeCity == "Oslo")
        #expect(Array(p.friendNames) == ["Bob", "Cat"])
        #expect(p.friendNames.count == 2 && p.friendNames[1] == "Cat" && p.friendNames.index(of: "Cat") == 1)
        #expect(Array(p.clubAges) == [50])
        #expect(Array(p.notes) == ["a", "b"])
        #expect(p.realm != nil && !p.isInvalidated)
        // Live: a write to the object shows through the projection.
        try realm.write { ann.friends.append(ann) }
        #expect(Array(p.friendNames) == ["Bob", "Cat", "Ann"])
        // Projections of the same object are equal and hash alike.
        let q = CfPjPersonProjection(projecting: ann)
        #expect(p == q && p.hashValue == q.hashValue)
        #expect(p.description.contains("friendNames(\\.friends.firstName)"))
        #expect(p.description.contains("surname(\\.lastName) = Lee;"))
    }

    @Test func writesThroughTheKeyPaths() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfPjPerson.self, CfPjAddress.self]))
        try people(realm)
        let ann = realm.objects(CfPjPerson.self).filter("firstName == 'Ann'").first!
        let p = CfPjPersonProjection(projecting: ann)
        try realm.write {
            p.surname = "Kay"
            p.firstName = "Anna"
            p.friendNames[0] = "Bobby"
        }
        #expect(ann.lastName == "Kay" && ann.firstName == "Anna")
        #expect(realm.objects(CfPjPerson.self).filter("firstName == 'Bobby'").count == 1)
        // An unmanaged object can be projected too.
        let loose = CfPjPerson()
        let lp = CfPjPersonProjection(projecting: loose)
        lp.firstName = "Free"
        #expect(loose.firstName == "Free" && lp.realm == nil && lp.friendNames.isEmpty)
    }

    @Test func realmObjectsReturnsResultsOfProjections() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfPjPerson.self, CfPjAddress.self]))
        try people(realm)
        let all: Results<CfPjPersonProjection> = realm.objects(CfPjPersonProjection.self)
        #expect(all.count == 3)
        #expect(all.map(\.firstName).sorted() == ["Ann", "Bob", "Cat"])
        let old = all.filter("age >= 40").sorted(byKeyPath: "age", ascending: false)
        #expect(old.map(\.surname) == ["Fox", "Ray"])
        #expect(old.first?.rootObject.age == 50)
        #expect(old[1].lastNameCaps == "RAY")
    }

    @Test func observeFiresForProjectedPropertiesOnly() throws {
        let thread = RunLoopThread()
        let dir = TempDir()
        let config = dir.config([CfPjPerson.self, CfPjAddress.self])
        let events = Events<[String]>()
        let named = Events<[String]>()
        let tokens = UncheckedBox<[NotificationToken]>([])
        try thread.sync {
            let realm = try Realm(configuration: config)
            try self.people(realm)
            let ann = realm.objects(CfPjPerson.self).filter("firstName == 'Ann'").first!
            let p = CfPjPersonProjection(projecting: ann)
            tokens.value.append(p.observe { change in
                switch change {
                case .change(let projection, let props):
                    events.add([projection.firstName] + props.map { "\($0.name)=\($0.newValue.map { "\($0)" } ?? "nil")" })
                case .deleted: events.add(["deleted"])
                case .error: events.add(["error"])
                }
            })
            tokens.value.append(p.observe(keyPaths: [\CfPjPersonProjection.surname]) { change in
                if case .change(_, let props) = change { named.add(props.map(\.name)) }
                if case .deleted = change { named.add(["deleted"]) }
            })
        }
        func writeElsewhere(_ body: @escaping @Sendable (Realm, CfPjPerson) -> Void) {
            onNewThread {
                let r = try! Realm(configuration: config)
                try! r.write { body(r, r.objects(CfPjPerson.self).filter("firstName == 'Ann'").first!) }
            }
        }
        // age is not projected: no notification. lastName is (twice: surname and lastNameCaps).
        writeElsewhere { _, a in a.age = 31 }
        writeElsewhere { _, a in a.lastName = "Kay" }
        #expect(events.next() == ["Ann", "surname=Kay", "lastNameCaps=KAY"])
        #expect(named.next() == ["surname", "lastNameCaps"])
        // A friend's name: the friendNames collection key path.
        writeElsewhere { r, _ in r.objects(CfPjPerson.self).filter("firstName == 'Bob'").first!.firstName = "Bo" }
        let friendChange = events.next()
        #expect(friendChange?.first == "Ann")
        #expect(friendChange?.contains(where: { $0.hasPrefix("friendNames=") }) == true)
        // A friend's age is not projected; the embedded city is.
        writeElsewhere { r, _ in r.objects(CfPjPerson.self).filter("firstName == 'Cat'").first!.lastName = "Cox" }
        writeElsewhere { _, a in a.address!.city = "Rome" }
        #expect(events.next() == ["Ann", "homeCity=Optional(\"Rome\")"])
        writeElsewhere { r, a in r.delete(a) }
        #expect(events.next() == ["deleted"])
        #expect(named.next() == ["deleted"])
        try thread.sync {
            for t in tokens.value { t.invalidate() }
            tokens.value = []
        }
        thread.stop()
    }
}
