// The SwiftStore side of the object-level rows (insert.objects.50k, fetch.objects.200k),
// through the public API only: `Realm`, `Object`, `@Persisted`, `Results`.
//
// A Realm is cached per thread and keeps its file open while any Realm, object or Results of
// it is referenced. Every timed block below therefore opens its Realm inside a function whose
// locals are gone when it returns, and the insert row checks (through /proc/self/fd) that no
// descriptor of the repetition's directory is left open before it verifies the file through
// the C API: a repetition never reuses a cached instance, and never leaves one behind.

import CStore
import Foundation
import SwiftStore

/// The model of the object rows: 10 Int properties, stored as the table `Item` with the
/// columns `i0 ... i9` (the same shape as the C API rows' table).
final class Item: Object {
    @Persisted var i0 = 0
    @Persisted var i1 = 0
    @Persisted var i2 = 0
    @Persisted var i3 = 0
    @Persisted var i4 = 0
    @Persisted var i5 = 0
    @Persisted var i6 = 0
    @Persisted var i7 = 0
    @Persisted var i8 = 0
    @Persisted var i9 = 0
}

/// The configuration of the object rows: the file and the one model class.
func itemConfiguration(_ url: URL) -> Realm.Configuration {
    Realm.Configuration(fileURL: url, objectTypes: [Item.self])
}

/// Adds `count` new Items whose 10 properties all hold the row number (first, first+1, ...)
/// in the caller's write transaction.
@inline(never)
func addItems(_ realm: Realm, count: Int, first: Int = 0) {
    for r in 0..<count {
        let v = first + r
        let o = Item()
        o.i0 = v
        o.i1 = v
        o.i2 = v
        o.i3 = v
        o.i4 = v
        o.i5 = v
        o.i6 = v
        o.i7 = v
        o.i8 = v
        o.i9 = v
        realm.add(o)
    }
}

/// Iterates every Item and reads its 10 properties: the sum of the values and the count.
@inline(never)
func sumItems(_ realm: Realm) -> (sum: Int64, count: Int64) {
    var sum: Int64 = 0
    var count: Int64 = 0
    for o in realm.objects(Item.self) {
        sum &+= Int64(o.i0) &+ Int64(o.i1) &+ Int64(o.i2) &+ Int64(o.i3) &+ Int64(o.i4)
        sum &+= Int64(o.i5) &+ Int64(o.i6) &+ Int64(o.i7) &+ Int64(o.i8) &+ Int64(o.i9)
        count += 1
    }
    return (sum, count)
}

/// The descriptors of this process open on a file under `dir` (from /proc/self/fd).
func openDescriptors(under dir: URL) -> [String] {
    let prefix = dir.resolvingSymlinksInPath().path + "/"
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.compactMap { fd in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
              target.hasPrefix(prefix) else { return nil }
        return target
    }
}

/// A failure of the benchmark itself (not of the core).
struct BenchError: Error, CustomStringConvertible {
    let description: String
}

/// The Items of addItems as an array, for `realm.add` of a sequence.
@inline(never)
func makeItems(count: Int) -> [Item] {
    (0..<count).map { v in
        let o = Item()
        o.i0 = v
        o.i1 = v
        o.i2 = v
        o.i3 = v
        o.i4 = v
        o.i5 = v
        o.i6 = v
        o.i7 = v
        o.i8 = v
        o.i9 = v
        return o
    }
}

/// One timed repetition of insert.objects.50k: open (creating the file and its schema),
/// `realm.add` of `count` new Items in one `realm.write`, commit. Returns the time only; the
/// Realm and every object of it are released when this function returns. `sequence`: the Items
/// are made first and added by one `realm.add` of the array (add.sequence.50k), both timed.
@inline(never)
private func timedInsertObjects(_ url: URL, count: Int, sequence: Bool = false) throws -> Double {
    try measure {
        let realm = try Realm(configuration: itemConfiguration(url))
        try realm.write {
            if sequence { realm.add(makeItems(count: count)) } else { addItems(realm, count: count) }
        }
    }
}

/// The SwiftStore side of add.sequence.50k: insert.objects.50k with one `realm.add` of an array.
func swiftstoreAddSequence(_ ctx: RowContext) throws -> Runner {
    try swiftstoreInsertObjects(ctx, sequence: true)
}

/// The SwiftStore side of insert.objects.50k: a new directory (a new file) per repetition.
func swiftstoreInsertObjects(_ ctx: RowContext) throws -> Runner {
    try swiftstoreInsertObjects(ctx, sequence: false)
}

private func swiftstoreInsertObjects(_ ctx: RowContext, sequence: Bool) throws -> Runner {
    Runner(run: { rep in
        let dir = try ctx.freshDirectory(rep)
        defer { ctx.remove(dir) }
        let url = dir.appendingPathComponent("bench.realm")
        let ms = try timedInsertObjects(url, count: ctx.size, sequence: sequence)
        // The Realm must be closed now (no cached instance survives the repetition).
        let left = openDescriptors(under: dir)
        if !left.isEmpty {
            throw BenchError(description: "the Realm of repetition \(rep) is still open after its scope: \(left)")
        }
        // Verify the file itself through the C API: every object, every value.
        let db = try csOpen(url.path, durability: CS_DURABILITY_FULL, create: false)
        defer { _ = cs_db_close(db) }
        let (sum, count) = try csTransaction(db, write: false) { txn in
            try IntTable.find(txn, name: "Item").sumAll(txn)
        }
        if count != Int64(ctx.size) {
            return Sample(ms: ms, check: Check(what: "object count", got: count, want: Int64(ctx.size)))
        }
        return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: 10 * triangle(ctx.size)))
    })
}

/// A Realm kept open across the repetitions of a row, released by the runner's tearDown.
final class RealmBox {
    var realm: Realm?
    init(_ realm: Realm) { self.realm = realm }
}

/// The SwiftStore side of fetch.objects.200k: a file of `size` Items built (untimed) through
/// the same API, opened once; each repetition times a full pass over `realm.objects(Item.self)`
/// (a new Results each time, so no key list is reused) reading the 10 properties of each.
func swiftstoreFetchObjects(_ ctx: RowContext) throws -> Runner {
    let url = ctx.directory.appendingPathComponent("bench.realm")
    try buildItemFile(url, count: ctx.size)
    let box = RealmBox(try Realm(configuration: itemConfiguration(url)))
    let want = 10 * triangle(ctx.size)
    return Runner(
        run: { _ in
            guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
            var sum: Int64 = 0
            var count: Int64 = 0
            let ms = measure {
                (sum, count) = sumItems(realm)
            }
            if count != Int64(ctx.size) {
                return Sample(ms: ms, check: Check(what: "object count", got: count, want: Int64(ctx.size)))
            }
            return Sample(ms: ms, check: Check(what: "sum of all values", got: sum, want: want))
        },
        tearDown: { box.realm = nil })
}

/// Builds a file of `count` Items (untimed set-up) and lets its Realm go.
func buildItemFile(_ url: URL, count: Int) throws {
    let realm = try Realm(configuration: itemConfiguration(url))
    try realm.write {
        addItems(realm, count: count)
    }
}
