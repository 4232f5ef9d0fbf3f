import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// `write(withoutNotifying:)` skips exactly the write's own changes for the tokens given: a commit
/// that lands right after it (before its version was computed) and change sets held back from
/// before it are still reported, each once (docs/ARCHITECTURE.md, Change notifications).
@Suite struct SkippedWriteNotificationTests {
    /// Another thread's commit lands between a `withoutNotifying:` commit and the computing of
    /// its version: a table query, a List, a query over that List and an object observer, all
    /// skipped, get that commit's change set (and none of the skipped write's), with indices in
    /// the data as the skipped write left it. Before, the notifier computed both versions at
    /// once and dropped them together: none of the four heard of the other commit.
    @Test func aCommitRightAfterASkippedWriteIsReported() throws {
        let f = try Fixture()
        let query = Events<Seen>(), list = Events<Seen>(), derived = Events<Seen>(), object = Events<SeenObject>()
        try f.run { realm in
            try realm.write {
                let ann = realm.create(NPerson.self, value: ["name": "Ann"])
                for n in ["b", "d"] { ann.dogs.append(realm.create(NDog.self, value: ["name": n])) }
            }
            let ann = realm.objects(NPerson.self).first!
            f.tokens.append(realm.objects(NDog.self).sorted(byKeyPath: "name").observe { query.add(Seen($0)) })
            f.tokens.append(ann.dogs.observe { list.add(Seen($0)) })
            f.tokens.append(ann.dogs.filter("age < 10").observe { derived.add(Seen($0)) })
            f.tokens.append(namedDog(realm, "b").observe { (c: ObjectChange<NDog>) in object.add(SeenObject(c)) })
        }
        #expect(query.next() == Seen(initial: true, count: 2))
        #expect(list.next() == Seen(initial: true, count: 2))
        #expect(derived.next() == Seen(initial: true, count: 2))
        commitAfterTheCommit(f.config) { r in
            let c = r.create(NDog.self, value: ["name": "c"])
            r.objects(NPerson.self).first!.dogs.append(c)
            namedDog(r, "b").adopted = true
        }
        try f.run { realm in
            try realm.write(withoutNotifying: f.tokens) {
                realm.objects(NPerson.self).first!.dogs.append(realm.create(NDog.self, value: ["name": "a"]))
                namedDog(realm, "b").age = 5
            }
        }
        // after the skipped write: sorted [a, b, d], List [b, d, a]; the other commit adds c and
        // modifies b
        #expect(query.next(timeout: 3) == Seen(count: 4, ins: [2], mod: [1]))
        #expect(list.next(timeout: 3) == Seen(count: 4, ins: [3], mod: [0]))
        #expect(derived.next(timeout: 3) == Seen(count: 4, ins: [3], mod: [0]))
        #expect(object.next(timeout: 3) == SeenObject(names: ["adopted"], old: ["false"], new: ["true"]))
        // and what comes next lines up with the data
        f.writeElsewhere { r in r.delete(namedDog(r, "d")) }
        #expect(query.next() == Seen(count: 3, del: [3]))
        #expect(list.next() == Seen(count: 3, del: [1]))
        #expect(derived.next() == Seen(count: 3, del: [1]))
        try f.run { _ in }
        #expect(query.waiting == 0 && list.waiting == 0 && derived.waiting == 0 && object.waiting == 0)
        try f.finish()
    }

    /// A write made without notifying two queries over a List from inside another observer's
    /// block, after another thread committed (so the observers have a change set held back from
    /// before the write): each gets the other thread's change once, not the skipped write's, and
    /// the next commit's change set starts from the results the write left. Before, the held-back
    /// change set was compared with the results after the skipped write, which it reported
    /// again (the dog the write linked inserted a second time, the one it created inserted).
    @Test func aSkippedWriteInsideABlockAfterAnotherCommit() throws {
        let f = try Fixture(models: [BKOwner.self, BKDog.self])
        try f.run { realm in
            try realm.write {
                let dogs = ["a", "b", "c"].map { realm.create(BKDog.self, value: ["name": $0]) }
                realm.create(BKOwner.self, value: ["name": "Ann"]).dogs.append(objectsIn: dogs)
                realm.create(BKOwner.self, value: ["name": "Bob"])
            }
        }
        let shared = Events<Seen>(), plain = Events<Seen>(), owners = Events<Seen>()
        let armed = Locked(true)
        try f.run { realm in
            let ann = bkOwner(realm, "Ann")
            let skipped = [ann.dogs.filter("owners.@count > 1").observe { shared.add(Seen($0)) },
                           ann.dogs.filter("name != 'zz'").observe { plain.add(Seen($0)) }]
            f.tokens += skipped
            f.tokens.append(realm.objects(BKOwner.self).observe { change in
                owners.add(Seen(change))
                guard case .update = change, armed.withLock({ let a = $0; $0 = false; return a }) else { return }
                // another thread's commit, then the skipped write, inside this delivery
                f.writeElsewhere { r in
                    bkOwner(r, "Bob").dogs.append(bkDog(r, "a"))
                    bkDog(r, "a").name = "a2"
                }
                try! realm.write(withoutNotifying: skipped) {
                    bkOwner(realm, "Bob").dogs.append(bkDog(realm, "b"))
                    bkOwner(realm, "Ann").dogs.append(realm.create(BKDog.self, value: ["name": "d"]))
                }
            })
        }
        #expect(shared.next() == Seen(initial: true, count: 0))
        #expect(plain.next() == Seen(initial: true, count: 3))
        #expect(owners.next() == Seen(initial: true, count: 2))
        f.writeElsewhere { r in bkOwner(r, "Ann").age = 1 }
        #expect(owners.next() == Seen(count: 2, mod: [0]))
        // the other thread's change only (the collections are read after the skipped write)
        #expect(shared.next(timeout: 3) == Seen(count: 2, ins: [0]))
        #expect(plain.next(timeout: 3) == Seen(count: 4, mod: [0]))
        f.writeElsewhere { r in
            bkOwner(r, "Bob").dogs.append(bkDog(r, "c"))
            bkDog(r, "b").name = "b2"
        }
        #expect(shared.next() == Seen(count: 3, ins: [2], mod: [1]))
        #expect(plain.next() == Seen(count: 4, mod: [1]))
        try f.run { _ in }
        #expect(shared.waiting == 0 && plain.waiting == 0)
        try f.finish()
    }
}

private func namedDog(_ r: Realm, _ name: String) -> NDog { r.objects(NDog.self).filter("name == %@", name).first! }
private func bkDog(_ r: Realm, _ name: String) -> BKDog { r.objects(BKDog.self).filter("name == %@", name).first! }
private func bkOwner(_ r: Realm, _ name: String) -> BKOwner { r.objects(BKOwner.self).filter("name == %@", name).first! }

/// Arms the test hook so that the next commit on the file of `config`, right after it committed
/// and before its change sets are computed, waits for `body` to be committed by another Realm on
/// another thread.
func commitAfterTheCommit(_ config: Realm.Configuration, _ body: @escaping @Sendable (Realm) -> Void) {
    RealmCore.testHooksArmed.store(true, ordering: .relaxed)
    RealmCore.afterCommitForTesting.withLock {
        $0[config.path] = {
            onNewThread {
                let r = try! Realm(configuration: config)
                try! r.write { body(r) }
            }
        }
    }
}
