import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// When a collection given as a query's argument is read: when the query is built (`filter`),
/// as RealmSwift converts its arguments then, whatever is done with the results after (sorted,
/// read at once, observed on the run loop or on a queue, frozen), and whatever the query runs
/// over (a table, a List).
@Suite struct QueryArgumentTimeTests {
    /// `people` (a live Results) is the argument; a person it would match is added after the
    /// query was built and before anything reads it or observes it. Every form reads the
    /// argument as it was at `filter`: Rex (Ann's dog) only, never Max (Al's). Later commits to
    /// the argument's people do not change it either; a dog added to Ann reaches every observer.
    /// Before, the queue observers read it when they registered (Max in), the sorted results
    /// when `sorted` was called, and the run-loop observer of the unsorted results at `filter`.
    @Test func aCollectionArgumentIsReadWhenTheQueryIsBuilt() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "argument-time")
        let names = Events<[String]>()
        func record(_ label: String, _ c: Results<NDog>) -> NotificationToken {
            c.observe(on: label.hasSuffix("queue") ? queue : nil) { change in
                switch change {
                case .initial(let r), .update(let r, _, _, _): names.add([label] + r.map(\.name).sorted())
                case .error: names.add([label, "error"])
                }
            }
        }
        let labels = ["table", "table queue", "sorted", "sorted queue", "list", "list queue", "frozen"]
        try f.run { realm in
            try realm.write {
                let rex = realm.create(NDog.self, value: ["name": "Rex"])
                realm.create(NPerson.self, value: ["name": "Ann", "dogs": [rex]])
                realm.create(NPerson.self, value: ["name": "Bob", "dogs": [rex]])
            }
            // (Bob's dogs, the List queried: Rex, owned by Ann too, and later Max, Al's)
            let bob = realm.objects(NPerson.self).filter("name == 'Bob'").first!
            let people = realm.objects(NPerson.self).filter("name BEGINSWITH 'A'")
            let dogs = realm.objects(NDog.self).filter("ANY owners IN %@", people)
            let bobsDogs = bob.dogs.filter("ANY owners IN %@", people)
            try realm.write {
                let max = realm.create(NDog.self, value: ["name": "Max"])
                realm.create(NPerson.self, value: ["name": "Al", "dogs": [max]])
                bob.dogs.append(max)
            }
            let sorted = dogs.sorted(byKeyPath: "name")
            #expect(Array(dogs.map(\.name)) == ["Rex"])
            #expect(Array(sorted.map(\.name)) == ["Rex"])
            #expect(Array(bobsDogs.map(\.name)) == ["Rex"])
            #expect(Array(dogs.freeze().map(\.name)) == ["Rex"])
            f.tokens += [record("table", dogs), record("table queue", dogs), record("sorted", sorted),
                         record("sorted queue", sorted), record("list", bobsDogs), record("list queue", bobsDogs)]
        }
        var seen: [[String]] = []
        for _ in 0..<6 { if let n = names.next() { seen.append(n) } }
        #expect(Set(seen) == Set(labels.dropLast().map { [$0, "Rex"] }), "\(seen)")
        // a new dog of Ann's (and in Bob's List): in every one of them
        f.writeElsewhere { r in
            let zed = r.create(NDog.self, value: ["name": "Zed"])
            r.objects(NPerson.self).filter("name == 'Ann'").first!.dogs.append(zed)
            r.objects(NPerson.self).filter("name == 'Bob'").first!.dogs.append(zed)
        }
        seen = []
        for _ in 0..<6 { if let n = names.next() { seen.append(n) } }
        #expect(Set(seen) == Set(labels.dropLast().map { [$0, "Rex", "Zed"] }), "\(seen)")
        #expect(names.next(timeout: 0.2) == nil)
        try f.finish()
    }
}
