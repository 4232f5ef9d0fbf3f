import CStore
import Foundation

/// The root of every persisted class: `Object`, `EmbeddedObject` and `DynamicObject`.
///
/// An unmanaged instance holds its values in its `@Persisted` properties; once added to a
/// Realm (or read from one) it is *managed*: its properties read and write the database
/// through a cached accessor (`cs_obj`) that knows the object's leaf and row and revalidates
/// them with one comparison when the snapshot moves (DESIGN §3, "Hot paths").
///
/// A managed object is confined to the thread of its Realm, as in RealmSwift (checked at run
/// time on every access).
open class ObjectBase: NSObject {
    /// The Realm managing this object (nil while unmanaged).
    var core: RealmCore?
    /// How this class is stored in that Realm.
    var info: ClassInfo?
    /// The core's accessor for this object.
    var cobj = cs_obj()
    /// The Realm's invalidation generation when this accessor was made.
    var generation: UInt64 = 0
    /// Set on the instances key-path tracing reads through (see `KeyPathTracer`).
    var tracer: KeyPathTracer?

    /// Creates an unmanaged object with the properties' initial values.
    public required override init() {
        super.init()
    }

    /// Whether the object is managed by a Realm.
    var isManaged: Bool { core != nil }

    // MARK: Accessor checks

    /// Traps unless the object can be read: managed, not deleted or invalidated, on its thread.
    @inline(__always)
    func verifyReadable() -> RealmCore {
        guard let core else { preconditionFailure("Object is not managed by a Realm") }
        core.verifyThread()
        if generation != core.generation || !cs_obj_exists(&cobj) {
            preconditionFailure("Object has been deleted or invalidated.")
        }
        return core
    }

    /// Traps unless the object can be written: readable, and its Realm is in a write transaction.
    @inline(__always)
    func verifyWritable() -> RealmCore {
        let core = verifyReadable()
        if !core.isInWriteTransaction {
            preconditionFailure("Cannot modify managed objects outside of a write transaction.")
        }
        return core
    }

    // MARK: Column access used by the property wrappers

    /// Reads a single-value column.
    func readColumn(_ col: UInt32) -> StoredValue {
        let core = verifyReadable()
        var v = cs_value()
        CoreCall.must(cs_obj_get(&cobj, col, &v), "Reading a property of \(type(of: self))")
        return core.stored(from: v)
    }

    /// Reads an integer column (the fast path of the commonest type).
    @inline(__always)
    func readInt(_ col: UInt32) -> Int64 {
        _ = verifyReadable()
        var out: Int64 = 0
        let rc = cs_obj_get_int(&cobj, col, &out)
        if rc != 0 { CoreCall.fail(rc, "Reading a property of \(type(of: self))") }
        return out
    }

    /// Writes a single-value column (write transaction only). Unmanaged objects linked from it
    /// are added with `policy`; embedded objects are created in place.
    func writeColumn(_ col: UInt32, _ value: StoredValue, policy: Realm.UpdatePolicy) {
        let core = verifyWritable()
        core.write(value, to: self, column: col, policy: policy)
    }

    // MARK: Public members

    /// The Realm managing this object, or nil if it is unmanaged.
    public var realm: Realm? {
        guard let core else { return nil }
        return Realm(core: core)
    }

    /// Whether the object was deleted, or its Realm invalidated, since it was read. Always
    /// false for an unmanaged object.
    public var isInvalidated: Bool {
        guard let core else { return false }
        return generation != core.generation || !cs_obj_exists(&cobj)
    }

    /// The schema of this object's class.
    public var objectSchema: ObjectSchema {
        if let info { return info.objectSchema }
        return SchemaDiscovery.objectSchema(for: type(of: self))
    }

    /// Whether this object and `object` are the same row of the same Realm (or the same
    /// unmanaged instance).
    public func isSameObject(as object: ObjectBase?) -> Bool {
        guard let object else { return false }
        if object === self { return true }
        guard let a = core, let b = object.core, a.db == b.db else { return false }
        return info?.table == object.info?.table && cobj.key == object.cobj.key
            && !isInvalidated && !object.isInvalidated
    }

    /// Equality as RealmSwift defines it: the same instance, or, for managed objects of a class
    /// with a primary key, the same row of the same file.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? ObjectBase else { return false }
        if other === self { return true }
        guard let info, info.objectSchema.primaryKeyProperty != nil else { return false }
        return isSameObject(as: other)
    }

    /// A hash consistent with `isEqual`: the primary key's value for managed objects of a class
    /// with one, else the instance's identity.
    open override var hash: Int {
        if let info, let pk = info.objectSchema.primaryKeyProperty, !isInvalidated,
           let col = info.column(named: pk.name) {
            var h = Hasher()
            h.combine(info.table)
            h.combine(String(describing: readColumn(col)))
            return h.finalize()
        }
        return ObjectIdentifier(self).hashValue
    }

    // MARK: Class functions honoured for @Persisted models

    /// The name of the primary key property, or nil. Overriding it is the legacy way to name
    /// the primary key; `@Persisted(primaryKey: true)` is the current one.
    open class func primaryKey() -> String? { nil }

    /// Names of properties that are not persisted.
    open class func ignoredProperties() -> [String] { [] }

    /// Names of properties that get an index (legacy form of `@Persisted(indexed: true)`).
    open class func indexedProperties() -> [String] { [] }

    /// Maps Swift property names to the names stored in the file; queries and key-value
    /// coding keep using the Swift names.
    open class func propertiesMapping() -> [String: String] { [:] }

    /// The class name stored in the file; by default the Swift class name.
    open class func className() -> String {
        let full = String(describing: self)
        return full.split(separator: ".").last.map(String.init) ?? full
    }

    /// Internal: whether the class is embedded (overridden by `EmbeddedObject`).
    class var _isEmbedded: Bool { false }

    // MARK: Description and key-value coding

    /// A multi-line dump of the object's properties, as RealmSwift prints objects:
    ///
    /// ```
    /// Dog {
    ///     name = Rex;
    ///     age = 3;
    /// }
    /// ```
    open override var description: String {
        describe(depth: 0)
    }

    /// The value of the persisted property `key`, as its Swift type (nil for null). Traps with
    /// RealmSwift's message for a name that is not a property.
    open func value(forKey key: String) -> Any? {
        KeyValueCoding.value(self, forKey: key)
    }

    /// Sets the persisted property `key` (inside a write transaction when managed).
    open func setValue(_ value: Any?, forKey key: String) {
        KeyValueCoding.setValue(self, value, forKey: key)
    }

    /// Sets several properties from a dictionary.
    open func setValuesForKeys(_ keyedValues: [String: Any]) {
        for (k, v) in keyedValues { KeyValueCoding.setValue(self, v is NSNull ? nil : v, forKey: k) }
    }
}

/// A class of persisted objects that live on their own in a table (RealmSwift's `Object`).
///
/// ```swift
/// final class Dog: Object {
///     @Persisted(primaryKey: true) var id: Int
///     @Persisted var name = ""
///     @Persisted var owner: Person?
/// }
/// ```
open class Object: ObjectBase, RealmCollectionValue, _RealmOptionalWrappable {
    /// Creates an unmanaged object with the properties' initial values.
    public required init() {
        super.init()
    }

    /// Creates an unmanaged object from a dictionary of property values, an array of values in
    /// property order, or another object; nested values become linked objects and collections.
    public convenience init(value: Any) {
        self.init()
        KeyValueCoding.fill(self, from: value)
    }

    /// Implementation detail: a link column to this class.
    public class var _rlmShape: _PropertyShape { _PropertyShape(.object, objectType: self) }
    /// Implementation detail: an unmanaged default instance.
    public static func _rlmDefaultValue() -> Self { Self() }
    /// Implementation detail: the object a link names.
    public static func _rlmDecode(_ stored: _Stored) -> Self {
        if case .object(let o) = stored.value { return o as! Self }
        preconditionFailure("A link to a \(className()) was expected")
    }
    /// Implementation detail: a link to this object.
    public func _rlmEncode() -> _Stored { _Stored(.object(self)) }
    /// Implementation detail: an object from an object, a dictionary or an array.
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if let o = value as? Self { return o }
        if value is [String: Any] || value is [Any] || value is ObjectBase {
            let o = Self()
            KeyValueCoding.fill(o, from: value)
            return o
        }
        return nil
    }
}

/// An object that lives inside its single owner and is deleted with it (RealmSwift's
/// `EmbeddedObject`). It has no primary key and cannot be added to a Realm on its own.
open class EmbeddedObject: ObjectBase, RealmCollectionValue, _RealmOptionalWrappable {
    /// Creates an unmanaged embedded object.
    public required init() {
        super.init()
    }

    /// Creates an unmanaged embedded object from a dictionary, an array or another object.
    public convenience init(value: Any) {
        self.init()
        KeyValueCoding.fill(self, from: value)
    }

    override class var _isEmbedded: Bool { true }

    /// Implementation detail: an embedded link column to this class.
    public class var _rlmShape: _PropertyShape { _PropertyShape(.object, objectType: self) }
    /// Implementation detail: an unmanaged default instance.
    public static func _rlmDefaultValue() -> Self { Self() }
    /// Implementation detail: the embedded object a link names.
    public static func _rlmDecode(_ stored: _Stored) -> Self {
        if case .object(let o) = stored.value { return o as! Self }
        preconditionFailure("An embedded \(className()) was expected")
    }
    /// Implementation detail: this object as a value to embed.
    public func _rlmEncode() -> _Stored { _Stored(.object(self)) }
    /// Implementation detail: an object from an object, a dictionary or an array.
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if let o = value as? Self { return o }
        if value is [String: Any] || value is [Any] || value is ObjectBase {
            let o = Self()
            KeyValueCoding.fill(o, from: value)
            return o
        }
        return nil
    }
}
