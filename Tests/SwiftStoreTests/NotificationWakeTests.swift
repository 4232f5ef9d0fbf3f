// Which commits wake the notifier thread (docs/ARCHITECTURE.md, Change notifications): a
// commit through a Realm of this process spares it and is computed on the committing thread, so the
// notifier thread sleeps through it; every other commit (another process's, or one made through
// the core's C API in this process) still wakes it, and is delivered.

import CStore
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

@Suite struct NotificationWakeTests {
    /// A fixture with one NDog (age 0) and an observer of it on a new queue, whose changes go to
    /// the returned events.
    private func dogObservedOnAQueue(_ label: String) throws -> (Fixture, Events<SeenObject>) {
        let f = try Fixture()
        let dog = Events<SeenObject>()
        let queue = DispatchQueue(label: label)
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 0]) }
            f.tokens.append(realm.objects(NDog.self).first!.observe(on: queue) { (c: ObjectChange<NDog>) in
                dog.add(SeenObject(c))
            })
        }
        return (f, dog)
    }

    /// A commit through the C API on a handle of its own (sparing no notifier), creating one
    /// object of `table` when given.
    private func commitThroughTheCore(_ path: String, creatingIn table: String? = nil) throws {
        var opts = cs_options()
        var db: OpaquePointer?
        try #require(cs_db_open(path, &opts, &db) == 0)
        defer { cs_db_close(db) }
        var txn: OpaquePointer?
        try #require(cs_txn_begin(db, Int32(CS_TXN_WRITE), &txn) == 0)
        defer { cs_txn_end(txn) }
        if let table {
            var t: UInt32 = 0
            try #require(cs_table_find(txn, table, &t) == 0)
            var obj = cs_obj()
            try #require(cs_obj_create(txn, t, &obj) == 0)
        }
        try #require(cs_txn_commit(txn) == 0)
    }

    /// A commit made through the C API on another handle of this process (sparing nothing: nothing
    /// computes it on the committing thread) wakes the notifier thread: a Realm observer gets
    /// `.didChange` and a query observer on a queue its change set.
    @Test func coreCommitInThisProcessIsDelivered() throws {
        let f = try Fixture()
        let realmEvents = Events<Realm.Notification>()
        let queued = Events<Seen>()
        let queue = DispatchQueue(label: "core-commit")
        try f.run { realm in
            f.tokens.append(realm.observe { n, _ in realmEvents.add(n) })
            f.tokens.append(realm.objects(NDog.self).observe(on: queue) { queued.add(Seen($0)) })
        }
        #expect(queued.next()?.initial == true)
        // (the notifier thread asleep on the file before the commit)
        try waitForSleepers(f.config.path, 1)
        try commitThroughTheCore(f.config.path, creatingIn: "NDog")
        #expect(realmEvents.next() == .didChange)
        #expect(queued.next() == Seen(count: 1, ins: [0]))
        try f.finish()
    }

    /// Commits through a Realm of this process spare the notifier thread: it sleeps through
    /// them (its wait never returns, with futex_waitv; waiting in slices, it sees them at the end
    /// of a slice) while each is delivered; a commit through the C API on another handle wakes it.
    @Test func realmCommitsLeaveTheNotifierThreadAsleep() throws {
        let (f, dog) = try dogObservedOnAQueue("spared")
        let notifier = try #require(FileNotifier.running(f.config.path))
        try waitForSleepers(f.config.path, 1)
        let before = notifier.rounds.load(ordering: .relaxed)
        for age in 1...20 {
            try f.run { realm in try realm.write { realm.objects(NDog.self).first!.age = age } }
            #expect(dog.next() == SeenObject(names: ["age"], old: ["\(age - 1)"], new: ["\(age)"]))
        }
        if cs_notifier_waitv() {
            #expect(notifier.rounds.load(ordering: .relaxed) == before, "the notifier thread woke for a spared commit")
        }
        // the control: a commit it is not spared from
        try commitThroughTheCore(f.config.path)
        let deadline = Date().addingTimeInterval(10)
        while notifier.rounds.load(ordering: .relaxed) == before && Date() < deadline { usleep(1000) }
        #expect(notifier.rounds.load(ordering: .relaxed) > before)
        try f.finish()
    }

    /// `refresh()` whose notifier advance fails (the `failAdvance` hook; the notifier held behind
    /// the newest version by holding its thread) advances the Realm itself to the newest version
    /// and returns true, as before the Realm stopped at the version its observers were told of.
    /// Before the fix it stopped at the notifier's older version, returned false and did not
    /// show the commit.
    @Test func refreshAdvancesItselfWhenTheNotifierCannot() throws {
        let f = try Fixture()
        let path = f.config.path
        let dogs = Events<Seen>()
        try f.run { realm in f.tokens.append(realm.objects(NDog.self).observe { dogs.add(Seen($0)) }) }
        #expect(dogs.next() == Seen(initial: true, count: 0))
        try waitForSleepers(path, 1)
        // the notifier thread computes the first commit, then is held
        let held = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
        FileNotifier.makingHooksArmed.store(true, ordering: .relaxed)
        FileNotifier.afterSchedulingForTesting.withLock { $0[path] = { holding.signal(); held.wait() } }
        try commitThroughTheCore(path, creatingIn: "NDog")
        holding.wait()
        #expect(dogs.next() == Seen(count: 1, ins: [0]))
        // a second commit the notifier does not compute
        try commitThroughTheCore(path, creatingIn: "NDog")
        FileNotifier.failAdvanceForTesting.withLock { $0[path] = true }
        let (moved, count) = try f.run { realm in (realm.refresh(), realm.objects(NDog.self).count) }
        held.signal()
        #expect(moved)
        #expect(count == 2)
        #expect(dogs.next() == Seen(count: 2, ins: [1]))
        try f.finish()
    }

    /// A Realm keeps the notifier it found for its writes (`RealmCore.notifier`) only while
    /// that notifier runs: a write with none running finds none, and the notifier an observer
    /// starts later is found by the next write (which spares its thread); one that stopped when
    /// its last observer went is neither used nor kept alive by the Realm, and the one started
    /// for the next observer is found again.
    @Test func aRealmUsesTheNotifierThatRunsNow() throws {
        let f = try Fixture()
        let path = f.config.path
        let queue = DispatchQueue(label: "notifier-lifetime")
        let dog = Events<SeenObject>()
        try f.run { realm in
            try realm.write { realm.create(NDog.self, value: ["name": "a", "age": 0]) }
            #expect(realm.core.notifier == nil)
        }
        let observe = {
            try f.run { realm in
                f.tokens.append(realm.objects(NDog.self).first!.observe(on: queue) { (c: ObjectChange<NDog>) in
                    dog.add(SeenObject(c))
                })
            }
        }
        // a write through the Realm, computed on its thread (the notifier's thread sleeps on)
        let writeSparing = { (age: Int) in
            let n = try #require(FileNotifier.running(path))
            try waitForSleepers(path, 1)
            let before = n.rounds.load(ordering: .relaxed)
            // (the blocks run on the Realm's thread hold no reference to the notifier)
            let found = try f.run { realm in
                try realm.write { realm.objects(NDog.self).first!.age = age }
                return realm.core.notifier.map(ObjectIdentifier.init)
            }
            #expect(found == ObjectIdentifier(n))
            #expect(dog.next() == SeenObject(names: ["age"], old: ["\(age - 1)"], new: ["\(age)"]))
            if cs_notifier_waitv() { #expect(n.rounds.load(ordering: .relaxed) == before) }
        }
        try observe()
        try writeSparing(1)
        // the last observer goes: the notifier stops, and the Realm neither keeps nor uses it
        let first = WeakNotifier(FileNotifier.running(path))
        let stopped = first.value?.stopped
        try #require(stopped != nil)
        try f.run { _ in
            for t in f.tokens { t.invalidate() }
            f.tokens = []
        }
        stopped?.wait()
        let deadline = Date().addingTimeInterval(10)
        while first.value != nil && Date() < deadline { usleep(1000) }
        #expect(first.value == nil, "the stopped notifier is kept alive")
        try f.run { realm in
            try realm.write { realm.objects(NDog.self).first!.age = 1 }
            #expect(realm.core.notifier == nil)
        }
        try observe()
        try writeSparing(2)
        #expect(first.value == nil)
        try f.finish()
    }

    /// Commits through another Realm of this process (sparing the notifier thread: the
    /// committing thread computes them) reach an object observer on a queue, each with its own change set.
    @Test func otherRealmsCommitsAreDelivered() throws {
        let (f, dog) = try dogObservedOnAQueue("other-realm")
        let config = f.config
        onNewThread {
            let r = try! Realm(configuration: config)
            let d = r.objects(NDog.self).first!
            for age in 1...20 {
                try! r.write { d.age = age }
                // (each commit delivered before the next one: none coalesced)
                #expect(dog.next() == SeenObject(names: ["age"], old: ["\(age - 1)"], new: ["\(age)"]))
            }
        }
        #expect(dog.waiting == 0)
        try f.finish()
    }

    /// Another process's commit, made while a notifier thread of its own sleeps on the file (its
    /// commit spares that thread), wakes this process's notifier: an object observer on a queue gets
    /// the change.
    @Test func anotherProcessesQuietCommitIsDelivered() throws {
        let dir = TempDir()
        let config = Realm.Configuration(fileURL: dir.file(), objectTypes: [ProcPerson.self])
        let realm = try Realm(configuration: config)
        try realm.write { realm.add(ProcPerson(value: ["name": "Ann", "age": 1])) }
        let person = try #require(realm.object(ofType: ProcPerson.self, forPrimaryKey: "Ann"))
        let events = Events<(String, [String])>()
        let token = person.observe(on: DispatchQueue(label: "other-process")) { (c: ObjectChange<ProcPerson>) in
            if case .change(_, let props) = c {
                events.add(("change", props.map { "\($0.name) \($0.oldValue.map { "\($0)" } ?? "nil") \($0.newValue.map { "\($0)" } ?? "nil")" }))
            } else {
                events.add(("other", []))
            }
        }
        // (this process's notifier thread asleep, then the child's with it: the child's commit
        // spares its own)
        try waitForSleepers(dir.file().path, 1)
        let r = try ChildProcess.run(["set-age", dir.file().path, "Ann", "42", "2"], in: dir)
        #expect(r.status == 0 && r.stdout == "ok", "\(r.stderr)")
        let e = events.next()
        #expect(e?.0 == "change" && e?.1 == ["age 1 42"])
        token.invalidate()
    }

    /// Without futex_waitv (kernels before 5.16, or a seccomp filter refusing it) the notifier
    /// waits in slices; CSTORE_NO_FUTEX_WAITV makes a process do so. The wake tests (the core's,
    /// these, and the stress tests) pass in a run of this test binary under it, which says it
    /// waits in slices.
    @Test func wakeTestsPassWaitingInSlices() throws {
        if ProcessInfo.processInfo.environment["CSTORE_NO_FUTEX_WAITV"] != nil {
            #expect(!cs_notifier_waitv())
            return
        }
        let dir = TempDir()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        p.arguments = ["--testing-library", "swift-testing",
                       "--filter", "NotifyCoreTests/(waitWakes|aCommitSparing|aMisusedCommitSparing|aCommitOfAnotherProcess)",
                       "--filter", "NotificationWakeTests", "--filter", "NotificationStressTests"]
        var env = ProcessInfo.processInfo.environment
        env["CSTORE_NO_FUTEX_WAITV"] = "1"
        p.environment = env
        let out = dir.url.appendingPathComponent("slices.out")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: out)
        p.standardError = p.standardOutput
        try p.run()
        // (a sanitizer makes the run several times slower)
        let underSanitizer = ProcessInfo.processInfo.environment["STORE_SANITIZER"] == "1"
        let deadline = Date().addingTimeInterval(underSanitizer ? 900 : 300)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        let text = readText(out.path)
        #expect(p.terminationStatus == 0, "\(text.suffix(4000))")
        // (each of them ran and passed there)
        for name in ["waitWakes", "aCommitSparingANotifierLeavesItAsleep", "aMisusedCommitSparingSparesNothing",
                     "aCommitOfAnotherProcessSparingItsNotifierWakes", "realmCommitsLeaveTheNotifierThreadAsleep",
                     "coreCommitInThisProcessIsDelivered", "commitsFromProcessesAndThreadsWhileObserversComeAndGo",
                     "aSleeperKilledWhileAsleepLeavesEveryoneNotified"] {
            #expect(text.contains("Test \(name)() passed"), "\(name) did not pass waiting in slices")
        }
    }
}

/// A weak reference to a notifier (a test holds none of its own).
private final class WeakNotifier {
    weak var value: FileNotifier?
    init(_ value: FileNotifier?) { self.value = value }
}
