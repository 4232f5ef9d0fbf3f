import Foundation
import Testing
@testable import SwiftStore

/// Queries, sorting, aggregates and key-value coding on `MutableSet`, managed and unmanaged,
/// of objects and of values. A set's order is unspecified, so results that keep the set's order
/// are compared as sets. Models and seeds are in RealmCollectionTests.swift.
@Suite struct MutableSetQueryTests {
    func boxes() throws -> (TempDir, Realm, ColBox, ColBox) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let (a, b, _) = try colSeedBoxes(realm)
        return (dir, realm, a, b)
    }

    func seededValues() throws -> (TempDir, Realm, ColValues) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let v = try colSeedValues(realm)
        return (dir, realm, v)
    }

    // MARK: Sets of objects

    @Test func filter() throws {
        let (_, _, a, b) = try boxes()
        #expect(ids(a.itemSet, "int == 3") == [1, 3])
        #expect(ids(a.itemSet, "flag == %@", false) == [3])
        #expect(ids(b.itemSet, "name IN {'date', 'apple'}") == [4])
        #expect(ids(b.itemSet, "box.rank == 2") == [2, 4])
        #expect(ids(b.itemSet, "@links.ColBox.items.@count == 1") == [2, 4])
        #expect(Set(a.itemSet.filter("double < 1").map(\.id)) == [3])
        #expect(Set(a.itemSet.filter(NSPredicate(format: "name BEGINSWITH %@", "a")).map(\.id)) == [1])
        #expect(a.itemSet.filter("int > 100").count == 0)
    }

    @Test func sortedAndDistinct() throws {
        let (_, _, a, b) = try boxes()
        #expect(a.itemSet.sorted(byKeyPath: "name", ascending: false).map(\.id) == [3, 1])
        #expect(b.itemSet.sorted(by: \.date).map(\.id) == [2, 4])
        #expect(b.itemSet.sorted(by: [SortDescriptor(keyPath: "flag", ascending: false)]).map(\.id) == [4, 2])
        #expect(a.itemSet.distinct(by: ["int"]).count == 1)
        #expect(a.itemSet.distinct(by: ["int", "flag"]).count == 2)
        #expect(a.itemSet.sorted(byKeyPath: "id").distinct(by: ["int"]).map(\.id) == [1])
    }

    @Test func aggregates() throws {
        let (_, _, a, b) = try boxes()
        #expect(a.itemSet.sum(ofProperty: "int") as Int == 6)
        #expect(a.itemSet.average(ofProperty: "double") as Double? == 1)
        #expect(b.itemSet.min(of: \.int) == 1)
        #expect(b.itemSet.max(of: \.double) == 4.0)
        #expect(b.itemSet.sum(of: \.int8) == Int8(3))
        #expect(b.itemSet.max(ofProperty: "date") as Date? == colT0.addingTimeInterval(40))
        #expect(b.itemSet.average(of: \.float) == Float(3.25))
        #expect(a.itemSet.sum(ofProperty: "optInt") as Int == 40)
        #expect(b.itemSet.min(ofProperty: "optInt") as Int? == nil)
    }

    @Test func aggregatesOfAnEmptySet() throws {
        let (_, realm, _, _) = try boxes()
        let c = try #require(realm.object(ofType: ColBox.self, forPrimaryKey: "C"))
        #expect(c.itemSet.sum(ofProperty: "int") as Int == 0)
        #expect(c.itemSet.min(of: \.double) == nil)
        #expect(c.itemSet.average(ofProperty: "int") as Double? == nil)
        #expect(c.labels.count == 0)
    }

    @Test func keyValueCoding() throws {
        let (_, realm, a, b) = try boxes()
        #expect(kvcArray(a.itemSet.value(forKey: "name"), as: String.self).map { Set($0.compactMap { $0 }) } == ["apple", "cherry"])
        #expect(b.itemSet.value(forKeyPath: "@count") as? Int == 2)
        #expect(b.itemSet.value(forKeyPath: "@sum.int") as? Int == 3)
        #expect(b.itemSet.value(forKeyPath: "@avg.double") as? Double == 3.25)
        #expect(b.itemSet.value(forKeyPath: "@min.date") as? Date == colT0.addingTimeInterval(10))
        try realm.write { b.itemSet.setValue(false, forKey: "flag") }
        #expect(ids(realm.objects(ColItem.self), "flag == true") == [1, 5])
    }

    @Test func aHeldResultsOfASetFollowsTheSet() throws {
        let (_, realm, a, _) = try boxes()
        let flagged = a.itemSet.filter("flag == true")
        #expect(flagged.map(\.id) == [1])
        let elder = try #require(realm.object(ofType: ColItem.self, forPrimaryKey: 5))
        try realm.write { a.itemSet.insert(elder) }
        #expect(Set(flagged.map(\.id)) == [1, 5])
        try realm.write { a.itemSet.insert(elder) }
        #expect(flagged.count == 2)
        try realm.write { a.itemSet.remove(realm.object(ofType: ColItem.self, forPrimaryKey: 1)!) }
        #expect(flagged.map(\.id) == [5])
    }

    // MARK: Enumeration (RealmSwift enumerates a snapshot inside a write transaction)

    @Test func forInEnumeratesTheStartStateWhileTheLoopRemoves() async {
        await #expect(processExitsWith: .success) {
            let (_, realm, a, _) = try! MutableSetQueryTests().boxes()
            var seen: [Int] = []
            try! realm.write {
                for item in a.itemSet {
                    seen.append(item.id)
                    a.itemSet.remove(item)
                    if seen.count > 10 { break }
                }
            }
            precondition(seen.sorted() == [1, 3])
            precondition(a.itemSet.count == 0)
        }
    }

    @Test func forInEnumeratesTheStartStateWhileTheLoopDeletes() async {
        await #expect(processExitsWith: .success) {
            let (_, realm, _, b) = try! MutableSetQueryTests().boxes()
            var seen: [Int] = []
            try! realm.write {
                for item in b.itemSet {
                    seen.append(item.id)
                    realm.delete(item)
                    if seen.count > 10 { break }
                }
            }
            precondition(seen.sorted() == [2, 4])
            precondition(b.itemSet.count == 0)
        }
    }

    // MARK: Sets of values

    @Test func aggregatesOfEveryNumericType() throws {
        let (_, _, v) = try seededValues()
        // The sets hold 3, 1, 2 and 1.5, 0.5, 2.5, 3.5 (the duplicate 1 is dropped).
        #expect(v.intSet.sum() == 6)
        #expect(v.intSet.min() == 1)
        #expect(v.intSet.max() == 3)
        #expect(v.intSet.average() as Double? == 2)
        #expect(v.int8Set.sum() == Int8(6))
        #expect(v.int8Set.max() == Int8(3))
        #expect(v.int16Set.min() == Int16(1))
        #expect(v.int16Set.average() as Double? == 2)
        #expect(v.int32Set.sum() == Int32(6))
        #expect(v.int64Set.max() == Int64(3))
        #expect(v.floatSet.sum() == Float(8))
        #expect(v.floatSet.average() as Float? == 2)
        #expect(v.doubleSet.min() == 0.5)
        #expect(v.doubleSet.average() as Double? == 2)
        #expect(v.decimalSet.sum() == Decimal128(value: 8))
        #expect(v.decimalSet.max() == Decimal128(value: 3.5))
        #expect(v.decimalSet.average() as Decimal128? == Decimal128(value: 2))
        #expect(v.dateSet.min() == colT0.addingTimeInterval(10))
        #expect(v.dateSet.max() == colT0.addingTimeInterval(30))
        #expect(v.optIntSet.sum() == 6)
        #expect(v.optIntSet.min() == 2)
        #expect(v.optIntSet.average() as Double? == 3)
    }

    @Test func valuesAreDistinct() throws {
        let (_, _, v) = try seededValues()
        #expect(v.intSet.count == 3)
        #expect(v.stringSet.count == 3)
        #expect(v.optIntSet.count == 3)
        #expect(Array(v.intSet.distinct().sorted(ascending: true)) == [1, 2, 3])
    }

    @Test func sortedValues() throws {
        let (_, _, v) = try seededValues()
        #expect(Array(v.intSet.sorted(ascending: true)) == [1, 2, 3])
        #expect(Array(v.stringSet.sorted(ascending: false)) == ["pear", "fig", "apple"])
        #expect(Array(v.dateSet.sorted(ascending: true)) == [10.0, 20, 30].map { colT0.addingTimeInterval($0) })
        #expect(Array(v.decimalSet.sorted(ascending: false)) == [3.5, 2.5, 1.5, 0.5].map { Decimal128(value: $0) })
        #expect(Array(v.optIntSet.sorted(ascending: true)) == [nil, 2, 4])
        #expect(Array(v.doubleSet.sorted(byKeyPath: "self")) == [0.5, 1.5, 2.5, 3.5])
    }

    @Test func filterValues() throws {
        let (_, _, v) = try seededValues()
        #expect(values(v.intSet, "self > 1").map { Set($0) } == [2, 3])
        #expect(values(v.stringSet, "self BEGINSWITH[c] 'P'") == ["pear"])
        #expect(values(v.doubleSet, "self BETWEEN {1, 3}").map { Set($0) } == [1.5, 2.5])
        #expect(values(v.dateSet, "self < %@", colT0.addingTimeInterval(15)) == [colT0.addingTimeInterval(10)])
        #expect(values(v.optIntSet, "self == nil") == [nil])
        #expect(values(v.decimalSet, "self >= %@", Decimal128(value: 3)) == [Decimal128(value: 3.5)])
        #expect(v.intSet.filter("self IN %@", [1, 3, 5]).sum() == 4)
    }

    @Test func keyValueCodingOfValues() throws {
        let (_, _, v) = try seededValues()
        #expect(kvcArray(v.intSet.value(forKey: "self"), as: Int.self).map { Set($0.compactMap { $0 }) } == [1, 2, 3])
        #expect(v.intSet.value(forKeyPath: "@count") as? Int == 3)
        #expect(v.intSet.value(forKeyPath: "@sum.self") as? Int == 6)
        #expect(v.doubleSet.value(forKeyPath: "@max.self") as? Double == 3.5)
        #expect(v.intSet.value(forKeyPath: "@avg.self") as? Double == 2)
    }

    @Test func aggregatesOfEmptySetsOfValues() throws {
        let (_, realm, _) = try seededValues()
        var empty: ColValues!
        try realm.write { empty = realm.create(ColValues.self) }
        #expect(empty.intSet.sum() == 0)
        #expect(empty.decimalSet.sum() == Decimal128(value: 0))
        #expect(empty.floatSet.min() == nil)
        #expect(empty.dateSet.max() == nil)
        #expect(empty.doubleSet.average() as Double? == nil)
    }

    // MARK: Unmanaged sets

    @Test func unmanagedAggregatesAndKeyValueCoding() {
        let ints = MutableSet<Int>()
        ints.insert(objectsIn: [3, 1, 2, 1])
        #expect(ints.sum() == 6)
        #expect(ints.min() == 1)
        #expect(ints.max() == 3)
        #expect(ints.average() as Double? == 2)
        #expect(ints.value(forKeyPath: "@sum.self") as? Int == 6)
        let decimals = MutableSet<Decimal128>()
        decimals.insert(objectsIn: [Decimal128(value: 1.5), Decimal128(value: 0.5)])
        #expect(decimals.sum() == Decimal128(value: 2))
        let items = MutableSet<ColItem>()
        items.insert(objectsIn: [ColItem(value: ["int": 3, "double": 1.5]), ColItem(value: ["int": 1, "double": 2.5])])
        #expect(items.sum(ofProperty: "int") as Int == 4)
        #expect(items.max(of: \.double) == 2.5)
        #expect(items.average(ofProperty: "double") as Double? == 2)
        #expect(kvcArray(items.value(forKey: "int"), as: Int.self).map { Set($0.compactMap { $0 }) } == [1, 3])
        items.setValue(7, forKey: "int")
        #expect(items.sum(of: \.int) == 14)
        let empty = MutableSet<Double>()
        #expect(empty.sum() == 0)
        #expect(empty.min() == nil)
    }

    // MARK: Unavailable on MutableSet (RealmSwift: fatalError)

    @Test func indexOfIsUnavailableOnAManagedSet() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            let (a, _, _) = try! colSeedBoxes(realm)
            _ = a.itemSet.index(of: a.itemSet[0])
        }
    }

    @Test func indexOfIsUnavailableOnAnUnmanagedSet() async {
        await #expect(processExitsWith: .failure) {
            let set = MutableSet<Int>()
            set.insert(1)
            _ = set.index(of: 1)
        }
    }

    @Test func indexMatchingIsUnavailableOnASet() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            let (a, _, _) = try! colSeedBoxes(realm)
            _ = a.itemSet.index(matching: "int == 3")
        }
    }

    @Test func indexMatchingAnNSPredicateIsUnavailableOnASet() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            let (a, _, _) = try! colSeedBoxes(realm)
            _ = a.itemSet.index(matching: NSPredicate(format: "int == 3"))
        }
    }

    @Test func filteringAnUnmanagedSetTraps() async {
        await #expect(processExitsWith: .failure) {
            let set = MutableSet<Int>()
            set.insert(1)
            _ = set.filter("self > 0")
        }
    }
}
