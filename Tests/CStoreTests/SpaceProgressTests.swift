// Where a version's bytes go (cs_txn_space, `swiftstore info`) and the progress callbacks of
// compacted copies, compaction, backups and restores (cs_progress).

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let goldenV2 = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent("format-v2.cstore")

/// The calls a cs_progress callback received.
final class ProgressLog {
    var calls: [(done: UInt64, total: UInt64)] = []
    var ctx: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
    static let callback: cs_progress = { ctx, done, total in
        Unmanaged<ProgressLog>.fromOpaque(ctx!).takeUnretainedValue().calls.append((done, total))
    }

    /// Checks the calls: at least `min`, done never decreasing, one total throughout, and the
    /// last call done == total == `size`.
    func expectComplete(size: Int, min: Int, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(calls.count >= min, "\(what): \(calls.count) calls", sourceLocation: sourceLocation)
        #expect(zip(calls, calls.dropFirst()).allSatisfy { $0.done <= $1.done }, "\(what): done never decreases", sourceLocation: sourceLocation)
        #expect(Set(calls.map(\.total)) == [UInt64(size)], "\(what): the total is the size throughout", sourceLocation: sourceLocation)
        #expect(calls.last.map { $0.done == UInt64(size) } == true, "\(what): ends at the size", sourceLocation: sourceLocation)
    }
}

/// Two tables of different sizes on a copy of the golden file: "Big" with 40000 strings of 250
/// bytes, then half of them deleted (so the file has free space and the copy is over 4 MiB),
/// and "Small" with 100 Ints.
private func makeFile(_ dir: TempDir) throws -> DB {
    let path = dir.path("space.cstore")
    try FileManager.default.copyItem(atPath: goldenV2.path, toPath: path)
    let db = try DB(path, flags: 0)
    var rng = SeededRNG(seed: stableSeed("space"))
    try db.write { txn throws in
        let big = try addTable(txn, "Big")
        _ = try addColumn(txn, big, "s", CS_TYPE_STRING)
        let small = try addTable(txn, "Small")
        _ = try addColumn(txn, small, "n", CS_TYPE_INT)
        for i in 0..<100 {
            var o = try createObj(txn, small)
            try must(setVal(&o, 0, .int(Int64(i))), "set n")
        }
    }
    for _ in 0..<5 {
        try db.write { txn throws in
            let big = try findTable(txn, "Big")
            for _ in 0..<8000 {
                var o = try createObj(txn, big)
                try must(setVal(&o, 0, .string(randomLetters(250, &rng))), "set s")
            }
        }
    }
    try db.write { txn throws in
        let big = try findTable(txn, "Big")
        for k in try allKeys(txn, big) where k % 2 == 0 {
            var o = try openObj(txn, big, k)
            try must(cs_obj_delete(&o), "delete")
        }
    }
    return db
}

@Suite struct SpaceProgressTests {
    @Test func spaceAddsUpAndMatchesTheCompactedCopy() throws {
        try withTempDir { dir in
            let db = try makeFile(dir)
            let copy = dir.path("copy.cstore")
            let (space, tables, names) = try db.read { txn -> (cs_space_info, [UInt64], [String]) in
                let n = Int(cs_table_slots(txn))
                var tables = [UInt64](repeating: 7, count: n + 2) // past the slots: set to 0
                var space = cs_space_info()
                try must(cs_txn_space(txn, &tables, UInt32(tables.count), &space), "cs_txn_space")
                var names: [String] = []
                for k in 0..<UInt32(n) {
                    var info = cs_table_info()
                    names.append(cs_table_info_get(txn, k, &info) == 0 ? String(cString: info.name) : "")
                }
                try must(cs_txn_write_copy(txn, copy, nil, nil), "cs_txn_write_copy")
                return (space, tables, names)
            }
            let st = try db.stats()
            db.close()
            #expect(Int(space.compacted_size) == fileSize(copy), "the compacted size is the copy's size")
            #expect(space.header_bytes == 4096)
            #expect(space.header_bytes + space.top_bytes + space.schema_bytes + space.table_bytes
                    + space.history_bytes + space.other_bytes == space.compacted_size, "the parts add up")
            #expect(tables.reduce(0, +) == space.table_bytes, "the tables add up")
            #expect(tables.suffix(2) == [0, 0], "keys past the table slots get 0")
            let big = tables[names.firstIndex(of: "Big")!], small = tables[names.firstIndex(of: "Small")!]
            #expect(big > 4_000_000 && big < 6_000_000, "Big holds its 20000 strings of 250 bytes: \(big)")
            #expect(small > 0 && small < 8192, "Small: \(small)")
            #expect(space.schema_bytes > 0 && space.top_bytes > 0)
            #expect(space.history_bytes > 0, "the golden file's change history")
            // the version reaches the free list's nodes too, which a compacted copy drops
            #expect(space.compacted_size <= 4096 + st.used_bytes)
            #expect(Int(space.compacted_size) < fileSize(dir.path("space.cstore")))

            // on the compacted copy: the same counts, and no free space left to count
            let c = try DB(copy, flags: 0)
            let again = try c.read { txn -> cs_space_info in
                var s = cs_space_info()
                try must(cs_txn_space(txn, nil, 0, &s), "cs_txn_space")
                return s
            }
            let cst = try c.stats()
            #expect(again.compacted_size == space.compacted_size && again.table_bytes == space.table_bytes
                    && again.history_bytes == space.history_bytes)
            #expect(cst.used_bytes + 4096 == again.compacted_size)
            // a write transaction is refused
            try c.write { txn in
                var s = cs_space_info()
                #expect(cs_txn_space(txn, nil, 0, &s) == Int32(CS_MISUSE))
            }
            c.close()
        }
    }

    @Test func copiesCompactionBackupsAndRestoresReportProgress() throws {
        try withTempDir { dir in
            let db = try makeFile(dir)
            let path = db.path
            // a compacted copy: more than one chunk of 4 MiB
            let copy = dir.path("copy.cstore")
            let copyLog = ProgressLog()
            try db.read { txn in try must(cs_txn_write_copy(txn, copy, ProgressLog.callback, copyLog.ctx), "copy") }
            copyLog.expectComplete(size: fileSize(copy), min: 2, "cs_txn_write_copy")
            // a backup: the database bytes compressed, against the compacted size
            let backup = dir.path("b.csbackup")
            let backupLog = ProgressLog()
            var info = cs_backup_info()
            try must(cs_backup_write(db.h, backup, ProgressLog.callback, backupLog.ctx, &info), "backup")
            backupLog.expectComplete(size: fileSize(copy), min: 2, "cs_backup_write")
            db.close()
            // in-place compaction
            let compactLog = ProgressLog()
            var opts = cs_options()
            var cinfo = cs_compact_info()
            try must(cs_db_compact(path, &opts, ProgressLog.callback, compactLog.ctx, &cinfo), "compact")
            compactLog.expectComplete(size: Int(cinfo.size_after), min: 2, "cs_db_compact")
            #expect(Int(cinfo.size_after) == fileSize(copy))
            // a restore
            let restoreLog = ProgressLog()
            let target = dir.path("restored.cstore")
            try must(cs_backup_restore(backup, target, nil, 0, ProgressLog.callback, restoreLog.ctx, nil), "restore")
            restoreLog.expectComplete(size: fileSize(target), min: 2, "cs_backup_restore")
        }
    }
}
