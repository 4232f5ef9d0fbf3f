import Dispatch
import Foundation

/// Registration helpers shared by every observable (docs/ARCHITECTURE.md, Change
/// notifications): checks, key paths into the core's form, and the watch constructors.
enum Observation {
    /// RealmSwift's checks before registering a block on `core`'s data.
    static func check(_ core: RealmCore, queue: DispatchQueue?) {
        checkNotFrozen(core)
        core.verifyThread()
        if core.isInWriteTransaction {
            preconditionFailure("Cannot register notification blocks from within write transactions.")
        }
        // an actor-isolated Realm delivers on its actor, a queue-confined one on its queue; a
        // thread's Realm needs its run loop
        if queue == nil && core.actor == nil && core.queue == nil && !Thread.isMainThread
            && RunLoop.current.currentMode == nil {
            preconditionFailure("Can only add notification blocks from within runloops.")
        }
    }

    /// Frozen data never changes, so observing it is RealmSwift's error.
    static func checkNotFrozen(_ core: RealmCore) {
        if core.isFrozen { preconditionFailure("Frozen Realms do not change and do not have change notifications.") }
    }

    /// String key paths ("toys", "toys.brand") as column paths from `root`'s table; traps with
    /// RealmSwift's invalid-argument message for a name that is not a property.
    static func keyPaths(_ paths: [String]?, root: ClassInfo?) -> [[UInt32]] {
        guard let paths, !paths.isEmpty else { return [] }
        guard let root else {
            preconditionFailure("Invalid argument: key paths can only be given for collections of objects")
        }
        return paths.map { path in
            var info = root
            var cols: [UInt32] = []
            let parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            for (i, name) in parts.enumerated() {
                guard let idx = info.objectSchema.byName[name] else {
                    preconditionFailure("Invalid argument: Property '\(name)' not found in object of type '\(info.objectSchema.className)'"
                                        + " (key path '\(path)')")
                }
                // a LinkingObjects property stands for its backlink column, which leads to the
                // origin class as a link leads to its target
                guard let col = info.keyPathColumn(named: name) else {
                    preconditionFailure("Invalid argument: Property '\(name)' not found in object of type '\(info.objectSchema.className)'")
                }
                cols.append(col)
                if i + 1 < parts.count {
                    guard let next = info.targets[idx] else {
                        preconditionFailure("Invalid argument: Property '\(name)' of object of type '\(info.objectSchema.className)'"
                                            + " is not a link (key path '\(path)')")
                    }
                    info = next
                }
            }
            if cols.count > NotifierCore.maxKeyPathDepth {
                preconditionFailure("Invalid argument: key path '\(path)' is deeper than \(NotifierCore.maxKeyPathDepth) properties")
            }
            return cols
        }
    }

    /// Swift key paths as their dotted names.
    static func names<Root: ObjectBase>(_ keyPaths: [PartialKeyPath<Root>]) -> [String] {
        keyPaths.map { KeyPathTracer.name(for: $0) }
    }

    /// A watch over a Results' query, backlinks or collection.
    static func makeWatch(_ base: ResultsBase, paths: [[UInt32]]) -> (NotifierCore) -> NotifierCore.Watch? {
        switch base.root {
        case .table(let info):
            return NotifierCore.queryWatchMaker(base, table: info.table, paths: paths)
        case .backlinks(let owner, let table, let col, _) where base.isPlain:
            let (t, k) = (owner.info!.table, owner.objectKey)
            return { $0.watchBacklinks(table: t, key: k, originTable: table, originColumn: col, paths: paths) }
        case .collection(let c, _) where base.isPlain:
            return collectionWatch(c, paths: paths)
        case .backlinks(let owner, let table, let col, let info):
            // a query over backlinks: the backlinks' own watch, translated (DerivedChanges)
            let (t, k) = (owner.info!.table, owner.objectKey)
            let p = derivedPaths(paths, info)
            return NotifierCore.dependingOnQuery(base) {
                $0.watchBacklinks(table: t, key: k, originTable: table, originColumn: col, paths: p)
            }
        case .collection(let c, let info):
            // a query over a List, MutableSet or Map, of objects or of values, or over a list or
            // dictionary held in an AnyRealmValue: the collection's own watch, translated
            // (DerivedChanges; a Map's by key first). A nested collection's watch compares
            // content and takes no key paths (its elements are values of no class).
            // The watch also reports what the filter and sort read of the elements, through links
            // and backlinks (another object linking one of them, say), which may change the
            // results while the collection stays as it was.
            if c.isNested { return collectionWatch(c, paths: []) }
            return NotifierCore.dependingOnQuery(base, collectionWatch(c, paths: info.map { derivedPaths(paths, $0) } ?? paths))
        case .detached:
            preconditionFailure("Only collections which are managed by a Realm support change notifications")
        }
    }

    /// The key paths of the source collection's watch behind a query over it: the given ones,
    /// which decide the modifications (or none, deep, when none were given). What the query's
    /// filter and sort read is the watch's dependency (`NotifierCore.dependingOnQuery`), which
    /// makes no element modified. (Before, every property of the elements was added here, so a
    /// write of one outside the key paths was reported as a modification.)
    static func derivedPaths(_ paths: [[UInt32]], _ info: ClassInfo) -> [[UInt32]] {
        paths
    }

    /// Whether `base` is a query over a List, MutableSet or LinkingObjects, whose watch reports
    /// changes of the source collection (DerivedChanges translates them).
    static func isDerived(_ base: ResultsBase) -> Bool {
        switch base.root {
        case .backlinks, .collection: return !base.isPlain
        default: return false
        }
    }

    /// Whether `base` is, or is a query over, a collection nested in an AnyRealmValue.
    static func isNested(_ base: ResultsBase) -> Bool {
        if case .collection(let c, _) = base.root { return c.isNested }
        return false
    }

    static func collectionWatch(_ c: ManagedCollection, paths: [[UInt32]]) -> (NotifierCore) -> NotifierCore.Watch? {
        // a collection nested in an AnyRealmValue: compared by content (no key paths: its
        // elements are values of no class)
        if c.isNested { return { $0.watchNested(c) } }
        let (t, k, col) = (c.owner.info!.table, c.owner.objectKey, c.col)
        return { $0.watchCollection(table: t, key: k, col: col, paths: paths) }
    }

    /// The object at `address` as `core` reads it (not checked for existence).
    static func object(at address: ObjectAddress, in core: RealmCore) -> ObjectBase {
        guard let o = core.object(at: address) else { missingClass(address.type, core) }
        return o
    }

    /// The collection at `address` as `core` reads it (one of a deleted owner reads as
    /// invalidated).
    static func collection(at address: CollectionAddress, in core: RealmCore) -> ManagedCollection {
        guard let m = core.collection(at: address, existing: false) else { missingClass(address.owner.type, core) }
        return m
    }

    private static func missingClass(_ c: ClassAddress, _ core: RealmCore) -> Never {
        preconditionFailure("The class '\(c.className)' of an observed value is not in the schema of '\(core.config.path)'")
    }

    /// What a collection observer keeps of the registering results, to read them through the
    /// delivering Realm (docs/ARCHITECTURE.md, Change notifications, "Where Realms, targets and
    /// observers are let go"): a run loop's or an actor's observer is delivered through the
    /// registering Realm and keeps the results themselves; a queue's keeps their address, which
    /// belongs to no Realm, and finds them again in the queue's Realm at each delivery, so that
    /// it holds nothing of the registering Realm once registered.
    ///
    /// A queue's observer keeps the results it found last, with the Realm and the invalidation
    /// generation it found them in, and hands them out again while the queue's Realm is that
    /// one: results follow their Realm from version to version, so their query is parsed once
    /// per queue Realm (before, each delivery made new results and parsed the query again,
    /// a query over a List included).
    final class DeliveredResults: @unchecked Sendable {
        private let base: ResultsBase?
        private let address: ResultsAddress?
        /// The results last resolved and the generation of their Realm then (used by the
        /// delivering queue only, one delivery at a time).
        private var last: ResultsBase?
        private var lastGeneration: UInt64 = 0

        init(_ base: ResultsBase, queue: DispatchQueue?) {
            self.base = queue == nil ? base : nil
            address = queue == nil ? nil : ResultsAddress(base)
        }

        func resolved(in core: RealmCore) -> ResultsBase {
            if let base, base.core === core { return base }
            if let last, last.realmCore === core, lastGeneration == core.generation { return last }
            let a = address ?? ResultsAddress(base!)
            guard let r = core.results(at: a, existing: false) else {
                preconditionFailure("The class of observed results is not in the schema of '\(core.config.path)'")
            }
            last = r
            lastGeneration = core.generation
            return r
        }
    }

    /// How a List's, MutableSet's or Map's observer reads the collection through the delivering
    /// Realm: a run loop's or an actor's observer gives the registering collection itself; a
    /// queue's keeps only the collection's address and finds it again in the queue's Realm
    /// (`DeliveredResults`).
    static func delivered<C: AnyObject>(_ value: C, _ managed: ManagedCollection, queue: DispatchQueue?,
                                        _ make: @escaping (ManagedCollection) -> C) -> (RealmCore) -> C {
        if queue == nil { return { _ in value } }
        let address = CollectionAddress(managed)
        return { core in make(Observation.collection(at: address, in: core)) }
    }

    /// Registers a collection observer whose block gets `make(core)` and the payload.
    /// `onNotifierThread`: a query's or a collection's watch, made (its initial query run, its
    /// collection read) on the notifier thread (docs/ARCHITECTURE.md, Change notifications).
    static func register(core: RealmCore, queue: DispatchQueue?, watch: @escaping (NotifierCore) -> NotifierCore.Watch?,
                         onNotifierThread: Bool = false, rebases: Bool = false,
                         _ deliver: @escaping (RealmCore, ChangePayload) -> Void) -> NotificationToken {
        check(core, queue: queue)
        let n = FileNotifier.acquire(core.config)
        return n.register(core: core, queue: queue, makeWatch: watch, onNotifierThread: onNotifierThread,
                          rebases: rebases, callback: deliver)
    }

    /// Registers an observer of `base`'s results: its block gets the delivering Realm, `base`
    /// read through it, and the change set in positions of the results (for a query over a
    /// collection, translated from the collection's change set by DerivedChanges).
    static func register(_ base: ResultsBase, paths: [[UInt32]], queue: DispatchQueue?,
                         _ deliver: @escaping (RealmCore, ResultsBase, ChangePayload) -> Void) -> NotificationToken {
        let watch = makeWatch(base, paths: paths)
        // every watch but a nested collection's (made from the registering thread's accessor)
        // is made on the notifier thread
        let onNotifierThread = !isNested(base)
        let delivered = DeliveredResults(base, queue: queue)
        guard isDerived(base) else {
            return register(core: base.core, queue: queue, watch: watch, onNotifierThread: onNotifierThread) { core, p in
                let resolved = delivered.resolved(in: core)
                if let keys = p.keys { resolved.adoptKeys(keys, version: p.version) }
                deliver(core, resolved, p)
            }
        }
        let derived = DerivedChanges()
        return register(core: base.core, queue: queue, watch: watch, onNotifierThread: onNotifierThread,
                        rebases: true) { core, p in
            // (a change set held back by a write that skipped this observer, and the rebase
            // behind it, are read at their own versions, frozen: docs/ARCHITECTURE.md, Change
            // notifications)
            let source = p.at.map { delivered.resolved(in: $0) }
            let resolved = delivered.resolved(in: core)
            if p.rebase {
                derived.rebase(source ?? resolved)
                return
            }
            if let q = derived.translate(source ?? resolved, p) { deliver(core, resolved, q) }
        }
    }
}

extension RealmCollectionChange {
    static func from(_ p: ChangePayload, _ c: CollectionType) -> RealmCollectionChange {
        p.initial ? .initial(c) : .update(c, deletions: p.deletions, insertions: p.insertions, modifications: p.modifications)
    }
}

// MARK: - Results

extension Results {
    /// Calls `block` with the results now (`.initial`, asynchronously) and after every commit
    /// that changes them (`.update` with the positions deleted, inserted and modified).
    ///
    /// - Parameters:
    ///   - keyPaths: the properties whose changes count as modifications ("name",
    ///     "toys.brand"); nil: every property, and the properties of linked objects to a
    ///     depth of 4 (docs/ARCHITECTURE.md, Change notifications). Insertions and deletions
    ///     are reported whatever the key paths.
    ///   - queue: a serial queue to call `block` on (with results of a Realm confined to it);
    ///     nil: the registering thread's run loop (the Realm's queue for a Realm confined to one).
    /// - Returns: a token; notifications stop when it is invalidated or released.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<Results<Element>>) -> Void) -> NotificationToken {
        let base = self.base
        return Observation.register(base, paths: Observation.keyPaths(keyPaths, root: base.info), queue: queue) { _, b, p in
            block(.from(p, Results(base: b)))
        }
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths (`\Dog.name`).
    public func observe(keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<Results<Element>>) -> Void) -> NotificationToken
        where Element: ObjectBase {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }
}

// MARK: - LinkingObjects

extension LinkingObjects {
    /// Calls `block` with the linking objects now and after every change to them (an owner
    /// that unlinks is a deletion). See `Results.observe(keyPaths:on:_:)`.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<LinkingObjects<Element>>) -> Void) -> NotificationToken {
        guard let base else { preconditionFailure("Only collections which are managed by a Realm support change notifications") }
        let name = propertyName
        return Observation.register(base, paths: Observation.keyPaths(keyPaths, root: base.info), queue: queue) { _, b, p in
            block(.from(p, LinkingObjects(propertyName: name, base: b)))
        }
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<LinkingObjects<Element>>) -> Void) -> NotificationToken {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }
}

// MARK: - List and MutableSet

extension List {
    /// Calls `block` with the list now and after every change to it: insertions, deletions,
    /// replaced elements (modifications), moves (a deletion and an insertion), and changes to
    /// the objects it holds per `keyPaths`. See `Results.observe(keyPaths:on:_:)`.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<List<Element>>) -> Void) -> NotificationToken {
        guard let managed else { preconditionFailure("Only collections which are managed by a Realm support change notifications") }
        let root = managed.owner.info?.target(column: managed.col)
        let watch = Observation.collectionWatch(managed, paths: Observation.keyPaths(keyPaths, root: root))
        let delivered = Observation.delivered(self, managed, queue: queue) { List(managed: $0) }
        return Observation.register(core: managed.core, queue: queue, watch: watch,
                                    onNotifierThread: !managed.isNested) { core, p in
            let list = delivered(core)
            block(.from(p, list))
        }
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<List<Element>>) -> Void) -> NotificationToken
        where Element: ObjectBase {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }
}

extension MutableSet {
    /// Calls `block` with the set now and after every change to it (positions in the set's
    /// order). See `Results.observe(keyPaths:on:_:)`.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<MutableSet<Element>>) -> Void) -> NotificationToken {
        guard let managed else { preconditionFailure("Only collections which are managed by a Realm support change notifications") }
        let root = managed.owner.info?.target(column: managed.col)
        let watch = Observation.collectionWatch(managed, paths: Observation.keyPaths(keyPaths, root: root))
        let delivered = Observation.delivered(self, managed, queue: queue) { MutableSet(managed: $0) }
        return Observation.register(core: managed.core, queue: queue, watch: watch,
                                    onNotifierThread: !managed.isNested) { core, p in
            let set = delivered(core)
            block(.from(p, set))
        }
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<MutableSet<Element>>) -> Void) -> NotificationToken
        where Element: ObjectBase {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }
}

// MARK: - Map

extension Map {
    /// Calls `block` with the map now and after every change, by key: keys removed, added, and
    /// whose values changed (or whose objects changed per `keyPaths`).
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmMapChange<Map<Key, Value>>) -> Void) -> NotificationToken {
        guard let managed else { preconditionFailure("Only collections which are managed by a Realm support change notifications") }
        let root = managed.owner.info?.target(column: managed.col)
        let watch = Observation.collectionWatch(managed, paths: Observation.keyPaths(keyPaths, root: root))
        let delivered = Observation.delivered(self, managed, queue: queue) { Map(managed: $0) }
        return Observation.register(core: managed.core, queue: queue, watch: watch,
                                    onNotifierThread: !managed.isNested) { core, p in
            let map = delivered(core)
            if p.initial {
                block(.initial(map))
            } else {
                block(.update(map, deletions: p.keysDeleted.map(Key._rlmFromKey),
                              insertions: p.keysInserted.map(Key._rlmFromKey),
                              modifications: p.keysModified.map(Key._rlmFromKey)))
            }
        }
    }

    /// `observe(keyPaths:on:_:)` without key paths (RealmSwift's `observe(on:_:)`).
    public func observe(on queue: DispatchQueue?, _ block: @escaping (RealmMapChange<Map<Key, Value>>) -> Void)
        -> NotificationToken {
        observe(keyPaths: nil, on: queue, block)
    }
}

// MARK: - AnyRealmCollection

extension AnyRealmCollection {
    /// Observes the wrapped collection; the block gets this wrapper. See
    /// `Results.observe(keyPaths:on:_:)`.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<AnyRealmCollection<Element>>) -> Void) -> NotificationToken {
        // a run loop's or an actor's observer gets this wrapper; a queue's, a wrapper of the
        // collection as the queue's Realm reads it (this one holds the registering Realm)
        let wrapper: AnyRealmCollection? = queue == nil ? self : nil
        func forward<C: RealmCollection>(_ change: RealmCollectionChange<C>) where C.Element == Element {
            switch change {
            case .initial(let c): block(.initial(wrapper ?? AnyRealmCollection(c)))
            case .update(let c, let d, let i, let m):
                block(.update(wrapper ?? AnyRealmCollection(c), deletions: d, insertions: i, modifications: m))
            case .error(let e): block(.error(e))
            }
        }
        switch base {
        case let r as Results<Element>: return r.observe(keyPaths: keyPaths, on: queue, forward)
        case let l as List<Element>: return l.observe(keyPaths: keyPaths, on: queue, forward)
        case let s as MutableSet<Element>: return s.observe(keyPaths: keyPaths, on: queue, forward)
        case let o as any _ObservableAnyCollection:
            return o._observeErased(keyPaths: keyPaths, on: queue) { (p, delivered: AnyRealmCollection<Element>) in
                let c = wrapper ?? delivered
                block(p.initial ? .initial(c)
                               : .update(c, deletions: p.deletions, insertions: p.insertions, modifications: p.modifications))
            }
        default:
            preconditionFailure("This collection does not support change notifications")
        }
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths.
    public func observe(keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<AnyRealmCollection<Element>>) -> Void) -> NotificationToken
        where Element: ObjectBase {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }
}

/// Collections AnyRealmCollection forwards to without knowing their element's constraints.
/// The block gets the change set and the collection as the delivering Realm reads it, wrapped
/// (`E` is the collection's element type).
protocol _ObservableAnyCollection {
    func _observeErased<E>(keyPaths: [String]?, on queue: DispatchQueue?,
                           _ block: @escaping (ChangePayload, AnyRealmCollection<E>) -> Void) -> NotificationToken
}

extension LinkingObjects: _ObservableAnyCollection {
    func _observeErased<E>(keyPaths: [String]?, on queue: DispatchQueue?,
                           _ block: @escaping (ChangePayload, AnyRealmCollection<E>) -> Void) -> NotificationToken {
        guard let base else { preconditionFailure("Only collections which are managed by a Realm support change notifications") }
        let name = propertyName
        return Observation.register(base, paths: Observation.keyPaths(keyPaths, root: base.info), queue: queue) { _, b, p in
            block(p, AnyRealmCollection(LinkingObjects(propertyName: name, base: b)) as! AnyRealmCollection<E>)
        }
    }
}

// MARK: - Objects

extension Object {
    /// Calls `block` after every commit that deletes the object or writes one of its managed
    /// properties (writing a property's current value counts), from the version the object's
    /// Realm reads when `observe` is called: commits that Realm has not refreshed to yet are
    /// reported too. No initial call.
    ///
    /// - Parameters:
    ///   - keyPaths: the properties to watch ("adopted", "siblings" for insertions and
    ///     deletions in that list, "siblings.name" for those plus the siblings' names,
    ///     "owners" for a LinkingObjects property: links to the object added or removed,
    ///     "owners.name" for those plus the linking objects' names); nil: every property of the
    ///     object itself (shallow, backlinks left out).
    ///   - queue: a serial queue to call `block` on (with the object read from a Realm
    ///     confined to it); nil: the registering thread's run loop (the Realm's queue for a Realm
    ///     confined to one).
    /// - Returns: a token; notifications stop when it is invalidated or released.
    public func observe<T: ObjectBase>(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                                       _ block: @escaping (ObjectChange<T>) -> Void) -> NotificationToken {
        guard let core, let info else {
            preconditionFailure("Only objects which are managed by a Realm support change notifications")
        }
        Observation.checkNotFrozen(core)
        if isInvalidated { preconditionFailure("Object has been deleted or invalidated.") }
        let paths = Observation.keyPaths(keyPaths, root: info)
        let (table, key) = (info.table, objectKey)
        let className = objectSchema.className
        Observation.check(core, queue: queue)
        let n = FileNotifier.acquire(core.config)
        let object = DeliveredObject(self, queue: queue)
        return n.register(core: core, queue: queue, makeWatch: { n in
            n.watchObject(table: table, key: key, paths: paths)
        }, readValues: { core, cols in
            guard let info = core.info(named: className) else { return cols.map { _ in nil } }
            // (old values through a queue's Realm that reads a version older than the watch's
            // start, where the object may not exist yet: none, docs/ARCHITECTURE.md, Change
            // notifications)
            guard let o = object.existing(in: core) else { return cols.map { _ in nil } }
            return cols.map { c in KeyValueCoding.value(o, info, column: c) }
        }, callback: { core, p in
            if p.deleted {
                block(.deleted)
                return
            }
            guard let info = core.info(named: className) else { return }
            let o = object.resolved(in: core)
            let changes = p.columns.enumerated().map { i, c in
                PropertyChange(name: info.property(column: c)?.name ?? "", oldValue: p.oldValues?[i] ?? nil,
                               newValue: i < p.newValues.count ? p.newValues[i] : nil)
            }
            block(.change(o as! T, changes))
        })
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths (`\Dog.name`).
    public func observe<T: ObjectBase>(keyPaths: [PartialKeyPath<T>], on queue: DispatchQueue? = nil,
                                       _ block: @escaping (ObjectChange<T>) -> Void) -> NotificationToken {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }
}

/// An observed object as the delivering Realm reads it: for a run loop's or an actor's
/// observer, the registering accessor itself; for a queue's, an accessor made in the queue's
/// Realm from the object's address (which belongs to no Realm: the observer holds nothing of the
/// registering Realm once registered) at its first delivery and kept, since a live accessor
/// follows its Realm from version to version. Used on the delivery target only (a frozen
/// Realm's accessor, for held-back old values, is made each time and not kept); it goes with the
/// observer's block, on the target (docs/ARCHITECTURE.md, Change notifications).
final class DeliveredObject: @unchecked Sendable {
    private let object: ObjectBase?
    private let address: ObjectAddress
    private var core: RealmCore?
    private var accessor: ObjectBase?

    init(_ object: ObjectBase, queue: DispatchQueue?) {
        self.object = queue == nil ? object : nil
        address = ObjectAddress(object)
    }

    /// `resolved(in:)` when the object exists at the version `core` reads (an accessor made for
    /// one that does not is not kept).
    func existing(in core: RealmCore) -> ObjectBase? {
        let o = resolved(in: core)
        if o.objectExists() { return o }
        if accessor === o { (self.core, accessor) = (nil, nil) }
        return nil
    }

    func resolved(in core: RealmCore) -> ObjectBase {
        if let object, object.core === core { return object }
        if core.isFrozen { return Observation.object(at: address, in: core) }
        // (an accessor of an earlier generation, after `invalidate()`, is made again)
        if let accessor, self.core === core, accessor.generation == core.generation { return accessor }
        let o = Observation.object(at: address, in: core)
        (self.core, accessor) = (core, o)
        return o
    }
}

// MARK: - Realm

extension Realm {
    /// Calls `block` with `.didChange` whenever the Realm moves to a newer version (after a
    /// commit through it, or when autorefresh or `refresh()` brings another thread's or
    /// process's commit), and `.refreshRequired` when a newer version exists but autorefresh
    /// is off.
    public func observe(_ block: @escaping NotificationBlock) -> NotificationToken {
        let core = self.core
        Observation.checkNotFrozen(core)
        core.verifyThread()
        let n = FileNotifier.acquire(core.config)
        return n.register(core: core, queue: nil, makeWatch: nil) { core, p in
            block(p.realmNotification, Realm(core: core))
        }
    }

    /// Whether the Realm moves to the newest version by itself when its thread's run loop
    /// delivers notifications (default true). When false, `refresh()` moves it.
    public var autorefresh: Bool {
        get { core.autorefresh }
        nonmutating set { core.autorefresh = newValue }
    }
}

/// The change set of a query over a List, MutableSet, Map or LinkingObjects (filtered or sorted;
/// a List or Map held in an AnyRealmValue too),
/// from the change set of the collection itself (docs/ARCHITECTURE.md, Change notifications):
/// each element of the results is identified by its position in the collection; the positions
/// the results showed last are carried to the collection now through the collection's change
/// set, and the results are compared as a sorted query's are: the longest run of elements kept
/// in the same relative order stays, every other element is a deletion or an insertion, and an
/// element that stays is modified when its collection position was. Used on the delivery
/// thread or queue only.
final class DerivedChanges: @unchecked Sendable {
    /// The collection positions of the results' elements at the last delivery.
    private var shown: [Int]?
    /// The results' object keys at the last delivery (results of objects only).
    private var shownKeys: [Int64] = []

    /// Takes the results as `base` reads them now as the ones shown last (a write made without
    /// notifying the observer: its next change set starts from there). Before the initial
    /// change set, nothing (that one shows the results as they are then).
    func rebase(_ base: ResultsBase) {
        guard shown != nil else { return }
        shown = base.isInvalidated ? [] : DerivedChanges.sourcePositions(base)
        shownKeys = base.info != nil && !base.isInvalidated ? base.currentKeys() : []
    }

    /// The results' change set for the collection's change set `p` (nil when the results did
    /// not change); `base` is read at the version `p` brings.
    func translate(_ base: ResultsBase, _ given: ChangePayload) -> ChangePayload? {
        let now = base.isInvalidated ? [] : DerivedChanges.sourcePositions(base)
        let objects = base.info != nil
        let nowKeys = objects && !base.isInvalidated ? base.currentKeys() : []
        let oldKeys = shownKeys
        shownKeys = nowKeys
        guard let old = shown, !given.initial else {
            shown = now
            return given
        }
        let p = DerivedChanges.positional(base, given)
        shown = now
        // where the elements shown before are in the collection now
        let deleted = Set(p.deletions)
        let stayed = Array(Set(old.filter { !deleted.contains($0) })).sorted()
        let moved = SectionChange.newPositions(of: stayed, deletions: p.deletions, insertions: p.insertions)
        let carried = Dictionary(uniqueKeysWithValues: zip(stayed, moved))
        var indexNow: [Int: Int] = [:]
        for (i, s) in now.enumerated() { indexNow[s] = i }
        // (old index, new index) of each element in both, in new order
        var pairs: [(Int, Int)] = []
        for (i, s) in old.enumerated() {
            if let c = carried[s], let j = indexNow[c] { pairs.append((i, j)) }
        }
        if objects {
            DerivedChanges.matchMovedObjects(&pairs, old: oldKeys, now: nowKeys)
        }
        pairs.sort { $0.1 < $1.1 }
        let kept = DerivedChanges.longestIncreasing(pairs.map(\.0))
        let modified = Set(p.modifications)
        var q = ChangePayload()
        var keptOld = Set<Int>(), keptNew = Set<Int>()
        for k in kept {
            let (i, j) = pairs[k]
            keptOld.insert(i)
            keptNew.insert(j)
            if modified.contains(old[i]) { q.modifications.append(i) }
        }
        q.deletions = old.indices.filter { !keptOld.contains($0) }
        q.insertions = now.indices.filter { !keptNew.contains($0) }
        q.modifications.sort()
        return q.isEmpty ? nil : q
    }

    /// Adds to `pairs` (old index, new index) the objects the collection's change set lost
    /// track of: an object it reports as removed and inserted again (a backlink that another
    /// removal moved into its place, docs/FORMAT.md) is the same element when its key occurs
    /// once before and once now. Such an element is not reported as modified (the change set
    /// says nothing of its properties).
    static func matchMovedObjects(_ pairs: inout [(Int, Int)], old: [Int64], now: [Int64]) {
        var countOld: [Int64: Int] = [:], countNow: [Int64: Int] = [:]
        for k in old { countOld[k, default: 0] += 1 }
        for k in now { countNow[k, default: 0] += 1 }
        let takenOld = Set(pairs.map(\.0)), takenNew = Set(pairs.map(\.1))
        var indexNow: [Int64: Int] = [:]
        for (j, k) in now.enumerated() where countNow[k] == 1 && !takenNew.contains(j) { indexNow[k] = j }
        for (i, k) in old.enumerated() where countOld[k] == 1 && !takenOld.contains(i) {
            if let j = indexNow[k] { pairs.append((i, j)) }
        }
    }

    /// A Map's change set (by key) in positions of the map (its keys' order): deletions and
    /// modifications at positions among the keys before, insertions among the keys now. The
    /// keys before are the keys now without those inserted and with those deleted. Other
    /// collections' change sets are positions already.
    static func positional(_ base: ResultsBase, _ p: ChangePayload) -> ChangePayload {
        guard case .collection(let c, _) = base.root,
              c.isNested ? c.mixedKind == .map : c.owner.info?.property(column: c.col)?.isMap == true else { return p }
        let now = base.isInvalidated ? [] : c.mapKeys
        let inserted = Set(p.keysInserted)
        let before = Set(now.filter { !inserted.contains($0) } + p.keysDeleted)
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        func positions(_ keys: [String], in order: [String]) -> [Int] {
            var at: [String: Int] = [:]
            for (i, k) in order.enumerated() { at[k] = i }
            return keys.compactMap { at[$0] }.sorted()
        }
        var q = p
        q.deletions = positions(p.keysDeleted, in: before)
        q.insertions = positions(p.keysInserted, in: now)
        q.modifications = positions(p.keysModified, in: before)
        return q
    }

    /// The collection position of each element of the results (in results order): each object
    /// key takes the first position of that key not taken yet, so an object held twice by a
    /// List is two elements.
    static func sourcePositions(_ base: ResultsBase) -> [Int] {
        let source = ResultsBase(core: base.core, root: base.root).currentKeys()
        var positions: [Int64: [Int]] = [:]
        for (i, k) in source.enumerated().reversed() { positions[k, default: []].append(i) }
        return base.currentKeys().map { k in positions[k]?.popLast() ?? -1 }
    }

    /// The indexes (into `values`) of a longest strictly increasing subsequence.
    static func longestIncreasing(_ values: [Int]) -> [Int] {
        var tails: [Int] = []          // index of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (i, v) in values.enumerated() {
            var lo = 0, hi = tails.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if values[tails[mid]] < v { lo = mid + 1 } else { hi = mid }
            }
            if lo > 0 { previous[i] = tails[lo - 1] }
            if lo == tails.count { tails.append(i) } else { tails[lo] = i }
        }
        var out: [Int] = []
        var at = tails.last ?? -1
        while at >= 0 {
            out.append(at)
            at = previous[at]
        }
        return out.reversed()
    }
}
