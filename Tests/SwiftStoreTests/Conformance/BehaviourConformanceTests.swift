// RealmSwift conformance: behaviours that RealmSwift code relies on, each as RealmSwift
// documents it.
import Foundation
import Testing
import SwiftStore

final class CfNumbers: Object {
    @Persisted var int8: Int8 = 0
    @Persisted var int16: Int16 = 0
    @Persisted var int32: Int32 = 0
    @Persisted var int = 0
    @Persisted var float: Float = 0
    @Persisted var double = 0.0
    @Persisted var optString: String?
    @Persisted var optDate: Date?
    @Persisted var optInt: Int?
}

@Suite("Conformance: behaviours")
struct BehaviourConformanceTests {
    private func numbers(_ dir: TempDir) throws -> Realm {
        let realm = try Realm(configuration: dir.config([CfNumbers.self]))
        try realm.write {
            for i in 0..<6 {
                realm.add(CfNumbers(value: ["int8": Int8(i), "int16": Int16(i * 100), "int32": Int32(i * 100_000),
                                            "int": i, "float": Float(i) + 0.5, "double": Double(i) + 0.5]))
            }
        }
        return realm
    }

    /// Query arguments of every integer width and of Float compare by value.
    @Test func narrowNumericArgumentsCompareByValue() throws {
        let dir = TempDir()
        let objects = try numbers(dir).objects(CfNumbers.self)
        #expect(objects.filter("int8 >= %@", Int8(3)).count == 3)
        #expect(objects.filter("int8 == %@", UInt8(2)).count == 1)
        #expect(objects.filter("int16 > %@", Int16(250)).count == 3)
        #expect(objects.filter("int32 < %@", Int32(200_000)).count == 2)
        #expect(objects.filter("int == %@", Int8(4)).count == 1)
        #expect(objects.filter("int IN %@", [Int16(1), Int16(2)]).count == 2)
        #expect(objects.filter("float == %@", Float(2.5)).count == 1)
        #expect(objects.filter("double > %@", Float(3.5)).count == 2)
        #expect(objects.filter("float BETWEEN {%@, %@}", Float(1), Float(3)).count == 2)
        #expect(objects.filter("int8 == %@", NSNumber(value: Int8(5))).count == 1)
    }

    /// `SELF` is a keyword, written in any case, as in NSPredicate.
    @Test func selfIsCaseInsensitive() throws {
        let list = List<Int>()
        list.append(objectsIn: [1, 5, 9])
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfNumbers.self, CfCollections.self, CfTarget.self]))
        let holder = CfCollections()
        holder.intList.append(objectsIn: [1, 5, 9])
        try realm.write { realm.add(holder) }
        #expect(holder.intList.filter("SELF > 2").count == 2)
        #expect(holder.intList.filter("self > 2").count == 2)
        #expect(holder.intList.filter("Self > 2").count == 2)
    }

    /// Sorting puts nil before every value, for strings, dates and numbers alike.
    @Test func nilSortsFirst() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfNumbers.self]))
        try realm.write {
            realm.add(CfNumbers(value: ["optString": "b", "optDate": Date(timeIntervalSince1970: 5), "optInt": 2]))
            realm.add(CfNumbers(value: [:]))
            realm.add(CfNumbers(value: ["optString": "", "optDate": Date(timeIntervalSince1970: -5), "optInt": -7]))
        }
        let objects = realm.objects(CfNumbers.self)
        #expect(objects.sorted(byKeyPath: "optString").map(\.optString) == [nil, "", "b"])
        #expect(objects.sorted(byKeyPath: "optDate").map(\.optDate) == [nil, Date(timeIntervalSince1970: -5), Date(timeIntervalSince1970: 5)])
        #expect(objects.sorted(byKeyPath: "optInt").map(\.optInt) == [nil, -7, 2])
        #expect(objects.sorted(byKeyPath: "optInt", ascending: false).map(\.optInt) == [2, -7, nil])
    }

    /// `value(forKey:)` gives a value that casts to the property's declared type.
    @Test func keyValueCodingCastsToTheDeclaredType() throws {
        let dir = TempDir()
        let realm = try numbers(dir)
        let o = try #require(realm.objects(CfNumbers.self).filter("int == 3").first)
        #expect(o.value(forKey: "int8") as? Int8 == 3)
        #expect(o.value(forKey: "int16") as? Int16 == 300)
        #expect(o.value(forKey: "int32") as? Int32 == 300_000)
        #expect(o.value(forKey: "float") as? Float == 3.5)
        let unmanaged = CfNumbers(value: ["int8": Int8(7)])
        #expect(unmanaged.value(forKey: "int8") as? Int8 == 7)
        #expect(unmanaged["int16"] as? Int16 == 0)
    }

    /// `try Realm()` on one thread with the same configuration is the same instance, so a write
    /// begun through one handle is seen through another.
    @Test func oneInstancePerThreadAndConfiguration() throws {
        let dir = TempDir()
        let config = dir.config([CfNumbers.self])
        let a = try Realm(configuration: config)
        let b = try Realm(configuration: config)
        #expect(a == b)
        a.beginWrite()
        #expect(b.isInWriteTransaction)
        b.add(CfNumbers())
        try a.commitWrite()
        #expect(!b.isInWriteTransaction)
        #expect(b.objects(CfNumbers.self).count == 1)
    }

    /// The same through the type-safe query: narrow integers and Float compare by value.
    @Test func narrowNumericQueryValuesCompareByValue() throws {
        let dir = TempDir()
        let objects = try numbers(dir).objects(CfNumbers.self)
        #expect(objects.where { $0.int8 >= 3 }.count == 3)
        #expect(objects.where { $0.int16 == 200 }.count == 1)
        #expect(objects.where { $0.int32.in([100_000, 500_000]) }.count == 2)
        #expect(objects.where { $0.float < 2 }.count == 2)
        #expect(objects.where { $0.float.contains(1.5...3.5) }.count == 3)
    }

    /// Invalidation: Results after `invalidate()`, a List whose owner was deleted.
    @Test func invalidationRules() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfNumbers.self, CfCollections.self, CfTarget.self]))
        let holder = CfCollections()
        try realm.write { realm.add(holder) }
        let list = holder.intList
        #expect(!list.isInvalidated)
        try realm.write { realm.delete(holder) }
        #expect(list.isInvalidated)
        let results = realm.objects(CfNumbers.self)
        #expect(!results.isInvalidated)
        realm.invalidate()
        #expect(results.isInvalidated)
    }

    /// Objects added in a cancelled write become invalidated, not unmanaged; the data of
    /// objects deleted in it comes back, but the instances that were deleted stay invalidated
    /// (a new read of the row gives a valid object), as RealmSwift documents for cancelWrite.
    @Test func cancelWriteInvalidatesAddedObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfNumbers.self]))
        let kept = CfNumbers(value: ["int": 1])
        try realm.write { realm.add(kept) }
        realm.beginWrite()
        let added = CfNumbers(value: ["int": 2])
        realm.add(added)
        realm.delete(kept)
        realm.cancelWrite()
        #expect(added.isInvalidated)
        #expect(added.realm != nil)
        #expect(realm.objects(CfNumbers.self).count == 1)
        #expect(realm.objects(CfNumbers.self).first?.int == 1)
        #expect(kept.isInvalidated)
        #expect(realm.objects(CfNumbers.self).first?.isInvalidated == false)
        // Deleted through a query's objects too, and in a write closure that throws.
        struct Stop: Error {}
        let all = Array(realm.objects(CfNumbers.self))
        _ = try? realm.write {
            realm.delete(all)
            throw Stop()
        }
        #expect(realm.objects(CfNumbers.self).count == 1)
        #expect(all.count == 1 && all.allSatisfy { $0.isInvalidated })
        // A committed write's deletions are unaffected by a later cancelled one.
        let again = realm.objects(CfNumbers.self).first!
        realm.beginWrite()
        realm.cancelWrite()
        #expect(!again.isInvalidated && again.int == 1)
    }

    /// Decimal128 text keeps the sign of a NaN, as RealmSwift's core prints it ("-NaN").
    @Test func negativeNaNKeepsItsSign() throws {
        let negative = try Decimal128(string: "-NaN")
        #expect(negative.isNaN)
        #expect(negative.stringValue == "-NaN")
        #expect(try Decimal128(string: negative.stringValue).stringValue == "-NaN")
        #expect(try Decimal128(string: "NaN").stringValue == "NaN")
        #expect(try Decimal128(string: "+nan").stringValue == "NaN")
    }

    /// `where` and `filter` on a Map whose values are objects query those objects.
    @Test func mapOfObjectsFilters() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfCollections.self, CfTarget.self]))
        let holder = CfCollections()
        try realm.write {
            holder.objectMap["a"] = CfTarget(value: ["name": "alpha"])
            holder.objectMap["b"] = CfTarget(value: ["name": "beta"])
            holder.objectMap["c"] = nil as CfTarget?
            realm.add(holder)
        }
        #expect(holder.objectMap.where { $0.name.starts(with: "al") }.count == 1)
        #expect(holder.objectMap.filter("name == %@", "beta").count == 1)
    }
}
