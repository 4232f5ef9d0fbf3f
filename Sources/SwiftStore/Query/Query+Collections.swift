// Queries on List, MutableSet and LinkingObjects properties.

extension Query where T: _QueryableCollection, T.Element: ObjectBase {
    /// A property of the collection's objects: `$0.dogs.age` is `dogs.age`, and a comparison
    /// on it matches when any element matches (`(ANY dogs.age > %@)`).
    public subscript<V>(dynamicMember member: KeyPath<T.Element, V>) -> Query<V> {
        Query<V>(appendingKeyPath(Self.propertyName(member, root: T.Element.self), options: []))
    }
}

extension Query where T: _QueryableCollection {
    /// The number of elements: `dogs.@count`.
    public var count: Query<Int> {
        Query<Int>(keyPathErasingAny(appending: "@count"))
    }

    /// Matches where the collection contains `value`: `(%@ IN tags)`.
    public func contains(_ value: T.Element) -> Query<Bool> {
        Query<Bool>(.comparison(.in, .constant(value), keyPathErasingAny(), []))
    }

    /// Matches where the collection contains any of `collection`'s values:
    /// `(ANY tags IN %@)`.
    public func containsAny<U: Sequence>(in collection: U) -> Query<Bool> where U.Element == T.Element {
        Query<Bool>(.comparison(.in, node, .constant(QueryArgument.normalize(sequence: collection)), []))
    }

    /// Matches where any element equals `rhs`: `(ANY tags == %@)`.
    public static func == (_ lhs: Query<T>, _ rhs: T.Element) -> Query<Bool> {
        Query<Bool>(.comparison(.equal, lhs.node, .constant(rhs), []))
    }

    /// Matches where any element differs from `rhs`: `(ANY tags != %@)`.
    public static func != (_ lhs: Query<T>, _ rhs: T.Element) -> Query<Bool> {
        Query<Bool>(.comparison(.notEqual, lhs.node, .constant(rhs), []))
    }
}

extension Query where T: _QueryableCollection, T.Element: _RealmSchemaDiscoverable {
    /// Matches where any element is greater than `rhs`: `(ANY scores > %@)`.
    public static func > (_ lhs: Query<T>, _ rhs: T.Element) -> Query<Bool> {
        elementComparison(.greaterThan, lhs, rhs)
    }

    /// Matches where any element is greater than or equal to `rhs`.
    public static func >= (_ lhs: Query<T>, _ rhs: T.Element) -> Query<Bool> {
        elementComparison(.greaterThanEqual, lhs, rhs)
    }

    /// Matches where any element is less than `rhs`.
    public static func < (_ lhs: Query<T>, _ rhs: T.Element) -> Query<Bool> {
        elementComparison(.lessThan, lhs, rhs)
    }

    /// Matches where any element is less than or equal to `rhs`.
    public static func <= (_ lhs: Query<T>, _ rhs: T.Element) -> Query<Bool> {
        elementComparison(.lessThanEqual, lhs, rhs)
    }

    /// The smallest element: `scores.@min`.
    public var min: Query<T.Element> {
        aggregate("@min")
    }

    /// The largest element: `scores.@max`.
    public var max: Query<T.Element> {
        aggregate("@max")
    }

    /// The average of the elements: `scores.@avg`.
    public var avg: Query<T.Element> {
        aggregate("@avg")
    }

    /// The sum of the elements: `scores.@sum`.
    public var sum: Query<T.Element> {
        aggregate("@sum")
    }

    private static func elementComparison(_ op: QueryNode.Operator, _ lhs: Query<T>, _ rhs: T.Element) -> Query<Bool> {
        QueryTypeCheck.require(T.Element.self, in: QueryTypeCheck.ordered, for: op.rawValue)
        return Query<Bool>(.comparison(op, lhs.node, .constant(rhs), []))
    }

    private func aggregate(_ op: String) -> Query<T.Element> {
        QueryTypeCheck.require(T.Element.self, in: QueryTypeCheck.numeric, for: op)
        return Query<T.Element>(keyPathErasingAny(appending: op))
    }
}

extension Query where T: _QueryableCollection, T.Element: Comparable {
    /// Matches where every element lies in the half-open `range`:
    /// `((scores.@min >= %@) && (scores.@max < %@))`.
    public func contains(_ range: Range<T.Element>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: false))
    }

    /// Matches where every element lies in the closed `range`:
    /// `((scores.@min >= %@) && (scores.@max <= %@))`.
    public func contains(_ range: ClosedRange<T.Element>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: true))
    }
}

extension Query where T: _QueryableCollection, T.Element: _QueryOptional, T.Element.Wrapped: Comparable {
    /// Matches where every element lies in the half-open `range`:
    /// `((scores.@min >= %@) && (scores.@max < %@))`.
    public func contains(_ range: Range<T.Element.Wrapped>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: false))
    }

    /// Matches where every element lies in the closed `range`:
    /// `((scores.@min >= %@) && (scores.@max <= %@))`.
    public func contains(_ range: ClosedRange<T.Element.Wrapped>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: true))
    }
}
