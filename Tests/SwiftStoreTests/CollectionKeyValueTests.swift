// Collection members that came after the first collection tests: key-value coding on maps,
// key-path aggregates and sorts on maps of objects, the typed value(forKey:) of sets, and
// SortDescriptor from a PartialKeyPath.
import Foundation
import Testing
@testable import SwiftStore

@Suite struct CollectionKeyValueTests {
    @Test func mapValueForKeyIsTheValueOfThatKey() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let v = try colSeedValues(realm)
        #expect(v.intMap.value(forKey: "k0") as? Int == 3)
        #expect(v.intMap.value(forKey: "k2") as? Int == 2)
        #expect(v.intMap.value(forKey: "missing") == nil)
        #expect(v.stringMap.value(forKeyPath: "k3") as? String == "fig")
        #expect(v.intMap.value(forKeyPath: "@count") as? Int == 4)
        #expect(v.intMap.value(forKeyPath: "@sum.self") as? Int == 7)
        #expect(v.intMap.value(forKeyPath: "@max.self") as? Int == 3)
    }

    @Test func mapSetValueForKeySetsThatKey() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let v = try colSeedValues(realm)
        try realm.write {
            v.intMap.setValue(9, forKey: "k9")
            v.intMap.setValue(0, forKey: "k0")
        }
        #expect(v.intMap["k9"] == 9)
        #expect(v.intMap["k0"] == 0)
        #expect(v.intMap.count == 5)
    }

    @Test func unmanagedMapKeyValueCoding() {
        let map = Map<String, Int>()
        map["a"] = 1
        map.setValue(2, forKey: "b")
        #expect(map["b"] == 2)
        #expect(map.value(forKey: "a") as? Int == 1)
    }

    @Test func mapOfObjectsAggregatesByKeyPath() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let (a, b, _) = try colSeedBoxes(realm)
        #expect(a.itemMap.min(of: \ColItem.double) == 0.5)
        #expect(a.itemMap.max(of: \ColItem.date) == colT0.addingTimeInterval(30))
        #expect(a.itemMap.sum(of: \ColItem.int) == 6)
        #expect(a.itemMap.average(of: \ColItem.double) == 1.0)
        #expect(b.itemMap.sum(of: \ColItem.int8) == Int8(3))
    }

    @Test func mapOfObjectsSortsByKeyPath() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let (a, _, _) = try colSeedBoxes(realm)
        #expect(a.itemMap.sorted(by: \ColItem.name, ascending: false).map { $0?.id } == [3, 1])
        #expect(a.itemMap.sorted(by: \ColItem.double, ascending: true).map { $0?.id } == [3, 1])
    }

    @Test func mutableSetValueForKeyIsAnArrayOfObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let (a, _, _) = try colSeedBoxes(realm)
        let names: [AnyObject] = a.itemSet.value(forKey: "name")
        #expect(Set(names.compactMap { $0 as? String }) == ["apple", "cherry"])
    }

    @Test func sortDescriptorFromAPartialKeyPath() {
        let path: PartialKeyPath<ColItem> = \ColItem.double
        let descriptor = SortDescriptor(keyPath: path, ascending: false)
        #expect(descriptor.keyPath == "double")
        #expect(!descriptor.ascending)
    }
}
