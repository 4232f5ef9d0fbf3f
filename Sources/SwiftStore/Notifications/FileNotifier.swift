import CStore
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

    init(_ c: cs_changeset) {
        initial = c.initial
        deleted = c.deleted
        func ints(_ p: UnsafePointer<Int>?, _ n: Int) -> [Int] {
            n == 0 ? [] : Array(UnsafeBufferPointer(start: p, count: n))
        }
        deletions = ints(c.deletions, c.ndeletions)
        insertions = ints(c.insertions, c.ninsertions)
        modifications = ints(c.modifications, c.nmodifications)
        func strings(_ p: UnsafePointer<cs_value>?, _ n: Int) -> [String] {
            (0..<n).map { i in
                let v = p![i]
                return String(decoding: UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len), as: UTF8.self)
            }
        }
        keysDeleted = strings(c.keys_deleted, c.nkeys_deleted)
        keysInserted = strings(c.keys_inserted, c.nkeys_inserted)
        keysModified = strings(c.keys_modified, c.nkeys_modified)
        columns = c.ncolumns == 0 ? [] : Array(UnsafeBufferPointer(start: c.columns, count: c.ncolumns))
    }

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
    private let db: OpaquePointer
    private let notifier: OpaquePointer
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var targets: [ObjectIdentifier: DeliveryTarget] = [:]
    private var users = 0
    private var stopping = false
    private var started = false

    private static let all = Mutex<[String: FileNotifier]>([:])

    private init(config: Realm.Configuration) throws {
        path = config.path
        var opts = cs_options()
        opts.flags = config.readOnly ? UInt32(CS_OPEN_READONLY) : 0
        if config.inMemoryIdentifier != nil { opts.durability = CS_DURABILITY_MEMORY }
        var d: OpaquePointer?
        try CoreCall.check(cs_db_open(config.path, &opts, &d), "Opening \(config.path) for notifications")
        var n: OpaquePointer?
        let rc = cs_notifier_open(d, &n)
        if rc != 0 {
            let e = CoreCall.error(rc, "Starting the notifier of \(config.path)")
            cs_db_close(d)
            throw e
        }
        db = d!
        notifier = n!
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
        if stop { cs_notifier_wake(notifier) }
    }

    private func start() {
        let t = Thread { [self] in run() }
        t.name = "SwiftStore notifier"
        t.start()
    }

    private func run() {
        while true {
            let seen = cs_db_commit_counter(db)
            lock.lock()
            if stopping {
                lock.unlock()
                break
            }
            var moved = false
            let rc = cs_notifier_advance(notifier, &moved)
            if rc != 0 {
                // a failed advance is retried at the next commit; nothing is delivered meanwhile
                moved = false
            }
            let due = dueTargets(moved: moved)
            lock.unlock()
            for t in due { schedule(t) }
            _ = cs_notifier_wait(notifier, seen, -1)
        }
        FileNotifier.all.withLock { dict in
            if dict[path] === self { dict[path] = nil }
        }
        lock.lock()
        cs_notifier_close(notifier)
        lock.unlock()
        cs_db_close(db)
    }

    /// Targets with something to deliver (lock held); marks them scheduled.
    private func dueTargets(moved: Bool) -> [DeliveryTarget] {
        var due: [DeliveryTarget] = []
        for t in targets.values where !t.scheduled {
            var any = moved && t.realmObservers > 0
            if !any {
                for r in t.registrations {
                    if let w = r.watch, cs_watch_pending(w) { any = true; break }
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
    func wake() { cs_notifier_wake(notifier) }

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
                  makeWatch: ((OpaquePointer) -> OpaquePointer?)?,
                  readValues: ((RealmCore, [UInt32]) -> [Any?])? = nil,
                  callback: @escaping (RealmCore, ChangePayload) -> Void) -> NotificationToken {
        lock.lock()
        // a watch starts at a version no older than the registering Realm's, so that a write
        // made before registering is in its initial state
        if cs_notifier_version(notifier) < cs_txn_version(core.txn) {
            var moved = false
            _ = cs_notifier_advance(notifier, &moved)
        }
        let t = target(core: core, queue: queue)
        let w = makeWatch?(notifier)
        if makeWatch != nil && w == nil {
            lock.unlock()
            preconditionFailure("Cannot observe: \(CoreCall.lastMessage)")
        }
        let r = Registration(watch: w, target: t, readValues: readValues, callback: callback)
        t.registrations.append(r)
        if makeWatch == nil { t.realmObservers += 1 }
        let schedule = w != nil && cs_watch_pending(w!) && !t.scheduled
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
        if let w = r.watch { cs_watch_free(w) }
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
        var moved = false
        _ = cs_notifier_advance(notifier, &moved)
        for tok in tokens {
            if let r = tok.registration, let w = r.watch { cs_watch_discard(w) }
        }
        lock.unlock()
    }

    // MARK: Delivery

    /// Delivers what is pending for `core`'s target now, on its thread (refresh, beginWrite).
    /// Returns whether the Realm moved.
    @discardableResult
    func deliverNow(_ core: RealmCore) -> Bool {
        lock.lock()
        var moved = false
        _ = cs_notifier_advance(notifier, &moved)
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
        guard let core = t.core, !core.isInWriteTransaction else {
            lock.unlock()
            return false
        }
        let nv = cs_notifier_version(notifier)
        let rv = cs_txn_version(core.txn)
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
            guard cs_watch_pending(w) else { continue }
            var c = cs_changeset()
            guard cs_watch_take(w, &c) == 0 else { continue }
            var p = ChangePayload(c)
            if let read = r.readValues, !p.columns.isEmpty {
                p.oldValues = moves ? read(core, p.columns) : nil
                objects.append(out.count)
            }
            if p.isEmpty { continue }
            out.append((r, p))
        }
        if moves {
            CoreCall.must(cs_txn_advance_to(core.txn, cs_notifier_txn(notifier)), "Advancing to the notified version")
            core.didMutate()
        }
        for i in objects where !out[i].1.deleted {
            out[i].1.newValues = out[i].0.readValues!(core, out[i].1.columns)
        }
        let realmObservers = moves ? t.registrations.filter { $0.watch == nil } : []
        lock.unlock()
        for (r, p) in out where r.live.load(ordering: .sequentiallyConsistent) {
            r.callback(core, p)
        }
        for r in realmObservers where r.live.load(ordering: .sequentiallyConsistent) {
            r.callback(core, ChangePayload())
        }
        return moves
    }
}
