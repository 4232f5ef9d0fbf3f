import CStore
import Foundation

/// Predicate arguments (`%@`, `%K`, `%d`, `%f`) as C values, with the memory their strings,
/// binaries and lists point at. The core copies what it keeps, so the arena lives only for the
/// call that parses the query.
final class QueryArguments {
    private(set) var values: [cs_value] = []
    private var blocks: [UnsafeMutableRawPointer] = []
    /// The Realm the arguments were converted with; nil after `detachFromRealm()`.
    private var core: RealmCore?
    /// How objects become link values when they are not this Realm's rows (unmanaged
    /// evaluation); nil: only managed objects may be arguments.
    private let objectLink: ((ObjectBase) -> cs_value)?

    /// Converts `args`; an argument of a type no predicate can use is `Realm.Error.invalidInput`.
    init(_ args: [Any], core: RealmCore, objectLink: ((ObjectBase) -> cs_value)? = nil) throws {
        self.core = core
        self.objectLink = objectLink
        values = try args.map { try convert($0, core: core) }
    }

    /// A scalar as a C value whose bytes live as long as the arguments.
    func value(of v: StoredValue) -> cs_value { cValue(v, core: core!) }

    /// Lets go of the Realm the arguments were converted with: the converted values need
    /// nothing of it, and a query observer's watch maker, which runs them on the notifier
    /// thread, must hold nothing of the registering Realm (docs/ARCHITECTURE.md, Change
    /// notifications). `value(of:)` may not be called after.
    func detachFromRealm() { core = nil }

    deinit {
        for b in blocks { b.deallocate() }
    }

    private func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafeRawPointer {
        let p = UnsafeMutableRawPointer.allocate(byteCount: max(buffer.count, 1), alignment: 8)
        if buffer.count > 0 { p.copyMemory(from: buffer.baseAddress!, byteCount: buffer.count) }
        blocks.append(p)
        return UnsafeRawPointer(p)
    }

    /// An NSNumber as the value it was made from: a Bool only when made from a Bool (and
    /// JSONSerialization's true and false), an integer when it holds one, else a Double.
    static func numberValue(_ n: NSNumber) -> cs_value {
        switch String(cString: n.objCType) {
        case "c", "B": return cs_bool(n.boolValue) // Foundation's Bool numbers (__NSCFBoolean)
        case "f", "d": return cs_double(n.doubleValue)
        case "Q", "L":
            return n.uint64Value > UInt64(Int64.max) ? cs_double(n.doubleValue) : cs_int(n.int64Value)
        default: return cs_int(n.int64Value)
        }
    }

    private func convert(_ arg: Any, core: RealmCore) throws -> cs_value {
        if arg is NSNull { return cs_null() }
        if let opt = arg as? any AnyOptional {
            guard let wrapped = opt.wrappedAny else { return cs_null() }
            return try convert(wrapped, core: core)
        }
        // Before the Bool case: an NSNumber made from 0 or 1 also casts to Bool.
        if type(of: arg) is NSNumber.Type, let n = arg as? NSNumber { return Self.numberValue(n) }
        switch arg {
        case let v as Bool: return cs_bool(v)
        case let v as Int: return cs_int(Int64(v))
        case let v as Int64: return cs_int(v)
        case let v as Int32: return cs_int(Int64(v))
        case let v as Int16: return cs_int(Int64(v))
        case let v as Int8: return cs_int(Int64(v))
        case let v as UInt: return cs_int(Int64(clamping: v))
        case let v as Double: return cs_double(v)
        case let v as Float: return cs_float(v)
        case let v as String: return stringValue(v)
        case let v as Substring: return stringValue(String(v))
        case let v as Data:
            let p = v.withUnsafeBytes { bytes($0) }
            return cs_binary(p, v.count)
        case let v as Date: return cValue(.date(v), core: core)
        case let v as ObjectId: return cValue(.objectId(v), core: core)
        case let v as Decimal128: return cValue(.decimal(v), core: core)
        case let v as UUID: return cValue(.uuid(v), core: core)
        case let v as AnyRealmValue:
            if case .none = v { return cs_null() }
            return cValue(v._rlmEncode().value, core: core)
        case let v as LinkArgument: return cs_link(v.table, v.key)
        case let v as ObjectBase:
            if let objectLink { return objectLink(v) }
            guard v.core != nil, !v.isInvalidated, let info = v.info else {
                throw Realm.Error(.invalidInput, "Only managed objects can be used in a predicate (got an unmanaged \(v.objectSchema.className))")
            }
            return cs_link(info.table, v.cobj.key)
        case let v as NSNumber: return Self.numberValue(v)
        default:
            if let s = arg as? any _StorableValue { return cValue(s._rlmEncode().value, core: core) }
            if let items = CollectionDescription.elements(of: arg) {
                let converted = try items.map { try convert($0, core: core) }
                let p = UnsafeMutablePointer<cs_value>.allocate(capacity: max(converted.count, 1))
                p.initialize(from: converted, count: converted.count)
                blocks.append(UnsafeMutableRawPointer(p))
                var list = cs_value()
                list.type = CS_TYPE_LIST
                list.v.list.items = UnsafePointer(p)
                list.v.list.count = converted.count
                return list
            }
            throw Realm.Error(.invalidInput, "Unsupported predicate argument of type \(type(of: arg)): \(arg)")
        }
    }

    private func stringValue(_ s: String) -> cs_value {
        var copy = s
        let p = copy.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
        return cs_string(p.assumingMemoryBound(to: CChar.self), s.utf8.count)
    }

    /// A scalar as a C value, with its bytes copied into the arena.
    private func cValue(_ v: StoredValue, core: RealmCore) -> cs_value {
        switch v {
        case .string(let s): return stringValue(s)
        case .data(let d):
            let p = d.withUnsafeBytes { bytes($0) }
            return cs_binary(p, d.count)
        case .object(let o):
            if let objectLink { return objectLink(o) }
            guard let info = o.info, o.core != nil else { return cs_null() }
            return cs_link(info.table, o.cobj.key)
        default:
            return core.withCValue(v) { $0.pointee }
        }
    }
}
