import Dispatch
import Foundation
import Synchronization

/// A change set copied out of the core (docs/ARCHITECTURE.md, Change notifications).
struct ChangePayload {
    var initial = false
    var deleted = false
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []
    var keysDeleted: [String] = []
    var keysInserted: [String] = []
    var keysModified: [String] = []
    var columns: [UInt32] = []
    var oldValues: [Any?]? = nil
    var newValues: [Any?] = []
    /// For Realm observers: which notification.
    var realmNotification: Realm.Notification = .didChange

    init() {}

    var isEmpty: Bool {
        !initial && !deleted && deletions.isEmpty && insertions.isEmpty && modifications.isEmpty
            && keysDeleted.isEmpty && keysInserted.isEmpty && keysModified.isEmpty && columns.isEmpty
    }
}

/// One observer: a core watch (nil for a Realm observer) and the block its change sets go to.
final class Registration: @unchecked Sendable {
    /// Guarded by the notifier's lock.
    var watch: OpaquePointer?
    let target: DeliveryTarget
    /// Objects: the values of these columns read through the delivering Realm.
    let readValues: ((RealmCore, [UInt32]) -> [Any?])?
    /// Runs on the target with the delivering Realm (nil payload: a Realm notification).
    let callback: (RealmCore, ChangePayload) -> Void
    let live = Atomic<Bool>(true)
    var isRealmObserver: Bool { readValues == nil && watchless }
    let watchless: Bool

    init(watch: OpaquePointer?, target: DeliveryTarget, readValues: ((RealmCore, [UInt32]) -> [Any?])?,
         callback: @escaping (RealmCore, ChangePayload) -> Void) {
        self.watch = watch
        self.watchless = watch == nil
        self.target = target
        self.readValues = readValues
        self.callback = callback
    }
}

/// Where notifications of one Realm are delivered: the registering thread's run loop (its
/// Realm), or a serial queue (the Realm confined to it, opened there on first delivery).
final class DeliveryTarget: @unchecked Sendable {
    let runLoop: RunLoop?
    let queue: DispatchQueue?
    let config: Realm.Configuration
    /// The delivering Realm: the registering one for run loops; for queues opened on the queue.
    /// Guarded by the notifier's lock; read on the target.
    var core: RealmCore?
    /// Guarded by the notifier's lock.
    var registrations: [Registration] = []
    var scheduled = false
    var realmObservers = 0

    init(core: RealmCore?, runLoop: RunLoop?, queue: DispatchQueue?, config: Realm.Configuration) {
        self.core = core
        self.runLoop = runLoop
        self.queue = queue
        self.config = config
    }
}

/// The notifier of one file in this process (docs/ARCHITECTURE.md, Change notifications): a
/// thread that waits for commits (any process's), computes every watch's change set once per
/// version through the core's notifier, and schedules delivery on each target.
final class FileNotifier: @unchecked Sendable {
    let path: String
    private let core: NotifierCore
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var targets: [ObjectIdentifier: DeliveryTarget] = [:]
    private var users = 0
    private var stopping = false
    private var started = false

    private static let all = Locked<[String: FileNotifier]>([:])

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
        users -= 1
        let stop = users == 0
        if stop { stopping = true }
        lock.unlock()
        if stop { core.wake() }
    }

    private func start() {
        let t = Thread { [self] in run() }
        t.name = "SwiftStore notifier"
        t.start()
    }

    private func run() {
        while true {
            let seen = core.commitCounter
            lock.lock()
            if stopping {
                lock.unlock()
                break
            }
            let moved = core.advance()
            let due = dueTargets(moved: moved)
            let version = moved ? core.version : 0
            lock.unlock()
            if moved {
                CoreLog.log(.debug, Category.Storage.notification.rawValue,
                            "Computed the changes of version \(version) of '\(path)': \(due.count) observing Realm(s) to notify")
            }
            for t in due { schedule(t) }
            core.wait(seen: seen)
        }
        FileNotifier.all.withLock { dict in
            if dict[path] === self { dict[path] = nil }
        }
        lock.lock()
        core.close()
        lock.unlock()
    }

    /// Targets with something to deliver (lock held); marks them scheduled.
    private func dueTargets(moved: Bool) -> [DeliveryTarget] {
        var due: [DeliveryTarget] = []
        for t in targets.values where !t.scheduled {
            var any = moved && t.realmObservers > 0
            if !any {
                for r in t.registrations {
                    if let w = r.watch, core.pending(w) { any = true; break }
                }
            }
            if any {
                t.scheduled = true
                due.append(t)
            }
        }
        return due
    }

    /// Runs the delivery of `t` on its thread or queue.
    private func schedule(_ t: DeliveryTarget) {
        if let q = t.queue {
            q.async { [self] in deliver(t) }
        } else if let rl = t.runLoop {
            let timer = Timer(timeInterval: 0, repeats: false) { [self] _ in deliver(t) }
            rl.add(timer, forMode: .common)
        }
    }

    /// Wakes the notifier thread (after a commit through this process).
    func wake() { core.wake() }

    // MARK: Registration

    /// The delivery target of a thread's Realm, or of a queue.
    private func target(core: RealmCore, queue: DispatchQueue?) -> DeliveryTarget {
        let id = queue.map { ObjectIdentifier($0) } ?? ObjectIdentifier(core)
        if let t = targets[id] { return t }
        let t = queue == nil ? DeliveryTarget(core: core, runLoop: RunLoop.current, queue: nil, config: core.config)
                             : DeliveryTarget(core: nil, runLoop: nil, queue: queue, config: core.config)
        targets[id] = t
        return t
    }

    /// Registers an observer: `makeWatch` makes its core watch on the notifier (nil for a Realm
    /// observer). The first delivery (the initial change set) is scheduled at once.
    func register(core: RealmCore, queue: DispatchQueue?,
                  makeWatch: ((NotifierCore) -> NotifierCore.Watch?)?,
                  readValues: ((RealmCore, [UInt32]) -> [Any?])? = nil,
                  callback: @escaping (RealmCore, ChangePayload) -> Void) -> NotificationToken {
        lock.lock()
        // a watch starts at a version no older than the registering Realm's, so that a write
        // made before registering is in its initial state
        if self.core.version < NotifierCore.version(of: core) { self.core.advance() }
        let t = target(core: core, queue: queue)
        let w = makeWatch?(self.core)
        let r = Registration(watch: w, target: t, readValues: readValues, callback: callback)
        t.registrations.append(r)
        if makeWatch == nil { t.realmObservers += 1 }
        let schedule = w != nil && self.core.pending(w!) && !t.scheduled
        if schedule { t.scheduled = true }
        lock.unlock()
        if schedule { self.schedule(t) }
        let token = NotificationToken { [self] in unregister(r) }
        token.registration = r
        return token
    }

    private func unregister(_ r: Registration) {
        r.live.store(false, ordering: .sequentiallyConsistent)
        lock.lock()
        if let w = r.watch { core.free(w) }
        r.watch = nil
        let t = r.target
        t.registrations.removeAll { $0 === r }
        if r.watchless { t.realmObservers -= 1 }
        var dropped: DeliveryTarget?
        if t.registrations.isEmpty, let key = targets.first(where: { $0.value === t })?.key {
            dropped = targets.removeValue(forKey: key)
        }
        lock.unlock()
        withExtendedLifetime(dropped) {}
        release()
    }

    /// Calls the Realm observers of `core` with `.didChange` (after a commit through it).
    func realmDidChange(_ core: RealmCore) {
        lock.lock()
        let observers = targets[ObjectIdentifier(core)]?.registrations.filter { $0.watchless } ?? []
        lock.unlock()
        for r in observers where r.live.load(ordering: .sequentiallyConsistent) {
            r.callback(core, ChangePayload())
        }
    }

    /// How many observers are registered (for tests).
    var observerCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return targets.values.reduce(0) { $0 + $1.registrations.count }
    }

    /// Whether `core` has observers here.
    func hasObservers(_ core: RealmCore) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return targets[ObjectIdentifier(core)] != nil
    }

    /// Drops what the listed tokens' watches accumulated (a write made without notifying them),
    /// after computing the newest version.
    func skip(_ tokens: [NotificationToken]) {
        lock.lock()
        core.advance()
        for tok in tokens {
            if let r = tok.registration, let w = r.watch { core.discard(w) }
        }
        lock.unlock()
    }

    // MARK: Delivery

    /// Delivers what is pending for `core`'s target now, on its thread (refresh, beginWrite).
    /// Returns whether the Realm moved.
    @discardableResult
    func deliverNow(_ core: RealmCore) -> Bool {
        lock.lock()
        self.core.advance()
        let t = targets[ObjectIdentifier(core)]
        lock.unlock()
        guard let t else { return false }
        return deliver(t, force: true)
    }

    /// Brings the target's Realm to the notifier's version and calls its observers' blocks with
    /// what changed. Returns whether the Realm moved.
    @discardableResult
    func deliver(_ t: DeliveryTarget, force: Bool = false) -> Bool {
        if t.queue != nil && t.core == nil {
            guard let c = try? RealmCore.open(t.config, queue: t.queue) else { return false }
            lock.lock()
            t.core = c
            lock.unlock()
        }
        lock.lock()
        t.scheduled = false
        guard let core = t.core, !core.isInWriteTransaction, self.core.follows(core) else {
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
            let observers = t.registrations.filter { $0.watch == nil && $0.live.load(ordering: .relaxed) }
            lock.unlock()
            for r in observers where r.live.load(ordering: .sequentiallyConsistent) {
                var p = ChangePayload()
                p.realmNotification = .refreshRequired
                r.callback(core, p)
            }
            return false
        }
        var out: [(Registration, ChangePayload)] = []
        var objects: [Int] = []
        for r in t.registrations where r.live.load(ordering: .relaxed) {
            guard let w = r.watch else { continue }
            guard self.core.pending(w), var p = self.core.take(w) else { continue }
            if let read = r.readValues, !p.columns.isEmpty {
                p.oldValues = moves ? read(core, p.columns) : nil
                objects.append(out.count)
            }
            if p.isEmpty { continue }
            out.append((r, p))
        }
        if moves { self.core.advance(core) }
        for i in objects where !out[i].1.deleted {
            out[i].1.newValues = out[i].0.readValues!(core, out[i].1.columns)
        }
        let realmObservers = moves ? t.registrations.filter { $0.watch == nil } : []
        lock.unlock()
        if !out.isEmpty || !realmObservers.isEmpty {
            CoreLog.log(.debug, Category.Storage.notification.rawValue,
                        "Delivering version \(nv) of '\(path)': \(out.count) change set(s), \(realmObservers.count) Realm observer(s)")
        }
        for (r, p) in out where r.live.load(ordering: .sequentiallyConsistent) {
            r.callback(core, p)
        }
        for r in realmObservers where r.live.load(ordering: .sequentiallyConsistent) {
            r.callback(core, ChangePayload())
        }
        return moves
    }
}
