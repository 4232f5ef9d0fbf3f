import Foundation
import Testing
@testable import SwiftStore

// MARK: - Models of the collection query tests (prefix `Col`)

/// An item with a property of each aggregatable type, a link to a box and backlinks from the
/// boxes that list it.
final class ColItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int64: Int64 = 0
    @Persisted var float: Float = 0
    @Persisted var double: Double = 0
    @Persisted var decimal = Decimal128(value: 0)
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var optInt: Int?
    @Persisted var flag = false
    @Persisted var box: ColBox?
    @Persisted(originProperty: "items") var boxes: LinkingObjects<ColBox>
}

/// A box holding items in each kind of collection, and values in a list, a set and a map.
final class ColBox: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var rank = 0
    @Persisted var items: List<ColItem>
    @Persisted var itemSet: MutableSet<ColItem>
    @Persisted var itemMap: Map<String, ColItem?>
    @Persisted var numbers: List<Int>
    @Persisted var labels: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted(originProperty: "box") var members: LinkingObjects<ColItem>
}

/// Collections of every aggregatable value type.
final class ColValues: Object {
    @Persisted var ints: List<Int>
    @Persisted var int8s: List<Int8>
    @Persisted var int16s: List<Int16>
    @Persisted var int32s: List<Int32>
    @Persisted var int64s: List<Int64>
    @Persisted var floats: List<Float>
    @Persisted var doubles: List<Double>
    @Persisted var decimals: List<Decimal128>
    @Persisted var dates: List<Date>
    @Persisted var strings: List<String>
    @Persisted var optInts: List<Int?>
    @Persisted var intSet: MutableSet<Int>
    @Persisted var int8Set: MutableSet<Int8>
    @Persisted var int16Set: MutableSet<Int16>
    @Persisted var int32Set: MutableSet<Int32>
    @Persisted var int64Set: MutableSet<Int64>
    @Persisted var floatSet: MutableSet<Float>
    @Persisted var doubleSet: MutableSet<Double>
    @Persisted var decimalSet: MutableSet<Decimal128>
    @Persisted var dateSet: MutableSet<Date>
    @Persisted var stringSet: MutableSet<String>
    @Persisted var optIntSet: MutableSet<Int?>
    @Persisted var intMap: Map<String, Int>
    @Persisted var int8Map: Map<String, Int8>
    @Persisted var int16Map: Map<String, Int16>
    @Persisted var int32Map: Map<String, Int32>
    @Persisted var int64Map: Map<String, Int64>
    @Persisted var floatMap: Map<String, Float>
    @Persisted var doubleMap: Map<String, Double>
    @Persisted var decimalMap: Map<String, Decimal128>
    @Persisted var dateMap: Map<String, Date>
    @Persisted var stringMap: Map<String, String>
    @Persisted var optIntMap: Map<String, Int?>
}

let colModels: [ObjectBase.Type] = [ColItem.self, ColBox.self, ColValues.self]

/// The reference date of the seeded dates.
let colT0 = Date(timeIntervalSince1970: 1_000_000)

/// The five seeded items:
///
/// | id | name   | int (all widths) | double, float, decimal | date   | optInt | flag  |
/// | 1  | apple  | 3                | 1.5                    | t0+30  | 10     | true  |
/// | 2  | banana | 1                | 2.5                    | t0+10  | nil    | false |
/// | 3  | cherry | 3                | 0.5                    | t0+20  | 30     | false |
/// | 4  | date   | 2                | 4.0                    | t0+40  | nil    | true  |
/// | 5  | elder  | 1                | 1.5                    | t0+50  | 50     | true  |
///
/// Sums: int 10, double 10, optInt 90; averages: int 2, double 2, optInt 30.
func colMakeItems(_ realm: Realm) -> [ColItem] {
    let rows: [(Int, String, Int, Double, Double, Int?, Bool)] = [
        (1, "apple", 3, 1.5, 30, 10, true),
        (2, "banana", 1, 2.5, 10, nil, false),
        (3, "cherry", 3, 0.5, 20, 30, false),
        (4, "date", 2, 4.0, 40, nil, true),
        (5, "elder", 1, 1.5, 50, 50, true),
    ]
    return rows.map { id, name, int, double, seconds, optInt, flag in
        realm.create(ColItem.self, value: [
            "id": id, "name": name, "int": int, "int8": Int8(int), "int16": Int16(int), "int32": Int32(int),
            "int64": Int64(int), "float": Float(double), "double": double, "decimal": Decimal128(value: double),
            "date": colT0.addingTimeInterval(seconds), "optInt": optInt as Any, "flag": flag,
        ])
    }
}

/// The five items and three boxes:
/// - A (rank 1): items [apple, cherry, elder], itemSet {apple, cherry}, itemMap [a: apple, c: cherry],
///   numbers [5, 1, 4], labels {red, green}, scores [a: 1, b: 5]; members (item.box) apple, cherry.
/// - B (rank 2): items [date, banana, apple], itemSet {date, banana}, itemMap [b: banana, d: date, x: nil],
///   numbers [2, 2, 9], labels {blue}, scores [a: 3]; members banana, date.
/// - C (rank 3): everything empty.
/// elder has no box.
@discardableResult
func colSeedBoxes(_ realm: Realm) throws -> (a: ColBox, b: ColBox, c: ColBox) {
    var boxes: (ColBox, ColBox, ColBox)!
    try realm.write {
        let it = colMakeItems(realm)
        let a = realm.create(ColBox.self, value: ["name": "A", "rank": 1])
        let b = realm.create(ColBox.self, value: ["name": "B", "rank": 2])
        let c = realm.create(ColBox.self, value: ["name": "C", "rank": 3])
        a.items.append(objectsIn: [it[0], it[2], it[4]])
        a.itemSet.insert(objectsIn: [it[0], it[2]])
        a.itemMap["a"] = it[0]
        a.itemMap["c"] = it[2]
        a.numbers.append(objectsIn: [5, 1, 4])
        a.labels.insert(objectsIn: ["red", "green"])
        a.scores["a"] = 1
        a.scores["b"] = 5
        b.items.append(objectsIn: [it[3], it[1], it[0]])
        b.itemSet.insert(objectsIn: [it[3], it[1]])
        b.itemMap["b"] = it[1]
        b.itemMap["d"] = it[3]
        b.itemMap["x"] = .some(nil)
        b.numbers.append(objectsIn: [2, 2, 9])
        b.labels.insert("blue")
        b.scores["a"] = 3
        it[0].box = a
        it[2].box = a
        it[1].box = b
        it[3].box = b
        boxes = (a, b, c)
    }
    return boxes
}

/// One box "All" whose list (in id order), set and map (keys a...e) hold the five items, and
/// which every item links to (so its `members` are the five items too).
struct ColFixture {
    let dir: TempDir
    let realm: Realm
    let box: ColBox

    init(_ name: String = #function) throws {
        let dir = TempDir(name)
        let realm = try Realm(configuration: dir.config(colModels))
        var made: ColBox!
        try realm.write {
            let items = colMakeItems(realm)
            let box = realm.create(ColBox.self, value: ["name": "All", "rank": 1])
            box.items.append(objectsIn: items)
            box.itemSet.insert(objectsIn: items)
            for (key, item) in zip(["a", "b", "c", "d", "e"], items) { box.itemMap[key] = item }
            for item in items { item.box = box }
            made = box
        }
        self.dir = dir
        self.realm = realm
        box = made
    }

    var results: Results<ColItem> { realm.objects(ColItem.self) }
    var list: List<ColItem> { box.items }
    var set: MutableSet<ColItem> { box.itemSet }
    var links: LinkingObjects<ColItem> { box.members }
}

/// Values seeded into a `ColValues`: ints [3, 1, 2, 1] (every width), floats, doubles and
/// decimals [1.5, 0.5, 2.5, 3.5], dates t0+20, t0+10, t0+30, strings [pear, fig, apple, fig],
/// optInts [2, nil, 4]; the sets and maps hold the same values (maps under keys k0, k1, ...).
func colSeedValues(_ realm: Realm) throws -> ColValues {
    var made: ColValues!
    try realm.write {
        let v = realm.create(ColValues.self)
        let ints = [3, 1, 2, 1]
        let fractions = [1.5, 0.5, 2.5, 3.5]
        let dates = [20.0, 10, 30].map { colT0.addingTimeInterval($0) }
        v.ints.append(objectsIn: ints)
        v.int8s.append(objectsIn: ints.map { Int8($0) })
        v.int16s.append(objectsIn: ints.map { Int16($0) })
        v.int32s.append(objectsIn: ints.map { Int32($0) })
        v.int64s.append(objectsIn: ints.map { Int64($0) })
        v.floats.append(objectsIn: fractions.map { Float($0) })
        v.doubles.append(objectsIn: fractions)
        v.decimals.append(objectsIn: fractions.map { Decimal128(value: $0) })
        v.dates.append(objectsIn: dates)
        v.strings.append(objectsIn: ["pear", "fig", "apple", "fig"])
        v.optInts.append(objectsIn: [2, nil, 4])
        v.intSet.insert(objectsIn: ints)
        v.int8Set.insert(objectsIn: ints.map { Int8($0) })
        v.int16Set.insert(objectsIn: ints.map { Int16($0) })
        v.int32Set.insert(objectsIn: ints.map { Int32($0) })
        v.int64Set.insert(objectsIn: ints.map { Int64($0) })
        v.floatSet.insert(objectsIn: fractions.map { Float($0) })
        v.doubleSet.insert(objectsIn: fractions)
        v.decimalSet.insert(objectsIn: fractions.map { Decimal128(value: $0) })
        v.dateSet.insert(objectsIn: dates)
        v.stringSet.insert(objectsIn: ["pear", "fig", "apple", "fig"])
        v.optIntSet.insert(objectsIn: [2, nil, 4])
        for (i, x) in ints.enumerated() {
            v.intMap["k\(i)"] = x
            v.int8Map["k\(i)"] = Int8(x)
            v.int16Map["k\(i)"] = Int16(x)
            v.int32Map["k\(i)"] = Int32(x)
            v.int64Map["k\(i)"] = Int64(x)
        }
        for (i, x) in fractions.enumerated() {
            v.floatMap["k\(i)"] = Float(x)
            v.doubleMap["k\(i)"] = x
            v.decimalMap["k\(i)"] = Decimal128(value: x)
        }
        for (i, d) in dates.enumerated() { v.dateMap["k\(i)"] = d }
        for (i, s) in ["pear", "fig", "apple", "fig"].enumerated() { v.stringMap["k\(i)"] = s }
        v.optIntMap["k0"] = .some(2)
        v.optIntMap["k1"] = .some(nil)
        v.optIntMap["k2"] = .some(4)
        made = v
    }
    return made
}

// MARK: - Query helpers

/// What `format` matches in `c`, mapped through `key`, or nil when the core rejects the
/// predicate. The predicate is parsed through the throwing path first, so that a predicate the
/// core does not support fails this one check (with the core's message) instead of trapping the
/// whole test process; then the public `filter(NSPredicate)` runs it.
func colQuery<C: _RealmQueryable, K>(_ c: C, _ format: String, _ args: [Any], _ key: (C._QueryElement) -> K,
                                     sourceLocation: SourceLocation) -> [K]? {
    guard let root = c._rlmQueryRoot else {
        Issue.record("the collection is not managed", sourceLocation: sourceLocation)
        return nil
    }
    do {
        let _: Results<C._QueryElement> = try QueryOps.filter(root.base, format, args)
    } catch {
        Issue.record("'\(format)' was rejected: \(error)", sourceLocation: sourceLocation)
        return nil
    }
    return c.filter(NSPredicate(format: format, argumentArray: args)).map(key)
}

/// The ids, ascending, of the items `format` matches.
func ids<C: _RealmQueryable>(_ c: C, _ format: String, _ args: Any...,
                             sourceLocation: SourceLocation = #_sourceLocation) -> [Int]? where C._QueryElement == ColItem {
    colQuery(c, format, args, { $0.id }, sourceLocation: sourceLocation)?.sorted()
}

/// The names, ascending, of the boxes `format` matches.
func boxNames<C: _RealmQueryable>(_ c: C, _ format: String, _ args: Any...,
                                  sourceLocation: SourceLocation = #_sourceLocation) -> [String]? where C._QueryElement == ColBox {
    colQuery(c, format, args, { $0.name }, sourceLocation: sourceLocation)?.sorted()
}

/// The values `format` matches in a collection of values, in result order.
func values<C: _RealmQueryable>(_ c: C, _ format: String, _ args: Any...,
                                sourceLocation: SourceLocation = #_sourceLocation) -> [C._QueryElement]? {
    colQuery(c, format, args, { $0 }, sourceLocation: sourceLocation)
}

/// Whether a sort or distinct over `c` compiles in the core; records the core's message when
/// not (so a missing feature fails one check instead of trapping the process).
func colCompiles<C: _RealmQueryable>(_ c: C, sorts: [SwiftStore.SortDescriptor] = [], distinct: [String] = [],
                                     sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    guard let root = c._rlmQueryRoot else {
        Issue.record("the collection is not managed", sourceLocation: sourceLocation)
        return false
    }
    var base = root.base
    if !distinct.isEmpty { base = base.distinct(distinct) }
    if !sorts.isEmpty { base = base.sorted(sorts) }
    do {
        _ = try base.compiledQuery()
        return true
    } catch {
        Issue.record("sort \(sorts) / distinct \(distinct) was rejected: \(error)", sourceLocation: sourceLocation)
        return false
    }
}

/// The elements of a `value(forKey:)`/`value(forKeyPath:)` array as `T` (nil for NSNull).
func kvcArray<T>(_ value: Any?, as _: T.Type = T.self) -> [T?]? {
    guard let value else { return nil }
    if let array = value as? [Any] { return array.map { $0 as? T } }
    if let array = value as? NSArray { return array.map { $0 as? T } }
    return nil
}

// MARK: - Generic checks over every collection kind

/// Filtering with a format and arguments, an NSPredicate and the throwing form; the collection
/// holds the five seeded items.
func colCheckFilter<C: RealmCollection>(_ c: C, _ kind: String) where C.Element == ColItem {
    #expect(Set(c.filter("int == %@", 3).map(\.id)) == [1, 3], "\(kind)")
    #expect(Set(c.filter("name BEGINSWITH %@ AND flag == %@", "e", true).map(\.id)) == [5], "\(kind)")
    #expect(c.filter("int > 1").count == 3, "\(kind)")
    #expect(c.filter("int > 100").count == 0, "\(kind)")
    #expect(Set(c.filter(NSPredicate(format: "double >= %@", 1.5)).map(\.id)) == [1, 2, 4, 5], "\(kind)")
    #expect(Set(c.filter(NSPredicate(format: "optInt == nil", argumentArray: nil)).map(\.id)) == [2, 4], "\(kind)")
    let late = try? c.filter(throwing: "date > %@", colT0.addingTimeInterval(25))
    #expect(late.map { Set($0.map(\.id)) } == [1, 4, 5], "\(kind)")
    #expect(Set(c.filter("flag == true").filter("int < 3").map(\.id)) == [4, 5], "\(kind)")
    #expect(Set(c.filter("box.name == 'All'").map(\.id)) == [1, 2, 3, 4, 5], "\(kind)")
    #expect(c.filter("int == 2").first?.name == "date", "\(kind)")
}

/// Sorting by name (no ties, so the order does not depend on the collection's own order).
func colCheckSorted<C: RealmCollection>(_ c: C, _ kind: String) where C.Element == ColItem {
    #expect(c.sorted(byKeyPath: "name").map(\.id) == [1, 2, 3, 4, 5], "\(kind)")
    #expect(c.sorted(byKeyPath: "name", ascending: false).map(\.id) == [5, 4, 3, 2, 1], "\(kind)")
    #expect(c.sorted(by: \.date).map(\.id) == [2, 3, 1, 4, 5], "\(kind)")
    #expect(c.sorted(by: \.date, ascending: false).map(\.id) == [5, 4, 1, 3, 2], "\(kind)")
    let byIntThenName = [SortDescriptor(keyPath: "int"), SortDescriptor(keyPath: "name", ascending: false)]
    #expect(c.sorted(by: byIntThenName).map(\.id) == [5, 2, 4, 3, 1], "\(kind)")
    #expect(c.sorted(by: [SortDescriptor(keyPath: \ColItem.double, ascending: false), "name"]).map(\.id) == [4, 2, 1, 5, 3],
            "\(kind)")
    #expect(c.filter("flag == true").sorted(byKeyPath: "name", ascending: false).map(\.name) == ["elder", "date", "apple"],
            "\(kind)")
}

/// Distinct by one and several properties (counts and value sets, which do not depend on order).
func colCheckDistinct<C: RealmCollection>(_ c: C, _ kind: String) where C.Element == ColItem {
    let byInt = c.distinct(by: ["int"])
    #expect(byInt.count == 3, "\(kind)")
    #expect(Set(byInt.map(\.int)) == [1, 2, 3], "\(kind)")
    #expect(c.distinct(by: ["flag"]).count == 2, "\(kind)")
    #expect(c.distinct(by: ["int", "flag"]).count == 5, "\(kind)")
    #expect(c.distinct(by: ["double", "flag"]).count == 4, "\(kind)")
    #expect(c.distinct(by: [\ColItem.int, \ColItem.flag]).count == 5, "\(kind)")
    #expect(c.distinct(by: [\ColItem.int]).count == 3, "\(kind)")
}

/// Aggregates by property name and by key path, with the property's type returned.
func colCheckAggregates<C: RealmCollection>(_ c: C, _ kind: String) where C.Element == ColItem {
    #expect(c.min(ofProperty: "int") as Int? == 1, "\(kind)")
    #expect(c.max(ofProperty: "int") as Int? == 3, "\(kind)")
    #expect(c.sum(ofProperty: "int") as Int == 10, "\(kind)")
    #expect(c.average(ofProperty: "int") as Double? == 2, "\(kind)")
    #expect(c.min(ofProperty: "double") as Double? == 0.5, "\(kind)")
    #expect(c.max(ofProperty: "date") as Date? == colT0.addingTimeInterval(50), "\(kind)")
    #expect(c.min(ofProperty: "date") as Date? == colT0.addingTimeInterval(10), "\(kind)")
    #expect(c.min(of: \.double) == 0.5, "\(kind)")
    #expect(c.max(of: \.double) == 4.0, "\(kind)")
    #expect(c.sum(of: \.double) == 10.0, "\(kind)")
    #expect(c.average(of: \.double) == 2.0, "\(kind)")
    #expect(c.sum(of: \.int) == 10, "\(kind)")
    #expect(c.min(of: \.date) == colT0.addingTimeInterval(10), "\(kind)")
    #expect(c.sum(ofProperty: "optInt") as Int == 90, "\(kind)")
    #expect(c.average(ofProperty: "optInt") as Double? == 30, "\(kind)")
    #expect(c.min(ofProperty: "optInt") as Int? == 10, "\(kind)")
    let none = c.filter("int > 100")
    #expect(none.sum(ofProperty: "int") as Int == 0, "\(kind)")
    #expect(none.min(ofProperty: "int") as Int? == nil, "\(kind)")
    #expect(none.max(ofProperty: "date") as Date? == nil, "\(kind)")
    #expect(none.average(ofProperty: "double") as Double? == nil, "\(kind)")
}

/// Key-value coding: arrays of values, collection operators and setting every element.
func colCheckKVC<C: RealmCollection>(_ c: C, _ kind: String) where C.Element == ColItem {
    let names = kvcArray(c.value(forKey: "name"), as: String.self)
    #expect(names.map { Set($0.compactMap { $0 }) } == ["apple", "banana", "cherry", "date", "elder"], "\(kind)")
    #expect(names?.count == 5, "\(kind)")
    let boxNames = kvcArray(c.value(forKeyPath: "box.name"), as: String.self)
    #expect(boxNames.map { $0.compactMap { $0 } } == ["All", "All", "All", "All", "All"], "\(kind)")
    #expect(c.value(forKeyPath: "@count") as? Int == 5, "\(kind)")
    #expect(c.value(forKeyPath: "@sum.int") as? Int == 10, "\(kind)")
    #expect(c.value(forKeyPath: "@min.int") as? Int == 1, "\(kind)")
    #expect(c.value(forKeyPath: "@max.double") as? Double == 4.0, "\(kind)")
    #expect(c.value(forKeyPath: "@avg.double") as? Double == 2.0, "\(kind)")
    #expect(c.value(forKeyPath: "@max.date") as? Date == colT0.addingTimeInterval(50), "\(kind)")
    let union = kvcArray(c.value(forKeyPath: "@unionOfObjects.int"), as: Int.self)
    #expect(union.map { $0.compactMap { $0 }.sorted() } == [1, 1, 2, 3, 3], "\(kind)")
}

/// Positions, for the ordered kinds (the collection holds the items in id order).
func colCheckOrdered<C: RealmCollection>(_ c: C, _ kind: String) where C.Element == ColItem {
    #expect(c.map(\.id) == [1, 2, 3, 4, 5], "\(kind)")
    #expect(c.first?.id == 1, "\(kind)")
    #expect(c.last?.id == 5, "\(kind)")
    #expect(c[2].name == "cherry", "\(kind)")
    #expect(c.index(of: c[2]) == 2, "\(kind)")
    #expect(c.index(of: ColItem()) == nil, "\(kind)")
    #expect(c.index(matching: "name == %@", "date") == 3, "\(kind)")
    #expect(c.index(matching: "int == 1") == 1, "\(kind)")
    #expect(c.index(matching: NSPredicate(format: "flag == %@ AND int == %@", true, 1)) == 4, "\(kind)")
    #expect(c.index(matching: "int > 100") == nil, "\(kind)")
    #expect(c.objects(at: [0, 4]).map(\.id) == [1, 5], "\(kind)")
    #expect(c.objects(at: IndexSet(1...3)).map(\.name) == ["banana", "cherry", "date"], "\(kind)")
    #expect(c.objects(at: IndexSet()).count == 0, "\(kind)")
}

/// Aggregates, sorting, distinct and filtering of a collection of Int holding `expected`.
func colCheckInts<C: RealmCollection>(_ c: C, _ kind: String, holding expected: [Int]) where C.Element == Int {
    #expect(c.sum() == expected.reduce(0, +), "\(kind)")
    #expect(c.min() == expected.min(), "\(kind)")
    #expect(c.max() == expected.max(), "\(kind)")
    #expect(c.average() as Double? == Double(expected.reduce(0, +)) / Double(expected.count), "\(kind)")
    #expect(Array(c.sorted(ascending: true)) == expected.sorted(), "\(kind)")
    #expect(Array(c.sorted(ascending: false)) == expected.sorted(by: >), "\(kind)")
    #expect(Set(c.distinct()) == Set(expected), "\(kind)")
    #expect(c.distinct().count == Set(expected).count, "\(kind)")
    #expect(c.filter("self > 1").sorted() == expected.filter { $0 > 1 }.sorted(), "\(kind)")
    #expect(c.filter("self IN %@", [1, 3]).count == expected.filter { $0 == 1 || $0 == 3 }.count, "\(kind)")
    #expect(c.filter("self > 100").sum() == 0, "\(kind)")
    #expect(c.filter("self > 100").min() == nil, "\(kind)")
    #expect(c.filter("self > 100").average() as Double? == nil, "\(kind)")
    #expect(c.value(forKeyPath: "@count") as? Int == expected.count, "\(kind)")
    #expect(c.value(forKeyPath: "@sum.self") as? Int == expected.reduce(0, +), "\(kind)")
    #expect(c.value(forKeyPath: "@max.self") as? Int == expected.max(), "\(kind)")
}

@Suite struct RealmCollectionTests {
    // MARK: Every kind of collection of objects

    @Test func filterOnEveryKind() throws {
        let f = try ColFixture()
        colCheckFilter(f.results, "Results")
        colCheckFilter(f.list, "List")
        colCheckFilter(f.set, "MutableSet")
        colCheckFilter(f.links, "LinkingObjects")
    }

    @Test func sortedOnEveryKind() throws {
        let f = try ColFixture()
        colCheckSorted(f.results, "Results")
        colCheckSorted(f.list, "List")
        colCheckSorted(f.set, "MutableSet")
        colCheckSorted(f.links, "LinkingObjects")
    }

    @Test func distinctOnEveryKind() throws {
        let f = try ColFixture()
        colCheckDistinct(f.results, "Results")
        colCheckDistinct(f.list, "List")
        colCheckDistinct(f.set, "MutableSet")
        colCheckDistinct(f.links, "LinkingObjects")
    }

    @Test func aggregatesOnEveryKind() throws {
        let f = try ColFixture()
        colCheckAggregates(f.results, "Results")
        colCheckAggregates(f.list, "List")
        colCheckAggregates(f.set, "MutableSet")
        colCheckAggregates(f.links, "LinkingObjects")
    }

    @Test func keyValueCodingOnEveryKind() throws {
        let f = try ColFixture()
        colCheckKVC(f.results, "Results")
        colCheckKVC(f.list, "List")
        colCheckKVC(f.set, "MutableSet")
        colCheckKVC(f.links, "LinkingObjects")
    }

    @Test func positionsOnEveryOrderedKind() throws {
        let f = try ColFixture()
        colCheckOrdered(f.results, "Results")
        colCheckOrdered(f.list, "List")
        colCheckOrdered(f.links, "LinkingObjects")
    }

    @Test func setValueOnResults() throws {
        let f = try ColFixture()
        try f.realm.write { f.results.filter("int == 1").setValue(9, forKey: "int") }
        #expect(f.results.map(\.int) == [3, 9, 3, 2, 9])
    }

    @Test func setValueOnList() throws {
        let f = try ColFixture()
        try f.realm.write { f.list.setValue("x", forKey: "name") }
        #expect(f.results.map(\.name) == ["x", "x", "x", "x", "x"])
    }

    @Test func setValueOnMutableSet() throws {
        let f = try ColFixture()
        try f.realm.write { f.set.setValue(true, forKey: "flag") }
        #expect(f.results.filter("flag == false").count == 0)
    }

    @Test func setValueOnLinkingObjects() throws {
        let f = try ColFixture()
        try f.realm.write { f.links.setValue(nil, forKey: "optInt") }
        #expect(f.results.filter("optInt == nil").count == 5)
    }

    @Test func basicsOnEveryKind() throws {
        let f = try ColFixture()
        #expect(f.results.count == 5 && f.list.count == 5 && f.set.count == 5 && f.links.count == 5)
        #expect(f.results.realm == f.realm && f.list.realm == f.realm && f.set.realm == f.realm && f.links.realm == f.realm)
        #expect(!f.results.isInvalidated && !f.list.isInvalidated && !f.set.isInvalidated && !f.links.isInvalidated)
        #expect(f.results.count > 0 && f.links.count > 0)
        #expect(f.results.startIndex == 0 && f.results.endIndex == 5)
        #expect(f.list.startIndex == 0 && f.list.endIndex == 5)
    }

    // MARK: Every kind of collection of values

    @Test func intValuesOnEveryKind() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        let v = try colSeedValues(realm)
        colCheckInts(v.ints, "List", holding: [3, 1, 2, 1])
        colCheckInts(v.intSet, "MutableSet", holding: [3, 1, 2])
        colCheckInts(v.ints.filter("self >= 1"), "Results of a List", holding: [3, 1, 2, 1])
        colCheckInts(v.intSet.filter("TRUEPREDICATE"), "Results of a MutableSet", holding: [3, 1, 2])
        colCheckInts(v.intMap.filter(NSPredicate(format: "self < 10")), "Results of a Map", holding: [3, 1, 2, 1])
    }

    /// RealmSwift implements `sum()`, `min()`... of values as the aggregate of property "self";
    /// the named form works on every collection of values. (In a child process: a trap here must
    /// not stop the other tests.)
    @Test func aggregatesOfValuesByTheSelfProperty() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            let v = try! colSeedValues(realm)
            precondition(v.ints.sum(ofProperty: "self") as Int == 7, "List sum")
            precondition(v.ints.min(ofProperty: "self") as Int? == 1, "List min")
            precondition(v.doubles.average(ofProperty: "self") as Double? == 2, "List average")
            precondition(v.intSet.max(ofProperty: "self") as Int? == 3, "MutableSet max")
            precondition(v.intMap.sum(ofProperty: "self") as Int == 7, "Map sum")
            precondition(v.intMap.max(ofProperty: "self") as Int? == 3, "Map max")
            precondition(v.ints.filter("self > 1").sum(ofProperty: "self") as Int == 5, "Results sum")
        }
    }

    @Test func aggregatesOfUnmanagedValuesByTheSelfProperty() async {
        await #expect(processExitsWith: .success) {
            let ints = List<Int>()
            ints.append(objectsIn: [3, 1, 2, 1])
            precondition(ints.sum(ofProperty: "self") as Int == 7, "List sum")
            precondition(ints.max(ofProperty: "self") as Int? == 3, "List max")
            let set = MutableSet<Double>()
            set.insert(objectsIn: [1.5, 2.5])
            precondition(set.average(ofProperty: "self") as Double? == 2, "MutableSet average")
        }
    }

    /// Objects that link to each other through collections (ColItem.box -> ColBox.items -> ColItem)
    /// describe to a bounded depth, as RealmSwift's description stops at a maximum depth.
    @Test func describingACyclicGraphTerminates() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            let (a, _, _) = try! colSeedBoxes(realm)
            precondition(!String(describing: a.items).isEmpty)
            precondition(!String(describing: realm.objects(ColItem.self)).isEmpty)
            precondition(!a.members.description.isEmpty)
        }
    }

    // MARK: SortDescriptor

    @Test func sortDescriptorMembers() {
        let a = SortDescriptor(keyPath: "name")
        #expect(a.keyPath == "name")
        #expect(a.ascending)
        let b = SortDescriptor(keyPath: "int", ascending: false)
        #expect(b.keyPath == "int" && !b.ascending)
        #expect(b.reversed() == SortDescriptor(keyPath: "int", ascending: true))
        #expect(b.reversed().reversed() == b)
        #expect(a != b)
        let literal: SwiftStore.SortDescriptor = "date"
        #expect(literal == SortDescriptor(keyPath: "date", ascending: true))
        #expect(SortDescriptor(keyPath: \ColItem.double, ascending: false) == SortDescriptor(keyPath: "double", ascending: false))
        #expect(SortDescriptor(keyPath: \ColItem.box?.name) == SortDescriptor(keyPath: "box.name"))
        #expect(a.description == "SortDescriptor(keyPath: name, direction: ascending)")
        #expect(b.description == "SortDescriptor(keyPath: int, direction: descending)")
    }

    @Test func sortDescriptorsAsALiteralArray() throws {
        let f = try ColFixture()
        #expect(f.results.sorted(by: ["flag", "name"]).map(\.id) == [2, 3, 1, 4, 5])
        #expect(f.results.sorted(by: [SortDescriptor(keyPath: "flag").reversed(), "name"]).map(\.id) == [1, 4, 5, 2, 3])
    }

    // MARK: Misuse (RealmSwift raises; here the process traps)

    @Test func filteringAnUnmanagedListTraps() async {
        await #expect(processExitsWith: .failure) {
            let list = List<ColItem>()
            list.append(ColItem())
            _ = list.filter("int > 0")
        }
    }

    @Test func sortingAnUnmanagedSetTraps() async {
        await #expect(processExitsWith: .failure) {
            let set = MutableSet<ColItem>()
            set.insert(ColItem())
            _ = set.sorted(byKeyPath: "int")
        }
    }

    @Test func distinctOnAnUnmanagedListTraps() async {
        await #expect(processExitsWith: .failure) {
            let list = List<Int>()
            list.append(1)
            _ = list.distinct()
        }
    }

    @Test func sortingByAnUnknownPropertyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            _ = realm.objects(ColItem.self).sorted(byKeyPath: "nope")
        }
        expectMessage(result, "nope")
    }

    @Test func distinctByAnUnknownPropertyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            _ = realm.objects(ColItem.self).distinct(by: ["nope"])
        }
        expectMessage(result, "nope")
    }

    @Test func aggregatingANonNumericPropertyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            try! realm.write { _ = colMakeItems(realm) }
            let _: Int = realm.objects(ColItem.self).sum(ofProperty: "name")
        }
        expectMessage(result, "name")
    }

    @Test func aggregatingAnUnknownPropertyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            let _: Int? = realm.objects(ColItem.self).min(ofProperty: "nope")
        }
        expectMessage(result, "nope")
    }

    @Test func objectsAtAnIndexOutOfBoundsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            try! realm.write { _ = colMakeItems(realm) }
            _ = realm.objects(ColItem.self).objects(at: [1, 5])
        }
        expectMessage(result, "Index 5 is out of bounds")
    }

    @Test func setValueOutsideAWriteTransactionTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            try! realm.write { _ = colMakeItems(realm) }
            realm.objects(ColItem.self).setValue(1, forKey: "int")
        }
    }
}
