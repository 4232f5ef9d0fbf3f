import Foundation
import Testing
@testable import SwiftStore

/// Queries, sorting, aggregates and key-value coding on `List`, managed and unmanaged, of
/// objects and of values. Models and seeds are in RealmCollectionTests.swift.
@Suite struct ListQueryTests {
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

    // MARK: Lists of objects

    @Test func filterKeepsListOrder() throws {
        let (_, _, a, b) = try boxes()
        #expect(b.items.filter("int >= 2").map(\.id) == [4, 1])
        #expect(a.items.filter("flag == true").map(\.id) == [1, 5])
        #expect(b.items.filter(NSPredicate(format: "name != %@", "banana")).map(\.id) == [4, 1])
        #expect(b.items.filter("box.name == 'A'").map(\.id) == [1])
        #expect(b.items.filter("ANY @links.ColBox.items.name == 'A'").map(\.id) == [1])
        #expect(a.items.filter("int > 100").count == 0)
    }

    @Test func filterKeepsDuplicates() throws {
        let (_, realm, _, b) = try boxes()
        try realm.write { b.items.append(b.items[0]) }
        #expect(b.items.map(\.id) == [4, 2, 1, 4])
        #expect(b.items.filter("int >= 2").map(\.id) == [4, 1, 4])
        #expect(b.items.filter("int >= 2").count == 3)
        #expect(b.items.sorted(byKeyPath: "name").map(\.id) == [1, 2, 4, 4])
        #expect(b.items.sum(ofProperty: "int") as Int == 8)
        #expect(b.items.index(matching: "id == 4") == 0)
        #expect(b.items.distinct(by: ["id"]).map(\.id) == [4, 2, 1])
    }

    @Test func sortIsStableInListOrder() throws {
        let (_, _, a, b) = try boxes()
        #expect(a.items.sorted(byKeyPath: "int").map(\.id) == [5, 1, 3])
        #expect(a.items.sorted(byKeyPath: "int", ascending: false).map(\.id) == [1, 3, 5])
        #expect(a.items.sorted(byKeyPath: "double").map(\.id) == [3, 1, 5])
        #expect(b.items.sorted(by: \.date).map(\.id) == [2, 1, 4])
        #expect(b.items.sorted(by: [SortDescriptor(keyPath: "flag"), SortDescriptor(keyPath: "int", ascending: false)]).map(\.id)
                == [2, 1, 4])
        #expect(b.items.sorted(byKeyPath: "box.name").map(\.id) == [1, 4, 2])
    }

    @Test func distinctInListOrder() throws {
        let (_, _, a, b) = try boxes()
        #expect(a.items.distinct(by: ["int"]).map(\.id) == [1, 5])
        #expect(b.items.distinct(by: ["flag"]).map(\.id) == [4, 2])
        #expect(a.items.distinct(by: ["int", "flag"]).map(\.id) == [1, 3, 5])
        #expect(a.items.distinct(by: [\ColItem.double]).map(\.id) == [1, 3])
    }

    @Test func aggregates() throws {
        let (_, _, a, b) = try boxes()
        #expect(a.items.sum(ofProperty: "int") as Int == 7)
        #expect(a.items.min(ofProperty: "int") as Int? == 1)
        #expect(a.items.max(of: \.int) == 3)
        #expect(b.items.average(ofProperty: "int") as Double? == 2)
        #expect(b.items.sum(of: \.double) == 8.0)
        #expect(b.items.min(of: \.double) == 1.5)
        #expect(b.items.max(of: \.date) == colT0.addingTimeInterval(40))
        #expect(b.items.min(ofProperty: "date") as Date? == colT0.addingTimeInterval(10))
        #expect(b.items.sum(of: \.float) == Float(8))
        #expect(b.items.sum(of: \.int16) == Int16(6))
        #expect(b.items.max(of: \.decimal) == Decimal128(value: 4))
        #expect(a.items.sum(ofProperty: "optInt") as Int == 90)
        #expect(b.items.average(ofProperty: "optInt") as Double? == 10)
        #expect(a.items.filter("int == 3").average(of: \.double) == 1.0)
    }

    @Test func aggregatesOfAnEmptyList() throws {
        let (_, realm, _, _) = try boxes()
        let c = try #require(realm.object(ofType: ColBox.self, forPrimaryKey: "C"))
        #expect(c.items.sum(ofProperty: "int") as Int == 0)
        #expect(c.items.sum(of: \.decimal) == Decimal128(value: 0))
        #expect(c.items.sum(of: \.float) == Float(0))
        #expect(c.items.min(ofProperty: "int") as Int? == nil)
        #expect(c.items.max(of: \.date) == nil)
        #expect(c.items.average(ofProperty: "double") as Double? == nil)
        #expect(c.items.average(of: \.int64) == nil)
        #expect(c.numbers.sum() == 0)
        #expect(c.numbers.min() == nil)
        #expect(c.numbers.max() == nil)
        #expect(c.numbers.average() as Double? == nil)
    }

    @Test func positions() throws {
        let (_, realm, a, b) = try boxes()
        let apple = try #require(realm.object(ofType: ColItem.self, forPrimaryKey: 1))
        let banana = try #require(realm.object(ofType: ColItem.self, forPrimaryKey: 2))
        #expect(a.items.index(of: apple) == 0)
        #expect(b.items.index(of: apple) == 2)
        #expect(a.items.index(of: banana) == nil)
        #expect(a.items.index(matching: "name ENDSWITH 'y'") == 1)
        #expect(b.items.index(matching: NSPredicate(format: "int < %@", 2)) == 1)
        #expect(b.items.index(matching: "int > 5") == nil)
        #expect(b.items.objects(at: [0, 2]).map(\.id) == [4, 1])
        #expect(b.items.first?.id == 4)
        #expect(b.items.last?.id == 1)
    }

    @Test func keyValueCoding() throws {
        let (_, realm, a, b) = try boxes()
        #expect(kvcArray(b.items.value(forKey: "name"), as: String.self) == ["date", "banana", "apple"])
        #expect(kvcArray(a.items.value(forKeyPath: "box.name"), as: String.self) == ["A", "A", nil])
        #expect(kvcArray(b.items.value(forKey: "optInt"), as: Int.self) == [nil, nil, 10])
        #expect(b.items.value(forKeyPath: "@count") as? Int == 3)
        #expect(b.items.value(forKeyPath: "@sum.int") as? Int == 6)
        #expect(b.items.value(forKeyPath: "@avg.int") as? Double == 2)
        #expect(b.items.value(forKeyPath: "@min.double") as? Double == 1.5)
        #expect(b.items.value(forKeyPath: "@max.date") as? Date == colT0.addingTimeInterval(40))
        #expect(kvcArray(b.items.value(forKeyPath: "@unionOfObjects.name"), as: String.self) == ["date", "banana", "apple"])
        try realm.write { a.items.setValue(0, forKey: "int") }
        #expect(realm.objects(ColItem.self).sorted(byKeyPath: "id").map(\.int) == [0, 1, 0, 2, 0])
    }

    @Test func aHeldResultsOfAListFollowsTheList() throws {
        let (_, realm, a, b) = try boxes()
        let threes = a.items.filter("int == 3")
        #expect(threes.map(\.id) == [1, 3])
        try realm.write { a.items.append(b.items[0]) }
        #expect(threes.map(\.id) == [1, 3])
        try realm.write { a.items[3].int = 3 }
        #expect(threes.map(\.id) == [1, 3, 4])
        try realm.write { a.items.remove(at: 0) }
        #expect(threes.map(\.id) == [3, 4])
        #expect(realm.object(ofType: ColItem.self, forPrimaryKey: 1) != nil)
        try realm.write { a.items.move(from: 2, to: 0) }
        #expect(threes.map(\.id) == [4, 3])
        try realm.write { realm.delete(realm.object(ofType: ColItem.self, forPrimaryKey: 3)!) }
        #expect(threes.map(\.id) == [4])
    }

    @Test func chaining() throws {
        let (_, _, a, _) = try boxes()
        let chained = a.items.filter("int > 0").filter("flag == true").sorted(byKeyPath: "name", ascending: false)
        #expect(chained.map(\.id) == [5, 1])
        #expect(chained.filter("int == 3").map(\.id) == [1])
        #expect(chained.sum(ofProperty: "int") as Int == 4)
    }

    // MARK: Enumeration (RealmSwift enumerates a snapshot inside a write transaction)

    @Test func forInEnumeratesTheStartStateWhileTheLoopRemoves() async {
        await #expect(processExitsWith: .success) {
            let (_, realm, a, _) = try! ListQueryTests().boxes()
            var seen: [Int] = []
            try! realm.write {
                for item in a.items {
                    seen.append(item.id)
                    a.items.remove(at: 0)
                    if seen.count > 10 { break }
                }
            }
            precondition(seen == [1, 3, 5])
            precondition(a.items.count == 0)
        }
    }

    @Test func forInEnumeratesTheStartStateWhileTheLoopDeletes() async {
        await #expect(processExitsWith: .success) {
            let (_, realm, a, _) = try! ListQueryTests().boxes()
            var seen: [Int] = []
            try! realm.write {
                for item in a.items {
                    seen.append(item.id)
                    realm.delete(item)
                    if seen.count > 10 { break }
                }
            }
            precondition(seen == [1, 3, 5])
            precondition(realm.objects(ColItem.self).count == 2)
        }
    }

    @Test func forInEnumeratesTheStartStateWhileTheLoopAppends() async {
        await #expect(processExitsWith: .success) {
            let (_, realm, _, b) = try! ListQueryTests().boxes()
            var seen = 0
            try! realm.write {
                for item in b.items {
                    seen += 1
                    b.items.append(item)
                    if seen > 10 { break }
                }
            }
            precondition(seen == 3)
            precondition(b.items.map(\.id) == [4, 2, 1, 4, 2, 1])
        }
    }

    // MARK: Lists of values

    @Test func aggregatesOfEveryNumericType() throws {
        let (_, _, v) = try seededValues()
        #expect(v.ints.sum() == 7)
        #expect(v.ints.min() == 1)
        #expect(v.ints.max() == 3)
        #expect(v.ints.average() as Double? == 1.75)
        #expect(v.int8s.sum() == Int8(7))
        #expect(v.int8s.min() == Int8(1))
        #expect(v.int8s.max() == Int8(3))
        #expect(v.int8s.average() as Double? == 1.75)
        #expect(v.int16s.sum() == Int16(7))
        #expect(v.int16s.max() == Int16(3))
        #expect(v.int32s.sum() == Int32(7))
        #expect(v.int32s.min() == Int32(1))
        #expect(v.int64s.sum() == Int64(7))
        #expect(v.int64s.average() as Double? == 1.75)
        #expect(v.floats.sum() == Float(8))
        #expect(v.floats.min() == Float(0.5))
        #expect(v.floats.max() == Float(3.5))
        #expect(v.floats.average() as Double? == 2)
        #expect(v.floats.average() as Float? == 2)
        #expect(v.doubles.sum() == 8.0)
        #expect(v.doubles.min() == 0.5)
        #expect(v.doubles.average() as Double? == 2)
        #expect(v.decimals.sum() == Decimal128(value: 8))
        #expect(v.decimals.min() == Decimal128(value: 0.5))
        #expect(v.decimals.max() == Decimal128(value: 3.5))
        #expect(v.decimals.average() as Decimal128? == Decimal128(value: 2))
        #expect(v.dates.min() == colT0.addingTimeInterval(10))
        #expect(v.dates.max() == colT0.addingTimeInterval(30))
    }

    @Test func aggregatesOfOptionalValuesSkipNil() throws {
        let (_, _, v) = try seededValues()
        #expect(v.optInts.sum() == 6)
        #expect(v.optInts.min() == 2)
        #expect(v.optInts.max() == 4)
        #expect(v.optInts.average() as Double? == 3)
    }

    @Test func aggregatesOfEmptyLists() throws {
        let (_, realm, _) = try seededValues()
        var empty: ColValues!
        try realm.write { empty = realm.create(ColValues.self) }
        #expect(empty.ints.sum() == 0)
        #expect(empty.int8s.sum() == Int8(0))
        #expect(empty.floats.sum() == Float(0))
        #expect(empty.doubles.sum() == 0)
        #expect(empty.decimals.sum() == Decimal128(value: 0))
        #expect(empty.ints.min() == nil)
        #expect(empty.int64s.max() == nil)
        #expect(empty.doubles.min() == nil)
        #expect(empty.decimals.max() == nil)
        #expect(empty.dates.min() == nil)
        #expect(empty.ints.average() as Double? == nil)
        #expect(empty.decimals.average() as Decimal128? == nil)
        #expect(empty.optInts.sum() == 0)
        #expect(empty.optInts.min() == nil)
    }

    @Test func sortedValues() throws {
        let (_, _, v) = try seededValues()
        #expect(Array(v.strings.sorted(ascending: true)) == ["apple", "fig", "fig", "pear"])
        #expect(Array(v.strings.sorted(ascending: false)) == ["pear", "fig", "fig", "apple"])
        #expect(Array(v.ints.sorted(ascending: true)) == [1, 1, 2, 3])
        #expect(Array(v.doubles.sorted(ascending: false)) == [3.5, 2.5, 1.5, 0.5])
        #expect(Array(v.decimals.sorted()) == [0.5, 1.5, 2.5, 3.5].map { Decimal128(value: $0) })
        #expect(Array(v.dates.sorted()) == [10.0, 20, 30].map { colT0.addingTimeInterval($0) })
        #expect(Array(v.optInts.sorted(ascending: true)) == [nil, 2, 4])
        #expect(Array(v.optInts.sorted(ascending: false)) == [4, 2, nil])
        #expect(Array(v.int8s.sorted(byKeyPath: "self", ascending: false)) == [3, 2, 1, 1])
    }

    @Test func distinctValues() throws {
        let (_, _, v) = try seededValues()
        #expect(Array(v.strings.distinct()) == ["pear", "fig", "apple"])
        #expect(Array(v.ints.distinct()) == [3, 1, 2])
        #expect(Array(v.ints.distinct().sorted(ascending: true)) == [1, 2, 3])
        #expect(v.ints.distinct().sum() == 6)
    }

    @Test func filterValues() throws {
        let (_, _, v) = try seededValues()
        #expect(values(v.ints, "self > 1") == [3, 2])
        #expect(values(v.ints, "self == 1") == [1, 1])
        #expect(values(v.ints, "self IN %@", [1, 3]) == [3, 1, 1])
        #expect(values(v.ints, "self BETWEEN {2, 3}") == [3, 2])
        #expect(values(v.strings, "self BEGINSWITH 'f'") == ["fig", "fig"])
        #expect(values(v.strings, "self ==[c] 'PEAR'") == ["pear"])
        #expect(values(v.strings, "self CONTAINS 'p'") == ["pear", "apple"])
        #expect(values(v.strings, "self LIKE '?i?'") == ["fig", "fig"])
        #expect(values(v.doubles, "self BETWEEN {1, 3}") == [1.5, 2.5])
        #expect(values(v.floats, "self >= 2.5") == [2.5, 3.5])
        #expect(values(v.decimals, "self < %@", Decimal128(value: 1)) == [Decimal128(value: 0.5)])
        #expect(values(v.dates, "self > %@", colT0.addingTimeInterval(15)) == [colT0.addingTimeInterval(20), colT0.addingTimeInterval(30)])
        #expect(values(v.optInts, "self == nil") == [nil])
        #expect(values(v.optInts, "self != nil") == [2, 4])
        #expect(values(v.int64s, "self != 1") == [3, 2])
        #expect(Array(v.ints.filter("self > 1").sorted(ascending: true)) == [2, 3])
        #expect(v.ints.filter("self > 1").sum() == 5)
    }

    @Test func positionsOfValues() throws {
        let (_, _, v) = try seededValues()
        #expect(v.ints.index(of: 1) == 1)
        #expect(v.ints.index(of: 9) == nil)
        #expect(v.strings.index(of: "fig") == 1)
        #expect(v.optInts.index(of: nil) == 1)
        #expect(v.ints.objects(at: [0, 3]) == [3, 1])
        #expect(v.ints.first == 3)
        #expect(v.ints.last == 1)
    }

    @Test func keyValueCodingOfValues() throws {
        let (_, _, v) = try seededValues()
        #expect(kvcArray(v.ints.value(forKey: "self"), as: Int.self) == [3, 1, 2, 1])
        #expect(v.ints.value(forKeyPath: "@count") as? Int == 4)
        #expect(v.ints.value(forKeyPath: "@sum.self") as? Int == 7)
        #expect(v.ints.value(forKeyPath: "@min.self") as? Int == 1)
        #expect(v.ints.value(forKeyPath: "@max.self") as? Int == 3)
        #expect(v.ints.value(forKeyPath: "@avg.self") as? Double == 1.75)
        #expect(v.doubles.value(forKeyPath: "@sum.self") as? Double == 8)
        #expect(v.dates.value(forKeyPath: "@max.self") as? Date == colT0.addingTimeInterval(30))
    }

    @Test func aHeldResultsOfAListOfValuesFollowsTheList() throws {
        let (_, realm, v) = try seededValues()
        let big = v.ints.filter("self >= 2")
        #expect(Array(big) == [3, 2])
        try realm.write { v.ints.append(5) }
        #expect(Array(big) == [3, 2, 5])
        try realm.write { v.ints.remove(at: 0) }
        #expect(Array(big) == [2, 5])
        #expect(big.sum() == 7)
    }

    // MARK: Unmanaged lists

    @Test func unmanagedAggregatesOfValues() {
        let ints = List<Int>()
        ints.append(objectsIn: [3, 1, 2, 1])
        #expect(ints.sum() == 7)
        #expect(ints.min() == 1)
        #expect(ints.max() == 3)
        #expect(ints.average() as Double? == 1.75)
        let int8s = List<Int8>()
        int8s.append(objectsIn: [3, 1, 2, 1])
        #expect(int8s.sum() == Int8(7))
        #expect(int8s.max() == Int8(3))
        let floats = List<Float>()
        floats.append(objectsIn: [1.5, 0.5, 2.5, 3.5])
        #expect(floats.sum() == Float(8))
        #expect(floats.average() as Double? == 2)
        let decimals = List<Decimal128>()
        decimals.append(objectsIn: [1.5, 0.5, 2.5, 3.5].map { Decimal128(value: $0) })
        #expect(decimals.sum() == Decimal128(value: 8))
        #expect(decimals.min() == Decimal128(value: 0.5))
        #expect(decimals.average() as Decimal128? == Decimal128(value: 2))
        let dates = List<Date>()
        dates.append(objectsIn: [colT0.addingTimeInterval(20), colT0])
        #expect(dates.min() == colT0)
        #expect(dates.max() == colT0.addingTimeInterval(20))
        let optInts = List<Int?>()
        optInts.append(objectsIn: [2, nil, 4])
        #expect(optInts.sum() == 6)
        #expect(optInts.average() as Double? == 3)
        let empty = List<Double>()
        #expect(empty.sum() == 0)
        #expect(empty.min() == nil)
        #expect(empty.average() as Double? == nil)
    }

    @Test func unmanagedPositionsAndKeyValueCodingOfValues() {
        let ints = List<Int>()
        ints.append(objectsIn: [3, 1, 2, 1])
        #expect(ints.index(of: 2) == 2)
        #expect(ints.index(of: 7) == nil)
        #expect(ints.objects(at: [1, 2]) == [1, 2])
        #expect(kvcArray(ints.value(forKey: "self"), as: Int.self) == [3, 1, 2, 1])
        #expect(ints.value(forKeyPath: "@count") as? Int == 4)
        #expect(ints.value(forKeyPath: "@sum.self") as? Int == 7)
        #expect(ints.value(forKeyPath: "@max.self") as? Int == 3)
    }

    @Test func unmanagedListsOfObjects() {
        let list = List<ColItem>()
        let a = ColItem(value: ["id": 1, "name": "a", "int": 3, "double": 1.5, "date": colT0])
        let b = ColItem(value: ["id": 2, "name": "b", "int": 1, "double": 2.5, "date": colT0.addingTimeInterval(5), "optInt": 4])
        list.append(objectsIn: [a, b])
        #expect(list.sum(ofProperty: "int") as Int == 4)
        #expect(list.min(ofProperty: "double") as Double? == 1.5)
        #expect(list.max(of: \.date) == colT0.addingTimeInterval(5))
        #expect(list.average(of: \.double) == 2.0)
        #expect(list.average(ofProperty: "int") as Double? == 2)
        #expect(list.sum(ofProperty: "optInt") as Int == 4)
        #expect(list.index(of: b) == 1)
        #expect(list.index(of: ColItem(value: ["id": 2])) == nil)
        #expect(kvcArray(list.value(forKey: "name"), as: String.self) == ["a", "b"])
        #expect(list.value(forKeyPath: "@sum.int") as? Int == 4)
        #expect(list.value(forKeyPath: "@max.double") as? Double == 2.5)
        list.setValue("z", forKey: "name")
        #expect(a.name == "z" && b.name == "z")
    }

    @Test func unmanagedEmptyListOfObjects() {
        let list = List<ColItem>()
        #expect(list.sum(ofProperty: "int") as Int == 0)
        #expect(list.min(of: \.int) == nil)
        #expect(list.average(ofProperty: "double") as Double? == nil)
        #expect(list.value(forKeyPath: "@count") as? Int == 0)
    }

    @Test func sortingAnUnmanagedListOfValuesTraps() async {
        await #expect(processExitsWith: .failure) {
            let list = List<Int>()
            list.append(objectsIn: [2, 1])
            _ = list.sorted(ascending: true)
        }
    }

    @Test func filteringAnUnmanagedListWithAnNSPredicateTraps() async {
        await #expect(processExitsWith: .failure) {
            let list = List<ColItem>()
            _ = list.filter(NSPredicate(format: "int > 0"))
        }
    }
}
