// compact.1GB: compaction of a file with 50% free space, against SQLite's VACUUM INTO of the
// same rows (README.md, Rows).

import CSQLite
import CStore
import CStoreCall
import Foundation

/// The values left after the even rows (0, 2, 4, ...) are deleted from rows 0..<n: the sum of
/// all 10 columns of the odd rows, and their count.
private func oddRows(_ n: Int) -> (sum: Int64, count: Int64) {
    let count = Int64(n / 2)
    // odd r = 2k + 1 for k in 0..<count: sum = 2 * triangle(count) + count
    return (10 * (2 * (count * (count - 1) / 2) + count), count)
}

/// The compact and backup rows' SwiftStore file: `rows` rows of the C API table, then every
/// other one deleted (commits of 1M deletions), so half the file is free space.
func buildChurnedIntFile(_ path: String, rows: Int) throws {
    let keys = try csBuildIntFile(path, rows: rows)
    let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: false)
    for start in stride(from: 0, to: keys.count, by: 2_000_000) {
        try csTransaction(db, write: true) { txn in
            let t = try IntTable.find(txn)
            var obj = cs_obj()
            for i in stride(from: start, to: min(keys.count, start + 2_000_000), by: 2) {
                try CStoreError.check(cs_obj_open(txn, t.table, keys[i], &obj), "cs_obj_open")
                try CStoreError.check(cs_obj_delete(&obj), "cs_obj_delete")
            }
        }
    }
    try csClose(db)
}

/// The same rows in SQLite, the same rows deleted (the pages stay in the file as free pages).
func buildChurnedSQLiteFile(_ path: String, rows: Int) throws {
    try SQLiteIntTable.buildFile(path, rows: rows)
    let db = try SQLiteDB(path: path, create: false)
    defer { db.close() }
    try db.configure(synchronous: "OFF")
    try db.exec("DELETE FROM t WHERE (rowid - 1) % 2 = 0")
    try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
}

func compactRow() -> Row {
    Row(
        id: "compact.1GB", size: 20_000_000, mode: "durable", peer: "sqlite", goal: "<= 0.5x",
        swiftstore: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            try buildChurnedIntFile(path, rows: ctx.size)
            let want = oddRows(ctx.size)
            return Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let out = dir.appendingPathComponent("compact.cstore").path
                // the whole command: open, a read transaction, the compacted copy (synced)
                let ms = try measure {
                    let src = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
                    defer { _ = cs_db_close(src) }
                    let txn = try csBegin(src, write: false)
                    defer { _ = cs_txn_end(txn) }
                    try CStoreError.check(cs_txn_write_copy(txn, out, nil, nil), "cs_txn_write_copy")
                }
                let copy = try csOpen(out, durability: CS_DURABILITY_FULL, create: false)
                defer { _ = cs_db_close(copy) }
                let (sum, count) = try csTransaction(copy, write: false) { try IntTable.find($0).sumAll($0) }
                if count != want.count {
                    return Sample(ms: ms, check: Check(what: "object count", got: count, want: want.count))
                }
                return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: want.sum))
            })
        },
        peerSide: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            try buildChurnedSQLiteFile(path, rows: ctx.size)
            let want = oddRows(ctx.size)
            return Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let out = dir.appendingPathComponent("vacuum.sqlite").path
                let ms = try measure {
                    let db = try SQLiteDB(path: path, create: false)
                    defer { db.close() }
                    try db.configure(synchronous: "FULL")
                    try db.exec("VACUUM INTO '\(out)'")
                }
                let copy = try SQLiteDB(path: out, create: false)
                defer { copy.close() }
                let count = try copy.scalar("SELECT COUNT(*) FROM t")
                if count != want.count {
                    return Sample(ms: ms, check: Check(what: "row count", got: count, want: want.count))
                }
                return Sample(ms: ms, check: Check(what: "sum of all values", got: try copy.scalar(SQLiteIntTable.sumAll), want: want.sum))
            })
        })
}
