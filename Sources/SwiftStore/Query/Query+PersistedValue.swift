import Foundation

// `.rawValue` (PersistableEnum) and `.persistableValue` (CustomPersistable): query on the
// stored value rather than the Swift type. Both keep the same key path; only the Swift type of
// the query changes, and with it the operators and arguments it accepts.

/// Implementation detail: a type persisted as itself (the built-in scalars and AnyRealmValue)
/// or an Optional of one, with the type it is stored as (RealmSwift's `_HasPersistedType`).
/// Objects, enums and custom persistable types are not among them.
public protocol _HasPersistedType {
    /// The type the value is stored as (the type itself, for the built-in scalars).
    associatedtype PersistedType = Self
}

extension Int: _HasPersistedType {}
extension Int8: _HasPersistedType {}
extension Int16: _HasPersistedType {}
extension Int32: _HasPersistedType {}
extension Int64: _HasPersistedType {}
extension Bool: _HasPersistedType {}
extension Float: _HasPersistedType {}
extension Double: _HasPersistedType {}
extension String: _HasPersistedType {}
extension Data: _HasPersistedType {}
extension Date: _HasPersistedType {}
extension UUID: _HasPersistedType {}
extension ObjectId: _HasPersistedType {}
extension Decimal128: _HasPersistedType {}
extension AnyRealmValue: _HasPersistedType {}
extension Optional: _HasPersistedType where Wrapped: _HasPersistedType {
    /// An optional is stored as an optional of its wrapped type's stored type.
    public typealias PersistedType = Wrapped.PersistedType?
}

// MARK: - Single values

extension Query where T: PersistableEnum {
    /// The enum's raw value, to query with values that are not cases:
    /// `$0.status.rawValue.starts(with: "act")`.
    public var rawValue: Query<T.RawValue> {
        Query<T.RawValue>(node)
    }

    /// The stored value: the enum's raw value.
    public var persistableValue: Query<T.RawValue> {
        Query<T.RawValue>(node)
    }
}

extension Query where T: _QueryOptional, T.Wrapped: PersistableEnum {
    /// The optional enum's raw value.
    public var rawValue: Query<T.Wrapped.RawValue?> {
        Query<T.Wrapped.RawValue?>(node)
    }

    /// The stored value: the optional enum's raw value.
    public var persistableValue: Query<T.Wrapped.RawValue?> {
        Query<T.Wrapped.RawValue?>(node)
    }
}

extension Query where T: CustomPersistable {
    /// The stored value, to query with values (or key paths, for a mapped embedded object)
    /// of the persisted type: `$0.temperature.persistableValue > 20.0`.
    public var persistableValue: Query<T.PersistedType> {
        Query<T.PersistedType>(node)
    }
}

extension Query where T: _QueryOptional, T.Wrapped: CustomPersistable {
    /// The stored value of the optional custom type.
    public var persistableValue: Query<T.Wrapped.PersistedType?> {
        Query<T.Wrapped.PersistedType?>(node)
    }
}

extension Query where T: FailableCustomPersistable {
    /// The stored value, to query with values of the persisted type.
    public var persistableValue: Query<T.PersistedType> {
        Query<T.PersistedType>(node)
    }
}

extension Query where T: _QueryOptional, T.Wrapped: FailableCustomPersistable {
    /// The stored value of the optional custom type.
    public var persistableValue: Query<T.Wrapped.PersistedType?> {
        Query<T.Wrapped.PersistedType?>(node)
    }
}

extension Query where T: _HasPersistedType {
    /// The stored value; for a type persisted as itself this is the same query.
    public var persistableValue: Query<T.PersistedType> {
        Query<T.PersistedType>(node)
    }
}

// MARK: - Collections (the collection type returned only decides which operators apply)

extension Query where T: _QueryableCollection, T.Element: PersistableEnum, T.Element.RawValue: RealmCollectionValue {
    /// The raw values of the enums in the collection.
    public var rawValue: Query<List<T.Element.RawValue>> {
        Query<List<T.Element.RawValue>>(node)
    }

    /// The stored values: the raw values of the enums in the collection.
    public var persistableValue: Query<List<T.Element.RawValue>> {
        Query<List<T.Element.RawValue>>(node)
    }
}

extension Query where T: _QueryableCollection, T.Element: _QueryOptional, T.Element.Wrapped: PersistableEnum,
    T.Element.Wrapped.RawValue: _RealmOptionalWrappable & Hashable
{
    /// The raw values of the optional enums in the collection.
    public var rawValue: Query<List<T.Element.Wrapped.RawValue?>> {
        Query<List<T.Element.Wrapped.RawValue?>>(node)
    }

    /// The stored values: the raw values of the optional enums in the collection.
    public var persistableValue: Query<List<T.Element.Wrapped.RawValue?>> {
        Query<List<T.Element.Wrapped.RawValue?>>(node)
    }
}

extension Query where T: _QueryableCollection, T.Element: CustomPersistable, T.Element.PersistedType: RealmCollectionValue {
    /// The stored values of the custom types in the collection.
    public var persistableValue: Query<List<T.Element.PersistedType>> {
        Query<List<T.Element.PersistedType>>(node)
    }
}

extension Query where T: _QueryableCollection, T.Element: _QueryOptional, T.Element.Wrapped: CustomPersistable,
    T.Element.Wrapped.PersistedType: _RealmOptionalWrappable & Hashable
{
    /// The stored values of the optional custom types in the collection.
    public var persistableValue: Query<List<T.Element.Wrapped.PersistedType?>> {
        Query<List<T.Element.Wrapped.PersistedType?>>(node)
    }
}

extension Query where T: _QueryableCollection, T.Element: _HasPersistedType, T.Element.PersistedType: RealmCollectionValue {
    /// The stored values; for types persisted as themselves the same collection.
    public var persistableValue: Query<List<T.Element.PersistedType>> {
        Query<List<T.Element.PersistedType>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: PersistableEnum, T.Value.RawValue: RealmCollectionValue {
    /// The raw values of the enums in the map.
    public var rawValue: Query<Map<T.Key, T.Value.RawValue>> {
        Query<Map<T.Key, T.Value.RawValue>>(node)
    }

    /// The stored values: the raw values of the enums in the map.
    public var persistableValue: Query<Map<T.Key, T.Value.RawValue>> {
        Query<Map<T.Key, T.Value.RawValue>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: _QueryOptional, T.Value.Wrapped: PersistableEnum,
    T.Value.Wrapped.RawValue: _RealmOptionalWrappable & Hashable
{
    /// The raw values of the optional enums in the map.
    public var rawValue: Query<Map<T.Key, T.Value.Wrapped.RawValue?>> {
        Query<Map<T.Key, T.Value.Wrapped.RawValue?>>(node)
    }

    /// The stored values: the raw values of the optional enums in the map.
    public var persistableValue: Query<Map<T.Key, T.Value.Wrapped.RawValue?>> {
        Query<Map<T.Key, T.Value.Wrapped.RawValue?>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: CustomPersistable, T.Value.PersistedType: RealmCollectionValue {
    /// The stored values of the custom types in the map.
    public var persistableValue: Query<Map<T.Key, T.Value.PersistedType>> {
        Query<Map<T.Key, T.Value.PersistedType>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: _QueryOptional, T.Value.Wrapped: CustomPersistable,
    T.Value.Wrapped.PersistedType: _RealmOptionalWrappable & Hashable
{
    /// The stored values of the optional custom types in the map.
    public var persistableValue: Query<Map<T.Key, T.Value.Wrapped.PersistedType?>> {
        Query<Map<T.Key, T.Value.Wrapped.PersistedType?>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: _HasPersistedType, T.Value.PersistedType: RealmCollectionValue {
    /// The stored values; for types persisted as themselves the same map.
    public var persistableValue: Query<Map<T.Key, T.Value.PersistedType>> {
        Query<Map<T.Key, T.Value.PersistedType>>(node)
    }
}
