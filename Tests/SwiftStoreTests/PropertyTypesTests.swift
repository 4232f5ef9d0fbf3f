// Every property type of `AllTypes` through add, close and reopen: extreme and special
// values, optionals nil and set (including the "zero but not nil" values), primitive
// collections, legacy RealmProperty boxes, and values changed in a later write. Each check runs
// on the unmanaged object, on the same object once managed, and on a fresh read after the
// Realm was closed and opened again.
import Foundation
import Testing
@testable import SwiftStore

/// A model whose properties have no initial values (the types' defaults apply).
final class ObjNoDefaults: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var int: Int
    @Persisted var string: String
    @Persisted var optString: String?
    @Persisted var level: Level
    @Persisted var mood: Mood
    @Persisted var any: AnyRealmValue
    @Persisted var list: List<String>
}

private let zeroUUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

/// Makes `count` AllTypes objects (ids 0..<count) with `set`, then runs `check` on each:
/// unmanaged, managed (the same instances after `add`), and read back by primary key after the
/// Realm was closed (every accessor released) and reopened. `stage` names the step.
private func roundTrip(_ dir: TempDir, count: Int = 1,
                       sourceLocation: SourceLocation = #_sourceLocation,
                       set: (AllTypes, Int) -> Void,
                       check: (AllTypes, Int, String) -> Void) throws {
    let config = dir.config(objectModels)
    do {
        let objects = (0..<count).map { i -> AllTypes in
            let o = AllTypes()
            o.id = i
            set(o, i)
            return o
        }
        for (i, o) in objects.enumerated() { check(o, i, "unmanaged") }
        let realm = try Realm(configuration: config)
        try realm.write { realm.add(objects) }
        for (i, o) in objects.enumerated() {
            #expect(o.realm != nil, sourceLocation: sourceLocation)
            check(o, i, "managed")
        }
    }
    let realm = try Realm(configuration: config)
    #expect(realm.objects(AllTypes.self).count == count, sourceLocation: sourceLocation)
    for i in 0..<count {
        let o = try #require(realm.object(ofType: AllTypes.self, forPrimaryKey: i), sourceLocation: sourceLocation)
        check(o, i, "reopened")
    }
}

@Suite struct PropertyTypesTests {
    // MARK: Integers and Bool

    @Test func integerExtremesRoundTrip() throws {
        let ints: [Int] = [.max, .min, 0, -1]
        let int8s: [Int8] = [.min, .max, 0, -1]
        let int16s: [Int16] = [.max, .min, 1, -1]
        let int32s: [Int32] = [.min, .max, 1, -1]
        let int64s: [Int64] = [.max, .min, 1, -1]
        try roundTrip(TempDir(), count: 4, set: { o, i in
            o.int = ints[i]; o.int8 = int8s[i]; o.int16 = int16s[i]; o.int32 = int32s[i]; o.int64 = int64s[i]
        }, check: { o, i, stage in
            #expect(o.int == ints[i], "\(stage)")
            #expect(o.int8 == int8s[i], "\(stage)")
            #expect(o.int16 == int16s[i], "\(stage)")
            #expect(o.int32 == int32s[i], "\(stage)")
            #expect(o.int64 == int64s[i], "\(stage)")
        })
    }

    @Test func boolRoundTrips() throws {
        try roundTrip(TempDir(), count: 2, set: { o, i in
            o.bool = i == 0
            o.optBool = i == 0 ? false : nil
        }, check: { o, i, stage in
            #expect(o.bool == (i == 0), "\(stage)")
            #expect(o.optBool == (i == 0 ? false : nil), "\(stage)")
        })
    }

    // MARK: Floating point

    @Test func floatSpecialValuesRoundTrip() throws {
        let values: [Float] = [-0.0, .infinity, -.infinity, .greatestFiniteMagnitude,
                               .leastNonzeroMagnitude, -.leastNormalMagnitude, 0.1, 3.4028e38]
        try roundTrip(TempDir(), count: values.count, set: { o, i in
            o.float = values[i]
        }, check: { o, i, stage in
            #expect(o.float == values[i], "\(stage) #\(i)")
            #expect(o.float.sign == values[i].sign, "\(stage) #\(i)")
        })
    }

    @Test func negativeZeroKeepsItsSign() throws {
        try roundTrip(TempDir(), set: { o, _ in
            o.float = -0.0
            o.double = -0.0
            o.optDouble = -0.0
        }, check: { o, _, stage in
            #expect(o.float == 0 && o.float.sign == .minus, "\(stage)")
            #expect(o.double == 0 && o.double.sign == .minus, "\(stage)")
            #expect(o.optDouble == 0 && o.optDouble?.sign == .minus, "\(stage)")
        })
    }

    @Test func nanRoundTripsAndIsNotNil() throws {
        try roundTrip(TempDir(), set: { o, _ in
            o.float = .nan
            o.double = .nan
            o.optFloat = .nan
            o.optDouble = .nan
        }, check: { o, _, stage in
            #expect(o.float.isNaN, "\(stage)")
            #expect(o.double.isNaN, "\(stage)")
            #expect(o.optFloat != nil && o.optFloat!.isNaN, "\(stage)")
            #expect(o.optDouble != nil && o.optDouble!.isNaN, "\(stage)")
        })
    }

    @Test func doubleSpecialValuesRoundTrip() throws {
        let values: [Double] = [.infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
                                -.leastNormalMagnitude, .pi, 0.1, -1e308, 9_007_199_254_740_994]
        try roundTrip(TempDir(), count: values.count, set: { o, i in
            o.double = values[i]
            o.optDouble = -values[i]
        }, check: { o, i, stage in
            #expect(o.double == values[i], "\(stage) #\(i)")
            #expect(o.double.bitPattern == values[i].bitPattern, "\(stage) #\(i)")
            #expect(o.optDouble == -values[i], "\(stage) #\(i)")
        })
    }

    // MARK: Strings and data

    @Test func stringsRoundTrip() throws {
        let large = String(repeating: "añ🐶語", count: 60_000) // 600,000 UTF-8 bytes
        let values = ["", "plain", "héllo wörld 🐶 日本語 ‮עברית", "a\u{0}b\u{0}", large, " ", "\n\t\r",
                      "e\u{301}" /* decomposed é stays decomposed */]
        try roundTrip(TempDir(), count: values.count, set: { o, i in
            o.string = values[i]
            o.optString = values[i]
        }, check: { o, i, stage in
            #expect(o.string == values[i], "\(stage) #\(i)")
            #expect(Array(o.string.utf8) == Array(values[i].utf8), "\(stage) #\(i)")
            #expect(o.optString == values[i], "\(stage) #\(i)")
        })
    }

    @Test func largeStringKeepsEveryByte() throws {
        let large = String(repeating: "añ🐶語", count: 60_000)
        try roundTrip(TempDir(), set: { o, _ in o.string = large }, check: { o, _, stage in
            #expect(o.string.utf8.count == 600_000, "\(stage)")
            #expect(o.string.count == 240_000, "\(stage)")
            #expect(o.string.hasSuffix("añ🐶語"), "\(stage)")
        })
    }

    @Test func dataRoundTrips() throws {
        let bytes = Data((0...255).map { UInt8($0) })
        let large = Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let values = [Data(), bytes, Data([0]), Data([0, 0, 0]), large]
        try roundTrip(TempDir(), count: values.count, set: { o, i in
            o.data = values[i]
            o.optData = values[i]
        }, check: { o, i, stage in
            #expect(o.data == values[i], "\(stage) #\(i)")
            #expect(o.optData == values[i], "\(stage) #\(i)")
        })
    }

    // MARK: Dates

    @Test func datesRoundTripExactly() throws {
        let values = [
            Date(timeIntervalSince1970: 1_600_000_000.5),
            Date(timeIntervalSince1970: -1_234_567_890.25), // 1930
            Date(timeIntervalSince1970: -0.75),             // just before 1970
            Date(timeIntervalSince1970: 0),
            Date(timeIntervalSinceReferenceDate: 0.125),
            Date.distantPast,
            Date.distantFuture,
        ]
        try roundTrip(TempDir(), count: values.count, set: { o, i in
            o.date = values[i]
            o.optDate = values[i]
        }, check: { o, i, stage in
            #expect(o.date == values[i], "\(stage) #\(i): \(o.date.timeIntervalSince1970)")
            #expect(o.optDate == values[i], "\(stage) #\(i)")
        })
    }

    @Test func datesKeepMicrosecondPrecision() throws {
        let values = [
            Date(timeIntervalSince1970: 1_700_000_000.123456),
            Date(timeIntervalSince1970: -86_400.000001),
            Date(timeIntervalSinceReferenceDate: 765_432_109.987654),
        ]
        try roundTrip(TempDir(), count: values.count, set: { o, i in o.date = values[i] }, check: { o, i, stage in
            #expect(abs(o.date.timeIntervalSince(values[i])) < 1e-6, "\(stage) #\(i)")
        })
    }

    // MARK: Decimal128, ObjectId, UUID

    @Test func decimal128RoundTrips() throws {
        let texts = ["123.456", "-0.000001", "12.50", "0", "-0", "1E+300", "9999999999999999999999999999999999",
                     "-1.000000000000000000000000000000000E-6100"]
        let values = try texts.map { try Decimal128(string: $0) } + [Decimal128.max, Decimal128.min]
        try roundTrip(TempDir(), count: values.count, set: { o, i in
            o.decimal = values[i]
            o.optDecimal = values[i]
        }, check: { o, i, stage in
            #expect(o.decimal == values[i], "\(stage) #\(i)")
            #expect(o.decimal.stringValue == values[i].stringValue, "\(stage) #\(i)")
            #expect(o.optDecimal?.stringValue == values[i].stringValue, "\(stage) #\(i)")
        })
    }

    @Test func decimal128SpecialValuesRoundTrip() throws {
        let values = try ["NaN", "Inf", "-Inf"].map { try Decimal128(string: $0) }
        try roundTrip(TempDir(), count: 3, set: { o, i in o.decimal = values[i] }, check: { o, i, stage in
            #expect(o.decimal.stringValue == values[i].stringValue, "\(stage) #\(i)")
            #expect(o.decimal.isNaN == (i == 0), "\(stage) #\(i)")
        })
    }

    @Test func objectIdAndUUIDRoundTrip() throws {
        let oids = [ObjectId("5f0c1b2a9d3e4f5a6b7c8d9e"), ObjectId.generate(), ObjectId("ffffffffffffffffffffffff")]
        let uuids = [UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, UUID(),
                     UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!]
        try roundTrip(TempDir(), count: 3, set: { o, i in
            o.objectId = oids[i]
            o.uuid = uuids[i]
            o.optObjectId = oids[i]
            o.optUUID = uuids[i]
        }, check: { o, i, stage in
            #expect(o.objectId == oids[i], "\(stage) #\(i)")
            #expect(o.objectId.stringValue == oids[i].stringValue, "\(stage) #\(i)")
            #expect(o.uuid == uuids[i], "\(stage) #\(i)")
            #expect(o.optObjectId == oids[i], "\(stage) #\(i)")
            #expect(o.optUUID == uuids[i], "\(stage) #\(i)")
        })
    }

    // MARK: Enums and custom types

    @Test func enumsRoundTrip() throws {
        try roundTrip(TempDir(), count: 2, set: { o, i in
            o.mood = i == 0 ? .grumpy : .happy
            o.level = i == 0 ? .high : .mid
            o.optMood = i == 0 ? .calm : nil
        }, check: { o, i, stage in
            #expect(o.mood == (i == 0 ? .grumpy : .happy), "\(stage)")
            #expect(o.level == (i == 0 ? .high : .mid), "\(stage)")
            #expect(o.optMood == (i == 0 ? .calm : nil), "\(stage)")
        })
    }

    @Test func enumsAndCustomTypesAreStoredAsTheirRawValues() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            let o = AllTypes()
            o.mood = .grumpy
            o.level = .high
            o.temperature = Celsius(degrees: -273.15)
            realm.add(o)
        }
        let dyn = try #require(realm.dynamicObjects("AllTypes").first)
        #expect(dyn["mood"] as? String == "grumpy")
        #expect(dyn["level"] as? Int == 9)
        #expect(dyn["temperature"] as? Double == -273.15)
        #expect(realm.schema["AllTypes"]?["mood"]?.type == .string)
        #expect(realm.schema["AllTypes"]?["level"]?.type == .int)
        #expect(realm.schema["AllTypes"]?["temperature"]?.type == .double)
    }

    @Test func customPersistableRoundTrips() throws {
        try roundTrip(TempDir(), count: 2, set: { o, i in
            o.temperature = Celsius(degrees: i == 0 ? -273.15 : 1e10)
            o.optTemperature = i == 0 ? Celsius(degrees: 36.6) : nil
        }, check: { o, i, stage in
            #expect(o.temperature == Celsius(degrees: i == 0 ? -273.15 : 1e10), "\(stage)")
            #expect(o.optTemperature == (i == 0 ? Celsius(degrees: 36.6) : nil), "\(stage)")
        })
    }

    // MARK: AnyRealmValue

    @Test func anyRealmValueScalarCasesRoundTrip() throws {
        let date = Date(timeIntervalSince1970: -1_000.5)
        let oid = ObjectId("5f0c1b2a9d3e4f5a6b7c8d9e")
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let dec = try Decimal128(string: "-12.50")
        let values: [AnyRealmValue] = [
            .none, .int(Int.min), .int(Int.max), .bool(false), .bool(true), .float(1.5), .double(-2.25),
            .string(""), .string("ü🐶"), .data(Data()), .data(Data([0, 255])), .date(date), .objectId(oid),
            .decimal128(dec), .uuid(uuid),
        ]
        try roundTrip(TempDir(), count: values.count, set: { o, i in o.any = values[i] }, check: { o, i, stage in
            #expect(o.any == values[i], "\(stage) #\(i): \(o.any)")
        })
    }

    @Test func anyRealmValueKeepsItsCase() throws {
        // 1 as int, float, double and decimal are four different stored values
        let values: [AnyRealmValue] = [.int(1), .float(1), .double(1), .decimal128(Decimal128(value: 1))]
        try roundTrip(TempDir(), count: 4, set: { o, i in o.any = values[i] }, check: { o, i, stage in
            switch i {
            case 0: #expect(o.any.intValue == 1 && o.any.doubleValue == nil, "\(stage)")
            case 1: #expect(o.any.floatValue == 1 && o.any.doubleValue == nil, "\(stage)")
            case 2: #expect(o.any.doubleValue == 1 && o.any.floatValue == nil, "\(stage)")
            default: #expect(o.any.decimal128Value == Decimal128(value: 1) && o.any.intValue == nil, "\(stage)")
            }
        })
    }

    @Test func anyRealmValueAccessorsMatchTheCase() {
        let s = AnyRealmValue.string("x")
        #expect(s.stringValue == "x")
        #expect(s.intValue == nil && s.boolValue == nil && s.dataValue == nil && s.dateValue == nil)
        #expect(s.objectIdValue == nil && s.decimal128Value == nil && s.uuidValue == nil)
        #expect(s.listValue == nil && s.dictionaryValue == nil && s.dynamicObject == nil)
        #expect(AnyRealmValue.none.stringValue == nil)
        #expect(AnyRealmValue.bool(false).boolValue == false)
    }

    /// RealmSwift's AnyRealmValue equality is per case (synthesized): a value of one case never
    /// equals a value of another, even when both hold the same number.
    @Test func anyRealmValueEqualityIsPerCase() {
        #expect(AnyRealmValue.int(2) == .int(2))
        #expect(AnyRealmValue.int(1) != .double(1))
        #expect(AnyRealmValue.float(1.5) != .double(1.5))
        #expect(AnyRealmValue.int(3) != .decimal128(Decimal128(value: 3)))
        #expect(AnyRealmValue.none != .int(0))
        #expect(AnyRealmValue.string("1") != .int(1))
    }

    /// `.object` values compare with Object's `==` (RealmSwift's synthesized equality): for a
    /// class without a primary key, two accessors of one row are different values. Whatever
    /// the answer, equal values must hash alike.
    @Test func anyRealmValueObjectEqualityFollowsObjectEquality() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write { realm.add(Dog(value: ["name": "Rex"])) }
        let a = AnyRealmValue.object(realm.objects(Dog.self)[0])
        let b = AnyRealmValue.object(realm.objects(Dog.self)[0])
        #expect(a == a)
        #expect(a != b)
        if a == b { #expect(a.hashValue == b.hashValue, "equal values must have equal hashes") }
    }

    @Test func anyRealmValueNaNAndSpecialDoublesRoundTrip() throws {
        let values: [AnyRealmValue] = [.double(.nan), .float(.nan), .double(-0.0), .double(.infinity)]
        try roundTrip(TempDir(), count: 4, set: { o, i in o.any = values[i] }, check: { o, i, stage in
            switch i {
            case 0: #expect(o.any.doubleValue?.isNaN == true, "\(stage)")
            case 1: #expect(o.any.floatValue?.isNaN == true, "\(stage)")
            case 2: #expect(o.any.doubleValue == 0 && o.any.doubleValue?.sign == .minus, "\(stage)")
            default: #expect(o.any.doubleValue == .infinity, "\(stage)")
            }
        })
    }

    @Test func anyRealmValueObjectLinkRoundTrips() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        do {
            let realm = try Realm(configuration: config)
            let o = AllTypes()
            let rex = Dog(value: ["name": "Rex", "age": 3])
            o.any = .object(rex)
            #expect(o.any.object(Dog.self) === rex)
            try realm.write { realm.add(o) }
            #expect(rex.realm != nil, "linking from an AnyRealmValue adds the object")
            #expect(realm.objects(Dog.self).count == 1)
            #expect(o.any.object(Dog.self)?.name == "Rex")
            #expect(o.any.object(Person.self) == nil)
            #expect(o.any.object(Dog.self)?.isSameObject(as: rex) == true)
        }
        let realm = try Realm(configuration: config)
        let o = try #require(realm.object(ofType: AllTypes.self, forPrimaryKey: 0))
        let dog = try #require(o.any.object(Dog.self))
        #expect(dog.name == "Rex")
        #expect(dog.age == 3)
        #expect(o.any.intValue == nil)
    }

    @Test func anyRealmValueObjectToObjectWithPrimaryKey() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        let ann = Person(name: "Ann", age: 30)
        let o = AllTypes()
        o.any = .object(ann)
        try realm.write { realm.add(o) }
        let read = try #require(realm.objects(AllTypes.self).first)
        // Person has a primary key, so two accessors of the row are ==, and so are the values
        #expect(read.any == .object(ann))
        #expect(read.any.object(Person.self)?.age == 30)
    }

    /// RealmSwift: "Returns a DynamicObject if the stored value is an Object, otherwise nil"
    /// (it reinterprets the object), so a typed object gives a DynamicObject view too.
    @Test func anyRealmValueDynamicObjectOfATypedObject() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        let o = AllTypes()
        o.any = .object(Dog(value: ["name": "Rex"]))
        try realm.write { realm.add(o) }
        let read = try #require(realm.objects(AllTypes.self).first)
        let dyn = read.any.dynamicObject
        #expect(dyn != nil)
        #expect(dyn?["name"] as? String == "Rex")
    }

    // MARK: Optionals

    @Test func optionalsDefaultToNilAndRoundTripNil() throws {
        try roundTrip(TempDir(), set: { _, _ in }, check: { o, _, stage in
            #expect(o.optInt == nil && o.optInt8 == nil && o.optInt16 == nil, "\(stage)")
            #expect(o.optInt32 == nil && o.optInt64 == nil && o.optBool == nil, "\(stage)")
            #expect(o.optFloat == nil && o.optDouble == nil && o.optString == nil, "\(stage)")
            #expect(o.optData == nil && o.optDate == nil && o.optDecimal == nil, "\(stage)")
            #expect(o.optObjectId == nil && o.optUUID == nil && o.optMood == nil, "\(stage)")
            #expect(o.optTemperature == nil, "\(stage)")
            #expect(o.legacyAge.value == nil && o.legacyName.value == nil, "\(stage)")
        })
    }

    /// Zero, false, empty string and empty data are values, distinct from nil.
    @Test func optionalsHoldingZeroValuesAreNotNil() throws {
        try roundTrip(TempDir(), set: { o, _ in
            o.optInt = 0; o.optInt8 = 0; o.optInt16 = 0; o.optInt32 = 0; o.optInt64 = 0
            o.optBool = false; o.optFloat = 0; o.optDouble = 0; o.optString = ""; o.optData = Data()
            o.optDate = Date(timeIntervalSince1970: 0); o.optDecimal = Decimal128(value: 0)
            o.optObjectId = ObjectId(); o.optUUID = zeroUUID; o.optMood = .calm
            o.optTemperature = Celsius(degrees: 0)
            o.legacyAge.value = 0; o.legacyName.value = ""
        }, check: { o, _, stage in
            #expect(o.optInt == 0 && o.optInt8 == 0 && o.optInt16 == 0, "\(stage)")
            #expect(o.optInt32 == 0 && o.optInt64 == 0, "\(stage)")
            #expect(o.optBool == false, "\(stage)")
            #expect(o.optFloat == 0 && o.optDouble == 0, "\(stage)")
            #expect(o.optString == "", "\(stage)")
            #expect(o.optData == Data(), "\(stage)")
            #expect(o.optDate == Date(timeIntervalSince1970: 0), "\(stage)")
            #expect(o.optDecimal == Decimal128(value: 0), "\(stage)")
            #expect(o.optObjectId == ObjectId(), "\(stage)")
            #expect(o.optUUID == zeroUUID, "\(stage)")
            #expect(o.optMood == .calm, "\(stage)")
            #expect(o.optTemperature == Celsius(degrees: 0), "\(stage)")
            #expect(o.legacyAge.value == 0, "\(stage)")
            #expect(o.legacyName.value == "", "\(stage)")
        })
    }

    @Test func optionalsHoldingExtremeValues() throws {
        let oid = ObjectId("5f0c1b2a9d3e4f5a6b7c8d9e")
        try roundTrip(TempDir(), set: { o, _ in
            o.optInt = .min; o.optInt8 = .max; o.optInt16 = .min; o.optInt32 = .max; o.optInt64 = .min
            o.optBool = true; o.optFloat = -.infinity; o.optDouble = .greatestFiniteMagnitude
            o.optString = "ü🐶"; o.optData = Data([0xFF, 0x00]); o.optDate = .distantPast
            o.optDecimal = Decimal128.max; o.optObjectId = oid; o.optMood = .grumpy
        }, check: { o, _, stage in
            #expect(o.optInt == .min && o.optInt8 == .max && o.optInt16 == .min, "\(stage)")
            #expect(o.optInt32 == .max && o.optInt64 == .min, "\(stage)")
            #expect(o.optBool == true, "\(stage)")
            #expect(o.optFloat == -.infinity && o.optDouble == .greatestFiniteMagnitude, "\(stage)")
            #expect(o.optString == "ü🐶" && o.optData == Data([0xFF, 0x00]), "\(stage)")
            #expect(o.optDate == .distantPast, "\(stage)")
            #expect(o.optDecimal == Decimal128.max, "\(stage)")
            #expect(o.optObjectId == oid && o.optMood == .grumpy, "\(stage)")
        })
    }

    // MARK: Defaults

    @Test func defaultValuesRoundTrip() throws {
        try roundTrip(TempDir(), set: { _, _ in }, check: { o, _, stage in
            #expect(o.int == 0 && o.int8 == 0 && o.int16 == 0 && o.int32 == 0 && o.int64 == 0, "\(stage)")
            #expect(o.bool == false && o.float == 0 && o.double == 0, "\(stage)")
            #expect(o.string == "" && o.data == Data(), "\(stage)")
            #expect(o.date == Date(timeIntervalSince1970: 0), "\(stage)")
            #expect(o.decimal == Decimal128(value: 0), "\(stage)")
            #expect(o.objectId == ObjectId() && o.uuid == zeroUUID, "\(stage)")
            #expect(o.any == .none, "\(stage)")
            #expect(o.mood == .calm && o.level == .low, "\(stage)")
            #expect(o.temperature == Celsius(degrees: 0), "\(stage)")
            #expect(o.intList.isEmpty && o.stringList.isEmpty && o.optIntList.isEmpty, "\(stage)")
            #expect(o.dateSet.isEmpty && o.doubleMap.isEmpty && o.anyList.isEmpty, "\(stage)")
        })
    }

    /// Without an initial value a property reads as its type's default; an enum's is its first case.
    @Test func propertiesWithoutInitialValuesUseTheTypeDefault() throws {
        let dir = TempDir()
        let fresh = ObjNoDefaults()
        #expect(fresh.int == 0)
        #expect(fresh.string == "")
        #expect(fresh.optString == nil)
        #expect(fresh.level == .low)
        #expect(fresh.mood == .calm)
        #expect(fresh.any == .none)
        #expect(fresh.list.isEmpty)
        let realm = try Realm(configuration: dir.config([ObjNoDefaults.self]))
        try realm.write { realm.add(ObjNoDefaults()) }
        let o = try #require(realm.objects(ObjNoDefaults.self).first)
        #expect(o.int == 0 && o.string == "" && o.optString == nil)
        #expect(o.level == .low && o.mood == .calm && o.any == .none && o.list.isEmpty)
    }

    // MARK: Primitive collections

    @Test func primitiveListsKeepOrderAndDuplicates() throws {
        let ints = [3, 1, 3, Int.min, Int.max, 1, 0]
        let strings = ["b", "", "a", "🐶", "b", "é"]
        let optInts: [Int?] = [nil, 0, nil, -1]
        try roundTrip(TempDir(), set: { o, _ in
            o.intList.append(objectsIn: ints)
            o.stringList.append(objectsIn: strings)
            o.optIntList.append(objectsIn: optInts)
        }, check: { o, _, stage in
            #expect(Array(o.intList) == ints, "\(stage)")
            #expect(o.intList.count == 7, "\(stage)")
            #expect(Array(o.stringList) == strings, "\(stage)")
            #expect(Array(o.optIntList) == optInts, "\(stage)")
            #expect(o.optIntList[0] == nil && o.optIntList[1] == 0, "\(stage)")
        })
    }

    @Test func primitiveSetsKeepOneOfEachValue() throws {
        let d1 = Date(timeIntervalSince1970: 1_000.5)
        let d2 = Date(timeIntervalSince1970: -1_000.25)
        try roundTrip(TempDir(), set: { o, _ in
            o.dateSet.insert(d1)
            o.dateSet.insert(d2)
            o.dateSet.insert(d1)
            o.dateSet.insert(objectsIn: [d2, d1])
        }, check: { o, _, stage in
            #expect(o.dateSet.count == 2, "\(stage)")
            #expect(Set(o.dateSet) == [d1, d2], "\(stage)")
            #expect(o.dateSet.contains(d1) && o.dateSet.contains(d2), "\(stage)")
            #expect(!o.dateSet.contains(Date(timeIntervalSince1970: 0)), "\(stage)")
        })
    }

    @Test func primitiveMapsKeepKeysAndValues() throws {
        try roundTrip(TempDir(), set: { o, _ in
            o.doubleMap["b"] = 2.5
            o.doubleMap["a"] = -1
            o.doubleMap["c"] = .infinity
            o.doubleMap["héllo wörld"] = 0
            o.doubleMap["b"] = 3.5 // replaces
        }, check: { o, _, stage in
            #expect(o.doubleMap.count == 4, "\(stage)")
            #expect(Set(o.doubleMap.keys) == ["a", "b", "c", "héllo wörld"], "\(stage)")
            #expect(o.doubleMap["a"] == -1, "\(stage)")
            #expect(o.doubleMap["b"] == 3.5, "\(stage)")
            #expect(o.doubleMap["c"] == .infinity, "\(stage)")
            #expect(o.doubleMap["héllo wörld"] == 0, "\(stage)")
            #expect(o.doubleMap["z"] == nil, "\(stage)")
        })
    }

    @Test func managedMapKeysAreSorted() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        let o = AllTypes()
        for (k, v) in [("delta", 4.0), ("alpha", 1.0), ("charlie", 3.0), ("bravo", 2.0)] { o.doubleMap[k] = v }
        try realm.write { realm.add(o) }
        #expect(o.doubleMap.keys == ["alpha", "bravo", "charlie", "delta"])
        #expect(o.doubleMap.values == [1, 2, 3, 4])
    }

    @Test func anyListMixesTypes() throws {
        let values: [AnyRealmValue] = [.int(1), .none, .string("x"), .bool(false), .double(2.5), .int(1),
                                       .data(Data([1])), .uuid(zeroUUID)]
        try roundTrip(TempDir(), set: { o, _ in o.anyList.append(objectsIn: values) }, check: { o, _, stage in
            #expect(Array(o.anyList) == values, "\(stage)")
        })
    }

    // MARK: Legacy boxes

    @Test func legacyRealmPropertyBoxesRoundTrip() throws {
        try roundTrip(TempDir(), count: 2, set: { o, i in
            o.legacyAge.value = i == 0 ? 42 : nil
            o.legacyName.value = i == 0 ? "Zed" : nil
        }, check: { o, i, stage in
            #expect(o.legacyAge.value == (i == 0 ? 42 : nil), "\(stage)")
            #expect(o.legacyName.value == (i == 0 ? "Zed" : nil), "\(stage)")
        })
    }

    /// The box of a managed object reads and writes the row even when the accessor it came from
    /// is a temporary (`realm.objects(T.self).first!.box.value`), as RealmSwift's managed boxes do.
    @Test func legacyBoxThroughATemporaryAccessor() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        let o = AllTypes()
        o.legacyAge.value = 8
        try realm.write { realm.add(o) }
        #expect(realm.objects(AllTypes.self).first!.legacyAge.value == 8)
        try realm.write { realm.objects(AllTypes.self).first!.legacyAge.value = 99 }
        #expect(o.legacyAge.value == 99)
        let box = realm.objects(AllTypes.self).first!.legacyName
        try realm.write { box.value = "kept" }
        #expect(o.legacyName.value == "kept")
    }

    /// Legacy box properties read through the dynamic API. (Run in a child process: it crashes
    /// today.)
    @Test func legacyBoxPropertiesThroughTheDynamicAPI() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir("legacyBoxPropertiesThroughTheDynamicAPI")
            let realm = try! Realm(configuration: dir.config(objectModels))
            let o = AllTypes()
            o.legacyAge.value = 8
            o.legacyName.value = "Zed"
            try! realm.write { realm.add(o) }
            let dyn = realm.dynamicObjects("AllTypes").first!
            precondition(dyn["legacyAge"] as? Int == 8)
            precondition(dyn["legacyName"] as? String == "Zed")
        }
    }

    @Test func legacyBoxesAreKeyValueCodingProperties() throws {
        let o = AllTypes()
        o.legacyAge.value = 7
        #expect(o.value(forKey: "legacyAge") as? Int == 7)
        o.setValue(8, forKey: "legacyAge")
        #expect(o.legacyAge.value == 8)
        o.setValue(nil, forKey: "legacyName")
        #expect(o.legacyName.value == nil)
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write { realm.add(o) }
        #expect(o.value(forKey: "legacyAge") as? Int == 8)
        try realm.write { o.setValue("Ann", forKey: "legacyName") }
        #expect(o.legacyName.value == "Ann")
        #expect(realm.objects(AllTypes.self).first?.legacyName.value == "Ann")
    }

    // MARK: Loosely typed input

    @Test func initFromValueConvertsNumbers() throws {
        let o = AllTypes(value: ["int8": 5, "int16": -3, "float": 2.5, "double": 3, "int64": 7, "optDouble": 4,
                                 "optFloat": 1])
        #expect(o.int8 == 5 && o.int16 == -3 && o.int64 == 7)
        #expect(o.float == 2.5 && o.double == 3)
        #expect(o.optDouble == 4 && o.optFloat == 1)
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write { realm.add(o) }
        #expect(o.int8 == 5 && o.float == 2.5 && o.double == 3 && o.optDouble == 4)
    }

    // MARK: Later writes

    @Test func valuesChangedInALaterWriteArePersisted() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        do {
            let realm = try Realm(configuration: config)
            let o = AllTypes()
            o.int = 1
            o.string = "one"
            o.optString = "set"
            o.any = .int(1)
            o.intList.append(objectsIn: [1, 2])
            o.legacyAge.value = 1
            try realm.write { realm.add(o) }
            try realm.write {
                o.int = -2
                o.int8 = -8
                o.string = "two"
                o.optString = nil
                o.optInt = 5
                o.optDate = Date(timeIntervalSince1970: 99.5)
                o.any = .string("now a string")
                o.mood = .happy
                o.temperature = Celsius(degrees: 21.5)
                o.intList.append(3)
                o.intList[0] = 10
                o.doubleMap["k"] = 1.25
                o.dateSet.insert(Date(timeIntervalSince1970: 5))
                o.legacyAge.value = nil
                o.legacyName.value = "later"
            }
            #expect(o.int == -2 && o.string == "two" && o.optString == nil)
        }
        let realm = try Realm(configuration: config)
        let o = try #require(realm.object(ofType: AllTypes.self, forPrimaryKey: 0))
        #expect(o.int == -2)
        #expect(o.int8 == -8)
        #expect(o.string == "two")
        #expect(o.optString == nil)
        #expect(o.optInt == 5)
        #expect(o.optDate == Date(timeIntervalSince1970: 99.5))
        #expect(o.any == .string("now a string"))
        #expect(o.mood == .happy)
        #expect(o.temperature == Celsius(degrees: 21.5))
        #expect(Array(o.intList) == [10, 2, 3])
        #expect(o.doubleMap["k"] == 1.25)
        #expect(Array(o.dateSet) == [Date(timeIntervalSince1970: 5)])
        #expect(o.legacyAge.value == nil)
        #expect(o.legacyName.value == "later")
    }

    @Test func writesThroughOneAccessorAreSeenThroughAnother() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write { realm.add(AllTypes()) }
        let a = try #require(realm.object(ofType: AllTypes.self, forPrimaryKey: 0))
        let b = try #require(realm.objects(AllTypes.self).first)
        try realm.write {
            a.double = 6.25
            a.optUUID = zeroUUID
            a.stringList.append("x")
        }
        #expect(b.double == 6.25)
        #expect(b.optUUID == zeroUUID)
        #expect(Array(b.stringList) == ["x"])
    }

    @Test func cancelledWriteLeavesValuesUnchanged() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        let o = AllTypes()
        o.int = 1
        try realm.write { realm.add(o) }
        realm.beginWrite()
        o.int = 2
        o.intList.append(5)
        realm.cancelWrite()
        #expect(o.int == 1)
        #expect(o.intList.isEmpty)
    }
}
