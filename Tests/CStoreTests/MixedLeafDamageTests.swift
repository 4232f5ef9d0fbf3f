import CStore
import Foundation
import Testing

/// A Mixed value whose type says String or Binary while its bytes are null in the mixed leaf's
/// string part (docs/FORMAT.md §6.3, Mixed leaf) is damage: writers always store the bytes. The
/// read must say so, not hand back a string whose pointer and length were never set.
@Suite struct MixedLeafDamageTests {
    @Test func aStringTypedMixedValueWithNullBytesIsCorrupt() throws {
        try withTempDir { dir in
            let path = dir.path("m.cstore")
            var key: Int64 = 0
            let (table, col): (UInt32, UInt32) = try {
                let db = try DB(path)
                defer { db.close() }
                return try db.write { txn -> (UInt32, UInt32) in
                    let t = try addTable(txn, "T")
                    let m = try addColumn(txn, t, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                    var o = try createObj(txn, t)
                    key = o.key
                    // five bytes: the string part's end offset 5 (binary 101) has bit 0 set
                    try must(setVal(&o, m, .str("hello")), "set m")
                    return (t, m)
                }
            }()
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            // table node slot 0: the cluster root, here a leaf [keys, col0]; col0 the mixed leaf
            // [types, ints, strs, nested]; strs a string leaf [ends, data, bigs]
            func slot(_ node: Int, _ i: Int) -> Int { rawLE64(bytes, node + 8 + 8 * i) }
            let leaf = slot(rawTableNode(bytes, table), 0)
            #expect(bytes[leaf + 2] & 0x01 == 0, "one object: the root is a leaf")
            let ends = slot(slot(slot(leaf, 1 + Int(col)), 2), 0)
            // the NULLS flag (0x10): the payload's first word, the end offset 5, becomes the
            // null bitmap, and element 0 reads as null
            bytes[ends + 2] |= 0x10
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let db = try DB(path)
            defer { db.close() }
            try db.read { txn in
                var o = try openObj(txn, table, key)
                var v = cs_value()
                let rc = cs_obj_get(&o, col, &v)
                #expect(rc == Int32(CS_CORRUPT), "a String-typed Mixed value with null bytes: rc \(rc), type \(v.type.rawValue)")
            }
        }
    }
}
