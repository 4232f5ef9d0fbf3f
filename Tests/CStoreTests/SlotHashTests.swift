// The header slot's hash of a one-sync commit (docs/FORMAT.md §2), checked against the
// database file's bytes by a reading of its own: the commit computes it while it checksums its
// nodes (docs/ARCHITECTURE.md, "The durable commit's hashes"), following the nodes one behind,
// so commits whose nodes come in many sizes and orders are what exercise it.

import CStore
import Foundation
import Testing
import TestSupport

/// file_run_hash (file.c) of `words`, written out again here.
private func runHash(_ bytes: [UInt8]) -> UInt64 {
    var a: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(bytes.count)
    var b: UInt64 = 0x632b_e59b_d9b4_e019
    var i = 0
    while i + 8 <= bytes.count {
        let w = le64(bytes, i)
        a = (a ^ w) &* 0xff51_afd7_ed55_8ccd
        b = (b &+ w) ^ (a >> 29)
        i += 8
    }
    let x = a ^ (b &* 0xc4ce_b9fe_1a85_ec53)
    return x ^ (x >> 32)
}

private func le64(_ b: [UInt8], _ at: Int) -> UInt64 {
    (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) }
}

/// The selected header slot of the database file at `path` as the file holds it now: its
/// version, whether it is a one-sync commit, and for one its stored hash against the hash of
/// the bytes its run list names.
private func selectedSlot(_ path: String) throws -> (version: UInt64, oneSync: Bool, stored: UInt64, computed: UInt64) {
    let file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let slot = 16 + 64 * Int(file[12] & 1)
    let version = le64(file, slot + 8)
    guard le64(file, slot + 24) & 1 == 1 else { return (version, false, 0, 0) }
    let runPos = Int(le64(file, slot + 32)), runLen = Int(le64(file, slot + 40)), stored = le64(file, slot + 48)
    // the run list: a node of (position, length) pairs (count words after its 8-byte header)
    let count = Int(le64(file, runPos) >> 32)
    var bytes: [UInt8] = []
    for k in stride(from: 0, to: count, by: 2) {
        let p = Int(le64(file, runPos + 8 + 8 * k)), n = Int(le64(file, runPos + 16 + 8 * k))
        bytes += file[p..<(p + n)]
    }
    #expect(bytes.count == runLen, "version \(version): the runs add up to the slot's length")
    return (version, true, stored, runHash(bytes))
}

@Suite struct SlotHashTests {
    /// Journaled commits of many shapes: rows of strings from 1 to 3,000 bytes added, changed and
    /// deleted in varying numbers, so that each commit writes leaves, free-list chunks, pages and
    /// its run list in different sizes and orders. After each one the file's selected slot is
    /// the commit's, a one-sync slot, and holds the hash of the bytes its run list names.
    @Test func everyJournaledCommitsSlotHashIsTheHashOfItsBytes() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path, durability: CS_DURABILITY_FULL)
            defer { db.close() }
            var (t, s, n): (UInt32, UInt32, UInt32) = (0, 0, 0)
            try db.write { txn throws in
                t = try addTable(txn, "T")
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                n = try addColumn(txn, t, "n", CS_TYPE_INT)
            }
            var rng = SeededRNG(seed: 16)
            var checked = 0
            /// The records the journal holds now (its valid ones: FORMAT.md §13).
            func records() -> UInt64 {
                var n: UInt64 = 0, bytes: UInt64 = 0
                check(cs_file_journal_info(path, &n, &bytes), "cs_file_journal_info")
                return n
            }
            var before = records()
            #expect(before >= 1, "the schema's commit is journaled")
            for round in 0..<48 {
                try db.write { txn throws in
                    var keys = try allKeys(txn, t)
                    for i in 0..<(1 + Int(rng.next() % 40)) {
                        var o = try createObj(txn, t)
                        let len = 1 + Int(rng.next() % (round % 3 == 0 ? 3000 : 200))
                        try must(setVal(&o, s, .str(String(repeating: "x", count: len))), "set s")
                        try must(cs_obj_set_int(&o, n, Int64(round * 1000 + i)), "set n")
                    }
                    for _ in 0..<min(keys.count, Int(rng.next() % 12)) {
                        var o = try openObj(txn, t, keys[Int(rng.next() % UInt64(keys.count))])
                        try must(cs_obj_set_int(&o, n, -Int64(round)), "update n")
                    }
                    for _ in 0..<min(keys.count / 3, Int(rng.next() % 8)) {
                        let k = keys.remove(at: Int(rng.next() % UInt64(keys.count)))
                        var o = try openObj(txn, t, k)
                        try must(cs_obj_delete(&o), "delete")
                    }
                }
                var version: UInt64 = 0
                try db.read { txn throws in version = cs_txn_version(txn) }
                let slot = try selectedSlot(path)
                #expect(slot.version == version, "round \(round): the selected slot is the newest commit's")
                #expect(slot.oneSync, "round \(round): a journaled commit's slot is a one-sync slot")
                #expect(slot.stored == slot.computed, "round \(round): the slot's hash is the hash of its bytes")
                let after = records()
                // one record more, or the only one after a checkpoint (a build with a small journal limit)
                #expect(after == before + 1 || after == 1, "round \(round): the commit is journaled (\(before) -> \(after) records)")
                before = after
                if slot.oneSync && slot.stored == slot.computed { checked += 1 }
            }
            #expect(checked == 48)
            #expect(cs_db_rejected_commit(db.h, nil, nil, nil, 0) == false)
        }
    }
}
