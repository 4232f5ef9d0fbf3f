import Dispatch
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// A collection change as plain values (the suite has a `Seen` of its own).
private typealias CollectionSeen = Seen

/// The Results handed to a collection observer's block take the keys the notifier computed for
/// the change set (docs/ARCHITECTURE.md, Change notifications) instead of running the query
/// again, and only when they describe exactly what the block's Realm reads.
@Suite struct DeliveredResultsTests {
    /// What one delivery saw: the names in the delivered Results, the names a fresh query of the
    /// same Realm gives, and whether the delivered Results had its keys before being read.
    struct Seen: Sendable {
        var delivered: [String]
        var fresh: [String]
        var hadKeys: Bool
    }

    /// Delivered on a queue (a Realm of the queue's own, which never ran the query): after
    /// every one of many random commits from another thread, the delivered Results already
    /// holds its keys, and they are the keys a fresh query at the same version gives, for an
    /// unsorted, a filtered and a sorted query.
    @Test func deliveredKeysAreTheQueryAtTheDeliveredVersion() throws {
        let dir = TempDir()
        let config = dir.config([NToy.self, NDog.self, NPerson.self])
        let realm = try Realm(configuration: config)
        try realm.write {
            for i in 0..<20 { realm.create(NDog.self, value: ["name": "d\(i)", "age": i % 7]) }
        }
        let queue = DispatchQueue(label: "delivered-results")
        let shapes: [(String, (Results<NDog>) -> Results<NDog>)] = [
            ("all", { $0 }),
            ("filtered", { $0.filter("age < 3") }),
            ("sorted", { $0.filter("age >= 2").sorted(byKeyPath: "name", ascending: false) }),
        ]
        var events: [Events<Seen>] = []
        var tokens: [NotificationToken] = []
        for (_, shape) in shapes {
            let e = Events<Seen>()
            events.append(e)
            tokens.append(shape(realm.objects(NDog.self)).observe(on: queue) { change in
                guard case .update(let results, _, _, _) = change else {
                    if case .initial = change { e.add(Seen(delivered: [], fresh: [], hadKeys: true)) }
                    return
                }
                let hadKeys = results.base.hasCurrentKeys
                let fresh = shape(results.realm!.objects(NDog.self)).map(\.name)
                e.add(Seen(delivered: results.map(\.name), fresh: Array(fresh), hadKeys: hadKeys))
            })
        }
        for e in events { #expect(e.next() != nil) }   // the initial notifications
        var rng = SystemRandomNumberGenerator()
        for round in 0..<40 {
            let op = Int.random(in: 0..<3, using: &rng)
            let pick = Int.random(in: 0..<1000, using: &rng)
            onNewThread {
                let r = try! Realm(configuration: config)
                try! r.write {
                    let dogs = r.objects(NDog.self)
                    switch op {
                    case 0:
                        r.create(NDog.self, value: ["name": "n\(round)", "age": pick % 7])
                    case 1 where dogs.count > 5:
                        r.delete(dogs[pick % dogs.count])
                    default:
                        dogs[pick % dogs.count].age = pick % 7
                    }
                }
            }
            for (i, e) in events.enumerated() {
                // a commit that leaves a query's results as they were is not delivered to it
                while let seen = e.next(timeout: e.waiting > 0 ? 10 : 0.2) {
                    #expect(seen.hadKeys, "\(shapes[i].0): the delivered Results had to run its query")
                    #expect(seen.delivered == seen.fresh, "\(shapes[i].0) after round \(round)")
                    if e.waiting == 0 { break }
                }
            }
        }
        for t in tokens { t.invalidate() }
        queue.sync {}
    }

    /// A block that writes moves its Realm past the version of the change set being delivered:
    /// the next block's Results then reads the Realm as it is (its own query), not the keys of
    /// the older version. The other thread's commit is made once both initial notifications
    /// came: made before, it would be folded into them (next test), and no update would follow.
    @Test func aWriteInAnEarlierBlockIsSeenByALaterOne() throws {
        let f = try Fixture()
        let initials = Events<Int>(), counts = Events<Int>()
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a"]) }
            // a filtered query: its count is the length of its keys (a whole table's is not)
            let dogs = realm.objects(NDog.self).filter("name != ''")
            f.tokens.append(dogs.observe { change in
                if case .initial(let r) = change { initials.add(r.count) }
                guard case .update = change, realm.objects(NDog.self).count == 2 else { return }
                try! realm.write { realm.create(NDog.self, value: ["name": "c"]) }
            })
            f.tokens.append(dogs.observe { change in
                if case .initial(let r) = change { initials.add(r.count) }
                if case .update(let r, _, _, _) = change { counts.add(r.count) }
            })
        }
        #expect(initials.next() == 1)
        #expect(initials.next() == 1)
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "b"]) }
        // the first block added "c" before the second block ran: its Results holds 3 objects
        #expect(counts.next() == 3)
        try f.finish()
    }

    /// Another thread's commit made before the observers' watches are made (held here) is
    /// folded into their initial notifications, as in RealmSwift: both read it, no update
    /// follows for it (so the first block, which writes on an update only, does not write),
    /// and the next commit comes as an update to both.
    @Test func aCommitBeforeTheInitialNotificationsIsFoldedIntoThem() throws {
        let f = try Fixture()
        let seen = Events<String>()
        let hold = HoldMaking(f.config.path)
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a"]) }
            let dogs = realm.objects(NDog.self).filter("name != ''")
            f.tokens.append(dogs.observe { change in
                seen.add("first \(CollectionSeen(change))")
                guard case .update = change, realm.objects(NDog.self).count == 2 else { return }
                try! realm.write { realm.create(NDog.self, value: ["name": "c"]) }
            })
            f.tokens.append(dogs.observe { change in seen.add("second \(CollectionSeen(change))") })
        }
        #expect(hold.waitEntered())
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "b"]) }
        hold.release()
        #expect(seen.next() == "first \(CollectionSeen(initial: true, count: 2))")
        #expect(seen.next() == "second \(CollectionSeen(initial: true, count: 2))")
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "d"]) }
        #expect(seen.next() == "first \(CollectionSeen(count: 3, ins: [2]))")
        #expect(seen.next() == "second \(CollectionSeen(count: 3, ins: [2]))")
        try f.run { realm in #expect(realm.objects(NDog.self).count == 3) }
        #expect(seen.waiting == 0)
        try f.finish()
    }

    /// A queue observer of a query over a List and of a table query gets the same results at
    /// every delivery while the queue's Realm is the same (their query parsed once, not at each
    /// delivery), and new ones after that Realm was invalidated (whose results end with it).
    @Test func aQueueObserverKeepsItsResultsWhileItsRealmIsTheSame() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "kept-results")
        let listIds = Events<ObjectIdentifier>(), tableIds = Events<ObjectIdentifier>()
        try f.run { realm in
            try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex", "age": 1]]]) }
            let ann = realm.objects(NPerson.self).first!
            f.tokens.append(ann.dogs.filter("age > %@", 0).observe(on: queue) { change in
                if case .update(let r, _, _, _) = change { listIds.add(ObjectIdentifier(r.base)) }
                if case .initial(let r) = change { listIds.add(ObjectIdentifier(r.base)) }
            })
            f.tokens.append(realm.objects(NDog.self).filter("age > %@", 0).observe(on: queue) { change in
                if case .update(let r, _, _, _) = change { tableIds.add(ObjectIdentifier(r.base)) }
                if case .initial(let r) = change { tableIds.add(ObjectIdentifier(r.base)) }
            })
        }
        var list: [ObjectIdentifier] = [], table: [ObjectIdentifier] = []
        func next() {
            if let l = listIds.next() { list.append(l) }
            if let t = tableIds.next() { table.append(t) }
        }
        next()
        for age in 2...4 {
            f.writeElsewhere { r in
                let ann = r.objects(NPerson.self).first!
                ann.dogs.append(r.create(NDog.self, value: ["name": "d\(age)", "age": age]))
            }
            next()
        }
        #expect(list.count == 4 && Set(list).count == 1, "\(list)")
        #expect(table.count == 4 && Set(table).count == 1, "\(table)")
        // the queue's Realm invalidated: new results at the next delivery
        queue.sync { try! Realm(configuration: f.config, queue: queue).invalidate() }
        f.writeElsewhere { r in r.objects(NPerson.self).first!.dogs.append(r.create(NDog.self, value: ["name": "z", "age": 9])) }
        next()
        #expect(list.count == 5 && list[4] != list[0])
        #expect(table.count == 5 && table[4] != table[0])
        try f.finish()
    }
}
