/// One persisted property of an object schema, as RealmSwift describes it.
public struct Property: CustomStringConvertible, Equatable, @unchecked Sendable {
    /// The property's name in Swift.
    public let name: String
    /// The name stored in the file (differs from `name` when `propertiesMapping()` maps it).
    public let columnName: String
    /// The type of its values, or of its elements for a collection.
    public let type: PropertyType
    /// Whether it is a `List`.
    public let isArray: Bool
    /// Whether it is a `MutableSet`.
    public let isSet: Bool
    /// Whether it is a `Map`.
    public let isMap: Bool
    /// Whether it has an ordered index (primary keys always do).
    public let isIndexed: Bool
    /// Whether it may hold nil (for collections: nil elements).
    public let isOptional: Bool
    /// The class name of linked objects, for `.object` and `.linkingObjects` properties.
    public let objectClassName: String?
    /// For `.linkingObjects`: the name of the linking property in `objectClassName`.
    public let linkOriginPropertyName: String?
    /// Whether it is the primary key.
    public let isPrimary: Bool

    /// Internal: where the property lives in an instance and how to read and write it.
    let offset: Int
    let field: (any PersistedField.Type)?
    let legacy: Bool // a RealmProperty/RealmOptional box or a List/MutableSet/Map declared without @Persisted

    init(name: String, columnName: String, shape: _PropertyShape, indexed: Bool, primary: Bool,
         objectClassName: String?, origin: String?, offset: Int, field: (any PersistedField.Type)?,
         legacy: Bool = false) {
        self.name = name
        self.columnName = columnName
        self.type = shape.type
        self.isArray = shape.collection == .list
        self.isSet = shape.collection == .set
        self.isMap = shape.collection == .map
        self.isIndexed = indexed || primary
        self.isOptional = shape.optional
        self.objectClassName = objectClassName
        self.linkOriginPropertyName = origin
        self.isPrimary = primary
        self.offset = offset
        self.field = field
        self.legacy = legacy
    }

    /// Whether it is a collection (List, MutableSet or Map).
    var isCollection: Bool { isArray || isSet || isMap }

    /// `name { type = int; columnName = name; indexed = NO; ... }`, as RealmSwift prints
    /// properties (the element type for collections; the class lines only for links).
    public var description: String {
        var lines = ["\(name) {", "\ttype = \(type);"]
        if type == .object || type == .linkingObjects {
            lines.append("\tobjectClassName = \(objectClassName ?? "(null)");")
            lines.append("\tlinkOriginPropertyName = \(linkOriginPropertyName ?? "(null)");")
        }
        lines.append("\tcolumnName = \(columnName);")
        lines.append("\tindexed = \(isIndexed ? "YES" : "NO");")
        lines.append("\tisPrimary = \(isPrimary ? "YES" : "NO");")
        lines.append("\tarray = \(isArray ? "YES" : "NO");")
        lines.append("\tset = \(isSet ? "YES" : "NO");")
        lines.append("\tdictionary = \(isMap ? "YES" : "NO");")
        lines.append("\toptional = \(isOptional ? "YES" : "NO");")
        lines.append("}")
        return lines.joined(separator: "\n")
    }

    /// Properties are equal when every public attribute is.
    public static func == (a: Property, b: Property) -> Bool {
        a.name == b.name && a.columnName == b.columnName && a.type == b.type && a.isArray == b.isArray
            && a.isSet == b.isSet && a.isMap == b.isMap && a.isIndexed == b.isIndexed
            && a.isOptional == b.isOptional && a.objectClassName == b.objectClassName
            && a.linkOriginPropertyName == b.linkOriginPropertyName && a.isPrimary == b.isPrimary
    }
}
