// The query rows: aggregates, counts, equality lookups with and without an index, sorting and
// primary-key lookups, through cstore.h's query engine and index API against SQLite.

import CSQLite
import CStore
import CStoreCall
import Foundation

/// A query on `table` with `args`; freed by the caller.
func csQuery(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ args: [cs_value] = []) throws -> OpaquePointer {
    var q: OpaquePointer?
    let rc = text.withCString { p in
        args.withUnsafeBufferPointer { a in cs_query_new(txn, table, p, strlen(p), a.baseAddress, a.count, &q) }
    }
    try CStoreError.check(rc, "cs_query_new")
    return q!
}

/// A read-only side over a pre-built 10-Int file (row r holds r everywhere) and a SQLite twin.
private func intFileSides(rows: @escaping (RowContext) -> Int,
                          swift: @escaping (OpaquePointer, IntTable, Int) throws -> Sample,
                          peer: @escaping (SQLiteDB, Int) throws -> Sample) -> (swiftstore: (RowContext) throws -> Runner, peer: (RowContext) throws -> Runner) {
    let s: (RowContext) throws -> Runner = { ctx in
        let n = rows(ctx)
        let path = ctx.directory.appendingPathComponent("bench.cstore").path
        _ = try csBuildIntFile(path, rows: n)
        let db = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
        let t = try csTransaction(db, write: false) { try IntTable.find($0) }
        return Runner(run: { _ in try swift(db, t, n) }, tearDown: { _ = cs_db_close(db) })
    }
    let p: (RowContext) throws -> Runner = { ctx in
        let n = rows(ctx)
        let path = ctx.directory.appendingPathComponent("bench.sqlite").path
        try SQLiteIntTable.buildFile(path, rows: n)
        let db = try SQLiteDB(path: path, create: false)
        try db.configure(synchronous: "FULL")
        return Runner(run: { _ in try peer(db, n) }, tearDown: { db.close() })
    }
    return (s, p)
}

// MARK: - sum.1M and count.where.1M

func sumRow() -> Row {
    let sides = intFileSides(
        rows: { $0.size },
        swift: { db, t, n in
            var sum: Int64 = 0
            let ms = try measure {
                let txn = try csBegin(db, write: false)
                defer { _ = cs_txn_end(txn) }
                let q = try csQuery(txn, t.table, "TRUEPREDICATE")
                defer { cs_query_free(q) }
                var v = cs_value()
                try CStoreError.check(cs_query_aggregate(q, t.columns[0], CS_AGG_SUM, &v), "cs_query_aggregate")
                sum = v.v.i
            }
            return Sample(ms: ms, check: Check(what: "sum of i0", got: sum, want: triangle(n)))
        },
        peer: { db, n in
            var sum: Int64 = 0
            let ms = try measure { sum = try db.scalar("SELECT SUM(i0) FROM t") }
            return Sample(ms: ms, check: Check(what: "sum of i0", got: sum, want: triangle(n)))
        })
    return Row(id: "sum.1M", size: 1_000_000, mode: "durable", peer: "sqlite", goal: "<= 0.05x",
               swiftstore: sides.swiftstore, peerSide: sides.peer)
}

func countWhereRow() -> Row {
    let sides = intFileSides(
        rows: { $0.size },
        swift: { db, t, n in
            var count: Int64 = 0
            let threshold = Int64(n / 2)
            let ms = try measure {
                let txn = try csBegin(db, write: false)
                defer { _ = cs_txn_end(txn) }
                let q = try csQuery(txn, t.table, "i3 > \(threshold)")
                defer { cs_query_free(q) }
                var c: UInt64 = 0
                try CStoreError.check(cs_query_count(q, &c), "cs_query_count")
                count = Int64(c)
            }
            return Sample(ms: ms, check: Check(what: "matches", got: count, want: Int64(n) - threshold - 1))
        },
        peer: { db, n in
            var count: Int64 = 0
            let threshold = Int64(n / 2)
            let ms = try measure { count = try db.scalar("SELECT COUNT(*) FROM t WHERE i3 > \(threshold)") }
            return Sample(ms: ms, check: Check(what: "matches", got: count, want: Int64(n) - threshold - 1))
        })
    return Row(id: "count.where.1M", size: 1_000_000, mode: "durable", peer: "sqlite", goal: "<= 0.05x",
               swiftstore: sides.swiftstore, peerSide: sides.peer)
}

// MARK: - query.eq.200k.indexed and query.eq.200k.scan

/// 1000 equality queries `i1 == k` (k = 0..999) collecting the matching keys; with `indexed` the
/// column has an ordered index (SwiftStore: cs_column_set_indexed; SQLite: CREATE INDEX).
func queryEqRow(indexed: Bool) -> Row {
    let queries = 1000
    return Row(
        id: indexed ? "query.eq.200k.indexed" : "query.eq.200k.scan", size: 200_000, mode: "durable",
        peer: "sqlite", goal: indexed ? "<= 1.0x" : "<= 0.1x",
        swiftstore: { ctx in
            let n = ctx.size
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            _ = try csBuildIntFile(path, rows: n)
            let db = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
            let t = try csTransaction(db, write: indexed) { txn -> IntTable in
                let t = try IntTable.find(txn)
                if indexed { try CStoreError.check(cs_column_set_indexed(txn, t.table, t.columns[1], true), "cs_column_set_indexed") }
                return t
            }
            return Runner(run: { _ in
                var keySum: Int64 = 0
                var found: Int64 = 0
                let ms = try measure {
                    let txn = try csBegin(db, write: false)
                    defer { _ = cs_txn_end(txn) }
                    // One prepared query, its argument rebound for every k (as SQLite's statement).
                    let q = try csQuery(txn, t.table, "i1 == $0", [cs_int(0)])
                    defer { cs_query_free(q) }
                    for k in 0..<queries {
                        var arg = cs_int(Int64(k))
                        try CStoreError.check(cs_query_set_args(q, &arg, 1), "cs_query_set_args")
                        var keys: UnsafeMutablePointer<Int64>?
                        var count = 0
                        try CStoreError.check(cs_query_keys(q, &keys, &count), "cs_query_keys")
                        for i in 0..<count { keySum &+= keys![i] }
                        found += Int64(count)
                        cs_keys_free(keys)
                    }
                }
                // Row r holds r, and SwiftStore's keys are the row numbers.
                if found != Int64(queries) { return Sample(ms: ms, check: Check(what: "matches", got: found, want: Int64(queries))) }
                return Sample(ms: ms, check: Check(what: "sum of matching keys", got: keySum, want: triangle(queries)))
            }, tearDown: { _ = cs_db_close(db) })
        },
        peerSide: { ctx in
            let n = ctx.size
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            try SQLiteIntTable.buildFile(path, rows: n)
            let db = try SQLiteDB(path: path, create: false)
            try db.configure(synchronous: "FULL")
            if indexed { try db.exec("CREATE INDEX t_i1 ON t(i1)") }
            return Runner(run: { _ in
                var keySum: Int64 = 0
                var found: Int64 = 0
                let ms = try measure {
                    try db.exec("BEGIN")
                    let s = try db.prepare("SELECT rowid FROM t WHERE i1 = ?1")
                    for k in 0..<queries {
                        try s.bind(1, Int64(k))
                        while try s.step() {
                            keySum &+= sqlite3_column_int64(s.stmt, 0) - 1 // rowids start at 1
                            found += 1
                        }
                        sqlite3_reset(s.stmt)
                    }
                    s.finalize()
                    try db.exec("COMMIT")
                }
                if found != Int64(queries) { return Sample(ms: ms, check: Check(what: "matches", got: found, want: Int64(queries))) }
                return Sample(ms: ms, check: Check(what: "sum of matching keys", got: keySum, want: triangle(queries)))
            }, tearDown: { db.close() })
        })
}

// MARK: - sort.200k

/// Deterministic pseudo-random values (the same on both sides).
func randomValue(_ i: Int) -> Int64 {
    var z = UInt64(i) &+ 0x9E3779B97F4A7C15
    z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
    return Int64(bitPattern: z ^ (z >> 31)) >> 16
}

/// Order check of a sorted result: a position-weighted checksum of the keys.
func orderChecksum(_ keys: [Int64]) -> Int64 {
    var h: Int64 = 0
    for (i, k) in keys.enumerated() { h = h &* 31 &+ k &* Int64(i + 1) }
    return h
}

func sortRow() -> Row {
    Row(
        id: "sort.200k", size: 200_000, mode: "durable", peer: "sqlite", goal: "<= 0.5x",
        swiftstore: { ctx in
            let n = ctx.size
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: true)
            let (table, col) = try csTransaction(db, write: true) { txn -> (UInt32, UInt32) in
                var t: UInt32 = 0, c: UInt32 = 0
                try CStoreError.check(cs_table_add(txn, "R", 0, &t), "cs_table_add")
                try CStoreError.check(cs_column_add(txn, t, "v", CS_TYPE_INT, CS_COLL_NONE, 0, 0, &c), "cs_column_add")
                for i in 0..<n {
                    var o = cs_obj()
                    try CStoreError.check(cs_obj_create(txn, t, &o), "cs_obj_create")
                    try CStoreError.check(cs_obj_set_int(&o, c, randomValue(i)), "cs_obj_set_int")
                }
                return (t, c)
            }
            _ = col
            let want = orderChecksum((0..<n).sorted { (randomValue($0), $0) < (randomValue($1), $1) }.map { Int64($0) })
            return Runner(run: { _ in
                var got: Int64 = 0
                var sorted: [Int64] = []
                let ms = try measure {
                    let txn = try csBegin(db, write: false)
                    defer { _ = cs_txn_end(txn) }
                    let q = try csQuery(txn, table, "TRUEPREDICATE SORT(v ASC)")
                    defer { cs_query_free(q) }
                    var keys: UnsafeMutablePointer<Int64>?
                    var count = 0
                    try CStoreError.check(cs_query_keys(q, &keys, &count), "cs_query_keys")
                    sorted = Array(UnsafeBufferPointer(start: keys, count: count))
                    cs_keys_free(keys)
                }
                got = orderChecksum(sorted)
                return Sample(ms: ms, check: Check(what: "order checksum", got: got, want: want))
            }, tearDown: { _ = cs_db_close(db) })
        },
        peerSide: { ctx in
            let n = ctx.size
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            let db = try SQLiteDB(path: path)
            try db.configure(synchronous: "OFF")
            try db.exec("CREATE TABLE r(v INTEGER NOT NULL)")
            try db.exec("BEGIN")
            let ins = try db.prepare("INSERT INTO r(v) VALUES(?1)")
            for i in 0..<n { try ins.bind(1, randomValue(i)); try ins.run() }
            ins.finalize()
            try db.exec("COMMIT")
            let want = orderChecksum((0..<n).sorted { (randomValue($0), $0) < (randomValue($1), $1) }.map { Int64($0) })
            return Runner(run: { _ in
                var sorted: [Int64] = []
                sorted.reserveCapacity(n)
                let ms = try measure {
                    let s = try db.prepare("SELECT rowid FROM r ORDER BY v, rowid")
                    defer { s.finalize() }
                    while try s.step() { sorted.append(sqlite3_column_int64(s.stmt, 0) - 1) }
                }
                return Sample(ms: ms, check: Check(what: "order checksum", got: orderChecksum(sorted), want: want))
            }, tearDown: { db.close() })
        })
}

// MARK: - pk.get.1M

/// 1M objects with an Int primary key (7919·i mod n) and an 80-byte binary; 1M random lookups
/// by primary key, each reading the binary.
func pkGetRow() -> Row {
    func pkOf(_ i: Int, _ n: Int) -> Int64 { Int64((i * 7919) % n) }
    func probe(_ j: Int, _ n: Int) -> Int64 { Int64((j &* 2_654_435_761) % n) }
    return Row(
        id: "pk.get.1M", size: 1_000_000, mode: "durable", peer: "sqlite", goal: "<= 0.3x",
        swiftstore: { ctx in
            let n = ctx.size
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: true)
            var blob = [UInt8](repeating: 0, count: 80)
            let (table, bin) = try csTransaction(db, write: true) { txn -> (UInt32, UInt32) in
                var t: UInt32 = 0, id: UInt32 = 0, b: UInt32 = 0
                try CStoreError.check(cs_table_add(txn, "P", 0, &t), "cs_table_add")
                try CStoreError.check(cs_column_add(txn, t, "id", CS_TYPE_INT, CS_COLL_NONE, 0, 0, &id), "cs_column_add")
                try CStoreError.check(cs_column_add(txn, t, "bin", CS_TYPE_BINARY, CS_COLL_NONE, 0, 0, &b), "cs_column_add")
                try CStoreError.check(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
                for i in 0..<n {
                    var o = cs_obj()
                    var pk = cs_int(pkOf(i, n))
                    try CStoreError.check(cs_obj_create_primary(txn, t, &pk, &o), "cs_obj_create_primary")
                    blob[0] = UInt8(truncatingIfNeeded: pkOf(i, n))
                    var v = blob.withUnsafeBytes { cs_binary($0.baseAddress, 80) }
                    try CStoreError.check(cs_obj_set(&o, b, &v), "cs_obj_set")
                }
                return (t, b)
            }
            return Runner(run: { _ in
                var check: Int64 = 0
                let ms = try measure {
                    let txn = try csBegin(db, write: false)
                    defer { _ = cs_txn_end(txn) }
                    for j in 0..<n {
                        var pk = cs_int(probe(j, n))
                        var key: Int64 = 0
                        try CStoreError.check(cs_table_find_primary(txn, table, &pk, &key), "cs_table_find_primary")
                        var o = cs_obj()
                        try CStoreError.check(cs_obj_open(txn, table, key, &o), "cs_obj_open")
                        var v = cs_value()
                        try CStoreError.check(cs_obj_get(&o, bin, &v), "cs_obj_get")
                        check &+= Int64(v.v.bytes.ptr!.load(as: UInt8.self)) + Int64(v.v.bytes.len)
                    }
                }
                var want: Int64 = 0
                for j in 0..<n { want &+= Int64(UInt8(truncatingIfNeeded: probe(j, n))) + 80 }
                return Sample(ms: ms, check: Check(what: "bytes read", got: check, want: want))
            }, tearDown: { _ = cs_db_close(db) })
        },
        peerSide: { ctx in
            let n = ctx.size
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            let db = try SQLiteDB(path: path)
            try db.configure(synchronous: "OFF")
            try db.exec("CREATE TABLE p(id INTEGER PRIMARY KEY, bin BLOB NOT NULL)")
            try db.exec("BEGIN")
            let ins = try db.prepare("INSERT INTO p(id, bin) VALUES(?1, ?2)")
            var blob = [UInt8](repeating: 0, count: 80)
            for i in 0..<n {
                try ins.bind(1, pkOf(i, n))
                blob[0] = UInt8(truncatingIfNeeded: pkOf(i, n))
                _ = blob.withUnsafeBytes { sqlite3_bind_blob(ins.stmt, 2, $0.baseAddress, 80, nil) }
                try ins.run()
            }
            ins.finalize()
            try db.exec("COMMIT")
            return Runner(run: { _ in
                var check: Int64 = 0
                let ms = try measure {
                    try db.exec("BEGIN")
                    let s = try db.prepare("SELECT bin FROM p WHERE id = ?1")
                    for j in 0..<n {
                        try s.bind(1, probe(j, n))
                        if try s.step() {
                            let p = sqlite3_column_blob(s.stmt, 0)!
                            check &+= Int64(p.load(as: UInt8.self)) + Int64(sqlite3_column_bytes(s.stmt, 0))
                        }
                        sqlite3_reset(s.stmt)
                    }
                    s.finalize()
                    try db.exec("COMMIT")
                }
                var want: Int64 = 0
                for j in 0..<n { want &+= Int64(UInt8(truncatingIfNeeded: probe(j, n))) + 80 }
                return Sample(ms: ms, check: Check(what: "bytes read", got: check, want: want))
            }, tearDown: { db.close() })
        })
}
