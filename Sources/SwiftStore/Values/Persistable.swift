import Foundation

/// Implementation detail: a value on its way to or from the storage core.
public struct _Stored {
    var value: StoredValue
    init(_ value: StoredValue) { self.value = value }
}

/// A value in the core's terms, before it becomes a C value (`RealmCore.withCValue`) or after it
/// was read from one (`RealmCore.stored(from:)`).
enum StoredValue {
    case null
    case int(Int64)
    case bool(Bool)
    case float(Float)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    case objectId(ObjectId)
    case decimal(Decimal128)
    case uuid(UUID)
    case object(ObjectBase)
    case list(List<AnyRealmValue>)             // a nested list in an AnyRealmValue
    case dictionary(Map<String, AnyRealmValue>) // a nested dictionary in an AnyRealmValue
}

/// Implementation detail: a type whose storage shape can be discovered from its type alone.
public protocol _RealmSchemaDiscoverable {
    /// How values of this type are stored.
    static var _rlmShape: _PropertyShape { get }
}

/// A type that `@Persisted` can wrap: every scalar, their optionals, links, collections and
/// LinkingObjects. Its requirements are implementation details.
public protocol _Persistable: _RealmSchemaDiscoverable {
    /// The value an unmanaged property without an initial value reads as.
    static func _rlmDefaultValue() -> Self
    /// Reads the property `col` of a managed object.
    static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> Self
    /// Reads the property whose wrapper lies at `offset` in a managed object.
    static func _rlmGet(_ obj: ObjectBase, fieldOffset offset: Int) -> Self
    /// Writes the property `col` of a managed object (inside a write transaction).
    static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: Self)
    /// Copies an unmanaged value into a newly managed object's property (`add`, `create`).
    static func _rlmStore(_ value: Self, _ obj: ObjectBase, _ col: UInt32, _ policy: Realm.UpdatePolicy)
    /// Converts a loosely typed value (key-value coding, `init(value:)`) to this type.
    static func _rlmFromAny(_ value: Any) -> Self?
    /// Whether a managed read returns an accessor worth keeping in the wrapper (collections).
    static var _rlmCachesAccessor: Bool { get }
    /// Reads the property `col` of a managed object as key-value coding gives it: an Optional
    /// flattened to nil or its value (without the dynamic cast that flattening an `Any` needs).
    static func _rlmGetFlattened(_ obj: ObjectBase, _ col: UInt32) -> Any?
    /// The core value of an unmanaged value for a batched `add` (nil: not a single value).
    static func _rlmEncodeStored(_ value: Self) -> _Stored?
    /// The core values an unmanaged value holds, each with its map key, in the order
    /// `_rlmStore` writes them: a batched `add` finds the objects they link from them.
    static func _rlmStoredElements(_ value: Self) -> [(key: String?, value: _Stored)]
}

extension _Persistable {
    public static var _rlmCachesAccessor: Bool { false }
    public static func _rlmGetFlattened(_ obj: ObjectBase, _ col: UInt32) -> Any? { _rlmGet(obj, col) }
    public static func _rlmEncodeStored(_ value: Self) -> _Stored? { (value as? any _StorableValue)?._rlmEncode() }
    public static func _rlmStoredElements(_ value: Self) -> [(key: String?, value: _Stored)] {
        _rlmEncodeStored(value).map { [(nil, $0)] } ?? []
    }
    @inlinable
    public static func _rlmGet(_ obj: ObjectBase, fieldOffset offset: Int) -> Self {
        _rlmGet(obj, obj.column(atFieldOffset: offset))
    }
}

/// A single value that converts to and from the core's values: scalars, their optionals,
/// objects and AnyRealmValue. Its requirements are implementation details.
public protocol _StorableValue: _Persistable {
    /// Makes a Swift value from a core value.
    static func _rlmDecode(_ stored: _Stored) -> Self
    /// Makes a core value from a Swift value.
    func _rlmEncode() -> _Stored
}

extension _StorableValue {
    public static func _rlmEncodeStored(_ value: Self) -> _Stored? { value._rlmEncode() }
}

extension _StorableValue {
    public static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> Self {
        _rlmDecode(_Stored(obj.readColumn(col)))
    }
    public static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: Self) {
        obj.writeColumn(col, value._rlmEncode().value, policy: .error)
    }
    public static func _rlmStore(_ value: Self, _ obj: ObjectBase, _ col: UInt32, _ policy: Realm.UpdatePolicy) {
        obj.writeColumn(col, value._rlmEncode().value, policy: policy)
    }
    public static func _rlmFromAny(_ value: Any) -> Self? { value as? Self }
}

/// A value a `List`, `MutableSet` or `Map` can hold: every scalar, their optionals, objects,
/// enums, custom persistable types and `AnyRealmValue`. Generic code can name the type a value
/// is stored as, `T.PersistedType` (itself for the built-in types, the wrapped type's stored
/// type for an Optional, the declared `PersistedType` of a `CustomPersistable`).
///
/// ```swift
/// func stored<T: RealmCollectionValue>(_: T.Type) -> Any.Type { T.PersistedType.self }
/// ```
public protocol RealmCollectionValue: Hashable, _StorableValue, _HasPersistedType
    where PersistedType: RealmCollectionValue {}

/// Implementation detail: the non-optional types whose Optional is persistable too.
public protocol _RealmOptionalWrappable: _StorableValue {}

/// A value that a collection can hold inside an Optional as well (`List<T?>`,
/// `MutableSet<T?>`, `Map<String, T?>`): every collection value except `AnyRealmValue`, which
/// stands for nil itself, and Optionals. Generic code over optional elements constrains on it:
///
/// ```swift
/// func appendNil<T: _RealmCollectionValueInsideOptional>(_ list: List<T?>) { list.append(nil) }
/// ```
public protocol _RealmCollectionValueInsideOptional: RealmCollectionValue, _RealmOptionalWrappable
    where PersistedType: _RealmCollectionValueInsideOptional {}

extension Optional: _RealmSchemaDiscoverable where Wrapped: _RealmOptionalWrappable {
    public static var _rlmShape: _PropertyShape {
        var shape = Wrapped._rlmShape
        shape.optional = true
        return shape
    }
}

extension Optional: _Persistable where Wrapped: _RealmOptionalWrappable {
    public static func _rlmDefaultValue() -> Self { nil }
    public static func _rlmGetFlattened(_ obj: ObjectBase, _ col: UInt32) -> Any? {
        // (a wrapped value is never an Optional itself: nothing further to flatten)
        switch _rlmGet(obj, col) {
        case .none: return nil
        case .some(let v): return v
        }
    }
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if value is NSNull { return .some(nil) }
        if let v = value as? Self { return .some(v) }
        return Wrapped._rlmFromAny(value).map { .some($0) }
    }
}

extension Optional: _StorableValue where Wrapped: _RealmOptionalWrappable {
    public static func _rlmDecode(_ stored: _Stored) -> Self {
        if case .null = stored.value { return nil }
        return Wrapped._rlmDecode(stored)
    }
    public func _rlmEncode() -> _Stored {
        switch self {
        case .none: return _Stored(.null)
        case .some(let v): return v._rlmEncode()
        }
    }
}

extension Optional: RealmCollectionValue where Wrapped: _RealmCollectionValueInsideOptional {}

// MARK: - Integers

/// Integer widths share one storage: a 64-bit integer column.
public protocol _RealmInteger: FixedWidthInteger, _RealmCollectionValueInsideOptional {}

extension _RealmInteger {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.int) }
    public static func _rlmDefaultValue() -> Self { 0 }
    public static func _rlmDecode(_ stored: _Stored) -> Self {
        switch stored.value {
        case .int(let i): return Self(truncatingIfNeeded: i)
        case .bool(let b): return b ? 1 : 0
        // An average asked for as an integer type truncates, as NSNumber's intValue does.
        case .double(let d): return d.isFinite ? Self(truncatingIfNeeded: Int64(d.rounded(.towardZero))) : 0
        case .float(let f): return f.isFinite ? Self(truncatingIfNeeded: Int64(f.rounded(.towardZero))) : 0
        case .decimal(let d): let x = d.doubleValue; return x.isFinite ? Self(truncatingIfNeeded: Int64(x.rounded(.towardZero))) : 0
        default: return 0
        }
    }
    public func _rlmEncode() -> _Stored { _Stored(.int(Int64(self))) }
    public static func _rlmFromAny(_ value: Any) -> Self? {
        switch value {
        case let v as Self: return v
        case let v as Int: return Self(exactly: v)
        case let v as Int64: return Self(exactly: v)
        case let v as Int32: return Self(exactly: v)
        case let v as Int16: return Self(exactly: v)
        case let v as Int8: return Self(exactly: v)
        case let v as Double: return Self(exactly: v)
        case let v as Float: return Self(exactly: v)
        case let v as NSNumber: return Self(exactly: v.int64Value)
        default: return nil
        }
    }
    @inlinable
    public static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> Self {
        Self(truncatingIfNeeded: obj.readInt(col))
    }
    @inlinable
    public static func _rlmGet(_ obj: ObjectBase, fieldOffset offset: Int) -> Self {
        Self(truncatingIfNeeded: obj.readInt(atFieldOffset: offset))
    }
    @inlinable
    public static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: Self) {
        obj.writeInt(col, Int64(value))
    }
    public static func _rlmStore(_ value: Self, _ obj: ObjectBase, _ col: UInt32, _ policy: Realm.UpdatePolicy) {
        if policy == .modified, obj.readInt(col) == Int64(value) { return }
        obj.writeInt(col, Int64(value))
    }
}

extension Int: _RealmInteger {}
extension Int8: _RealmInteger {}
extension Int16: _RealmInteger {}
extension Int32: _RealmInteger {}
extension Int64: _RealmInteger {}

// MARK: - Other scalars

extension Bool: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.bool) }
    public static func _rlmDefaultValue() -> Bool { false }
    public static func _rlmDecode(_ stored: _Stored) -> Bool {
        if case .bool(let b) = stored.value { return b }
        return false
    }
    public func _rlmEncode() -> _Stored { _Stored(.bool(self)) }
    public static func _rlmFromAny(_ value: Any) -> Bool? {
        if let b = value as? Bool { return b }
        if let n = value as? NSNumber { return n.boolValue }
        return nil
    }
}

extension Float: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.float) }
    public static func _rlmDefaultValue() -> Float { 0 }
    public static func _rlmDecode(_ stored: _Stored) -> Float {
        switch stored.value {
        case .float(let f): return f
        case .double(let d): return Float(d)
        case .int(let i): return Float(i)
        default: return 0
        }
    }
    public func _rlmEncode() -> _Stored { _Stored(.float(self)) }
    public static func _rlmFromAny(_ value: Any) -> Float? {
        switch value {
        case let v as Float: return v
        case let v as Double: return Float(v)
        case let v as Int: return Float(v)
        case let v as NSNumber: return v.floatValue
        default: return nil
        }
    }
}

extension Double: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.double) }
    public static func _rlmDefaultValue() -> Double { 0 }
    public static func _rlmDecode(_ stored: _Stored) -> Double {
        switch stored.value {
        case .double(let d): return d
        case .float(let f): return Double(f)
        case .int(let i): return Double(i)
        case .decimal(let d): return d.doubleValue
        default: return 0
        }
    }
    public func _rlmEncode() -> _Stored { _Stored(.double(self)) }
    public static func _rlmFromAny(_ value: Any) -> Double? {
        switch value {
        case let v as Double: return v
        case let v as Float: return Double(v)
        case let v as Int: return Double(v)
        case let v as NSNumber: return v.doubleValue
        default: return nil
        }
    }
}

extension String: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.string) }
    public static func _rlmDefaultValue() -> String { "" }
    /// Reads the property `col` of a managed object (decoded from the core's bytes directly).
    public static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> String {
        obj.readStringColumn(col) ?? ""
    }
    public static func _rlmDecode(_ stored: _Stored) -> String {
        if case .string(let s) = stored.value { return s }
        return ""
    }
    public func _rlmEncode() -> _Stored { _Stored(.string(self)) }
    public static func _rlmFromAny(_ value: Any) -> String? {
        if let s = value as? String { return s }
        if let s = value as? Substring { return String(s) }
        return nil
    }
}

extension Data: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.data) }
    public static func _rlmDefaultValue() -> Data { Data() }
    public static func _rlmDecode(_ stored: _Stored) -> Data {
        if case .data(let d) = stored.value { return d }
        return Data()
    }
    public func _rlmEncode() -> _Stored { _Stored(.data(self)) }
}

extension Date: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.date) }
    public static func _rlmDefaultValue() -> Date { Date(timeIntervalSince1970: 0) }
    public static func _rlmDecode(_ stored: _Stored) -> Date {
        if case .date(let d) = stored.value { return d }
        return Date(timeIntervalSince1970: 0)
    }
    public func _rlmEncode() -> _Stored { _Stored(.date(self)) }
}

extension UUID: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.UUID) }
    public static func _rlmDefaultValue() -> UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
    public static func _rlmDecode(_ stored: _Stored) -> UUID {
        if case .uuid(let u) = stored.value { return u }
        return _rlmDefaultValue()
    }
    public func _rlmEncode() -> _Stored { _Stored(.uuid(self)) }
    public static func _rlmFromAny(_ value: Any) -> UUID? {
        if let u = value as? UUID { return u }
        if let s = value as? String { return UUID(uuidString: s) }
        return nil
    }
}

extension ObjectId: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.objectId) }
    public static func _rlmDefaultValue() -> ObjectId { ObjectId.generate() }
    public static func _rlmDecode(_ stored: _Stored) -> ObjectId {
        if case .objectId(let o) = stored.value { return o }
        return ObjectId()
    }
    public func _rlmEncode() -> _Stored { _Stored(.objectId(self)) }
    public static func _rlmFromAny(_ value: Any) -> ObjectId? {
        if let o = value as? ObjectId { return o }
        if let s = value as? String { return try? ObjectId(string: s) }
        return nil
    }
}

extension Decimal128: _RealmCollectionValueInsideOptional {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.decimal128) }
    public static func _rlmDefaultValue() -> Decimal128 { Decimal128(value: 0) }
    public static func _rlmDecode(_ stored: _Stored) -> Decimal128 {
        if case .decimal(let d) = stored.value { return d }
        return Decimal128(value: 0)
    }
    public func _rlmEncode() -> _Stored { _Stored(.decimal(self)) }
    public static func _rlmFromAny(_ value: Any) -> Decimal128? {
        if let d = value as? Decimal128 { return d }
        if let s = value as? String { return try? Decimal128(string: s) }
        if let i = value as? Int { return Decimal128(value: i) }
        if let d = value as? Double { return Decimal128(value: d) }
        return nil
    }
}
