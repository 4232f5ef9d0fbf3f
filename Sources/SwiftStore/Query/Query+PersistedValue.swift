import Foundation

// `.rawValue` (PersistableEnum) and `.persistableValue` (CustomPersistable): query on the
// stored value rather than the Swift type. Both keep the same key path; only the Swift type of
// the query changes, and with it the operators and arguments it accepts.

/// Implementation detail: a type with the type it is stored as, `PersistedType` (RealmSwift's
/// `_HasPersistedType`). Every collection value has one: the built-in scalars, enums, objects
/// and `AnyRealmValue` are stored as themselves, an Optional as an Optional of its wrapped
/// type's stored type, and a `CustomPersistable` type as its declared `PersistedType`.
/// `NSNumber` and `NSDate` have one too, so aggregates can be asked for as those types.
public protocol _HasPersistedType {
    /// The type the value is stored as (the type itself, for the built-in types).
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
extension NSNumber: _HasPersistedType {
    /// An aggregate asked for as `NSNumber` is computed on the stored number.
    public typealias PersistedType = NSNumber
}
extension NSDate: _HasPersistedType {
    /// An aggregate asked for as `NSDate` is computed on the stored date.
    public typealias PersistedType = NSDate
}
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
}

extension Query where T: _QueryOptional, T.Wrapped: PersistableEnum {
    /// The optional enum's raw value.
    public var rawValue: Query<T.Wrapped.RawValue?> {
        Query<T.Wrapped.RawValue?>(node)
    }
}

extension Query where T: _HasPersistedType {
    /// The stored value: the raw value of an enum, the `persistableValue` of a custom
    /// persistable type (`$0.temperature.persistableValue > 20.0`), the value itself for the
    /// built-in types.
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
}

extension Query where T: _QueryableCollection, T.Element: _QueryOptional, T.Element.Wrapped: PersistableEnum,
    T.Element.Wrapped.RawValue: _RealmCollectionValueInsideOptional
{
    /// The raw values of the optional enums in the collection.
    public var rawValue: Query<List<T.Element.Wrapped.RawValue?>> {
        Query<List<T.Element.Wrapped.RawValue?>>(node)
    }
}

extension Query where T: _QueryableCollection, T.Element: _HasPersistedType, T.Element.PersistedType: RealmCollectionValue {
    /// The stored values of the collection's elements (raw values of enums, persisted values of
    /// custom types, the values themselves for the built-in types).
    public var persistableValue: Query<List<T.Element.PersistedType>> {
        Query<List<T.Element.PersistedType>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: PersistableEnum, T.Value.RawValue: RealmCollectionValue {
    /// The raw values of the enums in the map.
    public var rawValue: Query<Map<T.Key, T.Value.RawValue>> {
        Query<Map<T.Key, T.Value.RawValue>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: _QueryOptional, T.Value.Wrapped: PersistableEnum,
    T.Value.Wrapped.RawValue: _RealmCollectionValueInsideOptional
{
    /// The raw values of the optional enums in the map.
    public var rawValue: Query<Map<T.Key, T.Value.Wrapped.RawValue?>> {
        Query<Map<T.Key, T.Value.Wrapped.RawValue?>>(node)
    }
}

extension Query where T: _QueryableKeyedCollection, T.Value: _HasPersistedType, T.Value.PersistedType: RealmCollectionValue {
    /// The stored values of the map's values (raw values of enums, persisted values of custom
    /// types, the values themselves for the built-in types).
    public var persistableValue: Query<Map<T.Key, T.Value.PersistedType>> {
        Query<Map<T.Key, T.Value.PersistedType>>(node)
    }
}
