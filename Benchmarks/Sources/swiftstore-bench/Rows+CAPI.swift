// The C API rows: SwiftStore through cstore.h, the peer through SQLite's C API.
// Every table has 10 Int64 columns i0 ... i9, and row r holds r in all of them (r from 0).

import CSQLite
import CStore
import CStoreCall
import Foundation

/// Sum of 0 + 1 + ... + (n - 1).
func triangle(_ n: Int) -> Int64 { Int64(n) * Int64(n - 1) / 2 }

// MARK: - insert.rows.50k and insert.bulk.1M

/// An insert row. `timeOpen`: the open and the schema are timed with the insert
/// (insert.rows.50k); else only the insert and the commit are (insert.bulk.1M).
func insertRow(id: String, size: Int, goal: String, timeOpen: Bool) -> Row {
    Row(
        id: id, size: size, mode: "durable", peer: "sqlite", goal: goal,
        swiftstore: { ctx in
            Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let path = dir.appendingPathComponent("bench.cstore").path
                var db: OpaquePointer?
                var table: IntTable?
                var txn: OpaquePointer?
                defer {
                    if let txn { _ = cs_txn_end(txn) }
                    if let db { _ = cs_db_close(db) }
                }
                if !timeOpen {
                    db = try csOpen(path, durability: CS_DURABILITY_FULL, create: true)
                    table = try csTransaction(db!, write: true) { try IntTable.create($0) }
                }
                let ms = try measure {
                    if db == nil { db = try csOpen(path, durability: CS_DURABILITY_FULL, create: true) }
                    txn = try csBegin(db!, write: true)
                    if table == nil { table = try IntTable.create(txn!) }
                    _ = try table!.insert(txn!, count: ctx.size)
                    try CStoreError.check(cs_txn_commit(txn!), "cs_txn_commit")
                    try CStoreError.check(cs_txn_end(txn!), "cs_txn_end")
                    txn = nil
                }
                let (sum, count) = try csTransaction(db!, write: false) { try table!.sumAll($0) }
                if count != Int64(ctx.size) {
                    return Sample(ms: ms, check: Check(what: "object count", got: count, want: Int64(ctx.size)))
                }
                return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: 10 * triangle(ctx.size)))
            })
        },
        peerSide: { ctx in
            Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let path = dir.appendingPathComponent("bench.sqlite").path
                var db: SQLiteDB?
                defer { db?.close() }
                func openAndCreate() throws {
                    db = try SQLiteDB(path: path)
                    try db!.configure(synchronous: "FULL")
                    try db!.exec(SQLiteIntTable.create)
                }
                if !timeOpen { try openAndCreate() }
                let ms = try measure {
                    if db == nil { try openAndCreate() }
                    try db!.exec("BEGIN")
                    try SQLiteIntTable.insert(db!, count: ctx.size)
                    try db!.exec("COMMIT")
                }
                let sum = try db!.scalar(SQLiteIntTable.sumAll)
                return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: 10 * triangle(ctx.size)))
            })
        })
}

// MARK: - fetch.rows.200k

func fetchRowsRow() -> Row {
    Row(
        id: "fetch.rows.200k", size: 200_000, mode: "durable", peer: "sqlite", goal: "<= 0.5x",
        swiftstore: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            _ = try csBuildIntFile(path, rows: ctx.size)
            let db = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
            let want = 10 * triangle(ctx.size)
            return Runner(
                run: { _ in
                    var sum: Int64 = 0
                    var count: Int64 = 0
                    let ms = try measure {
                        let txn = try csBegin(db, write: false)
                        defer { _ = cs_txn_end(txn) }
                        let t = try IntTable.find(txn)
                        (sum, count) = try t.sumAll(txn)
                    }
                    if count != Int64(ctx.size) {
                        return Sample(ms: ms, check: Check(what: "object count", got: count, want: Int64(ctx.size)))
                    }
                    return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: want))
                },
                tearDown: { _ = cs_db_close(db) })
        },
        peerSide: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            try SQLiteIntTable.buildFile(path, rows: ctx.size)
            let db = try SQLiteDB(path: path, create: false)
            try db.configure(synchronous: "FULL")
            let want = 10 * triangle(ctx.size)
            return Runner(
                run: { _ in
                    var sum: Int64 = 0
                    var count: Int64 = 0
                    let ms = try measure {
                        let s = try db.prepare(SQLiteIntTable.selectAll)
                        defer { s.finalize() }
                        while try s.step() {
                            for c in Int32(0)..<10 {
                                sum &+= sqlite3_column_int64(s.stmt, c)
                            }
                            count += 1
                        }
                    }
                    if count != Int64(ctx.size) {
                        return Sample(ms: ms, check: Check(what: "row count", got: count, want: Int64(ctx.size)))
                    }
                    return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: want))
                },
                tearDown: { db.close() })
        })
}

// MARK: - commit.durable and commit.nosync

/// The i-th object changed by repetition `rep`: spread over the file, distinct within a
/// repetition (7919 is prime, so coprime with any size it does not divide).
@inline(__always)
func commitIndex(rep: Int, i: Int, perRep: Int, rows: Int) -> Int {
    ((rep * perRep + i) % rows) * 7919 % rows
}

/// The value repetition `rep` writes in its i-th commit (negative: no row holds one before).
@inline(__always)
func commitValue(rep: Int, i: Int, perRep: Int) -> Int64 {
    -Int64(rep * perRep + i + 1)
}

/// 500 one-Int commits to a 1M-row file; `durable` chooses FULL / synchronous=FULL, else
/// NOSYNC / synchronous=NORMAL.
func commitRow(durable: Bool) -> Row {
    Row(
        id: durable ? "commit.durable" : "commit.nosync", size: 500,
        mode: durable ? "durable" : "nosync", peer: "sqlite",
        goal: durable ? "<= 1.0x (stretch 0.7x)" : "<= 0.5x",
        swiftstore: { ctx in
            let rows = ctx.scaled(1_000_000)
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            let keys = try csBuildIntFile(path, rows: rows)
            let db = try csOpen(path, durability: durable ? CS_DURABILITY_FULL : CS_DURABILITY_NOSYNC,
                                create: false)
            let t = try csTransaction(db, write: false) { try IntTable.find($0) }
            let col = t.columns[0]
            return Runner(
                run: { rep in
                    let n = ctx.size
                    let ms = try measure {
                        var obj = cs_obj()
                        for i in 0..<n {
                            let key = keys[commitIndex(rep: rep, i: i, perRep: n, rows: rows)]
                            let txn = try csBegin(db, write: true)
                            do {
                                try CStoreError.check(cs_obj_open(txn, t.table, key, &obj), "cs_obj_open")
                                try CStoreError.check(cs_obj_set_int(&obj, col, commitValue(rep: rep, i: i, perRep: n)),
                                       "cs_obj_set_int")
                                try CStoreError.check(cs_txn_commit(txn), "cs_txn_commit")
                            } catch {
                                _ = cs_txn_end(txn)
                                throw error
                            }
                            try CStoreError.check(cs_txn_end(txn), "cs_txn_end")
                        }
                    }
                    var got: Int64 = 0
                    var want: Int64 = 0
                    try csTransaction(db, write: false) { txn in
                        var obj = cs_obj()
                        for i in 0..<n {
                            let key = keys[commitIndex(rep: rep, i: i, perRep: n, rows: rows)]
                            try CStoreError.check(cs_obj_open(txn, t.table, key, &obj), "cs_obj_open")
                            var v: Int64 = 0
                            try CStoreError.check(cs_obj_get_int(&obj, col, &v), "cs_obj_get_int")
                            got &+= v
                            want &+= commitValue(rep: rep, i: i, perRep: n)
                        }
                    }
                    return Sample(ms: ms, check: Check(what: "sum of the values written", got: got, want: want))
                },
                tearDown: { _ = cs_db_close(db) })
        },
        peerSide: { ctx in
            let rows = ctx.scaled(1_000_000)
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            try SQLiteIntTable.buildFile(path, rows: rows)
            let db = try SQLiteDB(path: path, create: false)
            try db.configure(synchronous: durable ? "FULL" : "NORMAL")
            let update = try db.prepare("UPDATE t SET i0 = ?1 WHERE rowid = ?2")
            let select = try db.prepare("SELECT i0 FROM t WHERE rowid = ?1")
            return Runner(
                run: { rep in
                    let n = ctx.size
                    let ms = try measure {
                        for i in 0..<n {
                            let rowid = Int64(commitIndex(rep: rep, i: i, perRep: n, rows: rows)) + 1
                            try update.bind(1, commitValue(rep: rep, i: i, perRep: n))
                            try update.bind(2, rowid)
                            try update.run()   // autocommit: one transaction per UPDATE
                        }
                    }
                    var got: Int64 = 0
                    var want: Int64 = 0
                    for i in 0..<n {
                        let rowid = Int64(commitIndex(rep: rep, i: i, perRep: n, rows: rows)) + 1
                        try select.bind(1, rowid)
                        guard try select.step() else {
                            throw SQLiteError(call: "SELECT", code: 0, message: "no row \(rowid)")
                        }
                        got &+= sqlite3_column_int64(select.stmt, 0)
                        sqlite3_reset(select.stmt)
                        want &+= commitValue(rep: rep, i: i, perRep: n)
                    }
                    return Sample(ms: ms, check: Check(what: "sum of the values written", got: got, want: want))
                },
                tearDown: {
                    update.finalize()
                    select.finalize()
                    db.close()
                })
        })
}

// MARK: - read.begin

/// Objects in the read.begin file; the i-th read reads object i % readBeginRows.
let readBeginRows = 1000

func readBeginRow() -> Row {
    Row(
        id: "read.begin", size: 1_000_000, mode: "durable", peer: "sqlite", goal: "<= 0.1x",
        swiftstore: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            let keys = try csBuildIntFile(path, rows: readBeginRows)
            let db = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
            let t = try csTransaction(db, write: false) { try IntTable.find($0) }
            let col = t.columns[3]
            return Runner(
                run: { _ in
                    var sum: Int64 = 0
                    let ms = try measure {
                        var obj = cs_obj()
                        try keys.withUnsafeBufferPointer { keys in
                            for i in 0..<ctx.size {
                                var txn: OpaquePointer?
                                try CStoreError.check(cs_txn_begin(db, Int32(CS_TXN_READ), &txn), "cs_txn_begin")
                                var v: Int64 = 0
                                var rc = cs_obj_open(txn, t.table, keys[i % readBeginRows], &obj)
                                if rc == csOK { rc = cs_obj_get_int(&obj, col, &v) }
                                let rcEnd = cs_txn_end(txn)
                                try CStoreError.check(rc, "cs_obj_open / cs_obj_get_int")
                                try CStoreError.check(rcEnd, "cs_txn_end")
                                sum &+= v
                            }
                        }
                    }
                    return Sample(ms: ms, check: Check(what: "sum of the values read", got: sum,
                                                       want: readBeginWant(ctx.size)))
                },
                tearDown: { _ = cs_db_close(db) })
        },
        peerSide: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            try SQLiteIntTable.buildFile(path, rows: readBeginRows)
            let db = try SQLiteDB(path: path, create: false)
            try db.configure(synchronous: "FULL")
            let begin = try db.prepare("BEGIN")
            let select = try db.prepare("SELECT i3 FROM t WHERE rowid = ?1")
            let commit = try db.prepare("COMMIT")
            return Runner(
                run: { _ in
                    var sum: Int64 = 0
                    let ms = try measure {
                        for i in 0..<ctx.size {
                            try begin.run()
                            try select.bind(1, Int64(i % readBeginRows) + 1)
                            guard try select.step() else {
                                throw SQLiteError(call: "SELECT", code: 0, message: "no row")
                            }
                            sum &+= sqlite3_column_int64(select.stmt, 0)
                            sqlite3_reset(select.stmt)
                            try commit.run()
                        }
                    }
                    return Sample(ms: ms, check: Check(what: "sum of the values read", got: sum,
                                                       want: readBeginWant(ctx.size)))
                },
                tearDown: {
                    begin.finalize()
                    select.finalize()
                    commit.finalize()
                    db.close()
                })
        })
}

/// Sum of i % readBeginRows for i in 0 ..< n.
func readBeginWant(_ n: Int) -> Int64 {
    let full = n / readBeginRows
    let rest = n % readBeginRows
    return Int64(full) * triangle(readBeginRows) + triangle(rest)
}
