import CStore
import Foundation

/// What a Results (or a managed collection's query) reads: a root (a table, one object's
/// backlinks, or a managed collection), then predicates, sort descriptors and distinct keys,
/// compiled into one query of the core's language.
///
/// The matching keys (object keys, or positions for a collection of values) are recomputed
/// lazily when the Realm's snapshot, its own writes or its invalidation generation moved since
/// they were computed; `count` of a whole table or collection never computes them.
@usableFromInline
final class ResultsBase {
    enum Root {
        case table(ClassInfo)
        case backlinks(ObjectBase, UInt32, UInt32, ClassInfo) // owner, origin table and column, origin class
        case collection(ManagedCollection, ClassInfo?)        // objects of that class, or values (nil)
        case detached                                         // the backlinks of an unmanaged object: empty
    }

    /// The Realm read from (nil only for `.detached`, which reads nothing).
    let realmCore: RealmCore?
    var core: RealmCore { realmCore! }
    let root: Root
    let predicates: [(String, [Any])]
    /// The sorted() and distinct() calls in call order: the core applies SORT and DISTINCT
    /// clauses in the order written (a later SORT is the primary order, a DISTINCT keeps the
    /// first object of each value in the order so far).
    enum Clause {
        case sort([SortDescriptor])
        case distinct([String])
    }
    let clauses: [Clause]
    private var keys: [Int64] = []
    private var stamp: (UInt64, UInt64, UInt64) = (UInt64.max, 0, 0)
    private var query: OpaquePointer?
    private var queryGeneration: UInt64 = 0

    /// The Realm's invalidation generation when these results were made: `invalidate()` ends
    /// them, as it ends objects.
    let generation: UInt64
    /// For results of a frozen Realm, which any thread may read at once: guards the keys and
    /// the compiled query they fill lazily (a query is used by one thread at a time).
    private let frozenLock: NSRecursiveLock?

    /// Runs `body` holding the frozen results' lock (directly for live results).
    @inline(__always)
    private func guarded<T>(_ body: () throws -> T) rethrows -> T {
        guard let frozenLock else { return try body() }
        frozenLock.lock()
        defer { frozenLock.unlock() }
        return try body()
    }

    init(core: RealmCore?, root: Root, predicates: [(String, [Any])] = [], clauses: [Clause] = []) {
        self.generation = core?.generation ?? 0
        self.frozenLock = core?.isFrozen == true ? NSRecursiveLock() : nil
        self.realmCore = core
        self.root = root
        self.predicates = predicates
        self.clauses = clauses
    }

    /// Empty results that stay empty whatever they are filtered or sorted by (RealmSwift's
    /// detached results behind an unmanaged object's LinkingObjects).
    static func detached() -> ResultsBase { ResultsBase(core: nil, root: .detached) }

    var isDetached: Bool { if case .detached = root { return true } else { return false } }

    convenience init(core: RealmCore, source: Root) {
        self.init(core: core, root: source)
    }

    deinit {
        if let query { cs_query_free(query) }
    }

    /// The class of the objects, or nil for a collection of values.
    var info: ClassInfo? {
        switch root {
        case .table(let info): return info
        case .backlinks(_, _, _, let info): return info
        case .collection(_, let info): return info
        case .detached: return nil
        }
    }

    var objectInfo: ClassInfo {
        guard let info else { preconditionFailure("This collection holds values, not objects") }
        return info
    }

    var isInvalidated: Bool {
        switch root {
        case .backlinks(let owner, _, _, _): return owner.isInvalidated
        case .collection(let c, _): return c.isInvalidated
        case .table: return realmCore.map { $0.generation != generation } ?? false
        case .detached: return false
        }
    }

    var isPlain: Bool { predicates.isEmpty && clauses.isEmpty }

    // MARK: Derived results

    /// The arguments are read now, when the query is built, as RealmSwift converts them: a
    /// collection argument's elements (its objects as links) as they are at this call, whatever
    /// is done with the results later (sorted, read, observed on the run loop or on a queue,
    /// frozen), which before each read it at their own time; and the predicates then hold no
    /// accessor and no Realm (docs/ARCHITECTURE.md, Queries).
    func adding(predicate text: String, _ args: [Any]) -> ResultsBase {
        ResultsBase(core: realmCore, root: root, predicates: predicates + [(text, args.map(LinkArgument.detaching))],
                    clauses: clauses)
    }

    /// A later sort is the primary order and the earlier one breaks its ties (as in RealmSwift).
    func sorted(_ descriptors: [SortDescriptor]) -> ResultsBase {
        ResultsBase(core: realmCore, root: root, predicates: predicates, clauses: clauses + [.sort(descriptors)])
    }

    func distinct(_ keys: [String]) -> ResultsBase {
        ResultsBase(core: realmCore, root: root, predicates: predicates, clauses: clauses + [.distinct(keys)])
    }

    // MARK: The query

    /// The predicates, sort and distinct as one text of the core's language.
    var queryText: String {
        var text: String
        switch predicates.count {
        case 0: text = "TRUEPREDICATE"
        case 1: text = predicates[0].0 // as written, so error positions are the caller's
        default: text = predicates.map { "(\($0.0))" }.joined(separator: " AND ")
        }
        for clause in clauses {
            switch clause {
            case .sort(let d) where !d.isEmpty:
                text += " SORT(" + d.map { "\($0.keyPath) \($0.ascending ? "ASC" : "DESC")" }.joined(separator: ", ") + ")"
            case .distinct(let k) where !k.isEmpty:
                text += " DISTINCT(\(k.joined(separator: ", ")))"
            default:
                break
            }
        }
        return text
    }

    /// When the query fails because of a sort or distinct key path, a message that names the
    /// key path (the query text with SORT and DISTINCT is the library's, not the caller's, so a
    /// position in it would mean nothing to them).
    func clauseFailure() -> String? {
        for clause in clauses {
            let probes: [(String, String, Clause)]
            switch clause {
            case .sort(let d): probes = d.map { ("sort on", $0.keyPath, .sort([$0])) }
            // RealmSwift checks distinct key paths with its sort check, whose message says
            // "sort" for both.
            case .distinct(let k): probes = k.map { ("sort on", $0, .distinct([$0])) }
            }
            for (verb, keyPath, probe) in probes {
                if let missing = missingProperty(in: keyPath) {
                    return "Cannot \(verb) key path '\(keyPath)': property '\(missing)' does not exist."
                }
                let alone = ResultsBase(core: realmCore, root: root, predicates: [], clauses: [probe])
                do { _ = try alone.compiledQuery() } catch let e as Realm.Error {
                    var reason = e.message
                    if let r = reason.range(of: #" at \d+:\d+$"#, options: .regularExpression) { reason.removeSubrange(r) }
                    return "Cannot \(verb) key path '\(keyPath)': \(reason)"
                } catch {
                    return "Cannot \(verb) key path '\(keyPath)': \(error)"
                }
            }
        }
        return nil
    }

    /// The first property of `keyPath` that its class lacks, as `Class.property` (RealmSwift's
    /// words for it), following links through the schema; nil when every step exists or the
    /// elements are not objects.
    private func missingProperty(in keyPath: String) -> String? {
        guard var schema = info?.objectSchema else { return nil }
        for name in keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init) {
            guard let property = schema[name] else { return "\(schema.className).\(name)" }
            guard let target = property.objectClassName, let next = realmCore?.schema[target] else { return nil }
            schema = next
        }
        return nil
    }

    /// Parses the query (once per invalidation generation: it then follows the transaction).
    func compiledQuery() throws -> OpaquePointer {
        try guarded { try compileQuery() }
    }

    private func compileQuery() throws -> OpaquePointer {
        if let query, queryGeneration == core.generation { return query }
        if let query { cs_query_free(query) }
        query = nil
        let text = queryText
        let args = try QueryArguments(predicates.flatMap(\.1), core: core)
        let txn = core.txn
        let q = try core.newQuery(args) { values, count, names, q in
            switch root {
            case .table(let info):
                return cs_query_new_named(txn, info.table, text, text.utf8.count, values, count, names, &q)
            case .backlinks(let owner, let table, let col, _):
                _ = owner.verifyReadable()
                return cs_query_new_backlinks_named(&owner.cobj, table, col, text, text.utf8.count, values, count, names, &q)
            case .collection(let c, _):
                var rc: Int32 = 0
                c.open { coll in rc = cs_query_new_coll_named(coll, text, text.utf8.count, values, count, names, &q) }
                return rc
            case .detached:
                preconditionFailure("detached results have no query")
            }
        }
        query = q
        queryGeneration = core.generation
        return q
    }

    /// The compiled query, trapping with the parser's message (predicates were checked when
    /// the results were made, so this fails only if the schema changed under them).
    func mustQuery() -> OpaquePointer {
        do { return try compiledQuery() } catch { preconditionFailure(clauseFailure() ?? "\(error)") }
    }

    private var currentStamp: (UInt64, UInt64, UInt64) { core.stateStamp }

    /// The object keys (or positions) in result order, recomputed if stale.
    func currentKeys() -> [Int64] {
        guarded { computeKeys() }
    }

    private func computeKeys() -> [Int64] {
        if isDetached { return [] }
        core.verifyThread()
        let now = currentStamp
        if now == stamp { return keys }
        if isPlain {
            switch root {
            case .table(let info):
                keys = core.allKeys(info)
            case .backlinks(let owner, let table, let col, _):
                _ = owner.verifyReadable()
                var n = 0
                CoreCall.must(cs_obj_backlink_count(&owner.cobj, table, col, &n), "Counting backlinks")
                var out: [Int64] = []
                out.reserveCapacity(n)
                for i in 0..<n {
                    var k: Int64 = 0
                    CoreCall.must(cs_obj_backlink_get(&owner.cobj, table, col, i, &k), "Reading backlinks")
                    out.append(k)
                }
                keys = out
            case .collection(let c, _):
                // Objects: the linked keys, read in one pass (no object is made); values: positions.
                keys = info != nil ? c.linkKeys() : (0..<Int64(c.count)).map { $0 }
            case .detached:
                keys = []
            }
        } else {
            let q = mustQuery()
            var ptr: UnsafeMutablePointer<Int64>?
            var n = 0
            CoreCall.must(cs_query_keys(q, &ptr, &n), "Running a query")
            keys = Array(UnsafeBufferPointer(start: ptr, count: n))
            cs_keys_free(ptr)
        }
        stamp = now
        return keys
    }

    /// Takes `newKeys` as the results at `version`: the keys a query watch computed for the
    /// change set being delivered (docs/ARCHITECTURE.md, Change notifications), so the first
    /// read in the block does not run the query again. Only a table query whose Realm reads
    /// exactly that version, outside a write, takes them; anything else computes its own.
    func adoptKeys(_ newKeys: [Int64], version: UInt64) {
        guard case .table = root, frozenLock == nil, !core.isInWriteTransaction else { return }
        let now = currentStamp
        guard now.0 == version else { return }
        keys = newKeys
        stamp = now
    }

    /// Whether the keys are current without running anything (for tests).
    var hasCurrentKeys: Bool { guarded { !isDetached && stamp == currentStamp } }

    var count: Int { guarded { computeCount() } }

    private func computeCount() -> Int {
        if isDetached { return 0 }
        core.verifyThread()
        if isPlain {
            switch root {
            case .table(let info):
                var n: UInt64 = 0
                CoreCall.must(cs_table_count(core.txn, info.table, &n), "Counting objects")
                return Int(n)
            case .backlinks(let owner, let table, let col, _):
                if owner.isInvalidated { return 0 }
                var n = 0
                CoreCall.must(cs_obj_backlink_count(&owner.cobj, table, col, &n), "Counting backlinks")
                return n
            case .collection(let c, _):
                return c.isInvalidated ? 0 : c.count
            case .detached:
                return 0
            }
        }
        if stamp == currentStamp { return keys.count }
        var n: UInt64 = 0
        CoreCall.must(cs_query_count(mustQuery(), &n), "Counting a query's matches")
        return Int(n)
    }

    /// The element at `i`: an object, or a value of a collection of values.
    func element(at i: Int) -> StoredValue {
        let k = currentKeys()
        precondition(i >= 0 && i < k.count, "Index \(i) is out of bounds (must be less than \(k.count)).")
        return element(forKey: k[i])
    }

    func element(forKey key: Int64) -> StoredValue {
        if let info { return .object(core.object(info, key: key)) }
        guard case .collection(let c, _) = root else { return .null }
        return c.get(Int(key))
    }

    func object(at i: Int) -> ObjectBase {
        guard case .object(let o) = element(at: i) else { preconditionFailure("Not an object") }
        return o
    }

    /// An aggregate over the matches: of property `property` (objects), or of the values.
    func aggregate(_ op: AggregateOp, property: String?) -> StoredValue {
        guarded { computeAggregate(op, property: property) }
    }

    private func computeAggregate(_ op: AggregateOp, property: String?) -> StoredValue {
        if isDetached { return op == .sum ? .int(0) : .null }
        core.verifyThread()
        var col: UInt32 = CS_NONE
        if let property {
            guard let info = self.info, let p = info.objectSchema[property], let c = info.column(named: property) else {
                preconditionFailure("Invalid property name '\(property)' for class '\(self.info?.objectSchema.className ?? "?")'.")
            }
            if ![.int, .float, .double, .decimal128, .date, .any].contains(p.type) || p.isCollection {
                preconditionFailure("Cannot compute \(op.name) of property '\(property)' of type '\(p.type)'")
            }
            if op == .sum || op == .average, p.type == .date {
                preconditionFailure("Cannot compute \(op.name) of property '\(property)' of type 'date'")
            }
            col = c
        }
        var out = cs_value()
        let rc = cs_query_aggregate(mustQuery(), col, op.core, &out)
        if rc == Int32(CS_OVERFLOW) { preconditionFailure("The sum of '\(property ?? "self")' overflows 64 bits") }
        CoreCall.must(rc, "Computing \(op.name)")
        return core.stored(from: out)
    }
}

/// The aggregates `min`, `max`, `sum` and `average` (computed by the core for queries, by
/// `QueryOps.compute` for values in memory).
enum AggregateOp {
    case min, max, sum, average

    /// The core's aggregate.
    var core: cs_aggregate {
        switch self {
        case .min: return CS_AGG_MIN
        case .max: return CS_AGG_MAX
        case .sum: return CS_AGG_SUM
        case .average: return CS_AGG_AVG
        }
    }

    /// Its name in messages ("minimum").
    var name: String {
        switch self {
        case .min: return "minimum"
        case .max: return "maximum"
        case .sum: return "sum"
        case .average: return "average"
        }
    }
}
