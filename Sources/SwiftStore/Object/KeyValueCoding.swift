import Foundation

/// String-keyed access to persisted properties, for managed and unmanaged objects alike
/// (RealmSwift gets this from the Objective-C runtime; here it goes through the schema and the
/// fields' offsets).
enum KeyValueCoding {
    /// What `value(forKey:)` on a collection gives for one element: the element itself for
    /// "self", else its property `key` (NSNull for nil). Traps for a value element and another key.
    static func elementValue(_ element: Any, forKey key: String) -> Any {
        if key == "self" { return element }
        guard let o = element as? ObjectBase else { preconditionFailure("Values have no property '\(key)'") }
        return value(o, forKey: key) ?? NSNull()
    }

    /// The address of a field inside an instance.
    @inline(__always)
    static func address(_ object: ObjectBase, _ offset: Int) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque()) + offset
    }

    /// The legacy box stored in a field.
    static func legacyBox(_ object: ObjectBase, _ p: Property) -> (any LegacyPropertyBox)? {
        address(object, p.offset).load(as: AnyObject.self) as? any LegacyPropertyBox
    }

    /// The property named `key`, trapping with RealmSwift's message when there is none.
    static func property(_ object: ObjectBase, _ key: String) -> Property {
        guard let p = object.objectSchema[key] else {
            preconditionFailure("Invalid property name '\(key)' for class '\(object.objectSchema.className)'.")
        }
        return p
    }

    // MARK: Reading

    /// The value of property `key` as its Swift type.
    static func value(_ object: ObjectBase, forKey key: String) -> Any? {
        let p = property(object, key)
        if let core = object.core, let info = object.info {
            _ = object.verifyReadable()
            if let field = p.field, info.objectSchema.objectClass != DynamicObject.self {
                let i = info.objectSchema.byName[key]!
                let col = p.type == .linkingObjects ? UInt32(i) : info.columns[i]
                return field.managedFlattenedValue(object, column: col)
            }
            if p.legacy, !object.isDynamic, let box = legacyBox(object, p) { return unwrap(box.anyValue) }
            return DynamicAccess.value(object, p, core: core, info: info)
        }
        if p.legacy, let box = legacyBox(object, p) { return unwrap(box.anyValue) }
        guard let field = p.field else { return nil }
        return unwrap(field.unmanagedValue(at: address(object, p.offset)))
    }

    /// The value of the property stored in column `col` of a managed object of `info`'s class,
    /// as `value(_:forKey:)` gives it, found by column (an object observer's old and new values,
    /// docs/ARCHITECTURE.md, Change notifications): no lookup by name for a typed property;
    /// nil when no property has that column.
    static func value(_ object: ObjectBase, _ info: ClassInfo, column col: UInt32) -> Any? {
        guard let i = info.propertyIndex(column: col) else { return nil }
        let p = info.objectSchema.allProperties[i]
        if let field = p.field, p.type != .linkingObjects, info.columns[i] == col,
           info.objectSchema.objectClass != DynamicObject.self, object.core != nil {
            _ = object.verifyReadable()
            return field.managedFlattenedValue(object, column: col)
        }
        return value(object, forKey: p.name)
    }

    /// Flattens an Optional held in an `Any` to nil or its value.
    static func unwrap(_ value: Any) -> Any? {
        if let opt = value as? any AnyOptional { return opt.wrappedAny }
        return value
    }

    /// The unmanaged value of a property as a core value (primary keys on `add`).
    static func unmanagedStored(_ object: ObjectBase, _ p: Property) -> StoredValue {
        let any: Any?
        if p.legacy, let box = legacyBox(object, p) {
            any = box.anyValue
        } else if let field = p.field {
            any = field.unmanagedValue(at: address(object, p.offset))
        } else {
            any = nil
        }
        guard let any, let s = any as? any _StorableValue else { return .null }
        return s._rlmEncode().value
    }

    // MARK: Writing

    /// Sets property `key` from a loosely typed value, trapping with RealmSwift's message when
    /// the value does not fit.
    static func setValue(_ object: ObjectBase, _ value: Any?, forKey key: String) {
        let p = property(object, key)
        let v: Any = value ?? NSNull()
        if object.core != nil {
            _ = object.verifyWritable()
            if p.isPrimary && !object.core!.isMigration {
                preconditionFailure("Primary key can't be changed after an object is inserted.")
            }
            setManaged(object, p, v, policy: .error)
            return
        }
        if p.legacy, let box = legacyBox(object, p) {
            if !box.setAny(v) { invalidValue(v, p, object.objectSchema.className) }
            return
        }
        guard let field = p.field else {
            preconditionFailure("Cannot set the linking objects property '\(key)'")
        }
        if !field.setUnmanaged(at: address(object, p.offset), v) {
            invalidValue(v, p, object.objectSchema.className)
        }
    }

    /// Writes a property of a managed object from a loosely typed value.
    static func setManaged(_ object: ObjectBase, _ p: Property, _ value: Any, policy: Realm.UpdatePolicy) {
        guard let info = object.info, let core = object.core else { return }
        if p.type == .linkingObjects {
            preconditionFailure("Cannot set the linking objects property '\(p.name)'")
        }
        let col = info.column(named: p.name)!
        if p.legacy, !object.isDynamic, let box = legacyBox(object, p) {
            if !box.setAny(value) { invalidValue(value, p, info.objectSchema.className) }
            return
        }
        if let field = p.field, info.objectSchema.objectClass != DynamicObject.self {
            if !field.setManaged(object, column: col, value, policy: policy) {
                invalidValue(value, p, info.objectSchema.className)
            }
            return
        }
        DynamicAccess.setValue(object, p, value, core: core, info: info, policy: policy)
    }

    static func invalidValue(_ value: Any, _ p: Property, _ className: String) -> Never {
        preconditionFailure("Invalid value '\(value)' of type '\(type(of: value))' for '\(p.type)' property "
                            + "'\(className).\(p.name)'.")
    }

    // MARK: init(value:) and create(_:value:)

    /// Values by property name from a dictionary, an array in property order, or an object.
    static func propertyValues(_ schema: ObjectSchema, from value: Any) -> [String: Any] {
        let settable = schema.properties.filter { $0.type != .linkingObjects }
        if let dict = value as? [String: Any] {
            return dict
        }
        if let array = value as? [Any] {
            if array.count > settable.count {
                preconditionFailure("Invalid array input: more values (\(array.count)) than properties (\(settable.count)).")
            }
            var out: [String: Any] = [:]
            for (p, v) in zip(settable, array) { out[p.name] = v }
            return out
        }
        if let object = value as? ObjectBase {
            var out: [String: Any] = [:]
            let names = Set(object.objectSchema.properties.map(\.name))
            for p in settable where names.contains(p.name) {
                out[p.name] = KeyValueCoding.value(object, forKey: p.name) ?? NSNull()
            }
            return out
        }
        if let dict = value as? NSDictionary {
            var out: [String: Any] = [:]
            for (k, v) in dict { if let k = k as? String { out[k] = v } }
            return out
        }
        preconditionFailure("Invalid value '\(value)' to initialize object of type '\(schema.className)': "
                            + "pass a dictionary, an array or an object")
    }

    /// Fills an unmanaged object from a dictionary, an array or another object.
    /// Keys that are not properties are ignored, as RealmSwift reads only the schema's
    /// properties from the value.
    static func fill(_ object: ObjectBase, from value: Any) {
        let schema = object.objectSchema
        let values = propertyValues(schema, from: value)
        for p in schema.properties {
            guard let v = values[p.name] else { continue }
            setValue(object, v is NSNull ? nil : v, forKey: p.name)
        }
    }

    // MARK: Primary keys from loose values

    /// A primary-key value (or any scalar) converted for a property.
    static func stored(_ value: Any, for p: Property, className: String) -> StoredValue {
        if value is NSNull { return .null }
        if let opt = value as? any AnyOptional, opt.wrappedAny == nil { return .null }
        let unwrapped = unwrap(value) ?? NSNull()
        switch p.type {
        case .int:
            if let i = Int64._rlmFromAny(unwrapped) { return .int(i) }
            if let e = unwrapped as? any _StorableValue, case .int(let i) = e._rlmEncode().value { return .int(i) }
        case .string:
            if let s = unwrapped as? String { return .string(s) }
            if let e = unwrapped as? any _StorableValue, case .string(let s) = e._rlmEncode().value { return .string(s) }
        case .objectId:
            if let o = ObjectId._rlmFromAny(unwrapped) { return .objectId(o) }
        case .UUID:
            if let u = UUID._rlmFromAny(unwrapped) { return .uuid(u) }
        default:
            if let e = unwrapped as? any _StorableValue { return e._rlmEncode().value }
        }
        preconditionFailure("Invalid value '\(value)' of type '\(type(of: value))' for '\(p.type)' property "
                            + "'\(className).\(p.name)'.")
    }

    /// A short text for a value, for messages.
    static func describe(_ v: StoredValue) -> String {
        switch v {
        case .null: return "null"
        case .int(let i): return String(i)
        case .bool(let b): return String(b)
        case .float(let f): return String(f)
        case .double(let d): return String(d)
        case .string(let s): return s
        case .data(let d): return "<\(d.count) bytes>"
        case .date(let d): return d.description
        case .objectId(let o): return o.stringValue
        case .decimal(let d): return d.stringValue
        case .uuid(let u): return u.uuidString
        case .object(let o): return o.objectSchema.className
        case .list: return "[...]"
        case .dictionary: return "{...}"
        }
    }
}

/// Lets code holding an `Any` see through an Optional.
protocol AnyOptional {
    var wrappedAny: Any? { get }
}

extension Optional: AnyOptional {
    var wrappedAny: Any? {
        switch self {
        case .none: return nil
        case .some(let v): return KeyValueCoding.unwrap(v)
        }
    }
}
