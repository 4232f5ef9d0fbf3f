// The live-notification rows: a query observed through SwiftStore's `Results.observe(on:)`
// against GRDB's `ValueObservation` tracking the same query, both delivering on a serial
// DispatchQueue. Each commit is timed from the start of the write until the observer's callback
// has read the new value out of the delivered data (a semaphore signalled by the callback; no
// sleeps, no polling). Every commit waits for its callback before the next one starts, so no
// change is coalesced with another.

import Foundation
import GRDB
import SwiftStore

// MARK: - Rows

/// 1,000 observed objects, 100 commits (10 under --quick) each deleting 5, inserting 5 and
/// modifying 10 of them; every callback's indices (SwiftStore) or fetched rows (GRDB) checked.
func notify1kRow() -> Row {
    Row(
        id: "notify.1k", size: 1_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: { try swiftstoreNotifyMixed($0, commits: $0.scaled(100)) },
        peerSide: { try grdbNotifyMixed($0, commits: $0.scaled(100)) })
}

func notify200kRow() -> Row {
    Row(
        id: "notify.200k", size: 200_000, mode: "durable", peer: "grdb", goal: "<= 0.1x",
        swiftstore: { try swiftstoreNotify($0, shape: .filtered, commits: $0.scaled(100)) },
        peerSide: { try grdbNotify($0, shape: .filtered, commits: $0.scaled(100)) })
}

/// Size: the commits; the file holds 1,000 objects of which the first is observed. The time of
/// a repetition is the median of its commits' times.
func notifyLatencyRow() -> Row {
    Row(
        id: "notify.latency", size: 500, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: { try swiftstoreNotify($0, shape: .one, commits: $0.size) },
        peerSide: { try grdbNotify($0, shape: .one, commits: $0.size) })
}

// MARK: - Shared workload

/// What is observed.
private enum Shape {
    case filtered   // the objects with i3 < size / 2
    case one        // the first object of a 1,000-object file

    func objects(_ ctx: RowContext) -> Int { self == .one ? 1_000 : ctx.size }
}

/// The filter of the filtered rows: the first half of the objects (i3 holds the row number).
private func filterBound(_ size: Int) -> Int { size / 2 }

/// The object changed by commit `c` of repetition `rep`: always one that the query matches, at
/// the same position in both sides' results (row order), and never the same twice in a row.
private func changedRow(_ size: Int, shape: Shape, rep: Int, commit: Int) -> Int {
    if shape == .one { return 0 }
    return (rep * 7_919 + commit * 104_729) % max(1, filterBound(size))
}

/// The value commit `c` of repetition `rep` writes into i1: distinct from every value before it.
private func newValue(_ size: Int, rep: Int, commit: Int) -> Int {
    size + 1 + rep * 1_000_000 + commit
}

/// What a callback saw, handed from the delivery queue to the timing thread.
private final class Delivery: @unchecked Sendable {
    let ready = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var watched = -1      // the row the timing thread is waiting on (-1: the initial delivery)
    private var value = Int64.min // i1 of that row in the delivered data

    /// Sets the row whose new value the next callback must report.
    func expect(row: Int) {
        lock.lock(); watched = row; value = .min; lock.unlock()
    }

    var watchedRow: Int { lock.lock(); defer { lock.unlock() }; return watched }

    /// Called on the delivery queue with the value read from the delivered data.
    func deliver(_ v: Int64) {
        lock.lock(); value = v; lock.unlock()
        ready.signal()
    }

    var received: Int64 { lock.lock(); defer { lock.unlock() }; return value }
}

/// The sum of the values written by one repetition (its answer check).
private func wantedSum(_ size: Int, rep: Int, commits: Int) -> Int64 {
    (0..<commits).reduce(Int64(0)) { $0 + Int64(newValue(size, rep: rep, commit: $1)) }
}

// MARK: - SwiftStore side

/// Timed per commit: `realm.write { object.i1 = v }` on the benchmark thread, then waiting for
/// the `Results.observe(on:)` callback, which reads i1 of the changed object from the delivered
/// Results (at its modification position).
private func swiftstoreNotify(_ ctx: RowContext, shape: Shape, commits: Int) throws -> Runner {
    let size = shape.objects(ctx)
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
    let all = realm.objects(Item.self)
    let results = all.filter("i3 < %@", filterBound(size))
    let queue = DispatchQueue(label: "swiftstore-bench.notify")
    let delivery = Delivery()
    let objects = Array(all)
    let token: NotificationToken
    if shape == .one {
        // Object notifications have no initial call.
        token = objects[0].observe(on: queue) { (change: ObjectChange<Item>) in
            switch change {
            case .change(let o, _): delivery.deliver(Int64(o.i1))
            default: delivery.deliver(.min)
            }
        }
    } else {
        token = results.observe(on: queue) { change in
            switch change {
            case .initial:
                delivery.deliver(0)
            case .update(let r, _, _, let modifications):
                let row = delivery.watchedRow
                // The changed object is reported as a modification at its position; anything else
                // fails the repetition's check instead of leaving the timing thread waiting.
                delivery.deliver(modifications.contains(row) ? Int64(r[row].i1) : .min)
            case .error:
                delivery.deliver(.min)
            }
        }
        delivery.ready.wait()   // the initial delivery, untimed
    }
    return Runner(
        run: { rep in
            var sum: Int64 = 0
            var bad: (got: Int64, want: Int64)?
            var times: [Double] = []
            times.reserveCapacity(commits)
            let total = try measure {
                for c in 0..<commits {
                    let start = nowNanoseconds()
                    let row = changedRow(size, shape: shape, rep: rep, commit: c)
                    let v = newValue(size, rep: rep, commit: c)
                    delivery.expect(row: row)
                    try realm.write { objects[row].i1 = v }
                    delivery.ready.wait()
                    times.append(Double(nowNanoseconds() - start) / 1e6)
                    let got = delivery.received
                    if got != Int64(v), bad == nil { bad = (got, Int64(v)) }
                    sum += got
                }
            }
            let ms = shape == .one ? median(times) : total
            if let bad {
                return Sample(ms: ms, check: Check(what: "value seen by the callback", got: bad.got, want: bad.want))
            }
            return Sample(ms: ms, check: Check(what: "sum of values seen by the callbacks", got: sum,
                                               want: wantedSum(size, rep: rep, commits: commits)))
        },
        tearDown: {
            token.invalidate()
            queue.sync {}
            box.realm = nil
        })
}

// MARK: - GRDB side

/// Timed per commit: `UPDATE t SET i1 = ? WHERE rowid = ?` in a GRDB write, then waiting for
/// the `ValueObservation` (tracking `fetchAll` of the same query, scheduled `.async` on a serial
/// queue) whose onChange reads i1 of the changed record from the fetched array.
private func grdbNotify(_ ctx: RowContext, shape: Shape, commits: Int) throws -> Runner {
    let size = shape.objects(ctx)
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: size)
    let db = try grdbQueue(path)
    let bound = filterBound(size)
    let one = shape == .one
    // The observed object is fetched as a one-element array.
    let observation = ValueObservation.tracking { db in
        one ? try GRDBFetchItem.filter(Column.rowID == 1).fetchAll(db)
            : try GRDBFetchItem.filter(Column("i3") < bound).fetchAll(db)
    }
    let queue = DispatchQueue(label: "swiftstore-bench.notify.grdb")
    let delivery = Delivery()
    let cancellable = observation.start(
        in: db, scheduling: .async(onQueue: queue),
        onError: { _ in delivery.deliver(.min) },
        onChange: { items in
            let row = delivery.watchedRow
            if row < 0 {
                delivery.deliver(0)
            } else if row < items.count {
                delivery.deliver(Int64(items[row].i1))
            } else {
                delivery.deliver(.min)
            }
        })
    delivery.ready.wait()   // the initial value, untimed
    return Runner(
        run: { rep in
            var sum: Int64 = 0
            var bad: (got: Int64, want: Int64)?
            var times: [Double] = []
            times.reserveCapacity(commits)
            let total = try measure {
                for c in 0..<commits {
                    let start = nowNanoseconds()
                    let row = changedRow(size, shape: shape, rep: rep, commit: c)
                    let v = newValue(size, rep: rep, commit: c)
                    delivery.expect(row: row)
                    try db.write { db in
                        try db.execute(sql: "UPDATE t SET i1 = ? WHERE rowid = ?", arguments: [v, row + 1])
                    }
                    delivery.ready.wait()
                    times.append(Double(nowNanoseconds() - start) / 1e6)
                    let got = delivery.received
                    if got != Int64(v), bad == nil { bad = (got, Int64(v)) }
                    sum += got
                }
            }
            let ms = shape == .one ? median(times) : total
            if let bad {
                return Sample(ms: ms, check: Check(what: "value seen by onChange", got: bad.got, want: bad.want))
            }
            return Sample(ms: ms, check: Check(what: "sum of values seen by onChange", got: sum,
                                               want: wantedSum(size, rep: rep, commits: commits)))
        },
        tearDown: {
            cancellable.cancel()
            queue.sync {}
            try? db.close()
        })
}

// MARK: - notify.observers.1k

/// Size: the observed queries. Query j (from 0) is `i3 < 10 OR i3 == 10 + j` on a file of
/// size + 10 objects, so the commit, which changes i1 of objects 0 ... 9, changes every query's
/// results (the same 10 modifications at positions 0 ... 9), and every observer is called.
func notifyObserversRow() -> Row {
    Row(
        id: "notify.observers.1k", size: 1_000, mode: "durable", peer: "grdb", goal: "<= 0.5x",
        swiftstore: swiftstoreNotifyObservers,
        peerSide: grdbNotifyObservers)
}

/// The objects every query holds and the commit changes.
private let sharedObjects = 10

/// Callbacks of many observers, counted on the delivery queue: signals once `expected` of them
/// have run, with the sum of the values they read.
private final class FanIn: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var expected = 0
    private var seen = 0
    private var sum: Int64 = 0

    func expect(_ n: Int) {
        lock.lock(); expected = n; seen = 0; sum = 0; lock.unlock()
    }

    func deliver(_ v: Int64) {
        lock.lock()
        seen += 1
        sum &+= v
        let last = seen == expected
        lock.unlock()
        if last { done.signal() }
    }

    var total: Int64 { lock.lock(); defer { lock.unlock() }; return sum }
}

/// The value the commit of repetition `rep` writes into i1 of shared object k.
private func observersValue(_ size: Int, rep: Int, k: Int) -> Int {
    size + sharedObjects + 1 + rep * 1_000 + k
}

/// Every callback reads the 10 new values: the observers' count times their sum.
private func observersWant(_ size: Int, rep: Int) -> Int64 {
    Int64(size) * (0..<sharedObjects).reduce(Int64(0)) { $0 + Int64(observersValue(size, rep: rep, k: $1)) }
}

/// Timed: one `realm.write` setting i1 of the 10 shared objects, then waiting until all
/// `size` `Results.observe(on:)` callbacks have run, each reading i1 at its modification positions.
private func swiftstoreNotifyObservers(_ ctx: RowContext) throws -> Runner {
    let size = ctx.size
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: size + sharedObjects)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
    let all = realm.objects(Item.self)
    let objects = Array(all.prefix(sharedObjects))
    let queue = DispatchQueue(label: "swiftstore-bench.notify.observers")
    let fan = FanIn()
    fan.expect(size)
    var tokens: [NotificationToken] = []
    for j in 0..<size {
        let results = all.filter("i3 < %@ OR i3 == %@", sharedObjects, sharedObjects + j)
        tokens.append(results.observe(on: queue) { change in
            switch change {
            case .initial:
                fan.deliver(0)
            case .update(let r, _, _, let modifications):
                fan.deliver(modifications.reduce(Int64(0)) { $0 + Int64(r[$1].i1) })
            case .error:
                fan.deliver(.min)
            }
        })
    }
    fan.done.wait()   // every initial delivery, untimed
    return Runner(
        run: { rep in
            fan.expect(size)
            let ms = try measure {
                try realm.write {
                    for (k, o) in objects.enumerated() { o.i1 = observersValue(size, rep: rep, k: k) }
                }
                fan.done.wait()
            }
            return Sample(ms: ms, check: Check(what: "sum of values seen by the callbacks", got: fan.total,
                                               want: observersWant(size, rep: rep)))
        },
        tearDown: {
            for t in tokens { t.invalidate() }
            queue.sync {}
            box.realm = nil
        })
}

/// Timed: one GRDB write updating i1 of the 10 shared rows, then waiting until all `size`
/// `ValueObservation`s (each tracking `fetchAll` of its query) have called onChange, each
/// reading i1 of the first 10 records it was given.
private func grdbNotifyObservers(_ ctx: RowContext) throws -> Runner {
    let size = ctx.size
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: size + sharedObjects)
    let db = try grdbQueue(path)
    let queue = DispatchQueue(label: "swiftstore-bench.notify.observers.grdb")
    let fan = FanIn()
    fan.expect(size)
    var cancellables: [AnyDatabaseCancellable] = []
    for j in 0..<size {
        let observation = ValueObservation.tracking { db in
            try GRDBFetchItem.filter(Column("i3") < sharedObjects || Column("i3") == sharedObjects + j).fetchAll(db)
        }
        cancellables.append(observation.start(
            in: db, scheduling: .async(onQueue: queue),
            onError: { _ in fan.deliver(.min) },
            onChange: { items in
                fan.deliver(items.prefix(sharedObjects).reduce(Int64(0)) { $0 + Int64($1.i1) })
            }))
    }
    fan.done.wait()   // every initial value, untimed
    return Runner(
        run: { rep in
            fan.expect(size)
            let ms = try measure {
                try db.write { db in
                    for k in 0..<sharedObjects {
                        try db.execute(sql: "UPDATE t SET i1 = ? WHERE rowid = ?",
                                       arguments: [observersValue(size, rep: rep, k: k), k + 1])
                    }
                }
                fan.done.wait()
            }
            return Sample(ms: ms, check: Check(what: "sum of values seen by onChange", got: fan.total,
                                               want: observersWant(size, rep: rep)))
        },
        tearDown: {
            for c in cancellables { c.cancel() }
            queue.sync {}
            try? db.close()
        })
}

// MARK: - notify.1k

/// The positions (in the results before the commit) whose objects each notify.1k commit deletes,
/// and those it modifies; its 5 new objects go to the end (their keys and rowids are the
/// largest), so the results keep 1,000 objects.
private let mixedDeleted = [0, 2, 4, 6, 8]
private let mixedModified = Array(20..<30)
private let mixedInserted = 5

/// The value commit `c` of repetition `rep` writes into i1 of its k-th modified object, and the
/// i3 of its k-th new object: distinct from every value before it.
private func mixedValue(rep: Int, commit: Int, k: Int) -> Int {
    10_000_000 + rep * 100_000 + commit * 100 + k
}

/// What the timing thread waits for: the change a callback saw, as plain values.
private final class MixedDelivery: @unchecked Sendable {
    let ready = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var seen: (count: Int, del: [Int], ins: [Int], mod: [Int], sum: Int64) = (0, [], [], [], 0)

    func deliver(count: Int, del: [Int], ins: [Int], mod: [Int], sum: Int64) {
        lock.lock(); seen = (count, del, ins, mod, sum); lock.unlock()
        ready.signal()
    }

    var last: (count: Int, del: [Int], ins: [Int], mod: [Int], sum: Int64) {
        lock.lock(); defer { lock.unlock() }; return seen
    }
}

/// The sum of the i1 values commit `c` writes.
private func mixedWanted(rep: Int, commit: Int) -> Int64 {
    mixedModified.indices.reduce(Int64(0)) { $0 + Int64(mixedValue(rep: rep, commit: commit, k: $1)) }
}

/// Timed: per commit, one `realm.write` deleting the objects at 5 positions of the observed
/// `realm.objects(Item.self)`, adding 5 Items and setting i1 of the objects at 10 positions, then
/// waiting for the `observe(on:)` callback, which reports the change's indices and reads i1 of
/// the modified objects at their new positions. Checked: the indices of every callback, and the
/// sum of the values read.
private func swiftstoreNotifyMixed(_ ctx: RowContext, commits: Int) throws -> Runner {
    let size = ctx.size
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
    let results = realm.objects(Item.self)
    let queue = DispatchQueue(label: "swiftstore-bench.notify.1k")
    let delivery = MixedDelivery()
    let token = results.observe(on: queue) { change in
        switch change {
        case .initial(let r):
            delivery.deliver(count: r.count, del: [], ins: [], mod: [], sum: 0)
        case .update(let r, let del, let ins, let mod):
            // modifications are positions before the commit: the deletions before each shift it
            let sum = mod.reduce(Int64(0)) { acc, m in acc + Int64(r[m - del.filter { $0 < m }.count].i1) }
            delivery.deliver(count: r.count, del: del, ins: ins, mod: mod, sum: sum)
        case .error:
            delivery.deliver(count: -1, del: [], ins: [], mod: [], sum: 0)
        }
    }
    delivery.ready.wait()   // the initial delivery, untimed
    let wantIns = Array(size - mixedInserted..<size)
    return Runner(
        run: { rep in
            var sum: Int64 = 0, want: Int64 = 0
            var bad: String?
            let ms = try measure {
                for c in 0..<commits {
                    try realm.write {
                        let gone = mixedDeleted.map { results[$0] }
                        let changed = mixedModified.map { results[$0] }
                        realm.delete(gone)
                        for k in 0..<mixedInserted {
                            let item = Item()
                            item.i3 = mixedValue(rep: rep, commit: c, k: k)
                            realm.add(item)
                        }
                        for (k, o) in changed.enumerated() { o.i1 = mixedValue(rep: rep, commit: c, k: k) }
                    }
                    delivery.ready.wait()
                    let seen = delivery.last
                    if bad == nil, seen.count != size || seen.del != mixedDeleted || seen.ins != wantIns || seen.mod != mixedModified {
                        bad = "commit \(c): count \(seen.count), deletions \(seen.del), insertions \(seen.ins), modifications \(seen.mod)"
                    }
                    sum += seen.sum
                    want += mixedWanted(rep: rep, commit: c)
                }
            }
            if let bad { throw BenchError(description: "notify.1k: wrong change set: \(bad)") }
            return Sample(ms: ms, check: Check(what: "sum of modified values seen by the callbacks", got: sum, want: want))
        },
        tearDown: {
            token.invalidate()
            queue.sync {}
            box.realm = nil
        })
}

/// Timed: per commit, one GRDB write deleting the rows at 5 positions (by rowid), inserting 5
/// rows and updating i1 of the rows at 10 positions, then waiting for the `ValueObservation`
/// (`fetchAll` of the table in rowid order), whose onChange reads i1 of the modified rows at
/// their new positions. Checked: the row count of every fetch and the sum of the values read.
private func grdbNotifyMixed(_ ctx: RowContext, commits: Int) throws -> Runner {
    let size = ctx.size
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: size)
    let db = try grdbQueue(path)
    let observation = ValueObservation.tracking { db in try GRDBFetchItem.fetchAll(db) }
    let queue = DispatchQueue(label: "swiftstore-bench.notify.1k.grdb")
    let delivery = MixedDelivery()
    let newPositions = mixedModified.map { m in m - mixedDeleted.filter { $0 < m }.count }
    let cancellable = observation.start(
        in: db, scheduling: .async(onQueue: queue),
        onError: { _ in delivery.deliver(count: -1, del: [], ins: [], mod: [], sum: 0) },
        onChange: { items in
            let sum = items.count == size ? newPositions.reduce(Int64(0)) { $0 + Int64(items[$1].i1) } : 0
            delivery.deliver(count: items.count, del: [], ins: [], mod: [], sum: sum)
        })
    delivery.ready.wait()   // the initial value, untimed
    var rowids = (1...Int64(size)).map { $0 }   // the table's rowids in order
    let insert = SQLiteIntTable.insert
    return Runner(
        run: { rep in
            var sum: Int64 = 0, want: Int64 = 0
            var bad: String?
            let ms = try measure {
                for c in 0..<commits {
                    let gone = mixedDeleted.map { rowids[$0] }
                    let changed = mixedModified.map { rowids[$0] }
                    var added: [Int64] = []
                    try db.write { db in
                        for r in gone { try db.execute(sql: "DELETE FROM t WHERE rowid = ?", arguments: [r]) }
                        for k in 0..<mixedInserted {
                            let v = mixedValue(rep: rep, commit: c, k: k)
                            try db.execute(sql: insert, arguments: StatementArguments(Array(repeating: v, count: 10)))
                            added.append(db.lastInsertedRowID)
                        }
                        for (k, r) in changed.enumerated() {
                            try db.execute(sql: "UPDATE t SET i1 = ? WHERE rowid = ?",
                                           arguments: [mixedValue(rep: rep, commit: c, k: k), r])
                        }
                    }
                    for p in mixedDeleted.reversed() { rowids.remove(at: p) }
                    rowids += added
                    delivery.ready.wait()
                    let seen = delivery.last
                    if bad == nil, seen.count != size { bad = "commit \(c): \(seen.count) rows fetched" }
                    sum += seen.sum
                    want += mixedWanted(rep: rep, commit: c)
                }
            }
            if let bad { throw BenchError(description: "notify.1k (GRDB): \(bad)") }
            return Sample(ms: ms, check: Check(what: "sum of modified values seen by onChange", got: sum, want: want))
        },
        tearDown: {
            cancellable.cancel()
            queue.sync {}
            try? db.close()
        })
}
