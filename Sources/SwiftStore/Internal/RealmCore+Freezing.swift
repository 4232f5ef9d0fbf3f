import CStore
import Foundation

/// Moving objects and collections between a live Realm and a frozen one (freeze, thaw) and
/// between threads (ThreadSafeReference): each is found again by table and object key in the
/// target Realm (docs/ARCHITECTURE.md, Frozen snapshots).
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

    /// `object` (an accessor of this file, maybe read through another instance) read through
    /// this instance, or nil when the object does not exist at this instance's version.
    func resolveExisting(_ object: ObjectBase) -> ObjectBase? {
        guard let source = object.info, let found = info(named: source.objectSchema.className) else { return nil }
        let target = object.isDynamic ? dynamicInfo(found) : found
        let o = self.object(target, key: object.cobj.key)
        var exists = false
        if cs_obj_check_exists(&o.cobj, &exists) != 0 || !exists { return nil }
        return o
    }

    /// A managed collection read through this instance, or nil when its owner does not exist
    /// at this instance's version.
    func resolveExisting(_ m: ManagedCollection) -> ManagedCollection? {
        if m.owner.core === self { return m }
        return resolveExisting(m.owner).map { m.rebased(onto: $0) }
    }

    /// Results (of a table, backlinks or a collection) read through this instance, or nil when
    /// the object they hang from does not exist at this instance's version.
    func resolveExisting(_ base: ResultsBase) -> ResultsBase? {
        if base.realmCore === self { return base }
        let root: ResultsBase.Root
        switch base.root {
        case .table(let info):
            guard let found = self.info(named: info.objectSchema.className) else { return nil }
            root = .table(info.objectSchema.objectClass == DynamicObject.self ? dynamicInfo(found) : found)
        case .backlinks(let owner, let t, let c, let info):
            guard let o = resolveExisting(owner), let found = self.info(named: info.objectSchema.className) else { return nil }
            root = .backlinks(o, t, c, found)
        case .collection(let m, let info):
            guard let moved = resolveExisting(m) else { return nil }
            var target: ClassInfo?
            if let info {
                guard let found = self.info(named: info.objectSchema.className) else { return nil }
                target = info.objectSchema.objectClass == DynamicObject.self ? dynamicInfo(found) : found
            }
            root = .collection(moved, target)
        case .detached:
            root = .detached
        }
        return ResultsBase(core: self, root: root, predicates: base.predicates, clauses: base.clauses)
    }
}
