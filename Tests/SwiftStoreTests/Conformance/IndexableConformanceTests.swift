// RealmSwift conformance: enums and custom persistable types take `indexed:` and
// `primaryKey:` when the type they are stored as is indexable or a valid primary key, and they
// then behave as indexes and keys of that type (lookups by the enum or custom value,
// duplicates rejected with RealmSwift's message).
import Foundation
import Testing
import SwiftStore

enum CfCode: String, PersistableEnum { case alpha, beta, gamma }

struct CfSku: CustomPersistable, Hashable {
    var text: String
    init(_ text: String) { self.text = text }
    init(persistedValue: String) { text = persistedValue }
    var persistableValue: String { text }
}

struct CfTicket: FailableCustomPersistable, Hashable {
    var number: Int
    init?(persistedValue: Int) { guard persistedValue >= 0 else { return nil }; number = persistedValue }
    var persistableValue: Int { number }
}

final class CfByCode: Object {
    @Persisted(primaryKey: true) var code: CfCode
    @Persisted(indexed: true) var rank = CfRank.low
    @Persisted(indexed: true) var optRank: CfRank?
    @Persisted(indexed: true) var sku = CfSku("")
    @Persisted(indexed: true) var optSku: CfSku?
    @Persisted(indexed: true) var ticket = CfTicket(persistedValue: 0)!
}

final class CfBySku: Object {
    @Persisted(primaryKey: true) var sku = CfSku("")
    @Persisted var note = ""
}

final class CfByOptionalEnum: Object {
    @Persisted(primaryKey: true) var code: CfCode?
}

@Suite("Conformance: indexable enums and custom types")
struct IndexableConformanceTests {
    @Test func schemaMarksIndexesAndKeys() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfByCode.self, CfBySku.self, CfByOptionalEnum.self]))
        let schema = try #require(realm.schema["CfByCode"])
        #expect(schema.primaryKeyProperty?.name == "code")
        for name in ["rank", "optRank", "sku", "optSku", "ticket"] {
            #expect(schema[name]?.isIndexed == true, "\(name)")
        }
        #expect(realm.schema["CfBySku"]?.primaryKeyProperty?.name == "sku")
        #expect(realm.schema["CfByOptionalEnum"]?.primaryKeyProperty?.type == .string)
    }

    @Test func keysLookUpAndRejectDuplicates() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfByCode.self, CfBySku.self, CfByOptionalEnum.self]))
        try realm.write {
            realm.add(CfByCode(value: ["code": CfCode.beta, "rank": CfRank.high]))
            realm.add(CfBySku(value: ["sku": CfSku("A-1"), "note": "first"]))
            realm.add(CfByOptionalEnum())
        }
        #expect(realm.object(ofType: CfByCode.self, forPrimaryKey: CfCode.beta)?.rank == .high)
        #expect(realm.object(ofType: CfByCode.self, forPrimaryKey: CfCode.gamma) == nil)
        #expect(realm.object(ofType: CfBySku.self, forPrimaryKey: CfSku("A-1"))?.note == "first")
        #expect(realm.object(ofType: CfByOptionalEnum.self, forPrimaryKey: CfCode?.none) != nil)
        #expect(realm.objects(CfByCode.self).where { $0.rank == .high }.count == 1)
        // Update by primary key through the custom type.
        try realm.write {
            realm.add(CfBySku(value: ["sku": CfSku("A-1"), "note": "second"]), update: .modified)
        }
        #expect(realm.objects(CfBySku.self).count == 1)
        #expect(realm.object(ofType: CfBySku.self, forPrimaryKey: CfSku("A-1"))?.note == "second")
    }

    @Test func duplicateEnumKeyTrapsWithRealmSwiftsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([CfByCode.self]))
            try! realm.write {
                realm.add(CfByCode(value: ["code": CfCode.beta]))
                realm.add(CfByCode(value: ["code": CfCode.beta]))
            }
        }
        expectMessage(result, "Attempting to create an object of type 'CfByCode' with an existing primary key value 'beta'.")
    }
}
