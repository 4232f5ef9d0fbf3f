import Foundation
import Testing
@testable import SwiftStore

@Suite struct RealmBasicsTests {
    @Test func addReadAndReopen() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.isEmpty)
            let p = Person(name: "Ann", age: 30)
            let d = Dog()
            d.name = "Rex"
            d.age = 3
            p.dogs.append(d)
            try realm.write { realm.add(p) }
            #expect(p.realm != nil)
            #expect(d.realm != nil)
            #expect(realm.objects(Dog.self).count == 1)
            #expect(realm.objects(Person.self).first?.dogs.first?.name == "Rex")
            #expect(d.owners.count == 1)
            #expect(d.owners.first?.name == "Ann")
        }
        let realm = try Realm(configuration: config)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        #expect(ann.age == 30)
        #expect(ann.dogs.count == 1)
        #expect(ann.dogs[0].name == "Rex")
        #expect(ann.dogs[0].age == 3)
        #expect(realm.object(ofType: Person.self, forPrimaryKey: "Bob") == nil)
    }

    /// The configuration keeps its file's path with its URL (`Configuration.path`, read in every
    /// write): the path follows every change of `fileURL` and `inMemoryIdentifier`, decoded as
    /// `URL.path` decodes it, and a Realm opens the file the configuration names now.
    @Test func configurationPathFollowsItsURL() throws {
        let dir = TempDir()
        let first = dir.url.appendingPathComponent("first file.realm")
        let second = dir.url.appendingPathComponent("second%file.realm")
        var config = Realm.Configuration(fileURL: first, objectTypes: objectModels)
        #expect(config.path == first.path)
        #expect(config.path.hasSuffix("/first file.realm"))
        config.fileURL = second
        #expect(config.path == second.path)
        #expect(config.path.hasSuffix("/second%file.realm"))
        config.inMemoryIdentifier = "mem"
        #expect(config.fileURL == nil)
        #expect(config.path.contains("swiftstore-memory-"))
        config.fileURL = first
        #expect(config.inMemoryIdentifier == nil)
        #expect(config.path == first.path)
        var unset = config
        unset.fileURL = nil
        #expect(unset.path == URL(fileURLWithPath: "default.realm").path)
        let copy = config
        config.fileURL = second
        #expect(copy.path == first.path && config.path == second.path)
        let realm = try Realm(configuration: config)
        try realm.write { realm.add(Person(name: "Ann", age: 30)) }
        #expect(FileManager.default.fileExists(atPath: second.path))
        #expect(!FileManager.default.fileExists(atPath: first.path))
        #expect(try Realm(configuration: copy).objects(Person.self).isEmpty)
    }
}
