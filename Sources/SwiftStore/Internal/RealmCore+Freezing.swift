import CStore
import Foundation

/// Moving objects and collections between a live Realm and a frozen one (freeze, thaw), between
/// threads (ThreadSafeReference), and to the Realm a queue observer's notifications are
/// delivered through: each is described by an address that belongs to no Realm (its class, its
/// object key, its column and nesting steps, its query) and found again through that address in
/// the target Realm (docs/ARCHITECTURE.md, Frozen snapshots).
extension RealmCore {
    /// The calling thread's live instance of this file (the target of `thaw`).
    func liveForCallingThread() -> RealmCore {
        if !isFrozen && isOnOwnerThread { return self }
        do {
            return try RealmCore.open(config, queue: nil)
        } catch {
            preconditionFailure("Opening the Realm at '\(config.path)' to thaw into failed: \(error)")
        }
    }

    /// The class `address` names, as this instance reads it (nil when its schema lacks it).
    func info(at address: ClassAddress) -> ClassInfo? {
        guard let found = info(named: address.className) else { return nil }
        return address.isDynamic ? dynamicInfo(found) : found
    }

    /// An accessor of the object at `address` (not checked for existence: one of an object
    /// deleted meanwhile reads as invalidated), or nil when this instance's schema lacks its class.
    func object(at address: ObjectAddress) -> ObjectBase? {
        info(at: address.type).map { object($0, key: address.key) }
    }

    /// The object at `address`, or nil when it does not exist at this instance's version.
    func existingObject(at address: ObjectAddress) -> ObjectBase? {
        guard let o = object(at: address) else { return nil }
        var exists = false
        if cs_obj_check_exists(&o.cobj, &exists) != 0 || !exists { return nil }
        return o
    }

    /// The collection at `address`; with `existing`, nil when its owner does not exist at this
    /// instance's version (otherwise one of a deleted owner reads as invalidated).
    func collection(at address: CollectionAddress, existing: Bool) -> ManagedCollection? {
        guard let owner = existing ? existingObject(at: address.owner) : object(at: address.owner) else { return nil }
        return ManagedCollection(owner: owner, path: address.path)
    }

    /// The results at `address`; with `existing`, nil when the object they hang from does not
    /// exist at this instance's version.
    func results(at address: ResultsAddress, existing: Bool) -> ResultsBase? {
        let root: ResultsBase.Root
        switch address.root {
        case .table(let c):
            guard let info = info(at: c) else { return nil }
            root = .table(info)
        case .backlinks(let owner, let t, let col, let c):
            guard let o = existing ? existingObject(at: owner) : object(at: owner), let info = info(at: c) else { return nil }
            root = .backlinks(o, t, col, info)
        case .collection(let m, let c):
            guard let moved = collection(at: m, existing: existing) else { return nil }
            var target: ClassInfo?
            if let c {
                guard let info = info(at: c) else { return nil }
                target = info
            }
            root = .collection(moved, target)
        case .detached:
            root = .detached
        }
        return ResultsBase(core: self, root: root, predicates: address.predicates, clauses: address.clauses)
    }

    /// `object` (an accessor of this file, maybe read through another instance) read through
    /// this instance, or nil when the object does not exist at this instance's version.
    func resolveExisting(_ object: ObjectBase) -> ObjectBase? {
        guard object.info != nil else { return nil }
        return existingObject(at: ObjectAddress(object))
    }

    /// A managed collection read through this instance, or nil when its owner does not exist
    /// at this instance's version.
    func resolveExisting(_ m: ManagedCollection) -> ManagedCollection? {
        if m.owner.core === self { return m }
        return collection(at: CollectionAddress(m), existing: true)
    }

    /// Results (of a table, backlinks or a collection) read through this instance, or nil when
    /// the object they hang from does not exist at this instance's version.
    func resolveExisting(_ base: ResultsBase) -> ResultsBase? {
        if base.realmCore === self { return base }
        return results(at: ResultsAddress(base), existing: true)
    }
}

/// A class of a file's schema, by name (and whether it is read through the dynamic API).
struct ClassAddress: @unchecked Sendable {
    let className: String
    let isDynamic: Bool

    init(_ info: ClassInfo) {
        className = info.objectSchema.className
        isDynamic = info.objectSchema.objectClass == DynamicObject.self
    }
}

/// A managed object by class and object key: what finds it again in any Realm of its file,
/// holding neither its accessor nor its Realm.
struct ObjectAddress: @unchecked Sendable {
    let type: ClassAddress
    let key: Int64

    /// The address of `object`, a managed object.
    init(_ object: ObjectBase) {
        type = ClassAddress(object.info!)
        key = object.cobj.key
    }
}

/// A managed List, MutableSet or Map (or a collection nested in an AnyRealmValue) by its
/// owner's address, its column and its nesting steps.
struct CollectionAddress: @unchecked Sendable {
    let owner: ObjectAddress
    let path: ManagedCollection.Path

    init(_ m: ManagedCollection) {
        owner = ObjectAddress(m.owner)
        path = m.path
    }
}

/// Results by their root's address, their predicates (whose arguments hold no accessor and no
/// Realm: `ResultsBase.adding` replaced every object in them by its link) and their sorts and
/// distincts.
struct ResultsAddress: @unchecked Sendable {
    enum Root {
        case table(ClassAddress)
        case backlinks(ObjectAddress, UInt32, UInt32, ClassAddress)
        case collection(CollectionAddress, ClassAddress?)
        case detached
    }

    let root: Root
    let predicates: [(String, [Any])]
    let clauses: [ResultsBase.Clause]

    init(_ base: ResultsBase) {
        switch base.root {
        case .table(let info): root = .table(ClassAddress(info))
        case .backlinks(let owner, let t, let c, let info): root = .backlinks(ObjectAddress(owner), t, c, ClassAddress(info))
        case .collection(let m, let info): root = .collection(CollectionAddress(m), info.map(ClassAddress.init))
        case .detached: root = .detached
        }
        // (the arguments were detached when the predicates were added, `ResultsBase.adding`: a
        // large collection argument is not read again for each address)
        predicates = base.predicates
        clauses = base.clauses
    }
}

/// A predicate argument that was a managed object: the link to it (`QueryArguments` makes it
/// the same link value), which belongs to no Realm.
struct LinkArgument: @unchecked Sendable {
    let table: UInt32
    let key: Int64

    /// `arg` with every managed object in it (itself, an optional's value, an AnyRealmValue's
    /// object, a projection's object, the elements of any collection `QueryArguments` takes as a list: an array, a Set,
    /// a slice, a Realm collection of any kind) replaced by its link, so that it holds no
    /// accessor and no Realm. It follows `QueryArguments`' own order: what that converts as one
    /// value (a string, data, any stored value type) is kept as it is, and a collection is what
    /// `CollectionDescription.elements(of:)` reads as one, element by element.
    static func detaching(_ arg: Any) -> Any {
        if let opt = arg as? any AnyOptional {
            guard let wrapped = opt.wrappedAny else { return arg }
            return detaching(wrapped)
        }
        switch arg {
        case let o as ObjectBase:
            return link(to: o) ?? arg
        case let v as AnyRealmValue:
            switch v {
            case .object(let o):
                return link(to: o) ?? arg
            case .list, .dictionary:
                // A nested collection is read as null by a query (`QueryArguments`): kept as the
                // null it is, not as the collection, whose accessor holds its Realm (and would
                // be read on another thread).
                return AnyRealmValue.none
            default:
                return arg
            }
        case let p as any ProjectionObservable:
            // (a projection is converted as its object: `_rlmEncode()` encodes it as its link)
            return link(to: p.rootObject) ?? arg
        case is String, is Substring, is Data, is NSNumber, is any _StorableValue:
            return arg
        default:
            return CollectionDescription.elements(of: arg).map { $0.map(detaching) } ?? arg
        }
    }

    /// The link to `o` when it is a managed object that was not deleted (others are kept as
    /// they are: `QueryArguments` refuses them as before).
    private static func link(to o: ObjectBase) -> LinkArgument? {
        guard o.core != nil, !o.isInvalidated, let info = o.info else { return nil }
        return LinkArgument(table: info.table, key: o.cobj.key)
    }
}
