// Frozen snapshots and asynchronous writes: freeze.200k (a frozen Results read from 2 threads
// against a GRDB DatabasePool snapshot) and commit.async.1k (1,000 one-object async writes
// from 4 tasks through an actor-isolated Realm against 1,000 GRDB DatabasePool writes from 4
// tasks), both durable.

import Dispatch
import Foundation
import GRDB
import SwiftStore

// MARK: - freeze.200k

func freezeRow() -> Row {
    Row(
        id: "freeze.200k", size: 200_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: swiftstoreFreezeRead,
        peerSide: grdbSnapshotRead)
}

/// A value read by worker threads of one repetition (the harness joins them before reading it).
final class Shared<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

/// Runs `body(k)` on `n` threads at once and waits for them.
func onThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for k in 0..<n {
        group.enter()
        Thread { body(k); group.leave() }.start()
    }
    group.wait()
}

/// Each repetition freezes `realm.objects(Item.self)` and reads `i0` of every object on each
/// of 2 threads (the frozen Results needs no confinement); the answer is both threads' sums.
func swiftstoreFreezeRead(_ ctx: RowContext) throws -> Runner {
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: ctx.size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    let want = 2 * triangle(ctx.size)
    return Runner(
        run: { _ in
            guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
            let sums = Shared([Int64](repeating: 0, count: 2))
            let ms = measure {
                let frozen = Shared(realm.objects(Item.self).freeze())
                onThreads(2) { k in
                    var s: Int64 = 0
                    for o in frozen.value { s &+= Int64(o.i0) }
                    sums.value[k] = s
                }
            }
            return Sample(ms: ms, check: Check(what: "sum of i0 over 2 threads", got: sums.value[0] &+ sums.value[1], want: want))
        },
        tearDown: { box.realm = nil })
}

/// A DatabasePool on `path` with the peers' durable settings (WAL, `synchronous=FULL` on its
/// writer, checked).
func grdbPool(_ path: String) throws -> DatabasePool {
    let pool = try DatabasePool(path: path, configuration: GRDB.Configuration())
    try requireFullSync(pool)
    return pool
}

/// Each repetition takes a snapshot of the pool and reads `i0` of every row through it on each
/// of 2 threads.
func grdbSnapshotRead(_ ctx: RowContext) throws -> Runner {
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: ctx.size)
    let pool = try grdbPool(path)
    let want = 2 * triangle(ctx.size)
    return Runner(
        run: { _ in
            let sums = Shared([Int64](repeating: 0, count: 2))
            let failure = Shared<Error?>(nil)
            let ms = try measure {
                let snapshot = Shared(try pool.makeSnapshot())
                onThreads(2) { k in
                    do {
                        sums.value[k] = try snapshot.value.read { db in
                            var s: Int64 = 0
                            let rows = try Int64.fetchCursor(db, sql: "SELECT i0 FROM t")
                            while let v = try rows.next() { s &+= v }
                            return s
                        }
                    } catch { failure.value = error }
                }
            }
            if let e = failure.value { throw e }
            return Sample(ms: ms, check: Check(what: "sum of i0 over 2 threads", got: sums.value[0] &+ sums.value[1], want: want))
        },
        tearDown: { try? pool.close() })
}

// MARK: - commit.async.1k

func commitAsyncRow() -> Row {
    Row(
        id: "commit.async.1k", size: 1_000, mode: "durable", peer: "grdb", goal: "<= 0.3x",
        swiftstore: swiftstoreAsyncCommits,
        peerSide: grdbPoolWrites)
}

/// Runs `body` to completion from synchronous code.
func blocking(_ body: @escaping @Sendable () async throws -> Void) throws {
    let done = DispatchSemaphore(value: 0)
    let failure = Shared<Error?>(nil)
    Task {
        do { try await body() } catch { failure.value = error }
        done.signal()
    }
    done.wait()
    if let e = failure.value { throw e }
}

/// The actor whose Realm the async writes go through.
actor ItemWriter {
    let config: Realm.Configuration
    init(config: Realm.Configuration) { self.config = config }

    func write(count: Int, first: Int) async throws {
        let realm = try await Realm(configuration: config, actor: self)
        for r in 0..<count {
            try await realm.asyncWrite { addItems(realm, count: 1, first: first + r) }
        }
    }

    func count() async throws -> Int {
        let realm = try await Realm(configuration: config, actor: self)
        return realm.objects(Item.self).count
    }
}

/// Each repetition (a new file) times 4 tasks writing `size / 4` one-object async writes each
/// through one actor-isolated Realm, until the last completion (each after its sync).
func swiftstoreAsyncCommits(_ ctx: RowContext) throws -> Runner {
    Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let writer = ItemWriter(config: itemConfiguration(dir.appendingPathComponent("bench.realm")))
        let per = ctx.size / 4
        let ms = try measure {
            try blocking {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for t in 0..<4 { group.addTask { try await writer.write(count: per, first: t * per) } }
                    try await group.waitForAll()
                }
            }
        }
        let n = Shared(0)
        try blocking { n.value = try await writer.count() }
        return Sample(ms: ms, check: Check(what: "objects written", got: Int64(n.value), want: Int64(4 * per)))
    })
}

/// Each repetition (a new file) times 4 tasks making `size / 4` one-row writes each through one
/// DatabasePool.
func grdbPoolWrites(_ ctx: RowContext) throws -> Runner {
    Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let pool = try grdbPool(dir.appendingPathComponent("bench.sqlite").path)
        defer { try? pool.close() }
        try pool.write { db in try db.execute(sql: SQLiteIntTable.create) }
        let per = ctx.size / 4
        let insert = "INSERT INTO t VALUES(" + (0..<10).map { _ in "?" }.joined(separator: ", ") + ")"
        let ms = try measure {
            try blocking {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for t in 0..<4 {
                        group.addTask {
                            for r in 0..<per {
                                let v = t * per + r
                                try await pool.write { db in
                                    try db.execute(sql: insert, arguments: StatementArguments(Array(repeating: v, count: 10)))
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
        let n = try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM t") ?? 0 }
        return Sample(ms: ms, check: Check(what: "rows written", got: Int64(n), want: Int64(4 * per)))
    })
}
