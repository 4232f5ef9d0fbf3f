import Foundation

/// Declares a persisted property of an `Object` or `EmbeddedObject`.
///
/// ```swift
/// final class Person: Object {
///     @Persisted(primaryKey: true) var id = ObjectId.generate()
///     @Persisted(indexed: true) var name = ""
///     @Persisted var age: Int?
///     @Persisted var dogs: List<Dog>
///     @Persisted(originProperty: "owners") var clubs: LinkingObjects<Club>
/// }
/// ```
///
/// An unmanaged object keeps the value in the wrapper; a managed one reads and writes its
/// column through the object's accessor (the wrapper then holds only the column key). The
/// wrapper uses the enclosing-instance subscript, so it only works inside an `ObjectBase`
/// subclass.
@propertyWrapper
public struct Persisted<Value: _Persistable> {
    // The storage and the enclosing-instance subscript are inlinable so that a model's
    // property accessors are specialized for their type in the model's module: unspecialized,
    // every read looked up `Persisted<Value>.Storage`'s metadata at run time.
    @usableFromInline
    enum Storage {
        case unmanaged(Value)      // an unmanaged value
        case unmanagedNoDefault    // unmanaged, never set: reads as the type's default
        case indexed(Value?)       // unmanaged, declared `indexed: true` (nil: the default)
        case primary(Value?)       // unmanaged, declared `primaryKey: true` (nil: the default)
        case origin(String)        // LinkingObjects, declared with its origin property
        case managed(UInt32, Unmanaged<ObjectBase>) // managed: the column key and the object
        case managedCached(Value, UInt32) // managed collection accessor, made once
        case tracing(Int)          // on a key-path tracer: the property's index
    }

    // The declaration's options live in the storage's cases, not in fields of their own: a
    // wrapper is then just its storage (no flags to lay out in every object, and no optional
    // string to release for every property of every object freed). Schema discovery reads them
    // from a fresh instance, and unmanaged writes keep them.
    @usableFromInline var storage: Storage

    /// Not available: `@Persisted` only works on properties of Object subclasses.
    @available(*, unavailable, message: "@Persisted can only be used on Object and EmbeddedObject subclasses")
    public var wrappedValue: Value {
        get { fatalError("@Persisted can only be used on Object and EmbeddedObject subclasses") }
        set { fatalError("@Persisted can only be used on Object and EmbeddedObject subclasses") }
    }

    /// A property whose initial value is the type's default (0, "", nil, an empty collection).
    @inlinable
    public init() {
        storage = .unmanagedNoDefault
    }

    /// A property with an initial value.
    @inlinable
    public init(wrappedValue: Value) {
        storage = .unmanaged(wrappedValue)
    }

    @usableFromInline
    init(storage: Storage) {
        self.storage = storage
    }

    /// The unmanaged value, or nil if it was never set (it reads as the type's default).
    @inlinable
    var unmanagedValue: Value? {
        switch storage {
        case .unmanaged(let value), .managedCached(let value, _): return value
        case .indexed(let value), .primary(let value): return value
        case .unmanagedNoDefault, .origin, .managed, .tracing: return nil
        }
    }

    /// The storage holding unmanaged `value` in place of `storage`, with its declared options.
    @inlinable
    static func unmanaged(_ value: Value, keepingOptionsOf storage: Storage) -> Storage {
        switch storage {
        case .indexed: return .indexed(value)
        case .primary: return .primary(value)
        case .origin: return storage // LinkingObjects have no value of their own
        default: return .unmanaged(value)
        }
    }

    /// Sets the unmanaged value, keeping the declared options.
    @inlinable
    mutating func setUnmanaged(_ value: Value) {
        storage = Self.unmanaged(value, keepingOptionsOf: storage)
    }

    /// `setUnmanaged` on the wrapper `storageKeyPath` names in `object`: one read and one
    /// store, never a call inside an access. The optimizer then proves that a model's wrapper
    /// fields see no overlapping accesses and drops the run-time exclusivity checks on them
    /// (calling the `mutating` method here kept them, on every read).
    @inlinable @inline(__always)
    static func setUnmanaged<EnclosingSelf: ObjectBase>(
        _ object: EnclosingSelf, _ storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>,
        _ value: Value
    ) {
        let current = object[keyPath: storageKeyPath].storage
        object[keyPath: storageKeyPath].storage = unmanaged(value, keepingOptionsOf: current)
    }

    /// Reads and writes the property of the enclosing object.
    ///
    /// A managed object's property goes straight to its column, found by the wrapper's offset
    /// inside the object (one array index in the class's table), so reading a managed object
    /// never touches the wrapper's own storage except for collections, whose accessor is kept
    /// there after the first read.
    ///
    /// The subscript is always inlined into the model's accessor: the key paths are then
    /// literals the optimizer folds into direct field addresses, and the offset a constant,
    /// so no key-path object is fetched, retained or released on any access.
    @inlinable @inline(__always)
    public static subscript<EnclosingSelf: ObjectBase>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>
    ) -> Value {
        get {
            if object.isManagedAccessor {
                let offset = fieldOffset(object, storageKeyPath)
                if !Value._rlmCachesAccessor { return Value._rlmGet(object, fieldOffset: offset) }
                let col = object.column(atFieldOffset: offset)
                // A frozen object may be read from several threads at once: its collection
                // accessors are made on each read instead of being stored in the wrapper.
                if object.isFrozenAccessor { return Value._rlmGet(object, col) }
                if case .managedCached(let value, let cached) = object[keyPath: storageKeyPath].storage, cached == col {
                    return value
                }
                // owned by another accessor of the row, so the kept value does not hold `object`
                let value = Value._rlmGet(object._rlmKeptCollectionOwner, col)
                object[keyPath: storageKeyPath].storage = .managedCached(value, col)
                return value
            }
            switch object[keyPath: storageKeyPath].storage {
            case .unmanaged(let value), .managedCached(let value, _):
                return value
            case .indexed(let value?), .primary(let value?):
                return value
            case .unmanagedNoDefault, .managed, .indexed(nil), .primary(nil), .origin:
                let value = Value._rlmDefaultValue()
                setUnmanaged(object, storageKeyPath, value)
                return value
            case .tracing(let index):
                return KeyPathTracer.traced(object, index, Value.self)
            }
        }
        set {
            if object.isManagedAccessor {
                Value._rlmSet(object, object.column(atFieldOffset: fieldOffset(object, storageKeyPath)), newValue)
                return
            }
            // (Key-path tracers are only read through, so an unmanaged write is one store.)
            setUnmanaged(object, storageKeyPath, newValue)
        }
    }

    /// The offset of the wrapper `storageKeyPath` names inside `object`. Inlined with a
    /// literal key path this is a constant: no access is made, only the address is taken.
    @inlinable @inline(__always)
    static func fieldOffset<EnclosingSelf: ObjectBase>(
        _ object: EnclosingSelf, _ storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Persisted<Value>>
    ) -> Int {
        let base = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        return withUnsafeMutablePointer(to: &object[keyPath: storageKeyPath]) { UnsafeRawPointer($0) - base }
    }
}

extension Persisted where Value: _Indexable {
    /// A property with the type's default value and, if `indexed`, an ordered index.
    @inlinable
    public init(indexed: Bool) {
        self.init(storage: indexed ? .indexed(nil) : .unmanagedNoDefault)
    }

    /// A property with an initial value and, if `indexed`, an ordered index.
    @inlinable
    public init(wrappedValue value: Value, indexed: Bool) {
        self.init(storage: indexed ? .indexed(value) : .unmanaged(value))
    }
}

extension Persisted where Value: _PrimaryKey {
    /// The primary key (if `primaryKey` is true), with the type's default value.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(nil) : .unmanagedNoDefault)
    }

    /// The primary key (if `primaryKey` is true), with an initial value.
    @inlinable
    public init(wrappedValue value: Value, primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(value) : .unmanaged(value))
    }
}


// Enums and custom persistable types take an index or the primary key when the type they are
// stored as does (RealmSwift states this through `_Indexable` and `_PrimaryKey` on the stored
// type). The column is the stored type's, so the index and the key behave as for it.

extension Persisted where Value: PersistableEnum, Value.RawValue: _Indexable {
    /// A property of an enum whose raw value type can be indexed, with the type's default value and, if
    /// `indexed`, an ordered index.
    @inlinable
    public init(indexed: Bool) {
        self.init(storage: indexed ? .indexed(nil) : .unmanagedNoDefault)
    }

    /// A property of an enum whose raw value type can be indexed, with an initial value.
    @inlinable
    public init(wrappedValue value: Value, indexed: Bool) {
        self.init(storage: indexed ? .indexed(value) : .unmanaged(value))
    }
}

extension Persisted where Value: PersistableEnum, Value.RawValue: _PrimaryKey {
    /// The primary key (if `primaryKey` is true), for an enum whose raw value type can be a primary key.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(nil) : .unmanagedNoDefault)
    }

    /// The primary key (if `primaryKey` is true) with an initial value.
    @inlinable
    public init(wrappedValue value: Value, primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(value) : .unmanaged(value))
    }
}

extension Persisted where Value: _QueryOptional, Value.Wrapped: PersistableEnum, Value.Wrapped.RawValue: _Indexable {
    /// A property of an optional enum whose raw value type can be indexed, with the type's default value and, if
    /// `indexed`, an ordered index.
    @inlinable
    public init(indexed: Bool) {
        self.init(storage: indexed ? .indexed(nil) : .unmanagedNoDefault)
    }

    /// A property of an optional enum whose raw value type can be indexed, with an initial value.
    @inlinable
    public init(wrappedValue value: Value, indexed: Bool) {
        self.init(storage: indexed ? .indexed(value) : .unmanaged(value))
    }
}

extension Persisted where Value: _QueryOptional, Value.Wrapped: PersistableEnum, Value.Wrapped.RawValue: _PrimaryKey {
    /// The primary key (if `primaryKey` is true), for an optional enum whose raw value type can be a primary key.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(nil) : .unmanagedNoDefault)
    }

    /// The primary key (if `primaryKey` is true) with an initial value.
    @inlinable
    public init(wrappedValue value: Value, primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(value) : .unmanaged(value))
    }
}

extension Persisted where Value: CustomPersistable, Value.PersistedType: _Indexable {
    /// A property of a custom persistable type whose persisted type can be indexed, with the type's default value and, if
    /// `indexed`, an ordered index.
    @inlinable
    public init(indexed: Bool) {
        self.init(storage: indexed ? .indexed(nil) : .unmanagedNoDefault)
    }

    /// A property of a custom persistable type whose persisted type can be indexed, with an initial value.
    @inlinable
    public init(wrappedValue value: Value, indexed: Bool) {
        self.init(storage: indexed ? .indexed(value) : .unmanaged(value))
    }
}

extension Persisted where Value: CustomPersistable, Value.PersistedType: _PrimaryKey {
    /// The primary key (if `primaryKey` is true), for a custom persistable type whose persisted type can be a primary key.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(nil) : .unmanagedNoDefault)
    }

    /// The primary key (if `primaryKey` is true) with an initial value.
    @inlinable
    public init(wrappedValue value: Value, primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(value) : .unmanaged(value))
    }
}

extension Persisted where Value: _QueryOptional, Value.Wrapped: CustomPersistable, Value.Wrapped.PersistedType: _Indexable {
    /// A property of an optional custom persistable type whose persisted type can be indexed, with the type's default value and, if
    /// `indexed`, an ordered index.
    @inlinable
    public init(indexed: Bool) {
        self.init(storage: indexed ? .indexed(nil) : .unmanagedNoDefault)
    }

    /// A property of an optional custom persistable type whose persisted type can be indexed, with an initial value.
    @inlinable
    public init(wrappedValue value: Value, indexed: Bool) {
        self.init(storage: indexed ? .indexed(value) : .unmanaged(value))
    }
}

extension Persisted where Value: _QueryOptional, Value.Wrapped: CustomPersistable, Value.Wrapped.PersistedType: _PrimaryKey {
    /// The primary key (if `primaryKey` is true), for an optional custom persistable type whose persisted type can be a primary key.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(nil) : .unmanagedNoDefault)
    }

    /// The primary key (if `primaryKey` is true) with an initial value.
    @inlinable
    public init(wrappedValue value: Value, primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(value) : .unmanaged(value))
    }
}

extension Persisted where Value: FailableCustomPersistable, Value.PersistedType: _Indexable {
    /// A property of a failable custom persistable type whose persisted type can be indexed, with the type's default value and, if
    /// `indexed`, an ordered index.
    @inlinable
    public init(indexed: Bool) {
        self.init(storage: indexed ? .indexed(nil) : .unmanagedNoDefault)
    }

    /// A property of a failable custom persistable type whose persisted type can be indexed, with an initial value.
    @inlinable
    public init(wrappedValue value: Value, indexed: Bool) {
        self.init(storage: indexed ? .indexed(value) : .unmanaged(value))
    }
}

extension Persisted where Value: FailableCustomPersistable, Value.PersistedType: _PrimaryKey {
    /// The primary key (if `primaryKey` is true), for a failable custom persistable type whose persisted type can be a primary key.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(nil) : .unmanagedNoDefault)
    }

    /// The primary key (if `primaryKey` is true) with an initial value.
    @inlinable
    public init(wrappedValue value: Value, primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(value) : .unmanaged(value))
    }
}

extension Persisted where Value: _QueryOptional, Value.Wrapped: FailableCustomPersistable, Value.Wrapped.PersistedType: _Indexable {
    /// A property of an optional failable custom persistable type whose persisted type can be indexed, with the type's default value and, if
    /// `indexed`, an ordered index.
    @inlinable
    public init(indexed: Bool) {
        self.init(storage: indexed ? .indexed(nil) : .unmanagedNoDefault)
    }

    /// A property of an optional failable custom persistable type whose persisted type can be indexed, with an initial value.
    @inlinable
    public init(wrappedValue value: Value, indexed: Bool) {
        self.init(storage: indexed ? .indexed(value) : .unmanaged(value))
    }
}

extension Persisted where Value: _QueryOptional, Value.Wrapped: FailableCustomPersistable, Value.Wrapped.PersistedType: _PrimaryKey {
    /// The primary key (if `primaryKey` is true), for an optional failable custom persistable type whose persisted type can be a primary key.
    @inlinable
    public init(primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(nil) : .unmanagedNoDefault)
    }

    /// The primary key (if `primaryKey` is true) with an initial value.
    @inlinable
    public init(wrappedValue value: Value, primaryKey: Bool) {
        self.init(storage: primaryKey ? .primary(value) : .unmanaged(value))
    }
}

extension Persisted {
    /// Backlinks: the objects of `Element`'s class whose property `originProperty` links here.
    public init<Element: ObjectBase & RealmCollectionValue>(originProperty: String) where Value == LinkingObjects<Element> {
        self.init(storage: .origin(originProperty))
    }
}

extension Persisted: Decodable where Value: Decodable {
    /// Decodes the unmanaged value.
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(wrappedValue: try container.decode(Value.self))
    }
}

extension KeyedDecodingContainer {
    /// Decodes a `@Persisted` property, giving it the type's default value when the key is
    /// missing (as RealmSwift does), so models decode from partial input.
    public func decode<T: _Persistable & Decodable>(_ type: Persisted<T>.Type, forKey key: Key) throws -> Persisted<T> {
        try decodeIfPresent(type, forKey: key) ?? Persisted<T>()
    }
}

extension Persisted: Encodable where Value: Encodable {
    /// Encodes the value: the unmanaged value, or for a managed object the value read from
    /// the database (so synthesized `Codable` works for managed objects too).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        if case .managed(let col, let object) = storage {
            try container.encode(Value._rlmGet(object.takeUnretainedValue(), col))
        } else {
            try container.encode(unmanagedValue ?? Value._rlmDefaultValue())
        }
    }
}

/// Types that can carry an index: integers, Bool, String, Date, ObjectId, UUID, their
/// optionals, and enums and custom types persisted as one of them.
public protocol _Indexable {}
/// Types that can be a primary key: integers, String, ObjectId, UUID and their optionals.
public protocol _PrimaryKey {}

extension Int: _Indexable, _PrimaryKey {}
extension Int8: _Indexable, _PrimaryKey {}
extension Int16: _Indexable, _PrimaryKey {}
extension Int32: _Indexable, _PrimaryKey {}
extension Int64: _Indexable, _PrimaryKey {}
extension Bool: _Indexable {}
extension String: _Indexable, _PrimaryKey {}
extension Date: _Indexable {}
extension ObjectId: _Indexable, _PrimaryKey {}
extension UUID: _Indexable, _PrimaryKey {}
extension AnyRealmValue: _Indexable {}
extension Optional: _Indexable where Wrapped: _Indexable {}
extension Optional: _PrimaryKey where Wrapped: _PrimaryKey {}

// MARK: - Reaching the wrapper inside an instance

/// What the object layer needs from a `@Persisted` field it only knows by its memory offset
/// inside an instance (found by reflection, see `SchemaDiscovery`): its shape, its flags, and
/// typed reads and writes of its storage.
protocol PersistedField {
    static var shape: _PropertyShape { get }
    static func flags(at p: UnsafeRawPointer) -> (indexed: Bool, primary: Bool, origin: String?)
    /// Makes the wrapper at `p` (inside `object`) managed by column `col`.
    static func bind(at p: UnsafeMutableRawPointer, column col: UInt32, object: ObjectBase)
    /// Makes the wrapper at `p` a key-path tracer for property `index`.
    static func trace(at p: UnsafeMutableRawPointer, index: Int)
    /// The unmanaged value (or the type's default).
    static func unmanagedValue(at p: UnsafeRawPointer) -> Any
    /// Sets the unmanaged value from a loosely typed value; false if it does not convert.
    static func setUnmanaged(at p: UnsafeMutableRawPointer, _ value: Any) -> Bool
    /// Copies the unmanaged value at `p` into the newly managed `object`'s column.
    static func store(from p: UnsafeRawPointer, into object: ObjectBase, column col: UInt32,
                      policy: Realm.UpdatePolicy)
    /// The unmanaged value at `p` as a core value (a batched `add`); nil when it is not one.
    static func storedValue(at p: UnsafeRawPointer) -> StoredValue?
    /// The core values the unmanaged value at `p` holds, each with its map key, in the order
    /// `store` writes them (a batched `add` finds the objects it links from them).
    static func storedElements(at p: UnsafeRawPointer) -> [(key: String?, value: StoredValue)]
    /// Reads a managed object's column as the property's Swift type.
    static func managedValue(_ object: ObjectBase, column col: UInt32) -> Any
    /// Reads a managed object's column as key-value coding gives it (an Optional flattened).
    static func managedFlattenedValue(_ object: ObjectBase, column col: UInt32) -> Any?
    /// Writes a managed object's column from a loosely typed value; false if it does not convert.
    static func setManaged(_ object: ObjectBase, column col: UInt32, _ value: Any,
                           policy: Realm.UpdatePolicy) -> Bool
}

extension Persisted: PersistedField {
    static var shape: _PropertyShape { Value._rlmShape }

    static func flags(at p: UnsafeRawPointer) -> (indexed: Bool, primary: Bool, origin: String?) {
        switch p.assumingMemoryBound(to: Persisted<Value>.self).pointee.storage {
        case .indexed: return (true, false, nil)
        case .primary: return (false, true, nil)
        case .origin(let name): return (false, false, name)
        default: return (false, false, nil)
        }
    }

    static func bind(at p: UnsafeMutableRawPointer, column col: UInt32, object: ObjectBase) {
        p.assumingMemoryBound(to: Persisted<Value>.self).pointee.storage = .managed(col, .passUnretained(object))
    }

    static func trace(at p: UnsafeMutableRawPointer, index: Int) {
        p.assumingMemoryBound(to: Persisted<Value>.self).pointee.storage = .tracing(index)
    }

    static func unmanagedValue(at p: UnsafeRawPointer) -> Any {
        p.assumingMemoryBound(to: Persisted<Value>.self).pointee.unmanagedValue ?? Value._rlmDefaultValue()
    }

    static func setUnmanaged(at p: UnsafeMutableRawPointer, _ value: Any) -> Bool {
        guard let v = Value._rlmFromAny(value) else { return false }
        p.assumingMemoryBound(to: Persisted<Value>.self).pointee.setUnmanaged(v)
        return true
    }

    static func store(from p: UnsafeRawPointer, into object: ObjectBase, column col: UInt32,
                      policy: Realm.UpdatePolicy) {
        let value = p.assumingMemoryBound(to: Persisted<Value>.self).pointee.unmanagedValue ?? Value._rlmDefaultValue()
        Value._rlmStore(value, object, col, policy)
    }

    static func storedValue(at p: UnsafeRawPointer) -> StoredValue? {
        let value = p.assumingMemoryBound(to: Persisted<Value>.self).pointee.unmanagedValue ?? Value._rlmDefaultValue()
        return Value._rlmEncodeStored(value)?.value
    }

    static func storedElements(at p: UnsafeRawPointer) -> [(key: String?, value: StoredValue)] {
        let value = p.assumingMemoryBound(to: Persisted<Value>.self).pointee.unmanagedValue ?? Value._rlmDefaultValue()
        return Value._rlmStoredElements(value).map { ($0.key, $0.value.value) }
    }

    static func managedValue(_ object: ObjectBase, column col: UInt32) -> Any {
        Value._rlmGet(object, col)
    }

    static func managedFlattenedValue(_ object: ObjectBase, column col: UInt32) -> Any? {
        Value._rlmGetFlattened(object, col)
    }

    static func setManaged(_ object: ObjectBase, column col: UInt32, _ value: Any,
                           policy: Realm.UpdatePolicy) -> Bool {
        guard let v = Value._rlmFromAny(value) else { return false }
        Value._rlmStore(v, object, col, policy)
        return true
    }
}
