import Dispatch
import Foundation
import Synchronization

/// A change set copied out of the core (docs/ARCHITECTURE.md, Change notifications).
struct ChangePayload {
    var initial = false
    var deleted = false
    /// A query over the collection may have changed although the collection did not (something
    /// its filter or sort reads of the elements changed, `NotifierCore.dependingOnQuery`).
    var stale = false
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []
    var keysDeleted: [String] = []
    var keysInserted: [String] = []
    var keysModified: [String] = []
    var columns: [UInt32] = []
    var oldValues: [Any?]? = nil
    var newValues: [Any?] = []
    /// Not a change set: the observer's Realm reads the version a write made without notifying it
    /// (`FileNotifier.rebase`), which a query over a collection takes as the results it showed
    /// last (`DerivedChanges.rebase`). Only for registrations that `rebases`.
    var rebase = false
    /// For registrations that `rebases`: the file frozen at the version the change set brings the
    /// observer to when the delivering Realm reads a later one: a change set held back by a
    /// write that skipped the observer (the version the write started from), one delivered after
    /// a block of the same delivery wrote (the version delivered), or, with `rebase`, the version
    /// the skipped write made. A query over a collection reads its results there
    /// (docs/ARCHITECTURE.md, Change notifications).
    var at: RealmCore? = nil
    /// For Realm observers: which notification.
    var realmNotification: Realm.Notification = .didChange
    /// The version the change set brings its observer to.
    var version: UInt64 = 0
    /// Query watches: the results' object keys at `version`, in result order, which the
    /// delivered Results takes instead of running its query again.
    var keys: [Int64]? = nil

    init() {}

    var isEmpty: Bool {
        !initial && !deleted && !stale && deletions.isEmpty && insertions.isEmpty && modifications.isEmpty
            && keysDeleted.isEmpty && keysInserted.isEmpty && keysModified.isEmpty && columns.isEmpty
    }
}

/// One observer: a core watch (nil for a Realm observer, and for a query observer until the
/// notifier made it) and the block its change sets go to.
final class Registration: @unchecked Sendable {
    /// Guarded by the notifier's lock.
    var watch: OpaquePointer?
    /// A query or collection observer's watch maker, until the notifier thread runs it (the
    /// initial query runs there, not on the registering thread). Guarded by the notifier's lock.
    var maker: ((NotifierCore) -> NotifierCore.Watch?)?
    /// The registering thread, and whether the watch was made on it (for tests).
    let registeringThread = pthread_self()
    var madeOnRegisteringThread = false
    /// The version the registering Realm read when it registered (0 when it reads another file
    /// than the notifier's): a watch made on the notifier thread starts no older than it, so
    /// that what that Realm read (the collection's owner, the queried table) is there. Guarded
    /// by the notifier's lock.
    var version: UInt64 = 0
    /// The batch of watch making this observer's watch is in (`FileNotifier.makeWatches`), left
    /// once that batch let go of its references: unregistering waits for it, so the last
    /// reference to the observer (its block, the Realm it reads) is never dropped on the thread
    /// making watches. Guarded by the notifier's lock.
    var batch: DispatchGroup?
    let target: DeliveryTarget
    /// Objects: the values of these columns read through the delivering Realm. Guarded by the
    /// notifier's lock, and taken out by unregistering as `callback` is (it holds the object's
    /// accessor in the delivering Realm, `DeliveredObject`).
    var readValues: ((RealmCore, [UInt32]) -> [Any?])?
    /// Whether this is an object observer (`readValues` given).
    let readsValues: Bool
    /// Runs on the target with the delivering Realm. Guarded by the notifier's lock: deliveries
    /// copy it under the lock, and unregistering takes it out, so that it (and the Realm its
    /// collection holds) goes on the target's thread, whatever still holds the registration.
    var callback: ((RealmCore, ChangePayload) -> Void)?
    let live = Atomic<Bool>(true)
    /// Whether the watch's first change set (the initial one) was taken. Guarded by the
    /// notifier's lock.
    var delivered = false
    /// Change sets taken out of the watch before a write that skips this observer committed
    /// (`write(withoutNotifying:)`), delivered before what the watch holds. Guarded by the
    /// notifier's lock.
    var carried: [ChangePayload] = []
    /// Object observers whose watch started at a version the delivering Realm does not read
    /// (registered through a Realm behind the notifier, delivered on a queue): the file at that
    /// version, where the first change set's old values are read. Guarded by the notifier's lock.
    var oldValuesAt: RealmCore?
    var isRealmObserver: Bool { !readsValues && watchless }
    let watchless: Bool

    /// Whether its callback takes a `rebase` payload (a query over a collection, whose change sets
    /// are computed against the results it showed last).
    let rebases: Bool

    init(watchless: Bool, target: DeliveryTarget, readValues: ((RealmCore, [UInt32]) -> [Any?])?,
         rebases: Bool = false, callback: @escaping (RealmCore, ChangePayload) -> Void) {
        self.watchless = watchless
        self.rebases = rebases
        self.target = target
        self.readValues = readValues
        readsValues = readValues != nil
        self.callback = callback
    }
}

/// Where notifications of one Realm are delivered: the registering thread's run loop (its
/// Realm), the actor of an actor-isolated Realm (that Realm), or a serial queue (the Realm
/// confined to it, opened there on first delivery).
final class DeliveryTarget: @unchecked Sendable {
    let runLoop: RunLoop?
    let queue: DispatchQueue?
    let actor: (any Actor)?
    let config: Realm.Configuration
    /// The delivering Realm: the registering one for run loops; for queues opened on the queue.
    /// Guarded by the notifier's lock; read on the target.
    var core: RealmCore?
    /// Guarded by the notifier's lock.
    var registrations: [Registration] = []
    var scheduled = false
    var realmObservers = 0
    /// Set while a delivery calls the blocks of this target (lock held to change it): a
    /// `beginWrite` or `refresh()` on the target's Realm inside a block then delivers nothing,
    /// as in RealmSwift, so each observer gets its change sets in commit order; `deferred`
    /// records that one was skipped, and the delivery schedules another when it ends.
    var delivering = false
    var deferred = false
    /// Set (lock held) when the target's last observer is unregistered and the target leaves
    /// the notifier: a delivery still scheduled then does nothing (a queue's would open a Realm).
    var dropped = false
    /// A version the target's Realm reads at least (0: unknown), kept under the lock without
    /// reading that Realm (confined to its queue): set when a registration publishes it at a
    /// known version and raised by each delivery that brings it to the notifier's version; the
    /// queue's own `refresh()` and writes only move it further. A queue object observer whose
    /// watch starts later reads its first old values in a frozen snapshot instead.
    var versionAtLeast: UInt64 = 0
    /// A run loop's thread: where what is let go of the target from another thread waits for
    /// the run loop, or for the thread's end when its run loop no longer turns.
    let inbox: ThreadInbox?

    init(core: RealmCore?, runLoop: RunLoop?, queue: DispatchQueue?, actor: (any Actor)? = nil,
         config: Realm.Configuration) {
        self.core = core
        self.runLoop = runLoop
        inbox = runLoop != nil ? ThreadInbox.current : nil
        self.queue = queue
        self.actor = actor
        self.config = config
    }
}

/// A reference handed to a block that runs on a delivery target's thread, queue or actor,
/// taken out there, so that it is let go there and not on the thread that ends the block's
/// task or releases its timer.
private final class Box<T: AnyObject>: @unchecked Sendable {
    private var value: T?
    init(_ value: T) { self.value = value }
    /// Takes `value`'s reference, leaving nil there, so that the box holds the only one the
    /// caller had.
    init(taking value: inout T?) { swap(&self.value, &value) }
    /// The value, once; a call whose result is unused lets go of it at once.
    @discardableResult
    func take() -> T? {
        defer { value = nil }
        return value
    }
}

/// What other threads let go of a thread's delivery targets (their Realms, their observers),
/// let go on that thread: by a timer on its run loop, or when the thread ends, if its run loop
/// never turns again (a timer added to it would never fire, and the Realm would stay open).
final class ThreadInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Any] = []
    private var ended = false

    /// Takes `realm` and `held`, leaving nil and nothing there (under the inbox's lock, so that a
    /// drain running meanwhile never leaves the caller's reference the last one), unless the
    /// thread has ended (false: nothing of the thread can take the Realm from its cache any
    /// more, and the caller lets go of it).
    func add(taking realm: inout RealmCore?, _ held: inout [Any]) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if ended { return false }
        items.append(realm as Any)
        items.append(held)
        realm = nil
        held = []
        return true
    }

    /// Lets go of what was added (on the inbox's thread).
    func drain(ending: Bool = false) {
        lock.lock()
        if ending { ended = true }
        let taken = items
        items = []
        lock.unlock()
        withExtendedLifetime(taken) {}
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { p in
            guard let p else { return }
            Unmanaged<ThreadInbox>.fromOpaque(p).takeRetainedValue().drain(ending: true)
        }
        return key
    }()

    /// The calling thread's inbox (drained when the thread ends).
    static var current: ThreadInbox {
        if let p = pthread_getspecific(key) { return Unmanaged<ThreadInbox>.fromOpaque(p).takeUnretainedValue() }
        let inbox = ThreadInbox()
        pthread_setspecific(key, Unmanaged.passRetained(inbox).toOpaque())
        return inbox
    }
}

/// References (an observer's block and maker) taken from their owner, to be let go with this.
private final class Held {
    private var items: [Any] = []
    init(taking items: inout [Any]) { swap(&self.items, &items) }
}

/// The notifier's lock, which knows the thread holding it (for tests: where a Realm is let go).
final class NotifierLock: @unchecked Sendable {
    private let base = NSLock()
    private let owner = Atomic<UInt>(0)

    func lock() {
        base.lock()
        owner.store(NotifierLock.me, ordering: .relaxed)
    }

    func unlock() {
        owner.store(0, ordering: .relaxed)
        base.unlock()
    }

    /// Whether the calling thread holds the lock.
    var isHeldByCurrentThread: Bool { owner.load(ordering: .relaxed) == NotifierLock.me }

    private static var me: UInt { UInt(pthread_self()) }
}

/// The notifier of one file in this process (docs/ARCHITECTURE.md, Change notifications): a
/// thread that waits for commits (any process's), computes every watch's change set once per
/// version through the core's notifier, and schedules delivery on each target.
final class FileNotifier: @unchecked Sendable {
    let path: String
    private let core: NotifierCore
    private let lock = NotifierLock()
    /// Guarded by `lock`.
    private var targets: [ObjectIdentifier: DeliveryTarget] = [:]
    private var users = 0
    private var stopping = false
    /// Set (under `lock`) when the core notifier is closed: a delivery scheduled before then
    /// (an actor's task may run late) does nothing.
    private var closed = false
    private var started = false
    /// Query and collection observers whose watch the notifier thread has not made yet.
    /// Guarded by `lock`.
    private var unmade: [Registration] = []
    /// Entered (under `lock`, while not stopping) for each batch of watches made outside the
    /// lock on a side notifier; the thread closing the core notifier waits for it first.
    private let making = DispatchGroup()
    /// Entered (under `sparing`, until `sparingEnded`) for each commit that spares the core
    /// notifier's thread (`commit(_:)`); the thread closing the core notifier waits for it first.
    private let committing = DispatchGroup()
    /// Guards `sparingEnded`: a lock of its own, so that a commit (holding the file's write
    /// lock) never waits for the notifier's lock.
    private let sparing = NSLock()
    /// Set by the thread, before it waits for `committing` and closes the core: no commit
    /// spares the notifier from then on.
    private var sparingEnded = false
    /// Set (under `lock`) from `holdBack` to `skip`, while a write that skips observers commits
    /// and until its own version was computed alone: no other advance moves the core notifier
    /// meanwhile (the notifier thread's and a commit's leave the newest versions to `skip`, the
    /// others wait for it), so that `skip` drops exactly that version's changes
    /// (docs/ARCHITECTURE.md, Change notifications). Entered into `skipEnded` while set.
    private var skipping = false
    private let skipEnded = DispatchGroup()

    private static let all = Locked<[String: FileNotifier]>([:])

    /// Bumped (under `all`'s lock) whenever a notifier joins or leaves `all`: while it is
    /// unchanged, what `running` gave for a path is still what it gives, so a Realm keeps the
    /// notifier it looked up (`RealmCore.notifier`) instead of hashing its path under that lock
    /// at every write (docs/ARCHITECTURE.md, Change notifications).
    static let generation = Atomic<UInt64>(1)

    private init(config: Realm.Configuration) throws {
        path = config.path
        core = try NotifierCore(config)
    }

    /// The running notifier of the file, with one more user (release with `release()`).
    static func acquire(_ config: Realm.Configuration) -> FileNotifier {
        all.withLock { dict in
            if let n = dict[config.path], n.retainUser() { return n }
            let n: FileNotifier
            do {
                n = try FileNotifier(config: config)
            } catch {
                preconditionFailure("Cannot start change notifications: \(error)")
            }
            _ = n.retainUser()
            dict[config.path] = n
            generation.add(1, ordering: .releasing)
            n.start()
            return n
        }
    }

    /// The notifier of a file if one runs.
    static func running(_ path: String) -> FileNotifier? {
        all.withLock { $0[path] }
    }

    private func retainUser() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if stopping { return false }
        users += 1
        return true
    }

    func release() {
        lock.lock()
        defer { lock.unlock() }
        users -= 1
        if users == 0 {
            stopping = true
            // under the lock: the thread closes the core only after seeing `stopping`
            core.wake()
        }
    }

    private func start() {
        let t = Thread { [self] in run() }
        t.name = "SwiftStore notifier"
        t.start()
    }

    private func run() {
        while true {
            let seen = core.commitCounter
            if !advanceAndSchedule(makingWatches: true) { break }
            core.wait(seen: seen)
            rounds.add(1, ordering: .relaxed)
        }
        FileNotifier.all.withLock { dict in
            if dict[path] === self {
                dict[path] = nil
                FileNotifier.generation.add(1, ordering: .releasing)
            }
        }
        // (a refresh() may be making its Realm's new watches on a side notifier that borrows
        // the core's handle; a commit may be sparing the core notifier)
        making.wait()
        sparing.lock()
        sparingEnded = true
        sparing.unlock()
        committing.wait()
        lock.lock()
        closed = true
        core.close()
        lock.unlock()
        stopped.signal()
    }

    /// Commits the write of `core` (a Realm owning its handle). When the file's notifier runs
    /// and follows `core`'s file, the commit does not wake its thread (`NotifierCore.commit
    /// (sparing:)`): the committer computes the new version itself (`committed(by:)`), and the
    /// thread, whose wake would take a CPU from the delivery about to start, sleeps on
    /// (docs/ARCHITECTURE.md, Change notifications). Returns the commit's result and the
    /// notifier it spared. The decision takes `sparing`, not the notifier's lock (the write
    /// lock is held here); the notifier's thread closes its core only once no such commit runs
    /// (`committing`).
    static func commit(_ core: RealmCore) -> (Int32, FileNotifier?) {
        guard let n = core.notifier else { return (NotifierCore.commit(core), nil) }
        n.sparing.lock()
        // (the core is read only before `sparingEnded`: the thread closes it after)
        let spare = !n.sparingEnded && n.core.isOnFileOf(core)
        if spare { n.committing.enter() }
        n.sparing.unlock()
        guard spare else { return (NotifierCore.commit(core), nil) }
        defer { n.committing.leave() }
        return (n.core.commit(sparing: core), n)
    }

    /// Makes the notifier thread look at the file again (after a failed commit).
    func wakeThread() {
        lock.lock()
        if !closed { core.wake() }
        lock.unlock()
    }

    /// Whether the calling thread holds the notifier's lock (for tests).
    var lockIsHeldByCurrentThread: Bool { lock.isHeldByCurrentThread }

    /// How many times the thread's wait returned (for tests: a commit that spares the thread
    /// leaves it unchanged).
    let rounds = Atomic<Int>(0)

    /// Signalled once the thread has closed the core notifier (for tests).
    let stopped = DispatchSemaphore(value: 0)

    /// Schedules the targets with something to deliver (lock held), but `except`; returns how
    /// many. (An advance after a commit, `advanceAndSchedule`, instead marks them under the lock
    /// and hands them over after it, `schedule(taking:)`, moving its only reference into each
    /// delivery: as safe, since nothing of the target stays on that thread either.) Scheduling under the lock keeps every reference to a target in its delivery (a
    /// timer, a queue's block, an actor's task, released on the target), so no list of targets
    /// outlives the lock on the thread that computed them: an observer unregistered meanwhile
    /// never has its target, and the Realm the target holds, let go on the notifier thread or
    /// a committing thread (docs/ARCHITECTURE.md, Change notifications).
    @discardableResult
    private func scheduleDue(moved: Bool, except: DeliveryTarget? = nil) -> Int {
        var count = 0
        for t in targets.values where t !== except && !t.scheduled && isDue(t, moved: moved) {
            t.scheduled = true
            schedule(t)
            count += 1
        }
        return count
    }

    /// Whether target `t` has something to deliver (lock held): a watch's change set, one held
    /// back, or, for Realm observers, a version its Realm does not read yet (`moved`).
    private func isDue(_ t: DeliveryTarget, moved: Bool) -> Bool {
        if moved && t.realmObservers > 0 { return true }
        for r in t.registrations {
            if !r.carried.isEmpty { return true }
            if let w = r.watch, core.pending(w) { return true }
        }
        return false
    }

    /// After a write through `core` ended without a commit (cancelled, or a commit that failed
    /// and rolled back): a delivery that came during the write found the Realm writing and did
    /// nothing, and no commit follows to schedule it again, so what is pending is scheduled here
    /// (docs/ARCHITECTURE.md, Change notifications). A committed write needs none of this: its
    /// own advance (`committed`) schedules every target with something to deliver.
    func writeEnded(_ core: RealmCore) {
        lock.lock()
        guard let t = ownTarget(of: core), !closed, !t.scheduled,
              isDue(t, moved: self.core.follows(core) && NotifierCore.version(of: core) < self.core.version) else {
            lock.unlock()
            return
        }
        t.scheduled = true
        schedule(t)
        lock.unlock()
    }

    /// Runs the delivery of `t` on its thread or queue (called with the lock held: see
    /// `scheduleDue`). What the delivery holds of `t` is let go there.
    private func schedule(_ t: DeliveryTarget) {
        if let q = t.queue {
            q.async { [self] in deliver(t) }
        } else if let a = t.actor {
            // on a thread of the notifier's own, not the concurrent pool (DeliveryExecutor);
            // the task's reference to the target is taken and let go on the actor, not on the
            // thread that ends the task
            let box = Box(t)
            Task(executorPreference: DeliveryExecutor.shared) {
                await FileNotifier.run(on: a) { [self] in
                    if let t = box.take() { deliver(t) }
                }
            }
        } else if let rl = t.runLoop {
            let timer = Timer(timeInterval: 0, repeats: false) { [self] _ in deliver(t) }
            rl.add(timer, forMode: .common)
        }
    }

    /// Runs `body` isolated to `actor` (delivery to an actor-isolated Realm).
    private static func run(on actor: isolated any Actor, _ body: () -> Void) {
        body()
    }

    /// After a commit through this process: computes the change sets of the new version on the
    /// committing thread and schedules their delivery at once, saving the hand-over to the
    /// notifier thread (docs/ARCHITECTURE.md, Change notifications). The commit spared the
    /// notifier thread (`commit(_:)`), which sleeps through it, unless the advance here fails:
    /// the thread is woken then, and retries. A committer may have looked the notifier up just
    /// before its last observer went and its thread closed it: `stopping` is set then, and this
    /// does nothing.
    /// The Realm observers of `committer` are then called with `.didChange` (found under the
    /// same hold of the lock). As in realm-core, that is not a delivery (`delivering` stays
    /// unset): `refresh()` and `beginWrite` in those blocks move the Realm and deliver
    /// collection change sets.
    func committed(by committer: RealmCore) {
        _ = advanceAndSchedule(makingWatches: false, committer: committer)
    }

    /// Computes the newest version's change sets and schedules the targets that have something
    /// to deliver; false (doing nothing) once the notifier is stopping. `makingWatches` (the
    /// notifier thread): first makes the watches of new query observers, at the newest version.
    private func advanceAndSchedule(makingWatches: Bool, committer: RealmCore? = nil) -> Bool {
        // (made outside the lock, then caught up to the notifier's version; the advance below
        // brings them to the newest one with the others)
        if makingWatches { makeWatches(of: nil) }
        lock.lock()
        if stopping {
            lock.unlock()
            return false
        }
        // (a write that skips observers is between its commit and `skip`: that one computes the
        // newest version after the write's own, and schedules)
        let (moved, failed) = skipping ? (false, false) : core.tryAdvance()
        // (a failure, and watches still to be made, are the notifier thread's, which the
        // commit left asleep)
        if !makingWatches && (failed || !unmade.isEmpty) { core.wake() }
        // Marked scheduled under the lock, handed to their threads after it: a target's thread,
        // woken by the hand-over, takes the lock first thing (`deliver`), and would otherwise
        // wait for this thread to finish waking it and release the lock.
        var due = takeDue(moved: moved)
        let count = due.count
        var committerTarget: DeliveryTarget?
        var realmObservers: [Registration] = []
        if let committer, let t = targets[ObjectIdentifier(committer)] {
            realmObservers = t.registrations.filter { $0.watchless }
            if !realmObservers.isEmpty { committerTarget = t }
        }
        let version = moved ? core.version : 0
        lock.unlock()
        for i in due.indices { schedule(taking: &due[i]) }
        if moved {
            CoreLog.log(.debug, Category.Storage.notification.rawValue,
                        "Computed the changes of version \(version) of '\(path)': \(count) observing Realm(s) to notify")
        }
        if let committer, let committerTarget {
            notifyRealmObservers(realmObservers, of: committerTarget, committer, .didChange)
        }
        if makingWatches { FileNotifier.runScheduledHook(path) }
        return true
    }

    /// The targets with something to deliver (lock held), marked scheduled, for
    /// `schedule(taking:)` after the lock is released.
    private func takeDue(moved: Bool) -> [DeliveryTarget?] {
        var due: [DeliveryTarget?] = []
        for t in targets.values where !t.scheduled && isDue(t, moved: moved) {
            t.scheduled = true
            due.append(t)
        }
        return due
    }

    /// Runs the delivery of `t` on its thread, queue or actor (without the lock), taking the
    /// caller's reference to it (`t` is nil after): the delivery's block holds the only one
    /// this thread had, and lets go of it where it runs, so no list of targets outlives the
    /// hand-over on this thread (`scheduleDue`). A target unregistered meanwhile is `dropped`
    /// and its delivery does nothing.
    private func schedule(taking t: inout DeliveryTarget?) {
        let queue = t?.queue, actor = t?.actor, runLoop = t?.runLoop
        let box = Box(taking: &t)
        if let queue {
            queue.async { [self] in
                if let t = box.take() { deliver(t) }
            }
        } else if let actor {
            Task(executorPreference: DeliveryExecutor.shared) {
                await FileNotifier.run(on: actor) { [self] in
                    if let t = box.take() { deliver(t) }
                }
            }
        } else if let runLoop {
            let timer = Timer(timeInterval: 0, repeats: false) { [self] _ in
                if let t = box.take() { deliver(t) }
            }
            runLoop.add(timer, forMode: .common)
        }
    }

    // MARK: Registration

    /// The delivery target of a thread's Realm, or of a queue.
    private func target(core: RealmCore, queue: DispatchQueue?) -> DeliveryTarget {
        let id = queue.map { ObjectIdentifier($0) } ?? ObjectIdentifier(core)
        if let t = targets[id] { return t }
        let t: DeliveryTarget
        if let queue {
            t = DeliveryTarget(core: nil, runLoop: nil, queue: queue, config: core.config)
        } else if let actor = core.actor {
            t = DeliveryTarget(core: core, runLoop: nil, queue: nil, actor: actor, config: core.config)
        } else {
            t = DeliveryTarget(core: core, runLoop: RunLoop.current, queue: nil, config: core.config)
        }
        targets[id] = t
        return t
    }

    /// Registers an observer: `makeWatch` makes its core watch on the notifier (nil for a Realm
    /// observer). `onNotifierThread` (query and collection observers): the notifier thread
    /// makes it, so the initial query does not run (nor the collection get read) on the
    /// registering thread, and schedules the initial delivery; otherwise (object and nested
    /// collection observers) the watch is made here and the initial delivery scheduled at once.
    func register(core: RealmCore, queue: DispatchQueue?,
                  makeWatch: ((NotifierCore) -> NotifierCore.Watch?)?,
                  onNotifierThread: Bool = false,
                  readValues: ((RealmCore, [UInt32]) -> [Any?])? = nil,
                  rebases: Bool = false,
                  callback: @escaping (RealmCore, ChangePayload) -> Void) -> NotificationToken {
        // (an observer registered without a queue through a Realm confined to a queue is
        // delivered on that queue, as RealmSwift does: the target is the queue's)
        let queue = queue ?? core.queue
        // An object observer on a queue: the queue's Realm, when it has none yet, is made here
        // and set below to the version the watch starts at, so that the first delivery reads
        // the old values there (opened at its first delivery, it would read the newest
        // version, the new values). The file is opened outside the lock.
        var fresh: RealmCore?
        // (and, when the registering Realm is behind the notifier, its version frozen: the
        // watch then starts there, and the queue's Realm reads another version, so the first
        // old values are read there. Only then: a frozen copy opens the file.)
        var snapshot: RealmCore?
        if let queue, readValues != nil, makeWatch != nil {
            fresh = RealmCore.makeForQueue(core.config, queue: queue)
            // (or when the queue's Realm may read an older version than the watch starts at: the
            // first old values are read at the start, not at that version)
            if isBehind(core) || queueMayBeOlder(than: core, queue: queue, making: fresh != nil) {
                snapshot = core.frozen()
            }
        }
        lock.lock()
        // (a watch made here starts no older than the registering Realm's version, which may be
        // past a write that skips observers and has not computed its version yet)
        if makeWatch != nil && !onNotifierThread {
            let from = max(NotifierCore.version(of: core), fresh.map { NotifierCore.version(of: $0) } ?? 0)
            waitForSkip(unlessAt: { from })
        }
        let t = target(core: core, queue: queue)
        let r = Registration(watchless: makeWatch == nil, target: t, readValues: readValues, rebases: rebases,
                             callback: callback)
        if !closed && self.core.follows(core) { r.version = NotifierCore.version(of: core) }
        t.registrations.append(r)
        if makeWatch == nil { t.realmObservers += 1 }
        // (targets an advance below made due are scheduled as any advance's: Realm observers
        // get `.didChange` for the version computed here)
        if let makeWatch, onNotifierThread, !closed {
            // made at the notifier's next round, at the newest version (never older than the
            // registering Realm's), so that a write made before it is in the initial state
            r.maker = makeWatch
            unmade.append(r)
            self.core.wake()
        } else if let makeWatch {
            // a watch starts at a version no older than the registering Realm's (nor than a
            // queue Realm made above), so that a write made before registering is in its initial
            // state
            var from = NotifierCore.version(of: core)
            if let fresh { from = max(from, NotifierCore.version(of: fresh)) }
            if self.core.version < from { scheduleDue(moved: self.core.advance()) }
            if let made = fresh {
                if t.core == nil && !closed && self.core.follows(made) {
                    if NotifierCore.version(of: made) < self.core.version { self.core.advance(made) }
                    // (a Realm cached for the queue meanwhile, by code on the queue, is the
                    // queue's Realm; this one goes, after the lock is released)
                    t.core = made.publish(queue: queue!)
                    if t.core === made { t.versionAtLeast = NotifierCore.version(of: made) }
                }
            }
            // an object observer, which has no initial notification, reports every change after
            // the registering Realm's version: when that Realm is behind the notifier, its watch
            // starts there with the changes in between (docs/ARCHITECTURE.md, Change
            // notifications)
            let start = NotifierCore.version(of: core)
            let behind = readValues != nil && self.core.follows(core) && start < self.core.version
            let w = behind ? self.core.watch(from: core, makeWatch) : makeWatch(self.core)
            // delivered through another Realm (a queue's, at another version or opened later);
            // (the notifier may have moved past the Realm since `isBehind` said no: frozen here)
            // Also when the queue's Realm may read an older version than the watch's start (its
            // bound is lower, or it is a Realm cached for the queue that no delivery moved): the
            // object may not exist there, or hold another value
            let older = readValues != nil && queue != nil && !behind && t.core !== core
                && (t.core == nil || t.versionAtLeast < start)
            if (behind || older) && t.core !== core {
                r.oldValuesAt = snapshot ?? core.frozen()
                // (the next delivery brings the queue's Realm past the start, on the queue, and
                // lets the snapshot go if no change set took it: it pins its version one hop)
                if !t.scheduled {
                    t.scheduled = true
                    schedule(t)
                }
            }
            r.watch = w
            r.madeOnRegisteringThread = true
            if w != nil && self.core.pending(w!) && !t.scheduled {
                t.scheduled = true
                schedule(t)
            }
        }
        lock.unlock()
        withExtendedLifetime((fresh, snapshot)) {}
        let token = NotificationToken { [self] in unregister(r) }
        token.registration = r
        return token
    }

    /// Whether the Realm a queue object observer of `core` would be delivered through may read
    /// an older version than `core` (the watch's start): the queue's target has a Realm whose
    /// known lower bound is older, or it has none and the queue has a Realm cached that this
    /// registration is not making (`making` false). Decided under the lock from the target's
    /// bound, never by reading the queue's Realm.
    private func queueMayBeOlder(than core: RealmCore, queue: DispatchQueue, making: Bool) -> Bool {
        let start = NotifierCore.version(of: core)
        lock.lock()
        defer { lock.unlock() }
        guard let t = targets[ObjectIdentifier(queue)], t.core != nil else { return !making }
        return t.core !== core && t.versionAtLeast < start
    }

    /// Whether `core` reads an older version than the notifier computed (it can only become
    /// so later, never stop being so: the Realm is on the calling thread and does not move).
    private func isBehind(_ core: RealmCore) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return !closed && self.core.follows(core) && NotifierCore.version(of: core) < self.core.version
    }

    /// Makes the watches of new query and collection observers (of target `t`, or of every
    /// target), without holding the lock while they run their initial query or read their
    /// collection (docs/ARCHITECTURE.md, Change notifications): under the lock, it takes them
    /// out of `unmade`, first brings the core notifier to their registering Realms' versions
    /// when it is older (another process's commit, or a schema change, which no `committed(by:)`
    /// computed yet), and opens a side notifier at the core notifier's version; without it, it
    /// makes their watches on the side notifier; under the lock again, the side notifier
    /// catches up to the core notifier's version (which other threads' commits may have moved
    /// meanwhile) and hands the watches over. Deliveries and commits go on meanwhile; the
    /// observers being made have no watch yet, so nothing is delivered to them. Called without
    /// the lock. What it holds of the observers (their makers, blocks and Realms) is let go
    /// after the lock is released, and unregistering waits for that, so no observer's last
    /// reference goes here.
    private func makeWatches(of t: DeliveryTarget?) {
        lock.lock()
        // (the registering Realms may read past a write that skips observers and has not
        // computed its version yet)
        if !unmade.isEmpty { waitForSkip(unlessAt: { self.unmade.map(\.version).max() ?? 0 }) }
        if unmade.isEmpty || stopping || closed {
            lock.unlock()
            return
        }
        var batch: [(Registration, (NotifierCore) -> NotifierCore.Watch?)] = []
        var rest: [Registration] = []
        for r in unmade {
            if let t, r.target !== t {
                rest.append(r)
                continue
            }
            guard let make = r.maker, r.live.load(ordering: .relaxed) else { continue }
            batch.append((r, make))
        }
        unmade = rest
        guard !batch.isEmpty else {
            lock.unlock()
            return
        }
        // A watch never starts older than its registering Realm's version: an owner or a table
        // that Realm reads exists there. The advance's change sets are scheduled like any other
        // (`moved` too: Realm observers get their `.didChange`).
        let newest = batch.map { $0.0.version }.max() ?? 0
        // (never while a write skips observers: `skip` wakes the notifier thread after it)
        if core.version < newest && !skipping { scheduleDue(moved: core.advance()) }
        if core.version < newest {
            // (the advance failed: made at the next round)
            unmade.append(contentsOf: batch.map(\.0))
            lock.unlock()
            batch = []
            return
        }
        let group = DispatchGroup()
        group.enter()
        for (r, _) in batch { r.batch = group }
        guard let side = core.side() else {
            // (no side notifier: made here, under the lock, at the notifier's version)
            let at = core.version
            for (r, make) in batch where r.maker != nil {
                FileNotifier.runMakingHook(path)
                install(r, make(core), at: at)
            }
            lock.unlock()
            batch = []
            group.leave()
            return
        }
        making.enter()
        lock.unlock()
        var made: [(Registration, NotifierCore.Watch?)] = []
        for (r, make) in batch where r.live.load(ordering: .relaxed) {
            FileNotifier.runMakingHook(path)
            made.append((r, make(side)))
        }
        FileNotifier.runMadeHook(path, made.count)
        lock.lock()
        let watches = made.compactMap(\.1)
        if core.adopt(watches, from: side) {
            let at = side.version
            for (r, w) in made { install(r, w, at: at) }
        } else {
            // (the watches were freed: made again here, at the notifier's version)
            for (r, _) in made { install(r, r.maker.map { $0(core) } ?? nil, at: core.version) }
        }
        side.close()
        lock.unlock()
        // (the observers, their makers and what those hold are let go here, without the lock,
        // before unregistering may go on)
        batch = []
        made = []
        group.leave()
        making.leave()
    }

    /// Gives `r` the watch made for it at version `at` (lock held), or frees it when `r` was
    /// unregistered meanwhile. No watch (the collection's owner does not exist at `at`, which
    /// is no older than the registering Realm's version: it was deleted before the watch was
    /// made): one `.initial`, with the collection read as invalidated, then nothing, as
    /// RealmSwift reports an invalidated collection (docs/ARCHITECTURE.md, Change
    /// notifications). A watch made before the registering Realm's version has no owner to go
    /// by: it is made again at the next round.
    private func install(_ r: Registration, _ w: NotifierCore.Watch?, at: UInt64) {
        guard r.maker != nil, r.live.load(ordering: .relaxed), !closed else {
            if let w { core.free(w) }
            return
        }
        if w == nil && at < r.version {
            unmade.append(r)
            core.wake()
            return
        }
        r.maker = nil
        r.madeOnRegisteringThread = pthread_equal(r.registeringThread, pthread_self()) != 0
        if let w {
            r.watch = w
        } else {
            var p = ChangePayload()
            p.initial = true
            p.version = core.version
            r.carried = [p]
        }
    }

    /// For tests: runs once, on the thread making the watches of new query and collection
    /// observers of the file at that path, just before it runs a maker (where a query
    /// observer's initial query runs), so a test can hold a slow initial query there.
    static let beforeMakingForTesting = Locked<[String: @Sendable () -> Void]>([:])
    /// Set when `beforeMakingForTesting` was ever used (watch making skips its lock until then).
    static let makingHooksArmed = Atomic<Bool>(false)

    /// For tests: runs once, on the thread making the watches of new query and collection
    /// observers of the file at that path, once a batch's watches were made on the side notifier
    /// and before they are handed over under the lock, with how many there are.
    static let afterMakingForTesting = Locked<[String: @Sendable (Int) -> Void]>([:])

    private static func runMadeHook(_ path: String, _ count: Int) {
        if makingHooksArmed.load(ordering: .relaxed),
           let hook = afterMakingForTesting.withLock({ $0.removeValue(forKey: path) }) {
            hook(count)
        }
    }

    /// For tests: the next `deliverNow` on the file at that path takes its notifier advance for
    /// failed (as when reading the change history fails), without advancing.
    static let failAdvanceForTesting = Locked<[String: Bool]>([:])

    /// For tests: runs once, on a thread about to wait (without the lock) for a write that skips
    /// observers of the file at that path to compute its version (`waitForSkip`).
    static let waitingForSkipForTesting = Locked<[String: @Sendable () -> Void]>([:])

    /// For tests: runs once on the notifier thread of the file at that path, after a round of
    /// its loop scheduled what was due and released the lock.
    static let afterSchedulingForTesting = Locked<[String: @Sendable () -> Void]>([:])

    private static func runScheduledHook(_ path: String) {
        if makingHooksArmed.load(ordering: .relaxed),
           let hook = afterSchedulingForTesting.withLock({ $0.removeValue(forKey: path) }) {
            hook()
        }
    }

    /// For tests: runs once on a thread unregistering an observer of the file at that path,
    /// after it released the lock and before it lets go of what it took of the observer.
    static let afterUnregisteringForTesting = Locked<[String: @Sendable () -> Void]>([:])

    private static func runMakingHook(_ path: String) {
        if makingHooksArmed.load(ordering: .relaxed),
           let hook = beforeMakingForTesting.withLock({ $0.removeValue(forKey: path) }) {
            hook()
        }
    }

    private func unregister(_ r: Registration) {
        r.live.store(false, ordering: .sequentiallyConsistent)
        lock.lock()
        let batch = r.batch
        r.batch = nil
        if let w = r.watch { core.free(w) }
        r.watch = nil
        // (what may hold the Realm goes with it, on the target's thread; `r` itself may be let
        // go anywhere)
        var held: [Any] = [r.callback as Any, r.maker as Any, r.readValues as Any]
        r.callback = nil
        r.maker = nil
        r.readValues = nil
        unmade.removeAll { $0 === r }
        let t = r.target
        t.registrations.removeAll { $0 === r }
        if r.watchless { t.realmObservers -= 1 }
        var dropped: DeliveryTarget?
        var droppedRealm: RealmCore?
        // (a run loop's target: whether this is its thread, where what is let go of it may go
        // at once)
        let onTargetThread = t.core?.isOnOwnerThread ?? true
        if t.registrations.isEmpty, let key = targets.first(where: { $0.value === t })?.key {
            dropped = targets.removeValue(forKey: key)
            t.dropped = true
            droppedRealm = t.core
            t.core = nil
        }
        lock.unlock()
        // (a batch making this observer's watch lets go of it first, so that the last
        // reference is not dropped on the thread making watches)
        batch?.wait()
        if FileNotifier.makingHooksArmed.load(ordering: .relaxed),
           let hook = FileNotifier.afterUnregisteringForTesting.withLock({ $0.removeValue(forKey: path) }) {
            hook()
        }
        // the target's Realm, and what the observer held (its block may hold an accessor of that
        // Realm), go on the target's own thread, whether or not the target remains: once the lock
        // is released, another thread may drop the target and its Realm go there, and what this
        // thread holds would then be that Realm's last reference (docs/ARCHITECTURE.md, Change
        // notifications)
        FileNotifier.letGo(&droppedRealm, with: &held, on: t, onOwnThread: onTargetThread)
        held = []
        withExtendedLifetime(dropped) {}
        release()
    }

    /// Lets go of `realm`, the Realm of the dropped target `t` (nil when `t` remains), and of
    /// `held` (what of an unregistered observer may hold a Realm of `t`) on the target's own
    /// thread: in a block on its queue, on its actor, or through its run loop thread's inbox
    /// when the caller is another thread (`onOwnThread` false; here otherwise, and when that
    /// thread has ended). The caches hold Realms unretained, so the last reference to a Realm
    /// (its own thread may take it from its cache meanwhile) is then never dropped on the thread
    /// that unregistered its observer, the notifier thread, or under the lock
    /// (docs/ARCHITECTURE.md, Change notifications).
    private static func letGo(_ realm: inout RealmCore?, with held: inout [Any], on t: DeliveryTarget,
                              onOwnThread: Bool) {
        // (the observer's block and maker go with it: they may hold the same Realm, through
        // their collection)
        if let q = t.queue {
            let box = Box(taking: &realm), observer = Box(Held(taking: &held))
            q.async { _ = box.take(); _ = observer.take() }
        } else if let a = t.actor {
            let box = Box(taking: &realm), observer = Box(Held(taking: &held))
            Task(executorPreference: DeliveryExecutor.shared) {
                await FileNotifier.run(on: a) { _ = box.take(); _ = observer.take() }
            }
        } else if let rl = t.runLoop, !onOwnThread, let inbox = t.inbox {
            // (an ended thread's inbox takes nothing: its Realm goes here)
            if inbox.add(taking: &realm, &held) {
                rl.add(Timer(timeInterval: 0, repeats: false) { _ in inbox.drain() }, forMode: .common)
            }
        }
        // (otherwise the box, the last reference, goes here, on the Realm's own thread)
    }

    /// Calls `observers`, Realm observers of `t`, with `notification` on the target's thread,
    /// unless a Realm observer's block of `core` is running (a `refresh()` or a commit inside one,
    /// also for observers registered there on a new target):
    /// that notification is not sent, as RealmSwift's Realm sends none from inside its
    /// notification blocks; the blocks never nest (docs/ARCHITECTURE.md, Change notifications).
    private func notifyRealmObservers(_ observers: [Registration], of t: DeliveryTarget, _ core: RealmCore,
                                      _ notification: Realm.Notification) {
        if observers.isEmpty { return }
        lock.lock()
        if core.notifyingRealmObservers {
            lock.unlock()
            return
        }
        core.notifyingRealmObservers = true
        let blocks = observers.map { $0.callback }
        lock.unlock()
        var p = ChangePayload()
        p.realmNotification = notification
        for (r, block) in zip(observers, blocks) where r.live.load(ordering: .sequentiallyConsistent) {
            block?(core, p)
        }
        lock.lock()
        core.notifyingRealmObservers = false
        lock.unlock()
    }

    /// How many observers are registered (for tests).
    var observerCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return targets.values.reduce(0) { $0 + $1.registrations.count }
    }

    /// The version the notifier computed last (for tests).
    var notifiedVersion: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return core.version
    }

    /// Whether `core` has observers here.
    func hasObservers(_ core: RealmCore) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return ownTarget(of: core) != nil
    }

    /// The delivery target whose Realm `core` is (lock held): its own (a run loop's or an
    /// actor's Realm), or, for a Realm confined to a queue, that queue's, whose Realm it is or,
    /// when the queue's target opened none yet, becomes (it is the queue's cached instance, the
    /// one the first delivery would open). So `beginWrite` and `refresh()` on a queue's Realm
    /// deliver that queue's pending notifications, as on a run loop.
    private func ownTarget(of core: RealmCore) -> DeliveryTarget? {
        if let t = targets[ObjectIdentifier(core)] { return t }
        guard let q = core.queue, let t = targets[ObjectIdentifier(q)], t.config.cacheKey == core.config.cacheKey
        else { return nil }
        if t.core == nil { t.core = core }
        return t.core === core ? t : nil
    }

    /// Before a write through `writer` that skips `tokens` commits (the writer holds the write
    /// lock, so the newest version is the one the write started from): computes the change sets
    /// up to that version and keeps what those tokens' watches hold, so that `skip` drops only
    /// the write's own changes and nothing another commit brought. From here to `skip` (or
    /// `abandonSkip`, when the commit fails) no other advance moves the notifier (`skipping`).
    /// Returns false, doing nothing, when the notifier is closed, or when it cannot compute the
    /// version the write started from (a failed read): the write is then not skipped.
    /// An object observer's held-back change set gets the old values of its properties read
    /// through `snapshot` (the file at the version the write started from, which the observer
    /// was given last) when the write moved past other commits; otherwise it has none. A query
    /// over a collection's gets the file frozen at the version the write started from, where its
    /// results are read when it is delivered (`ChangePayload.at`).
    func holdBack(_ tokens: [NotificationToken], writer: RealmCore, oldValuesAt snapshot: RealmCore? = nil) -> Bool {
        // snapshots no longer needed go after the lock is released
        var released: [RealmCore?] = []
        lock.lock()
        defer {
            lock.unlock()
            released = []
        }
        // (another write's skip: its commit came before this write took the write lock)
        waitForSkip()
        if closed { return false }
        let (moved, failed) = core.tryAdvance()
        if failed {
            // (the versions before the write cannot be computed apart from it: the write is not
            // skipped, rather than dropping other commits' changes with it; the notifier thread
            // retries)
            core.wake()
            return false
        }
        var start: RealmCore?
        for tok in tokens {
            guard let r = tok.registration, let w = r.watch, core.pending(w), var p = core.take(w) else { continue }
            r.delivered = true
            let at = r.oldValuesAt ?? snapshot
            if let read = r.readValues, let at, !p.columns.isEmpty, !p.deleted { p.oldValues = read(at, p.columns) }
            released.append(r.oldValuesAt)
            r.oldValuesAt = nil
            if p.isEmpty { continue }
            if r.rebases {
                if start == nil { start = core.frozen(like: writer) }
                p.at = start
            }
            r.carried.append(p)
        }
        skipping = true
        skipEnded.enter()
        // (scheduled as any advance's: Realm observers get `.didChange` for a version computed here)
        scheduleDue(moved: moved)
        return true
    }

    /// Waits (lock held, released meanwhile) until no write that skips observers is between its
    /// `holdBack` and its `skip`; with `unlessAt`, only while the notifier's version is older than
    /// the version it gives (read again after each wait), and with `unlessNewest`, only while a
    /// newer version than the notifier's exists: the skipping write's commit (its data written
    /// and synced) is not waited for until it is done. Returns with `skipping` possibly still set
    /// then: the caller does not advance.
    private func waitForSkip(unlessAt version: (() -> UInt64)? = nil, unlessNewest: Bool = false) {
        while skipping && !closed {
            if let version, core.version >= version() { return }
            if unlessNewest && core.isNewest { return }
            lock.unlock()
            if FileNotifier.makingHooksArmed.load(ordering: .relaxed),
               let hook = FileNotifier.waitingForSkipForTesting.withLock({ $0.removeValue(forKey: path) }) {
                hook()
            }
            skipEnded.wait()
            lock.lock()
        }
    }

    /// Ends `skipping` (lock held).
    private func endSkipping() {
        if skipping {
            skipping = false
            skipEnded.leave()
        }
    }

    /// Whether `core`'s delivery target has object observers (whose change sets carry old values).
    func hasObjectObservers(_ core: RealmCore) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return ownTarget(of: core)?.registrations.contains { $0.readsValues } ?? false
    }

    /// Drops what the listed tokens' watches accumulated since `holdBack`: exactly the changes
    /// of the write `writer` committed without notifying them. The notifier computes that
    /// version alone (`cs_notifier_advance_to` the version `writer` reads, right after its
    /// commit: nothing moved the notifier past it since `holdBack`), the tokens' watches drop
    /// it, and then the newest version is computed as usual, so that a commit landing right
    /// after the write (another thread's or process's) is reported to them
    /// (docs/ARCHITECTURE.md, Change notifications). Ends `skipping`.
    func skip(_ tokens: [NotificationToken], committedBy writer: RealmCore) {
        lock.lock()
        defer {
            endSkipping()
            lock.unlock()
        }
        if closed { return }
        var (moved, exact) = core.follows(writer) ? core.advance(upTo: writer) : (false, false)
        // (cannot fail but on a failed read: then the write is dropped with what came after it,
        // as the newest version is all that can be computed)
        if !exact { moved = core.advance() || moved }
        for tok in tokens {
            if let r = tok.registration, let w = r.watch { core.discard(w) }
        }
        let (later, failed) = core.tryAdvance()
        if later { moved = true }
        // (the advances left to this one retry on the notifier thread, and the watches left
        // unmade are made there)
        if failed || !unmade.isEmpty { core.wake() }
        // (the commit's version and those after it are computed here: their change sets are
        // scheduled here, Realm observers' `.didChange` too, and `committed(by:)` then finds
        // nothing new)
        scheduleDue(moved: moved)
    }

    /// Ends `skipping` after a write that skips observers failed to commit (`holdBack` was
    /// called): the other advances go on.
    func abandonSkip() {
        lock.lock()
        endSkipping()
        lock.unlock()
    }

    /// After a write through `core` made without notifying `tokens` (`skip`): the observers of
    /// queries over collections among them take the results at the version the write made as
    /// the ones they showed last, so that their next change set does not report the skipped
    /// write (their change sets compare the results with those, not the core's change set
    /// alone). On `core`'s thread, the one they are delivered on (only such tokens can be
    /// skipped), where `core` reads exactly that version now. One with change sets still to be
    /// translated gets the rebase behind them, as a payload holding the file frozen at the
    /// write's version: change sets held back from before the write (`carried`, each
    /// translated against the results at its own version), or, when the write is made inside a
    /// block of a delivery to this target, one that delivery may still hold for it (translated
    /// against the results at the version delivered, `deliver`). The others take it here, from
    /// `core`. (When the file cannot be frozen, they all do.)
    func rebase(_ tokens: [NotificationToken], in core: RealmCore) {
        var marker = ChangePayload()
        marker.rebase = true
        marker.version = NotifierCore.version(of: core)
        lock.lock()
        var blocks: [(RealmCore, ChangePayload) -> Void] = []
        var behind: [(Registration, (RealmCore, ChangePayload) -> Void)] = []
        for tok in tokens {
            guard let r = tok.registration, r.rebases, r.live.load(ordering: .relaxed), r.target.core === core,
                  let b = r.callback else { continue }
            if r.carried.isEmpty && !r.target.delivering { blocks.append(b) } else { behind.append((r, b)) }
        }
        lock.unlock()
        // (frozen outside the lock: it opens the file; no delivery to this target runs
        // meanwhile, as this is its thread)
        if !behind.isEmpty, let frozen = try? RealmCore.frozen(like: core, at: core.txn) {
            marker.at = frozen
            lock.lock()
            for (r, _) in behind where r.live.load(ordering: .relaxed) { r.carried.append(marker) }
            lock.unlock()
            marker.at = nil
        } else {
            blocks += behind.map(\.1)
        }
        for b in blocks { b(core, marker) }
    }

    // MARK: Delivery

    /// What `deliverNow` did: whether the Realm moved, and whether it now reads exactly the
    /// version its observers were told of (the notifier's, `told`): then it must move no
    /// further before its next delivery (docs/ARCHITECTURE.md, Change notifications).
    struct DeliveredNow {
        var moved = false
        var told = false
    }

    /// Delivers what is pending for `core`'s target now, on its thread (refresh, beginWrite),
    /// bringing its Realm to the notifier's version, which this first advances to the newest.
    /// `beforeWrite`: observers whose initial change set was not delivered yet are left out
    /// (the write is folded into their initial one).
    /// Returns nil when called from a block of a
    /// delivery to that target, which then delivers nothing more (RealmSwift sends no
    /// notifications from a write begun, or a refresh, inside a notification block: an
    /// observer still to be called gets the change set that delivery holds for it first), and
    /// then the Realm must not move either (`refresh()` does nothing).
    @discardableResult
    func deliverNow(_ core: RealmCore, beforeWrite: Bool = false) -> DeliveredNow? {
        lock.lock()
        if closed {
            lock.unlock()
            return DeliveredNow()
        }
        let t = ownTarget(of: core)
        if let t, t.delivering {
            t.deferred = true
            lock.unlock()
            return nil
        }
        lock.unlock()
        guard let t else { return DeliveredNow() }
        // refresh() delivers the initial notifications of new query and collection observers
        // too (their watches made here, then brought to the newest version); a write leaves
        // them for later
        if !beforeWrite {
            makeWatches(of: t)
            // (the notifier thread may be making some of them: they are waited for)
            lock.lock()
            let inFlight = t.registrations.contains { $0.maker != nil && $0.live.load(ordering: .relaxed) }
            lock.unlock()
            if inFlight { making.wait() }
        }
        lock.lock()
        // (a write that skips observers may be between its commit and `skip`: once a version
        // newer than the notifier's exists, this advance waits for `skip`, so that what the Realm
        // moves to is delivered; before, nothing is newer, and there is nothing to advance)
        waitForSkip(unlessNewest: true)
        if closed {
            lock.unlock()
            return DeliveredNow()
        }
        // (an advance that moves schedules the other targets, as any advance does: their Realm
        // observers get `.didChange` for it; this one delivers here)
        // (a failed advance, a read of the history refused or failing, leaves the notifier behind
        // the newest version: the delivery then tells the observers of that older version, and
        // `told` stays false, so that `refresh()` still advances the Realm on its own; the
        // notifier thread retries)
        var failed = false
        if !skipping {
            let (advanced, fail) = FileNotifier.makingHooksArmed.load(ordering: .relaxed)
                && FileNotifier.failAdvanceForTesting.withLock({ $0.removeValue(forKey: path) }) != nil
                ? (false, true) : self.core.tryAdvance()
            failed = fail
            if fail { self.core.wake() }
            scheduleDue(moved: advanced, except: t)
        }
        lock.unlock()
        var told = false
        let moves = deliver(t, force: true, beforeWrite: beforeWrite, told: &told)
        return DeliveredNow(moved: moves, told: told && !failed)
    }

    /// Brings the target's Realm to the notifier's version and calls its observers' blocks with
    /// what changed. Returns whether the Realm moved.
    @discardableResult
    func deliver(_ t: DeliveryTarget, force: Bool = false, beforeWrite: Bool = false) -> Bool {
        var told = false
        return deliver(t, force: force, beforeWrite: beforeWrite, told: &told)
    }

    /// `deliver`, setting `told` when the target's Realm was brought to the notifier's version
    /// (under the lock, with every pending change set of its observers taken up to there).
    private func deliver(_ t: DeliveryTarget, force: Bool, beforeWrite: Bool, told: inout Bool) -> Bool {
        // (an object observer's registration may have set a queue's Realm from its thread)
        lock.lock()
        if t.dropped {
            lock.unlock()
            return false
        }
        let unopened = t.queue != nil && t.core == nil
        lock.unlock()
        if unopened {
            guard let c = try? RealmCore.open(t.config, queue: t.queue) else { return false }
            lock.lock()
            if t.core == nil && !t.dropped { t.core = c }
            lock.unlock()
        }
        lock.lock()
        t.scheduled = false
        if t.delivering {
            // (a nested run loop's turn inside a block: the delivery being made schedules
            // another when it ends)
            t.deferred = true
            lock.unlock()
            return false
        }
        guard !closed, let core = t.core, !core.isInWriteTransaction, self.core.follows(core) else {
            lock.unlock()
            return false
        }
        let nv = self.core.version
        let rv = NotifierCore.version(of: core)
        if rv > nv {
            // a newer local commit: the notifier computes it next and schedules again
            lock.unlock()
            return false
        }
        let moves = rv < nv
        if moves && !core.autorefresh && !force {
            // (as realm-core's, outside a delivery: `refresh()` in these blocks moves the Realm
            // and delivers)
            let observers = t.registrations.filter { $0.watchless && $0.live.load(ordering: .relaxed) }
            lock.unlock()
            notifyRealmObservers(observers, of: t, core, .refreshRequired)
            return false
        }
        var out: [(Registration, ChangePayload)] = []
        var objects: [Int] = []
        // snapshots no longer needed, released after the lock
        var released: [RealmCore] = []
        for r in t.registrations where r.live.load(ordering: .relaxed) {
            if r.watch == nil && r.carried.isEmpty { continue }
            // (an object observer has no initial change set: what is pending goes before the write)
            if beforeWrite && !r.delivered && !r.readsValues { continue }
            // change sets held back by a write that skipped this observer come first (with the
            // old values read when they were held back, if any)
            for p in r.carried {
                if r.readsValues && !p.columns.isEmpty { objects.append(out.count) }
                out.append((r, p))
                r.delivered = true
            }
            r.carried = []
            guard let w = r.watch, self.core.pending(w), var p = self.core.take(w) else {
                // (no change since the watch's start: once this delivery brings the Realm to the
                // notifier's version, past that start, the object's values there are those at the
                // start, and the snapshot taken for them goes, docs/ARCHITECTURE.md, Change
                // notifications)
                if let at = r.oldValuesAt, r.watch != nil, r.version <= nv {
                    released.append(at)
                    r.oldValuesAt = nil
                }
                continue
            }
            r.delivered = true
            if let read = r.readValues, !p.columns.isEmpty {
                if let at = r.oldValuesAt {
                    p.oldValues = read(at, p.columns)
                } else {
                    p.oldValues = moves ? read(core, p.columns) : nil
                }
                objects.append(out.count)
            }
            if let at = r.oldValuesAt {
                released.append(at)
                r.oldValuesAt = nil
            }
            if p.isEmpty { continue }
            out.append((r, p))
        }
        if moves { self.core.advance(core) }
        told = true
        t.versionAtLeast = max(t.versionAtLeast, nv)
        for i in objects where !out[i].1.deleted {
            out[i].1.newValues = out[i].0.readValues!(core, out[i].1.columns)
        }
        var realmObservers = moves ? t.registrations.filter { $0.watchless } : []
        var blocks = out.map { $0.0.callback }
        let calls = !out.isEmpty || !realmObservers.isEmpty
        if calls { t.delivering = true }
        lock.unlock()
        released = []
        guard calls else { return moves }
        CoreLog.log(.debug, Category.Storage.notification.rawValue,
                    "Delivering version \(nv) of '\(path)': \(out.count) change set(s), \(realmObservers.count) Realm observer(s)")
        // (a block that writes moves the Realm: the queries over collections after it read their
        // results in the file frozen at the version delivered, pinned here, docs/ARCHITECTURE.md,
        // Change notifications)
        let pin = out.contains { $0.0.rebases } ? core.pinVersion() : nil
        var delivered: RealmCore?
        for ((r, p), block) in zip(out, blocks) where r.live.load(ordering: .sequentiallyConsistent) {
            if r.rebases, p.at == nil, let pin, NotifierCore.version(of: core) != nv {
                if delivered == nil { delivered = try? RealmCore.frozen(like: core, at: pin) }
                var q = p
                q.at = delivered
                block?(core, q)
            } else {
                block?(core, p)
            }
        }
        if let pin { RealmCore.unpin(pin) }
        delivered = nil
        notifyRealmObservers(realmObservers, of: t, core, .didChange)
        // (an observer unregistered meanwhile, its token released in a block, may have its last
        // reference here: let go now, on the target's thread, not under the lock below)
        out = []
        blocks = []
        realmObservers = []
        // what a block's write or refresh skipped (or a nested run loop's delivery) comes next
        lock.lock()
        t.delivering = false
        let again = t.deferred && !t.scheduled && !closed
        t.deferred = false
        if again {
            t.scheduled = true
            schedule(t)
        }
        lock.unlock()
        return moves
    }
}
