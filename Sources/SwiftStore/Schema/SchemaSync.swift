import CStore
import Foundation

/// Brings a file's schema in line with the models when a Realm opens.
///
/// - A new file (or new classes) get their tables and columns: adding classes needs no
///   schema-version bump.
/// - Any other difference (a property added, removed, retyped, made optional or required, a
///   primary key changed) needs a higher `schemaVersion`: the file is then migrated in one write
///   transaction (`Migration`), else the open fails with `Realm.Error.schemaMismatch` listing
///   each difference. Index changes are applied without a migration.
/// - A read-only open never writes: any difference but new classes is `schemaMismatch`.
enum SchemaSync {
    /// A column as the file has it.
    struct FileColumn {
        let key: UInt32
        let name: String
        let info: cs_column_info
    }

    /// A table as the file has it.
    struct FileTable {
        let key: UInt32
        let name: String
        let flags: UInt32
        let primary: UInt32
        let columns: [FileColumn]

        func column(_ name: String) -> FileColumn? { columns.first { $0.name == name } }
    }

    /// Every table and visible column of the version `txn` reads.
    static func fileTables(_ txn: OpaquePointer) -> [FileTable] {
        var tables: [FileTable] = []
        for t in 0..<cs_table_slots(txn) {
            var ti = cs_table_info()
            guard cs_table_info_get(txn, t, &ti) == 0 else { continue }
            var cols: [FileColumn] = []
            for c in 0..<ti.col_slots {
                var ci = cs_column_info()
                guard cs_column_info_get(txn, t, c, &ci) == 0 else { continue }
                if ci.flags & UInt32(CS_COL_HIDDEN) != 0 { continue }
                cols.append(FileColumn(key: c, name: String(cString: ci.name), info: ci))
            }
            tables.append(FileTable(key: t, name: String(cString: ti.name), flags: ti.flags,
                                    primary: ti.primary, columns: cols))
        }
        return tables
    }

    /// The core type, collection kind and flags a property is stored with.
    static func columnSpec(_ p: Property) -> (type: cs_type, coll: cs_coll_kind, nullable: Bool) {
        let type: cs_type
        switch p.type {
        case .int: type = CS_TYPE_INT
        case .bool: type = CS_TYPE_BOOL
        case .float: type = CS_TYPE_FLOAT
        case .double: type = CS_TYPE_DOUBLE
        case .string: type = CS_TYPE_STRING
        case .data: type = CS_TYPE_BINARY
        case .date: type = CS_TYPE_TIMESTAMP
        case .objectId: type = CS_TYPE_OBJECTID
        case .decimal128: type = CS_TYPE_DECIMAL
        case .UUID: type = CS_TYPE_UUID
        case .any: type = CS_TYPE_MIXED
        case .object, .linkingObjects: type = CS_TYPE_LINK
        }
        let coll: cs_coll_kind = p.isArray ? CS_COLL_LIST : p.isSet ? CS_COLL_SET : p.isMap ? CS_COLL_MAP : CS_COLL_NONE
        var nullable = p.isOptional
        if p.type == .object && !p.isCollection { nullable = true }
        if p.type == .object && (p.isArray || p.isSet) { nullable = false }
        if p.type == .object && p.isMap { nullable = true }
        if p.type == .any { nullable = true }
        return (type, coll, nullable)
    }

    /// A column type as realm-core names it in messages: "int", "string?", "array<int>",
    /// "set<string>", "dictionary<string, int>", "<Dog>" for a link, "array<Dog>".
    static func typeName(_ t: cs_type, _ coll: cs_coll_kind, _ nullable: Bool, target: String?) -> String {
        var s: String
        switch t {
        case CS_TYPE_INT: s = "int"
        case CS_TYPE_BOOL: s = "bool"
        case CS_TYPE_FLOAT: s = "float"
        case CS_TYPE_DOUBLE: s = "double"
        case CS_TYPE_STRING: s = "string"
        case CS_TYPE_BINARY: s = "data"
        case CS_TYPE_TIMESTAMP: s = "date"
        case CS_TYPE_OBJECTID: s = "object id"
        case CS_TYPE_DECIMAL: s = "decimal128"
        case CS_TYPE_UUID: s = "uuid"
        case CS_TYPE_MIXED: s = "mixed"
        case CS_TYPE_LINK: s = target ?? "?"
        default: s = "?"
        }
        switch coll {
        case CS_COLL_LIST: return "array<\(s)>"
        case CS_COLL_SET: return "set<\(s)>"
        case CS_COLL_MAP: return "dictionary<string, \(s)>"
        default: return t == CS_TYPE_LINK ? "<\(s)>" : s
        }
    }

    /// The differences that need a migration, as RealmSwift words them.
    static func differences(_ target: [ObjectSchema], _ file: [FileTable]) -> [String] {
        var out: [String] = []
        let tablesByKey = Dictionary(file.map { ($0.key, $0.name) }, uniquingKeysWith: { a, _ in a })
        for s in target {
            guard let t = file.first(where: { $0.name == s.className }) else { continue }
            let stored = s.storedProperties
            for p in stored {
                guard let c = t.column(p.columnName) else {
                    out.append("Property '\(s.className).\(p.name)' has been added.")
                    continue
                }
                let spec = columnSpec(p)
                let fileNullable = c.info.flags & UInt32(CS_COL_NULLABLE) != 0
                let fileTarget = c.info.type == CS_TYPE_LINK ? tablesByKey[c.info.target] : nil
                if c.info.type != spec.type || c.info.coll != spec.coll
                    || (spec.type == CS_TYPE_LINK && fileTarget != p.objectClassName) {
                    out.append("Property '\(s.className).\(p.name)' has been changed from "
                               + "'\(typeName(c.info.type, c.info.coll, fileNullable, target: fileTarget))' to "
                               + "'\(typeName(spec.type, spec.coll, spec.nullable, target: p.objectClassName))'.")
                } else if fileNullable != spec.nullable {
                    out.append("Property '\(s.className).\(p.name)' has been made "
                               + "\(spec.nullable ? "optional" : "required").")
                }
            }
            for c in t.columns where !stored.contains(where: { $0.columnName == c.name }) {
                out.append("Property '\(s.className).\(c.name)' has been removed.")
            }
            let filePK = t.columns.first { $0.key == t.primary }?.name
            let modelPK = s.primaryKeyProperty?.columnName
            if filePK != modelPK {
                if filePK == nil {
                    out.append("Primary Key for class '\(s.className)' has been added.")
                } else if modelPK == nil {
                    out.append("Primary Key for class '\(s.className)' has been removed.")
                } else {
                    out.append("Primary Key for class '\(s.className)' has changed from '\(filePK!)' to '\(modelPK!)'.")
                }
            }
            let fileEmbedded = t.flags & UInt32(CS_TABLE_EMBEDDED) != 0
            if fileEmbedded != s.isEmbedded {
                out.append("Class '\(s.className)' has been changed from \(fileEmbedded ? "embedded" : "top-level") "
                           + "to \(s.isEmbedded ? "embedded" : "top-level").")
            }
        }
        return out
    }

    /// Applies the models to the file: creates what is missing, migrates when asked, or throws.
    static func apply(_ target: [ObjectSchema], config: Realm.Configuration, db: OpaquePointer,
                      txn: OpaquePointer, url: URL?) throws {
        let file = fileTables(txn)
        let fileVersion = cs_schema_version(txn)
        let isNew = file.isEmpty && fileVersion == 0
        let diffs = differences(target, file)
        let missingTables = target.filter { s in !file.contains { $0.name == s.className } }
        let missingIndexes = indexChanges(target, file)

        if !isNew && config.schemaVersion < fileVersion {
            throw Realm.Error(.fail, "Provided schema version \(config.schemaVersion) is less than "
                              + "last set version \(fileVersion).", fileURL: url)
        }
        let needsMigration = !isNew && config.schemaVersion > fileVersion
        if !diffs.isEmpty && !needsMigration {
            throw Realm.Error(.schemaMismatch, "Migration is required due to the following errors:\n- "
                              + diffs.joined(separator: "\n- "), fileURL: url)
        }
        if config.readOnly {
            if !missingTables.isEmpty || needsMigration {
                throw Realm.Error(.schemaMismatch, "The read-only file's schema does not contain every model "
                                  + "class (missing: \(missingTables.map(\.className).joined(separator: ", "))) "
                                  + "or needs a migration", fileURL: url)
            }
            return
        }
        if !isNew && !needsMigration && missingTables.isEmpty && missingIndexes.isEmpty { return }

        try CoreCall.check(cs_txn_promote(txn), "Beginning the schema update", url: url)
        do {
            if needsMigration {
                try Migration.run(target, file: file, config: config, db: db, txn: txn, fromVersion: fileVersion, url: url)
            } else {
                try createMissing(target, txn: txn, url: url)
                try applyIndexes(target, txn: txn, url: url)
            }
            if isNew || needsMigration {
                try CoreCall.check(cs_schema_version_set(txn, config.schemaVersion), "Setting the schema version")
            }
            try CoreCall.check(cs_txn_commit(txn), "Committing the schema", url: url)
        } catch {
            if cs_txn_is_writing(txn) { cs_txn_rollback(txn) }
            throw error
        }
    }

    /// Indexed flags that differ between the models and the file.
    static func indexChanges(_ target: [ObjectSchema], _ file: [FileTable]) -> [String] {
        var out: [String] = []
        for s in target {
            guard let t = file.first(where: { $0.name == s.className }) else { continue }
            for p in s.storedProperties where !p.isPrimary {
                guard let c = t.column(p.columnName) else { continue }
                let fileIndexed = c.info.flags & UInt32(CS_COL_INDEXED) != 0
                if fileIndexed != p.isIndexed { out.append("\(s.className).\(p.name)") }
            }
        }
        return out
    }

    /// Creates missing tables, then missing columns (links need their target's table).
    static func createMissing(_ target: [ObjectSchema], txn: OpaquePointer, url: URL?,
                              setPrimaryKeys: Bool = true) throws {
        for s in target {
            var t: UInt32 = 0
            if cs_table_find(txn, s.className, &t) == 0 { continue }
            try CoreCall.check(cs_table_add(txn, s.className, s.isEmbedded ? UInt32(CS_TABLE_EMBEDDED) : 0, &t),
                               "Adding table \(s.className)", url: url)
        }
        for s in target {
            var t: UInt32 = 0
            try CoreCall.check(cs_table_find(txn, s.className, &t), "Finding table \(s.className)")
            for p in s.storedProperties {
                var c: UInt32 = 0
                if cs_column_find(txn, t, p.columnName, &c) == 0 { continue }
                try addColumn(p, table: t, txn: txn, url: url)
            }
            if setPrimaryKeys, let pk = s.primaryKeyProperty {
                var ti = cs_table_info()
                try CoreCall.check(cs_table_info_get(txn, t, &ti), "Reading table \(s.className)")
                var c: UInt32 = 0
                try CoreCall.check(cs_column_find(txn, t, pk.columnName, &c), "Finding \(pk.name)")
                if ti.primary != c {
                    try CoreCall.check(cs_table_set_primary_key(txn, t, c),
                                       "Making '\(s.className).\(pk.name)' the primary key", url: url)
                }
            }
        }
    }

    /// Adds the column for `p` to table `t`.
    @discardableResult
    static func addColumn(_ p: Property, table t: UInt32, txn: OpaquePointer, url: URL?,
                          name: String? = nil) throws -> UInt32 {
        let spec = columnSpec(p)
        var flags: UInt32 = spec.nullable ? UInt32(CS_COL_NULLABLE) : 0
        if p.isIndexed && !p.isPrimary { flags |= UInt32(CS_COL_INDEXED) }
        var target: UInt32 = CS_NONE
        if p.type == .object, let tn = p.objectClassName {
            try CoreCall.check(cs_table_find(txn, tn, &target), "Finding table \(tn)")
        }
        var c: UInt32 = 0
        try CoreCall.check(cs_column_add(txn, t, name ?? p.columnName, spec.type, spec.coll, flags, target, &c),
                           "Adding property '\(p.name)'", url: url)
        return c
    }

    /// Adds or drops indexes to match the models.
    static func applyIndexes(_ target: [ObjectSchema], txn: OpaquePointer, url: URL?) throws {
        for s in target {
            var t: UInt32 = 0
            guard cs_table_find(txn, s.className, &t) == 0 else { continue }
            for p in s.storedProperties where !p.isPrimary {
                var c: UInt32 = 0
                guard cs_column_find(txn, t, p.columnName, &c) == 0 else { continue }
                var ci = cs_column_info()
                try CoreCall.check(cs_column_info_get(txn, t, c, &ci), "Reading column \(p.columnName)")
                let indexed = ci.flags & UInt32(CS_COL_INDEXED) != 0
                if indexed != p.isIndexed {
                    try CoreCall.check(cs_column_set_indexed(txn, t, c, p.isIndexed),
                                       "Indexing '\(s.className).\(p.name)'", url: url)
                }
            }
        }
    }
}
