import CStore
import Foundation

/// Where a Results' objects come from, and the object keys it last computed.
///
/// The keys are recomputed lazily when the Realm's snapshot, its own writes or its
/// invalidation generation moved since they were computed; `count` of a whole table never
/// computes keys (one call into the core).
final class ResultsBase {
    enum Source {
        case table(ClassInfo)
        case backlinks(ObjectBase, UInt32, UInt32, ClassInfo) // owner, origin table, origin column, origin class
    }

    let core: RealmCore
    let source: Source
    private var keys: [Int64] = []
    private var stamp: (UInt64, UInt64, UInt64) = (UInt64.max, 0, 0)

    init(core: RealmCore, source: Source) {
        self.core = core
        self.source = source
    }

    var info: ClassInfo {
        switch source {
        case .table(let info): return info
        case .backlinks(_, _, _, let info): return info
        }
    }

    var isInvalidated: Bool {
        if case .backlinks(let owner, _, _, _) = source, owner.isInvalidated { return true }
        return false
    }

    private var currentStamp: (UInt64, UInt64, UInt64) {
        (cs_txn_version(core.txn), core.mutations, core.generation)
    }

    /// The object keys in result order, recomputed if stale.
    func currentKeys() -> [Int64] {
        core.verifyThread()
        let now = currentStamp
        if now == stamp { return keys }
        switch source {
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
        }
        stamp = now
        return keys
    }

    var count: Int {
        core.verifyThread()
        switch source {
        case .table(let info):
            var n: UInt64 = 0
            CoreCall.must(cs_table_count(core.txn, info.table, &n), "Counting objects")
            return Int(n)
        case .backlinks(let owner, let table, let col, _):
            if owner.isInvalidated { return 0 }
            var n = 0
            CoreCall.must(cs_obj_backlink_count(&owner.cobj, table, col, &n), "Counting backlinks")
            return n
        }
    }

    func object(at i: Int) -> ObjectBase {
        let k = currentKeys()
        precondition(i >= 0 && i < k.count, "Index \(i) is out of bounds (must be less than \(k.count)).")
        return core.object(info, key: k[i])
    }
}

/// The objects of a class in a Realm, or the objects linking to one object: a live, lazy view
/// (RealmSwift's `Results`). It shows the Realm's current state each time it is read (after
/// `refresh()`, a commit, or a write in the same transaction), and reads objects only when
/// they are accessed.
///
/// ```swift
/// let dogs = realm.objects(Dog.self)
/// print(dogs.count, dogs.first?.name ?? "")
/// ```
public struct Results<Element: RealmCollectionValue>: RandomAccessCollection, CustomStringConvertible {
    let base: ResultsBase

    init(core: RealmCore, source: ResultsBase.Source) {
        base = ResultsBase(core: core, source: source)
    }

    public typealias Index = Int

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of objects.
    public var endIndex: Int { count }

    /// The number of objects (one call into the core; no object is read).
    public var count: Int { base.count }

    /// The object at `position`.
    public subscript(position: Int) -> Element {
        Element._rlmDecode(_Stored(.object(base.object(at: position))))
    }

    /// The Realm the objects belong to.
    public var realm: Realm? { Realm(core: base.core) }

    /// Whether the results can no longer be read (the owner of backlinks was deleted).
    public var isInvalidated: Bool { base.isInvalidated }

    /// Iterates the objects as they are when iteration starts.
    public func makeIterator() -> ResultsIterator<Element> {
        ResultsIterator(base: base, keys: base.currentKeys())
    }

    /// `Results<Dog> <n> ( [0] Dog { ... }, ... )`, as RealmSwift prints results.
    public var description: String {
        CollectionDescription.describe("Results<\(base.info.objectSchema.className)>", self)
    }
}

/// Iterates a Results over the object keys it had when iteration started.
public struct ResultsIterator<Element: RealmCollectionValue>: IteratorProtocol {
    let base: ResultsBase
    let keys: [Int64]
    var position = 0

    init(base: ResultsBase, keys: [Int64]) {
        self.base = base
        self.keys = keys
    }

    /// The next object, skipping objects deleted since iteration started.
    public mutating func next() -> Element? {
        while position < keys.count {
            let key = keys[position]
            position += 1
            let o = base.core.object(base.info, key: key)
            if !o.isInvalidated { return Element._rlmDecode(_Stored(.object(o))) }
        }
        return nil
    }
}

extension Results: Encodable where Element: Encodable {
    /// Encodes the objects as an array.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.unkeyedContainer()
        for e in self { try container.encode(e) }
    }
}

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
public struct LinkingObjects<Element: ObjectBase>: RandomAccessCollection, CustomStringConvertible {
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
        return base.object(at: position) as! Element
    }

    /// The Realm of the owning object, or nil if it is unmanaged.
    public var realm: Realm? { base.map { Realm(core: $0.core) } }

    /// Whether the owning object was deleted or its Realm invalidated.
    public var isInvalidated: Bool { base?.isInvalidated ?? false }

    /// `LinkingObjects<Person> <n> ( ... )`.
    public var description: String {
        CollectionDescription.describe("LinkingObjects<\(Element.className())>", self)
    }
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

extension Results where Element: ObjectBase {
    init(core: RealmCore, backlinksOf owner: ObjectBase, table: UInt32, column: UInt32, origin: ClassInfo) {
        self.init(core: core, source: .backlinks(owner, table, column, origin))
    }
}
