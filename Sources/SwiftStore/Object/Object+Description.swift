import Foundation

/// The text forms of objects and collections, in RealmSwift's layout (docs/ARCHITECTURE.md,
/// Descriptions): `Class {\n\tname = value;\n}` for objects,
/// `Name<type> <address> (\n\t[0] element,\n\t[1] element\n)` for collections, and
/// `Map<string, type> <address> (\n[key]: value\n)` for maps. Values print as RealmSwift's
/// Objective-C values do. Depth counts levels from 0 (the value described); the level
/// `maximumDepth` and below print as `<Maximum depth exceeded>`.
enum RealmDescription {
    /// The number of levels described.
    static let maximumDepth = 5
    /// The elements of a collection described before the rest is counted as skipped.
    static let maximumElements = 100
    static let depthExceeded = "<Maximum depth exceeded>"

    /// `0x…` for an instance (what RealmSwift prints with `%p`).
    static func address(_ object: AnyObject) -> String {
        "0x" + String(UInt(bitPattern: ObjectIdentifier(object).hashValue), radix: 16)
    }

    /// The element type as RealmSwift names it: the class name for objects, "int", "string",
    /// "mixed", ... for values.
    static func typeName(_ shape: _PropertyShape) -> String {
        if let t = shape.objectType, t != DynamicObject.self { return t.className() }
        return shape.type.description
    }

    /// `Name<type> <address> (\n\t[i] element,...\n)`, at most `maximumElements` elements
    /// followed by the number skipped.
    static func collection<S: Sequence>(_ name: String, _ type: String, _ address: String, _ items: S,
                                        count: Int, depth: Int) -> String {
        if depth >= maximumDepth { return depthExceeded }
        var lines: [String] = []
        for (i, e) in items.enumerated() {
            if i == maximumElements { break }
            lines.append("\t[\(i)] " + indented(value(e, depth: depth + 1, inCollection: true)))
        }
        var text = "\(name)<\(type)> <\(address)> (\n" + lines.joined(separator: ",\n")
        if count > maximumElements { text += "\n\t... \(count - maximumElements) objects skipped." }
        return text + "\n)"
    }

    /// `Map<string, type> <address> (\n[key]: value,...\n)`: RealmSwift indents a map's
    /// entries only where they span lines, and lists every entry.
    static func map(_ type: String, _ address: String, _ entries: [(String, Any?)], depth: Int) -> String {
        if depth >= maximumDepth { return depthExceeded }
        let lines = entries.map { indented("[\($0.0)]: " + value($0.1, depth: depth + 1, inCollection: true)) }
        return "Map<string, \(type)> <\(address)> (\n" + lines.joined(separator: ",\n") + "\n)"
    }

    static func indented(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: "\n\t")
    }

    /// A property's or an element's value: objects and collections described at `depth`,
    /// nil as `<null>` in a collection and `(null)` in a property.
    static func value(_ value: Any?, depth: Int, inCollection: Bool) -> String {
        let null = inCollection ? "<null>" : "(null)"
        guard var value else { return null }
        if let opt = value as? any AnyOptional {
            guard let wrapped = opt.wrappedAny else { return null }
            value = wrapped
        }
        if value is NSNull { return null }
        if let o = value as? ObjectBase { return o.describe(depth: depth) }
        if let c = value as? DepthDescribable { return c.describe(depth: depth) }
        if let e = value as? any _StorableValue {
            return stored(e._rlmEncode().value, depth: depth, inCollection: inCollection)
        }
        return String(describing: value)
    }

    static func stored(_ v: StoredValue, depth: Int, inCollection: Bool) -> String {
        switch v {
        case .null: return inCollection ? "<null>" : "(null)"
        case .int(let i): return String(i)
        case .bool(let b): return b ? "1" : "0"
        // NSNumber's forms: 7 significant digits for float, 16 for double.
        case .float(let f): return String(format: "%0.7g", Double(f))
        case .double(let d): return String(format: "%0.16g", d)
        case .string(let s): return s
        case .data(let d):
            if inCollection { return dataText(d) }
            // RealmSwift shows at most 24 bytes of a data property.
            let shown = dataText(d.prefix(24))
            return "<" + shown.dropFirst().dropLast() + " — \(d.count) total bytes>"
        case .date(let d): return dateText(d)
        case .objectId(let o): return o.stringValue
        case .decimal(let d): return d.stringValue
        case .uuid(let u): return u.uuidString
        case .object(let o): return o.describe(depth: depth)
        case .list(let l): return l.describe(depth: depth)
        case .dictionary(let m): return m.describe(depth: depth)
        }
    }

    /// NSData's description: every byte in hex up to 24 bytes, else the first 16 and last 8
    /// in groups of four.
    static func dataText<D: Collection>(_ d: D) -> String where D.Element == UInt8 {
        let bytes = Array(d)
        func hex(_ slice: ArraySlice<UInt8>) -> String { slice.map { String(format: "%02x", $0) }.joined() }
        func groups(_ slice: ArraySlice<UInt8>) -> String {
            stride(from: slice.startIndex, to: slice.endIndex, by: 4)
                .map { hex(slice[$0..<min($0 + 4, slice.endIndex)]) + " " }.joined()
        }
        if bytes.count <= 24 { return "{length = \(bytes.count), bytes = 0x\(hex(bytes[...]))}" }
        return "{length = \(bytes.count), bytes = 0x" + groups(bytes[0..<16]) + "... "
            + groups(bytes[(bytes.count - 8)...]) + "}"
    }

    private static let dateFormat: DateFormatter = {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm:ss '+0000'"
        return f
    }()
    private static let dateLock = NSLock()

    /// NSDate's description (`2001-01-01 00:00:00 +0000`).
    static func dateText(_ d: Date) -> String {
        dateLock.lock()
        defer { dateLock.unlock() }
        return dateFormat.string(from: d)
    }
}

extension ObjectBase {
    func describe(depth: Int) -> String {
        let schema = objectSchema
        if isInvalidated { return "[invalid object]" }
        if depth >= RealmDescription.maximumDepth { return RealmDescription.depthExceeded }
        var lines = ["\(schema.className) {"]
        for p in schema.properties where p.type != .linkingObjects {
            let value = KeyValueCoding.value(self, forKey: p.name)
            let text = RealmDescription.value(value, depth: depth + 1, inCollection: false)
            lines.append("\t\(p.name) = \(RealmDescription.indented(text));")
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }
}

extension Object {
    /// The value of the property `key` (key-value coding); setting it needs a write
    /// transaction when the object is managed.
    public subscript(key: String) -> Any? {
        get { KeyValueCoding.value(self, forKey: key) }
        set { KeyValueCoding.setValue(self, newValue, forKey: key) }
    }
}

/// Collections whose description carries the depth of the object that holds them.
protocol DepthDescribable {
    func describe(depth: Int) -> String
}

extension List: DepthDescribable {
    func describe(depth: Int) -> String {
        RealmDescription.collection("List", RealmDescription.typeName(Element._rlmShape), RealmDescription.address(self),
                                    self, count: count, depth: depth)
    }
}

extension MutableSet: DepthDescribable {
    func describe(depth: Int) -> String {
        RealmDescription.collection("MutableSet", RealmDescription.typeName(Element._rlmShape),
                                    RealmDescription.address(self), self, count: count, depth: depth)
    }
}

extension Results: DepthDescribable {
    func describe(depth: Int) -> String {
        let type = base.info.map { $0.objectSchema.className } ?? RealmDescription.typeName(Element._rlmShape)
        return RealmDescription.collection("Results", type, RealmDescription.address(base), self, count: count, depth: depth)
    }
}

extension LinkingObjects: DepthDescribable {
    func describe(depth: Int) -> String {
        guard let base else {
            // Unmanaged: RealmSwift prints the address of its struct value.
            var this = self
            let address = withUnsafePointer(to: &this) { "0x" + String(UInt(bitPattern: $0), radix: 16) }
            return RealmDescription.collection("LinkingObjects", Element.className(), address, [Element](),
                                               count: 0, depth: depth)
        }
        return RealmDescription.collection("LinkingObjects", Element.className(), RealmDescription.address(base),
                                           self, count: count, depth: depth)
    }
}

extension Map: DepthDescribable {
    func describe(depth: Int) -> String {
        RealmDescription.map(RealmDescription.typeName(Value._rlmShape), RealmDescription.address(self),
                             map { ("\($0.key)", $0.value as Any?) }, depth: depth)
    }
}
