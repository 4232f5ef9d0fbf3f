import Foundation

/// Values confined to the Realm (and so the thread) they were read from: objects and
/// collections (RealmSwift's `ThreadConfined`). Frozen ones may be read anywhere; live ones
/// move to another thread through `freeze()`/`thaw()` or a `ThreadSafeReference`.
public protocol ThreadConfined {
    /// The Realm of the value, or nil when it is unmanaged.
    var realm: Realm? { get }
    /// Whether the value can no longer be read (deleted, or its Realm invalidated).
    var isInvalidated: Bool { get }
    /// Whether the value belongs to a frozen Realm.
    var isFrozen: Bool { get }
    /// The value frozen at its Realm's current version.
    func freeze() -> Self
    /// The live value of a frozen one in the calling thread's Realm, or nil when it is gone.
    func thaw() -> Self?
}

extension ObjectBase: ThreadConfined {}
extension Map: ThreadConfined {}

/// A way to hand a live object or collection to another thread, task or actor: made on the
/// value's thread, resolved once with `Realm.resolve(_:)` on the other (RealmSwift's
/// `ThreadSafeReference`). The reference keeps the version it was made at pinned until it is
/// resolved or released; a Realm that resolves it is first moved to at least that version.
///
/// ```swift
/// let ref = ThreadSafeReference(to: person)
/// Thread {
///     let realm = try! Realm()
///     guard let person = realm.resolve(ref) else { return } // deleted meanwhile
///     try! realm.write { person.age += 1 }
/// }.start()
/// ```
public final class ThreadSafeReference<Confined: ThreadConfined>: @unchecked Sendable {
    private let lock = NSLock()
    /// The value frozen at the version the reference was made at; nil once resolved.
    private var frozen: (any ConfinedValue)?

    /// A reference to `value`, a managed object or collection of a live Realm, made on the
    /// value's thread (checked at run time). Traps for unmanaged values and inside a write
    /// transaction, as RealmSwift does.
    public init(to value: Confined) {
        guard let v = value as? any ConfinedValue, let core = v.confinedCore else {
            preconditionFailure("Cannot construct reference to unmanaged object, which can be passed across threads directly")
        }
        if core.isInWriteTransaction {
            preconditionFailure("Cannot obtain a ThreadSafeReference during a write transaction.")
        }
        frozen = value.freeze() as? any ConfinedValue
    }

    /// Whether the reference was resolved already (it resolves once).
    public var isInvalidated: Bool { lock.withLock { frozen == nil } }

    /// Takes the frozen value out (nil when it was taken already).
    fileprivate func take() -> (any ConfinedValue)? {
        lock.withLock {
            let f = frozen
            frozen = nil
            return f
        }
    }
}

extension Realm {
    /// The value `reference` refers to, read through this Realm (which must be of the same
    /// file; it is moved to the reference's version first when it is older), or nil when the
    /// object (or the object a collection hangs from) was deleted meanwhile. A reference
    /// resolves once: a second resolve traps with RealmSwift's message.
    public func resolve<Confined: ThreadConfined>(_ reference: ThreadSafeReference<Confined>) -> Confined? {
        core.verifyThread()
        guard let frozen = reference.take() else {
            preconditionFailure("Can only resolve a thread safe reference once.")
        }
        return ConfinedValues.resolve(frozen, in: core) as? Confined
    }
}

/// A property whose value is kept as a thread-safe reference: it may be set on one thread and
/// read on any other, each read giving the value in the reading thread's Realm (nil when it
/// was deleted). RealmSwift's `@ThreadSafe`. After a read the wrapper refers to the value at
/// the version it was read at, so it pins at most that version.
@propertyWrapper
public final class ThreadSafe<T: ThreadConfined>: @unchecked Sendable {
    private let lock = NSLock()
    private var frozen: (any ConfinedValue)?

    /// Wraps `wrappedValue` (nil, or a managed object or collection).
    public init(wrappedValue: T?) {
        frozen = ThreadSafe.capture(wrappedValue)
    }

    /// The value, read through the calling thread's Realm (checked at run time: the value
    /// belongs to that thread's Realm).
    public var wrappedValue: T? {
        get {
            lock.withLock {
                guard let f = frozen, let source = f.confinedCore else { return nil }
                let live = source.liveForCallingThread()
                guard let value = ConfinedValues.resolve(f, in: live) else {
                    frozen = nil
                    return nil
                }
                if !live.isInWriteTransaction, live.version > source.version {
                    frozen = ThreadSafe.capture(value as? T)
                }
                return value as? T
            }
        }
        set {
            let f = ThreadSafe.capture(newValue)
            lock.withLock { frozen = f }
        }
    }

    private static func capture(_ value: T?) -> (any ConfinedValue)? {
        guard let value else { return nil }
        guard let v = value as? any ConfinedValue, v.confinedCore != nil else {
            preconditionFailure("Cannot construct reference to unmanaged object, which can be passed across threads directly")
        }
        return value.freeze() as? any ConfinedValue
    }
}

/// What the references need of each confined type: its Realm and how to find it again in
/// another Realm of the same file.
protocol ConfinedValue {
    /// The Realm the value reads (nil when unmanaged).
    var confinedCore: RealmCore? { get }
    /// The value read through `core`, or nil when its object does not exist there.
    func resolved(in core: RealmCore) -> Self?
}

enum ConfinedValues {
    /// `frozen` resolved in `core` after moving `core` up to its version when it is older.
    static func resolve(_ frozen: any ConfinedValue, in core: RealmCore) -> (any ConfinedValue)? {
        guard let source = frozen.confinedCore else { return nil }
        if source.config.path != core.config.path {
            preconditionFailure("Cannot resolve thread safe reference in Realm with different configuration than the source Realm.")
        }
        if source.version > core.version && !core.isInWriteTransaction { core.refresh() }
        return frozen.resolved(in: core)
    }
}

extension ObjectBase: ConfinedValue {
    var confinedCore: RealmCore? { core }
    func resolved(in core: RealmCore) -> Self? { core.resolveExisting(self) as? Self }
}

extension Results: ConfinedValue {
    var confinedCore: RealmCore? { base.realmCore }
    func resolved(in core: RealmCore) -> Results? { core.resolveExisting(base).map { Results(base: $0) } }
}

extension LinkingObjects: ConfinedValue {
    var confinedCore: RealmCore? { base?.realmCore }
    func resolved(in core: RealmCore) -> LinkingObjects? {
        guard let base else { return self }
        return core.resolveExisting(base).map { LinkingObjects(propertyName: propertyName, base: $0) }
    }
}

extension List: ConfinedValue {
    var confinedCore: RealmCore? { managed?.owner.core }
    func resolved(in core: RealmCore) -> List? {
        guard let managed else { return self }
        return core.resolveExisting(managed).map { List(managed: $0) }
    }
}

extension MutableSet: ConfinedValue {
    var confinedCore: RealmCore? { managed?.owner.core }
    func resolved(in core: RealmCore) -> MutableSet? {
        guard let managed else { return self }
        return core.resolveExisting(managed).map { MutableSet(managed: $0) }
    }
}

extension Map: ConfinedValue {
    var confinedCore: RealmCore? { managed?.owner.core }
    func resolved(in core: RealmCore) -> Map? {
        guard let managed else { return self }
        return core.resolveExisting(managed).map { Map(managed: $0) }
    }
}

extension AnyRealmCollection: ConfinedValue {
    var confinedCore: RealmCore? { (base as? any ConfinedValue)?.confinedCore }
    func resolved(in core: RealmCore) -> AnyRealmCollection? { resolveOf(core) }
}
