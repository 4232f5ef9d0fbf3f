// Free-space reuse (docs/FORMAT.md §7): space freed by a commit is reused by later commits once no
// reader pins an older version, so a file that is emptied and refilled does not keep growing.

import CStore
import Foundation
import Testing

@Suite struct FreeSpaceTests {
    // Smaller under the sanitizers, where the fills dominate the run's time.
    private static let rows = underSanitizer ? 40_000 : 100_000

    private func fill(_ db: DB, _ t: UInt32, _ s: UInt32, _ a: UInt32, _ b: UInt32, round: Int) throws {
        try db.write { txn throws in
            for i in 0..<Self.rows {
                var o = try createObj(txn, t)
                try must(setVal(&o, s, .str("object \(i) of round \(round) with some text")), "set s")
                try must(cs_obj_set_int(&o, a, Int64(i)), "set a")
                try must(cs_obj_set_int(&o, b, Int64(i) * 1_000_003 + Int64(round)), "set b")
            }
        }
    }

    /// The bound on file growth of docs/FORMAT.md §7.2 (Placement) for commits whose nodes keep
    /// their size: after many random one-row updates, each a commit of its own, the logical size
    /// stays within 16/15 of the live bytes plus a small allowance (what the last commit freed and
    /// one commit). The loaded values alternate in sign (r or -r), so a leaf's frame already spans
    /// the negative values the updates write (a leaf of rows below the number of updates aside).
    /// Every update makes one sync. Each of the first updates after the load is one run of nodes
    /// plus the header write while less than a sixteenth of the file is reusable, and otherwise
    /// its hot part in one run, one write per cold node and the header (expectFirstUpdateWrites).
    /// `make test` runs 20k objects and 3,000 updates; `make test-full` 1M objects and 100k
    /// updates.
    @Test func randomOneRowUpdatesKeepTheFileBounded() throws {
        let rows = fullCampaign ? 1_000_000 : 20_000
        let updates = fullCampaign ? 100_000 : underSanitizer ? 500 : 3_000
        let (_, end) = try randomOneRowUpdates(rows: rows, updates: updates, signed: true, durable: true)
        expectGrowthBound(end)
    }

    /// The same updates on values 0..<rows, which a commit frames at 8 bits per leaf: nearly every
    /// update takes its leaf to 32 bits (272 bytes to 1,040), and the old copy's hole holds no
    /// leaf of the new size. No bound of 16/15 of the live bytes holds for such a load
    /// (docs/FORMAT.md §7.2, Nodes that grow: 1.19 x the live bytes after 100k updates on 1M
    /// objects); what holds is that the holes the widening leaves behind are left, not added to
    /// without end: over the second half of the updates the logical size grows by at most 16/15
    /// of what the live bytes grow, plus the allowance. No syncs (placement does not depend on
    /// durability). `make test` runs 20k objects and 3,000 updates; `make test-full` 1M objects
    /// and 100k updates.
    @Test func randomOneRowUpdatesThatWidenLeavesSettle() throws {
        let rows = fullCampaign ? 1_000_000 : 20_000
        let updates = fullCampaign ? 100_000 : underSanitizer ? 500 : 3_000
        let (middle, end) = try randomOneRowUpdates(rows: rows, updates: updates, signed: false, durable: false)
        expectSettledGrowth(middle, end)
    }

    /// Loads `rows` objects of 10 Int columns in one commit, each object created and set on its
    /// own (values r, or with `signed` r for even rows and -r for odd ones), then makes `updates`
    /// commits each setting one random value to -u. Returns the stats after half the updates
    /// and after the last; the file verifies.
    private func randomOneRowUpdates(rows: Int, updates: Int, signed: Bool, durable: Bool) throws
        -> (cs_db_stats, cs_db_stats) {
        var middle = cs_db_stats(), end = cs_db_stats()
        try withTempDir { dir in
            let db = try DB(dir.path(), durability: durable ? CS_DURABILITY_FULL : CS_DURABILITY_NOSYNC)
            var t: UInt32 = 0
            var cols: [UInt32] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                for c in 0..<10 { cols.append(try addColumn(txn, t, "i\(c)", CS_TYPE_INT)) }
                for i in 0..<rows {
                    var o = try createObj(txn, t)
                    let v = Int64(i)
                    for c in cols { try must(cs_obj_set_int(&o, c, signed && i % 2 == 1 ? -v : v), "set") }
                }
            }
            let keys = try db.read { try allKeys($0, t) }
            var rng = SeededRNG(seed: 16)
            for u in 0..<updates {
                let before = try u < 10 ? db.stats() : cs_db_stats()
                let txn = try db.begin(CS_TXN_WRITE)
                var o = try openObj(txn, t, keys[Int(rng.next() % UInt64(rows))])
                try must(cs_obj_set_int(&o, cols[Int(rng.next() % 10)], -Int64(u)), "set")
                try must(cs_txn_commit(txn), "commit")
                var writes: UInt64 = 0, syncs: UInt64 = 0
                cs_txn_last_commit_io(txn, &writes, &syncs)
                check(cs_txn_end(txn))
                #expect(syncs == (durable ? 1 : 0), "update \(u): \(syncs) syncs")
                #expect(writes >= 2, "update \(u): nodes and header")
                // a durable commit also appends its record to the journal (docs/FORMAT.md §13)
                if u < 10 { expectFirstUpdateWrites(writes - (durable ? 1 : 0), before, u) }
                if u + 1 == updates / 2 { middle = try db.stats() }
            }
            end = try db.stats()
            db.verify()
            db.close()
        }
        return (middle, end)
    }

    /// The writes of a one-row commit made while no reader pins an old version, given the stats
    /// before it (everything on the free list then is reusable): while under a sixteenth of the
    /// logical size is, placement puts the commit in one run (FORMAT.md §7.2, cases 1 and 2),
    /// one write and the header; else its hot part in one run, at most two cold nodes (the
    /// column's leaf, the cluster leaf) each into a hole of its own, and the header (case 3a).
    /// Returns whether the commit was one that must be one run.
    @discardableResult
    private func expectFirstUpdateWrites(_ writes: UInt64, _ before: cs_db_stats, _ u: Int,
                                         sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        if before.free_bytes < before.logical_size / 16 {
            #expect(writes == 2, "update \(u) with \(before.free_bytes) of \(before.logical_size) bytes free",
                    sourceLocation: sourceLocation)
            return true
        }
        #expect(writes <= 4, "update \(u) with \(before.free_bytes) of \(before.logical_size) bytes free",
                sourceLocation: sourceLocation)
        return false
    }

    /// The growth bound of docs/FORMAT.md §7.2: logical size <= 16/15 x live bytes + 256 KiB
    /// (the allowance covers what the last commit freed, which is not reusable yet, and one
    /// commit). Live bytes are the logical size less the free list's bytes.
    private func expectGrowthBound(_ db: DB, _ what: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws {
        expectGrowthBound(try db.stats(), what, sourceLocation: sourceLocation)
    }

    private func expectGrowthBound(_ st: cs_db_stats, _ what: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let live = Double(st.logical_size - st.free_bytes)
        #expect(Double(st.logical_size) <= 16.0 / 15.0 * live + 256 * 1024,
                "\(what)logical size \(st.logical_size) for \(UInt64(live)) live bytes, \(st.free_extents) free extents",
                sourceLocation: sourceLocation)
    }

    /// The settled growth of docs/FORMAT.md §7.2, for loads whose nodes grow too: from `middle` to
    /// `end` the logical size grows by at most 16/15 of what the live bytes grow, plus 256 KiB.
    private func expectSettledGrowth(_ middle: cs_db_stats, _ end: cs_db_stats,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
        let grown = Double(end.logical_size) - Double(middle.logical_size)
        let liveGrown = Double(end.logical_size - end.free_bytes) - Double(middle.logical_size - middle.free_bytes)
        #expect(grown <= 16.0 / 15.0 * max(liveGrown, 0) + 256 * 1024,
                "the second half grew the file by \(grown) bytes for \(liveGrown) more live bytes",
                sourceLocation: sourceLocation)
    }

    /// A long run of one-row commits after a bulk load reaches a steady size: the free space
    /// those commits leave scattered through the file is reused, not left behind while the
    /// file grows at its end. 100k objects of 10 Int columns in one commit, then 25k commits
    /// each setting one value of a random object (no syncs: placement does not depend on
    /// durability). After each tenth of the updates the growth bound holds, and what the second
    /// half of the updates adds to the logical size is no more than 16/15 of what it adds to
    /// the live bytes (leaves widen and split) plus the allowance.
    ///
    /// The loaded values alternate in sign, so every column node already spans the values the
    /// updates write and keeps its size: a commit's nodes are the sizes of the ones it frees,
    /// which is the case the bound covers. Updates that make framed nodes larger are the
    /// documented exception (FORMAT.md §7.2): oneRowCommitsThatWidenFramedNodesSettle.
    @Test func manyOneRowCommitsReachASteadySize() throws {
        let writes = try oneRowCommitRun(signed: true, boundEveryTenth: true)
        // Settled, a one-row commit is one run for its hot part, one write per cold node (the
        // column's leaf and the cluster leaf) and the header (FORMAT.md §7.2, case 3a); filling
        // holes node by node (case 3) took 7-9 writes on this file.
        #expect(writes <= 4.5, "\(writes) writes per one-row commit over the second half")
    }

    /// The same run on values r x (c + 1), which a commit frames at 8 or 16 bits per leaf
    /// (FORMAT.md §3), and updates writing -u, which take the node they land in to 32 bits: each
    /// first update of a node frees a small node and writes one up to four times larger, which
    /// no freed small extent holds until its neighbours are freed and merge (the exception of
    /// FORMAT.md §7.2). Measured: the logical size passes the bound by up to 2.1% while the
    /// nodes widen (3.50 MB for a bound of 3.43 MB after 2,500 updates), then stays within it
    /// once they have. This checks the settled end: the bound after the last update, and the
    /// second half's growth.
    @Test func oneRowCommitsThatWidenFramedNodesSettle() throws {
        _ = try oneRowCommitRun(signed: false, boundEveryTenth: false)
    }

    /// Returns the mean number of writes (header included) of the second half's commits.
    private func oneRowCommitRun(signed: Bool, boundEveryTenth: Bool) throws -> Double {
        var writesLate: UInt64 = 0
        let rows = underSanitizer ? 20_000 : 100_000
        let updates = underSanitizer ? 5_000 : 25_000
        try withTempDir { dir in
            let db = try DB(dir.path(), durability: CS_DURABILITY_NOSYNC)
            var t: UInt32 = 0
            var cols: [UInt32] = []
            var first: Int64 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                for c in 0..<10 { cols.append(try addColumn(txn, t, "i\(c)", CS_TYPE_INT)) }
                let data: [[Int64]] = (0..<10).map { (c: Int) -> [Int64] in
                    (0..<rows).map { (r: Int) -> Int64 in
                        let v = Int64(r * (c + 1))
                        return signed && r % 2 == 1 ? -v : v
                    }
                }
                try data.withPointers { ptrs in
                    try must(cs_obj_create_many_int(txn, t, rows, 10, cols, ptrs, &first), "cs_obj_create_many_int")
                }
            }
            var rng = SeededRNG(seed: 1616)
            var middle = cs_db_stats()
            var oneRun = 0
            for u in 0..<updates {
                let before = try u < 10 ? db.stats() : cs_db_stats()
                let txn = try db.begin(CS_TXN_WRITE)
                var o = try openObj(txn, t, first + Int64(rng.next() % UInt64(rows)))
                try must(cs_obj_set_int(&o, cols[Int(rng.next() % 10)], -Int64(u)), "set")
                try must(cs_txn_commit(txn), "commit")
                var writes: UInt64 = 0, syncs: UInt64 = 0
                cs_txn_last_commit_io(txn, &writes, &syncs)
                if u >= updates / 2 { writesLate += writes }
                if u < 10 && expectFirstUpdateWrites(writes, before, u) { oneRun += 1 }
                check(cs_txn_end(txn))
                if boundEveryTenth && (u + 1) % (updates / 10) == 0 { try expectGrowthBound(db, "after \(u + 1) updates: ") }
                if u + 1 == updates / 2 { middle = try db.stats() }
            }
            try expectGrowthBound(db, "after the last update: ")
            let end = try db.stats()
            // Not vacuous: the bulk load leaves less than a sixteenth of the file reusable, so
            // at least the first update is checked as one run (all ten at 100k objects).
            #expect(oneRun >= 1, "\(oneRun) of the first 10 updates had under a sixteenth of the file reusable")
            expectSettledGrowth(middle, end)
            db.verify()
            db.close()
        }
        return Double(writesLate) / Double(updates - updates / 2)
    }

    /// What a small commit writes of the free list grows with the chunks it touches, not with
    /// the list (docs/FORMAT.md §7.1: unchanged chunks and pages are kept by reference, only the
    /// small root is rewritten each time). Clearing every other object's list frees one node in
    /// every other place: a list of about 25k extents, then of about 100k; one-row commits on
    /// the longer list write on average no more than on the shorter one plus a small allowance.
    @Test func oneRowCommitBytesDoNotGrowWithTheFreeList() throws {
        let owners = underSanitizer ? 40_000 : 200_000
        try withTempDir { dir in
            let db = try DB(dir.path(), durability: CS_DURABILITY_NOSYNC)
            var t: UInt32 = 0, list: UInt32 = 0
            var cols: [UInt32] = []
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                list = try addColumn(txn, t, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
                // live data besides the lists, as an object of a real table would have
                for c in 0..<8 { cols.append(try addColumn(txn, t, "i\(c)", CS_TYPE_INT)) }
                for i in 0..<owners {
                    var o = try createObj(txn, t)
                    keys.append(o.key)
                    for c in cols { try must(cs_obj_set_int(&o, c, Int64(i) << 20), "set") }
                    var l = try openColl(&o, list)
                    var v = cs_int(Int64(i))
                    try must(cs_list_append(&l, &v), "append")
                }
            }
            func clearLists(_ range: Range<Int>) throws {
                try db.write { txn throws in
                    for i in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
                        var o = try openObj(txn, t, keys[i])
                        var l = try openColl(&o, list)
                        try must(cs_coll_clear(&l), "clear")
                    }
                }
            }
            var u: Int64 = 0
            func oneRowCommits() throws -> UInt64 {
                var sum: UInt64 = 0
                for k in 0..<16 {
                    let txn = try db.begin(CS_TXN_WRITE)
                    var o = try openObj(txn, t, keys[(k * 7919 + Int(u)) % owners])
                    u += 1
                    try must(cs_obj_set_int(&o, cols[0], -u), "set")
                    try must(cs_txn_commit(txn), "commit")
                    sum += cs_txn_last_commit_bytes(txn)
                    check(cs_txn_end(txn))
                }
                return sum / 16
            }
            try clearLists(0..<owners / 4)
            let short = try db.stats().free_extents
            let shortBytes = try oneRowCommits()
            try clearLists(owners / 4..<owners)
            let long = try db.stats().free_extents
            let longBytes = try oneRowCommits()
            #expect(long >= 3 * short && short >= UInt64(owners / 16), "free extents: \(short), then \(long)")
            // The allowance: the root's and a page's growth, and one chunk more or less touched
            // on average (a chunk holds up to 256 extents, 6,152 bytes, FORMAT.md §7.1). The whole
            // list rewritten would be 24 bytes per extent (2.4 MB for 100k).
            #expect(longBytes <= shortBytes + 4096 + 6152,
                    "one-row commits wrote \(shortBytes) bytes on average with \(short) free extents, \(longBytes) with \(long)")
            db.verify()
            db.close()
        }
    }

    /// The file is filled with 100k objects, then cleared and refilled 10 times. Both the
    /// logical size and the physical file size must stay within 1.5x of their values after
    /// the first fill (the assertion checks both).
    @Test func clearAndRefillReusesSpace() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, s, a, b): (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            try db.write { txn throws in
                t = try addTable(txn, "T")
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                a = try addColumn(txn, t, "a", CS_TYPE_INT)
                b = try addColumn(txn, t, "b", CS_TYPE_INT)
            }
            try fill(db, t, s, a, b, round: 0)
            let first = try db.stats()
            #expect(first.logical_size > 0 && first.file_size >= first.logical_size)
            for round in 1...10 {
                try db.write { txn throws in try must(cs_table_clear(txn, t), "cs_table_clear") }
                let cleared = try db.stats()
                try db.read { txn throws in #expect(try tableCount(txn, t) == 0) }
                #expect(cleared.free_bytes > 0, "clearing frees space (round \(round))")
                try fill(db, t, s, a, b, round: round)
                let st = try db.stats()
                #expect(Double(st.logical_size) <= 1.5 * Double(first.logical_size),
                        "round \(round): logical_size \(st.logical_size) vs \(first.logical_size) after the first fill")
                #expect(Double(st.file_size) <= 1.5 * Double(first.file_size),
                        "round \(round): file_size \(st.file_size) vs \(first.file_size) after the first fill")
                #expect(UInt64(fileSize(dir.path())) == st.file_size, "file_size is the physical size")
            }
            db.verify()
            try db.read { txn throws in
                #expect(try tableCount(txn, t) == UInt64(Self.rows))
                let keys = try allKeys(txn, t)
                var o = try openObj(txn, t, keys[777])
                #expect(getVal(&o, s) == .str("object 777 of round 10 with some text"))
                #expect(try getInt(&o, b) == 777 * 1_000_003 + 10)
            }
        }
    }

    @Test func pinnedReaderDelaysReuseUntilItEnds() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, s): (UInt32, UInt32) = (0, 0)
            try db.write { txn throws in
                t = try addTable(txn, "T")
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
            }
            func fill() throws {
                try db.write { txn throws in
                    for i in 0..<20_000 {
                        var o = try createObj(txn, t)
                        try must(setVal(&o, s, .str("pinned reader test value \(i)")), "set")
                    }
                }
            }
            try fill()
            let reader = try db.begin(CS_TXN_READ)
            try db.write { txn throws in try must(cs_table_clear(txn, t), "clear") }
            try fill()
            // The reader still sees its 20,000 objects: their space was not reused.
            #expect(try tableCount(reader, t) == 20_000)
            var it = cs_iter()
            try must(cs_iter_init(&it, reader, t), "iter")
            var o = cs_obj()
            check(cs_iter_next(&it, &o))
            #expect(getVal(&o, s) == .str("pinned reader test value 0"))
            let pinned = try db.stats()
            #expect(pinned.pinned >= 1, "the reader pins a version")
            check(cs_txn_end(reader))
            // With the reader gone, clear-and-refill cycles stop growing the file.
            var sizes: [UInt64] = []
            for _ in 0..<4 {
                try db.write { txn throws in try must(cs_table_clear(txn, t), "clear") }
                try fill()
                sizes.append(try db.stats().logical_size)
            }
            #expect(sizes.last! <= sizes.first!, "logical sizes after each cycle: \(sizes)")
            db.verify()
        }
    }

    /// Data added and then deleted again leaves used_bytes where it started: deleting objects,
    /// clearing collections, replacing nested Mixed collections and big blobs, and cascading
    /// embedded deletes all free their nodes.
    @Test func deletedDataIsNotLeaked() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var ids = [String: UInt32]()
            var ownerKey: Int64 = 0
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let e = try addTable(txn, "E", flags: CS_TABLE_EMBEDDED)
                ids["T"] = t
                ids["E"] = e
                ids["list"] = try addColumn(txn, t, "list", CS_TYPE_STRING, coll: CS_COLL_LIST)
                ids["set"] = try addColumn(txn, t, "set", CS_TYPE_INT, coll: CS_COLL_SET)
                ids["map"] = try addColumn(txn, t, "map", CS_TYPE_BINARY, coll: CS_COLL_MAP)
                ids["mixed"] = try addColumn(txn, t, "mixed", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                ids["blob"] = try addColumn(txn, t, "blob", CS_TYPE_BINARY, flags: CS_COL_NULLABLE)
                ids["emb"] = try addColumn(txn, t, "emb", CS_TYPE_LINK, coll: CS_COLL_LIST, target: e)
                ids["es"] = try addColumn(txn, e, "s", CS_TYPE_STRING)
                ownerKey = try createObj(txn, t).key
            }
            let baseline = try db.stats().used_bytes
            var rng = SeededRNG(seed: 77)
            let t = ids["T"]!
            try db.write { txn throws in
                var o = try openObj(txn, t, ownerKey)
                var l = try openColl(&o, ids["list"]!)
                for _ in 0..<5000 { try must(listAppend(&l, .string(randomLetters(60, &rng))), "append") }
                var st = try openColl(&o, ids["set"]!)
                for _ in 0..<5000 { try must(setInsert(&st, .int(Int64(bitPattern: rng.next()))).0, "insert") }
                var m = try openColl(&o, ids["map"]!)
                for i in 0..<3000 { try must(mapSet(&m, Array("key \(i)".utf8), .binary(randomBytes(100, &rng))), "map set") }
                try must(cs_obj_set_collection(&o, ids["mixed"]!, CS_TYPE_LIST), "set_collection")
                var ml = try openColl(&o, ids["mixed"]!)
                for i in 0..<20 {
                    try must(listAppend(&ml, .null), "append")
                    try must(cs_list_set_collection(&ml, i, CS_TYPE_DICT), "nested dict")
                    var d = cs_coll()
                    try must(cs_coll_open_nested(&ml, Int64(i), nil, 0, &d), "open nested")
                    for j in 0..<100 { try must(mapSet(&d, Array("k\(j)".utf8), .string(randomLetters(40, &rng))), "nested set") }
                }
                try must(setVal(&o, ids["blob"]!, .binary(randomBytes(1 << 20, &rng))), "blob")
                var el = try openColl(&o, ids["emb"]!)
                for i in 0..<500 {
                    var x = cs_obj()
                    try must(cs_list_insert_embedded(&el, i, &x), "embedded")
                    try must(setVal(&x, ids["es"]!, .string(randomLetters(80, &rng))), "embedded string")
                }
            }
            let full = try db.stats().used_bytes
            #expect(full > baseline + 1_500_000, "the data takes space: \(baseline) -> \(full)")
            try db.write { txn throws in
                var o = try openObj(txn, t, ownerKey)
                for name in ["list", "set", "map", "emb"] {
                    var c = try openColl(&o, ids[name]!)
                    try must(cs_coll_clear(&c), "clear \(name)")
                }
                try must(setVal(&o, ids["mixed"]!, .int(1)), "replace nested list")
                try must(setVal(&o, ids["blob"]!, .null), "null the blob")
                #expect(try tableCount(txn, ids["E"]!) == 0)
            }
            let cleared = try db.stats().used_bytes
            #expect(cleared <= baseline + 16 * 1024, "after clearing: baseline \(baseline), full \(full), now \(cleared)")
            db.verify()
        }
    }

    /// A reader pinned on an old version keeps reading exactly its data while ten commits
    /// rewrite every object (space freed after its version must not be reused under it), and
    /// readers pinned in between keep theirs too.
    @Test func pinnedSnapshotsStayIntactUnderRewrites() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, a, s): (UInt32, UInt32, UInt32) = (0, 0, 0)
            try db.write { txn throws in
                t = try addTable(txn, "T")
                a = try addColumn(txn, t, "a", CS_TYPE_INT)
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
            }
            func fill(_ round: Int64) throws {
                try db.write { txn throws in
                    try must(cs_table_clear(txn, t), "clear")
                    for i in 0..<5000 {
                        var o = try createObj(txn, t)
                        try must(cs_obj_set_int(&o, a, round * 1_000_000 + Int64(i)), "set a")
                        try must(setVal(&o, s, .str("r\(round) i\(i)")), "set s")
                    }
                }
            }
            func checkReader(_ r: OpaquePointer, _ round: Int64, _ phase: String) throws {
                var it = cs_iter()
                try must(cs_iter_init(&it, r, t), "iter")
                var o = cs_obj()
                var i: Int64 = 0
                var bad = 0
                while cs_iter_next(&it, &o) == Int32(CS_OK) {
                    var v: Int64 = 0
                    if cs_obj_get_int(&o, a, &v) != Int32(CS_OK) || v != round * 1_000_000 + i
                        || getVal(&o, s) != .str("r\(round) i\(i)") {
                        bad += 1
                    }
                    i += 1
                }
                #expect(i == 5000 && bad == 0, "\(phase): reader of round \(round) saw \(i) objects, \(bad) wrong")
            }
            try fill(0)
            var readers: [(OpaquePointer, Int64)] = [(try db.begin(CS_TXN_READ), 0)]
            for round in Int64(1)...10 {
                try fill(round)
                if round % 3 == 0 { readers.append((try db.begin(CS_TXN_READ), round)) }
                for (r, rr) in readers { try checkReader(r, rr, "after round \(round)") }
            }
            for (r, _) in readers { check(cs_txn_end(r)) }
            db.verify()
        }
    }

    /// The free lists are part of the file: space freed before a close is reused after reopen.
    @Test func freeSpaceSurvivesReopen() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, s, a, b): (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            try db.write { txn throws in
                t = try addTable(txn, "T")
                s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                a = try addColumn(txn, t, "a", CS_TYPE_INT)
                b = try addColumn(txn, t, "b", CS_TYPE_INT)
            }
            try fill(db, t, s, a, b, round: 0)
            let first = try db.stats()
            try db.write { txn throws in try must(cs_table_clear(txn, t), "clear") }
            let cleared = try db.stats()
            try db.reopen()
            let reopened = try db.stats()
            #expect(reopened.free_bytes == cleared.free_bytes, "free bytes after reopen")
            #expect(reopened.free_extents == cleared.free_extents, "free extents after reopen")
            #expect(reopened.logical_size == cleared.logical_size)
            try fill(db, t, s, a, b, round: 1)
            let refilled = try db.stats()
            #expect(Double(refilled.logical_size) <= 1.1 * Double(first.logical_size),
                    "logical_size \(refilled.logical_size) after refilling vs \(first.logical_size) after the first fill")
            db.verify()
        }
    }
}
