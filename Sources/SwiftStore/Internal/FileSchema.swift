import CStore
import Foundation

/// The schema as the file has it, and the core calls that change it: what `SchemaSync` and
/// `Migration` read and write, in Swift terms (property types, collection kinds, flags as
/// booleans), so that those two never see the core's types.

/// The one table between the core's value types and `PropertyType` (links are `.object`; the
/// core's null, list and dictionary types are values a Mixed holds, never a column's type).
enum CoreType {
    private static let pairs: [(PropertyType, cs_type)] = [
        (.int, CS_TYPE_INT), (.bool, CS_TYPE_BOOL), (.float, CS_TYPE_FLOAT), (.double, CS_TYPE_DOUBLE),
        (.string, CS_TYPE_STRING), (.data, CS_TYPE_BINARY), (.date, CS_TYPE_TIMESTAMP),
        (.objectId, CS_TYPE_OBJECTID), (.decimal128, CS_TYPE_DECIMAL), (.UUID, CS_TYPE_UUID),
        (.any, CS_TYPE_MIXED), (.object, CS_TYPE_LINK),
    ]

    /// The core type a column of `type` holds (`.linkingObjects` is a link too).
    static func core(_ type: PropertyType) -> cs_type {
        let t = type == .linkingObjects ? .object : type
        return pairs.first { $0.0 == t }!.1
    }

    /// The property type of a core column type, or nil for a type no column has.
    static func property(_ type: cs_type) -> PropertyType? {
        pairs.first { $0.1 == type }?.0
    }

    /// The core's collection kind for a property's collection.
    static func core(_ collection: _PropertyShape.Collection) -> cs_coll_kind {
        switch collection {
        case .list: return CS_COLL_LIST
        case .set: return CS_COLL_SET
        case .map: return CS_COLL_MAP
        case .none, .linkingObjects: return CS_COLL_NONE
        }
    }

    /// A property's collection kind for the core's.
    static func collection(_ kind: cs_coll_kind) -> _PropertyShape.Collection {
        switch kind {
        case CS_COLL_LIST: return .list
        case CS_COLL_SET: return .set
        case CS_COLL_MAP: return .map
        default: return .none
        }
    }
}

/// A column as the file has it.
struct FileColumn {
    let key: UInt32
    let name: String
    /// The type of its values (links: `.object`); nil for a type the Swift layer does not know.
    let type: PropertyType?
    let collection: _PropertyShape.Collection
    let isNullable: Bool
    let isIndexed: Bool
    /// For a link column: the key of the table it links to.
    let target: UInt32?

    init(key: UInt32, _ ci: cs_column_info) {
        self.key = key
        name = String(cString: ci.name)
        type = CoreType.property(ci.type)
        collection = CoreType.collection(ci.coll)
        isNullable = ci.flags & UInt32(CS_COL_NULLABLE) != 0
        isIndexed = ci.flags & UInt32(CS_COL_INDEXED) != 0
        target = ci.type == CS_TYPE_LINK ? ci.target : nil
    }

    /// Whether the two columns hold the same type in the same kind of collection (links: to
    /// the same table).
    func sameType(as other: FileColumn) -> Bool {
        type == other.type && collection == other.collection && target == other.target
    }
}

/// A table as the file has it.
struct FileTable {
    let key: UInt32
    let name: String
    let isEmbedded: Bool
    /// The primary key's column, if the table has one.
    let primary: UInt32?
    let columns: [FileColumn]

    func column(_ name: String) -> FileColumn? { columns.first { $0.name == name } }
}

/// Reading and changing the schema of the version a transaction reads or writes.
enum FileSchema {
    /// Every table and visible column of the version `txn` reads.
    static func tables(_ txn: OpaquePointer) -> [FileTable] {
        var tables: [FileTable] = []
        for t in 0..<cs_table_slots(txn) {
            var ti = cs_table_info()
            guard cs_table_info_get(txn, t, &ti) == 0 else { continue }
            var cols: [FileColumn] = []
            for c in 0..<ti.col_slots {
                var ci = cs_column_info()
                guard cs_column_info_get(txn, t, c, &ci) == 0 else { continue }
                if ci.flags & UInt32(CS_COL_HIDDEN) != 0 { continue }
                cols.append(FileColumn(key: c, ci))
            }
            tables.append(FileTable(key: t, name: String(cString: ti.name),
                                    isEmbedded: ti.flags & UInt32(CS_TABLE_EMBEDDED) != 0,
                                    primary: ti.primary == CS_NONE ? nil : ti.primary, columns: cols))
        }
        return tables
    }

    /// The schema version stored in the version `txn` reads.
    static func version(_ txn: OpaquePointer) -> UInt64 { cs_schema_version(txn) }

    /// The schema version of the file at `url`, read through a read-only open of its own
    /// (`schemaVersionAtURL`).
    static func version(ofFileAt url: URL) throws -> UInt64 {
        var opts = cs_options()
        opts.flags = UInt32(CS_OPEN_READONLY)
        var db: OpaquePointer?
        let rc = cs_db_open(url.path, &opts, &db)
        if rc == Int32(CS_NOTFOUND) {
            throw Realm.Error(.invalidDatabase, "Realm at path '\(url.path)' has not been initialized.", fileURL: url)
        }
        try CoreCall.check(rc, "Opening \(url.path)", url: url)
        defer { cs_db_close(db) }
        var txn: OpaquePointer?
        try CoreCall.check(cs_txn_begin(db, Int32(CS_TXN_READ), &txn), "Reading \(url.path)", url: url)
        defer { cs_txn_end(txn) }
        return cs_schema_version(txn)
    }

    static func setVersion(_ txn: OpaquePointer, _ version: UInt64) throws {
        try CoreCall.check(cs_schema_version_set(txn, version), "Setting the schema version")
    }

    /// The key of the table named `name`, or nil.
    static func table(_ txn: OpaquePointer, named name: String) -> UInt32? {
        var t: UInt32 = 0
        return cs_table_find(txn, name, &t) == 0 ? t : nil
    }

    /// The key of the table named `name`; throws when there is none.
    static func mustFindTable(_ txn: OpaquePointer, named name: String, _ context: String) throws -> UInt32 {
        var t: UInt32 = 0
        try CoreCall.check(cs_table_find(txn, name, &t), context)
        return t
    }

    /// The key of the column named `name` of table `table`, or nil.
    static func column(_ txn: OpaquePointer, table: UInt32, named name: String) -> UInt32? {
        var c: UInt32 = 0
        return cs_column_find(txn, table, name, &c) == 0 ? c : nil
    }

    /// The key of the column named `name` of table `table`; throws when there is none.
    static func mustFindColumn(_ txn: OpaquePointer, table: UInt32, named name: String,
                               _ context: String) throws -> UInt32 {
        var c: UInt32 = 0
        try CoreCall.check(cs_column_find(txn, table, name, &c), context)
        return c
    }

    /// The column `column` of table `table` as the file has it.
    static func column(_ txn: OpaquePointer, table: UInt32, key column: UInt32, _ context: String) throws -> FileColumn {
        var ci = cs_column_info()
        try CoreCall.check(cs_column_info_get(txn, table, column, &ci), context)
        return FileColumn(key: column, ci)
    }

    /// The primary key column of table `table`, if any.
    static func primaryKey(_ txn: OpaquePointer, table: UInt32, _ context: String) throws -> UInt32? {
        var ti = cs_table_info()
        try CoreCall.check(cs_table_info_get(txn, table, &ti), context)
        return ti.primary == CS_NONE ? nil : ti.primary
    }

    static func addTable(_ txn: OpaquePointer, named name: String, embedded: Bool, url: URL?) throws -> UInt32 {
        var t: UInt32 = 0
        try CoreCall.check(cs_table_add(txn, name, embedded ? UInt32(CS_TABLE_EMBEDDED) : 0, &t),
                           "Adding table \(name)", url: url)
        return t
    }

    /// Adds a column of `type` in `collection` (links: to table `target`).
    static func addColumn(_ txn: OpaquePointer, table: UInt32, named name: String, type: PropertyType,
                          collection: _PropertyShape.Collection, nullable: Bool, indexed: Bool, target: UInt32?,
                          _ context: @autoclosure () -> String, url: URL?) throws -> UInt32 {
        var flags: UInt32 = nullable ? UInt32(CS_COL_NULLABLE) : 0
        if indexed { flags |= UInt32(CS_COL_INDEXED) }
        var c: UInt32 = 0
        try CoreCall.check(cs_column_add(txn, table, name, CoreType.core(type), CoreType.core(collection), flags,
                                         target ?? CS_NONE, &c), context(), url: url)
        return c
    }

    static func removeColumn(_ txn: OpaquePointer, table: UInt32, _ column: UInt32,
                             _ context: @autoclosure () -> String, url: URL? = nil) throws {
        try CoreCall.check(cs_column_remove(txn, table, column), context(), url: url)
    }

    static func renameColumn(_ txn: OpaquePointer, table: UInt32, _ column: UInt32, to name: String) throws {
        try CoreCall.check(cs_column_rename(txn, table, column, name), "Renaming a property")
    }

    static func setIndexed(_ txn: OpaquePointer, table: UInt32, _ column: UInt32, _ indexed: Bool,
                           _ context: @autoclosure () -> String, url: URL?) throws {
        try CoreCall.check(cs_column_set_indexed(txn, table, column, indexed), context(), url: url)
    }

    /// Deletes every object of table `table`.
    static func clearTable(_ txn: OpaquePointer, _ table: UInt32, _ context: @autoclosure () -> String) throws {
        try CoreCall.check(cs_table_clear(txn, table), context())
    }

    static func removeTable(_ txn: OpaquePointer, _ table: UInt32, _ context: @autoclosure () -> String) throws {
        try CoreCall.check(cs_table_remove(txn, table), context())
    }

    /// What setting a primary key found, when the caller allows it instead of an error.
    enum PrimaryKeyOutcome { case done, noSuchColumn, duplicates }

    /// Makes `column` (nil: none) the primary key of table `table`. A missing column or
    /// duplicate values are returned when `allowing` lists them, else thrown as any failure.
    @discardableResult
    static func setPrimaryKey(_ txn: OpaquePointer, table: UInt32, _ column: UInt32?,
                              _ context: @autoclosure () -> String, url: URL?,
                              allowing: Set<PrimaryKeyOutcome> = []) throws -> PrimaryKeyOutcome {
        let rc = cs_table_set_primary_key(txn, table, column ?? CS_NONE)
        if rc == Int32(CS_NOTFOUND) && allowing.contains(.noSuchColumn) { return .noSuchColumn }
        if rc == Int32(CS_CONSTRAINT) && allowing.contains(.duplicates) { return .duplicates }
        try CoreCall.check(rc, context(), url: url)
        return .done
    }

    /// Copies every value of column `from` of table `table` in the snapshot `oldTxn` reads into
    /// column `to` of the same table in the write transaction `txn`, for the objects both have
    /// (nulls are skipped when the new column is required: they keep its default). Columns of
    /// collections are not copied.
    static func copyColumn(from oldTxn: OpaquePointer, _ from: UInt32, to txn: OpaquePointer, _ to: UInt32,
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
}

/// The transaction a schema update or migration runs in.
enum SchemaTransaction {
    /// Promotes the Realm's read transaction to the write the update runs in.
    static func begin(_ txn: OpaquePointer, url: URL?) throws {
        try CoreCall.check(cs_txn_promote(txn), "Beginning the schema update", url: url)
    }

    static func commit(_ txn: OpaquePointer, url: URL?) throws {
        try CoreCall.check(cs_txn_commit(txn), "Committing the schema", url: url)
    }

    /// Rolls back the update if it is still writing.
    static func rollback(_ txn: OpaquePointer) {
        if cs_txn_is_writing(txn) { cs_txn_rollback(txn) }
    }

    /// A read transaction of its own on the newest version of `db` (a migration's old view).
    static func beginRead(_ db: OpaquePointer, _ context: String, url: URL?) throws -> OpaquePointer {
        var txn: OpaquePointer?
        try CoreCall.check(cs_txn_begin(db, Int32(CS_TXN_READ), &txn), context, url: url)
        return txn!
    }

    /// Whether the object `key` of table `table` exists in the version `txn` writes.
    static func objectExists(_ txn: OpaquePointer, table: UInt32, key: Int64) -> Bool {
        var probe = cs_obj()
        return cs_obj_open(txn, table, key, &probe) == 0
    }

    /// Deletes the object `key` of table `table` if it exists.
    static func deleteObject(_ txn: OpaquePointer, table: UInt32, key: Int64) {
        var row = cs_obj()
        guard cs_obj_open(txn, table, key, &row) == 0 else { return }
        CoreCall.must(cs_obj_delete(&row), "Deleting an object")
    }
}
