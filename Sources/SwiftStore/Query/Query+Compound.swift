// Logic on predicates, and the subquery count.

extension Query where T == Bool {
    /// Negates a predicate: `(NOT age > %@)`, `NOT (a && b)`; a Bool property becomes
    /// `isGood == false`.
    public static prefix func ! (_ query: Query) -> Query<Bool> {
        Query<Bool>(.not(query.node))
    }

    /// Matches where both predicates match: `((a) && (b))`; Swift's precedence applies
    /// (`&&` before `||`) and every compound is parenthesised.
    public static func && (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        Query<Bool>(.comparison(.and, lhs.node, rhs.node, []))
    }

    /// Matches where either predicate matches: `((a) || (b))`.
    public static func || (_ lhs: Query, _ rhs: Query) -> Query<Bool> {
        Query<Bool>(.comparison(.or, lhs.node, rhs.node, []))
    }

    /// The number of elements of a collection that match this predicate, as a subquery:
    /// `($0.dogs.age > 5).count > 1` is
    /// `(SUBQUERY(dogs, $col1, ($col1.age > %@)).@count > %@)`.
    ///
    /// Every key path through a collection in the predicate must go through the same
    /// collection; a predicate without one traps.
    public var count: Query<Int> {
        Query<Int>(.subqueryCount(node))
    }
}
