import Foundation

extension ObjectBase {
    /// How deep descriptions of objects and collections inside objects go.
    static let maximumDescriptionDepth = 5

    func describe(depth: Int) -> String {
        let schema = objectSchema
        if isInvalidated { return "[invalid object]" }
        if depth > ObjectBase.maximumDescriptionDepth { return "<Maximum depth exceeded>" }
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
        if let c = value as? DepthDescribable {
            return c.describe(depth: depth + 1).replacingOccurrences(of: "\n", with: "\n\t")
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

/// Collections whose description carries the depth of the object that holds them.
protocol DepthDescribable {
    func describe(depth: Int) -> String
}

extension List: DepthDescribable {
    func describe(depth: Int) -> String { CollectionDescription.describe("List<\(Element.self)>", self, depth: depth) }
}

extension MutableSet: DepthDescribable {
    func describe(depth: Int) -> String { CollectionDescription.describe("MutableSet<\(Element.self)>", self, depth: depth) }
}

extension Results: DepthDescribable {
    func describe(depth: Int) -> String {
        CollectionDescription.describe("Results<\(base.info?.objectSchema.className ?? "\(Element.self)")>", self, depth: depth)
    }
}

extension LinkingObjects: DepthDescribable {
    func describe(depth: Int) -> String {
        CollectionDescription.describe("LinkingObjects<\(Element.className())>", self, depth: depth)
    }
}

extension Map: DepthDescribable {
    func describe(depth: Int) -> String {
        if depth > ObjectBase.maximumDescriptionDepth { return "<Maximum depth exceeded>" }
        var lines: [String] = []
        for e in self {
            let text = ObjectBase.describeValue(e.value, depth: depth).replacingOccurrences(of: "\n", with: "\n\t")
            lines.append("\t[\(e.key)]: \(text)")
        }
        return "Map<\(Key.self), \(Value.self)> <\(lines.count)> (\n" + lines.joined(separator: ",\n") + "\n)"
    }
}
