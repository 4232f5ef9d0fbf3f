// size.after.churn: the bytes on disk after 1M inserts, 500k deletes and 500k updates, then
// compaction, against SQLite's file after the same work and VACUUM (README.md, Rows; a size row:
// the ratio compares bytes, the time of the whole workload is kept for information).

import CSQLite
import CStore
import CStoreCall
import Foundation

/// Rows per commit of the deletes and the updates on both sides.
private let churnBatch = 100_000

/// The sum of all 10 columns after the churn of `n` rows: the odd rows r are left, each
/// column holding r + n.
private func churnedSum(_ n: Int) -> (sum: Int64, count: Int64) {
    let half = Int64(n / 2)
    // odd r = 2k + 1 for k in 0..<half: sum of r = half^2
    return (10 * (half * half + half * Int64(n)), half)
}

/// The bytes of a file, 0 if it does not exist.
private func bytesOnDisk(_ path: String) -> Int64 {
    var st = stat()
    return stat(path, &st) == 0 ? Int64(st.st_size) : 0
}

func sizeAfterChurnRow() -> Row {
    Row(
        id: "size.after.churn", size: 1_000_000, mode: "nosync", peer: "sqlite", goal: "<= 0.5x",
        swiftstore: { ctx in
            let n = ctx.size - ctx.size % 2
            let want = churnedSum(n)
            return Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let path = dir.appendingPathComponent("churn.cstore").path
                let ms = try measure {
                    // n inserts (one commit), the even rows deleted, the odd ones rewritten
                    let keys = try csBuildIntFile(path, rows: n)
                    let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: false)
                    for start in stride(from: 0, to: n, by: churnBatch) {
                        try csTransaction(db, write: true) { txn in
                            let t = try IntTable.find(txn)
                            var obj = cs_obj()
                            for r in stride(from: start, to: min(n, start + churnBatch), by: 2) {
                                try CStoreError.check(cs_obj_open(txn, t.table, keys[r], &obj), "cs_obj_open")
                                try CStoreError.check(cs_obj_delete(&obj), "cs_obj_delete")
                            }
                        }
                    }
                    for start in stride(from: 0, to: n, by: churnBatch) {
                        try csTransaction(db, write: true) { txn in
                            let t = try IntTable.find(txn)
                            var obj = cs_obj()
                            for r in stride(from: start + 1, to: min(n, start + churnBatch), by: 2) {
                                try CStoreError.check(cs_obj_open(txn, t.table, keys[r], &obj), "cs_obj_open")
                                for c in t.columns {
                                    try CStoreError.check(cs_obj_set_int(&obj, c, Int64(r + n)), "cs_obj_set_int")
                                }
                            }
                        }
                    }
                    try csClose(db)
                    var opts = cs_options()
                    opts.durability = CS_DURABILITY_NOSYNC
                    try CStoreError.check(cs_db_compact(path, &opts, nil, nil, nil), "cs_db_compact")
                }
                // the database file; its lock file is run-time state (as SQLite's -shm)
                let bytes = bytesOnDisk(path)
                let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: false)
                defer { _ = cs_db_close(db) }
                let (sum, count) = try csTransaction(db, write: false) { try IntTable.find($0).sumAll($0) }
                if count != want.count {
                    return Sample(ms: ms, check: Check(what: "object count", got: count, want: want.count), bytes: bytes)
                }
                return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: want.sum), bytes: bytes)
            })
        },
        peerSide: { ctx in
            let n = ctx.size - ctx.size % 2
            let want = churnedSum(n)
            let set = (0..<IntTable.columnCount).map { "i\($0) = rowid - 1 + \(n)" }.joined(separator: ", ")
            return Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let path = dir.appendingPathComponent("churn.sqlite").path
                let ms = try measure {
                    // row r has rowid r + 1
                    try SQLiteIntTable.buildFile(path, rows: n)
                    let db = try SQLiteDB(path: path, create: false)
                    defer { db.close() }
                    try db.configure(synchronous: "OFF")
                    for start in stride(from: 0, to: n, by: churnBatch) {
                        try db.exec("DELETE FROM t WHERE rowid BETWEEN \(start + 1) AND \(start + churnBatch) AND (rowid - 1) % 2 = 0")
                    }
                    for start in stride(from: 0, to: n, by: churnBatch) {
                        try db.exec("UPDATE t SET \(set) WHERE rowid BETWEEN \(start + 1) AND \(start + churnBatch) AND (rowid - 1) % 2 = 1")
                    }
                    try db.exec("VACUUM")
                    try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
                }
                // the database file and whatever its write-ahead log still holds
                let bytes = bytesOnDisk(path) + bytesOnDisk(path + "-wal")
                let db = try SQLiteDB(path: path, create: false)
                defer { db.close() }
                let count = try db.scalar("SELECT COUNT(*) FROM t")
                if count != want.count {
                    return Sample(ms: ms, check: Check(what: "row count", got: count, want: want.count), bytes: bytes)
                }
                return Sample(ms: ms, check: Check(what: "sum of all values", got: try db.scalar(SQLiteIntTable.sumAll), want: want.sum), bytes: bytes)
            })
        },
        unit: .bytes)
}
