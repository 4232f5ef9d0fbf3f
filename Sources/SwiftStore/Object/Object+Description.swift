import Foundation

extension ObjectBase {
    func describe(depth: Int) -> String {
        let schema = objectSchema
        if isInvalidated { return "[invalid object]" }
        if depth > 5 { return "<Maximum depth exceeded>" }
        var lines = ["\(schema.className) {"]
        for p in schema.properties where p.type != .linkingObjects {
            let value = KeyValueCoding.value(self, forKey: p.name)
            lines.append("\t\(p.name) = \(Self.describeValue(value, depth: depth));")
        }
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    static func describeValue(_ value: Any?, depth: Int) -> String {
        guard let value else { return "(null)" }
        if let o = value as? ObjectBase {
            return o.describe(depth: depth + 1).replacingOccurrences(of: "\n", with: "\n\t")
        }
        if let s = value as? String { return s }
        if let d = value as? Data { return "<\(d.count) bytes>" }
        return String(describing: value).replacingOccurrences(of: "\n", with: "\n\t")
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
