// The object-level query rows: a filtered count and a sum through SwiftStore's `Results`,
// against GRDB's query interface and `SELECT SUM` through GRDB, on the same 10-Int shape (row
// r holds r in every column).

import Foundation
import GRDB
import SwiftStore

// MARK: - count.where.200k

func countWhereObjectsRow() -> Row {
    Row(
        id: "count.where.200k", size: 200_000, mode: "durable", peer: "grdb", goal: "<= 0.1x",
        swiftstore: swiftstoreCountWhere,
        peerSide: grdbCountWhere)
}

/// Objects with i3 > 100000 among `size` (all when the size is smaller, as with --quick).
private func countAbove100k(_ size: Int) -> Int64 { Int64(max(0, size - 100_001)) }

/// Timed: `realm.objects(Item.self).filter("i3 > 100000").count` (a new Results each time).
func swiftstoreCountWhere(_ ctx: RowContext) throws -> Runner {
    try itemFileRunner(ctx, what: "matches", want: countAbove100k(ctx.size)) { realm in
        Int64(realm.objects(Item.self).filter("i3 > 100000").count)
    }
}

/// Timed: GRDB's `filter(Column("i3") > 100000).fetchCount(db)` in a read.
func grdbCountWhere(_ ctx: RowContext) throws -> Runner {
    try sqliteFileRunner(ctx, what: "matches", want: countAbove100k(ctx.size)) { db in
        Int64(try GRDBFetchItem.filter(Column("i3") > 100_000).fetchCount(db))
    }
}

// MARK: - sum.objects.1M

func sumObjectsRow() -> Row {
    Row(
        id: "sum.objects.1M", size: 1_000_000, mode: "durable", peer: "grdb", goal: "<= 0.05x, and within 2x of sum.1M",
        swiftstore: swiftstoreSumObjects,
        peerSide: grdbSumColumn)
}

/// Timed: `realm.objects(Item.self).sum(ofProperty: "i3")`.
func swiftstoreSumObjects(_ ctx: RowContext) throws -> Runner {
    try itemFileRunner(ctx, what: "sum of i3", want: triangle(ctx.size)) { realm in
        Int64(realm.objects(Item.self).sum(ofProperty: "i3") as Int)
    }
}

/// Timed: `SELECT SUM(i3) FROM t` through GRDB in a read.
func grdbSumColumn(_ ctx: RowContext) throws -> Runner {
    try sqliteFileRunner(ctx, what: "sum of i3", want: triangle(ctx.size)) { db in
        try Int64.fetchOne(db, sql: "SELECT SUM(i3) FROM t") ?? 0
    }
}

// MARK: - Runners over a prepared file

/// A runner over a file of `ctx.size` Items built (untimed) through SwiftStore and opened once:
/// each repetition times `body` on the open Realm and checks the number it returns.
private func itemFileRunner(_ ctx: RowContext, what: String, want: Int64,
                            _ body: @escaping (Realm) -> Int64) throws -> Runner {
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: ctx.size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    return Runner(
        run: { _ in
            guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
            var got: Int64 = 0
            let ms = measure { got = body(realm) }
            return Sample(ms: ms, check: Check(what: what, got: got, want: want))
        },
        tearDown: { box.realm = nil })
}

/// A runner over the same rows in a SQLite file opened once through GRDB: each repetition times
/// `body` in a read and checks the number it returns.
private func sqliteFileRunner(_ ctx: RowContext, what: String, want: Int64,
                              _ body: @escaping (Database) throws -> Int64) throws -> Runner {
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: ctx.size)
    let queue = try grdbQueue(path)
    return Runner(
        run: { _ in
            var got: Int64 = 0
            let ms = try measure { got = try queue.read(body) }
            return Sample(ms: ms, check: Check(what: what, got: got, want: want))
        },
        tearDown: { try? queue.close() })
}
