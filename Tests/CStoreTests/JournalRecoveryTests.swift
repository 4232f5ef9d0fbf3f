// Recovery tests of the commit journal (docs/FORMAT.md §13): the format version a power cut
// leaves on disk while records are pending, replay onto an older copy of the same file, a FULL
// commit when the journal cannot be created, and a header write that fails after the commit
// point. The shared set-up is in JournalSupport.swift.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct JournalRecoveryTests {
    private func u16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }

    /// FORMAT.md §2 says a version-6 library refuses a file whose journal may hold commits
    /// (format version 7; 8 with patched records, which a version-7 library refuses too). After
    /// a power cut that lost the unsynced in-place header write, the durable header must
    /// already say 8, or an older library opens the checkpoint's version:
    /// acknowledged commits are lost, and its own commits are later clobbered by the replay.
    @Test func theDurableHeaderSaysTheJournalFormatWhileTheJournalHoldsRecords() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let clean = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(u16(clean, 8) == 6, "a cleanly closed file rests at version 6")
        let pio = PowerCutIO(disk: clean)
        let h = try pio.open(path)
        try journalCommit(h, 100)
        try journalCommit(h, 200)
        pio.cutNow()
        let state = pio.cut!
        _ = cs_db_close(h)
        #expect(state.jsynced.count > 4096 + 64, "the journal holds the records")
        #expect(u16(state.synced, 8) == 8 && u16(state.synced, 10) == 8,
                "the synced header says read \(u16(state.synced, 8)) / write \(u16(state.synced, 10)) while the journal holds acknowledged commits")
    }

    /// A copy of the file taken earlier (same journal id, an older version than the journal's
    /// base) put back over the file after a crash: replaying the journal onto it makes a
    /// version whose older nodes are missing. The open must refuse (or skip the replay), never
    /// open a torn version.
    @Test func replayOntoAnOlderCopyOfTheSameFileIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let older = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        do {
            let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
            try must(rc, "open")
            for i in 1...3 {
                var t: OpaquePointer?
                try must(cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t), "begin")
                let table = try findTable(t!, "T")
                for k in 0..<3000 {
                    var o = try createObj(t!, table)
                    try must(cs_obj_set_int(&o, 0, Int64(i * 10000 + k)), "set v")
                }
                try must(cs_txn_commit(t!), "commit bulk \(i)")
                check(cs_txn_end(t))
            }
            _ = cs_db_close(h)
        }
        let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        let h = try pio.open(path)
        try journalCommit(h, 7)
        try journalCommit(h, 8)
        pio.cutNow()
        let state = pio.cut!
        _ = cs_db_close(h)
        let img = dir.path("b.cstore")
        try writeJournalImage(img, older, state.jsynced)
        let (rc, h2) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        if rc == Int32(CS_OK), let h2 {
            defer { _ = cs_db_close(h2) }
            let vrc = cs_db_verify(h2)
            #expect(vrc == Int32(CS_OK), "replay onto an older copy opened a torn version: \(codeName(vrc)) \(lastMessage())")
        }
    }

    /// A journal that cannot be created (read-only directory with an existing lock file,
    /// EACCES): before the journal a FULL commit worked there; now it must either still work
    /// (falling back to in-place one-sync commits) or the open must fail clearly.
    @Test func aFullCommitWhenTheJournalCannotBeCreated() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        let io = UnsafeMutablePointer<cs_io>.allocate(capacity: 1)
        defer { io.deallocate() }
        var x = cs_io()
        x.open = { _, p, flags, mode in
            // a read-only directory: an existing journal opens; creating one is refused
            if String(cString: p!).hasSuffix(".journal") && flags & O_CREAT != 0
                && access(p!, F_OK) != 0 { errno = EACCES; return -1 }
            return Glibc.open(p!, flags, mode)
        }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { _, fd, buf, n, off in Glibc.pwrite(fd, buf, n, off) }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        io.initialize(to: x)
        var opts = cs_options()
        opts.durability = CS_DURABILITY_FULL
        opts.io = UnsafePointer(io)
        var h: OpaquePointer?
        let orc = cs_db_open(path, &opts, &h)
        guard orc == Int32(CS_OK), let h else { return } // failing the open clearly is acceptable
        defer { _ = cs_db_close(h) }
        // the core's log (cs_log_set), told apart from other tests' by the path; the function
        // found (the Swift layer's, when its tests ran first) is put back after
        let sink = CoreLogSink()
        processLogLock.lock()
        var savedFn: cs_log_fn?
        var savedCtx: UnsafeMutableRawPointer?
        cs_log_get(&savedFn, &savedCtx)
        cs_log_set({ ctx, level, _, message in
            Unmanaged<CoreLogSink>.fromOpaque(ctx!).takeUnretainedValue().add(level, String(cString: message!))
        }, Unmanaged.passUnretained(sink).toOpaque())
        defer { cs_log_set(savedFn, savedCtx); processLogLock.unlock() }
        for v in Int64(42)...43 {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            let table = try findTable(t!, "T")
            var o = try createObj(t!, table)
            try must(cs_obj_set_int(&o, 0, v), "set")
            let crc = cs_txn_commit(t!)
            _ = cs_txn_end(t)
            #expect(crc == Int32(CS_OK), "the open succeeded but every FULL commit fails: \(codeName(crc)) \(lastMessage())")
        }
        // said once, as a warning naming the file and why
        let said = sink.lines.filter { $0.1.contains(path) }
        #expect(said.count == 1, "\(said)")
        #expect(said.first?.0 == Int32(CS_LOG_WARN), "\(said)")
        #expect(said.first?.1 == "The journal of \(path) cannot be had (cannot open the journal of \(path): Permission denied): durable commits are made without the journal, in place with one sync each",
                "\(said)")
    }

    /// The header write of a journaled commit follows its commit point (the journal's sync,
    /// FORMAT.md §13): when it fails, the commit is durable, so it reports success; the process
    /// refuses further commits (with the header write's error) until the file is reopened, and
    /// the reopen replays the commit.
    @Test func aCommitWhoseHeaderWriteFailsAfterTheCommitPointSucceeds() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let fio = JournalFaultIO()
        let h = try fio.open(path)
        try journalCommit(h!, 100)
        fio.armed = true
        var t: OpaquePointer?
        try must(cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t), "begin")
        var o = try createObj(t!, try findTable(t!, "T"))
        try must(cs_obj_set_int(&o, 0, 200), "set v")
        let crc = cs_txn_commit(t!)
        _ = cs_txn_end(t)
        #expect(fio.failed == 1, "the header write failed")
        #expect(crc == Int32(CS_OK), "a durable commit reported \(codeName(crc)) \(lastMessage())")
        #expect(try journalObjectCount(h!) == 12, "this process reads the commit")
        var t2: OpaquePointer?
        var rc = cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t2)
        if rc == Int32(CS_OK) {
            var o2 = try createObj(t2!, try findTable(t2!, "T"))
            try must(cs_obj_set_int(&o2, 0, 300), "set v")
            rc = cs_txn_commit(t2!)
            _ = cs_txn_end(t2)
        }
        #expect(rc == Int32(CS_FULL), "the next commit is refused with the header write's error: \(codeName(rc))")
        _ = cs_db_close(h)
        let (orc, h2) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(orc, "reopen")
        defer { _ = cs_db_close(h2) }
        #expect(try journalObjectCount(h2!) == 12, "the reopen replays the commit")
        #expect(cs_db_verify(h2!) == Int32(CS_OK), "\(lastMessage())")
    }

    /// A read-only opener alone with a crash's records that may not write the database file
    /// (EACCES on a read-write open of it) cannot recover them: the open fails with
    /// CS_READONLY, names what to do, and leaves the file and its journal as they were.
    @Test func aReadOnlyOpenThatCannotWriteTheFileIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100])
        let img = dir.path("b.cstore")
        try writeJournalImage(img, state.synced, state.jsynced)
        let io = UnsafeMutablePointer<cs_io>.allocate(capacity: 1)
        defer { io.deallocate() }
        var x = cs_io()
        x.open = { _, p, flags, mode in
            // a file of another user: it opens for reading only
            if String(cString: p!).hasSuffix(".cstore") && flags & O_ACCMODE != O_RDONLY { errno = EACCES; return -1 }
            return Glibc.open(p!, flags, mode)
        }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { _, fd, buf, n, off in Glibc.pwrite(fd, buf, n, off) }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        io.initialize(to: x)
        var opts = cs_options()
        opts.flags = UInt32(CS_OPEN_READONLY)
        opts.io = UnsafePointer(io)
        var ro: OpaquePointer?
        let rc = cs_db_open(img, &opts, &ro)
        if let ro { _ = cs_db_close(ro) }
        #expect(rc == Int32(CS_READONLY), "\(codeName(rc)) \(lastMessage())")
        #expect(lastMessage().contains("cannot write"), "\(lastMessage())")
        #expect(lastMessage().contains("swiftstore recover \(img)"), "names the command that recovers: \(lastMessage())")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: img))) == state.synced, "the file is unchanged")
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(img, &records, &bytes) == Int32(CS_OK) && records == 1, "the record is kept: \(records)")
    }

    /// A file named like the journal that is not one (a user's file) is never overwritten: the
    /// commit that would start the journal fails clearly and leaves it as it was.
    @Test func aFileInTheJournalsPlaceIsNeverOverwritten() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let notes = Data("notes kept beside the database\n".utf8)
        try notes.write(to: URL(fileURLWithPath: path + ".journal"))
        let (orc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(orc, "open")
        var t: OpaquePointer?
        try must(cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t), "begin")
        var o = try createObj(t!, try findTable(t!, "T"))
        try must(cs_obj_set_int(&o, 0, 1), "set v")
        let crc = cs_txn_commit(t!)
        let message = lastMessage()
        _ = cs_txn_end(t)
        _ = cs_db_close(h)
        #expect(crc == Int32(CS_EXISTS), "\(codeName(crc)) \(message)")
        #expect(message.contains("not a journal"), "\(message)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".journal")) == notes, "the file is unchanged")
    }

    /// A file whose header says its newest commits may be in the journal (format 7) opened
    /// alone without its journal (moved away, or the file copied without it after a crash):
    /// commits made durable only in the journal are lost, and the open says so as it does for a
    /// rejected commit (cs_db_rejected_commit, which `swiftstore verify` and
    /// Realm.discardedCommit report).
    @Test func aJournaledFileOpenedWithoutItsJournalReportsTheLoss() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100, 200])
        #expect(u16(state.synced, 8) == 8)
        let img = dir.path("b.cstore")
        try writeJournalImage(img, state.synced, nil)
        let (rc, h2) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
        try must(rc, "open without the journal")
        var version: UInt64 = 0, opened: UInt64 = 0
        var why = [CChar](repeating: 0, count: 256)
        let rejected = cs_db_rejected_commit(h2!, &version, &opened, &why, why.count)
        let reason = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(rejected, "the loss is reported")
        #expect(opened == cs_db_version(h2!) && version == opened + 1, "\(version) \(opened)")
        #expect(reason.contains("journal"), "\(reason)")
        #expect(cs_file_verify(img) == Int32(CS_CORRUPT), "verify reports the loss while the header claims a journal")
        try journalCommit(h2!, 300)
        _ = cs_db_close(h2)
        #expect(cs_file_verify(img) == Int32(CS_OK), "after a write and a clean close (version 6) nothing is claimed: \(lastMessage())")
    }

    /// A header at format version 8 beside a journal that holds no record (docs/FORMAT.md §13,
    /// Recovery) says nothing a version-6 library would miss: the file rests at 6 again after a
    /// read-write open that replays a crash's records and commits nothing, and after a
    /// read-only open alone (what `swiftstore recover` makes) or a read-write one of a file
    /// whose journal holds its header only (a checkpoint no record followed). A journaled
    /// commit marks it 8 again; a missing journal leaves it 8 (the loss the open reports).
    @Test func aFileWhoseJournalHoldsNoRecordRestsAtVersion6() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100])
        let v = state.version
        #expect(u16(state.synced, 8) == 8 && state.jsynced.count > 4096)
        let img = dir.path("b.cstore")
        func header() -> [Int] {
            let b = [UInt8](((try? Data(contentsOf: URL(fileURLWithPath: img))) ?? Data(count: 12)).prefix(12))
            return [u16(b, 8), u16(b, 10)]
        }
        // replayed by a read-write open that commits nothing
        try writeJournalImage(img, state.synced, state.jsynced)
        do {
            let (rc, h2) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
            try must(rc, "open")
            #expect(cs_db_recovered_commits(h2!) == 1 && cs_db_version(h2!) == v)
            _ = cs_db_close(h2)
        }
        #expect(header() == [6, 6], "after the replay and a close: \(header())")
        // the journal's header alone, the file at the checkpoint's version: a read-only open
        // alone (no lock file), then a read-write one
        let headerOnly = Array(state.jsynced.prefix(4096)) + [UInt8](repeating: 0, count: 8192)
        for flags in [CS_OPEN_READONLY, 0] {
            try writeJournalImage(img, state.synced, headerOnly)
            #expect(header() == [8, 8])
            let (rc, h3) = openRaw(img, flags: flags, durability: CS_DURABILITY_FULL)
            try must(rc, "open with flags \(flags)")
            #expect(cs_db_recovered_commits(h3!) == 0 && cs_db_version(h3!) < v)
            #expect(!cs_db_rejected_commit(h3!, nil, nil, nil, 0), "nothing is lost")
            #expect(header() == [6, 6], "flags \(flags): rested by the open: \(header())")
            _ = cs_db_close(h3)
            #expect(header() == [6, 6], "flags \(flags): \(header())")
            #expect(check(cs_file_verify(img)))
        }
        // a journaled commit marks it 8 again while its record is pending
        do {
            let (rc, h4) = openRaw(img, flags: 0, durability: CS_DURABILITY_FULL)
            try must(rc, "open")
            try journalCommit(h4!, 200)
            #expect(header() == [8, 8])
            _ = cs_db_close(h4)
            #expect(header() == [6, 6])
        }
        // without its journal the header stays 8 after a read-only open: the loss is reported
        try writeJournalImage(img, state.synced, nil)
        let (rc, h5) = openRaw(img, flags: CS_OPEN_READONLY)
        try must(rc, "open without the journal")
        #expect(cs_db_rejected_commit(h5!, nil, nil, nil, 0))
        _ = cs_db_close(h5)
        #expect(header() == [8, 8])
    }

    /// A journal that cannot be read at the open (EIO on its header, or on its first record) is
    /// not one without records: the open fails with CS_IOERR and writes nothing (it would
    /// otherwise open the version before the journaled commit, and the session's first
    /// checkpoint would drop the record for good), and an open that can read it replays it.
    @Test func aJournalThatCannotBeReadFailsTheOpen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100])
        let v = state.version
        let img = dir.path("b.cstore")
        for at in [0, 4096] {
            for flags in [0, CS_OPEN_READONLY] {
                try writeJournalImage(img, state.synced, state.jsynced)
                let fio = JournalFaultIO()
                fio.failJournalReadAt = at
                let (rc, h2) = fio.openRaw(img, flags: flags)
                if let h2 { _ = cs_db_close(h2) }
                #expect(rc == Int32(CS_IOERR), "a read failing at \(at), flags \(flags): \(codeName(rc)) \(lastMessage())")
                #expect(fio.failedReads > 0)
                #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: img))) == state.synced, "the file is unchanged")
                #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: img + ".journal"))) == state.jsynced, "the journal is unchanged")
            }
        }
        let db = try DB(img, flags: 0, durability: CS_DURABILITY_FULL)
        #expect(cs_db_version(db.h) == v && cs_db_recovered_commits(db.h) == 1)
        db.close()
    }

    /// The open's rest of a format-7 header beside an empty journal only lets older libraries
    /// in: when its write fails (ENOSPC on an overwrite, as on a full copy-on-write file
    /// system) the open succeeds, and the header stays 7.
    @Test func aFailedRestOfTheFormatVersionDoesNotFailTheOpen() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100])
        let img = dir.path("b.cstore")
        try writeJournalImage(img, state.synced, Array(state.jsynced.prefix(4096)))
        let fio = JournalFaultIO()
        fio.failFormatWrite = true
        let (rc, h2) = fio.openRaw(img)
        #expect(rc == Int32(CS_OK), "\(codeName(rc)) \(lastMessage())")
        #expect(fio.failedWrites > 0, "the rest was tried")
        if let h2 {
            #expect(try journalObjectCount(h2) == 10)
            _ = cs_db_close(h2)
        }
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: img)).prefix(12))
        #expect(u16(b, 8) == 8 && u16(b, 10) == 8)
    }

    /// A file that is not a database (zeros, but 7 where a header's format versions would be)
    /// beside a file named like its journal: the open fails (CS_CORRUPT) and never writes into
    /// it, the rest of the format version included (docs/FORMAT.md §13, Recovery).
    @Test func aFileThatIsNotADatabaseIsNeverRested() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("x.cstore")
        var bytes = [UInt8](repeating: 0, count: 64 << 10)
        bytes[8] = 7
        bytes[10] = 7
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try Data().write(to: URL(fileURLWithPath: path + ".journal"))
        for flags in [CS_OPEN_READONLY, 0] {
            let (rc, h) = openRaw(path, flags: flags)
            if let h { _ = cs_db_close(h) }
            #expect(rc == Int32(CS_CORRUPT), "flags \(flags): \(codeName(rc)) \(lastMessage())")
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) == bytes, "flags \(flags): the file is unchanged")
        }
    }

    /// A commit whose header write failed after its commit point, in a process that then
    /// closes while another keeps the file open: the other process's last close checkpoints,
    /// and that checkpoint must put the commit's header in place before it syncs the file and
    /// empties the journal, or the acknowledged commit would be lost.
    @Test func anotherProcessClosingLastPutsTheFailedHeaderInPlace() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let fio = JournalFaultIO()
        let h = try fio.open(path)
        try must(childStyleIncrement(h!), "the first commit")
        let stop = dir.path("stop")
        let checker = try Child(["check", path, stop], in: dir)
        #expect(waitUntil(seconds: 30) { var n = 0; return cs_db_pins(h!, nil, 0, &n) == 0 && n > 0 }, "the checker joined")
        fio.armed = true
        #expect(try childStyleIncrement(h!) == Int32(CS_OK), "\(lastMessage())")
        #expect(fio.failed == 1, "the header write failed")
        _ = cs_db_close(h) // broken: no checkpoint here, and not the last close
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        #expect(checker.wait(seconds: 60) && checker.succeeded, "\(checker.summary)")
        var records: UInt64 = 9, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 0, "the last close checkpointed: \(records)")
        // the database file alone holds both commits
        try FileManager.default.removeItem(atPath: path + ".journal")
        let db = try DB(path, flags: 0)
        let n = try db.read { try ChildSchema($0).counterValues($0).n }
        db.close()
        #expect(n == 2, "the commits in the database file: \(n)")
    }
    /// The versions in the two header slots of the database file at `path` (docs/FORMAT.md §2:
    /// slot s at 16 + 64 s, its version 8 bytes in).
    private func slotVersions(_ path: String) throws -> Set<Int> {
        let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(192))
        return [rawLE64(b, 24), rawLE64(b, 88)]
    }

    /// A commit whose header write failed after its commit point, in a process that stays open
    /// (broken), and then a journaled commit of another process: the header on disk still names
    /// the version before the failed commit, so that commit must checkpoint first, and the
    /// checkpoint must write the published records again before the new header is built from
    /// the one on disk. Its header then keeps the failed commit's version in the other slot (a
    /// stale header would put the version before it there, whose space may be reused), and the
    /// file holds every commit after the last close and a reopen.
    @Test func anotherProcessCommitsAfterAFailedHeaderWrite() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let fio = JournalFaultIO()
        let h = try fio.open(path)
        try must(childStyleIncrement(h!), "the first commit")
        fio.armed = true
        #expect(try childStyleIncrement(h!) == Int32(CS_OK), "\(lastMessage())")
        #expect(fio.failed == 1, "the header write failed")
        let failed = Int(cs_db_version(h!))
        #expect(try slotVersions(path) == [failed - 2, failed - 1], "the header on disk is the one before the failed commit")
        // the other process: one journaled (FULL) commit, then it closes (not the last)
        try runChild(["commit-loop", path, dir.path("log"), "1"], in: dir)
        #expect(try slotVersions(path) == [failed, failed + 1],
                "the other process's header keeps the failed commit's version beside its own")
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 1,
                "its checkpoint emptied the journal before its record: \(records)")
        _ = cs_db_close(h) // broken, and the last close: no checkpoint, the record stays for the replay
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        db.verify()
        try db.read { t in
            let s = try ChildSchema(t)
            let (problem, _) = try childInvariantProblem(t, s)
            #expect(problem == nil, "\(problem ?? "")")
            #expect(try s.counterValues(t).n == 3, "the three commits")
        }
        #expect(cs_db_version(db.h) == UInt64(failed + 1))
        db.close()
    }
    /// A growth whose zeros the disk refuses part-way (the allocation not supported, so the
    /// zeros alone claim the space, 64 KiB per pwrite; the fifth piece refused): the growth is
    /// cut back to the journal's size before it, the commit is made after a checkpoint with its
    /// record from the journal's start, and once the disk has room a record grows the journal.
    @Test func aGrowthRefusedPartWayIsCutBack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let fio = JournalFaultIO()
        fio.journalAllocateUnsupported = true
        let h = try fio.open(path)
        func records() -> UInt64 {
            var n: UInt64 = 0, bytes: UInt64 = 0
            _ = cs_file_journal_info(path, &n, &bytes)
            return n
        }
        func journalSize() -> Int {
            var st = stat()
            return stat(path + ".journal", &st) == 0 ? Int(st.st_size) : -1
        }
        func commit(_ v: Int64, _ bytes: Int) throws {
            var t: OpaquePointer?
            try must(cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t), "begin")
            defer { _ = cs_txn_end(t) }
            var o = try createObj(t!, try findTable(t!, "T"))
            try must(cs_obj_set_int(&o, 0, v), "set v")
            var rng = SeededRNG(seed: UInt64(v))
            try must(setVal(&o, 1, .binary(randomBytes(bytes, &rng))), "set b")
            try must(cs_txn_commit(t!), "commit \(v): \(lastMessage())")
        }
        for i in 1...3 { try commit(Int64(i), 200_000) }
        #expect(records() == 3, "three records in the journal's first MiB")
        let sizeBefore = journalSize()
        #expect(sizeBefore == 1 << 20, "the journal is 1 MiB: \(sizeBefore)")
        // room for four 64 KiB pieces of the growth's zeros, not the fifth
        fio.journalWriteLimit = sizeBefore + 300 * 1024
        let bytesBefore = fio.journalBytes
        try commit(4, 500_000)
        #expect(fio.journalWriteRefusals > 0, "the growth's zeros were refused")
        // four pieces went in before the fifth was refused, then the record after the checkpoint
        // (the checkpoint's header write of 64 bytes, the record of about 500 KB)
        let written = fio.journalBytes - bytesBefore
        #expect(written >= 4 * 65536 + 500_000 && written < 4 * 65536 + 520_000,
                "the growth's first four 64 KiB pieces, then the checkpoint and the record: \(written) bytes")
        #expect(journalSize() == sizeBefore, "the growth was cut back: \(journalSize()) bytes")
        #expect(records() == 1, "a checkpoint emptied the journal, then the record went in from its start")
        // the disk has room again: a record that does not fit grows the journal
        fio.journalWriteLimit = nil
        try commit(5, 600_000)
        #expect(records() == 2)
        #expect(journalSize() == 2 << 20, "the journal grew to 2 MiB: \(journalSize())")
        #expect(try journalObjectCount(h!) == 15)
        _ = cs_db_close(h)
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        db.verify()
        #expect(try journalObjectCount(db.h) == 15)
        db.close()
    }

    /// A record the journal cannot grow for (a full disk) while records are pending: the commit
    /// checkpoints (which needs no growth), then appends its record from the journal's start
    /// when it fits there, and is made in place with one sync when it does not (docs/FORMAT.md
    /// §13, Commit step 1). Every commit returns, and the reopened file holds them all.
    @Test func aRecordTheJournalCannotGrowForFallsBack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        let fio = JournalFaultIO()
        let h = try fio.open(path)
        func records() -> UInt64 {
            var n: UInt64 = 0, bytes: UInt64 = 0
            _ = cs_file_journal_info(path, &n, &bytes)
            return n
        }
        /// One commit of `bytes` bytes; its syncs (cs_txn_last_commit_io).
        func commit(_ v: Int64, _ bytes: Int) throws -> UInt64 {
            var t: OpaquePointer?
            try must(cs_txn_begin(h!, Int32(CS_TXN_WRITE), &t), "begin")
            defer { _ = cs_txn_end(t) }
            var o = try createObj(t!, try findTable(t!, "T"))
            try must(cs_obj_set_int(&o, 0, v), "set v")
            var rng = SeededRNG(seed: UInt64(v))
            try must(setVal(&o, 1, .binary(randomBytes(bytes, &rng))), "set b")
            try must(cs_txn_commit(t!), "commit \(v): \(lastMessage())")
            var writes: UInt64 = 0, syncs: UInt64 = 0
            cs_txn_last_commit_io(t!, &writes, &syncs)
            return syncs
        }
        for i in 1...3 { _ = try commit(Int64(i), 200_000) }
        #expect(records() == 3, "three records in the journal's first MiB")
        fio.failJournalGrowth = true
        // 500 KB more does not fit after them: a checkpoint, then it fits from the start
        #expect(try commit(4, 500_000) == 1)
        #expect(fio.journalGrowthFailures > 0, "the journal could not grow")
        #expect(records() == 1, "the checkpoint emptied the journal, then the record went in")
        // a record of nearly 1 MiB does not fit even from the start: made in place, one sync
        let failures = fio.journalGrowthFailures
        #expect(try commit(5, 1_045_000) == 1, "a one-sync commit")
        #expect(fio.journalGrowthFailures > failures)
        #expect(records() == 0, "no record: the commit was made in place")
        // another such commit after it: no record is pending, so it asks for the room before
        // any checkpoint, and is made in place with its own sync alone (no checkpoint's two
        // syncs, no journal write)
        let (syncsBefore, bytesBefore) = (fio.syncs, fio.journalBytes)
        #expect(try commit(7, 1_045_000) == 1)
        #expect(fio.syncs - syncsBefore == 1, "syncs of any file: \(fio.syncs - syncsBefore)")
        #expect(fio.journalBytes == bytesBefore, "bytes into the journal: \(fio.journalBytes - bytesBefore)")
        #expect(records() == 0)
        // and journaled commits go on when the disk has room again
        fio.failJournalGrowth = false
        _ = try commit(6, 600_000)
        #expect(records() == 1)
        #expect(try journalObjectCount(h!) == 17)
        _ = cs_db_close(h)
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        db.verify()
        #expect(try journalObjectCount(db.h) == 17)
        db.close()
    }
    /// Power cuts at every event of the commits the full-disk fallback makes (docs/FORMAT.md
    /// §13, Commit step 1; journal.c invariant 6), each reopened over the database images
    /// (powerCutImages) and journal images (journalImages) the cut can leave: the file opens at
    /// a version from the last acknowledged commit to the last one tried, with that version's
    /// objects, and verifies. `pending`: journaled commits first, then a record the journal
    /// cannot grow for (a checkpoint, then from the journal's start) and one that does not fit
    /// even there (a checkpoint, then in place); else no journal at all, and `create` says
    /// whether even its creation is refused (else the room for the first record is, asked for
    /// before the checkpoint). `journal`: the journal beside the file at the start (nil: none);
    /// one shorter than 1 MiB with room for the records makes the checkpoint's own growth to
    /// 1 MiB the one refused.
    private func fallbackCampaign(pending: Bool, create: Bool = false, journal: [UInt8]? = nil) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let a = dir.path("a.cstore")
        try journalPrepare(a)
        let pristine = [UInt8](try Data(contentsOf: URL(fileURLWithPath: a)))
        let plan: [(Int64, Int)] = pending ? [(1, 200_000), (2, 200_000), (3, 200_000), (4, 500_000), (5, 1_045_000)]
                                           : [(1, 1000), (2, 200_000), (3, 1000)]
        let armedFrom = pending ? 3 : 0
        func tryCommit(_ h: OpaquePointer, _ v: Int64, _ bytes: Int) throws -> (Int32, UInt64) {
            var t: OpaquePointer?
            // after a cut, a process whose header write failed refuses to write (broken)
            let brc = cs_txn_begin(h, Int32(CS_TXN_WRITE), &t)
            if brc != Int32(CS_OK) { return (brc, 0) }
            defer { _ = cs_txn_end(t) }
            var o = try createObj(t!, try findTable(t!, "T"))
            try must(cs_obj_set_int(&o, 0, v), "set v")
            var rng = SeededRNG(seed: UInt64(v))
            try must(setVal(&o, 1, .binary(randomBytes(bytes, &rng))), "set b")
            let rc = cs_txn_commit(t!)
            return (rc, cs_txn_version(t!))
        }
        func run(_ cutBefore: Int) throws -> (PowerCutIO, [UInt64: Int64], UInt64, UInt64) {
            let path = dir.path("run.cstore")
            try writeJournalImage(path, pristine, journal)
            let pio = PowerCutIO(disk: pristine)
            let h = try pio.open(path)
            var sum: Int64 = 45
            var acked = cs_db_version(h), tried = acked
            var sums: [UInt64: Int64] = [acked: sum]
            for (i, (v, bytes)) in plan.enumerated() {
                if i == armedFrom {
                    pio.failJournalGrowth = true
                    pio.journalRoom = 64 << 10 // a growth writes 64 KiB of zeros, then is refused
                    pio.failJournalCreate = create
                    pio.cutBefore = cutBefore
                    pio.armed = true
                }
                tried += 1
                sum += v
                sums[tried] = sum
                let (rc, version) = try tryCommit(h, v, bytes)
                if rc != Int32(CS_OK) { break }
                acked = version
                #expect(version == tried)
            }
            pio.cutNow()
            pio.failJournalGrowth = false
            pio.failJournalCreate = false
            _ = cs_db_close(h)
            return (pio, sums, acked, tried)
        }
        let (whole, _, ackedWhole, triedWhole) = try run(Int.max)
        #expect(ackedWhole == triedWhole, "every commit returns without a cut")
        #expect(whole.journalRefusals > 0, "the journal was refused its space")
        #expect(create || whole.events.contains { if case .jtruncate = $0 { return true } else { return false } },
                "a growth written in part was cut back")
        let events = whole.events
        var rng = SeededRNG(seed: 7)
        var images = 0
        for cut in 0...events.count {
            let (pio, sums, acked, tried) = try run(cut)
            let state = pio.cut!
            let journals = journalImages(state.jsynced, state.jpending)
            for (k, (desc, image)) in powerCutImages(state.synced, state.pending, &rng, light: true).enumerated() {
                for (jd, j) in k == 0 ? journals : [journals[k % journals.count]] {
                    images += 1
                    let what = "cut before event \(cut) (\(cut < events.count ? events[cut].description : "none")): \(desc), \(jd)"
                    guard let r = try journalReopen(dir, image, j, what) else { continue }
                    #expect(r.0 >= acked && r.0 <= tried, "\(what): version \(r.0), acknowledged \(acked), tried \(tried)")
                    #expect(sums[r.0] == r.1, "\(what): sum \(r.1) at version \(r.0)")
                }
            }
        }
        print("journal fallback (pending \(pending), create \(create)): \(events.count) events, \(images) images")
    }

    @Test func powerCutsDuringTheFallbackWithRecordsPending() throws { try fallbackCampaign(pending: true) }
    @Test func powerCutsDuringTheFallbackWithoutRoomForTheJournal() throws { try fallbackCampaign(pending: false) }
    @Test func powerCutsDuringTheFallbackWhenTheJournalCannotBeCreated() throws {
        try fallbackCampaign(pending: false, create: true)
    }
    @Test func powerCutsDuringTheFallbackWhenTheCheckpointCannotGrowTheJournal() throws {
        try fallbackCampaign(pending: false, journal: [UInt8](repeating: 0, count: 256 << 10))
    }

    /// A journal shorter than 1 MiB that has room for the record (256 KiB of zeros: a growth
    /// a crash did not cut back) and a disk too full for more: the record's room is there, so
    /// the commit goes to its checkpoint, whose growth of the journal to its first 1 MiB is
    /// refused before anything is written; with no record pending the commit is then made in
    /// place with its own sync alone (docs/FORMAT.md §13, Commit step 1).
    @Test func aCheckpointThatCannotGrowTheJournalFallsBack() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        try Data(count: 256 << 10).write(to: URL(fileURLWithPath: path + ".journal"))
        let fio = JournalFaultIO()
        fio.failJournalGrowth = true
        let h = try fio.open(path)
        let syncs = fio.syncs
        try journalCommit(h!, 100, bytes: 1000)
        #expect(fio.journalGrowthFailures == 1, "the checkpoint's growth was refused: \(fio.journalGrowthFailures)")
        #expect(fio.syncs - syncs == 1, "the in-place commit's sync alone: \(fio.syncs - syncs)")
        #expect(fio.journalBytes == 0)
        var records: UInt64 = 9, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == Int32(CS_OK) && records == 0)
        _ = cs_db_close(h)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".journal")).count == 256 << 10, "the growth was cut back")
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        db.verify()
        #expect(try journalObjectCount(db.h) == 11)
        db.close()
    }
}

/// A cs_io over the system calls that fails, once armed, the next 192-byte write at offset 0 of
/// the database file (a commit's header write) with ENOSPC; with failJournalGrowth, every write
/// and allocation that would grow the journal; with failJournalReadAt, with EIO, every read of
/// the journal that covers that offset; and with failFormatWrite, with ENOSPC, every 4-byte
/// write at offset 8 of the database file (the header's format versions).
final class JournalFaultIO: @unchecked Sendable {
    var armed = false
    var failed = 0
    var failJournalReadAt: Int?
    var failedReads = 0
    var failFormatWrite = false
    var failedWrites = 0
    /// Fail (ENOSPC) every write that would grow the journal: a full disk.
    var failJournalGrowth = false
    var journalGrowthFailures = 0
    /// The journal's allocation not supported (EOPNOTSUPP, as on a layer or file system that
    /// cannot allocate): a growth then writes its zeros alone (journal.c, jgrow_to).
    var journalAllocateUnsupported = false
    /// Refuse (ENOSPC) every journal write that would end past this offset: a disk that fills up
    /// in the middle of a growth's zeros.
    var journalWriteLimit: Int?
    var journalWriteRefusals = 0
    /// Syncs of any file, and bytes written into the journal.
    var syncs = 0
    var journalBytes = 0
    var journalFds = Set<Int32>()
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, p, flags, mode in
            let me = Unmanaged<JournalFaultIO>.fromOpaque(ctx!).takeUnretainedValue()
            let fd = Glibc.open(p!, flags, mode)
            if fd >= 0 && String(cString: p!).hasSuffix(".journal") { me.journalFds.insert(fd) }
            return fd
        }
        x.close = { ctx, fd in
            Unmanaged<JournalFaultIO>.fromOpaque(ctx!).takeUnretainedValue().journalFds.remove(fd)
            return Glibc.close(fd)
        }
        x.pread = { ctx, fd, buf, n, off in
            let me = Unmanaged<JournalFaultIO>.fromOpaque(ctx!).takeUnretainedValue()
            if let at = me.failJournalReadAt, me.journalFds.contains(fd), Int(off) <= at && at < Int(off) + n {
                me.failedReads += 1
                errno = EIO
                return -1
            }
            return Glibc.pread(fd, buf, n, off)
        }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<JournalFaultIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.failFormatWrite && !me.journalFds.contains(fd) && off == 8 && n == 4 {
                me.failedWrites += 1
                errno = ENOSPC
                return -1
            }
            if let limit = me.journalWriteLimit, me.journalFds.contains(fd), Int(off) + n > limit {
                me.journalWriteRefusals += 1
                errno = ENOSPC
                return -1
            }
            if me.failJournalGrowth && me.journalFds.contains(fd) {
                var st = stat()
                if Glibc.fstat(fd, &st) == 0 && Int(off) + n > Int(st.st_size) {
                    me.journalGrowthFailures += 1
                    errno = ENOSPC
                    return -1
                }
            }
            if me.armed && off == 0 && n == 192 && !me.journalFds.contains(fd) {
                me.armed = false
                me.failed += 1
                errno = ENOSPC
                return -1
            }
            let w = Glibc.pwrite(fd, buf, n, off)
            if w > 0 && me.journalFds.contains(fd) { me.journalBytes += w }
            return w
        }
        x.fdatasync = { ctx, fd in
            Unmanaged<JournalFaultIO>.fromOpaque(ctx!).takeUnretainedValue().syncs += 1
            return Glibc.fdatasync(fd)
        }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.allocate = { ctx, fd, off, len in
            let me = Unmanaged<JournalFaultIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.journalAllocateUnsupported && me.journalFds.contains(fd) {
                errno = EOPNOTSUPP
                return -1
            }
            if me.failJournalGrowth && me.journalFds.contains(fd) {
                var st = stat()
                if Glibc.fstat(fd, &st) == 0 && Int(off + len) > Int(st.st_size) {
                    me.journalGrowthFailures += 1
                    errno = ENOSPC
                    return -1
                }
            }
            let r = posix_fallocate(fd, off, len)
            if r != 0 { errno = r; return -1 }
            return 0
        }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    /// Opens `path` (FULL) through this layer: the result and the handle.
    func openRaw(_ path: String, flags: Int = 0) -> (Int32, OpaquePointer?) {
        var opts = cs_options()
        opts.flags = UInt32(flags)
        opts.durability = CS_DURABILITY_FULL
        opts.io = UnsafePointer(io)
        var h: OpaquePointer?
        let rc = cs_db_open(path, &opts, &h)
        return (rc, h)
    }

    /// Opens `path` (FULL) through this layer; an issue unless it opens.
    func open(_ path: String) throws -> OpaquePointer? {
        let (rc, h) = openRaw(path)
        try must(rc, "open")
        return h
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }
}

/// Collects the core's log messages (cs_log_set): level and text.
final class CoreLogSink: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(Int32, String)] = []
    func add(_ level: Int32, _ text: String) { lock.lock(); entries.append((level, text)); lock.unlock() }
    var lines: [(Int32, String)] { lock.lock(); defer { lock.unlock() }; return entries }
}
