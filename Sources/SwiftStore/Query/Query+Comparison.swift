// Ordering comparisons and range containment on single values.

extension Query where T: _StorableValue {
    /// Matches where the value is greater than `rhs`: `(age > %@)`. For numbers, Date,
    /// Decimal128, AnyRealmValue, String and Data (and enums and custom types stored as one).
    public static func > (_ lhs: Query, _ rhs: T) -> Query<Bool> {
        ordered(.greaterThan, lhs.node, .constant(rhs))
    }

    /// Matches where the value is greater than the other property's: `(age > limit)`.
    public static func > (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        ordered(.greaterThan, lhs.node, rhs.node)
    }

    /// Matches where the value is greater than or equal to `rhs`: `(age >= %@)`.
    public static func >= (_ lhs: Query, _ rhs: T) -> Query<Bool> {
        ordered(.greaterThanEqual, lhs.node, .constant(rhs))
    }

    /// Matches where the value is greater than or equal to the other property's.
    public static func >= (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        ordered(.greaterThanEqual, lhs.node, rhs.node)
    }

    /// Matches where the value is less than `rhs`: `(age < %@)`.
    public static func < (_ lhs: Query, _ rhs: T) -> Query<Bool> {
        ordered(.lessThan, lhs.node, .constant(rhs))
    }

    /// Matches where the value is less than the other property's.
    public static func < (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        ordered(.lessThan, lhs.node, rhs.node)
    }

    /// Matches where the value is less than or equal to `rhs`: `(age <= %@)`.
    public static func <= (_ lhs: Query, _ rhs: T) -> Query<Bool> {
        ordered(.lessThanEqual, lhs.node, .constant(rhs))
    }

    /// Matches where the value is less than or equal to the other property's.
    public static func <= (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        ordered(.lessThanEqual, lhs.node, rhs.node)
    }

    private static func ordered(_ op: QueryNode.Operator, _ lhs: QueryNode, _ rhs: QueryNode) -> Query<Bool> {
        QueryTypeCheck.require(T.self, in: QueryTypeCheck.ordered, for: op.rawValue)
        return Query<Bool>(.comparison(op, lhs, rhs, []))
    }
}

extension Query where T: Comparable {
    /// Matches where the value lies in the half-open `range`: `((age >= %@) && (age < %@))`.
    public func contains(_ range: Range<T>) -> Query<Bool> {
        Query<Bool>(.halfOpenRange(node, range.lowerBound, range.upperBound))
    }

    /// Matches where the value lies in the closed `range`: `(age BETWEEN {%@, %@})`.
    public func contains(_ range: ClosedRange<T>) -> Query<Bool> {
        Query<Bool>(.between(node, lower: .constant(range.lowerBound), upper: .constant(range.upperBound)))
    }
}

extension Query where T: _QueryOptional, T.Wrapped: Comparable {
    /// Matches where the (non-null) value lies in the half-open `range`:
    /// `((age >= %@) && (age < %@))`.
    public func contains(_ range: Range<T.Wrapped>) -> Query<Bool> {
        Query<Bool>(.halfOpenRange(node, range.lowerBound, range.upperBound))
    }

    /// Matches where the (non-null) value lies in the closed `range`:
    /// `(age BETWEEN {%@, %@})`.
    public func contains(_ range: ClosedRange<T.Wrapped>) -> Query<Bool> {
        Query<Bool>(.between(node, lower: .constant(range.lowerBound), upper: .constant(range.upperBound)))
    }
}

extension QueryNode {
    /// `((node >= lower) && (node < upper))`.
    static func halfOpenRange(_ node: QueryNode, _ lower: Any, _ upper: Any) -> QueryNode {
        .comparison(.and,
                    .comparison(.greaterThanEqual, node, .constant(lower), []),
                    .comparison(.lessThan, node, .constant(upper), []), [])
    }

    /// `((path.@min >= lower) && (path.@max < upper))` or `<=` for a closed range: every
    /// element of the collection lies in the range.
    static func collectionRange(min: QueryNode, max: QueryNode, _ lower: Any, _ upper: Any, closed: Bool) -> QueryNode {
        .comparison(.and,
                    .comparison(.greaterThanEqual, min, .constant(lower), []),
                    .comparison(closed ? .lessThanEqual : .lessThan, max, .constant(upper), []), [])
    }
}
