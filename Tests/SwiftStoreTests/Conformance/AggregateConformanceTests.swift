// RealmSwift conformance: aggregates by property name are generic over the result type, which
// is any type whose PersistedType is a MinMaxType (min, max) or AddableType (sum, average), so
// NSNumber, NSDate, Decimal128 and enum or custom-typed results work, on Results, List and Map.
import Foundation
import Testing
import SwiftStore

final class CfStat: Object {
    @Persisted var int = 0
    @Persisted var double = 0.0
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var decimal = Decimal128(value: 0)
    @Persisted var optInt: Int?
    @Persisted var rank = CfRank.low
    @Persisted var metres = CfMetres(persistedValue: 0)
}

final class CfStatHolder: Object {
    @Persisted var stats: List<CfStat>
    @Persisted var byName: Map<String, CfStat?>
}

/// A generic wrapper as user code writes one over RealmSwift's declaration.
func cfLargest<T: _HasPersistedType, C: RealmCollection>(_ c: C, _ name: String, as: T.Type) -> T?
    where T.PersistedType: MinMaxType {
    c.max(ofProperty: name)
}

@Suite("Conformance: aggregates by name")
struct AggregateConformanceTests {
    @Test func resultTypesThroughPersistedType() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfStat.self, CfStatHolder.self]))
        let holder = CfStatHolder()
        try realm.write {
            for i in 1...4 {
                let s = CfStat()
                s.int = i
                s.double = Double(i) * 1.5
                s.date = Date(timeIntervalSince1970: Double(i) * 1000)
                s.decimal = Decimal128(value: i * 10)
                s.optInt = i == 2 ? nil : i
                s.rank = i == 3 ? .high : .low
                s.metres = CfMetres(persistedValue: Double(i))
                holder.stats.append(s)
                holder.byName["s\(i)"] = s
            }
            realm.add(holder)
        }
        let stats = realm.objects(CfStat.self)
        let n: NSNumber? = stats.max(ofProperty: "int")
        #expect(n == NSNumber(value: 4))
        let sum: NSNumber = stats.sum(ofProperty: "double")
        #expect(sum.doubleValue == 15)
        let avg: NSNumber? = stats.average(ofProperty: "int")
        #expect(avg?.doubleValue == 2.5)
        let d: NSDate? = stats.min(ofProperty: "date")
        #expect(d?.timeIntervalSince1970 == 1000)
        let dec: Decimal128? = stats.max(ofProperty: "decimal")
        #expect(dec == Decimal128(value: 40))
        let decSum: Decimal128 = stats.sum(ofProperty: "decimal")
        #expect(decSum == Decimal128(value: 100))
        let date: Date? = stats.max(ofProperty: "date")
        #expect(date == Date(timeIntervalSince1970: 4000))
        let opt: Int? = stats.min(ofProperty: "optInt")
        #expect(opt == 1)
        let optN: NSNumber? = stats.sum(ofProperty: "optInt")
        #expect(optN == NSNumber(value: 8))
        // Enum and custom-typed results: the aggregate runs on the stored value.
        let rank: CfRank? = stats.max(ofProperty: "rank")
        #expect(rank == .high)
        let metres: CfMetres? = stats.max(ofProperty: "metres")
        #expect(metres == CfMetres(persistedValue: 4))
        #expect(stats.max(of: \.rank) == .high)
        #expect(stats.sum(of: \.metres) == CfMetres(persistedValue: 10))
        // The same through a List, a Map and generic code.
        let listMax: NSNumber? = holder.stats.max(ofProperty: "int")
        #expect(listMax == 4)
        #expect(holder.byName.max(of: \CfStat.int) == 4)
        #expect(cfLargest(holder.stats, "double", as: Double.self) == 6)
        #expect(cfLargest(stats, "int", as: NSNumber.self) == 4)
        // An empty collection: nil for min/max/average, zero for sum.
        let none = stats.filter("int > 10")
        #expect((none.max(ofProperty: "int") as NSNumber?) == nil)
        #expect((none.sum(ofProperty: "int") as NSNumber) == 0)
    }
}
