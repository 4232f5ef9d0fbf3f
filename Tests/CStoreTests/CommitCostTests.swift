// Commit cost (docs/ARCHITECTURE.md, Storage: Commit): a commit writes the nodes on the path from the changed leaves to
// the top, so its size grows with the change, not with the file.

import CStore
import Foundation
import Testing

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
}
