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
    /// The type (links: `.object`), collection kind and nullability a property is stored with.
    static func columnSpec(_ p: Property) -> (type: PropertyType, coll: _PropertyShape.Collection, nullable: Bool) {
        let type: PropertyType = p.type == .linkingObjects ? .object : p.type
        let coll: _PropertyShape.Collection = p.isArray ? .list : p.isSet ? .set : p.isMap ? .map : .none
        var nullable = p.isOptional
        if p.type == .object && !p.isCollection { nullable = true }
        if p.type == .object && (p.isArray || p.isSet) { nullable = false }
        if p.type == .object && p.isMap { nullable = true }
        if p.type == .any { nullable = true }
        return (type, coll, nullable)
    }

    /// A column type as realm-core names it in messages: "int", "string?", "array<int>",
    /// "set<string>", "dictionary<string, int>", "<Dog>" for a link, "array<Dog>".
    static func typeName(_ t: PropertyType?, _ coll: _PropertyShape.Collection, _ nullable: Bool,
                         target: String?) -> String {
        let s = t == .object ? target ?? "?" : t?.description ?? "?"
        switch coll {
        case .list: return "array<\(s)>"
        case .set: return "set<\(s)>"
        case .map: return "dictionary<string, \(s)>"
        default: return t == .object ? "<\(s)>" : s
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
                let fileNullable = c.isNullable
                let fileTarget = c.target.flatMap { tablesByKey[$0] }
                if c.type != spec.type || c.collection != spec.coll
                    || (spec.type == .object && fileTarget != p.objectClassName) {
                    out.append("Property '\(s.className).\(p.name)' has been changed from "
                               + "'\(typeName(c.type, c.collection, fileNullable, target: fileTarget))' to "
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
            let fileEmbedded = t.isEmbedded
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
        let file = FileSchema.tables(txn)
        let fileVersion = FileSchema.version(txn)
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

        try SchemaTransaction.begin(txn, url: url)
        do {
            if needsMigration {
                try Migration.run(target, file: file, config: config, db: db, txn: txn, fromVersion: fileVersion, url: url)
            } else {
                try createMissing(target, txn: txn, url: url)
                try applyIndexes(target, txn: txn, url: url)
            }
            if isNew || needsMigration {
                try FileSchema.setVersion(txn, config.schemaVersion)
            }
            try SchemaTransaction.commit(txn, url: url)
        } catch {
            SchemaTransaction.rollback(txn)
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
                let fileIndexed = c.isIndexed
                if fileIndexed != p.isIndexed { out.append("\(s.className).\(p.name)") }
            }
        }
        return out
    }

    /// Creates missing tables, then missing columns (links need their target's table).
    static func createMissing(_ target: [ObjectSchema], txn: OpaquePointer, url: URL?,
                              setPrimaryKeys: Bool = true) throws {
        for s in target {
            if FileSchema.table(txn, named: s.className) != nil { continue }
            _ = try FileSchema.addTable(txn, named: s.className, embedded: s.isEmbedded, url: url)
        }
        for s in target {
            let t = try FileSchema.mustFindTable(txn, named: s.className, "Finding table \(s.className)")
            for p in s.storedProperties {
                if FileSchema.column(txn, table: t, named: p.columnName) != nil { continue }
                try addColumn(p, table: t, txn: txn, url: url)
            }
            if setPrimaryKeys, let pk = s.primaryKeyProperty {
                let primary = try FileSchema.primaryKey(txn, table: t, "Reading table \(s.className)")
                let c = try FileSchema.mustFindColumn(txn, table: t, named: pk.columnName, "Finding \(pk.name)")
                if primary != c {
                    try FileSchema.setPrimaryKey(txn, table: t, c,
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
        var target: UInt32?
        if p.type == .object, let tn = p.objectClassName {
            target = try FileSchema.mustFindTable(txn, named: tn, "Finding table \(tn)")
        }
        return try FileSchema.addColumn(txn, table: t, named: name ?? p.columnName, type: spec.type,
                                        collection: spec.coll, nullable: spec.nullable,
                                        indexed: p.isIndexed && !p.isPrimary, target: target,
                                        "Adding property '\(p.name)'", url: url)
    }

    /// Adds or drops indexes to match the models.
    static func applyIndexes(_ target: [ObjectSchema], txn: OpaquePointer, url: URL?) throws {
        for s in target {
            guard let t = FileSchema.table(txn, named: s.className) else { continue }
            for p in s.storedProperties where !p.isPrimary {
                guard let c = FileSchema.column(txn, table: t, named: p.columnName) else { continue }
                let indexed = try FileSchema.column(txn, table: t, key: c, "Reading column \(p.columnName)").isIndexed
                if indexed != p.isIndexed {
                    try FileSchema.setIndexed(txn, table: t, c, p.isIndexed,
                                              "Indexing '\(s.className).\(p.name)'", url: url)
                }
            }
        }
    }
}
