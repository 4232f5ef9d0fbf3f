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
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: ctx.size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    return Runner(
        run: { _ in
            guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
            var n = 0
            let ms = measure { n = realm.objects(Item.self).filter("i3 > 100000").count }
            return Sample(ms: ms, check: Check(what: "matches", got: Int64(n), want: countAbove100k(ctx.size)))
        },
        tearDown: { box.realm = nil })
}

/// Timed: GRDB's `filter(Column("i3") > 100000).fetchCount(db)` in a read.
func grdbCountWhere(_ ctx: RowContext) throws -> Runner {
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: ctx.size)
    let queue = try grdbQueue(path)
    return Runner(
        run: { _ in
            var n = 0
            let ms = try measure {
                n = try queue.read { db in try GRDBFetchItem.filter(Column("i3") > 100_000).fetchCount(db) }
            }
            return Sample(ms: ms, check: Check(what: "matches", got: Int64(n), want: countAbove100k(ctx.size)))
        },
        tearDown: { try? queue.close() })
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
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: ctx.size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    return Runner(
        run: { _ in
            guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
            var sum = 0
            let ms = measure { sum = realm.objects(Item.self).sum(ofProperty: "i3") }
            return Sample(ms: ms, check: Check(what: "sum of i3", got: Int64(sum), want: triangle(ctx.size)))
        },
        tearDown: { box.realm = nil })
}

/// Timed: `SELECT SUM(i3) FROM t` through GRDB in a read.
func grdbSumColumn(_ ctx: RowContext) throws -> Runner {
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: ctx.size)
    let queue = try grdbQueue(path)
    return Runner(
        run: { _ in
            var sum: Int64 = 0
            let ms = try measure {
                sum = try queue.read { db in try Int64.fetchOne(db, sql: "SELECT SUM(i3) FROM t") ?? 0 }
            }
            return Sample(ms: ms, check: Check(what: "sum of i3", got: sum, want: triangle(ctx.size)))
        },
        tearDown: { try? queue.close() })
}
