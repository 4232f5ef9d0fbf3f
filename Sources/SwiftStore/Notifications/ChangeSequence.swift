import Dispatch
import Foundation

/// The changes of an observable as an `AsyncSequence` (beyond RealmSwift, whose Combine
/// publishers do not exist on Linux):
///
/// ```swift
/// for await change in realm.objects(Dog.self).changes(keyPaths: ["name"]) {
///     if case .update(let dogs, _, let insertions, _) = change { print(dogs.count, insertions) }
/// }
/// ```
///
/// The observer is registered when `changes(keyPaths:)` is called (on the Realm's thread, like
/// `observe`), and delivers on a serial queue of its own: each change's collection or object
/// belongs to a Realm confined to that queue, which stays at the change's version until the
/// consumer asks for the next element, so reading it from the consuming task is safe until then.
/// Changes the consumer has not asked for yet coalesce, as with `observe`. The sequence ends
/// (and the observer is removed) when the consuming task is cancelled or the sequence is
/// dropped. One consumer per sequence.
public struct RealmChanges<Change>: AsyncSequence, @unchecked Sendable {
    public typealias Element = Change
    public typealias Failure = Never

    let owner: ChangeChannel<Change>.Owner

    init(register: (DispatchQueue, @escaping (Change) -> Void) -> NotificationToken) {
        owner = ChangeChannel<Change>.Owner(ChangeChannel(register: register))
    }

    public func makeAsyncIterator() -> Iterator { Iterator(owner: owner) }

    /// Waits for the next change; nil once the task is cancelled.
    public struct Iterator: AsyncIteratorProtocol, @unchecked Sendable {
        let owner: ChangeChannel<Change>.Owner

        public mutating func next() async -> Change? { await owner.channel.next() }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(Never) -> Change? {
            await owner.channel.next()
        }
    }
}

/// The hand-over between the delivery queue and the consuming task.
final class ChangeChannel<Change>: @unchecked Sendable {
    /// Ends the channel when the last sequence or iterator holding it goes.
    final class Owner: @unchecked Sendable {
        let channel: ChangeChannel
        init(_ channel: ChangeChannel) { self.channel = channel }
        deinit { channel.finish() }
    }

    /// A change handed from the delivery queue to the consuming task (which then owns it).
    struct Handoff: @unchecked Sendable {
        let value: Change
    }

    private let lock = NSLock()
    private var pending: Change?
    private var waiter: CheckedContinuation<Handoff?, Never>?
    private var finished = false
    /// A delivery is parked on the queue until the consumer moves on.
    private var parked = false
    private let release = DispatchSemaphore(value: 0)
    private var token: NotificationToken?
    private let queue = DispatchQueue(label: "SwiftStore.changes")

    init(register: (DispatchQueue, @escaping (Change) -> Void) -> NotificationToken) {
        token = register(queue) { [weak self] change in self?.deliver(change) }
    }

    /// On the queue: hands the change over and parks until the consumer asks for the next one.
    private func deliver(_ change: Change) {
        lock.lock()
        if finished {
            lock.unlock()
            return
        }
        parked = true
        if let w = waiter {
            waiter = nil
            lock.unlock()
            w.resume(returning: Handoff(value: change))
        } else {
            pending = change
            lock.unlock()
        }
        release.wait()
    }

    /// What `next()` can answer without waiting: a change, or the end (nil inside); nil when
    /// it has to wait. Also lets a parked delivery go, the previous change being done with.
    private func ready() -> Change?? {
        lock.lock()
        defer { lock.unlock() }
        if pending == nil && parked {
            parked = false
            release.signal()
        }
        if let p = pending {
            pending = nil
            return .some(p)
        }
        return finished ? .some(nil) : nil
    }

    func next() async -> Change? {
        if let r = ready() { return r }
        let got = await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Handoff?, Never>) in
                lock.lock()
                if let p = pending {
                    pending = nil
                    lock.unlock()
                    c.resume(returning: Handoff(value: p))
                } else if finished {
                    lock.unlock()
                    c.resume(returning: nil)
                } else {
                    waiter = c
                    lock.unlock()
                }
            }
        } onCancel: {
            finish()
        }
        return got?.value
    }

    /// Ends the sequence: the waiting consumer gets nil, a parked delivery is released, the
    /// observer is removed.
    func finish() {
        lock.lock()
        if finished {
            lock.unlock()
            return
        }
        finished = true
        let w = waiter
        waiter = nil
        pending = nil
        let wasParked = parked
        parked = false
        let t = token
        token = nil
        lock.unlock()
        w?.resume(returning: nil)
        if wasParked { release.signal() }
        t?.invalidate()
    }
}

extension Results {
    /// The results' changes as an `AsyncSequence` (see `RealmChanges`); `keyPaths` as in
    /// `observe(keyPaths:on:_:)`.
    public func changes(keyPaths: [String]? = nil) -> RealmChanges<RealmCollectionChange<Results<Element>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

extension List {
    /// The list's changes as an `AsyncSequence` (see `RealmChanges`).
    public func changes(keyPaths: [String]? = nil) -> RealmChanges<RealmCollectionChange<List<Element>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

extension MutableSet {
    /// The set's changes as an `AsyncSequence` (see `RealmChanges`).
    public func changes(keyPaths: [String]? = nil) -> RealmChanges<RealmCollectionChange<MutableSet<Element>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

extension LinkingObjects {
    /// The linking objects' changes as an `AsyncSequence` (see `RealmChanges`).
    public func changes(keyPaths: [String]? = nil) -> RealmChanges<RealmCollectionChange<LinkingObjects<Element>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

extension AnyRealmCollection {
    /// The wrapped collection's changes as an `AsyncSequence` (see `RealmChanges`).
    public func changes(keyPaths: [String]? = nil) -> RealmChanges<RealmCollectionChange<AnyRealmCollection<Element>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

extension Map {
    /// The map's changes as an `AsyncSequence` (see `RealmChanges`).
    public func changes(keyPaths: [String]? = nil) -> RealmChanges<RealmMapChange<Map<Key, Value>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

extension Object {
    /// The object's changes as an `AsyncSequence` (see `RealmChanges`); `keyPaths` as in
    /// `observe(keyPaths:on:_:)`.
    public func changes<T: ObjectBase>(keyPaths: [String]? = nil, as type: T.Type = T.self) -> RealmChanges<ObjectChange<T>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}
