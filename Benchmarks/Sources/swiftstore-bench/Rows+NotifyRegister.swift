// The registering rows: what an `observe` call costs the thread that calls it (not the
// deliveries). notify.register.1k and notify.register.100k: one List, one Map and one
// LinkingObjects observer of `size` elements each (no peer: GRDB observes queries, not one
// object's collections). notify.register.objects.1k: 1,000 object observers on a queue against
// 1,000 GRDB `ValueObservation`s of one row each, started on a queue.

import Foundation
import GRDB
import SwiftStore

final class RegSource: Object {
    @Persisted var n = 0
    @Persisted var target: RegTarget?
}

final class RegTarget: Object {
    @Persisted var items: List<Item>
    @Persisted var tags: Map<String, Int>
    @Persisted(originProperty: "target") var sources: LinkingObjects<RegSource>
}

func notifyRegisterRows() -> [Row] {
    [1_000, 100_000].map { size in
        Row(id: "notify.register.\(size / 1_000)k", size: size, mode: "durable", peer: "grdb", goal: "-",
            swiftstore: swiftstoreRegisterCollections, peerSide: nil)
    } + [
        Row(id: "notify.register.objects.1k", size: 1_000, mode: "durable", peer: "grdb", goal: "-",
            swiftstore: swiftstoreRegisterObjects, peerSide: grdbRegisterObjects),
    ]
}

/// The resident set size of this process in bytes (/proc/self/statm), for the memory figure
/// printed beside the registering rows.
private func residentBytes() -> Int64 {
    guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let f = s.split(separator: " ")
    guard f.count > 1, let pages = Int64(f[1]) else { return 0 }
    return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
}

/// Timed: `observe(on: queue)` on a List, a Map and a LinkingObjects of `size` elements each
/// (the three calls only); untimed: waiting for the three initial notifications (each checks
/// its count) and invalidating the tokens.
private func swiftstoreRegisterCollections(_ ctx: RowContext) throws -> Runner {
    let size = ctx.size
    let url = ctx.directory.appendingPathComponent("bench.realm")
    let config = Realm.Configuration(fileURL: url, objectTypes: [Item.self, RegSource.self, RegTarget.self])
    let box = RealmBox(try Realm(configuration: config))
    guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
    try realm.write {
        let t = realm.create(RegTarget.self)
        addItems(realm, count: size)
        t.items.append(objectsIn: realm.objects(Item.self))
        for i in 0..<size {
            t.tags["k\(i)"] = i
            realm.create(RegSource.self, value: ["n": i, "target": t])
        }
    }
    let target = realm.objects(RegTarget.self).first!
    let queue = DispatchQueue(label: "swiftstore-bench.notify.register")
    let seen = DispatchSemaphore(value: 0)
    let counts = Counts()
    return Runner(
        run: { _ in
            counts.reset()
            var tokens: [NotificationToken] = []
            let ms = measure {
                tokens.append(target.items.observe(on: queue) { c in
                    if case .initial(let l) = c { counts.add(l.count); seen.signal() }
                })
                tokens.append(target.tags.observe(on: queue) { c in
                    if case .initial(let m) = c { counts.add(m.count); seen.signal() }
                })
                tokens.append(target.sources.observe(on: queue) { c in
                    if case .initial(let l) = c { counts.add(l.count); seen.signal() }
                })
            }
            for _ in 0..<3 { seen.wait() }
            for t in tokens { t.invalidate() }
            queue.sync {}
            return Sample(ms: ms, check: Check(what: "elements in the three initial notifications",
                                               got: counts.total, want: Int64(3 * size)))
        },
        tearDown: { box.realm = nil })
}

/// Whether a GRDB observation's next value is its first (set and read on its queue).
private final class Flag: @unchecked Sendable {
    var value = true
}

/// A sum of counts reported by callbacks on the delivery queue.
private final class Counts: @unchecked Sendable {
    private let lock = NSLock()
    private var sum: Int64 = 0
    func reset() { lock.lock(); sum = 0; lock.unlock() }
    func add(_ n: Int) { lock.lock(); sum += Int64(n); lock.unlock() }
    var total: Int64 { lock.lock(); defer { lock.unlock() }; return sum }
}

/// Timed: `observe(on: queue)` on each of `size` objects, through a thread's Realm that is at
/// the notifier's version (the calls only); untimed: one commit changing every object, waiting
/// for the `size` callbacks (each checks it got the new value) and invalidating the tokens.
/// Prints the resident memory the registered observers hold.
private func swiftstoreRegisterObjects(_ ctx: RowContext) throws -> Runner {
    let size = ctx.size
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
    let objects = Array(realm.objects(Item.self))
    let queue = DispatchQueue(label: "swiftstore-bench.notify.register.objects")
    let done = DispatchSemaphore(value: 0)
    let counts = Counts()
    return Runner(
        run: { rep in
            counts.reset()
            var tokens: [NotificationToken] = []
            tokens.reserveCapacity(size)
            let before = residentBytes()
            let ms = measure {
                for o in objects {
                    tokens.append(o.observe(on: queue) { (c: ObjectChange<Item>) in
                        if case .change(_, let props) = c, let v = props.first?.newValue as? Int {
                            counts.add(v == -1 - rep ? 1 : 0)
                        }
                        done.signal()
                    })
                }
            }
            let held = residentBytes() - before
            if rep == 1 {
                FileHandle.standardError.write(Data("notify.register.objects.1k (swiftstore): \(held / 1024) KiB resident after registering\n".utf8))
            }
            try realm.write { for o in objects { o.i1 = -1 - rep } }
            for _ in 0..<size { done.wait() }
            for t in tokens { t.invalidate() }
            queue.sync {}
            return Sample(ms: ms, check: Check(what: "callbacks that read the new value", got: counts.total,
                                               want: Int64(size)))
        },
        tearDown: { box.realm = nil })
}

/// Timed: starting a `ValueObservation` of each of `size` rows (`fetchOne` by rowid,
/// `.async(onQueue:)`), the calls only; untimed: waiting for the initial values, one write
/// changing every row, waiting for the `size` callbacks (each checks the new value) and
/// cancelling.
private func grdbRegisterObjects(_ ctx: RowContext) throws -> Runner {
    let size = ctx.size
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    try SQLiteIntTable.buildFile(path, rows: size)
    let db = try grdbQueue(path)
    let queue = DispatchQueue(label: "swiftstore-bench.notify.register.objects.grdb")
    let initial = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
    let counts = Counts()
    return Runner(
        run: { rep in
            counts.reset()
            var cancellables: [AnyDatabaseCancellable] = []
            cancellables.reserveCapacity(size)
            let before = residentBytes()
            let ms = measure {
                for id in 1...size {
                    let first = Flag()
                    let observation = ValueObservation.tracking { db in try GRDBFetchItem.fetchOne(db, key: id) }
                    cancellables.append(observation.start(
                        in: db, scheduling: .async(onQueue: queue),
                        onError: { _ in done.signal() },
                        onChange: { item in
                            if first.value {
                                first.value = false
                                initial.signal()
                                return
                            }
                            counts.add(item?.i1 == -1 - rep ? 1 : 0)
                            done.signal()
                        }))
                }
            }
            let held = residentBytes() - before
            if rep == 1 {
                FileHandle.standardError.write(Data("notify.register.objects.1k (grdb): \(held / 1024) KiB resident after registering\n".utf8))
            }
            for _ in 0..<size { initial.wait() }
            try db.write { db in try db.execute(sql: "UPDATE t SET i1 = ?", arguments: [-1 - rep]) }
            for _ in 0..<size { done.wait() }
            for c in cancellables { c.cancel() }
            queue.sync {}
            return Sample(ms: ms, check: Check(what: "callbacks that read the new value", got: counts.total,
                                               want: Int64(size)))
        })
}
