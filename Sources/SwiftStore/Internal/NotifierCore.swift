import CStore
import Foundation

/// The core's notifier of one file, for `FileNotifier` (docs/ARCHITECTURE.md, Change
/// notifications): its own handle on the file, the core notifier, and the watches made on it.
/// Callers serialise every call (FileNotifier's lock), except `wait`, which only the notifier's
/// thread calls, before it closes the notifier.
final class NotifierCore: @unchecked Sendable {
    /// A watch on the core notifier.
    typealias Watch = OpaquePointer

    /// Most properties in one observed key path (also the depth of the default deep filter).
    static let maxKeyPathDepth = Int(CS_KEYPATH_MAX)

    private let db: OpaquePointer
    private let notifier: OpaquePointer

    /// Whether `close` closes the notifier's handle (a notifier opened at an older version
    /// borrows its parent's, `watch(from:_:)`).
    private let ownsHandle: Bool

    private init(borrowing db: OpaquePointer, notifier: OpaquePointer) {
        self.db = db
        self.notifier = notifier
        ownsHandle = false
    }

    init(_ config: Realm.Configuration) throws {
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
        ownsHandle = true
    }

    /// Set by `close`: every later call traps instead of reaching freed memory.
    private var closed = false

    /// Frees the notifier (its watches must be freed) and closes the handle.
    func close() {
        precondition(!closed, "The notifier was closed twice")
        closed = true
        cs_notifier_close(notifier)
        if ownsHandle { cs_db_close(db) }
    }

    var commitCounter: UInt32 { cs_db_commit_counter(db) }
    var version: UInt64 { cs_notifier_version(notifier) }

    /// Computes the newest version's change sets; whether the version moved (false on a failure,
    /// which the next commit retries).
    @discardableResult
    func advance() -> Bool {
        var moved = false
        return cs_notifier_advance(notifier, &moved) == 0 && moved
    }

    /// As `advance()`, also saying whether it failed.
    func tryAdvance() -> (moved: Bool, failed: Bool) {
        var moved = false
        let rc = cs_notifier_advance(notifier, &moved)
        return (rc == 0 && moved, rc != 0)
    }

    /// Whether the notifier computed the newest committed version (nothing newer to compute).
    var isNewest: Bool { cs_db_version(db) == cs_notifier_version(notifier) }

    /// As `advance()`, to exactly the version `core` reads (a Realm of the followed file, not
    /// writing, at a version no older than the notifier's): whether the version moved, and
    /// whether it succeeded.
    func advance(upTo core: RealmCore) -> (moved: Bool, ok: Bool) {
        var moved = false
        let rc = cs_notifier_advance_to(notifier, core.txn, &moved)
        return (rc == 0 && moved, rc == 0)
    }

    /// The file frozen at this notifier's version, read as `core` reads it (its schema); nil
    /// when it cannot be opened.
    func frozen(like core: RealmCore) -> RealmCore? {
        guard let t = cs_notifier_txn(notifier) else { return nil }
        return try? RealmCore.frozen(like: core, at: t)
    }

    /// Commits `core`'s write transaction without waking this notifier's thread from `wait`
    /// (`cs_txn_commit_sparing`): the caller computes the new version here itself. The
    /// notifier must stay open until this returns.
    func commit(sparing core: RealmCore) -> Int32 {
        precondition(!closed, "A commit spared a closed notifier")
        return cs_txn_commit_sparing(core.txn, notifier)
    }

    /// Commits `core`'s write transaction (waking every notifier).
    static func commit(_ core: RealmCore) -> Int32 { cs_txn_commit(core.txn) }

    /// Waits for a commit after `seen` or a `wake`.
    func wait(seen: UInt32) { _ = cs_notifier_wait(notifier, seen, -1) }

    func wake() {
        precondition(!closed, "The notifier was woken after it closed")
        cs_notifier_wake(notifier)
    }

    /// The version `core` reads.
    static func version(of core: RealmCore) -> UInt64 { cs_txn_version(core.txn) }

    /// As `follows`, without reading the notifier's transaction (which an advance replaces):
    /// from any thread.
    func isOnFileOf(_ core: RealmCore) -> Bool { cs_db_same_file(db, core.txn) }

    /// Whether `core` reads the file this notifier follows (not one created again at its path).
    func follows(_ core: RealmCore) -> Bool { cs_txn_same_file(core.txn, cs_notifier_txn(notifier)) }

    /// Moves `core` to exactly the notifier's version.
    func advance(_ core: RealmCore) {
        CoreCall.must(cs_txn_advance_to(core.txn, cs_notifier_txn(notifier)), "Advancing to the notified version")
        core.didMutate()
    }

    /// A watch made by `make` that starts at the version `core` reads, older than the
    /// notifier's, and holds the changes from there to the notifier's version, as if it had
    /// been made then (docs/ARCHITECTURE.md, Change notifications): it is made on a notifier
    /// opened at `core`'s version on this notifier's handle, which computes the versions in
    /// between for it alone and hands it over. `core` keeps its version pinned meanwhile. A
    /// failure gives a watch made at the notifier's version.
    func watch(from core: RealmCore, _ make: (NotifierCore) -> Watch?) -> Watch? {
        var t: OpaquePointer?
        guard follows(core), NotifierCore.version(of: core) < version, cs_notifier_open_at(db, core.txn, &t) == 0,
              let t else { return make(self) }
        let behind = NotifierCore(borrowing: db, notifier: t)
        defer { behind.close() }
        guard let w = make(behind) else { return nil }
        var moved = false
        if cs_notifier_advance_to(t, cs_notifier_txn(notifier), &moved) != 0 || cs_watch_move(w, notifier) != 0 {
            cs_watch_free(w)
            return make(self)
        }
        return w
    }

    /// A notifier at exactly this one's version on its handle (`cs_notifier_open_at`), on
    /// which watches are made outside FileNotifier's lock: it reads the file through its own
    /// frozen transaction, so the thread making watches on it needs nothing this notifier's
    /// callers serialise; `adopt` then hands them over (docs/ARCHITECTURE.md, Change
    /// notifications). Nil on a failure.
    func side() -> NotifierCore? {
        var t: OpaquePointer?
        guard cs_notifier_open_at(db, cs_notifier_txn(notifier), &t) == 0, let t else { return nil }
        return NotifierCore(borrowing: db, notifier: t)
    }

    /// Brings `side` (from `side()`) to this notifier's version, computing what changed in
    /// between for its watches, and moves `watches` (made on it) here, each with what it
    /// accumulated. False on a failure: the watches are then freed, those already moved here
    /// too (`cs_watch_free` unlinks a watch from whichever notifier holds it).
    func adopt(_ watches: [Watch], from side: NotifierCore) -> Bool {
        var moved = false
        var ok = cs_notifier_advance_to(side.notifier, cs_notifier_txn(notifier), &moved) == 0
        for w in watches where ok {
            if cs_watch_move(w, notifier) != 0 { ok = false }
        }
        if !ok {
            for w in watches { cs_watch_free(w) }
        }
        return ok
    }

    // MARK: Watches

    private static func keyPaths(_ paths: [[UInt32]]) -> [cs_keypath] {
        paths.map { cols in
            var kp = cs_keypath()
            withUnsafeMutableBytes(of: &kp.cols) { raw in
                let b = raw.bindMemory(to: UInt32.self)
                for (i, c) in cols.prefix(maxKeyPathDepth).enumerated() { b[i] = c }
            }
            kp.n = UInt32(min(cols.count, maxKeyPathDepth))
            return kp
        }
    }

    /// `gone`: nil (instead of a trap) when the object the watch hangs from does not exist at
    /// the notifier's version (a collection or backlinks whose owner was deleted before the
    /// notifier thread made their watch).
    private func make(_ paths: [[UInt32]], gone: Bool = false,
                      _ body: (UnsafePointer<cs_keypath>?, Int) -> (Int32, OpaquePointer?)) -> Watch? {
        let kps = NotifierCore.keyPaths(paths)
        let (rc, w) = kps.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
        if gone && rc == Int32(CS_NOTFOUND) { return nil }
        if rc != 0 { preconditionFailure("Cannot observe: \(CoreCall.lastMessage)") }
        return w
    }

    /// A watch over the results of `base`, a Results over a table (deep filter by default):
    /// what it needs from `base`'s Realm (the query text, its arguments and the class names) is
    /// read now on `base`'s thread and copied; the returned maker runs the query on whichever
    /// thread makes the watch (the notifier's: docs/ARCHITECTURE.md, Change notifications) and
    /// holds nothing of `base`'s Realm, which may then be let go on its own thread only.
    static func queryWatchMaker(_ base: ResultsBase, table: UInt32, paths: [[UInt32]]) -> (NotifierCore) -> Watch? {
        let core = base.core
        let text = base.queryText
        let args = CoreCall.must { try QueryArguments(base.predicates.flatMap(\.1), core: core) }
        args.detachFromRealm()
        let names = NameMapCopy(core.nameMap)
        return { n in n.watchQuery(text: text, args: args, entries: names.entries, table: table, paths: paths) }
    }

    private func watchQuery(text: String, args: QueryArguments, entries: [cs_name_map_entry], table: UInt32,
                            paths: [[UInt32]]) -> Watch? {
        make(paths) { p, np in
            var w: OpaquePointer?
            let rc = entries.withUnsafeBufferPointer { e in
                var names = cs_name_map(entries: e.baseAddress, count: e.count)
                return args.values.withUnsafeBufferPointer { a in
                    cs_watch_query(notifier, table, text, text.utf8.count, a.baseAddress, a.count, &names, p, np,
                                   Int32(CS_WATCH_DEEP), &w)
                }
            }
            return (rc, w)
        }
    }

    /// Makes `make`'s watch, a collection's or backlinks' watch behind `base` (a query over that
    /// collection), also report the changes `base`'s filter and sort read of the elements
    /// (through links and backlinks), which may change the results while the collection stays as
    /// it was (`cs_watch_depend_query`). What it needs of `base` is copied now, as for
    /// `queryWatchMaker`.
    static func dependingOnQuery(_ base: ResultsBase, _ make: @escaping (NotifierCore) -> Watch?) -> (NotifierCore) -> Watch? {
        guard base.info != nil else { return make }
        let core = base.core
        let text = base.queryText
        let args = CoreCall.must { try QueryArguments(base.predicates.flatMap(\.1), core: core) }
        args.detachFromRealm()
        let names = NameMapCopy(core.nameMap)
        return { n in
            guard let w = make(n) else { return nil }
            let rc = names.entries.withUnsafeBufferPointer { e in
                var map = cs_name_map(entries: e.baseAddress, count: e.count)
                return args.values.withUnsafeBufferPointer { a in
                    cs_watch_depend_query(w, text, text.utf8.count, a.baseAddress, a.count, &map)
                }
            }
            if rc != 0 {
                let message = CoreCall.lastMessage
                cs_watch_free(w)
                preconditionFailure("Cannot observe: \(message)")
            }
            return w
        }
    }

    /// A watch over column `col` (a List, Set or Map) of object `key` of `table`; nil when that
    /// object does not exist at the notifier's version.
    func watchCollection(table: UInt32, key: Int64, col: UInt32, paths: [[UInt32]]) -> Watch? {
        make(paths, gone: true) { p, np in
            var w: OpaquePointer?
            return (cs_watch_coll(notifier, table, key, col, p, np, Int32(CS_WATCH_DEEP), &w), w)
        }
    }

    /// A watch over `c`, a collection nested in an AnyRealmValue (called on `c`'s thread,
    /// whose accessor names the owner, column and path).
    func watchNested(_ c: ManagedCollection) -> Watch? {
        var w: OpaquePointer?
        var rc: Int32 = 0
        c.open { rc = cs_watch_nested(notifier, $0, &w) }
        if rc != 0 { preconditionFailure("Cannot observe: \(CoreCall.lastMessage)") }
        return w
    }

    /// A watch over the objects of `originTable` linking to object `key` of `table` through
    /// `originColumn`; nil when that object does not exist at the notifier's version.
    func watchBacklinks(table: UInt32, key: Int64, originTable: UInt32, originColumn: UInt32, paths: [[UInt32]]) -> Watch? {
        make(paths, gone: true) { p, np in
            var w: OpaquePointer?
            return (cs_watch_backlinks(notifier, table, key, originTable, originColumn, p, np, Int32(CS_WATCH_DEEP), &w), w)
        }
    }

    /// A watch over one object (shallow by default).
    func watchObject(table: UInt32, key: Int64, paths: [[UInt32]]) -> Watch? {
        make(paths) { p, np in
            var w: OpaquePointer?
            return (cs_watch_object(notifier, table, key, p, np, Int32(CS_WATCH_SHALLOW), &w), w)
        }
    }

    func pending(_ w: Watch) -> Bool { cs_watch_pending(w) }
    func free(_ w: Watch) { cs_watch_free(w) }
    func discard(_ w: Watch) { cs_watch_discard(w) }

    /// What the watch accumulated, copied out (nil on a failure).
    func take(_ w: Watch) -> ChangePayload? {
        var c = cs_changeset()
        guard cs_watch_take(w, &c) == 0 else { return nil }
        var p = ChangePayload()
        p.initial = c.initial
        p.deleted = c.deleted
        p.stale = c.stale
        func ints(_ ptr: UnsafePointer<Int>?, _ n: Int) -> [Int] {
            n == 0 ? [] : Array(UnsafeBufferPointer(start: ptr, count: n))
        }
        p.deletions = ints(c.deletions, c.ndeletions)
        p.insertions = ints(c.insertions, c.ninsertions)
        p.modifications = ints(c.modifications, c.nmodifications)
        func strings(_ ptr: UnsafePointer<cs_value>?, _ n: Int) -> [String] {
            (0..<n).map { i in
                let v = ptr![i]
                return String(decoding: UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len), as: UTF8.self)
            }
        }
        p.keysDeleted = strings(c.keys_deleted, c.nkeys_deleted)
        p.keysInserted = strings(c.keys_inserted, c.nkeys_inserted)
        p.keysModified = strings(c.keys_modified, c.nkeys_modified)
        p.columns = c.ncolumns == 0 ? [] : Array(UnsafeBufferPointer(start: c.columns, count: c.ncolumns))
        p.version = c.version
        if c.has_keys { p.keys = c.nkeys == 0 ? [] : Array(UnsafeBufferPointer(start: c.keys, count: c.nkeys)) }
        return p
    }
}

extension ObjectBase {
    /// The object's key in its table (managed objects).
    var objectKey: Int64 { cobj.key }
}

/// A copy of a Realm's name map (`RealmCore.nameMap`) whose names it owns, for a watch maker
/// that outlives, or runs apart from, the Realm it was read from.
final class NameMapCopy: @unchecked Sendable {
    private(set) var entries: [cs_name_map_entry] = []

    init(_ map: [cs_name_map_entry]) {
        entries = map.map { e in
            cs_name_map_entry(table: e.table, col: e.col, public_name: e.public_name.map { UnsafePointer(strdup($0)!) })
        }
    }

    deinit {
        for e in entries { free(UnsafeMutablePointer(mutating: e.public_name)) }
    }
}
