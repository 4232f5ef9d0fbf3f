// The cluster tree (docs/FORMAT.md §6.2): object keys, leaf splits as a table grows past 256 rows per
// leaf and 256 children per inner node, merges as rows are deleted, iteration in key order.

import CStore
import Foundation
import Testing

/// A table of `rows` objects with three int columns, grown and then thinned out in phases.
private struct SplitMergeRun {
    let rows: Int
    var keys: [Int64] = []      // keys[i] is the key of the i-th object created
    var alive: [Int] = []       // indices into keys of the objects that still exist, ascending
    var t: UInt32 = 0
    var a: UInt32 = 0
    var b: UInt32 = 0
    var c: UInt32 = 0

    init(rows: Int) { self.rows = rows }

    static func valueA(_ i: Int) -> Int64 { Int64(i) }
    static func valueB(_ i: Int) -> Int64 { Int64(i) * 3 - 7_000_000 }
    static func valueC(_ i: Int) -> Int64 { i % 1000 == 0 ? Int64(i) << 33 : Int64(i % 13) }

    mutating func populate(_ db: DB) throws {
        try db.write { txn throws in
            t = try addTable(txn, "Rows")
            a = try addColumn(txn, t, "a", CS_TYPE_INT)
            b = try addColumn(txn, t, "b", CS_TYPE_INT)
            c = try addColumn(txn, t, "c", CS_TYPE_INT)
        }
        keys.reserveCapacity(rows)
        let batch = max(rows / 10, 1)
        var i = 0
        while i < rows {
            let end = min(i + batch, rows)
            try db.write { txn throws in
                for j in i..<end {
                    var o = try createObj(txn, t)
                    keys.append(o.key)
                    try must(cs_obj_set_int(&o, a, Self.valueA(j)), "set a")
                    try must(cs_obj_set_int(&o, b, Self.valueB(j)), "set b")
                    try must(cs_obj_set_int(&o, c, Self.valueC(j)), "set c")
                }
            }
            i = end
        }
        alive = Array(0..<rows)
        var ascending = true
        for j in 1..<keys.count where keys[j] <= keys[j - 1] { ascending = false; break }
        #expect(ascending, "keys of new objects increase")
        #expect(Set(keys).count == rows, "keys are unique")
    }

    /// Iterates the whole table and checks keys, values, count and sums against the model.
    func verifyAll(_ db: DB, _ phase: String) throws {
        try db.read { txn throws in
            #expect(try tableCount(txn, t) == UInt64(alive.count), "\(phase): count")
            var info = cs_table_info()
            check(cs_table_info_get(txn, t, &info), "cs_table_info_get")
            #expect(info.count == UInt64(alive.count), "\(phase): cs_table_info count")

            var it = cs_iter()
            try must(cs_iter_init(&it, txn, t), "cs_iter_init")
            var o = cs_obj()
            var pos = 0
            var bad = 0
            var sumA: Int64 = 0, sumB: Int64 = 0, sumC: Int64 = 0
            while true {
                let rc = cs_iter_next(&it, &o)
                if rc == Int32(CS_NOTFOUND) { break }
                try must(rc, "cs_iter_next")
                guard pos < alive.count else { pos += 1; continue }
                let i = alive[pos]
                var va: Int64 = 0, vb: Int64 = 0, vc: Int64 = 0
                try must(cs_obj_get_int(&o, a, &va), "get a")
                try must(cs_obj_get_int(&o, b, &vb), "get b")
                try must(cs_obj_get_int(&o, c, &vc), "get c")
                sumA &+= va; sumB &+= vb; sumC &+= vc
                if o.key != keys[i] || va != Self.valueA(i) || vb != Self.valueB(i) || vc != Self.valueC(i) {
                    bad += 1
                    if bad <= 5 {
                        Issue.record("\(phase): position \(pos) has key \(o.key) (a \(va), b \(vb), c \(vc)); expected key \(keys[i]) (a \(Self.valueA(i)), b \(Self.valueB(i)), c \(Self.valueC(i)))")
                    }
                }
                pos += 1
            }
            #expect(pos == alive.count, "\(phase): iteration visited \(pos) objects")
            #expect(bad == 0, "\(phase): \(bad) objects differ")
            let expA = alive.reduce(Int64(0)) { $0 &+ Self.valueA($1) }
            let expB = alive.reduce(Int64(0)) { $0 &+ Self.valueB($1) }
            let expC = alive.reduce(Int64(0)) { $0 &+ Self.valueC($1) }
            #expect(sumA == expA && sumB == expB && sumC == expC, "\(phase): full sums")

            // Random access by key: a sample of live keys and of deleted ones.
            var rng = SeededRNG(seed: UInt64(alive.count))
            if !alive.isEmpty {
                for _ in 0..<min(2000, alive.count) {
                    let i = alive[Int(rng.next() % UInt64(alive.count))]
                    var s = cs_obj()
                    guard check(cs_obj_open(txn, t, keys[i], &s), "\(phase): open live key \(keys[i])") else { continue }
                    #expect(try getInt(&s, b) == Self.valueB(i), "\(phase): b of key \(keys[i])")
                }
            }
            let aliveSet = Set(alive)
            var probes = 0
            while probes < 500 && aliveSet.count < rows {
                let i = Int(rng.next() % UInt64(rows))
                if aliveSet.contains(i) { continue }
                var s = cs_obj()
                expectCode(cs_obj_open(txn, t, keys[i], &s), CS_NOTFOUND, "\(phase): open deleted key \(keys[i])")
                probes += 1
            }
        }
        check(cs_db_verify(db.h), "cs_db_verify \(phase)")
    }

    mutating func delete(_ db: DB, where remove: (Int) -> Bool) throws {
        let doomed = alive.filter(remove)
        try db.write { txn throws in
            for i in doomed {
                var o = try openObj(txn, t, keys[i])
                try must(cs_obj_delete(&o), "cs_obj_delete(\(keys[i]))")
                #expect(!cs_obj_exists(&o))
            }
        }
        alive.removeAll(where: remove)
    }

    mutating func run(_ db: DB) throws {
        try populate(db)
        try verifyAll(db, "after \(rows) inserts")

        try delete(db) { $0 % 2 == 1 }
        try verifyAll(db, "after deleting every other object")

        let lo = rows / 4, hi = rows * 3 / 4
        try delete(db) { $0 >= lo && $0 < hi }
        try verifyAll(db, "after deleting the middle half")

        // Thin out runs at both ends so that neighbouring leaves are nearly empty.
        try delete(db) { ($0 < lo && $0 % 10 != 0) || ($0 >= hi && $0 % 6 != 0) }
        try verifyAll(db, "after thinning")

        try db.reopen()
        try verifyAll(db, "after reopen")

        // New objects get keys past every key ever used.
        let maxKey = keys.max() ?? -1
        try db.write { txn throws in
            for j in 0..<300 {
                var o = try createObj(txn, t)
                #expect(o.key > maxKey, "new key \(o.key) after deletes")
                keys.append(o.key)
                let i = rows + j
                try must(cs_obj_set_int(&o, a, Self.valueA(i)), "set a")
                try must(cs_obj_set_int(&o, b, Self.valueB(i)), "set b")
                try must(cs_obj_set_int(&o, c, Self.valueC(i)), "set c")
                alive.append(i)
            }
        }
        try verifyAll(db, "after appending again")

        // Delete everything that is left.
        try delete(db) { _ in true }
        try verifyAll(db, "after deleting everything")
        try db.reopen()
        try verifyAll(db, "empty, after reopen")
    }
}

@Suite struct ClusterTests {
    @Test func splitAndMergeTwentyThousandRows() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var run = SplitMergeRun(rows: 20_000)
            try run.run(db)
        }
    }

    /// A million rows (200k under the sanitizers, which still makes a tree of three levels:
    /// leaves of at most CLUSTER_MAX = 256 rows under inner nodes of at most 256 children).
    @Test func splitAndMergeAThreeLevelTree() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var run = SplitMergeRun(rows: underSanitizer ? 200_000 : 1_000_000)
            try run.run(db)
            db.close()
            check(cs_file_verify(dir.path()), "cs_file_verify")
        }
    }

    @Test func emptyTableIteratesNothing() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let t = try db.write { try addTable($0, "T") }
            try db.read { txn throws in
                #expect(try allKeys(txn, t) == [])
                #expect(try tableCount(txn, t) == 0)
                var o = cs_obj()
                expectCode(cs_obj_open(txn, t, 0, &o), CS_NOTFOUND, "open in empty table")
            }
        }
    }

    @Test func iterationResumesAfterWrites() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let col = try addColumn(txn, t, "v", CS_TYPE_INT)
                var keys: [Int64] = []
                for _ in 0..<600 { keys.append(try createObj(txn, t).key) }
                var it = cs_iter()
                try must(cs_iter_init(&it, txn, t), "cs_iter_init")
                var seen: [Int64] = []
                var o = cs_obj()
                while cs_iter_next(&it, &o) == Int32(CS_OK) {
                    seen.append(o.key)
                    // Writing to the current object, deleting a later one and appending one
                    // while iterating: the iterator resumes after the last key it returned.
                    check(cs_obj_set_int(&o, col, o.key * 2))
                    if seen.count == 10 {
                        var victim = try openObj(txn, t, keys[20])
                        check(cs_obj_delete(&victim))
                        let added = try createObj(txn, t)
                        keys.append(added.key)
                    }
                }
                var expected = keys
                expected.remove(at: 20)
                #expect(seen == expected)
                for k in expected {
                    var x = try openObj(txn, t, k)
                    #expect(try getInt(&x, col) == k * 2)
                }
            }
        }
    }

    @Test func accessorSurvivesCommitAndSeesDeletion() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let txn = try db.begin(CS_TXN_WRITE)
            let t = try addTable(txn, "T")
            let col = try addColumn(txn, t, "v", CS_TYPE_INT)
            var keys: [Int64] = []
            for i in 0..<600 {
                var o = try createObj(txn, t)
                check(cs_obj_set_int(&o, col, Int64(i) * 10))
                keys.append(o.key)
            }
            var held = try openObj(txn, t, keys[300])
            try must(cs_txn_commit(txn), "commit")
            #expect(try getInt(&held, col) == 3000, "accessor read after commit")
            try must(cs_txn_promote(txn), "promote")
            // Deleting rows before it moves its row within the leaf; the accessor revalidates.
            for k in keys[0..<300] {
                var o = try openObj(txn, t, k)
                check(cs_obj_delete(&o))
            }
            #expect(cs_obj_exists(&held))
            #expect(try getInt(&held, col) == 3000, "accessor read after earlier rows were deleted")
            check(cs_obj_delete(&held))
            #expect(!cs_obj_exists(&held))
            var v: Int64 = 0
            expectCode(cs_obj_get_int(&held, col, &v), CS_NOTFOUND, "get on a deleted object")
            try must(cs_txn_commit(txn), "commit")
            check(cs_txn_end(txn))
            try db.read { txn throws in
                #expect(try allKeys(txn, t) == Array(keys[301...]))
            }
            db.verify()
        }
    }

    @Test func keysAreNotReusedAfterDeleteOrClear() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let t = try db.write { try addTable($0, "T") }
            var used: [Int64] = []
            try db.write { txn throws in
                for _ in 0..<600 { used.append(try createObj(txn, t).key) }
                var last = try openObj(txn, t, used.last!)
                check(cs_obj_delete(&last))
            }
            try db.write { txn throws in
                let o = try createObj(txn, t)
                #expect(o.key > used.max()!, "a deleted last key is not handed out again")
                used.append(o.key)
                try must(cs_table_clear(txn, t), "cs_table_clear")
                #expect(try tableCount(txn, t) == 0)
            }
            try db.reopen()
            try db.write { txn throws in
                let o = try createObj(txn, t)
                #expect(o.key > used.max()!, "keys are not reused after a clear and a reopen")
                var x = cs_obj()
                expectCode(cs_obj_open(txn, t, used[0], &x), CS_NOTFOUND, "open a cleared key")
                expectCode(cs_obj_open(txn, t, -5, &x), CS_NOTFOUND, "open a negative key")
                expectCode(cs_obj_open(txn, t + 7, o.key, &x), CS_NOTFOUND, "open in a missing table")
            }
            db.verify()
        }
    }

    @Test func objectsCreatedInARolledBackTransactionAreGone() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let t = try db.write { try addTable($0, "T") }
            let txn = try db.begin(CS_TXN_WRITE)
            var o = try createObj(txn, t)
            #expect(cs_obj_exists(&o))
            check(cs_txn_rollback(txn))
            #expect(!cs_obj_exists(&o), "the accessor sees that its object was rolled back")
            var v: Int64 = 0
            #expect(cs_obj_get_int(&o, 0, &v) != Int32(CS_OK))
            check(cs_txn_end(txn))
        }
    }

    @Test func manyColumnsAddedAndRemoved() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var cols: [String: UInt32] = [:]
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "Wide")
                for c in 0..<70 { cols["c\(c)"] = try addColumn(txn, t, "c\(c)", CS_TYPE_INT) }
                for i in 0..<300 {
                    var o = try createObj(txn, t)
                    keys.append(o.key)
                    for c in 0..<70 { check(cs_obj_set_int(&o, cols["c\(c)"]!, Int64(i * 100 + c))) }
                }
            }
            try db.write { txn throws in
                for c in stride(from: 0, to: 70, by: 3) {
                    try must(cs_column_remove(txn, t, cols["c\(c)"]!), "remove c\(c)")
                    cols["c\(c)"] = nil
                }
                for c in 70..<80 { cols["c\(c)"] = try addColumn(txn, t, "c\(c)", CS_TYPE_INT, flags: CS_COL_NULLABLE) }
                var o = try openObj(txn, t, keys[7])
                check(cs_obj_set_int(&o, cols["c75"]!, 75))
            }
            try db.reopen()
            try db.read { txn throws in
                for (name, col) in cols {
                    #expect(try findColumn(txn, t, name) == col, "column \(name) keeps its key")
                }
                for (i, k) in keys.enumerated() where i % 37 == 7 {
                    var o = try openObj(txn, t, k)
                    for c in 0..<70 where c % 3 != 0 {
                        #expect(try getInt(&o, cols["c\(c)"]!) == Int64(i * 100 + c), "row \(i) column c\(c)")
                    }
                    #expect(getVal(&o, cols["c75"]!) == (i == 7 ? .int(75) : .null))
                    #expect(getVal(&o, cols["c70"]!) == .null)
                }
            }
            db.verify()
        }
    }
}
