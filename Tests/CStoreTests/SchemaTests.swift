// The schema in the file (docs/FORMAT.md §5): tables and columns added, removed, renamed and found
// by name, O(1) column adds that read defaults, backlink columns, and the schema version.

import CStore
import Foundation
import Testing

private func tableName(_ txn: OpaquePointer, _ t: UInt32) -> String? {
    var info = cs_table_info()
    guard cs_table_info_get(txn, t, &info) == Int32(CS_OK), let p = info.name else { return nil }
    return String(cString: p)
}

private func columnInfo(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32) throws -> (String, cs_column_info) {
    var info = cs_column_info()
    try must(cs_column_info_get(txn, t, c, &info), "cs_column_info_get(\(t), \(c))")
    return (info.name.map { String(cString: $0) } ?? "", info)
}

@Suite struct SchemaTests {
    @Test func addColumnToPopulatedTableReadsDefaults() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                let v = try addColumn(txn, t, "v", CS_TYPE_INT)
                for i in 0..<1000 {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, v, Int64(i)))
                    keys.append(o.key)
                }
            }
            let specs: [(String, cs_type, Int, Val)] = [
                ("i", CS_TYPE_INT, 0, .int(0)), ("b", CS_TYPE_BOOL, 0, .bool(false)),
                ("s", CS_TYPE_STRING, 0, .str("")), ("bin", CS_TYPE_BINARY, 0, .binary([])),
                ("d", CS_TYPE_DOUBLE, 0, .double(0)), ("f", CS_TYPE_FLOAT, 0, .float(0)),
                ("ts", CS_TYPE_TIMESTAMP, 0, .timestamp(0, 0)),
                ("ni", CS_TYPE_INT, CS_COL_NULLABLE, .null), ("ns", CS_TYPE_STRING, CS_COL_NULLABLE, .null),
                ("nb", CS_TYPE_BOOL, CS_COL_NULLABLE, .null), ("nu", CS_TYPE_UUID, CS_COL_NULLABLE, .null),
                ("m", CS_TYPE_MIXED, CS_COL_NULLABLE, .null),
            ]
            var cols: [UInt32] = []
            try db.write { txn throws in
                for (name, type, flags, _) in specs {
                    cols.append(try addColumn(txn, t, name, type, flags: flags))
                }
            }
            func checkDefaults(_ phase: String) throws {
                try db.read { txn throws in
                    for k in keys where k % 97 == 0 || k == keys.last {
                        var o = try openObj(txn, t, k)
                        for (j, spec) in specs.enumerated() {
                            #expect(getVal(&o, cols[j]) == spec.3, "\(phase): \(spec.0) of \(k)")
                        }
                    }
                    // Old objects still read their old column.
                    var o = try openObj(txn, t, keys[500])
                    #expect(try getInt(&o, try findColumn(txn, t, "v")) == 500)
                }
            }
            try checkDefaults("after add")
            // Writing a new column on one object leaves the others at the default.
            try db.write { txn throws in
                var o = try openObj(txn, t, keys[10])
                check(setVal(&o, cols[2], .str("set")))
                check(setVal(&o, cols[8], .str("also")))
            }
            try db.read { txn throws in
                var o = try openObj(txn, t, keys[10])
                #expect(getVal(&o, cols[2]) == .str("set"))
                #expect(getVal(&o, cols[8]) == .str("also"))
                var p = try openObj(txn, t, keys[11])
                #expect(getVal(&p, cols[2]) == .str(""))
                #expect(getVal(&p, cols[8]) == .null)
            }
            try db.reopen()
            try checkDefaults("after reopen")
            db.verify()
        }
    }

    @Test func removeColumnFreesItsData() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var big: UInt32 = 0
            var keep: UInt32 = 0
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                keep = try addColumn(txn, t, "keep", CS_TYPE_INT)
                big = try addColumn(txn, t, "big", CS_TYPE_STRING)
                var rng = SeededRNG(seed: 5)
                for i in 0..<5000 {
                    var o = try createObj(txn, t)
                    keys.append(o.key)
                    check(cs_obj_set_int(&o, keep, Int64(i)))
                    check(setVal(&o, big, .string(randomLetters(200, &rng))))
                }
            }
            let before = try db.stats()
            try db.write { txn throws in
                try must(cs_column_remove(txn, t, big), "cs_column_remove")
                var c: UInt32 = 0
                expectCode(cs_column_find(txn, t, "big", &c), CS_NOTFOUND, "find removed column")
                var info = cs_column_info()
                expectCode(cs_column_info_get(txn, t, big, &info), CS_NOTFOUND, "info of removed column")
            }
            let after = try db.stats()
            // 5000 strings of 200 bytes are about 1 MB; removing them must free most of it.
            #expect(after.used_bytes + 900_000 < before.used_bytes,
                    "used_bytes \(before.used_bytes) -> \(after.used_bytes)")
            try db.read { txn throws in
                var o = try openObj(txn, t, keys[4321])
                #expect(try getInt(&o, keep) == 4321)
                var x = cs_value()
                #expect(cs_obj_get(&o, big, &x) != Int32(CS_OK), "reading a removed column fails")
            }
            try db.reopen()
            try db.read { txn throws in
                var o = try openObj(txn, t, keys[17])
                #expect(try getInt(&o, keep) == 17)
                var c: UInt32 = 0
                expectCode(cs_column_find(txn, t, "big", &c), CS_NOTFOUND, "find removed column after reopen")
            }
            db.verify()
        }
    }

    @Test func renameFindAndDuplicateNames() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (a, b, c1, c2): (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            try db.write { txn throws in
                a = try addTable(txn, "Alpha")
                b = try addTable(txn, "Beta")
                #expect(a != b)
                var dup: UInt32 = 0
                expectCode(cs_table_add(txn, "Alpha", 0, &dup), CS_EXISTS, "duplicate table name")
                c1 = try addColumn(txn, a, "x", CS_TYPE_INT)
                c2 = try addColumn(txn, a, "y", CS_TYPE_STRING)
                expectCode(cs_column_add(txn, a, "x", CS_TYPE_BOOL, CS_COLL_NONE, 0, CS_NONE, &dup),
                           CS_EXISTS, "duplicate column name")
                // The same column name in another table is fine.
                _ = try addColumn(txn, b, "x", CS_TYPE_INT)
                #expect(try findTable(txn, "Alpha") == a)
                #expect(try findTable(txn, "Beta") == b)
                var t: UInt32 = 0
                expectCode(cs_table_find(txn, "alpha", &t), CS_NOTFOUND, "names are case-sensitive")
                expectCode(cs_table_find(txn, "Gamma", &t), CS_NOTFOUND, "missing table")
                #expect(try findColumn(txn, a, "y") == c2)
                var o = try createObj(txn, a)
                check(cs_obj_set_int(&o, c1, 77))
            }
            try db.write { txn throws in
                try must(cs_table_rename(txn, a, "Gamma"), "cs_table_rename")
                try must(cs_column_rename(txn, a, c1, "xx"), "cs_column_rename")
                expectCode(cs_table_rename(txn, b, "Gamma"), CS_EXISTS, "rename onto a taken table name")
                expectCode(cs_column_rename(txn, a, c2, "xx"), CS_EXISTS, "rename onto a taken column name")
            }
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    var t: UInt32 = 0
                    expectCode(cs_table_find(txn, "Alpha", &t), CS_NOTFOUND, "\(phase): old table name")
                    #expect(try findTable(txn, "Gamma") == a, "\(phase)")
                    #expect(tableName(txn, a) == "Gamma", "\(phase)")
                    var c: UInt32 = 0
                    expectCode(cs_column_find(txn, a, "x", &c), CS_NOTFOUND, "\(phase): old column name")
                    #expect(try findColumn(txn, a, "xx") == c1, "\(phase)")
                    let (name, info) = try columnInfo(txn, a, c1)
                    #expect(name == "xx" && info.type == CS_TYPE_INT && info.coll == CS_COLL_NONE, "\(phase)")
                    // Data survives renames.
                    let keys = try allKeys(txn, a)
                    #expect(keys.count == 1)
                    if let k = keys.first {
                        var o = try openObj(txn, a, k)
                        #expect(try getInt(&o, c1) == 77, "\(phase)")
                    }
                }
            }
            db.verify()
        }
    }

    @Test func removeTableAndReuseItsKey() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (a, b): (UInt32, UInt32) = (0, 0)
            try db.write { txn throws in
                a = try addTable(txn, "A")
                b = try addTable(txn, "B")
                let c = try addColumn(txn, a, "s", CS_TYPE_STRING)
                var rng = SeededRNG(seed: 6)
                for _ in 0..<2000 {
                    var o = try createObj(txn, a)
                    check(setVal(&o, c, .string(randomLetters(100, &rng))))
                }
            }
            let before = try db.stats()
            #expect(before.table_count == 2)
            try db.write { txn throws in
                try must(cs_table_remove(txn, a), "cs_table_remove")
                var t: UInt32 = 0
                expectCode(cs_table_find(txn, "A", &t), CS_NOTFOUND, "find removed table")
                var info = cs_table_info()
                expectCode(cs_table_info_get(txn, a, &info), CS_NOTFOUND, "info of removed table")
                var n: UInt64 = 0
                #expect(cs_table_count(txn, a, &n) != Int32(CS_OK), "count of removed table fails")
            }
            let after = try db.stats()
            #expect(after.table_count == 1)
            #expect(after.used_bytes + 150_000 < before.used_bytes, "used_bytes \(before.used_bytes) -> \(after.used_bytes)")
            try db.write { txn throws in
                let again = try addTable(txn, "A2")
                #expect(again == a, "keys of removed tables are reused")
                #expect(try tableCount(txn, again) == 0, "the new table starts empty")
                #expect(try findTable(txn, "B") == b)
            }
            try db.reopen()
            try db.read { txn throws in
                #expect(try findTable(txn, "A2") == a)
                #expect(try tableCount(txn, a) == 0)
                #expect(cs_table_slots(txn) >= 2)
            }
            db.verify()
        }
    }

    @Test func linkColumnAddsHiddenBacklinkAndBlocksTargetRemoval() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let target = try addTable(txn, "Target")
                let origin = try addTable(txn, "Origin")
                var info = cs_table_info()
                try must(cs_table_info_get(txn, target, &info), "info")
                let slotsBefore = info.col_slots
                let link = try addColumn(txn, origin, "to", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                let (lname, linfo) = try columnInfo(txn, origin, link)
                #expect(lname == "to" && linfo.type == CS_TYPE_LINK && linfo.target == target)
                try must(cs_table_info_get(txn, target, &info), "info")
                #expect(info.col_slots == slotsBefore + 1, "the target table gained one column")
                var found = false
                for c in 0..<info.col_slots {
                    var ci = cs_column_info()
                    guard cs_column_info_get(txn, target, c, &ci) == Int32(CS_OK) else { continue }
                    if ci.type == CS_TYPE_BACKLINK {
                        found = true
                        #expect(ci.flags & UInt32(CS_COL_HIDDEN) != 0, "backlink column is hidden")
                        #expect(ci.target == origin, "backlink names the origin table")
                        #expect(ci.origin_col == link, "backlink names the link column")
                    }
                }
                #expect(found, "a BACKLINK column exists in the target table")
                expectCode(cs_table_remove(txn, target), CS_CONSTRAINT, "removing a link target")
                // Removing the link column removes the backlink and unblocks the target.
                try must(cs_column_remove(txn, origin, link), "cs_column_remove(link)")
                for c in 0..<info.col_slots {
                    var ci = cs_column_info()
                    if cs_column_info_get(txn, target, c, &ci) == Int32(CS_OK) {
                        #expect(ci.type != CS_TYPE_BACKLINK, "backlink column removed with its link")
                    }
                }
                check(cs_table_remove(txn, target), "cs_table_remove after its link column went")
            }
            db.verify()
        }
    }

    @Test func columnInfoDescribesCollectionsAndFlags() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var cols: [UInt32] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                let emb = try addTable(txn, "E", flags: CS_TABLE_EMBEDDED)
                cols.append(try addColumn(txn, t, "li", CS_TYPE_INT, coll: CS_COLL_LIST))
                cols.append(try addColumn(txn, t, "ss", CS_TYPE_STRING, coll: CS_COLL_SET, flags: CS_COL_NULLABLE))
                cols.append(try addColumn(txn, t, "md", CS_TYPE_DOUBLE, coll: CS_COLL_MAP))
                cols.append(try addColumn(txn, t, "ix", CS_TYPE_INT, flags: CS_COL_INDEXED))
                cols.append(try addColumn(txn, t, "e", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: emb))
                var info = cs_table_info()
                try must(cs_table_info_get(txn, emb, &info), "info")
                #expect(info.flags & UInt32(CS_TABLE_EMBEDDED) != 0)
                #expect(info.primary == CS_NONE)
                try must(cs_table_set_primary_key(txn, t, cols[3]), "cs_table_set_primary_key")
            }
            try db.reopen()
            try db.read { txn throws in
                let expect: [(String, cs_type, cs_coll_kind, UInt32)] = [
                    ("li", CS_TYPE_INT, CS_COLL_LIST, 0), ("ss", CS_TYPE_STRING, CS_COLL_SET, UInt32(CS_COL_NULLABLE)),
                    ("md", CS_TYPE_DOUBLE, CS_COLL_MAP, 0), ("ix", CS_TYPE_INT, CS_COLL_NONE, UInt32(CS_COL_INDEXED)),
                    ("e", CS_TYPE_LINK, CS_COLL_NONE, UInt32(CS_COL_NULLABLE)),
                ]
                for (j, e) in expect.enumerated() {
                    let (name, info) = try columnInfo(txn, t, cols[j])
                    #expect(name == e.0)
                    #expect(info.type == e.1, "\(e.0) type")
                    #expect(info.coll == e.2, "\(e.0) collection kind")
                    #expect(info.flags & e.3 == e.3, "\(e.0) flags \(info.flags)")
                }
                var info = cs_table_info()
                try must(cs_table_info_get(txn, t, &info), "info")
                #expect(info.primary == cols[3], "primary key column")
                #expect(tableName(txn, t) == "T")
            }
            try db.write { txn throws in
                check(cs_table_set_primary_key(txn, t, CS_NONE), "clear primary key")
                var info = cs_table_info()
                try must(cs_table_info_get(txn, t, &info), "info")
                #expect(info.primary == CS_NONE)
            }
        }
    }

    @Test func schemaVersionPersists() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.read { txn in #expect(cs_schema_version(txn) == 0, "a new file has schema version 0") }
            try db.write { txn in check(cs_schema_version_set(txn, 42)) }
            try db.reopen()
            try db.read { txn in #expect(cs_schema_version(txn) == 42) }
            // A rolled back change does not stick.
            let txn = try db.begin(CS_TXN_WRITE)
            check(cs_schema_version_set(txn, 43))
            #expect(cs_schema_version(txn) == 43)
            check(cs_txn_rollback(txn))
            #expect(cs_schema_version(txn) == 42)
            check(cs_txn_end(txn))
        }
    }

    @Test func removingAnOriginTableRemovesItsBacklinks() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (target, origin, emb): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var tk: Int64 = 0
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                origin = try addTable(txn, "Origin")
                emb = try addTable(txn, "Emb", flags: CS_TABLE_EMBEDDED)
                let one = try addColumn(txn, origin, "one", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                let e = try addColumn(txn, origin, "e", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: emb)
                tk = try createObj(txn, target).key
                for _ in 0..<100 {
                    var o = try createObj(txn, origin)
                    check(setVal(&o, one, .link(target, tk)))
                    var x = cs_obj()
                    check(cs_obj_create_embedded(&o, e, &x))
                }
                expectCode(cs_table_remove(txn, emb), CS_CONSTRAINT, "removing an embedded table that is linked to")
            }
            try db.write { txn throws in
                try must(cs_table_remove(txn, origin), "cs_table_remove(origin)")
                var info = cs_table_info()
                try must(cs_table_info_get(txn, target, &info), "info")
                for c in 0..<info.col_slots {
                    var ci = cs_column_info()
                    if cs_column_info_get(txn, target, c, &ci) == Int32(CS_OK) {
                        #expect(ci.type != CS_TYPE_BACKLINK, "the backlink column went with its origin table")
                    }
                }
                #expect(try tableCount(txn, emb) == 0, "embedded objects of the removed table are deleted")
                check(cs_table_remove(txn, target), "the target can be removed now")
                check(cs_table_remove(txn, emb), "the embedded table can be removed now")
            }
            db.verify()
            try db.reopen()
            try db.read { txn throws in
                var t: UInt32 = 0
                expectCode(cs_table_find(txn, "Origin", &t), CS_NOTFOUND, "removed")
                #expect(try db.stats().table_count == 0)
            }
            db.verify("after reopen")
        }
    }

    @Test func invalidColumnDefinitionsAreRefused() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let emb = try addTable(txn, "E", flags: CS_TABLE_EMBEDDED)
                var c: UInt32 = 0
                #expect(cs_column_add(txn, t, "l", CS_TYPE_LINK, CS_COLL_NONE, UInt32(CS_COL_NULLABLE), CS_NONE, &c) != Int32(CS_OK),
                        "a link column without a target")
                #expect(cs_column_add(txn, t, "l2", CS_TYPE_LINK, CS_COLL_NONE, UInt32(CS_COL_NULLABLE), 999, &c) != Int32(CS_OK),
                        "a link column to a missing table")
                #expect(cs_column_add(txn, t, "el", CS_TYPE_LINK, CS_COLL_LIST, UInt32(CS_COL_NULLABLE), emb, &c) != Int32(CS_OK),
                        "a nullable-flagged list of links to an embedded table")
                #expect(cs_column_add(txn, t, "n", CS_TYPE_NULL, CS_COLL_NONE, 0, CS_NONE, &c) != Int32(CS_OK), "a NULL column")
                #expect(cs_column_add(txn, t, "b", CS_TYPE_BACKLINK, CS_COLL_NONE, 0, CS_NONE, &c) != Int32(CS_OK),
                        "a user BACKLINK column")
                #expect(cs_column_add(txn, t, "x", CS_TYPE_LIST, CS_COLL_NONE, 0, CS_NONE, &c) != Int32(CS_OK),
                        "a LIST column type (only a Mixed value)")
                var info = cs_table_info()
                try must(cs_table_info_get(txn, t, &info), "info")
                #expect(info.col_slots == 0, "no refused column was added")
                var ti = cs_table_info()
                expectCode(cs_table_info_get(txn, 999, &ti), CS_NOTFOUND, "info of a missing table")
                var ci = cs_column_info()
                expectCode(cs_column_info_get(txn, t, info.col_slots, &ci), CS_NOTFOUND, "info of a missing column")
            }
            db.verify()
        }
    }

    @Test func unicodeNamesRoundTrip() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let tname = "Straße_日本_🙂"
            let cname = "naïve_ñ_列"
            try db.write { txn throws in
                let t = try addTable(txn, tname)
                _ = try addColumn(txn, t, cname, CS_TYPE_INT)
            }
            try db.reopen()
            try db.read { txn throws in
                let t = try findTable(txn, tname)
                #expect(tableName(txn, t) == tname)
                let c = try findColumn(txn, t, cname)
                let (name, _) = try columnInfo(txn, t, c)
                #expect(name == cname)
                var x: UInt32 = 0
                expectCode(cs_table_find(txn, "Strasse_日本_🙂", &x), CS_NOTFOUND, "names compare by bytes")
            }
        }
    }
}
