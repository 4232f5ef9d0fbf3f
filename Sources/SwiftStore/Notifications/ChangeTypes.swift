import Foundation

/// A registration for change notifications (RealmSwift's `NotificationToken`): keep it as long
/// as you want the block called; `invalidate()` (or releasing the token) stops delivery at once,
/// also from inside the block.
open class NotificationToken: @unchecked Sendable {
    private let lock = NSLock()
    private var stop: (() -> Void)?
    /// The observer this token stops (for `write(withoutNotifying:)`).
    var registration: Registration?

    init(_ stop: @escaping () -> Void) {
        self.stop = stop
    }

    /// A token that stops nothing (for observers that were never registered).
    public init() {}

    /// Stops the notifications: no block of this registration runs after this returns, even
    /// one already scheduled.
    open func invalidate() {
        lock.lock()
        let s = stop
        stop = nil
        // (the token keeps nothing of its observer once stopped: the observer, its block and the
        // Realm the block reads go with the notifier's last reference, on the observer's own
        // thread; docs/ARCHITECTURE.md, Change notifications)
        let r = registration
        registration = nil
        lock.unlock()
        s?()
        withExtendedLifetime(r) {}
    }

    deinit {
        invalidate()
    }
}

/// What changed in an observed collection (RealmSwift's `RealmCollectionChange`).
///
/// Deletions and modifications are positions in the collection as the previous notification
/// showed it, insertions positions in the collection now, each sorted ascending. A moved
/// element is a deletion and an insertion.
public enum RealmCollectionChange<CollectionType> {
    /// The first notification: the collection as it is when the query first ran.
    case initial(CollectionType)
    /// A later notification with what changed since the previous one.
    case update(CollectionType, deletions: [Int], insertions: [Int], modifications: [Int])
    /// Delivery failed (kept for RealmSwift compatibility; SwiftStore does not report errors
    /// this way).
    case error(Error)
}

/// What changed in an observed map (RealmSwift's `RealmMapChange`), by key.
public enum RealmMapChange<Collection: RealmKeyedCollection> {
    /// The first notification.
    case initial(Collection)
    /// Keys removed, added and whose values changed since the previous notification.
    case update(Collection, deletions: [Collection.Key], insertions: [Collection.Key], modifications: [Collection.Key])
    /// Delivery failed (kept for RealmSwift compatibility).
    case error(Error)
}

/// One property of an observed object that changed (RealmSwift's `PropertyChange`).
public struct PropertyChange: @unchecked Sendable {
    /// The property's name.
    public let name: String
    /// The value before the change: nil when the change was written through the Realm the
    /// observer was registered on (that Realm already read the new value), as in RealmSwift.
    public let oldValue: Any?
    /// The value after the change.
    public let newValue: Any?
}

/// What happened to an observed object (RealmSwift's `ObjectChange`).
public enum ObjectChange<T> {
    /// Delivery failed (kept for RealmSwift compatibility).
    case error(_ error: NSError)
    /// One or more properties changed.
    case change(T, [PropertyChange])
    /// The object was deleted.
    case deleted
}

extension Realm {
    /// What a Realm observer is told (RealmSwift's `Realm.Notification`).
    public enum Notification: String, Sendable {
        /// The Realm moved to a newer version (a local commit, or autorefresh or refresh()
        /// after another thread's or process's commit).
        case didChange = "RLMRealmDidChangeNotification"
        /// A newer version exists but the Realm does not move by itself (autorefresh is off).
        case refreshRequired = "RLMRealmRefreshRequiredNotification"
    }

    /// A block called with a Realm notification and the Realm.
    public typealias NotificationBlock = (_ notification: Notification, _ realm: Realm) -> Void
}
