import Foundation
#if canImport(CoreFoundation)
import CoreFoundation
#endif
import Testing
import TestSupport
@testable import SwiftStore

/// What a write does to pending notifications: `beginWrite` delivers them first, and
/// `write(withoutNotifying:)` skips only the write's own changes.
@Suite struct WriteNotificationTests {
    /// beginWrite moves the Realm to the newest version and delivers what its observers were
    /// not given yet, synchronously and before the write begins (the other thread's insertion
    /// here, and `.didChange` to the Realm's observer).
    @Test func beginWriteDeliversPendingNotifications() throws {
        let f = try Fixture()
        let dogs = Events<Seen>(), realmEvents = Events<Bool>()
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).observe { dogs.add(Seen($0)) })
            f.tokens.append(realm.observe { n, _ in realmEvents.add(n == .didChange) })
        }
        #expect(dogs.next() == Seen(initial: true, count: 0))
        let seen = try f.run { realm -> [Int] in
            // the run loop does not run during this block: only beginWrite can deliver
            f.writeElsewhere { r in r.create(NDog.self, value: ["name": "a"]) }
            let before = [dogs.waiting, realmEvents.waiting]
            realm.beginWrite()
            let after = [dogs.waiting, realmEvents.waiting, realm.objects(NDog.self).count]
            realm.cancelWrite()
            return before + after
        }
        #expect(seen == [0, 0, 1, 1, 1])
        #expect(dogs.next() == Seen(count: 1, ins: [0]))
        #expect(realmEvents.next() == true)
        try f.finish()
    }

    /// A commit that lands after `beginWrite` delivered what was pending and before it took the
    /// write lock (the `beforePromote` hook) is not delivered inside the write: no observer block
    /// runs while the Realm is in its write (where a block that writes, freezes or registers an
    /// observer would trap, and one that waits for another writer would deadlock, only when a
    /// commit raced into that window); it comes after the write. This pins the choice
    /// (docs/ARCHITECTURE.md, Change notifications): the write starts past what the observers
    /// were told of.
    @Test func aCommitLandingBeforeTheWriteLockIsDeliveredAfterTheWrite() throws {
        let f = try Fixture()
        let dogs = Events<Seen>(), inWrite = Locked<[Bool]>([])
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).observe { c in
                inWrite.withLock { $0.append(realm.isInWriteTransaction) }
                dogs.add(Seen(c))
            })
        }
        #expect(dogs.next() == Seen(initial: true, count: 0))
        let seen = try f.run { realm -> [Int] in
            f.writeElsewhere { r in r.create(NDog.self, value: ["name": "a"]) }
            commitBeforeTheWriteLock(f.config) { r in r.create(NDog.self, value: ["name": "b"]) }
            realm.beginWrite()
            let seen = [dogs.waiting, realm.objects(NDog.self).count]
            realm.cancelWrite()
            return seen
        }
        // a, delivered before the write; b after it
        #expect(seen == [1, 2])
        #expect(dogs.next() == Seen(count: 1, ins: [0]))
        #expect(dogs.next() == Seen(count: 2, ins: [1]))
        #expect(inWrite.withLock { $0 } == [false, false, false])
        #expect(dogs.waiting == 0)
        try f.finish()
    }

    /// A delivery that comes while the Realm is in a write transaction waits for the write to
    /// end, and a write that is cancelled instead of committed (`cancelWrite()`, or a write
    /// block that throws) is such an end: the pending change set is delivered after it, with no
    /// other commit needed.
    @Test(arguments: [false, true])
    func deliveryDuringAWriteComesAfterTheWriteIsCancelled(throwing: Bool) throws {
        let f = try Fixture()
        let dogs = Events<Seen>()
        try f.run { realm in f.tokens.append(realm.objects(NDog.self).observe { dogs.add(Seen($0)) }) }
        #expect(dogs.next() == Seen(initial: true, count: 0))
        let waiting = try f.run { realm -> Int in
            // a commit lands after beginWrite delivered what was pending: its delivery is
            // scheduled on this run loop and comes during the write
            commitBeforeTheWriteLock(f.config) { r in r.create(NDog.self, value: ["name": "a"]) }
            var waiting = -1
            let runTheLoopOnce = {
                // the delivery's timer is due already; this one, due after it, ends the run
                RunLoop.current.add(Timer(timeInterval: 0, repeats: false) { _ in CFRunLoopStop(CFRunLoopGetCurrent()) },
                                    forMode: .default)
                _ = RunLoop.current.run(mode: .default, before: .distantFuture)
                waiting = dogs.waiting
            }
            if throwing {
                #expect(throws: CancelledWrite.self) {
                    try realm.write {
                        runTheLoopOnce()
                        throw CancelledWrite()
                    }
                }
            } else {
                realm.beginWrite()
                runTheLoopOnce()
                realm.cancelWrite()
            }
            return waiting
        }
        #expect(waiting == 0)
        #expect(dogs.next() == Seen(count: 1, ins: [0]))
        #expect(dogs.waiting == 0)
        try f.finish()
    }

    /// A commit that lands after the write delivered what was pending and before it took the
    /// write lock is still reported to an observer the write skips; only the write's own
    /// insertion is left out, and later indices follow the data.
    @Test func withoutNotifyingKeepsAnotherCommitsChanges() throws {
        let f = try Fixture()
        let dogs = Events<Seen>()
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).sorted(byKeyPath: "name").observe { dogs.add(Seen($0)) })
        }
        #expect(dogs.next() == Seen(initial: true, count: 0))
        try f.run { realm in
            commitBeforeTheWriteLock(f.config) { r in r.create(NDog.self, value: ["name": "b"]) }
            try realm.write(withoutNotifying: [f.tokens[0]]) { realm.create(NDog.self, value: ["name": "a"]) }
        }
        // "b" was inserted at 0 of the version the write started from; "a" is not reported
        #expect(dogs.next() == Seen(count: 2, ins: [0]))
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "c"]) }
        #expect(dogs.next() == Seen(count: 3, ins: [2]))
        #expect(dogs.waiting == 0)
        try f.finish()
    }

    /// An object change held back by a write that skips the observer (a commit that landed
    /// after the write delivered what was pending and before it took the write lock) gives the
    /// old values as of the version the observer was last given, not nil; the write's own
    /// property is not reported.
    @Test func heldBackObjectChangeHasOldValues() throws {
        let f = try Fixture()
        let dog = Events<SeenObject>()
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            f.tokens.append(realm.objects(NDog.self).first!.observe { (c: ObjectChange<NDog>) in dog.add(SeenObject(c)) })
        }
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 2 }
        #expect(dog.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
        try f.run { realm in
            commitBeforeTheWriteLock(f.config) { r in r.objects(NDog.self).first!.age = 3 }
            try realm.write(withoutNotifying: [f.tokens[0]]) { realm.objects(NDog.self).first!.name = "b" }
        }
        #expect(dog.next() == SeenObject(names: ["age"], old: ["2"], new: ["3"]))
        // the next change after it: old values as of the write
        f.writeElsewhere { r in r.objects(NDog.self).first!.name = "c" }
        #expect(dog.next() == SeenObject(names: ["name"], old: ["b"], new: ["c"]))
        #expect(dog.waiting == 0)
        try f.finish()
    }
}

private struct CancelledWrite: Error {}

/// Arms the test hook so that the next write on the file of `config`, once it has delivered what
/// was pending and before it takes the write lock, waits for `body` to be committed by another
/// Realm on another thread.
private func commitBeforeTheWriteLock(_ config: Realm.Configuration, _ body: @escaping @Sendable (Realm) -> Void) {
    RealmCore.testHooksArmed.store(true, ordering: .relaxed)
    RealmCore.beforePromoteForTesting.withLock {
        $0[config.path] = {
            onNewThread {
                let r = try! Realm(configuration: config)
                try! r.write { body(r) }
            }
        }
    }
}
