import Foundation

/// A set of distinct values or objects, as a property of an object (RealmSwift's
/// `MutableSet`). Managed sets keep their elements in the core's value order; the order of an
/// unmanaged set is the order of insertion.
public final class MutableSet<Element: RealmCollectionValue>: RealmCollection, _DynamicSequence {
    var unmanaged: [Element] = []
    /// The database side of a managed collection. Set once, when a collection declared
    /// without `@Persisted` (`let list = List<Int>()`) becomes its owner's property.
    @exclusivity(unchecked) var managed: ManagedCollection?

    /// Creates an empty unmanaged set.
    public init() {
        managed = nil
    }

    init(managed: ManagedCollection) {
        self.managed = managed
    }

    convenience init(managedBy owner: ObjectBase, column: UInt32) {
        self.init(managed: ManagedCollection(owner: owner, column: column))
    }

    public typealias Index = Int

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { count }
    /// The number of elements.
    public var count: Int { managed?.count ?? unmanaged.count }

    /// The element at `position` (positions follow the set's order, which is unspecified).
    public subscript(position: Int) -> Element {
        if let managed { return Element._rlmDecode(_Stored(managed.get(position))) }
        precondition(position >= 0 && position < unmanaged.count,
                     "Index \(position) is out of bounds (must be less than \(unmanaged.count)).")
        return unmanaged[position]
    }

    /// The Realm managing the set, or nil if unmanaged.
    public var realm: Realm? { managed?.owner.realm }

    /// Whether the owning object was deleted or its Realm invalidated.
    public var isInvalidated: Bool { managed?.isInvalidated ?? false }

    /// Iterates the set as it is when iteration starts (changing it meanwhile is safe).
    public func makeIterator() -> RLMIterator<Element> {
        guard let managed else { return RLMIterator(values: unmanaged) }
        return RLMIterator(snapshotOf: managed.queryBase())
    }

    /// The values of property `key` of every element, as objects (RealmSwift's typed form of
    /// `value(forKey:)`; nil values are `NSNull`).
    public func value(forKey key: String) -> [AnyObject] {
        map { KeyValueCoding.elementValue($0, forKey: key) as AnyObject }
    }

    /// Implementation detail: the query over the set's elements (nil while unmanaged).
    public var _rlmQueryRoot: _RealmQueryRoot? { managed.map { _RealmQueryRoot(base: $0.queryBase()) } }

    /// Not available: a set has no order to search (RealmSwift traps too).
    public func index(of object: Element) -> Int? {
        preconditionFailure("index(of:) is not available on MutableSet")
    }

    /// Not available: a set has no order to search.
    public func index(matching predicate: NSPredicate) -> Int? {
        preconditionFailure("index(matching:) is not available on MutableSet")
    }

    /// Not available: a set has no order to search.
    public func index(matching predicateFormat: String, _ args: Any...) -> Int? {
        preconditionFailure("index(matching:) is not available on MutableSet")
    }

    /// Not available: a set has no order to search.
    public func index(matching isIncluded: (Query<Element>) -> Query<Bool>) -> Int? {
        preconditionFailure("index(matching:) is not available on MutableSet")
    }

    /// Whether the set holds `object`.
    public func contains(_ object: Element) -> Bool {
        if let managed { return managed.setFind(object._rlmEncode().value) != nil }
        return unmanaged.contains(object)
    }

    /// Inserts `object` if the set does not hold it (adding an unmanaged object to the Realm).
    public func insert(_ object: Element) {
        if let managed {
            managed.setInsert(object._rlmEncode().value)
        } else if !unmanaged.contains(object) {
            unmanaged.append(object)
        }
    }

    /// Inserts every element of a sequence.
    public func insert<S: Sequence>(objectsIn objects: S) where S.Element == Element {
        for o in Array(objects) { insert(o) }
    }

    /// Removes `object` if the set holds it.
    public func remove(_ object: Element) {
        if let managed {
            managed.setErase(object._rlmEncode().value)
        } else {
            unmanaged.removeAll { $0 == object }
        }
    }

    /// Removes every element.
    public func removeAll() {
        if let managed { managed.removeAll() } else { unmanaged.removeAll() }
    }

    /// Whether every element is also in `other`.
    public func isSubset(of other: MutableSet<Element>) -> Bool {
        allSatisfy { other.contains($0) }
    }

    /// Whether the sets share at least one element.
    public func intersects(_ other: MutableSet<Element>) -> Bool {
        contains { other.contains($0) }
    }

    /// Inserts every element of `other`.
    public func formUnion(_ other: MutableSet<Element>) {
        insert(objectsIn: Array(other))
    }

    /// Keeps only the elements also in `other`.
    public func formIntersection(_ other: MutableSet<Element>) {
        for e in Array(self) where !other.contains(e) { remove(e) }
    }

    /// Removes the elements of `other`.
    public func subtract(_ other: MutableSet<Element>) {
        for e in Array(other) { remove(e) }
    }

    /// `MutableSet<Element> <n> ( [0] value, ... )`.
    public var description: String {
        describe(depth: 0)
    }

    var dynamicElements: [Any] { map { $0 as Any } }
}

extension MutableSet: _RealmSchemaDiscoverable, _Persistable {
    public static var _rlmShape: _PropertyShape {
        var shape = Element._rlmShape
        shape.collection = .set
        return shape
    }
    public static func _rlmDefaultValue() -> MutableSet<Element> { MutableSet() }
    public static var _rlmCachesAccessor: Bool { true }
    public static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> MutableSet<Element> {
        MutableSet(managedBy: obj, column: col)
    }
    public static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: MutableSet<Element>) {
        _rlmStore(value, obj, col, .error)
    }
    public static func _rlmStore(_ value: MutableSet<Element>, _ obj: ObjectBase, _ col: UInt32,
                                 _ policy: Realm.UpdatePolicy) {
        let items = Array(value)
        let target = ManagedCollection(owner: obj, column: col)
        target.removeAll()
        for e in items { target.setInsert(e._rlmEncode().value, policy: policy) }
    }
    public static func _rlmStoredElements(_ value: MutableSet<Element>) -> [(key: String?, value: _Stored)] {
        Array(value).map { (nil, $0._rlmEncode()) }
    }
    public static func _rlmFromAny(_ value: Any) -> MutableSet<Element>? {
        guard let items = CollectionDescription.elements(of: value) else { return nil }
        let set = MutableSet<Element>()
        for item in items {
            guard let e = Element._rlmFromAny(item) else { return nil }
            set.insert(e)
        }
        return set
    }
}

extension MutableSet: Encodable where Element: Encodable {}

extension MutableSet: Decodable where Element: Decodable {
    /// Decodes an unmanaged set from an array.
    public convenience init(from decoder: Decoder) throws {
        self.init()
        var container = try decoder.unkeyedContainer()
        while !container.isAtEnd { insert(try container.decode(Element.self)) }
    }
}
