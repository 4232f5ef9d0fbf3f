// A read transaction keeps its snapshot, value for value, while a writer thread commits 1000
// times; a second reader that advances after every check only ever sees whole commits.
// (`make tsan` runs this suite: its name contains "Concurrency".)

import CStore
import Foundation
import Testing

@Suite struct SnapshotConcurrencyTests {
    @Test func readerKeepsExactSnapshotWhileWriterCommits1000Times() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let db = try DB(dir.path())
        // Table T: 200 objects with v = 3i and s = "s<i>"; table Meta: one object whose n
        // counts the writer's commits. Each commit changes 5 values, deletes one object and
        // creates two, so T holds 200 + n objects in every version.
        var ids: (t: UInt32, v: UInt32, s: UInt32, meta: UInt32, n: UInt32, metaKey: Int64) = (0, 0, 0, 0, 0, 0)
        var expected: [(Int64, Int64, Val)] = []
        try db.write { txn throws in
            ids.t = try addTable(txn, "T")
            ids.v = try addColumn(txn, ids.t, "v", CS_TYPE_INT)
            ids.s = try addColumn(txn, ids.t, "s", CS_TYPE_STRING)
            ids.meta = try addTable(txn, "Meta")
            ids.n = try addColumn(txn, ids.meta, "n", CS_TYPE_INT)
            ids.metaKey = try createObj(txn, ids.meta).key
            for i in 0..<200 {
                var o = try createObj(txn, ids.t)
                try must(cs_obj_set_int(&o, ids.v, Int64(3 * i)), "set v")
                try must(setVal(&o, ids.s, .str("s\(i)")), "set s")
                expected.append((o.key, Int64(3 * i), .str("s\(i)")))
            }
        }
        let commits = 1000
        let c = ids
        let handle = Shared(db.h)
        let snapshot = Shared(try db.begin(CS_TXN_READ))
        let pinnedVersion = cs_txn_version(snapshot.value)
        let writerDone = Shared(false)
        let writerErrors = Shared<[String]>([])
        let writer = Thread {
            defer { writerDone.value = true }
            var rng = SeededRNG(seed: 99)
            for k in 1...commits {
                var w: OpaquePointer?
                guard cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w) == Int32(CS_OK), let w else {
                    writerErrors.mutate { $0.append("begin \(k): \(lastMessage())") }
                    return
                }
                var ok = true
                var keys: [Int64] = []
                var it = cs_iter()
                var o = cs_obj()
                ok = ok && cs_iter_init(&it, w, c.t) == Int32(CS_OK)
                while ok && cs_iter_next(&it, &o) == Int32(CS_OK) { keys.append(o.key) }
                for _ in 0..<5 where ok {
                    var x = cs_obj()
                    ok = cs_obj_open(w, c.t, keys[Int(rng.next() % UInt64(keys.count))], &x) == Int32(CS_OK)
                        && cs_obj_set_int(&x, c.v, -Int64(k)) == Int32(CS_OK)
                }
                var d = cs_obj()
                ok = ok && cs_obj_open(w, c.t, keys[Int(rng.next() % UInt64(keys.count))], &d) == Int32(CS_OK)
                    && cs_obj_delete(&d) == Int32(CS_OK)
                for _ in 0..<2 where ok {
                    var x = cs_obj()
                    ok = cs_obj_create(w, c.t, &x) == Int32(CS_OK) && cs_obj_set_int(&x, c.v, Int64(k)) == Int32(CS_OK)
                }
                var m = cs_obj()
                ok = ok && cs_obj_open(w, c.meta, c.metaKey, &m) == Int32(CS_OK)
                    && cs_obj_set_int(&m, c.n, Int64(k)) == Int32(CS_OK)
                    && cs_txn_commit(w) == Int32(CS_OK)
                if !ok { writerErrors.mutate { $0.append("commit \(k): \(lastMessage())") } }
                _ = cs_txn_end(w)
                if !ok { return }
            }
        }
        // A second reader advances after every check: T holds 200 + n objects, versions only
        // move forward.
        let followerDone = Shared(false)
        let followerProblems = Shared<[String]>([])
        let followerChecks = Shared(0)
        let follower = Thread {
            defer { followerDone.value = true }
            var r: OpaquePointer?
            guard cs_txn_begin(handle.value, Int32(CS_TXN_READ), &r) == Int32(CS_OK), let r else {
                followerProblems.mutate { $0.append("begin: \(lastMessage())") }
                return
            }
            defer { _ = cs_txn_end(r) }
            var lastVersion: UInt64 = 0
            var lastN: Int64 = -1
            var first = true
            while true {
                // Read the flag first, then advance: the last check then sees the last commit.
                let stop = writerDone.value
                if !first && cs_txn_advance(r, nil) != Int32(CS_OK) {
                    followerProblems.mutate { $0.append("advance: \(lastMessage())") }
                    return
                }
                first = false
                var m = cs_obj()
                var n: Int64 = 0
                var count: UInt64 = 0
                guard cs_obj_open(r, c.meta, c.metaKey, &m) == Int32(CS_OK), cs_obj_get_int(&m, c.n, &n) == Int32(CS_OK),
                      cs_table_count(r, c.t, &count) == Int32(CS_OK) else {
                    followerProblems.mutate { $0.append("read: \(lastMessage())") }
                    return
                }
                if count != UInt64(200 + n) { followerProblems.mutate { $0.append("version \(cs_txn_version(r)): n \(n) but \(count) objects") } }
                if n < lastN || cs_txn_version(r) < lastVersion { followerProblems.mutate { $0.append("went back from n \(lastN) to \(n)") } }
                lastN = n
                lastVersion = cs_txn_version(r)
                followerChecks.mutate { $0 += 1 }
                if stop { break }
            }
            if lastN != Int64(commits) { followerProblems.mutate { $0.append("the last version read has n \(lastN)") } }
        }
        writer.start()
        follower.start()

        // This thread checks every value of its snapshot until the writer is done.
        var rounds = 0
        var mismatches = 0
        while true {
            let stop = writerDone.value
            let r = snapshot.value
            var it = cs_iter()
            try must(cs_iter_init(&it, r, c.t), "cs_iter_init")
            var o = cs_obj()
            var i = 0
            while cs_iter_next(&it, &o) == Int32(CS_OK) {
                if i >= expected.count { mismatches += 1; break }
                let (key, v, s) = expected[i]
                let got = try getInt(&o, c.v)
                if o.key != key || got != v || getVal(&o, c.s) != s { mismatches += 1 }
                i += 1
            }
            if i != expected.count { mismatches += 1 }
            var m = try openObj(r, c.meta, c.metaKey)
            if try getInt(&m, c.n) != 0 { mismatches += 1 }
            if cs_txn_version(r) != pinnedVersion { mismatches += 1 }
            rounds += 1
            if mismatches > 0 || stop { break }
        }
        #expect(mismatches == 0, "the snapshot changed under its reader (\(mismatches) differences in \(rounds) rounds)")
        #expect(rounds >= 2, "the snapshot was checked while the writer committed")
        #expect(waitUntil(seconds: 120) { writerDone.value && followerDone.value }, "the threads finished")
        #expect(writerErrors.value.isEmpty, "writer: \(writerErrors.value.prefix(3))")
        #expect(followerProblems.value.isEmpty, "follower: \(followerProblems.value.prefix(3))")
        #expect(followerChecks.value >= 2)
        #expect(cs_db_version(db.h) == pinnedVersion + UInt64(commits), "1000 commits made 1000 versions")

        // After all that, the old snapshot still reads exactly, then advances to the newest.
        #expect(try tableCount(snapshot.value, c.t) == 200)
        try must(cs_txn_advance(snapshot.value, nil), "advance")
        #expect(try tableCount(snapshot.value, c.t) == UInt64(200 + commits))
        check(cs_txn_end(snapshot.value))
        db.verify("after 1000 commits with a pinned reader")
        db.close()
    }
}
