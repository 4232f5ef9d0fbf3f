import CStore
import Foundation

/// Adding, creating, finding and deleting objects.
extension RealmCore {
    /// The schema of `object`'s class: this Realm's (no lock taken) when the class is in it.
    func schema(of object: ObjectBase) -> ObjectSchema {
        infos[ObjectIdentifier(type(of: object))]?.objectSchema ?? object.objectSchema
    }

    /// Makes an unmanaged object managed: creates its row (or, with `.modified`/`.all` and an
    /// existing primary key, updates that row) and copies its values in.
    func add(_ object: ObjectBase, policy: Realm.UpdatePolicy) {
        verifyWrite("add objects to a Realm")
        if object.core === self {
            if object.isInvalidated { preconditionFailure("Adding a deleted or invalidated object to a Realm is not permitted") }
            return
        }
        if object.core != nil {
            preconditionFailure("Object is already managed by another Realm. Use create instead to copy it into this Realm.")
        }
        let info = self.info(for: type(of: object))
        if info.isEmbedded {
            preconditionFailure("Cannot add an embedded object to a Realm on its own: assign it to a property of its owner")
        }
        didMutate()
        if info.createsWithValues {
            switch addWithValues(object, info, policy: policy) {
            case .added:
                return
            case .updates(let key):
                // an existing primary key under `.modified`/`.all`: the row found is updated
                var row = cs_obj()
                CoreCall.must(cs_obj_open(txn, info.table, key, &row), "Opening an object")
                point(object, info, at: row)
                copyValues(of: object, info, policy: policy, skipPrimary: true)
                bind(object, info)
                return
            case .general:
                break
            }
        }
        let t = txn
        var row = cs_obj()
        if info.primaryColumn != CS_NONE, let pk = info.objectSchema.primaryKeyProperty {
            let pkValue = KeyValueCoding.unmanagedStored(object, pk)
            var key: Int64 = 0
            let found = withCValue(pkValue) { cs_table_find_primary(t, info.table, $0, &key) } == 0
            if found {
                if policy == .error {
                    preconditionFailure("Attempting to create an object of type '\(info.objectSchema.className)' "
                                        + "with an existing primary key value '\(KeyValueCoding.describe(pkValue))'.")
                }
                CoreCall.must(cs_obj_open(t, info.table, key, &row), "Opening an object")
            } else {
                let rc = withCValue(pkValue) { cs_obj_create_primary(t, info.table, $0, &row) }
                if rc != 0 { CoreCall.fail(rc, "Creating a \(info.objectSchema.className)") }
            }
        } else {
            CoreCall.must(cs_obj_create(t, info.table, &row), "Creating a \(info.objectSchema.className)")
        }
        point(object, info, at: row)
        copyValues(of: object, info, policy: policy, skipPrimary: true)
        bind(object, info)
    }

    /// `add` of an object of a class that `createsWithValues`: the row is created with the
    /// plain values the object holds (one `cs_obj_create_values` call, read without generic
    /// calls), then its other properties are copied in declaration order, as `copyValues` would
    /// copy them (docs/ARCHITECTURE.md, Creating an object with its values). Under `.error` the
    /// create itself is the uniqueness check of the primary key; under `.modified`/`.all` the key
    /// is looked up first, and an existing one's key returned (`.updates`) with nothing done.
    /// `.general`, with nothing done, when the object holds a String longer than the core takes:
    /// `add`'s general path reports it as a single write does.
    private func addWithValues(_ object: ObjectBase, _ info: ClassInfo, policy: Realm.UpdatePolicy) -> DirectAdd {
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        let buffer = createValues
        guard buffer.read(info.directFields, base: UnsafeRawPointer(base)) else { return .general }
        let t = txn, table = info.table, pki = info.directPrimary
        var row = cs_obj()
        var existing: Int64?
        let rc: Int32 = buffer.withValues { values in
            if pki >= 0 && policy != .error {
                var key: Int64 = 0
                if cs_table_find_primary(t, table, values + pki, &key) == 0 {
                    existing = key
                    return 0
                }
            }
            return info.directColumns.withUnsafeBufferPointer { cols in
                cs_obj_create_values(t, table, cols.count, cols.baseAddress, values, &row)
            }
        }
        if let existing { return .updates(existing) }
        if rc != 0 {
            if rc == Int32(CS_CONSTRAINT), pki >= 0, let pk = info.objectSchema.primaryKeyProperty {
                let pkValue = KeyValueCoding.unmanagedStored(object, pk)
                preconditionFailure("Attempting to create an object of type '\(info.objectSchema.className)' "
                                    + "with an existing primary key value '\(KeyValueCoding.describe(pkValue))'.")
            }
            CoreCall.fail(rc, "Creating a \(info.objectSchema.className)")
        }
        point(object, info, at: row)
        directAdds += 1
        laterStores += info.laterFields.count
        for b in info.laterFields {
            b.field.store(from: base + b.offset, into: object, column: b.col, policy: policy)
        }
        for b in info.legacyBindings where b.col != info.primaryColumn {
            let box = base.load(fromByteOffset: b.offset, as: AnyObject.self)
            (box as? LegacyPropertyBox)?.store(into: object, column: b.col, policy: policy)
        }
        bind(object, info)
        return .added
    }

    /// What `addWithValues` did.
    private enum DirectAdd {
        /// The object was created with its values and is managed.
        case added
        /// Nothing: the object's primary key is that of the row with this key, which it updates.
        case updates(Int64)
        /// Nothing: the general path adds it.
        case general
    }

    /// Creates (or with a primary key and `.modified`/`.all`, updates) an object of `info`'s
    /// class from a dictionary, an array in property order, or an object, and returns the
    /// managed object. Values not given keep the model's initial values (new objects) or their
    /// stored values (updated ones).
    func create(_ info: ClassInfo, value: Any, policy: Realm.UpdatePolicy) -> ObjectBase {
        verifyWrite("create objects in a Realm")
        if info.isEmbedded {
            preconditionFailure("Cannot create an embedded object on its own: assign it to a property of its owner")
        }
        didMutate()
        let schema = info.objectSchema
        let values = KeyValueCoding.propertyValues(schema, from: value)
        if let pk = schema.primaryKeyProperty, policy != .error, let given = values[pk.name],
           let existing = object(info, primaryKey: given) {
            for p in schema.properties where p.type != .linkingObjects && !p.isPrimary {
                if let v = values[p.name] { KeyValueCoding.setManaged(existing, p, v, policy: policy) }
            }
            return existing
        }
        if schema.objectClass != DynamicObject.self {
            let object = schema.objectClass.init()
            for p in schema.properties {
                guard let v = values[p.name] else { continue }
                KeyValueCoding.setValue(object, v is NSNull ? nil : v, forKey: p.name)
            }
            add(object, policy: policy)
            return object
        }
        // A class known only by name (dynamic API, migrations): create the row, then set values.
        let t = txn
        var row = cs_obj()
        if let pk = schema.primaryKeyProperty, !isMigration {
            let pkValue = values[pk.name].map { KeyValueCoding.stored($0, for: pk, className: schema.className) }
                ?? DynamicAccess.defaultStored(pk)
            let rc = withCValue(pkValue) { cs_obj_create_primary(t, info.table, $0, &row) }
            if rc == Int32(CS_CONSTRAINT) {
                preconditionFailure("Attempting to create an object of type '\(schema.className)' "
                                    + "with an existing primary key value '\(KeyValueCoding.describe(pkValue))'.")
            }
            if rc != 0 { CoreCall.fail(rc, "Creating a \(schema.className)") }
        } else {
            CoreCall.must(cs_obj_create(t, info.table, &row), "Creating a \(schema.className)")
        }
        let object = self.object(info, key: row.key)
        // In a migration primary keys are off while the block runs: the key is an ordinary
        // value then, checked for uniqueness when the migration ends.
        for p in schema.properties where p.type != .linkingObjects && (!p.isPrimary || isMigration) {
            if let v = values[p.name] { KeyValueCoding.setManaged(object, p, v, policy: policy) }
        }
        return object
    }

    /// Deletes a managed object of this Realm.
    func delete(_ object: ObjectBase) {
        verifyWrite("delete objects from a Realm")
        guard object.core === self else {
            if object.core == nil { preconditionFailure("Can only delete an object from the Realm it belongs to.") }
            preconditionFailure("Can only delete an object from the Realm it belongs to.")
        }
        if object.isInvalidated { preconditionFailure("Object has been deleted or invalidated.") }
        didMutate()
        CoreCall.must(cs_obj_delete(&object.cobj), "Deleting an object")
        deletedInWrite.append(WeakObject(object: object))
    }

    /// Deletes every object of every class in the schema.
    func deleteAll() {
        verifyWrite("delete objects from a Realm")
        didMutate()
        for info in infosByName.values where !info.isEmbedded {
            CoreCall.must(cs_table_clear(txn, info.table), "Deleting all objects")
        }
    }

    /// The object of `info`'s class whose primary key is `key`, or nil.
    func object(_ info: ClassInfo, primaryKey key: Any) -> ObjectBase? {
        verifyThread()
        guard let pk = info.objectSchema.primaryKeyProperty else {
            preconditionFailure("'\(info.objectSchema.className)' does not have a primary key")
        }
        let value = KeyValueCoding.stored(key, for: pk, className: info.objectSchema.className)
        var found: Int64 = 0
        let rc = withCValue(value) { cs_table_find_primary(txn, info.table, $0, &found) }
        if rc == Int32(CS_NOTFOUND) { return nil }
        CoreCall.must(rc, "Finding an object by primary key")
        return object(info, key: found)
    }

    /// The number of objects of `info`'s class (0 if the core cannot count them).
    func objectCount(_ info: ClassInfo) -> UInt64 {
        var n: UInt64 = 0
        return cs_table_count(txn, info.table, &n) == 0 ? n : 0
    }

    /// Every object key of a table, in key order.
    func allKeys(_ info: ClassInfo) -> [Int64] {
        var it = cs_iter()
        CoreCall.must(cs_iter_init(&it, txn, info.table), "Iterating \(info.objectSchema.className)")
        var keys: [Int64] = []
        var count: UInt64 = 0
        if cs_table_count(txn, info.table, &count) == 0 { keys.reserveCapacity(Int(count)) }
        var o = cs_obj()
        while cs_iter_next(&it, &o) == 0 { keys.append(o.key) }
        return keys
    }
}
