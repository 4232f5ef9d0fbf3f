import Foundation

/// Key types a `Map` can have (String).
public protocol _MapKey: Hashable, Comparable {
    /// The key as stored.
    var _rlmKey: String { get }
    /// A key from its stored form.
    static func _rlmFromKey(_ key: String) -> Self
}

extension String: _MapKey {
    public var _rlmKey: String { self }
    public static func _rlmFromKey(_ key: String) -> String { key }
}

/// The interface of keyed collections (RealmSwift's `RealmKeyedCollection`): `Map`.
public protocol RealmKeyedCollection: Sequence, CustomStringConvertible, _RealmQueryable
    where _QueryElement == Value
{
    /// The key type.
    associatedtype Key: _MapKey
    /// The value type.
    associatedtype Value: RealmCollectionValue
    /// The Realm, or nil while unmanaged.
    var realm: Realm? { get }
    /// Whether the owner was deleted or its Realm invalidated.
    var isInvalidated: Bool { get }
    /// The number of entries.
    var count: Int { get }
    /// The keys in key order.
    var keys: [Key] { get }
    /// The values in key order.
    var values: [Value] { get }
    /// The value for a key (nil when absent); setting nil removes the key.
    subscript(key: Key) -> Value? { get set }
    /// Sets the value for a key.
    func updateValue(_ value: Value, forKey key: Key)
    /// Removes a key.
    func removeObject(for key: Key)
    /// Removes every entry.
    func removeAll()
}

/// One entry of a map, as map iteration yields it.
public struct SingleMapEntry<Key: _MapKey, Value: RealmCollectionValue>: Hashable {
    /// The entry's key.
    public let key: Key
    /// The entry's value.
    public let value: Value
}

/// A dictionary from string keys to values or objects, as a property of an object
/// (RealmSwift's `Map`). Object values are declared optional (`Map<String, Dog?>`): deleting
/// the object leaves the key with nil. Keys are kept in byte order.
public final class Map<Key: _MapKey, Value: RealmCollectionValue>: Sequence, CustomStringConvertible,
    _DynamicSequence, RealmKeyedCollection
{
    /// Implementation detail: the query over the map's values (nil while unmanaged).
    public var _rlmQueryRoot: _RealmQueryRoot? { managed.map { _RealmQueryRoot(base: $0.queryBase()) } }
    /// Implementation detail: the values of an unmanaged map.
    public var _rlmUnmanagedElements: [Value] { values }

    var unmanaged: [Key: Value] = [:]
    /// The database side of a managed collection. Set once, when a collection declared
    /// without `@Persisted` (`let list = List<Int>()`) becomes its owner's property.
    @exclusivity(unchecked) var managed: ManagedCollection?

    /// Creates an empty unmanaged map.
    public init() {
        managed = nil
    }

    init(managed: ManagedCollection) {
        self.managed = managed
    }

    convenience init(managedBy owner: ObjectBase, column: UInt32) {
        self.init(managed: ManagedCollection(owner: owner, column: column))
    }

    /// The number of entries.
    public var count: Int { managed?.count ?? unmanaged.count }

    /// Whether the map has no entries.
    public var isEmpty: Bool { count == 0 }

    /// The Realm managing the map, or nil if unmanaged.
    public var realm: Realm? { managed?.owner.realm }

    /// Whether the owning object was deleted or its Realm invalidated.
    public var isInvalidated: Bool { managed?.isInvalidated ?? false }

    /// The value for `key` (nil when absent); setting nil removes the key.
    public subscript(key: Key) -> Value? {
        get {
            if let managed { return managed.mapGet(key._rlmKey).map { Value._rlmDecode(_Stored($0)) } }
            return unmanaged[key]
        }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeObject(for: key) }
        }
    }

    /// Sets the value for `key` (adding an unmanaged object to the Realm).
    public func updateValue(_ value: Value, forKey key: Key) {
        if let managed { managed.mapSet(key._rlmKey, value._rlmEncode().value) } else { unmanaged[key] = value }
    }

    /// Removes `key` and its value.
    public func removeObject(for key: Key) {
        if let managed { managed.mapErase(key._rlmKey) } else { unmanaged[key] = nil }
    }

    /// Removes every entry.
    public func removeAll() {
        if let managed { managed.removeAll() } else { unmanaged.removeAll() }
    }

    /// Adds the entries of `other`, resolving clashes with `combine(old, new)`.
    public func merge<S: Sequence>(_ other: S, uniquingKeysWith combine: (Value, Value) throws -> Value) rethrows
        where S.Element == (key: Key, value: Value)
    {
        for (k, v) in other {
            if let old = self[k] { updateValue(try combine(old, v), forKey: k) } else { updateValue(v, forKey: k) }
        }
    }

    /// Adds the entries of `other` (as `SingleMapEntry` pairs), resolving clashes with `combine`.
    public func merge<S: Sequence>(_ other: S, uniquingKeysWith combine: (Value, Value) throws -> Value) rethrows
        where S.Element == SingleMapEntry<Key, Value>
    {
        try merge(other.map { (key: $0.key, value: $0.value) }, uniquingKeysWith: combine)
    }

    /// The keys, in key order.
    public var keys: [Key] {
        if let managed { return managed.mapKeys.map(Key._rlmFromKey) }
        return unmanaged.keys.sorted()
    }

    /// The values, in key order.
    public var values: [Value] { map(\.value) }

    /// Whether some entry satisfies `predicate`.
    public func contains(where predicate: (_ key: Key, _ value: Value) throws -> Bool) rethrows -> Bool {
        for e in self where try predicate(e.key, e.value) { return true }
        return false
    }

    /// The entries as (key, value) tuples.
    public func asKeyValueSequence() -> [(key: Key, value: Value)] {
        map { (key: $0.key, value: $0.value) }
    }

    /// The value for `key` (key-value coding reads map entries by key).
    public func value(forKey key: String) -> Any? {
        self[Key._rlmFromKey(key)].map { $0 as Any }
    }

    /// The value for a key, or a collection operator over the values (`@count`, `@min`,
    /// `@max`, `@sum`, `@avg`).
    public func value(forKeyPath keyPath: String) -> Any? {
        keyPath.hasPrefix("@") ? QueryOps.collectionOperator(self, keyPath) : value(forKey: keyPath)
    }

    /// Sets the value for `key` from a loosely typed value (nil removes the key).
    public func setValue(_ value: Any?, forKey key: String) {
        guard let value, !(value is NSNull) else { removeObject(for: Key._rlmFromKey(key)); return }
        guard let v = Value._rlmFromAny(value) else {
            preconditionFailure("Invalid value '\(value)' for a Map<\(Key.self), \(Value.self)>")
        }
        updateValue(v, forKey: Key._rlmFromKey(key))
    }

    /// Entries as (stored key, AnyRealmValue) for nested collections.
    func entries() -> [(String, AnyRealmValue)] {
        compactMap { e in (e.value as? AnyRealmValue).map { (e.key._rlmKey, $0) } }
    }

    /// Iterates the entries in key order.
    public func makeIterator() -> IndexingIterator<[SingleMapEntry<Key, Value>]> {
        if let managed {
            return (0..<managed.count).map { i -> SingleMapEntry<Key, Value> in
                let (k, v) = managed.mapEntry(i)
                return SingleMapEntry(key: Key._rlmFromKey(k), value: Value._rlmDecode(_Stored(v)))
            }.makeIterator()
        }
        return unmanaged.keys.sorted().map { SingleMapEntry(key: $0, value: unmanaged[$0]!) }.makeIterator()
    }

    /// `Map<String, Value> <n> ( [key]: value, ... )`.
    public var description: String { describe(depth: 0) }

    var dynamicElements: [Any] { map { ($0.key._rlmKey, $0.value as Any) } }
}

extension Map: _RealmSchemaDiscoverable, _Persistable {
    public static var _rlmShape: _PropertyShape {
        var shape = Value._rlmShape
        shape.collection = .map
        return shape
    }
    public static func _rlmDefaultValue() -> Map<Key, Value> { Map() }
    public static var _rlmCachesAccessor: Bool { true }
    public static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> Map<Key, Value> {
        Map(managedBy: obj, column: col)
    }
    public static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: Map<Key, Value>) {
        _rlmStore(value, obj, col, .error)
    }
    public static func _rlmStore(_ value: Map<Key, Value>, _ obj: ObjectBase, _ col: UInt32,
                                 _ policy: Realm.UpdatePolicy) {
        let items = value.asKeyValueSequence()
        let target = ManagedCollection(owner: obj, column: col)
        target.removeAll()
        for (k, v) in items { target.mapSet(k._rlmKey, v._rlmEncode().value, policy: policy) }
    }
    public static func _rlmStoredElements(_ value: Map<Key, Value>) -> [(key: String?, value: _Stored)] {
        value.asKeyValueSequence().map { (Optional($0.key._rlmKey), $0.value._rlmEncode()) }
    }
    public static func _rlmFromAny(_ value: Any) -> Map<Key, Value>? {
        let map = Map<Key, Value>()
        if let m = value as? Map<Key, Value> {
            for e in m { map.unmanaged[e.key] = e.value }
            return map
        }
        if let dict = value as? [String: Any] {
            for (k, v) in dict {
                guard let e = Value._rlmFromAny(v) else { return nil }
                map.unmanaged[Key._rlmFromKey(k)] = e
            }
            return map
        }
        if let pairs = value as? any _DynamicSequence {
            for case let (k, v) as (String, Any) in pairs.dynamicElements {
                guard let e = Value._rlmFromAny(v) else { return nil }
                map.unmanaged[Key._rlmFromKey(k)] = e
            }
            return map
        }
        return nil
    }
}

extension Map: Encodable where Value: Encodable {
    /// Encodes the map as a keyed container.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: MapCodingKey.self)
        for e in self { try container.encode(e.value, forKey: MapCodingKey(stringValue: e.key._rlmKey)) }
    }
}

extension Map: Decodable where Value: Decodable {
    /// Decodes an unmanaged map from a keyed container.
    public convenience init(from decoder: Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: MapCodingKey.self)
        for k in container.allKeys {
            unmanaged[Key._rlmFromKey(k.stringValue)] = try container.decode(Value.self, forKey: k)
        }
    }
}

struct MapCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Map {
    /// The smallest value of the property `keyPath` names over the map's objects, or nil.
    public func min<T: ObjectBase, V: _HasPersistedType>(of keyPath: KeyPath<T, V>) -> V? where Value == T?, V.PersistedType: MinMaxType {
        min(ofProperty: KeyPathTracer.name(for: keyPath, root: T.self))
    }

    /// The largest value of the property `keyPath` names over the map's objects, or nil.
    public func max<T: ObjectBase, V: _HasPersistedType>(of keyPath: KeyPath<T, V>) -> V? where Value == T?, V.PersistedType: MinMaxType {
        max(ofProperty: KeyPathTracer.name(for: keyPath, root: T.self))
    }

    /// The sum of the property `keyPath` names over the map's objects (0 when empty).
    public func sum<T: ObjectBase, V: _HasPersistedType>(of keyPath: KeyPath<T, V>) -> V where Value == T?, V.PersistedType: AddableType {
        sum(ofProperty: KeyPathTracer.name(for: keyPath, root: T.self))
    }

    /// The average of the property `keyPath` names over the map's objects, or nil.
    public func average<T: ObjectBase, V: _HasPersistedType>(of keyPath: KeyPath<T, V>) -> V? where Value == T?, V.PersistedType: AddableType {
        average(ofProperty: KeyPathTracer.name(for: keyPath, root: T.self))
    }

    /// The map's objects sorted by the property `keyPath` names.
    public func sorted<T: ObjectBase, V>(by keyPath: KeyPath<T, V>, ascending: Bool = true) -> Results<Value>
        where Value == T?
    {
        sorted(byKeyPath: KeyPathTracer.name(for: keyPath, root: T.self), ascending: ascending)
    }
}
