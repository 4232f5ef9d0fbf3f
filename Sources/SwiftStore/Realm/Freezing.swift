import Foundation

// Frozen snapshots (docs/ARCHITECTURE.md, Frozen snapshots). A frozen Realm reads one version
// for as long as a frozen value uses it: one instance per file and version, shared by every
// frozen object and collection of that version and released with the last of them. It is
// confined to no thread: any thread or task may read it, at the same time as others. Writing
// to it, or observing it, stops the program with RealmSwift's messages.

extension Realm {
    /// A frozen snapshot of this Realm at the version it reads now (itself when frozen).
    /// Frozen Realms count against `Configuration.maximumNumberOfActiveVersions` while in use.
    /// Traps inside a write transaction.
    public func freeze() -> Realm {
        Realm(core: core.frozen())
    }

    /// The calling thread's live Realm of this file (itself when it is live and this thread's).
    public func thaw() -> Realm {
        Realm(core: core.liveForCallingThread())
    }

    /// `obj` frozen at this Realm's version (`obj` must belong to this Realm).
    public func freeze<T: ObjectBase>(_ obj: T) -> T {
        obj.freeze()
    }

    /// The live counterpart of a frozen object in the calling thread's Realm, or nil when the
    /// object no longer exists there.
    public func thaw<T: ObjectBase>(_ obj: T) -> T? {
        obj.thaw()
    }

    /// `collection` frozen at this Realm's version.
    public func freeze<Collection: RealmCollection>(_ collection: Collection) -> Collection {
        collection.freeze()
    }
}

extension ObjectBase {
    /// Whether the object belongs to a frozen Realm (false for unmanaged objects).
    public var isFrozen: Bool { core?.isFrozen ?? false }

    /// A frozen copy of this object at its Realm's current version (itself when frozen). The
    /// copy never changes, still reads its values after the object is deleted, and may be read
    /// from any thread. Traps for unmanaged, deleted or invalidated objects, and on the wrong
    /// thread (run-time check).
    public func freeze() -> Self {
        guard let core else { preconditionFailure("Unmanaged objects cannot be frozen.") }
        if core.isFrozen { return self }
        _ = verifyReadable()
        guard let frozen = core.frozen().resolveExisting(self) as? Self else { ObjectBase.deleted() }
        return frozen
    }

    /// The live object of a frozen one, in the calling thread's Realm, or nil when the object
    /// was deleted (or does not exist yet at that Realm's version). A live object gives itself.
    public func thaw() -> Self? {
        guard let core else { preconditionFailure("Unmanaged objects cannot be thawed.") }
        if !core.isFrozen { return self }
        return core.liveForCallingThread().resolveExisting(self) as? Self
    }
}

extension Results {
    /// Whether the results belong to a frozen Realm.
    public var isFrozen: Bool { base.realmCore?.isFrozen ?? false }

    /// These results (their query, sorts and distinct keys) frozen at the Realm's current
    /// version (themselves when frozen). Filters, sorts and aggregates of frozen results
    /// answer at that version.
    public func freeze() -> Results {
        guard let core = base.realmCore, !core.isFrozen else { return self }
        core.verifyThread()
        guard let frozen = core.frozen().resolveExisting(base) else { ObjectBase.deleted() }
        return Results(base: frozen)
    }

    /// The live results of frozen ones in the calling thread's Realm (the same query), or nil
    /// when the object they hang from was deleted.
    public func thaw() -> Results? {
        guard let core = base.realmCore, core.isFrozen else { return self }
        return core.liveForCallingThread().resolveExisting(base).map { Results(base: $0) }
    }
}

extension LinkingObjects {
    /// Whether the linking objects belong to a frozen Realm.
    public var isFrozen: Bool { base?.realmCore?.isFrozen ?? false }

    /// The linking objects frozen at the Realm's current version (themselves when frozen or
    /// unmanaged).
    public func freeze() -> LinkingObjects {
        guard let base, let core = base.realmCore, !core.isFrozen else { return self }
        core.verifyThread()
        guard let frozen = core.frozen().resolveExisting(base) else { ObjectBase.deleted() }
        return LinkingObjects(propertyName: propertyName, base: frozen)
    }

    /// The live linking objects of frozen ones in the calling thread's Realm, or nil when
    /// their object was deleted.
    public func thaw() -> LinkingObjects? {
        guard let base, let core = base.realmCore, core.isFrozen else { return self }
        return core.liveForCallingThread().resolveExisting(base).map { LinkingObjects(propertyName: propertyName, base: $0) }
    }
}

extension ManagedCollection {
    /// This collection frozen at its Realm's current version (itself when frozen).
    func frozen() -> ManagedCollection {
        let core = owner.core!
        if core.isFrozen { return self }
        _ = owner.verifyReadable()
        guard let frozen = core.frozen().resolveExisting(self) else { ObjectBase.deleted() }
        return frozen
    }

    /// This collection in the calling thread's live Realm, or nil when its owner was deleted.
    func thawed() -> ManagedCollection? {
        let core = owner.core!
        if !core.isFrozen { return self }
        return core.liveForCallingThread().resolveExisting(self)
    }
}

extension List {
    /// Whether the list belongs to a frozen Realm (false when unmanaged).
    public var isFrozen: Bool { managed?.owner.isFrozen ?? false }

    /// The list frozen at its Realm's current version (itself when frozen). Traps for an
    /// unmanaged list.
    public func freeze() -> List {
        guard let managed else { preconditionFailure("This collection is not managed by a Realm and cannot be frozen.") }
        let f = managed.frozen()
        return f === managed ? self : List(managed: f)
    }

    /// The live list of a frozen one in the calling thread's Realm, or nil when its object was
    /// deleted.
    public func thaw() -> List? {
        guard let managed else { preconditionFailure("This collection is not managed by a Realm and cannot be thawed.") }
        guard let t = managed.thawed() else { return nil }
        return t === managed ? self : List(managed: t)
    }
}

extension MutableSet {
    /// Whether the set belongs to a frozen Realm (false when unmanaged).
    public var isFrozen: Bool { managed?.owner.isFrozen ?? false }

    /// The set frozen at its Realm's current version (itself when frozen). Traps for an
    /// unmanaged set.
    public func freeze() -> MutableSet {
        guard let managed else { preconditionFailure("This collection is not managed by a Realm and cannot be frozen.") }
        let f = managed.frozen()
        return f === managed ? self : MutableSet(managed: f)
    }

    /// The live set of a frozen one in the calling thread's Realm, or nil when its object was
    /// deleted.
    public func thaw() -> MutableSet? {
        guard let managed else { preconditionFailure("This collection is not managed by a Realm and cannot be thawed.") }
        guard let t = managed.thawed() else { return nil }
        return t === managed ? self : MutableSet(managed: t)
    }
}

extension Map {
    /// Whether the map belongs to a frozen Realm (false when unmanaged).
    public var isFrozen: Bool { managed?.owner.isFrozen ?? false }

    /// The map frozen at its Realm's current version (itself when frozen). Traps for an
    /// unmanaged map.
    public func freeze() -> Map {
        guard let managed else { preconditionFailure("This collection is not managed by a Realm and cannot be frozen.") }
        let f = managed.frozen()
        return f === managed ? self : Map(managed: f)
    }

    /// The live map of a frozen one in the calling thread's Realm, or nil when its object was
    /// deleted.
    public func thaw() -> Map? {
        guard let managed else { preconditionFailure("This collection is not managed by a Realm and cannot be thawed.") }
        guard let t = managed.thawed() else { return nil }
        return t === managed ? self : Map(managed: t)
    }
}
