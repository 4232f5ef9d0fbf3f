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
        #expect(probe.events.next(timeout: 5) == "queue")
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
        #expect(probe.events.next(timeout: 5) == "queue")
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
        #expect(released.next(timeout: 5) == "own thread")
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
        #expect(released.next(timeout: 5) == "own thread")
    }

    /// A queue observer registered through a run-loop thread's Realm, which that thread then lets
    /// go: the observer's Results still hold that Realm, which goes wherever the observer goes
    /// last (here the thread releasing the token), never on its own thread. Known limit
    /// (docs/ARCHITECTURE.md, Known limits): the test records the issue until it is fixed.
    @Test func theRegisteringRealmOfAQueueObserverIsLetGoOnItsThread() throws {
        let dir = TempDir()
        let config = dir.config([NToy.self, NDog.self, NPerson.self])
        let owner = RunLoopThread()
        defer { owner.stop() }
        let queue = DispatchQueue(label: "release-registering")
        let seen = Events<Seen>(), released = Events<String>()
        let token = UncheckedBox<NotificationToken?>(nil)
        try owner.sync {
            Thread.current.threadDictionary["owner"] = true
            let realm = try Realm(configuration: config)
            token.value = realm.objects(NDog.self).observe(on: queue) { seen.add(Seen($0)) }
        }
        #expect(seen.next() == Seen(initial: true, count: 0))
        queue.sync {}
        let path = config.path
        RealmCore.deinitHooksArmed.store(true, ordering: .relaxed)
        RealmCore.deinitForTesting.withLock {
            // (only the run-loop thread's Realm: the queue's is let go on the queue)
            $0[path] = { q in
                if q == nil { released.add(Thread.current.threadDictionary["owner"] != nil ? "own thread" : "other thread") }
            }
        }
        defer { RealmCore.deinitForTesting.withLock { $0[path] = nil } }
        token.value = nil
        let place = released.next(timeout: 5)
        withKnownIssue("a queue observer's Results hold the registering thread's Realm") {
            #expect(place == "own thread")
        }
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
        let deadline = Date().addingTimeInterval(5)
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
