/// A property to sort by and a direction (RealmSwift's `SortDescriptor`).
///
/// ```swift
/// dogs.sorted(by: [SortDescriptor(keyPath: "age", ascending: false), "name"])
/// ```
public struct SortDescriptor: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The property (or dotted link path) to sort by.
    public let keyPath: String
    /// Whether smaller values come first.
    public let ascending: Bool

    /// Sorts by the property `keyPath` (a name or a dotted link path).
    public init(keyPath: String, ascending: Bool = true) {
        self.keyPath = keyPath
        self.ascending = ascending
    }

    /// Sorts by the property a Swift key path names (`\Dog.owner.name`).
    public init<Root: ObjectBase>(keyPath: PartialKeyPath<Root>, ascending: Bool = true) {
        self.keyPath = KeyPathTracer.name(for: keyPath, root: Root.self)
        self.ascending = ascending
    }

    /// An ascending sort by the property named by the literal.
    public init(stringLiteral keyPath: String) {
        self.init(keyPath: keyPath)
    }

    /// The same property, the other direction.
    public func reversed() -> SortDescriptor {
        SortDescriptor(keyPath: keyPath, ascending: !ascending)
    }

    /// `SortDescriptor(keyPath: name, direction: ascending)`.
    public var description: String {
        "SortDescriptor(keyPath: \(keyPath), direction: \(ascending ? "ascending" : "descending"))"
    }
}
