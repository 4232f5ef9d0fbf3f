import Foundation

/// A type-safe query expression, RealmSwift's `Query<T>`: the closure passed to
/// `where(_:)` receives a `Query` of the element type and builds a `Query<Bool>` from its
/// members and operators.
///
/// ```swift
/// let adults = realm.objects(Person.self).where {
///     $0.age >= 18 && $0.name.starts(with: "A", options: .caseInsensitive)
/// }
/// ```
///
/// A query becomes NSPredicate-style text with `%@` arguments, the same text RealmSwift 10.54
/// generates (`_constructPredicate()` shows it), which the core's query parser then reads, so
/// both query styles run through one engine. Forms, with `$0` an object query:
///
/// | Swift | Predicate |
/// | --- | --- |
/// | `$0.age == 3`, `!=`, `>`, `>=`, `<`, `<=` | `(age == %@)` |
/// | `$0.owner.name == "A"` | `(owner.name == %@)` |
/// | `$0.name == nil` | `(name == %@)` with `NSNull` |
/// | `$0.age == $0.limit` | `(age == limit)` |
/// | `$0.age.in([1, 2])` | `(age IN %@)` |
/// | `$0.age.contains(1...5)` | `(age BETWEEN {%@, %@})` |
/// | `$0.age.contains(1..<5)` | `((age >= %@) && (age < %@))` |
/// | `$0.isGood` / `!$0.isGood` | `isGood == true` / `isGood == false` |
/// | `$0.name.contains("x", options: [.caseInsensitive])` | `(name CONTAINS[c] %@)` |
/// | `$0.name.like("a*", caseInsensitive: true)` | `(name LIKE[c] %@)` |
/// | `$0.dogs.age > 2` | `(ANY dogs.age > %@)` |
/// | `$0.tags.contains("x")` | `(%@ IN tags)` |
/// | `$0.tags.containsAny(in: ["x"])` | `(ANY tags IN %@)` |
/// | `$0.dogs.count`, `$0.scores.max`, `$0.dogs.age.avg` | `dogs.@count`, `scores.@max`, `dogs.@avg.age` |
/// | `($0.dogs.age > 5).count > 1` | `(SUBQUERY(dogs, $col1, ($col1.age > %@)).@count > %@)` |
/// | `$0.prices["a"] > 1`, `.keys`, `.values` | `(prices[%@] > %@)`, `prices.@allKeys`, `prices.@allValues` |
/// | `$0.value[0]["k"].any == 1` | `(value[%@][%@][%K] == %@)` |
///
/// `a && b` and `a || b` are written `(a && b)` and `(a || b)`, grouped as Swift's precedence
/// groups them; `!a` is `(NOT a)`, or `NOT (...)` around a compound.
///
/// Misuse (a key path after a map subscript, comparing two collections, an operator on a type
/// it does not apply to) traps with a message, as RealmSwift raises an exception.
@dynamicMemberLookup
public struct Query<T> {
    /// The expression so far.
    let node: QueryNode

    /// A query on the root: an object (an empty path that member lookups extend), or with
    /// `isPrimitive` the values of a collection of primitives (`self`), for
    /// `List<Int>.where { $0 > 5 }`.
    init(isPrimitive: Bool = false) {
        if isPrimitive {
            node = .keyPath(QueryKeyPath(components: ["self"], options: [.isCollection], collectionIndex: nil))
        } else {
            node = .keyPath(QueryKeyPath(components: [], options: [], collectionIndex: nil))
        }
    }

    /// A query holding `node`.
    init(_ node: QueryNode) {
        self.node = node
    }

    /// A query on the root, for tests that look at the generated predicate.
    ///
    /// ```swift
    /// let (text, args) = (Query<Person>._constructForTesting().age > 3)._constructPredicate()
    /// ```
    public static func _constructForTesting() -> Query<T> {
        Query<T>()
    }

    /// The NSPredicate-style text and `%@` arguments of the query, as RealmSwift generates
    /// them (for example `("(age > %@)", [3])`). Exposed for tests; `where(_:)` uses it.
    public func _constructPredicate() -> (String, [Any]) {
        QueryPredicateBuilder.build(node)
    }

    /// The query as a predicate (`where(_:)` filters with it).
    var predicate: NSPredicate {
        NSPredicate._fromQuery(self)
    }

    // MARK: Key path steps (used by the member lookups in the extensions)

    /// The key path extended by the property `name`; `collection` says that property holds a
    /// collection.
    func appendingKeyPath(_ name: String, options: KeyPathOptions, collection: Bool = false) -> QueryNode {
        guard case .keyPath(var keyPath) = node else {
            if case .mapSubscript = node {
                preconditionFailure("Cannot apply key path to Map subscripts.")
            }
            preconditionFailure("Cannot apply a keypath to \(QueryPredicateBuilder.describe(node))")
        }
        keyPath.components.append(name)
        keyPath.options.formUnion(options)
        if collection, keyPath.collectionIndex == nil {
            keyPath.collectionIndex = keyPath.components.count - 1
        }
        return .keyPath(keyPath)
    }

    /// The key path without `ANY` (the collection is used as one value), optionally extended by
    /// a collection operator such as `@count`.
    func keyPathErasingAny(appending step: String? = nil) -> QueryNode {
        guard case .keyPath(var keyPath) = node else {
            preconditionFailure("Cannot apply a keypath to \(QueryPredicateBuilder.describe(node))")
        }
        if let step {
            keyPath.components.append(step)
            keyPath.options.insert(.isAggregate)
        }
        keyPath.options.remove(.requiresAny)
        return .keyPath(keyPath)
    }

    /// The key path with an aggregate (`@min`, `@max`, `@avg`, `@sum`) after the collection
    /// it goes through: `dogs.age` becomes `dogs.@avg.age`.
    func keyPathAggregating(_ aggregate: String) -> QueryNode {
        guard case .keyPath(var keyPath) = node else {
            preconditionFailure("Cannot apply a keypath to \(QueryPredicateBuilder.describe(node))")
        }
        if let index = keyPath.collectionIndex, index + 1 < keyPath.components.count {
            keyPath.components.insert(aggregate, at: index + 1)
        } else if keyPath.components.count > 1 {
            keyPath.components.insert(aggregate, at: 1)
        } else {
            keyPath.components.append(aggregate)
        }
        keyPath.options.remove(.requiresAny)
        keyPath.options.insert(.isAggregate)
        return .keyPath(keyPath)
    }

    /// The name of the property `keyPath` reads on objects of class `root`.
    static func propertyName(_ keyPath: AnyKeyPath, root: ObjectBase.Type) -> String {
        KeyPathTracer.name(for: keyPath, root: root)
    }

    // MARK: Equality

    /// Matches where the value equals `rhs`: `(age == %@)`; `nil` matches null.
    public static func == (_ lhs: Query, _ rhs: T) -> Query<Bool> {
        Query<Bool>(.comparison(.equal, lhs.node, .constant(rhs), []))
    }

    /// Matches where the two values are equal: `(age == limit)`.
    public static func == (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        Query<Bool>(.comparison(.equal, lhs.node, rhs.node, []))
    }

    /// Matches where the value differs from `rhs`: `(age != %@)`; `nil` matches non-null.
    public static func != (_ lhs: Query, _ rhs: T) -> Query<Bool> {
        Query<Bool>(.comparison(.notEqual, lhs.node, .constant(rhs), []))
    }

    /// Matches where the two values differ: `(age != limit)`.
    public static func != (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        Query<Bool>(.comparison(.notEqual, lhs.node, rhs.node, []))
    }

    // MARK: In

    /// Matches where the value is one of `collection`'s: `(age IN %@)`, the argument being the
    /// values as an array.
    public func `in`<U: Sequence>(_ collection: U) -> Query<Bool> where U.Element == T {
        Query<Bool>(.comparison(.in, node, .constant(QueryArgument.normalize(sequence: collection)), []))
    }
}

// MARK: - Member lookup on objects

extension Query where T: ObjectBase {
    /// The property `member` of the object: `$0.name`.
    public subscript<V>(dynamicMember member: KeyPath<T, V>) -> Query<V> {
        Query<V>(appendingKeyPath(Self.propertyName(member, root: T.self), options: []))
    }

    /// A List, MutableSet or LinkingObjects property: comparisons through it match when any
    /// element matches (`ANY`).
    public subscript<V: _QueryableCollection>(dynamicMember member: KeyPath<T, V>) -> Query<V> {
        Query<V>(appendingKeyPath(Self.propertyName(member, root: T.self),
                                  options: [.isCollection, .requiresAny], collection: true))
    }

    /// A Map property: comparisons on its values match when any value matches (`ANY`).
    public subscript<V: _QueryableKeyedCollection>(dynamicMember member: KeyPath<T, V>) -> Query<V> {
        Query<V>(appendingKeyPath(Self.propertyName(member, root: T.self),
                                  options: [.isCollection, .requiresAny], collection: true))
    }
}
