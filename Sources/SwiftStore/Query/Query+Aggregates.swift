// Aggregates over a property of the objects in a collection: `$0.dogs.age.avg` is
// `dogs.@avg.age`. They are offered on the value types RealmSwift offers them on (built-in
// scalars, enums and custom persistable types, and their optionals), not on objects, so that a
// model property named `min`, `max`, `avg` or `sum` is still reached by member lookup.

extension Query {
    /// The key path with `op` after its collection, after checking `T` aggregates.
    fileprivate func aggregated(_ op: String) -> Query<T> {
        if let type = T.self as? any _RealmSchemaDiscoverable.Type {
            QueryTypeCheck.require(type, in: QueryTypeCheck.numeric, for: op)
        }
        return Query<T>(keyPathAggregating(op))
    }
}

extension Query where T: _HasPersistedType, T.PersistedType: _QueryNumeric {
    /// The smallest value of this property among the objects of the collection the key path
    /// goes through: `$0.dogs.age.min` is `dogs.@min.age`. For numbers, dates, Decimal128 and
    /// AnyRealmValue, and enums and custom types stored as one of them.
    public var min: Query<T> { aggregated("@min") }
    /// The largest value among the collection's objects: `dogs.@max.age`.
    public var max: Query<T> { aggregated("@max") }
    /// The average value among the collection's objects: `dogs.@avg.age`.
    public var avg: Query<T> { aggregated("@avg") }
    /// The sum of the values among the collection's objects: `dogs.@sum.age`.
    public var sum: Query<T> { aggregated("@sum") }
}
