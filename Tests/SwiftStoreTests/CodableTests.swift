import Foundation
import Testing
@testable import SwiftStore

final class CodablePet: Object, Codable {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var weight: Double?
    @Persisted var tags: List<String>
    @Persisted var born = Date(timeIntervalSince1970: 0)
    @Persisted var owner: CodableOwner?
}

final class CodableOwner: Object, Codable {
    @Persisted var name = ""
    @Persisted var scores: Map<String, Int>
}

@Suite struct CodableTests {
    let json = #"{"id":7,"name":"Rex","weight":12.5,"tags":["a","b"],"born":86400,"owner":{"name":"Ann","scores":{"x":1,"y":2}}}"#

    var decoder: JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .secondsSince1970
        return d
    }

    @Test func decodesUnmanagedObjectsAndDefaultsMissingKeys() throws {
        let pet = try decoder.decode(CodablePet.self, from: Data(json.utf8))
        #expect(pet.id == 7 && pet.name == "Rex" && pet.weight == 12.5)
        #expect(Array(pet.tags) == ["a", "b"])
        #expect(pet.born == Date(timeIntervalSince1970: 86400))
        #expect(pet.owner?.name == "Ann")
        #expect(pet.owner?.scores["y"] == 2)
        let partial = try decoder.decode(CodablePet.self, from: Data(#"{"id":1}"#.utf8))
        #expect(partial.name == "" && partial.weight == nil && partial.tags.isEmpty && partial.owner == nil)
    }

    @Test func encodesManagedObjectsFromTheDatabase() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CodablePet.self, CodableOwner.self]))
        let pet = try decoder.decode(CodablePet.self, from: Data(json.utf8))
        try realm.write { realm.add(pet) }
        try realm.write { pet.name = "Max" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .secondsSince1970
        let text = String(decoding: try encoder.encode(realm.objects(CodablePet.self).first!), as: UTF8.self)
        #expect(text == #"{"born":86400,"id":7,"name":"Max","owner":{"name":"Ann","scores":{"x":1,"y":2}},"tags":["a","b"],"weight":12.5}"#)
    }

    @Test func aQueueConfinedRealmWorksOnItsQueue() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        let queue = DispatchQueue(label: "realm-queue")
        let names = UncheckedBox<[String]>([])
        queue.sync {
            let realm = try! Realm(configuration: config, queue: queue)
            try! realm.write { realm.add(Person(name: "Q", age: 1)) }
            let again = try! Realm(configuration: config, queue: queue)
            #expect(again == realm)
            names.value = realm.objects(Person.self).map(\.name)
        }
        #expect(names.value == ["Q"])
    }
}
