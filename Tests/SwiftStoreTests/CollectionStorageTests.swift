// List, MutableSet and Map as stored properties, managed and unmanaged: each mutation with
// its exact resulting contents; AnyRealmValue lists and dictionaries nested in a property;
// Results basics and liveness; deleting the objects of a list, a map or a Results.
import Foundation
import Testing
@testable import SwiftStore

/// Primitive collections of every kind on one object.
final class ObjCollHolder: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var ints: List<Int>
    @Persisted var a: MutableSet<Int>
    @Persisted var b: MutableSet<Int>
    @Persisted var scores: Map<String, Int>
    @Persisted var optScores: Map<String, Int?>
    @Persisted var any: AnyRealmValue
    @Persisted var anyValues: List<AnyRealmValue>
    @Persisted var anyMap: Map<String, AnyRealmValue>
}

private let collModels: [ObjectBase.Type] = objectModels + [ObjCollHolder.self]

/// Runs `body` on a managed List<Int> holding `initial` inside a write, then returns the list's
/// contents read through a fresh accessor after the Realm was closed and reopened.
private func managedInts(_ initial: [Int], _ name: String = #function,
                         _ body: (List<Int>) -> Void) throws -> [Int] {
    let dir = TempDir(name)
    let config = dir.config(collModels)
    do {
        let realm = try Realm(configuration: config)
        let h = ObjCollHolder()
        h.ints.append(objectsIn: initial)
        try realm.write { realm.add(h) }
        try realm.write { body(h.ints) }
    }
    let realm = try Realm(configuration: config)
    return Array(try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0)).ints)
}

/// Runs `body` on an unmanaged List<Int> holding `initial` and returns its contents.
private func unmanagedInts(_ initial: [Int], _ body: (List<Int>) -> Void) -> [Int] {
    let list = List<Int>()
    list.append(objectsIn: initial)
    body(list)
    return Array(list)
}

/// Runs `body` on managed sets a (holding `a`) and b (holding `b`) inside a write and returns
/// both sets' contents read back after reopening.
private func managedSets(_ a: [Int], _ b: [Int], _ name: String = #function,
                         _ body: (MutableSet<Int>, MutableSet<Int>) -> Void) throws -> (Set<Int>, Set<Int>) {
    let dir = TempDir(name)
    let config = dir.config(collModels)
    do {
        let realm = try Realm(configuration: config)
        let h = ObjCollHolder()
        h.a.insert(objectsIn: a)
        h.b.insert(objectsIn: b)
        try realm.write { realm.add(h) }
        try realm.write { body(h.a, h.b) }
    }
    let realm = try Realm(configuration: config)
    let h = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
    return (Set(h.a), Set(h.b))
}

private func unmanagedSets(_ a: [Int], _ b: [Int],
                           _ body: (MutableSet<Int>, MutableSet<Int>) -> Void) -> (Set<Int>, Set<Int>) {
    let sa = MutableSet<Int>()
    sa.insert(objectsIn: a)
    let sb = MutableSet<Int>()
    sb.insert(objectsIn: b)
    body(sa, sb)
    return (Set(sa), Set(sb))
}

@Suite struct CollectionStorageTests {
    // MARK: List of primitives: each operation, managed and unmanaged

    @Test func listAppend() throws {
        #expect(try managedInts([1, 2]) { $0.append(3) } == [1, 2, 3])
        #expect(unmanagedInts([1, 2]) { $0.append(3) } == [1, 2, 3])
        #expect(try managedInts([1]) { $0.append(objectsIn: [2, 2, 3]) } == [1, 2, 2, 3])
        #expect(unmanagedInts([1]) { $0.append(objectsIn: [2, 2, 3]) } == [1, 2, 2, 3])
    }

    @Test func listInsert() throws {
        #expect(try managedInts([1, 2, 3]) { $0.insert(0, at: 0) } == [0, 1, 2, 3])
        #expect(try managedInts([1, 2, 3]) { $0.insert(9, at: 3) } == [1, 2, 3, 9])
        #expect(try managedInts([1, 2, 3]) { $0.insert(5, at: 1) } == [1, 5, 2, 3])
        #expect(unmanagedInts([1, 2, 3]) { $0.insert(0, at: 0) } == [0, 1, 2, 3])
        #expect(unmanagedInts([1, 2, 3]) { $0.insert(9, at: 3) } == [1, 2, 3, 9])
    }

    @Test func listRemoveAt() throws {
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.remove(at: 2) } == [1, 2, 4, 5])
        #expect(try managedInts([1, 2, 3]) { $0.remove(at: 0) } == [2, 3])
        #expect(try managedInts([1, 2, 3]) { $0.remove(at: 2) } == [1, 2])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.remove(at: 2) } == [1, 2, 4, 5])
    }

    @Test func listRemoveAll() throws {
        #expect(try managedInts([1, 2, 3]) { $0.removeAll() } == [])
        #expect(unmanagedInts([1, 2, 3]) { $0.removeAll() } == [])
    }

    @Test func listRemoveFirstAndLast() throws {
        var first: Int?
        var last: Int?
        #expect(try managedInts([1, 2, 3, 4, 5]) { first = $0.removeFirst(); last = $0.removeLast() } == [2, 3, 4])
        #expect(first == 1 && last == 5)
        first = nil; last = nil
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { first = $0.removeFirst(); last = $0.removeLast() } == [2, 3, 4])
        #expect(first == 1 && last == 5)
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.removeFirst(2) } == [3, 4, 5])
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.removeLast(2) } == [1, 2, 3])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.removeFirst(2) } == [3, 4, 5])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.removeLast(2) } == [1, 2, 3])
    }

    @Test func listMove() throws {
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.move(from: 0, to: 3) } == [2, 3, 4, 1, 5])
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.move(from: 4, to: 1) } == [1, 5, 2, 3, 4])
        #expect(try managedInts([1, 2, 3]) { $0.move(from: 1, to: 1) } == [1, 2, 3])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.move(from: 0, to: 3) } == [2, 3, 4, 1, 5])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.move(from: 4, to: 1) } == [1, 5, 2, 3, 4])
    }

    @Test func listSwapAt() throws {
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.swapAt(0, 4) } == [5, 2, 3, 4, 1])
        #expect(try managedInts([1, 2, 3]) { $0.swapAt(2, 1) } == [1, 3, 2])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.swapAt(0, 4) } == [5, 2, 3, 4, 1])
    }

    @Test func listSubscriptSet() throws {
        #expect(try managedInts([1, 2, 3]) { $0[1] = 20 } == [1, 20, 3])
        #expect(unmanagedInts([1, 2, 3]) { $0[1] = 20 } == [1, 20, 3])
        #expect(try managedInts([1, 2, 3]) { $0.replace(index: 2, object: 30) } == [1, 2, 30])
    }

    @Test func listReplaceSubrange() throws {
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.replaceSubrange(1..<3, with: [7, 8, 9]) } == [1, 7, 8, 9, 4, 5])
        #expect(try managedInts([1, 2, 3]) { $0.replaceSubrange(0..<3, with: []) } == [])
        #expect(try managedInts([1, 2, 3]) { $0.replaceSubrange(1..<1, with: [0]) } == [1, 0, 2, 3])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.replaceSubrange(1..<3, with: [7, 8, 9]) } == [1, 7, 8, 9, 4, 5])
    }

    @Test func listInsertContentsOf() throws {
        #expect(try managedInts([1, 2, 3]) { $0.insert(contentsOf: [8, 9], at: 1) } == [1, 8, 9, 2, 3])
        #expect(try managedInts([1, 2, 3]) { $0.insert(contentsOf: [8, 9], at: 3) } == [1, 2, 3, 8, 9])
        #expect(unmanagedInts([1, 2, 3]) { $0.insert(contentsOf: [8, 9], at: 1) } == [1, 8, 9, 2, 3])
    }

    @Test func listRemoveSubrangeAndOffsets() throws {
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.removeSubrange(1..<3) } == [1, 4, 5])
        #expect(try managedInts([1, 2, 3, 4, 5]) { $0.remove(atOffsets: IndexSet([0, 2, 4])) } == [2, 4])
        #expect(unmanagedInts([1, 2, 3, 4, 5]) { $0.remove(atOffsets: IndexSet([0, 2, 4])) } == [2, 4])
        #expect(try managedInts([1, 2, 3, 4]) { $0.move(fromOffsets: IndexSet([0, 1]), toOffset: 4) } == [3, 4, 1, 2])
    }

    @Test func listIndexOf() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.ints.append(objectsIn: [5, 3, 7, 3])
        #expect(h.ints.index(of: 3) == 1)
        #expect(h.ints.index(of: 42) == nil)
        try realm.write { realm.add(h) }
        #expect(h.ints.index(of: 3) == 1)
        #expect(h.ints.index(of: 7) == 2)
        #expect(h.ints.index(of: 42) == nil)
        #expect(h.ints.first == 5 && h.ints.last == 3)
        #expect(h.ints.contains(7))
        #expect(h.ints.firstIndex(of: 7) == 2)
    }

    @Test func unmanagedListBehavesLikeAnArray() {
        let list = List<String>()
        var array: [String] = []
        for s in ["a", "b", "c", "d"] { list.append(s); array.append(s) }
        list.insert("x", at: 2); array.insert("x", at: 2)
        list.remove(at: 0); array.remove(at: 0)
        list.swapAt(0, 3); array.swapAt(0, 3)
        list[1] = "y"; array[1] = "y"
        #expect(Array(list) == array)
        #expect(list.count == array.count)
        #expect(list.first == array.first && list.last == array.last)
        #expect(list.realm == nil && !list.isInvalidated)
        #expect(list.map { $0.uppercased() } == array.map { $0.uppercased() })
        #expect(Array(list[1..<3]) == Array(array[1..<3]))
    }

    @Test func managedListOutOfRangeTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir("managedListOutOfRangeTraps")
            let realm = try! Realm(configuration: dir.config(collModels))
            let h = ObjCollHolder()
            h.ints.append(1)
            try! realm.write {
                realm.add(h)
                h.ints.remove(at: 1)
            }
        }
    }

    @Test func modifyingAManagedListOutsideAWriteTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir("modifyingAManagedListOutsideAWriteTraps")
            let realm = try! Realm(configuration: dir.config(collModels))
            let h = ObjCollHolder()
            try! realm.write { realm.add(h) }
            h.ints.append(1)
        }
    }

    // MARK: List of objects

    @Test func managedListOfObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        try realm.write { realm.add(ann) }
        let rex = Dog(value: ["name": "Rex"])
        try realm.write {
            ann.dogs.append(rex)
            ann.dogs.append(Dog(value: ["name": "Fido"]))
            ann.dogs.insert(Dog(value: ["name": "Bella"]), at: 0)
        }
        #expect(rex.realm == realm, "appending an unmanaged object adds it")
        #expect(ann.dogs.map(\.name) == ["Bella", "Rex", "Fido"])
        #expect(realm.objects(Dog.self).count == 3)
        try realm.write { ann.dogs.move(from: 0, to: 2) }
        #expect(ann.dogs.map(\.name) == ["Rex", "Fido", "Bella"])
        try realm.write { ann.dogs.swapAt(0, 1) }
        #expect(ann.dogs.map(\.name) == ["Fido", "Rex", "Bella"])
        try realm.write { ann.dogs.remove(at: 1) }
        #expect(ann.dogs.map(\.name) == ["Fido", "Bella"])
        #expect(!rex.isInvalidated, "removing from a list does not delete the object")
        #expect(realm.objects(Dog.self).count == 3)
        try realm.write { ann.dogs[0] = rex }
        #expect(ann.dogs.map(\.name) == ["Rex", "Bella"])
        try realm.write { ann.dogs.append(rex) }
        #expect(ann.dogs.map(\.name) == ["Rex", "Bella", "Rex"], "an object can be in a list twice")
        #expect(realm.objects(Dog.self).count == 3)
        try realm.write { ann.dogs.removeAll() }
        #expect(ann.dogs.isEmpty)
        #expect(realm.objects(Dog.self).count == 3)
    }

    @Test func managedListIndexOfAnotherAccessorOfTheObject() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        ann.dogs.append(Dog(value: ["name": "Rex"]))
        ann.dogs.append(Dog(value: ["name": "Fido"]))
        try realm.write { realm.add(ann) }
        let fido = try #require(realm.objects(Dog.self).first { $0.name == "Fido" })
        #expect(ann.dogs.index(of: fido) == 1)
        #expect(ann.dogs.index(of: ann.dogs[0]) == 0)
    }

    @Test func unmanagedListOfObjects() {
        let ann = Person(name: "Ann", age: 30)
        let rex = Dog(value: ["name": "Rex"])
        ann.dogs.append(rex)
        ann.dogs.append(Dog(value: ["name": "Fido"]))
        ann.dogs.append(rex)
        #expect(ann.dogs.count == 3)
        #expect(ann.dogs[0] === rex && ann.dogs[2] === rex)
        #expect(ann.dogs.index(of: rex) == 0)
        #expect(ann.dogs.index(of: Dog()) == nil)
        ann.dogs.remove(at: 0)
        #expect(ann.dogs.map(\.name) == ["Fido", "Rex"])
    }

    @Test func listRealmAndInvalidation() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        #expect(ann.dogs.realm == nil)
        try realm.write { realm.add(ann) }
        let dogs = ann.dogs
        #expect(dogs.realm == realm)
        #expect(!dogs.isInvalidated)
        try realm.write { realm.delete(ann) }
        #expect(dogs.isInvalidated)
    }

    // MARK: MutableSet

    @Test func setInsertRemoveContains() throws {
        let body: (MutableSet<Int>, MutableSet<Int>) -> Void = { a, _ in
            a.insert(2) // already there
            a.insert(4)
            a.remove(1)
            a.remove(99) // not there
        }
        #expect(try managedSets([1, 2, 3], []) { body($0, $1) }.0 == [2, 3, 4])
        #expect(unmanagedSets([1, 2, 3], []) { body($0, $1) }.0 == [2, 3, 4])
        #expect(try managedSets([1, 1, 2], []) { _, _ in }.0 == [1, 2])
    }

    @Test func setContainsAndCount() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.a.insert(objectsIn: [3, 1, 3, 2, 1])
        #expect(h.a.count == 3)
        #expect(h.a.contains(2) && !h.a.contains(4))
        try realm.write { realm.add(h) }
        #expect(h.a.count == 3)
        #expect(h.a.contains(2) && !h.a.contains(4))
        #expect(Set(h.a) == [1, 2, 3])
        try realm.write { h.a.insert(3) }
        #expect(h.a.count == 3)
    }

    @Test func setIsSubsetAndIntersects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.a.insert(objectsIn: [1, 2])
        h.b.insert(objectsIn: [1, 2, 3])
        let none = MutableSet<Int>()
        none.insert(9)
        #expect(h.a.isSubset(of: h.b) && !h.b.isSubset(of: h.a))
        #expect(h.a.intersects(h.b) && !h.a.intersects(none))
        try realm.write { realm.add(h) }
        #expect(h.a.isSubset(of: h.b))
        #expect(!h.b.isSubset(of: h.a))
        #expect(h.a.intersects(h.b))
        #expect(!h.a.intersects(none))
        #expect(h.a.isSubset(of: h.a))
        #expect(MutableSet<Int>().isSubset(of: h.a))
    }

    @Test func setFormUnion() throws {
        #expect(try managedSets([1, 2, 3], [3, 4]) { $0.formUnion($1) } == ([1, 2, 3, 4], [3, 4]))
        #expect(unmanagedSets([1, 2, 3], [3, 4]) { $0.formUnion($1) } == ([1, 2, 3, 4], [3, 4]))
    }

    @Test func setFormIntersection() throws {
        #expect(try managedSets([1, 2, 3], [3, 4]) { $0.formIntersection($1) } == ([3], [3, 4]))
        #expect(unmanagedSets([1, 2, 3], [3, 4]) { $0.formIntersection($1) } == ([3], [3, 4]))
        #expect(try managedSets([1, 2], [3]) { $0.formIntersection($1) } == ([], [3]))
    }

    @Test func setSubtract() throws {
        #expect(try managedSets([1, 2, 3], [3, 4]) { $0.subtract($1) } == ([1, 2], [3, 4]))
        #expect(unmanagedSets([1, 2, 3], [3, 4]) { $0.subtract($1) } == ([1, 2], [3, 4]))
    }

    @Test func setOperationsWithAnUnmanagedOperand() throws {
        let other = MutableSet<Int>()
        other.insert(objectsIn: [2, 3, 4])
        #expect(try managedSets([1, 2, 3], []) { a, _ in a.formUnion(other) }.0 == [1, 2, 3, 4])
        #expect(try managedSets([1, 2, 3], []) { a, _ in a.formIntersection(other) }.0 == [2, 3])
        #expect(try managedSets([1, 2, 3], []) { a, _ in a.subtract(other) }.0 == [1])
    }

    @Test func setRemoveAll() throws {
        #expect(try managedSets([1, 2, 3], [4]) { a, _ in a.removeAll() } == ([], [4]))
        #expect(unmanagedSets([1, 2, 3], [4]) { a, _ in a.removeAll() } == ([], [4]))
    }

    @Test func setOfObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        let rex = Dog(value: ["name": "Rex"])
        ann.favorites.insert(rex)
        ann.favorites.insert(rex)
        #expect(ann.favorites.count == 1)
        try realm.write { realm.add(ann) }
        #expect(ann.favorites.count == 1)
        let rexAgain = try #require(realm.objects(Dog.self).first)
        #expect(ann.favorites.contains(rexAgain))
        try realm.write {
            ann.favorites.insert(rexAgain) // the same row through another accessor
            ann.favorites.insert(Dog(value: ["name": "Fido"]))
        }
        #expect(ann.favorites.count == 2)
        #expect(Set(ann.favorites.map(\.name)) == ["Rex", "Fido"])
        try realm.write { ann.favorites.remove(rexAgain) }
        #expect(ann.favorites.map(\.name) == ["Fido"])
        #expect(!rex.isInvalidated, "removing from a set does not delete the object")
        #expect(!ann.favorites.contains(rex))
    }

    // MARK: Map

    /// The same sequence of map operations, checked on an unmanaged map and on a managed one.
    private func exerciseMap(_ m: Map<String, Int>, managed: Bool) {
        m["b"] = 2
        m["a"] = 1
        m["c"] = 3
        #expect(m.count == 3)
        #expect(m["a"] == 1 && m["b"] == 2 && m["c"] == 3)
        #expect(m["missing"] == nil)
        if managed {
            #expect(m.keys == ["a", "b", "c"])
            #expect(m.values == [1, 2, 3])
        } else {
            #expect(Set(m.keys) == ["a", "b", "c"])
            #expect(Set(m.values) == [1, 2, 3])
        }
        m["a"] = nil
        #expect(m.count == 2)
        #expect(m["a"] == nil)
        m.updateValue(20, forKey: "b")
        #expect(m["b"] == 20)
        m.removeObject(for: "c")
        #expect(m.count == 1 && m["c"] == nil)
        m.merge(["d": 4, "b": 5]) { old, new in old + new }
        #expect(m["b"] == 25 && m["d"] == 4)
        #expect(m.count == 2)
        let hasD4 = m.contains(where: { key, value in key == "d" && value == 4 })
        let has99 = m.contains(where: { _, value in value == 99 })
        #expect(hasD4)
        #expect(!has99)
    }

    @Test func unmanagedMapOperations() {
        exerciseMap(Map<String, Int>(), managed: false)
    }

    @Test func managedMapOperations() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        try realm.write { realm.add(h) }
        try realm.write { exerciseMap(h.scores, managed: true) }
        let read = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        #expect(read.scores.keys == ["b", "d"])
        #expect(read.scores["b"] == 25)
    }

    @Test func mapMergeFromAnotherMap() throws {
        let other = Map<String, Int>()
        other["a"] = 10
        other["z"] = 26
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.scores["a"] = 1
        h.scores["b"] = 2
        try realm.write { realm.add(h) }
        try realm.write { h.scores.merge(other) { old, _ in old } }
        #expect(h.scores.keys == ["a", "b", "z"])
        #expect(h.scores.values == [1, 2, 26])
    }

    @Test func mapIteratesEntriesInKeyOrder() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        for (k, v) in [("zeta", 26), ("alpha", 1), ("mu", 12), ("Beta", 2)] { h.scores[k] = v }
        try realm.write { realm.add(h) }
        var keys: [String] = []
        var values: [Int] = []
        for entry in h.scores {
            keys.append(entry.key)
            values.append(entry.value)
        }
        #expect(keys == ["Beta", "alpha", "mu", "zeta"])
        #expect(values == [2, 1, 12, 26])
        #expect(h.scores.asKeyValueSequence().map(\.key) == ["Beta", "alpha", "mu", "zeta"])
        #expect(h.scores.map(\.value) == [2, 1, 12, 26])
    }

    @Test func mapRemoveAllAndCount() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.scores["a"] = 1
        h.scores["b"] = 2
        try realm.write { realm.add(h) }
        #expect(h.scores.count == 2 && !h.scores.isEmpty)
        try realm.write { h.scores.removeAll() }
        #expect(h.scores.count == 0 && h.scores.isEmpty)
        #expect(h.scores.keys == [])
    }

    @Test func mapOfOptionalsStoresNilValues() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        try realm.write { realm.add(h) }
        try realm.write {
            h.optScores["a"] = .some(nil) // a key whose value is nil
            h.optScores["b"] = 2
            h.optScores.updateValue(nil, forKey: "c")
        }
        #expect(h.optScores.count == 3)
        #expect(h.optScores["a"] == .some(nil))
        #expect(h.optScores["b"] == .some(2))
        #expect(h.optScores["c"] == .some(nil))
        #expect(h.optScores["d"] == nil)
        try realm.write { h.optScores["a"] = nil } // removes the key
        #expect(h.optScores.count == 2)
        #expect(h.optScores.keys == ["b", "c"])
    }

    @Test func mapOfObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        try realm.write { realm.add(ann) }
        let rex = Dog(value: ["name": "Rex"])
        try realm.write {
            ann.dogsByName["rex"] = rex
            ann.dogsByName["none"] = .some(nil)
        }
        #expect(rex.realm == realm, "setting an unmanaged object in a map adds it")
        #expect(ann.dogsByName["rex"]??.name == "Rex")
        #expect(ann.dogsByName["none"] == .some(nil))
        #expect(ann.dogsByName.count == 2)
        try realm.write { ann.dogsByName["rex"] = nil }
        #expect(ann.dogsByName.keys == ["none"])
        #expect(!rex.isInvalidated, "removing a key does not delete the object")
    }

    @Test func mapKeysWithUnicodeAndSpaces() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.scores["héllo wörld"] = 1
        h.scores["🐶"] = 2
        h.scores[" "] = 3
        try realm.write { realm.add(h) }
        #expect(h.scores["héllo wörld"] == 1 && h.scores["🐶"] == 2 && h.scores[" "] == 3)
        #expect(h.scores.keys == [" ", "héllo wörld", "🐶"])
    }

    // MARK: AnyRealmValue nesting

    @Test func anyRealmValueListRoundTrips() throws {
        let dir = TempDir()
        let config = dir.config(collModels)
        do {
            let realm = try Realm(configuration: config)
            let h = ObjCollHolder()
            h.any = .fromArray([.int(1), .string("two"), .none, .double(2.5)])
            try realm.write { realm.add(h) }
            #expect(h.any.listValue?.count == 4)
        }
        let realm = try Realm(configuration: config)
        let h = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        let list = try #require(h.any.listValue)
        #expect(Array(list) == [.int(1), .string("two"), .none, .double(2.5)])
    }

    @Test func anyRealmValueDictionaryWithAListInsideRoundTrips() throws {
        let dir = TempDir()
        let config = dir.config(collModels)
        do {
            let realm = try Realm(configuration: config)
            let h = ObjCollHolder()
            h.any = .fromDictionary([
                "flag": .bool(true),
                "list": .fromArray([.int(1), .int(2), .string("three")]),
                "nothing": .none,
            ])
            try realm.write { realm.add(h) }
        }
        let realm = try Realm(configuration: config)
        let h = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        let dict = try #require(h.any.dictionaryValue)
        #expect(dict.count == 3)
        #expect(dict.keys == ["flag", "list", "nothing"])
        #expect(dict["flag"] == .bool(true))
        #expect(dict["nothing"] == AnyRealmValue.none)
        let inner = try #require(dict["list"]?.listValue)
        #expect(Array(inner) == [.int(1), .int(2), .string("three")])
    }

    @Test func anyRealmValueDeepNesting() throws {
        let dir = TempDir()
        let config = dir.config(collModels)
        do {
            let realm = try Realm(configuration: config)
            let h = ObjCollHolder()
            h.any = .fromArray([
                .int(0),
                .fromDictionary(["k": .fromArray([.fromDictionary(["deep": .string("yes")])])]),
            ])
            try realm.write { realm.add(h) }
        }
        let realm = try Realm(configuration: config)
        let h = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        let outer = try #require(h.any.listValue)
        #expect(outer.count == 2)
        let dict = try #require(outer[1].dictionaryValue)
        let list = try #require(dict["k"]?.listValue)
        #expect(list.count == 1)
        #expect(list[0].dictionaryValue?["deep"] == .string("yes"))
    }

    @Test func nestedManagedListCanBeModified() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.any = .fromArray([.int(1)])
        try realm.write { realm.add(h) }
        try realm.write {
            h.any.listValue?.append(.string("x"))
            h.any.listValue?[0] = .int(10)
        }
        let read = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        #expect(read.any.listValue.map { Array($0) } == [.int(10), .string("x")])
        try realm.write { h.any = .int(5) }
        #expect(read.any == .int(5))
        #expect(read.any.listValue == nil)
    }

    @Test func nestedManagedDictionaryCanBeModified() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.any = .fromDictionary(["a": .int(1)])
        try realm.write { realm.add(h) }
        try realm.write {
            h.any.dictionaryValue?["b"] = .fromArray([.bool(false)])
            h.any.dictionaryValue?["a"] = nil
        }
        let read = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        let dict = try #require(read.any.dictionaryValue)
        #expect(dict.keys == ["b"])
        #expect(dict["b"]?.listValue?.first == .bool(false))
    }

    @Test func listOfAnyRealmValueHoldsNestedCollections() throws {
        let dir = TempDir()
        let config = dir.config(collModels)
        do {
            let realm = try Realm(configuration: config)
            let h = ObjCollHolder()
            h.anyValues.append(.int(1))
            h.anyValues.append(.fromArray([.string("a"), .string("b")]))
            h.anyValues.append(.fromDictionary(["x": .double(1.5)]))
            h.anyMap["list"] = .fromArray([.int(7)])
            h.anyMap["plain"] = .string("p")
            try realm.write { realm.add(h) }
        }
        let realm = try Realm(configuration: config)
        let h = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        #expect(h.anyValues.count == 3)
        #expect(h.anyValues[0] == .int(1))
        #expect(h.anyValues[1].listValue.map { Array($0) } == [.string("a"), .string("b")])
        #expect(h.anyValues[2].dictionaryValue?["x"] == .double(1.5))
        #expect(h.anyMap["list"]?.listValue.map { Array($0) } == [.int(7)])
        #expect(h.anyMap["plain"] == .string("p"))
    }

    @Test func listOfAnyRealmValueHoldsObjectLinks() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h = ObjCollHolder()
        h.anyValues.append(.object(Dog(value: ["name": "Rex"])))
        h.anyValues.append(.int(2))
        h.anyMap["dog"] = .object(Dog(value: ["name": "Fido"]))
        try realm.write { realm.add(h) }
        #expect(realm.objects(Dog.self).count == 2)
        let read = try #require(realm.object(ofType: ObjCollHolder.self, forPrimaryKey: 0))
        #expect(read.anyValues[0].object(Dog.self)?.name == "Rex")
        #expect(read.anyValues[1] == .int(2))
        #expect(read.anyMap["dog"]?.object(Dog.self)?.name == "Fido")
    }

    @Test func copyingANestedListToAnotherObject() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let h1 = ObjCollHolder()
        h1.any = .fromArray([.int(1), .int(2)])
        let h2 = ObjCollHolder()
        h2.id = 1
        try realm.write {
            realm.add(h1)
            realm.add(h2)
        }
        try realm.write { h2.any = h1.any }
        #expect(h2.any.listValue.map { Array($0) } == [.int(1), .int(2)])
        try realm.write { h2.any.listValue?.append(.int(3)) }
        #expect(h1.any.listValue?.count == 2, "the copy is a separate list")
        #expect(h2.any.listValue?.count == 3)
    }

    // MARK: Results

    @Test func resultsBasics() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let dogs = realm.objects(Dog.self)
        #expect(dogs.count == 0 && dogs.isEmpty)
        #expect(dogs.first == nil && dogs.last == nil)
        try realm.write {
            for name in ["A", "B", "C"] { realm.add(Dog(value: ["name": name])) }
        }
        #expect(dogs.count == 3)
        #expect(dogs.first?.name == "A")
        #expect(dogs.last?.name == "C")
        #expect(dogs[1].name == "B")
        var names: [String] = []
        for d in dogs { names.append(d.name) }
        #expect(names == ["A", "B", "C"])
        #expect(dogs.map(\.name) == ["A", "B", "C"])
        #expect(dogs.realm == realm)
    }

    @Test func heldResultsSeeLaterChanges() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let dogs = realm.objects(Dog.self)
        #expect(dogs.count == 0)
        try realm.write {
            realm.add(Dog(value: ["name": "A"]))
            #expect(dogs.count == 1, "seen inside the write")
            #expect(dogs.first?.name == "A")
        }
        #expect(dogs.count == 1)
        try realm.write {
            realm.add(Dog(value: ["name": "B"]))
            realm.add(Dog(value: ["name": "C"]))
        }
        #expect(dogs.count == 3)
        #expect(dogs.map(\.name) == ["A", "B", "C"])
        try realm.write { realm.delete(dogs[1]) }
        #expect(dogs.count == 2)
        #expect(Set(dogs.map(\.name)) == ["A", "C"])
        try realm.write { realm.create(Dog.self, value: ["name": "D"]) }
        #expect(dogs.count == 3)
        #expect(dogs.contains { $0.name == "D" })
    }

    // MARK: Deleting collections

    @Test func deletingAListDeletesItsObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        let a = Dog(value: ["name": "A"])
        ann.dogs.append(a)
        ann.dogs.append(Dog(value: ["name": "B"]))
        try realm.write {
            realm.add(ann)
            realm.add(Dog(value: ["name": "C"]))
        }
        #expect(realm.objects(Dog.self).count == 3)
        try realm.write { realm.delete(ann.dogs) }
        #expect(ann.dogs.isEmpty)
        #expect(a.isInvalidated)
        #expect(realm.objects(Dog.self).map(\.name) == ["C"])
        #expect(!ann.isInvalidated)
    }

    @Test func deletingAListHoldingAnObjectTwice() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        let a = Dog(value: ["name": "A"])
        ann.dogs.append(a)
        ann.dogs.append(a)
        try realm.write { realm.add(ann) }
        try realm.write { realm.delete(ann.dogs) }
        #expect(ann.dogs.isEmpty)
        #expect(realm.objects(Dog.self).isEmpty)
    }

    @Test func deletingResultsDeletesEveryObject() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        try realm.write {
            for name in ["A", "B", "C"] { realm.add(Dog(value: ["name": name])) }
            realm.add(Person(name: "Ann", age: 1))
        }
        try realm.write { realm.delete(realm.objects(Dog.self)) }
        #expect(realm.objects(Dog.self).isEmpty)
        #expect(realm.objects(Person.self).count == 1)
    }

    @Test func deletingAMapDeletesItsObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let ann = Person(name: "Ann", age: 30)
        ann.dogsByName["a"] = Dog(value: ["name": "A"])
        ann.dogsByName["b"] = Dog(value: ["name": "B"])
        try realm.write {
            realm.add(ann)
            realm.add(Dog(value: ["name": "C"]))
        }
        try realm.write { realm.delete(ann.dogsByName) }
        #expect(realm.objects(Dog.self).map(\.name) == ["C"])
        #expect(ann.dogsByName.keys == ["a", "b"])
        #expect(ann.dogsByName["a"] == .some(nil))
    }

    @Test func deletingAnArrayOfObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(collModels))
        let dogs = ["A", "B", "C"].map { Dog(value: ["name": $0]) }
        try realm.write { realm.add(dogs) }
        try realm.write { realm.delete([dogs[0], dogs[2]]) }
        #expect(realm.objects(Dog.self).map(\.name) == ["B"])
        #expect(dogs[0].isInvalidated && !dogs[1].isInvalidated && dogs[2].isInvalidated)
    }
}
