import Foundation
import Testing
@testable import SwiftStore

// MARK: - Models
//
// Each "version" of a model is its own Swift class; they share a table by overriding
// `className()`. Every test writes the file with one version and reopens it with another.

/// v1 of "MigPerson": the starting point of most migrations.
final class MigPersonV1: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var name = ""
    @Persisted var age = 0
}

/// v1 plus three properties whose Swift initial values differ from their types' zero values.
final class MigPersonAdded: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var email = "unset"
    @Persisted var nickname: String? = "nick"
    @Persisted var ageNextYear = -1
}

/// v1 without `age`.
final class MigPersonNameOnly: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var name = ""
}

/// `age` changed from Int to String.
final class MigPersonAgeString: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var name = ""
    @Persisted var age = ""
}

/// `age` made optional.
final class MigPersonAgeOptional: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var name = ""
    @Persisted var age: Int?
}

/// Both properties optional (the v1 of the "made required" migration).
final class MigPersonOptionalV1: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var name: String?
    @Persisted var age: Int?
}

/// `name` renamed to `fullName`.
final class MigPersonRenamed: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var fullName = ""
    @Persisted var age = 0
}

/// v1 with `name` as the primary key.
final class MigPersonKeyedByName: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
}

/// v1 with `age` as the primary key.
final class MigPersonKeyedByAge: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted var name = ""
    @Persisted(primaryKey: true) var age = 0
}

/// Several differences from v1 at once: a primary key added, `age` retyped, `email` added.
final class MigPersonMismatch: Object {
    override class func className() -> String { "MigPerson" }
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = ""
    @Persisted var email = ""
}

/// A class added next to MigPerson.
final class MigPet: Object {
    @Persisted var name = ""
    @Persisted var legs = 4
}

/// A class that later versions drop from their models.
final class MigLegacy: Object {
    @Persisted var id = 0
}

final class MigOwnerV1: Object {
    override class func className() -> String { "MigOwner" }
    @Persisted var name = ""
    @Persisted var pet: MigPet?
}

final class MigOwnerV2: Object {
    override class func className() -> String { "MigOwner" }
    @Persisted var name = ""
    @Persisted var pet: MigPet?
    @Persisted var petName = ""
    @Persisted var pets: List<MigPet>
}

final class MigScoresV1: Object {
    override class func className() -> String { "MigScores" }
    @Persisted var scores: List<Int>
}

final class MigScoresV2: Object {
    override class func className() -> String { "MigScores" }
    @Persisted var scores: List<String>
}

// MARK: - Helpers

/// Carries values out of a `@Sendable` migration block.
final class MigBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}

/// Writes objects of `type` into a new file (the Realm is closed on return).
private func seed<T: Object>(_ dir: TempDir, _ type: T.Type, version: UInt64 = 0,
                             _ values: [[String: Any]], also: [ObjectBase.Type] = []) throws {
    let realm = try Realm(configuration: dir.config([type] + also, version: version))
    try realm.write {
        for v in values { realm.create(type, value: v) }
    }
}

private func migrationConfig(_ dir: TempDir, _ types: [ObjectBase.Type], version: UInt64,
                             _ block: (@Sendable (Migration, UInt64) -> Void)? = nil) -> Realm.Configuration {
    var config = dir.config(types, version: version)
    config.migrationBlock = block
    return config
}

/// The file's own schema, read through the old schema of a no-op migration to `version`.
private func fileSchema(_ dir: TempDir, _ types: [ObjectBase.Type], version: UInt64) throws -> Schema? {
    let box = MigBox<Schema?>(nil)
    _ = try Realm(configuration: migrationConfig(dir, types, version: version) { m, _ in box.value = m.oldSchema })
    return box.value
}

private func names(_ s: ObjectSchema?) -> [String] { s?.properties.map(\.name) ?? [] }

/// Expects `error` to exist and its message to contain `part`; a failure shows the whole message.
func migExpectMessage(_ error: Realm.Error?, contains part: String,
                      sourceLocation: SourceLocation = #_sourceLocation) {
    let message = error?.message ?? "(no error thrown)"
    #expect(message.contains(part), "actual message: \(message)", sourceLocation: sourceLocation)
}

// MARK: - Tests

@Suite struct MigrationTests {
    // MARK: Added properties

    @Test func addedPropertiesGetTheirTypesZeroValueNotTheSwiftInitialValue() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        let realm = try Realm(configuration: migrationConfig(dir, [MigPersonAdded.self], version: 1))
        let ann = try #require(realm.objects(MigPersonAdded.self).first)
        #expect(ann.name == "Ann")
        #expect(ann.age == 30)
        #expect(ann.email == "")
        #expect(ann.nickname == nil)
        #expect(ann.ageNextYear == 0)
        #expect(names(realm.schema["MigPerson"]) == ["name", "age", "email", "nickname", "ageNextYear"])
    }

    @Test func addedPropertySetInTheBlockFromOldValues() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 40]])
        let config = migrationConfig(dir, [MigPersonAdded.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                let age = old!["age"] as! Int
                new!["ageNextYear"] = age + 1
                new!["email"] = "\((old!["name"] as! String).lowercased())@example.com"
            }
        }
        let realm = try Realm(configuration: config)
        let people = realm.objects(MigPersonAdded.self).sorted(by: { $0.name < $1.name })
        #expect(people.map(\.ageNextYear) == [31, 41])
        #expect(people.map(\.email) == ["ann@example.com", "bob@example.com"])
    }

    @Test func newObjectSeesTheAddedPropertyAndOldObjectDoesNot() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        let seen = MigBox<[String]>([])
        let config = migrationConfig(dir, [MigPersonAdded.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                seen.value = [old!.objectSchema.properties.map(\.name).joined(separator: ","),
                              new!.objectSchema.properties.map(\.name).joined(separator: ",")]
            }
        }
        _ = try Realm(configuration: config)
        #expect(seen.value == ["name,age", "name,age,email,nickname,ageNextYear"])
    }

    // MARK: Removed properties

    @Test func removedPropertyIsGoneFromTheFile() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        let oldAge = MigBox<Int?>(nil)
        do {
            let config = migrationConfig(dir, [MigPersonNameOnly.self], version: 1) { migration, _ in
                migration.enumerateObjects(ofType: "MigPerson") { old, _ in oldAge.value = old!["age"] as? Int }
            }
            let realm = try Realm(configuration: config)
            #expect(names(realm.schema["MigPerson"]) == ["name"])
            #expect(realm.objects(MigPersonNameOnly.self).first?.name == "Ann")
        }
        #expect(oldAge.value == 30) // the removed value is still readable in the block
        // The file itself no longer has the column.
        let file = try fileSchema(dir, [MigPersonNameOnly.self], version: 2)
        #expect(names(file?["MigPerson"]) == ["name"])
        // And reopening with v1 at the same version needs a migration because `age` is back.
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([MigPersonV1.self], version: 2))
        }
        #expect(error?.code == .schemaMismatch)
        migExpectMessage(error, contains: "- Property 'MigPerson.age' has been added.")
    }

    // MARK: Changed types

    @Test func changedTypeIntToStringConvertedInTheBlock() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 7]])
        let types = MigBox<[String]>([])
        let config = migrationConfig(dir, [MigPersonAgeString.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                let oldAge = old!["age"]
                let newAge = new!["age"]
                types.value.append("\(type(of: oldAge!))/\(type(of: newAge!))=\(newAge as! String)")
                new!["age"] = String(oldAge as! Int)
            }
        }
        let realm = try Realm(configuration: config)
        // Before the block writes it, the retyped property reads as the new type's zero value.
        #expect(types.value == ["Int/String=", "Int/String="])
        let ages = realm.objects(MigPersonAgeString.self).sorted(by: { $0.name < $1.name }).map(\.age)
        #expect(ages == ["30", "7"])
        #expect(realm.schema["MigPerson"]?["age"]?.type == .string)
    }

    @Test func changedTypeWithoutBlockWritesNoValues() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        let realm = try Realm(configuration: migrationConfig(dir, [MigPersonAgeString.self], version: 1))
        #expect(realm.objects(MigPersonAgeString.self).first?.age == "")
        #expect(realm.objects(MigPersonAgeString.self).first?.name == "Ann")
    }

    // MARK: Optional and required

    @Test func madeOptionalKeepsValues() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 0]])
        let realm = try Realm(configuration: migrationConfig(dir, [MigPersonAgeOptional.self], version: 1))
        let ages = realm.objects(MigPersonAgeOptional.self).sorted(by: { $0.name < $1.name }).map(\.age)
        #expect(ages == [30, 0])
        #expect(realm.schema["MigPerson"]?["age"]?.isOptional == true)
        // The column really is nullable now.
        try realm.write { realm.objects(MigPersonAgeOptional.self).first!.age = nil }
        #expect(realm.objects(MigPersonAgeOptional.self).first?.age == nil)
    }

    @Test func madeRequiredKeepsValuesAndNullsBecomeTheDefault() throws {
        let dir = TempDir()
        try seed(dir, MigPersonOptionalV1.self, [["name": "Ann", "age": 30], ["name": NSNull(), "age": NSNull()]])
        let realm = try Realm(configuration: migrationConfig(dir, [MigPersonV1.self], version: 1))
        let people = realm.objects(MigPersonV1.self).sorted(by: { $0.age > $1.age })
        #expect(people.map(\.name) == ["Ann", ""])
        #expect(people.map(\.age) == [30, 0])
        #expect(realm.schema["MigPerson"]?["name"]?.isOptional == false)
        #expect(realm.schema["MigPerson"]?["age"]?.isOptional == false)
    }

    @Test func madeRequiredBlockSeesOldNullsAndCanReplaceThem() throws {
        let dir = TempDir()
        try seed(dir, MigPersonOptionalV1.self, [["name": "Ann", "age": NSNull()]])
        let oldAge = MigBox<String>("unset")
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                oldAge.value = old!["age"].map { "\($0)" } ?? "nil"
                new!["age"] = -1
            }
        }
        let realm = try Realm(configuration: config)
        #expect(oldAge.value == "nil")
        #expect(realm.objects(MigPersonV1.self).first?.age == -1)
    }

    // MARK: Renamed properties

    @Test func renamePropertyKeepsValues() async {
        // Runs in a child process, so that a trap in the library cannot take the other tests down
        // (a trap shows up as a SIGILL exit status).
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 40]])
            let config = migrationConfig(dir, [MigPersonRenamed.self], version: 1) { migration, _ in
                migration.renameProperty(onType: "MigPerson", from: "name", to: "fullName")
            }
            do {
                let realm = try Realm(configuration: config)
                let people = realm.objects(MigPersonRenamed.self).sorted(by: { $0.age < $1.age })
                #expect(people.map(\.fullName) == ["Ann", "Bob"], "\(people.map(\.fullName))")
                #expect(people.map(\.age) == [30, 40], "\(people.map(\.age))")
                #expect(names(realm.schema["MigPerson"]) == ["fullName", "age"])
            }
            let file = try fileSchema(dir, [MigPersonRenamed.self], version: 2)
            #expect(Set(names(file?["MigPerson"])) == ["fullName", "age"], "\(names(file?["MigPerson"]))")
        }
    }

    @Test func renamedPropertyReadsTheOldNameOnTheOldObject() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
            let seen = MigBox<[String]>([])
            let config = migrationConfig(dir, [MigPersonRenamed.self], version: 1) { migration, _ in
                migration.renameProperty(onType: "MigPerson", from: "name", to: "fullName")
                migration.enumerateObjects(ofType: "MigPerson") { old, new in
                    seen.value = [old!["name"] as? String ?? "nil", new!["fullName"] as? String ?? "nil"]
                }
            }
            _ = try Realm(configuration: config)
            #expect(seen.value == ["Ann", "Ann"], "\(seen.value)")
        }
    }

    // MARK: Primary keys

    @Test func addedPrimaryKey() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 40]])
        let realm = try Realm(configuration: migrationConfig(dir, [MigPersonKeyedByName.self], version: 1))
        #expect(realm.schema["MigPerson"]?.primaryKeyProperty?.name == "name")
        #expect(realm.object(ofType: MigPersonKeyedByName.self, forPrimaryKey: "Bob")?.age == 40)
        #expect(realm.object(ofType: MigPersonKeyedByName.self, forPrimaryKey: "Cat") == nil)
    }

    @Test func removedPrimaryKeyAllowsDuplicates() throws {
        let dir = TempDir()
        try seed(dir, MigPersonKeyedByName.self, [["name": "Ann", "age": 30]])
        let realm = try Realm(configuration: migrationConfig(dir, [MigPersonV1.self], version: 1))
        #expect(realm.schema["MigPerson"]?.primaryKeyProperty == nil)
        try realm.write { realm.create(MigPersonV1.self, value: ["name": "Ann", "age": 31]) }
        #expect(realm.objects(MigPersonV1.self).map(\.age).sorted() == [30, 31])
    }

    @Test func changedPrimaryKey() throws {
        let dir = TempDir()
        try seed(dir, MigPersonKeyedByName.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 40]])
        let realm = try Realm(configuration: migrationConfig(dir, [MigPersonKeyedByAge.self], version: 1))
        #expect(realm.schema["MigPerson"]?.primaryKeyProperty?.name == "age")
        #expect(realm.schema["MigPerson"]?["name"]?.isPrimary == false)
        #expect(realm.object(ofType: MigPersonKeyedByAge.self, forPrimaryKey: 40)?.name == "Bob")
        // `name` is no longer unique.
        try realm.write { realm.create(MigPersonKeyedByAge.self, value: ["name": "Ann", "age": 50]) }
        #expect(realm.objects(MigPersonKeyedByAge.self).count == 3)
    }

    @Test func duplicatePrimaryKeysAfterMigrationThrowAndLeaveTheFileAtTheOldVersion() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Ann", "age": 31]])
        let ran = MigBox(false)
        let config = migrationConfig(dir, [MigPersonKeyedByName.self], version: 1) { _, _ in ran.value = true }
        do {
            _ = try Realm(configuration: config)
            Issue.record("expected the migration to fail")
        } catch let error as Realm.Error {
            migExpectMessage(error, contains: "Primary key property 'MigPerson.name' has duplicate values after migration.")
        }
        #expect(ran.value)
        #expect(try schemaVersionAtURL(dir.file()) == 0)
        let realm = try Realm(configuration: dir.config([MigPersonV1.self]))
        #expect(realm.objects(MigPersonV1.self).map(\.age).sorted() == [30, 31])
    }

    @Test func blockCanFixDuplicatePrimaryKeys() async {
        // RealmSwift lets a migration write primary keys (RLMMigration disables them while the
        // block runs, then checks uniqueness). Run in a child process: a trap must not take
        // the other tests down.
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Ann", "age": 31]])
            let config = migrationConfig(dir, [MigPersonKeyedByName.self], version: 1) { migration, _ in
                migration.enumerateObjects(ofType: "MigPerson") { old, new in
                    new!["name"] = "\(old!["name"] as! String)-\(old!["age"] as! Int)"
                }
            }
            let realm = try Realm(configuration: config)
            #expect(realm.object(ofType: MigPersonKeyedByName.self, forPrimaryKey: "Ann-31")?.age == 31)
            #expect(realm.object(ofType: MigPersonKeyedByName.self, forPrimaryKey: "Ann-30")?.age == 30)
        }
    }

    @Test func blockCanRewriteAnExistingPrimaryKey() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            try seed(dir, MigPersonKeyedByName.self, [["name": "ann", "age": 30]])
            let config = migrationConfig(dir, [MigPersonKeyedByName.self], version: 1) { migration, _ in
                migration.enumerateObjects(ofType: "MigPerson") { old, new in
                    new!["name"] = (old!["name"] as! String).uppercased()
                }
            }
            let realm = try Realm(configuration: config)
            #expect(realm.object(ofType: MigPersonKeyedByName.self, forPrimaryKey: "ANN")?.age == 30)
            #expect(realm.object(ofType: MigPersonKeyedByName.self, forPrimaryKey: "ann") == nil)
        }
    }

    // MARK: Classes

    @Test func addedClassNeedsNoVersionBump() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        let ran = MigBox(false)
        let config = migrationConfig(dir, [MigPersonV1.self, MigPet.self], version: 0) { _, _ in ran.value = true }
        let realm = try Realm(configuration: config)
        #expect(!ran.value)
        #expect(realm.objects(MigPersonV1.self).first?.name == "Ann")
        #expect(realm.objects(MigPet.self).isEmpty)
        try realm.write { realm.create(MigPet.self, value: ["name": "Rex"]) }
        #expect(realm.objects(MigPet.self).first?.legs == 4)
        #expect(try schemaVersionAtURL(dir.file()) == 0)
    }

    @Test func classDroppedFromTheModelsStaysInTheFile() throws {
        let dir = TempDir()
        try seed(dir, MigLegacy.self, [["id": 7]], also: [MigPersonV1.self])
        do {
            // No migration needed: the file merely has an extra class.
            let realm = try Realm(configuration: dir.config([MigPersonV1.self]))
            #expect(realm.schema["MigLegacy"] == nil)
        }
        let file = try fileSchema(dir, [MigPersonV1.self], version: 1)
        #expect(names(file?["MigLegacy"]) == ["id"])
    }

    // MARK: Migration API

    @Test func createMakesNewObjects() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [])
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            migration.create("MigPerson", value: ["name": "Ann", "age": 30])
            migration.create("MigPerson", value: ["Bob", 40])
            migration.create("MigPerson")
        }
        let realm = try Realm(configuration: config)
        let people = realm.objects(MigPersonV1.self)
        #expect(people.map(\.name) == ["Ann", "Bob", ""])
        #expect(people.map(\.age) == [30, 40, 0])
    }

    @Test func createUsesTheModelsInitialValuesForMissingProperties() throws {
        // RealmSwift fills properties missing from the value with the model class's defaults,
        // in migrations as in `Realm.create`.
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [])
        let config = migrationConfig(dir, [MigPersonAdded.self], version: 1) { migration, _ in
            migration.create("MigPerson", value: ["name": "Ann"])
        }
        let realm = try Realm(configuration: config)
        let ann = try #require(realm.objects(MigPersonAdded.self).first)
        #expect(ann.email == "unset")
        #expect(ann.nickname == "nick")
        #expect(ann.ageNextYear == -1)
    }

    @Test func createReturnsAWritableMigrationObject() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [])
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            let o = migration.create("MigPerson", value: ["name": "Ann"])
            o["age"] = 99
        }
        let realm = try Realm(configuration: config)
        #expect(realm.objects(MigPersonV1.self).first?.age == 99)
    }

    @Test func deleteRemovesObjects() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 40]])
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                if old!["name"] as! String == "Ann" { migration.delete(new!) }
            }
        }
        let realm = try Realm(configuration: config)
        #expect(realm.objects(MigPersonV1.self).map(\.name) == ["Bob"])
    }

    @Test func enumerateSkipsDeletedObjectsAndObjectsCreatedInTheMigration() throws {
        // RealmSwift's testEnumerateObjectsAfterDeleteInsertObjects: a second enumeration visits
        // the old objects whose new object still exists, never the ones created meanwhile.
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "1"], ["name": "2"], ["name": "3"]])
        let seen = MigBox<[String]>([])
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                if old!["name"] as! String == "2" {
                    migration.delete(new!)
                    migration.create("MigPerson", value: ["name": "A"])
                }
            }
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                seen.value.append("\(old!["name"] as! String)/\(new!["name"] as! String)")
            }
        }
        let realm = try Realm(configuration: config)
        #expect(seen.value.sorted() == ["1/1", "3/3"])
        #expect(realm.objects(MigPersonV1.self).map(\.name).sorted() == ["1", "3", "A"])
    }

    @Test func deleteDataRemovesEveryObjectOfAModelClass() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 40]])
        let results = MigBox<[Bool]>([])
        let count = MigBox(-1)
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            results.value.append(migration.deleteData(forType: "MigPerson"))
            results.value.append(migration.deleteData(forType: "NoSuchClass"))
            var n = 0
            migration.enumerateObjects(ofType: "MigPerson") { _, _ in n += 1 }
            count.value = n
            migration.create("MigPerson", value: ["name": "Cat", "age": 5])
        }
        let realm = try Realm(configuration: config)
        #expect(results.value == [true, false])
        #expect(count.value == 0)
        #expect(realm.objects(MigPersonV1.self).map(\.name) == ["Cat"])
    }

    @Test func deleteDataOfAClassDroppedFromTheModelsRemovesItsTable() async {
        // Runs in a child process, so that a trap in the library cannot take the other tests down
        // (a trap shows up as a SIGILL exit status).
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            try seed(dir, MigLegacy.self, [["id": 1]], also: [MigPersonV1.self])
            let deleted = MigBox<Bool?>(nil)
            let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
                deleted.value = migration.deleteData(forType: "MigLegacy")
            }
            _ = try Realm(configuration: config)
            #expect(deleted.value == true)
            let file = try fileSchema(dir, [MigPersonV1.self], version: 2)
            #expect(file?["MigLegacy"] == nil)
            #expect(file?["MigPerson"] != nil)
        }
    }

    @Test func enumerateSeesOldAndNewObjects() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30], ["name": "Bob", "age": 40]])
        let seen = MigBox<[String]>([])
        let config = migrationConfig(dir, [MigPersonAdded.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                seen.value.append("\(old!["name"] as! String):\(old!["age"] as! Int)->"
                                  + "\(new!["name"] as! String):\(new!["age"] as! Int):\(new!["email"] as! String)")
                #expect(old!.objectSchema.className == "MigPerson")
                #expect(new!.objectSchema.className == "MigPerson")
            }
            migration.enumerateObjects(ofType: "NoSuchClass") { _, _ in seen.value.append("no such class") }
        }
        _ = try Realm(configuration: config)
        #expect(seen.value.sorted() == ["Ann:30->Ann:30:", "Bob:40->Bob:40:"])
    }

    @Test func oldObjectKeepsItsValuesAfterTheNewObjectChanges() throws {
        // In RealmSwift the old objects come from the file's pre-migration version.
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        let seen = MigBox<[String]>([])
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigPerson") { old, new in
                new!["name"] = "Changed"
                new!["age"] = 1
                seen.value = [old!["name"] as! String, "\(old!["age"] as! Int)"]
            }
        }
        let realm = try Realm(configuration: config)
        #expect(seen.value == ["Ann", "30"])
        #expect(realm.objects(MigPersonV1.self).first?.name == "Changed")
    }

    @Test func enumerateOfAClassOnlyInTheFileGivesNilNewObjects() throws {
        let dir = TempDir()
        try seed(dir, MigLegacy.self, [["id": 1], ["id": 2]], also: [MigPersonV1.self])
        let seen = MigBox<[String]>([])
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigLegacy") { old, new in
                seen.value.append("\(old!["id"] as! Int):\(new == nil)")
            }
        }
        _ = try Realm(configuration: config)
        #expect(seen.value.sorted() == ["1:true", "2:true"])
    }

    @Test func linksInMigrationObjects() throws {
        let dir = TempDir()
        do {
            let realm = try Realm(configuration: dir.config([MigOwnerV1.self, MigPet.self]))
            try realm.write {
                realm.create(MigOwnerV1.self, value: ["name": "Ann", "pet": ["name": "Rex", "legs": 3]])
            }
        }
        let config = migrationConfig(dir, [MigOwnerV2.self, MigPet.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigOwner") { old, new in
                let oldPet = old!["pet"] as? MigrationObject
                new!["petName"] = oldPet?["name"] as? String ?? "none"
                let newPet = new!["pet"] as! MigrationObject
                let extra = migration.create("MigPet", value: ["name": "Tom"])
                new!.dynamicList("pets").append(newPet)
                new!.dynamicList("pets").append(extra)
            }
        }
        let realm = try Realm(configuration: config)
        let ann = try #require(realm.objects(MigOwnerV2.self).first)
        #expect(ann.petName == "Rex")
        #expect(ann.pet?.legs == 3)
        #expect(ann.pets.map(\.name) == ["Rex", "Tom"])
        #expect(realm.objects(MigPet.self).count == 2)
    }

    @Test func oldAndNewSchemaContents() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann"]], also: [MigLegacy.self])
        let seen = MigBox<[String]>([])
        let config = migrationConfig(dir, [MigPersonAgeString.self, MigPet.self], version: 1) { migration, _ in
            let old = migration.oldSchema, new = migration.newSchema
            seen.value = [
                old.objectSchema.map(\.className).sorted().joined(separator: ","),
                new.objectSchema.map(\.className).sorted().joined(separator: ","),
                names(old["MigPerson"]).joined(separator: ","),
                names(new["MigPerson"]).joined(separator: ","),
                "\(old["MigPerson"]!["age"]!.type)", "\(new["MigPerson"]!["age"]!.type)",
                "\(old["MigPet"] == nil)", "\(new["MigLegacy"] == nil)",
            ]
        }
        _ = try Realm(configuration: config)
        #expect(seen.value == ["MigLegacy,MigPerson", "MigPerson,MigPet", "name,age", "name,age",
                               "int", "string", "true", "true"])
    }

    @Test func oldSchemaEqualsTheModelSchemaTheFileWasWrittenWith() throws {
        // RealmSwift's testMigrationObjectSchema.
        let dir = TempDir()
        let written: [Property]
        do {
            let realm = try Realm(configuration: dir.config([MigPersonKeyedByName.self]))
            written = realm.schema["MigPerson"]!.properties
        }
        let old = MigBox<[Property]>([])
        _ = try Realm(configuration: migrationConfig(dir, [MigPersonKeyedByName.self], version: 1) { m, _ in
            old.value = m.oldSchema["MigPerson"]!.properties
        })
        #expect(old.value == written)
    }

    @Test func blockReceivesTheOldSchemaVersion() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, version: 3, [["name": "Ann"]])
        let versions = MigBox<[UInt64]>([])
        _ = try Realm(configuration: migrationConfig(dir, [MigPersonV1.self], version: 7) { _, old in
            versions.value.append(old)
        })
        #expect(versions.value == [3])
        #expect(try schemaVersionAtURL(dir.file()) == 7)
    }

    @Test func blockRunsOnVersionBumpWithoutSchemaChangeAndNotWhenTheVersionIsTheSame() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann"]])
        let runs = MigBox(0)
        let config = migrationConfig(dir, [MigPersonV1.self], version: 1) { _, _ in runs.value += 1 }
        do { _ = try Realm(configuration: config) }
        do { _ = try Realm(configuration: config) }
        #expect(runs.value == 1)
    }

    @Test func newFileDoesNotRunTheBlock() throws {
        let dir = TempDir()
        let ran = MigBox(false)
        _ = try Realm(configuration: migrationConfig(dir, [MigPersonV1.self], version: 5) { _, _ in ran.value = true })
        #expect(!ran.value)
        #expect(try schemaVersionAtURL(dir.file()) == 5)
    }

    @Test func primitiveListsAreTypedInMigrationObjects() throws {
        // RealmSwift's testCollectionAccess: `oldObj["arrayInt"] as! List<Int>`.
        let dir = TempDir()
        try seed(dir, MigScoresV1.self, [["scores": [1, 2, 3]]])
        let seen = MigBox<[Int]?>(nil)
        _ = try Realm(configuration: migrationConfig(dir, [MigScoresV1.self], version: 1) { migration, _ in
            migration.enumerateObjects(ofType: "MigScores") { old, _ in
                seen.value = (old!["scores"] as? List<Int>).map { Array($0) }
            }
        })
        #expect(seen.value == [1, 2, 3])
    }

    // MARK: Failures

    @Test func schemaChangeWithoutVersionBumpThrowsSchemaMismatchListingEachDifference() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        let ran = MigBox(false)
        let config = migrationConfig(dir, [MigPersonMismatch.self], version: 0) { _, _ in ran.value = true }
        do {
            _ = try Realm(configuration: config)
            Issue.record("expected schemaMismatch")
        } catch let error as Realm.Error {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.hasPrefix("Migration is required due to the following errors:\n- "))
            migExpectMessage(error, contains: "\n- Property 'MigPerson.email' has been added.")
            migExpectMessage(error, contains: "\n- Property 'MigPerson.age' has been changed from 'int' to 'string'.")
            migExpectMessage(error, contains: "\n- Primary Key for class 'MigPerson' has been added.")
            #expect(error.fileURL?.path == dir.file().path)
        }
        #expect(!ran.value)
    }

    @Test func mismatchMessageForRemovedProperty() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [])
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([MigPersonNameOnly.self]))
        }
        #expect(error?.code == .schemaMismatch)
        migExpectMessage(error, contains: "- Property 'MigPerson.age' has been removed.")
    }

    @Test func mismatchMessageForNullabilityAndPrimaryKeyChanges() throws {
        let dir = TempDir()
        try seed(dir, MigPersonKeyedByName.self, [])
        do {
            _ = try Realm(configuration: dir.config([MigPersonKeyedByAge.self]))
            Issue.record("expected schemaMismatch")
        } catch let error as Realm.Error {
            #expect(error.code == .schemaMismatch)
            migExpectMessage(error, contains: "- Primary Key for class 'MigPerson' has changed from 'name' to 'age'.")
        }
        let dir2 = TempDir()
        try seed(dir2, MigPersonV1.self, [])
        let optional = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir2.config([MigPersonAgeOptional.self]))
        }
        migExpectMessage(optional, contains: "- Property 'MigPerson.age' has been made optional.")
        let dir3 = TempDir()
        try seed(dir3, MigPersonOptionalV1.self, [])
        let required = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir3.config([MigPersonV1.self]))
        }
        migExpectMessage(required, contains: "- Property 'MigPerson.name' has been made required.")
        migExpectMessage(required, contains: "- Property 'MigPerson.age' has been made required.")
        let dir4 = TempDir()
        try seed(dir4, MigPersonKeyedByName.self, [])
        let removed = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir4.config([MigPersonV1.self]))
        }
        migExpectMessage(removed, contains: "- Primary Key for class 'MigPerson' has been removed.")
    }

    @Test func mismatchMessageNamesCollectionTypesAsRealmCoreDoes() throws {
        // realm-core's Property::type_string(): "array<int>", "array<string>".
        let dir = TempDir()
        try seed(dir, MigScoresV1.self, [])
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([MigScoresV2.self]))
        }
        #expect(error?.code == .schemaMismatch)
        migExpectMessage(error, contains:
            "- Property 'MigScores.scores' has been changed from 'array<int>' to 'array<string>'.")
    }

    @Test func lowerSchemaVersionThanTheFilesThrows() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, version: 2, [["name": "Ann"]])
        do {
            _ = try Realm(configuration: dir.config([MigPersonV1.self], version: 1))
            Issue.record("expected an error")
        } catch let error as Realm.Error {
            // realm-core's InvalidSchemaVersion, which RealmSwift reports as RLMErrorFail.
            #expect(error.code == .fail)
            #expect(error.message == "Provided schema version 1 is less than last set version 2.")
        }
        #expect(try schemaVersionAtURL(dir.file()) == 2)
    }

    @Test func deleteRealmIfMigrationNeededDeletesAndReopensEmpty() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]], also: [MigPet.self])
        let ran = MigBox(false)
        var config = migrationConfig(dir, [MigPersonNameOnly.self, MigPet.self], version: 0) { _, _ in ran.value = true }
        config.deleteRealmIfMigrationNeeded = true
        let realm = try Realm(configuration: config)
        #expect(!ran.value)
        #expect(realm.isEmpty)
        #expect(realm.objects(MigPersonNameOnly.self).isEmpty)
        try realm.write { realm.create(MigPersonNameOnly.self, value: ["name": "Bob"]) }
        #expect(realm.objects(MigPersonNameOnly.self).count == 1)
    }

    @Test func deleteRealmIfMigrationNeededKeepsDataWhenNoMigrationIsNeeded() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, [["name": "Ann", "age": 30]])
        var config = dir.config([MigPersonV1.self, MigPet.self])
        config.deleteRealmIfMigrationNeeded = true
        let realm = try Realm(configuration: config)
        #expect(realm.objects(MigPersonV1.self).first?.name == "Ann")
    }

    // MARK: schemaVersionAtURL

    @Test func schemaVersionAtURLReturnsTheFilesVersion() throws {
        let dir = TempDir()
        try seed(dir, MigPersonV1.self, version: 0, [])
        #expect(try schemaVersionAtURL(dir.file()) == 0)
        let dir2 = TempDir()
        try seed(dir2, MigPersonV1.self, version: 42, [])
        #expect(try schemaVersionAtURL(dir2.file()) == 42)
        _ = try Realm(configuration: dir2.config([MigPersonV1.self], version: 43))
        #expect(try schemaVersionAtURL(dir2.file()) == 43)
    }

    @Test func schemaVersionAtURLOfAMissingFileThrows() throws {
        // RealmSwift 10.54: .invalidDatabase, "Realm at path '…' has not been initialized."
        let dir = TempDir()
        let url = dir.file("missing.realm")
        let error = expectSchemaVersionError(url, .invalidDatabase)
        #expect(error?.message == "Realm at path '\(url.path)' has not been initialized.")
    }

    @Test func schemaVersionAtURLOfADirectoryIsAFileAccessError() throws {
        // A path that exists but cannot be read as a file: RealmSwift reports a file access
        // error, not a damaged database.
        let dir = TempDir()
        let url = dir.file("a-directory.realm")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        expectSchemaVersionError(url, .fileAccess)
    }

    @Test func schemaVersionAtURLOfAFileThatIsNoDatabaseThrowsInvalidDatabase() throws {
        let dir = TempDir()
        let url = dir.file("not-a-database.realm")
        try Data(repeating: 0x41, count: 8192).write(to: url)
        expectSchemaVersionError(url, .invalidDatabase)
    }

    /// Expects `schemaVersionAtURL(url)` to throw a `Realm.Error` with `code` naming `url`.
    @discardableResult
    private func expectSchemaVersionError(_ url: URL, _ code: Realm.Error.Code,
                                          sourceLocation: SourceLocation = #_sourceLocation) -> Realm.Error? {
        do {
            _ = try schemaVersionAtURL(url)
            Issue.record("expected an error", sourceLocation: sourceLocation)
        } catch let error as Realm.Error {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.fileURL?.path == url.path, sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected a Realm.Error, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}
