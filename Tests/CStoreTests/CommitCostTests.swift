// Commit cost (docs/ARCHITECTURE.md, Storage: Commit): a commit writes the nodes on the path from the changed leaves to
// the top, so its size grows with the change, not with the file.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A cs_io that passes every call through and records the writes to the database file (the
/// file opened whose path ends in ".cstore") as (offset, length) pairs.
final class WriteLogIO {
    var dbFD: Int32 = -1
    var writes: [(off: Int64, len: Int)] = []
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, path, flags, mode in
            let me = Unmanaged<WriteLogIO>.fromOpaque(ctx!).takeUnretainedValue()
            let fd = Glibc.open(path!, flags, mode)
            if String(cString: path!).hasSuffix(".cstore") { me.dbFD = fd }
            return fd
        }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<WriteLogIO>.fromOpaque(ctx!).takeUnretainedValue()
            if fd == me.dbFD { me.writes.append((Int64(off), n)) }
            return Glibc.pwrite(fd, buf, n, off)
        }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }
}

@Suite struct CommitCostTests {
    /// Builds a table of `rows` objects and returns the bytes written by single-object commits:
    /// (create one object, update one object in the middle).
    private func singleObjectCommitBytes(rows: Int, in dir: TempDir) throws -> (create: UInt64, update: UInt64) {
        let db = try DB(dir.path("rows-\(rows).cstore"))
        var (t, a, b): (UInt32, UInt32, UInt32) = (0, 0, 0)
        try db.write { txn throws in
            t = try addTable(txn, "T")
            a = try addColumn(txn, t, "a", CS_TYPE_INT)
            b = try addColumn(txn, t, "b", CS_TYPE_INT)
        }
        var keys: [Int64] = []
        let batch = 100_000
        var done = 0
        while done < rows {
            let n = min(batch, rows - done)
            try db.write { txn throws in
                for i in done..<(done + n) {
                    var o = try createObj(txn, t)
                    if i == rows / 2 { keys.append(o.key) }
                    try must(cs_obj_set_int(&o, a, Int64(i)), "set")
                    try must(cs_obj_set_int(&o, b, Int64(i) * 7), "set")
                }
            }
            done += n
        }
        // Take the smallest of three commits of each kind.
        var create = UInt64.max
        var update = UInt64.max
        for round in 0..<3 {
            let txn = try db.begin(CS_TXN_WRITE)
            var o = try createObj(txn, t)
            check(cs_obj_set_int(&o, a, 42))
            try must(cs_txn_commit(txn), "commit")
            create = min(create, cs_txn_last_commit_bytes(txn))
            try must(cs_txn_promote(txn), "promote")
            var m = try openObj(txn, t, keys[0])
            check(cs_obj_set_int(&m, b, Int64(round)))
            try must(cs_txn_commit(txn), "commit")
            update = min(update, cs_txn_last_commit_bytes(txn))
            check(cs_txn_end(txn))
        }
        db.verify()
        db.close()
        return (create, update)
    }

    @Test func oneObjectCommitCostDoesNotGrowWithTheFile() throws {
        try withTempDir { dir in
            let small = try singleObjectCommitBytes(rows: 1_000, in: dir)
            let big = try singleObjectCommitBytes(rows: 1_000_000, in: dir)
            let limit: UInt64 = 64 * 1024
            #expect(small.create > 0 && big.create > 0, "commits write something")
            #expect(small.create < limit, "create on 1k rows wrote \(small.create) bytes")
            #expect(big.create < limit, "create on 1M rows wrote \(big.create) bytes")
            #expect(big.create <= 2 * small.create && small.create <= 2 * big.create,
                    "create: 1M rows \(big.create) bytes vs 1k rows \(small.create) bytes")
            #expect(small.update < limit, "update on 1k rows wrote \(small.update) bytes")
            #expect(big.update < limit, "update on 1M rows wrote \(big.update) bytes")
        }
    }

    /// The commit path of docs/ARCHITECTURE.md (Storage: Commit): items that placement puts side
    /// by side in the file go out in one write, whatever their order in the commit's plan. The
    /// load is the commit benchmark's (one Int of one object per commit, objects spread over the
    /// file, docs/benchmarks/README.md), on 20,000 objects of 10 Ints: placement then fills holes
    /// and often puts a later item right before an earlier one.
    @Test func itemsSideBySideInTheFileGoOutInOneWrite() throws {
        try withTempDir { dir in
            let log = WriteLogIO()
            var opts = cs_options()
            opts.flags = UInt32(CS_OPEN_CREATE)
            opts.durability = CS_DURABILITY_NOSYNC
            opts.io = UnsafePointer(log.io)
            var hh: OpaquePointer?
            try must(cs_db_open(dir.path("writes.cstore"), &opts, &hh), "cs_db_open")
            let h = hh!
            // the I/O layer must outlive the close, which writes through it
            defer { withExtendedLifetime(log) { _ = cs_db_close(h) } }
            let rows = 20_000
            var table: UInt32 = 0
            var cols = [UInt32](repeating: 0, count: 10)
            var first: Int64 = 0
            var txn: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn), "begin")
            try must(cs_table_add(txn, "T", 0, &table), "cs_table_add")
            for c in 0..<10 {
                try must(cs_column_add(txn, table, "i\(c)", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &cols[c]), "cs_column_add")
            }
            let values = (0..<Int64(rows)).map { $0 }
            try values.withUnsafeBufferPointer { v in
                let perColumn = [UnsafePointer<Int64>?](repeating: v.baseAddress, count: 10)
                try must(cs_obj_create_many_int(txn, table, rows, 10, cols, perColumn, &first), "create_many")
            }
            try must(cs_txn_commit(txn), "commit")
            check(cs_txn_end(txn))
            var adjacent = 0
            var commitsWithAdjacent = 0
            for u in 0..<400 {
                try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn), "begin")
                var o = try openObj(txn!, table, first + Int64(u % rows * 7919 % rows))
                try must(cs_obj_set_int(&o, cols[0], -Int64(u + 1)), "set")
                log.writes.removeAll()
                try must(cs_txn_commit(txn), "commit")
                var writes: UInt64 = 0
                var syncs: UInt64 = 0
                cs_txn_last_commit_io(txn, &writes, &syncs)
                check(cs_txn_end(txn))
                #expect(UInt64(log.writes.count) == writes, "commit \(u): the I/O layer saw \(log.writes.count) writes, the commit counted \(writes)")
                let sorted = log.writes.sorted { $0.off < $1.off }
                var here = 0
                for k in 1..<max(sorted.count, 1) where sorted[k - 1].off + Int64(sorted[k - 1].len) == sorted[k].off {
                    here += 1
                }
                adjacent += here
                if here > 0 { commitsWithAdjacent += 1 }
            }
            #expect(adjacent == 0, "\(commitsWithAdjacent) of 400 commits made \(adjacent) writes that continue another write of the same commit")
        }
    }
}
