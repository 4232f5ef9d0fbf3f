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
}
