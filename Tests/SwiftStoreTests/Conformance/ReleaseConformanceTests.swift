// RealmSwift conformance: nothing keeps a Realm alive after its last user lets go. RealmSwift's
// Realm, objects, collections and tokens hold their Realm strongly and nothing holds them back,
// so a Realm (and its open file) goes once the program's last reference to any of them goes.
// Each case below uses one part of the API in a scope and checks that the Realm's core and the
// objects it handed out are released after it.
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

final class CfRlPerson: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
    @Persisted var dogs: List<CfRlDog>
    @Persisted var favorites: MutableSet<CfRlDog>
    @Persisted var byName: Map<String, CfRlDog?>
}

final class CfRlDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<CfRlPerson>
}

final class CfRlProjection: Projection<CfRlPerson> {
    @Projected(\CfRlPerson.name) var title
    @Projected(\CfRlPerson.dogs.projectTo.name) var dogNames: ProjectedCollection<String>
}

@Suite("Conformance: releasing a Realm")
struct ReleaseConformanceTests {
    /// Runs `body` with a Realm holding one person with two dogs, then reports whether the
    /// Realm's core and the person outlived the scope.
    private func released(_ body: (Realm, CfRlPerson) throws -> Void) throws -> (core: Bool, person: Bool) {
        let dir = TempDir()
        weak var core: RealmCore?
        weak var person: CfRlPerson?
        try {
            let realm = try Realm(configuration: dir.config([CfRlPerson.self, CfRlDog.self]))
            core = realm.core
            try realm.write {
                let p = realm.create(CfRlPerson.self, value: ["name": "Ann", "age": 30])
                let rex = realm.create(CfRlDog.self, value: ["name": "Rex", "age": 3])
                let fido = realm.create(CfRlDog.self, value: ["name": "Fido", "age": 5])
                p.dogs.append(objectsIn: [rex, fido])
                p.favorites.insert(rex)
                p.byName["rex"] = rex
            }
            let p = realm.objects(CfRlPerson.self).first!
            person = p
            try body(realm, p)
        }()
        return (core == nil, person == nil)
    }

    private func expectReleased(_ what: String, _ body: (Realm, CfRlPerson) throws -> Void,
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let r = try released(body)
        #expect(r.core, "\(what): the Realm outlived its last user", sourceLocation: sourceLocation)
        #expect(r.person, "\(what): an object outlived its last user", sourceLocation: sourceLocation)
    }

    /// Opening, writing and reading.
    @Test func openingWritingAndReading() throws {
        let dir = TempDir()
        let config = dir.config([CfRlPerson.self, CfRlDog.self])
        weak var a: RealmCore?
        try { let realm = try Realm(configuration: config); a = realm.core }()
        #expect(a == nil, "open only")
        weak var b: RealmCore?
        try { let realm = try Realm(configuration: config); b = realm.core; realm.beginWrite(); realm.cancelWrite() }()
        #expect(b == nil, "begin and cancel")
        weak var c: RealmCore?
        try { let realm = try Realm(configuration: config); c = realm.core; try realm.write { } }()
        #expect(c == nil, "empty write")
        weak var d: RealmCore?
        try { let realm = try Realm(configuration: config); d = realm.core; try realm.write { realm.create(CfRlDog.self, value: ["name": "x"]) } }()
        #expect(d == nil, "create in write")
        weak var e: RealmCore?
        try { let realm = try Realm(configuration: config); e = realm.core; _ = realm.objects(CfRlDog.self).count }()
        #expect(e == nil, "count")
        weak var f: RealmCore?
        try { let realm = try Realm(configuration: config); f = realm.core; _ = realm.objects(CfRlDog.self).first?.name }()
        #expect(f == nil, "first")
    }

    /// Reading a List, MutableSet, Map or LinkingObjects property of a managed object. The
    /// object keeps the collection's accessor in its property wrapper; when that accessor held
    /// the object itself as its owner, the two kept each other, and with them the Realm, alive
    /// after the program's last reference to either went (this test failed so).
    @Test func collectionAccessorsReleaseTheirRealm() throws {
        let dir = TempDir()
        let config = dir.config([CfRlPerson.self, CfRlDog.self])
        func probe(_ what: String, _ body: (Realm) -> Void) throws {
            weak var w: RealmCore?
            try { let realm = try Realm(configuration: config); w = realm.core; try realm.write { body(realm) } }()
            #expect(w == nil, "\(what)")
        }
        try probe("create person, no collection read") { r in _ = r.create(CfRlPerson.self, value: ["name": "a"]) }
        try probe("list read") { r in _ = r.create(CfRlPerson.self, value: ["name": "b"]).dogs.count }
        try probe("list append") { r in r.create(CfRlPerson.self, value: ["name": "c"]).dogs.append(r.create(CfRlDog.self)) }
        try probe("set insert") { r in r.create(CfRlPerson.self, value: ["name": "d"]).favorites.insert(r.create(CfRlDog.self)) }
        try probe("map set") { r in r.create(CfRlPerson.self, value: ["name": "e"]).byName["x"] = r.create(CfRlDog.self) }
        try probe("set read") { r in _ = r.create(CfRlPerson.self, value: ["name": "f"]).favorites.count }
        try probe("map read") { r in _ = r.create(CfRlPerson.self, value: ["name": "g"]).byName.count }
        try probe("linking objects read") { r in _ = r.create(CfRlDog.self).owners.count }
        try probe("list kept by the program") { r in
            let p = r.create(CfRlPerson.self, value: ["name": "h"])
            let dogs = p.dogs
            dogs.append(r.create(CfRlDog.self))
            #expect(p.dogs.count == 1 && dogs.first?.owners.count == 1)
        }
    }

    @Test func objectsAndCollections() throws {
        try expectReleased("results") { realm, _ in
            let all = realm.objects(CfRlDog.self).filter("age > 1").sorted(byKeyPath: "name")
            #expect(all.map(\.name) == ["Fido", "Rex"])
        }
        try expectReleased("list, set and map") { _, p in
            #expect(p.dogs.count == 2 && p.favorites.count == 1 && p.byName["rex"]??.name == "Rex")
            #expect(p.dogs.where { $0.age > 4 }.count == 1)
        }
        try expectReleased("linking objects") { _, p in
            #expect(p.dogs[0].owners.first?.name == "Ann")
        }
        try expectReleased("any collection") { _, p in
            #expect(AnyRealmCollection(p.dogs).count == 2)
        }
        try expectReleased("sections") { realm, _ in
            let s = realm.objects(CfRlDog.self).sectioned(by: \.age, ascending: true)
            #expect(s.count == 2)
        }
        try expectReleased("projection") { realm, _ in
            let pr = realm.objects(CfRlProjection.self).first!
            #expect(pr.title == "Ann" && Array(pr.dogNames) == ["Rex", "Fido"])
        }
    }

    @Test func frozenAndHandedOver() throws {
        try expectReleased("frozen") { realm, p in
            let frozen = p.freeze()
            #expect(frozen.dogs.freeze().count == 2)
            #expect(realm.freeze().objects(CfRlDog.self).count == 2)
        }
        try expectReleased("thread-safe reference") { realm, p in
            let ref = ThreadSafeReference(to: p)
            #expect(realm.resolve(ref)?.name == "Ann")
        }
    }

    @Test func invalidatedTokens() throws {
        let queue = DispatchQueue(label: "release")
        try expectReleased("collection observer") { realm, _ in
            let delivered = DispatchSemaphore(value: 0)
            let token = realm.objects(CfRlDog.self).observe(on: queue) { _ in delivered.signal() }
            #expect(delivered.wait(timeout: .now() + 30) == .success)
            token.invalidate()
            queue.sync {}
        }
        try expectReleased("object observer") { realm, p in
            let delivered = DispatchSemaphore(value: 0)
            let token = p.observe(on: queue) { (_: ObjectChange<CfRlPerson>) in delivered.signal() }
            try realm.write { p.age = 31 }
            #expect(delivered.wait(timeout: .now() + 30) == .success)
            token.invalidate()
            queue.sync {}
        }
    }
}
