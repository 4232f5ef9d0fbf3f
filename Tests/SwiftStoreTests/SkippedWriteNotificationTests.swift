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
        #expect(query.next(timeout: 30) == Seen(count: 4, ins: [2], mod: [1]))
        #expect(list.next(timeout: 30) == Seen(count: 4, ins: [3], mod: [0]))
        #expect(derived.next(timeout: 30) == Seen(count: 4, ins: [3], mod: [0]))
        #expect(object.next(timeout: 30) == SeenObject(names: ["adopted"], old: ["false"], new: ["true"]))
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
        let f = try annOwningDogs(andBob: true)
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
        #expect(shared.next(timeout: 30) == Seen(count: 2, ins: [0]))
        #expect(plain.next(timeout: 30) == Seen(count: 4, mod: [0]))
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

extension SkippedWriteNotificationTests {
    /// A random oracle for `write(withoutNotifying:)`: hundreds of rounds of random commits from
    /// the observing thread (each skipping a random subset of the observers; some with another
    /// thread's or process's commit landing right after them, before their version is computed,
    /// some with another thread's landing before they take the write lock, which holds change
    /// sets back),
    /// made inside the first block of a delivery, from another thread and from
    /// another process, observed through a filtered and two sorted table queries, a List,
    /// queries over that List, with and without key paths. Each delivered change set, applied
    /// to the observer's previous key list, must give the collection at the version it is for:
    /// the delivered collection, or, for a held-back change set or one delivered after a write
    /// in an earlier block, the collection at that earlier version. After a skipped write the
    /// observer's list is the collection as the write left it (what the app shows after making
    /// the write itself; after the held-back change set, if any), so a skipped write reported
    /// later or another commit's change left out breaks the next comparison or the one at the
    /// round's end. Modifications: a skipped observer never reports an object only the skipped
    /// write changed; an unsorted observer of ages reports every object another commit changed
    /// that stayed in it; an observer of names only reports none. A write from the observing
    /// thread (outside a block) starts from data its observers were told of, unless a commit
    /// landed before its write lock. SKIP_ORACLE_SEED and
    /// SKIP_ORACLE_ROUNDS choose another run.
    @Test func randomSkippedWritesOracle() throws {
        let env = ProcessInfo.processInfo.environment
        let seed = env["SKIP_ORACLE_SEED"].flatMap { UInt64($0) } ?? stableSeed("skipped-write-oracle")
        let rounds = env["SKIP_ORACLE_ROUNDS"].flatMap { Int($0) } ?? 200
        let f = try Fixture(models: [ProcPerson.self, SkipOwner.self])
        let o = SkipOracle(seed: seed)
        try f.run { realm in
            try realm.write {
                let owner = realm.create(SkipOwner.self, value: ["name": "o"])
                for _ in 0..<6 { owner.people.append(realm.create(ProcPerson.self, value: ["name": o.newName(), "age": o.int(100)])) }
            }
            let people = realm.objects(ProcPerson.self), list = realm.objects(SkipOwner.self).first!.people
            // (registered first: its block writes before the others' blocks of the same delivery)
            let trigger = people.observe { change in
                if case .update = change { o.writeInBlock(realm, f.tokens) }
            }
            f.tokens = [
                people.filter("age < 50").observe { o.handle(0, $0) },
                people.sorted(byKeyPath: "age").observe { o.handle(1, $0) },
                people.sorted(byKeyPath: "age", ascending: false).observe(keyPaths: ["name"]) { o.handle(2, $0) },
                list.observe { o.handle(3, $0) },
                list.observe(keyPaths: ["name"]) { o.handle(4, $0) },
                list.filter("age >= 20").observe { o.handle(5, $0) },
                list.sorted(byKeyPath: "age").observe(keyPaths: ["age"]) { o.handle(6, $0) },
            ]
            // (registered last: called at the end of each delivery that moves the Realm)
            f.tokens += [trigger, realm.observe { _, _ in o.deliveryEnded() }]
            realm.refresh()
        }
        var start = try f.run { realm in
            let t = SkipOracle.truth(realm)
            if o.models != t { o.fail("initial notifications: \(o.models), the data \(t)") }
            return t
        }
        let config = f.config, path = config.path, dir = f.dir
        for round in 0..<rounds where o.failures.isEmpty {
            o.startRound(round)
            var commits: [SkipOracle.Commit] = []
            for step in 0..<(1 + o.int(3)) {
                let kind = o.int(100)
                if round % 50 == 17 && step == 0 {
                    commits.append(try SkipOracle.commitInChild(o, path: path, dir: dir, config: config))
                } else if kind < 55 || (round % 50 == 42 && step == 0) {
                    // from the observing thread, skipping some observers; some with another
                    // commit landing right after it
                    let skipped = o.int(10) < 7 ? o.randomObservers() : []
                    let landing = round % 50 == 42 && step == 0 ? 2 : (o.int(100) < 30 ? 1 : 0)
                    // (or one landing after it delivered what was pending and before it took the
                    // write lock: change sets held back for the skipped observers)
                    let before = o.int(100) < 25
                    let after = Locked<SkipOracle.Commit?>(nil), landed = Locked<SkipOracle.Commit?>(nil)
                    // (armed after the commit landing before the write lock, which would take it)
                    let armLanding: @Sendable () -> Void = {
                        guard landing > 0 else { return }
                        RealmCore.afterCommitForTesting.withLock {
                            $0[path] = {
                                let c = landing == 1 ? SkipOracle.commitOnThread(o, config: config)
                                    : try? SkipOracle.commitInChild(o, path: path, dir: dir, config: config)
                                after.withLock { $0 = c }
                            }
                        }
                    }
                    RealmCore.testHooksArmed.store(true, ordering: .relaxed)
                    if before {
                        RealmCore.beforePromoteForTesting.withLock {
                            $0[path] = {
                                let c = SkipOracle.commitOnThread(o, config: config)
                                landed.withLock { $0 = c }
                                armLanding()
                            }
                        }
                    } else {
                        armLanding()
                    }
                    let local = try f.run { realm -> SkipOracle.Commit in
                        var ops: (modified: Set<String>, listed: Set<String>) = ([], [])
                        try realm.write(withoutNotifying: skipped.map { f.tokens[$0] }) {
                            // (the observers were told of the version the write starts from, a
                            // commit that landed before its write lock included)
                            if !before, o.models != SkipOracle.truth(realm) {
                                o.fail("a write started from data its observers were not told of: \(o.models), the data \(SkipOracle.truth(realm))")
                            }
                            ops = o.randomOps(realm)
                        }
                        let truth = SkipOracle.truth(realm)
                        if let c = landed.withLock({ $0 }) {
                            // a held-back change set comes first, for the version the write
                            // started from; then the app's own write
                            for i in skipped { o.holdBack(i, landed: c, after: truth[i]) }
                        } else {
                            // what the app shows after making the write itself
                            for i in skipped { o.models[i] = truth[i] }
                        }
                        return SkipOracle.Commit(truth: truth, modified: ops.modified, listed: ops.listed,
                                                 skipped: Set(skipped))
                    }
                    if before {
                        guard let c = landed.withLock({ $0 }) else {
                            o.fail("the commit landing before the write lock did not run")
                            break
                        }
                        commits.append(c)
                        // (delivered before anything else commits)
                        try f.run { realm in
                            realm.refresh()
                            o.endHeldBack()
                        }
                    }
                    commits.append(local)
                    if landing > 0 {
                        guard let c = after.withLock({ $0 }) else {
                            o.fail("the commit landing after the write did not run")
                            break
                        }
                        commits.append(c)
                    }
                } else if kind < 70 {
                    // another thread's commit, and a write skipping some observers made in the
                    // first block of its delivery (if the commit changed a person: that block's
                    // observer sees no List)
                    try f.run { _ in o.armWriteInBlock(o.int(10) < 8 ? o.randomObservers() : []) }
                    commits.append(SkipOracle.commitOnThread(o, config: config))
                    if let c = try f.run({ realm -> SkipOracle.Commit? in
                        realm.refresh()
                        return o.disarmWriteInBlock()
                    }) {
                        commits.append(c)
                    }
                } else {
                    commits.append(SkipOracle.commitOnThread(o, config: config))
                }
            }
            start = try f.run { realm -> [[String]] in
                realm.refresh()
                let end = SkipOracle.truth(realm)
                o.check(start: start, commits: commits, end: end)
                return end
            }
        }
        #expect(o.failures.isEmpty, "seed \(seed): \(o.failures.joined(separator: "; "))")
        if !o.failures.isEmpty { print("randomSkippedWritesOracle failed with SKIP_ORACLE_SEED=\(seed)") }
        if o.failures.isEmpty { #expect(o.childCommits >= 2 * (rounds / 50)) }
        try f.finish()
    }
}

final class SkipOwner: Object {
    @Persisted var name = ""
    @Persisted var people: List<ProcPerson>
}

/// The state of `randomSkippedWritesOracle`: its generator, the observers' key lists (names,
/// on the observing thread), and what they reported as modified in the current round.
private final class SkipOracle: @unchecked Sendable {
    /// One commit: every observed collection as it left it, the objects whose age it set that
    /// it did not delete, the objects it put in the List or took out (another element of the
    /// List, which is inserted or deleted, not modified), and the observers it skipped.
    struct Commit {
        var truth: [[String]]
        var modified: Set<String>
        var listed: Set<String> = []
        var skipped: Set<Int> = []
    }

    /// Whether each observer's order is that of the table or the List (its elements never move
    /// when their age changes), and whether its key paths see ages.
    static let unsorted = [true, false, false, true, true, true, false]
    static let overList = [false, false, false, true, true, true, true]
    static let seesAge = [true, true, false, true, false, true, true]
    static let names = ["age < 50", "sorted by age", "sorted (name)", "List", "List (name)", "List age >= 20",
                        "List sorted (age)"]

    // (used by one thread at a time: the test's, the observing thread's, a committing thread's,
    // each waiting for the other)
    private var rng: SeededRNG
    private var count = 0
    // (read and written on the observing thread only)
    var models = [[String]](repeating: [], count: 7)
    var reported = [Set<String>](repeating: [], count: 7)
    /// Observers with a change set held back by the last write: the collection at the version
    /// it brings them to, the collection as the write left it, and whether that change set is
    /// due (nil: it may be, with modifications only).
    var heldBack: [Int: (before: [String], after: [String], due: Bool?)] = [:]
    /// A write to make in the next delivery's first block (`writeInBlock`), skipping these.
    private var armed: [Int]?
    /// During that delivery: the collections at the version delivered (its change sets'
    /// version, while the Realm reads the write's), the collections after the write, the
    /// observers skipped; and the commit.
    private var inBlock: (delivered: [[String]], after: [[String]], skipped: [Int])?
    private var writing = false
    private var blockCommit: Commit?
    private let failureLog = Locked<[String]>([])
    var failures: [String] { failureLog.withLock { $0 } }
    var round = 0
    var childCommits = 0

    init(seed: UInt64) { rng = SeededRNG(seed: seed) }

    func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
    func newName() -> String {
        count += 1
        return "p\(count)"
    }
    func fail(_ text: String) {
        let r = round
        failureLog.withLock { $0.append("round \(r): \(text)") }
    }

    /// Observer `i` is skipped by a write after which commit `c` landed before the write lock.
    func holdBack(_ i: Int, landed c: Commit, after: [String]) {
        let before = c.truth[i]
        var due: Bool? = false
        if before != models[i] {
            due = true
        } else if (SkipOracle.seesAge[i] && !c.modified.isDisjoint(with: before))
                    || (SkipOracle.overList[i] && !c.listed.isEmpty) {
            due = nil
        }
        heldBack[i] = (before, after, due)
    }

    func randomObservers() -> [Int] { (0..<7).filter { _ in int(2) == 0 } }

    /// After the delivery that follows a write with held-back change sets: the observers that
    /// got none take the collection as the write left it.
    func endHeldBack() {
        for (i, h) in heldBack {
            if h.due == true {
                fail("\(SkipOracle.names[i]): no held-back change set (has \(models[i]), the data then \(h.before))")
            }
            models[i] = h.after
        }
        heldBack = [:]
    }

    func armWriteInBlock(_ skipped: [Int]) { armed = skipped }

    /// `old` without the deletions, with the insertions taken from `now` (valid indices).
    static func apply(_ old: [String], _ del: [Int], _ ins: [Int], _ now: [String]) -> [String] {
        var m = old
        for d in del.reversed() where d < m.count { m.remove(at: d) }
        for j in ins where j <= m.count && j < now.count { m.insert(now[j], at: j) }
        return m
    }

    /// The first block of a delivery, when armed: a write skipping the armed observers.
    func writeInBlock(_ realm: Realm, _ tokens: [NotificationToken]) {
        guard let skipped = armed else { return }
        armed = nil
        let delivered = SkipOracle.truth(realm)
        var ops: (modified: Set<String>, listed: Set<String>) = ([], [])
        writing = true
        try! realm.write(withoutNotifying: skipped.map { tokens[$0] }) { ops = randomOps(realm) }
        writing = false
        let after = SkipOracle.truth(realm)
        inBlock = (delivered, after, skipped)
        blockCommit = Commit(truth: after, modified: ops.modified, listed: ops.listed, skipped: Set(skipped))
    }

    /// The Realm observer registered last: the end of a delivery (not the `.didChange` of the
    /// write in its first block).
    func deliveryEnded() {
        guard !writing, let b = inBlock else { return }
        inBlock = nil
        for i in b.skipped { models[i] = b.after[i] }
    }

    /// The write made in a block, if the armed one was made.
    func disarmWriteInBlock() -> Commit? {
        armed = nil
        if inBlock != nil { fail("the delivery with a write in its first block did not end") }
        defer { blockCommit = nil }
        return blockCommit
    }

    func startRound(_ r: Int) {
        round = r
        reported = [Set<String>](repeating: [], count: 7)
    }

    static func truth(_ r: Realm) -> [[String]] {
        let people = r.objects(ProcPerson.self), list = r.objects(SkipOwner.self).first!.people
        return [people.filter("age < 50").map(\.name), people.sorted(byKeyPath: "age").map(\.name),
                people.sorted(byKeyPath: "age", ascending: false).map(\.name), list.map(\.name), list.map(\.name),
                list.filter("age >= 20").map(\.name), list.sorted(byKeyPath: "age").map(\.name)]
    }

    /// Applies one delivered change set to observer `i`'s key list and compares the result with
    /// the delivered collection.
    func handle<C: Collection>(_ i: Int, _ change: RealmCollectionChange<C>) where C.Element == ProcPerson {
        switch change {
        case .initial(let c):
            models[i] = c.map(\.name)
        case .update(let c, let del, let ins, let mod):
            // (a held-back change set, or one delivered after a write in an earlier block:
            // for an earlier version than the collection's)
            var held = heldBack.removeValue(forKey: i)
            // (when none is due, this is the next one, after the write, when a commit landed
            // after it; when one may be due, it has modifications only)
            if let h = held, h.due == false || (h.due == nil && !(del.isEmpty && ins.isEmpty)) {
                models[i] = h.after
                held = nil
            }
            let old = models[i], now = held?.before ?? inBlock?.delivered[i] ?? c.map(\.name)
            defer { if let held { models[i] = held.after } }
            let sorted = { (a: [Int]) in zip(a, a.dropFirst()).allSatisfy { $0 < $1 } }
            guard sorted(del), sorted(ins), sorted(mod), del.allSatisfy({ $0 < old.count }),
                  mod.allSatisfy({ $0 < old.count }), Set(mod).isDisjoint(with: del), ins.allSatisfy({ $0 < now.count })
            else {
                fail("\(SkipOracle.names[i]): bad indices -\(del) +\(ins) ~\(mod) for \(old.count) -> \(now.count)")
                models[i] = now
                return
            }
            let m = SkipOracle.apply(old, del, ins, now)
            if m != now {
                fail("\(SkipOracle.names[i]): \(old) -\(del) +\(ins) gives \(m), delivered \(now)")
            }
            for k in mod { reported[i].insert(old[k]) }
            models[i] = now
        case .error(let e):
            fail("\(SkipOracle.names[i]): error \(e)")
        }
    }

    /// One to three random operations in the write of `r`: add a person (and put it in the
    /// List), set a person's age, delete a person, put a person in the List, take one out.
    /// Returns the people whose age it set and did not delete, and those it put in the List or
    /// took out.
    func randomOps(_ r: Realm) -> (modified: Set<String>, listed: Set<String>) {
        var modified = Set<String>(), deleted = Set<String>(), listed = Set<String>()
        let list = r.objects(SkipOwner.self).first!.people
        for _ in 0..<(1 + int(3)) {
            let people = Array(r.objects(ProcPerson.self))
            var op = int(100)
            if people.count < 4 { op = 0 } else if people.count > 24 && op < 30 { op = 60 }
            switch op {
            case 0..<30:
                let p = r.create(ProcPerson.self, value: ["name": newName(), "age": int(100)])
                if int(2) == 0 {
                    list.insert(p, at: int(list.count + 1))
                    listed.insert(p.name)
                }
            case 30..<60:
                let p = people[int(people.count)]
                p.age = int(100)
                modified.insert(p.name)
            case 60..<72:
                let p = people[int(people.count)]
                deleted.insert(p.name)
                r.delete(p)
            case 72..<86:
                let p = people[int(people.count)]
                list.insert(p, at: int(list.count + 1))
                listed.insert(p.name)
            default:
                if !list.isEmpty {
                    let at = int(list.count)
                    listed.insert(list[at].name)
                    list.remove(at: at)
                }
            }
        }
        return (modified.subtracting(deleted), listed)
    }

    /// A commit of random operations from another thread.
    static func commitOnThread(_ o: SkipOracle, config: Realm.Configuration) -> Commit {
        let box = Locked<Commit?>(nil)
        onNewThread {
            let r = try! Realm(configuration: config)
            var ops: (modified: Set<String>, listed: Set<String>) = ([], [])
            try! r.write { ops = o.randomOps(r) }
            box.withLock { $0 = Commit(truth: truth(r), modified: ops.modified, listed: ops.listed) }
        }
        return box.withLock { $0! }
    }

    /// A commit of random operations on people from another process (which knows no List: it
    /// adds, ages and deletes people).
    static func commitInChild(_ o: SkipOracle, path: String, dir: TempDir, config: Realm.Configuration) throws -> Commit {
        let plan = Locked<([String], Set<String>)>(([], []))
        onNewThread {
            let r = try! Realm(configuration: config)
            var names = r.objects(ProcPerson.self).map(\.name)
            var ops: [String] = [], modified = Set<String>()
            for _ in 0..<(1 + o.int(3)) {
                switch names.count < 4 ? 0 : o.int(3) {
                case 0:
                    let n = o.newName()
                    ops.append("+\(n):\(o.int(100))")
                case 1:
                    let n = names[o.int(names.count)]
                    ops.append("=\(n):\(o.int(100))")
                    modified.insert(n)
                default:
                    let n = names.remove(at: o.int(names.count))
                    ops.append("-\(n)")
                    modified.remove(n)
                }
            }
            plan.withLock { $0 = (ops, modified) }
        }
        let (ops, modified) = plan.withLock { $0 }
        let result = try ChildProcess.run(["edit", path] + ops, in: dir)
        if result.status != 0 { o.fail("child edit \(ops): \(result.stderr)") }
        o.childCommits += 1
        let box = Locked<[[String]]>([])
        onNewThread { box.withLock { $0 = truth(try! Realm(configuration: config)) } }
        return Commit(truth: box.withLock { $0 }, modified: modified)
    }

    /// The checks at the end of a round (every change set delivered): each observer's key list
    /// is its collection; the modifications it reported are right.
    func check(start: [[String]], commits: [Commit], end: [[String]]) {
        for i in 0..<7 {
            if models[i] != end[i] { fail("\(SkipOracle.names[i]): observer has \(models[i]), the data \(end[i])") }
            if !SkipOracle.seesAge[i] {
                if !reported[i].isEmpty { fail("\(SkipOracle.names[i]): modified \(reported[i].sorted()) (names only)") }
                continue
            }
            var skippedOnly = Set<String>(), others = Set<String>()
            for c in commits {
                if c.skipped.contains(i) { skippedOnly.formUnion(c.modified) } else { others.formUnion(c.modified) }
            }
            skippedOnly.subtract(others)
            let wrong = reported[i].intersection(skippedOnly)
            if !wrong.isEmpty { fail("\(SkipOracle.names[i]): reported the skipped write's modification of \(wrong.sorted())") }
            guard SkipOracle.unsorted[i] else { continue }
            // (an object in the collection from the round's start to its end, and, in a List, the
            // same element of it)
            var stayed = commits.reduce(Set(start[i])) { $0.intersection($1.truth[i]) }
            if SkipOracle.overList[i] { for c in commits { stayed.subtract(c.listed) } }
            let missing = others.intersection(stayed).subtracting(reported[i])
            if !missing.isEmpty { fail("\(SkipOracle.names[i]): no modification reported for \(missing.sorted())") }
        }
    }
}

extension SkippedWriteNotificationTests {
    /// As `aSkippedWriteInsideABlockAfterAnotherCommit`, with the block making the write called
    /// before the block of the query over the List in the same delivery, which has a change set
    /// of its own in it: that change set is compared with the results at the version delivered,
    /// not with those the write in the earlier block moved the Realm to. Before, it reported the
    /// skipped write's dog (update(4 +[3] ~[2])), and the held-back change set then took it away
    /// again (update(4 -[3] ~[0])).
    @Test func aSkippedWriteInAnEarlierBlockOfTheSameDelivery() throws {
        let f = try annOwningDogs(andBob: true)
        let plain = Events<Seen>(), owners = Events<Seen>()
        let armed = Locked(true)
        let skipped = Locked<[NotificationToken]>([])
        try f.run { realm in
            f.tokens.append(realm.objects(BKOwner.self).observe { change in
                owners.add(Seen(change))
                guard case .update = change, armed.withLock({ let a = $0; $0 = false; return a }) else { return }
                f.writeElsewhere { r in bkDog(r, "a").name = "a2" }
                try! realm.write(withoutNotifying: skipped.withLock { $0 }) {
                    bkOwner(realm, "Ann").dogs.append(realm.create(BKDog.self, value: ["name": "d"]))
                }
            })
            let t = bkOwner(realm, "Ann").dogs.filter("name != 'zz'").observe { plain.add(Seen($0)) }
            skipped.withLock { $0 = [t] }
            f.tokens.append(t)
        }
        #expect(owners.next() == Seen(initial: true, count: 2))
        #expect(plain.next() == Seen(initial: true, count: 3))
        f.writeElsewhere { r in
            bkOwner(r, "Ann").age = 1
            bkDog(r, "c").name = "c1"
        }
        #expect(owners.next() == Seen(count: 2, mod: [0]))
        // c renamed (the delivery's change set), then a renamed (held back by the write)
        #expect(plain.next(timeout: 30) == Seen(count: 4, mod: [2]))
        #expect(plain.next(timeout: 30) == Seen(count: 4, mod: [0]))
        f.writeElsewhere { r in bkDog(r, "b").name = "b2" }
        #expect(plain.next() == Seen(count: 4, mod: [1]))
        try f.run { _ in }
        #expect(plain.waiting == 0)
        try f.finish()
    }

    /// A write made inside an earlier block of a delivery, without notifying an observer whose
    /// change set in the same delivery is still to be called (another thread appended x): that
    /// change set is reported as it is (x inserted), and the rebase past the skipped write (d
    /// appended) comes after it, so the next change set (a deleted) lines up. Before, a query over
    /// the List took the results after the write as shown first and then translated its change
    /// set from there (x deleted and inserted again); the plain List was right.
    @Test(arguments: [true, false]) func skippedByAnEarlierBlockOfTheSameDelivery(queryOverList: Bool) throws {
        let f = try annOwningDogs()
        let seen = Events<Seen>(), owners = Events<Seen>()
        let armed = Locked(true)
        let skipped = Locked<[NotificationToken]>([])
        try f.run { realm in
            f.tokens.append(realm.objects(BKOwner.self).observe { change in
                owners.add(Seen(change))
                guard case .update = change, armed.withLock({ let a = $0; $0 = false; return a }) else { return }
                try! realm.write(withoutNotifying: skipped.withLock { $0 }) {
                    bkOwner(realm, "Ann").dogs.append(realm.create(BKDog.self, value: ["name": "d"]))
                }
            })
            let dogs = bkOwner(realm, "Ann").dogs
            let t = queryOverList ? dogs.filter("name != 'zz'").observe { seen.add(Seen($0)) }
                : dogs.observe { seen.add(Seen($0)) }
            skipped.withLock { $0 = [t] }
            f.tokens.append(t)
        }
        #expect(owners.next() == Seen(initial: true, count: 1))
        #expect(seen.next() == Seen(initial: true, count: 3))
        f.writeElsewhere { r in
            let ann = bkOwner(r, "Ann")
            ann.dogs.append(r.create(BKDog.self, value: ["name": "x"]))
            ann.age = 1
        }
        #expect(owners.next() == Seen(count: 1, mod: [0]))
        #expect(seen.next(timeout: 30) == Seen(count: 5, ins: [3]))
        f.writeElsewhere { r in r.delete(bkDog(r, "a")) }
        #expect(seen.next() == Seen(count: 4, del: [0]))
        try f.run { _ in }
        #expect(seen.waiting == 0)
        try f.finish()
    }

    /// A `refresh()` on another thread while a write that skips observers has committed and not
    /// computed its version yet waits for it, and delivers what the Realm moves to inside the
    /// refresh. Before, the refresh delivered up to the notifier's older version and then moved
    /// the Realm to the write's, its observer told nothing (the change set came later).
    @Test func refreshWhileASkippedWriteComputesItsVersion() throws {
        let f = try Fixture()
        let other = RunLoopThread()
        let config = f.config, path = config.path
        let seen = Events<Seen>()
        let held = Locked<(Realm?, NotificationToken?)>((nil, nil))
        try other.sync {
            let r = try Realm(configuration: config)
            held.withLock { $0 = (r, r.objects(NDog.self).observe { seen.add(Seen($0)) }) }
        }
        #expect(seen.next() == Seen(initial: true, count: 0))
        let skipped = try f.run { realm -> NotificationToken in
            let t = realm.objects(NDog.self).observe { _ in }
            f.tokens.append(t)
            return t
        }
        let inside = Locked<[Seen]>([]), waiting = DispatchSemaphore(value: 0), refreshed = DispatchSemaphore(value: 0)
        FileNotifier.makingHooksArmed.store(true, ordering: .relaxed)
        FileNotifier.waitingForSkipForTesting.withLock { $0[path] = { waiting.signal() } }
        RealmCore.testHooksArmed.store(true, ordering: .relaxed)
        RealmCore.afterCommitForTesting.withLock {
            $0[path] = {
                Thread {
                    try! other.sync {
                        let before = seen.all.count
                        held.withLock { $0.0 }!.refresh()
                        inside.withLock { $0 = Array(seen.all.dropFirst(before)) }
                    }
                    refreshed.signal()
                }.start()
                // (the refresh waits for this write to compute its version)
                _ = waiting.wait(timeout: .now() + 30)
            }
        }
        try f.run { realm in try realm.write(withoutNotifying: [skipped]) { realm.create(NDog.self, value: ["name": "a"]) } }
        refreshed.wait()
        FileNotifier.waitingForSkipForTesting.withLock { $0[path] = nil }
        #expect(inside.withLock { $0 } == [Seen(count: 1, ins: [0])])
        try other.sync {
            held.withLock { $0.1?.invalidate() }
            held.withLock { $0 = (nil, nil) }
        }
        other.stop()
        try f.finish()
    }

    /// A change set held back (another thread's commit inside a block, before the write) and a
    /// commit landing right after the skipped write (the afterCommit hook) together: the skipped
    /// query over the List gets x (held back) and y (landing), each once, never d.
    @Test func heldBackAndLandingTogether() throws {
        let f = try annOwningDogs()
        let owners = Events<Seen>(), observed = Events<Seen>()
        let armed = Locked(true)
        let config = f.config
        try f.run { realm in
            let ann = bkOwner(realm, "Ann")
            f.tokens.append(ann.dogs.filter("name != 'zz'").observe { observed.add(Seen($0)) })
            f.tokens.append(realm.objects(BKOwner.self).observe { change in
                owners.add(Seen(change))
                guard case .update = change, armed.withLock({ let a = $0; $0 = false; return a }) else { return }
                f.writeElsewhere { r in
                    bkOwner(r, "Ann").dogs.append(r.create(BKDog.self, value: ["name": "x"]))
                }
                commitAfterTheCommit(config) { r in
                    bkOwner(r, "Ann").dogs.append(r.create(BKDog.self, value: ["name": "y"]))
                }
                try! realm.write(withoutNotifying: [f.tokens[0]]) {
                    ann.dogs.append(realm.create(BKDog.self, value: ["name": "d"]))
                }
            })
        }
        #expect(observed.next() == Seen(initial: true, count: 3))
        #expect(owners.next() == Seen(initial: true, count: 1))
        f.writeElsewhere { r in bkOwner(r, "Ann").age = 1 }
        #expect(owners.next() == Seen(count: 1, mod: [0]))
        // [a, b, c, x, d, y]
        #expect(observed.next(timeout: 30) == Seen(count: 6, ins: [3]))
        #expect(observed.next(timeout: 30) == Seen(count: 6, ins: [5]))
        try f.run { _ in }
        #expect(observed.waiting == 0)
        try f.finish()
    }

    /// As `heldBackAndLandingTogether`, the skipped query over the List registered before or after
    /// the writing observer, with a change set of its own in the delivery that writes (c renamed).
    @Test(arguments: [true, false]) func heldBackLandingAndOwnChangeSet(skippedFirst: Bool) throws {
        let f = try annOwningDogs()
        let owners = Events<Seen>(), observed = Events<Seen>()
        let armed = Locked(true)
        let skipped = Locked<[NotificationToken]>([])
        let config = f.config
        try f.run { realm in
            let ann = bkOwner(realm, "Ann")
            let register = {
                let t = ann.dogs.filter("name != 'zz'").observe { observed.add(Seen($0)) }
                skipped.withLock { $0 = [t] }
                f.tokens.append(t)
            }
            if skippedFirst { register() }
            f.tokens.append(realm.objects(BKOwner.self).observe { change in
                owners.add(Seen(change))
                guard case .update = change, armed.withLock({ let a = $0; $0 = false; return a }) else { return }
                f.writeElsewhere { r in
                    bkOwner(r, "Ann").dogs.append(r.create(BKDog.self, value: ["name": "x"]))
                }
                commitAfterTheCommit(config) { r in
                    bkOwner(r, "Ann").dogs.append(r.create(BKDog.self, value: ["name": "y"]))
                }
                try! realm.write(withoutNotifying: skipped.withLock { $0 }) {
                    ann.dogs.append(realm.create(BKDog.self, value: ["name": "d"]))
                }
            })
            if !skippedFirst { register() }
        }
        #expect(observed.next() == Seen(initial: true, count: 3))
        #expect(owners.next() == Seen(initial: true, count: 1))
        f.writeElsewhere { r in
            bkOwner(r, "Ann").age = 1
            r.objects(BKDog.self).filter("name == 'c'").first!.name = "c1"
        }
        #expect(owners.next() == Seen(count: 1, mod: [0]))
        // c renamed (called before the write: 3 dogs; after it: [a, b, c1, x, d])
        #expect(observed.next(timeout: 30) == Seen(count: skippedFirst ? 3 : 5, mod: [2]))
        // then, [a, b, c1, x, d, y]: x (held back), y (landing)
        #expect(observed.next(timeout: 30) == Seen(count: 6, ins: [3]))
        #expect(observed.next(timeout: 30) == Seen(count: 6, ins: [5]))
        f.writeElsewhere { r in r.delete(r.objects(BKDog.self).filter("name == 'a'").first!) }
        #expect(observed.next() == Seen(count: 5, del: [0]))
        try f.run { _ in }
        #expect(observed.waiting == 0)
        try f.finish()
    }

    /// A Realm confined to a queue skipping its own query over a List observed on that queue: the
    /// next commits' change sets line up with the data the write left.
    @Test func queueConfinedSkip() throws {
        let dir = TempDir()
        let config = dir.config([BKOwner.self, BKDog.self])
        let q = DispatchQueue(label: "review-skip-queue")
        let seen = Events<Seen>()
        let state = UncheckedBox<(Realm?, NotificationToken?)>((nil, nil))
        try q.sync {
            let r = try Realm(configuration: config, queue: q)
            try r.write {
                let dogs = ["a", "b", "c"].map { r.create(BKDog.self, value: ["name": $0]) }
                r.create(BKOwner.self, value: ["name": "Ann"]).dogs.append(objectsIn: dogs)
            }
            state.value.0 = r
            let list = bkOwner(r, "Ann").dogs.filter("name != 'zz'")
            state.value.1 = list.observe(on: q) { seen.add(Seen($0)) }
        }
        #expect(seen.next() == Seen(initial: true, count: 3))
        try q.sync {
            let r = state.value.0!
            try r.write(withoutNotifying: [state.value.1!]) {
                bkOwner(r, "Ann").dogs.append(r.create(BKDog.self, value: ["name": "d"]))
            }
        }
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write { bkOwner(r, "Ann").dogs.append(r.create(BKDog.self, value: ["name": "y"])) }
        }
        #expect(seen.next(timeout: 30) == Seen(count: 5, ins: [4]))
        // the next commit lines up: [a, b, c, d, y, z]
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write { bkOwner(r, "Ann").dogs.append(r.create(BKDog.self, value: ["name": "z"])) }
        }
        #expect(seen.next(timeout: 30) == Seen(count: 6, ins: [5]))
        q.sync {
            state.value.1?.invalidate()
            state.value = (nil, nil)
        }
        #expect(seen.waiting == 0)
    }
}

private func namedDog(_ r: Realm, _ name: String) -> NDog { r.objects(NDog.self).filter("name == %@", name).first! }
private func bkDog(_ r: Realm, _ name: String) -> BKDog { r.objects(BKDog.self).filter("name == %@", name).first! }
private func bkOwner(_ r: Realm, _ name: String) -> BKOwner { r.objects(BKOwner.self).filter("name == %@", name).first! }

/// A file in which Ann owns dogs a, b and c (and Bob, with `andBob`, owns none).
private func annOwningDogs(andBob: Bool = false) throws -> Fixture {
    let f = try Fixture(models: [BKOwner.self, BKDog.self])
    try f.run { realm in
        try realm.write {
            let dogs = ["a", "b", "c"].map { realm.create(BKDog.self, value: ["name": $0]) }
            realm.create(BKOwner.self, value: ["name": "Ann"]).dogs.append(objectsIn: dogs)
            if andBob { realm.create(BKOwner.self, value: ["name": "Bob"]) }
        }
    }
    return f
}

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
