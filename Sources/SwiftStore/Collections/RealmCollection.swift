import Foundation

/// Implementation detail: the query a managed collection or Results runs in the core.
public struct _RealmQueryRoot {
    let base: ResultsBase
}

/// Implementation detail: what filtering, sorting and aggregates need from a collection — its
/// query in the core when managed, its elements when not.
public protocol _RealmQueryable {
    /// The type of the elements queries return.
    associatedtype _QueryElement: RealmCollectionValue
    /// The query of a managed collection; nil while unmanaged.
    var _rlmQueryRoot: _RealmQueryRoot? { get }
    /// The elements of an unmanaged collection.
    var _rlmUnmanagedElements: [_QueryElement] { get }
}

/// The interface shared by `Results`, `List`, `MutableSet`, `LinkingObjects` and
/// `AnyRealmCollection` (RealmSwift's `RealmCollection`): random access, searching,
/// filtering, sorting, distinct, aggregates and key-value coding.
///
/// Filtering and sorting return live `Results`; aggregates run in the core without reading
/// objects into Swift.
public protocol RealmCollection: RandomAccessCollection, CustomStringConvertible, _RealmQueryable, Equatable, ThreadConfined
    where Index == Int, Element: RealmCollectionValue, _QueryElement == Element
{
    /// The Realm of the collection, or nil if it is unmanaged.
    var realm: Realm? { get }
    /// Whether the collection can no longer be read.
    var isInvalidated: Bool { get }
    /// Whether the collection belongs to a frozen Realm.
    var isFrozen: Bool { get }
    /// The collection frozen at its Realm's current version (itself when frozen).
    func freeze() -> Self
    /// The live collection of a frozen one in the calling thread's Realm, or nil when the
    /// object it hangs from was deleted.
    func thaw() -> Self?
}

extension RealmCollection {
    /// The elements of an unmanaged collection (the collection itself).
    public var _rlmUnmanagedElements: [Element] { Array(self) }

    /// The position of `object` (objects: the same object), or nil.
    public func index(of object: Element) -> Int? {
        if let o = object as? ObjectBase {
            return firstIndex { ($0 as? ObjectBase)?.isSameObject(as: o) ?? false }
        }
        return firstIndex(of: object)
    }

    /// The position of the first element matching `predicate`, or nil.
    public func index(matching predicate: NSPredicate) -> Int? {
        QueryOps.index(self, matching: predicate.predicateFormat, predicate.arguments)
    }

    /// The position of the first element matching a predicate, or nil.
    public func index(matching predicateFormat: String, _ args: Any...) -> Int? {
        QueryOps.index(self, matching: predicateFormat, args)
    }

    /// The position of the first element matching a type-safe query, or nil.
    public func index(matching isIncluded: (Query<Element>) -> Query<Bool>) -> Int? {
        let (text, args) = isIncluded(Query<Element>(isPrimitive: !QueryOps.isObjectElement(Element.self)))._constructPredicate()
        return QueryOps.index(self, matching: text, args)
    }

    /// The elements at `indexes`, in order. Traps for an index out of range.
    public func objects(at indexes: IndexSet) -> [Element] {
        indexes.map { i in
            precondition(i >= 0 && i < count, "Index \(i) is out of bounds (must be less than \(count)).")
            return self[i]
        }
    }

    /// The values of property `key` of every element (for a collection of values, "self" gives
    /// the elements).
    public func value(forKey key: String) -> Any? {
        map { KeyValueCoding.elementValue($0, forKey: key) } as [Any]
    }

    /// Key-value coding with collection operators: `@count`, `@min.x`, `@max.x`, `@sum.x`,
    /// `@avg.x`, `@unionOfObjects.x`, or a property name.
    public func value(forKeyPath keyPath: String) -> Any? {
        QueryOps.value(self, forKeyPath: keyPath)
    }

    /// Sets property `key` of every element (inside a write transaction when managed).
    public func setValue(_ value: Any?, forKey key: String) {
        for e in Array(self) {
            guard let o = e as? ObjectBase else { preconditionFailure("Values have no property '\(key)'") }
            KeyValueCoding.setValue(o, value, forKey: key)
        }
    }
}

extension RealmCollection where Element: Encodable {
    /// Encodes the elements as an array (the `Encodable` conformance of every collection type).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.unkeyedContainer()
        for e in self { try container.encode(e) }
    }
}

/// The collections that can be unmanaged, by the name RealmSwift's messages give their kind.
protocol _UnmanagedCollectionKind {
    static var _rlmObjCClassName: String { get }
}

extension List: _UnmanagedCollectionKind {
    static var _rlmObjCClassName: String { "RLMArray" }
}

extension MutableSet: _UnmanagedCollectionKind {
    static var _rlmObjCClassName: String { "RLMSet" }
}

extension Map: _UnmanagedCollectionKind {
    static var _rlmObjCClassName: String { "RLMDictionary" }
}

extension _RealmQueryable {
    /// The managed query, trapping with RealmSwift's message for an unmanaged collection.
    var managedRoot: ResultsBase {
        guard let root = _rlmQueryRoot else {
            // RealmSwift's message names the Objective-C class behind the collection kind.
            let kind = (Self.self as? _UnmanagedCollectionKind.Type)?._rlmObjCClassName ?? "RLMArray"
            preconditionFailure("This method may only be called on \(kind) instances retrieved from an RLMRealm")
        }
        return root.base
    }

    // MARK: Filtering

    /// The elements matching a predicate in Realm's query language, with `%@` (and `%K`)
    /// arguments. A malformed predicate traps with the parser's message, as RealmSwift's
    /// `filter` raises; use `filter(throwing:_:)` for predicates from user input.
    public func filter(_ predicateFormat: String, _ args: Any...) -> Results<_QueryElement> {
        do { return try QueryOps.filter(managedRoot, predicateFormat, args) } catch { preconditionFailure("\(error)") }
    }

    /// The elements matching `predicate` (traps on a malformed one, as above).
    public func filter(_ predicate: NSPredicate) -> Results<_QueryElement> {
        do { return try QueryOps.filter(managedRoot, predicate.predicateFormat, predicate.arguments) }
        catch { preconditionFailure("\(error)") }
    }

    /// The elements matching a type-safe query, as RealmSwift's `where`:
    ///
    /// ```swift
    /// realm.objects(Dog.self).where { $0.age > 3 && $0.name.starts(with: "R") }
    /// person.scores.where { $0 >= 10 }   // a collection of values: `$0` is the element
    /// ```
    public func `where`(_ isIncluded: (Query<_QueryElement>) -> Query<Bool>) -> Results<_QueryElement> {
        let (text, args) = isIncluded(Query<_QueryElement>(isPrimitive: !QueryOps.isObjectElement(_QueryElement.self)))
            ._constructPredicate()
        do { return try QueryOps.filter(managedRoot, text, args) } catch { preconditionFailure("\(error)") }
    }

    /// The elements matching a predicate, or an error naming the problem and where in the text
    /// it is (for predicates that come from user input).
    ///
    /// - Throws: `Realm.Error` with code `.invalidInput` and the parser's message.
    public func filter(throwing predicateFormat: String, _ args: Any...) throws -> Results<_QueryElement> {
        try QueryOps.filter(managedRoot, predicateFormat, args)
    }

    // MARK: Sorting and distinct

    /// The elements sorted by a property (or a dotted link path).
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Results<_QueryElement> {
        sorted(by: [SortDescriptor(keyPath: keyPath, ascending: ascending)])
    }

    /// The elements sorted by several properties; later descriptors break ties. The sort is
    /// stable.
    public func sorted<S: Sequence>(by sortDescriptors: S) -> Results<_QueryElement> where S.Element == SortDescriptor {
        QueryOps.checked(Results(base: managedRoot.sorted(Array(sortDescriptors))))
    }

    /// Only the first element of each distinct combination of the properties' values.
    public func distinct<S: Sequence>(by keyPaths: S) -> Results<_QueryElement> where S.Element == String {
        QueryOps.checked(Results(base: managedRoot.distinct(Array(keyPaths))))
    }

    // MARK: Aggregates

    /// The smallest value of a property (numbers, dates, AnyRealmValue), or nil when empty.
    /// `T` is any type stored as a `MinMaxType`: the property's own type, or `NSNumber` /
    /// `NSDate` (`let m: NSNumber? = dogs.min(ofProperty: "age")`).
    public func min<T: _HasPersistedType>(ofProperty property: String) -> T? where T.PersistedType: MinMaxType {
        QueryOps.aggregate(self, .min, property)
    }

    /// The largest value of a property, or nil when empty.
    public func max<T: _HasPersistedType>(ofProperty property: String) -> T? where T.PersistedType: MinMaxType {
        QueryOps.aggregate(self, .max, property)
    }

    /// The sum of a numeric property (0 when empty), as any type stored as an `AddableType`.
    public func sum<T: _HasPersistedType>(ofProperty property: String) -> T where T.PersistedType: AddableType {
        QueryOps.aggregate(self, .sum, property) ?? QueryOps.zero()
    }

    /// The average of a numeric property, or nil when empty.
    public func average<T: _HasPersistedType>(ofProperty property: String) -> T? where T.PersistedType: AddableType {
        QueryOps.aggregate(self, .average, property)
    }
}

extension _RealmQueryable where _QueryElement: ObjectBase {
    /// The elements sorted by the property a key path names (`\Dog.owner.name`).
    public func sorted<V>(by keyPath: KeyPath<_QueryElement, V>, ascending: Bool = true) -> Results<_QueryElement> {
        sorted(byKeyPath: KeyPathTracer.name(for: keyPath, root: _QueryElement.self), ascending: ascending)
    }

    /// Only the first element of each distinct combination of the key paths' values.
    public func distinct<S: Sequence>(by keyPaths: S) -> Results<_QueryElement> where S.Element == PartialKeyPath<_QueryElement> {
        distinct(by: keyPaths.map { KeyPathTracer.name(for: $0, root: _QueryElement.self) })
    }

    /// The smallest value of the property `keyPath` names, or nil when empty.
    public func min<T: _HasPersistedType>(of keyPath: KeyPath<_QueryElement, T>) -> T? where T.PersistedType: MinMaxType {
        min(ofProperty: KeyPathTracer.name(for: keyPath, root: _QueryElement.self))
    }

    /// The largest value of the property `keyPath` names, or nil when empty.
    public func max<T: _HasPersistedType>(of keyPath: KeyPath<_QueryElement, T>) -> T? where T.PersistedType: MinMaxType {
        max(ofProperty: KeyPathTracer.name(for: keyPath, root: _QueryElement.self))
    }

    /// The sum of the property `keyPath` names (0 when empty).
    public func sum<T: _HasPersistedType>(of keyPath: KeyPath<_QueryElement, T>) -> T where T.PersistedType: AddableType {
        sum(ofProperty: KeyPathTracer.name(for: keyPath, root: _QueryElement.self))
    }

    /// The average of the property `keyPath` names, or nil when empty.
    public func average<T: _HasPersistedType>(of keyPath: KeyPath<_QueryElement, T>) -> T? where T.PersistedType: AddableType {
        average(ofProperty: KeyPathTracer.name(for: keyPath, root: _QueryElement.self))
    }
}

extension _RealmQueryable where _QueryElement: MinMaxType {
    /// The smallest element, or nil when empty.
    public func min() -> _QueryElement? { QueryOps.aggregate(self, .min, nil) }
    /// The largest element, or nil when empty.
    public func max() -> _QueryElement? { QueryOps.aggregate(self, .max, nil) }
}

extension RealmCollection where Element: MinMaxType {
    /// The smallest element, or nil when empty (computed in the core when managed).
    public func min() -> Element? { QueryOps.aggregate(self, .min, nil) }
    /// The largest element, or nil when empty.
    public func max() -> Element? { QueryOps.aggregate(self, .max, nil) }
}

extension _RealmQueryable where _QueryElement: AddableType {
    /// The sum of the elements (0 when empty).
    public func sum() -> _QueryElement {
        QueryOps.aggregate(self, .sum, nil) ?? QueryOps.zero()
    }
    /// The average of the elements, or nil when empty.
    public func average<T: AddableType>() -> T? { QueryOps.aggregate(self, .average, nil) }
}

extension _RealmQueryable where _QueryElement: SortableType {
    /// The values sorted (for collections of values; the key path is `self`).
    public func sorted(ascending: Bool = true) -> Results<_QueryElement> {
        sorted(byKeyPath: "self", ascending: ascending)
    }

    /// The distinct values, first occurrences kept.
    public func distinct() -> Results<_QueryElement> {
        distinct(by: ["self"])
    }
}

/// Types whose minimum and maximum can be computed: numbers, dates, Decimal128, AnyRealmValue
/// (and `NSNumber`/`NSDate`, as which an aggregate by name can be asked for).
public protocol MinMaxType {}
/// Types that can be summed and averaged: numbers, Decimal128, AnyRealmValue (and `NSNumber`).
public protocol AddableType {}
/// Types a collection of values can be sorted by: every scalar but Bool, ObjectId and UUID.
public protocol SortableType: _StorableValue {}

extension Int: MinMaxType, AddableType, SortableType {}
extension Int8: MinMaxType, AddableType, SortableType {}
extension Int16: MinMaxType, AddableType, SortableType {}
extension Int32: MinMaxType, AddableType, SortableType {}
extension Int64: MinMaxType, AddableType, SortableType {}
extension Float: MinMaxType, AddableType, SortableType {}
extension Double: MinMaxType, AddableType, SortableType {}
extension Decimal128: MinMaxType, AddableType, SortableType {}
extension Date: MinMaxType, SortableType {}
extension String: SortableType {}
extension Data: SortableType {}
extension AnyRealmValue: MinMaxType, AddableType, SortableType {}
extension NSNumber: MinMaxType, AddableType {}
extension NSDate: MinMaxType {}
extension Optional: MinMaxType where Wrapped: MinMaxType & _RealmOptionalWrappable {}
extension Optional: AddableType where Wrapped: AddableType & _RealmOptionalWrappable {}
extension Optional: SortableType where Wrapped: SortableType & _RealmOptionalWrappable {}

/// The shared implementations behind the collection protocols.
enum QueryOps {
    /// Whether elements of `type` are objects: an object class, or an Optional of one (the
    /// values of a `Map<String, Object?>`), so a query on them starts at the object.
    static func isObjectElement(_ type: Any.Type) -> Bool {
        (type as? any _RealmSchemaDiscoverable.Type)?._rlmShape.type == .object
    }

    static func filter<E: RealmCollectionValue>(_ base: ResultsBase, _ text: String, _ args: [Any]) throws -> Results<E> {
        // (the arguments are read now, `ResultsBase.adding`)
        let derived = base.adding(predicate: text, args)
        if base.isDetached { return Results(base: derived) }
        // Parse now, so a malformed predicate fails at the call. After earlier predicates the new
        // one is checked on its own first, so an error's line:column is in the caller's text.
        if !base.predicates.isEmpty {
            _ = try ResultsBase(core: base.core, root: base.root, predicates: [(text, args)]).compiledQuery()
        }
        _ = try derived.compiledQuery()
        return Results(base: derived)
    }

    /// Checks a sorted or distinct query now (an unknown property traps at the call).
    static func checked<E>(_ results: Results<E>) -> Results<E> {
        if results.base.isDetached { return results }
        do { _ = try results.base.compiledQuery() } catch {
            preconditionFailure(results.base.clauseFailure() ?? "\(error)")
        }
        return results
    }

    static func index<C: RealmCollection>(_ c: C, matching text: String, _ args: [Any]) -> Int? {
        if c._rlmQueryRoot == nil { return unmanagedIndex(c._rlmUnmanagedElements, matching: text, args) }
        let base = c.managedRoot
        let matches: Results<C.Element>
        do { matches = try filter(base, text, args) } catch { preconditionFailure("\(error)") }
        let wanted = Set(matches.base.currentKeys())
        return base.currentKeys().firstIndex { wanted.contains($0) }
    }

    /// The first unmanaged element matching a predicate (RealmSwift evaluates it per element;
    /// an empty collection answers nil without reading the predicate). For values, `self`
    /// names the element, as in a managed collection of values.
    static func unmanagedIndex<E: RealmCollectionValue>(_ elements: [E], matching text: String, _ args: [Any]) -> Int? {
        if elements.isEmpty { return nil }
        let shape = E._rlmShape
        guard let type = shape.objectType, isObjectElement(E.self) else {
            let query: UnmanagedQuery
            do { query = try UnmanagedQuery(values: shape.type, text, args) } catch { preconditionFailure("\(error)") }
            return elements.firstIndex { query.matches(value: $0._rlmEncode().value) }
        }
        let query: UnmanagedQuery
        do { query = try UnmanagedQuery(type, text, args) } catch { preconditionFailure("\(error)") }
        return elements.firstIndex { e in
            guard let o = KeyValueCoding.unwrap(e) as? ObjectBase else { return false }
            return query.matches(o)
        }
    }

    /// An aggregate in the core (managed) or over the elements (unmanaged).
    /// An aggregate's result as `T`: a storable type, or `NSNumber` / `NSDate`.
    static func converted<T>(_ v: StoredValue) -> T? {
        if case .null = v { return nil }
        if let type = T.self as? any _StorableValue.Type { return decoded(type, v) as? T }
        if T.self is NSNumber.Type {
            switch v {
            case .int(let i): return NSNumber(value: i) as? T
            case .double(let d): return NSNumber(value: d) as? T
            case .float(let f): return NSNumber(value: f) as? T
            case .decimal(let d): return NSNumber(value: d.doubleValue) as? T
            case .bool(let b): return NSNumber(value: b) as? T
            default: break
            }
        }
        if T.self is NSDate.Type, case .date(let d) = v { return NSDate(timeIntervalSince1970: d.timeIntervalSince1970) as? T }
        preconditionFailure("An aggregate of \(v) cannot be returned as \(T.self)")
    }

    private static func decoded<S: _StorableValue>(_ type: S.Type, _ v: StoredValue) -> S { S._rlmDecode(_Stored(v)) }

    /// The sum of nothing, as `T`.
    static func zero<T>() -> T { converted(.int(0))! }

    static func aggregate<Q: _RealmQueryable, T>(_ c: Q, _ op: AggregateOp, _ name: String?) -> T? {
        let property = name == "self" ? nil : name
        if let root = c._rlmQueryRoot {
            return converted(root.base.aggregate(op, property: property))
        }
        let values: [StoredValue] = c._rlmUnmanagedElements.map { e in
            guard let property else { return e._rlmEncode().value }
            if case .null = e._rlmEncode().value { return .null } // a nil map value
            guard let o = KeyValueCoding.unwrap(e) as? ObjectBase else {
                preconditionFailure("Values have no property '\(property)'")
            }
            guard let v = KeyValueCoding.value(o, forKey: property) else { return .null }
            return (v as? any _StorableValue)?._rlmEncode().value ?? .null
        }
        return converted(UnmanagedAggregate.compute(op, values))
    }

    /// `value(forKeyPath:)` with collection operators.
    static func value<C: RealmCollection>(_ c: C, forKeyPath keyPath: String) -> Any? {
        if keyPath.hasPrefix("@") {
            if keyPath.hasPrefix("@unionOfObjects") {
                let parts = keyPath.split(separator: ".", maxSplits: 1).map(String.init)
                guard parts.count > 1 else { preconditionFailure("@unionOfObjects needs a property") }
                return c.value(forKey: parts[1])
            }
            return collectionOperator(c, keyPath)
        }
        let parts = keyPath.split(separator: ".", maxSplits: 1).map(String.init)
        let first = c.value(forKey: parts[0]) as? [Any] ?? []
        guard parts.count > 1 else { return first }
        return first.map { item -> Any in
            guard let o = item as? ObjectBase else { return NSNull() }
            return KeyValueCoding.value(o, forKey: parts[1]) ?? NSNull()
        }
    }

    /// `@count`, `@min.x`, `@max.x`, `@sum.x`, `@avg.x` (or without `.x` over values) of a
    /// collection or a map's values.
    static func collectionOperator<Q: _RealmQueryable>(_ c: Q, _ keyPath: String) -> Any? {
        let parts = keyPath.split(separator: ".", maxSplits: 1).map(String.init)
        let property = parts.count > 1 && parts[1] != "self" ? parts[1] : nil
        let op: AggregateOp
        switch parts[0] {
        case "@count":
            return c._rlmQueryRoot.map { $0.base.count } ?? c._rlmUnmanagedElements.count
        case "@min": op = .min
        case "@max": op = .max
        case "@sum": op = .sum
        case "@avg": op = .average
        default: preconditionFailure("Unsupported collection operator '\(parts[0])'")
        }
        let v: AnyRealmValue? = aggregate(c, op, property)
        let result = v.map { DynamicAccess.swiftValue($0._rlmEncode().value) } ?? nil
        if op == .sum { return result ?? 0 }
        return result
    }
}

/// Aggregates over values held in Swift (unmanaged collections), with the core's rules:
/// nulls are skipped; min and max of nothing are null; the sum of nothing is 0; integers sum
/// as integers, anything with a fraction as Double, decimals as Decimal128.
enum UnmanagedAggregate {
    static func compute(_ op: AggregateOp, _ values: [StoredValue]) -> StoredValue {
        let present = values.filter { if case .null = $0 { return false } else { return true } }
        switch op {
        case .min, .max:
            guard var best = present.first else { return .null }
            for v in present.dropFirst() {
                let c = compare(v, best)
                if (op == .min && c < 0) || (op == .max && c > 0) { best = v }
            }
            return best
        case .sum, .average:
            var ints: Int64 = 0
            var doubles = 0.0
            var decimal: Decimal128?
            var sawFraction = false
            for v in present {
                switch v {
                case .int(let i): ints &+= i
                case .float(let f): doubles += Double(f); sawFraction = true
                case .double(let d): doubles += d; sawFraction = true
                case .decimal(let d): decimal = (decimal ?? Decimal128(value: 0)) + d
                default: break
                }
            }
            if op == .average {
                guard !present.isEmpty else { return .null }
                if let decimal { return .decimal(decimal / Decimal128(value: present.count)) }
                return .double((Double(ints) + doubles) / Double(present.count))
            }
            if let decimal { return .decimal(decimal) }
            return sawFraction ? .double(Double(ints) + doubles) : .int(ints)
        }
    }

    /// Orders two values of the kinds aggregates compare (numbers across types, dates,
    /// strings).
    static func compare(_ a: StoredValue, _ b: StoredValue) -> Int {
        func number(_ v: StoredValue) -> Double? {
            switch v {
            case .int(let i): return Double(i)
            case .float(let f): return Double(f)
            case .double(let d): return d
            case .decimal(let d): return d.doubleValue
            default: return nil
            }
        }
        if let x = number(a), let y = number(b) { return x < y ? -1 : x > y ? 1 : 0 }
        if case .date(let x) = a, case .date(let y) = b { return x < y ? -1 : x > y ? 1 : 0 }
        if case .string(let x) = a, case .string(let y) = b { return x < y ? -1 : x > y ? 1 : 0 }
        return 0
    }
}
