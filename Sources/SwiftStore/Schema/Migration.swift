import CStore
import Foundation

/// An object seen through a migration: read `oldObject["name"]`, write `newObject["name"]`.
public typealias MigrationObject = DynamicObject

/// A schema migration in progress, handed to `Configuration.migrationBlock` (RealmSwift's
/// `Migration`).
///
/// The whole migration is one write transaction: the file gets the new tables and columns
/// first (a property whose type changed gets a new column; the old values stay readable
/// through `oldObject` until the block returns), then the block runs, then removed
/// properties are dropped and primary keys and indexes are set. A failure rolls everything
/// back and the open throws.
///
/// ```swift
/// config.migrationBlock = { migration, oldVersion in
///     migration.enumerateObjects(ofType: "Person") { old, new in
///         new!["fullName"] = "\(old!["first"] as! String) \(old!["last"] as! String)"
///     }
/// }
/// ```
public final class Migration {
    /// The schema the file had.
    public let oldSchema: Schema
    /// The schema of the models.
    public let newSchema: Schema

    /// The file as it was before the migration (its own read transaction).
    let oldCore: RealmCore
    /// The file as the migration writes it (the write transaction, models' schema).
    let newCore: RealmCore
    let txn: OpaquePointer
    /// The model class of each class name, for initial values of created objects.
    let modelTypes: [String: ObjectBase.Type]

    init(oldCore: RealmCore, newCore: RealmCore, txn: OpaquePointer, modelTypes: [String: ObjectBase.Type]) {
        self.oldCore = oldCore
        self.newCore = newCore
        self.txn = txn
        self.modelTypes = modelTypes
        self.oldSchema = oldCore.schema
        self.newSchema = Schema(newCore.schema.objectSchema.map { s in
            ObjectSchema(className: s.className, properties: s.allProperties,
                         objectClass: modelTypes[s.className] ?? DynamicObject.self, isEmbedded: s.isEmbedded)
        })
    }

    /// Calls `block` for every object the class named `typeName` had before the migration and
    /// still has, with the object as it was (`oldObject`) and as the new schema sees it
    /// (`newObject`). Objects deleted during the migration are skipped, and so are objects
    /// created during it. For a class the models dropped, `newObject` is nil; for a class the
    /// file did not have, `oldObject` is nil and the objects are those created so far.
    public func enumerateObjects(ofType typeName: String, _ block: (MigrationObject?, MigrationObject?) -> Void) {
        let oldInfo = oldCore.info(named: typeName)
        let newInfo = newCore.info(named: typeName)
        let keys = oldInfo.map { oldCore.allKeys($0) } ?? newInfo.map { newCore.allKeys($0) } ?? []
        for key in keys {
            let old = oldInfo.map { oldCore.object($0, key: key) as! DynamicObject }
            var new: DynamicObject?
            if let newInfo {
                var probe = cs_obj()
                guard cs_obj_open(txn, newInfo.table, key, &probe) == 0 else { continue }
                new = newCore.object(newInfo, key: key) as? DynamicObject
            }
            block(old, new)
        }
    }

    /// Creates an object of the class named `typeName` in the new schema. Properties not in
    /// `value` get the model's initial values.
    @discardableResult
    public func create(_ typeName: String, value: Any = [String: Any]()) -> MigrationObject {
        guard let info = newCore.info(named: typeName) else {
            preconditionFailure("Object type '\(typeName)' is not in the new schema")
        }
        var values: [String: Any] = [:]
        if let type = modelTypes[typeName] {
            let model = type.init()
            for p in info.objectSchema.properties {
                values[p.name] = KeyValueCoding.value(model, forKey: p.name) ?? NSNull()
            }
        }
        for (k, v) in KeyValueCoding.propertyValues(info.objectSchema, from: value) { values[k] = v }
        return newCore.create(info, value: values, policy: .error) as! DynamicObject
    }

    /// Deletes an object (given as its old or its new view).
    public func delete(_ object: MigrationObject) {
        guard object.core === newCore || object.core === oldCore, let table = object.info?.table else {
            preconditionFailure("Can only delete objects of this migration")
        }
        var row = cs_obj()
        guard cs_obj_open(txn, table, object.cobj.key, &row) == 0 else { return }
        CoreCall.must(cs_obj_delete(&row), "Deleting an object")
        newCore.didMutate()
    }

    /// Deletes every object of the class named `typeName`, and the class itself if the new
    /// schema does not have it. Returns whether the class existed.
    @discardableResult
    public func deleteData(forType typeName: String) -> Bool {
        var table: UInt32 = 0
        guard cs_table_find(txn, typeName, &table) == 0 else { return false }
        CoreCall.must(cs_table_clear(txn, table), "Deleting the objects of \(typeName)")
        if newCore.info(named: typeName) == nil {
            // Link columns of other classes would keep the table; they go first.
            for t in SchemaSync.fileTables(txn) where t.key != table {
                for c in t.columns where c.info.type == CS_TYPE_LINK && c.info.target == table {
                    CoreCall.must(cs_column_remove(txn, t.key, c.key), "Removing a link to \(typeName)")
                }
            }
            CoreCall.must(cs_table_remove(txn, table), "Removing the class \(typeName)")
        }
        newCore.rebind()
        return true
    }

    /// Moves the values of the old property `oldName` to the new schema's property `newName` of
    /// the class `typeName` (the two must have the same type). The old view keeps the old name.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        var table: UInt32 = 0
        guard cs_table_find(txn, typeName, &table) == 0 else {
            preconditionFailure("Cannot rename properties of '\(typeName)': the class does not exist")
        }
        guard let newInfo = newCore.info(named: typeName), let p = newInfo.objectSchema[newName] else {
            preconditionFailure("Cannot rename property '\(typeName).\(oldName)' to '\(newName)': the new schema has no such property")
        }
        var oldCol: UInt32 = 0
        guard cs_column_find(txn, table, oldName, &oldCol) == 0 else {
            preconditionFailure("Cannot rename property '\(typeName).\(oldName)': it does not exist")
        }
        if oldName == p.columnName { return }
        var newCol: UInt32 = 0
        if cs_column_find(txn, table, p.columnName, &newCol) == 0 {
            var a = cs_column_info(), b = cs_column_info()
            CoreCall.must(cs_column_info_get(txn, table, oldCol, &a), "Reading a column")
            CoreCall.must(cs_column_info_get(txn, table, newCol, &b), "Reading a column")
            if a.type != b.type || a.coll != b.coll || a.target != b.target {
                preconditionFailure("Cannot rename property '\(typeName).\(oldName)' to '\(newName)': their types differ")
            }
            CoreCall.must(cs_column_remove(txn, table, newCol), "Renaming a property")
        }
        CoreCall.must(cs_column_rename(txn, table, oldCol, p.columnName), "Renaming a property")
        newCore.rebind()
    }

    // MARK: Running a migration

    /// Migrates the file `txn` is writing from the schema `file` to `target`, running the
    /// configuration's block.
    static func run(_ target: [ObjectSchema], file: [SchemaSync.FileTable], config: Realm.Configuration,
                    db: OpaquePointer, txn: OpaquePointer, fromVersion: UInt64, url: URL?) throws {
        CoreLog.log(.info, Category.sdk.rawValue,
                    "Migrating \(url?.path ?? "an in-memory Realm") from schema version \(fromVersion) to \(config.schemaVersion)")
        // The old view reads the version the write began on, through its own transaction.
        var oldTxn: OpaquePointer?
        try CoreCall.check(cs_txn_begin(db, Int32(CS_TXN_READ), &oldTxn), "Reading the file before migrating", url: url)
        let oldCore = RealmCore(borrowing: db, txn: oldTxn!, schemas: file.map { oldObjectSchema($0, tables: file) },
                                config: config, ownsTransaction: true)

        // Primary keys are off while the block runs (it may rewrite them); set again after.
        for t in file where t.primary != CS_NONE {
            try CoreCall.check(cs_table_set_primary_key(txn, t.key, CS_NONE), "Clearing a primary key", url: url)
        }

        // A retyped property gets a new column; one only made optional or required keeps its
        // values (nulls become the default).
        var copies: [(table: UInt32, from: UInt32, to: String)] = []
        for s in target {
            guard let t = file.first(where: { $0.name == s.className }) else { continue }
            for p in s.storedProperties {
                guard let c = t.column(p.columnName) else { continue }
                let spec = SchemaSync.columnSpec(p)
                let nullable = c.info.flags & UInt32(CS_COL_NULLABLE) != 0
                let targetName = c.info.type == CS_TYPE_LINK ? file.first { $0.key == c.info.target }?.name : nil
                let sameType = c.info.type == spec.type && c.info.coll == spec.coll
                    && (spec.type != CS_TYPE_LINK || targetName == p.objectClassName)
                if sameType && nullable == spec.nullable { continue }
                if sameType { copies.append((t.key, c.key, p.columnName)) }
                try CoreCall.check(cs_column_remove(txn, t.key, c.key), "Replacing '\(s.className).\(p.name)'", url: url)
            }
        }

        try SchemaSync.createMissing(target, txn: txn, url: url, setPrimaryKeys: false)

        for job in copies {
            var to: UInt32 = 0
            try CoreCall.check(cs_column_find(txn, job.table, job.to, &to), "Finding \(job.to)")
            try copyColumn(from: oldTxn!, job.from, to: txn, to, table: job.table, url: url)
        }

        let dynamicTarget = target.map {
            ObjectSchema(className: $0.className, properties: $0.allProperties, objectClass: DynamicObject.self,
                         isEmbedded: $0.isEmbedded)
        }
        let newCore = RealmCore(borrowing: db, txn: txn, schemas: dynamicTarget, config: config, ownsTransaction: false)
        if let block = config.migrationBlock {
            var models: [String: ObjectBase.Type] = [:]
            for s in target { models[s.className] = s.objectClass }
            let migration = Migration(oldCore: oldCore, newCore: newCore, txn: txn, modelTypes: models)
            block(migration, fromVersion)
        }

        // Drop what the models no longer have (classes the models dropped are kept, as in
        // RealmSwift, unless the block deleted them).
        for table in SchemaSync.fileTables(txn) {
            guard let s = target.first(where: { $0.className == table.name }) else { continue }
            let keep = Set(s.storedProperties.map(\.columnName))
            for c in table.columns where !keep.contains(c.name) {
                try CoreCall.check(cs_column_remove(txn, table.key, c.key), "Removing '\(s.className).\(c.name)'", url: url)
            }
        }
        // Primary keys of dropped classes come back as they were.
        for t in file where t.primary != CS_NONE && !target.contains(where: { $0.className == t.name }) {
            var table: UInt32 = 0
            guard cs_table_find(txn, t.name, &table) == 0 else { continue }
            let rc = cs_table_set_primary_key(txn, table, t.primary)
            if rc != 0 && rc != Int32(CS_NOTFOUND) { try CoreCall.check(rc, "Restoring a primary key", url: url) }
        }
        for s in target {
            guard let pk = s.primaryKeyProperty else { continue }
            var t: UInt32 = 0, c: UInt32 = 0
            try CoreCall.check(cs_table_find(txn, s.className, &t), "Finding \(s.className)")
            try CoreCall.check(cs_column_find(txn, t, pk.columnName, &c), "Finding \(pk.name)")
            let rc = cs_table_set_primary_key(txn, t, c)
            if rc == Int32(CS_CONSTRAINT) {
                throw Realm.Error(.fail, "Primary key property '\(s.className).\(pk.name)' has duplicate values "
                                  + "after migration.", fileURL: url)
            }
            try CoreCall.check(rc, "Making '\(s.className).\(pk.name)' the primary key", url: url)
        }
        try SchemaSync.applyIndexes(target, txn: txn, url: url)
        oldCore.didMutate()
    }

    /// Copies every value of a column of the old snapshot into a column of the write
    /// transaction (nulls are skipped when the new column is required: they keep its default).
    private static func copyColumn(from oldTxn: OpaquePointer, _ from: UInt32, to txn: OpaquePointer, _ to: UInt32,
                                   table: UInt32, url: URL?) throws {
        var it = cs_iter()
        try CoreCall.check(cs_iter_init(&it, oldTxn, table), "Iterating a table")
        var ci = cs_column_info()
        try CoreCall.check(cs_column_info_get(txn, table, to, &ci), "Reading a column")
        if ci.coll != CS_COLL_NONE { return }
        let nullable = ci.flags & UInt32(CS_COL_NULLABLE) != 0
        var o = cs_obj()
        while cs_iter_next(&it, &o) == 0 {
            var v = cs_value()
            try CoreCall.check(cs_obj_get(&o, from, &v), "Reading a value")
            if v.type == CS_TYPE_NULL && !nullable { continue }
            var row = cs_obj()
            guard cs_obj_open(txn, table, o.key, &row) == 0 else { continue }
            try CoreCall.check(cs_obj_set(&row, to, &v), "Copying a value", url: url)
        }
    }

    /// A dynamic object schema for a table as the file has it.
    static func oldObjectSchema(_ t: SchemaSync.FileTable, tables: [SchemaSync.FileTable]) -> ObjectSchema {
        var props: [Property] = []
        for c in t.columns {
            let type: PropertyType
            switch c.info.type {
            case CS_TYPE_INT: type = .int
            case CS_TYPE_BOOL: type = .bool
            case CS_TYPE_FLOAT: type = .float
            case CS_TYPE_DOUBLE: type = .double
            case CS_TYPE_STRING: type = .string
            case CS_TYPE_BINARY: type = .data
            case CS_TYPE_TIMESTAMP: type = .date
            case CS_TYPE_OBJECTID: type = .objectId
            case CS_TYPE_DECIMAL: type = .decimal128
            case CS_TYPE_UUID: type = .UUID
            case CS_TYPE_MIXED: type = .any
            case CS_TYPE_LINK: type = .object
            default: continue
            }
            let coll: _PropertyShape.Collection
            switch c.info.coll {
            case CS_COLL_LIST: coll = .list
            case CS_COLL_SET: coll = .set
            case CS_COLL_MAP: coll = .map
            default: coll = .none
            }
            let nullable = c.info.flags & UInt32(CS_COL_NULLABLE) != 0
            let shape = _PropertyShape(type, optional: nullable && type != .any && !(type == .object && coll != .none),
                                       collection: coll)
            let target = type == .object ? tables.first { $0.key == c.info.target }?.name : nil
            props.append(Property(name: c.name, columnName: c.name, shape: shape,
                                  indexed: c.info.flags & UInt32(CS_COL_INDEXED) != 0, primary: c.key == t.primary,
                                  objectClassName: target, origin: nil, offset: 0, field: nil))
        }
        return ObjectSchema(className: t.name, properties: props, objectClass: DynamicObject.self,
                            isEmbedded: t.flags & UInt32(CS_TABLE_EMBEDDED) != 0)
    }
}
