import CStore
import Dispatch
import Foundation
import Synchronization

/// One open Realm on one thread (or serial queue): the core's database handle, the read
/// transaction every object reads through, and the binding of the model classes to tables.
///
/// `Realm` is a thin struct over this class. Instances are cached per thread and per queue
/// (`RealmCore.open`), so `try Realm()` twice on one thread gives the same instance, and are
/// confined to it: every accessor checks the thread (queue-confined instances are not checked
/// per access, only when they are opened).
@usableFromInline
final class RealmCore {
    let config: Realm.Configuration
    let url: URL?
    let db: OpaquePointer
    /// The read (or write) transaction; nil after `invalidate()` until the next access.
    @exclusivity(unchecked) private var _txn: OpaquePointer?
    /// Bumped by `invalidate()`: accessors made before then are invalid.
    @exclusivity(unchecked) private(set) var generation: UInt64 = 1
    /// Objects `addAll` created in batches (`cs_obj_create_many_keys`), for the tests.
    var batchedAdds = 0
    /// Objects `add` created with their values in one call (`addWithValues`), and the
    /// properties it stored one by one after such a create, for the tests.
    var directAdds = 0, laterStores = 0
    /// The values of the object `add` is creating (reused from object to object).
    let createValues = CreateValues()
    /// While `addAll` finishes the objects it created: its plan (`link(to:)` finishes those).
    var addPlan: AddPlan?
    /// Bumped by every write through this instance, so cached results know to re-run.
    @exclusivity(unchecked) private(set) var mutations: UInt64 = 0
    /// The instances passed to `delete` in the open write transaction. If the write does not
    /// commit, their rows come back but these instances stay invalidated, as RealmSwift's
    /// cancelWrite documents (a new read of a restored row gives a valid object).
    var deletedInWrite: [WeakObject] = []
    /// During a write that moved past versions its object observers were not given (a commit
    /// landed between delivering what was pending and taking the write lock): this file frozen
    /// at the version the write started from, so that a change set a `withoutNotifying:` commit
    /// holds back gets its old values from there (docs/ARCHITECTURE.md, Change notifications).
    var preWriteSnapshot: RealmCore?
    /// The snapshot version, the writes through this instance and the invalidation generation:
    /// while it is unchanged, keys read from the file still name the same objects.
    var stateStamp: (UInt64, UInt64, UInt64) { (cs_txn_version(txn), mutations, generation) }
    /// The owning thread, for thread-confined instances.
    private let thread: pthread_t?
    let queue: DispatchQueue?
    /// The actor an actor-isolated instance belongs to (its accesses are serialised by the
    /// actor, not checked per thread).
    let actor: (any Actor)?
    /// The run loop of a thread-confined instance's thread (where `writeAsync` runs blocks).
    let runLoop: RunLoop?
    /// The queued asynchronous writes (made on first use).
    var asyncWrites: AsyncWriteQueue?
    private(set) var schema: Schema
    private(set) var infos: [ObjectIdentifier: ClassInfo] = [:]
    private(set) var infosByName: [String: ClassInfo] = [:]
    private(set) var infosByTable: [UInt32: ClassInfo] = [:]
    /// Public property names of columns stored under another name (`propertiesMapping()`),
    /// for the core's query parser; the strings are owned here.
    private(set) var nameMap: [cs_name_map_entry] = []
    private var nameStrings: [UnsafeMutablePointer<CChar>] = []
    /// Dynamic-API views of the tables, made on first use.
    private var dynamicInfos: [UInt32: ClassInfo] = [:]
    /// False for the cores a migration borrows the file's handle and transaction for.
    private let ownsHandle: Bool
    /// True for the cores a migration runs its block with (old and new views): primary keys
    /// may be written there, as RealmSwift allows during a migration.
    let isMigration: Bool
    /// Whether `deinit` ends the transaction of a borrowed handle (a migration's old view).
    private let ownsTxn: Bool
    /// What the instance cache references weakly (see `Anchor`).
    let anchor = Anchor()
    /// The notifier `notifier` found last (weak: a notifier stops, and goes, when its last
    /// observer goes), and `FileNotifier.generation` before that lookup (0: none yet).
    private weak var foundNotifier: FileNotifier?
    @exclusivity(unchecked) private var foundNotifierGeneration: UInt64 = 0

    /// The running notifier of this Realm's file (`FileNotifier.running`), looked up again only
    /// when a notifier of any file started or stopped since the last lookup: a write asks for it
    /// two or three times, and each lookup hashed the path under a process-wide lock. A stopped
    /// notifier is never given (it left `FileNotifier.all`, which changed the generation), and
    /// the reference kept does not keep it alive (docs/ARCHITECTURE.md, Change notifications).
    var notifier: FileNotifier? {
        let generation = FileNotifier.generation.load(ordering: .acquiring)
        if generation == foundNotifierGeneration { return foundNotifier }
        let n = FileNotifier.running(config.path)
        foundNotifier = n
        foundNotifierGeneration = generation
        return n
    }

    /// Whether notifications move this instance to the newest version (`Realm.autorefresh`).
    var autorefresh = true
    /// Set while the blocks of this Realm's Realm observers run (`FileNotifier`, notifier's lock
    /// held to change it; only the Realm's own thread, queue or actor sets it): a Realm
    /// notification raised meanwhile is not sent, also to an observer registered in such a block
    /// on a new delivery target, as RealmSwift's Realm sends none from inside one of its
    /// notification blocks (docs/ARCHITECTURE.md, Change notifications).
    var notifyingRealmObservers = false
    /// Whether this is a frozen Realm: a read transaction pinned at one version
    /// (`cs_txn_freeze`), never moved or written, readable from any thread at once
    /// (docs/ARCHITECTURE.md, Frozen snapshots).
    @usableFromInline let isFrozen: Bool
    /// Guards the state a frozen instance fills lazily (its dynamic-API views), since any
    /// thread may read through it.
    private let lazyLock = NSLock()

    /// The transaction objects read through, beginning a new one after `invalidate()`.
    var txn: OpaquePointer {
        if let t = _txn { return t }
        var t: OpaquePointer?
        CoreCall.must(cs_txn_begin(db, Int32(CS_TXN_READ), &t), "Beginning a read transaction")
        _txn = t
        return t!
    }

    var isInWriteTransaction: Bool {
        guard let t = _txn else { return false }
        return cs_txn_is_writing(t)
    }

    // MARK: Opening

    private init(config: Realm.Configuration, queue: DispatchQueue?, actor: (any Actor)? = nil) throws {
        self.config = config
        self.queue = queue
        self.actor = actor
        self.thread = queue == nil && actor == nil ? pthread_self() : nil
        self.runLoop = queue == nil && actor == nil ? RunLoop.current : nil
        self.ownsHandle = true
        self.isMigration = false
        self.ownsTxn = true
        self.isFrozen = false
        self.url = config.inMemoryIdentifier == nil ? URL(fileURLWithPath: config.path) : nil
        if config.encryptionKey != nil {
            throw Realm.Error(.fail, "Encryption is not supported by this version of SwiftStore; "
                              + "open the file without an encryptionKey", fileURL: url)
        }
        let target = try RealmCore.targetSchema(config)
        try RealmCore.prepareFirstOpen(config, url: url)
        var (db, txn) = try RealmCore.openFile(config, url: url)
        do {
            try SchemaSync.apply(target, config: config, db: db, txn: txn, url: url)
        } catch let error as Realm.Error where error.code == .schemaMismatch && config.deleteRealmIfMigrationNeeded
                    && !config.readOnly {
            cs_txn_end(txn)
            cs_db_close(db)
            _ = try Realm.deleteFiles(for: config)
            (db, txn) = try RealmCore.openFile(config, url: url)
            do {
                try SchemaSync.apply(target, config: config, db: db, txn: txn, url: url)
            } catch {
                cs_txn_end(txn)
                cs_db_close(db)
                throw error
            }
        } catch {
            cs_txn_end(txn)
            cs_db_close(db)
            throw error
        }
        self.db = db
        self._txn = txn
        self.schema = Schema(target)
        bindClasses()
        anchor.core = .passUnretained(self)
        RealmCore.openPaths.withLock { $0[config.path, default: 0] += 1 }
    }

    /// A frozen instance reading exactly the version `source` reads, through a handle of its
    /// own (so it outlives `source`) and a frozen transaction (`cs_txn_freeze`). It is
    /// confined to no thread. Use `frozen()`, which caches these per version.
    /// A frozen instance at the version `source` reads, or at the version `pin` (a frozen
    /// transaction of `source`'s file) reads when given.
    private init(frozenAt source: RealmCore, pin: OpaquePointer? = nil) throws {
        self.config = source.config
        self.queue = nil
        self.thread = nil
        self.ownsHandle = true
        self.isMigration = false
        self.ownsTxn = true
        self.isFrozen = true
        self.actor = nil
        self.runLoop = nil
        self.url = source.url
        self.autorefresh = false
        var opts = cs_options()
        opts.flags = source.config.readOnly ? UInt32(CS_OPEN_READONLY) : 0
        if source.config.inMemoryIdentifier != nil { opts.durability = CS_DURABILITY_MEMORY }
        if let max = source.config.maximumNumberOfActiveVersions { opts.max_active_versions = UInt32(clamping: max) }
        let path = source.config.path
        if let io = RealmCore.ioForTesting.withLock({ $0[path] }) { opts.io = UnsafePointer(bitPattern: io) }
        var db: OpaquePointer?
        try CoreCall.check(cs_db_open(path, &opts, &db), "Opening \(path) for a frozen Realm", url: url)
        var t: OpaquePointer?
        let at = pin ?? source.txn
        let rc = cs_txn_freeze(db, at, &t)
        if rc != 0 {
            let error = CoreCall.error(rc, "Freezing version \(cs_txn_version(at)) of \(path)", url: url)
            cs_db_close(db)
            throw error
        }
        self.db = db!
        self._txn = t
        self.schema = source.schema
        bindClasses()
        anchor.core = .passUnretained(self)
        RealmCore.openPaths.withLock { $0[config.path, default: 0] += 1 }
        RealmCore.frozenOpens.withLock { $0[path, default: 0] += 1 }
    }

    /// How many frozen instances were made per file (each opens the file once), for tests.
    static let frozenOpens = Locked<[String: Int]>([:])

    /// Frozen instances by file and version: freezing twice at one version gives one instance,
    /// which lives as long as a frozen value (object, collection, Realm) uses it.
    /// (A real weak reference, unlike the per-thread cache's anchors: a frozen instance is
    /// released on whichever thread drops the last frozen value, possibly while another thread
    /// looks it up, and only a weak reference is safe against that.)
    nonisolated(unsafe) private static var frozenCache: [String: FrozenWeak] = [:]
    private static let frozenCacheLock = NSLock()
    private final class FrozenWeak: @unchecked Sendable {
        weak var core: RealmCore?
        init(_ core: RealmCore) { self.core = core }
    }

    /// The frozen instance at the version this instance reads (this instance, when frozen).
    /// Traps inside a write transaction (RealmSwift: freezing needs a committed version).
    func frozen() -> RealmCore {
        if isFrozen { return self }
        verifyThread()
        if isInWriteTransaction {
            preconditionFailure("Cannot freeze an object in the same write transaction as it was created in.")
        }
        let key = "\(config.cacheKey)#\(cs_txn_version(txn))"
        RealmCore.frozenCacheLock.lock()
        defer { RealmCore.frozenCacheLock.unlock() }
        if let core = RealmCore.frozenCache[key]?.core { return core }
        RealmCore.frozenCache = RealmCore.frozenCache.filter { $0.value.core != nil }
        do {
            let core = try RealmCore(frozenAt: self)
            RealmCore.frozenCache[key] = FrozenWeak(core)
            return core
        } catch {
            preconditionFailure("Freezing the Realm at '\(config.path)' failed: \(error)")
        }
    }

    /// The frozen instance at the version transaction `at` reads (of `source`'s file, not
    /// writing), with `source`'s schema; cached as `frozen()`'s, by version.
    static func frozen(like source: RealmCore, at: OpaquePointer) throws -> RealmCore {
        let key = "\(source.config.cacheKey)#\(cs_txn_version(at))"
        frozenCacheLock.lock()
        defer { frozenCacheLock.unlock() }
        if let core = frozenCache[key]?.core { return core }
        frozenCache = frozenCache.filter { $0.value.core != nil }
        let core = try RealmCore(frozenAt: source, pin: at)
        frozenCache[key] = FrozenWeak(core)
        return core
    }

    /// A pin of the version this instance reads: a frozen transaction on its handle (a count on
    /// a version it pins anyway), which keeps that version readable, for `frozen(like:at:)`,
    /// after this instance moves; nil on a failure. Let go with `unpin`.
    func pinVersion() -> OpaquePointer? {
        var pin: OpaquePointer?
        return cs_txn_freeze(db, txn, &pin) == 0 ? pin : nil
    }

    static func unpin(_ pin: OpaquePointer) { cs_txn_end(pin) }

    /// Whether two instances read the same file (the same open file of this process).
    func sameFile(as other: RealmCore) -> Bool {
        db == other.db || cs_txn_same_file(txn, other.txn)
    }

    /// The version this instance reads.
    var version: UInt64 { cs_txn_version(txn) }

    /// How many instances of this process have each file open (for `Realm.deleteFiles`).
    static let openPaths = Locked<[String: Int]>([:])
    /// Tests only: a replacement I/O layer (cstore.h, cs_io) for the file at a path, given as
    /// the pointer's bit pattern; the Swift API has no public way to set one.
    static let ioForTesting = Locked<[String: UInt]>([:])

    /// Whether an instance in this process has the file at `path` open.
    static func isOpen(_ path: String) -> Bool {
        openPaths.withLock { ($0[path] ?? 0) > 0 }
    }

    /// A core over a handle and transaction owned by someone else (a migration in progress),
    /// seeing `schemas` (every class read dynamically).
    init(borrowing db: OpaquePointer, txn: OpaquePointer, schemas: [ObjectSchema], config: Realm.Configuration,
         ownsTransaction: Bool) {
        self.isMigration = true
        self.ownsTxn = ownsTransaction
        self.isFrozen = false
        self.config = config
        self.actor = nil
        self.runLoop = nil
        self.queue = nil
        self.thread = pthread_self()
        self.ownsHandle = false
        self.url = nil
        self.db = db
        self._txn = txn
        self.schema = Schema(schemas)
        bindClasses()
    }

    /// Whether two cores are a migration's views of one file (old snapshot and new schema).
    func isMigrationView(of other: RealmCore) -> Bool {
        isMigration && other.isMigration && db == other.db
    }

    /// Re-resolves the columns after a migration renamed or removed some.
    func rebind() {
        dynamicInfos = [:]
        bindClasses()
    }


    /// Compiles a query: `make` calls one of the `cs_query_new_*` functions with the arguments'
    /// values and the file's name map; a parse or bind failure throws the parser's message.
    func newQuery(_ args: QueryArguments,
                  _ make: (UnsafePointer<cs_value>?, Int, UnsafeMutablePointer<cs_name_map>, inout OpaquePointer?) -> Int32) throws -> OpaquePointer {
        var q: OpaquePointer?
        var rc: Int32 = 0
        var failure = ""
        nameMap.withUnsafeBufferPointer { e in
            var names = cs_name_map(entries: e.baseAddress, count: e.count)
            args.values.withUnsafeBufferPointer { a in
                rc = make(a.baseAddress, a.count, &names, &q)
                if rc != 0 { failure = CoreCall.lastMessage }
            }
        }
        if rc != 0 { throw Realm.Error(.invalidInput, failure) }
        return q!
    }
    deinit {
        for p in nameStrings { free(p) }
        anchor.core = nil
        if RealmCore.deinitHooksArmed.load(ordering: .relaxed),
           let hook = RealmCore.deinitForTesting.withLock({ $0[config.path] }) {
            hook(queue)
        }
        guard ownsHandle else {
            if ownsTxn, let t = _txn { cs_txn_end(t) }
            return
        }
        let path = config.path
        RealmCore.openPaths.withLock { counts in
            counts[path, default: 1] -= 1
            if counts[path] == 0 { counts[path] = nil }
        }
        if let t = _txn { cs_txn_end(t) }
        cs_db_close(db)
    }

    /// The dynamic-API view of a table.
    func dynamicInfo(_ info: ClassInfo) -> ClassInfo {
        if info.objectSchema.objectClass == DynamicObject.self { return info }
        if isFrozen { lazyLock.lock() }
        defer { if isFrozen { lazyLock.unlock() } }
        if let d = dynamicInfos[info.table] { return d }
        let d = info.dynamicCopy()
        dynamicInfos[info.table] = d
        return d
    }

    /// A `DynamicObject` for row `key` of `info`'s table.
    func dynamicObject(_ info: ClassInfo, key: Int64) -> DynamicObject {
        object(dynamicInfo(info), key: key) as! DynamicObject
    }

    /// Opens the core handle and begins a read transaction.
    private static func openFile(_ config: Realm.Configuration, url: URL?) throws
        -> (OpaquePointer, OpaquePointer)
    {
        var opts = cs_options()
        opts.flags = config.readOnly ? UInt32(CS_OPEN_READONLY) : UInt32(CS_OPEN_CREATE)
        if config.inMemoryIdentifier != nil { opts.durability = CS_DURABILITY_MEMORY }
        if let max = config.maximumNumberOfActiveVersions { opts.max_active_versions = UInt32(clamping: max) }
        var db: OpaquePointer?
        let path = config.path
        if let io = ioForTesting.withLock({ $0[path] }) { opts.io = UnsafePointer(bitPattern: io) }
        try CoreCall.check(cs_db_open(path, &opts, &db), "Opening \(path)", url: url)
        var txn: OpaquePointer?
        let rc = cs_txn_begin(db, Int32(CS_TXN_READ), &txn)
        if rc != 0 {
            let error = CoreCall.error(rc, "Reading \(path)", url: url)
            cs_db_close(db)
            throw error
        }
        return (db!, txn!)
    }

    /// The object schemas the configuration asks for: its `objectTypes`, or every model class
    /// in the process, with the classes they link to.
    static func targetSchema(_ config: Realm.Configuration) throws -> [ObjectSchema] {
        var types: [ObjectBase.Type]
        if let explicit = config.objectTypes {
            types = explicit
        } else {
            types = SchemaDiscovery.defaultObjectTypes()
            types += SchemaDiscovery.registeredTypes().filter { t in !types.contains { $0 == t } }
        }
        var schemas: [ObjectSchema] = []
        var seen = Set<String>()
        for t in types {
            let s = SchemaDiscovery.objectSchema(for: t)
            if !seen.insert(s.className).inserted {
                if schemas.contains(where: { $0.className == s.className && $0.objectClass != t }) {
                    throw Realm.Error(.fail, "Object type '\(s.className)' appears twice in the schema "
                                      + "(two classes share the name; override className() on one)")
                }
                continue
            }
            schemas.append(s)
        }
        try SchemaDiscovery.validate(schemas)
        return schemas
    }

    /// The hidden column of `table` that holds the backlinks of link column `col` of `origin`,
    /// or `CS_NONE`.
    private static func backlinkColumn(_ t: OpaquePointer?, table: UInt32, origin: UInt32, col: UInt32) -> UInt32 {
        var ti = cs_table_info()
        guard cs_table_info_get(t, table, &ti) == 0 else { return CS_NONE }
        for c in 0..<ti.col_slots {
            var ci = cs_column_info()
            if cs_column_info_get(t, table, c, &ci) == 0, ci.type == CS_TYPE_BACKLINK, ci.target == origin,
               ci.origin_col == col {
                return c
            }
        }
        return CS_NONE
    }

    /// Resolves tables and columns for each class.
    private func bindClasses() {
        for p in nameStrings { free(p) }
        nameStrings = []
        nameMap = []
        infos = [:]
        infosByName = [:]
        infosByTable = [:]
        let t = txn
        for s in schema.objectSchema {
            var table: UInt32 = 0
            CoreCall.must(cs_table_find(t, s.className, &table), "Finding table \(s.className)")
            let info = ClassInfo(schema: s, table: table)
            for (i, p) in s.allProperties.enumerated() where p.type != .linkingObjects {
                var col: UInt32 = 0
                CoreCall.must(cs_column_find(t, table, p.columnName, &col), "Finding column \(p.columnName)")
                info.columns[i] = col
                if p.columnName != p.name, let name = strdup(p.name) {
                    nameStrings.append(name)
                    nameMap.append(cs_name_map_entry(table: table, col: col, public_name: name))
                }
            }
            infos[ObjectIdentifier(s.objectClass)] = info
            infosByName[s.className] = info
            infosByTable[table] = info
        }
        for info in infosByName.values {
            for (i, p) in info.objectSchema.allProperties.enumerated() {
                guard let target = p.objectClassName.flatMap({ infosByName[$0] }) else { continue }
                info.targets[i] = target
                if p.type == .linkingObjects, let origin = p.linkOriginPropertyName,
                   let col = target.column(named: origin) {
                    info.backlinks[i] = (target.table, col)
                    info.backlinkColumns[i] = RealmCore.backlinkColumn(t, table: info.table, origin: target.table, col: col)
                    // The property's name stands for its backlinks in queries.
                    if let name = strdup(p.name) {
                        nameStrings.append(name)
                        nameMap.append(cs_name_map_backlink(target.table, col, name))
                    }
                }
            }
            info.prepareBindings()
        }
    }

    // MARK: The per-thread cache

    /// The cache's weak reference points at this anchor, not at the core: an object that is
    /// ever weakly referenced gets a side table, which makes every retain and release of it
    /// slow, and every managed object retains its core. The core owns its anchor and clears it
    /// first thing in `deinit`.
    final class Anchor: @unchecked Sendable {
        var core: Unmanaged<RealmCore>?
    }

    private final class Weak: @unchecked Sendable {
        weak var anchor: Anchor?
        init(_ core: RealmCore) { anchor = core.anchor }
        var core: RealmCore? { anchor?.core?.takeUnretainedValue() }
    }
    private static let queueCache = Locked<[String: Weak]>([:])
    private static let actorCache = Locked<[String: Weak]>([:])

    /// The cached instance for this configuration isolated to `actor`, or a new one.
    static func open(_ config: Realm.Configuration, actor: any Actor) throws -> RealmCore {
        let key = "\(ObjectIdentifier(actor).hashValue):\(config.cacheKey)"
        if let core = actorCache.withLock({ $0[key]?.core }) { return try core.reuse(for: config) }
        let core = try RealmCore(config: config, queue: nil, actor: actor)
        actorCache.withLock { $0[key] = Weak(core) }
        return core
    }
    private static let threadKey = "SwiftStore.RealmCore.cache"

    /// The cached instance for this configuration on this thread or queue, or a new one.
    static func open(_ config: Realm.Configuration, queue: DispatchQueue?) throws -> RealmCore {
        let key: String
        if let queue {
            key = "\(ObjectIdentifier(queue).hashValue):\(config.cacheKey)"
            if let core = queueCache.withLock({ $0[key]?.core }) { return try core.reuse(for: config) }
        } else {
            key = config.cacheKey
            let dict = Thread.current.threadDictionary
            if let box = dict[threadKey] as? ThreadCache, let core = box.entries[key]?.core {
                return try core.reuse(for: config)
            }
        }
        let core = try RealmCore(config: config, queue: queue)
        if queue != nil {
            queueCache.withLock { $0[key] = Weak(core) }
        } else {
            let dict = Thread.current.threadDictionary
            let box = (dict[threadKey] as? ThreadCache) ?? ThreadCache()
            box.entries[key] = Weak(core)
            dict[threadKey] = box
        }
        return core
    }

    /// A new instance confined to `queue`, made on the calling thread and not in the cache yet
    /// (an object observer's delivery Realm, which its registration sets to the version its
    /// watch starts at before anything else can reach it; `publish(queue:)` caches it), or nil
    /// when the queue has a cached instance already or the file cannot be opened.
    static func makeForQueue(_ config: Realm.Configuration, queue: DispatchQueue) -> RealmCore? {
        let key = "\(ObjectIdentifier(queue).hashValue):\(config.cacheKey)"
        if queueCache.withLock({ $0[key]?.core }) != nil { return nil }
        return try? RealmCore(config: config, queue: queue)
    }

    /// Caches an instance made by `makeForQueue` as its queue's, unless another instance was
    /// cached for that queue meanwhile, which it returns instead.
    func publish(queue: DispatchQueue) -> RealmCore {
        let key = "\(ObjectIdentifier(queue).hashValue):\(config.cacheKey)"
        return RealmCore.queueCache.withLock { cache in
            if let other = cache[key]?.core { return other }
            cache[key] = Weak(self)
            return self
        }
    }

    private final class ThreadCache: NSObject {
        var entries: [String: Weak] = [:]
    }

    /// Checks that a cached instance can serve `config`.
    private func reuse(for other: Realm.Configuration) throws -> RealmCore {
        if other.schemaVersion != config.schemaVersion {
            throw Realm.Error(.fail, "Realm at path '\(config.path)' already opened with different "
                              + "schema version (\(config.schemaVersion), asked for \(other.schemaVersion))",
                              fileURL: url)
        }
        if other.readOnly != config.readOnly {
            throw Realm.Error(.fail, "Realm at path '\(config.path)' already opened with different "
                              + "read permissions", fileURL: url)
        }
        return self
    }

    // MARK: Threads

    /// Traps when a thread-confined instance is used from another thread.
    @inline(__always)
    func verifyThread() {
        if !isOnOwnerThread {
            preconditionFailure("Realm accessed from incorrect thread.")
        }
    }

    /// Whether the calling thread may use this instance (always true for queue-confined ones).
    @inline(__always)
    var isOnOwnerThread: Bool {
        guard let thread else { return true }
        return thread == pthread_self()
    }

    // MARK: Transactions

    func beginWrite() {
        CoreCall.must(promote(), "Beginning a write transaction")
    }

    /// `beginWrite` for `Realm.write`, which may throw: a file this process may no longer write
    /// (a failed sync, or a commit's failed header write after its commit point, until it is
    /// reopened) is a thrown error rather than a trap.
    func beginWriteThrowing() throws {
        try CoreCall.check(promote(), "Beginning a write transaction", url: url)
    }

    private func promote() -> Int32 {
        verifyThread()
        if isFrozen { preconditionFailure("Can't perform transactions on a frozen Realm") }
        if config.readOnly { preconditionFailure("Can't perform transactions on read-only Realms.") }
        if isInWriteTransaction {
            preconditionFailure("The Realm is already in a write transaction")
        }
        // A write starts by delivering what this Realm's observers were not given yet
        // (docs/ARCHITECTURE.md, Change notifications).
        // (a commit that lands between this delivery and the write lock is delivered after the
        // write, held back if the write skips its observers: the blocks never run inside the
        // write, docs/ARCHITECTURE.md, Change notifications)
        var pin: OpaquePointer?
        if ownsHandle, let n = notifier, n.hasObservers(self) {
            n.deliverNow(self, beforeWrite: true)
            if isInWriteTransaction {
                preconditionFailure("The Realm is already in a write transaction")
            }
            // the version the object observers were given last, kept (a count on a version this
            // Realm pins anyway) until the write lock is held
            if n.hasObjectObservers(self), cs_txn_freeze(db, txn, &pin) != 0 { pin = nil }
        }
        if RealmCore.testHooksArmed.load(ordering: .relaxed),
           let hook = RealmCore.beforePromoteForTesting.withLock({ $0.removeValue(forKey: config.path) }) {
            hook()
        }
        let rc = cs_txn_promote(txn)
        if let pin {
            if rc == 0 && cs_txn_version(pin) != cs_txn_version(txn) {
                preWriteSnapshot = try? RealmCore(frozenAt: self, pin: pin)
            }
            cs_txn_end(pin)
        }
        if rc == 0 { mutations &+= 1 }
        return rc
    }

    /// For tests: runs in the `deinit` of every instance of that path, with the queue it is
    /// confined to (where, on which thread, a Realm is let go: docs/ARCHITECTURE.md, Change
    /// notifications).
    static let deinitForTesting = Locked<[String: @Sendable (DispatchQueue?) -> Void]>([:])
    /// Set when `deinitForTesting` was ever used (`deinit` skips its lock until then).
    static let deinitHooksArmed = Atomic<Bool>(false)

    /// For tests: runs once, in the next `beginWrite` on a Realm of that path, after pending
    /// notifications were delivered and before the write lock is taken (a commit landing there).
    static let beforePromoteForTesting = Locked<[String: @Sendable () -> Void]>([:])
    /// Set when `beforePromoteForTesting`, `afterCommitForTesting` or
    /// `afterRefreshDeliveryForTesting` was ever used (the write and refresh paths skip their
    /// locks until then).
    static let testHooksArmed = Atomic<Bool>(false)

    /// For tests: runs once, in the next `refresh()` on a Realm of that path, after it delivered
    /// what was pending and before it returns (a commit landing there).
    static let afterRefreshDeliveryForTesting = Locked<[String: @Sendable () -> Void]>([:])

    /// For tests: runs once, in the next commit of a write on a Realm of that path, right after
    /// the commit and before its change sets are computed (a commit landing there, after the
    /// write lock was released).
    static let afterCommitForTesting = Locked<[String: @Sendable () -> Void]>([:])

    func commitWrite(withoutNotifying tokens: [NotificationToken] = []) throws {
        verifyThread()
        guard isInWriteTransaction else {
            preconditionFailure("Can't commit a non-existing write transaction")
        }
        for token in tokens where !skippable(token) {
            preconditionFailure("Incorrect Realm: only notifications for the Realm being modified can be skipped.")
        }
        let snapshot = preWriteSnapshot
        preWriteSnapshot = nil
        // the notifier that computes the write's own version alone and drops it for `tokens`
        // (docs/ARCHITECTURE.md, Change notifications)
        var skipper: FileNotifier?
        if !tokens.isEmpty, ownsHandle, let n = notifier,
           n.holdBack(tokens, writer: self, oldValuesAt: snapshot) {
            skipper = n
        }
        mutations &+= 1
        defer { asyncWrites?.writeDidEnd() }
        // the notifier the commit spared (its thread sleeps through the commit, whose change
        // sets `committed(by:)` below computes on this thread, docs/ARCHITECTURE.md, Change
        // notifications)
        var spared: FileNotifier?
        do {
            let rc: Int32
            if ownsHandle {
                (rc, spared) = FileNotifier.commit(self)
            } else {
                rc = NotifierCore.commit(self)
            }
            try CoreCall.check(rc, "Committing a write transaction", url: url)
        } catch {
            // The failed commit rolled the write back. (The notifier thread looks at the file
            // again, as a commit would have made it.)
            skipper?.abandonSkip()
            if ownsHandle { notifier?.wakeThread() }
            invalidateDeletedInstances()
            writeEndedWithoutCommit()
            throw error
        }
        deletedInWrite = []
        if RealmCore.testHooksArmed.load(ordering: .relaxed),
           let hook = RealmCore.afterCommitForTesting.withLock({ $0.removeValue(forKey: config.path) }) {
            hook()
        }
        if let skipper {
            skipper.skip(tokens, committedBy: self)
            skipper.rebase(tokens, in: self)
        }
        guard ownsHandle, let n = spared ?? notifier else { return }
        n.committed(by: self)
    }

    /// Whether a write through this Realm may skip `token`'s observer: one registered through
    /// this Realm, or, for a queue observer, through this Realm's queue (the queue's Realm is the
    /// one it is delivered through). A token that stops nothing has nothing to skip.
    private func skippable(_ token: NotificationToken) -> Bool {
        guard let target = token.registration?.target else { return true }
        if let q = target.queue { return q === queue && target.config.path == config.path }
        return target.core === self
    }

    func cancelWrite() {
        verifyThread()
        guard isInWriteTransaction else {
            preconditionFailure("Can't cancel a non-existing write transaction")
        }
        mutations &+= 1
        preWriteSnapshot = nil
        CoreCall.must(cs_txn_rollback(txn), "Cancelling a write transaction")
        asyncWrites?.writeDidEnd()
        invalidateDeletedInstances()
        writeEndedWithoutCommit()
    }

    /// A delivery that came during the write waited for it to end; with no commit to schedule
    /// it again, it is scheduled now (docs/ARCHITECTURE.md, Change notifications).
    private func writeEndedWithoutCommit() {
        if ownsHandle, let n = notifier { n.writeEnded(self) }
    }

    /// Keeps the instances deleted in a write that did not commit invalidated: their
    /// generation no longer matches this Realm's.
    private func invalidateDeletedInstances() {
        for w in deletedInWrite { w.object?.generation = 0 }
        deletedInWrite = []
    }

    @discardableResult
    func refresh() -> Bool {
        verifyThread()
        if isInWriteTransaction || isFrozen { return false }
        guard let t = _txn else { _ = txn; return true }
        if ownsHandle, let n = notifier, n.hasObservers(self) {
            // (nil: inside a block of a delivery to this Realm, which a refresh does not move,
            // as in RealmSwift: docs/ARCHITECTURE.md, Change notifications)
            guard let c = n.deliverNow(self) else { return false }
            if RealmCore.testHooksArmed.load(ordering: .relaxed),
               let hook = RealmCore.afterRefreshDeliveryForTesting.withLock({ $0.removeValue(forKey: config.path) }) {
                hook()
            }
            // The delivery brought the Realm to the newest version the notifier computed and
            // told its observers of exactly that version: a commit that landed since is theirs
            // at the next delivery, and the Realm stays where they were told it is, as
            // realm-core's refresh advances to the version its notifiers were computed at.
            // (Not told: the Realm could not be brought there, and advances on its own.)
            if c.told { return c.moved }
        }
        var moved = false
        CoreCall.must(cs_txn_advance(t, &moved), "Refreshing")
        if moved { mutations &+= 1 }
        return moved
    }

    func invalidate() {
        verifyThread()
        // A frozen Realm keeps its version for as long as a frozen value uses it.
        if isFrozen { return }
        if isInWriteTransaction { cancelWrite() }
        if let t = _txn { cs_txn_end(t) }
        _txn = nil
        generation &+= 1
        mutations &+= 1
    }

    /// Records that the data this instance reads changed (for cached results).
    @inline(__always)
    func didMutate() { mutations &+= 1 }

    /// Traps outside a write transaction.
    func verifyWrite(_ what: @autoclosure () -> String = "modify objects") {
        verifyThread()
        if isFrozen { preconditionFailure("Can't perform transactions on a frozen Realm") }
        if !isInWriteTransaction {
            preconditionFailure("Cannot \(what()) outside of a write transaction.")
        }
    }

    // MARK: Classes

    /// The binding of a model class, trapping with RealmSwift's message if it is not in the
    /// schema.
    func info(for type: ObjectBase.Type) -> ClassInfo {
        if let info = infos[ObjectIdentifier(type)] { return info }
        let name = type.className()
        if type == DynamicObject.self {
            preconditionFailure("Use dynamicObjects(_:) to read objects of a class by name")
        }
        if let info = infosByName[name], info.objectSchema.objectClass == DynamicObject.self {
            return info
        }
        preconditionFailure("Object type '\(name)' is not managed by the Realm. If using a custom "
                            + "`objectTypes` array in your configuration, add `\(name)` to the list "
                            + "of `objectTypes`.")
    }

    func info(named name: String) -> ClassInfo? { infosByName[name] }

    /// A managed instance of `info`'s class for the object `key` (not checked for existence:
    /// the accessor finds its row on first use).
    func object(_ info: ClassInfo, key: Int64) -> ObjectBase {
        let o = info.objectSchema.objectClass.init()
        attach(o, info, key: key)
        return o
    }

    /// A managed instance of `info`'s class reading through `accessor` (an object of its table).
    func object(_ info: ClassInfo, accessor: cs_obj) -> ObjectBase {
        let o = info.objectSchema.objectClass.init()
        attach(o, info, accessor: accessor)
        return o
    }

    /// The next object of a pass over keys taken at `stamp`, or nil if the Realm's state moved
    /// since (the caller then checks each key). `cursor` is the accessor of the previous object
    /// of the pass when no `spare` holds it: the next key is usually the next row of its leaf.
    /// `spare` is the instance the pass gave last: for a class whose instances hold only their
    /// accessor, its accessor is moved to the next row in place when the pass holds the only
    /// reference to it (the loop did not keep it), so
    /// a loop that reads each object and lets it go allocates no instance per element and
    /// retains nothing per element (no core or class reference counting, which frozen
    /// Realms read from several threads would contend on).
    @usableFromInline
    func nextObject(_ info: Unmanaged<ClassInfo>, key: Int64, stamp: (UInt64, UInt64, UInt64),
                    cursor: inout cs_obj, spare: inout ObjectBase?) -> ObjectBase? {
        guard let t = _txn, (cs_txn_version(t), mutations, generation) == stamp else { return nil }
        return info._withUnsafeGuaranteedRef { info in
            guard info.reusesAccessors else {
                var c = cs_obj()
                cs_obj_prepare(t, info.table, key, &cursor, &c)
                if c.leaf == nil { _ = cs_obj_exists(&c) }
                cursor = c
                return object(info, accessor: c)
            }
            // the spare's accessor is the previous object's: moved in place (`cs_obj_advance`),
            // not copied out of a new one, whose fields the C side has just written one by one
            if isKnownUniquelyReferenced(&spare), let s = spare, s.cobj.txn == t {
                cs_obj_advance(&s.cobj, key)
                if s.cobj.leaf == nil { _ = cs_obj_exists(&s.cobj) }
                return s
            }
            var c = cs_obj()
            if let s = spare, s.cobj.txn == t {
                cs_obj_prepare(t, info.table, key, &s.cobj, &c)
            } else {
                cs_obj_prepare(t, info.table, key, &cursor, &c)
            }
            if c.leaf == nil { _ = cs_obj_exists(&c) }
            cursor = c
            let o = object(info, accessor: c)
            spare = o
            return o
        }
    }

    /// Makes `o` an accessor of row `key` of `info`'s table.
    func attach(_ o: ObjectBase, _ info: ClassInfo, key: Int64) {
        var c = cs_obj()
        cs_obj_prepare(txn, info.table, key, nil, &c)
        // A frozen object may be read from several threads at once: position its accessor now,
        // so that reads never write to it (a frozen transaction's positions never go stale).
        if isFrozen { _ = cs_obj_exists(&c) }
        attach(o, info, accessor: c)
    }

    /// Makes `o` read and write through `accessor` (an object of `info`'s table).
    func attach(_ o: ObjectBase, _ info: ClassInfo, accessor: cs_obj) {
        point(o, info, at: accessor)
        bind(o, info)
    }

    /// Makes `o` the accessor of `row` (an object of `info`'s table), not yet bound: the caller
    /// stores its values or binds it (`bind`) next.
    func point(_ o: ObjectBase, _ info: ClassInfo, at row: cs_obj) {
        o.core = self
        o.info = info
        o.generation = generation
        o.cobj = row
    }

    /// Points the legacy boxes of `o` at their columns and, for Encodable classes, every
    /// @Persisted wrapper too (other wrappers find their column on first use).
    func bind(_ o: ObjectBase, _ info: ClassInfo) {
        if info.legacyBindings.isEmpty && !info.bindsEagerly { return }
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(o).toOpaque())
        if info.bindsEagerly {
            for b in info.bindings {
                b.field.bind(at: base + b.offset, column: b.col, object: o)
            }
        }
        for b in info.legacyBindings {
            let box = base.load(fromByteOffset: b.offset, as: AnyObject.self)
            (box as? LegacyPropertyBox)?.attach(owner: o, column: b.col)
        }
    }
}

/// A weak reference to an object instance.
struct WeakObject {
    weak var object: ObjectBase?
}
