// RealmSwift conformance: generic code over collection values. RealmSwift's
// `RealmCollectionValue` refines `_HasPersistedType`, so generic code can name
// `T.PersistedType`, and `_RealmCollectionValueInsideOptional` marks the types a collection can
// hold inside an Optional. One generic helper runs over every storable type, optional and not,
// in List, MutableSet and Map, unmanaged and managed. This file imports the module as a user
// program does (no `@testable`), so only public API is reachable.
import Foundation
import Testing
import SwiftStore

enum CfMood: String, PersistableEnum { case sad, glad }
enum CfRank: Int, PersistableEnum { case low = 1, high = 7 }

struct CfMetres: CustomPersistable, Hashable {
    var value: Double
    init(persistedValue: Double) { value = persistedValue }
    var persistableValue: Double { value }
}

/// Objects compare by row identity only with a primary key, so the target has one.
final class CfTarget: Object {
    @Persisted(primaryKey: true) var name = ""
}

/// One collection of each kind for every storable type, optional and not.
final class CfCollections: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var intList: List<Int>
    @Persisted var intSet: MutableSet<Int>
    @Persisted var intMap: Map<String, Int>
    @Persisted var optIntList: List<Int?>
    @Persisted var optIntSet: MutableSet<Int?>
    @Persisted var optIntMap: Map<String, Int?>
    @Persisted var int8List: List<Int8>
    @Persisted var int8Set: MutableSet<Int8>
    @Persisted var int8Map: Map<String, Int8>
    @Persisted var optInt8List: List<Int8?>
    @Persisted var optInt8Set: MutableSet<Int8?>
    @Persisted var optInt8Map: Map<String, Int8?>
    @Persisted var int16List: List<Int16>
    @Persisted var int16Set: MutableSet<Int16>
    @Persisted var int16Map: Map<String, Int16>
    @Persisted var optInt16List: List<Int16?>
    @Persisted var optInt16Set: MutableSet<Int16?>
    @Persisted var optInt16Map: Map<String, Int16?>
    @Persisted var int32List: List<Int32>
    @Persisted var int32Set: MutableSet<Int32>
    @Persisted var int32Map: Map<String, Int32>
    @Persisted var optInt32List: List<Int32?>
    @Persisted var optInt32Set: MutableSet<Int32?>
    @Persisted var optInt32Map: Map<String, Int32?>
    @Persisted var int64List: List<Int64>
    @Persisted var int64Set: MutableSet<Int64>
    @Persisted var int64Map: Map<String, Int64>
    @Persisted var optInt64List: List<Int64?>
    @Persisted var optInt64Set: MutableSet<Int64?>
    @Persisted var optInt64Map: Map<String, Int64?>
    @Persisted var boolList: List<Bool>
    @Persisted var boolSet: MutableSet<Bool>
    @Persisted var boolMap: Map<String, Bool>
    @Persisted var optBoolList: List<Bool?>
    @Persisted var optBoolSet: MutableSet<Bool?>
    @Persisted var optBoolMap: Map<String, Bool?>
    @Persisted var floatList: List<Float>
    @Persisted var floatSet: MutableSet<Float>
    @Persisted var floatMap: Map<String, Float>
    @Persisted var optFloatList: List<Float?>
    @Persisted var optFloatSet: MutableSet<Float?>
    @Persisted var optFloatMap: Map<String, Float?>
    @Persisted var doubleList: List<Double>
    @Persisted var doubleSet: MutableSet<Double>
    @Persisted var doubleMap: Map<String, Double>
    @Persisted var optDoubleList: List<Double?>
    @Persisted var optDoubleSet: MutableSet<Double?>
    @Persisted var optDoubleMap: Map<String, Double?>
    @Persisted var stringList: List<String>
    @Persisted var stringSet: MutableSet<String>
    @Persisted var stringMap: Map<String, String>
    @Persisted var optStringList: List<String?>
    @Persisted var optStringSet: MutableSet<String?>
    @Persisted var optStringMap: Map<String, String?>
    @Persisted var dataList: List<Data>
    @Persisted var dataSet: MutableSet<Data>
    @Persisted var dataMap: Map<String, Data>
    @Persisted var optDataList: List<Data?>
    @Persisted var optDataSet: MutableSet<Data?>
    @Persisted var optDataMap: Map<String, Data?>
    @Persisted var dateList: List<Date>
    @Persisted var dateSet: MutableSet<Date>
    @Persisted var dateMap: Map<String, Date>
    @Persisted var optDateList: List<Date?>
    @Persisted var optDateSet: MutableSet<Date?>
    @Persisted var optDateMap: Map<String, Date?>
    @Persisted var decimalList: List<Decimal128>
    @Persisted var decimalSet: MutableSet<Decimal128>
    @Persisted var decimalMap: Map<String, Decimal128>
    @Persisted var optDecimalList: List<Decimal128?>
    @Persisted var optDecimalSet: MutableSet<Decimal128?>
    @Persisted var optDecimalMap: Map<String, Decimal128?>
    @Persisted var objectIdList: List<ObjectId>
    @Persisted var objectIdSet: MutableSet<ObjectId>
    @Persisted var objectIdMap: Map<String, ObjectId>
    @Persisted var optObjectIdList: List<ObjectId?>
    @Persisted var optObjectIdSet: MutableSet<ObjectId?>
    @Persisted var optObjectIdMap: Map<String, ObjectId?>
    @Persisted var uuidList: List<UUID>
    @Persisted var uuidSet: MutableSet<UUID>
    @Persisted var uuidMap: Map<String, UUID>
    @Persisted var optUuidList: List<UUID?>
    @Persisted var optUuidSet: MutableSet<UUID?>
    @Persisted var optUuidMap: Map<String, UUID?>
    @Persisted var moodList: List<CfMood>
    @Persisted var moodSet: MutableSet<CfMood>
    @Persisted var moodMap: Map<String, CfMood>
    @Persisted var optMoodList: List<CfMood?>
    @Persisted var optMoodSet: MutableSet<CfMood?>
    @Persisted var optMoodMap: Map<String, CfMood?>
    @Persisted var rankList: List<CfRank>
    @Persisted var rankSet: MutableSet<CfRank>
    @Persisted var rankMap: Map<String, CfRank>
    @Persisted var optRankList: List<CfRank?>
    @Persisted var optRankSet: MutableSet<CfRank?>
    @Persisted var optRankMap: Map<String, CfRank?>
    @Persisted var metresList: List<CfMetres>
    @Persisted var metresSet: MutableSet<CfMetres>
    @Persisted var metresMap: Map<String, CfMetres>
    @Persisted var optMetresList: List<CfMetres?>
    @Persisted var optMetresSet: MutableSet<CfMetres?>
    @Persisted var optMetresMap: Map<String, CfMetres?>
    @Persisted var anyList: List<AnyRealmValue>
    @Persisted var anySet: MutableSet<AnyRealmValue>
    @Persisted var anyMap: Map<String, AnyRealmValue>
    @Persisted var objectList: List<CfTarget>
    @Persisted var objectSet: MutableSet<CfTarget>
    @Persisted var objectMap: Map<String, CfTarget?>
}

let conformanceModels: [ObjectBase.Type] = [CfCollections.self, CfTarget.self]

/// The name of the type `T` is stored as, reached through the generic parameter only.
func persistedTypeName<T: RealmCollectionValue>(_: T.Type) -> String {
    String(describing: T.PersistedType.self)
}

/// The stored type of an Optional element, reached through the InsideOptional constraint.
func optionalPersistedTypeName<T: _RealmCollectionValueInsideOptional>(_: T.Type) -> String {
    String(describing: Optional<T>.PersistedType.self)
}

/// Fills `list`, `set` and `map` of a fresh object with `values` (each twice), unmanaged first,
/// then managed, and checks the contents read back both ways.
func checkCollections<T: RealmCollectionValue>(
    _ values: [T],
    _ list: KeyPath<CfCollections, List<T>>,
    _ set: KeyPath<CfCollections, MutableSet<T>>,
    _ map: KeyPath<CfCollections, Map<String, T>>?,
    id: Int, dir: TempDir,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let object = CfCollections()
    object.id = id
    let doubled = values + values
    object[keyPath: list].append(objectsIn: doubled)
    object[keyPath: set].insert(objectsIn: doubled)
    if let map { for (i, v) in values.enumerated() { object[keyPath: map]["k\(i)"] = v } }

    func check(_ o: CfCollections, _ state: String) {
        #expect(Array(o[keyPath: list]) == doubled, "\(T.self) list \(state)", sourceLocation: sourceLocation)
        #expect(o[keyPath: set].count == Set(values).count, "\(T.self) set \(state)", sourceLocation: sourceLocation)
        #expect(Set(o[keyPath: set]) == Set(values), "\(T.self) set \(state)", sourceLocation: sourceLocation)
        if let map {
            #expect(o[keyPath: map].count == values.count, "\(T.self) map \(state)", sourceLocation: sourceLocation)
            for (i, v) in values.enumerated() {
                #expect(o[keyPath: map]["k\(i)"] == v, "\(T.self) map \(state)", sourceLocation: sourceLocation)
            }
        }
    }
    check(object, "unmanaged")
    let realm = try Realm(configuration: dir.config(conformanceModels))
    try realm.write { realm.add(object) }
    check(object, "managed")
    let fresh = try #require(realm.object(ofType: CfCollections.self, forPrimaryKey: id), sourceLocation: sourceLocation)
    check(fresh, "read back")
}

/// Runs `checkCollections` for `T` and for `T?` (with nil among the values), where the optional
/// collections are typed only through `T`'s InsideOptional conformance.
func checkOptional<T: _RealmCollectionValueInsideOptional>(
    _ values: [T],
    _ list: KeyPath<CfCollections, List<T>>,
    _ set: KeyPath<CfCollections, MutableSet<T>>,
    _ map: KeyPath<CfCollections, Map<String, T>>,
    _ optList: KeyPath<CfCollections, List<T?>>,
    _ optSet: KeyPath<CfCollections, MutableSet<T?>>,
    _ optMap: KeyPath<CfCollections, Map<String, T?>>,
    dir: TempDir,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let id = Int.random(in: 1...Int.max)
    try checkCollections(values, list, set, map, id: id, dir: dir, sourceLocation: sourceLocation)
    let optionals: [T?] = [nil] + values.map { Optional($0) }
    try checkCollections(optionals, optList, optSet, optMap, id: id &+ 1, dir: dir, sourceLocation: sourceLocation)
}

@Suite("Conformance: PersistedType and collection values")
struct PersistedTypeConformanceTests {
    @Test func persistedTypeIsNamedThroughGenerics() {
        #expect(persistedTypeName(Int.self) == "Int")
        #expect(persistedTypeName(Int8?.self) == "Optional<Int8>")
        #expect(persistedTypeName(AnyRealmValue.self) == "AnyRealmValue")
        #expect(persistedTypeName(CfMood.self) == "String")
        #expect(persistedTypeName(CfRank?.self) == "Optional<Int>")
        #expect(persistedTypeName(CfMetres.self) == "Double")
        #expect(persistedTypeName(CfMetres?.self) == "Optional<Double>")
        #expect(optionalPersistedTypeName(Decimal128.self) == "Optional<Decimal128>")
        #expect(optionalPersistedTypeName(CfMetres.self) == "Optional<Double>")
        #expect(String(describing: NSNumber.PersistedType.self) == "NSNumber")
        #expect(String(describing: NSDate.PersistedType.self) == "NSDate")
    }

    @Test func everyStorableTypeInEveryCollection() throws {
        let dir = TempDir()
        try checkOptional([1, -2, 3], \.intList, \.intSet, \.intMap, \.optIntList, \.optIntSet, \.optIntMap, dir: dir)
        try checkOptional([1, -2, 127], \.int8List, \.int8Set, \.int8Map, \.optInt8List, \.optInt8Set, \.optInt8Map, dir: dir)
        try checkOptional([1, -2, 300], \.int16List, \.int16Set, \.int16Map, \.optInt16List, \.optInt16Set, \.optInt16Map, dir: dir)
        try checkOptional([1, -2, 70_000], \.int32List, \.int32Set, \.int32Map, \.optInt32List, \.optInt32Set, \.optInt32Map, dir: dir)
        try checkOptional([1, -2, 1 << 40], \.int64List, \.int64Set, \.int64Map, \.optInt64List, \.optInt64Set, \.optInt64Map, dir: dir)
        try checkOptional([true, false], \.boolList, \.boolSet, \.boolMap, \.optBoolList, \.optBoolSet, \.optBoolMap, dir: dir)
        try checkOptional([1.5, -2.25, 3], \.floatList, \.floatSet, \.floatMap, \.optFloatList, \.optFloatSet, \.optFloatMap, dir: dir)
        try checkOptional([1.5, -2.25, 1e100], \.doubleList, \.doubleSet, \.doubleMap, \.optDoubleList, \.optDoubleSet, \.optDoubleMap, dir: dir)
        try checkOptional(["a", "", "ü"], \.stringList, \.stringSet, \.stringMap, \.optStringList, \.optStringSet, \.optStringMap, dir: dir)
        try checkOptional([Data([1, 2]), Data(), Data([0])], \.dataList, \.dataSet, \.dataMap, \.optDataList, \.optDataSet, \.optDataMap, dir: dir)
        try checkOptional([Date(timeIntervalSince1970: 1), Date(timeIntervalSince1970: 2_000_000)], \.dateList, \.dateSet, \.dateMap, \.optDateList, \.optDateSet, \.optDateMap, dir: dir)
        try checkOptional([Decimal128(value: 1), Decimal128(value: -2.5)], \.decimalList, \.decimalSet, \.decimalMap, \.optDecimalList, \.optDecimalSet, \.optDecimalMap, dir: dir)
        try checkOptional([ObjectId(), ObjectId()], \.objectIdList, \.objectIdSet, \.objectIdMap, \.optObjectIdList, \.optObjectIdSet, \.optObjectIdMap, dir: dir)
        try checkOptional([UUID(), UUID()], \.uuidList, \.uuidSet, \.uuidMap, \.optUuidList, \.optUuidSet, \.optUuidMap, dir: dir)
        try checkOptional([.sad, .glad], \.moodList, \.moodSet, \.moodMap, \.optMoodList, \.optMoodSet, \.optMoodMap, dir: dir)
        try checkOptional([.low, .high], \.rankList, \.rankSet, \.rankMap, \.optRankList, \.optRankSet, \.optRankMap, dir: dir)
        try checkOptional([CfMetres(persistedValue: 1.5), CfMetres(persistedValue: 9)], \.metresList, \.metresSet, \.metresMap, \.optMetresList, \.optMetresSet, \.optMetresMap, dir: dir)
        try checkCollections([AnyRealmValue.int(1), .string("x"), .none, .double(2.5)],
                             \.anyList, \.anySet, \.anyMap, id: 1, dir: dir)
        let targets = [CfTarget(value: ["name": "a"]), CfTarget(value: ["name": "b"])]
        try checkCollections(targets, \.objectList, \.objectSet, nil, id: 2, dir: dir)
        let mapped: [CfTarget?] = [nil] + targets.map { Optional($0) }
        let holder = try #require(try Realm(configuration: dir.config(conformanceModels))
            .object(ofType: CfCollections.self, forPrimaryKey: 2))
        let realm = try #require(holder.realm)
        try realm.write { for (i, t) in mapped.enumerated() { holder.objectMap["k\(i)"] = t } }
        #expect(holder.objectMap.count == 3)
        #expect(holder.objectMap["k1"]??.name == "a")
    }
}
