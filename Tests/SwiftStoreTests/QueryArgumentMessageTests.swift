import Foundation
import Testing
@testable import SwiftStore

/// Query arguments as users pass them, and the messages for wrong ones.
@Suite struct QueryArgumentMessageTests {
    func people(_ dir: TempDir) throws -> Realm {
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            for (name, age) in [("Ann", 0), ("Bo", 1), ("Cy", 2), ("Di", 3)] {
                realm.add(Person(value: ["name": name, "age": age]))
            }
        }
        return realm
    }

    /// An NSNumber made from 0 or 1 is a number (only one made from a Bool is a Bool).
    @Test func nsNumberZeroAndOneAreNumbers() throws {
        let dir = TempDir()
        let realm = try people(dir)
        let all = realm.objects(Person.self)
        #expect(try all.filter(throwing: "age > %@", NSNumber(value: 1)).count == 2)
        #expect(try all.filter(throwing: "age == %@", NSNumber(value: 0)).count == 1)
        #expect(try all.filter(throwing: "age >= %@", NSNumber(value: 1.5)).count == 2)
        #expect(try all.filter(throwing: "age IN %@", [NSNumber(value: 0), NSNumber(value: 1)]).count == 2)
        let json = try JSONSerialization.jsonObject(with: Data("{\"min\": 1, \"zero\": 0}".utf8)) as! [String: Any]
        #expect(try all.filter(throwing: "age > %@", json["min"]!).count == 2)
        #expect(try all.filter(throwing: "age == %@", json["zero"]!).count == 1)
    }

    /// An NSNumber made from a Bool (and JSON's true/false) stays a Bool.
    @Test func nsNumberFromBoolIsBool() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            realm.add(AllTypes(value: ["id": 1, "bool": true]))
            realm.add(AllTypes(value: ["id": 2, "bool": false]))
        }
        let all = realm.objects(AllTypes.self)
        #expect(try all.filter(throwing: "bool == %@", NSNumber(value: true)).map(\.id) == [1])
        let json = try JSONSerialization.jsonObject(with: Data("[false]".utf8)) as! [Any]
        #expect(try all.filter(throwing: "bool == %@", json[0]).map(\.id) == [2])
    }

    /// A string operator on a number says that the operator does not apply.
    @Test func stringOperatorOnIntNamesTheOperator() throws {
        let dir = TempDir()
        let realm = try people(dir)
        do {
            _ = try realm.objects(Person.self).filter(throwing: "age BEGINSWITH 'a'")
            Issue.record("BEGINSWITH on an Int was accepted")
        } catch let e as Realm.Error {
            #expect(e.message.contains("BEGINSWITH does not apply to Int"), "\(e.message)")
            #expect(!e.message.contains("cannot compare"), "\(e.message)")
        }
    }

    /// Sorting by a key path that does not exist names the key path, not a position in query
    /// text the caller never wrote.
    @Test func sortByMissingKeyPathNamesIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            _ = realm.objects(Person.self).sorted(byKeyPath: "weight")
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        // RealmSwift's message, word for word
        #expect(text.contains("Cannot sort on key path 'weight': property 'Person.weight' does not exist."), "\(text.suffix(400))")
        #expect(!text.contains("position"), "\(text.suffix(400))")
    }

    /// A missing property further down a key path is named with the class it was looked for in.
    @Test func sortByMissingLinkedPropertyNamesItsClass() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            _ = realm.objects(Dog.self).sorted(byKeyPath: "owner.height")
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("Cannot sort on key path 'owner.height': property 'Person.height' does not exist."), "\(text.suffix(400))")
    }

    @Test func distinctByMissingKeyPathNamesIt() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            _ = realm.objects(Person.self).distinct(by: ["height"])
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        // RealmSwift's core checks distinct key paths with the sort check, and says "sort".
        #expect(text.contains("Cannot sort on key path 'height': property 'Person.height' does not exist."), "\(text.suffix(400))")
        #expect(!text.contains("position"), "\(text.suffix(400))")
    }
}
