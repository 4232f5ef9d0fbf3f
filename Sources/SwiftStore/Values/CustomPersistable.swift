import Foundation

/// An enum persisted by its raw value (Int or String), which is its `PersistedType`. Its
/// default value is its first case.
///
/// ```swift
/// enum Status: String, PersistableEnum { case active, archived }
/// final class Task: Object { @Persisted var status: Status }
/// ```
public protocol PersistableEnum: _RealmCollectionValueInsideOptional, RawRepresentable, CaseIterable,
    Comparable where RawValue: _RealmCollectionValueInsideOptional & Comparable, PersistedType == RawValue {}

extension PersistableEnum {
    public static var _rlmShape: _PropertyShape { RawValue._rlmShape }
    public static func _rlmDefaultValue() -> Self { allCases.first! }
    public static func _rlmDecode(_ stored: _Stored) -> Self {
        let raw = RawValue._rlmDecode(stored)
        guard let value = Self(rawValue: raw) else {
            preconditionFailure("No case of \(Self.self) has the stored raw value \(raw)")
        }
        return value
    }
    public func _rlmEncode() -> _Stored { rawValue._rlmEncode() }
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if let v = value as? Self { return v }
        return RawValue._rlmFromAny(value).flatMap { Self(rawValue: $0) }
    }
    /// Cases order by their raw values.
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// A type persisted as another, persistable type: `persistableValue` is what is stored and
/// `init(persistedValue:)` makes the value back.
///
/// ```swift
/// struct Celsius: CustomPersistable {
///     var degrees: Double
///     init(persistedValue: Double) { degrees = persistedValue }
///     var persistableValue: Double { degrees }
/// }
/// ```
public protocol CustomPersistable: _RealmCollectionValueInsideOptional {
    /// The type stored in the file.
    associatedtype PersistedType: _RealmCollectionValueInsideOptional
    /// Makes a value from the stored one.
    init(persistedValue: PersistedType)
    /// The value to store.
    var persistableValue: PersistedType { get }
}

extension CustomPersistable {
    public static var _rlmShape: _PropertyShape { PersistedType._rlmShape }
    public static func _rlmDefaultValue() -> Self { Self(persistedValue: PersistedType._rlmDefaultValue()) }
    public static func _rlmDecode(_ stored: _Stored) -> Self { Self(persistedValue: PersistedType._rlmDecode(stored)) }
    public func _rlmEncode() -> _Stored { persistableValue._rlmEncode() }
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if let v = value as? Self { return v }
        return PersistedType._rlmFromAny(value).map { Self(persistedValue: $0) }
    }
}

/// Like `CustomPersistable`, for types that cannot represent every stored value: a stored
/// value they refuse reads as a trap with the type's name.
public protocol FailableCustomPersistable: _RealmCollectionValueInsideOptional {
    /// The type stored in the file.
    associatedtype PersistedType: _RealmCollectionValueInsideOptional
    /// Makes a value from the stored one, or nil if it cannot.
    init?(persistedValue: PersistedType)
    /// The value to store.
    var persistableValue: PersistedType { get }
}

extension FailableCustomPersistable {
    public static var _rlmShape: _PropertyShape { PersistedType._rlmShape }
    public static func _rlmDefaultValue() -> Self {
        guard let v = Self(persistedValue: PersistedType._rlmDefaultValue()) else {
            preconditionFailure("\(Self.self) has no value for the default \(PersistedType.self); give the property an initial value")
        }
        return v
    }
    public static func _rlmDecode(_ stored: _Stored) -> Self {
        let raw = PersistedType._rlmDecode(stored)
        guard let v = Self(persistedValue: raw) else {
            preconditionFailure("Failed to make a \(Self.self) from the stored value \(raw)")
        }
        return v
    }
    public func _rlmEncode() -> _Stored { persistableValue._rlmEncode() }
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if let v = value as? Self { return v }
        return PersistedType._rlmFromAny(value).flatMap { Self(persistedValue: $0) }
    }
}

// MARK: - RealmProperty (legacy optional boxes)

/// A box for an optional (or AnyRealmValue) property, the legacy form of declaring one:
/// `let age = RealmProperty<Int?>()`. Read and write `value`.
public final class RealmProperty<Value: _StorableValue & _RealmSchemaDiscoverable> {
    private var unmanagedValue: Value
    /// Once the owner is managed: an accessor of the owner's row of its own (a dynamic one, so it
    /// has no boxes), independent of the owner instance's lifetime.
    private var accessor: ObjectBase?
    private var column: UInt32 = 0

    /// An unmanaged box with the type's default value (nil for optionals).
    public init() {
        unmanagedValue = Value._rlmDefaultValue()
    }

    /// An unmanaged box holding `value`: `RealmOptional<Int>(3)`, `RealmProperty<String?>("x")`.
    public init(_ value: Value) {
        unmanagedValue = value
    }

    /// The value, read from or written to the database once the owner is managed.
    public var value: Value {
        get {
            if let accessor { return Value._rlmGet(accessor, column) }
            return unmanagedValue
        }
        set {
            if let accessor { Value._rlmSet(accessor, column, newValue) } else { unmanagedValue = newValue }
        }
    }
}

extension RealmProperty: Equatable where Value: Equatable {
    /// Two boxes are equal when their values are (managed or not).
    public static func == (lhs: RealmProperty, rhs: RealmProperty) -> Bool {
        lhs.value == rhs.value
    }
}

extension RealmProperty: CustomStringConvertible {
    /// The value's own description: `Optional(5)`, `nil`, or the `AnyRealmValue` case.
    public var description: String { String(describing: value) }
}

extension RealmProperty: Decodable where Value: Decodable {
    /// Decodes the box from its bare value; `null` gives nil (or `.none` for `AnyRealmValue`).
    public convenience init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self.init()
        } else {
            self.init(try container.decode(Value.self))
        }
    }
}

extension RealmProperty: Encodable where Value: Encodable {
    /// Encodes the bare value (`null` for nil), read from the database when the owner is managed.
    public func encode(to encoder: Encoder) throws {
        try value.encode(to: encoder)
    }
}

/// The legacy `RealmOptional<T>`: a `RealmProperty<T?>`.
public typealias RealmOptional<T: _RealmOptionalWrappable> = RealmProperty<T?>

/// What the object layer needs from a legacy box found in an instance.
protocol LegacyPropertyBox: AnyObject {
    static var shape: _PropertyShape { get }
    var anyValue: Any { get }
    func setAny(_ value: Any) -> Bool
    func attach(owner: ObjectBase, column: UInt32)
    func store(into owner: ObjectBase, column: UInt32, policy: Realm.UpdatePolicy)
    /// The core values `store` writes, each with its map key, in its order.
    var storedElements: [(key: String?, value: StoredValue)] { get }
}

extension RealmProperty: LegacyPropertyBox {
    static var shape: _PropertyShape { Value._rlmShape }
    var anyValue: Any { value }
    func setAny(_ value: Any) -> Bool {
        guard let v = Value._rlmFromAny(value) else { return false }
        self.value = v
        return true
    }
    func attach(owner: ObjectBase, column: UInt32) {
        guard let core = owner.core, let info = owner.info else { return }
        accessor = core.dynamicObject(info, key: owner.cobj.key)
        self.column = column
    }
    func store(into owner: ObjectBase, column: UInt32, policy: Realm.UpdatePolicy) {
        Value._rlmStore(unmanagedValue, owner, column, policy)
    }
    var storedElements: [(key: String?, value: StoredValue)] {
        Value._rlmStoredElements(unmanagedValue).map { ($0.key, $0.value.value) }
    }
}
