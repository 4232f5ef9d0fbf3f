// RealmSwift conformance: Codable models. JSON written for a RealmSwift model decodes into
// the same model here, and encodes back in RealmSwift's format: dates as seconds since the
// reference date (JSONEncoder's default), data as base64, Decimal128 as a string, ObjectId as
// its hex string, UUID as its string, collections as arrays (Map as an object), enums as their
// raw value, embedded and linked objects as nested objects, and the legacy RealmProperty and
// RealmOptional boxes as their bare value or null.
import Foundation
import Testing
import SwiftStore

enum CfCodableKind: Int, PersistableEnum, Codable {
    case one = 1, two = 2
}

final class CfCodableAddress: EmbeddedObject, Codable {
    @Persisted var city = ""
}

final class CfCodableTag: Object, Codable {
    @Persisted var label = ""
}

final class CfCodableModel: Object, Codable {
    @Persisted var string: String
    @Persisted var int: Int
    @Persisted var int8: Int8
    @Persisted var float: Float
    @Persisted var double: Double
    @Persisted var bool: Bool
    @Persisted var date: Date
    @Persisted var data: Data
    @Persisted var decimal: Decimal128
    @Persisted var objectId: ObjectId
    @Persisted var uuid: UUID
    @Persisted var intOpt: Int?
    @Persisted var stringOpt: String?
    @Persisted var kind: CfCodableKind
    @Persisted var kindOpt: CfCodableKind?
    @Persisted var address: CfCodableAddress?
    @Persisted var tags: List<CfCodableTag>
    @Persisted var intList: List<Int>
    @Persisted var optStringList: List<String?>
    @Persisted var decimalSet: MutableSet<Decimal128>
    @Persisted var uuidSet: MutableSet<UUID>
    @Persisted var dateMap: Map<String, Date>
    @Persisted var optIntMap: Map<String, Int?>
    @Persisted var kindList: List<CfCodableKind>
}

final class CfCodableLegacy: Object, Codable {
    @Persisted var name = ""
    var otherInt = RealmProperty<Int?>()
    var otherDouble = RealmProperty<Double?>()
    var otherEnum = RealmProperty<CfCodableKind?>()
    var intOpt = RealmOptional<Int>()
    var boolOpt = RealmOptional<Bool>()
}

@Suite("Conformance: Codable")
struct CodableConformanceTests {
    private let modelJSON = """
    {
        "string": "abc", "int": 123, "int8": 12, "float": 2.5, "double": 2.5, "bool": true,
        "date": 2.5, "data": "ZGVm", "decimal": "1.5e2",
        "objectId": "1234567890abcdef12345678",
        "uuid": "00000000-0000-0000-0000-000000000001",
        "intOpt": null, "stringOpt": "x", "kind": 2, "kindOpt": 1,
        "address": {"city": "Oslo"},
        "tags": [{"label": "a"}, {"label": "b"}],
        "intList": [1, 2, 3], "optStringList": ["p", null],
        "decimalSet": [2.2, "3"], "uuidSet": ["00000000-0000-0000-0000-000000000002"],
        "dateMap": {"k": 10}, "optIntMap": {"n": null, "v": 4},
        "kindList": [1, 2, 2]
    }
    """

    private func encoded<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private func check(_ m: CfCodableModel) {
        #expect(m.string == "abc" && m.int == 123 && m.int8 == 12)
        #expect(m.float == 2.5 && m.double == 2.5 && m.bool)
        #expect(m.date == Date(timeIntervalSinceReferenceDate: 2.5))
        #expect(m.data == Data("def".utf8))
        #expect(m.decimal == 150)
        #expect(m.objectId == ObjectId("1234567890abcdef12345678"))
        #expect(m.uuid == UUID(uuidString: "00000000-0000-0000-0000-000000000001"))
        #expect(m.intOpt == nil && m.stringOpt == "x")
        #expect(m.kind == .two && m.kindOpt == .one)
        #expect(m.address?.city == "Oslo")
        #expect(m.tags.map(\.label) == ["a", "b"])
        #expect(Array(m.intList) == [1, 2, 3])
        #expect(Array(m.optStringList) == ["p", nil])
        #expect(m.decimalSet.count == 2 && m.decimalSet.contains("2.2") && m.decimalSet.contains("3"))
        #expect(m.uuidSet.first == UUID(uuidString: "00000000-0000-0000-0000-000000000002"))
        #expect(m.dateMap["k"] == Date(timeIntervalSinceReferenceDate: 10))
        #expect(m.optIntMap["v"] == .some(4) && m.optIntMap["n"] == .some(nil) && m.optIntMap.count == 2)
        #expect(Array(m.kindList) == [.one, .two, .two])
    }

    @Test func modernModelDecodesJSONWrittenForRealmSwift() throws {
        let m = try JSONDecoder().decode(CfCodableModel.self, from: Data(modelJSON.utf8))
        check(m)
    }

    @Test func modernModelEncodesInRealmSwiftsFormatUnmanagedAndManaged() throws {
        let m = try JSONDecoder().decode(CfCodableModel.self, from: Data(modelJSON.utf8))
        // Decimals in RealmSwift's text: 0.25 is written with an exponent, as its core does.
        m.decimal = "2.5"
        m.decimalSet.removeAll()
        m.decimalSet.insert("0.25")
        let expected = #"{"address":{"city":"Oslo"},"bool":true,"data":"ZGVm","date":2.5,"dateMap":{"k":10},"decimal":"2.5","decimalSet":["2.5E-1"],"double":2.5,"float":2.5,"int":123,"int8":12,"intList":[1,2,3],"intOpt":null,"kind":2,"kindList":[1,2,2],"kindOpt":1,"objectId":"1234567890abcdef12345678","optIntMap":{"n":null,"v":4},"optStringList":["p",null],"string":"abc","stringOpt":"x","tags":[{"label":"a"},{"label":"b"}],"uuid":"00000000-0000-0000-0000-000000000001","uuidSet":["00000000-0000-0000-0000-000000000002"]}"#
        let unmanaged = try encoded(m)
        #expect(unmanaged == expected)

        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfCodableModel.self, CfCodableAddress.self, CfCodableTag.self]))
        try realm.write { realm.add(m) }
        #expect(try encoded(m) == expected)
        // Decoded again from what was encoded, the model is the same.
        let again = try JSONDecoder().decode(CfCodableModel.self, from: Data(expected.utf8))
        #expect(try encoded(again) == expected)
    }

    /// A decimal with an exponent is written in RealmSwift's form ("1.5E2", as its own Codable
    /// tests expect), not IEEE 754's scientific form ("1.5E+2"); both read either.
    @Test func decimalTextWithAnExponent() throws {
        let d = try JSONDecoder().decode([Decimal128].self, from: Data(#"["1.5e2"]"#.utf8))
        #expect(d == [150])
        let text = try encoded(d)
        #expect(text == #"["1.5E2"]"#)
    }

    @Test func missingKeysTakeTheDefaults() throws {
        let m = try JSONDecoder().decode(CfCodableModel.self, from: Data(#"{"string": "only"}"#.utf8))
        #expect(m.string == "only" && m.int == 0 && m.kind == .one && m.kindOpt == nil)
        #expect(m.tags.isEmpty && m.dateMap.isEmpty && m.address == nil)
    }

    @Test func legacyBoxesDecodeValuesAndNulls() throws {
        let full = #"{"name":"n","otherInt":123,"otherDouble":2.5,"otherEnum":2,"intOpt":7,"boolOpt":true}"#
        let a = try JSONDecoder().decode(CfCodableLegacy.self, from: Data(full.utf8))
        #expect(a.otherInt.value == 123 && a.otherDouble.value == 2.5 && a.otherEnum.value == .two)
        #expect(a.intOpt.value == 7 && a.boolOpt.value == true)
        #expect(try encoded(a) == #"{"boolOpt":true,"intOpt":7,"name":"n","otherDouble":2.5,"otherEnum":2,"otherInt":123}"#)

        let nulls = #"{"name":"m","otherInt":null,"otherDouble":null,"otherEnum":null,"intOpt":null,"boolOpt":null}"#
        let b = try JSONDecoder().decode(CfCodableLegacy.self, from: Data(nulls.utf8))
        #expect(b.otherInt.value == nil && b.otherDouble.value == nil && b.otherEnum.value == nil)
        #expect(b.intOpt.value == nil && b.boolOpt.value == nil)
        #expect(try encoded(b) == #"{"boolOpt":null,"intOpt":null,"name":"m","otherDouble":null,"otherEnum":null,"otherInt":null}"#)
    }

    @Test func legacyBoxesOnTheirOwn() throws {
        // In an array, as RealmSwift's own tests encode them.
        let decoded = try JSONDecoder().decode([RealmOptional<Int>].self, from: Data("[1,null]".utf8))
        #expect(decoded.map(\.value) == [1, nil])
        let property = try JSONDecoder().decode([RealmProperty<Float?>].self, from: Data("[2.25]".utf8))
        #expect(property.first?.value == 2.25)
        #expect(try encoded([RealmOptional<Int>(10), RealmOptional<Int>()]) == "[10,null]")
    }

    @Test func legacyBoxesCompareByValueAndDescribeTheirValue() {
        #expect(RealmOptional<Int>(3) == RealmOptional<Int>(3))
        #expect(RealmOptional<Int>(3) != RealmOptional<Int>(4))
        #expect(RealmOptional<Int>() == RealmOptional<Int>(nil))
        #expect(RealmProperty<String?>("a") == RealmProperty<String?>("a"))
        #expect(RealmProperty<AnyRealmValue>(.int(1)) == RealmProperty<AnyRealmValue>(.int(1)))
        #expect(RealmProperty<AnyRealmValue>(.int(1)) != RealmProperty<AnyRealmValue>(.string("1")))
        #expect(RealmProperty<Int?>(5).description == String(describing: Int?(5)))
        #expect(RealmProperty<Int?>().description == "nil")
        #expect("\(RealmProperty<AnyRealmValue>(.string("s")))" == String(describing: AnyRealmValue.string("s")))
    }

    @Test func managedLegacyBoxesEncodeFromTheDatabase() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfCodableLegacy.self]))
        let a = CfCodableLegacy()
        a.name = "z"
        a.otherInt.value = 1
        try realm.write { realm.add(a) }
        try realm.write { a.otherInt.value = 2; a.intOpt.value = 9 }
        let stored = realm.objects(CfCodableLegacy.self).first!
        #expect(try encoded(stored) == #"{"boolOpt":null,"intOpt":9,"name":"z","otherDouble":null,"otherEnum":null,"otherInt":2}"#)
    }
}
