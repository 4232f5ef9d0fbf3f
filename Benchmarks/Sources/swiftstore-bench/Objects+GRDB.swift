// The GRDB peers of the object-level rows (Benchmarks/README.md, Object rows):
// - insert.objects.50k: GRDB's InsertRecordStruct workload, a struct conforming to
//   `PersistableRecord` with a hand-written `encode(to:)`, `insert(db)` per record in one
//   transaction, new file;
// - fetch.objects.200k: GRDB's FetchRecordOptimized workload, `FetchableRecord` with
//   `init(row:)` reading the columns by index, `databaseSelection` listing them, `fetchAll`.
//
// GRDB's connection is set up as the raw SQLite peers' is (README.md, "SQLite settings"):
// WAL and synchronous=FULL, the rest at the defaults. The table is the raw SQLite peers'
// `t(i0 ... i9)` of INTEGER NOT NULL columns.

import Foundation
import GRDB

/// The record GRDB's InsertRecordStruct workload inserts.
struct GRDBInsertItem: PersistableRecord {
    static let databaseTableName = "t"

    var i0: Int
    var i1: Int
    var i2: Int
    var i3: Int
    var i4: Int
    var i5: Int
    var i6: Int
    var i7: Int
    var i8: Int
    var i9: Int

    func encode(to container: inout PersistenceContainer) {
        container["i0"] = i0
        container["i1"] = i1
        container["i2"] = i2
        container["i3"] = i3
        container["i4"] = i4
        container["i5"] = i5
        container["i6"] = i6
        container["i7"] = i7
        container["i8"] = i8
        container["i9"] = i9
    }
}

/// The record GRDB's FetchRecordOptimized workload fetches.
struct GRDBFetchItem: FetchableRecord, TableRecord {
    static let databaseTableName = "t"

    var i0: Int
    var i1: Int
    var i2: Int
    var i3: Int
    var i4: Int
    var i5: Int
    var i6: Int
    var i7: Int
    var i8: Int
    var i9: Int

    init(row: GRDB.Row) {
        i0 = row[0]
        i1 = row[1]
        i2 = row[2]
        i3 = row[3]
        i4 = row[4]
        i5 = row[5]
        i6 = row[6]
        i7 = row[7]
        i8 = row[8]
        i9 = row[9]
    }

    static var databaseSelection: [any SQLSelectable] {
        [
            Column("i0"), Column("i1"), Column("i2"), Column("i3"), Column("i4"),
            Column("i5"), Column("i6"), Column("i7"), Column("i8"), Column("i9"),
        ]
    }
}

/// A GRDB queue on `path` with the raw SQLite peers' durable settings (WAL,
/// `synchronous=FULL`, checked).
func grdbQueue(_ path: String) throws -> DatabaseQueue {
    var config = GRDB.Configuration()
    config.journalMode = .wal
    let queue = try DatabaseQueue(path: path, configuration: config)
    try requireFullSync(queue)
    return queue
}

/// Sets `synchronous=FULL` on the writer connection of `writer` and checks that it holds. GRDB's
/// WAL set-up runs after `Configuration.prepareDatabase` and sets `synchronous=NORMAL` (a commit
/// then syncs only at checkpoints), so a pragma in `prepareDatabase` does not last.
func requireFullSync(_ writer: some DatabaseWriter) throws {
    try writer.writeWithoutTransaction { db in
        try db.execute(sql: "PRAGMA synchronous=FULL")
        let level = try Int.fetchOne(db, sql: "PRAGMA synchronous")
        guard level == 2 else { throw BenchError(description: "GRDB writer runs at synchronous=\(level ?? -1), not FULL (2)") }
    }
}

/// Sum of i0 + ... + i9 over every row of `t`, and the row count.
private func grdbSumAll(_ queue: DatabaseQueue) throws -> (sum: Int64, count: Int64) {
    try queue.read { db in
        let sum = try Int64.fetchOne(db, sql: SQLiteIntTable.sumAll) ?? 0
        let count = try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM t") ?? 0
        return (sum, count)
    }
}

/// The GRDB side of insert.objects.50k: open (new file) + CREATE TABLE + one transaction
/// inserting `size` records + commit, timed; the file is checked afterwards.
func grdbInsertRecords(_ ctx: RowContext) throws -> Runner {
    Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let path = dir.appendingPathComponent("bench.sqlite").path
        let n = ctx.size
        var queue: DatabaseQueue?
        let ms = try measure {
            let q = try grdbQueue(path)
            queue = q
            try q.inDatabase { db in
                try db.execute(sql: SQLiteIntTable.create)
            }
            try q.inTransaction { db in
                for i in 0..<n {
                    try GRDBInsertItem(i0: i, i1: i, i2: i, i3: i, i4: i, i5: i, i6: i, i7: i, i8: i, i9: i)
                        .insert(db)
                }
                return .commit
            }
        }
        let (sum, count) = try grdbSumAll(queue!)
        try queue!.close()
        if count != Int64(n) {
            return Sample(ms: ms, check: Check(what: "row count", got: count, want: Int64(n)))
        }
        return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: 10 * triangle(n)))
    })
}

/// The GRDB side of fetch.objects.200k: the raw SQLite peers' pre-built file (untimed), one
/// queue opened once; each repetition times `fetchAll` in a read transaction, then a pass
/// reading the 10 fields of every record.
func grdbFetchRecords(_ ctx: RowContext) throws -> Runner {
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: ctx.size)
    let queue = try grdbQueue(path)
    let want = 10 * triangle(ctx.size)
    return Runner(
        run: { _ in
            var sum: Int64 = 0
            var count: Int64 = 0
            let ms = try measure {
                let items = try queue.read { db in try GRDBFetchItem.fetchAll(db) }
                for o in items {
                    sum &+= Int64(o.i0) &+ Int64(o.i1) &+ Int64(o.i2) &+ Int64(o.i3) &+ Int64(o.i4)
                    sum &+= Int64(o.i5) &+ Int64(o.i6) &+ Int64(o.i7) &+ Int64(o.i8) &+ Int64(o.i9)
                    count += 1
                }
            }
            if count != Int64(ctx.size) {
                return Sample(ms: ms, check: Check(what: "record count", got: count, want: Int64(ctx.size)))
            }
            return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: want))
        },
        tearDown: { try? queue.close() })
}
