import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// `refresh()` delivers the change sets of exactly the version it moves its Realm to, also when
/// another thread commits between its delivery and its return (docs/ARCHITECTURE.md, Change
/// notifications).
@Suite struct RefreshNotificationTests {
    /// Another thread commits (b) right after `refresh()` delivered a (the `afterRefreshDelivery`
    /// hook): the Realm stays at the version its observers were told of, and b comes with the
    /// next delivery (the run loop's, or, with autorefresh off, the next `refresh()`). Before,
    /// the refresh then moved the Realm to b's version: the observers had been told of one dog
    /// and the Realm read two, and a Realm observer got one `.didChange` for both.
    @Test(arguments: [true, false]) func refreshMovesNoFurtherThanItDelivered(autorefresh: Bool) throws {
        let f = try Fixture()
        let dogs = Events<Seen>(), changes = Events<Int>()
        try f.run { realm in
            realm.autorefresh = autorefresh
            f.tokens.append(realm.objects(NDog.self).observe { dogs.add(Seen($0)) })
            f.tokens.append(realm.observe { n, r in if n == .didChange { changes.add(r.objects(NDog.self).count) } })
            realm.refresh()
        }
        #expect(dogs.next() == Seen(initial: true, count: 0))
        let config = f.config
        let seen = try f.run { realm -> ([Seen], [Int], Int) in
            f.writeElsewhere { r in r.create(NDog.self, value: ["name": "a"]) }
            RealmCore.testHooksArmed.store(true, ordering: .relaxed)
            RealmCore.afterRefreshDeliveryForTesting.withLock {
                $0[config.path] = {
                    onNewThread {
                        let r = try! Realm(configuration: config)
                        try! r.write { r.create(NDog.self, value: ["name": "b"]) }
                    }
                }
            }
            let (d, c) = (dogs.all.count, changes.all.count)
            realm.refresh()
            return (Array(dogs.all.dropFirst(d)), Array(changes.all.dropFirst(c)), realm.objects(NDog.self).count)
        }
        // told of a, and reading a
        #expect(seen.0 == [Seen(count: 1, ins: [0])])
        #expect(seen.1 == [1])
        #expect(seen.2 == 1)
        #expect(dogs.next() == Seen(count: 1, ins: [0]))
        #expect(changes.next() == 1)
        if !autorefresh { try f.run { realm in realm.refresh() } }
        #expect(dogs.next() == Seen(count: 2, ins: [1]))
        #expect(changes.next() == 2)
        try f.run { realm in #expect(realm.objects(NDog.self).count == 2) }
        #expect(dogs.waiting == 0 && changes.waiting == 0)
        try f.finish()
    }

    /// As `refreshMovesNoFurtherThanItDelivered`, observed through a query over a List and an
    /// object: each is told of the first commit inside the refresh, the Realm reads that
    /// version, and the commit landing after the delivery comes next, with the old values of
    /// the version the observer was told of.
    @Test func refreshMovesNoFurtherThanItDeliveredToListQueriesAndObjects() throws {
        let f = try Fixture()
        let derived = Events<Seen>(), object = Events<SeenObject>()
        try f.run { realm in
            try realm.write {
                let ann = realm.create(NPerson.self, value: ["name": "Ann"])
                ann.dogs.append(realm.create(NDog.self, value: ["name": "a", "age": 1]))
            }
            let ann = realm.objects(NPerson.self).first!
            f.tokens.append(ann.dogs.filter("age < 10").observe { derived.add(Seen($0)) })
            f.tokens.append(ann.dogs.first!.observe { (c: ObjectChange<NDog>) in object.add(SeenObject(c)) })
            realm.refresh()
        }
        #expect(derived.next() == Seen(initial: true, count: 1))
        let config = f.config
        let seen = try f.run { realm -> (Int, Int, Int) in
            f.writeElsewhere { r in
                addDogToPerson(r, "b")
                r.objects(NDog.self).filter("name == 'a'").first!.age = 2
            }
            RealmCore.testHooksArmed.store(true, ordering: .relaxed)
            RealmCore.afterRefreshDeliveryForTesting.withLock {
                $0[config.path] = {
                    onNewThread {
                        let r = try! Realm(configuration: config)
                        try! r.write {
                            addDogToPerson(r, "c")
                            r.objects(NDog.self).filter("name == 'a'").first!.age = 3
                        }
                    }
                }
            }
            realm.refresh()
            let ann = realm.objects(NPerson.self).first!
            return (derived.waiting, ann.dogs.count, ann.dogs.first!.age)
        }
        #expect(seen.0 == 1 && seen.1 == 2 && seen.2 == 2)
        #expect(derived.next() == Seen(count: 2, ins: [1], mod: [0]))
        #expect(object.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
        #expect(derived.next() == Seen(count: 3, ins: [2], mod: [0]))
        #expect(object.next() == SeenObject(names: ["age"], old: ["2"], new: ["3"]))
        try f.run { _ in }
        #expect(derived.waiting == 0 && object.waiting == 0)
        try f.finish()
    }
}
