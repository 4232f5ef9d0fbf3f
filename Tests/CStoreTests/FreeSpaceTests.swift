// Free-space reuse (DESIGN §2.3): space freed by a commit is reused by later commits once no
// reader pins an older version, so a file that is emptied and refilled does not keep growing.

import CStore
import Foundation
import Testing

@Suite struct FreeSpaceTests {
    private static let rows = 100_000

    private func fill(_ db: DB, _ t: UInt32, _ s: UInt32, _ a: UInt32, _ b: UInt32, round: Int) throws {
        try db.write { txn throws in
            for i in 0..<Self.rows {
                var o = try createObj(txn, t)
                try must(setVal(&o, s, .str("object \(i) of round \(round) with some text")), "set s")
                try must(cs_obj_set_int(&o, a, Int64(i)), "set a")
                try must(cs_obj_set_int(&o, b, Int64(i) * 1_000_003 + Int64(round)), "set b")
            }
        }
    }

    /// The file is filled with 100k objects, then cleared and refilled 10 times. Both the
    /// logical size and the physical file size must stay within 1.5x of their values after
    /// the first fill (the assertion checks both).
    @Test func clearAndRefillReusesSpace() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, s, a, b): (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            try db.write { txn throws in
                t = try addTable(txn, "T")
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                a = try addColumn(txn, t, "a", CS_TYPE_INT)
                b = try addColumn(txn, t, "b", CS_TYPE_INT)
            }
            try fill(db, t, s, a, b, round: 0)
            let first = try db.stats()
            #expect(first.logical_size > 0 && first.file_size >= first.logical_size)
            for round in 1...10 {
                try db.write { txn throws in try must(cs_table_clear(txn, t), "cs_table_clear") }
                let cleared = try db.stats()
                try db.read { txn throws in #expect(try tableCount(txn, t) == 0) }
                #expect(cleared.free_bytes > 0, "clearing frees space (round \(round))")
                try fill(db, t, s, a, b, round: round)
                let st = try db.stats()
                #expect(Double(st.logical_size) <= 1.5 * Double(first.logical_size),
                        "round \(round): logical_size \(st.logical_size) vs \(first.logical_size) after the first fill")
                #expect(Double(st.file_size) <= 1.5 * Double(first.file_size),
                        "round \(round): file_size \(st.file_size) vs \(first.file_size) after the first fill")
                #expect(UInt64(fileSize(dir.path())) == st.file_size, "file_size is the physical size")
            }
            db.verify()
            try db.read { txn throws in
                #expect(try tableCount(txn, t) == UInt64(Self.rows))
                let keys = try allKeys(txn, t)
                var o = try openObj(txn, t, keys[777])
                #expect(getVal(&o, s) == .str("object 777 of round 10 with some text"))
                #expect(try getInt(&o, b) == 777 * 1_000_003 + 10)
            }
        }
    }

    @Test func pinnedReaderDelaysReuseUntilItEnds() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, s): (UInt32, UInt32) = (0, 0)
            try db.write { txn throws in
                t = try addTable(txn, "T")
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
            }
            func fill() throws {
                try db.write { txn throws in
                    for i in 0..<20_000 {
                        var o = try createObj(txn, t)
                        try must(setVal(&o, s, .str("pinned reader test value \(i)")), "set")
                    }
                }
            }
            try fill()
            let reader = try db.begin(CS_TXN_READ)
            try db.write { txn throws in try must(cs_table_clear(txn, t), "clear") }
            try fill()
            // The reader still sees its 20,000 objects: their space was not reused.
            #expect(try tableCount(reader, t) == 20_000)
            var it = cs_iter()
            try must(cs_iter_init(&it, reader, t), "iter")
            var o = cs_obj()
            check(cs_iter_next(&it, &o))
            #expect(getVal(&o, s) == .str("pinned reader test value 0"))
            let pinned = try db.stats()
            #expect(pinned.pinned >= 1, "the reader pins a version")
            check(cs_txn_end(reader))
            // With the reader gone, clear-and-refill cycles stop growing the file.
            var sizes: [UInt64] = []
            for _ in 0..<4 {
                try db.write { txn throws in try must(cs_table_clear(txn, t), "clear") }
                try fill()
                sizes.append(try db.stats().logical_size)
            }
            #expect(sizes.last! <= sizes.first!, "logical sizes after each cycle: \(sizes)")
            db.verify()
        }
    }

    /// Data added and then deleted again leaves used_bytes where it started: deleting objects,
    /// clearing collections, replacing nested Mixed collections and big blobs, and cascading
    /// embedded deletes all free their nodes.
}
