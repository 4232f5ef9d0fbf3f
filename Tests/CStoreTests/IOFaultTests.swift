// Failing I/O through the replaceable cs_io layer (cstore.h "The replaceable I/O layer"):
// a commit whose writes or syncs fail reports the error, rolls back, and leaves the previous
// version intact, in the open handle and in the file.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A cs_io that passes every call through to the system, except that it can fail writes or
/// syncs with a chosen errno once armed.
final class FaultIO {
    var failWrites = false
    var failWritesAfter = Int.max // fail every write once this many have been made
    var shortWrites = false       // write at most half of each request and return the count
    var tornOnFail = false        // a failing write first writes half of its bytes
    var failSyncs = false
    var failErrno: Int32 = ENOSPC
    var writes = 0
    var syncs = 0
    var recordWrites = false      // keep each successful write's offset and length in `written`
    var written: [(Int64, Int)] = []
    var damageHeaderReads = 0     // the next this many reads of the whole header (192 bytes at 0) return a wrong magic
    var damagedHeaderReads = 0    // ... how many did
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { _, path, flags, mode in Glibc.open(path!, flags, mode) }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { ctx, fd, buf, n, off in
            let me = Unmanaged<FaultIO>.fromOpaque(ctx!).takeUnretainedValue()
            let r = Glibc.pread(fd, buf, n, off)
            if off == 0 && n == 192 && r == 192 && me.damageHeaderReads > 0 {
                me.damageHeaderReads -= 1
                me.damagedHeaderReads += 1
                buf!.storeBytes(of: 0x58, as: UInt8.self) // the magic's first byte
            }
            return r
        }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<FaultIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.writes += 1
            if me.failWrites || me.writes > me.failWritesAfter {
                if me.tornOnFail && me.writes == me.failWritesAfter + 1 && n > 1 {
                    _ = Glibc.pwrite(fd, buf, n / 2, off)
                }
                errno = me.failErrno
                return -1
            }
            if me.shortWrites && n > 1 {
                return Glibc.pwrite(fd, buf, n / 2, off)
            }
            if me.recordWrites { me.written.append((Int64(off), n)) }
            return Glibc.pwrite(fd, buf, n, off)
        }
        x.fdatasync = { ctx, fd in
            let me = Unmanaged<FaultIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.syncs += 1
            if me.failSyncs {
                errno = me.failErrno
                return -1
            }
            return Glibc.fdatasync(fd)
        }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }

    func open(_ path: String, flags: Int = CS_OPEN_CREATE,
              durability: cs_durability = CS_DURABILITY_FULL) throws -> OpaquePointer {
        var opts = cs_options()
        opts.flags = UInt32(flags)
        opts.durability = durability
        opts.io = UnsafePointer(io)
        var h: OpaquePointer?
        try must(cs_db_open(path, &opts, &h), "cs_db_open with a custom cs_io")
        return h!
    }
}

/// Makes a table "T" with an int column and `n` objects, committed.
private func seed(_ h: OpaquePointer, _ n: Int) throws -> (UInt32, UInt32) {
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
    let txn = t!
    let table = try addTable(txn, "T")
    let col = try addColumn(txn, table, "v", CS_TYPE_INT)
    for i in 0..<n {
        var o = try createObj(txn, table)
        try must(cs_obj_set_int(&o, col, Int64(i)), "set")
    }
    try must(cs_txn_commit(txn), "commit")
    check(cs_txn_end(txn))
    return (table, col)
}

private func countRows(_ h: OpaquePointer, _ table: UInt32) throws -> UInt64 {
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "begin read")
    defer { _ = cs_txn_end(t) }
    return try tableCount(t!, table)
}

@Suite struct IOFaultTests {
    /// An open that reads the header again after a read that found it damaged (a writer of
    /// another process may be rewriting it, FORMAT.md, Opening a file) and then opens the file
    /// succeeds and leaves the thread's last failure as it was before the call: not the text of
    /// the damaged read it went past.
    @Test func anOpenThatReadsTheHeaderAgainKeepsTheThreadsMessage() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let made = FaultIO()
        let first = try made.open(path)
        let (table, _) = try seed(first, 5)
        check(cs_db_close(first))
        var missing: OpaquePointer?
        var opts = cs_options()
        #expect(cs_db_open(dir.path("missing.cstore"), &opts, &missing) == Int32(CS_NOTFOUND))
        let before = lastMessage(), beforeErrno = cs_errno()
        #expect(!before.isEmpty)
        let io = FaultIO()
        io.damageHeaderReads = 1
        let h = try io.open(path, flags: 0)
        #expect(io.damagedHeaderReads == 1, "the open read the whole header")
        #expect(lastMessage() == before, "after the open: \(lastMessage())")
        #expect(cs_errno() == beforeErrno)
        #expect(try countRows(h, table) == 5)
        check(cs_db_close(h))
    }

    @Test func defaultIOIsAvailable() {
        let io = cs_io_default()
        #expect(io != nil)
        #expect(io?.pointee.pwrite != nil && io?.pointee.fdatasync != nil && io?.pointee.open != nil)
    }

    @Test func customIOSeesTheWrites() throws {
        try withTempDir { dir in
            let fio = FaultIO()
            let h = try fio.open(dir.path())
            _ = try seed(h, 10)
            #expect(fio.writes > 0, "commits write through cs_io.pwrite")
            #expect(fio.syncs > 0, "full durability syncs through cs_io.fdatasync")
            check(cs_db_close(h))
            withExtendedLifetime(fio) {}
        }
    }

    @Test(arguments: [("ENOSPC", ENOSPC, CS_FULL), ("EIO", EIO, CS_IOERR)])
    func failedWriteRollsBackCommit(_ name: String, _ err: Int32, _ code: Int) throws {
        try withTempDir { dir in
            let fio = FaultIO()
            let h = try fio.open(dir.path())
            let (table, col) = try seed(h, 100)
            let before = cs_db_version(h)

            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let txn = t!
            for i in 0..<2000 {
                var o = try createObj(txn, table)
                check(cs_obj_set_int(&o, col, Int64(-i)))
            }
            fio.failErrno = err
            fio.failWrites = true
            let rc = cs_txn_commit(txn)
            fio.failWrites = false
            expectCode(rc, code, "commit with pwrite failing with \(name)")
            if code == CS_IOERR { #expect(cs_errno() == err, "cs_errno() after \(name)") }
            #expect(!cs_txn_is_writing(txn), "a failed commit rolls back")
            #expect(cs_db_version(h) == before, "no new version")
            #expect(try tableCount(txn, table) == 100, "the transaction reads the previous version")
            check(cs_txn_end(txn))
            check(cs_db_verify(h), "verify after the failed commit")

            // With writes working again, the next commit succeeds.
            var t2: OpaquePointer?
            if name == "ENOSPC" {
                try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t2), "begin after ENOSPC")
                var o = try createObj(t2!, table)
                check(cs_obj_set_int(&o, col, 12345))
                check(cs_txn_commit(t2!), "commit after ENOSPC cleared")
                check(cs_txn_end(t2!))
            }
            check(cs_db_close(h))
            let h2 = try fio.open(dir.path(), flags: 0)
            #expect(try countRows(h2, table) == (name == "ENOSPC" ? 101 : 100), "after reopen")
            check(cs_db_verify(h2), "verify after reopen")
            check(cs_db_close(h2))
            check(cs_file_verify(dir.path()))
            withExtendedLifetime(fio) {}
        }
    }

    @Test func failedSyncRefusesWritesUntilReopen() throws {
        try withTempDir { dir in
            let fio = FaultIO()
            let h = try fio.open(dir.path())
            let (table, col) = try seed(h, 50)
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let txn = t!
            for i in 0..<10 {
                var o = try createObj(txn, table)
                check(cs_obj_set_int(&o, col, Int64(i)))
            }
            fio.failErrno = EIO
            fio.failSyncs = true
            let rc = cs_txn_commit(txn)
            fio.failSyncs = false
            expectCode(rc, CS_IOERR, "commit with fdatasync failing")
            #expect(cs_errno() == EIO)
            check(cs_txn_end(txn))
            var w: OpaquePointer?
            let again = cs_txn_begin(h, Int32(CS_TXN_WRITE), &w)
            if again == Int32(CS_OK), let w {
                var o = cs_obj()
                let c = cs_obj_create(w, table, &o)
                let commit = c == Int32(CS_OK) ? cs_txn_commit(w) : c
                #expect(commit != Int32(CS_OK), "writes are refused after a failed sync")
                _ = cs_txn_end(w)
            }
            check(cs_db_close(h))
            let h2 = try fio.open(dir.path(), flags: 0)
            let n = try countRows(h2, table)
            #expect(n == 50 || n == 60, "after reopen the file holds either version, found \(n) rows")
            check(cs_db_verify(h2), "verify after reopen")
            var w2: OpaquePointer?
            try must(cs_txn_begin(h2, Int32(CS_TXN_WRITE), &w2), "writes work after reopen")
            _ = try createObj(w2!, table)
            check(cs_txn_commit(w2!))
            check(cs_txn_end(w2!))
            check(cs_db_close(h2))
            withExtendedLifetime(fio) {}
        }
    }

    /// FULL syncs once per small commit (a one-sync commit: the header carries a hash of the
    /// data) and twice per large one (the data, then the header); NOSYNC and MEMORY never sync.
    @Test(arguments: ["full", "nosync", "memory"])
    func syncsPerCommit(_ mode: String) throws {
        try withTempDir { dir in
            let fio = FaultIO()
            let durability = mode == "full" ? CS_DURABILITY_FULL : (mode == "nosync" ? CS_DURABILITY_NOSYNC : CS_DURABILITY_MEMORY)
            let h = try fio.open(dir.path(), durability: durability)
            let (table, col) = try seed(h, 10)
            let syncsBefore = fio.syncs
            let writesBefore = fio.writes
            for i in 0..<5 {
                var t: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
                var o = try createObj(t!, table)
                check(cs_obj_set_int(&o, col, Int64(i)))
                try must(cs_txn_commit(t!), "commit")
                check(cs_txn_end(t!))
            }
            let syncs = fio.syncs - syncsBefore
            #expect(syncs == (mode == "full" ? 5 : 0), "\(mode): \(syncs) syncs for 5 small commits")
            #expect(fio.writes > writesBefore, "\(mode): commits write through cs_io")
            check(cs_db_close(h))
            withExtendedLifetime(fio) {}
        }
    }

    @Test func shortWritesAreCompleted() throws {
        try withTempDir { dir in
            let fio = FaultIO()
            fio.shortWrites = true
            let h = try fio.open(dir.path())
            let (table, col) = try seed(h, 3000)
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "begin")
            var o = try openObj(t!, table, try allKeys(t!, table)[2999])
            #expect(try getInt(&o, col) == 2999)
            check(cs_txn_end(t))
            check(cs_db_close(h))
            fio.shortWrites = false
            check(cs_file_verify(dir.path()), "a file written with short writes verifies")
            let h2 = try fio.open(dir.path(), flags: 0)
            #expect(try countRows(h2, table) == 3000)
            check(cs_db_close(h2))
            withExtendedLifetime(fio) {}
        }
    }

    /// Fails the n-th write of a commit and every later one, for every n the commit makes
    /// (when `torn`, the failing write first writes half its bytes): the commit fails, and
    /// the reopened file holds exactly the previous version.
    @Test(arguments: [false, true])
    func failingEachWriteOfACommitKeepsThePreviousVersion(torn: Bool) throws {
        try withTempDir { dir in
            let base = dir.path("base.cstore")
            var table: UInt32 = 0
            var writesPerCommit = 0
            do {
                let fio = FaultIO()
                let h = try fio.open(base)
                (table, _) = try seed(h, 500)
                let before = fio.writes
                var t: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
                for _ in 0..<700 { _ = try createObj(t!, table) }
                try must(cs_txn_commit(t!), "commit")
                check(cs_txn_end(t))
                writesPerCommit = fio.writes - before
                check(cs_db_close(h))
                withExtendedLifetime(fio) {}
            }
            #expect(writesPerCommit >= 2, "a commit writes nodes and the header")
            // Start again from a 500-object file for every failure point.
            try FileManager.default.removeItem(atPath: base)
            do {
                let fio = FaultIO()
                let h = try fio.open(base)
                _ = try seed(h, 500)
                check(cs_db_close(h))
                withExtendedLifetime(fio) {}
            }
            let pristine = try Data(contentsOf: URL(fileURLWithPath: base))
            for n in 0..<min(writesPerCommit, 40) {
                let path = dir.path("fail-\(n).cstore")
                try pristine.write(to: URL(fileURLWithPath: path))
                let fio = FaultIO()
                let h = try fio.open(path, flags: 0)
                var t: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
                for _ in 0..<700 { _ = try createObj(t!, table) }
                fio.failErrno = EIO
                fio.tornOnFail = torn
                fio.failWritesAfter = fio.writes + n
                let rc = cs_txn_commit(t!)
                expectCode(rc, CS_IOERR, "commit with write \(n + 1) of \(writesPerCommit) failing")
                check(cs_txn_end(t))
                _ = cs_db_close(h)
                withExtendedLifetime(fio) {}
                let reopened = try DB(path, flags: 0)
                try reopened.read { txn throws in
                    let count = try tableCount(txn, table)
                    if torn {
                        // A torn write may have completed the new header slot and the selector:
                        // the file then holds the new version, which is consistent too.
                        #expect(count == 500 || count == 1200, "torn write \(n + 1): \(count) objects")
                    } else {
                        #expect(count == 500, "write \(n + 1) of \(writesPerCommit) failed: \(count) objects, expected the previous 500")
                    }
                }
                reopened.verify("write \(n + 1) failed")
                reopened.close()
            }
        }
    }
}
