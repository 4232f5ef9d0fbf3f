import Foundation
import Testing
@testable import SwiftStore

// MARK: - Models

class SchBase: Object {
    @Persisted var baseId = 0
    @Persisted var baseName = ""
}

final class SchDerived: SchBase {
    @Persisted var zeta = 0
    @Persisted var alpha = ""
    @Persisted var mid = 0.0
}

/// One property of each shape.
final class SchTypes: Object {
    @Persisted(primaryKey: true) var id: ObjectId
    @Persisted(indexed: true) var indexedString = ""
    @Persisted var int = 0
    @Persisted var int8: Int8 = 0
    @Persisted var optInt: Int?
    @Persisted var bool = false
    @Persisted var float: Float = 0
    @Persisted var double = 0.0
    @Persisted var string = ""
    @Persisted var optString: String?
    @Persisted var data = Data()
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var decimal = Decimal128(value: 0)
    @Persisted var uuid = UUID()
    @Persisted var any: AnyRealmValue
    @Persisted var mood = Mood.calm
    @Persisted var level: Level?
    @Persisted var temperature = Celsius(degrees: 0)
    @Persisted var link: SchTarget?
    @Persisted var embedded: SchEmbedded?
    @Persisted var list: List<SchTarget>
    @Persisted var intList: List<Int>
    @Persisted var optStringList: List<String?>
    @Persisted var stringSet: MutableSet<String>
    @Persisted var linkSet: MutableSet<SchTarget>
    @Persisted var intMap: Map<String, Int>
    @Persisted var linkMap: Map<String, SchTarget?>
    @Persisted var embeddedList: List<SchEmbedded>
}

final class SchTarget: Object {
    @Persisted var value = 0
    @Persisted(originProperty: "list") var parents: LinkingObjects<SchTypes>
}

final class SchEmbedded: EmbeddedObject {
    @Persisted var note = ""
}

/// The legacy class funcs on a @Persisted model.
final class SchLegacy: Object {
    @Persisted var code = ""
    @Persisted var rank = 0
    @Persisted var scratch = ""
    override class func primaryKey() -> String? { "code" }
    override class func indexedProperties() -> [String] { ["rank"] }
    override class func ignoredProperties() -> [String] { ["scratch"] }
}

/// `firstName` is stored as `first_name`.
final class SchMapped: Object {
    @Persisted var firstName = ""
    @Persisted var age = 0
    override class func propertiesMapping() -> [String: String] { ["firstName": "first_name"] }
}

/// The same table seen without the mapping: its property has the stored name.
final class SchMappedRaw: Object {
    override class func className() -> String { "SchMapped" }
    @Persisted var first_name = ""
    @Persisted var age = 0
}

final class SchRenamedClass: Object {
    override class func className() -> String { "SchCustomTable" }
    @Persisted var v = 0
}

final class SchSimple: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name: String?
    @Persisted var tags: List<String>
    @Persisted var link: SchSimpleTarget?
}

final class SchSimpleTarget: Object {
    @Persisted var v = 0
}

/// The same properties as SchSimpleTarget, under another Swift name.
final class SchSimpleTargetTwin: Object {
    override class func className() -> String { "SchSimpleTarget" }
    @Persisted var v = 0
}

// Invalid schemas.
final class SchLinker: Object { @Persisted var target: SchLinkTarget? }
final class SchLinkTarget: Object { @Persisted var v = 0 }
final class SchBadOrigin: Object { @Persisted(originProperty: "nope") var parents: LinkingObjects<SchBadOriginSource> }
final class SchBadOriginSource: Object { @Persisted var child: SchBadOrigin? }
final class SchDoubleKey: Object {
    @Persisted var d = 0.0
    override class func primaryKey() -> String? { "d" }
}
final class SchMissingKey: Object {
    @Persisted var v = 0
    override class func primaryKey() -> String? { "nope" }
}
final class SchBadIndex: Object {
    @Persisted var d = 0.0
    override class func indexedProperties() -> [String] { ["d"] }
}

private let schTypesModels: [ObjectBase.Type] = [SchTypes.self, SchTarget.self, SchEmbedded.self]

// MARK: - Tests

@Suite struct SchemaTests {
    private func schema(_ types: [ObjectBase.Type], _ dir: TempDir = TempDir()) throws -> Schema {
        try Realm(configuration: dir.config(types)).schema
    }

    // MARK: Discovery

    @Test func propertyNamesInDeclarationOrder() throws {
        let s = try #require(try schema(schTypesModels)["SchTypes"])
        #expect(s.properties.map(\.name) == [
            "id", "indexedString", "int", "int8", "optInt", "bool", "float", "double", "string", "optString",
            "data", "date", "decimal", "uuid", "any", "mood", "level", "temperature", "link", "embedded",
            "list", "intList", "optStringList", "stringSet", "linkSet", "intMap", "linkMap", "embeddedList",
        ])
        #expect(s.className == "SchTypes")
        #expect(s.objectClass == SchTypes.self)
    }

    @Test func superclassPropertiesComeFirst() throws {
        let s = try schema([SchDerived.self])
        #expect(s["SchDerived"]?.properties.map(\.name) == ["baseId", "baseName", "zeta", "alpha", "mid"])
        #expect(s.objectSchema.map(\.className) == ["SchDerived"])
    }

    @Test func unmanagedObjectSchemaMatchesTheRealms() throws {
        let s = try schema(schTypesModels)
        #expect(SchTypes().objectSchema == s["SchTypes"]!)
        #expect(SchTypes().objectSchema.properties.count == 28)
    }

    struct Shape: Equatable, CustomStringConvertible {
        var type: PropertyType
        var optional = false
        var array = false
        var set = false
        var map = false
        var target: String?
        var description: String {
            "\(type) opt=\(optional) array=\(array) set=\(set) map=\(map) target=\(target ?? "nil")"
        }
    }

    @Test(arguments: [
        ("id", Shape(type: .objectId)),
        ("indexedString", Shape(type: .string)),
        ("int", Shape(type: .int)),
        ("int8", Shape(type: .int)),
        ("optInt", Shape(type: .int, optional: true)),
        ("bool", Shape(type: .bool)),
        ("float", Shape(type: .float)),
        ("double", Shape(type: .double)),
        ("string", Shape(type: .string)),
        ("optString", Shape(type: .string, optional: true)),
        ("data", Shape(type: .data)),
        ("date", Shape(type: .date)),
        ("decimal", Shape(type: .decimal128)),
        ("uuid", Shape(type: .UUID)),
        ("any", Shape(type: .any)),
        ("mood", Shape(type: .string)),
        ("level", Shape(type: .int, optional: true)),
        ("temperature", Shape(type: .double)),
        ("link", Shape(type: .object, optional: true, target: "SchTarget")),
        ("embedded", Shape(type: .object, optional: true, target: "SchEmbedded")),
        ("list", Shape(type: .object, array: true, target: "SchTarget")),
        ("intList", Shape(type: .int, array: true)),
        ("optStringList", Shape(type: .string, optional: true, array: true)),
        ("stringSet", Shape(type: .string, set: true)),
        ("linkSet", Shape(type: .object, set: true, target: "SchTarget")),
        ("intMap", Shape(type: .int, map: true)),
        ("linkMap", Shape(type: .object, optional: true, map: true, target: "SchTarget")),
        ("embeddedList", Shape(type: .object, array: true, target: "SchEmbedded")),
    ])
    func propertyShape(_ name: String, _ expected: Shape) throws {
        let p = try #require(SchTypes().objectSchema[name])
        let actual = Shape(type: p.type, optional: p.isOptional, array: p.isArray, set: p.isSet, map: p.isMap,
                           target: p.objectClassName)
        #expect(actual == expected)
        #expect(p.name == name)
        #expect(p.columnName == name)
        #expect(p.linkOriginPropertyName == nil)
    }

    @Test func primaryKeyAndIndexes() throws {
        let s = try #require(try schema(schTypesModels)["SchTypes"])
        let pk = try #require(s.primaryKeyProperty)
        #expect(pk.name == "id")
        #expect(pk.isPrimary)
        #expect(pk.isIndexed) // RealmSwift marks primary keys indexed
        #expect(s["indexedString"]?.isIndexed == true)
        #expect(s["indexedString"]?.isPrimary == false)
        #expect(s["int"]?.isIndexed == false)
        #expect(s.properties.filter(\.isPrimary).map(\.name) == ["id"])
        #expect(s.properties.filter(\.isIndexed).map(\.name) == ["id", "indexedString"])
    }

    @Test func optionsSurviveAnInitThatSetsTheProperties() throws {
        // The declared options are kept when the class's own init() assigns the properties.
        let s = try #require(try schema([SchInitSets.self])["SchInitSets"])
        #expect(s.primaryKeyProperty?.name == "id")
        #expect(s["tag"]?.isIndexed == true)
        #expect(s["plain"]?.isIndexed == false)
        let o = SchInitSets()
        #expect(o.id == "made in init" && o.tag == "t" && o.plain == 7)
        o.id = "changed"
        #expect(o.objectSchema.primaryKeyProperty?.name == "id")
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([SchInitSets.self]))
        try realm.write { realm.add(o) }
        #expect(realm.object(ofType: SchInitSets.self, forPrimaryKey: "changed")?.plain == 7)
    }

    @Test func embeddedObjectSchemas() throws {
        let s = try schema(schTypesModels)
        #expect(s["SchEmbedded"]?.isEmbedded == true)
        #expect(s["SchEmbedded"]?.primaryKeyProperty == nil)
        #expect(s["SchTypes"]?.isEmbedded == false)
        #expect(s["SchTarget"]?.isEmbedded == false)
        #expect(s["SchTypes"]?.isAsymmetric == false)
        #expect(s.objectSchema.map(\.className).sorted() == ["SchEmbedded", "SchTarget", "SchTypes"])
    }

    @Test func linkingObjectsAreComputedPropertiesNotListedInProperties() throws {
        // RLMObjectSchema keeps LinkingObjects in `computedProperties`; RealmSwift's
        // `ObjectSchema.properties` lists only persisted ones, while the subscript finds both.
        let s = try #require(try schema(schTypesModels)["SchTarget"])
        #expect(s.properties.map(\.name) == ["value"])
        let p = try #require(s["parents"])
        #expect(p.type == .linkingObjects)
        #expect(p.objectClassName == "SchTypes")
        #expect(p.linkOriginPropertyName == "list")
        #expect(p.isOptional == false)
        #expect(p.isPrimary == false)
    }

    @Test func schemaSubscriptOfAnUnknownName() throws {
        let s = try schema(schTypesModels)
        #expect(s["NoSuchClass"] == nil)
        #expect(s["SchTypes"]?["noSuchProperty"] == nil)
    }

    // MARK: Legacy class funcs

    @Test func legacyPrimaryKeyIndexedAndIgnoredProperties() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([SchLegacy.self]))
        let s = try #require(realm.schema["SchLegacy"])
        #expect(s.properties.map(\.name) == ["code", "rank"])
        #expect(s["scratch"] == nil)
        #expect(s.primaryKeyProperty?.name == "code")
        #expect(s["code"]?.isPrimary == true)
        #expect(s["rank"]?.isIndexed == true)
        #expect(s["rank"]?.isPrimary == false)
        try realm.write {
            realm.create(SchLegacy.self, value: ["code": "a", "rank": 1])
            realm.create(SchLegacy.self, value: ["code": "b", "rank": 2])
        }
        #expect(realm.object(ofType: SchLegacy.self, forPrimaryKey: "b")?.rank == 2)
        try realm.write { realm.create(SchLegacy.self, value: ["code": "b", "rank": 3], update: .modified) }
        #expect(realm.objects(SchLegacy.self).count == 2)
        #expect(realm.object(ofType: SchLegacy.self, forPrimaryKey: "b")?.rank == 3)
    }

    @Test func propertiesMappingStoresTheColumnName() throws {
        let dir = TempDir()
        do {
            let realm = try Realm(configuration: dir.config([SchMapped.self]))
            let s = try #require(realm.schema["SchMapped"])
            #expect(s.properties.map(\.name) == ["firstName", "age"])
            #expect(s.properties.map(\.columnName) == ["first_name", "age"])
            #expect(s["firstName"]?.columnName == "first_name")
            #expect(s["first_name"] == nil)
            try realm.write { realm.create(SchMapped.self, value: ["firstName": "Ann", "age": 30]) }
            let ann = try #require(realm.objects(SchMapped.self).first)
            #expect(ann.firstName == "Ann")
            #expect(ann.value(forKey: "firstName") as? String == "Ann")
            #expect(ann["firstName"] as? String == "Ann")
            try realm.write { ann.setValue("Bea", forKey: "firstName") }
            #expect(ann.firstName == "Bea")
        }
        // Reopened with a model that names the property after the stored column: no migration
        // is needed and the value is there.
        let raw = try Realm(configuration: dir.config([SchMappedRaw.self]))
        #expect(raw.schema["SchMapped"]?.properties.map(\.name) == ["first_name", "age"])
        #expect(raw.objects(SchMappedRaw.self).first?.first_name == "Bea")
        #expect(raw.objects(SchMappedRaw.self).first?.age == 30)
    }

    @Test func mappedFileReopenedWithTheMappingKeepsData() throws {
        let dir = TempDir()
        do {
            let realm = try Realm(configuration: dir.config([SchMappedRaw.self]))
            try realm.write { realm.create(SchMappedRaw.self, value: ["first_name": "Cy", "age": 5]) }
        }
        let realm = try Realm(configuration: dir.config([SchMapped.self]))
        #expect(realm.objects(SchMapped.self).first?.firstName == "Cy")
    }

    @Test func classNameNamesTheTable() throws {
        let dir = TempDir()
        do {
            let realm = try Realm(configuration: dir.config([SchRenamedClass.self]))
            #expect(realm.schema["SchCustomTable"]?.objectClass == SchRenamedClass.self)
            #expect(realm.schema["SchRenamedClass"] == nil)
            #expect(SchRenamedClass().objectSchema.className == "SchCustomTable")
            try realm.write { realm.create(SchRenamedClass.self, value: ["v": 7]) }
            #expect(realm.objects(SchRenamedClass.self).first?.v == 7)
            #expect(realm.dynamicObjects("SchCustomTable").count == 1)
        }
        // The name is what the file stores: a migration's old schema shows it.
        let names = MigBox<[String]>([])
        var config = dir.config([SchRenamedClass.self], version: 1)
        config.migrationBlock = { m, _ in names.value = m.oldSchema.objectSchema.map(\.className) }
        _ = try Realm(configuration: config)
        #expect(names.value == ["SchCustomTable"])
    }

    // MARK: Key paths

    @Test func keyPathNames() {
        #expect(KeyPathTracer.name(for: \Dog.name) == "name")
        #expect(KeyPathTracer.name(for: \Dog.age) == "age")
        #expect(KeyPathTracer.name(for: \Cat.legs) == "legs")
        #expect(KeyPathTracer.name(for: \Cat.name) == "name")
        #expect(KeyPathTracer.name(for: \Dog.owner?.name) == "owner.name")
        #expect(KeyPathTracer.name(for: \Dog.owner?.bestFriend?.age) == "owner.bestFriend.age")
        #expect(KeyPathTracer.name(for: \Person.dogs) == "dogs")
        #expect(KeyPathTracer.name(for: \Person.address?.city) == "address.city")
        #expect(KeyPathTracer.name(for: \Dog.owners) == "owners")
        #expect(KeyPathTracer.name(for: \SchMapped.firstName) == "firstName")
    }

    // MARK: Validation

    @Test func linkToAClassNotInObjectTypesThrows() {
        let dir = TempDir()
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([SchLinker.self]))
        }
        #expect(error?.code == .fail)
        migExpectMessage(error, contains: "Property 'SchLinker.target' of type 'object' has unknown object type 'SchLinkTarget'")
    }

    @Test func linkingObjectsWithAMissingOriginPropertyThrows() {
        let dir = TempDir()
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([SchBadOrigin.self, SchBadOriginSource.self]))
        }
        #expect(error?.code == .fail)
        #expect(error?.message.hasPrefix("Schema validation failed due to the following errors:\n- ") == true)
        migExpectMessage(error, contains:
            "Property 'SchBadOriginSource.nope' declared as origin of linking objects property 'SchBadOrigin.parents' does not exist")
    }

    @Test func primaryKeyOfAnUnsupportedTypeThrows() {
        let dir = TempDir()
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([SchDoubleKey.self]))
        }
        #expect(error?.code == .fail)
        migExpectMessage(error, contains: "Property 'SchDoubleKey.d' of type 'double' cannot be made the primary key.")
    }

    @Test func primaryKeyNamingAMissingPropertyThrows() {
        let dir = TempDir()
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([SchMissingKey.self]))
        }
        migExpectMessage(error, contains: "Specified primary key 'SchMissingKey.nope' does not exist.")
    }

    @Test func indexOfAnUnsupportedTypeThrows() {
        let dir = TempDir()
        let error = #expect(throws: Realm.Error.self) {
            _ = try Realm(configuration: dir.config([SchBadIndex.self]))
        }
        migExpectMessage(error, contains: "Property 'SchBadIndex.d' of type 'double' cannot be indexed.")
    }

    @Test func failedValidationCreatesNoFile() {
        let dir = TempDir()
        #expect(throws: Realm.Error.self) { _ = try Realm(configuration: dir.config([SchLinker.self])) }
        #expect(!FileManager.default.fileExists(atPath: dir.file().path))
    }

    // MARK: Equatable

    @Test func equality() throws {
        let a = try schema([SchSimple.self, SchSimpleTarget.self])
        let b = try schema([SchSimple.self, SchSimpleTarget.self])
        #expect(a == b)
        #expect(a["SchSimple"]! == b["SchSimple"]!)
        #expect(a["SchSimple"]!["id"]! == b["SchSimple"]!["id"]!)
        #expect(a["SchSimple"]!["id"]! != a["SchSimple"]!["name"]!)
        #expect(a["SchSimple"]! != a["SchSimpleTarget"]!)
        let c = try schema([SchSimpleTarget.self])
        #expect(a != c)
        // Same class name and properties from another Swift class.
        #expect(SchSimpleTargetTwin().objectSchema == a["SchSimpleTarget"]!)
    }

    // MARK: Descriptions

    @Test func propertyDescriptions() {
        let s = SchSimple().objectSchema
        #expect(s["id"]!.description == """
            id {
            \ttype = int;
            \tcolumnName = id;
            \tindexed = YES;
            \tisPrimary = YES;
            \tarray = NO;
            \tset = NO;
            \tdictionary = NO;
            \toptional = NO;
            }
            """)
        #expect(s["name"]!.description == """
            name {
            \ttype = string;
            \tcolumnName = name;
            \tindexed = NO;
            \tisPrimary = NO;
            \tarray = NO;
            \tset = NO;
            \tdictionary = NO;
            \toptional = YES;
            }
            """)
        #expect(s["tags"]!.description == """
            tags {
            \ttype = string;
            \tcolumnName = tags;
            \tindexed = NO;
            \tisPrimary = NO;
            \tarray = YES;
            \tset = NO;
            \tdictionary = NO;
            \toptional = NO;
            }
            """)
        #expect(s["link"]!.description == """
            link {
            \ttype = object;
            \tobjectClassName = SchSimpleTarget;
            \tlinkOriginPropertyName = (null);
            \tcolumnName = link;
            \tindexed = NO;
            \tisPrimary = NO;
            \tarray = NO;
            \tset = NO;
            \tdictionary = NO;
            \toptional = YES;
            }
            """)
    }

    @Test func mappedPropertyDescriptionShowsTheColumnName() {
        #expect(SchMapped().objectSchema["firstName"]!.description.hasPrefix("""
            firstName {
            \ttype = string;
            \tcolumnName = first_name;
            """))
    }

    @Test func objectSchemaDescription() {
        #expect(SchSimpleTarget().objectSchema.description == """
            SchSimpleTarget {
            \tv {
            \t\ttype = int;
            \t\tcolumnName = v;
            \t\tindexed = NO;
            \t\tisPrimary = NO;
            \t\tarray = NO;
            \t\tset = NO;
            \t\tdictionary = NO;
            \t\toptional = NO;
            \t}
            }
            """)
    }

    @Test func embeddedObjectSchemaDescription() {
        #expect(SchEmbedded().objectSchema.description == """
            SchEmbedded (embedded) {
            \tnote {
            \t\ttype = string;
            \t\tcolumnName = note;
            \t\tindexed = NO;
            \t\tisPrimary = NO;
            \t\tarray = NO;
            \t\tset = NO;
            \t\tdictionary = NO;
            \t\toptional = NO;
            \t}
            }
            """)
    }

    @Test func schemaDescription() throws {
        let s = try schema([SchSimpleTarget.self])
        #expect(s.description == """
            Schema {
            \tSchSimpleTarget {
            \t\tv {
            \t\t\ttype = int;
            \t\t\tcolumnName = v;
            \t\t\tindexed = NO;
            \t\t\tisPrimary = NO;
            \t\t\tarray = NO;
            \t\t\tset = NO;
            \t\t\tdictionary = NO;
            \t\t\toptional = NO;
            \t\t}
            \t}
            }
            """)
    }

    @Test func propertyTypeDescriptions() {
        let all: [PropertyType] = [.int, .bool, .float, .double, .string, .data, .any, .date, .object,
                                   .linkingObjects, .objectId, .decimal128, .UUID]
        #expect(all.map(\.description) == ["int", "bool", "float", "double", "string", "data", "mixed", "date",
                                           "object", "linking objects", "object id", "decimal128", "uuid"])
    }
}

/// A model whose init() sets its primary key and indexed property.
final class SchInitSets: Object {
    @Persisted(primaryKey: true) var id = ""
    @Persisted(indexed: true) var tag = ""
    @Persisted var plain = 0

    required init() {
        super.init()
        id = "made in init"
        tag = "t"
        plain = 7
    }
}
