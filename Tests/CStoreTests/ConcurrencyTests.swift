// Transactions used from several threads at once: a reader keeps its snapshot while another
// thread commits, and a second writer waits for the writer lock. (`make tsan` runs this suite.)

import CStore
import Foundation
import Testing

@Suite struct ConcurrencyTests {
    @Test func readerOnAnotherThreadKeepsSnapshot() throws {
        let dir = try TempDir()
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
}
