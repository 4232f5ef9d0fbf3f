import Foundation

/// An ordered list of values or objects, as a property of an object (RealmSwift's `List`).
///
/// An unmanaged list behaves like an array. A managed list reads and writes the database: it
/// is live (always shows the current state of its Realm's transaction) and can be changed only
/// inside a write transaction. Adding an unmanaged object to a managed list adds the object to
/// the Realm.
///
/// ```swift
/// try realm.write { person.dogs.append(Dog(value: ["name": "Rex"])) }
/// ```
public final class List<Element: RealmCollectionValue>: RealmCollection, MutableCollection, _DynamicSequence {
    /// The elements of an unmanaged list.
    var unmanaged: [Element] = []
    /// The database side of a managed collection. Set once, when a collection declared
    /// without `@Persisted` (`let list = List<Int>()`) becomes its owner's property.
    @exclusivity(unchecked) var managed: ManagedCollection?

    /// Creates an empty unmanaged list.
    public init() {
        managed = nil
    }

    init(managed: ManagedCollection) {
        self.managed = managed
    }

    convenience init(managedBy owner: ObjectBase, column: UInt32) {
        self.init(managed: ManagedCollection(owner: owner, column: column))
    }

    // MARK: Collection

    public typealias Index = Int
    public typealias SubSequence = Slice<List<Element>>

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { count }

    /// The number of elements.
    public var count: Int { managed?.count ?? unmanaged.count }

    /// The element at `position`; setting it needs a write transaction when managed.
    public subscript(position: Int) -> Element {
        get {
            if let managed { return Element._rlmDecode(_Stored(managed.get(position))) }
            precondition(position >= 0 && position < unmanaged.count,
                         "Index \(position) is out of bounds (must be less than \(unmanaged.count)).")
            return unmanaged[position]
        }
        set {
            if let managed {
                managed.set(newValue._rlmEncode().value, at: position)
            } else {
                precondition(position >= 0 && position < unmanaged.count,
                             "Index \(position) is out of bounds (must be less than \(unmanaged.count)).")
                unmanaged[position] = newValue
            }
        }
    }

    /// The elements in `bounds`.
    public subscript(bounds: Range<Int>) -> Slice<List<Element>> {
        get { Slice(base: self, bounds: bounds) }
        set { replaceSubrange(bounds, with: Array(newValue)) }
    }

    // MARK: Realm members

    /// The Realm managing the list, or nil if unmanaged.
    public var realm: Realm? { managed?.owner.realm }

    /// Whether the owning object was deleted or its Realm invalidated.
    public var isInvalidated: Bool { managed?.isInvalidated ?? false }

    /// Iterates the list as it is when iteration starts (changing it meanwhile is safe).
    public func makeIterator() -> RLMIterator<Element> {
        guard let managed else { return RLMIterator(values: unmanaged) }
        return RLMIterator(snapshotOf: managed.queryBase())
    }

    /// The values of property `key` of every element, as objects (RealmSwift's typed form of
    /// `value(forKey:)`; nil values are `NSNull`).
    public func value(forKey key: String) -> [AnyObject] {
        map { KeyValueCoding.elementValue($0, forKey: key) as AnyObject }
    }

    /// Implementation detail: the query over the list's elements (nil while unmanaged).
    public var _rlmQueryRoot: _RealmQueryRoot? { managed.map { _RealmQueryRoot(base: $0.queryBase()) } }

    // MARK: Mutation

    /// Appends an element (adding an unmanaged object to the Realm).
    public func append(_ object: Element) {
        if let managed { managed.append(object._rlmEncode().value) } else { unmanaged.append(object) }
    }

    /// Appends every element of a sequence.
    public func append<S: Sequence>(objectsIn objects: S) where S.Element == Element {
        for o in Array(objects) { append(o) }
    }

    /// Inserts an element at `index` (0...count).
    public func insert(_ object: Element, at index: Int) {
        if let managed {
            managed.insert(object._rlmEncode().value, at: index)
        } else {
            precondition(index >= 0 && index <= unmanaged.count,
                         "Index \(index) is out of bounds (must be less than \(unmanaged.count + 1)).")
            unmanaged.insert(object, at: index)
        }
    }

    /// Inserts the elements of a collection at `index`.
    public func insert<C: Collection>(contentsOf newElements: C, at index: Int) where C.Element == Element {
        for (offset, e) in Array(newElements).enumerated() { insert(e, at: index + offset) }
    }

    /// Removes the element at `index` (a linked object stays in the Realm).
    public func remove(at index: Int) {
        if let managed {
            managed.remove(at: index)
        } else {
            precondition(index >= 0 && index < unmanaged.count,
                         "Index \(index) is out of bounds (must be less than \(unmanaged.count)).")
            unmanaged.remove(at: index)
        }
    }

    /// Removes the elements at `offsets`.
    public func remove(atOffsets offsets: IndexSet) {
        for i in offsets.reversed() { remove(at: i) }
    }

    /// Removes the elements in `bounds`.
    public func removeSubrange(_ bounds: Range<Int>) {
        for i in bounds.reversed() { remove(at: i) }
    }

    /// Removes the elements in `bounds`, any range expression (`1...2`, `..<3`, `2...`).
    public func removeSubrange<R: RangeExpression>(_ bounds: R) where R.Bound == Int {
        removeSubrange(bounds.relative(to: 0..<count))
    }

    /// Removes and returns the first element (the list must not be empty).
    @discardableResult
    public func removeFirst() -> Element {
        precondition(count > 0, "Can't remove the first element of an empty List")
        let e = self[0]
        remove(at: 0)
        return e
    }

    /// Removes the first `n` elements.
    public func removeFirst(_ n: Int) {
        precondition(n >= 0 && n <= count, "Can't remove more elements than the List holds")
        removeSubrange(0..<n)
    }

    /// Removes and returns the last element (the list must not be empty).
    @discardableResult
    public func removeLast() -> Element {
        precondition(count > 0, "Can't remove the last element of an empty List")
        let e = self[count - 1]
        remove(at: count - 1)
        return e
    }

    /// Removes the last `n` elements.
    public func removeLast(_ n: Int) {
        precondition(n >= 0 && n <= count, "Can't remove more elements than the List holds")
        removeSubrange((count - n)..<count)
    }

    /// Removes every element (linked objects stay in the Realm; embedded ones are deleted).
    public func removeAll() {
        if let managed { managed.removeAll() } else { unmanaged.removeAll() }
    }

    /// Replaces the element at `index`.
    public func replace(index: Int, object: Element) {
        self[index] = object
    }

    /// Replaces the elements in `subrange` with `newElements`.
    public func replaceSubrange<C: Collection>(_ subrange: Range<Int>, with newElements: C)
        where C.Element == Element
    {
        precondition(subrange.lowerBound >= 0 && subrange.upperBound <= count,
                     "Range \(subrange) is out of bounds (count \(count))")
        let items = Array(newElements)
        removeSubrange(subrange)
        insert(contentsOf: items, at: subrange.lowerBound)
    }

    /// Replaces the elements in `subrange`, any range expression, with `newElements`.
    public func replaceSubrange<C: Collection, R: RangeExpression>(_ subrange: R, with newElements: C)
        where C.Element == Element, R.Bound == Int
    {
        replaceSubrange(subrange.relative(to: 0..<count), with: newElements)
    }

    /// Moves the element at `from` so that it ends at `to`.
    public func move(from: Int, to: Int) {
        if let managed {
            managed.move(from: from, to: to)
        } else {
            precondition(from >= 0 && from < unmanaged.count && to >= 0 && to < unmanaged.count,
                         "Index out of bounds")
            let e = unmanaged.remove(at: from)
            unmanaged.insert(e, at: to)
        }
    }

    /// Moves the elements at `offsets` to before `destination`, as SwiftUI's `onMove` asks.
    public func move(fromOffsets offsets: IndexSet, toOffset destination: Int) {
        // Element moves (never remove + insert, which would delete embedded objects): the
        // offsets below the destination, last first, end just before it; those at or above it,
        // first first, start at it.
        let below = offsets.filter { $0 < destination }
        let above = offsets.filter { $0 >= destination }
        for (k, offset) in below.reversed().enumerated() { move(from: offset, to: destination - 1 - k) }
        for (k, offset) in above.enumerated() { move(from: offset, to: destination + k) }
    }

    /// Swaps the elements at `index1` and `index2`.
    public func swapAt(_ index1: Int, _ index2: Int) {
        if let managed {
            managed.swap(index1, index2)
        } else {
            unmanaged.swapAt(index1, index2)
        }
    }

    // MARK: Description

    /// `List<Element> <0x...> ( [0] value, ... )`, as RealmSwift prints lists.
    public var description: String {
        describe(depth: 0)
    }

    var dynamicElements: [Any] { map { $0 as Any } }
}

extension List: _RealmSchemaDiscoverable, _Persistable {
    public static var _rlmShape: _PropertyShape {
        var shape = Element._rlmShape
        shape.collection = .list
        return shape
    }
    public static func _rlmDefaultValue() -> List<Element> { List() }
    public static var _rlmCachesAccessor: Bool { true }
    public static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> List<Element> {
        List(managedBy: obj, column: col)
    }
    public static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: List<Element>) {
        _rlmStore(value, obj, col, .error)
    }
    public static func _rlmStore(_ value: List<Element>, _ obj: ObjectBase, _ col: UInt32,
                                 _ policy: Realm.UpdatePolicy) {
        let items = value.managed == nil ? value.unmanaged.map { $0._rlmEncode().value } : value.map { $0._rlmEncode().value }
        let target = ManagedCollection(owner: obj, column: col)
        target.removeAll()
        target.insertAll(items, policy: policy)
    }
    public static func _rlmStoredElements(_ value: List<Element>) -> [(key: String?, value: _Stored)] {
        Array(value).map { (nil, $0._rlmEncode()) }
    }
    public static func _rlmFromAny(_ value: Any) -> List<Element>? {
        // Always a new list: an object made from another must not share its collections.
        guard let items = CollectionDescription.elements(of: value) else { return nil }
        let list = List<Element>()
        for item in items {
            guard let e = Element._rlmFromAny(item) else { return nil }
            list.unmanaged.append(e)
        }
        return list
    }
}

extension List: Encodable where Element: Encodable {}

extension List: Decodable where Element: Decodable {
    /// Decodes an unmanaged list from an array.
    public convenience init(from decoder: Decoder) throws {
        self.init()
        var container = try decoder.unkeyedContainer()
        while !container.isAtEnd { unmanaged.append(try container.decode(Element.self)) }
    }
}

/// Shared text and input helpers for the collection types.
enum CollectionDescription {
    /// The elements of an array-like value (`[Any]`, a List, a set, a Results), or nil.
    static func elements(of value: Any) -> [Any]? {
        if let seq = value as? any _DynamicSequence { return seq.dynamicElements }
        if let a = value as? [Any] { return a }
        if let s = value as? NSArray { return s.map { $0 } }
        if let s = value as? any Sequence, !(value is String), !(value is [String: Any]) {
            return s.map { $0 as Any }
        }
        return nil
    }
}
