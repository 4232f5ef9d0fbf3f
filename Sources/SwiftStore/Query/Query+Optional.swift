/// Implementation detail: an Optional, so query extensions can constrain on its wrapped type
/// (RealmSwift's `OptionalProtocol`).
public protocol _QueryOptional: ExpressibleByNilLiteral {
    /// The type inside the Optional.
    associatedtype Wrapped
}

extension Optional: _QueryOptional {}

extension Query where T: _QueryOptional, T.Wrapped: ObjectBase {
    /// A property of the linked object: `$0.owner.name` gives `owner.name`.
    public subscript<V>(dynamicMember member: KeyPath<T.Wrapped, V>) -> Query<V> {
        Query<V>(appendingKeyPath(Self.propertyName(member, root: T.Wrapped.self), options: []))
    }

    /// A collection property of the linked object: `$0.owner.dogs`. As in RealmSwift, a
    /// comparison through it has no explicit `ANY` (the core applies any-semantics to list
    /// paths); aggregates such as `.avg` go after the collection (`owner.dogs.@avg.age`).
    public subscript<V: _QueryableCollection>(dynamicMember member: KeyPath<T.Wrapped, V>) -> Query<V> {
        Query<V>(appendingKeyPath(Self.propertyName(member, root: T.Wrapped.self), options: [], collection: true))
    }

    /// A Map property of the linked object: `$0.owner.prices`.
    public subscript<V: _QueryableKeyedCollection>(dynamicMember member: KeyPath<T.Wrapped, V>) -> Query<V> {
        Query<V>(appendingKeyPath(Self.propertyName(member, root: T.Wrapped.self), options: [], collection: true))
    }
}
