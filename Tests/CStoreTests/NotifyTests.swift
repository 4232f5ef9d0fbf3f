// Change notifications in the core (cs_notifier / cs_watch): a random-commit oracle applies each
// reported change set to the previous key list and must get the new one; modifications name
// exactly the kept elements that were written; unsorted queries over unwritten columns are
// updated without running the query; collections, backlinks, maps and objects report what their
// records say.

import CStore
import Foundation
import Synchronization
import Testing

/// A small seeded generator for the notification tests (also NestedNotifyTests).
struct NotifyRng: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        var z = state
        z = (z ^ (z >> 33)) &* 0xff51afd7ed558ccd
        return z ^ (z >> 29)
    }
}

/// A change set copied out of the core.
struct TakenChange {
    var initial = false
    var deleted = false
    var stale = false
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []
    var modificationsNew: [Int] = []
    var keysDeleted: [String] = []
    var keysInserted: [String] = []
    var keysModified: [String] = []
    var columns: [UInt32] = []
    var version: UInt64 = 0

    init(_ w: OpaquePointer) throws {
        var c = cs_changeset()
        try must(cs_watch_take(w, &c), "cs_watch_take")
        initial = c.initial
        deleted = c.deleted
        stale = c.stale
        version = c.version
        func ints(_ p: UnsafePointer<Int>?, _ n: Int) -> [Int] { n == 0 ? [] : Array(UnsafeBufferPointer(start: p, count: n)) }
        deletions = ints(c.deletions, c.ndeletions)
        insertions = ints(c.insertions, c.ninsertions)
        modifications = ints(c.modifications, c.nmodifications)
        modificationsNew = ints(c.modifications_new, c.nmodifications)
        func strs(_ p: UnsafePointer<cs_value>?, _ n: Int) -> [String] {
            (0..<n).map { i in
                let v = p![i]
                let raw = UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len)
                return String(decoding: raw, as: UTF8.self)
            }.sorted()
        }
        keysDeleted = strs(c.keys_deleted, c.nkeys_deleted)
        keysInserted = strs(c.keys_inserted, c.nkeys_inserted)
        keysModified = strs(c.keys_modified, c.nkeys_modified)
        columns = c.ncolumns == 0 ? [] : Array(UnsafeBufferPointer(start: c.columns, count: c.ncolumns)).sorted()
    }

    /// `old` with the deletions removed and the insertions taken from `new`.
    func apply<T>(to old: [T], new: [T]) -> [T] {
        var out = old
        for d in deletions.reversed() { out.remove(at: d) }
        for i in insertions { out.insert(new[i], at: i) }
        return out
    }
}

private func queryKeys(_ txn: OpaquePointer, _ table: UInt32, _ text: String) throws -> [Int64] {
    var q: OpaquePointer?
    try must(cs_query_new(txn, table, text, text.utf8.count, nil, 0, &q), "cs_query_new")
    defer { cs_query_free(q) }
    var keys: UnsafeMutablePointer<Int64>?
    var n = 0
    try must(cs_query_keys(q, &keys, &n), "cs_query_keys")
    defer { cs_keys_free(keys) }
    return n == 0 ? [] : Array(UnsafeBufferPointer(start: keys, count: n))
}

private func watchQuery(_ n: OpaquePointer, _ table: UInt32, _ text: String, paths: [cs_keypath] = [],
                        flags: Int32 = Int32(CS_WATCH_DEEP)) throws -> OpaquePointer {
    var w: OpaquePointer?
    try paths.withUnsafeBufferPointer { p in
        try must(cs_watch_query(n, table, text, text.utf8.count, nil, 0, nil, p.baseAddress, p.count, flags, &w),
                 "cs_watch_query(\(text))")
    }
    return w!
}

private func keypath(_ cols: UInt32...) -> cs_keypath {
    var p = cs_keypath()
    withUnsafeMutableBytes(of: &p.cols) { raw in
        let b = raw.bindMemory(to: UInt32.self)
        for (i, c) in cols.enumerated() { b[i] = c }
    }
    p.n = UInt32(cols.count)
    return p
}

private func advance(_ n: OpaquePointer) throws {
    var moved = false
    try must(cs_notifier_advance(n, &moved), "cs_notifier_advance")
}

/// The calling thread's id (its task number under /proc; /proc/thread-self names it), or -1.
private func currentThreadID() -> Int32 {
    var b = [CChar](repeating: 0, count: 64)
    let n = readlink("/proc/thread-self", &b, b.count - 1)
    guard n > 0 else { return -1 }
    let link = String(decoding: b[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) // "PID/task/TID"
    return link.split(separator: "/").last.flatMap { Int32($0) } ?? -1
}

/// CLOCK_MONOTONIC in seconds.
private func monotonicSeconds() -> Double { Double(monotonicNanoseconds()) / 1e9 }

@Suite struct NotifyCoreTests {
    /// Thousands of random commits; each query's change set turns the previous key list into the
    /// new one, and its modifications are exactly the kept objects written since.
    @Test(arguments: [false, true]) func randomCommitOracle(coalesce: Bool) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0, a: UInt32 = 0, b: UInt32 = 0
            try db.write { t in
                table = try addTable(t, "Item")
                a = try addColumn(t, table, "a", CS_TYPE_INT)
                b = try addColumn(t, table, "b", CS_TYPE_INT)
                for i in 0..<200 {
                    var o = try createObj(t, table)
                    try must(cs_obj_set_int(&o, a, Int64(i % 100)))
                    try must(cs_obj_set_int(&o, b, Int64((i * 37) % 101)))
                }
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            let texts = ["a < 50", "a < 50 SORT(b ASC)", "TRUEPREDICATE SORT(b DESC, a ASC)", "b >= 30 AND a != 7",
                         "TRUEPREDICATE DISTINCT(b)"]
            var watches: [OpaquePointer] = []
            var snapshots: [[Int64]] = []
            for text in texts {
                let w = try watchQuery(notifier!, table, text)
                watches.append(w)
                #expect(try TakenChange(w).initial)
                snapshots.append(try db.read { try queryKeys($0, table, text) })
            }
            var rng = NotifyRng(state: coalesce ? 99 : 7)
            var writtenSince: Set<Int64> = []
            let commits = underSanitizer ? 600 : 1500
            for round in 0..<commits {
                try db.write { t in
                    for _ in 0..<Int.random(in: 1...4, using: &rng) {
                        let keys = try allKeys(t, table)
                        switch Int.random(in: 0..<10, using: &rng) {
                        case 0, 1:
                            var o = try createObj(t, table)
                            try must(cs_obj_set_int(&o, a, Int64.random(in: 0..<100, using: &rng)))
                            try must(cs_obj_set_int(&o, b, Int64.random(in: 0..<100, using: &rng)))
                        case 2 where keys.count > 50:
                            var o = try openObj(t, table, keys.randomElement(using: &rng)!)
                            try must(cs_obj_delete(&o))
                        case 3, 4, 5:
                            let k = keys.randomElement(using: &rng)!
                            var o = try openObj(t, table, k)
                            try must(cs_obj_set_int(&o, a, Int64.random(in: 0..<100, using: &rng)))
                            writtenSince.insert(k)
                        default:
                            let k = keys.randomElement(using: &rng)!
                            var o = try openObj(t, table, k)
                            try must(cs_obj_set_int(&o, b, Int64.random(in: 0..<100, using: &rng)))
                            writtenSince.insert(k)
                        }
                    }
                }
                try advance(notifier!)
                if coalesce && round % 5 != 4 && round != commits - 1 { continue }
                let now = try db.read { t in try texts.map { try queryKeys(t, table, $0) } }
                for (i, w) in watches.enumerated() {
                    let c = try TakenChange(w)
                    let old = snapshots[i]
                    #expect(c.apply(to: old, new: now[i]) == now[i], "\(texts[i]) round \(round)")
                    #expect(c.deletions == c.deletions.sorted() && c.insertions == c.insertions.sorted())
                    // kept in place: old positions not deleted
                    let deleted = Set(c.deletions)
                    let moved = Set(c.insertions.map { now[i][$0] })
                    let expectMods = old.indices.filter { !deleted.contains($0) && writtenSince.contains(old[$0]) && !moved.contains(old[$0]) }
                    #expect(c.modifications == expectMods, "\(texts[i]) round \(round)")
                    for (o, n) in zip(c.modifications, c.modificationsNew) { #expect(old[o] == now[i][n]) }
                    snapshots[i] = now[i]
                }
                writtenSince = []
            }
            for w in watches { cs_watch_free(w) }
        }
    }

    /// A commit writing a column the filter does not read leaves an unsorted query's results as
    /// they were: the modification is reported without running the query.
    @Test func unsortedQueryOnUnwrittenColumnsIsNotRun() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0, a: UInt32 = 0, b: UInt32 = 0
            try db.write { t in
                table = try addTable(t, "Item")
                a = try addColumn(t, table, "a", CS_TYPE_INT)
                b = try addColumn(t, table, "b", CS_TYPE_INT)
                for i in 0..<100_000 {
                    var o = try createObj(t, table)
                    try must(cs_obj_set_int(&o, a, Int64(i % 2)))
                }
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            let w = try watchQuery(notifier!, table, "a == 1")
            _ = try TakenChange(w)
            let keys = try db.read { try queryKeys($0, table, "a == 1") }
            for i in 0..<20 {
                let k = keys[i * 1000]
                try db.write { t in
                    var o = try openObj(t, table, k)
                    try must(cs_obj_set_int(&o, b, Int64(i)))
                }
                try advance(notifier!)
                let c = try TakenChange(w)
                #expect(c.modifications == [i * 1000] && c.deletions.isEmpty && c.insertions.isEmpty)
            }
            // the filter column written: results move, still without a full run
            try db.write { t in
                var o = try openObj(t, table, keys[5])
                try must(cs_obj_set_int(&o, a, 0))
            }
            try advance(notifier!)
            let c = try TakenChange(w)
            #expect(c.deletions == [5] && c.insertions.isEmpty && c.modifications.isEmpty)
            #expect(cs_watch_full_runs(w) == 0)
            cs_watch_free(w)
        }
    }

    /// A watch whose table was not touched reports nothing.
    @Test func untouchedTableReportsNothing() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t1: UInt32 = 0, t2: UInt32 = 0, c2: UInt32 = 0
            try db.write { t in
                t1 = try addTable(t, "A")
                _ = try addColumn(t, t1, "x", CS_TYPE_INT)
                t2 = try addTable(t, "B")
                c2 = try addColumn(t, t2, "y", CS_TYPE_INT)
                _ = try createObj(t, t1)
                _ = try createObj(t, t2)
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            let w = try watchQuery(notifier!, t1, "x > 0 SORT(x ASC)")
            _ = try TakenChange(w)
            try db.write { t in
                var o = try openObj(t, t2, 0)
                try must(cs_obj_set_int(&o, c2, 5))
            }
            try advance(notifier!)
            #expect(!cs_watch_pending(w))
            #expect(cs_watch_full_runs(w) == 0)
            cs_watch_free(w)
        }
    }

    /// An object watch reports the columns written on its own object only, whatever the commit
    /// writes in the same columns of other objects (a shallow watch's one-column paths are one
    /// search of the written triples; a path through a link also walks back from the linked
    /// objects).
    @Test func objectWatchColumnsAmongOtherObjectsWrites() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var item: UInt32 = 0, other: UInt32 = 0, x: UInt32 = 0, link: UInt32 = 0
            var c: [UInt32] = []
            try db.write { t in
                other = try addTable(t, "Other")
                x = try addColumn(t, other, "x", CS_TYPE_INT)
                item = try addTable(t, "Item")
                for name in ["c0", "c1", "c2"] { c.append(try addColumn(t, item, name, CS_TYPE_INT)) }
                link = try addColumn(t, item, "friend", CS_TYPE_LINK, flags: Int(CS_COL_NULLABLE), target: other)
                for _ in 0..<2 { _ = try createObj(t, other) }
                for _ in 0..<5 { _ = try createObj(t, item) }
                var o = try openObj(t, item, 2)
                var v = cs_link(other, 0)
                try must(cs_obj_set(&o, link, &v))
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var shallow: OpaquePointer?
            try must(cs_watch_object(notifier!, item, 2, nil, 0, Int32(CS_WATCH_SHALLOW), &shallow))
            var paths = [keypath(c[1]), keypath(link, x)]
            var linked: OpaquePointer?
            try must(cs_watch_object(notifier!, item, 2, &paths, paths.count, 0, &linked))
            func set(_ table: UInt32, _ key: Int64, _ col: UInt32, _ v: Int64) throws {
                try db.write { t in
                    var o = try openObj(t, table, key)
                    try must(setVal(&o, col, .int(v)))
                }
            }
            // the watched columns written on the neighbours only
            try db.write { t in
                for k: Int64 in [1, 3] {
                    var o = try openObj(t, item, k)
                    for col in c { try must(setVal(&o, col, .int(7))) }
                }
                var o = try openObj(t, other, 1)
                try must(setVal(&o, x, .int(7)))
            }
            try advance(notifier!)
            #expect(!cs_watch_pending(shallow!) && !cs_watch_pending(linked!))
            // c0 and c2 of the object, c1 of a neighbour: exactly c0 and c2, in column order
            try db.write { t in
                var o = try openObj(t, item, 2)
                try must(setVal(&o, c[2], .int(1)))
                try must(setVal(&o, c[0], .int(1)))
                var n = try openObj(t, item, 3)
                try must(setVal(&n, c[1], .int(1)))
            }
            try advance(notifier!)
            #expect(try TakenChange(shallow!).columns == [c[0], c[2]])
            #expect(!cs_watch_pending(linked!))
            // the linked object's x: the link path's first column; c1 of the object: its own path
            try set(other, 0, x, 2)
            try advance(notifier!)
            #expect(!cs_watch_pending(shallow!))
            #expect(try TakenChange(linked!).columns == [link])
            try set(item, 2, c[1], 2)
            try set(other, 0, x, 3)
            try advance(notifier!)
            #expect(try TakenChange(shallow!).columns == [c[1]])
            #expect(try TakenChange(linked!).columns == [c[1], link])
            // the link itself written: the shallow watch sees its column, the path its first step
            try db.write { t in
                var o = try openObj(t, item, 2)
                var v = cs_link(other, 1)
                try must(cs_obj_set(&o, link, &v))
            }
            try advance(notifier!)
            #expect(try TakenChange(shallow!).columns == [link])
            #expect(try TakenChange(linked!).columns == [link])
            // the object deleted among other writes
            try db.write { t in
                var o = try openObj(t, item, 2)
                try must(cs_obj_delete(&o))
                var n = try openObj(t, item, 1)
                try must(setVal(&n, c[0], .int(9)))
            }
            try advance(notifier!)
            #expect(try TakenChange(shallow!).deleted)
            #expect(try TakenChange(linked!).deleted)
        }
    }

    /// Lists: insert, erase, move, swap and replace replayed; a deep change to an element
    /// reported as a modification of its position; key-path filters as given.
    @Test func listAndObjectChanges() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var dog: UInt32 = 0, toy: UInt32 = 0, name: UInt32 = 0, toys: UInt32 = 0, brand: UInt32 = 0, age: UInt32 = 0
            try db.write { t in
                toy = try addTable(t, "Toy")
                brand = try addColumn(t, toy, "brand", CS_TYPE_STRING)
                dog = try addTable(t, "Dog")
                name = try addColumn(t, dog, "name", CS_TYPE_STRING)
                age = try addColumn(t, dog, "age", CS_TYPE_INT)
                toys = try addColumn(t, dog, "toys", CS_TYPE_LINK, coll: CS_COLL_LIST, target: toy)
                var d = try createObj(t, dog)
                var l = cs_coll()
                try must(cs_coll_open(&d, toys, &l))
                for _ in 0..<5 {
                    let o = try createObj(t, toy)
                    var v = cs_link(toy, o.key)
                    try must(cs_list_append(&l, &v))
                }
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var lw: OpaquePointer?
            try must(cs_watch_coll(notifier!, dog, 0, toys, nil, 0, Int32(CS_WATCH_DEEP), &lw))
            var ow: OpaquePointer?
            try must(cs_watch_object(notifier!, dog, 0, nil, 0, Int32(CS_WATCH_SHALLOW), &ow))
            var brandPath = [keypath(toys, brand)]
            var ow2: OpaquePointer?
            try must(cs_watch_object(notifier!, dog, 0, &brandPath, 1, 0, &ow2))
            var toysPath = [keypath(toys)]
            var ow3: OpaquePointer?
            try must(cs_watch_object(notifier!, dog, 0, &toysPath, 1, 0, &ow3))
            let dq = try watchQuery(notifier!, dog, "TRUEPREDICATE", paths: [keypath(name)])
            #expect(try TakenChange(lw!).initial)
            #expect(!cs_watch_pending(ow!))
            _ = try TakenChange(dq)
            // a toy's brand: the list position modified; the deep object filter fires, the
            // shallow ones and the "toys" one do not
            try db.write { t in
                var o = try openObj(t, toy, 2)
                try must(setVal(&o, brand, .str("x")))
            }
            try advance(notifier!)
            var c = try TakenChange(lw!)
            #expect(c.modifications == [2] && c.deletions.isEmpty && c.insertions.isEmpty)
            #expect(!cs_watch_pending(ow!) && !cs_watch_pending(ow3!) && !cs_watch_pending(dq))
            #expect(try TakenChange(ow2!).columns == [toys])
            // list operations
            try db.write { t in
                var d = try openObj(t, dog, 0)
                var l = cs_coll()
                try must(cs_coll_open(&d, toys, &l))
                try must(cs_list_erase(&l, 0))           // [1 2 3 4]
                try must(cs_list_move(&l, 3, 0))         // [4 1 2 3]
                var v = cs_link(toy, 1)
                try must(cs_list_set(&l, 2, &v))         // [4 1 1 3]: position 2 replaced
                try must(cs_list_append(&l, &v))         // [4 1 1 3 1]
            }
            try advance(notifier!)
            c = try TakenChange(lw!)
            // old [0 1 2 3 4]: 0 erased, 4 moved to the front (a deletion and an insertion),
            // position 2 replaced (a modification of old 2), one appended
            #expect(c.deletions == [0, 4])
            #expect(c.insertions == [0, 4])
            #expect(c.modifications == [2] && c.modificationsNew == [2])
            #expect(try TakenChange(ow!).columns == [toys])
            #expect(try TakenChange(ow2!).columns == [toys])
            #expect(try TakenChange(ow3!).columns == [toys])
            #expect(!cs_watch_pending(dq))
            // self-assignment counts; a column outside the filter does not
            try db.write { t in
                var o = try openObj(t, dog, 0)
                try must(setVal(&o, name, .str("")))
            }
            try advance(notifier!)
            #expect(try TakenChange(ow!).columns == [name])
            #expect(try TakenChange(dq).modifications == [0])
            try db.write { t in
                var o = try openObj(t, dog, 0)
                try must(cs_obj_set_int(&o, age, 3))
            }
            try advance(notifier!)
            #expect(try TakenChange(ow!).columns == [age])
            #expect(!cs_watch_pending(dq))
            // deletion of the owner
            try db.write { t in
                var o = try openObj(t, dog, 0)
                try must(cs_obj_delete(&o))
            }
            try advance(notifier!)
            c = try TakenChange(lw!)
            #expect(c.deleted && c.deletions == [0, 1, 2, 3, 4])
            #expect(try TakenChange(ow!).deleted)
            #expect(try TakenChange(dq).deletions == [0])
            for w in [lw, ow, ow2, ow3, dq] { cs_watch_free(w) }
        }
    }

    /// A watch made on a notifier opened at a reader's older version (cs_notifier_open_at) and
    /// brought to another notifier's version (cs_notifier_advance_to) holds the changes in
    /// between; handed over (cs_watch_move), it goes on with the other notifier's advances.
    /// Advancing backwards, or moving between notifiers at different versions, is CS_MISUSE.
    @Test func watchMadeAtAnOlderVersionCatchesUp() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var dog: UInt32 = 0, toy: UInt32 = 0, name: UInt32 = 0, age: UInt32 = 0, toys: UInt32 = 0
            try db.write { t in
                toy = try addTable(t, "Toy")
                dog = try addTable(t, "Dog")
                name = try addColumn(t, dog, "name", CS_TYPE_STRING)
                age = try addColumn(t, dog, "age", CS_TYPE_INT)
                toys = try addColumn(t, dog, "toys", CS_TYPE_LINK, coll: CS_COLL_LIST, target: toy)
                _ = try createObj(t, dog)
            }
            var reader: OpaquePointer?
            try must(cs_txn_begin(db.h, Int32(CS_TXN_READ), &reader))
            defer { cs_txn_end(reader) }
            var main: OpaquePointer?
            try must(cs_notifier_open(db.h, &main))
            defer { cs_notifier_close(main) }
            try db.write { t in
                var o = try openObj(t, dog, 0)
                try must(cs_obj_set_int(&o, age, 3))
            }
            try db.write { t in
                var d = try openObj(t, dog, 0)
                var l = cs_coll()
                try must(cs_coll_open(&d, toys, &l))
                var v = cs_link(toy, try createObj(t, toy).key)
                try must(cs_list_append(&l, &v))
            }
            try advance(main!)
            #expect(cs_notifier_version(main) == cs_txn_version(reader) + 2)
            var behind: OpaquePointer?
            try must(cs_notifier_open_at(db.h, reader, &behind))
            #expect(cs_notifier_version(behind) == cs_txn_version(reader))
            var ow: OpaquePointer?, lw: OpaquePointer?
            try must(cs_watch_object(behind!, dog, 0, nil, 0, Int32(CS_WATCH_SHALLOW), &ow))
            try must(cs_watch_coll(behind!, dog, 0, toys, nil, 0, Int32(CS_WATCH_DEEP), &lw))
            #expect(try TakenChange(lw!).initial)
            #expect(cs_watch_move(ow, main) == CS_MISUSE)
            var moved = false
            try must(cs_notifier_advance_to(behind, cs_notifier_txn(main), &moved), "cs_notifier_advance_to")
            #expect(moved && cs_notifier_version(behind) == cs_notifier_version(main))
            #expect(cs_notifier_advance_to(behind, reader, &moved) == CS_MISUSE)
            try must(cs_watch_move(ow, main), "cs_watch_move")
            try must(cs_watch_move(lw, main), "cs_watch_move")
            cs_notifier_close(behind)
            var c = try TakenChange(ow!)
            #expect(c.columns == [age, toys].sorted() && c.version == cs_notifier_version(main))
            c = try TakenChange(lw!)
            #expect(c.insertions == [0] && c.deletions.isEmpty && c.modifications.isEmpty)
            try db.write { t in
                var o = try openObj(t, dog, 0)
                try must(setVal(&o, name, .str("a")))
            }
            try advance(main!)
            #expect(try TakenChange(ow!).columns == [name])
            #expect(!cs_watch_pending(lw!))
            cs_watch_free(ow)
            cs_watch_free(lw)
        }
    }

    /// A watch moves only between notifiers of one file: another file's notifier at the same
    /// version number is refused.
    @Test func aWatchDoesNotMoveToAnotherFilesNotifier() throws {
        try withTempDir { dir in
            let a = try DB(dir.path("a.cstore")), b = try DB(dir.path("b.cstore"))
            var dog: UInt32 = 0
            try a.write { t in
                dog = try addTable(t, "Dog")
                _ = try addColumn(t, dog, "age", CS_TYPE_INT)
                _ = try createObj(t, dog)
            }
            try b.write { t in
                let d = try addTable(t, "Dog")
                _ = try addColumn(t, d, "age", CS_TYPE_INT)
                _ = try createObj(t, d)
            }
            var na: OpaquePointer?, nb: OpaquePointer?
            try must(cs_notifier_open(a.h, &na))
            defer { cs_notifier_close(na) }
            try must(cs_notifier_open(b.h, &nb))
            defer { cs_notifier_close(nb) }
            #expect(cs_notifier_version(na) == cs_notifier_version(nb))
            var w: OpaquePointer?
            try must(cs_watch_object(na!, dog, 0, nil, 0, Int32(CS_WATCH_SHALLOW), &w))
            #expect(cs_watch_move(w, nb) == CS_MISUSE)
            cs_watch_free(w)
        }
    }

    /// Maps report keys; backlinks report an owner unlinked as a deletion.
    @Test func mapsAndBacklinks() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var person: UInt32 = 0, dog: UInt32 = 0, dogs: UInt32 = 0, tags: UInt32 = 0
            try db.write { t in
                dog = try addTable(t, "Dog")
                person = try addTable(t, "Person")
                dogs = try addColumn(t, person, "dogs", CS_TYPE_LINK, coll: CS_COLL_LIST, target: dog)
                tags = try addColumn(t, person, "tags", CS_TYPE_INT, coll: CS_COLL_MAP)
                _ = try createObj(t, dog)
                for _ in 0..<3 {
                    var p = try createObj(t, person)
                    var l = cs_coll()
                    try must(cs_coll_open(&p, dogs, &l))
                    var v = cs_link(dog, 0)
                    try must(cs_list_append(&l, &v))
                    var m = cs_coll()
                    try must(cs_coll_open(&p, tags, &m))
                    var one = cs_int(1)
                    try must(cs_map_set(&m, "a", 1, &one))
                    try must(cs_map_set(&m, "b", 1, &one))
                }
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var bw: OpaquePointer?
            try must(cs_watch_backlinks(notifier!, dog, 0, person, dogs, nil, 0, 0, &bw))
            var mw: OpaquePointer?
            try must(cs_watch_coll(notifier!, person, 1, tags, nil, 0, 0, &mw))
            _ = try TakenChange(bw!)
            _ = try TakenChange(mw!)
            try db.write { t in
                var p = try openObj(t, person, 1)
                var l = cs_coll()
                try must(cs_coll_open(&p, dogs, &l))
                try must(cs_list_erase(&l, 0))
                var m = cs_coll()
                try must(cs_coll_open(&p, tags, &m))
                var two = cs_int(2)
                try must(cs_map_set(&m, "b", 1, &two))
                try must(cs_map_set(&m, "c", 1, &two))
                var erased = false
                try must(cs_map_erase(&m, "a", 1, &erased))
            }
            try advance(notifier!)
            let b = try TakenChange(bw!)
            #expect(b.deletions == [1] && b.insertions.isEmpty)
            let m = try TakenChange(mw!)
            #expect(m.keysDeleted == ["a"], "\(m.keysDeleted)")
            #expect(m.keysInserted == ["c"], "\(m.keysInserted)")
            #expect(m.keysModified == ["b"], "\(m.keysModified)")
            cs_watch_free(bw)
            cs_watch_free(mw)
        }
    }

    /// A List watch made to depend on a query over its elements (`cs_watch_depend_query`): a link
    /// to an element from another object, or a write of the name of an object linking to it, makes
    /// it pending with `stale` and no modification; a write the query does not read, or a link to
    /// an object not in the List, leaves it as it was. A SUBQUERY (no key paths) makes it stale
    /// whenever a column it reads is written, in any object. A query watch cannot depend.
    @Test func aCollectionWatchDependsOnAQuery() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var person: UInt32 = 0, dog: UInt32 = 0, dogs: UInt32 = 0, name: UInt32 = 0, age: UInt32 = 0
            try db.write { t in
                dog = try addTable(t, "Dog")
                person = try addTable(t, "Person")
                name = try addColumn(t, person, "name", CS_TYPE_STRING)
                age = try addColumn(t, person, "age", CS_TYPE_INT)
                dogs = try addColumn(t, person, "dogs", CS_TYPE_LINK, coll: CS_COLL_LIST, target: dog)
                for _ in 0..<3 { _ = try createObj(t, dog) }
                for _ in 0..<3 { _ = try createObj(t, person) }
                var p = try openObj(t, person, 0)
                var l = cs_coll()
                try must(cs_coll_open(&p, dogs, &l))
                for k in 0..<2 {
                    var v = cs_link(dog, Int64(k))
                    try must(cs_list_append(&l, &v))
                }
            }
            func link(_ from: Int64, _ to: Int64) throws {
                try db.write { t in
                    var p = try openObj(t, person, from)
                    var l = cs_coll()
                    try must(cs_coll_open(&p, dogs, &l))
                    var v = cs_link(dog, to)
                    try must(cs_list_append(&l, &v))
                }
            }
            func set(_ key: Int64, _ col: UInt32, int: Int64? = nil, string: String? = nil) throws {
                try db.write { t in
                    var p = try openObj(t, person, key)
                    if let int {
                        var v = cs_int(int)
                        try must(cs_obj_set(&p, col, &v))
                    }
                    if let string {
                        try string.withCString { s in
                            var v = cs_string(s, strlen(s))
                            try must(cs_obj_set(&p, col, &v))
                        }
                    }
                }
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            func watch(_ query: String) throws -> OpaquePointer {
                var w: OpaquePointer?
                try must(cs_watch_coll(notifier!, person, 0, dogs, nil, 0, Int32(CS_WATCH_DEEP), &w))
                try must(cs_watch_depend_query(w, query, query.utf8.count, nil, 0, nil), query)
                _ = try TakenChange(w!)
                return w!
            }
            let counted = try watch("@links.Person.dogs.@count > 1")
            let named = try watch("ANY @links.Person.dogs.name == 'x'")
            let sub = try watch("SUBQUERY(@links.Person.dogs, $p, $p.age > 3).@count > 0")
            let all = [counted, named, sub]
            // person 1 links dog 1 (in the List): every watch stale, nothing modified
            try link(1, 1)
            try advance(notifier!)
            for w in all {
                #expect(cs_watch_pending(w))
                let c = try TakenChange(w)
                #expect(c.stale && c.deletions.isEmpty && c.insertions.isEmpty && c.modifications.isEmpty)
            }
            // person 2 links dog 2 (not in the List): the SUBQUERY's watch only (by column)
            try link(2, 2)
            try advance(notifier!)
            #expect(!cs_watch_pending(counted) && !cs_watch_pending(named))
            #expect(try TakenChange(sub).stale)
            // person 1 (linking dog 1) renamed: the name query's
            try set(1, name, string: "x")
            try advance(notifier!)
            #expect(!cs_watch_pending(counted) && !cs_watch_pending(sub))
            #expect(try TakenChange(named).stale)
            // person 2's age (it links no dog of the List): the SUBQUERY's (by column)
            try set(2, age, int: 4)
            try advance(notifier!)
            #expect(!cs_watch_pending(counted) && !cs_watch_pending(named))
            #expect(try TakenChange(sub).stale)
            // a stale watch that was discarded is not pending
            try link(2, 0)
            try advance(notifier!)
            cs_watch_discard(counted)
            #expect(!cs_watch_pending(counted))
            for w in all { cs_watch_free(w) }
            // a query watch cannot depend on a query
            let q = try watchQuery(notifier!, dog, "TRUEPREDICATE")
            let text = "TRUEPREDICATE"
            #expect(cs_watch_depend_query(q, text, text.utf8.count, nil, 0, nil) == Int32(CS_MISUSE))
            cs_watch_free(q)
        }
    }

    /// A backlinks watch depending on a query (`name == 'x'` of the linking objects): a rename
    /// of a linking object in the same advance as a schema change (another table added) still
    /// makes it stale, as a rename alone does. Before, the schema change's whole comparison
    /// found the backlinks as they were, and nothing was pending.
    @Test func aDependingBacklinksWatchIsStaleAcrossASchemaChange() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var person: UInt32 = 0, dog: UInt32 = 0, dogs: UInt32 = 0, name: UInt32 = 0
            try db.write { t in
                dog = try addTable(t, "Dog")
                person = try addTable(t, "Person")
                name = try addColumn(t, person, "name", CS_TYPE_STRING)
                dogs = try addColumn(t, person, "dogs", CS_TYPE_LINK, coll: CS_COLL_LIST, target: dog)
                _ = try createObj(t, dog)
                var p = try createObj(t, person)
                var l = cs_coll()
                try must(cs_coll_open(&p, dogs, &l))
                var v = cs_link(dog, 0)
                try must(cs_list_append(&l, &v))
            }
            func rename(_ t: OpaquePointer, _ to: String) throws {
                var p = try openObj(t, person, 0)
                try to.withCString { s in
                    var v = cs_string(s, strlen(s))
                    try must(cs_obj_set(&p, name, &v))
                }
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var bw: OpaquePointer?
            try must(cs_watch_backlinks(notifier!, dog, 0, person, dogs, nil, 0, Int32(CS_WATCH_DEEP), &bw))
            let text = "name == 'x'"
            try must(cs_watch_depend_query(bw, text, text.utf8.count, nil, 0, nil))
            _ = try TakenChange(bw!)
            try db.write { t in try rename(t, "x") }
            try advance(notifier!)
            #expect(cs_watch_pending(bw))
            #expect(try TakenChange(bw!).stale)
            try db.write { t in
                _ = try addTable(t, "Cat")
                try rename(t, "y")
            }
            try advance(notifier!)
            #expect(cs_watch_pending(bw))
            cs_watch_free(bw)
        }
    }

    /// Key paths through backlink columns, against an oracle over random commits: a watch whose
    /// path is a backlink column reports it exactly when the object's backlinks through it changed
    /// between the two versions (links set, replaced, cleared; List, Map and Set operations;
    /// origins created with links and deleted); a path [backlink, n] also when an origin linking
    /// the object now had `n` written. A query watch reports those objects as modified.
    @Test(arguments: [false, true]) func backlinkKeyPathOracle(coalesce: Bool) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var dog: UInt32 = 0, person: UInt32 = 0, n: UInt32 = 0, pet: UInt32 = 0, dogs: UInt32 = 0,
                fav: UInt32 = 0, pals: UInt32 = 0
            let ndogs = 6
            try db.write { t in
                dog = try addTable(t, "Dog")
                person = try addTable(t, "Person")
                n = try addColumn(t, person, "n", CS_TYPE_INT)
                pet = try addColumn(t, person, "pet", CS_TYPE_LINK, flags: Int(CS_COL_NULLABLE), target: dog)
                dogs = try addColumn(t, person, "dogs", CS_TYPE_LINK, coll: CS_COLL_LIST, target: dog)
                fav = try addColumn(t, person, "fav", CS_TYPE_LINK, coll: CS_COLL_MAP, target: dog)
                pals = try addColumn(t, person, "pals", CS_TYPE_LINK, coll: CS_COLL_SET, target: dog)
                for _ in 0..<ndogs { _ = try createObj(t, dog) }
            }
            let links = [pet, dogs, fav, pals]
            // the hidden backlink column of Dog for each link column of Person
            let back: [UInt32] = try db.read { t in
                var ti = cs_table_info()
                try must(cs_table_info_get(t, dog, &ti))
                return try links.map { l in
                    for c in 0..<ti.col_slots {
                        var ci = cs_column_info()
                        if cs_column_info_get(t, dog, c, &ci) == 0, ci.type == CS_TYPE_BACKLINK, ci.target == person,
                           ci.origin_col == l { return c }
                    }
                    try must(Int32(CS_NOTFOUND), "finding the backlink column of column \(l)")
                    return CS_NONE
                }
            }
            func backlinks(_ t: OpaquePointer) throws -> [[[Int64]]] {
                try (0..<Int64(ndogs)).map { d in
                    var o = try openObj(t, dog, d)
                    return try links.map { l in
                        var cnt = 0
                        try must(cs_obj_backlink_count(&o, person, l, &cnt))
                        return try (0..<cnt).map { i in
                            var k: Int64 = 0
                            try must(cs_obj_backlink_get(&o, person, l, i, &k))
                            return k
                        }.sorted()
                    }
                }
            }
            // the dogs each person lists in `dogs` now
            func listed(_ t: OpaquePointer, _ p: Int64) throws -> Set<Int64> {
                var o = cs_obj()
                guard cs_obj_open(t, person, p, &o) == 0 else { return [] }
                var l = cs_coll()
                try must(cs_coll_open(&o, dogs, &l))
                var size = 0
                try must(cs_coll_size(&l, &size))
                return Set(try (0..<size).map { i -> Int64 in
                    var v = cs_value()
                    try must(cs_list_get(&l, i, &v))
                    return v.v.link.key
                })
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var objectWatches: [OpaquePointer] = [], nameWatches: [OpaquePointer] = []
            for d in 0..<Int64(ndogs) {
                var paths = back.map { keypath($0) }
                var w: OpaquePointer?
                try must(cs_watch_object(notifier!, dog, d, &paths, paths.count, 0, &w))
                objectWatches.append(w!)
                var np = [keypath(back[1], n)]
                try must(cs_watch_object(notifier!, dog, d, &np, 1, 0, &w))
                nameWatches.append(w!)
            }
            let query = try watchQuery(notifier!, dog, "TRUEPREDICATE", paths: [keypath(back[1])])
            _ = try TakenChange(query)
            var rng = NotifyRng(state: coalesce ? 5 : 11)
            func randomDog() -> cs_value { cs_link(dog, Int64.random(in: 0..<Int64(ndogs), using: &rng)) }
            var before = try db.read { try backlinks($0) }
            var named: Set<Int64> = []
            var fired = 0
            for round in 0..<400 {
                try db.write { t in
                    let people = try allKeys(t, person)
                    for _ in 0..<Int.random(in: 1...3, using: &rng) {
                        let op = people.isEmpty ? 0 : Int.random(in: 0..<9, using: &rng)
                        if op == 0 {
                            // an origin created with links already set
                            var o = try createObj(t, person)
                            var v = randomDog()
                            try must(cs_obj_set(&o, pet, &v))
                            var l = cs_coll()
                            try must(cs_coll_open(&o, dogs, &l))
                            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                                var x = randomDog()
                                try must(cs_list_append(&l, &x))
                            }
                            continue
                        }
                        let p = people.randomElement(using: &rng)!
                        var o = cs_obj()
                        guard cs_obj_open(t, person, p, &o) == 0 else { continue }
                        var l = cs_coll()
                        var size = 0
                        switch op {
                        case 1:
                            try must(cs_obj_delete(&o))
                        case 2:
                            var v = Bool.random(using: &rng) ? randomDog() : cs_null()
                            try must(cs_obj_set(&o, pet, &v))
                        case 3:
                            try must(cs_coll_open(&o, dogs, &l))
                            var v = randomDog()
                            try must(cs_list_append(&l, &v))
                        case 4:
                            try must(cs_coll_open(&o, dogs, &l))
                            try must(cs_coll_size(&l, &size))
                            if size > 0 { try must(cs_list_erase(&l, Int.random(in: 0..<size, using: &rng))) }
                        case 5:
                            try must(cs_coll_open(&o, dogs, &l))
                            try must(cs_coll_size(&l, &size))
                            if size > 1 {
                                try must(cs_list_move(&l, Int.random(in: 0..<size, using: &rng), Int.random(in: 0..<size, using: &rng)))
                            }
                        case 6:
                            try must(cs_coll_open(&o, fav, &l))
                            let key = ["a", "b"].randomElement(using: &rng)!
                            if Bool.random(using: &rng) {
                                var v = randomDog()
                                try must(cs_map_set(&l, key, 1, &v))
                            } else {
                                var erased = false
                                try must(cs_map_erase(&l, key, 1, &erased))
                            }
                        case 7:
                            try must(cs_coll_open(&o, pals, &l))
                            var v = randomDog(), done = false
                            if Bool.random(using: &rng) { try must(cs_set_insert(&l, &v, &done)) }
                            else { try must(cs_set_erase(&l, &v, &done)) }
                        default:
                            try must(cs_obj_set_int(&o, n, Int64(round)))
                            named.insert(p)
                        }
                    }
                }
                if coalesce && round % 3 != 2 { continue }
                try advance(notifier!)
                let after = try db.read { try backlinks($0) }
                let namers: Set<Int64> = try db.read { t in
                    try named.reduce(into: Set<Int64>()) { $0.formUnion(try listed(t, $1)) }
                }
                let q = try TakenChange(query)
                var queryMods: [Int] = []
                for d in 0..<ndogs {
                    let expected = (0..<links.count).filter { before[d][$0] != after[d][$0] }.map { back[$0] }.sorted()
                    let got = cs_watch_pending(objectWatches[d]) ? try TakenChange(objectWatches[d]).columns : []
                    #expect(got == expected, "round \(round) dog \(d): \(before[d]) -> \(after[d])")
                    fired += got.isEmpty ? 0 : 1
                    let viaName = before[d][1] != after[d][1] || namers.contains(Int64(d))
                    let gotName = cs_watch_pending(nameWatches[d]) ? try TakenChange(nameWatches[d]).columns : []
                    #expect(gotName == (viaName ? [back[1]] : []), "round \(round) dog \(d) (names)")
                    if before[d][1] != after[d][1] { queryMods.append(d) }
                }
                #expect(q.modifications == queryMods && q.insertions.isEmpty && q.deletions.isEmpty, "round \(round)")
                before = after
                named = []
            }
            #expect(fired > 100)
            for w in objectWatches + nameWatches + [query] { cs_watch_free(w) }
        }
    }

    /// The wait returns for a commit and for a wake (with futex_waitv, or in slices).
    @Test func waitWakes() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { t in _ = try addTable(t, "A") }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            let seen = cs_db_commit_counter(db.h)
            expectCode(cs_notifier_wait(notifier, seen, 10), CS_BUSY, "wait with nothing")
            cs_notifier_wake(notifier)
            try must(cs_notifier_wait(notifier, seen, 5000), "wait after wake")
            try db.write { _ in }
            try must(cs_notifier_wait(notifier, seen, 5000), "wait after commit")
        }
    }

    /// Waits (up to 30 s) until thread `tid` of this process is blocked in a system call, by
    /// /proc/self/task/TID/syscall ("running" while it runs, the call's number while it is
    /// blocked in one); true at once when that file cannot be read.
    private func waitUntilBlocked(_ tid: Int32) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while true {
            let fd = open("/proc/self/task/\(tid)/syscall", O_RDONLY | O_CLOEXEC)
            if fd < 0 { return true }
            var b = [UInt8](repeating: 0, count: 16)
            let n = read(fd, &b, b.count)
            close(fd)
            if n <= 0 { return true }
            if !String(decoding: b[0..<n], as: UTF8.self).hasPrefix("running") { return true }
            if Date() >= deadline { return false }
            usleep(1000)
        }
    }

    /// Waits on `notifiers` (each in a thread, from counter `seen`, up to `timeout` ms) while
    /// `commit` runs on this thread once they are all asleep: when each began and ended and
    /// what it returned, and when the commit ended, on the machine's monotonic clock (so that
    /// what is compared is the wait and the commit, not how long the threads took to be
    /// scheduled). Asleep: the lock file counts them (and `extraSleepers`), and each is blocked
    /// in its wait's system call (counted, a thread has yet to make that call). Nil, with
    /// nothing committed, when they are not asleep within 30 s (a wait may have timed out
    /// before it was seen). The threads have ended when it returns or throws.
    private func timedWait(_ notifiers: [OpaquePointer?], seen: UInt32, timeout: Int32, dbPath: String,
                           extraSleepers: UInt32 = 0, _ commit: () throws -> Void) throws -> TimedWaits? {
        let done = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let results = UnsafeMutableBufferPointer<(began: Double, ended: Double, rc: Int32)>.allocate(capacity: notifiers.count)
        let tids = UnsafeMutableBufferPointer<Int32>.allocate(capacity: notifiers.count)
        defer {
            results.deallocate()
            tids.deallocate()
        }
        nonisolated(unsafe) let (out, tidOut) = (results, tids)
        for (i, notifier) in notifiers.enumerated() {
            nonisolated(unsafe) let n = notifier
            Thread {
                tidOut[i] = currentThreadID()
                started.signal()
                let began = monotonicSeconds()
                let rc = cs_notifier_wait(n, seen, timeout)
                out[i] = (began, monotonicSeconds(), rc)
                done.signal()
            }.start()
        }
        // (on every way out: the threads woken and ended before their buffers go)
        var joined = false
        defer {
            if !joined {
                for n in notifiers { cs_notifier_wake(n) }
                for _ in notifiers { done.wait() }
            }
        }
        for _ in notifiers { started.wait() }
        guard waitForLockFileSleepers(dbPath, UInt32(notifiers.count) + extraSleepers).ok,
              tids.allSatisfy({ waitUntilBlocked($0) }) else { return nil }
        try commit()
        let committed = monotonicSeconds()
        for _ in notifiers { done.wait() }
        joined = true
        return TimedWaits(waits: Array(results), committed: committed)
    }

    /// What `timedWait` saw.
    private struct TimedWaits {
        var waits: [(began: Double, ended: Double, rc: Int32)]
        var committed: Double
        /// Whether every wait saw a commit (CS_OK).
        var allSawIt: Bool { waits.allSatisfy { $0.rc == Int32(CS_OK) } }
        /// Milliseconds wait `i` slept.
        func slept(_ i: Int) -> Double { (waits[i].ended - waits[i].began) * 1000 }
        /// Milliseconds from the commit's end to wait `i`'s end.
        func afterCommit(_ i: Int) -> Double { (waits[i].ended - committed) * 1000 }
        /// Milliseconds from wait `i`'s start to the commit's end.
        func commitAfter(_ i: Int) -> Double { (committed - waits[i].began) * 1000 }
    }

    /// A commit sparing a notifier (cs_txn_commit_sparing) leaves it asleep: its wait sees the
    /// commit only at its timeout (with futex_waitv; waiting in slices, at the end of the slice,
    /// well before the timeout). A plain commit wakes it, and a commit sparing it wakes it when
    /// another notifier of the file sleeps too (docs/ARCHITECTURE.md, Change notifications).
    @Test func aCommitSparingANotifierLeavesItAsleep() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { t in _ = try addTable(t, "A") }
            var spared: OpaquePointer?, other: OpaquePointer?
            try must(cs_notifier_open(db.h, &spared))
            try must(cs_notifier_open(db.h, &other))
            defer {
                cs_notifier_close(spared)
                cs_notifier_close(other)
            }
            func commitSparing() throws {
                let t = try db.begin(CS_TXN_WRITE)
                try must(cs_txn_commit_sparing(t, spared), "cs_txn_commit_sparing")
                check(cs_txn_end(t), "cs_txn_end")
            }
            // the spared wait tells something only if the commit ended well before its timeout
            // (on a busy machine the round may be run again)
            var seen = cs_db_commit_counter(db.h)
            var spare: TimedWaits?
            for _ in 0..<5 where spare == nil {
                let w = try timedWait([spared], seen: seen, timeout: 3000, dbPath: dir.path()) { try commitSparing() }
                if let w, w.commitAfter(0) < 1500 { spare = w }
                seen = cs_db_commit_counter(db.h)
            }
            let slept = try #require(spare, "no commit ended within 1.5 s of the wait's start in 5 rounds")
            #expect(slept.allSawIt, "\(slept.waits)")
            if cs_notifier_waitv() {
                #expect(slept.slept(0) >= 2700, "the spared notifier woke after \(slept.slept(0)) ms, \(slept.afterCommit(0)) ms after the commit")
            } else {
                #expect(slept.afterCommit(0) < 1000, "the spared notifier, waiting in slices, saw the commit \(slept.afterCommit(0)) ms after it")
            }
            let woke = try #require(try timedWait([spared], seen: seen, timeout: 20_000, dbPath: dir.path()) { try db.write { _ in } })
            #expect(woke.allSawIt && woke.afterCommit(0) < 10_000, "a plain commit did not wake the notifier (\(woke.afterCommit(0)) ms after it)")
            seen = cs_db_commit_counter(db.h)
            let both = try #require(try timedWait([spared, other], seen: seen, timeout: 20_000, dbPath: dir.path()) { try commitSparing() })
            #expect(both.allSawIt, "\(both.waits)")
            #expect(both.afterCommit(1) < 10_000, "a commit sparing another notifier did not wake this one (\(both.afterCommit(1)) ms after it)")
            // (woken with it: the commit cannot wake one waiter of the counter and not another)
            #expect(both.afterCommit(0) < 10_000, "\(both.afterCommit(0)) ms")
            // a commit sparing it wakes a cs_db_wait_for_commit sleeper (and it with it)
            seen = cs_db_commit_counter(db.h)
            let waited = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var waiterEnded = 0.0
            nonisolated(unsafe) let h = db.h
            let seenNow = seen
            Thread {
                _ = cs_db_wait_for_commit(h, seenNow, 20_000)
                waiterEnded = monotonicSeconds()
                waited.signal()
            }.start()
            var waiterJoined = false
            defer { if !waiterJoined { waited.wait() } } // (it ends at its timeout at the latest)
            let withWaiter = try #require(try timedWait([spared], seen: seen, timeout: 20_000, dbPath: dir.path(),
                                                        extraSleepers: 1) { try commitSparing() })
            waited.wait()
            waiterJoined = true
            let waiterAfter = (waiterEnded - withWaiter.committed) * 1000
            #expect(withWaiter.allSawIt && waiterAfter < 10_000 && withWaiter.afterCommit(0) < 10_000,
                    "\(waiterAfter) ms, \(withWaiter.afterCommit(0)) ms after the commit")
            // a notifier of another file is refused
            let db2 = try DB(dir.path("other.cstore"))
            var elsewhere: OpaquePointer?
            try must(cs_notifier_open(db2.h, &elsewhere))
            defer { cs_notifier_close(elsewhere) }
            let t = try db.begin(CS_TXN_WRITE)
            expectCode(cs_txn_commit_sparing(t, elsewhere), CS_MISUSE, "a notifier of another file")
            check(cs_txn_end(t), "cs_txn_end")
        }
    }

    /// A misused cs_txn_commit_sparing (a transaction that is not writing: CS_MISUSE) spares
    /// nothing: commits of other threads meanwhile still wake the notifier.
    @Test func aMisusedCommitSparingSparesNothing() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { t in _ = try addTable(t, "A") }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            let reader = try db.begin(CS_TXN_READ)
            nonisolated(unsafe) let (n, r) = (notifier, reader)
            let stop = Atomic<Bool>(false)
            let misuser = Thread {
                while !stop.load(ordering: .relaxed) {
                    if cs_txn_commit_sparing(r, n) != Int32(CS_MISUSE) { break }
                    sched_yield()
                }
            }
            misuser.start()
            defer {
                stop.store(true, ordering: .relaxed)
                while !misuser.isFinished { usleep(1000) }
                check(cs_txn_end(reader), "cs_txn_end")
            }
            // a notifier left asleep would sleep until its timeout, 30 s; woken, it ends
            // milliseconds after the commit (15 s: room for a busy machine)
            for round in 0..<30 {
                let seen = cs_db_commit_counter(db.h)
                let waited = try #require(try timedWait([notifier], seen: seen, timeout: 30_000, dbPath: dir.path()) {
                    try db.write { _ in }
                })
                let late = !waited.allSawIt || waited.afterCommit(0) >= 15_000
                #expect(!late, "commit \(round + 1) of 30 left the notifier asleep (\(waited.waits[0].rc), \(waited.afterCommit(0)) ms after it)")
                if late { break }
            }
            expectCode(cs_txn_commit_sparing(nil, notifier), CS_MISUSE, "no transaction")
        }
    }

    /// A commit of another process sparing its own notifier, asleep on the file, wakes this
    /// process's notifier.
    @Test func aCommitOfAnotherProcessSparingItsNotifierWakes() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            try db.write { t in _ = try addTable(t, "A") }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            let seen = cs_db_commit_counter(db.h)
            nonisolated(unsafe) var out = ""
            let woke = try #require(try timedWait([notifier], seen: seen, timeout: 60_000, dbPath: path) {
                out = try runChild(["commit-sparing", path, "2"], in: dir) // (this one's, and the child's own)
            })
            #expect(out.contains("committed"))
            // (left asleep, the wait would end at its timeout, 60 s; woken, it ends when the
            // child commits, seconds at most even with a sanitizer's slow start on a busy machine)
            #expect(woke.allSawIt && woke.slept(0) < 50_000, "another process's commit did not wake the notifier (\(woke.waits[0].rc) after \(woke.slept(0)) ms)")
            #expect(cs_db_commit_counter(db.h) != seen)
        }
    }
}
