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

    init(core: RealmCore?, root: Root, predicates: [(String, [Any])] = [], clauses: [Clause] = []) {
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
        case .table, .detached: return false
        }
    }

    var isPlain: Bool { predicates.isEmpty && clauses.isEmpty }

    // MARK: Derived results

    func adding(predicate text: String, _ args: [Any]) -> ResultsBase {
        ResultsBase(core: realmCore, root: root, predicates: predicates + [(text, args)], clauses: clauses)
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
            case .distinct(let k): probes = k.map { ("distinct on", $0, .distinct([$0])) }
            }
            for (verb, keyPath, probe) in probes {
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

    /// Parses the query (once per invalidation generation: it then follows the transaction).
    func compiledQuery() throws -> OpaquePointer {
        if let query, queryGeneration == core.generation { return query }
        if let query { cs_query_free(query) }
        query = nil
        let text = queryText
        let args = try QueryArguments(predicates.flatMap(\.1), core: core)
        var q: OpaquePointer?
        var rc: Int32 = 0
        var failure = ""
        let entries = core.nameMap
        entries.withUnsafeBufferPointer { e in
        var names = cs_name_map(entries: e.baseAddress, count: e.count)
        args.values.withUnsafeBufferPointer { a in
            switch root {
            case .table(let info):
                rc = cs_query_new_named(core.txn, info.table, text, text.utf8.count, a.baseAddress, a.count, &names, &q)
            case .backlinks(let owner, let table, let col, _):
                _ = owner.verifyReadable()
                rc = cs_query_new_backlinks_named(&owner.cobj, table, col, text, text.utf8.count, a.baseAddress, a.count,
                                                  &names, &q)
            case .collection(let c, _):
                c.open { coll in
                    rc = cs_query_new_coll_named(coll, text, text.utf8.count, a.baseAddress, a.count, &names, &q)
                }
            case .detached:
                preconditionFailure("detached results have no query")
            }
            if rc != 0 { failure = CoreCall.lastMessage }
        }
        }
        if rc != 0 { throw Realm.Error(.invalidInput, failure) }
        query = q
        queryGeneration = core.generation
        return q!
    }

    /// The compiled query, trapping with the parser's message (predicates were checked when
    /// the results were made, so this fails only if the schema changed under them).
    func mustQuery() -> OpaquePointer {
        do { return try compiledQuery() } catch { preconditionFailure(clauseFailure() ?? "\(error)") }
    }

    private var currentStamp: (UInt64, UInt64, UInt64) { core.stateStamp }

    /// The object keys (or positions) in result order, recomputed if stale.
    func currentKeys() -> [Int64] {
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

    var count: Int {
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
    func aggregate(_ op: cs_aggregate, property: String?) -> StoredValue {
        if isDetached { return op == CS_AGG_SUM ? .int(0) : .null }
        core.verifyThread()
        var col: UInt32 = CS_NONE
        if let property {
            guard let info = self.info, let p = info.objectSchema[property], let c = info.column(named: property) else {
                preconditionFailure("Invalid property name '\(property)' for class '\(self.info?.objectSchema.className ?? "?")'.")
            }
            if ![.int, .float, .double, .decimal128, .date, .any].contains(p.type) || p.isCollection {
                preconditionFailure("Cannot compute \(Self.opName(op)) of property '\(property)' of type '\(p.type)'")
            }
            if op == CS_AGG_SUM || op == CS_AGG_AVG, p.type == .date {
                preconditionFailure("Cannot compute \(Self.opName(op)) of property '\(property)' of type 'date'")
            }
            col = c
        }
        var out = cs_value()
        let rc = cs_query_aggregate(mustQuery(), col, op, &out)
        if rc == Int32(CS_OVERFLOW) { preconditionFailure("The sum of '\(property ?? "self")' overflows 64 bits") }
        CoreCall.must(rc, "Computing \(Self.opName(op))")
        return core.stored(from: out)
    }

    static func opName(_ op: cs_aggregate) -> String {
        switch op {
        case CS_AGG_MIN: return "minimum"
        case CS_AGG_MAX: return "maximum"
        case CS_AGG_SUM: return "sum"
        case CS_AGG_AVG: return "average"
        default: return "count"
        }
    }
}

/// The objects of a class in a Realm, the objects linking to one object, or a query over a
/// collection: a live, lazy view (RealmSwift's `Results`). It shows the Realm's current state
/// each time it is read (after `refresh()`, a commit, or a write in the same transaction), and
/// reads objects only when they are accessed; `count` and aggregates run in the core.
///
/// ```swift
/// let puppies = realm.objects(Dog.self).filter("age < %@", 2).sorted(byKeyPath: "name")
/// print(puppies.count, puppies.first?.name ?? "", puppies.average(ofProperty: "age") as Double?)
/// ```
public struct Results<Element: RealmCollectionValue>: RealmCollection {
    let base: ResultsBase

    init(base: ResultsBase) {
        self.base = base
    }

    init(core: RealmCore, source: ResultsBase.Root) {
        base = ResultsBase(core: core, root: source)
    }

    public typealias Index = Int

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { count }

    /// The number of elements (computed in the core; no element is read).
    public var count: Int { base.count }

    /// The element at `position`.
    public subscript(position: Int) -> Element {
        Element._rlmDecode(_Stored(base.element(at: position)))
    }

    /// The Realm the elements belong to.
    public var realm: Realm? { base.realmCore.map { Realm(core: $0) } }

    /// Whether the results can no longer be read (their owner was deleted or the Realm
    /// invalidated).
    public var isInvalidated: Bool { base.isInvalidated }

    /// Implementation detail: the query these results run.
    public var _rlmQueryRoot: _RealmQueryRoot? { _RealmQueryRoot(base: base) }

    /// Iterates the elements as they are when iteration starts.
    public func makeIterator() -> RLMIterator<Element> {
        RLMIterator(snapshotOf: base)
    }

    /// `Results<Dog> <n> ( [0] Dog { ... }, ... )`, as RealmSwift prints results.
    public var description: String {
        describe(depth: 0)
    }
}

/// Iterates a collection as it was when iteration started (RealmSwift's `RLMIterator`): the
/// object keys are taken then and each object is read when reached (objects deleted meanwhile
/// are skipped); a collection of values is copied then.
public struct RLMIterator<Element: RealmCollectionValue>: IteratorProtocol {
    @usableFromInline let base: ResultsBase?
    @usableFromInline let keys: [Int64]
    @usableFromInline let values: [Element]
    @usableFromInline var position = 0
    /// For objects of exactly `Element`'s class: the class and the Realm (kept alive by `base`)
    /// and the Realm's state when the keys were taken. While that state holds, every key still
    /// names an object, so `next()` makes the accessor without a cast or an existence check.
    @usableFromInline let direct: (info: Unmanaged<ClassInfo>, core: Unmanaged<RealmCore>, stamp: (UInt64, UInt64, UInt64))?
    /// The accessor of the last object made on the direct path: the next key is usually the
    /// next row of its cluster leaf, so the next accessor starts positioned without a descent.
    @usableFromInline var cursor = cs_obj()

    init(base: ResultsBase, keys: [Int64]) {
        self.base = base
        self.keys = keys
        self.values = []
        if let info = base.info, ObjectIdentifier(info.objectSchema.objectClass) == ObjectIdentifier(Element.self) {
            let core = base.core
            direct = (Unmanaged.passUnretained(info), Unmanaged.passUnretained(core), core.stateStamp)
        } else {
            direct = nil
        }
    }

    init(values: [Element]) {
        self.base = nil
        self.keys = []
        self.values = values
        self.direct = nil
    }

    /// An iterator over a managed collection's snapshot (keys for objects, values otherwise).
    init(snapshotOf base: ResultsBase) {
        if base.info != nil {
            self.init(base: base, keys: base.currentKeys())
        } else {
            self.init(values: base.currentKeys().map { Element._rlmDecode(_Stored(base.element(forKey: $0))) })
        }
    }

    /// The next element. The common case (objects of exactly `Element`'s class, nothing
    /// written since the pass began) is inlined into the caller, specialized for `Element`.
    @inlinable
    public mutating func next() -> Element? {
        if let direct, position < keys.count {
            let key = keys[position]
            let made = direct.core._withUnsafeGuaranteedRef {
                $0.nextObject(direct.info, key: key, stamp: direct.stamp, cursor: &cursor)
            }
            if let made {
                position += 1
                // `Element` is the object's own class (checked when the iterator was made).
                return unsafeBitCast(made, to: Element.self)
            }
        }
        return nextChecked()
    }

    /// The next element the slow way: values, objects seen through another class, or keys
    /// that may name deleted objects (each is checked; deleted ones are skipped).
    @usableFromInline
    mutating func nextChecked() -> Element? {
        if keys.isEmpty {
            guard position < values.count else { return nil }
            position += 1
            return values[position - 1]
        }
        guard let base else { return nil }
        while position < keys.count {
            let key = keys[position]
            position += 1
            let value = base.element(forKey: key)
            if case .object(let o) = value, o.isInvalidated { continue }
            return Element._rlmDecode(_Stored(value))
        }
        return nil
    }
}

/// The iterator of `Results` (the same snapshot iterator every collection uses).
public typealias ResultsIterator<Element: RealmCollectionValue> = RLMIterator<Element>

extension Results: Encodable where Element: Encodable {}

extension Results: _DynamicSequence {
    var dynamicElements: [Any] { map { $0 as Any } }
}

/// The objects whose link property points at an object: computed backlinks (RealmSwift's
/// `LinkingObjects`). Declare them with `@Persisted(originProperty:)`; they are empty while
/// the owning object is unmanaged.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted(originProperty: "dogs") var owners: LinkingObjects<Person>
/// }
/// ```
public struct LinkingObjects<Element: ObjectBase & RealmCollectionValue>: RealmCollection {
    /// The name of the link property in `Element` these are the backlinks of.
    public let propertyName: String
    let base: ResultsBase?

    /// Backlinks through `propertyName` of `type` (the legacy declaration form).
    public init(fromType type: Element.Type, property propertyName: String) {
        self.propertyName = propertyName
        self.base = nil
    }

    init(propertyName: String, base: ResultsBase?) {
        self.propertyName = propertyName
        self.base = base
    }

    public typealias Index = Int
    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of linking objects.
    public var endIndex: Int { count }
    /// The number of linking objects (0 when the owner is unmanaged).
    public var count: Int { base?.count ?? 0 }

    /// The linking object at `position`.
    public subscript(position: Int) -> Element {
        guard let base else { preconditionFailure("Index \(position) is out of bounds (must be less than 0).") }
        return Element._rlmDecode(_Stored(.object(base.object(at: position))))
    }

    /// The Realm of the owning object, or nil if it is unmanaged.
    public var realm: Realm? { base?.realmCore.map { Realm(core: $0) } }

    /// Whether the owning object was deleted or its Realm invalidated.
    public var isInvalidated: Bool { base?.isInvalidated ?? false }

    /// `LinkingObjects<Person> <n> ( ... )`.
    public var description: String {
        describe(depth: 0)
    }

    /// Iterates the linking objects as they are when iteration starts.
    public func makeIterator() -> RLMIterator<Element> {
        guard let base else { return RLMIterator(values: []) }
        return RLMIterator(snapshotOf: base)
    }

    /// Implementation detail: the query over the backlinks (empty, detached results while the
    /// owner is unmanaged: they filter and sort to empty results, as in RealmSwift).
    public var _rlmQueryRoot: _RealmQueryRoot? { _RealmQueryRoot(base: base ?? ResultsBase.detached()) }
}

extension LinkingObjects: _RealmSchemaDiscoverable, _Persistable {
    public static var _rlmShape: _PropertyShape {
        _PropertyShape(.linkingObjects, collection: .linkingObjects, objectType: Element.self)
    }
    public static func _rlmDefaultValue() -> LinkingObjects<Element> {
        LinkingObjects(propertyName: "", base: nil)
    }
    public static var _rlmCachesAccessor: Bool { true }
    /// `index` is the property's position in the owner's schema (bound by `ClassInfo`).
    public static func _rlmGet(_ obj: ObjectBase, _ index: UInt32) -> LinkingObjects<Element> {
        guard let info = obj.info, let core = obj.core else { return _rlmDefaultValue() }
        let i = Int(index)
        let name = info.objectSchema.allProperties[i].linkOriginPropertyName ?? ""
        guard let (table, col) = info.backlinks[i], let origin = info.targets[i] else {
            return LinkingObjects(propertyName: name, base: nil)
        }
        return LinkingObjects(propertyName: name,
                              base: ResultsBase(core: core, source: .backlinks(obj, table, col, origin)))
    }
    public static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: LinkingObjects<Element>) {
        preconditionFailure("LinkingObjects properties are read-only")
    }
    public static func _rlmStore(_ value: LinkingObjects<Element>, _ obj: ObjectBase, _ col: UInt32,
                                 _ policy: Realm.UpdatePolicy) {}
    public static func _rlmFromAny(_ value: Any) -> LinkingObjects<Element>? { nil }
}


