import Foundation

/// A value of any persistable type, for properties and collections whose values vary in type
/// (RealmSwift's `AnyRealmValue`, stored in a Mixed column). Lists and dictionaries nest.
///
/// ```swift
/// @Persisted var value: AnyRealmValue
/// obj.value = .string("hello")
/// obj.value = .list(List<AnyRealmValue>())   // then fill it
/// ```
public enum AnyRealmValue: Hashable, CustomStringConvertible {
    /// No value.
    case none
    case int(Int)
    case bool(Bool)
    case float(Float)
    case double(Double)
    case string(String)
    case data(Data)
    case date(Date)
    /// A link to an object.
    case object(Object)
    case objectId(ObjectId)
    case decimal128(Decimal128)
    case uuid(UUID)
    /// A nested dictionary.
    case dictionary(Map<String, AnyRealmValue>)
    /// A nested list.
    case list(List<AnyRealmValue>)

    /// The Int, or nil for another type.
    public var intValue: Int? { if case .int(let v) = self { return v } else { return nil } }
    /// The Bool, or nil for another type.
    public var boolValue: Bool? { if case .bool(let v) = self { return v } else { return nil } }
    /// The Float, or nil for another type.
    public var floatValue: Float? { if case .float(let v) = self { return v } else { return nil } }
    /// The Double, or nil for another type.
    public var doubleValue: Double? { if case .double(let v) = self { return v } else { return nil } }
    /// The String, or nil for another type.
    public var stringValue: String? { if case .string(let v) = self { return v } else { return nil } }
    /// The Data, or nil for another type.
    public var dataValue: Data? { if case .data(let v) = self { return v } else { return nil } }
    /// The Date, or nil for another type.
    public var dateValue: Date? { if case .date(let v) = self { return v } else { return nil } }
    /// The ObjectId, or nil for another type.
    public var objectIdValue: ObjectId? { if case .objectId(let v) = self { return v } else { return nil } }
    /// The Decimal128, or nil for another type.
    public var decimal128Value: Decimal128? { if case .decimal128(let v) = self { return v } else { return nil } }
    /// The UUID, or nil for another type.
    public var uuidValue: UUID? { if case .uuid(let v) = self { return v } else { return nil } }
    /// The nested list, or nil for another type.
    public var listValue: List<AnyRealmValue>? { if case .list(let v) = self { return v } else { return nil } }
    /// The nested dictionary, or nil for another type.
    public var dictionaryValue: Map<String, AnyRealmValue>? {
        if case .dictionary(let v) = self { return v } else { return nil }
    }
    /// The linked object, or nil for another type.
    public var dynamicObject: DynamicObject? {
        guard case .object(let o) = self else { return nil }
        if let d = o as? DynamicObject { return d }
        if let core = o.core, let info = o.info { return core.dynamicObject(info, key: o.cobj.key) }
        return nil
    }
    /// The linked object as `T`, or nil.
    public func object<T: Object>(_ type: T.Type) -> T? {
        if case .object(let o) = self { return o as? T } else { return nil }
    }

    /// A `.dictionary` holding `dictionary`'s entries (unmanaged).
    public static func fromDictionary(_ dictionary: [String: AnyRealmValue]) -> AnyRealmValue {
        let map = Map<String, AnyRealmValue>()
        for (k, v) in dictionary { map.unmanaged[k] = v }
        return .dictionary(map)
    }

    /// A `.list` holding `array`'s elements (unmanaged).
    public static func fromArray(_ array: [AnyRealmValue]) -> AnyRealmValue {
        let list = List<AnyRealmValue>()
        list.unmanaged = array
        return .list(list)
    }

    /// A readable form of the value.
    public var description: String {
        switch self {
        case .none: return "none"
        case .int(let v): return "int(\(v))"
        case .bool(let v): return "bool(\(v))"
        case .float(let v): return "float(\(v))"
        case .double(let v): return "double(\(v))"
        case .string(let v): return "string(\"\(v)\")"
        case .data(let v): return "data(\(v.count) bytes)"
        case .date(let v): return "date(\(v))"
        case .object(let v): return "object(\(v.objectSchema.className))"
        case .objectId(let v): return "objectId(\(v))"
        case .decimal128(let v): return "decimal128(\(v))"
        case .uuid(let v): return "uuid(\(v))"
        case .dictionary(let v): return "dictionary(\(v.count) entries)"
        case .list(let v): return "list(\(v.count) elements)"
        }
    }

    /// Values are equal when they are the same case holding equal values (objects by their
    /// own equality, collections by identity).
    public static func == (a: AnyRealmValue, b: AnyRealmValue) -> Bool {
        switch (a, b) {
        case (.none, .none): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.data(let x), .data(let y)): return x == y
        case (.date(let x), .date(let y)): return x == y
        case (.object(let x), .object(let y)): return x == y
        case (.objectId(let x), .objectId(let y)): return x == y
        case (.uuid(let x), .uuid(let y)): return x == y
        case (.dictionary(let x), .dictionary(let y)): return x === y
        case (.list(let x), .list(let y)): return x === y
        case (.int(let x), .int(let y)): return x == y
        case (.float(let x), .float(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.decimal128(let x), .decimal128(let y)): return x == y
        default: return false
        }
    }

    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .none: hasher.combine(0)
        case .int(let v): hasher.combine(1); hasher.combine(v)
        case .bool(let v): hasher.combine(2); hasher.combine(v)
        case .float(let v): hasher.combine(3); hasher.combine(v)
        case .double(let v): hasher.combine(4); hasher.combine(v)
        case .string(let v): hasher.combine(5); hasher.combine(v)
        case .data(let v): hasher.combine(6); hasher.combine(v)
        case .date(let v): hasher.combine(7); hasher.combine(v)
        case .object(let v): hasher.combine(8); hasher.combine(v)
        case .objectId(let v): hasher.combine(9); hasher.combine(v)
        case .decimal128(let v): hasher.combine(10); hasher.combine(v)
        case .uuid(let v): hasher.combine(11); hasher.combine(v)
        case .dictionary(let v): hasher.combine(12); hasher.combine(ObjectIdentifier(v))
        case .list(let v): hasher.combine(13); hasher.combine(ObjectIdentifier(v))
        }
    }
}

extension AnyRealmValue: RealmCollectionValue {
    public static var _rlmShape: _PropertyShape { _PropertyShape(.any) }
    public static func _rlmDefaultValue() -> AnyRealmValue { .none }
    public static func _rlmDecode(_ stored: _Stored) -> AnyRealmValue {
        switch stored.value {
        case .null: return .none
        case .int(let v): return .int(Int(v))
        case .bool(let v): return .bool(v)
        case .float(let v): return .float(v)
        case .double(let v): return .double(v)
        case .string(let v): return .string(v)
        case .data(let v): return .data(v)
        case .date(let v): return .date(v)
        case .objectId(let v): return .objectId(v)
        case .decimal(let v): return .decimal128(v)
        case .uuid(let v): return .uuid(v)
        case .object(let o):
            if let o = o as? Object { return .object(o) }
            preconditionFailure("Embedded objects cannot be stored in an AnyRealmValue")
        case .list(let l): return .list(l)
        case .dictionary(let m): return .dictionary(m)
        }
    }
    public func _rlmEncode() -> _Stored {
        switch self {
        case .none: return _Stored(.null)
        case .int(let v): return _Stored(.int(Int64(v)))
        case .bool(let v): return _Stored(.bool(v))
        case .float(let v): return _Stored(.float(v))
        case .double(let v): return _Stored(.double(v))
        case .string(let v): return _Stored(.string(v))
        case .data(let v): return _Stored(.data(v))
        case .date(let v): return _Stored(.date(v))
        case .object(let v): return _Stored(.object(v))
        case .objectId(let v): return _Stored(.objectId(v))
        case .decimal128(let v): return _Stored(.decimal(v))
        case .uuid(let v): return _Stored(.uuid(v))
        case .dictionary(let v): return _Stored(.dictionary(v))
        case .list(let v): return _Stored(.list(v))
        }
    }
    public static func _rlmGet(_ obj: ObjectBase, _ col: UInt32) -> AnyRealmValue {
        let v = obj.readColumnMixed(col)
        return _rlmDecode(_Stored(v))
    }
    public static func _rlmFromAny(_ value: Any) -> AnyRealmValue? {
        switch value {
        case let v as AnyRealmValue: return v
        case is NSNull: return AnyRealmValue.none
        case let v as Int: return .int(v)
        case let v as Bool: return .bool(v)
        case let v as Float: return .float(v)
        case let v as Double: return .double(v)
        case let v as String: return .string(v)
        case let v as Data: return .data(v)
        case let v as Date: return .date(v)
        case let v as Object: return .object(v)
        case let v as ObjectId: return .objectId(v)
        case let v as Decimal128: return .decimal128(v)
        case let v as UUID: return .uuid(v)
        case let v as [String: Any]:
            var out: [String: AnyRealmValue] = [:]
            for (k, e) in v {
                guard let x = _rlmFromAny(e) else { return nil }
                out[k] = x
            }
            return fromDictionary(out)
        case let v as [Any]:
            var out: [AnyRealmValue] = []
            for e in v {
                guard let x = _rlmFromAny(e) else { return nil }
                out.append(x)
            }
            return fromArray(out)
        default:
            if let o = value as? any OptionalProtocol {
                guard let w = o.wrappedAny else { return AnyRealmValue.none }
                return _rlmFromAny(w)
            }
            return nil
        }
    }
}
