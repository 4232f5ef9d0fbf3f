// The commit journal `<file>.journal` (docs/FORMAT.md §13): replay after a power cut, torn and
// garbage tails, a journal that belongs to another file, read-only opens that find records,
// power cuts during the checkpoint at close and at the size limit, compaction and restore of a
// file with records, NOSYNC commits mixed with journaled ones, and two processes committing
// into one journal. The disk a power cut leaves is built with PowerCutIO (PowerCutTests.swift):
// the database file as of its last sync, plus chosen parts of the later writes, and the journal
// as synced; the file, the commits and that set-up are shared (JournalSupport.swift).

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct JournalTests {
    /// The offsets of the records in a journal image (docs/FORMAT.md §13: records from 4096,
    /// each with its length at offset 24); stops at the first that is not a record.
    private func recordOffsets(_ j: [UInt8]) -> [Int] {
        var out: [Int] = []
        var off = 4096
        while off + 64 <= j.count, Array(j[off..<(off + 8)]) == Array("CSJREC\r\n".utf8) {
            let len = j[(off + 24)..<(off + 32)].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            guard len >= 64, off + len <= j.count else { break }
            out.append(off)
            off += len
        }
        return out
    }

    /// Five journaled commits, the database file as of its last sync: the journal brings back
    /// each commit, and a damaged or cut tail loses exactly the records from the damage on.
    @Test func replayBringsBackJournaledCommitsAndStopsAtADamagedTail() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (_, pio, h) = try journalPowerCutFile(dir)
        var versions: [UInt64] = [], sums: [Int64] = [45]
        for i in 1...5 {
            versions.append(try journalCommit(h, Int64(100 * i), bytes: i == 3 ? 20_000 : 0))
            sums.append(sums.last! + Int64(100 * i))
        }
        pio.cutNow()
        let state = pio.cut!
        _ = cs_db_close(h)
        let db = state.synced, journal = state.jsynced
        let all = PowerCutIO.apply(state.pending, to: state.synced)
        let recs = recordOffsets(journal)
        #expect(recs.count == 5, "five records: \(recs)")
        #expect(state.pending.count >= 10, "the in-place writes were not synced")

        // the database file as of the checkpoint, with all of the in-place writes, or with the
        // header write alone: the journal makes it the newest version
        for (desc, image) in [("no in-place write", db), ("every in-place write", all),
                              ("the last header write alone", PowerCutIO.apply([state.pending.last!], to: db))] {
            let r = try journalReopen(dir, image, journal, desc)
            #expect(r?.0 == versions[4] && r?.1 == sums[5], "\(desc): the last journaled version")
        }
        // without the journal the file holds the checkpoint's version (or refuses nothing)
        if let r = try journalReopen(dir, db, nil, "no journal") { #expect(r.0 < versions[0]) }

        // a damaged byte, a cut or zeros in record k: versions before k only
        for k in 0..<5 {
            let start = recs[k], end = k + 1 < recs.count ? recs[k + 1] : start + 200
            var flipped = journal
            flipped[end - 9] ^= 0x40
            var cut = Array(journal[..<(start + (end - start) / 2)])
            var zeroed = journal
            for i in start..<min(start + 64, zeroed.count) { zeroed[i] = 0 }
            for (desc, j) in [("a flipped byte", flipped), ("a cut", cut), ("a zeroed header", zeroed)] {
                let r = try journalReopen(dir, db, j, "\(desc) in record \(k)")
                let want = k == 0 ? nil : versions[k - 1]
                if let want { #expect(r?.0 == want && r?.1 == sums[k], "\(desc) in record \(k): version \(want), got \(String(describing: r)), versions \(versions)") }
                else { #expect(r.map { $0.0 < versions[0] } == true, "\(desc) in record 0: the checkpoint's version") }
            }
            cut = []
            _ = cut
        }
        // garbage after the last record is not a record
        var rng = SeededRNG(seed: 99)
        var garbage = journal
        let tail = recordOffsets(journal).last!
        let afterLast = tail + 64 + 4096 * 3 > garbage.count ? garbage.count : tail
        _ = afterLast
        var end = 4096
        for r in recs {
            let len = journal[(r + 24)..<(r + 32)].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            end = r + len
        }
        let noise = randomBytes(4096, &rng)
        if garbage.count < end + noise.count { garbage += [UInt8](repeating: 0, count: end + noise.count - garbage.count) }
        garbage.replaceSubrange(end..<(end + noise.count), with: noise)
        let g = try journalReopen(dir, db, garbage, "garbage after the last record")
        #expect(g?.0 == versions[4] && g?.1 == sums[5])
        // an old record left behind a shorter new one: a copy of record 4 put after record 4
        // would repeat version 5's number, which the sequence refuses
        var repeated = journal
        let r4 = Array(journal[recs[4]..<end])
        if repeated.count < end + r4.count { repeated += [UInt8](repeating: 0, count: end + r4.count - repeated.count) }
        repeated.replaceSubrange(end..<(end + r4.count), with: r4)
        let rr = try journalReopen(dir, db, repeated, "a record repeated after the last")
        #expect(rr?.0 == versions[4] && rr?.1 == sums[5])
    }

    /// A journal with records of another database is never replayed onto this one: the open
    /// fails and leaves the file as it was; the journal's own file (a copy) takes it.
    @Test func aJournalOfAnotherFileIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let a = dir.path("a.cstore"), b = dir.path("b.cstore")
        try journalPrepare(a)
        try journalPrepare(b)
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: a))))
        let h = try pio.open(a)
        let v = try journalCommit(h, 7)
        pio.cutNow()
        let journal = pio.cut!.jsynced
        _ = cs_db_close(h)
        // b, never journaled, and b after a commit of its own (an id of its own)
        for round in 0..<2 {
            if round == 1 {
                let db = try DB(b, durability: CS_DURABILITY_FULL)
                try journalCommit(db.h, 1)
                db.close()
            }
            try? FileManager.default.removeItem(atPath: b + ".lock")
            try Data(journal).write(to: URL(fileURLWithPath: b + ".journal"))
            let before = try Data(contentsOf: URL(fileURLWithPath: b))
            for flags in [0, CS_OPEN_READONLY] {
                let (rc, hb) = openRaw(b, flags: flags, durability: CS_DURABILITY_FULL)
                if let hb { _ = cs_db_close(hb) }
                #expect(rc == Int32(CS_CORRUPT), "round \(round) flags \(flags): \(codeName(rc)) \(lastMessage())")
                #expect(lastMessage().contains("another database"), "\(lastMessage())")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: b)) == before, "b is unchanged")
            try FileManager.default.removeItem(atPath: b + ".journal")
            let db = try DB(b, flags: 0)
            db.verify()
            db.close()
        }
        // a's own copy with the journal: replayed
        let r = try journalReopen(dir, pio.cut!.synced, journal, "a with its journal")
        #expect(r?.0 == v && r?.1 == 52)
    }

    /// A read-only open that is alone and may write the file and its journal recovers a crash's
    /// records as a read-write open does (never a stale or torn read), says how many it
    /// replayed, and leaves an empty journal and the resting format version.
    @Test func readOnlyOpenOfAFileWithRecordsRecovers() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (_, pio, h) = try journalPowerCutFile(dir)
        try journalCommit(h, 6)
        let v = try journalCommit(h, 7)
        pio.cutNow()
        _ = cs_db_close(h)
        let path = dir.path("image.cstore")
        try writeJournalImage(path, pio.cut!.synced, pio.cut!.jsynced)
        let (rc, ro) = openRaw(path, flags: CS_OPEN_READONLY)
        #expect(rc == Int32(CS_OK), "\(codeName(rc)): \(lastMessage())")
        if let ro {
            #expect(cs_db_version(ro) == v)
            #expect(cs_db_recovered_commits(ro) == 2, "the open replayed the two records")
            #expect(cs_db_verify(ro) == Int32(CS_OK), "\(lastMessage())")
            _ = cs_db_close(ro)
        }
        var records: UInt64 = 9, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 0, "the journal is empty: \(records)")
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(12))
        #expect(header[8] == 6 && header[10] == 6, "the file rests at version 6: \(header[8])/\(header[10])")
        var recovered: UInt64 = 9
        #expect(check(cs_file_verify_recovered(path, &recovered)))
        #expect(recovered == 0, "nothing left to recover")
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        #expect(cs_db_version(db.h) == v)
        #expect(cs_db_recovered_commits(db.h) == 0)
        db.close()
    }

    /// A writer process commits and closes while this process holds the file read-only; this
    /// process then closes last: its close checkpoints, so the next read-only open finds no
    /// record to recover, and, since it may write the file, gives back the resting format
    /// version as a writer's last close does.
    @Test func aReadOnlyProcessClosingLastCheckpoints() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let (rc, ro) = openRaw(path, flags: CS_OPEN_READONLY)
        try must(rc, "read-only open")
        try runChild(["commit-loop", path, dir.path("log"), "5"], in: dir)
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 5,
                "the writer's records are there while this process has the file open: \(records)")
        _ = cs_db_close(ro!)
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 0,
                "the last close checkpointed: \(records)")
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(12))
        #expect(header[8] == 6 && header[10] == 6, "a cleanly closed file is version 6: \(header[8])/\(header[10])")
        let (rc2, ro2) = openRaw(path, flags: CS_OPEN_READONLY)
        #expect(rc2 == Int32(CS_OK), "\(codeName(rc2)): \(lastMessage())")
        if let ro2 { _ = cs_db_close(ro2) }
        #expect(check(cs_file_verify(path)))
    }

    /// The checkpoint at the last close, cut at each of its writes and syncs: the file holds
    /// the last commit whatever reached the disk, and a clean close leaves no record.
    @Test func powerCutDuringTheCheckpointAtClose() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let a = dir.path("a.cstore")
        try journalPrepare(a)
        let pristine = [UInt8](try Data(contentsOf: URL(fileURLWithPath: a)))
        func run(_ cutBefore: Int) throws -> (PowerCutIO, UInt64) {
            let path = dir.path("run.cstore")
            try writeJournalImage(path, pristine, nil)
            let pio = PowerCutIO(disk: pristine)
            let h = try pio.open(path)
            var v: UInt64 = 0
            for i in 1...3 { v = try journalCommit(h, Int64(i)) }
            pio.cutBefore = cutBefore
            pio.armed = true
            _ = cs_db_close(h)
            pio.cutNow()
            return (pio, v)
        }
        let (full, _) = try run(Int.max)
        let events = full.events
        #expect(events.first == .write(8, 4) && events.contains(.sync) && events.last == .jsync,
                "the close marks the header version 5, syncs the file, resets the journal: \(events)")
        var rng = SeededRNG(seed: 5)
        var images = 0
        for cut in 0...events.count {
            let (pio, v) = try run(cut)
            let state = pio.cut!
            let journals = journalImages(state.jsynced, state.jpending)
            for (k, (desc, image)) in powerCutImages(state.synced, state.pending, &rng, light: true).enumerated() {
                for (jd, j) in k == 0 ? journals : [journals[k % journals.count]] {
                    images += 1
                    let r = try journalReopen(dir, image, j, "cut before close event \(cut): \(desc), \(jd)")
                    #expect(r?.0 == v && r?.1 == 51, "cut before close event \(cut): \(desc), \(jd)")
                }
            }
        }
        // after a clean close: the resting format version (6) and no record
        let (pio, v) = try run(Int.max)
        let r = try journalReopen(dir, pio.synced, pio.jsynced, "clean close")
        #expect(r?.0 == v)
        #expect(pio.synced[8] == 6 && pio.synced[10] == 6, "a cleanly closed file rests at version 6")
        let alone = try journalReopen(dir, pio.synced, nil, "clean close, without the journal")
        #expect(alone?.0 == v, "a clean close leaves everything in the database file")
        print("journal close checkpoint: \(events.count) events, \(images) images")
    }

    /// Commits past the journal's size limit: the checkpoint empties it and records start from
    /// the beginning again, over the old generation's; a power cut then needs the new records only.
    @Test func theJournalIsReusedAfterTheCheckpointAtItsLimit() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (_, pio, h) = try journalPowerCutFile(dir)
        pio.armed = true // counts events, never cuts
        var v: UInt64 = 0, sum: Int64 = 45
        var sawReset = false
        for i in 1...70 {
            let before = pio.events.count
            v = try journalCommit(h, Int64(i), bytes: 300_000)
            sum += Int64(i)
            // a checkpoint: the database file synced in a journaled commit
            if i > 1 && pio.events[before...].contains(.sync) { sawReset = true }
        }
        pio.cutNow()
        let state = pio.cut!
        _ = cs_db_close(h)
        #expect(sawReset, "a checkpoint at the limit")
        #expect(state.jsynced.count <= 20 << 20, "the journal stays near its limit: \(state.jsynced.count)")
        let r = try journalReopen(dir, state.synced, state.jsynced, "after the limit")
        #expect(r?.0 == v && r?.1 == sum)
    }

    /// A power-cut image with records pending (no in-place write synced) at `path`.
    private func crashedFile(_ dir: TempDir, _ path: String) throws -> (UInt64, Int64) {
        let src = dir.path("src-\(UUID().uuidString).cstore")
        try journalPrepare(src)
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: src))))
        let h = try pio.open(src)
        var v: UInt64 = 0
        for i in 1...4 { v = try journalCommit(h, Int64(i)) }
        pio.cutNow()
        _ = cs_db_close(h)
        try writeJournalImage(path, pio.cut!.synced, pio.cut!.jsynced)
        return (v, 55)
    }

    /// Compaction and a forced restore of a file whose journal holds records: compaction keeps
    /// the journaled commits; the restore replaces them; neither leaves a journal that the new
    /// file refuses.
    @Test func compactionAndRestoreOfAFileWithRecords() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let p = dir.path("c.cstore")
        let (v, sum) = try crashedFile(dir, p)
        var info = cs_compact_info()
        #expect(check(cs_db_compact(p, nil, nil, nil, &info), "compact"))
        do {
            let db = try DB(p, flags: 0, durability: CS_DURABILITY_FULL)
            #expect(cs_db_version(db.h) == v)
            db.verify()
            try db.read { t in
                let table = try findTable(t, "T")
                var s: Int64 = 0
                for k in try allKeys(t, table) { var o = try openObj(t, table, k); s += try getInt(&o, 0) }
                #expect(s == sum)
            }
            // and it takes journaled commits, replayed after a power cut
            try journalCommit(db.h, 1000)
            db.close()
        }
        #expect(check(cs_file_verify(p)))

        // restore over a crashed file
        let other = dir.path("other.cstore")
        try journalPrepare(other)
        let backup = dir.path("other.backup")
        do {
            let db = try DB(other, flags: 0)
            try must(cs_backup_write(db.h, backup, nil, nil, nil), "backup")
            db.close()
        }
        let q = dir.path("q.cstore")
        _ = try crashedFile(dir, q)
        #expect(check(cs_backup_restore(backup, q, nil, UInt32(CS_RESTORE_FORCE), nil, nil, nil), "restore"))
        let db = try DB(q, flags: 0, durability: CS_DURABILITY_FULL)
        db.verify()
        try db.read { t in
            let n = try allKeys(t, try findTable(t, "T")).count
            #expect(n == 10)
        }
        db.close()
        // a journal beside a target that is not a database is removed with it
        let r = dir.path("r.cstore")
        _ = try crashedFile(dir, r)
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: r))
        #expect(check(cs_backup_restore(backup, r, nil, UInt32(CS_RESTORE_FORCE), nil, nil, nil), "restore over junk"))
        #expect(check(cs_file_verify(r)))
    }

    /// NOSYNC commits, then a journaled FULL commit, then a power cut: the FULL commit's
    /// checkpoint made the NOSYNC commits durable first, so the file holds all of them.
    @Test func nosyncCommitsThenAFullCommitThenAPowerCut() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let a = dir.path("a.cstore")
        try journalPrepare(a)
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: a))))
        var h = try pio.open(a, durability: CS_DURABILITY_NOSYNC)
        for i in 1...3 { try journalCommit(h, Int64(i)) }
        _ = cs_db_close(h)
        h = try pio.open(a)
        let v = try journalCommit(h, 10)
        pio.cutNow()
        _ = cs_db_close(h)
        let r = try journalReopen(dir, pio.cut!.synced, pio.cut!.jsynced, "no in-place write of the FULL commit")
        #expect(r?.0 == v && r?.1 == 45 + 16)
    }

    /// A journaled commit, a commit over 1 MiB (two syncs, no record: it checkpoints first),
    /// then a journaled one and a power cut: the last record follows a version made without a
    /// record, so it must checkpoint too, or the replay would stop at it (its version would not
    /// follow the journal's base).
    @Test func aJournaledCommitAfterALargeOne() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (_, pio, h) = try journalPowerCutFile(dir)
        try journalCommit(h, 1)
        try journalCommit(h, 2, bytes: 1_500_000)
        let v = try journalCommit(h, 3)
        pio.cutNow()
        _ = cs_db_close(h)
        let r = try journalReopen(dir, pio.cut!.synced, pio.cut!.jsynced, "after the large commit")
        #expect(r?.0 == v && r?.1 == 45 + 6)
    }

    /// A journaled commit, NOSYNC commits by another process (which checkpoint first, since the
    /// journal holds a record), then a journaled commit here (which checkpoints again) and a
    /// power cut: everything is there, and no old record is replayed over the NOSYNC commits.
    @Test func nosyncCommitsOfAnotherProcessBetweenJournaledCommits() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        do {
            let db = try DB(path, flags: 0)
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                _ = try addColumn(txn, t, "b", CS_TYPE_BINARY)
            }
            db.close()
        }
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        let h = try pio.open(path)
        try journalCommit(h, 1)
        try runChild(["increment", path, "2", "5"], in: dir)
        let v = try journalCommit(h, 2)
        pio.cutNow()
        _ = cs_db_close(h)
        let r = try journalReopen(dir, pio.cut!.synced, pio.cut!.jsynced, "after the mixed commits")
        #expect(r?.0 == v && r?.1 == 3)
        let image = dir.path("image.cstore")
        let db = try DB(image, flags: 0)
        try db.read { t in
            let (problem, _) = try childInvariantProblem(t, try ChildSchema(t))
            #expect(problem == nil, "\(problem ?? "")")
            let (k, _) = try ChildSchema(t).counterValues(t)
            #expect(k == 5, "the other process's five commits")
        }
        db.close()
    }

    /// Two processes commit into one journal while this one holds the file open (so neither
    /// is the last to close); the database file as of this process's first commit and the
    /// journal as synced hold every commit of both.
    @Test func twoProcessesCommitIntoOneJournal() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        let h = try pio.open(path)
        var t: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
        try must(cs_txn_commit(t!), "a first commit: the journal starts")
        check(cs_txn_end(t))
        let dbImage = pio.synced
        let children = try (0..<2).map { try Child(["commit-loop", path, dir.path("log-\($0)"), "25"], in: dir) }
        for c in children { #expect(c.wait(seconds: 120), "the writer finished") }
        let jfd = Glibc.open(path + ".journal", O_RDONLY)
        let journal = PowerCutIO.contents(jfd) ?? []
        Glibc.close(jfd)
        _ = cs_db_close(h)
        let image = dir.path("image.cstore")
        try writeJournalImage(image, dbImage, journal)
        let db = try DB(image, flags: 0, durability: CS_DURABILITY_FULL)
        db.verify()
        try db.read { t in
            let s = try ChildSchema(t)
            let (problem, _) = try childInvariantProblem(t, s)
            #expect(problem == nil, "\(problem ?? "")")
            let (k, _) = try s.counterValues(t)
            #expect(k == 50, "both writers' 25 commits: \(k)")
        }
        db.close()
    }
    /// docs/FORMAT.md §13, Layout: the record of a journaled commit never exceeds JREC_MAX
    /// (2 MiB + 264) because the commit's own run list pays 16 bytes per run inside the commit's
    /// bytes (at most 1 MiB): 16 r <= D - 8 for a commit of D bytes in r runs, so the record,
    /// 64 + 16 (r + 1) + D + 192 bytes, is at most 2 D + 264. The records of commits into a
    /// file with holes keep both relations (a commit near the limit itself cannot be made: its
    /// run list alone would be about 1 MiB).
    @Test func aJournaledCommitsRecordKeepsItsBound() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        do {
            let db = try DB(path, durability: CS_DURABILITY_NOSYNC)
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                for i in 0..<30_000 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, 0, Int64(i)), "set v")
                }
            }
            // every other object deleted: the old leaves become holes of many sizes
            try db.write { txn throws in
                let t = try findTable(txn, "T")
                for k in try allKeys(txn, t) where k % 2 == 0 {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_delete(&o), "delete")
                }
            }
            db.close()
        }
        let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(rc, "open")
        defer { _ = cs_db_close(h) }
        for round in 0..<4 {
            var t: OpaquePointer?
            try must(cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t), "begin")
            let table = try findTable(t!, "T")
            for k in stride(from: Int64(1 + 2 * round), to: 30_000, by: 130) {
                var o = try openObj(t!, table, k)
                try must(cs_obj_set_int(&o, 0, -k), "set v")
            }
            try must(cs_txn_commit(t!), "commit")
            check(cs_txn_end(t))
        }
        let fd = Glibc.open(path + ".journal", O_RDONLY)
        let journal = PowerCutIO.contents(fd) ?? []
        Glibc.close(fd)
        let recs = recordOffsets(journal)
        #expect(recs.count == 4, "four records: \(recs.count)")
        var most = 0
        for r in recs {
            func word(_ at: Int) -> Int { rawLE64(journal, r + at) }
            let length = word(24), runs = word(32) & 0xffff_ffff, data = word(40)
            // the runs' bytes (a patched run's length has bit 63 set, its data is shorter)
            let raw = (0..<runs).reduce(0) { $0 + (word(64 + 16 * $1 + 8) & Int.max) }
            let commit = raw - 192 // the runs' bytes less the header's
            most = max(most, runs)
            #expect(commit <= 1 << 20, "a one-sync commit")
            #expect(16 * (runs - 1) <= commit - 8, "\(runs) runs in \(commit) bytes")
            // zeros to a multiple of 512 after the data when the record stays within the most
            // replay takes (2 MiB + 264, journal.c JREC_MAX), else to a multiple of 8
            let exact = 64 + 16 * runs + data, aligned = (exact + 511) & ~511
            #expect(exact <= 2 * commit + 264 && data <= raw, "record of \(exact) bytes before its padding")
            #expect(length == (aligned <= 2_097_416 ? aligned : exact) && length <= 2_097_416, "record of \(length) bytes")
        }
        #expect(most >= 2, "the runs and the header: \(most)")
    }

    /// With the default I/O layer a record is written by direct I/O where the file system's
    /// direct-I/O alignments take it (journal.c, jwrite_record; docs/ARCHITECTURE.md, "Records by
    /// direct I/O"): the thread's three journaled commits write three records directly, through a
    /// descriptor of the journal opened with O_DIRECT and without O_NONBLOCK; elsewhere all three
    /// go through the page cache. Every record starts and ends at a multiple of 512 (its zeros,
    /// docs/FORMAT.md §13, Layout).
    @Test func recordsAreWrittenByDirectIO() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("d.cstore")
        try journalPrepare(path)
        #if arch(x86_64)
        let oDirect = 0o40000
        #else
        let oDirect = 0o200000
        #endif
        let takesDirect = cs_test_journal_takes_direct(path)
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        defer { db.close() }
        var direct0: UInt64 = 0, buffered0: UInt64 = 0, direct: UInt64 = 0, buffered: UInt64 = 0
        cs_test_journal_direct_writes(&direct0, &buffered0)
        for v in 1...3 {
            try db.write { txn throws in
                var o = try createObj(txn, try findTable(txn, "T"))
                try must(cs_obj_set_int(&o, 0, Int64(100 + v)), "set v")
                try must(setVal(&o, 1, .binary([UInt8](repeating: UInt8(v), count: 700 * v))), "set b")
            }
        }
        cs_test_journal_direct_writes(&direct, &buffered)
        #expect(direct - direct0 == (takesDirect ? 3 : 0) && buffered - buffered0 == (takesDirect ? 0 : 3),
                "records written directly \(direct - direct0), through the page cache \(buffered - buffered0); the file system takes direct I/O: \(takesDirect)")
        // the descriptors of this process that name the journal, and their open flags
        let journalPath = URL(fileURLWithPath: path + ".journal").resolvingSymlinksInPath().path
        var flagsOfDirect: [Int] = []
        var named = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                  target == journalPath,
                  let info = try? String(contentsOfFile: "/proc/self/fdinfo/\(name)", encoding: .utf8),
                  let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
                  let flags = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) else { continue }
            named += 1
            if flags & oDirect != 0 { flagsOfDirect.append(flags) }
        }
        if takesDirect {
            #expect(named == 2 && flagsOfDirect.count == 1, "the journal's descriptors: \(named), with O_DIRECT: \(flagsOfDirect.count)")
            #expect(flagsOfDirect.allSatisfy { $0 & Int(O_NONBLOCK) == 0 }, "the direct descriptor blocks: \(flagsOfDirect.map { String($0, radix: 8) })")
        }
        let fd = Glibc.open(path + ".journal", O_RDONLY)
        let journal = PowerCutIO.contents(fd) ?? []
        Glibc.close(fd)
        let recs = recordOffsets(journal)
        #expect(recs.count == 3, "three records: \(recs.count)")
        for r in recs {
            let length = rawLE64(journal, r + 24)
            #expect(r % 512 == 0 && length % 512 == 0, "a record at \(r) of \(length) bytes")
        }
    }

    /// Faults of the direct record writes (cs_test_set_journal_direct_fault): the direct
    /// descriptor not had (1), a write refused as direct I/O (2: EINVAL, 5: EAGAIN) and a short
    /// write (3) send the records through the page cache, and every commit succeeds; an I/O error
    /// (4) fails the commit it hits, and the next one succeeds. Then the file and its journal,
    /// copied while the commits' records are pending, open with the journal's commits replayed:
    /// the acknowledged values are there, the failed one is not.
    @Test(arguments: [1, 2, 3, 4, 5]) func directRecordWritesThatFail(_ mode: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("f.cstore")
        try journalPrepare(path)
        guard cs_test_journal_takes_direct(path) else { return } // no direct I/O here: nothing to fail
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        defer { db.close() }
        var direct0: UInt64 = 0, buffered0: UInt64 = 0, direct: UInt64 = 0, buffered: UInt64 = 0
        cs_test_journal_direct_writes(&direct0, &buffered0)
        var acked: [Int64] = []
        for v: Int64 in 1...3 {
            if v == 2 || mode != 4 { cs_test_set_journal_direct_fault(Int32(mode)) }
            defer { cs_test_set_journal_direct_fault(0) }
            var t: OpaquePointer?
            try must(cs_txn_begin(db.h, Int32(CS_TXN_WRITE), &t), "begin")
            var o = try createObj(t!, try findTable(t!, "T"))
            try must(cs_obj_set_int(&o, 0, 1000 + v), "set v")
            let rc = cs_txn_commit(t!)
            check(cs_txn_end(t))
            if mode == 4 && v == 2 {
                #expect(rc == Int32(CS_IOERR), "the commit whose record write failed: \(codeName(rc))")
            } else {
                #expect(rc == Int32(CS_OK), "commit \(v): \(codeName(rc)) \(lastMessage())")
                if rc == Int32(CS_OK) { acked.append(1000 + v) }
            }
        }
        cs_test_journal_direct_writes(&direct, &buffered)
        let want: (UInt64, UInt64) = mode == 4 ? (2, 0) : (0, 3)
        #expect((direct - direct0, buffered - buffered0) == want,
                "direct \(direct - direct0), buffered \(buffered - buffered0), want \(want)")
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == UInt64(acked.count),
                "the journal holds the acknowledged commits' records: \(records)")
        // the file and its journal as they are now (the records pending), opened elsewhere
        let copy = dir.path("copy.cstore")
        try Data(contentsOf: URL(fileURLWithPath: path)).write(to: URL(fileURLWithPath: copy))
        try Data(contentsOf: URL(fileURLWithPath: path + ".journal")).write(to: URL(fileURLWithPath: copy + ".journal"))
        let c = try DB(copy, flags: 0, durability: CS_DURABILITY_FULL)
        defer { c.close() }
        #expect(cs_db_recovered_commits(c.h) == UInt64(acked.count), "replayed: \(cs_db_recovered_commits(c.h))")
        c.verify()
        let values = try c.read { txn throws -> [Int64] in
            let t = try findTable(txn, "T")
            return try allKeys(txn, t).compactMap { k -> Int64? in
                var o = try openObj(txn, t, k)
                var v: Int64 = 0
                return cs_obj_get_int(&o, 0, &v) == Int32(CS_OK) && v >= 1000 ? v : nil
            }.sorted()
        }
        #expect(values == acked, "the values: \(values), acknowledged \(acked)")
    }

    /// One-row commits in one session (docs/FORMAT.md §13, Layout): from the second on, a
    /// record holds the free-list nodes its commit rewrites as patches of the nodes the earlier
    /// records wrote, so it is much shorter than the commit's bytes; after a power cut that
    /// lost every in-place write, the replay of the checkpoint's file rebuilds each patched run
    /// from the records before it and the file holds the last commit.
    @Test func oneRowCommitsRecordTheirFreeListNodesAsPatches() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalPatchedCrash(dir, commits: 60, rows: 20_000)
        let want = state.want
        let runs = journalRecordRuns(state.jsynced)
        #expect(runs.count == 60, "a record per commit: \(runs.count)")
        let patched = runs.dropFirst().filter { $0.contains { $0.patched } }.count
        #expect(patched >= 50, "records from the second on patch their free-list nodes: \(patched) of 59")
        // the records' bytes against the commits' own: the data of every record but the first
        let recs = recordOffsets(state.jsynced)
        var recordBytes = 0, commitBytes = 0
        for r in recs.dropFirst() {
            recordBytes += rawLE64(state.jsynced, r + 24)
            commitBytes += 64 + (0..<(rawLE64(state.jsynced, r + 32) & 0xffff_ffff)).reduce(0) {
                $0 + 16 + (rawLE64(state.jsynced, r + 64 + 16 * $1 + 8) & Int.max)
            }
        }
        #expect(recordBytes * 2 < commitBytes, "records of \(recordBytes) bytes for commits of \(commitBytes)")
        print("one-row commits: records of \(recordBytes / 59) bytes for commits of \(commitBytes / 59) bytes on average")
        // the database file as of the session's first checkpoint, none of the in-place writes
        let img = dir.path("image.cstore")
        try writeJournalImage(img, state.synced, state.jsynced)
        let db = try DB(img, flags: 0, durability: CS_DURABILITY_FULL)
        #expect(cs_db_recovered_commits(db.h) == 60)
        // the replay's image: a page of 4 KiB (its bytes, a bit per byte and its index) per page
        // the records wrote into, and a table of at most 4 slots of 8 bytes per page (64 at least)
        var pages = Set<UInt64>()
        for rec in runs { for r in rec where r.len > 0 { for g in (r.pos >> 12)...((r.pos + r.len - 1) >> 12) { pages.insert(g) } } }
        var imgPages: UInt64 = 0, imgBytes: UInt64 = 0
        cs_test_replay_image(&imgPages, &imgBytes)
        let np = UInt64(pages.count)
        #expect(imgPages == np, "\(imgPages) pages for \(np) pages written")
        #expect(imgBytes >= np * 4616 && imgBytes <= np * 4616 + max(64, 4 * (np + 1)) * 8, "\(imgBytes) bytes for \(np) pages")
        db.verify("the replayed file")
        try db.read { txn throws in
            let t = try findTable(txn, "T")
            for (k, v) in want {
                var o = try openObj(txn, t, k)
                #expect(try getInt(&o, 0) == v, "object \(k)")
            }
        }
        db.close()
    }

    /// Records a writer of this library never makes, each sealed with a valid check after the
    /// two records of a crash (docs/FORMAT.md §13, Layout and Recovery): a patched run longer
    /// than a commit can be (its operations would make the replay allocate and write far more
    /// than the record holds), an operation of no length, a literal past the record's data, a
    /// copy from an unaligned position, operations short of the run's length, and a patched run
    /// under a layout-1 header are not valid records (the replay stops before them and the
    /// file opens at the version before); a well-formed copy of bytes no earlier record wrote
    /// fails the open with CS_CORRUPT and says so.
    @Test func forgedPatchedRecordsAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100, 200])
        let j = state.jsynced
        let recs = recordOffsets(j)
        #expect(recs.count == 2)
        let gen = UInt64(bitPattern: Int64(rawLE64(j, 16))), id = UInt64(bitPattern: Int64(rawLE64(j, 24)))
        let end = recs.last! + rawLE64(j, recs.last! + 24)
        let patch: UInt64 = 1 << 63
        func with(_ runs: [(pos: UInt64, lenWord: UInt64, data: [UInt8])], layout1: Bool = false) -> [UInt8] {
            var out = Array(j[..<end]) + journalForgeRecord(gen: gen, id: id, version: state.version + 1, runs: runs)
            out += [UInt8](repeating: 0, count: 4096)
            if layout1 {
                // the header of layout 1, its check made again (header_check in journal.c)
                out[8] = 1
                var x: UInt64 = 0xCBF2_9CE4_8422_2325
                for w in [UInt64(1), gen, id, UInt64(rawLE64(j, 32)), 0x4A52_4E4C] {
                    x ^= w
                    x = x &* 0x0000_0100_0000_01B3
                    x ^= x >> 31
                }
                x |= 1
                for b in 0..<8 { out[56 + b] = UInt8(truncatingIfNeeded: x >> (8 * UInt64(b))) }
            }
            return out
        }
        let eight = [UInt8](repeating: 0x5A, count: 8)
        let stops: [(String, [UInt8])] = [
            ("a patched run of 2^40 bytes", with([(4096, (1 << 40) | patch, journalCopy(1 << 40, from: 4096))])),
            // one word past a commit of 1 MiB and its 192-byte header
            ("a patched run of 1 MiB + 200 bytes", with([(4096, ((1 << 20) + 200) | patch, journalCopy((1 << 20) + 200, from: 4096))])),
            ("an operation of no length", with([(4096, 8 | patch, journalLiteral([]) + eight)])),
            ("a literal past the data", with([(4096, 16 | patch, Array(journalLiteral(eight + eight).prefix(16)))])),
            ("a copy from an unaligned position", with([(4096, 8 | patch, journalCopy(8, from: 4097))])),
            ("operations short of the run", with([(4096, 16 | patch, journalLiteral(eight))])),
            ("a patched run under a layout-1 header", with([(4096, 8 | patch, journalLiteral(eight))], layout1: true)),
        ]
        for (what, journal) in stops {
            let img = dir.path("image.cstore")
            try writeJournalImage(img, state.synced, journal)
            let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
            #expect(rc == Int32(CS_OK), "\(what): \(codeName(rc)) \(lastMessage())")
            guard let h else { continue }
            #expect(cs_db_recovered_commits(h) == 2 && cs_db_version(h) == state.version, "\(what): the two records before it")
            #expect(check(cs_db_verify(h)), "\(what): verifies")
            _ = cs_db_close(h)
        }
        // a copy of bytes no record wrote (far past the file): refused, not applied
        let img = dir.path("image.cstore")
        try writeJournalImage(img, state.synced, with([(4096, 8 | patch, journalCopy(8, from: 1 << 30))]))
        let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        if let h { _ = cs_db_close(h) }
        #expect(rc == Int32(CS_CORRUPT) && lastMessage().contains("no earlier record wrote"), "\(codeName(rc)) \(lastMessage())")
    }

    /// A checkpoint in the middle of a session (the journal reaching its 16 MiB limit, docs/
    /// FORMAT.md §13, Checkpoints) starts a new generation: no record of it patches a node a
    /// record of the old one wrote (replay, which starts at the new generation's first record,
    /// could not rebuild it), so its first record holds no patched run while later ones do, and
    /// after a power cut the replay of the new generation's records onto the checkpoint's file
    /// gives the last commit.
    @Test func aCheckpointInTheSessionStartsRecordsThatPatchNothingOld() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (_, pio, h) = try journalPowerCutFile(dir)
        var sum: Int64 = 45, version: UInt64 = 0
        var gens = Set<Int>()
        for i in 1...60 {
            // one-row commits between large ones: the journal passes 16 MiB at about the 46th
            version = try journalCommit(h, Int64(i), bytes: i % 2 == 0 ? 720_000 : 0)
            sum += Int64(i)
            let fd = Glibc.open(dir.path("a.cstore") + ".journal", O_RDONLY)
            let head = PowerCutIO.contents(fd).map { Array($0.prefix(24)) } ?? []
            Glibc.close(fd)
            if head.count == 24 { gens.insert(rawLE64(head, 16)) }
        }
        pio.cutNow()
        let state = pio.cut!
        _ = cs_db_close(h)
        #expect(gens.count == 2, "one checkpoint at the limit in the session: \(gens.count) generations")
        let runs = journalRecordRuns(state.jsynced)
        #expect(runs.count > 3 && runs.count < 30, "the new generation's records: \(runs.count)")
        #expect(!(runs.first ?? []).contains { $0.patched }, "the first record of a generation patches nothing")
        #expect(runs.dropFirst().contains { $0.contains { $0.patched } }, "later records of it do")
        let r = try journalReopen(dir, state.synced, state.jsynced, "after the checkpoint at the limit")
        #expect(r?.0 == version && r?.1 == sum, "the last commit: \(String(describing: r)), want \(version) \(sum)")
    }
}

@Suite struct JournalGrowthTests {
    /// A journal's growth writes its zeros 64 KiB per pwrite (journal.c, JOURNAL_ZERO_PIECE),
    /// not in one pwrite of the whole growth, so the page cache holds the journal in 64 KiB
    /// folios (docs/ARCHITECTURE.md, The journal's folios): the session's first durable commit
    /// makes a new journal 1 MiB long, and a record that does not fit after the others grows it
    /// to 2 MiB.
    @Test func aGrowthWritesItsZerosIn64KiBPieces() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("g.cstore")
        do {
            let db = try DB(path) // NOSYNC: no journal
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                var o = try createObj(txn, t)
                try must(setVal(&o, 0, .str("first")), "set s")
            }
            db.close()
        }
        #expect(access(path + ".journal", F_OK) != 0, "no journal before the durable session")
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        let h = try pio.open(path)
        defer { _ = cs_db_close(h) }
        pio.armed = true
        func commit(_ rows: Int, _ len: Int) throws {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let table = try findTable(t!, "T")
            for i in 0..<rows {
                var o = try createObj(t!, table)
                try must(setVal(&o, 0, .str(String(repeating: "x", count: len) + "\(i)")), "set s")
            }
            try must(cs_txn_commit(t!), "commit")
            check(cs_txn_end(t))
        }
        try commit(1, 10) // a new journal, 1 MiB
        try commit(600, 1000) // a record of about 600 KB: it fits
        try commit(600, 1000) // another: it does not, and the journal grows to 2 MiB
        let journal = pio.events.compactMap { e -> (Int, Int)? in
            if case .jwrite(let off, let n) = e { return (off, n) }
            return nil
        }
        for k in 0..<32 {
            #expect(journal.contains { $0 == (k * 65536, 65536) }, "zeros written at \(k * 65536) as one 64 KiB piece: \(journal.prefix(40))")
        }
        #expect(!journal.contains { $0.1 >= 1 << 20 }, "no write of a whole growth: \(journal.filter { $0.1 >= 1 << 20 })")
        var st = stat()
        #expect(stat(path + ".journal", &st) == 0 && st.st_size == 2 << 20, "the journal is 2 MiB: \(st.st_size)")
        check(cs_db_verify(h), "verify")
    }

    /// A file of about `bytes` bytes with table T (v Int, b Binary) made without a journal
    /// (NOSYNC), in commits of 100 KB values.
    private func fileOfSize(_ path: String, _ bytes: Int) throws {
        let db = try DB(path) // NOSYNC: no journal
        try db.write { txn throws in
            let t = try addTable(txn, "T")
            _ = try addColumn(txn, t, "v", CS_TYPE_INT)
            _ = try addColumn(txn, t, "b", CS_TYPE_BINARY)
        }
        var rng = SeededRNG(seed: 16)
        for i in 0..<(bytes / 100_000 + 9) / 10 {
            try db.write { txn throws in
                let t = try findTable(txn, "T")
                for k in 0..<10 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, 0, Int64(i * 10 + k)), "set v")
                    try must(setVal(&o, 1, .binary(randomBytes(100_000, &rng))), "set b")
                }
            }
        }
        db.close()
        #expect(access(path + ".journal", F_OK) != 0, "no journal before the durable session")
    }

    private func fileSize(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : -1
    }

    /// The checkpoint before a session's first journaled commit makes a new journal as large as
    /// the database (its logical size), rounded up to 1 MiB (docs/FORMAT.md §13, Layout: the size ahead of
    /// need), its zeros synced with the checkpoint's journal header: no sync of its own. The
    /// records of the commits that follow, 2 MB in all, then fit without a growth: one sync per
    /// commit (a 1 MiB journal would grow twice, each growth synced before its record).
    @Test func aNewJournalIsAsLargeAsItsFileAhead() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try fileOfSize(path, 3_300_000)
        let before = fileSize(path)
        let fio = JournalFaultIO()
        let h = try fio.open(path)
        defer { _ = cs_db_close(h) }
        let syncs = fio.syncs
        _ = try journalCommit(h!, 1_000_000, bytes: 1000)
        #expect(fio.syncs - syncs == 3, "the checkpoint's two syncs and the record's: \(fio.syncs - syncs)")
        let journal = fileSize(path + ".journal"), after = fileSize(path)
        // the database's logical size (3.3 MB of values and what holds them) rounded up to 1 MiB:
        // more than 3 MiB, at most the file's size rounded up
        #expect(journal % (1 << 20) == 0 && journal > 3 << 20 && journal <= (after + (1 << 20) - 1) & ~((1 << 20) - 1),
                "the journal is the database's size rounded up to 1 MiB: \(journal) bytes, the file \(before) then \(after)")
        for v in 1...20 {
            let s = fio.syncs
            _ = try journalCommit(h!, 1_000_000 + Int64(v), bytes: 100_000)
            #expect(fio.syncs - s == 1, "commit \(v): the record's sync alone, no growth: \(fio.syncs - s) syncs")
        }
        #expect(fileSize(path + ".journal") == journal, "the journal did not grow: \(fileSize(path + ".journal"))")
        check(cs_db_verify(h), "verify")
    }

    /// The size ahead of need is bound by the journal's limit (16 MiB, cs_limits.h
    /// JOURNAL_LIMIT): a file of 17 MB gets a journal of 16 MiB, not of its own size.
    @Test func theJournalAheadIsBoundByItsLimit() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try fileOfSize(path, 17_500_000)
        #expect(fileSize(path) > 17 << 20, "the file holds more than 17 MiB: \(fileSize(path))")
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        try db.write { txn throws in
            var o = try createObj(txn, try findTable(txn, "T"))
            try must(cs_obj_set_int(&o, 0, -1), "set v")
        }
        #expect(fileSize(path + ".journal") == 16 << 20, "the journal is 16 MiB: \(fileSize(path + ".journal"))")
        db.close()
    }

    /// A disk too full for the journal's size ahead of need (a 1 MiB journal beside a 2.5 MB
    /// file, every growth refused): the checkpoint goes on with the journal as it was, and the
    /// commit is journaled (its record pending, replayed by nobody since the close checkpoints).
    @Test func aDiskTooFullForTheJournalAheadKeepsTheJournal() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try fileOfSize(path, 2_500_000)
        try Data(count: 1 << 20).write(to: URL(fileURLWithPath: path + ".journal"))
        let fio = JournalFaultIO()
        fio.failJournalGrowth = true
        let h = try fio.open(path)
        _ = try journalCommit(h!, 1_000_000, bytes: 1000)
        #expect(fio.journalGrowthFailures >= 1, "the growth ahead was refused: \(fio.journalGrowthFailures)")
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 1,
                "the commit's record is in the journal: \(records) records")
        #expect(fileSize(path + ".journal") == 1 << 20, "the journal kept its 1 MiB: \(fileSize(path + ".journal"))")
        _ = cs_db_close(h)
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        db.verify()
        let found = try db.read { txn throws -> Bool in
            let t = try findTable(txn, "T")
            return try allKeys(txn, t).contains { k in
                var o = (try? openObj(txn, t, k)) ?? cs_obj()
                var v: Int64 = 0
                return cs_obj_get_int(&o, 0, &v) == Int32(CS_OK) && v == 1_000_000
            }
        }
        #expect(found, "the journaled commit's object is there")
        db.close()
    }
}
