import Foundation
import Testing
@testable import SwiftStore

/// Queries over a `Map`'s values: filter, sort, aggregates (managed and unmanaged), and maps in
/// predicates (`map['key']`, `@allKeys`, `@allValues`, `@count`, aggregates). A map's order is
/// unspecified, so filtered values are compared sorted. Models and seeds are in
/// RealmCollectionTests.swift.
@Suite struct MapQueryTests {
    func seededValues() throws -> (TempDir, Realm, ColValues) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let v = try colSeedValues(realm)
        return (dir, realm, v)
    }

    func boxes() throws -> (TempDir, Realm, ColBox, ColBox, ColBox) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let (a, b, c) = try colSeedBoxes(realm)
        return (dir, realm, a, b, c)
    }

    // MARK: Maps of values

    @Test func aggregatesOfEveryNumericType() throws {
        let (_, _, v) = try seededValues()
        #expect(v.intMap.sum() == 7)
        #expect(v.intMap.min() == 1)
        #expect(v.intMap.max() == 3)
        #expect(v.intMap.average() as Double? == 1.75)
        #expect(v.int8Map.sum() == Int8(7))
        #expect(v.int16Map.max() == Int16(3))
        #expect(v.int32Map.min() == Int32(1))
        #expect(v.int64Map.average() as Double? == 1.75)
        #expect(v.floatMap.sum() == Float(8))
        #expect(v.floatMap.max() == Float(3.5))
        #expect(v.doubleMap.sum() == 8.0)
        #expect(v.doubleMap.average() as Double? == 2)
        #expect(v.decimalMap.sum() == Decimal128(value: 8))
        #expect(v.decimalMap.min() == Decimal128(value: 0.5))
        #expect(v.decimalMap.average() as Decimal128? == Decimal128(value: 2))
        #expect(v.dateMap.min() == colT0.addingTimeInterval(10))
        #expect(v.dateMap.max() == colT0.addingTimeInterval(30))
        #expect(v.optIntMap.sum() == 6)
        #expect(v.optIntMap.min() == 2)
        #expect(v.optIntMap.average() as Double? == 3)
    }

    @Test func aggregatesOfAnEmptyMap() throws {
        let (_, realm, _) = try seededValues()
        var empty: ColValues!
        try realm.write { empty = realm.create(ColValues.self) }
        #expect(empty.intMap.sum() == 0)
        #expect(empty.decimalMap.sum() == Decimal128(value: 0))
        #expect(empty.floatMap.sum() == Float(0))
        #expect(empty.intMap.min() == nil)
        #expect(empty.dateMap.max() == nil)
        #expect(empty.doubleMap.average() as Double? == nil)
    }

    @Test func filterValues() throws {
        let (_, _, v) = try seededValues()
        #expect(v.intMap.filter(NSPredicate(format: "self > 1")).map { $0 }.sorted() == [2, 3])
        #expect(values(v.intMap, "self == 1") == [1, 1])
        #expect(values(v.stringMap, "self BEGINSWITH 'f'") == ["fig", "fig"])
        #expect(values(v.stringMap, "self ==[c] 'APPLE'") == ["apple"])
        #expect(values(v.doubleMap, "self BETWEEN {1, 3}")?.sorted() == [1.5, 2.5])
        #expect(values(v.dateMap, "self > %@", colT0.addingTimeInterval(25)) == [colT0.addingTimeInterval(30)])
        #expect(values(v.optIntMap, "self == nil") == [nil])
        #expect(values(v.intMap, "self IN %@", [2, 3])?.sorted() == [2, 3])
        #expect(v.intMap.filter(NSPredicate(format: "self >= 2")).sum() == 5)
        #expect(v.intMap.filter(NSPredicate(format: "self > 9")).isEmpty)
    }

    @Test func sortedValues() throws {
        let (_, _, v) = try seededValues()
        #expect(Array(v.intMap.sorted(ascending: true)) == [1, 1, 2, 3])
        #expect(Array(v.intMap.sorted(ascending: false)) == [3, 2, 1, 1])
        #expect(Array(v.stringMap.sorted(ascending: true)) == ["apple", "fig", "fig", "pear"])
        #expect(Array(v.dateMap.sorted(ascending: false)) == [30.0, 20, 10].map { colT0.addingTimeInterval($0) })
        #expect(Array(v.optIntMap.sorted(ascending: true)) == [nil, 2, 4])
        #expect(Array(v.doubleMap.sorted(byKeyPath: "self", ascending: false)) == [3.5, 2.5, 1.5, 0.5])
        #expect(Array(v.decimalMap.sorted(by: [SortDescriptor(keyPath: "self")])) == [0.5, 1.5, 2.5, 3.5].map { Decimal128(value: $0) })
    }

    @Test func aHeldResultsOfAMapFollowsTheMap() throws {
        let (_, realm, v) = try seededValues()
        let big = v.intMap.filter(NSPredicate(format: "self >= 2"))
        #expect(big.map { $0 }.sorted() == [2, 3])
        try realm.write { v.intMap["k1"] = 5 }
        #expect(big.map { $0 }.sorted() == [2, 3, 5])
        try realm.write { v.intMap.removeObject(for: "k0") }
        #expect(big.map { $0 }.sorted() == [2, 5])
        try realm.write { v.intMap["k9"] = 9 }
        #expect(big.sum() == 16)
    }

    // MARK: Maps of objects

    @Test func filterAndSortObjects() throws {
        let (_, _, a, b, _) = try boxes()
        #expect(a.itemMap.filter("int == 3").count == 2)
        #expect(a.itemMap.filter(NSPredicate(format: "double > %@", 1)).map { $0?.id } == [1])
        let positive: [Int?] = b.itemMap.filter(NSPredicate(format: "int > 0")).map { $0?.id } // typed: quicker to compile
        #expect(positive.sorted { ($0 ?? 0) < ($1 ?? 0) } == [2, 4])
        #expect(a.itemMap.sorted(byKeyPath: "name", ascending: false).map { $0?.id } == [3, 1])
        #expect(b.itemMap.sorted(by: [SortDescriptor(keyPath: "date")]).filter("int > 0").map { $0?.id } == [2, 4])
    }

    @Test func aggregatesOfObjects() throws {
        let (_, _, a, b, c) = try boxes()
        #expect(a.itemMap.min(ofProperty: "double") as Double? == 0.5)
        #expect(a.itemMap.max(ofProperty: "date") as Date? == colT0.addingTimeInterval(30))
        #expect(a.itemMap.sum(ofProperty: "int") as Int == 6)
        #expect(a.itemMap.average(ofProperty: "double") as Double? == 1)
        #expect(b.itemMap.count == 3)
        #expect(b.itemMap.sum(ofProperty: "int") as Int == 3)
        #expect(b.itemMap.min(ofProperty: "int") as Int? == 1)
        #expect(b.itemMap.average(ofProperty: "int") as Double? == 1.5)
        #expect(c.itemMap.sum(ofProperty: "int") as Int == 0)
        #expect(c.itemMap.max(ofProperty: "int") as Int? == nil)
        #expect(c.scores.sum() == 0)
        #expect(c.scores.min() == nil)
    }

    // MARK: Maps in predicates

    @Test func mapsInPredicates() throws {
        let (_, realm, _) = try seededValues()
        try realm.write { realm.create(ColValues.self) }
        let all = realm.objects(ColValues.self)
        #expect(matches(all, "intMap['k0'] == 3") == 1)
        #expect(matches(all, "intMap[%@] == 1", "k1") == 1)
        #expect(matches(all, "optIntMap['k2'] == 4") == 1)
        #expect(matches(all, "stringMap['k2'] BEGINSWITH 'app'") == 1)
        #expect(matches(all, "ANY intMap.@allKeys == 'k3'") == 1)
        #expect(matches(all, "intMap.@allKeys == 'zz'") == 0)
        #expect(matches(all, "ANY intMap.@allValues == 2") == 1)
        #expect(matches(all, "ALL intMap.@allValues < 5") == 2)
        #expect(matches(all, "intMap.@count == 4") == 1)
        #expect(matches(all, "intMap.@count == 0") == 1)
        #expect(matches(all, "intMap.@sum == 7") == 1)
        #expect(matches(all, "intMap.@max == 3") == 1)
        #expect(matches(all, "doubleMap.@avg == 2") == 1)
        #expect(matches(all, "dateMap.@min == %@", colT0.addingTimeInterval(10)) == 1)
        #expect(matches(all, "%@ IN stringMap", "fig") == 1)
        #expect(matches(all, "decimalMap.@sum == 8") == 1)
        #expect(matches(all, "decimalMap.@avg == 2") == 1)
        #expect(matches(all, "decimals.@sum == 8") == 1)
    }

    /// How many ColValues `format` matches, through the guarded query helper.
    func matches(_ all: Results<ColValues>, _ format: String, _ args: Any...,
                 sourceLocation: SourceLocation = #_sourceLocation) -> Int? {
        colQuery(all, format, args, { _ in 1 }, sourceLocation: sourceLocation)?.count
    }

    // MARK: Unmanaged maps

    @Test func unmanagedAggregates() {
        let ints = Map<String, Int>()
        ints["a"] = 3
        ints["b"] = 1
        ints["c"] = 2
        #expect(ints.sum() == 6)
        #expect(ints.min() == 1)
        #expect(ints.max() == 3)
        #expect(ints.average() as Double? == 2)
        let decimals = Map<String, Decimal128>()
        decimals["a"] = Decimal128(value: 1.5)
        decimals["b"] = Decimal128(value: 2.5)
        #expect(decimals.sum() == Decimal128(value: 4))
        #expect(decimals.max() == Decimal128(value: 2.5))
        let items = Map<String, ColItem?>()
        items["x"] = ColItem(value: ["int": 3, "double": 0.5])
        items["y"] = ColItem(value: ["int": 1, "double": 1.5])
        #expect(items.sum(ofProperty: "int") as Int == 4)
        #expect(items.min(ofProperty: "double") as Double? == 0.5)
        #expect(items.average(ofProperty: "int") as Double? == 2)
        let empty = Map<String, Double>()
        #expect(empty.sum() == 0)
        #expect(empty.max() == nil)
        #expect(empty.average() as Double? == nil)
    }

    /// A nil value of an unmanaged map of objects is skipped, as managed maps skip it. (In a
    /// child process: a trap here must not stop the other tests.)
    @Test func unmanagedAggregatesSkipNilObjects() async {
        await #expect(processExitsWith: .success) {
            let items = Map<String, ColItem?>()
            items["x"] = ColItem(value: ["int": 3, "double": 0.5])
            items["y"] = ColItem(value: ["int": 1, "double": 1.5])
            items["z"] = .some(nil)
            precondition(items.sum(ofProperty: "int") as Int == 4, "sum")
            precondition(items.min(ofProperty: "double") as Double? == 0.5, "min")
            precondition(items.average(ofProperty: "int") as Double? == 2, "average")
        }
    }

    @Test func filteringAnUnmanagedMapTraps() async {
        await #expect(processExitsWith: .failure) {
            let map = Map<String, Int>()
            map["a"] = 1
            _ = map.filter(NSPredicate(format: "self > 0"))
        }
    }

    @Test func sortingAnUnmanagedMapTraps() async {
        await #expect(processExitsWith: .failure) {
            let map = Map<String, Int>()
            map["a"] = 1
            _ = map.sorted(ascending: true)
        }
    }
}
