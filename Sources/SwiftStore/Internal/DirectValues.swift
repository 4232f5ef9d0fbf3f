import CStore
import Foundation

// Reading a new object's plain values without a generic call per property
// (docs/ARCHITECTURE.md, Creating an object with its values).
//
// `PersistedField` reaches a wrapper through its metatype, so every call is unspecialized: it
// looks up `Persisted<Value>.Storage`'s metadata and copies the storage through value
// witnesses, several times the cost of the value itself. The commonest types are known here by
// their wrapper's type: a class's `ClassInfo` lists each such property once, with its kind, and
// `add` reads them with code specialized for that type.

/// A wrapper type whose unmanaged value `add` reads as its own type.
enum DirectKind {
    case int, int64, int32, int16, int8
    case optInt, optInt64, optInt32, optInt16, optInt8
    case bool, optBool, double, optDouble, float, optFloat
    case string, optString

    /// The kind of the wrapper type `field`, or nil when it is read through `PersistedField`.
    static func of(_ field: any PersistedField.Type) -> DirectKind? {
        kinds[ObjectIdentifier(field)]
    }

    private static let kinds: [ObjectIdentifier: DirectKind] = [
        ObjectIdentifier(Persisted<Int>.self): .int,
        ObjectIdentifier(Persisted<Int64>.self): .int64,
        ObjectIdentifier(Persisted<Int32>.self): .int32,
        ObjectIdentifier(Persisted<Int16>.self): .int16,
        ObjectIdentifier(Persisted<Int8>.self): .int8,
        ObjectIdentifier(Persisted<Int?>.self): .optInt,
        ObjectIdentifier(Persisted<Int64?>.self): .optInt64,
        ObjectIdentifier(Persisted<Int32?>.self): .optInt32,
        ObjectIdentifier(Persisted<Int16?>.self): .optInt16,
        ObjectIdentifier(Persisted<Int8?>.self): .optInt8,
        ObjectIdentifier(Persisted<Bool>.self): .bool,
        ObjectIdentifier(Persisted<Bool?>.self): .optBool,
        ObjectIdentifier(Persisted<Double>.self): .double,
        ObjectIdentifier(Persisted<Double?>.self): .optDouble,
        ObjectIdentifier(Persisted<Float>.self): .float,
        ObjectIdentifier(Persisted<Float?>.self): .optFloat,
        ObjectIdentifier(Persisted<String>.self): .string,
        ObjectIdentifier(Persisted<String?>.self): .optString,
    ]

    /// Whether the value is a String (read with `string(at:)`), else a scalar (`scalar(at:)`).
    var isString: Bool { self == .string || self == .optString }

    /// The unmanaged value of the wrapper at `p` (the type's default when never set).
    @inline(__always)
    private static func value<T: _Persistable>(_ p: UnsafeRawPointer, _: T.Type) -> T {
        p.assumingMemoryBound(to: Persisted<T>.self).pointee.unmanagedValue ?? T._rlmDefaultValue()
    }

    @inline(__always)
    private static func int<T: FixedWidthInteger & _Persistable>(_ p: UnsafeRawPointer, _ t: T.Type) -> cs_value {
        cs_int(Int64(value(p, t)))
    }

    @inline(__always)
    private static func optInt<T: FixedWidthInteger & _RealmOptionalWrappable>(_ p: UnsafeRawPointer, _: T.Type) -> cs_value {
        value(p, T?.self).map { cs_int(Int64($0)) } ?? cs_null()
    }

    /// The unmanaged value of a scalar wrapper at `p` as a core value.
    func scalar(at p: UnsafeRawPointer) -> cs_value {
        switch self {
        case .int: return Self.int(p, Int.self)
        case .int64: return Self.int(p, Int64.self)
        case .int32: return Self.int(p, Int32.self)
        case .int16: return Self.int(p, Int16.self)
        case .int8: return Self.int(p, Int8.self)
        case .optInt: return Self.optInt(p, Int.self)
        case .optInt64: return Self.optInt(p, Int64.self)
        case .optInt32: return Self.optInt(p, Int32.self)
        case .optInt16: return Self.optInt(p, Int16.self)
        case .optInt8: return Self.optInt(p, Int8.self)
        case .bool: return cs_bool(Self.value(p, Bool.self))
        case .optBool: return Self.value(p, Bool?.self).map { cs_bool($0) } ?? cs_null()
        case .double: return cs_double(Self.value(p, Double.self))
        case .optDouble: return Self.value(p, Double?.self).map { cs_double($0) } ?? cs_null()
        case .float: return cs_float(Self.value(p, Float.self))
        case .optFloat: return Self.value(p, Float?.self).map { cs_float($0) } ?? cs_null()
        case .string, .optString: preconditionFailure("a String wrapper is read with string(at:)")
        }
    }

    /// The unmanaged value of a String wrapper at `p` (nil for a nil `String?`).
    func string(at p: UnsafeRawPointer) -> String? {
        switch self {
        case .string: return Self.value(p, String.self)
        case .optString: return Self.value(p, String?.self)
        default: preconditionFailure("a scalar wrapper is read with scalar(at:)")
        }
    }
}

/// The values of one `cs_obj_create_values` call, kept by a Realm and reused from object to
/// object: the core values, and the bytes of the Strings among them, which the values point at
/// only while `withValues` runs.
final class CreateValues {
    private(set) var values: [cs_value] = []
    private var bytes: [UInt8] = []
    /// Per String value: its index in `values`, and where its bytes are.
    private var strings: [(index: Int, start: Int, count: Int)] = []

    /// Reads the direct fields of the unmanaged object at `base` (its `ClassInfo.directFields`).
    /// False when a String is longer than the core takes (the caller then stores the values one
    /// by one, which reports it as a single write does).
    func read(_ fields: [ClassInfo.DirectField], base: UnsafeRawPointer) -> Bool {
        values.removeAll(keepingCapacity: true)
        // (the bytes of one large String are not kept for the Realm's lifetime)
        bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 16)
        strings.removeAll(keepingCapacity: true)
        for f in fields {
            if !f.kind.isString {
                values.append(f.kind.scalar(at: base + f.offset))
                continue
            }
            guard var s = f.kind.string(at: base + f.offset) else {
                values.append(cs_null())
                continue
            }
            let start = bytes.count
            let n = s.withUTF8 { buf in
                bytes.append(contentsOf: buf)
                return buf.count
            }
            if n > cs_max_blob() { return false }
            strings.append((values.count, start, n))
            values.append(cs_string(nil, n)) // pointed at its bytes in withValues
        }
        return true
    }

    /// Calls `body` with the values read, their Strings pointing at their bytes.
    func withValues<R>(_ body: (UnsafePointer<cs_value>) -> R) -> R {
        if values.isEmpty {
            // (an empty array need not have an address: the core reads no value of it)
            var none = cs_null()
            return body(&none)
        }
        if strings.isEmpty { return values.withUnsafeBufferPointer { body($0.baseAddress!) } }
        return bytes.withUnsafeBufferPointer { b in
            // (an empty String points at a non-null address, as `withCValue` gives it)
            let origin = b.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(bitPattern: 1)!
            for s in strings {
                values[s.index].v.bytes.ptr = origin + s.start
            }
            return values.withUnsafeBufferPointer { body($0.baseAddress!) }
        }
    }
}
