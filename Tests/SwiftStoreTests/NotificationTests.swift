import Foundation
import Testing
import TestSupport
@testable import SwiftStore

final class NToy: Object {
    @Persisted var brand = ""
    @Persisted var color = ""
}

final class NDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var adopted = false
    @Persisted var toys: List<NToy>
    @Persisted var siblings: List<NDog>
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<NPerson>
}

final class NPerson: Object {
    @Persisted var name = ""
    @Persisted var dogs: List<NDog>
    @Persisted var tags: Map<String, Int>
}

private let models: [ObjectBase.Type] = [NToy.self, NDog.self, NPerson.self]

/// A collection change as plain values.
struct Seen: Equatable, CustomStringConvertible {
    var initial = false
    var count = 0
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []

    init<C: Collection>(_ change: RealmCollectionChange<C>) {
        switch change {
        case .initial(let c):
            initial = true
            count = c.count
        case .update(let c, let d, let i, let m):
            count = c.count
            (deletions, insertions, modifications) = (d, i, m)
        case .error:
            count = -1
        }
    }

    init(initial: Bool = false, count: Int, del: [Int] = [], ins: [Int] = [], mod: [Int] = []) {
        (self.initial, self.count, deletions, insertions, modifications) = (initial, count, del, ins, mod)
    }

    var description: String { "\(initial ? "initial" : "update")(\(count) -\(deletions) +\(insertions) ~\(modifications))" }
}

/// One object change as plain values.
struct SeenObject: Equatable {
    var deleted = false
    var names: [String] = []
    var old: [String] = []
    var new: [String] = []

    init(_ change: ObjectChange<NDog>) {
        switch change {
        case .deleted: deleted = true
        case .change(_, let props):
            names = props.map(\.name)
            old = props.map { $0.oldValue.map { "\($0)" } ?? "nil" }
            new = props.map { $0.newValue.map { "\($0)" } ?? "nil" }
        case .error: names = ["error"]
        }
    }

    init(deleted: Bool = false, names: [String] = [], old: [String] = [], new: [String] = []) {
        (self.deleted, self.names, self.old, self.new) = (deleted, names, old, new)
    }
}

/// Adds a dog and appends it to the first person's dogs (inside a write): the dogs and that
/// List both grow by one, at the end.
func addDogToPerson(_ r: Realm, _ name: String) {
    r.objects(NPerson.self).first!.dogs.append(r.create(NDog.self, value: ["name": name]))
}

/// A test's Realm and run-loop thread: everything touching the Realm runs on the thread. The
/// notification, section and nested-collection tests share it (SFixture, NestFixture).
class Fixture: @unchecked Sendable {
    let dir = TempDir()
    let thread = RunLoopThread()
    var realm: Realm!
    var tokens: [NotificationToken] = []
    let schema: [ObjectBase.Type]
    var config: Realm.Configuration { dir.config(schema) }

    init(models schema: [ObjectBase.Type] = models) throws {
        self.schema = schema
        let config = self.config
        try thread.sync { self.realm = try Realm(configuration: config) }
    }

    func run<R>(_ body: @escaping (Realm) throws -> R) throws -> R {
        try thread.sync { try body(self.realm) }
    }

    /// A write through another Realm on another thread (another thread's commit).
    func writeElsewhere(_ body: @escaping @Sendable (Realm) -> Void) {
        let config = self.config
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write { body(r) }
        }
    }

    func finish() throws {
        try thread.sync {
            for t in self.tokens { t.invalidate() }
            self.tokens = []
            self.realm = nil
        }
        thread.stop()
    }
}

@Suite struct NotificationTests {
    /// The initial notification is asynchronous, and a write made before it is folded in (the
    /// `person.dogs.append` example).
    @Test func initialIsAsynchronousWithEarlierWriteFoldedIn() throws {
        let f = try Fixture()
        let events = Events<Seen>()
        try f.run { realm in
            let person = NPerson()
            try realm.write { realm.add(person) }
            let dogs = realm.objects(NDog.self)
            f.tokens.append(dogs.observe { events.add(Seen($0)) })
            #expect(events.waiting == 0)
            try realm.write {
                let dog = NDog()
                dog.name = "Rex"
                person.dogs.append(dog)
            }
        }
        #expect(events.next() == Seen(initial: true, count: 1))
        try f.finish()
    }

    /// The initial query of a Results observer runs on the notifier's thread, not on the
    /// registering one, for run-loop and queue observers; a write made on the registering thread
    /// and one from another thread before the initial notification are both folded into it.
    @Test func initialQueryRunsOffTheRegisteringThread() throws {
        let f = try Fixture()
        let young = Events<Seen>(), queued = Events<Seen>()
        let queue = DispatchQueue(label: "initial-query")
        try f.run { realm in
            try realm.write { for i in 0..<3 { realm.create(NDog.self, value: ["name": "d\(i)", "age": i]) } }
            // a queue observer's initial notification may come before or after a write made
            // here, so it is registered and delivered first
            f.tokens.append(realm.objects(NDog.self).filter("age < 10").observe(on: queue) { queued.add(Seen($0)) })
        }
        #expect(queued.next() == Seen(initial: true, count: 3))
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).filter("age < 10").observe { young.add(Seen($0)) })
            try realm.write { realm.create(NDog.self, value: ["name": "here", "age": 5]) }
            #expect(young.waiting == 0)
        }
        #expect(young.next() == Seen(initial: true, count: 4))
        #expect(queued.next() == Seen(count: 4, ins: [3]))
        for token in f.tokens { #expect(token.registration?.madeOnRegisteringThread == false) }
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "there", "age": 1]) }
        #expect(young.next() == Seen(count: 5, ins: [4]))
        #expect(queued.next() == Seen(count: 5, ins: [4]))
        #expect(young.waiting == 0 && queued.waiting == 0)
        try f.finish()
    }

    /// An object observed on a queue: each commit's properties with their old and new values
    /// (the first delivery's too: the queue's Realm starts at the version the observer's watch
    /// starts at, docs/ARCHITECTURE.md, Change notifications), and the object handed to the
    /// block reads the new version, delivery after delivery.
    @Test func objectOnQueue() throws {
        let f = try Fixture()
        let dog = Events<SeenObject>(), read = Events<String>()
        let queue = DispatchQueue(label: "object-on-queue")
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            f.tokens.append(realm.objects(NDog.self).first!.observe(on: queue) { (c: ObjectChange<NDog>) in
                dog.add(SeenObject(c))
                if case .change(let o, _) = c { read.add("\(o.name) \(o.age)") }
            })
        }
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 2 }
        #expect(dog.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
        #expect(read.next() == "a 2")
        f.writeElsewhere { r in r.objects(NDog.self).first!.name = "b" }
        #expect(dog.next() == SeenObject(names: ["name"], old: ["a"], new: ["b"]))
        #expect(read.next() == "b 2")
        f.writeElsewhere { r in
            let d = r.objects(NDog.self).first!
            d.age = 3
            d.name = "c"
        }
        #expect(dog.next() == SeenObject(names: ["name", "age"], old: ["b", "2"], new: ["c", "3"]))
        #expect(read.next() == "c 3")
        f.writeElsewhere { r in r.delete(r.objects(NDog.self).first!) }
        #expect(dog.next() == SeenObject(deleted: true))
        #expect(dog.waiting == 0 && read.waiting == 0)
        try f.finish()
    }

    /// An object observed on a queue whose first delivery comes after several commits (the
    /// queue is busy until then): one change set with the old values as of registering.
    @Test func objectOnQueueFirstDeliveryCoalesces() throws {
        let f = try Fixture()
        let dog = Events<SeenObject>()
        let queue = DispatchQueue(label: "object-on-busy-queue")
        let gate = DispatchSemaphore(value: 0)
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            queue.async { gate.wait() }
            f.tokens.append(realm.objects(NDog.self).first!.observe(on: queue) { (c: ObjectChange<NDog>) in
                dog.add(SeenObject(c))
            })
        }
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 2 }
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 3 }
        try f.run { realm in try realm.write { realm.objects(NDog.self).first!.name = "b" } }
        gate.signal()
        #expect(dog.next() == SeenObject(names: ["age", "name"], old: ["1", "a"], new: ["3", "b"]))
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 4 }
        #expect(dog.next() == SeenObject(names: ["age"], old: ["3"], new: ["4"]))
        #expect(dog.waiting == 0)
        try f.finish()
    }

    /// An object observed on a queue whose Realm reads an older version than the registering
    /// Realm (kept by an observer of another class, it has not moved since before the object
    /// was created): the first change's old values are those of the version the observer
    /// registered at, where the object exists, not of the queue's Realm's version, where it
    /// does not (reading there trapped). (In a child process: a trap must not stop the tests.)
    @Test func objectOnQueueWhoseRealmIsOlderThanTheObject() async {
        await #expect(processExitsWith: .success) {
            let f = try! Fixture()
            let queue = DispatchQueue(label: "object-on-older-queue-realm")
            let people = Events<Seen>(), dog = Events<SeenObject>()
            try! f.run { realm in f.tokens.append(realm.objects(NPerson.self).observe(on: queue) { people.add(Seen($0)) }) }
            precondition(people.next() == Seen(initial: true, count: 0))
            try! f.run { realm in
                try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
                f.tokens.append(realm.objects(NDog.self).first!.observe(on: queue) { (c: ObjectChange<NDog>) in
                    dog.add(SeenObject(c))
                })
                try realm.write { realm.objects(NDog.self).first!.age = 2 }
            }
            precondition(dog.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
            f.writeElsewhere { r in r.objects(NDog.self).first!.age = 3 }
            precondition(dog.next() == SeenObject(names: ["age"], old: ["2"], new: ["3"]))
            precondition(people.waiting == 0)
            try! f.finish()
        }
    }

    /// An object observed on a queue whose Realm lags (kept by an observer of another class, it
    /// has not moved since the object's value was 0): the first change's old value is the one
    /// the object had when the observer registered (1), not the queue's Realm's (0).
    @Test func objectOnQueueWhoseRealmLagsGetsTheRegisteredOldValue() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "object-on-lagging-queue-realm")
        let people = Events<Seen>(), dog = Events<SeenObject>()
        try f.run { realm in try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 0]) } }
        try f.run { realm in f.tokens.append(realm.objects(NPerson.self).observe(on: queue) { people.add(Seen($0)) }) }
        #expect(people.next() == Seen(initial: true, count: 0))
        try f.run { realm in
            try realm.write { realm.objects(NDog.self).first!.age = 1 }
            f.tokens.append(realm.objects(NDog.self).first!.observe(on: queue) { (c: ObjectChange<NDog>) in
                dog.add(SeenObject(c))
            })
            try realm.write { realm.objects(NDog.self).first!.age = 2 }
        }
        #expect(dog.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 3 }
        #expect(dog.next() == SeenObject(names: ["age"], old: ["2"], new: ["3"]))
        #expect(people.waiting == 0)
        try f.finish()
    }

    /// Object observers registered on a lagging queue (its Realm kept by an observer of another
    /// class) whose objects never change: the frozen snapshot each takes for its first old
    /// values is let go once the queue's Realm has caught up with its start (registering
    /// schedules that delivery), so they do not pin versions: writes go on under
    /// `maximumNumberOfActiveVersions`.
    @Test func unchangedQueueObjectObserversDoNotPinVersions() throws {
        let dir = TempDir()
        var config = dir.config([NToy.self, NDog.self, NPerson.self])
        config.maximumNumberOfActiveVersions = 4
        let owner = RunLoopThread()
        defer { owner.stop() }
        let q = DispatchQueue(label: "unchanged-object-observers")
        let people = Events<Seen>()
        let tokens = UncheckedBox<[NotificationToken]>([])
        let outcome = UncheckedBox<String>("")
        try owner.sync {
            let realm = try Realm(configuration: config)
            try realm.write { for i in 0..<6 { realm.create(NDog.self, value: ["name": "d\(i)"]) } }
            tokens.value.append(realm.objects(NPerson.self).observe(on: q) { people.add(Seen($0)) })
        }
        #expect(people.next() == Seen(initial: true, count: 0))
        try owner.sync {
            let realm = try Realm(configuration: config)
            for i in 0..<6 {
                try realm.write { realm.create(NToy.self) }
                tokens.value.append(realm.objects(NDog.self)[i].observe(on: q) { (_: ObjectChange<NDog>) in })
                // (the queue's delivery scheduled by registering has run)
                q.sync {}
            }
            do {
                try realm.write { realm.create(NToy.self) }
                outcome.value = "ok"
            } catch {
                outcome.value = "\(error)"
            }
        }
        #expect(outcome.value == "ok")
        q.sync { tokens.value = [] }
    }

    /// Registering an object observer on a queue from another thread never touches the queue's
    /// Realm, which is confined to the queue: here invalidated there, it still has no read
    /// transaction afterwards (`refresh()` reports true at once).
    @Test func registeringAnObjectObserverLeavesTheQueuesRealmAlone() throws {
        let dir = TempDir()
        let config = dir.config([NToy.self, NDog.self, NPerson.self])
        let owner = RunLoopThread()
        defer { owner.stop() }
        let q = DispatchQueue(label: "invalidated-queue-realm")
        let qRealm = UncheckedBox<Realm?>(nil)
        let seen = Events<String>()
        let tokens = UncheckedBox<[NotificationToken]>([])
        try owner.sync {
            let realm = try Realm(configuration: config)
            try realm.write { realm.create(NDog.self, value: ["name": "Rex"]) }
        }
        try q.sync {
            let r = try Realm(configuration: config, queue: q)
            qRealm.value = r
            tokens.value.append(r.objects(NDog.self).observe(on: q) { _ in seen.add("c") })
        }
        #expect(seen.next() == "c")
        q.sync {}
        q.sync { qRealm.value!.invalidate() }
        try owner.sync {
            let realm = try Realm(configuration: config)
            tokens.value.append(realm.objects(NDog.self).first!.observe(on: q) { (_: ObjectChange<NDog>) in })
        }
        let refreshed = q.sync { qRealm.value!.refresh() }
        #expect(refreshed, "the registering thread began a read transaction on the queue's invalidated Realm")
        q.sync { tokens.value = []; qRealm.value = nil }
    }

    /// A write made right after registering a queue observer, delivered after it (the queue is
    /// busy until the write committed), is folded into `.initial`, and no `.update` describes it
    /// again: the next update is the next commit's. For a Results and for a List.
    @Test(arguments: [false, true])
    func queueObserverFoldsAWriteMadeRightAfterRegistering(list: Bool) throws {
        let f = try Fixture()
        let seen = Events<Seen>()
        let queue = DispatchQueue(label: "fold-into-initial")
        let gate = DispatchSemaphore(value: 0)
        try f.run { realm in
            try realm.write {
                realm.add(NPerson())
                addDogToPerson(realm, "a")
            }
            queue.async { gate.wait() }
            f.tokens.append(list ? realm.objects(NPerson.self).first!.dogs.observe(on: queue) { seen.add(Seen($0)) }
                                 : realm.objects(NDog.self).observe(on: queue) { seen.add(Seen($0)) })
            try realm.write { addDogToPerson(realm, "b") }
        }
        gate.signal()
        #expect(seen.next() == Seen(initial: true, count: 2))
        f.writeElsewhere { r in addDogToPerson(r, "c") }
        #expect(seen.next() == Seen(count: 3, ins: [2]))
        #expect(seen.waiting == 0)
        try f.finish()
    }

    /// An object observer registered on a Realm that is behind the notifier (another thread's
    /// commit was computed, this Realm did not refresh) reports every change after the Realm's
    /// version, as RealmSwift does: the change between the two versions comes first, with the
    /// old values of the Realm's version. On a run loop and on a queue.
    @Test(arguments: [false, true])
    func objectObserverOnABehindRealmReportsTheChangesItMissed(onQueue: Bool) throws {
        let f = try Fixture()
        let dog = Events<SeenObject>(), keep = Events<Seen>()
        let queue = DispatchQueue(label: "behind-object")
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            // an observer on a queue of its own keeps the notifier running, so that the next
            // commit computes a version this Realm does not read
            f.tokens.append(realm.objects(NToy.self).observe(on: DispatchQueue(label: "keep")) { keep.add(Seen($0)) })
        }
        #expect(keep.next() == Seen(initial: true, count: 0))
        let versions = try f.run { realm -> [UInt64] in
            f.writeElsewhere { r in r.objects(NDog.self).first!.age = 2 }
            let versions = [NotifierCore.version(of: realm.core), FileNotifier.running(f.config.path)!.notifiedVersion]
            let d = realm.objects(NDog.self).first!
            #expect(d.age == 1)
            let block = { (c: ObjectChange<NDog>) in dog.add(SeenObject(c)) }
            f.tokens.append(onQueue ? d.observe(on: queue, block) : d.observe(block))
            return versions
        }
        #expect(versions[0] < versions[1])
        #expect(dog.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
        f.writeElsewhere { r in r.objects(NDog.self).first!.name = "b" }
        #expect(dog.next() == SeenObject(names: ["name"], old: ["a"], new: ["b"]))
        #expect(dog.waiting == 0)
        try f.finish()
    }

    /// An object another thread deleted after the version the registering Realm reads (a Realm
    /// behind the notifier, where the object still exists): observing it reports the deletion.
    @Test(arguments: [false, true])
    func objectDeletedBeyondABehindRealmIsReportedDeleted(onQueue: Bool) throws {
        let f = try Fixture()
        let dog = Events<SeenObject>(), keep = Events<Seen>()
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            f.tokens.append(realm.objects(NToy.self).observe(on: DispatchQueue(label: "keep")) { keep.add(Seen($0)) })
        }
        #expect(keep.next() == Seen(initial: true, count: 0))
        try f.run { realm in
            f.writeElsewhere { r in r.delete(r.objects(NDog.self).first!) }
            let d = realm.objects(NDog.self).first!
            let block = { (c: ObjectChange<NDog>) in dog.add(SeenObject(c)) }
            f.tokens.append(onQueue ? d.observe(on: DispatchQueue(label: "deleted-object"), block) : d.observe(block))
        }
        #expect(dog.next() == SeenObject(deleted: true))
        #expect(dog.waiting == 0)
        try f.finish()
    }

    /// The same behind Realm writing right after registering the object observer: `beginWrite`
    /// delivers the change in between first, synchronously, with its old values (an object
    /// observer has no initial notification to fold the write into); the write itself comes
    /// after, with no old values (a local write, as in RealmSwift).
    @Test func objectObserverOnABehindRealmGetsTheMissedChangeBeforeItsWrite() throws {
        let f = try Fixture()
        let dog = Events<SeenObject>(), keep = Events<Seen>()
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 1]) }
            f.tokens.append(realm.objects(NToy.self).observe(on: DispatchQueue(label: "keep")) { keep.add(Seen($0)) })
        }
        #expect(keep.next() == Seen(initial: true, count: 0))
        let waiting = try f.run { realm -> Int in
            f.writeElsewhere { r in r.objects(NDog.self).first!.age = 2 }
            let d = realm.objects(NDog.self).first!
            f.tokens.append(d.observe { (c: ObjectChange<NDog>) in dog.add(SeenObject(c)) })
            realm.beginWrite()
            let waiting = dog.waiting
            d.name = "b"
            try realm.commitWrite()
            return waiting
        }
        #expect(waiting == 1)
        #expect(dog.next() == SeenObject(names: ["age"], old: ["1"], new: ["2"]))
        #expect(dog.next() == SeenObject(names: ["name"], old: ["nil"], new: ["b"]))
        #expect(dog.waiting == 0)
        try f.finish()
    }

    /// A List or Results observer registered on a Realm that is behind the notifier: the
    /// initial notification shows the collection at the version it is delivered at (the
    /// commit in between included), and the next update follows from there. On a run loop and
    /// on a queue.
    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func collectionObserverOnABehindRealm(list: Bool, onQueue: Bool) throws {
        let f = try Fixture()
        let seen = Events<Seen>(), keep = Events<Seen>()
        let queue = DispatchQueue(label: "behind-collection")
        try f.run { realm in
            try realm.write {
                realm.add(NPerson())
                addDogToPerson(realm, "a")
            }
            f.tokens.append(realm.objects(NToy.self).observe(on: DispatchQueue(label: "keep")) { keep.add(Seen($0)) })
        }
        #expect(keep.next() == Seen(initial: true, count: 0))
        let versions = try f.run { realm -> [UInt64] in
            f.writeElsewhere { r in addDogToPerson(r, "b") }
            let versions = [NotifierCore.version(of: realm.core), FileNotifier.running(f.config.path)!.notifiedVersion]
            #expect(realm.objects(NDog.self).count == 1)
            let q: DispatchQueue? = onQueue ? queue : nil
            f.tokens.append(list ? realm.objects(NPerson.self).first!.dogs.observe(on: q) { seen.add(Seen($0)) }
                                 : realm.objects(NDog.self).observe(on: q) { seen.add(Seen($0)) })
            return versions
        }
        #expect(versions[0] < versions[1])
        #expect(seen.next() == Seen(initial: true, count: 2))
        f.writeElsewhere { r in addDogToPerson(r, "c") }
        #expect(seen.next() == Seen(count: 3, ins: [2]))
        #expect(seen.waiting == 0)
        try f.finish()
    }

    /// The same race without holding the queue, many times over, for a Results (its watch made
    /// on the notifier thread) and for a List (its watch made on the registering thread):
    /// whichever of the initial delivery and the write comes first, the write is in `.initial`
    /// or in exactly one `.update` after it, never in both and never lost; the collection
    /// handed over has as many elements as the change set says. A write from another thread
    /// made right after registering is checked the same way.
    @Test func queueObserverNeverLosesOrRepeatsAWriteMadeRightAfterRegistering() throws {
        let f = try Fixture()
        try f.run { realm in try realm.write { realm.add(NPerson()) } }
        var n = 0
        for i in 0..<160 {
            let seen = Events<Seen>()
            let queue = DispatchQueue(label: "fold-race-\(i)")
            let token = try f.run { realm -> NotificationToken in
                let token = i % 4 < 2
                    ? realm.objects(NDog.self).observe(on: queue) { seen.add(Seen($0)) }
                    : realm.objects(NPerson.self).first!.dogs.observe(on: queue) { seen.add(Seen($0)) }
                if i % 2 == 0 { try realm.write { addDogToPerson(realm, "here") } }
                return token
            }
            if i % 2 == 1 { f.writeElsewhere { r in addDogToPerson(r, "there") } }
            let first = seen.next()
            if first == Seen(initial: true, count: n) {
                #expect(seen.next() == Seen(count: n + 1, ins: [n]), "iteration \(i)")
            } else {
                #expect(first == Seen(initial: true, count: n + 1), "iteration \(i)")
            }
            f.writeElsewhere { r in addDogToPerson(r, "marker") }
            #expect(seen.next() == Seen(count: n + 2, ins: [n + 1]), "iteration \(i)")
            #expect(seen.waiting == 0, "iteration \(i)")
            try f.run { _ in token.invalidate() }
            n += 2
        }
        try f.finish()
    }

    /// `refresh()` right after registering delivers the initial notification before it returns
    /// (the watch is made then, on the refreshing thread).
    @Test func refreshDeliversTheInitialNotification() throws {
        let f = try Fixture()
        let dogs = Events<Seen>()
        let waiting = try f.run { realm -> Int in
            try realm.write { realm.create(NDog.self, value: ["name": "a"]) }
            f.tokens.append(realm.objects(NDog.self).observe { dogs.add(Seen($0)) })
            realm.refresh()
            return dogs.waiting
        }
        #expect(waiting == 1)
        #expect(dogs.next() == Seen(initial: true, count: 1))
        #expect(dogs.waiting == 0)
        try f.finish()
    }

    /// Insertions, deletions and modifications with exact indices; objects moving in and out of
    /// a filtered query and moving inside a sorted one.
    @Test func resultsIndices() throws {
        let f = try Fixture()
        let all = Events<Seen>(), young = Events<Seen>(), sorted = Events<Seen>()
        try f.run { realm in
            try realm.write {
                for (i, n) in ["a", "b", "c", "d"].enumerated() { realm.create(NDog.self, value: ["name": n, "age": i]) }
            }
            f.tokens.append(realm.objects(NDog.self).observe { all.add(Seen($0)) })
            f.tokens.append(realm.objects(NDog.self).filter("age < 2").observe { young.add(Seen($0)) })
            f.tokens.append(realm.objects(NDog.self).sorted(byKeyPath: "age").observe { sorted.add(Seen($0)) })
        }
        #expect(all.next() == Seen(initial: true, count: 4))
        #expect(young.next() == Seen(initial: true, count: 2))
        #expect(sorted.next() == Seen(initial: true, count: 4))
        // "c" (age 2) becomes 0: modified in place for all; enters "young"; moves to the front
        // of the sorted results
        f.writeElsewhere { r in r.objects(NDog.self).filter("name == 'c'").first!.age = -1 }
        #expect(all.next() == Seen(count: 4, mod: [2]))
        #expect(young.next() == Seen(count: 3, ins: [2]))
        #expect(sorted.next() == Seen(count: 4, del: [2], ins: [0]))
        // delete "a", add "e" (age 9)
        f.writeElsewhere { r in
            r.delete(r.objects(NDog.self).filter("name == 'a'").first!)
            r.create(NDog.self, value: ["name": "e", "age": 9])
        }
        #expect(all.next() == Seen(count: 4, del: [0], ins: [3]))
        #expect(young.next() == Seen(count: 2, del: [0]))
        #expect(sorted.next() == Seen(count: 4, del: [1], ins: [3]))
        try f.finish()
    }

    /// The RealmCollection page's key-path bullets: "name", "toys", "toys.brand", and the Swift
    /// key-path form.
    @Test func collectionKeyPaths() throws {
        let f = try Fixture()
        let byName = Events<Seen>(), byToys = Events<Seen>(), byBrand = Events<Seen>(), swiftName = Events<Seen>(),
            deep = Events<Seen>()
        try f.run { realm in
            try realm.write {
                let d = realm.create(NDog.self, value: ["name": "Rex"])
                d.toys.append(NToy(value: ["brand": "acme", "color": "red"]))
            }
            let dogs = realm.objects(NDog.self)
            f.tokens.append(dogs.observe(keyPaths: ["name"]) { byName.add(Seen($0)) })
            f.tokens.append(dogs.observe(keyPaths: ["toys"]) { byToys.add(Seen($0)) })
            f.tokens.append(dogs.observe(keyPaths: ["toys.brand"]) { byBrand.add(Seen($0)) })
            f.tokens.append(dogs.observe(keyPaths: [\NDog.name]) { swiftName.add(Seen($0)) })
            f.tokens.append(dogs.observe { deep.add(Seen($0)) })
        }
        for e in [byName, byToys, byBrand, swiftName, deep] { #expect(e.next()?.initial == true) }
        // a toy's color: only the unfiltered (deep) observer
        f.writeElsewhere { r in r.objects(NToy.self).first!.color = "blue" }
        #expect(deep.next() == Seen(count: 1, mod: [0]))
        // a toy's brand: "toys.brand" and deep
        f.writeElsewhere { r in r.objects(NToy.self).first!.brand = "zoom" }
        #expect(byBrand.next() == Seen(count: 1, mod: [0]))
        #expect(deep.next() == Seen(count: 1, mod: [0]))
        // a toy appended: "toys", "toys.brand" and deep
        f.writeElsewhere { r in r.objects(NDog.self).first!.toys.append(NToy()) }
        #expect(byToys.next() == Seen(count: 1, mod: [0]))
        #expect(byBrand.next() == Seen(count: 1, mod: [0]))
        #expect(deep.next() == Seen(count: 1, mod: [0]))
        // the age: nothing but deep
        f.writeElsewhere { r in r.objects(NDog.self).first!.age = 5 }
        #expect(deep.next() == Seen(count: 1, mod: [0]))
        // the name: "name" both forms and deep
        f.writeElsewhere { r in r.objects(NDog.self).first!.name = "Max" }
        #expect(byName.next() == Seen(count: 1, mod: [0]))
        #expect(swiftName.next() == Seen(count: 1, mod: [0]))
        #expect(deep.next() == Seen(count: 1, mod: [0]))
        // an insertion reaches every observer
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "new"]) }
        for e in [byName, byToys, byBrand, swiftName, deep] { #expect(e.next() == Seen(count: 2, ins: [1])) }
        for e in [byName, byToys, byBrand, swiftName, deep] { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// The Object page: shallow by default, `.deleted`, self-assignment, old values (nil for a
    /// write through the same Realm), ["siblings"] against ["siblings.name"], no initial call.
    @Test func objectNotifications() throws {
        let f = try Fixture()
        let shallow = Events<SeenObject>(), siblings = Events<SeenObject>(), siblingNames = Events<SeenObject>(),
            adopted = Events<SeenObject>()
        try f.run { realm in
            try realm.write {
                let d = realm.create(NDog.self, value: ["name": "Rex"])
                d.siblings.append(NDog(value: ["name": "Sib"]))
            }
            let dog = realm.objects(NDog.self).filter("name == 'Rex'").first!
            f.tokens.append(dog.observe { (c: ObjectChange<NDog>) in shallow.add(SeenObject(c)) })
            f.tokens.append(dog.observe(keyPaths: ["siblings"]) { (c: ObjectChange<NDog>) in siblings.add(SeenObject(c)) })
            f.tokens.append(dog.observe(keyPaths: ["siblings.name"]) { (c: ObjectChange<NDog>) in siblingNames.add(SeenObject(c)) })
            f.tokens.append(dog.observe(keyPaths: [\NDog.adopted]) { (c: ObjectChange<NDog>) in adopted.add(SeenObject(c)) })
        }
        // another thread's write: old and new values
        f.writeElsewhere { r in r.objects(NDog.self).filter("name == 'Rex'").first!.age = 4 }
        #expect(shallow.next() == SeenObject(names: ["age"], old: ["0"], new: ["4"]))
        // a sibling's name: only "siblings.name"
        f.writeElsewhere { r in r.objects(NDog.self).filter("name == 'Sib'").first!.name = "Sibby" }
        #expect(siblingNames.next()?.names == ["siblings"])
        // a sibling appended: "siblings" and "siblings.name" and the shallow observer
        f.writeElsewhere { r in r.objects(NDog.self).filter("name == 'Rex'").first!.siblings.append(NDog()) }
        #expect(shallow.next()?.names == ["siblings"])
        #expect(siblings.next()?.names == ["siblings"])
        #expect(siblingNames.next()?.names == ["siblings"])
        // a self-assignment through the same Realm: old value nil (same thread), counts
        try f.run { realm in
            let dog = realm.objects(NDog.self).filter("name == 'Rex'").first!
            try realm.write { dog.adopted = dog.adopted }
        }
        #expect(shallow.next() == SeenObject(names: ["adopted"], old: ["nil"], new: ["false"]))
        #expect(adopted.next() == SeenObject(names: ["adopted"], old: ["nil"], new: ["false"]))
        f.writeElsewhere { r in r.delete(r.objects(NDog.self).filter("name == 'Rex'").first!) }
        for e in [shallow, siblings, siblingNames, adopted] { #expect(e.next() == SeenObject(deleted: true)) }
        for e in [shallow, siblings, siblingNames, adopted] { #expect(e.waiting == 0) }
        try f.finish()
    }

    /// Lists, maps and backlinks.
    @Test func listsMapsAndBacklinks() throws {
        let f = try Fixture()
        let list = Events<Seen>(), owners = Events<Seen>(), map = Events<([String], [String], [String])>()
        try f.run { realm in
            try realm.write {
                let p = realm.create(NPerson.self, value: ["name": "Ann"])
                let q = realm.create(NPerson.self, value: ["name": "Bob"])
                for n in ["a", "b", "c"] { p.dogs.append(NDog(value: ["name": n])) }
                q.dogs.append(p.dogs[0])
                p.tags["x"] = 1
                p.tags["y"] = 2
            }
            let ann = realm.objects(NPerson.self).filter("name == 'Ann'").first!
            f.tokens.append(ann.dogs.observe { list.add(Seen($0)) })
            f.tokens.append(ann.dogs[0].owners.observe { owners.add(Seen($0)) })
            f.tokens.append(ann.tags.observe { change in
                switch change {
                case .initial: map.add((["initial"], [], []))
                case .update(_, let d, let i, let m): map.add((d.sorted(), i.sorted(), m.sorted()))
                case .error: map.add((["error"], [], []))
                }
            })
        }
        #expect(list.next() == Seen(initial: true, count: 3))
        #expect(owners.next() == Seen(initial: true, count: 2))
        #expect(map.next()?.0 == ["initial"])
        f.writeElsewhere { r in
            let ann = r.objects(NPerson.self).filter("name == 'Ann'").first!
            ann.dogs.move(from: 2, to: 0)       // [c a b]
            ann.dogs.remove(at: 2)              // [c a]
            ann.dogs.append(NDog())             // [c a new]
            ann.dogs[1].age = 3                 // a modified (deep)
            ann.tags["y"] = 5
            ann.tags["z"] = 1
            ann.tags.removeObject(for: "x")
            let bob = r.objects(NPerson.self).filter("name == 'Bob'").first!
            bob.dogs.removeAll()                // Bob unlinks "a": a deletion from a's owners
        }
        #expect(list.next() == Seen(count: 3, del: [1, 2], ins: [0, 2], mod: [0]))
        // Bob is gone from a's owners; Ann stays, modified (her `dogs` list changed: the
        // default filter covers every property of the elements)
        #expect(owners.next() == Seen(count: 1, del: [1], mod: [0]))
        let m = map.next()
        #expect(m?.0 == ["x"] && m?.1 == ["z"] && m?.2 == ["y"])
        try f.finish()
    }

    /// Realm.observe: .didChange after a local commit (synchronously) and after another
    /// thread's commit; autorefresh off gives .refreshRequired until refresh().
    @Test func realmNotifications() throws {
        let f = try Fixture()
        let events = Events<Realm.Notification>()
        let local = try f.run { realm -> Int in
            f.tokens.append(realm.observe { n, _ in events.add(n) })
            try realm.write { realm.create(NDog.self) }
            return events.waiting
        }
        #expect(local == 1)
        #expect(events.next() == .didChange)
        f.writeElsewhere { r in r.create(NDog.self) }
        #expect(events.next() == .didChange)
        #expect(try f.run { $0.objects(NDog.self).count } == 2)
        try f.run { $0.autorefresh = false }
        f.writeElsewhere { r in r.create(NDog.self) }
        #expect(events.next() == .refreshRequired)
        #expect(try f.run { $0.objects(NDog.self).count } == 2)
        #expect(try f.run { $0.refresh() })
        #expect(try f.run { $0.objects(NDog.self).count } == 3)
        try f.finish()
    }

    /// refresh() delivers pending notifications before it returns.
    @Test func refreshDeliversSynchronously() throws {
        let f = try Fixture()
        let events = Events<Seen>()
        try f.run { realm in f.tokens.append(realm.objects(NDog.self).observe { events.add(Seen($0)) }) }
        #expect(events.next()?.initial == true)
        let seenInside = try f.run { realm -> Int in
            let config = f.config
            onNewThread {
                let r = try! Realm(configuration: config)
                try! r.write { r.create(NDog.self) }
            }
            realm.refresh()
            return events.waiting
        }
        #expect(seenInside == 1)
        #expect(events.next() == Seen(count: 1, ins: [0]))
        try f.finish()
    }

    /// write(withoutNotifying:) skips that token for that write only.
    @Test func withoutNotifying() throws {
        let f = try Fixture()
        let skipped = Events<Seen>(), other = Events<Seen>()
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).observe { skipped.add(Seen($0)) })
            f.tokens.append(realm.objects(NDog.self).observe { other.add(Seen($0)) })
        }
        #expect(skipped.next()?.initial == true)
        #expect(other.next()?.initial == true)
        _ = try f.run { realm in try realm.write(withoutNotifying: [f.tokens[0]]) { realm.create(NDog.self) } }
        #expect(other.next() == Seen(count: 1, ins: [0]))
        _ = try f.run { realm in try realm.write { realm.create(NDog.self) } }
        #expect(other.next() == Seen(count: 2, ins: [1]))
        #expect(skipped.next() == Seen(count: 2, ins: [1]))
        #expect(skipped.waiting == 0)
        try f.finish()
    }

    /// A token invalidated inside its block gets no later callback; a released token neither,
    /// and the block (with what it captured) is freed.
    @Test func invalidationInsideBlockAndRelease() throws {
        let f = try Fixture()
        let first = Events<Seen>(), witness = Events<Seen>()
        final class Captured {}
        weak var weakCaptured: Captured?
        nonisolated(unsafe) var inside: NotificationToken?
        try f.run { realm in
            let captured = Captured()
            weakCaptured = captured
            inside = realm.objects(NDog.self).observe { c in
                withExtendedLifetime(captured) {}
                first.add(Seen(c))
                if case .update = c { inside?.invalidate() }
            }
            f.tokens.append(realm.objects(NDog.self).observe { witness.add(Seen($0)) })
        }
        #expect(first.next()?.initial == true)
        #expect(witness.next()?.initial == true)
        f.writeElsewhere { r in r.create(NDog.self) }
        #expect(first.next() == Seen(count: 1, ins: [0]))
        #expect(witness.next() == Seen(count: 1, ins: [0]))
        f.writeElsewhere { r in r.create(NDog.self) }
        #expect(witness.next() == Seen(count: 2, ins: [1]))
        #expect(first.waiting == 0)
        try f.run { _ in inside = nil }
        #expect(weakCaptured == nil)
        try f.finish()
    }

    /// Delivery on a queue, with results of a Realm confined to it.
    @Test func queueDelivery() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "notify-test")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let events = Events<(Seen, Bool)>()
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).observe(on: queue) { c in
                events.add((Seen(c), DispatchQueue.getSpecific(key: key) == 7))
            })
        }
        #expect(events.next()?.0.initial == true)
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "q"]) }
        let e = events.next()
        #expect(e?.0 == Seen(count: 1, ins: [0]) && e?.1 == true)
        try f.finish()
    }

    /// A commit from another process notifies.
    @Test func commitFromAnotherProcess() throws {
        let dir = TempDir()
        let thread = RunLoopThread()
        let config = Realm.Configuration(fileURL: dir.file(), objectTypes: [ProcPerson.self])
        let events = Events<Seen>()
        nonisolated(unsafe) var token: NotificationToken?
        try thread.sync {
            let realm = try Realm(configuration: config)
            token = realm.objects(ProcPerson.self).observe { events.add(Seen($0)) }
        }
        #expect(events.next()?.initial == true)
        let r = try ChildProcess.run(["add", dir.file().path, "Zed", "41"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(events.next() == Seen(count: 1, ins: [0]))
        try thread.sync { token?.invalidate() }
        thread.stop()
    }

    /// The AsyncSequence form: changes arrive in order and the sequence ends, with its observer
    /// removed, when the task is cancelled. (The test awaits instead of blocking: a blocked
    /// cooperative thread could starve the consuming task.)
    @Test func asyncSequenceEndsOnCancellation() async throws {
        let f = try Fixture()
        let path = f.config.path
        let stream = try f.run { realm in UncheckedBox(realm.objects(NDog.self).changes()) }
        var it = stream.value.makeAsyncIterator()
        #expect(await it.next().map(Seen.init)?.initial == true)
        f.writeElsewhere { r in r.create(NDog.self) }
        #expect(await it.next().map(Seen.init) == Seen(count: 1, ins: [0]))
        f.writeElsewhere { r in r.create(NDog.self) }
        #expect(await it.next().map(Seen.init) == Seen(count: 2, ins: [1]))
        let waiting = it
        let task = Task {
            var i = waiting
            return await i.next().map(Seen.init)
        }
        task.cancel()
        #expect(await task.value == nil)
        #expect((FileNotifier.running(path)?.observerCount ?? 0) == 0)
        try f.finish()
    }
}

@Suite struct WatchToolTests {
    /// `swiftstore watch --json` prints the change sets of another process's commits.
    @Test func watchPrintsOtherProcessesCommits() throws {
        let dir = TempDir()
        let file = dir.file().path
        #expect(try ChildProcess.run(["add", file, "Ann", "3"], in: dir).status == 0)
        guard let tool = swiftstoreToolPath else {
            Issue.record("swiftstore executable not found")
            return
        }
        let out = dir.url.appendingPathComponent("watch.out")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = ["watch", file, "ProcPerson", "age > 3", "--json", "--count", "1"]
        p.standardOutput = try FileHandle(forWritingTo: out)
        try p.run()
        defer { if p.isRunning { p.terminate(); p.waitUntilExit() } }
        // the watch starts from the version it first reads: wait for its first line
        let initialDeadline = Date().addingTimeInterval(30)
        while (try? String(contentsOf: out, encoding: .utf8))?.contains("initial") != true && Date() < initialDeadline {
            usleep(2000)
        }
        try #require((try? String(contentsOf: out, encoding: .utf8))?.contains("initial") == true,
                     "the watch printed no initial line")
        #expect(try ChildProcess.run(["add", file, "Bob", "2"], in: dir).status == 0)   // not matching
        #expect(try ChildProcess.run(["add", file, "Cid", "7"], in: dir).status == 0)   // matching
        // (it exits after the one matching change set)
        let exited = Date().addingTimeInterval(60)
        while p.isRunning && Date() < exited { usleep(2000) }
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        let lines = ((try? String(contentsOf: out, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.last?.contains("\"insertions\":[0]") == true, "\(lines)")
    }
}

@Suite struct NotificationPreconditionTests {
    /// An unknown key path traps with RealmSwift's invalid-argument message naming it.
    @Test func unknownKeyPathTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([NToy.self, NDog.self, NPerson.self]))
            _ = realm.objects(NDog.self).observe(keyPaths: ["toys.nope"], on: DispatchQueue(label: "q")) { _ in }
        }
        expectMessage(result, "Invalid argument: Property 'nope' not found in object of type 'NToy'")
    }

    /// A commit has the notifier it looked up compute the new version; if the last observer went
    /// meanwhile and the notifier's thread closed it, that does nothing (waking it used to reach
    /// the freed core notifier). In a child process: a use after close traps.
    @Test func aCommitToANotifierThatHasClosedIsHarmless() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let config = dir.config([NToy.self, NDog.self, NPerson.self])
            let realm = try! Realm(configuration: config)
            let token = realm.objects(NDog.self).observe(on: DispatchQueue(label: "q")) { _ in }
            let notifier = FileNotifier.running(config.path)!
            token.invalidate()
            precondition(notifier.stopped.wait(timeout: .now() + 60) == .success, "the notifier did not stop")
            notifier.committed(by: realm.core)
        }
    }

    /// As in RealmSwift, `write(withoutNotifying:)` refuses a token of another Realm's observer.
    @Test func skippingAnotherRealmsTokenTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let config = dir.config([NToy.self, NDog.self, NPerson.self])
            let queue = DispatchQueue(label: "q")
            let other = queue.sync { UncheckedBox(try! Realm(configuration: config, queue: queue)) }
            let token = queue.sync { other.value.objects(NDog.self).observe(on: queue) { _ in } }
            let realm = try! Realm(configuration: config)
            try! realm.write(withoutNotifying: [token]) { realm.create(NDog.self) }
        }
        expectMessage(result, "Incorrect Realm: only notifications for the Realm being modified can be skipped.")
    }

    /// A queue observer's token is the queue's Realm's, so a write on that queue may skip it.
    @Test func skippingOwnTokensIsAccepted() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let config = dir.config([NToy.self, NDog.self, NPerson.self])
            let queue = DispatchQueue(label: "q")
            queue.sync {
                let realm = try! Realm(configuration: config, queue: queue)
                let token = realm.objects(NDog.self).observe(on: queue) { _ in }
                try! realm.write(withoutNotifying: [token]) { realm.create(NDog.self) }
                token.invalidate()
            }
        }
    }
}
