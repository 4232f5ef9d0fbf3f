// RealmSwift conformance: collections are Equatable. Unmanaged List, MutableSet and Map
// compare by contents; managed ones by identity of the stored collection (the same property
// of the same object); Results, LinkingObjects and AnyRealmCollection by the query they run.
import Foundation
import Testing
import SwiftStore

final class CfOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var ints: List<Int>
    @Persisted var otherInts: List<Int>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted var pets: List<CfPet>
}

final class CfPet: Object {
    @Persisted var name = ""
    @Persisted(originProperty: "pets") var owners: LinkingObjects<CfOwner>
}

/// Requires only `RealmCollection`, as generic user code does: `==` comes with the protocol.
func cfSameCollection<C: RealmCollection>(_ a: C, _ b: C) -> Bool { a == b }

@Suite("Conformance: collection equality")
struct CollectionEqualityConformanceTests {
    @Test func unmanagedCompareByContents() {
        let a = List<Int>(), b = List<Int>()
        a.append(objectsIn: [1, 2, 3]); b.append(objectsIn: [1, 2, 3])
        #expect(a == b)
        #expect(a.isEqual(b))
        #expect(cfSameCollection(a, b))
        b.move(from: 0, to: 2)
        #expect(a != b)
        #expect(!a.isEqual(b))
        #expect(!a.isEqual("not a list"))

        let s1 = MutableSet<String>(), s2 = MutableSet<String>()
        s1.insert(objectsIn: ["x", "y"]); s2.insert(objectsIn: ["y", "x"])
        #expect(s1 == s2)
        s2.insert("z")
        #expect(s1 != s2)

        let m1 = Map<String, Int>(), m2 = Map<String, Int>()
        m1["a"] = 1; m2["a"] = 1
        #expect(m1 == m2)
        m2["a"] = 2
        #expect(m1 != m2)
    }

    @Test func managedCompareByIdentity() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfOwner.self, CfPet.self]))
        let one = CfOwner(), two = CfOwner()
        one.id = 1; two.id = 2
        let pet = CfPet()
        try realm.write {
            one.ints.append(objectsIn: [1, 2])
            one.otherInts.append(objectsIn: [1, 2])
            two.ints.append(objectsIn: [1, 2])
            one.pets.append(pet)
            realm.add([one, two])
        }
        let again = try #require(realm.object(ofType: CfOwner.self, forPrimaryKey: 1))
        // The same list read through another accessor is equal ...
        #expect(one.ints == again.ints)
        #expect(one.tags == again.tags)
        #expect(one.scores == again.scores)
        // ... but equal contents elsewhere are not.
        #expect(one.ints != one.otherInts)
        #expect(one.ints != two.ints)
        let unmanaged = List<Int>()
        unmanaged.append(objectsIn: [1, 2])
        #expect(one.ints != unmanaged)

        let dogs = realm.objects(CfOwner.self)
        #expect(dogs == realm.objects(CfOwner.self))
        #expect(dogs.filter("id > 1") == dogs.filter("id > 1"))
        #expect(dogs.filter("id > 1") != dogs.filter("id > 0"))
        #expect(dogs.sorted(byKeyPath: "id") != dogs)
        #expect(AnyRealmCollection(dogs) == AnyRealmCollection(realm.objects(CfOwner.self)))
        #expect(AnyRealmCollection(one.ints) == AnyRealmCollection(again.ints))
        #expect(AnyRealmCollection(one.ints) != AnyRealmCollection(one.otherInts))
        let petAgain = try #require(realm.objects(CfPet.self).first)
        #expect(pet.owners == petAgain.owners)
        #expect(CfPet().owners == CfPet().owners)
        #expect(pet.owners != CfPet().owners)
    }
}
