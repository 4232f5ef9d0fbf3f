import Dispatch
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

final class NSetOwner: Object {
    @Persisted var name = ""
    @Persisted var toys: MutableSet<NToy>
}

/// Holds the next watch making of a file (on the thread that makes new query and collection
/// observers' watches, where a query observer's initial query runs) until `release()`:
/// `entered` is signalled once it is held. It gives up after 30 s, so a test that fails does
/// not hang.
final class HoldMaking: @unchecked Sendable {
    let entered = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    init(_ path: String) {
        FileNotifier.makingHooksArmed.store(true, ordering: .relaxed)
        FileNotifier.beforeMakingForTesting.withLock {
            $0[path] = { [self] in
                entered.signal()
                _ = released.wait(timeout: .now() + 30)
            }
        }
    }

    func waitEntered() -> Bool { entered.wait(timeout: .now() + 10) == .success }
    func release() { released.signal() }
}

/// Another path to a fixture's file (a symbolic link to its folder, removed with this value): a
/// commit through it calls no `committed()` on the notifier of the fixture's path, which sees it
/// only when its thread wakes and advances, as it sees another process's commit.
final class OtherHandle: @unchecked Sendable {
    let config: Realm.Configuration
    private let link: URL

    init(_ f: Fixture) throws {
        link = f.dir.url.deletingLastPathComponent().appendingPathComponent("alias-\(UUID().uuidString)")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: f.dir.url)
        config = Realm.Configuration(fileURL: link.appendingPathComponent("test.realm"), objectTypes: f.schema)
    }

    deinit { try? FileManager.default.removeItem(at: link) }

    /// Commits `body` through this path on a new thread, and waits for it.
    func write(_ body: @escaping @Sendable (Realm) -> Void) {
        let config = self.config
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write { body(r) }
        }
    }
}

extension Fixture {
    /// Holds the notifier thread in the watch making of a new observer of NToy, registered
    /// through the fixture's Realm on `queue` (nil: the fixture's run loop) with its change sets
    /// in `held`, and returns once it is held: observers registered next are made in the thread's
    /// next batch, after `release()`.
    func holdWatchMaking(on queue: DispatchQueue?, _ held: Events<Seen>) throws -> HoldMaking {
        let hold = HoldMaking(config.path)
        try run { realm in self.tokens.append(realm.objects(NToy.self).observe(on: queue) { held.add(Seen($0)) }) }
        #expect(hold.waitEntered())
        return hold
    }
}

/// Where and when observers' watches are made (docs/ARCHITECTURE.md, Change notifications).
@Suite struct NotificationMakingTests {
    /// A query observer's initial query runs without the notifier's lock: while it is held (a
    /// slow query), another observer of the file still gets the delivery of another thread's
    /// commit, and that commit does not wait for the query either.
    @Test func aSlowInitialQueryDoesNotHoldOtherObserversDeliveries() throws {
        let f = try Fixture()
        let other = Events<Seen>(), slow = Events<Seen>()
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            f.tokens.append(realm.objects(NDog.self).observe { other.add(Seen($0)) })
        }
        #expect(other.next() == Seen(initial: true, count: 1))
        let hold = HoldMaking(f.config.path)
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).filter("age > 1").observe { slow.add(Seen($0)) })
        }
        #expect(hold.waitEntered())
        let committed = DispatchSemaphore(value: 0)
        let config = f.config
        Thread {
            let r = try! Realm(configuration: config)
            try! r.write { r.create(NDog.self, value: ["name": "b", "age": 2]) }
            committed.signal()
        }.start()
        // (the initial query is still held here)
        let got = other.next(timeout: 10)
        let commitDone = committed.wait(timeout: .now() + 10) == .success
        hold.release()
        #expect(got == Seen(count: 2, ins: [1]))
        #expect(commitDone)
        // the held query's watch is made at the version it started from and caught up: the
        // commit made meanwhile is in its initial state
        #expect(slow.next() == Seen(initial: true, count: 1))
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "c", "age": 3]) }
        #expect(slow.next() == Seen(count: 2, ins: [1]))
        #expect(other.next() == Seen(count: 3, ins: [2]))
        try f.finish()
    }

    /// List, MutableSet, Map and LinkingObjects observers (and a query over a List) have their
    /// watches made on the notifier thread, as query observers do, on a run loop and on a queue,
    /// and deliver as before.
    @Test(arguments: [false, true])
    func collectionWatchesAreMadeOnTheNotifierThread(onQueue: Bool) throws {
        let f = try Fixture(models: [NToy.self, NDog.self, NPerson.self, NSetOwner.self])
        let list = Events<Seen>(), filtered = Events<Seen>(), owners = Events<Seen>(), set = Events<Seen>()
        let map = Events<String>()
        let queue = onQueue ? DispatchQueue(label: "made-on-notifier") : nil
        try f.run { realm in
            try realm.write {
                let p = realm.create(NPerson.self, value: ["name": "Ann"])
                for n in ["a", "b", "c"] { p.dogs.append(NDog(value: ["name": n, "age": 1])) }
                p.tags["x"] = 1
                realm.create(NSetOwner.self).toys.insert(NToy(value: ["brand": "t"]))
            }
            let ann = realm.objects(NPerson.self).first!
            f.tokens.append(ann.dogs.observe(on: queue) { list.add(Seen($0)) })
            f.tokens.append(ann.dogs.filter("age > 0").observe(on: queue) { filtered.add(Seen($0)) })
            f.tokens.append(ann.dogs[0].owners.observe(on: queue) { owners.add(Seen($0)) })
            f.tokens.append(realm.objects(NSetOwner.self).first!.toys.observe(on: queue) { set.add(Seen($0)) })
            f.tokens.append(ann.tags.observe(keyPaths: nil, on: queue) { c in
                switch c {
                case .initial(let m): map.add("initial \(m.count)")
                case .update(_, let d, let i, let m): map.add("update \(d) \(i) \(m)")
                case .error: map.add("error")
                }
            })
        }
        #expect(list.next() == Seen(initial: true, count: 3))
        #expect(filtered.next() == Seen(initial: true, count: 3))
        #expect(owners.next() == Seen(initial: true, count: 1))
        #expect(set.next() == Seen(initial: true, count: 1))
        #expect(map.next() == "initial 1")
        for token in f.tokens { #expect(token.registration?.madeOnRegisteringThread == false) }
        f.writeElsewhere { r in
            let ann = r.objects(NPerson.self).first!
            ann.dogs.append(NDog(value: ["name": "d", "age": 2]))
            ann.tags["y"] = 2
            r.objects(NSetOwner.self).first!.toys.insert(NToy(value: ["brand": "u"]))
        }
        #expect(list.next() == Seen(count: 4, ins: [3]))
        #expect(filtered.next() == Seen(count: 4, ins: [3]))
        // (Ann's `dogs` changed: the default filter covers every property of the elements)
        #expect(owners.next() == Seen(count: 1, mod: [0]))
        #expect(set.next()?.count == 2)
        #expect(map.next() == "update [] [\"y\"] []")
        try f.finish()
    }

    /// A List, Map or LinkingObjects whose owner is deleted after registering and before the
    /// notifier makes its watch gets one `.initial`, with the collection invalidated, and
    /// nothing after it, as RealmSwift's invalidated-collection observers do
    /// (docs/ARCHITECTURE.md, Change notifications). On a run loop and on a queue.
    @Test(arguments: [false, true])
    func ownerDeletedBeforeTheWatchIsMadeGivesAnInvalidatedInitial(onQueue: Bool) throws {
        let f = try Fixture()
        let queue = onQueue ? DispatchQueue(label: "deleted-before-made") : nil
        let held = Events<Seen>(), list = Events<String>(), map = Events<String>(), owners = Events<String>()
        func record<C: RealmCollection>(_ e: Events<String>) -> (RealmCollectionChange<C>) -> Void {
            { c in
                switch c {
                case .initial(let x): e.add(x.isInvalidated ? "initial invalidated" : "initial \(x.count)")
                case .update: e.add("update")
                case .error: e.add("error")
                }
            }
        }
        try f.run { realm in
            try realm.write {
                let p = realm.create(NPerson.self, value: ["name": "Ann"])
                for n in ["a", "b"] { p.dogs.append(NDog(value: ["name": n])) }
                p.tags["x"] = 1
            }
        }
        // the notifier thread is held while it makes another observer's watch, so the ones
        // registered next are made at its next round, after the delete below
        let hold = try f.holdWatchMaking(on: queue, held)
        try f.run { realm in
            let ann = realm.objects(NPerson.self).first!
            f.tokens.append(ann.dogs.observe(on: queue, record(list)))
            f.tokens.append(ann.dogs[0].owners.observe(on: queue, record(owners)))
            f.tokens.append(ann.tags.observe(keyPaths: nil, on: queue) { c in
                switch c {
                case .initial(let m): map.add(m.isInvalidated ? "initial invalidated" : "initial \(m.count)")
                case .update: map.add("update")
                case .error: map.add("error")
                }
            })
            try realm.write {
                realm.delete(ann.dogs[0])
                realm.delete(ann)
            }
        }
        hold.release()
        #expect(held.next() == Seen(initial: true, count: 0))
        #expect(list.next() == "initial invalidated")
        #expect(owners.next() == "initial invalidated")
        #expect(map.next() == "initial invalidated")
        f.writeElsewhere { r in
            r.create(NToy.self)
            r.objects(NDog.self).first!.name = "B"
        }
        #expect(held.next() == Seen(count: 1, ins: [0]))
        // (one delivery calls every block of the target: it has ended once the thread or queue
        // runs the next block)
        if let queue { queue.sync {} } else { try f.run { _ in } }
        #expect(list.waiting == 0 && owners.waiting == 0 && map.waiting == 0)
        try f.finish()
    }

    /// A List, LinkingObjects and Map whose owner is deleted after their watches were made on
    /// the side notifier and before they are handed over under the lock (the side notifier then
    /// catches up past the delete): one `.initial`, with the collection invalidated, and nothing
    /// after it, as when the owner is deleted before the watch is made. On a run loop and on a
    /// queue.
    @Test(arguments: [false, true])
    func ownerDeletedBetweenMakingAndHandOverGivesAnInvalidatedInitial(onQueue: Bool) throws {
        let f = try Fixture()
        let queue = onQueue ? DispatchQueue(label: "deleted-before-hand-over") : nil
        let held = Events<Seen>(), list = Events<String>(), owners = Events<String>(), map = Events<String>()
        try f.run { realm in
            try realm.write {
                let p = realm.create(NPerson.self, value: ["name": "Ann"])
                for n in ["a", "b"] { p.dogs.append(NDog(value: ["name": n])) }
                p.tags["x"] = 1
            }
        }
        // the three observers' watches are made in one batch (the notifier thread is held in
        // another observer's making while they register), which waits before its hand-over
        let path = f.config.path
        let entered = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)
        let afterMaking = UncheckedBox<(@Sendable (Int) -> Void)?>(nil)
        afterMaking.value = { count in
            if count < 3 {
                FileNotifier.afterMakingForTesting.withLock { $0[path] = afterMaking.value }
                return
            }
            entered.signal()
            _ = go.wait(timeout: .now() + 30)
        }
        FileNotifier.afterMakingForTesting.withLock { $0[path] = afterMaking.value }
        let hold = try f.holdWatchMaking(on: queue, held)
        try f.run { realm in
            let ann = realm.objects(NPerson.self).first!
            f.tokens.append(ann.dogs.observe(on: queue) { c in
                if case .initial(let x) = c { list.add(x.isInvalidated ? "initial invalidated" : "initial \(x.count)") } else { list.add("update") }
            })
            f.tokens.append(ann.dogs[0].owners.observe(on: queue) { c in
                if case .initial(let x) = c { owners.add(x.isInvalidated ? "initial invalidated" : "initial \(x.count)") } else { owners.add("update") }
            })
            f.tokens.append(ann.tags.observe(keyPaths: nil, on: queue) { c in
                if case .initial(let m) = c { map.add(m.isInvalidated ? "initial invalidated" : "initial \(m.count)") } else { map.add("update") }
            })
        }
        hold.release()
        #expect(held.next() == Seen(initial: true, count: 0))
        #expect(entered.wait(timeout: .now() + 10) == .success)
        afterMaking.value = nil
        // (made: the owners existed at the side notifier's version)
        f.writeElsewhere { r in
            let ann = r.objects(NPerson.self).first!
            r.delete(ann.dogs[0])
            r.delete(ann)
        }
        go.signal()
        #expect(list.next() == "initial invalidated")
        #expect(owners.next() == "initial invalidated")
        #expect(map.next() == "initial invalidated")
        // (their watches were handed over: made while the owners existed)
        try f.run { _ in for token in f.tokens.suffix(3) { #expect(token.registration?.watch != nil) } }
        f.writeElsewhere { r in
            r.create(NToy.self)
            r.objects(NDog.self).first!.name = "B"
        }
        #expect(held.next() == Seen(count: 1, ins: [0]))
        if let queue { queue.sync {} } else { try f.run { _ in } }
        #expect(list.waiting == 0 && owners.waiting == 0 && map.waiting == 0, "\(list.all) \(owners.all) \(map.all)")
        try f.finish()
    }

    /// A query over a List (`filter`) and over LinkingObjects (`sorted`) whose owner is deleted
    /// before the notifier makes their watch: one `.initial`, with the results invalidated, as the
    /// List's and the LinkingObjects' own observers get, and nothing after it. On a run loop and
    /// on a queue.
    @Test(arguments: [false, true])
    func derivedQueryOverADeletedOwnerGivesAnInvalidatedInitial(onQueue: Bool) throws {
        let f = try Fixture()
        let queue = onQueue ? DispatchQueue(label: "derived-deleted-before-made") : nil
        let held = Events<Seen>(), filtered = Events<String>(), sorted = Events<String>()
        try f.run { realm in
            try realm.write {
                let p = realm.create(NPerson.self, value: ["name": "Ann"])
                for n in ["a", "b"] { p.dogs.append(NDog(value: ["name": n, "age": 1])) }
            }
        }
        let hold = try f.holdWatchMaking(on: queue, held)
        try f.run { realm in
            let ann = realm.objects(NPerson.self).first!
            f.tokens.append(ann.dogs.filter("age > 0").observe(on: queue) { c in
                if case .initial(let x) = c { filtered.add(x.isInvalidated ? "initial invalidated" : "initial \(x.count)") } else { filtered.add("update") }
            })
            f.tokens.append(ann.dogs[0].owners.sorted(byKeyPath: "name").observe(on: queue) { c in
                if case .initial(let x) = c { sorted.add(x.isInvalidated ? "initial invalidated" : "initial \(x.count)") } else { sorted.add("update") }
            })
            try realm.write {
                realm.delete(ann.dogs[0])
                realm.delete(ann)
            }
        }
        hold.release()
        #expect(held.next() == Seen(initial: true, count: 0))
        #expect(filtered.next() == "initial invalidated")
        #expect(sorted.next() == "initial invalidated")
        f.writeElsewhere { r in
            r.create(NToy.self)
            r.objects(NDog.self).first!.age = 2
        }
        #expect(held.next() == Seen(count: 1, ins: [0]))
        if let queue { queue.sync {} } else { try f.run { _ in } }
        #expect(filtered.waiting == 0 && sorted.waiting == 0, "\(filtered.all) \(sorted.all)")
        try f.finish()
    }

    /// An observer unregistered while the notifier thread makes its watch: what its block holds
    /// (here an object that records which thread its deinit runs on; in an app, a Realm or another
    /// observer's token) is let go on the thread that unregistered, never on the notifier thread,
    /// whose hold on the observer ends first (docs/ARCHITECTURE.md, Change notifications).
    @Test func anObserverUnregisteredWhileItsWatchIsMadeIsNotReleasedOnTheNotifierThread() throws {
        let f = try Fixture()
        let released = Events<String>()
        final class Witness: @unchecked Sendable {
            let events: Events<String>
            init(_ events: Events<String>) { self.events = events }
            deinit {
                let d = Thread.current.threadDictionary
                events.add(d["owner"] != nil ? "own thread" : d["unregistering"] != nil ? "unregistering" : "other")
            }
        }
        let token = UncheckedBox<NotificationToken?>(nil)
        let hold = HoldMaking(f.config.path)
        try f.run { realm in
            Thread.current.threadDictionary["owner"] = true
            let witness = Witness(released)
            token.value = realm.objects(NDog.self).observe { _ in withExtendedLifetime(witness) {} }
        }
        #expect(hold.waitEntered())
        let done = DispatchSemaphore(value: 0)
        let unregistering = Thread {
            Thread.current.threadDictionary["unregistering"] = true
            // (the token's deinit unregisters the observer)
            token.value = nil
            done.signal()
        }
        unregistering.start()
        // the observer is unregistered (its thread may wait for the watch making to let go)
        let deadline = Date().addingTimeInterval(10)
        while (FileNotifier.running(f.config.path)?.observerCount ?? 0) > 0 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        hold.release()
        #expect(done.wait(timeout: .now() + 10) == .success)
        // (the block goes with the observer's Realm, on the observer's own thread)
        #expect(released.next() == "own thread")
        try f.finish()
    }

    /// `refresh()` inside an observer's block, on the delivering Realm, does nothing (returns
    /// false, the Realm does not move), as in RealmSwift: another observer of that Realm still
    /// gets the change set the delivery took for it first, then the next commit's. On a queue
    /// and on a run loop.
    @Test(arguments: [true, false])
    func refreshInsideABlockDoesNothing(onQueue: Bool) throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "refresh-nested")
        let config = f.config
        let a = Events<Seen>(), b = Events<Seen>(), refreshed = Events<String>()
        let box = UncheckedBox<Realm?>(nil)
        let once = UncheckedBox(false)
        let register = {
            let r = onQueue ? try Realm(configuration: config, queue: queue) : f.realm!
            box.value = r
            f.tokens.append(r.objects(NDog.self).observe(on: onQueue ? queue : nil) { c in
                a.add(Seen(c))
                if case .update = c, !once.value {
                    once.value = true
                    onNewThread {
                        let w = try! Realm(configuration: config)
                        try! w.write { w.create(NDog.self, value: ["name": "2"]) }
                    }
                    let moved = box.value!.refresh()
                    refreshed.add("\(moved) \(box.value!.objects(NDog.self).count)")
                }
            })
            f.tokens.append(r.objects(NDog.self).observe(on: onQueue ? queue : nil) { b.add(Seen($0)) })
        }
        if onQueue { try queue.sync(execute: register) } else { try f.run { _ in try register() } }
        #expect(a.next() == Seen(initial: true, count: 0))
        #expect(b.next() == Seen(initial: true, count: 0))
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "1"]) }
        #expect(a.next()?.insertions == [0])
        // (the Realm still reads the first commit)
        #expect(refreshed.next() == "false 1")
        #expect(b.next()?.insertions == [0])
        #expect(b.next()?.insertions == [1])
        #expect(a.next()?.insertions == [1])
        if onQueue { queue.sync { box.value = nil } } else { box.value = nil }
        try f.finish()
    }

    /// A Realm observer of one Realm gets `.didChange` for a commit that this process's
    /// notifier had not computed (another process's, here one made through another path to the
    /// file) when another Realm computes it: `refresh()` making a new List observer's watch
    /// ("watch": the notifier first advances to the version the registering Realm reads),
    /// `refresh()` before it delivers to that Realm's observers ("deliver"), or registering an
    /// object observer through a Realm that reads that version ("object"). The notifier thread
    /// is held in another observer's watch making meanwhile, so it finds that version computed
    /// when it wakes.
    @Test(arguments: ["watch", "deliver", "object"])
    func realmObserversGetTheVersionAnotherRealmComputes(_ how: String) throws {
        let newWatch = how == "watch"
        let f = try Fixture()
        let heldQueue = DispatchQueue(label: "refresh-computes-held")
        let held = Events<Seen>(), changes = Events<String>(), dogs = Events<Seen>(), list = Events<Seen>()
        let handle = try OtherHandle(f)
        let config = f.config
        try f.run { realm in
            try realm.write { realm.create(NPerson.self, value: ["name": "Ann"]) }
            if how == "deliver" { f.tokens.append(realm.objects(NDog.self).observe { dogs.add(Seen($0)) }) }
        }
        if how == "deliver" { #expect(dogs.next() == Seen(initial: true, count: 0)) }
        // a Realm observer on another thread
        let other = RunLoopThread()
        defer { other.stop() }
        let otherToken = try other.sync {
            let r = try Realm(configuration: config)
            return r.observe { n, _ in changes.add("\(n)") }
        }
        let hold = try f.holdWatchMaking(on: heldQueue, held)
        handle.write { r in r.objects(NPerson.self).first!.dogs.append(NDog(value: ["name": "a"])) }
        try f.run { realm in
            if how == "object" {
                // (the Realm, with no observer of its own, reads the new commit; its object
                // observer's watch starts at that version)
                realm.refresh()
                f.tokens.append(realm.objects(NPerson.self).first!.observe { (_: ObjectChange<NPerson>) in })
                return
            }
            if newWatch {
                // (the same, with a List observer, whose watch `refresh()` makes)
                realm.refresh()
                f.tokens.append(realm.objects(NPerson.self).first!.dogs.observe { list.add(Seen($0)) })
            }
            realm.refresh()
        }
        if newWatch {
            #expect(list.next() == Seen(initial: true, count: 1))
        } else if how == "deliver" {
            #expect(dogs.next() == Seen(count: 1, ins: [0]))
        }
        hold.release()
        #expect(held.next() == Seen(initial: true, count: 0))
        #expect(changes.next() == "didChange")
        try other.sync { otherToken.invalidate() }
        try f.finish()
    }

    /// A Realm observer on another thread gets `.didChange` for a commit that skips a token
    /// (`write(withoutNotifying:)`), whose version that write's own advance computed.
    @Test func realmObserversGetACommitThatSkipsAToken() throws {
        let f = try Fixture()
        let changes = Events<String>(), dogs = Events<Seen>()
        let config = f.config
        let other = RunLoopThread()
        defer { other.stop() }
        let otherToken = try other.sync {
            let r = try Realm(configuration: config)
            return r.observe { n, _ in changes.add("\(n)") }
        }
        try f.run { realm in f.tokens.append(realm.objects(NDog.self).observe { dogs.add(Seen($0)) }) }
        #expect(dogs.next() == Seen(initial: true, count: 0))
        _ = try f.run { realm in
            try realm.write(withoutNotifying: [f.tokens[0]]) { realm.create(NDog.self, value: ["name": "a"]) }
        }
        #expect(changes.next() == "didChange")
        try other.sync { otherToken.invalidate() }
        try f.finish()
    }

    /// `beginWrite` on a queue-confined Realm first delivers what that queue's observers were
    /// not given yet, as on a run loop: another thread's commit is reported on its own, before
    /// the write, and the write's own change comes in the next change set.
    @Test func beginWriteOnAQueueRealmDeliversPendingNotificationsFirst() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "queue-begin-write")
        let seen = Events<Seen>(), object = Events<SeenObject>()
        let box = UncheckedBox<Realm?>(nil)
        let config = f.config
        try queue.sync {
            let r = try Realm(configuration: config, queue: queue)
            try r.write { r.create(NDog.self, value: ["name": "a", "age": 1]) }
            box.value = r
            f.tokens.append(r.objects(NDog.self).observe(on: queue) { seen.add(Seen($0)) })
            f.tokens.append(r.objects(NDog.self).first!.observe(on: queue) { (c: ObjectChange<NDog>) in
                object.add(SeenObject(c))
            })
        }
        #expect(seen.next() == Seen(initial: true, count: 1))
        try queue.sync {
            let r = box.value!
            f.writeElsewhere { w in
                w.create(NDog.self, value: ["name": "b"])
                w.objects(NDog.self).first!.age = 2
            }
            r.beginWrite()
            // delivered before the write began, on its own
            #expect(seen.waiting == 1)
            #expect(object.waiting == 1)
            r.create(NDog.self, value: ["name": "c"])
            r.objects(NDog.self).first!.age = 3
            try r.commitWrite()
        }
        // (each commit also modified the first dog, position 0)
        #expect(seen.next() == Seen(count: 2, ins: [1], mod: [0]))
        #expect(object.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
        #expect(seen.next() == Seen(count: 3, ins: [2], mod: [0]))
        // (a write through the delivering Realm: its Realm reads the new values already)
        #expect(object.next() == SeenObject(names: ["age"], old: ["nil"], new: ["3"]))
        queue.sync { box.value = nil }
        try f.finish()
    }

    /// An object observer registered on a queue through a Realm that is not behind the
    /// notifier takes no frozen copy of that Realm (a file open each): its first change set's
    /// old values are read in the queue's Realm.
    @Test func objectObserversOnAQueueTakeNoFrozenCopyWhenNotBehind() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "no-frozen-copy")
        let dog = Events<SeenObject>()
        let path = f.config.path
        var opened = -1
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            let before = RealmCore.frozenOpens.withLock { $0[path] ?? 0 }
            let d = realm.objects(NDog.self).first!
            for _ in 0..<10 {
                f.tokens.append(d.observe(on: queue) { (c: ObjectChange<NDog>) in dog.add(SeenObject(c)) })
            }
            opened = RealmCore.frozenOpens.withLock { $0[path] ?? 0 } - before
        }
        #expect(opened == 0)
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 2 }
        for _ in 0..<10 { #expect(dog.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"])) }
        #expect(dog.waiting == 0)
        try f.finish()
    }
}
