@_spi(Reflection) import Swift
import Foundation
import Synchronization

/// Builds a class's `ObjectSchema` by reflecting a default instance.
///
/// The standard library's field reflection (`_forEachField`) lists every stored field of the
/// class and its superclasses, superclass fields first, with each field's type and offset in
/// the instance. A field whose type is `Persisted<Value>` is a property named after the field
/// (minus the wrapper's leading underscore); its shape comes from `Value`, its flags
/// (primary key, index, origin property) from the default instance's wrapper. Fields holding a
/// `RealmProperty` box or a `List`, `MutableSet` or `Map` (declared without `@Persisted`) are
/// legacy properties, as RealmSwift finds them. The class funcs `primaryKey()`,
/// `indexedProperties()`, `ignoredProperties()`, `propertiesMapping()` and `className()` are
/// applied on top. Results are cached per class for the life of the process.
enum SchemaDiscovery {
    private static let cache = Locked<[ObjectIdentifier: ObjectSchema]>([:])
    private static let registered = Locked<[ObjectIdentifier: TypeList]>([:])

    /// The schema of `type`, discovered once.
    static func objectSchema(for type: ObjectBase.Type) -> ObjectSchema {
        let id = ObjectIdentifier(type)
        if let s = cache.withLock({ $0[id] }) { return s }
        let s = discover(type)
        cache.withLock { $0[id] = s }
        registered.withLock { $0[id] = TypeList(types: [type]) }
        return s
    }

    /// Classes whose schema was asked for (the fallback when the metadata scan finds nothing).
    static func registeredTypes() -> [ObjectBase.Type] {
        registered.withLock { $0.values.flatMap(\.types) }
    }

    private static func discover(_ type: ObjectBase.Type) -> ObjectSchema {
        let className = type.className()
        if type == DynamicObject.self || type == Object.self || type == EmbeddedObject.self {
            return ObjectSchema(className: className, properties: [], objectClass: type,
                                isEmbedded: type._isEmbedded)
        }
        let instance = type.init()
        let base = UnsafeRawPointer(Unmanaged.passUnretained(instance).toOpaque())
        let ignored = Set(type.ignoredProperties())
        let indexedNames = Set(type.indexedProperties())
        let legacyPrimary = type.primaryKey()
        let mapping = type.propertiesMapping()
        var properties: [Property] = []
        // Option 1 is `.classType` (its static is not concurrency-safe to reference).
        _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1)) { cName, offset, fieldType, _ in
            var name = String(cString: cName)
            if let field = fieldType as? any PersistedField.Type {
                if name.hasPrefix("_") { name.removeFirst() }
                if ignored.contains(name) { return true }
                let flags = field.flags(at: base + offset)
                let shape = field.shape
                let primary = flags.primary || name == legacyPrimary
                let indexed = flags.indexed || indexedNames.contains(name)
                properties.append(Property(
                    name: name, columnName: mapping[name] ?? name, shape: shape, indexed: indexed,
                    primary: primary, objectClassName: shape.objectType?.className(),
                    origin: flags.origin, offset: offset, field: field))
            } else if let legacy = fieldType as? any LegacyPropertyBox.Type {
                if ignored.contains(name) { return true }
                let shape = legacy.shape
                properties.append(Property(
                    name: name, columnName: mapping[name] ?? name, shape: shape,
                    indexed: indexedNames.contains(name), primary: name == legacyPrimary,
                    objectClassName: shape.objectType?.className(), origin: nil, offset: offset, field: nil, legacy: true))
            }
            return true
        }
        return ObjectSchema(className: className, properties: properties, objectClass: type,
                            isEmbedded: type._isEmbedded)
    }

    /// Checks a set of object schemas the way RealmSwift does when a Realm opens: link targets
    /// in the schema, valid primary keys and indexes, backlinks naming a link property.
    static func validate(_ schemas: [ObjectSchema]) throws {
        var errors: [String] = []
        let byName = Dictionary(schemas.map { ($0.className, $0) }, uniquingKeysWith: { a, _ in a })
        for s in schemas {
            var primaries = 0
            for p in s.allProperties {
                if p.isPrimary {
                    primaries += 1
                    if s.isEmbedded {
                        errors.append("Embedded object '\(s.className)' cannot have a primary key.")
                    }
                    if p.isCollection || ![.int, .string, .objectId, .UUID].contains(p.type) {
                        errors.append("Property '\(s.className).\(p.name)' of type '\(p.type)' cannot be made the primary key.")
                    }
                }
                if p.isIndexed && !p.isPrimary
                    && (p.isCollection || ![.int, .bool, .string, .date, .objectId, .UUID, .any].contains(p.type)) {
                    errors.append("Property '\(s.className).\(p.name)' of type '\(p.type)' cannot be indexed.")
                }
                if let target = p.objectClassName {
                    guard let ts = byName[target] else {
                        errors.append("Property '\(s.className).\(p.name)' of type '\(p.type == .linkingObjects ? "linking objects" : "object")' "
                                      + "has unknown object type '\(target)'")
                        continue
                    }
                    if p.type == .linkingObjects {
                        let origin = p.linkOriginPropertyName ?? ""
                        guard let op = ts[origin] else {
                            errors.append("Property '\(target).\(origin)' declared as origin of linking objects property '\(s.className).\(p.name)' does not exist")
                            continue
                        }
                        if op.type != .object || op.objectClassName != s.className {
                            errors.append("Property '\(target).\(origin)' declared as origin of linking objects property '\(s.className).\(p.name)' is not a link to '\(s.className)'")
                        }
                    } else if ts.isEmbedded && p.isSet {
                        errors.append("Set property '\(s.className).\(p.name)' cannot contain embedded objects.")
                    }
                }
            }
            if let named = s.objectClass.primaryKey(), s.objectClass != DynamicObject.self, s[named] == nil {
                errors.append("Specified primary key '\(s.className).\(named)' does not exist.")
            }
            if primaries > 1 {
                errors.append("Class '\(s.className)' has more than one primary key.")
            }
        }
        if !errors.isEmpty {
            throw Realm.Error(.fail, "Schema validation failed due to the following errors:\n- "
                              + errors.joined(separator: "\n- "))
        }
    }
}
