// What lies at the journal's path (docs/FORMAT.md §13, Recovery): a dangling symbolic link is
// refused, never followed to create a file where it points; what is there is looked at through
// the replaceable I/O layer (cs_io.stat_path), so a layer can fail or fake it; and a durable
// commit made without the journal, which cannot be had, leaves no message of that failure.

import CStore
import Foundation
import Glibc
import Testing

/// A cs_io that passes every call to the system, except that it can refuse to create the
/// journal (EACCES, an unwritable directory), fail the look at the journal's path (statErrno),
/// say that a directory is there (statDirectory), make a dangling link there right after a look
/// found nothing (linkOnLook: its target), or fail the 4-byte write of the header's format
/// versions (failFormatWrite, EIO).
final class JournalPathIO {
    var refuseCreate = false
    var statErrno: Int32 = 0
    var statDirectory = false
    var statCalls = 0
    var linkOnLook: String?
    var failFormatWrite = false
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, p, flags, mode in
            let me = Unmanaged<JournalPathIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.refuseCreate && String(cString: p!).hasSuffix(".journal") && flags & O_CREAT != 0 {
                errno = EACCES
                return -1
            }
            return Glibc.open(p!, flags, mode)
        }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<JournalPathIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.failFormatWrite && off == 8 && n == 4 {
                errno = EIO
                return -1
            }
            return Glibc.pwrite(fd, buf, n, off)
        }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.stat_path = { ctx, p, st, flags in
            let me = Unmanaged<JournalPathIO>.fromOpaque(ctx!).takeUnretainedValue()
            if String(cString: p!).hasSuffix(".journal") {
                me.statCalls += 1
                if me.statErrno != 0 {
                    errno = me.statErrno
                    return -1
                }
                if me.statDirectory {
                    st!.pointee = stat()
                    st!.pointee.st_mode = S_IFDIR | 0o755
                    return 0
                }
            }
            let r = Glibc.fstatat(AT_FDCWD, p!, st!, flags)
            if r != 0 && errno == ENOENT && String(cString: p!).hasSuffix(".journal"), let target = me.linkOnLook {
                // the link comes between the look and the open that creates the journal
                _ = symlink(target, p!)
                errno = ENOENT
            }
            return r
        }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }

    func open(_ path: String) -> (Int32, OpaquePointer?) {
        var opts = cs_options()
        opts.durability = CS_DURABILITY_FULL
        opts.io = UnsafePointer(io)
        var h: OpaquePointer?
        let rc = cs_db_open(path, &opts, &h)
        return (rc, h)
    }
}

@Suite(.serialized) struct JournalPathTests {
    /// One durable commit of an object with v = `v` into a file made by journalPrepare: its result.
    func commit(_ h: OpaquePointer, _ v: Int64) throws -> Int32 {
        var t: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
        let table = try findTable(t!, "T")
        var o = try createObj(t!, table)
        try must(cs_obj_set_int(&o, 0, v), "set v")
        let rc = cs_txn_commit(t!)
        _ = cs_txn_end(t)
        return rc
    }

    func isLink(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    /// A symbolic link at the journal's path whose target does not exist (in a directory that
    /// does, where a file could be made): the open refuses it with CS_EXISTS naming the path and
    /// what is there, the target is not created, the link stays.
    @Test func aDanglingSymbolicLinkAtTheJournalsPathIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore"), target = dir.path("elsewhere.journal")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        #expect(symlink(target, path + ".journal") == 0)
        let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        if let h {
            // an open that let it pass must not create the target at the first durable commit
            let crc = try commit(h, 42)
            _ = cs_db_close(h)
            Issue.record("the open succeeded; the commit: \(codeName(crc)) \(lastMessage())")
        } else {
            #expect(rc == Int32(CS_EXISTS), "\(codeName(rc)) \(lastMessage())")
            #expect(lastMessage().contains(path + ".journal") && lastMessage().contains("symbolic link"),
                    "\(lastMessage())")
        }
        #expect(access(target, F_OK) != 0, "the link's target was not created")
        #expect(isLink(path + ".journal"), "the link as it was")
    }

    /// The same link made after the open: the first durable commit, which needs the journal,
    /// fails with CS_EXISTS and creates nothing where the link points.
    @Test func aDanglingSymbolicLinkMadeAfterTheOpenFailsTheCommit() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore"), target = dir.path("elsewhere.journal")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        let (orc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        try must(orc, "open")
        defer { _ = cs_db_close(h) }
        #expect(symlink(target, path + ".journal") == 0)
        let rc = try commit(h!, 42)
        #expect(rc == Int32(CS_EXISTS), "\(codeName(rc)) \(lastMessage())")
        #expect(lastMessage().contains("symbolic link"), "\(lastMessage())")
        #expect(access(target, F_OK) != 0, "the link's target was not created")
        #expect(isLink(path + ".journal"), "the link as it was")
    }

    /// The look at the journal's path goes through the I/O layer: a layer that says a directory
    /// is there makes the open fail with CS_EXISTS ("a directory") though nothing is, and one
    /// whose look fails (EIO) makes it fail with CS_IOERR naming the journal, not go on as if
    /// nothing were there.
    @Test func theIOLayerIsAskedWhatLiesAtTheJournalsPath() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        let io = JournalPathIO()
        io.statDirectory = true
        var (rc, h) = io.open(path)
        if let h { _ = cs_db_close(h) }
        #expect(rc == Int32(CS_EXISTS), "\(codeName(rc)) \(lastMessage())")
        #expect(lastMessage().contains("a directory"), "\(lastMessage())")
        #expect(io.statCalls > 0)
        io.statDirectory = false
        io.statErrno = EIO
        (rc, h) = io.open(path)
        if let h { _ = cs_db_close(h) }
        #expect(rc == Int32(CS_IOERR), "\(codeName(rc)) \(lastMessage())")
        #expect(lastMessage().contains("journal") && cs_errno() == EIO, "\(lastMessage())")
        io.statErrno = 0
        (rc, h) = io.open(path)
        try must(rc, "open with the real look")
        #expect(try commit(h!, 42) == Int32(CS_OK), "\(lastMessage())")
        _ = cs_db_close(h)
    }

    /// A durable commit made in place because the journal cannot be created (CS_PERM, docs/FORMAT.md
    /// §13, Commit) succeeds, and the thread's last failure is not the journal's: the caller
    /// that reads cs_errmsg after a success finds no message of a failure it never saw.
    @Test func aCommitWithoutTheJournalLeavesNoMessageOfItsFailure() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        let io = JournalPathIO()
        io.refuseCreate = true
        let (orc, h) = io.open(path)
        try must(orc, "open")
        defer { _ = cs_db_close(h) }
        #expect(try commit(h!, 42) == Int32(CS_OK), "\(lastMessage())")
        #expect(!lastMessage().contains("journal"), "a stale message: \(lastMessage())")
        #expect(cs_errno() != EACCES, "a stale errno")
        #expect(access(path + ".journal", F_OK) != 0, "no journal")
        #expect(try commit(h!, 43) == Int32(CS_OK), "\(lastMessage())")
        #expect(!lastMessage().contains("journal"), "a stale message: \(lastMessage())")
    }

    /// A symbolic link at the journal's path that points to itself: refused with CS_EXISTS as a
    /// dangling link is (move it away), not taken for an I/O error.
    @Test func aLoopOfLinksAtTheJournalsPathIsRefusedAsALink() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        #expect(symlink(path + ".journal", path + ".journal") == 0)
        let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
        if let h { _ = cs_db_close(h) }
        #expect(rc == Int32(CS_EXISTS), "\(codeName(rc)) \(lastMessage())")
        #expect(lastMessage().contains("symbolic link") && lastMessage().contains(path + ".journal"), "\(lastMessage())")
        #expect(isLink(path + ".journal"), "the link as it was")
    }

    /// A dangling link made between the look at the journal's path (nothing there) and the open
    /// that creates the journal: the create (O_EXCL) does not follow it, the commit fails with
    /// CS_EXISTS and the link's target is not created.
    @Test func aLinkMadeBetweenTheLookAndTheCreateIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("a.cstore"), target = dir.path("elsewhere.journal")
        try journalPrepare(path)
        try? FileManager.default.removeItem(atPath: path + ".journal")
        let io = JournalPathIO()
        let (orc, h) = io.open(path)
        try must(orc, "open")
        defer { _ = cs_db_close(h) }
        io.linkOnLook = target
        let rc = try commit(h!, 42)
        #expect(rc == Int32(CS_EXISTS), "\(codeName(rc)) \(lastMessage())")
        #expect(isLink(path + ".journal"), "the link was made in the window")
        #expect(access(target, F_OK) != 0, "the link's target was not created")
    }

    /// An open that goes on past a failure of its own (the header's format versions cannot be
    /// marked 6 again beside a journal without records: the write fails, the open goes on, as
    /// docs/FORMAT.md §13, Recovery says) succeeds and leaves the thread's last failure as it was
    /// before the call: the message and errno of the caller's own earlier failure; so does the
    /// close that fails the same way.
    @Test func anOpenPastAFailureOfItsOwnKeepsTheThreadsMessage() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let state = try journalCrash(dir, [100])
        // the journal's records gone (zeros after its header): a header at format version 8
        // beside a journal with none, which the open marks 6 again
        var j = state.jsynced
        for i in 4096..<j.count { j[i] = 0 }
        let img = dir.path("image.cstore")
        try writeJournalImage(img, state.synced, j)
        #expect(state.synced[8] >= 7, "the header says the journal may hold commits")
        var missing: OpaquePointer?
        var opts = cs_options()
        #expect(cs_db_open(dir.path("missing.cstore"), &opts, &missing) == Int32(CS_NOTFOUND))
        let before = lastMessage(), beforeErrno = cs_errno()
        let io = JournalPathIO()
        io.failFormatWrite = true
        let (rc, h) = io.open(img)
        #expect(rc == Int32(CS_OK), "\(codeName(rc)) \(lastMessage())")
        #expect(lastMessage() == before, "after the open: \(lastMessage())")
        #expect(cs_errno() == beforeErrno)
        // the last close tries again, fails the same way (logged), and returns CS_OK
        if let h { #expect(cs_db_close(h) == Int32(CS_OK)) }
        #expect(lastMessage() == before, "after the close: \(lastMessage())")
        #expect(cs_errno() == beforeErrno)
    }
}
