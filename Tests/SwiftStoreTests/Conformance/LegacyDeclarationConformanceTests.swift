// RealmSwift conformance: the legacy declarations `let list = List<T>()`, `MutableSet`, `Map`,
// `RealmProperty` and `RealmOptional` without @Persisted are properties of the class and
// persist, as RealmSwift discovers them on Object subclasses.
import Foundation
import Testing
import SwiftStore

final class CfLegacyItem: Object {
    @Persisted var label = ""
}

final class CfLegacyHolder: Object {
    @Persisted var name = ""
    let numbers = List<Int>()
    let tags = MutableSet<String>()
    let scores = Map<String, Double>()
    let items = List<CfLegacyItem>()
    let optional = RealmProperty<Int?>()
    let legacyOptional = RealmOptional<Double>()
}

@Suite("Conformance: legacy declarations")
struct LegacyDeclarationConformanceTests {
    private func realm(_ dir: TempDir) throws -> Realm {
        try Realm(configuration: dir.config([CfLegacyHolder.self, CfLegacyItem.self]))
    }

    @Test func legacyCollectionsArePartOfTheSchema() throws {
        let dir = TempDir()
        let schema = try realm(dir).schema["CfLegacyHolder"]!
        #expect(schema.properties.map(\.name) == ["name", "numbers", "tags", "scores", "items", "optional", "legacyOptional"])
        #expect(schema["numbers"]?.isArray == true && schema["numbers"]?.type == .int)
        #expect(schema["tags"]?.isSet == true && schema["tags"]?.type == .string)
        #expect(schema["scores"]?.isMap == true && schema["scores"]?.type == .double)
        #expect(schema["items"]?.isArray == true && schema["items"]?.objectClassName == "CfLegacyItem")
    }

    @Test func legacyCollectionsPersist() throws {
        let dir = TempDir()
        let realm = try realm(dir)
        let holder = CfLegacyHolder()
        holder.name = "h"
        holder.numbers.append(objectsIn: [1, 2, 3])
        holder.tags.insert("a")
        holder.scores["x"] = 1.5
        holder.items.append(CfLegacyItem(value: ["label": "i1"]))
        holder.optional.value = 4
        let list = holder.numbers
        try realm.write { realm.add(holder) }
        // The instance the object holds is now managed, as in RealmSwift.
        #expect(list.realm != nil && holder.numbers.realm != nil && holder.tags.realm != nil && holder.scores.realm != nil)
        try realm.write {
            holder.numbers.append(4)
            holder.tags.insert("b")
            holder.scores["y"] = 2.5
            holder.legacyOptional.value = 0.5
        }
        #expect(Array(list) == [1, 2, 3, 4])

        // Read back through another Realm instance of the same file.
        let other = try Realm(configuration: dir.config([CfLegacyHolder.self, CfLegacyItem.self], file: "test.realm"))
        let read = other.objects(CfLegacyHolder.self).first!
        #expect(Array(read.numbers) == [1, 2, 3, 4])
        #expect(Set(read.tags) == ["a", "b"])
        #expect(read.scores["x"] == 1.5 && read.scores["y"] == 2.5)
        #expect(read.items.map(\.label) == ["i1"])
        #expect(read.optional.value == 4 && read.legacyOptional.value == 0.5)
        #expect(other.objects(CfLegacyHolder.self).filter("ANY numbers == 3").count == 1)
        #expect(other.objects(CfLegacyItem.self).count == 1)
    }

    @Test func legacyCollectionsFillFromValues() throws {
        let dir = TempDir()
        let realm = try realm(dir)
        try realm.write {
            realm.create(CfLegacyHolder.self, value: ["name": "v", "numbers": [7, 8], "tags": ["t"],
                                                      "scores": ["k": 3.0], "items": [["label": "z"]]])
        }
        let read = realm.objects(CfLegacyHolder.self).first!
        #expect(Array(read.numbers) == [7, 8] && Array(read.tags) == ["t"] && read.scores["k"] == 3.0)
        #expect(read.items.first?.label == "z")
        #expect((read.value(forKey: "numbers") as? List<Int>).map(Array.init) == [7, 8])
        let unmanaged = CfLegacyHolder(value: ["numbers": [5]])
        #expect(Array(unmanaged.numbers) == [5] && unmanaged.numbers.realm == nil)
    }
}
