import Dispatch
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// Records where the Realms of a file confined to one queue are let go (their `deinit`): on
/// that queue, on the notifier thread, or on another thread, and whether the notifier's lock
/// was held then.
final class ReleaseProbe: @unchecked Sendable {
    let events = Events<String>()
    private let path: String

    init(path: String, queue: DispatchQueue, notifier: FileNotifier) {
        self.path = path
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let events = self.events
        RealmCore.deinitHooksArmed.store(true, ordering: .relaxed)
        RealmCore.deinitForTesting.withLock {
            $0[path] = { confinedTo in
                guard confinedTo === queue else { return }
                var place = DispatchQueue.getSpecific(key: key) == true ? "queue"
                    : Thread.current.name == "SwiftStore notifier" ? "notifier thread" : "other thread"
                if notifier.lockIsHeldByCurrentThread { place += " under the lock" }
                events.add(place)
            }
        }
    }

    func stop() {
        RealmCore.deinitForTesting.withLock { $0[path] = nil }
    }
}

/// An AnyRealmValue property, whose nested list or dictionary can be a query's argument.
final class NRelMixed: Object {
    @Persisted var name = ""
    @Persisted var value: AnyRealmValue
}

/// A person's dogs projected to their names, for a ProjectedCollection observed on a queue.
final class NRelDogNames: Projection<NPerson> {
    @Projected(\NPerson.dogs.projectTo.name) var dogNames: ProjectedCollection<String>
}

/// Where the notifier lets go of what it holds of observers and delivery targets
/// (docs/ARCHITECTURE.md, Change notifications): a Realm is let go on its own thread or queue,
/// never on the notifier thread, never under the notifier's lock.
@Suite struct NotificationReleaseTests {
    /// A fixture with an observer of NDog on a new queue, registered through the fixture's
    /// Realm, whose initial notification was delivered; its token (released by setting the box's
    /// value to nil); a probe of where the queue's Realms are let go.
    private func queueObserver(_ label: String) throws
        -> (Fixture, DispatchQueue, UncheckedBox<NotificationToken?>, ReleaseProbe) {
        let f = try Fixture()
        let queue = DispatchQueue(label: label)
        let seen = Events<Seen>()
        let token = UncheckedBox<NotificationToken?>(nil)
        try f.run { realm in token.value = realm.objects(NDog.self).observe(on: queue) { seen.add(Seen($0)) } }
        #expect(seen.next() == Seen(initial: true, count: 0))
        let notifier = try #require(FileNotifier.running(f.config.path))
        return (f, queue, token, ReleaseProbe(path: f.config.path, queue: queue, notifier: notifier))
    }

    /// A queue observer whose token is released on another thread: the queue's Realm, which
    /// only its delivery target held, is let go on the queue, not on the releasing thread.
    @Test func aQueueTargetsRealmIsLetGoOnItsQueue() throws {
        let (f, queue, token, probe) = try queueObserver("release-on-queue")
        defer { probe.stop() }
        // (the initial delivery's block has ended and been let go)
        queue.sync {}
        queue.sync {}
        // (the token released: the observer goes, with all it holds)
        try f.run { _ in token.value = nil }
        #expect(probe.events.next(timeout: 30) == "queue")
        try f.finish()
    }

    /// The notifier thread computes another handle's commit and schedules a queue observer's
    /// delivery; the observer's token is released before that round of the thread ends, and the
    /// delivery runs (finding nothing) and ends. What the notifier thread kept of the round, and
    /// what the delivery's block kept, is let go after the queue ran the block (on the notifier
    /// thread, or on the thread that ran the block once it left the queue): neither may hold the
    /// queue's Realm last.
    @Test func aTargetScheduledByTheNotifierThreadIsNotLetGoOffItsQueue() throws {
        let (f, queue, token, probe) = try queueObserver("release-scheduled")
        defer { probe.stop() }
        let other = try OtherHandle(f)
        let notifier = try #require(FileNotifier.running(f.config.path))
        // the notifier thread waits once it scheduled the deliveries of the round that computed
        // the commit below
        let path = f.config.path
        let entered = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)
        let before = notifier.notifiedVersion
        let hold = UncheckedBox<(@Sendable () -> Void)?>(nil)
        hold.value = {
            if notifier.notifiedVersion <= before {
                FileNotifier.afterSchedulingForTesting.withLock { $0[path] = hold.value }
                return
            }
            entered.signal()
            _ = go.wait(timeout: .now() + 30)
        }
        FileNotifier.makingHooksArmed.store(true, ordering: .relaxed)
        FileNotifier.afterSchedulingForTesting.withLock { $0[path] = hold.value }
        other.write { r in r.create(NDog.self, value: ["name": "a"]) }
        #expect(entered.wait(timeout: .now() + 10) == .success)
        hold.value = nil
        try f.run { _ in token.value = nil }
        queue.sync {}
        go.signal()
        #expect(probe.events.next(timeout: 30) == "queue")
        try f.finish()
    }

    /// Two observers on one queue: an object observer, whose block keeps an accessor of the
    /// queue's Realm (`DeliveredObject`), and a query observer. The object observer's token is
    /// released on one thread, which stops just after unregistering, while the target still
    /// holds the queue's Realm; the query observer's token is then released on another, which
    /// drops the target and lets its Realm go on the queue. What the first thread took of its
    /// observer goes on the queue too: the accessor is not the queue's Realm's last reference
    /// off the queue.
    @Test func whatANonLastObserverHoldsOfAQueuesRealmGoesOnTheQueue() throws {
        let (f, queue, token, probe) = try queueObserver("release-not-last")
        defer { probe.stop() }
        let changed = Events<String>()
        let objectToken = UncheckedBox<NotificationToken?>(nil)
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "Rex"]) }
            let dog = realm.objects(NDog.self).first!
            objectToken.value = dog.observe(on: queue) { (change: ObjectChange<NDog>) in
                if case .change(let d, _) = change { changed.add(d.name) }
            }
            try realm.write { dog.name = "Max" }
        }
        #expect(changed.next() == "Max")
        queue.sync {}
        queue.sync {}
        let path = f.config.path
        let entered = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)
        FileNotifier.makingHooksArmed.store(true, ordering: .relaxed)
        FileNotifier.afterUnregisteringForTesting.withLock {
            $0[path] = {
                entered.signal()
                _ = go.wait(timeout: .now() + 30)
            }
        }
        let first = Thread { objectToken.value = nil }
        first.start()
        #expect(entered.wait(timeout: .now() + 10) == .success)
        token.value = nil
        // (the target's Realm was let go in a block on the queue, which ran)
        queue.sync {}
        go.signal()
        #expect(probe.events.next(timeout: 30) == "queue")
        try f.finish()
    }

    /// A run-loop observer whose token is released on another thread, through a Realm that its
    /// thread no longer holds: the Realm, which the observer and its delivery target held last,
    /// is let go on its own thread (its run loop), not on the releasing thread.
    @Test func aRunLoopTargetsRealmIsLetGoOnItsThread() throws {
        let dir = TempDir()
        let config = dir.config([NToy.self, NDog.self, NPerson.self])
        let owner = RunLoopThread()
        defer { owner.stop() }
        let seen = Events<Seen>(), released = Events<String>()
        let token = UncheckedBox<NotificationToken?>(nil)
        try owner.sync {
            Thread.current.threadDictionary["owner"] = true
            let realm = try Realm(configuration: config)
            token.value = realm.objects(NDog.self).observe { seen.add(Seen($0)) }
        }
        #expect(seen.next() == Seen(initial: true, count: 0))
        let path = config.path
        RealmCore.deinitHooksArmed.store(true, ordering: .relaxed)
        RealmCore.deinitForTesting.withLock {
            $0[path] = { _ in released.add(Thread.current.threadDictionary["owner"] != nil ? "own thread" : "other thread") }
        }
        defer { RealmCore.deinitForTesting.withLock { $0[path] = nil } }
        // (the owner's run loop is busy while the token goes, then runs again)
        let busy = DispatchSemaphore(value: 0), free = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { try? owner.sync { busy.signal(); free.wait() } }
        busy.wait()
        token.value = nil
        free.signal()
        #expect(released.next(timeout: 30) == "own thread")
    }

    /// A run-loop observer's token invalidated on another thread; the owner's run loop turns
    /// (and lets go of what the delivery target held); the token itself is released later, on
    /// that other thread. The observer's block (its Results) held the Realm too: the Realm is
    /// still let go on its own thread, not where the token object goes.
    @Test func anInvalidatedTokenReleasedOnAnotherThreadLetsItsRealmGoOnItsThread() throws {
        let dir = TempDir()
        let config = dir.config([NToy.self, NDog.self, NPerson.self])
        let owner = RunLoopThread()
        defer { owner.stop() }
        let seen = Events<Seen>(), released = Events<String>()
        let token = UncheckedBox<NotificationToken?>(nil)
        try owner.sync {
            Thread.current.threadDictionary["owner"] = true
            let realm = try Realm(configuration: config)
            token.value = realm.objects(NDog.self).observe { seen.add(Seen($0)) }
        }
        #expect(seen.next() == Seen(initial: true, count: 0))
        let path = config.path
        RealmCore.deinitHooksArmed.store(true, ordering: .relaxed)
        RealmCore.deinitForTesting.withLock {
            $0[path] = { _ in released.add(Thread.current.threadDictionary["owner"] != nil ? "own thread" : "other thread") }
        }
        defer { RealmCore.deinitForTesting.withLock { $0[path] = nil } }
        token.value!.invalidate()
        // (two round trips: whatever the invalidation parked on the owner's run loop has run)
        try owner.sync {}
        try owner.sync {}
        token.value = nil
        #expect(released.next(timeout: 30) == "own thread")
    }

    /// Where the Realms of one queue observer are let go: the observer is registered by
    /// `register` (given the Realm, the queue, and where to record that a delivery came through
    /// the queue's Realm) on a run-loop thread through that thread's Realm, which the thread
    /// then lets go; once the first delivery ran, its token is released on a third thread (the
    /// test's). Each Realm let go is recorded as "registering Realm" or "queue's Realm" with
    /// where: "on its thread", "on the queue", "elsewhere". Every delivery records whether its
    /// value reads the queue's Realm ("queue's Realm" or "another Realm"). `holdMaking`: the
    /// watch making of the observer (where a query observer's initial query runs) is held until
    /// the registering thread let go of its Realm.
    private func releasePlaces(_ label: String, holdMaking: Bool = false,
                               _ register: @escaping (Realm, DispatchQueue, Events<String>) throws -> NotificationToken)
        throws -> (released: [String], delivered: [String]) {
        let dir = TempDir()
        let config = dir.config([NToy.self, NDog.self, NPerson.self, NSetOwner.self, NRelMixed.self])
        let owner = RunLoopThread()
        defer { owner.stop() }
        let queue = DispatchQueue(label: label)
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let released = Events<String>(), delivered = Events<String>()
        let path = config.path
        RealmCore.deinitHooksArmed.store(true, ordering: .relaxed)
        RealmCore.deinitForTesting.withLock {
            $0[path] = { q in
                let place = Thread.current.threadDictionary["owner"] != nil ? "on its thread"
                    : DispatchQueue.getSpecific(key: key) == true ? "on the queue" : "elsewhere"
                if q == nil { released.add("registering Realm \(place)") }
                if q === queue { released.add("queue's Realm \(place)") }
            }
        }
        defer { RealmCore.deinitForTesting.withLock { $0[path] = nil } }
        let token = UncheckedBox<NotificationToken?>(nil)
        let hold = holdMaking ? HoldMaking(path) : nil
        try owner.sync {
            Thread.current.threadDictionary["owner"] = true
            let realm = try Realm(configuration: config)
            token.value = try register(realm, queue, delivered)
        }
        if let hold {
            #expect(hold.waitEntered())
            hold.release()
        }
        #expect(delivered.next() != nil)
        // (the delivery's block has ended and been let go)
        queue.sync {}
        queue.sync {}
        token.value = nil
        // both Realms are let go by now or soon: the registering one when its thread let it go
        // (the observer holds none of it), the queue's when the observer went
        var places: [String] = []
        while places.count < 2, let p = released.next(timeout: 30) { places.append(p) }
        queue.sync {}
        try owner.sync {}
        return (released.all.sorted(), delivered.all)
    }

    private static let letGoOnTheirThreads = ["queue's Realm on the queue", "registering Realm on its thread"]

    /// Whether `realm` is the Realm confined to `queue`.
    private static func through(_ realm: Realm?, _ queue: DispatchQueue) -> String {
        realm?.core.queue === queue ? "queue's Realm" : "another Realm"
    }

    /// A queue observer of a table's Results registered through a run-loop thread's Realm,
    /// which that thread then lets go; its token is released on a third thread. The observer
    /// keeps no Results (and so no Realm) of the registering thread: that Realm is let go on
    /// its thread, and the queue's on the queue.
    @Test func theRegisteringRealmOfAQueueObserverIsLetGoOnItsThread() throws {
        let (released, delivered) = try releasePlaces("release-registering") { realm, queue, delivered in
            realm.objects(NDog.self).observe(on: queue) { change in
                if case .initial(let r) = change { delivered.add(Self.through(r.realm, queue)) }
            }
        }
        #expect(released == Self.letGoOnTheirThreads)
        #expect(delivered == ["queue's Realm"])
    }

    /// As above for filtered (with an object as argument), sorted and distinct Results: their
    /// predicates' objects are kept as links, not as objects of the registering Realm.
    @Test func aQueryObserverOnAQueueHoldsNoRealmOfTheRegisteringThread() throws {
        let (released, delivered) = try releasePlaces("release-query") { realm, queue, delivered in
            try realm.write {
                let rex = realm.create(NDog.self, value: ["name": "Rex", "age": 3])
                realm.create(NPerson.self, value: ["name": "Ann", "dogs": [rex]])
                realm.create(NPerson.self, value: ["name": "Ann", "dogs": [rex]])
                realm.create(NPerson.self, value: ["name": "Bob"])
            }
            let rex = realm.objects(NDog.self).first!
            let results = realm.objects(NPerson.self).filter("ANY dogs == %@", rex)
                .sorted(byKeyPath: "name").distinct(by: ["name"])
            return results.observe(on: queue) { change in
                if case .initial(let r) = change {
                    delivered.add(Self.through(r.realm, queue))
                    delivered.add("\(r.count) \(r.first?.name ?? "")")
                }
            }
        }
        #expect(released == Self.letGoOnTheirThreads)
        #expect(delivered == ["queue's Realm", "1 Ann"])
    }

    /// As above for queries whose argument is a collection of objects of the registering Realm
    /// that is not a List, MutableSet or Results (an AnyRealmCollection, LinkingObjects, a Swift
    /// Set, an array slice), or a projection: its objects are kept as links too, not the
    /// collection or the projection.
    @Test func aQueryObserverOnAQueueHoldsNoRealmThroughACollectionArgument() throws {
        func people(_ r: Results<NPerson>, _ queue: DispatchQueue, _ delivered: Events<String>) -> NotificationToken {
            r.observe(on: queue) { change in
                if case .initial(let r) = change { delivered.add("\(r.count) \(r.first?.name ?? "")") }
            }
        }
        let queries: [(String, (Realm, DispatchQueue, Events<String>) -> NotificationToken)] = [
            ("AnyRealmCollection", { people($0.objects(NPerson.self).filter("ANY dogs IN %@", AnyRealmCollection($0.objects(NDog.self))), $1, $2) }),
            ("Set", { people($0.objects(NPerson.self).filter("ANY dogs IN %@", Set($0.objects(NDog.self))), $1, $2) }),
            ("ArraySlice", { people($0.objects(NPerson.self).filter("ANY dogs IN %@", Array($0.objects(NDog.self))[0...]), $1, $2) }),
            ("LinkingObjects", { realm, queue, delivered in
                let owners = realm.objects(NDog.self).first!.owners
                return realm.objects(NDog.self).filter("ANY owners IN %@", owners).observe(on: queue) { change in
                    if case .initial(let r) = change { delivered.add("\(r.count) \(r.first?.name ?? "")") }
                }
            }),
            // (a projection stands for its object in a query)
            ("Projection", { realm, queue, delivered in
                let ann = NRelDogNames(projecting: realm.objects(NPerson.self).filter("name == 'Ann'").first!)
                return realm.objects(NDog.self).filter("ANY owners == %@", ann).observe(on: queue) { change in
                    if case .initial(let r) = change { delivered.add("\(r.count) \(r.first?.name ?? "")") }
                }
            }),
        ]
        for (label, register) in queries {
            let (released, delivered) = try releasePlaces("release-argument-\(label)") { realm, queue, delivered in
                try realm.write {
                    realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]])
                    realm.create(NPerson.self, value: ["name": "Bob"])
                    realm.create(NDog.self, value: ["name": "Max"])
                }
                return register(realm, queue, delivered)
            }
            #expect(released == Self.letGoOnTheirThreads, "\(label)")
            #expect(delivered == [label == "LinkingObjects" || label == "Projection" ? "1 Rex" : "1 Ann"], "\(label)")
        }
    }

    /// As above for a query whose argument is an AnyRealmValue holding a nested list or
    /// dictionary read from an object (an accessor of the registering Realm): the observer keeps
    /// what the argument converts to (a null, as the query reads it), not the nested
    /// collection. Before, the address kept the accessor, and with it the registering Realm,
    /// which then went with the token, off its thread.
    @Test func aQueryObserverOnAQueueHoldsNoRealmThroughANestedCollectionArgument() throws {
        for nested in ["list", "dictionary"] {
            let (released, delivered) = try releasePlaces("release-nested-\(nested)") { realm, queue, delivered in
                try realm.write {
                    let v: AnyRealmValue = nested == "list" ? .fromArray([.int(1), .string("a")])
                        : .fromDictionary(["k": .int(1)])
                    realm.create(NRelMixed.self, value: ["name": "nested", "value": v])
                    realm.create(NRelMixed.self, value: ["name": "none"])
                }
                let holder = realm.objects(NRelMixed.self).filter("name == 'nested'").first!
                let argument = holder.value
                if nested == "list" { precondition(argument.listValue?.realm != nil) }
                else { precondition(argument.dictionaryValue?.realm != nil) }
                return realm.objects(NRelMixed.self).filter("value == %@", argument).observe(on: queue) { change in
                    if case .initial(let r) = change { delivered.add("\(r.count) \(r.first?.name ?? "")") }
                }
            }
            #expect(released == Self.letGoOnTheirThreads, "\(nested)")
            #expect(delivered == ["1 none"], "\(nested)")
        }
    }

    /// A query over a List with an object and an array of objects as arguments, observed on the
    /// run loop and on a queue: the queue's observer runs the query in the queue's Realm with
    /// the objects as links (to translate the List's change set) and gets the same change sets.
    @Test func aQueryOverAListWithObjectArgumentsGivesTheSameChangesOnAQueue() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "release-object-arguments")
        let onRunLoop = Events<Seen>(), onQueue = Events<Seen>()
        try f.run { realm in
            try realm.write {
                let rex = realm.create(NDog.self, value: ["name": "Rex"])
                let max = realm.create(NDog.self, value: ["name": "Max"])
                realm.create(NPerson.self, value: ["name": "Ann", "dogs": [rex, max]])
                realm.create(NPerson.self, value: ["name": "Bob", "dogs": [rex]])
                realm.create(NPerson.self, value: ["name": "Carl"])
            }
            let people = realm.objects(NPerson.self).sorted(byKeyPath: "name")
            let (ann, bob, carl) = (people[0], people[1], people[2])
            let dogs = ann.dogs.filter("ANY owners == %@ OR ANY owners IN %@", bob, [carl])
            f.tokens.append(dogs.observe { onRunLoop.add(Seen($0)) })
            f.tokens.append(dogs.observe(on: queue) { onQueue.add(Seen($0)) })
        }
        #expect(onRunLoop.next() == Seen(initial: true, count: 1))
        #expect(onQueue.next() == Seen(initial: true, count: 1))
        // a dog of Carl's appended to Ann's dogs comes in; Max leaving them goes
        f.writeElsewhere { r in
            let people = r.objects(NPerson.self).sorted(byKeyPath: "name")
            let zed = r.create(NDog.self, value: ["name": "Zed"])
            people[2].dogs.append(zed)
            people[0].dogs.append(zed)
        }
        #expect(onRunLoop.next() == Seen(count: 2, ins: [1]))
        #expect(onQueue.next() == Seen(count: 2, ins: [1]))
        f.writeElsewhere { r in
            let ann = r.objects(NPerson.self).sorted(byKeyPath: "name")[0]
            ann.dogs.remove(at: 0)
        }
        #expect(onRunLoop.next() == Seen(count: 1, del: [0]))
        #expect(onQueue.next() == Seen(count: 1, del: [0]))
        try f.finish()
    }

    /// A query over a List whose argument is an AnyRealmCollection of the registering Realm,
    /// observed on a queue: each delivery runs the query in the queue's Realm (to translate the
    /// List's change set), with the argument's objects as links, never reading the registering
    /// thread's collection on the queue. (In a child process: that read traps.)
    @Test func aQueryOverAListWithACollectionArgumentRunsOnTheQueue() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let config = dir.config([NToy.self, NDog.self, NPerson.self])
            let owner = RunLoopThread()
            defer { owner.stop() }
            let queue = DispatchQueue(label: "release-list-query-argument")
            let seen = Events<Seen>()
            let token = UncheckedBox<NotificationToken?>(nil)
            try! owner.sync {
                let realm = try Realm(configuration: config)
                try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]]) }
                let ann = realm.objects(NPerson.self).first!
                let people = AnyRealmCollection(realm.objects(NPerson.self))
                token.value = ann.dogs.filter("ANY owners IN %@", people).observe(on: queue) { seen.add(Seen($0)) }
            }
            precondition(seen.next() == Seen(initial: true, count: 1))
            try! owner.sync {
                let realm = try Realm(configuration: config)
                try realm.write { realm.objects(NPerson.self).first!.dogs.append(realm.create(NDog.self, value: ["name": "Max"])) }
            }
            precondition(seen.next() == Seen(count: 2, ins: [1]))
            token.value = nil
        }
    }

    /// A query observer on a queue whose watch is made (its initial query run) on the notifier
    /// thread after the registering thread let go of its Realm: the watch maker keeps the query's
    /// text, arguments and names, not that Realm, which goes on its thread, not with the maker
    /// on the notifier thread.
    @Test func aQueryObserversWatchMakerHoldsNoRealmOfTheRegisteringThread() throws {
        let (released, delivered) = try releasePlaces("release-maker", holdMaking: true) { realm, queue, delivered in
            try realm.write { realm.create(NDog.self, value: ["name": "Rex", "age": 3]) }
            return realm.objects(NDog.self).filter("age > %@", 2).observe(on: queue) { change in
                if case .initial(let r) = change { delivered.add("\(Self.through(r.realm, queue)) \(r.count)") }
            }
        }
        #expect(released == Self.letGoOnTheirThreads)
        #expect(delivered == ["queue's Realm 1"])
    }

    /// As above for a List, a MutableSet, a Map and LinkingObjects.
    @Test(arguments: ["list", "set", "map", "backlinks"])
    func aCollectionObserverOnAQueueHoldsNoRealmOfTheRegisteringThread(_ kind: String) throws {
        let (released, delivered) = try releasePlaces("release-\(kind)") { realm, queue, delivered in
            func seen(_ realm: Realm?, _ count: Int) { delivered.add("\(Self.through(realm, queue)) \(count)") }
            switch kind {
            case "list":
                try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]]) }
                return realm.objects(NPerson.self).first!.dogs.observe(on: queue) { change in
                    if case .initial(let l) = change { seen(l.realm, l.count) }
                }
            case "set":
                try realm.write { realm.create(NSetOwner.self, value: ["name": "a", "toys": [["brand": "b"]]]) }
                return realm.objects(NSetOwner.self).first!.toys.observe(on: queue) { change in
                    if case .initial(let c) = change { seen(c.realm, c.count) }
                }
            case "map":
                try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "tags": ["x": 1, "y": 2]]) }
                return realm.objects(NPerson.self).first!.tags.observe(on: queue) { change in
                    if case .initial(let m) = change { seen(m.realm, m.count) }
                }
            default:
                try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]]) }
                return realm.objects(NDog.self).first!.owners.observe(on: queue) { change in
                    if case .initial(let o) = change { seen(o.realm, o.count) }
                }
            }
        }
        #expect(released == Self.letGoOnTheirThreads)
        #expect(delivered == ["queue's Realm \(kind == "map" ? 2 : 1)"])
    }

    /// As above for AnyRealmCollection (of Results, of a List, of LinkingObjects): the block gets
    /// a wrapper of the collection as the queue's Realm reads it, not the registering wrapper.
    @Test func anAnyRealmCollectionObserverOnAQueueHoldsNoRealmOfTheRegisteringThread() throws {
        func observe<E>(_ c: AnyRealmCollection<E>, _ queue: DispatchQueue, _ delivered: Events<String>) -> NotificationToken {
            c.observe(on: queue) { change in
                if case .initial(let c) = change { delivered.add("\(Self.through(c.realm, queue)) \(c.count)") }
            }
        }
        let wrappers: [(String, (Realm, DispatchQueue, Events<String>) -> NotificationToken)] = [
            ("results", { observe(AnyRealmCollection($0.objects(NDog.self)), $1, $2) }),
            ("list", { observe(AnyRealmCollection($0.objects(NPerson.self).first!.dogs), $1, $2) }),
            ("backlinks", { observe(AnyRealmCollection($0.objects(NDog.self).first!.owners), $1, $2) }),
        ]
        for (label, register) in wrappers {
            let (released, delivered) = try releasePlaces("release-any-\(label)") { realm, queue, delivered in
                try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]]) }
                return register(realm, queue, delivered)
            }
            #expect(released == Self.letGoOnTheirThreads, "\(label)")
            #expect(delivered == ["queue's Realm 1"], "\(label)")
        }
    }

    /// As above for a ProjectedCollection (a List of objects projected to one property): the
    /// block gets the projection of the collection as the queue's Realm reads it.
    @Test func aProjectedCollectionObserverOnAQueueHoldsNoRealmOfTheRegisteringThread() throws {
        let (released, delivered) = try releasePlaces("release-projected") { realm, queue, delivered in
            try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]]) }
            return NRelDogNames(projecting: realm.objects(NPerson.self).first!).dogNames.observe(on: queue) { change in
                if case .initial(let c) = change { delivered.add(Self.through(c.realm, queue)) }
            }
        }
        #expect(released == Self.letGoOnTheirThreads)
        #expect(delivered == ["queue's Realm"])
    }

    /// A ProjectedCollection observed on a queue, read in the block: its elements are read
    /// through the queue's Realm, at the version delivered. (In a child process: reading the
    /// registering thread's collection on the queue traps.)
    @Test func aProjectedCollectionDeliveredOnAQueueReadsThere() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let config = dir.config([NToy.self, NDog.self, NPerson.self])
            let owner = RunLoopThread()
            defer { owner.stop() }
            let queue = DispatchQueue(label: "release-projected-read")
            let seen = Events<String>()
            let token = UncheckedBox<NotificationToken?>(nil)
            try! owner.sync {
                let realm = try Realm(configuration: config)
                try realm.write { realm.create(NPerson.self, value: ["name": "Ann", "dogs": [["name": "Rex"]]]) }
                let names = NRelDogNames(projecting: realm.objects(NPerson.self).first!).dogNames
                token.value = names.observe(on: queue) { change in
                    switch change {
                    case .initial(let c): seen.add("initial \(Array(c))")
                    case .update(let c, _, let i, _): seen.add("\(Array(c)) +\(i)")
                    case .error: seen.add("error")
                    }
                }
            }
            precondition(seen.next() == "initial [\"Rex\"]")
            try! owner.sync {
                let realm = try Realm(configuration: config)
                try realm.write { realm.objects(NPerson.self).first!.dogs.append(realm.create(NDog.self, value: ["name": "Max"])) }
            }
            precondition(seen.next() == "[\"Rex\", \"Max\"] +[1]")
            token.value = nil
        }
    }

    /// As above for sectioned results, and for one section of them.
    @Test func aSectionedResultsObserverOnAQueueHoldsNoRealmOfTheRegisteringThread() throws {
        let (released, delivered) = try releasePlaces("release-sections") { realm, queue, delivered in
            try realm.write {
                realm.create(NDog.self, value: ["name": "Rex", "age": 3])
                realm.create(NDog.self, value: ["name": "Max", "age": 5])
            }
            return realm.objects(NDog.self).sectioned(by: \.age).observe(on: queue) { change in
                if case .initial(let s) = change { delivered.add("\(Self.through(s.first?.realm, queue)) \(s.count)") }
            }
        }
        #expect(released == Self.letGoOnTheirThreads)
        #expect(delivered == ["queue's Realm 2"])
        let (sectionReleased, sectionDelivered) = try releasePlaces("release-section") { realm, queue, delivered in
            try realm.write { realm.create(NDog.self, value: ["name": "Rex", "age": 3]) }
            return realm.objects(NDog.self).sectioned(by: \.age)[0].observe(on: queue) { change in
                if case .initial(let s) = change { delivered.add("\(Self.through(s.first?.realm, queue)) \(s.count)") }
            }
        }
        #expect(sectionReleased == Self.letGoOnTheirThreads)
        #expect(sectionDelivered == ["queue's Realm 1"])
    }

    /// An object observer on a queue, registered through a run-loop thread's Realm: it keeps
    /// the object's address, not the registering accessor, and the accessor it made in the
    /// queue's Realm (`DeliveredObject`) goes with the observer's block on the queue.
    @Test func anObjectObserverOnAQueueHoldsNoRealmOfTheRegisteringThread() throws {
        let (released, delivered) = try releasePlaces("release-object") { realm, queue, delivered in
            try realm.write { realm.create(NDog.self, value: ["name": "Rex"]) }
            let dog = realm.objects(NDog.self).first!
            let token = dog.observe(on: queue) { (change: ObjectChange<NDog>) in
                if case .change(let d, _) = change { delivered.add("\(Self.through(d.realm, queue)) \(d.name)") }
            }
            try realm.write { dog.name = "Max" }
            return token
        }
        #expect(released == Self.letGoOnTheirThreads)
        #expect(delivered == ["queue's Realm Max"])
    }

    /// A Realm observer registered on a thread that then ends without turning its run loop
    /// again; its token is released on another thread. The Realm is closed (its file can be
    /// deleted), not parked for good on the run loop of a thread that no longer runs.
    @Test func theRealmOfAnEndedThreadIsClosed() throws {
        let dir = TempDir()
        let config = dir.config([NToy.self, NDog.self, NPerson.self])
        let token = UncheckedBox<NotificationToken?>(nil)
        let registered = DispatchSemaphore(value: 0)
        let thread = Thread {
            let realm = try! Realm(configuration: config)
            token.value = realm.observe { _, _ in }
            registered.signal()
        }
        thread.start()
        #expect(registered.wait(timeout: .now() + 10) == .success)
        // (the thread has ended, or is ending: either way nothing turns its run loop again)
        let started = Date()
        while !thread.isFinished && Date().timeIntervalSince(started) < 10 { usleep(1000) }
        #expect(thread.isFinished)
        token.value = nil
        let deadline = Date().addingTimeInterval(30)
        while RealmCore.isOpen(config.path) && Date() < deadline { usleep(10_000) }
        #expect(!RealmCore.isOpen(config.path))
        #expect(throws: Never.self) { _ = try Realm.deleteFiles(for: config) }
    }

    /// `write(withoutNotifying:)` with an invalidated token, which stops nothing any more:
    /// accepted, whether or not another observer remains on the Realm. (In a child process: a
    /// trap here must not stop the other tests.)
    @Test func anInvalidatedTokenCanAlwaysBeSkipped() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let config = dir.config([NToy.self, NDog.self, NPerson.self])
            let owner = RunLoopThread()
            defer { owner.stop() }
            try! owner.sync {
                let realm = try Realm(configuration: config)
                // another observer remains on the Realm
                let other = realm.objects(NPerson.self).observe { _ in }
                let a = realm.objects(NDog.self).observe { _ in }
                a.invalidate()
                try realm.write(withoutNotifying: [a]) { realm.create(NDog.self, value: ["name": "a"]) }
                // the Realm's last observer
                other.invalidate()
                let b = realm.objects(NDog.self).observe { _ in }
                b.invalidate()
                try realm.write(withoutNotifying: [b]) { realm.create(NDog.self, value: ["name": "b"]) }
                precondition(realm.objects(NDog.self).count == 2)
            }
        }
    }
}
