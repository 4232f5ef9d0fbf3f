// Durability modes (docs/ARCHITECTURE.md, Durability): full, no-sync and memory-only.

import CStore
import Foundation
import Testing

@Suite struct DurabilityTests {
    @Test func memoryOnlyFileIsGoneAfterLastClose() throws {
        try withTempDir { dir in
            let path = dir.path("memory.cstore")
            let a = try DB(path, durability: CS_DURABILITY_MEMORY)
            var (t, c): (UInt32, UInt32) = (0, 0)
            try a.write { txn throws in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "v", CS_TYPE_INT)
                for i in 0..<1000 {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, c, Int64(i)))
                }
            }
            try a.read { txn throws in #expect(try tableCount(txn, t) == 1000) }
            a.verify()
            let b = try DB(path, durability: CS_DURABILITY_MEMORY)
            try b.read { txn throws in
                #expect(try tableCount(txn, t) == 1000, "a second handle shares the memory-only state")
            }
            a.close()
            try b.read { txn throws in #expect(try tableCount(txn, t) == 1000, "still readable after one close") }
            b.close()
            #expect(!FileManager.default.fileExists(atPath: path), "the file is removed when the last handle closes")
            // Opening the path again starts from an empty database.
            let c2 = try DB(path, durability: CS_DURABILITY_MEMORY)
            try c2.read { txn throws in
                var f: UInt32 = 0
                expectCode(cs_table_find(txn, "T", &f), CS_NOTFOUND, "a new memory-only database is empty")
            }
            c2.close()
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test(arguments: ["nosync", "full"])
    func commitsSurviveReopen(_ mode: String) throws {
        try withTempDir { dir in
            let path = dir.path()
            let durability = mode == "full" ? CS_DURABILITY_FULL : CS_DURABILITY_NOSYNC
            var (t, c): (UInt32, UInt32) = (0, 0)
            do {
                let db = try DB(path, durability: durability)
                try db.write { txn throws in
                    t = try addTable(txn, "T")
                    c = try addColumn(txn, t, "v", CS_TYPE_STRING)
                }
                for round in 0..<5 {
                    try db.write { txn throws in
                        for i in 0..<200 {
                            var o = try createObj(txn, t)
                            check(setVal(&o, c, .str("\(round)-\(i)")))
                        }
                    }
                }
                db.close()
            }
            #expect(FileManager.default.fileExists(atPath: path))
            // Reopen with the other mode: durability is a property of the handle, not the file.
            let db = try DB(path, flags: 0, durability: mode == "full" ? CS_DURABILITY_NOSYNC : CS_DURABILITY_FULL)
            try db.read { txn throws in
                #expect(try tableCount(txn, t) == 1000)
                let keys = try allKeys(txn, t)
                var o = try openObj(txn, t, keys[999])
                #expect(getVal(&o, c) == .str("4-199"))
            }
            db.verify()
            db.close()
            check(cs_file_verify(path))
        }
    }

    @Test func statsDescribeTheFile() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let empty = try db.stats()
            #expect(empty.table_count == 0)
            #expect(empty.read_format > 0 && empty.write_format >= empty.read_format)
            try db.write { txn throws in
                _ = try addTable(txn, "A")
                _ = try addTable(txn, "B")
            }
            let st = try db.stats()
            #expect(st.table_count == 2)
            #expect(st.version == cs_db_version(db.h))
            #expect(st.version > empty.version)
            #expect(st.logical_size <= st.file_size)
            #expect(st.used_bytes <= st.logical_size)
            #expect(UInt64(fileSize(dir.path())) == st.file_size)
            #expect(String(cString: cs_db_path(db.h)) == dir.path())
        }
    }
}
