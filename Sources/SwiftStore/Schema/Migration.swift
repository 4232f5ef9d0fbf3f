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
                guard SchemaTransaction.objectExists(txn, table: newInfo.table, key: key) else { continue }
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
        SchemaTransaction.deleteObject(txn, table: table, key: object.cobj.key)
        newCore.didMutate()
    }

    /// Deletes every object of the class named `typeName`, and the class itself if the new
    /// schema does not have it. Returns whether the class existed.
    @discardableResult
    public func deleteData(forType typeName: String) -> Bool {
        guard let table = FileSchema.table(txn, named: typeName) else { return false }
        CoreCall.must { try FileSchema.clearTable(txn, table, "Deleting the objects of \(typeName)") }
        if newCore.info(named: typeName) == nil {
            // Link columns of other classes would keep the table; they go first.
            for t in FileSchema.tables(txn) where t.key != table {
                for c in t.columns where c.target == table {
                    CoreCall.must { try FileSchema.removeColumn(txn, table: t.key, c.key, "Removing a link to \(typeName)") }
                }
            }
            CoreCall.must { try FileSchema.removeTable(txn, table, "Removing the class \(typeName)") }
        }
        newCore.rebind()
        return true
    }

    /// Moves the values of the old property `oldName` to the new schema's property `newName` of
    /// the class `typeName` (the two must have the same type). The old view keeps the old name.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) {
        guard let table = FileSchema.table(txn, named: typeName) else {
            preconditionFailure("Cannot rename properties of '\(typeName)': the class does not exist")
        }
        guard let newInfo = newCore.info(named: typeName), let p = newInfo.objectSchema[newName] else {
            preconditionFailure("Cannot rename property '\(typeName).\(oldName)' to '\(newName)': the new schema has no such property")
        }
        guard let oldCol = FileSchema.column(txn, table: table, named: oldName) else {
            preconditionFailure("Cannot rename property '\(typeName).\(oldName)': it does not exist")
        }
        if oldName == p.columnName { return }
        if let newCol = FileSchema.column(txn, table: table, named: p.columnName) {
            let a = CoreCall.must { try FileSchema.column(txn, table: table, key: oldCol, "Reading a column") }
            let b = CoreCall.must { try FileSchema.column(txn, table: table, key: newCol, "Reading a column") }
            if !a.sameType(as: b) {
                preconditionFailure("Cannot rename property '\(typeName).\(oldName)' to '\(newName)': their types differ")
            }
            CoreCall.must { try FileSchema.removeColumn(txn, table: table, newCol, "Renaming a property") }
        }
        CoreCall.must { try FileSchema.renameColumn(txn, table: table, oldCol, to: p.columnName) }
        newCore.rebind()
    }

    // MARK: Running a migration

    /// Migrates the file `txn` is writing from the schema `file` to `target`, running the
    /// configuration's block.
    static func run(_ target: [ObjectSchema], file: [FileTable], config: Realm.Configuration,
                    db: OpaquePointer, txn: OpaquePointer, fromVersion: UInt64, url: URL?) throws {
        // The old view reads the version the write began on, through its own transaction.
        let oldTxn = try SchemaTransaction.beginRead(db, "Reading the file before migrating", url: url)
        let oldCore = RealmCore(borrowing: db, txn: oldTxn, schemas: file.map { oldObjectSchema($0, tables: file) },
                                config: config, ownsTransaction: true)

        // Primary keys are off while the block runs (it may rewrite them); set again after.
        for t in file where t.primary != nil {
            try FileSchema.setPrimaryKey(txn, table: t.key, nil, "Clearing a primary key", url: url)
        }

        // A retyped property gets a new column; one only made optional or required keeps its
        // values (nulls become the default).
        var copies: [(table: UInt32, from: UInt32, to: String)] = []
        for s in target {
            guard let t = file.first(where: { $0.name == s.className }) else { continue }
            for p in s.storedProperties {
                guard let c = t.column(p.columnName) else { continue }
                let spec = SchemaSync.columnSpec(p)
                let nullable = c.isNullable
                let targetName = c.target.flatMap { target in file.first { $0.key == target }?.name }
                let sameType = c.type == spec.type && c.collection == spec.coll
                    && (spec.type != .object || targetName == p.objectClassName)
                if sameType && nullable == spec.nullable { continue }
                if sameType { copies.append((t.key, c.key, p.columnName)) }
                try FileSchema.removeColumn(txn, table: t.key, c.key, "Replacing '\(s.className).\(p.name)'", url: url)
            }
        }

        try SchemaSync.createMissing(target, txn: txn, url: url, setPrimaryKeys: false)

        for job in copies {
            let to = try FileSchema.mustFindColumn(txn, table: job.table, named: job.to, "Finding \(job.to)")
            try FileSchema.copyColumn(from: oldTxn, job.from, to: txn, to, table: job.table, url: url)
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
        for table in FileSchema.tables(txn) {
            guard let s = target.first(where: { $0.className == table.name }) else { continue }
            let keep = Set(s.storedProperties.map(\.columnName))
            for c in table.columns where !keep.contains(c.name) {
                try FileSchema.removeColumn(txn, table: table.key, c.key, "Removing '\(s.className).\(c.name)'", url: url)
            }
        }
        // Primary keys of dropped classes come back as they were.
        for t in file where t.primary != nil && !target.contains(where: { $0.className == t.name }) {
            guard let table = FileSchema.table(txn, named: t.name) else { continue }
            try FileSchema.setPrimaryKey(txn, table: table, t.primary, "Restoring a primary key", url: url,
                                         allowing: [.noSuchColumn])
        }
        for s in target {
            guard let pk = s.primaryKeyProperty else { continue }
            let t = try FileSchema.mustFindTable(txn, named: s.className, "Finding \(s.className)")
            let c = try FileSchema.mustFindColumn(txn, table: t, named: pk.columnName, "Finding \(pk.name)")
            if try FileSchema.setPrimaryKey(txn, table: t, c, "Making '\(s.className).\(pk.name)' the primary key",
                                            url: url, allowing: [.duplicates]) == .duplicates {
                throw Realm.Error(.fail, "Primary key property '\(s.className).\(pk.name)' has duplicate values "
                                  + "after migration.", fileURL: url)
            }
        }
        try SchemaSync.applyIndexes(target, txn: txn, url: url)
        oldCore.didMutate()
    }

    /// A dynamic object schema for a table as the file has it.
    static func oldObjectSchema(_ t: FileTable, tables: [FileTable]) -> ObjectSchema {
        var props: [Property] = []
        for c in t.columns {
            guard let type = c.type else { continue }
            let coll = c.collection
            let nullable = c.isNullable
            let shape = _PropertyShape(type, optional: nullable && type != .any && !(type == .object && coll != .none),
                                       collection: coll)
            let target = c.target.flatMap { target in tables.first { $0.key == target }?.name }
            props.append(Property(name: c.name, columnName: c.name, shape: shape,
                                  indexed: c.isIndexed, primary: c.key == t.primary,
                                  objectClassName: target, origin: nil, offset: 0, field: nil))
        }
        return ObjectSchema(className: t.name, properties: props, objectClass: DynamicObject.self,
                            isEmbedded: t.isEmbedded)
    }
}
