// Transactions used from several threads at once: a reader keeps its snapshot while another
// thread commits, and a second writer waits for the writer lock. (`make tsan` runs this suite.)

import CStore
import Foundation
import Testing

@Suite struct ConcurrencyTests {
    @Test func readerOnAnotherThreadKeepsSnapshot() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try DB(dir.path())
        var (t, c): (UInt32, UInt32) = (0, 0)
        try db.write { txn throws in
            t = try addTable(txn, "T")
            c = try addColumn(txn, t, "v", CS_TYPE_INT)
            for i in 0..<100 {
                var o = try createObj(txn, t)
                check(cs_obj_set_int(&o, c, Int64(i)))
            }
        }
        let reader = Shared(try db.begin(CS_TXN_READ))
        let handle = Shared(db.h)
        let (table, col) = (t, c)
        // A writer thread commits 20 times while this thread reads its snapshot.
        let done = Shared(false)
        let writer = Thread {
            defer { done.value = true }
            for _ in 0..<20 {
                var w: OpaquePointer?
                guard cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w) == Int32(CS_OK), let w else { return }
                for _ in 0..<50 {
                    var o = cs_obj()
                    _ = cs_obj_create(w, table, &o)
                    _ = cs_obj_set_int(&o, col, 1000)
                }
                _ = cs_txn_commit(w)
                _ = cs_txn_end(w)
            }
        }
        writer.start()
        var checks = 0
        while !done.value || checks < 5 {
            var n: UInt64 = 0
            check(cs_table_count(reader.value, table, &n))
            #expect(n == 100)
            checks += 1
            usleep(500)
            if checks > 100_000 { break }
        }
        #expect(try tableCount(reader.value, table) == 100)
        try must(cs_txn_advance(reader.value, nil), "advance")
        #expect(try tableCount(reader.value, table) == 100 + 20 * 50)
        check(cs_txn_end(reader.value))
        db.verify()
        db.close()
    }

    @Test func secondWriterWaitsForTheFirst() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let t = try db.write { try addTable($0, "T") }
            let first = try db.begin(CS_TXN_WRITE)
            _ = try createObj(first, t)
            let handle = Shared(db.h)
            let secondSaw = Shared<UInt64>(UInt64.max)
            let secondStarted = Shared(false)
            let secondDone = Shared(false)
            let second = Thread {
                secondStarted.value = true
                var w: OpaquePointer?
                guard cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w) == Int32(CS_OK), let w else {
                    secondDone.value = true
                    return
                }
                var n: UInt64 = 0
                _ = cs_table_count(w, t, &n)
                secondSaw.value = n
                _ = cs_txn_end(w)
                secondDone.value = true
            }
            second.start()
            while !secondStarted.value { usleep(1000) }
            usleep(100_000)
            #expect(!secondDone.value, "a second write transaction waits for the writer lock")
            try must(cs_txn_commit(first), "commit")
            check(cs_txn_end(first))
            var waited = 0
            while !secondDone.value && waited < 10_000 { usleep(1000); waited += 1 }
            #expect(secondDone.value)
            #expect(secondSaw.value == 1, "the second writer sees the first one's commit")
        }
    }

    /// A writer moves amounts between 50 accounts (the total stays 50,000) while three reader
    /// threads check, in each snapshot they read, that the total is exactly 50,000.
    @Test func readersSeeConsistentSnapshotsWhileWriting() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, c): (UInt32, UInt32) = (0, 0)
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "Account")
                c = try addColumn(txn, t, "balance", CS_TYPE_INT)
                for _ in 0..<50 {
                    var o = try createObj(txn, t)
                    keys.append(o.key)
                    check(cs_obj_set_int(&o, c, 1000))
                }
            }
            let handle = Shared(db.h)
            let stop = Shared(false)
            let bad = Shared(0)
            let snapshots = Shared(0)
            let (table, col) = (t, c)
            var readers: [Thread] = []
            let finished = Shared(0)
            for _ in 0..<3 {
                let th = Thread {
                    defer { finished.mutate { $0 += 1 } }
                    var r: OpaquePointer?
                    guard cs_txn_begin(handle.value, Int32(CS_TXN_READ), &r) == Int32(CS_OK), let r else {
                        bad.mutate { $0 += 1 }
                        return
                    }
                    defer { _ = cs_txn_end(r) }
                    while !stop.value {
                        var it = cs_iter()
                        var total: Int64 = 0
                        var n = 0
                        if cs_iter_init(&it, r, table) != Int32(CS_OK) { bad.mutate { $0 += 1 }; return }
                        var o = cs_obj()
                        while cs_iter_next(&it, &o) == Int32(CS_OK) {
                            var v: Int64 = 0
                            if cs_obj_get_int(&o, col, &v) != Int32(CS_OK) { bad.mutate { $0 += 1 } }
                            total += v
                            n += 1
                        }
                        if total != 50_000 || n != 50 { bad.mutate { $0 += 1 } }
                        snapshots.mutate { $0 += 1 }
                        if cs_txn_advance(r, nil) != Int32(CS_OK) { bad.mutate { $0 += 1 }; return }
                    }
                }
                readers.append(th)
                th.start()
            }
            // Every reader checks its first snapshot before the writer starts.
            var waitedForReaders = 0
            while snapshots.value < 3 && bad.value == 0 && waitedForReaders < 30_000 {
                usleep(1000)
                waitedForReaders += 1
            }
            #expect(snapshots.value >= 3, "the readers read before the writer started")
            var rng = SeededRNG(seed: 4)
            for _ in 0..<200 {
                try db.write { txn throws in
                    for _ in 0..<5 {
                        let a = keys[Int(rng.next() % 50)]
                        let b = keys[Int(rng.next() % 50)]
                        let amount = Int64(rng.next() % 100)
                        var oa = try openObj(txn, t, a)
                        var ob = try openObj(txn, t, b)
                        try must(cs_obj_set_int(&oa, c, try getInt(&oa, c) - amount), "debit")
                        try must(cs_obj_set_int(&ob, c, try getInt(&ob, c) + amount), "credit")
                    }
                }
            }
            stop.value = true
            var waited = 0
            while finished.value < 3 && waited < 30_000 { usleep(1000); waited += 1 }
            #expect(finished.value == 3, "reader threads finished")
            #expect(bad.value == 0, "inconsistent snapshots or errors seen by readers")
            _ = readers
            db.verify()
        }
    }

    /// Four threads each commit 50 read-modify-write increments of one counter; the writer
    /// lock serialises them, so none is lost.
    @Test func concurrentWritersDoNotLoseUpdates() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, c): (UInt32, UInt32) = (0, 0)
            var k: Int64 = 0
            try db.write { txn throws in
                t = try addTable(txn, "Counter")
                c = try addColumn(txn, t, "n", CS_TYPE_INT)
                k = try createObj(txn, t).key
            }
            let handle = Shared(db.h)
            let errors = Shared(0)
            let finished = Shared(0)
            let (table, col, key) = (t, c, k)
            for _ in 0..<4 {
                let th = Thread {
                    defer { finished.mutate { $0 += 1 } }
                    for _ in 0..<50 {
                        var w: OpaquePointer?
                        guard cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w) == Int32(CS_OK), let w else {
                            errors.mutate { $0 += 1 }
                            continue
                        }
                        var o = cs_obj()
                        var n: Int64 = 0
                        if cs_obj_open(w, table, key, &o) != Int32(CS_OK)
                            || cs_obj_get_int(&o, col, &n) != Int32(CS_OK)
                            || cs_obj_set_int(&o, col, n + 1) != Int32(CS_OK)
                            || cs_txn_commit(w) != Int32(CS_OK) {
                            errors.mutate { $0 += 1 }
                        }
                        _ = cs_txn_end(w)
                    }
                }
                th.start()
            }
            var waited = 0
            while finished.value < 4 && waited < 60_000 { usleep(1000); waited += 1 }
            #expect(finished.value == 4, "writer threads finished")
            #expect(errors.value == 0)
            try db.read { txn throws in
                var o = try openObj(txn, t, k)
                #expect(try getInt(&o, c) == 200, "no increment is lost")
            }
            db.verify()
        }
    }
}
