/// The type of a property's values (for collections: of their elements), as RealmSwift names
/// them.
public enum PropertyType: Int, Sendable, CustomStringConvertible {
    /// Integers of every width (Int, Int8, Int16, Int32, Int64).
    case int = 0
    /// Bool.
    case bool = 1
    /// Float.
    case float = 5
    /// Double.
    case double = 6
    /// String.
    case string = 2
    /// Data.
    case data = 3
    /// AnyRealmValue: each value carries its own type.
    case any = 9
    /// Date.
    case date = 4
    /// A link to an object (or an embedded object).
    case object = 7
    /// Computed backlinks (LinkingObjects).
    case linkingObjects = 8
    /// ObjectId.
    case objectId = 10
    /// Decimal128.
    case decimal128 = 11
    /// UUID.
    case UUID = 12

    /// The type's name ("int", "string", ...).
    public var description: String {
        switch self {
        case .int: return "int"
        case .bool: return "bool"
        case .float: return "float"
        case .double: return "double"
        case .string: return "string"
        case .data: return "data"
        case .any: return "mixed"
        case .date: return "date"
        case .object: return "object"
        case .linkingObjects: return "linking objects"
        case .objectId: return "object id"
        case .decimal128: return "decimal128"
        case .UUID: return "uuid"
        }
    }
}

/// Implementation detail: how a property type is stored (its element type, whether it is
/// optional, which collection holds it, and the class of linked objects).
public struct _PropertyShape: @unchecked Sendable {
    /// Collection kinds a property can have.
    public enum Collection: Sendable { case none, list, set, map, linkingObjects }
    /// The element type.
    public var type: PropertyType
    /// Whether null is allowed.
    public var optional: Bool
    /// The collection kind.
    public var collection: Collection
    /// For `.object` and `.linkingObjects`: the linked class.
    public var objectType: ObjectBase.Type?

    /// Creates a shape.
    public init(_ type: PropertyType, optional: Bool = false, collection: Collection = .none,
                objectType: ObjectBase.Type? = nil) {
        self.type = type
        self.optional = optional
        self.collection = collection
        self.objectType = objectType
    }
}
