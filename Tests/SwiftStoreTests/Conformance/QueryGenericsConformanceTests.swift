// RealmSwift conformance: the query tag protocols (`_QueryNumeric`, `_QueryString`,
// `_QueryBinary`, `OptionalProtocol`) as constraints of user functions that build `Query`
// predicates generically, each run against stored objects.
import Foundation
import Testing
import SwiftStore

final class CfMeasure: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var double = 0.0
    @Persisted var optFloat: Float?
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var decimal = Decimal128(value: 0)
    @Persisted var name = ""
    @Persisted var optName: String?
    @Persisted var bytes = Data()
    @Persisted var rank = CfRank.low
    @Persisted var metres = CfMetres(persistedValue: 0)
    @Persisted var parts: List<CfMeasurePart>
}

final class CfMeasurePart: Object {
    @Persisted var size = 0
    @Persisted var weight = CfMetres(persistedValue: 0)
}

// The user functions: each is generic over the value type and constrained only by the tags.

func cfAtLeast<T: _QueryNumeric>(_ q: Query<T>, _ v: T) -> Query<Bool> { q >= v }
func cfBelow<T: _QueryNumeric>(_ q: Query<T>, _ v: T) -> Query<Bool> { q < v }
func cfPrefixed<T: _QueryString>(_ q: Query<T>, _ v: T) -> Query<Bool> {
    q.starts(with: v, options: .caseInsensitive)
}
func cfLike<T: _QueryString>(_ q: Query<T>, _ pattern: T) -> Query<Bool> { q.like(pattern) }
func cfContainsBytes<T: _QueryBinary>(_ q: Query<T>, _ v: T) -> Query<Bool> { q.contains(v) }
func cfIsNil<T: OptionalProtocol>(_ q: Query<T>) -> Query<Bool> { q == nil }
func cfAverageAbove<T>(_ q: Query<T>, _ v: T) -> Query<Bool>
    where T: _HasPersistedType & _StorableValue, T.PersistedType: _QueryNumeric {
    q.avg > v
}
func cfStoredAtLeast<T>(_ q: Query<T>, _ v: T.PersistedType) -> Query<Bool>
    where T: _HasPersistedType, T.PersistedType: _QueryNumeric {
    q.persistableValue >= v
}

@Suite("Conformance: query generics")
struct QueryGenericsConformanceTests {
    private func realm(_ dir: TempDir) throws -> Realm {
        let realm = try Realm(configuration: dir.config([CfMeasure.self, CfMeasurePart.self]))
        try realm.write {
            for i in 0..<5 {
                let m = CfMeasure()
                m.id = i
                m.int = i * 10
                m.int8 = Int8(i)
                m.double = Double(i) / 2
                m.optFloat = i % 2 == 0 ? nil : Float(i)
                m.date = Date(timeIntervalSince1970: Double(i * 100))
                m.decimal = Decimal128(value: i)
                m.name = ["Apple", "apricot", "Banana", "avocado", "cherry"][i]
                m.optName = i == 4 ? nil : m.name
                m.bytes = Data([UInt8(i), 7])
                m.rank = i < 2 ? .low : .high
                m.metres = CfMetres(persistedValue: Double(i))
                for s in 0...i { m.parts.append(CfMeasurePart(value: ["size": s, "weight": Double(s)])) }
                realm.add(m)
            }
        }
        return realm
    }

    @Test func numericConstraints() throws {
        let dir = TempDir()
        let objects = try realm(dir).objects(CfMeasure.self)
        #expect(objects.where { cfAtLeast($0.int, 20) }.count == 3)
        #expect(objects.where { cfAtLeast($0.int8, 3) }.count == 2)
        #expect(objects.where { cfBelow($0.double, 1.0) }.count == 2)
        #expect(objects.where { cfAtLeast($0.optFloat, 3) }.count == 1)
        #expect(objects.where { cfBelow($0.date, Date(timeIntervalSince1970: 150)) }.count == 2)
        #expect(objects.where { cfAtLeast($0.decimal, Decimal128(value: 4)) }.count == 1)
        // Aggregates through the PersistedType constraint: ints and a custom persistable type.
        #expect(objects.where { cfAverageAbove($0.parts.size, 1) }.count == 2)
        #expect(objects.where { cfAverageAbove($0.parts.weight, CfMetres(persistedValue: 1.5)) }.count == 1)
        // The stored value of an enum and of a custom type, reached generically.
        #expect(objects.where { cfStoredAtLeast($0.rank, 7) }.count == 3)
        #expect(objects.where { cfStoredAtLeast($0.metres, 3.0) }.count == 2)
    }

    @Test func stringBinaryAndOptionalConstraints() throws {
        let dir = TempDir()
        let objects = try realm(dir).objects(CfMeasure.self)
        #expect(objects.where { cfPrefixed($0.name, "a") }.count == 3)
        #expect(objects.where { cfPrefixed($0.optName, "a") }.count == 3)
        #expect(objects.where { cfLike($0.name, "*an*") }.count == 1)
        #expect(objects.where { cfContainsBytes($0.bytes, Data([2, 7])) }.count == 1)
        #expect(objects.where { cfIsNil($0.optName) }.count == 1)
        #expect(objects.where { cfIsNil($0.optFloat) }.count == 3)
    }
}
