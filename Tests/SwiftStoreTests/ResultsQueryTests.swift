import Foundation
import Testing
@testable import SwiftStore

@Suite struct ResultsQueryTests {
    func seeded() throws -> (TempDir, Realm) {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(objectModels))
        try realm.write {
            let ann = realm.create(Person.self, value: ["name": "Ann", "age": 30])
            let bob = realm.create(Person.self, value: ["name": "Bob", "age": 40])
            for (i, name) in ["Rex", "Fido", "Max", "Bella", "Ace"].enumerated() {
                let d = realm.create(Dog.self, value: ["name": name, "age": i + 1])
                d.owner = i % 2 == 0 ? ann : bob
                (i % 2 == 0 ? ann : bob).dogs.append(d)
            }
        }
        return (dir, realm)
    }

    @Test func filterSortDistinctAndAggregates() throws {
        let (_, realm) = try seeded()
        let dogs = realm.objects(Dog.self)
        let old = dogs.filter("age >= %@", 3)
        #expect(old.count == 3)
        #expect(old.sorted(byKeyPath: "name").map(\.name) == ["Ace", "Bella", "Max"])
        #expect(dogs.sorted(byKeyPath: "age", ascending: false).first?.name == "Ace")
        #expect(dogs.sorted(by: \.name).map(\.name) == ["Ace", "Bella", "Fido", "Max", "Rex"])
        #expect(dogs.filter("owner.name == 'Ann'").count == 3)
        #expect(dogs.filter(NSPredicate(format: "name BEGINSWITH %@", "B")).map(\.name) == ["Bella"])
        #expect(dogs.sum(ofProperty: "age") as Int == 15)
        #expect(dogs.min(ofProperty: "age") as Int? == 1)
        #expect(dogs.max(of: \.age) == 5)
        #expect(dogs.average(ofProperty: "age") as Double? == 3)
        #expect(dogs.filter("age > 100").average(ofProperty: "age") as Double? == nil)
        #expect(dogs.filter("age > 100").sum(ofProperty: "age") as Int == 0)
        #expect(dogs.distinct(by: ["owner.name"]).count == 2)
        #expect(dogs.index(matching: "name == %@", "Max") == 2)
        #expect(dogs.value(forKeyPath: "@count") as? Int == 5)
        #expect(dogs.value(forKeyPath: "@sum.age") as? Int == 15)
        #expect((dogs.value(forKey: "name") as? [Any])?.compactMap { $0 as? String } == ["Rex", "Fido", "Max", "Bella", "Ace"])
    }

    @Test func heldResultsFollowWrites() throws {
        let (_, realm) = try seeded()
        let young = realm.objects(Dog.self).filter("age < 3").sorted(byKeyPath: "age")
        #expect(young.map(\.name) == ["Rex", "Fido"])
        try realm.write { realm.create(Dog.self, value: ["name": "Pup", "age": 0]) }
        #expect(young.map(\.name) == ["Pup", "Rex", "Fido"])
        try realm.write { young.setValue(10, forKey: "age") }
        #expect(young.isEmpty)
    }

    @Test func collectionsFilterAndAggregate() throws {
        let (_, realm) = try seeded()
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        #expect(ann.dogs.map(\.name) == ["Rex", "Max", "Ace"])
        #expect(ann.dogs.filter("age > 1").map(\.name) == ["Max", "Ace"])
        #expect(ann.dogs.sum(ofProperty: "age") as Int == 9)
        let rex = realm.objects(Dog.self).filter("name == 'Rex'").first!
        #expect(rex.owners.filter("age > 20").count == 1)
        let t = AllTypes()
        t.intList.append(objectsIn: [5, 3, 9, 3])
        #expect(t.intList.sum() == 20)
        #expect(t.intList.max() == 9)
        try realm.write { realm.add(t) }
        let list = realm.objects(AllTypes.self).first!.intList
        #expect(list.sum() == 20)
        #expect(list.min() == 3)
        #expect(list.average() as Double? == 5)
        #expect(Array(list.filter("self > 3")) == [5, 9])
        #expect(Array(list.sorted()) == [3, 3, 5, 9])
        #expect(Array(list.distinct()) == [5, 3, 9])
    }

    @Test func aMalformedPredicateThrowsWithThePosition() throws {
        let (_, realm) = try seeded()
        do {
            _ = try realm.objects(Dog.self).filter(throwing: "agee > 3")
            Issue.record("expected an error")
        } catch let error as Realm.Error {
            #expect(error.code == .invalidInput)
            #expect(error.message.contains("agee"))
        }
    }

    @Test func aMalformedPredicateTrapsInFilter() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config(objectModels))
            _ = realm.objects(Dog.self).filter("name ==")
        }
        expectMessage(result, "1:")
    }
}

@Suite struct WhereQueryTests {
    @Test func whereRunsTheTypeSafeQueryInTheCore() throws {
        let (_, realm) = try ResultsQueryTests().seeded()
        let dogs = realm.objects(Dog.self)
        #expect(dogs.where { $0.age > 2 && $0.name.starts(with: "B") }.map(\.name) == ["Bella"])
        #expect(dogs.where { $0.owner.name == "Bob" }.count == 2)
        #expect(dogs.where { $0.name.contains("e", options: .caseInsensitive) }.count == 3)
        #expect(dogs.index(matching: { $0.age == 4 }) == 3)
        let ann = try #require(realm.object(ofType: Person.self, forPrimaryKey: "Ann"))
        #expect(ann.dogs.where { $0.age < 3 }.map(\.name) == ["Rex"])
        #expect(realm.objects(Person.self).where { $0.dogs.age > 4 }.map(\.name) == ["Ann"])
        let t = AllTypes()
        t.intList.append(objectsIn: [1, 7, 3])
        try realm.write { realm.add(t) }
        #expect(Array(realm.objects(AllTypes.self).first!.intList.where { $0 > 2 }) == [7, 3])
    }
}

@Suite struct MappedNameQueryTests {
    /// Queries, sorts and aggregates use the Swift property names of a model with
    /// `propertiesMapping()`; the stored name is not a property there.
    @Test func queriesUseThePublicNames() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([SchMapped.self]))
        try realm.write {
            for (n, a) in [("Cy", 3), ("Ann", 1), ("Bo", 2)] { realm.create(SchMapped.self, value: ["firstName": n, "age": a]) }
        }
        let all = realm.objects(SchMapped.self)
        #expect(all.filter("firstName BEGINSWITH 'A'").map(\.firstName) == ["Ann"])
        #expect(all.where { $0.firstName == "Bo" }.count == 1)
        #expect(all.sorted(byKeyPath: "firstName").map(\.firstName) == ["Ann", "Bo", "Cy"])
        #expect(all.sorted(by: \.firstName, ascending: false).first?.firstName == "Cy")
        #expect(all.distinct(by: ["firstName"]).count == 3)
        do {
            _ = try all.filter(throwing: "first_name == 'Ann'")
            Issue.record("the stored name should not be a property in queries")
        } catch let error as Realm.Error {
            #expect(error.message.contains("first_name"))
        }
    }
}
