/// The schema of one object class: its name and persisted properties.
public final class ObjectSchema: CustomStringConvertible, Equatable, @unchecked Sendable {
    /// The class name (the model's `className()`, by default its Swift name).
    public let className: String
    /// The persisted properties, superclass properties first, each class's in declaration
    /// order. LinkingObjects properties are not listed here (they are computed), but the
    /// subscript finds them.
    public let properties: [Property]
    /// Every property, LinkingObjects included: what the object layer indexes by position.
    let allProperties: [Property]
    /// The model class, or `DynamicObject` for a schema read from a file.
    public let objectClass: ObjectBase.Type
    /// Whether objects of this class are embedded in an owner.
    public let isEmbedded: Bool
    /// Always false: asymmetric objects belong to Sync.
    public let isAsymmetric: Bool = false
    /// The primary key property, if the class has one.
    public let primaryKeyProperty: Property?

    let byName: [String: Int]

    init(className: String, properties: [Property], objectClass: ObjectBase.Type, isEmbedded: Bool) {
        self.className = className
        self.allProperties = properties
        self.properties = properties.filter { $0.type != .linkingObjects }
        self.objectClass = objectClass
        self.isEmbedded = isEmbedded
        self.primaryKeyProperty = properties.first { $0.isPrimary }
        var byName: [String: Int] = [:]
        for (i, p) in properties.enumerated() { byName[p.name] = i }
        self.byName = byName
    }

    /// The property named `propertyName`, or nil.
    public subscript(propertyName: String) -> Property? {
        byName[propertyName].map { allProperties[$0] }
    }

    /// Properties whose values live in columns (everything but LinkingObjects).
    var storedProperties: [Property] { properties }

    /// `Dog { name { type = string; ... } ... }`, as RealmSwift prints object schemas.
    public var description: String {
        let body = properties.map { "\t" + $0.description.replacingOccurrences(of: "\n", with: "\n\t") }
        return "\(className)\(isEmbedded ? " (embedded)" : "") {\n" + body.joined(separator: "\n") + "\n}"
    }

    /// Object schemas are equal when their names, embedding and properties are.
    public static func == (a: ObjectSchema, b: ObjectSchema) -> Bool {
        a.className == b.className && a.isEmbedded == b.isEmbedded && a.allProperties == b.allProperties
    }
}

/// The set of object schemas a Realm uses.
public struct Schema: CustomStringConvertible, Equatable, @unchecked Sendable {
    /// Every object schema, sorted by class name.
    public let objectSchema: [ObjectSchema]

    init(_ schemas: [ObjectSchema]) {
        objectSchema = schemas.sorted { $0.className < $1.className }
    }

    /// The object schema named `className`, or nil.
    public subscript(className: String) -> ObjectSchema? {
        objectSchema.first { $0.className == className }
    }

    /// Every object schema's description.
    public var description: String {
        "Schema {\n" + objectSchema.map { "\t" + $0.description.replacingOccurrences(of: "\n", with: "\n\t") }
            .joined(separator: "\n") + "\n}"
    }

    /// Schemas are equal when their object schemas are.
    public static func == (a: Schema, b: Schema) -> Bool { a.objectSchema == b.objectSchema }
}
