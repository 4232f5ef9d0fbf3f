// The scaling rows (README.md, "Scaling rows"): primary-key lookups, one-row durable commits and a
// counting query on files of 1k, 100k, 10M and 100M objects, each against SQLite at the same
// size, and size.objects.1M (bytes on disk after inserting 1M objects of 10 Ints).
//
// Every size uses one data set per side, built once and shared by its three rows (in the order
// pk.get, count.where, commit.durable; the commit row changes the data and removes it when it
// is done): table `S` with an Int primary key `id` and an Int `i3`, object r holding id = r and
// i3 = r, inserted in key order in commits of 1M objects.

import CSQLite
import CStore
import CStoreCall
import Foundation

/// The documented sizes of the scaling rows, with the label each row id carries.
let scaleSizes: [(label: String, n: Int)] = [("1k", 1_000), ("100k", 100_000), ("10M", 10_000_000), ("100M", 100_000_000)]

/// The three scaled workloads: their id prefix, goal, and how many operations one timed block
/// performs at a (post --quick) size `n` (the summary table divides by it).
enum ScaleMetric: String, CaseIterable {
    case pkGet = "scale.pk.get"
    case countWhere = "scale.count.where"
    case commitDurable = "scale.commit.durable"

    var goal: String {
        switch self {
        case .pkGet: return "<= 0.3x"
        case .countWhere: return "<= 0.05x"
        case .commitDurable: return "<= 1.0x"
        }
    }

    /// Operations per timed block: lookups, queries or commits.
    func operations(size n: Int, quick: Bool) -> Int {
        switch self {
        case .pkGet: return quick ? 10_000 : 100_000
        case .countWhere: return max(1, (quick ? 1_000_000 : 10_000_000) / max(1, n))
        case .commitDurable: return quick ? 50 : 200
        }
    }

    /// What one operation is, for the summary table.
    var operationName: String {
        switch self {
        case .pkGet: return "µs per lookup"
        case .countWhere: return "ns per object counted"
        case .commitDurable: return "µs per commit"
        }
    }
}

/// The i-th key probed by a pk.get block on n objects (a fixed pseudo-random sequence).
@inline(__always)
private func scaleProbe(_ j: Int, _ n: Int) -> Int64 { Int64((j &* 2_654_435_761) % n) }

/// What a pk.get block of `ops` lookups on n objects must read: the sum of the probed keys
/// (object r holds i3 = r).
private func scaleProbeSum(_ ops: Int, _ n: Int) -> Int64 {
    (0..<ops).reduce(Int64(0)) { $0 &+ scaleProbe($1, n) }
}

/// What a count.where block of `ops` counts of `i3 > n/2` on n objects must total.
private func scaleMatches(_ ops: Int, _ n: Int) -> Int64 {
    Int64(ops) * (Int64(n) - Int64(n / 2) - 1)
}

/// The key changed by the i-th commit of repetition `rep`, and the value it writes (negative:
/// no object holds one before).
@inline(__always)
private func scaleCommitKey(rep: Int, i: Int, perRep: Int, n: Int) -> Int64 {
    Int64(((rep * perRep + i) &* 7919) % n)
}

/// Where a size's shared data set lives: beside the rows' own directories in the scratch root.
private func scaleDataDirectory(_ ctx: RowContext, side: String) -> URL {
    ctx.directory.deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scale-data", isDirectory: true)
        .appendingPathComponent("\(side)-\(ctx.size)", isDirectory: true)
}

/// Objects per commit while building a data set.
private let scaleBuildBatch = 1_000_000

/// The path of a side's data set of ctx.size objects, built by `build` unless a row of this
/// size built it already (a marker file says the build finished).
private func scaleDataSet(_ ctx: RowContext, side: String, file: String, build: (String) throws -> Void) throws -> String {
    let dir = scaleDataDirectory(ctx, side: side)
    let path = dir.appendingPathComponent(file).path
    let done = dir.appendingPathComponent("built").path
    if FileManager.default.fileExists(atPath: done) { return path }
    try? FileManager.default.removeItem(at: dir)
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    try build(path)
    try Data().write(to: URL(fileURLWithPath: done))
    return path
}

/// The SwiftStore data set of ctx.size objects.
private func scaleSwiftStoreFile(_ ctx: RowContext) throws -> String {
    try scaleDataSet(ctx, side: "swiftstore", file: "scale.cstore") { path in
        let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: true)
        do {
            let (table, i3) = try csTransaction(db, write: true) { txn -> (UInt32, UInt32) in
                var t: UInt32 = 0, id: UInt32 = 0, v: UInt32 = 0
                try CStoreError.check(cs_table_add(txn, "S", 0, &t), "cs_table_add")
                try CStoreError.check(cs_column_add(txn, t, "id", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &id), "cs_column_add")
                try CStoreError.check(cs_column_add(txn, t, "i3", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &v), "cs_column_add")
                try CStoreError.check(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
                return (t, v)
            }
            for start in stride(from: 0, to: ctx.size, by: scaleBuildBatch) {
                try csTransaction(db, write: true) { txn in
                    var o = cs_obj()
                    for r in start..<min(ctx.size, start + scaleBuildBatch) {
                        var pk = cs_int(Int64(r))
                        try CStoreError.check(cs_obj_create_primary(txn, table, &pk, &o), "cs_obj_create_primary")
                        try CStoreError.check(cs_obj_set_int(&o, i3, Int64(r)), "cs_obj_set_int")
                    }
                }
            }
            try csClose(db)
        } catch {
            _ = cs_db_close(db)
            throw error
        }
    }
}

/// The SQLite data set of ctx.size rows: `s(id INTEGER PRIMARY KEY, i3 INTEGER NOT NULL)`.
private func scaleSQLiteFile(_ ctx: RowContext) throws -> String {
    try scaleDataSet(ctx, side: "sqlite", file: "scale.sqlite") { path in
        let db = try SQLiteDB(path: path)
        defer { db.close() }
        try db.configure(synchronous: "OFF")
        try db.exec("CREATE TABLE s(id INTEGER PRIMARY KEY, i3 INTEGER NOT NULL)")
        let ins = try db.prepare("INSERT INTO s(id, i3) VALUES(?1, ?2)")
        defer { ins.finalize() }
        for start in stride(from: 0, to: ctx.size, by: scaleBuildBatch) {
            try db.exec("BEGIN")
            for r in start..<min(ctx.size, start + scaleBuildBatch) {
                try ins.bind(1, Int64(r))
                try ins.bind(2, Int64(r))
                try ins.run()
            }
            try db.exec("COMMIT")
        }
        try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}

/// Table and column keys of the SwiftStore data set.
private func scaleColumns(_ db: OpaquePointer) throws -> (table: UInt32, i3: UInt32) {
    try csTransaction(db, write: false) { txn in
        var t: UInt32 = 0, v: UInt32 = 0
        try CStoreError.check(cs_table_find(txn, "S", &t), "cs_table_find")
        try CStoreError.check(cs_column_find(txn, t, "i3", &v), "cs_column_find")
        return (t, v)
    }
}

/// Opens into `o` the object of `table` whose primary key is `pk` (the index, then the object).
@inline(__always)
private func scaleOpen(_ txn: OpaquePointer, _ table: UInt32, _ pk: Int64, _ o: inout cs_obj) throws {
    var value = cs_int(pk)
    var key: Int64 = 0
    try CStoreError.check(cs_table_find_primary(txn, table, &value, &key), "cs_table_find_primary")
    try CStoreError.check(cs_obj_open(txn, table, key, &o), "cs_obj_open")
}

/// One scaling row: `metric` on the data set of size `n` (documented size; ctx.size under --quick).
func scaleRow(_ metric: ScaleMetric, label: String, n: Int) -> Row {
    Row(
        id: "\(metric.rawValue).\(label)", size: n, mode: "durable", peer: "sqlite", goal: metric.goal,
        swiftstore: { ctx in
            let n = ctx.size
            let ops = metric.operations(size: n, quick: ctx.quick)
            let path = try scaleSwiftStoreFile(ctx)
            let db = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
            let (table, i3) = try scaleColumns(db)
            let dataDir = scaleDataDirectory(ctx, side: "swiftstore")
            return Runner(
                run: { rep in
                    switch metric {
                    case .pkGet:
                        var sum: Int64 = 0
                        let ms = try measure {
                            let txn = try csBegin(db, write: false)
                            defer { _ = cs_txn_end(txn) }
                            var o = cs_obj()
                            for j in 0..<ops {
                                try scaleOpen(txn, table, scaleProbe(j, n), &o)
                                var v: Int64 = 0
                                try CStoreError.check(cs_obj_get_int(&o, i3, &v), "cs_obj_get_int")
                                sum &+= v
                            }
                        }
                        return Sample(ms: ms, check: Check(what: "sum of i3 read", got: sum, want: scaleProbeSum(ops, n)))
                    case .countWhere:
                        var total: Int64 = 0
                        let threshold = Int64(n / 2)
                        let ms = try measure {
                            let txn = try csBegin(db, write: false)
                            defer { _ = cs_txn_end(txn) }
                            let q = try csQuery(txn, table, "i3 > \(threshold)")
                            defer { cs_query_free(q) }
                            for _ in 0..<ops {
                                var c: UInt64 = 0
                                try CStoreError.check(cs_query_count(q, &c), "cs_query_count")
                                total += Int64(c)
                            }
                        }
                        return Sample(ms: ms, check: Check(what: "matches", got: total, want: scaleMatches(ops, n)))
                    case .commitDurable:
                        let ms = try measure {
                            var o = cs_obj()
                            for i in 0..<ops {
                                let txn = try csBegin(db, write: true)
                                do {
                                    try scaleOpen(txn, table, scaleCommitKey(rep: rep, i: i, perRep: ops, n: n), &o)
                                    try CStoreError.check(cs_obj_set_int(&o, i3, commitValue(rep: rep, i: i, perRep: ops)), "cs_obj_set_int")
                                    try CStoreError.check(cs_txn_commit(txn), "cs_txn_commit")
                                } catch {
                                    _ = cs_txn_end(txn)
                                    throw error
                                }
                                try CStoreError.check(cs_txn_end(txn), "cs_txn_end")
                            }
                        }
                        var got: Int64 = 0, want: Int64 = 0
                        try csTransaction(db, write: false) { txn in
                            var o = cs_obj()
                            var seen = Set<Int64>()
                            for i in (0..<ops).reversed() {   // the last write of a key wins
                                let pk = scaleCommitKey(rep: rep, i: i, perRep: ops, n: n)
                                guard seen.insert(pk).inserted else { continue }
                                try scaleOpen(txn, table, pk, &o)
                                var v: Int64 = 0
                                try CStoreError.check(cs_obj_get_int(&o, i3, &v), "cs_obj_get_int")
                                got &+= v
                                want &+= commitValue(rep: rep, i: i, perRep: ops)
                            }
                        }
                        return Sample(ms: ms, check: Check(what: "sum of the values written", got: got, want: want))
                    }
                },
                tearDown: {
                    _ = cs_db_close(db)
                    if metric == .commitDurable { try? FileManager.default.removeItem(at: dataDir) }
                })
        },
        peerSide: { ctx in
            let n = ctx.size
            let ops = metric.operations(size: n, quick: ctx.quick)
            let path = try scaleSQLiteFile(ctx)
            let db = try SQLiteDB(path: path, create: false)
            try db.configure(synchronous: "FULL")
            let dataDir = scaleDataDirectory(ctx, side: "sqlite")
            return Runner(
                run: { rep in
                    switch metric {
                    case .pkGet:
                        var sum: Int64 = 0
                        let ms = try measure {
                            try db.exec("BEGIN")
                            let s = try db.prepare("SELECT i3 FROM s WHERE id = ?1")
                            for j in 0..<ops {
                                try s.bind(1, scaleProbe(j, n))
                                if try s.step() { sum &+= sqlite3_column_int64(s.stmt, 0) }
                                sqlite3_reset(s.stmt)
                            }
                            s.finalize()
                            try db.exec("COMMIT")
                        }
                        return Sample(ms: ms, check: Check(what: "sum of i3 read", got: sum, want: scaleProbeSum(ops, n)))
                    case .countWhere:
                        var total: Int64 = 0
                        let threshold = Int64(n / 2)
                        let ms = try measure {
                            try db.exec("BEGIN")
                            let s = try db.prepare("SELECT COUNT(*) FROM s WHERE i3 > ?1")
                            for _ in 0..<ops {
                                try s.bind(1, threshold)
                                if try s.step() { total += sqlite3_column_int64(s.stmt, 0) }
                                sqlite3_reset(s.stmt)
                            }
                            s.finalize()
                            try db.exec("COMMIT")
                        }
                        return Sample(ms: ms, check: Check(what: "matches", got: total, want: scaleMatches(ops, n)))
                    case .commitDurable:
                        let update = try db.prepare("UPDATE s SET i3 = ?1 WHERE id = ?2")
                        defer { update.finalize() }
                        let ms = try measure {
                            for i in 0..<ops {
                                try update.bind(1, commitValue(rep: rep, i: i, perRep: ops))
                                try update.bind(2, scaleCommitKey(rep: rep, i: i, perRep: ops, n: n))
                                try update.run()   // autocommit: one transaction per UPDATE
                            }
                        }
                        let select = try db.prepare("SELECT i3 FROM s WHERE id = ?1")
                        defer { select.finalize() }
                        var got: Int64 = 0, want: Int64 = 0
                        var seen = Set<Int64>()
                        for i in (0..<ops).reversed() {
                            let id = scaleCommitKey(rep: rep, i: i, perRep: ops, n: n)
                            guard seen.insert(id).inserted else { continue }
                            try select.bind(1, id)
                            guard try select.step() else {
                                throw SQLiteError(call: "SELECT", code: 0, message: "no row \(id)")
                            }
                            got &+= sqlite3_column_int64(select.stmt, 0)
                            sqlite3_reset(select.stmt)
                            want &+= commitValue(rep: rep, i: i, perRep: ops)
                        }
                        return Sample(ms: ms, check: Check(what: "sum of the values written", got: got, want: want))
                    }
                },
                tearDown: {
                    db.close()
                    if metric == .commitDurable { try? FileManager.default.removeItem(at: dataDir) }
                })
        })
}

/// Every scaling row up to `maxSize` objects (documented sizes), three per size.
func scaleRows(maxSize: Int) -> [Row] {
    scaleSizes.filter { $0.n <= maxSize }.flatMap { s in
        [ScaleMetric.pkGet, .countWhere, .commitDurable].map { scaleRow($0, label: s.label, n: s.n) }
    }
}

/// The summary of the scaling rows that ran: per metric, the cost of one operation on each side
/// at each size, the ratio, and the growth of SwiftStore's cost from the smallest size to the
/// largest (for count.where, per object counted: 1.0 is linear).
func scaleSummary(_ results: [RowResult], quick: Bool) -> [String] {
    var lines: [String] = []
    for metric in ScaleMetric.allCases {
        let rows = results.filter { $0.row.id.hasPrefix(metric.rawValue + ".") }.sorted { $0.size < $1.size }
        guard !rows.isEmpty else { continue }
        func perOp(_ ms: Double, _ size: Int) -> Double {
            let ops = Double(metric.operations(size: size, quick: quick))
            switch metric {
            case .pkGet, .commitDurable: return ms * 1000 / ops          // µs
            case .countWhere: return ms * 1e6 / (ops * Double(size))      // ns per object
            }
        }
        lines.append("")
        lines.append("\(metric.rawValue) (\(metric.operationName)):")
        lines.append("| size | SwiftStore | SQLite | ratio |")
        lines.append("|---:|---:|---:|---:|")
        for r in rows {
            let ours = perOp(r.swiftstoreMs, r.size)
            let peer = r.peerMs.map { perOp($0, r.size) }
            lines.append("| \(r.size) | \(String(format: "%.4g", ours)) | \(peer.map { String(format: "%.4g", $0) } ?? "n/a") "
                + "| \(r.ratio.map(formatRatio) ?? "n/a") |")
        }
        if rows.count > 1, let first = rows.first, let last = rows.last {
            let ours = perOp(last.swiftstoreMs, last.size) / perOp(first.swiftstoreMs, first.size)
            var peer: Double?
            if let a = first.peerMs, let b = last.peerMs { peer = perOp(b, last.size) / perOp(a, first.size) }
            lines.append("growth \(first.size) -> \(last.size): SwiftStore \(String(format: "%.2fx", ours))"
                + (peer.map { ", SQLite \(String(format: "%.2fx", $0))" } ?? ""))
        }
    }
    return lines
}

// MARK: - size.objects.1M

/// Bytes on disk after inserting 1M objects of 10 Ints (row r holds r in every column) in one
/// commit, against SQLite's file of the same rows (after a checkpoint folds its WAL in).
func sizeObjectsRow() -> Row {
    Row(
        id: "size.objects.1M", size: 1_000_000, mode: "durable", peer: "sqlite", goal: "<= 0.5x",
        swiftstore: { ctx in
            Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let path = dir.appendingPathComponent("size.cstore").path
                let ms = try measure { _ = try csBuildIntFile(path, rows: ctx.size) }
                let bytes = bytesOnDisk(path)
                let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: false)
                defer { _ = cs_db_close(db) }
                let (sum, _) = try csTransaction(db, write: false) { try IntTable.find($0).sumAll($0) }
                return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: 10 * triangle(ctx.size)), bytes: bytes)
            })
        },
        peerSide: { ctx in
            Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let path = dir.appendingPathComponent("size.sqlite").path
                let ms = try measure { try SQLiteIntTable.buildFile(path, rows: ctx.size) }
                let db = try SQLiteDB(path: path, create: false)
                defer { db.close() }
                try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
                let bytes = bytesOnDisk(path) + bytesOnDisk(path + "-wal")
                return Sample(ms: ms, check: Check(what: "sum of all values", got: try db.scalar(SQLiteIntTable.sumAll), want: 10 * triangle(ctx.size)), bytes: bytes)
            })
        },
        unit: .bytes)
}
