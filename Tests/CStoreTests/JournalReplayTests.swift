// Replay tests of the commit journal (docs/FORMAT.md §13, Recovery; docs/ARCHITECTURE.md, The
// commit journal): what readers of the newest version see while a checkpoint writes the records
// of a generation again after a lost header write, the check of a record's rebuilt runs against
// its header's hash, and what stands at the journal's path. The shared set-up is in
// JournalSupport.swift.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the replay hook (cs_test_set_replay_hook) saw: each call reads the newest version
/// through `reader` and checks it.
private final class ReplayWatch: @unchecked Sendable {
    let reader: OpaquePointer
    let want: (count: UInt64, sum: Int64)
    var calls = 0
    var problems: [String] = []
    init(reader: OpaquePointer, want: (count: UInt64, sum: Int64)) {
        self.reader = reader
        self.want = want
    }

    func look() {
        calls += 1
        let vrc = cs_db_verify(reader)
        if vrc != Int32(CS_OK) {
            problems.append("write \(calls): verify \(codeName(vrc)) \(lastMessage())")
            return
        }
        var t: OpaquePointer?
        guard cs_txn_begin(reader, Int32(CS_TXN_READ), &t) == Int32(CS_OK), let t else {
            problems.append("write \(calls): begin \(lastMessage())")
            return
        }
        defer { _ = cs_txn_end(t) }
        do {
            let table = try findTable(t, "T")
            var n: UInt64 = 0
            try must(cs_table_count(t, table, &n), "count")
            var sum: Int64 = 0
            for k in try allKeys(t, table) {
                var o = try openObj(t, table, k)
                sum += try getInt(&o, 0)
            }
            if n != want.count || sum != want.sum {
                problems.append("write \(calls): \(n) objects summing to \(sum), want \(want.count) and \(want.sum)")
            }
        } catch {
            problems.append("write \(calls): \(error)")
        }
    }
}

@Suite struct JournalReplayTests {
    /// A commit's header write fails after its record was synced (JS_HEADER_LOST), in a process
    /// that then closes while another keeps the file open; the next commit's checkpoint writes
    /// the generation's records again. Space freed and reused inside the generation means an
    /// early record holds bytes a later commit rewrote: written one record after another, they
    /// would put, for a moment, an old node where the newest version has a new one. A reader of
    /// the newest version (another handle) after every write of that replay must read it whole:
    /// every node's checksum (cs_db_verify) and the values.
    @Test func readersOfTheNewestVersionDuringTheCheckpointAfterALostHeaderWrite() throws {
        try readersDuringTheCheckpointAfterALostHeaderWrite(imageMax: 0)
    }

    /// The same past the image's bound (cs_test_set_replay_image_max: one page), where the
    /// checkpoint cannot hold the generation's final bytes in memory: it must still never
    /// write an earlier record's bytes over a later commit's.
    @Test func readersDuringTheCheckpointAfterALostHeaderWritePastTheImagesBound() throws {
        try readersDuringTheCheckpointAfterALostHeaderWrite(imageMax: 4616)
    }

    private func readersDuringTheCheckpointAfterALostHeaderWrite(imageMax: UInt64) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        // another process keeps the file open (an idle pin, which writers revoke): the failed
        // process's close is not the last, and no open after it is alone
        let log = dir.path("pin.log")
        let idler = try Child(["pin-idle", path, log], in: dir)
        defer { idler.killNow() }
        #expect(waitUntil(seconds: 30) { logLines(log).contains { $0.hasPrefix("idle") } }, "\(idler.stderr)")
        let fio = JournalFaultIO()
        let h = try fio.open(path)
        var sum: Int64 = 45
        for v in Int64(100)..<Int64(140) {
            try journalCommit(h!, v)
            sum += v
        }
        fio.armed = true
        try journalCommit(h!, 1000)
        sum += 1000
        #expect(fio.failed == 1, "the header write failed")
        _ = cs_db_close(h) // broken: no checkpoint
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 41, "the records stay: \(records)")

        let (rc, w) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(rc, "open the writer")
        defer { _ = cs_db_close(w) }
        let (rc2, r) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(rc2, "open the reader")
        defer { _ = cs_db_close(r) }
        #expect(cs_db_recovered_commits(w!) == 0, "not alone: no replay at the open")
        let watch = ReplayWatch(reader: r!, want: (51, sum))
        watch.look()
        #expect(watch.problems.isEmpty, "before the checkpoint: \(watch.problems)")
        watch.calls = 0
        cs_test_set_replay_hook({ ctx in
            Unmanaged<ReplayWatch>.fromOpaque(ctx!).takeUnretainedValue().look()
        }, Unmanaged.passUnretained(watch).toOpaque())
        defer { cs_test_set_replay_hook(nil, nil) }
        cs_test_set_replay_image_max(imageMax)
        defer { cs_test_set_replay_image_max(0) }
        try journalCommit(w!, 2000) // checkpoints first: the records again, then the sync
        cs_test_set_replay_hook(nil, nil)
        #expect(watch.calls > 0, "the checkpoint wrote the records again")
        let problems = watch.problems
        #expect(problems.count == 0, "\(problems.count) of \(watch.calls) looks: \(problems.prefix(3))")
        #expect(cs_db_verify(w!) == Int32(CS_OK), "\(lastMessage())")
        #expect(try journalObjectCount(w!) == 52)
    }

    /// The replay at open writes each byte once, in file order, the header's bytes last
    /// (docs/FORMAT.md §13, Recovery); cut at each of its writes and at its sync, with any
    /// subset of the unsynced writes on disk, the next open replays again and gives the last
    /// commit. Thirty one-row commits: space freed and reused inside the generation, and
    /// patched records.
    @Test func powerCutsDuringTheReplayAtOpen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalPatchedCrash(dir, commits: 30)
        #expect(journalRecordRuns(state.jsynced).dropFirst().contains { $0.contains { $0.patched } }, "patched records")
        let path = dir.path("replay.cstore")
        func run(_ cutBefore: Int) throws -> PowerCutIO {
            try writeJournalImage(path, state.synced, state.jsynced)
            let pio = PowerCutIO(disk: state.synced)
            pio.cutBefore = cutBefore
            pio.armed = true
            var opts = cs_options()
            opts.durability = CS_DURABILITY_FULL
            opts.io = UnsafePointer(pio.io)
            var h: OpaquePointer?
            let rc = cs_db_open(path, &opts, &h)
            pio.cutNow()
            if rc == Int32(CS_OK), let h { _ = cs_db_close(h) }
            return pio
        }
        let events = try run(Int.max).events
        guard let sync = events.firstIndex(of: .sync) else {
            Issue.record("the replay syncs the file: \(events)")
            return
        }
        // the replay's writes: no byte twice, in file order but the header's, which is last
        var writes: [(Int, Int)] = []
        for e in events[..<sync] {
            if case .write(let off, let n) = e { writes.append((off, n)) } else { Issue.record("not a write: \(e)") }
        }
        #expect(writes.count > 2 && writes.last! == (0, 192), "the header last: \(writes.suffix(2))")
        let body = writes.dropLast()
        #expect(zip(body, body.dropFirst()).allSatisfy { $0.0 + $0.1 <= $1.0 }, "file order, no byte twice: \(writes)")
        #expect(body.allSatisfy { $0.0 >= 192 }, "the header's bytes only in the last write")
        var rng = SeededRNG(seed: 16)
        var images = 0
        for cut in 0...(sync + 1) {
            let cutState = try run(cut).cut!
            let journals = journalImages(cutState.jsynced, cutState.jpending)
            for (k, (desc, image)) in powerCutImages(cutState.synced, cutState.pending, &rng, light: true).enumerated() {
                for (jd, j) in k == 0 ? journals : [journals[k % journals.count]] {
                    images += 1
                    let what = "cut before replay event \(cut): \(desc), \(jd)"
                    let v = try journalPatchedReopen(dir, image, j, state.want, what)
                    #expect(v == state.version, "\(what): version \(String(describing: v))")
                }
            }
        }
        print("replay at open: \(writes.count) writes, \(images) images")
    }

    /// A record whose patched run rebuilds other bytes than its commit wrote (a literal of its
    /// patch changed, the record sealed again with a valid check, as a faulty writer or a forger
    /// would leave it): the header run's slot holds the length and hash of the commit's runs
    /// (docs/FORMAT.md §2), so replay refuses it with CS_CORRUPT before it writes anything, and
    /// the database file is left as it was.
    @Test func aRecordWhosePatchRebuildsOtherBytesIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalPatchedCrash(dir, commits: 4)
        var j = state.jsynced
        let gen = UInt64(bitPattern: Int64(rawLE64(j, 16))), id = UInt64(bitPattern: Int64(rawLE64(j, 24)))
        // the first literal of the first patched run, past its operation word
        var forged: Int?
        for r in journalRecordOffsets(j) where forged == nil {
            let n = rawLE64(j, r + 32) & 0xffff_ffff
            var data = r + 64 + 16 * n
            for i in 0..<n where forged == nil {
                let word = UInt64(bitPattern: Int64(rawLE64(j, r + 64 + 16 * i + 8)))
                let len = Int(word & ~(1 << 63))
                guard word >> 63 == 1 else { data += len; continue }
                var at = data, out = 0
                while out < len {
                    let w = rawLE64(j, at), k = w >> 1
                    if w & 1 == 0 {
                        j[at + 8] ^= 0x40
                        forged = r
                        break
                    }
                    at += 16
                    out += k
                }
            }
        }
        guard let r = forged else {
            Issue.record("no patched record with a literal")
            return
        }
        let len = rawLE64(j, r + 24)
        let check = journalRecordCheck(Array(j[r..<(r + len)]), gen: gen, id: id)
        for b in 0..<8 { j[r + 56 + b] = UInt8(truncatingIfNeeded: check >> (8 * UInt64(b))) }
        let img = dir.path("image.cstore")
        try writeJournalImage(img, state.synced, j)
        let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        if let h { _ = cs_db_close(h) }
        #expect(rc == Int32(CS_CORRUPT) && lastMessage().contains("are not the bytes its header describes"),
                "\(codeName(rc)) \(lastMessage())")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: img))) == state.synced, "nothing written")
        // the record as the writer made it replays
        let v = try journalPatchedReopen(dir, state.synced, state.jsynced, state.want, "the journal as written")
        #expect(v == state.version)
    }

    /// Runs `body` on another thread: its result and that thread's last message, or nil when it
    /// has not returned after `seconds` (then `unblock` is called and the thread waited for).
    private func withTimeout(_ seconds: Double, unblock: () -> Void,
                             _ body: @escaping @Sendable () -> Int32) -> (Int32, String)? {
        final class Box: @unchecked Sendable { var rc: Int32 = 0; var message = "" }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        Thread {
            box.rc = body()
            box.message = lastMessage()
            done.signal()
        }.start()
        if done.wait(timeout: .now() + seconds) == .success { return (box.rc, box.message) }
        unblock()
        done.wait()
        return nil
    }

    /// A directory at the journal's path (`<file>.journal`, docs/FORMAT.md §13): the open fails
    /// with CS_EXISTS and says what is in the way, the database file and the directory are left
    /// as they were, and once the directory is moved away the file opens with everything in it.
    @Test func aDirectoryAtTheJournalsPathIsRefusedClearly() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let before = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        try? FileManager.default.removeItem(atPath: path + ".journal")
        try FileManager.default.createDirectory(atPath: path + ".journal", withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: path + ".journal/keep", contents: Data([1, 2, 3]))
        for flags in [0, Int(CS_OPEN_READONLY)] {
            let (rc, h) = openRaw(path, flags: flags, durability: CS_DURABILITY_FULL)
            if let h { _ = cs_db_close(h) }
            #expect(rc == Int32(CS_EXISTS) && lastMessage().contains("is not a regular file (a directory)"),
                    "flags \(flags): \(codeName(rc)) \(lastMessage())")
        }
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_EXISTS), "\(lastMessage())")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) == before, "the database file as it was")
        #expect(FileManager.default.contents(atPath: path + ".journal/keep") == Data([1, 2, 3]), "the directory as it was")
        try FileManager.default.removeItem(atPath: path + ".journal")
        let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(rc, "open once the directory is gone")
        defer { _ = cs_db_close(h) }
        try journalCommit(h!, 100)
        #expect(try journalObjectCount(h!) == 11)
    }

    /// A FIFO at the journal's path: opening it for reading would wait for a writer forever.
    /// The open (read-write and read-only) and the tool's look at the journal return CS_EXISTS
    /// at once, saying what is in the way, and leave the FIFO and the database file as they were.
    @Test func aFIFOAtTheJournalsPathIsRefusedWithoutBlocking() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let before = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        try? FileManager.default.removeItem(atPath: path + ".journal")
        #expect(mkfifo(path + ".journal", 0o644) == 0)
        // a writer opened without blocking once the open waits for one: it lets a blocked open go on
        let unblock = {
            let fd = Glibc.open(path + ".journal", O_WRONLY | O_NONBLOCK)
            if fd >= 0 { usleep(200_000); Glibc.close(fd) }
        }
        for flags in [0, Int(CS_OPEN_READONLY)] {
            let r = withTimeout(10, unblock: unblock) {
                let (rc, h) = openRaw(path, flags: flags, durability: CS_DURABILITY_FULL)
                if let h { _ = cs_db_close(h) }
                return rc
            }
            #expect(r != nil, "flags \(flags): the open blocked on the FIFO")
            #expect(r?.0 == Int32(CS_EXISTS) && r?.1.contains("is not a regular file (a FIFO)") == true,
                    "flags \(flags): \(String(describing: r))")
        }
        let r = withTimeout(10, unblock: unblock) {
            var records: UInt64 = 0, bytes: UInt64 = 0
            return cs_file_journal_info(path, &records, &bytes)
        }
        #expect(r?.0 == Int32(CS_EXISTS), "the tool's look: \(String(describing: r))")
        var st = stat()
        #expect(lstat(path + ".journal", &st) == 0 && (st.st_mode & S_IFMT) == S_IFIFO, "the FIFO as it was")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) == before, "the database file as it was")
    }

    /// The replay's memory follows what the records wrote, not the highest offset they wrote
    /// at (docs/ARCHITECTURE.md, "Replay writes each byte once"): a record that writes 8 bytes
    /// 10 GiB into the file (past its end and the replay's bound: bytes nothing reaches, kept in
    /// the image and never written), followed by one that writes 8 bytes inside the file, adds
    /// two pages of 4 KiB to the image and no table sized by the offset (the bitmap regions it
    /// replaced were indexed by a table of 8 bytes per 64 KiB up to the highest offset, 1.3 MB
    /// here).
    @Test func theReplaysMemoryFollowsWhatWasWritten() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100])
        let j = state.jsynced
        let gen = UInt64(bitPattern: Int64(rawLE64(j, 16))), id = UInt64(bitPattern: Int64(rawLE64(j, 24)))
        let recs = journalRecordOffsets(j)
        #expect(recs.count == 1)
        let end = recs[0] + rawLE64(j, recs[0] + 24)
        var pages = Set<UInt64>()
        for r in journalRecordRuns(j)[0] where r.len > 0 {
            for g in (r.pos >> 12)...((r.pos + r.len - 1) >> 12) { pages.insert(g) }
        }
        let far: UInt64 = 10 << 30, near = UInt64(state.synced.count) - 8
        pages.insert(far >> 12)
        pages.insert(near >> 12)
        let journal = Array(j[..<end]) + journalForgeRecord(gen: gen, id: id, version: state.version + 1,
                                                            runs: [(far, 8, [UInt8](repeating: 0x5A, count: 8))])
            + journalForgeRecord(gen: gen, id: id, version: state.version + 2,
                                 runs: [(near, 8, [UInt8](repeating: 0x5B, count: 8))])
            + [UInt8](repeating: 0, count: 4096)
        let img = dir.path("image.cstore")
        try writeJournalImage(img, state.synced, journal)
        let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        try must(rc, "open")
        #expect(cs_db_recovered_commits(h!) == 3)
        var imgPages: UInt64 = 0, imgBytes: UInt64 = 0
        cs_test_replay_image(&imgPages, &imgBytes)
        _ = cs_db_close(h)
        let np = UInt64(pages.count)
        #expect(imgPages == np, "\(imgPages) pages for \(np) pages written")
        #expect(imgBytes <= np * 4616 + max(64, 4 * (np + 1)) * 8, "\(imgBytes) bytes for \(np) pages")
    }

    /// A generation whose runs touch more distinct pages than the replay's image may hold
    /// (docs/ARCHITECTURE.md, "Replay writes each byte once": 4 KiB and a bit per byte for each
    /// page, up to IMG_MAX), as small nodes scattered over a large fragmented file would: 60
    /// valid records of 10 runs of 8 bytes each, on 600 distinct pages, with the image's bound
    /// lowered to 100 pages (cs_test_set_replay_image_max). With STORE_FULL_CAMPAIGN=1
    /// (`make test-full`) the bound is IMG_MAX itself (64 MiB, 14,538 pages): 600 records of 100
    /// runs on 60,000 pages, a 245 MB file. The open must replay every record (record by
    /// record, as before the image, past that bound), never refuse a journal this library could
    /// have written; the replay kept only its map of written bytes (520 bytes a page), so it went
    /// past the bound.
    @Test func aGenerationOnMorePagesThanTheImageHoldsIsReplayed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (records, runs) = fullCampaign ? (600, 100) : (60, 10)
        let boundPages: UInt64 = fullCampaign ? (64 << 20) / 4616 : 100
        let state = try journalCrash(dir, [100])
        let j = state.jsynced
        let gen = UInt64(bitPattern: Int64(rawLE64(j, 16))), id = UInt64(bitPattern: Int64(rawLE64(j, 24)))
        let recs = journalRecordOffsets(j)
        let end = recs[0] + rawLE64(j, recs[0] + 24)
        var journal = Array(j[..<end])
        func page(_ r: Int, _ k: Int) -> UInt64 { UInt64(1000 + r * runs + k) << 12 }
        func bytes(_ r: Int, _ k: Int) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: r &* 31 &+ k &* 7 &+ $0) } }
        for r in 0..<records {
            journal += journalForgeRecord(gen: gen, id: id, version: state.version + 1 + UInt64(r),
                                          runs: (0..<runs).map { k in (page(r, k) + 8, 8, bytes(r, k)) })
        }
        journal += [UInt8](repeating: 0, count: 4096)
        let img = dir.path("image.cstore")
        try writeJournalImage(img, state.synced, journal)
        #expect(truncate(img, off_t(page(records - 1, runs))) == 0, "a file as large as the pages the records write")
        cs_test_set_replay_image_max(fullCampaign ? 0 : boundPages * 4616)
        defer { cs_test_set_replay_image_max(0) }
        let (rc, h) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        #expect(rc == Int32(CS_OK), "\(codeName(rc)) \(lastMessage())")
        guard let h else { return }
        var pages: UInt64 = 0, mapBytes: UInt64 = 0
        cs_test_replay_image(&pages, &mapBytes)
        #expect(pages >= UInt64(records * runs) && pages > boundPages, "\(pages) pages")
        #expect(mapBytes <= pages * 520 + max(64, 4 * (pages + 1)) * 8, "\(pages) pages, \(mapBytes) bytes")
        #expect(cs_db_recovered_commits(h) == UInt64(records + 1))
        #expect(cs_db_verify(h) == Int32(CS_OK), "\(lastMessage())")
        _ = cs_db_close(h)
        let fd = Glibc.open(img, O_RDONLY)
        defer { Glibc.close(fd) }
        for (r, k) in [(0, 0), (0, runs - 1), (records / 2 - 1, runs / 2), (records - 1, 0), (records - 1, runs - 1)] {
            var b = [UInt8](repeating: 0, count: 8)
            _ = b.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, 8, off_t(page(r, k) + 8)) }
            #expect(b == bytes(r, k), "record \(r), run \(k)")
        }
    }

    /// Past the image's bound (cs_test_set_replay_image_max: one page here) replay goes record
    /// by record, its patched runs' copies read back from the file as the records before wrote
    /// them: thirty one-row commits with patched records replay to the last commit, and the
    /// replay kept only its map of written bytes (520 bytes a page).
    @Test func aDirectReplayRebuildsPatchedRecordsFromTheFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalPatchedCrash(dir, commits: 30)
        #expect(journalRecordRuns(state.jsynced).dropFirst().contains { $0.contains { $0.patched } }, "patched records")
        cs_test_set_replay_image_max(4616)
        defer { cs_test_set_replay_image_max(0) }
        let v = try journalPatchedReopen(dir, state.synced, state.jsynced, state.want, "a direct replay")
        #expect(v == state.version)
        var pages: UInt64 = 0, bytes: UInt64 = 0
        cs_test_replay_image(&pages, &bytes)
        #expect(pages > 1 && bytes <= pages * 520 + max(64, 4 * (pages + 1)) * 8, "\(pages) pages, \(bytes) bytes")
    }

    /// A Unix socket at the journal's path: the open fails with CS_EXISTS naming it, and the
    /// socket and the database file are left as they were.
    @Test func aSocketAtTheJournalsPathIsRefused() throws {
        // a short directory: a socket's path has at most 107 bytes
        var template = Array("/tmp/jrsXXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(made != nil)
        let short = String(cString: template.map { UInt8(bitPattern: $0) })
        defer { try? FileManager.default.removeItem(atPath: short) }
        let path = short + "/a.cstore"
        try journalPrepare(path)
        let before = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        try? FileManager.default.removeItem(atPath: path + ".journal")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { Glibc.close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let sp = Array((path + ".journal").utf8CString)
        try #require(sp.count <= MemoryLayout.size(ofValue: addr.sun_path), "the socket's path fits")
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, c) in sp.enumerated() { raw[i] = UInt8(bitPattern: c) }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind: \(errno)")
        let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        if let h { _ = cs_db_close(h) }
        #expect(rc == Int32(CS_EXISTS) && lastMessage().contains("is not a regular file (a socket)"), "\(codeName(rc)) \(lastMessage())")
        var st = stat()
        #expect(lstat(path + ".journal", &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK, "the socket as it was")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) == before, "the database file as it was")
    }

    /// A directory put at the journal's path while the file is open, before its first journaled
    /// commit: that commit's checkpoint needs the journal, so the commit fails with CS_EXISTS
    /// naming the directory and changes nothing; the directory is left as it was, and once it is
    /// moved away the next commit is journaled.
    @Test func aDirectoryAtTheJournalsPathFailsTheCommitThatNeedsIt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        let (orc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(orc, "open")
        defer { _ = cs_db_close(h) }
        try FileManager.default.createDirectory(atPath: path + ".journal", withIntermediateDirectories: false)
        let version = cs_db_version(h!)
        var t: OpaquePointer?
        try must(cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t), "begin")
        var o = try createObj(t!, try findTable(t!, "T"))
        try must(cs_obj_set_int(&o, 0, 100), "set")
        let rc = cs_txn_commit(t!)
        let message = lastMessage()
        _ = cs_txn_end(t)
        #expect(rc == Int32(CS_EXISTS) && message.contains("is not a regular file (a directory)"), "\(codeName(rc)) \(message)")
        let count = try journalObjectCount(h!)
        #expect(cs_db_version(h!) == version && count == 10, "the commit changed nothing")
        var isDir: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: path + ".journal", isDirectory: &isDir) && isDir.boolValue)
        try FileManager.default.removeItem(atPath: path + ".journal")
        try journalCommit(h!, 100)
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 1, "journaled: \(records)")
    }

    /// The last close of a MEMORY file removes the file and its journal, and only a journal: a
    /// FIFO put at the journal's path during the session, or a regular file that is not a
    /// journal, stays; a journal (zeros, as a new one's space) goes.
    @Test func theLastCloseOfAMemoryFileRemovesOnlyAJournal() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for what in ["a FIFO", "a file that is not a journal", "a journal"] {
            let path = dir.path("m.cstore")
            for p in [path, path + ".lock", path + ".journal"] { try? FileManager.default.removeItem(atPath: p) }
            try journalPrepare(path)
            try? FileManager.default.removeItem(atPath: path + ".journal")
            if what == "a file that is not a journal" {
                try Data("notes\n".utf8).write(to: URL(fileURLWithPath: path + ".journal"))
            } else if what == "a journal" {
                try Data(count: 1 << 20).write(to: URL(fileURLWithPath: path + ".journal"))
            }
            let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_MEMORY)
            try must(rc, "open MEMORY (\(what))")
            if what == "a FIFO" { #expect(mkfifo(path + ".journal", 0o644) == 0) }
            _ = cs_db_close(h)
            var st = stat()
            let there = lstat(path + ".journal", &st) == 0
            #expect(there == (what != "a journal"), "\(what) at the journal's path after the last close: \(there)")
        }
    }
}
