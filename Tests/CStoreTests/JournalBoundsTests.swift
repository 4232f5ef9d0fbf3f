// Bounds of a journal's replay (docs/FORMAT.md §13, Recovery): what a forged or damaged journal
// may make an opener write or allocate. A replay writes nothing at or past the bound (the
// database file's size before the replay plus the lengths of every run of the generation's
// records), refuses a newest record that writes past it, and keeps what earlier records wrote
// past it in memory only (bytes no version the replay leaves reaches, whatever their position).

import CStore
import Foundation
import Glibc
import Testing

@Suite(.serialized) struct JournalBoundsTests {
    /// A power cut after one journaled commit, with forged records after its record: the
    /// database file's image, the journal's, and the genuine record's version.
    struct Forged {
        var db: [UInt8]
        var journal: [UInt8]
        var version: UInt64
    }

    /// `records` gets the synced database file's size and the length of the genuine record's
    /// runs (what they add to the replay's bound).
    func forge(_ dir: TempDir,
               _ records: (UInt64, UInt64) -> [[(pos: UInt64, lenWord: UInt64, data: [UInt8])]]) throws -> Forged {
        let state = try journalCrash(dir, [100])
        let j = state.jsynced
        let gen = UInt64(bitPattern: Int64(rawLE64(j, 16))), id = UInt64(bitPattern: Int64(rawLE64(j, 24)))
        let recs = journalRecordOffsets(j)
        #expect(recs.count == 1)
        let end = recs[0] + rawLE64(j, recs[0] + 24)
        var journal = Array(j[..<end])
        let raw = journalRecordRuns(j)[0].reduce(UInt64(0)) { $0 + $1.len }
        for (k, runs) in records(UInt64(state.synced.count), raw).enumerated() {
            journal += journalForgeRecord(gen: gen, id: id, version: state.version + 1 + UInt64(k), runs: runs)
        }
        journal += [UInt8](repeating: 0, count: 4096)
        return Forged(db: state.synced, journal: journal, version: state.version)
    }

    func fileSize(_ path: String) -> UInt64 {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_size) : 0
    }

    func bytes(_ path: String, _ at: UInt64, _ n: Int) -> [UInt8] {
        let fd = Glibc.open(path, O_RDONLY)
        defer { Glibc.close(fd) }
        var b = [UInt8](repeating: 0, count: n)
        let got = b.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, n, off_t(at)) }
        return got == n ? b : []
    }

    /// A newest record whose run lies far past the database file's end (1 TiB, or 2^60 where
    /// no file system holds a file): no commit could have put it there, since a commit's runs
    /// lie below its version's logical size, which grows by at most the commit's own bytes. The
    /// open refuses it with CS_CORRUPT, naming the record, and writes nothing: the database file
    /// keeps its size and bytes, and the journal stays for a later look.
    @Test func aNewestRecordFarPastTheFilesEndIsRefused() throws {
        for far: UInt64 in [1 << 40, 1 << 60] {
            let dir = TempDir()
            defer { dir.remove() }
            let x = try forge(dir) { _, _ in [[(pos: far, lenWord: UInt64(8), data: [UInt8](repeating: 0x5A, count: 8))]] }
            let img = dir.path("image.cstore")
            try writeJournalImage(img, x.db, x.journal)
            let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
            if let h { _ = cs_db_close(h) }
            #expect(rc == Int32(CS_CORRUPT), "at \(far): \(codeName(rc)) \(lastMessage())")
            #expect(lastMessage().contains("version \(x.version + 1)") && lastMessage().contains("past"),
                    "at \(far): \(lastMessage())")
            #expect(fileSize(img) == UInt64(x.db.count), "at \(far): the file's size as it was")
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: img))) == x.db, "at \(far): its bytes as they were")
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: img + ".journal"))) == x.journal,
                    "at \(far): the journal as it was")
        }
    }

    /// An earlier record that writes 8 bytes 1 TiB into a file of a few MB, then a newest record
    /// inside the bound: the open replays all three records, and the file does not grow to
    /// 1 TiB (a sparse file of that size): what lies past the bound is never written.
    @Test func bytesPastTheBoundAreNotWritten() throws {
        for direct in [false, true] {
            let dir = TempDir()
            defer { dir.remove() }
            let x = try forge(dir) { size, _ in [
                [(pos: UInt64(1) << 40, lenWord: UInt64(8), data: [UInt8](repeating: 0x5A, count: 8))],
                [(pos: size, lenWord: UInt64(8), data: [UInt8](repeating: 0x33, count: 8))],
            ] }
            let img = dir.path("image.cstore")
            try writeJournalImage(img, x.db, x.journal)
            if direct { cs_test_set_replay_image_max(4616) }
            let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
            cs_test_set_replay_image_max(0)
            #expect(rc == Int32(CS_OK), "direct \(direct): \(codeName(rc)) \(lastMessage())")
            guard let h else { continue }
            #expect(cs_db_recovered_commits(h) == 3)
            #expect(cs_db_verify(h) == Int32(CS_OK), "\(lastMessage())")
            _ = cs_db_close(h)
            let want = UInt64(x.db.count) + 8
            #expect(fileSize(img) == want, "direct \(direct): \(fileSize(img)) bytes for \(want)")
        }
    }

    /// A later record's patched run may copy bytes an earlier record wrote past the bound (a
    /// shrinking file's cut tail holds nodes the generation wrote there): the copy reads them
    /// from the replay's memory, in the image and in a replay record by record alike, and the
    /// bytes it puts inside the bound are the earlier record's.
    @Test func aCopyFromPastTheBoundReadsWhatTheRecordWrote() throws {
        for direct in [false, true] {
            let dir = TempDir()
            defer { dir.remove() }
            let payload: [UInt8] = (0..<16).map { UInt8(0xA0 + $0) }
            let x = try forge(dir) { size, _ in
                let far = (size + (64 << 20)) & ~4095
                return [[(pos: far + 8, lenWord: UInt64(16), data: payload)],
                        [(pos: size, lenWord: UInt64(16) | (1 << 63), data: journalCopy(16, from: far + 8))]]
            }
            let size = UInt64(x.db.count)
            let img = dir.path("image.cstore")
            try writeJournalImage(img, x.db, x.journal)
            if direct { cs_test_set_replay_image_max(4616) }
            let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
            cs_test_set_replay_image_max(0)
            #expect(rc == Int32(CS_OK), "direct \(direct): \(codeName(rc)) \(lastMessage())")
            guard let h else { continue }
            #expect(cs_db_recovered_commits(h) == 3)
            _ = cs_db_close(h)
            #expect(bytes(img, size, 16) == payload, "direct \(direct): the copied bytes")
            #expect(fileSize(img) == size + 16, "direct \(direct): \(fileSize(img)) bytes for \(size) + 16")
        }
    }

    /// Earlier records that wrote on more pages past the bound than the replay's image holds (a
    /// large tail that online shrinking cut after they wrote it): a replay record by record keeps
    /// only the pages a later copy reads, so it replays them all (14,600 pages of 8 bytes here,
    /// more than 64 MiB of pages), writes none of them, and the file ends at the newest record.
    @Test func manyPagesPastTheBoundDoNotStopAReplayRecordByRecord() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let x = try forge(dir) { size, _ in
            let far = (size + (1 << 30)) & ~4095
            return [(0..<14_600).map { (pos: far + UInt64($0) << 12, lenWord: UInt64(8), data: [UInt8](repeating: 0x5A, count: 8)) },
                    [(pos: size, lenWord: UInt64(8), data: [UInt8](repeating: 0x33, count: 8))]]
        }
        let img = dir.path("image.cstore")
        try writeJournalImage(img, x.db, x.journal)
        cs_test_set_replay_image_max(4616)
        let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        cs_test_set_replay_image_max(0)
        #expect(rc == Int32(CS_OK), "\(codeName(rc)) \(lastMessage())")
        guard let h else { return }
        #expect(cs_db_recovered_commits(h) == 3)
        _ = cs_db_close(h)
        let want = UInt64(x.db.count) + 8
        #expect(fileSize(img) == want, "\(fileSize(img)) bytes for \(want)")
        #expect(bytes(img, UInt64(x.db.count), 8) == [UInt8](repeating: 0x33, count: 8))
    }

    /// A copy whose source straddles the first page kept in memory (the page that holds the
    /// bound): the bytes below it come from the file, the rest from memory, in a replay record
    /// by record and in the image alike.
    @Test func aCopyStraddlingTheKeptPagesReadsBothParts() throws {
        for direct in [false, true] {
            let dir = TempDir()
            defer { dir.remove() }
            let payload: [UInt8] = (0..<16).map { UInt8(0xC0 + $0) }
            var cutAt: UInt64 = 0
            let x = try forge(dir) { size, raw in
                let bound = max(size, 4096) + raw + 16 + 16
                cutAt = bound & ~4095
                return [[(pos: cutAt - 8, lenWord: UInt64(16), data: payload)],
                        [(pos: size, lenWord: UInt64(16) | (1 << 63), data: journalCopy(16, from: cutAt - 8))]]
            }
            #expect(cutAt >= 4096 && cutAt % 4096 == 0, "a page boundary: \(cutAt)")
            let img = dir.path("image.cstore")
            try writeJournalImage(img, x.db, x.journal)
            if direct { cs_test_set_replay_image_max(4616) }
            let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
            cs_test_set_replay_image_max(0)
            #expect(rc == Int32(CS_OK), "direct \(direct): \(codeName(rc)) \(lastMessage())")
            guard let h else { continue }
            #expect(cs_db_recovered_commits(h) == 3)
            _ = cs_db_close(h)
            #expect(bytes(img, UInt64(x.db.count), 16) == payload, "direct \(direct): the copied bytes")
            #expect(bytes(img, cutAt - 8, 8) == Array(payload[0..<8]), "direct \(direct): the bytes below the kept page")
        }
    }

    /// A record whose copies read more distinct pages past the bound than the replay keeps
    /// (14,600, each 8 bytes): no journal this library writes does (its copies read free-list
    /// nodes), so a replay record by record refuses it with CS_CORRUPT before it writes anything.
    @Test func copiesFromTooManyPagesPastTheBoundAreRefusedBeforeAnyWrite() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let x = try forge(dir) { size, _ in
            let far = (size + (1 << 30)) & ~4095
            let ops = (0..<14_600).flatMap { journalCopy(8, from: far + UInt64($0) << 12) }
            return [[(pos: size, lenWord: UInt64(14_600 * 8) | (1 << 63), data: ops)]]
        }
        let img = dir.path("image.cstore")
        try writeJournalImage(img, x.db, x.journal)
        cs_test_set_replay_image_max(4616)
        let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        cs_test_set_replay_image_max(0)
        if let h { _ = cs_db_close(h) }
        #expect(rc == Int32(CS_CORRUPT), "\(codeName(rc)) \(lastMessage())")
        #expect(lastMessage().contains("distinct"), "\(lastMessage())")
        #expect(fileSize(img) == UInt64(x.db.count))
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: img))) == x.db, "the file as it was")
    }

    /// The case the bound lets records write past (docs/FORMAT.md §13, Recovery): a shrinking
    /// writer's journaled commits write 16 KB values at the file's tail, a commit deletes every
    /// object holding one, and the commits after it cut the free tail and truncate the file; a
    /// power cut keeps the truncation (metadata the file system committed) and none of the
    /// unsynced data. The records before the cut wrote far past the file that survives and past
    /// the bound; the open replays every commit (in the image and record by record alike), writes
    /// none of those bytes, and the file verifies and holds every committed object.
    @Test func aShrinkingGenerationWhoseTruncationSurvivesReplays() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        do { // 300 objects with a 16 KB value each, made durable by the clean close
            let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_NOSYNC)
            try must(rc, "open")
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let table = try findTable(t!, "T")
            var rng = SeededRNG(seed: 7)
            for i in 0..<300 {
                var o = try createObj(t!, table)
                try must(cs_obj_set_int(&o, 0, Int64(1000 + i)), "set v")
                try must(setVal(&o, 1, .binary(randomBytes(16_384, &rng))), "set b")
            }
            try must(cs_txn_commit(t!), "commit")
            _ = cs_txn_end(t)
            _ = cs_db_close(h)
        }
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        let h = try pio.open(path, flags: Int(CS_OPEN_SHRINK))
        var rng = SeededRNG(seed: 8)
        var loaded: [Int64] = []
        do {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "begin read")
            let table = try findTable(t!, "T")
            for k in try allKeys(t!, table) where try { var o = try openObj(t!, table, k); return try getInt(&o, 0) >= 1000 }() {
                loaded.append(k)
            }
            _ = cs_txn_end(t)
        }
        #expect(loaded.count == 300)
        for k in loaded.suffix(20) { // new values, placed past the end
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            var o = try openObj(t!, try findTable(t!, "T"), k)
            try must(setVal(&o, 1, .binary(randomBytes(16_384, &rng))), "set b")
            try must(cs_txn_commit(t!), "commit")
            _ = cs_txn_end(t)
        }
        do {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let table = try findTable(t!, "T")
            for k in loaded { var o = try openObj(t!, table, k); try must(cs_obj_delete(&o), "delete") }
            try must(cs_txn_commit(t!), "commit the deletes")
            _ = cs_txn_end(t)
        }
        var last: UInt64 = 0
        for _ in 0..<10 { last = try journalCommit(h, 1) } // these cut the free tail and truncate
        pio.cutNow()
        let cut = pio.cut!
        _ = cs_db_close(h)
        // what the file system kept: the truncations, not the data
        let image = PowerCutIO.apply(cut.pending.filter { if case .truncate = $0 { return true }; return false }, to: cut.synced)
        #expect(image.count < cut.synced.count, "the truncation survived: \(image.count) of \(cut.synced.count) bytes")
        let runs = journalRecordRuns(cut.jsynced)
        #expect(runs.count == 31, "\(runs.count) records")
        let raw = runs.joined().reduce(UInt64(0)) { $0 + $1.len }
        let bound = UInt64(image.count) + raw
        #expect(runs.joined().contains { $0.pos + $0.len > bound }, "a record wrote past the bound (\(bound))")
        for direct in [false, true] {
            if direct { cs_test_set_replay_image_max(4616) }
            let got = try journalReopen(dir, image, cut.jsynced, "direct \(direct)")
            cs_test_set_replay_image_max(0)
            let sum: Int64 = got?.1 ?? -1, version: UInt64 = got?.0 ?? 0
            #expect(sum == 55, "direct \(direct): the objects of every commit (v: 0...9, ten 1s), \(String(describing: got))")
            #expect(version == last, "direct \(direct): the last commit's version \(last)")
            #expect(fileSize(dir.path("image.cstore")) <= bound, "direct \(direct): no byte past the bound")
        }
    }

    /// The checkpoint that writes a generation's records again after a lost header write (with
    /// readers: in place, record by record past the image's bound) in a generation whose earlier
    /// records wrote a tail online shrinking has since cut: it writes nothing past the file's end
    /// (no live version reaches there), where before it read the file's own bytes there and
    /// failed ("it ended early"), failing that commit and every later one of the session. Two
    /// set-ups: a small file (the tail lies below the bound, the file's size plus the runs'
    /// lengths), and one of 300 objects of 16 KB first (the tail lies far past it, and a record
    /// patches a free-list node whose old copy lay in the tail).
    @Test(arguments: [false, true]) func theCheckpointAfterALostHeaderWriteStopsAtTheFilesEnd(large: Bool) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        if large { // 300 objects with a 16 KB value each
            let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_NOSYNC)
            try must(rc, "open")
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let table = try findTable(t!, "T")
            var rng = SeededRNG(seed: 7)
            for i in 0..<300 {
                var o = try createObj(t!, table)
                try must(cs_obj_set_int(&o, 0, Int64(2000 + i)), "set v")
                try must(setVal(&o, 1, .binary(randomBytes(16_384, &rng))), "set b")
            }
            try must(cs_txn_commit(t!), "commit")
            _ = cs_txn_end(t)
            _ = cs_db_close(h)
        }
        // another process keeps the file open: the failed process's close is not the last
        let log = dir.path("pin.log")
        let idler = try Child(["pin-idle", path, log], in: dir)
        defer { idler.killNow() }
        #expect(waitUntil(seconds: 30) { logLines(log).contains { $0.hasPrefix("idle") } }, "\(idler.stderr)")
        let fio = JournalFaultIO()
        let (orc, oh) = fio.openRaw(path, flags: Int(CS_OPEN_SHRINK))
        try must(orc, "open shrinking")
        let h = oh!
        // 20 objects with a 16 KB value each, placed past the end, then deleted: the commits
        // after the deletes cut the free tail they leave and truncate the file
        for v in Int64(1000)..<1020 { _ = try journalCommit(h, v, bytes: 16_384) }
        do {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let table = try findTable(t!, "T")
            for k in try allKeys(t!, table) {
                var o = try openObj(t!, table, k)
                if try getInt(&o, 0) >= 1000 { try must(cs_obj_delete(&o), "delete") }
            }
            try must(cs_txn_commit(t!), "commit the deletes")
            _ = cs_txn_end(t)
        }
        for _ in 0..<10 { _ = try journalCommit(h, 1) }
        fio.armed = true
        _ = try journalCommit(h, 2)
        #expect(fio.failed == 1, "the header write failed")
        _ = cs_db_close(h) // broken: no checkpoint
        let size = fileSize(path)
        let journal = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + ".journal")))
        #expect(journalRecordRuns(journal).joined().contains { $0.pos + $0.len > size },
                "a record wrote past the file's end (\(size) bytes): the case")
        let (rc, w) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(rc, "open the writer")
        defer { _ = cs_db_close(w) }
        #expect(cs_db_recovered_commits(w!) == 0, "not alone: no replay at the open")
        cs_test_set_replay_image_max(4616)
        defer { cs_test_set_replay_image_max(0) }
        _ = try journalCommit(w!, 3) // checkpoints first: the records again, in place
        cs_test_set_replay_image_max(0)
        #expect(cs_db_verify(w!) == Int32(CS_OK), "\(lastMessage())")
        #expect(try journalObjectCount(w!) == 22, "the 10 objects, 11 one-row commits and this one")
        #expect(fileSize(path) <= size + (1 << 20), "\(fileSize(path)) bytes after, \(size) before")
    }
}
