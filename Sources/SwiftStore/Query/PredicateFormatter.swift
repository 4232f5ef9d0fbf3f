import Foundation

/// Writes a predicate's arguments into its format text for `NSPredicate.description`, and
/// compares arguments for `NSPredicate.isEqual`.
enum PredicateFormatter {
    /// `format` with each placeholder replaced by its argument: `%@` by the value (strings in
    /// double quotes, nil as `nil`, arrays as `{a, b}`), `%K` by the key path as is, `%d`,
    /// `%f` and the other printf conversions by the value; `%%` is a percent sign. Quoted text
    /// is copied unchanged, and a placeholder without an argument stays as it is.
    static func substitute(_ format: String, _ arguments: [Any]) -> String {
        var out = ""
        var next = 0
        var chars = format[...]
        while let c = chars.first {
            chars = chars.dropFirst()
            if c == "\"" || c == "'" {
                out.append(c)
                while let q = chars.first {
                    chars = chars.dropFirst()
                    out.append(q)
                    if q == "\\", let escaped = chars.first {
                        out.append(escaped)
                        chars = chars.dropFirst()
                    } else if q == c {
                        break
                    }
                }
                continue
            }
            guard c == "%" else {
                out.append(c)
                continue
            }
            // A conversion: optional length modifiers, then a letter (or '@' or '%').
            var spec = ""
            while let m = chars.first, "lhqLzjt".contains(m) {
                spec.append(m)
                chars = chars.dropFirst()
            }
            guard let conversion = chars.first else {
                out += "%" + spec
                break
            }
            chars = chars.dropFirst()
            if conversion == "%" {
                out += "%"
                continue
            }
            guard conversion == "@" || conversion == "K" || conversion.isLetter, next < arguments.count else {
                out += "%" + spec + String(conversion)
                continue
            }
            let argument = arguments[next]
            next += 1
            out += conversion == "K" ? "\(argument)" : render(argument)
        }
        return out
    }

    /// An argument as predicate text.
    static func render(_ value: Any) -> String {
        switch value {
        case is NSNull:
            return "nil"
        case let array as [Any]:
            return "{" + array.map(render).joined(separator: ", ") + "}"
        case let object as ObjectBase:
            return "<\(type(of: object)): \(ObjectIdentifier(object))>"
        case let storable as any _StorableValue:
            return render(stored: storable._rlmEncode().value)
        default:
            return "\(value)"
        }
    }

    private static func render(stored: StoredValue) -> String {
        switch stored {
        case .null: return "nil"
        case .int(let v): return "\(v)"
        case .bool(let v): return v ? "true" : "false"
        case .float(let v): return "\(v)"
        case .double(let v): return "\(v)"
        case .string(let v): return quote(v)
        case .data(let v): return "<" + v.map { String(format: "%02x", $0) }.joined() + ">"
        case .date(let v): return "CAST(\(v.timeIntervalSinceReferenceDate), \"NSDate\")"
        case .objectId(let v): return "oid(\(v.stringValue))"
        case .decimal(let v): return "\(v)"
        case .uuid(let v): return "uuid(\(v.uuidString))"
        case .object(let v): return render(v)
        case .list: return "{...}"
        case .dictionary: return "[...]"
        }
    }

    private static func quote(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Whether two arguments are equal: objects by identity, hashable values by `==`, arrays
    /// element by element, anything else by its description.
    static func argumentsEqual(_ a: Any, _ b: Any) -> Bool {
        if let a = a as? ObjectBase, let b = b as? ObjectBase {
            return a === b
        }
        if let a = a as? [Any], let b = b as? [Any] {
            return a.count == b.count && zip(a, b).allSatisfy { argumentsEqual($0, $1) }
        }
        if let a = a as? AnyHashable, let b = b as? AnyHashable {
            return a == b
        }
        return String(describing: a) == String(describing: b)
    }
}
