// Queries on Map properties.

extension Query where T: _QueryableKeyedCollection {
    /// The map's values, compared as with any collection: `$0.prices.values > 3` is
    /// `(ANY prices.@allValues > %@)`.
    public var values: Query<T.Value> {
        Query<T.Value>(appendingKeyPath("@allValues", options: []))
    }

    /// The value for `key`: `$0.prices["a"] > 3` is `(prices[%@] > %@)` with the key as the
    /// first argument. A key path cannot follow it.
    public subscript(member: T.Key) -> Query<T.Value> {
        Query<T.Value>(.mapSubscript(keyPathErasingAny(), key: member))
    }

    /// Matches where the map has `value` among its values: `(%@ IN prices)`.
    public func contains(_ value: T.Value) -> Query<Bool> {
        Query<Bool>(.comparison(.in, .constant(value), keyPathErasingAny(), []))
    }

    /// Matches where the map has any of `collection`'s values: `(ANY prices IN %@)`.
    public func containsAny<U: Sequence>(in collection: U) -> Query<Bool> where U.Element == T.Value {
        Query<Bool>(.comparison(.in, node, .constant(QueryArgument.normalize(sequence: collection)), []))
    }

    /// The number of entries: `prices.@count`.
    public var count: Query<Int> {
        Query<Int>(keyPathErasingAny(appending: "@count"))
    }

    /// The smallest value: `prices.@min`.
    public var min: Query<T.Value> {
        aggregate("@min")
    }

    /// The largest value: `prices.@max`.
    public var max: Query<T.Value> {
        aggregate("@max")
    }

    /// The average of the values: `prices.@avg`.
    public var avg: Query<T.Value> {
        aggregate("@avg")
    }

    /// The sum of the values: `prices.@sum`.
    public var sum: Query<T.Value> {
        aggregate("@sum")
    }

    private func aggregate(_ op: String) -> Query<T.Value> {
        QueryTypeCheck.require(T.Value.self, in: QueryTypeCheck.numeric, for: op)
        return Query<T.Value>(keyPathErasingAny(appending: op))
    }
}

extension Query where T: _QueryableKeyedCollection, T.Key == String {
    /// The map's keys, compared as with any collection: `$0.prices.keys == "a"` is
    /// `(ANY prices.@allKeys == %@)`.
    public var keys: Query<String> {
        Query<String>(appendingKeyPath("@allKeys", options: []))
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: Comparable {
    /// Matches where every value lies in the half-open `range`:
    /// `((prices.@min >= %@) && (prices.@max < %@))`.
    public func contains(_ range: Range<T.Value>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: false))
    }

    /// Matches where every value lies in the closed `range`:
    /// `((prices.@min >= %@) && (prices.@max <= %@))`.
    public func contains(_ range: ClosedRange<T.Value>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: true))
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: _QueryOptional, T.Value.Wrapped: Comparable {
    /// Matches where every value lies in the half-open `range`.
    public func contains(_ range: Range<T.Value.Wrapped>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: false))
    }

    /// Matches where every value lies in the closed `range`.
    public func contains(_ range: ClosedRange<T.Value.Wrapped>) -> Query<Bool> {
        Query<Bool>(.collectionRange(min: keyPathErasingAny(appending: "@min"), max: keyPathErasingAny(appending: "@max"),
                                     range.lowerBound, range.upperBound, closed: true))
    }
}
