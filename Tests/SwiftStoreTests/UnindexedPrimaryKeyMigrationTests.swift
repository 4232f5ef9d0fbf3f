import Foundation
import Testing
@testable import SwiftStore

final class UpkMigV1: Object {
    override class func className() -> String { "UpkMig" }
    @Persisted(primaryKey: true) var id = 0
    @Persisted var other = 0
    @Persisted var name = ""
}

/// `id` renamed to `key`, still the primary key.
final class UpkMigRenamed: Object {
    override class func className() -> String { "UpkMig" }
    @Persisted(primaryKey: true) var key = 0
    @Persisted var other = 0
    @Persisted var name = ""
}

/// The primary key moved to `other`.
final class UpkMigOther: Object {
    override class func className() -> String { "UpkMig" }
    @Persisted var id = 0
    @Persisted(primaryKey: true) var other = 0
    @Persisted var name = ""
}

/// No primary key.
final class UpkMigNone: Object {
    override class func className() -> String { "UpkMig" }
    @Persisted var id = 0
    @Persisted var other = 0
    @Persisted var name = ""
}

/// An Optional Int primary key.
final class UpkMigOpt: Object {
    @Persisted(primaryKey: true) var id: Int? = nil
    @Persisted var name = ""
}

@Suite struct UnindexedPrimaryKeyMigrationTests {
    private func seed(_ dir: TempDir) throws {
        let realm = try Realm(configuration: dir.config([UpkMigV1.self]))
        try realm.write { for i in 0..<200 { realm.add(UpkMigV1(value: ["id": i, "other": 1000 + i, "name": "n\(i)"])) } }
    }

    private func check<O: Object>(_ realm: Realm, _ type: O.Type, _ prop: String, base: Int, _ what: String) {
        let objs = realm.objects(type)
        #expect(objs.count == 200, "\(what)")
        #expect(objs.filter("\(prop) BETWEEN {\(base + 10), \(base + 12)}").count == 3, "\(what): between")
        #expect(objs.filter("\(prop) < \(base + 5)").count == 5, "\(what): <")
        #expect(objs.filter("\(prop) IN {\(base + 1), \(base + 1), \(base + 999)}").count == 1, "\(what): IN")
        #expect(objs.filter("\(prop) == \(base + 7)").count == 1, "\(what): ==")
        #expect(realm.object(ofType: type, forPrimaryKey: base + 7) != nil, "\(what): lookup")
    }

    @Test func renamingThePrimaryKey() throws {
        let dir = TempDir()
        try seed(dir)
        var config = dir.config([UpkMigRenamed.self], version: 1)
        config.migrationBlock = { m, _ in m.renameProperty(onType: "UpkMig", from: "id", to: "key") }
        let realm = try Realm(configuration: config)
        check(realm, UpkMigRenamed.self, "key", base: 0, "renamed")
        try realm.write { realm.add(UpkMigRenamed(value: ["key": 500, "other": 1, "name": "x"])) }
        #expect(realm.objects(UpkMigRenamed.self).filter("key >= 199").count == 2)
    }

    @Test func movingThePrimaryKeyToAnotherProperty() throws {
        let dir = TempDir()
        try seed(dir)
        let realm = try Realm(configuration: dir.config([UpkMigOther.self], version: 1))
        check(realm, UpkMigOther.self, "other", base: 1000, "moved")
        #expect(realm.objects(UpkMigOther.self).filter("id BETWEEN {10, 12}").count == 3)
        try realm.write { realm.add(UpkMigOther(value: ["id": 7, "other": 5, "name": "x"])) }
        #expect(realm.object(ofType: UpkMigOther.self, forPrimaryKey: 5)?.id == 7)
    }

    @Test func droppingAndRestoringThePrimaryKey() throws {
        let dir = TempDir()
        try seed(dir)
        do {
            let realm = try Realm(configuration: dir.config([UpkMigNone.self], version: 1))
            #expect(realm.objects(UpkMigNone.self).filter("id BETWEEN {10, 12}").count == 3)
            try realm.write { realm.add(UpkMigNone(value: ["id": 300, "other": 1300, "name": "x"])) }
        }
        let realm = try Realm(configuration: dir.config([UpkMigV1.self], version: 2))
        #expect(realm.objects(UpkMigV1.self).filter("id BETWEEN {10, 12}").count == 3)
        #expect(realm.objects(UpkMigV1.self).filter("id >= 199").count == 2)
        #expect(realm.object(ofType: UpkMigV1.self, forPrimaryKey: 300) != nil)
    }

    @Test func anOptionalIntPrimaryKey() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([UpkMigOpt.self]))
        try realm.write { for i in 0..<20 { realm.add(UpkMigOpt(value: ["id": i, "name": "n\(i)"])) } }
        #expect(realm.objects(UpkMigOpt.self).filter("id == nil").count == 0)
        #expect(realm.object(ofType: UpkMigOpt.self, forPrimaryKey: nil as Int?) == nil)
        try realm.write { realm.add(UpkMigOpt(value: ["id": NSNull(), "name": "nil"])) }
        #expect(realm.object(ofType: UpkMigOpt.self, forPrimaryKey: nil as Int?)?.name == "nil")
        #expect(realm.objects(UpkMigOpt.self).filter("id == nil").count == 1)
        #expect(realm.objects(UpkMigOpt.self).filter("id < 5").count == 5)
        #expect(realm.objects(UpkMigOpt.self).sorted(byKeyPath: "id").first?.name == "nil")
    }
}

/// `id` made optional, still the primary key.
final class UpkMigOptional: Object {
    override class func className() -> String { "UpkMig" }
    @Persisted(primaryKey: true) var id: Int? = nil
    @Persisted var other = 0
    @Persisted var name = ""
}

/// `id` changed to a String primary key.
final class UpkMigString: Object {
    override class func className() -> String { "UpkMig" }
    @Persisted(primaryKey: true) var id = ""
    @Persisted var other = 0
    @Persisted var name = ""
}

@Suite struct UnindexedPrimaryKeyTypeChangeTests {
    private func seed(_ dir: TempDir) throws {
        let realm = try Realm(configuration: dir.config([UpkMigV1.self]))
        try realm.write { for i in 0..<200 { realm.add(UpkMigV1(value: ["id": i, "other": 1000 + i, "name": "n\(i)"])) } }
    }

    @Test func makingTheIntPrimaryKeyOptional() throws {
        let dir = TempDir()
        try seed(dir)
        var config = dir.config([UpkMigOptional.self], version: 1)
        config.migrationBlock = { m, _ in
            m.enumerateObjects(ofType: "UpkMig") { old, new in new?["id"] = old?["id"] }
        }
        let realm = try Realm(configuration: config)
        let objs = realm.objects(UpkMigOptional.self)
        #expect(objs.filter("id BETWEEN {10, 12}").count == 3)
        #expect(objs.filter("id IN {1, 1, 5000}").count == 1)
        #expect(realm.object(ofType: UpkMigOptional.self, forPrimaryKey: 7 as Int?)?.name == "n7")
        try realm.write { realm.add(UpkMigOptional(value: ["id": NSNull(), "other": 1, "name": "nil"])) }
        #expect(objs.filter("id == nil").count == 1)
        #expect(realm.object(ofType: UpkMigOptional.self, forPrimaryKey: nil as Int?)?.name == "nil")
    }

    @Test func changingTheIntPrimaryKeyToAString() throws {
        let dir = TempDir()
        try seed(dir)
        var config = dir.config([UpkMigString.self], version: 1)
        config.migrationBlock = { m, _ in
            m.enumerateObjects(ofType: "UpkMig") { old, new in new?["id"] = "s\(old?["id"] as? Int ?? -1)" }
        }
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.object(ofType: UpkMigString.self, forPrimaryKey: "s7")?.name == "n7")
            #expect(realm.objects(UpkMigString.self).filter("id == 's9'").count == 1)
        }
        // and back to Int
        var back = dir.config([UpkMigV1.self], version: 2)
        back.migrationBlock = { m, _ in
            m.enumerateObjects(ofType: "UpkMig") { old, new in new?["id"] = Int((old?["id"] as? String ?? "s-1").dropFirst())! }
        }
        let r2 = try Realm(configuration: back)
        #expect(r2.objects(UpkMigV1.self).filter("id BETWEEN {10, 12}").count == 3)
        #expect(r2.object(ofType: UpkMigV1.self, forPrimaryKey: 7)?.name == "n7")
        try r2.write { r2.add(UpkMigV1(value: ["id": 1000, "other": 1, "name": "k"])) }
        #expect(r2.objects(UpkMigV1.self).filter("id > 150").count == 50)
    }
}
