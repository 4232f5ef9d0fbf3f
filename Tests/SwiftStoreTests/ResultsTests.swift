import Foundation
import Testing
@testable import SwiftStore

/// Results: the predicate language on every property type, sorting, distinct, aggregates,
/// liveness and enumeration. Models and seeds are in RealmCollectionTests.swift.
@Suite struct ResultsTests {
    func boxes() throws -> (TempDir, Realm) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        try colSeedBoxes(realm)
        return (dir, realm)
    }

    // MARK: Comparison operators

    @Test func comparisonOperatorsOnInt() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "int == 3") == [1, 3])
        #expect(ids(items, "int = 3") == [1, 3])
        #expect(ids(items, "int != 3") == [2, 4, 5])
        #expect(ids(items, "int <> 3") == [2, 4, 5])
        #expect(ids(items, "int < 2") == [2, 5])
        #expect(ids(items, "int <= 2") == [2, 4, 5])
        #expect(ids(items, "int > 2") == [1, 3])
        #expect(ids(items, "int >= 2") == [1, 3, 4])
        #expect(ids(items, "3 == int") == [1, 3])
        #expect(ids(items, "2 < int") == [1, 3])
    }

    @Test func comparisonOperatorsWithArguments() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "int == %@", 3) == [1, 3])
        #expect(ids(items, "double > %@", 1.5) == [2, 4])
        #expect(ids(items, "int == %d", 2) == [4])
        #expect(ids(items, "double >= %f", 2.5) == [2, 4])
        #expect(ids(items, "%K == %@", "name", "cherry") == [3])
        #expect(ids(items, "%K < %@", "int", 2) == [2, 5])
    }

    @Test func logicalOperators() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "int == 3 AND flag == true") == [1])
        #expect(ids(items, "int == 3 && flag == false") == [3])
        #expect(ids(items, "int == 1 OR name == 'apple'") == [1, 2, 5])
        #expect(ids(items, "int == 1 || int == 2") == [2, 4, 5])
        #expect(ids(items, "NOT flag == true") == [2, 3])
        #expect(ids(items, "!(int > 1)") == [2, 5])
        #expect(ids(items, "(int == 3 OR int == 1) AND flag == true") == [1, 5])
        #expect(ids(items, "int == 3 OR int == 1 AND flag == true") == [1, 3, 5])
        #expect(ids(items, "NOT (int == 3 OR flag == true)") == [2])
        #expect(ids(items, "TRUEPREDICATE") == [1, 2, 3, 4, 5])
        #expect(ids(items, "FALSEPREDICATE") == [])
        #expect(ids(items, "flag == true AND TRUEPREDICATE") == [1, 4, 5])
        #expect(ids(items, "flag == true OR FALSEPREDICATE") == [1, 4, 5])
    }

    @Test func between() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "int BETWEEN {2, 3}") == [1, 3, 4])
        #expect(ids(items, "double BETWEEN {1.5, 2.5}") == [1, 2, 5])
        #expect(ids(items, "float BETWEEN {0, 1}") == [3])
        #expect(ids(items, "date BETWEEN {%@, %@}", colT0.addingTimeInterval(20), colT0.addingTimeInterval(40)) == [1, 3, 4])
        #expect(ids(items, "decimal BETWEEN {%@, %@}", Decimal128(value: 1), Decimal128(value: 3)) == [1, 2, 5])
        #expect(ids(items, "int BETWEEN %@", [1, 2]) == [2, 4, 5])
        #expect(ids(items, "NOT int BETWEEN {2, 3}") == [2, 5])
        #expect(ids(items, "int BETWEEN {3, 2}") == [])
    }

    @Test func inWithAListOrAnArrayArgument() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "int IN {1, 2}") == [2, 4, 5])
        #expect(ids(items, "name IN {'apple', 'date', 'zzz'}") == [1, 4])
        #expect(ids(items, "name IN %@", ["apple", "date", "zzz"]) == [1, 4])
        #expect(ids(items, "int IN %@", [3]) == [1, 3])
        #expect(ids(items, "int IN %@", [Int]()) == [])
        #expect(ids(items, "NOT int IN %@", [1, 3]) == [4])
        #expect(ids(items, "id IN %@", Set([2, 5])) == [2, 5])
        #expect(ids(items, "date IN %@", [colT0.addingTimeInterval(10), colT0.addingTimeInterval(50)]) == [2, 5])
        #expect(ids(items, "optInt IN %@", [10, 50]) == [1, 5])
        #expect(ids(items, "name IN[c] {'APPLE', 'Date'}") == [1, 4])
    }

    @Test func nilAndOptionals() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "optInt == nil") == [2, 4])
        #expect(ids(items, "optInt == NULL") == [2, 4])
        #expect(ids(items, "optInt != nil") == [1, 3, 5])
        #expect(ids(items, "optInt > 15") == [3, 5])
        #expect(ids(items, "optInt < 100") == [1, 3, 5])
        #expect(ids(items, "optInt != 10") == [2, 3, 4, 5])
        #expect(ids(items, "optInt == %@", NSNull()) == [2, 4])
        #expect(ids(items, "optInt == %@", Int?.none as Any) == [2, 4])
        #expect(ids(items, "optInt == %@", Int?.some(30) as Any) == [3])
        #expect(ids(items, "box == nil") == [5])
        #expect(ids(items, "box != nil") == [1, 2, 3, 4])
    }

    // MARK: Strings

    /// AllTypes rows for the string tests: 1 "Hello", 2 "hello world", 3 "héllo", 4 "HÉLLO there",
    /// 5 "yellow", 6 "" (optString "a" on 1, nil elsewhere).
    func strings() throws -> (TempDir, Realm) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            for (i, s) in ["Hello", "hello world", "héllo", "HÉLLO there", "yellow", ""].enumerated() {
                realm.create(AllTypes.self, value: ["id": i + 1, "string": s, "optString": (i == 0 ? "a" : nil) as String? as Any])
            }
        }
        return (dir, realm)
    }

    @Test func stringEquality() throws {
        let (_, realm) = try strings()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "string == 'hello world'") == [2])
        #expect(atIDs(all, "string == 'hello'") == [])
        #expect(atIDs(all, "string ==[c] 'hello'") == [1])
        #expect(atIDs(all, "string ==[d] 'hello'") == [3])
        #expect(atIDs(all, "string ==[cd] 'hello'") == [1, 3])
        #expect(atIDs(all, "string != 'Hello'") == [2, 3, 4, 5, 6])
        #expect(atIDs(all, "string !=[c] 'hello'") == [2, 3, 4, 5, 6])
        #expect(atIDs(all, "string !=[d] 'hello'") == [1, 2, 4, 5, 6])
        #expect(atIDs(all, "string !=[cd] 'HELLO'") == [2, 4, 5, 6])
        #expect(atIDs(all, "string == ''") == [6])
        #expect(atIDs(all, "string == %@", "héllo") == [3])
        #expect(atIDs(all, "string == \"yellow\"") == [5])
    }

    @Test func beginsWith() throws {
        let (_, realm) = try strings()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "string BEGINSWITH 'he'") == [2])
        #expect(atIDs(all, "string BEGINSWITH[c] 'he'") == [1, 2])
        #expect(atIDs(all, "string BEGINSWITH[d] 'he'") == [2, 3])
        #expect(atIDs(all, "string BEGINSWITH[cd] 'he'") == [1, 2, 3, 4])
        #expect(atIDs(all, "string BEGINSWITH %@", "yel") == [5])
    }

    @Test func endsWith() throws {
        let (_, realm) = try strings()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "string ENDSWITH 'llo'") == [1, 3])
        #expect(atIDs(all, "string ENDSWITH[c] 'LLO'") == [1, 3])
        #expect(atIDs(all, "string ENDSWITH 'éllo'") == [3])
        #expect(atIDs(all, "string ENDSWITH[d] 'ello'") == [1, 3])
        #expect(atIDs(all, "string ENDSWITH[cd] 'ERE'") == [4])
    }

    @Test func contains() throws {
        let (_, realm) = try strings()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "string CONTAINS 'llo'") == [1, 2, 3, 5])
        #expect(atIDs(all, "string CONTAINS[c] 'LLO'") == [1, 2, 3, 4, 5])
        #expect(atIDs(all, "string CONTAINS 'él'") == [3])
        #expect(atIDs(all, "string CONTAINS[d] 'el'") == [1, 2, 3, 5])
        #expect(atIDs(all, "string CONTAINS[cd] 'EL'") == [1, 2, 3, 4, 5])
        #expect(atIDs(all, "string CONTAINS ' '") == [2, 4])
        #expect(atIDs(all, "NOT string CONTAINS 'l'") == [4, 6])
    }

    @Test func like() throws {
        let (_, realm) = try strings()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "string LIKE 'h*o'") == [3])
        #expect(atIDs(all, "string LIKE '?ello'") == [1])
        #expect(atIDs(all, "string LIKE '*ll*'") == [1, 2, 3, 5])
        #expect(atIDs(all, "string LIKE 'hello*'") == [2])
        #expect(atIDs(all, "string LIKE[c] 'h*'") == [1, 2, 3, 4])
        #expect(atIDs(all, "string LIKE[c] '?ELLO*'") == [1, 2, 5])
        #expect(atIDs(all, "string LIKE '*'") == [1, 2, 3, 4, 5, 6])
        #expect(atIDs(all, "string LIKE[d] 'hello'") == [3])
        #expect(atIDs(all, "string LIKE[cd] 'HELLO'") == [1, 3])
    }

    @Test func optionalStrings() throws {
        let (_, realm) = try strings()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "optString == nil") == [2, 3, 4, 5, 6])
        #expect(atIDs(all, "optString != nil") == [1])
        #expect(atIDs(all, "optString == 'a'") == [1])
        #expect(atIDs(all, "optString != 'a'") == [2, 3, 4, 5, 6])
        #expect(atIDs(all, "optString BEGINSWITH 'a'") == [1])
        #expect(atIDs(all, "optString == %@", NSNull()) == [2, 3, 4, 5, 6])
    }

    @Test func stringOrdering() throws {
        let (_, realm) = try strings()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "string > 'x'") == [5])
    }

    // MARK: Every property type

    /// Three AllTypes rows with different values of every type; row 1 has every optional set,
    /// row 2 none, row 3 only optInt (3).
    func typed() throws -> (TempDir, Realm) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            realm.create(AllTypes.self, value: [
                "id": 1, "int": 1, "int8": Int8(1), "int16": Int16(100), "int32": Int32(1000), "int64": Int64(10_000_000_000),
                "float": Float(1.5), "double": 1.25, "bool": true, "string": "one", "data": Data([1, 2, 3]),
                "date": colT0, "decimal": Decimal128(value: 1.5), "objectId": ResultsTests.oids[0],
                "uuid": ResultsTests.uuids[0], "any": AnyRealmValue.int(5),
                "optInt": 1, "optInt8": Int8(1), "optInt16": Int16(1), "optInt32": Int32(1), "optInt64": Int64(1),
                "optBool": true, "optFloat": Float(1), "optDouble": 1.0, "optString": "x", "optData": Data([9]),
                "optDate": colT0, "optDecimal": Decimal128(value: 1), "optObjectId": ResultsTests.oids[0],
                "optUUID": ResultsTests.uuids[0],
            ])
            realm.create(AllTypes.self, value: [
                "id": 2, "int": 2, "int8": Int8(-1), "int16": Int16(-100), "int32": Int32(-1000), "int64": Int64(-10_000_000_000),
                "float": Float(2.5), "double": 2.5, "bool": false, "string": "two", "data": Data([1, 2]),
                "date": colT0.addingTimeInterval(100), "decimal": Decimal128(value: -2), "objectId": ResultsTests.oids[1],
                "uuid": ResultsTests.uuids[1], "any": AnyRealmValue.string("five"),
            ])
            realm.create(AllTypes.self, value: [
                "id": 3, "int": 3, "int8": Int8(127), "int16": Int16(32000), "int32": Int32(2_000_000_000),
                "int64": Int64(9_000_000_000_000_000_000), "float": Float(-0.5), "double": -3.0, "bool": true, "string": "three",
                "data": Data(), "date": colT0.addingTimeInterval(200), "decimal": Decimal128(value: 100),
                "objectId": ResultsTests.oids[2], "uuid": ResultsTests.uuids[2], "any": AnyRealmValue.double(5.0),
                "optInt": 3,
            ])
        }
        return (dir, realm)
    }

    static var oids: [ObjectId] { [
        ObjectId("aaaaaaaaaaaaaaaaaaaaaaa1"), ObjectId("aaaaaaaaaaaaaaaaaaaaaaa2"), ObjectId("aaaaaaaaaaaaaaaaaaaaaaa3"),
    ] }
    static let uuids = [
        UUID(uuidString: "00000000-0000-0000-0000-000000000001")!,
        UUID(uuidString: "00000000-0000-0000-0000-000000000002")!,
        UUID(uuidString: "00000000-0000-0000-0000-000000000003")!,
    ]

    @Test func integerWidths() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "int8 > 0") == [1, 3])
        #expect(atIDs(all, "int8 == -1") == [2])
        #expect(atIDs(all, "int8 == %@", Int8(127)) == [3])
        #expect(atIDs(all, "int16 < 0") == [2])
        #expect(atIDs(all, "int16 >= 100") == [1, 3])
        #expect(atIDs(all, "int32 == %@", Int32(-1000)) == [2])
        #expect(atIDs(all, "int32 > 1000") == [3])
        #expect(atIDs(all, "int64 > 5000000000") == [1, 3])
        #expect(atIDs(all, "int64 == %@", Int64(9_000_000_000_000_000_000)) == [3])
        #expect(atIDs(all, "int64 < %@", Int64(-1)) == [2])
    }

    @Test func floatingPoint() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "float > 2") == [2])
        #expect(atIDs(all, "float == 1.5") == [1])
        #expect(atIDs(all, "float < %@", Float(0)) == [3])
        #expect(atIDs(all, "double <= 1.25") == [1, 3])
        #expect(atIDs(all, "double == %@", 2.5) == [2])
        #expect(atIDs(all, "double != -3") == [1, 2])
        #expect(atIDs(all, "double < float") == [1, 3])
    }

    @Test func bool() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "bool == true") == [1, 3])
        #expect(atIDs(all, "bool == false") == [2])
        #expect(atIDs(all, "bool != true") == [2])
        #expect(atIDs(all, "bool == %@", true) == [1, 3])
        #expect(atIDs(all, "bool == TRUE") == [1, 3])
    }

    @Test func data() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "data == %@", Data([1, 2, 3])) == [1])
        #expect(atIDs(all, "data != %@", Data([1, 2])) == [1, 3])
        #expect(atIDs(all, "data == %@", Data()) == [3])
        #expect(atIDs(all, "data BEGINSWITH %@", Data([1, 2])) == [1, 2])
        #expect(atIDs(all, "data ENDSWITH %@", Data([2, 3])) == [1])
        #expect(atIDs(all, "data CONTAINS %@", Data([2])) == [1, 2])
        #expect(atIDs(all, "optData == %@", Data([9])) == [1])
        #expect(atIDs(all, "optData == nil") == [2, 3])
    }

    @Test func date() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "date == %@", colT0) == [1])
        #expect(atIDs(all, "date > %@", colT0) == [2, 3])
        #expect(atIDs(all, "date <= %@", colT0.addingTimeInterval(100)) == [1, 2])
        #expect(atIDs(all, "date != %@", colT0.addingTimeInterval(100)) == [1, 3])
        #expect(atIDs(all, "date BETWEEN {%@, %@}", colT0.addingTimeInterval(50), colT0.addingTimeInterval(250)) == [2, 3])
        #expect(atIDs(all, "optDate == %@", colT0) == [1])
        #expect(atIDs(all, "optDate == nil") == [2, 3])
        #expect(atIDs(all, "optDate < %@", colT0.addingTimeInterval(1)) == [1])
    }

    @Test func objectId() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "objectId == %@", Self.oids[1]) == [2])
        #expect(atIDs(all, "objectId != %@", Self.oids[1]) == [1, 3])
        #expect(atIDs(all, "objectId IN %@", [Self.oids[0], Self.oids[2]]) == [1, 3])
        #expect(atIDs(all, "optObjectId == %@", Self.oids[0]) == [1])
        #expect(atIDs(all, "optObjectId == nil") == [2, 3])
    }

    @Test func uuid() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "uuid == %@", Self.uuids[2]) == [3])
        #expect(atIDs(all, "uuid != %@", Self.uuids[0]) == [2, 3])
        #expect(atIDs(all, "uuid IN %@", [Self.uuids[0], Self.uuids[1]]) == [1, 2])
        #expect(atIDs(all, "optUUID == %@", Self.uuids[0]) == [1])
        #expect(atIDs(all, "optUUID != nil") == [1])
    }

    @Test func decimal128() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "decimal > %@", Decimal128(value: 0)) == [1, 3])
        #expect(atIDs(all, "decimal == %@", Decimal128(value: -2)) == [2])
        #expect(atIDs(all, "decimal < 2") == [1, 2])
        #expect(atIDs(all, "decimal == 1.5") == [1])
        #expect(atIDs(all, "decimal BETWEEN {1, 100}") == [1, 3])
        #expect(atIDs(all, "optDecimal == %@", Decimal128(value: 1)) == [1])
        #expect(atIDs(all, "optDecimal == nil") == [2, 3])
    }

    @Test func anyRealmValue() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        // `any` is an NSPredicate keyword, so the property is named through %K.
        #expect(atIDs(all, "%K == 5", "any") == [1, 3])
        #expect(atIDs(all, "%K == 'five'", "any") == [2])
        #expect(atIDs(all, "%K > 4", "any") == [1, 3])
        #expect(atIDs(all, "%K == %@", "any", AnyRealmValue.int(5)) == [1, 3])
        #expect(atIDs(all, "%K == %@", "any", "five") == [2])
        #expect(atIDs(all, "%K == 'string'", "any.@type") == [2])
        #expect(atIDs(all, "%K == 'double'", "any.@type") == [3])
        #expect(atIDs(all, "%K == 'int'", "any.@type") == [1])
        #expect(atIDs(all, "%K == nil", "any") == [])
        #expect(atIDs(all, "%K BEGINSWITH 'fi'", "any") == [2])
    }

    @Test func everyOptionalAgainstNil() throws {
        let (_, realm) = try typed()
        let all = realm.objects(AllTypes.self)
        for name in ["optInt8", "optInt16", "optInt32", "optInt64", "optBool", "optFloat", "optDouble", "optString",
                     "optData", "optDate", "optDecimal", "optObjectId", "optUUID"] {
            #expect(atIDs(all, "\(name) == nil") == [2, 3], "\(name)")
            #expect(atIDs(all, "\(name) != nil") == [1], "\(name)")
            #expect(atIDs(all, "%K == nil", name) == [2, 3], "\(name)")
        }
        #expect(atIDs(all, "optInt == nil") == [2])
        #expect(atIDs(all, "optInt > 1") == [3])
        #expect(atIDs(all, "optBool == true") == [1])
        #expect(atIDs(all, "optBool != true") == [2, 3])
        #expect(atIDs(all, "optDouble == 1") == [1])
        #expect(atIDs(all, "optInt == %@", Int?.none as Any) == [2])
    }

    @Test func enumsAndCustomPersistablesQueryByTheirStoredValue() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            realm.create(AllTypes.self, value: ["id": 1, "mood": Mood.happy, "level": Level.high])
            realm.create(AllTypes.self, value: ["id": 2, "mood": Mood.grumpy, "level": Level.low])
        }
        let all = realm.objects(AllTypes.self)
        #expect(atIDs(all, "mood == 'happy'") == [1])
        #expect(atIDs(all, "mood == %@", Mood.grumpy.rawValue) == [2])
        #expect(atIDs(all, "level > 5") == [1])
    }

    // MARK: Link paths, collections and backlinks in predicates

    @Test func linkPaths() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "box.name == 'A'") == [1, 3])
        #expect(ids(items, "box.rank > 1") == [2, 4])
        #expect(ids(items, "box.name BEGINSWITH[c] 'b'") == [2, 4])
        let b = try #require(realm.object(ofType: ColBox.self, forPrimaryKey: "B"))
        #expect(ids(items, "box == %@", b) == [2, 4])
        #expect(ids(items, "box != %@", b) == [1, 3, 5])
        #expect(ids(items, "box IN %@", [b]) == [2, 4])
    }

    @Test func anyAllNoneOverAListOfObjects() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "items.name == 'banana'") == ["B"])
        #expect(boxNames(boxes, "ANY items.name == 'apple'") == ["A", "B"])
        #expect(boxNames(boxes, "SOME items.int == 2") == ["B"])
        #expect(boxNames(boxes, "ALL items.double >= 1.5") == ["B", "C"])
        #expect(boxNames(boxes, "NONE items.int == 2") == ["A", "C"])
        #expect(boxNames(boxes, "ANY items.date > %@", colT0.addingTimeInterval(45)) == ["A"])
        #expect(boxNames(boxes, "ALL items.flag == true") == ["C"])
        #expect(boxNames(boxes, "NOT ANY items.flag == false") == ["C"])
    }

    @Test func anyAllNoneOverAListOfValues() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "numbers == 5") == ["A"])
        #expect(boxNames(boxes, "ANY numbers == 2") == ["B"])
        #expect(boxNames(boxes, "ANY numbers > 4") == ["A", "B"])
        #expect(boxNames(boxes, "ALL numbers > 1") == ["B", "C"])
        #expect(boxNames(boxes, "NONE numbers == 1") == ["B", "C"])
        #expect(boxNames(boxes, "%@ IN numbers", 4) == ["A"])
        #expect(boxNames(boxes, "ANY numbers IN %@", [1, 9]) == ["A", "B"])
        #expect(boxNames(boxes, "ANY labels == 'blue'") == ["B"])
        #expect(boxNames(boxes, "'red' IN labels") == ["A"])
        #expect(boxNames(boxes, "labels CONTAINS[c] 'RE'") == ["A"])
        #expect(boxNames(boxes, "ALL labels BEGINSWITH 'b'") == ["B", "C"])
    }

    @Test func anyOverASetOfObjectsAndAMapOfObjects() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "ANY itemSet.int == 2") == ["B"])
        #expect(boxNames(boxes, "itemSet.name == 'cherry'") == ["A"])
        #expect(boxNames(boxes, "itemSet.@count == 2") == ["A", "B"])
        #expect(boxNames(boxes, "itemMap['a'].name == 'apple'") == ["A"])
        #expect(boxNames(boxes, "itemMap.@count == 3") == ["B"])
        #expect(boxNames(boxes, "ANY itemMap.@allValues.int == 2") == ["B"])
        #expect(boxNames(boxes, "itemMap['d'].int == 2") == ["B"])
    }

    @Test func countAndSize() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "items.@count == 3") == ["A", "B"])
        #expect(boxNames(boxes, "items.@count == 0") == ["C"])
        #expect(boxNames(boxes, "items.@size > 0") == ["A", "B"])
        #expect(boxNames(boxes, "numbers.@count == 3") == ["A", "B"])
        #expect(boxNames(boxes, "numbers.@size == 0") == ["C"])
        #expect(boxNames(boxes, "labels.@count == 2") == ["A"])
        #expect(boxNames(boxes, "scores.@count == 1") == ["B"])
        #expect(boxNames(boxes, "items.@count > numbers.@count") == [])
    }

    @Test func aggregatesOverCollectionsInPredicates() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "numbers.@sum > 10") == ["B"])
        #expect(boxNames(boxes, "numbers.@sum == 0") == ["C"])
        #expect(boxNames(boxes, "numbers.@min == 1") == ["A"])
        #expect(boxNames(boxes, "numbers.@max >= 5") == ["A", "B"])
        #expect(boxNames(boxes, "numbers.@avg > 4") == ["B"])
        #expect(boxNames(boxes, "items.@sum.int == 7") == ["A"])
        #expect(boxNames(boxes, "items.@avg.int == 2") == ["B"])
        #expect(boxNames(boxes, "items.@max.double == 4.0") == ["B"])
        #expect(boxNames(boxes, "items.@min.double == 0.5") == ["A"])
        #expect(boxNames(boxes, "items.@max.date == %@", colT0.addingTimeInterval(50)) == ["A"])
        #expect(boxNames(boxes, "items.@sum.double > %@", 5) == ["B"])
        #expect(boxNames(boxes, "scores.@sum == 6") == ["A"])
        #expect(boxNames(boxes, "scores.@max == 3") == ["B"])
    }

    @Test func aggregatesOfEmptyCollectionsInPredicates() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "items.@sum.int == 0") == ["C"])
        #expect(boxNames(boxes, "numbers.@min == nil") == ["C"])
        #expect(boxNames(boxes, "numbers.@max == nil") == ["C"])
        #expect(boxNames(boxes, "numbers.@avg == nil") == ["C"])
        #expect(boxNames(boxes, "items.@avg.double == nil") == ["C"])
    }

    @Test func subquery() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "SUBQUERY(items, $i, $i.int == 3).@count == 2") == ["A"])
        #expect(boxNames(boxes, "SUBQUERY(items, $i, $i.int == 3 AND $i.flag == true).@count == 1") == ["A", "B"])
        #expect(boxNames(boxes, "SUBQUERY(items, $i, $i.int == 3).@count == 0") == ["C"])
        #expect(boxNames(boxes, "SUBQUERY(items, $item, $item.name BEGINSWITH 'b' OR $item.double > 3).@count > 1") == ["B"])
        #expect(boxNames(boxes, "SUBQUERY(itemSet, $i, $i.flag == false).@count == 1") == ["A", "B"])
        #expect(boxNames(boxes, "SUBQUERY(items, $i, $i.int > %@).@count >= 2", 1) == ["A", "B"])
    }

    @Test func linksAndLinkingObjectsInPredicates() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(ids(items, "boxes.@count == 2") == [1])
        #expect(ids(items, "ANY boxes.name == 'B'") == [1, 2, 4])
        #expect(ids(items, "ANY boxes.rank == 1") == [1, 3, 5])
        #expect(ids(items, "@links.ColBox.items.@count == 2") == [1])
        #expect(ids(items, "ANY @links.ColBox.items.rank == 1") == [1, 3, 5])
        #expect(ids(items, "@links.ColBox.itemSet.@count == 0") == [5])
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "members.@count == 2") == ["A", "B"])
        #expect(boxNames(boxes, "ANY members.name == 'cherry'") == ["A"])
        #expect(boxNames(boxes, "@links.ColItem.box.@count == 0") == ["C"])
        #expect(boxNames(boxes, "ANY @links.ColItem.box.int == 2") == ["B"])
    }

    @Test func mapSubscriptsKeysAndValues() throws {
        let (_, realm) = try boxes()
        let boxes = realm.objects(ColBox.self)
        #expect(boxNames(boxes, "scores['a'] == 3") == ["B"])
        #expect(boxNames(boxes, "scores['a'] > 0") == ["A", "B"])
        #expect(boxNames(boxes, "scores['b'] == 5") == ["A"])
        #expect(boxNames(boxes, "scores[%@] == 1", "a") == ["A"])
        #expect(boxNames(boxes, "scores.@allKeys == 'b'") == ["A"])
        #expect(boxNames(boxes, "ANY scores.@allKeys == 'a'") == ["A", "B"])
        #expect(boxNames(boxes, "scores.@allValues > 4") == ["A"])
        #expect(boxNames(boxes, "ALL scores.@allValues < 4") == ["B", "C"])
        #expect(boxNames(boxes, "scores.@allKeys BEGINSWITH[c] 'B'") == ["A"])
    }

    // MARK: Sorting

    @Test func sortIsStable() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.sorted(byKeyPath: "int").map(\.id) == [2, 5, 4, 1, 3])
        #expect(items.sorted(byKeyPath: "int", ascending: false).map(\.id) == [1, 3, 4, 2, 5])
        #expect(items.sorted(byKeyPath: "flag").map(\.id) == [2, 3, 1, 4, 5])
        #expect(items.sorted(byKeyPath: "double").map(\.id) == [3, 1, 5, 2, 4])
    }

    @Test func sortByEveryKindOfProperty() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.sorted(byKeyPath: "name", ascending: false).map(\.id) == [5, 4, 3, 2, 1])
        #expect(items.sorted(byKeyPath: "date").map(\.id) == [2, 3, 1, 4, 5])
        #expect(items.sorted(byKeyPath: "decimal").map(\.id) == [3, 1, 5, 2, 4])
        #expect(items.sorted(byKeyPath: "float", ascending: false).map(\.id) == [4, 2, 1, 5, 3])
        #expect(items.sorted(byKeyPath: "int8").map(\.id) == [2, 5, 4, 1, 3])
        #expect(items.sorted(byKeyPath: "int64", ascending: false).map(\.id) == [1, 3, 4, 2, 5])
        #expect(items.sorted(byKeyPath: "optInt").map(\.id) == [2, 4, 1, 3, 5])
        #expect(items.sorted(byKeyPath: "optInt", ascending: false).map(\.id) == [5, 3, 1, 2, 4])
    }

    @Test func multiKeySort() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.sorted(by: [SortDescriptor(keyPath: "int"), SortDescriptor(keyPath: "name", ascending: false)]).map(\.id)
                == [5, 2, 4, 3, 1])
        #expect(items.sorted(by: [SortDescriptor(keyPath: "flag"), SortDescriptor(keyPath: "double", ascending: false)]).map(\.id)
                == [2, 3, 4, 1, 5])
        #expect(items.sorted(by: [SortDescriptor(keyPath: \ColItem.double), SortDescriptor(keyPath: \ColItem.date, ascending: false)])
                .map(\.id) == [3, 5, 1, 2, 4])
        #expect(items.sorted(by: \.double, ascending: false).map(\.id) == [4, 2, 1, 5, 3])
    }

    @Test func sortThroughALinkPath() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.sorted(byKeyPath: "box.rank").map(\.id) == [5, 1, 3, 2, 4])
        #expect(items.sorted(byKeyPath: "box.name", ascending: false).map(\.id) == [2, 4, 1, 3, 5])
        #expect(items.sorted(by: \.box?.rank, ascending: false).map(\.id) == [2, 4, 1, 3, 5])
        #expect(items.sorted(by: [SortDescriptor(keyPath: "box.rank", ascending: false), SortDescriptor(keyPath: "name", ascending: false)])
                .map(\.id) == [4, 2, 3, 1, 5])
    }

    @Test func aLaterSortIsPrimaryAndTheEarlierBreaksTies() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        // RealmSwift (realm-core's DescriptorOrdering) prepends a new sort to the previous one.
        #expect(items.sorted(byKeyPath: "name", ascending: false).sorted(byKeyPath: "int").map(\.id) == [5, 2, 4, 3, 1])
        #expect(items.sorted(byKeyPath: "double").sorted(byKeyPath: "flag").map(\.id) == [3, 2, 1, 5, 4])
    }

    // MARK: Distinct

    @Test func distinctKeepsTheFirstOfEachValue() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.distinct(by: ["int"]).map(\.id) == [1, 2, 4])
        #expect(items.distinct(by: ["flag"]).map(\.id) == [1, 2])
        #expect(items.distinct(by: ["int", "flag"]).map(\.id) == [1, 2, 3, 4, 5])
        #expect(items.distinct(by: ["double", "flag"]).map(\.id) == [1, 2, 3, 4])
        #expect(items.distinct(by: [\ColItem.flag, \ColItem.int]).count == 5)
        #expect(items.distinct(by: ["optInt"]).map(\.id) == [1, 2, 3, 5])
        #expect(items.distinct(by: ["box.name"]).map(\.id) == [1, 2, 5])
    }

    @Test func distinctAndSortApplyInTheOrderCalled() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.distinct(by: ["int"]).sorted(byKeyPath: "name", ascending: false).map(\.id) == [4, 2, 1])
        #expect(items.sorted(byKeyPath: "name", ascending: false).distinct(by: ["int"]).map(\.id) == [5, 4, 3])
        #expect(items.sorted(byKeyPath: "date").distinct(by: ["flag"]).map(\.id) == [2, 1])
        #expect(items.filter("int > 1").distinct(by: ["int"]).sorted(byKeyPath: "id", ascending: false).map(\.id) == [4, 1])
    }

    // MARK: Aggregates on every numeric type

    @Test func aggregatesReturnThePropertysType() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.sum(of: \.int8) == Int8(10))
        #expect(items.sum(of: \.int16) == Int16(10))
        #expect(items.sum(of: \.int32) == Int32(10))
        #expect(items.sum(of: \.int64) == Int64(10))
        #expect(items.sum(of: \.float) == Float(10))
        #expect(items.sum(of: \.double) == 10.0)
        #expect(items.sum(of: \.decimal) == Decimal128(value: 10))
        #expect(items.min(of: \.int8) == Int8(1))
        #expect(items.max(of: \.int16) == Int16(3))
        #expect(items.min(of: \.int32) == Int32(1))
        #expect(items.max(of: \.int64) == Int64(3))
        #expect(items.min(of: \.float) == Float(0.5))
        #expect(items.max(of: \.decimal) == Decimal128(value: 4))
        #expect(items.min(of: \.decimal) == Decimal128(value: 0.5))
        #expect(items.max(of: \.date) == colT0.addingTimeInterval(50))
    }

    @Test func averagesReturnThePropertysType() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.average(of: \.int) == 2)
        #expect(items.average(of: \.int8) == Int8(2))
        #expect(items.average(of: \.int16) == Int16(2))
        #expect(items.average(of: \.int32) == Int32(2))
        #expect(items.average(of: \.int64) == Int64(2))
        #expect(items.average(of: \.float) == Float(2))
        #expect(items.average(of: \.double) == 2.0)
        #expect(items.average(of: \.decimal) == Decimal128(value: 2))
    }

    @Test func aggregatesByNameOnEveryNumericType() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.sum(ofProperty: "int8") as Int8 == 10)
        #expect(items.sum(ofProperty: "int16") as Int16 == 10)
        #expect(items.sum(ofProperty: "int32") as Int32 == 10)
        #expect(items.sum(ofProperty: "int64") as Int64 == 10)
        #expect(items.sum(ofProperty: "float") as Float == 10)
        #expect(items.sum(ofProperty: "decimal") as Decimal128 == Decimal128(value: 10))
        #expect(items.max(ofProperty: "int8") as Int8? == 3)
        #expect(items.min(ofProperty: "float") as Float? == 0.5)
        #expect(items.average(ofProperty: "int8") as Double? == 2)
        #expect(items.average(ofProperty: "float") as Double? == 2)
        #expect(items.average(ofProperty: "decimal") as Decimal128? == Decimal128(value: 2))
        #expect(items.average(ofProperty: "int") as Int? == 2)
        #expect(items.filter("int == 3").average(ofProperty: "double") as Double? == 1)
    }

    @Test func aggregatesOfEmptyResults() throws {
        let (_, realm) = try boxes()
        let none = realm.objects(ColItem.self).filter("int > 100")
        #expect(none.sum(of: \.int) == 0)
        #expect(none.sum(of: \.int8) == Int8(0))
        #expect(none.sum(of: \.int64) == Int64(0))
        #expect(none.sum(of: \.float) == Float(0))
        #expect(none.sum(of: \.double) == 0)
        #expect(none.sum(of: \.decimal) == Decimal128(value: 0))
        #expect(none.min(of: \.int) == nil)
        #expect(none.max(of: \.int16) == nil)
        #expect(none.min(of: \.float) == nil)
        #expect(none.max(of: \.decimal) == nil)
        #expect(none.min(of: \.date) == nil)
        #expect(none.average(of: \.double) == nil)
        #expect(none.average(of: \.int32) == nil)
        #expect(none.average(of: \.decimal) == nil)
        #expect(none.average(ofProperty: "int") as Double? == nil)
        #expect(none.value(forKeyPath: "@sum.int") as? Int == 0)
        #expect(none.value(forKeyPath: "@min.int") == nil)
        #expect(none.value(forKeyPath: "@avg.double") == nil)
        #expect(none.value(forKeyPath: "@count") as? Int == 0)
        let emptyDir = TempDir()
        let empty = try Realm(configuration: emptyDir.config(colModels)).objects(ColItem.self)
        #expect(empty.sum(ofProperty: "double") as Double == 0)
        #expect(empty.max(ofProperty: "double") as Double? == nil)
    }

    @Test func aggregatesSkipNil() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.sum(ofProperty: "optInt") as Int == 90)
        #expect(items.min(ofProperty: "optInt") as Int? == 10)
        #expect(items.max(ofProperty: "optInt") as Int? == 50)
        #expect(items.average(ofProperty: "optInt") as Double? == 30)
        #expect(items.filter("optInt == nil").sum(ofProperty: "optInt") as Int == 0)
        #expect(items.filter("optInt == nil").min(ofProperty: "optInt") as Int? == nil)
        #expect(items.filter("optInt == nil").average(ofProperty: "optInt") as Double? == nil)
    }

    // MARK: Liveness

    @Test func aHeldResultsFollowsWritesInTheSameRealm() throws {
        let (_, realm) = try boxes()
        let threes = realm.objects(ColItem.self).filter("int == 3").sorted(byKeyPath: "id")
        #expect(threes.map(\.id) == [1, 3])
        try realm.write { realm.create(ColItem.self, value: ["id": 6, "name": "fig", "int": 3]) }
        #expect(threes.map(\.id) == [1, 3, 6])
        try realm.write { realm.object(ofType: ColItem.self, forPrimaryKey: 1)!.int = 0 }
        #expect(threes.map(\.id) == [3, 6])
        try realm.write { realm.delete(realm.object(ofType: ColItem.self, forPrimaryKey: 3)!) }
        #expect(threes.map(\.id) == [6])
        #expect(threes.count == 1)
        #expect(threes.sum(ofProperty: "int") as Int == 3)
    }

    @Test func aHeldResultsSeesChangesInsideTheWriteTransaction() throws {
        let (_, realm) = try boxes()
        let flagged = realm.objects(ColItem.self).filter("flag == true")
        #expect(flagged.count == 3)
        realm.beginWrite()
        realm.object(ofType: ColItem.self, forPrimaryKey: 2)!.flag = true
        #expect(flagged.count == 4)
        realm.cancelWrite()
        #expect(flagged.count == 3)
    }

    @Test func aHeldResultsSeesAnotherThreadsCommitAfterRefresh() throws {
        let dir = TempDir()
        let config = dir.config(colModels)
        let realm = try Realm(configuration: config)
        try colSeedBoxes(realm)
        let threes = realm.objects(ColItem.self).filter("int == 3").sorted(byKeyPath: "id")
        #expect(threes.map(\.id) == [1, 3])
        onNewThread {
            let other = try! Realm(configuration: config)
            try! other.write {
                other.create(ColItem.self, value: ["id": 6, "name": "fig", "int": 3])
                other.delete(other.object(ofType: ColItem.self, forPrimaryKey: 1)!)
            }
        }
        #expect(threes.map(\.id) == [1, 3])
        #expect(realm.refresh())
        #expect(threes.map(\.id) == [3, 6])
        #expect(threes.count == 2)
        #expect(realm.objects(ColItem.self).count == 5)
    }

    @Test func chainingFilterFilterSorted() throws {
        let (_, realm) = try boxes()
        let chained = realm.objects(ColItem.self).filter("int < 3").filter("flag == %@", true).sorted(byKeyPath: "name", ascending: false)
        #expect(chained.map(\.id) == [5, 4])
        let more = chained.filter("double > 2")
        #expect(more.map(\.id) == [4])
        #expect(chained.sorted(byKeyPath: "date").filter("name != 'zzz'").map(\.id) == [4, 5])
        try realm.write { realm.create(ColItem.self, value: ["id": 6, "name": "fig", "int": 1, "double": 9.0, "flag": true]) }
        #expect(chained.map(\.id) == [6, 5, 4])
        #expect(more.map(\.id) == [6, 4])
    }

    // MARK: Enumeration

    @Test func forInEnumeratesTheStartStateWhileTheLoopDeletes() throws {
        let (_, realm) = try boxes()
        let flagged = realm.objects(ColItem.self).filter("flag == true").sorted(byKeyPath: "id")
        var seen: [String] = []
        try realm.write {
            for item in flagged {
                seen.append(item.name)
                realm.delete(item)
            }
        }
        #expect(seen == ["apple", "date", "elder"])
        #expect(flagged.count == 0)
        #expect(realm.objects(ColItem.self).map(\.id) == [2, 3])
    }

    @Test func forInOverManyObjectsReadsEveryObjectAcrossLeaves() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        try realm.write {
            for i in 0..<3000 { realm.create(ColItem.self, value: ["id": i, "int": i * 2, "name": "n\(i)"]) }
        }
        let gone = (0..<3000).filter { $0 % 5 == 1 }
        try realm.write { realm.delete(realm.objects(ColItem.self).filter("id IN %@ OR id BETWEEN {700, 1300}", gone)) }
        let want = (0..<3000).filter { $0 % 5 != 1 && !(700...1300).contains($0) }
        var ids: [Int] = []
        for item in realm.objects(ColItem.self) {
            #expect(item.int == item.id * 2)
            #expect(item.name == "n\(item.id)")
            ids.append(item.id)
        }
        #expect(ids == want)
    }

    @Test func forInSkipsObjectsDeletedLaterInTheLoop() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(colModels))
        try realm.write {
            for i in 0..<1000 { realm.create(ColItem.self, value: ["id": i, "int": i]) }
        }
        var seen: [Int] = []
        try realm.write {
            for item in realm.objects(ColItem.self) {
                seen.append(item.int)
                // Deletes an object the loop has not reached yet: it must not be produced.
                if item.id % 10 == 0, let ahead = realm.object(ofType: ColItem.self, forPrimaryKey: item.id + 5) {
                    realm.delete(ahead)
                }
            }
        }
        #expect(seen == (0..<1000).filter { $0 % 10 != 5 })
    }

    @Test func forInSkipsObjectsAnotherThreadDeletedWhenTheLoopRefreshes() throws {
        let dir = TempDir()
        let config = dir.config(colModels)
        let realm = try Realm(configuration: config)
        try realm.write {
            for i in 0..<600 { realm.create(ColItem.self, value: ["id": i, "int": i]) }
        }
        var seen: [Int] = []
        for item in realm.objects(ColItem.self) {
            seen.append(item.int)
            if item.id == 100 {
                onNewThread {
                    let other = try! Realm(configuration: config)
                    try! other.write { other.delete(other.objects(ColItem.self).filter("id >= 300 AND id < 400")) }
                }
                #expect(realm.refresh())
            }
        }
        #expect(seen == (0..<600).filter { !(300..<400).contains($0) })
    }

    @Test func forInEnumeratesTheStartStateWhileTheLoopChangesMatches() throws {
        let (_, realm) = try boxes()
        let flagged = realm.objects(ColItem.self).filter("flag == true")
        var seen: [Int] = []
        try realm.write {
            for item in flagged {
                seen.append(item.id)
                item.flag = false
            }
        }
        #expect(seen.sorted() == [1, 4, 5])
        #expect(flagged.count == 0)
    }

    @Test func forInEnumeratesTheStartStateWhileTheLoopAddsMatches() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self).sorted(byKeyPath: "id")
        var seen = 0
        try realm.write {
            for item in items {
                seen += 1
                realm.create(ColItem.self, value: ["id": item.id + 100, "name": "copy"])
            }
        }
        #expect(seen == 5)
        #expect(items.count == 10)
    }

    // MARK: Basics

    @Test func positionsAndIndexes() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self).sorted(byKeyPath: "double")
        #expect(items.first?.id == 3)
        #expect(items.last?.id == 4)
        #expect(items[1].id == 1)
        #expect(items.objects(at: [0, 2, 4]).map(\.id) == [3, 5, 4])
        let elder = try #require(realm.object(ofType: ColItem.self, forPrimaryKey: 5))
        #expect(items.index(of: elder) == 2)
        #expect(items.filter("int == 3").index(of: elder) == nil)
        #expect(items.index(matching: "name BEGINSWITH %@", "b") == 3)
        #expect(items.index(matching: NSPredicate(format: "flag == true")) == 1)
        #expect(items.index(matching: "int > 99") == nil)
        #expect(Array(items[1..<3]).map(\.id) == [1, 5])
    }

    @Test func resultsOfAClassAndTheirRealm() throws {
        let (_, realm) = try boxes()
        let items = realm.objects(ColItem.self)
        #expect(items.count == 5)
        #expect(items.realm == realm)
        #expect(!items.isInvalidated)
        #expect(realm.objects(ColBox.self).filter("rank > 1").count == 2)
        #expect(items.filter("int == 3").realm == realm)
    }

    // MARK: Errors

    @Test func theThrowingFilterNamesAnUnknownPropertyAndItsPosition() throws {
        let (_, realm) = try boxes()
        do {
            _ = try realm.objects(ColItem.self).filter(throwing: "int == 3 AND nme == 'x'")
            Issue.record("expected an error")
        } catch let error as Realm.Error {
            #expect(error.code == .invalidInput)
            #expect(error.message.contains("'nme'"), "\(error.message)")
            #expect(error.message.contains("1:14"), "\(error.message)")
        }
    }

    @Test func theThrowingFilterNamesABadTokenAndItsPosition() throws {
        let (_, realm) = try boxes()
        do {
            _ = try realm.objects(ColItem.self).filter(throwing: "int > > 3")
            Issue.record("expected an error")
        } catch let error as Realm.Error {
            #expect(error.code == .invalidInput)
            #expect(error.message.contains("'>'"), "\(error.message)")
            #expect(error.message.contains("1:7"), "\(error.message)")
        }
    }

    @Test func theThrowingFilterCountsLinesAndColumns() throws {
        let (_, realm) = try boxes()
        do {
            _ = try realm.objects(ColItem.self).filter(throwing: "int == 3\nAND flag == 'x' #")
            Issue.record("expected an error")
        } catch let error as Realm.Error {
            #expect(error.message.contains("2:"), "\(error.message)")
        }
    }

    @Test func theThrowingFilterPositionIsInTheCallersText() throws {
        let (_, realm) = try boxes()
        do {
            _ = try realm.objects(ColItem.self).filter("int > 0").filter(throwing: "nme == 'x'")
            Issue.record("expected an error")
        } catch let error as Realm.Error {
            #expect(error.message.contains("'nme'"), "\(error.message)")
            #expect(error.message.contains("1:1"), "\(error.message)")
        }
        do {
            _ = try realm.objects(ColItem.self).filter(throwing: "agee > 3")
            Issue.record("expected an error")
        } catch let error as Realm.Error {
            #expect(error.message.contains("'agee'"), "\(error.message)")
            #expect(error.message.contains("at 1:1"), "\(error.message)")
        }
    }

    @Test func theThrowingFilterReportsAMissingArgument() throws {
        let (_, realm) = try boxes()
        #expect(throws: Realm.Error.self) { try realm.objects(ColItem.self).filter(throwing: "int == %@") }
        #expect(throws: Realm.Error.self) { try realm.objects(ColItem.self).filter(throwing: "name == %@", 3) }
        #expect(throws: Realm.Error.self) { try realm.objects(ColItem.self).filter(throwing: "") }
        #expect(throws: Never.self) { try realm.objects(ColItem.self).filter(throwing: "name == %@", "x") }
    }

    @Test func theTrappingFilterStopsWithTheParsersMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            _ = realm.objects(ColItem.self).filter("int > > 3")
        }
        expectMessage(result, "'>'")
    }

    @Test func theTrappingFilterStopsOnAnUnknownProperty() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            _ = realm.objects(ColItem.self).filter(NSPredicate(format: "nme == 'x'"))
        }
        expectMessage(result, "nme")
    }

    @Test func comparingATypeMismatchTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            _ = realm.objects(ColItem.self).filter("int == 'three'")
        }
    }

    @Test func indexMatchingABadPredicateTraps() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(colModels))
            _ = realm.objects(ColItem.self).index(matching: "int >")
        }
    }
}

/// The ids, ascending, of the AllTypes rows `format` matches.
func atIDs<C: _RealmQueryable>(_ c: C, _ format: String, _ args: Any...,
                               sourceLocation: SourceLocation = #_sourceLocation) -> [Int]? where C._QueryElement == AllTypes {
    colQuery(c, format, args, { $0.id }, sourceLocation: sourceLocation)?.sorted()
}

/// A model with ObjectId and UUID properties (one of each indexed) for ordering queries.
final class OrderedIds: Object {
    @Persisted var n = 0
    @Persisted(indexed: true) var oid = ObjectId.generate()
    @Persisted var uuid = UUID()
}

/// Ordering comparisons on ObjectId and UUID: the same order as ObjectId's `<` and as the
/// bytes of a UUID, with and without an index.
@Suite struct IdOrderingQueryTests {
    @Test func objectIdAndUUIDRangesFollowTheirByteOrder() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([OrderedIds.self]))
        var oids: [ObjectId] = []
        var uuids: [UUID] = []
        try realm.write {
            for i in 0..<200 {
                var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
                if i % 3 == 0 { bytes[0] = 0x80 }
                let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                                       bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
                let hex = (0..<12).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
                let oid = try ObjectId(string: hex)
                oids.append(oid)
                uuids.append(uuid)
                realm.create(OrderedIds.self, value: ["n": i, "oid": oid, "uuid": uuid])
            }
        }
        func uuidBytes(_ u: UUID) -> [UInt8] { withUnsafeBytes(of: u.uuid) { Array($0) } }
        let all = realm.objects(OrderedIds.self)
        for pivot in [oids[0], oids[7], oids[100]] {
            let got = Set(all.filter("oid > %@", pivot).map(\.n))
            let want = Set((0..<200).filter { pivot < oids[$0] })
            #expect(got == want)
            let le = Set(all.filter("oid <= %@", pivot).map(\.n))
            #expect(le == Set(0..<200).subtracting(want))
        }
        for pivot in [uuids[0], uuids[5], uuids[150]] {
            let p = uuidBytes(pivot)
            let got = Set(all.filter("uuid < %@", pivot).map(\.n))
            let want = Set((0..<200).filter { uuidBytes(uuids[$0]).lexicographicallyPrecedes(p) })
            #expect(got == want)
        }
        let sorted = all.sorted(byKeyPath: "oid").map(\.oid)
        #expect(sorted == oids.sorted())
    }
}
