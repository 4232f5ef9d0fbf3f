import CStore
import Foundation

/// The root of every persisted class: `Object`, `EmbeddedObject` and `DynamicObject`.
///
/// An unmanaged instance holds its values in its `@Persisted` properties; once added to a
/// Realm (or read from one) it is *managed*: its properties read and write the database
/// through a cached accessor (`cs_obj`) that knows the object's leaf and row and revalidates
/// them with one comparison when the snapshot moves (docs/ARCHITECTURE.md, The Swift layer).
///
/// A managed object is confined to the thread of its Realm, as in RealmSwift (checked at run
/// time on every access).
open class ObjectBase: NSObject {
    /// The Realm managing this object (nil while unmanaged).
    @usableFromInline @exclusivity(unchecked) final var core: RealmCore? {
        didSet { coreRef = core.map { Unmanaged.passUnretained($0) } }
    }
    /// `core` without reference counting, for the read paths (the strong `core` keeps it alive).
    @usableFromInline @exclusivity(unchecked) final var coreRef: Unmanaged<RealmCore>?
    /// How this class is stored in that Realm.
    @exclusivity(unchecked) final var info: ClassInfo? {
        didSet { infoRef = info.map { Unmanaged.passUnretained($0) } }
    }
    /// `info` without reference counting (the core keeps its class infos alive).
    @exclusivity(unchecked) final var infoRef: Unmanaged<ClassInfo>?
    /// The core's accessor for this object. Exclusivity is not checked at run time: it is
    /// passed `inout` to the core on every property access, and a managed object is confined to
    /// one thread, so the dynamic check only cost time (a quarter of a property read).
    @exclusivity(unchecked) final var cobj = cs_obj()
    /// The Realm's invalidation generation when this accessor was made.
    @exclusivity(unchecked) final var generation: UInt64 = 0
    /// Set on the instances key-path tracing reads through (see `KeyPathTracer`).
    final var tracer: KeyPathTracer?

    /// Creates an unmanaged object with the properties' initial values.
    public required override init() {
        super.init()
    }

    /// Whether the object is managed by a Realm.
    var isManaged: Bool { core != nil }

    /// Whether the object is read through the dynamic API (its links read as DynamicObject).
    var isDynamic: Bool { info?.objectSchema.objectClass == DynamicObject.self }

    /// Whether property reads and writes go to the database (the wrappers' test).
    @inlinable
    final var isManagedAccessor: Bool { coreRef != nil }

    /// Whether the object reads a frozen Realm (the collection wrappers' test).
    @inlinable
    final var isFrozenAccessor: Bool { coreRef?._withUnsafeGuaranteedRef { $0.isFrozen } ?? false }

    /// The column of the `@Persisted` property whose wrapper lies at `offset` bytes into the
    /// object (for LinkingObjects: the property's index): one index into the class's table.
    @usableFromInline
    final func column(atFieldOffset offset: Int) -> UInt32 {
        guard let ref = infoRef else { preconditionFailure("Object is not managed by a Realm") }
        let col = ref._withUnsafeGuaranteedRef { $0.column(atFieldOffset: offset) }
        if col == CS_NONE {
            preconditionFailure("The @Persisted property at offset \(offset) of \(type(of: self)) is not in its schema")
        }
        return col
    }

    // MARK: Accessor checks

    /// Traps unless the object can be read: managed, not deleted or invalidated, on its thread.
    @inline(__always)
    func verifyReadable() -> RealmCore {
        let core = verifyAttached()
        if !objectExists() { missing() }
        return core
    }

    /// The cheaper check of the read paths: managed, same generation, on its thread. A deleted
    /// object is then caught by the core call itself (CS_NOTFOUND), saving one row lookup.
    @inline(__always)
    func verifyAttached() -> RealmCore {
        guard let core else { preconditionFailure("Object is not managed by a Realm") }
        core.verifyThread()
        if generation != core.generation { ObjectBase.deleted() }
        return core
    }

    /// Whether the object still exists; a damaged file traps with the core's message rather
    /// than passing for a deleted object (`cs_obj_check_exists`).
    func objectExists() -> Bool {
        var exists = false
        let rc = cs_obj_check_exists(&cobj, &exists)
        if rc != 0 { CoreCall.fail(rc, "Checking that an object of \(type(of: self)) exists") }
        return exists
    }

    static func deleted() -> Never {
        preconditionFailure("Object has been deleted or invalidated.")
    }

    /// Traps for an object whose row is gone: deleted, or, when the file fails verification,
    /// lost to damage (a damaged key node hides rows), which then ends in the damage error
    /// instead. The walk costs nothing that matters: the process stops either way.
    func missing() -> Never {
        if let core, core.fileFailsVerification() {
            CoreCall.damaged("reading the \(type(of: self)) object with key \(cobj.key), which its table no longer finds",
                             path: core.config.path)
        }
        ObjectBase.deleted()
    }

    /// Traps unless the object can be written: readable, and its Realm is in a write transaction.
    @inline(__always)
    func verifyWritable() -> RealmCore {
        let core = verifyReadable()
        if !core.isInWriteTransaction { ObjectBase.notWritable(core) }
        return core
    }

    /// Traps for a write outside a write transaction, with RealmSwift's message for frozen
    /// objects when the Realm is frozen.
    static func notWritable(_ core: RealmCore) -> Never {
        if core.isFrozen {
            preconditionFailure("Attempting to modify a frozen object - call thaw on the Object instance first.")
        }
        preconditionFailure("Cannot modify managed objects outside of a write transaction.")
    }

    // MARK: Column access used by the property wrappers

    /// Reads a single-value column.
    func readColumn(_ col: UInt32) -> StoredValue {
        let core = verifyAttached()
        var v = cs_value()
        let rc = cs_obj_get(&cobj, col, &v)
        if rc != 0 { readFailed(rc) }
        return core.stored(from: v, dynamic: isDynamic)
    }

    /// Traps for a failed read: a deleted object, or the core's message.
    func readFailed(_ rc: Int32) -> Never {
        if rc == Int32(CS_NOTFOUND) && !objectExists() { missing() }
        CoreCall.fail(rc, "reading a property of the \(type(of: self)) object with key \(cobj.key)",
                      path: core?.config.path)
    }

    /// Reads an integer column (the fast path of the commonest type).
    @usableFromInline
    final func readInt(_ col: UInt32) -> Int64 {
        readIntColumn(col)
    }

    /// Reads the integer property whose wrapper lies at `offset` (the accessors' path: the
    /// column lookup and the read in one call).
    @usableFromInline
    final func readInt(atFieldOffset offset: Int) -> Int64 {
        let col = infoRef?._withUnsafeGuaranteedRef { $0.column(atFieldOffset: offset) } ?? CS_NONE
        // (`column(atFieldOffset:)` traps with the reason when there is no column.)
        return readIntColumn(col != CS_NONE ? col : column(atFieldOffset: offset))
    }

    /// The body of both integer reads: the attached check without retaining the core, then
    /// the core's read.
    @inline(__always)
    private func readIntColumn(_ col: UInt32) -> Int64 {
        guard let ref = coreRef else { preconditionFailure("Object is not managed by a Realm") }
        let attached = ref._withUnsafeGuaranteedRef { $0.generation == generation && $0.isOnOwnerThread }
        if !attached { _ = verifyAttached() }
        var out: Int64 = 0
        let rc = cs_obj_get_int(&cobj, col, &out)
        if rc != 0 { readFailed(rc) }
        return out
    }

    /// Writes an integer column (the fast path of the commonest type; write transaction only).
    @usableFromInline
    func writeInt(_ col: UInt32, _ value: Int64) {
        let core = verifyAttached()
        if !core.isInWriteTransaction { ObjectBase.notWritable(core) }
        core.didMutate()
        let rc = cs_obj_set_int(&cobj, col, value)
        if rc != 0 {
            if rc == Int32(CS_NOTFOUND) && !objectExists() { missing() }
            core.failSet(rc, self, col)
        }
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
    ///
    /// Once an instance has been seen invalidated it stays so, as RealmSwift's accessors do:
    /// a write that is cancelled after this instance was seen deleted restores the row but
    /// not this instance (docs/ARCHITECTURE.md, Object accessors and cancelled writes).
    public var isInvalidated: Bool {
        guard let core else { return false }
        if generation != core.generation { return true }
        if cs_obj_exists(&cobj) { return false }
        generation = 0
        return true
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
        guard let a = core, let b = object.core, a.sameFile(as: b) else { return false }
        return info?.table == object.info?.table && cobj.key == object.cobj.key
            && !isInvalidated && !object.isInvalidated
    }

    /// Equality as RealmSwift defines it: the same instance, or, for managed objects of a class
    /// with a primary key, the same row of the same file.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? ObjectBase else { return false }
        if other === self { return true }
        guard let info else { return false }
        if let a = core, let b = other.core, a.isFrozen && b.isFrozen {
            // Frozen objects are equal when they are the same row at the same version.
            return a === b && info.table == other.info?.table && cobj.key == other.cobj.key
        }
        guard info.objectSchema.primaryKeyProperty != nil else { return false }
        return isSameObject(as: other)
    }

    /// A hash consistent with `isEqual`: the primary key's value for managed objects of a class
    /// with one, else the instance's identity.
    open override var hash: Int {
        let schema = objectSchema
        guard let pk = schema.primaryKeyProperty, !isInvalidated else { return ObjectIdentifier(self).hashValue }
        // The same before and after `add`, so a set holding the object still finds it.
        let value: StoredValue
        if let info, let col = info.column(named: pk.name) {
            value = readColumn(col)
        } else {
            value = KeyValueCoding.unmanagedStored(self, pk)
        }
        var h = Hasher()
        h.combine(schema.className)
        h.combine(KeyValueCoding.describe(value))
        return h.finalize()
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
        if let name = _realmObjectName() { return name }
        let full = String(describing: self)
        return full.split(separator: ".").last.map(String.init) ?? full
    }

    /// The name the class has in the schema instead of its Swift name, or nil (the default) for
    /// the Swift name. Override it to keep a file's class names when renaming a Swift class:
    /// `override class func _realmObjectName() -> String? { "Dog" }`.
    open class func _realmObjectName() -> String? { nil }

    /// Whether the class is left out of the default schema (the one used when a configuration
    /// names no `objectTypes`). Override it to return true for model classes used only in
    /// explicitly configured Realms, or abstract base classes. Default false.
    open class func _realmIgnoreClass() -> Bool { false }

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
open class Object: ObjectBase, _ObjectValue {
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
}

/// An object that lives inside its single owner and is deleted with it (RealmSwift's
/// `EmbeddedObject`). It has no primary key and cannot be added to a Realm on its own.
open class EmbeddedObject: ObjectBase, _ObjectValue {
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
}

/// Implementation detail: `Object` and `EmbeddedObject` as values of links, collections and
/// AnyRealmValue (one implementation for both).
public protocol _ObjectValue: _RealmCollectionValueInsideOptional {}

extension _ObjectValue where Self: ObjectBase {
    /// Implementation detail: a link column to this class.
    public static var _rlmShape: _PropertyShape { _PropertyShape(.object, objectType: self) }
    /// Implementation detail: an unmanaged default instance.
    public static func _rlmDefaultValue() -> Self { Self() }
    /// Implementation detail: the object a link names (a dynamic view for DynamicObject).
    public static func _rlmDecode(_ stored: _Stored) -> Self {
        guard case .object(let o) = stored.value else { preconditionFailure("A link to a \(className()) was expected") }
        if let typed = o as? Self { return typed }
        if Self.self == DynamicObject.self, let core = o.core, let info = o.info {
            return core.dynamicObject(info, key: o.cobj.key) as! Self
        }
        preconditionFailure("A \(className()) was expected, not a \(o.objectSchema.className)")
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
