import Foundation

/// Turns key paths into property names by a traced read: `\Dog.name` is "name" and
/// `\Dog.owner.name` is "owner.name".
///
/// A tracer instance of the root class has every `@Persisted` wrapper switched to tracing
/// mode; reading through the key path makes each wrapper it passes append its property's name
/// and return either a tracer instance of the linked class (for links, so the path goes on)
/// or a default value (where it ends). Names are cached per key path.
@usableFromInline
final class KeyPathTracer {
    var names: [String] = []

    /// Names already traced, by key path (key paths are immutable, so sharing them is safe).
    private final class Cache: @unchecked Sendable {
        let lock = NSLock()
        var names: [AnyKeyPath: String] = [:]
    }
    private static let cache = Cache()

    /// The dotted property names `keyPath` reads, starting at `root`.
    static func name(for keyPath: AnyKeyPath, root: ObjectBase.Type) -> String {
        guard let name = name(for: keyPath, root: root, orNil: true) else {
            preconditionFailure("Key path '\(keyPath)' does not refer to a persisted property of '\(root.className())'")
        }
        return name
    }

    /// The dotted property names `keyPath` reads, or nil when it reads no persisted property.
    /// A key path that goes on through a projected collection (`\Person.dogs.projectTo.name`)
    /// names the mapped property last ("dogs.name").
    static func name(for keyPath: AnyKeyPath, root: ObjectBase.Type, orNil: Bool) -> String? {
        cache.lock.lock()
        let known = cache.names[keyPath]
        cache.lock.unlock()
        if let known { return known }
        let tracer = KeyPathTracer()
        let object = makeTracingInstance(of: root, tracer)
        let value = object[keyPath: keyPath]
        if let tail = value as? _ProjectedTail { tracer.names.append(tail._tracedName) }
        guard !tracer.names.isEmpty else { return nil }
        let name = tracer.names.joined(separator: ".")
        cache.lock.lock()
        cache.names[keyPath] = name
        cache.lock.unlock()
        return name
    }

    /// The dotted property names of a key path rooted at `Root`.
    static func name<Root: ObjectBase>(for keyPath: PartialKeyPath<Root>) -> String {
        name(for: keyPath, root: Root.self)
    }

    static func makeTracingInstance(of type: ObjectBase.Type, _ tracer: KeyPathTracer) -> ObjectBase {
        let object = type.init()
        object.tracer = tracer
        let schema = SchemaDiscovery.objectSchema(for: type)
        for (i, p) in schema.allProperties.enumerated() {
            p.field?.trace(at: KeyValueCoding.address(object, p.offset), index: i)
        }
        return object
    }

    /// What a tracing wrapper returns for property `index` of `object`.
    @usableFromInline
    static func traced<Value: _Persistable>(_ object: ObjectBase, _ index: Int, _: Value.Type) -> Value {
        guard let tracer = object.tracer else { return Value._rlmDefaultValue() }
        let schema = SchemaDiscovery.objectSchema(for: type(of: object))
        tracer.names.append(schema.allProperties[index].name)
        let shape = Value._rlmShape
        if shape.type == .object, shape.collection == .none, let linked = shape.objectType {
            let next = makeTracingInstance(of: linked, tracer)
            if let v = (next as Any) as? Value { return v }
        }
        return Value._rlmDefaultValue()
    }
}

/// The name of the property a key path reads, dotted through links: `_name(for: \Dog.owner.name)`
/// is `"owner.name"` (RealmSwift's public key-path-to-string function).
public func _name<T: ObjectBase>(for keyPath: PartialKeyPath<T>) -> String {
    KeyPathTracer.name(for: keyPath, root: T.self)
}
