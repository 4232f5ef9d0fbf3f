// RealmSwift conformance: the smaller parts of the public surface that RealmSwift code uses:
// RealmOptional(_:), the _realmObjectName/_realmIgnoreClass class overrides, dynamic
// collection access on any Object, RangeExpression forms of List's range operations,
// Decimal128.negate() on a let, and the public _name(for:).
import Foundation
import Testing
import SwiftStore

final class CfRenamed: Object {
    @Persisted var title = ""
    override class func _realmObjectName() -> String? { "CfNameInFile" }
}

final class CfIgnored: Object {
    @Persisted var x = 0
    override class func _realmIgnoreClass() -> Bool { true }
}

final class CfKennel: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<CfTarget>
    @Persisted var set: MutableSet<CfTarget>
    @Persisted var map: Map<String, CfTarget?>
    @Persisted var owner: CfKennel?
}

@Suite("Conformance: public surface")
struct SurfaceConformanceTests {
    @Test func realmOptionalTakesAnInitialValue() {
        let a = RealmOptional<Int>(3)
        #expect(a.value == 3)
        let b = RealmOptional<String>(nil)
        #expect(b.value == nil)
        let c = RealmProperty<Double?>(1.5)
        #expect(c.value == 1.5)
    }

    @Test func realmObjectNameRenamesTheClassInTheSchema() throws {
        #expect(CfRenamed.className() == "CfNameInFile")
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfRenamed.self]))
        #expect(realm.schema["CfNameInFile"] != nil)
        #expect(realm.schema["CfRenamed"] == nil)
        try realm.write { realm.add(CfRenamed(value: ["title": "t"])) }
        #expect(realm.objects(CfRenamed.self).first?.title == "t")
        #expect(realm.dynamicObjects("CfNameInFile").count == 1)
    }

    @Test func ignoredClassStillOpensWhenNamed() throws {
        // Left out of the default schema (DefaultSchemaConformanceTests), but an explicit list
        // still includes it.
        let dir = TempDir()
        let explicit = try Realm(configuration: dir.config([CfIgnored.self]))
        #expect(explicit.schema["CfIgnored"] != nil)
    }

    @Test func dynamicCollectionsOnTypedObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfKennel.self, CfTarget.self]))
        let kennel = CfKennel()
        try realm.write {
            kennel.dogs.append(CfTarget(value: ["name": "rex"]))
            kennel.set.insert(CfTarget(value: ["name": "fido"]))
            kennel.map["a"] = CfTarget(value: ["name": "spot"])
            realm.add(kennel)
        }
        let list = kennel.dynamicList("dogs")
        #expect(list.count == 1)
        #expect(list[0]["name"] as? String == "rex")
        #expect(kennel.dynamicMutableSet("set").first?["name"] as? String == "fido")
        #expect(kennel.dynamicMap("map")["a"]??["name"] as? String == "spot")
        // Live and writable: an append through the dynamic list shows in the typed one.
        try realm.write { list.append(realm.dynamicObjects("CfTarget").filter("name == 'fido'").first!) }
        #expect(kennel.dogs.map(\.name) == ["rex", "fido"])
    }

    @Test func listRangeOperationsTakeRangeExpressions() {
        let list = List<Int>()
        list.append(objectsIn: 0..<8)
        list.removeSubrange(6...)          // [0, 1, 2, 3, 4, 5]
        list.removeSubrange(..<1)          // [1, 2, 3, 4, 5]
        list.replaceSubrange(1...2, with: [9])   // [1, 9, 4, 5]
        list.replaceSubrange(..<1, with: [7, 7]) // [7, 7, 9, 4, 5]
        #expect(Array(list) == [7, 7, 9, 4, 5])
    }

    @Test func decimalNegatesInPlaceOnALet() {
        let d = Decimal128(value: 5)
        let alias = d
        d.negate()
        #expect(d == Decimal128(value: -5))
        #expect(alias == Decimal128(value: -5)) // a class: every reference sees it
        let zero = Decimal128(value: 0)
        zero.negate()
        #expect(zero.stringValue.hasPrefix("-"))
        var copy = Decimal128(value: 2)
        let kept = copy
        copy = -copy                             // the operator makes a new value
        #expect(kept == Decimal128(value: 2))
    }

    @Test func nameForKeyPath() {
        #expect(_name(for: \CfKennel.name) == "name")
        #expect(_name(for: \CfKennel.owner?.name) == "owner.name")
        #expect(_name(for: \CfKennel.dogs) == "dogs")
    }
}
