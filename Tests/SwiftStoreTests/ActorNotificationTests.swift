import Foundation
import Testing
import TestSupport
@testable import SwiftStore

final class AToy: Object {
    @Persisted var brand = ""
}

final class ADog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var toy: AToy?
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<AOwner>
}

final class AOwner: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<ADog>
    @Persisted var favourites: MutableSet<ADog>
    @Persisted var scores: Map<String, Int>
}

private let models: [ObjectBase.Type] = [AToy.self, ADog.self, AOwner.self]

/// A map change as plain values.
struct ActorSeenMap: Equatable {
    var initial = false
    var count = 0
    var deleted: [String] = []
    var inserted: [String] = []
    var modified: [String] = []

    init(_ change: RealmMapChange<Map<String, Int>>) {
        switch change {
        case .initial(let m):
            initial = true
            count = m.count
        case .update(let m, let d, let i, let mod):
            count = m.count
            (deleted, inserted, modified) = (d.sorted(), i.sorted(), mod.sorted())
        case .error:
            count = -1
        }
    }

    init(initial: Bool = false, count: Int, del: [String] = [], ins: [String] = [], mod: [String] = []) {
        (self.initial, self.count, deleted, inserted, modified) = (initial, count, del, ins, mod)
    }
}

/// A sectioned change as plain values (index paths as "section.item").
struct ActorSeenSections: Equatable {
    var initial = false
    var count = 0
    var deletions: [String] = []
    var insertions: [String] = []
    var modifications: [String] = []
    var sectionsInserted: [Int] = []
    var sectionsDeleted: [Int] = []

    init<C: Collection>(_ change: SectionedResultsChange<C>) {
        func s(_ p: [IndexPath]) -> [String] { p.map { "\($0.section).\($0.item)" } }
        switch change {
        case .initial(let c):
            initial = true
            count = c.count
        case .update(let c, let d, let i, let m, let si, let sd):
            count = c.count
            (deletions, insertions, modifications) = (s(d), s(i), s(m))
            (sectionsInserted, sectionsDeleted) = (Array(si), Array(sd))
        }
    }

    init(initial: Bool = false, count: Int, del: [String] = [], ins: [String] = [], mod: [String] = [],
         sectionsInserted: [Int] = [], sectionsDeleted: [Int] = []) {
        (self.initial, self.count, deletions, insertions, modifications) = (initial, count, del, ins, mod)
        (self.sectionsInserted, self.sectionsDeleted) = (sectionsInserted, sectionsDeleted)
    }
}

/// How long a test waits for a notification on an actor (it goes on as soon as the notification
/// arrives). In a parallel test run on a small machine the other suites' synchronous tests can
/// hold every thread of the concurrency pool for a minute (two threads on two cores; longer
/// under ThreadSanitizer), and a delivery that found its actor busy waits for one of them (when
/// the task running on the actor leaves it, Swift's runtime schedules the actor's remaining jobs
/// on the global pool; docs/ARCHITECTURE.md, "Delivery on an actor"). A fresh-clone `make test`
/// on two cores started most tests a minute late and this suite's first wait of 10 s ran out;
/// with waits of 120 s, a parallel run still failed here in two of three runs. `make test` now
/// runs this suite in a pass of its own after the others (Makefile, POOL_SUITES).
let actorWait: Double = 120

extension Events {
    /// `next()` from async code: waits on a thread of its own, so that no thread of the
    /// concurrency pool (which delivers to actors) is blocked meanwhile.
    func nextAsync(timeout: Double = actorWait) async -> T? {
        await withCheckedContinuation { (c: CheckedContinuation<UncheckedBox<T?>, Never>) in
            Thread { c.resume(returning: UncheckedBox(self.next(timeout: timeout))) }.start()
        }.value
    }
}

/// An actor with its own actor-isolated Realm, on which notifications are delivered.
actor Sink {
    let config: Realm.Configuration
    private(set) var realm: Realm?
    /// Callbacks run on this actor so far.
    var calls = 0
    /// For each callback of `observeOwn`'s observers: whether it ran on the notifier's delivery
    /// thread.
    var onDeliveryThread: [Bool] = []
    var tokens: [NotificationToken] = []

    init(config: Realm.Configuration) { self.config = config }

    func open() async throws {
        realm = try await Realm(configuration: config, actor: self)
    }

    /// Whether `r` is this actor's Realm (the one its notifications read through).
    func isMine(_ r: Realm?) -> Bool { r != nil && r == realm }

    func record() { calls += 1 }

    /// Observes through the actor's own Realm with the plain (run-loop) forms: a query, and the
    /// Realm itself.
    func observeOwn(_ dogs: Events<Seen>, _ realmChanges: Events<Bool>) {
        guard let realm else { return }
        tokens.append(realm.objects(ADog.self).sorted(byKeyPath: "name").observe { [self] change in
            self.preconditionIsolated()
            calls += 1
            onDeliveryThread.append(DeliveryExecutor.shared.isCurrentThread)
            dogs.add(Seen(change))
        })
        tokens.append(realm.observe { [self] notification, r in
            self.preconditionIsolated()
            onDeliveryThread.append(DeliveryExecutor.shared.isCurrentThread)
            realmChanges.add(notification == .didChange && r == realm)
        })
    }

    func stop() {
        for t in tokens { t.invalidate() }
        tokens = []
    }
}

/// An actor reading through its own Realm and registering observers delivered on a `Sink`.
actor Source {
    let config: Realm.Configuration
    init(config: Realm.Configuration) { self.config = config }

    private func realm() async throws -> Realm { try await Realm(configuration: config, actor: self) }

    func observeDogs(keyPaths: [String]?, on sink: Sink, _ events: Events<Seen>) async throws -> NotificationToken {
        let dogs = try await realm().objects(ADog.self).sorted(byKeyPath: "name")
        return await dogs.observe(keyPaths: keyPaths, on: sink) { sink, change in
            sink.preconditionIsolated()
            sink.record()
            if case .initial(let c) = change, !sink.isMine(c.realm) { events.add(Seen(count: -2)) }
            if case .update(let c, _, _, _) = change, !sink.isMine(c.realm) { events.add(Seen(count: -2)) }
            events.add(Seen(change))
        }
    }

    func observeDogsByKeyPath(on sink: Sink, _ events: Events<Seen>) async throws -> NotificationToken {
        let dogs = try await realm().objects(ADog.self).sorted(byKeyPath: "name")
        return await dogs.observe(keyPaths: [\ADog.age], on: sink) { sink, change in
            sink.preconditionIsolated()
            events.add(Seen(change))
        }
    }

    /// Observers of each collection kind of the first owner, delivered on `sink`.
    func observeCollections(on sink: Sink, list: Events<Seen>, set: Events<Seen>, backlinks: Events<Seen>,
                            any: Events<Seen>, map: Events<ActorSeenMap>) async throws -> [NotificationToken] {
        let r = try await realm()
        let owner = r.objects(AOwner.self).first!
        let dog = r.objects(ADog.self).filter("name == 'a'").first!
        var tokens: [NotificationToken] = []
        tokens.append(await owner.dogs.observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            list.add(Seen(c))
        })
        tokens.append(await owner.favourites.observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            set.add(Seen(c))
        })
        tokens.append(await dog.owners.observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            backlinks.add(Seen(c))
        })
        tokens.append(await AnyRealmCollection(owner.dogs).observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            any.add(Seen(c))
        })
        tokens.append(await owner.scores.observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            map.add(ActorSeenMap(c))
        })
        return tokens
    }

    func observeObject(named name: String, keyPaths: [String]?, on sink: Sink,
                       _ events: Events<String>) async throws -> NotificationToken {
        let r = try await realm()
        let dog = r.objects(ADog.self).filter("name == %@", name).first!
        return await dog.observe(keyPaths: keyPaths, on: sink) { (sink: isolated Sink, change: ObjectChange<ADog>) in
            sink.preconditionIsolated()
            switch change {
            case .change(let d, let props):
                let mine = sink.isMine(d.realm) ? "" : "foreign "
                events.add(mine + props.map { "\($0.name): \($0.oldValue.map { "\($0)" } ?? "nil") -> \($0.newValue.map { "\($0)" } ?? "nil")" }
                    .joined(separator: ", "))
            case .deleted: events.add("deleted")
            case .error: events.add("error")
            }
        }
    }

    func observeSections(on sink: Sink, whole: Events<ActorSeenSections>, section: Events<ActorSeenSections>) async throws
        -> [NotificationToken] {
        let r = try await realm()
        let byAge = r.objects(ADog.self).sectioned(by: \.age, sortDescriptors: [SortDescriptor(keyPath: "age"),
                                                                                SortDescriptor(keyPath: "name")])
        var tokens: [NotificationToken] = []
        tokens.append(await byAge.observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            whole.add(ActorSeenSections(c))
        })
        tokens.append(await byAge[0].observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            section.add(ActorSeenSections(c))
        })
        return tokens
    }
}

/// Writes through a Realm of its own on a new thread and waits for the commit.
private func write(_ config: Realm.Configuration, _ body: @escaping @Sendable (Realm) -> Void) {
    onNewThread {
        let r = try! Realm(configuration: config)
        try! r.write { body(r) }
    }
}

@Suite struct ActorNotificationTests {
    /// An actor-isolated Realm delivers its own observers' notifications on its actor (this
    /// used to trap: there is no run loop on an actor), and its Realm observers with it.
    @Test func actorRealmDeliversOnItsActor() async throws {
        let dir = TempDir()
        let config = dir.config(models)
        write(config) { $0.create(ADog.self, value: ["name": "b"]) }
        let sink = Sink(config: config)
        try await sink.open()
        let dogs = Events<Seen>(), realmChanges = Events<Bool>()
        await sink.observeOwn(dogs, realmChanges)
        #expect(await dogs.nextAsync() == Seen(initial: true, count: 1))
        write(config) { $0.create(ADog.self, value: ["name": "a"]) }
        #expect(await dogs.nextAsync() == Seen(count: 2, ins: [0]))
        #expect(await realmChanges.nextAsync() == true)
        write(config) { $0.objects(ADog.self).filter("name == 'b'").first!.age = 3 }
        #expect(await dogs.nextAsync() == Seen(count: 2, mod: [1]))
        #expect(await sink.calls == 3)
        await sink.stop()
    }

    /// A delivery to an idle actor does not need a thread of the concurrency pool: it runs on the
    /// notifier's delivery thread (before, the delivery task started on the pool, and a program
    /// whose pool threads were all blocked got no notifications until one was released). The
    /// initial notification here is delivered to a busy actor, which Swift's runtime may hand to
    /// the pool, so only the later one is checked.
    @Test func deliveryDoesNotNeedAFreePoolThread() async throws {
        let dir = TempDir()
        let config = dir.config(models)
        let sink = Sink(config: config)
        try await sink.open()
        let dogs = Events<Seen>(), realmChanges = Events<Bool>()
        await sink.observeOwn(dogs, realmChanges)
        #expect(await dogs.nextAsync() == Seen(initial: true, count: 0))
        // the initial delivery has left the actor once this call got onto it; returning, the
        // call leaves the actor idle
        #expect(await sink.calls == 1)
        write(config) { $0.create(ADog.self, value: ["name": "a"]) }
        #expect(await dogs.nextAsync() == Seen(count: 1, ins: [0]))
        #expect(await realmChanges.nextAsync() == true)
        #expect(await sink.onDeliveryThread.dropFirst() == [true, true])
        await sink.stop()
    }

    /// `observe(keyPaths:on: actor)` on Results: the block runs isolated to the actor with the
    /// results read through the actor's Realm; the initial notification first; key paths
    /// filter modifications as in the run-loop form; nothing after the token is invalidated.
    @Test func resultsObservedOnAnotherActor() async throws {
        let dir = TempDir()
        let config = dir.config(models)
        write(config) {
            $0.create(ADog.self, value: ["name": "a"])
            $0.create(ADog.self, value: ["name": "c"])
        }
        let sink = Sink(config: config)
        try await sink.open()
        let source = Source(config: config)
        let all = Events<Seen>(), ages = Events<Seen>(), typed = Events<Seen>()
        let allToken = try await source.observeDogs(keyPaths: nil, on: sink, all)
        let ageToken = try await source.observeDogs(keyPaths: ["age"], on: sink, ages)
        let typedToken = try await source.observeDogsByKeyPath(on: sink, typed)
        #expect(await all.nextAsync() == Seen(initial: true, count: 2))
        #expect(await ages.nextAsync() == Seen(initial: true, count: 2))
        #expect(await typed.nextAsync() == Seen(initial: true, count: 2))

        // a name written on "a" and an age on "c": the filtered observers see only "c"
        write(config) { r in
            r.objects(ADog.self).filter("name == 'a'").first!.name = "a"
            r.objects(ADog.self).filter("name == 'c'").first!.age = 5
        }
        #expect(await all.nextAsync() == Seen(count: 2, mod: [0, 1]))
        #expect(await ages.nextAsync() == Seen(count: 2, mod: [1]))
        #expect(await typed.nextAsync() == Seen(count: 2, mod: [1]))

        write(config) { $0.create(ADog.self, value: ["name": "b"]) }
        #expect(await all.nextAsync() == Seen(count: 3, ins: [1]))
        #expect(await ages.nextAsync() == Seen(count: 3, ins: [1]))
        #expect(await typed.nextAsync() == Seen(count: 3, ins: [1]))

        // invalidated from outside the actor: no callback after, while the others go on
        ageToken.invalidate()
        typedToken.invalidate()
        write(config) { $0.delete($0.objects(ADog.self).filter("name == 'a'")) }
        #expect(await all.nextAsync() == Seen(count: 2, del: [0]))
        #expect(ages.waiting == 0 && ages.all.count == 3)
        #expect(typed.waiting == 0 && typed.all.count == 3)
        // the two observers made by observeDogs: 4 and 3 callbacks, all on the sink
        #expect(await sink.calls == 7)
        allToken.invalidate()
        await sink.stop()
    }

    /// The actor forms of List, MutableSet, LinkingObjects, AnyRealmCollection and Map.
    @Test func collectionsObservedOnAnotherActor() async throws {
        let dir = TempDir()
        let config = dir.config(models)
        write(config) { r in
            let a = r.create(ADog.self, value: ["name": "a"])
            let b = r.create(ADog.self, value: ["name": "b"])
            let o = r.create(AOwner.self, value: ["name": "o"])
            o.dogs.append(a)
            o.favourites.insert(b)
            o.scores["x"] = 1
            _ = b
        }
        let sink = Sink(config: config)
        let source = Source(config: config)
        let list = Events<Seen>(), set = Events<Seen>(), backlinks = Events<Seen>(), any = Events<Seen>()
        let map = Events<ActorSeenMap>()
        let tokens = try await source.observeCollections(on: sink, list: list, set: set, backlinks: backlinks,
                                                         any: any, map: map)
        #expect(await list.nextAsync() == Seen(initial: true, count: 1))
        #expect(await set.nextAsync() == Seen(initial: true, count: 1))
        #expect(await backlinks.nextAsync() == Seen(initial: true, count: 1))
        #expect(await any.nextAsync() == Seen(initial: true, count: 1))
        #expect(await map.nextAsync() == ActorSeenMap(initial: true, count: 1))

        write(config) { r in
            let o = r.objects(AOwner.self).first!
            let a = r.objects(ADog.self).filter("name == 'a'").first!
            let b = r.objects(ADog.self).filter("name == 'b'").first!
            o.dogs.append(b)
            o.favourites.insert(a)
            o.scores["x"] = 2
            o.scores["y"] = 3
            r.create(AOwner.self, value: ["name": "p", "dogs": [a]])
        }
        #expect(await list.nextAsync() == Seen(count: 2, ins: [1]))
        #expect(await set.nextAsync()?.count == 2)
        // a's owners: "p" is new; "o" is modified (its list changed: deep by default)
        #expect(await backlinks.nextAsync() == Seen(count: 2, ins: [1], mod: [0]))
        #expect(await any.nextAsync() == Seen(count: 2, ins: [1]))
        #expect(await map.nextAsync() == ActorSeenMap(count: 2, ins: ["y"], mod: ["x"]))
        for t in tokens { t.invalidate() }
    }

    /// The actor form of Object.observe: the changed properties with old and new values, the
    /// object read through the actor's Realm, key-path filtering, and `.deleted`.
    @Test func objectObservedOnAnotherActor() async throws {
        let dir = TempDir()
        let config = dir.config(models)
        write(config) { $0.create(ADog.self, value: ["name": "a", "age": 1]) }
        let sink = Sink(config: config)
        try await sink.open()
        let source = Source(config: config)
        let every = Events<String>(), ages = Events<String>()
        let t1 = try await source.observeObject(named: "a", keyPaths: nil, on: sink, every)
        let t2 = try await source.observeObject(named: "a", keyPaths: ["age"], on: sink, ages)
        // (one commit at a time: commits delivered together coalesce into one change)
        write(config) { $0.objects(ADog.self).first!.name = "a2" }
        #expect(await every.nextAsync() == "name: a -> a2")
        write(config) { $0.objects(ADog.self).first!.age = 7 }
        #expect(await every.nextAsync() == "age: 1 -> 7")
        #expect(await ages.nextAsync() == "age: 1 -> 7")
        write(config) { $0.delete($0.objects(ADog.self)) }
        #expect(await every.nextAsync() == "deleted")
        #expect(await ages.nextAsync() == "deleted")
        t1.invalidate()
        t2.invalidate()
    }

    /// The actor forms of SectionedResults and ResultsSection.
    @Test func sectionsObservedOnAnotherActor() async throws {
        let dir = TempDir()
        let config = dir.config(models)
        write(config) { r in
            r.create(ADog.self, value: ["name": "a", "age": 1])
            r.create(ADog.self, value: ["name": "b", "age": 2])
        }
        let sink = Sink(config: config)
        let source = Source(config: config)
        let whole = Events<ActorSeenSections>(), first = Events<ActorSeenSections>()
        let tokens = try await source.observeSections(on: sink, whole: whole, section: first)
        #expect(await whole.nextAsync() == ActorSeenSections(initial: true, count: 2))
        #expect(await first.nextAsync() == ActorSeenSections(initial: true, count: 1))
        write(config) { $0.create(ADog.self, value: ["name": "c", "age": 1]) }
        #expect(await whole.nextAsync() == ActorSeenSections(count: 2, ins: ["0.1"]))
        #expect(await first.nextAsync() == ActorSeenSections(count: 2, ins: ["0.1"]))
        for t in tokens { t.invalidate() }
    }
}
