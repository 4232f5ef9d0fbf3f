// A handle inherited across fork (docs/ARCHITECTURE.md, Processes): a child forked while a
// process had the file open may only close it, and its close releases the child's own memory
// and descriptors and nothing the parent shares: the parent's reader slot and pin, its writer
// lock, the byte-range locks on their common open file description, the lock file and the file
// itself. Beginning, committing or waiting on the inherited handle is refused with CS_MISUSE.
// The process that forks is `cstore-testchild fork-close` (single-threaded; this test process
// is not, and never forks).

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `count` write transactions through `db`, each adding 1 to the counter's n and i to its sum
/// with a row of writer `writer`, sequence i (i = first, first + 1, ...): `cstore-testchild
/// increment`'s writes, which its `check` reads.
private func increments(_ db: DB, writer: Int64, first: Int64, count: Int) throws {
    for i in first..<(first + Int64(count)) {
        try db.write { txn throws in
            let s = try ChildSchema(txn)
            var c = try openObj(txn, s.counter, s.counterKey)
            try must(cs_obj_set_int(&c, s.n, try getInt(&c, s.n) + 1), "set n")
            try must(cs_obj_set_int(&c, s.sum, try getInt(&c, s.sum) + i), "set sum")
            var r = try createObj(txn, s.rows)
            try must(cs_obj_set_int(&r, s.writer, writer), "set writer")
            try must(cs_obj_set_int(&r, s.seq, i), "set seq")
        }
    }
}

/// The first line of `log` starting with `prefix`, waiting up to 30 s for it.
private func awaitLine(_ log: String, _ prefix: String, _ child: Child) -> String? {
    var found: String?
    _ = waitUntil(seconds: 30) {
        found = logLines(log).first { $0.hasPrefix(prefix) }
        return found != nil || !child.process.isRunning
    }
    if found == nil { found = logLines(log).first { $0.hasPrefix(prefix) } }
    return found
}

/// What a child that may still run said on stderr (Child.summary is for a child that ended).
private func said(_ child: Child) -> String {
    "\(child.args.joined(separator: " ")): \(child.process.isRunning ? "running" : child.summary); stderr: \(child.stderr)"
}

@Suite struct ForkedHandleTests {
    /// A child holding a read transaction forks; the forked process ends that transaction and
    /// closes the handle. The child's slot still pins its version, 300 commits of this process
    /// reuse none of the space its snapshot reads (it reads the same counter and rows after
    /// them), and a new process opens the file (the set-up lock was not left held).
    @Test func aForkedProcessClosingAnInheritedHandleLeavesTheParentsSnapshot() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let db = try DB(path, flags: 0)
        try increments(db, writer: 7, first: 1, count: 20)
        let log = dir.path("fork.log"), stop = dir.path("stop")
        let child = try Child(["fork-close", path, log, "read", stop], in: dir)
        defer { if child.process.isRunning { child.killNow() } }
        let ready = awaitLine(log, "ready", child)
        try #require(ready != nil, "\(said(child))")
        #expect(logLines(log).first == "forked 0", "the forked process's calls: \(logLines(log)); \(said(child))")
        let pinned = UInt64(ready!.split(separator: " ")[1]) ?? 0
        var pins = [cs_pin_info](repeating: cs_pin_info(), count: 8)
        var n = 0
        check(cs_db_pins(db.h, &pins, 8, &n))
        let mine = pins.prefix(min(n, 8)).filter { $0.pid == UInt32(child.pid) }
        #expect(mine.count == 1 && mine.first?.oldest == pinned,
                "the child's slot after the forked close: \(mine.map { "pid \($0.pid) oldest \($0.oldest) state \($0.state)" }), pinned \(pinned)")
        try increments(db, writer: 7, first: 21, count: 300)
        try runChild(["increment", path, "8", "3"], in: dir, seconds: 30)
        #expect(FileManager.default.createFile(atPath: stop, contents: nil))
        #expect(child.wait(seconds: 60), "fork-close did not finish")
        #expect(child.succeeded, "\(child.summary)")
        try db.read { txn throws in
            let s = try ChildSchema(txn)
            #expect(try s.counterValues(txn).n == 20 + 300 + 3 + 1)
        }
        db.verify()
        db.close()
    }

    /// A child holding the writer lock forks; the forked process's commit of the inherited write
    /// is refused, and its end of that write and its close leave the lock the child's: a write
    /// of this process waits until the child commits through it.
    @Test func aForkedProcessEndingAnInheritedWriteLeavesTheLockToTheParent() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let db = try DB(path, flags: 0)
        let log = dir.path("fork.log"), stop = dir.path("stop")
        let child = try Child(["fork-close", path, log, "write", stop], in: dir)
        defer { if child.process.isRunning { child.killNow() } }
        try #require(awaitLine(log, "ready", child) != nil, "\(said(child))")
        #expect(logLines(log).first == "forked 0", "the forked process's calls: \(logLines(log)); \(said(child))")
        let done = Shared(false)
        let handle = Shared(db.h)
        let writer = Thread {
            var t: OpaquePointer?
            if cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &t) == Int32(CS_OK), let t {
                _ = cs_txn_commit(t)
                _ = cs_txn_end(t)
            }
            done.value = true
        }
        writer.start()
        usleep(500_000)
        #expect(!done.value, "a write of this process got the writer lock the child holds")
        #expect(FileManager.default.createFile(atPath: stop, contents: nil))
        #expect(child.wait(seconds: 60), "fork-close did not finish")
        #expect(child.succeeded, "\(child.summary)")
        #expect(waitUntil(seconds: 30) { done.value }, "this process's write after the child's")
        try db.read { txn throws in
            let s = try ChildSchema(txn)
            #expect(try s.counterValues(txn).n == 2, "the child's two commits")
        }
        db.verify()
        db.close()
    }

    /// The parent closes first, while the forked process still holds the inherited handle and
    /// a handle of its own: the forked process's copies of the lock file's descriptor and
    /// mapping were dropped at the fork, so the parent's close leaves no lock held by their
    /// shared description: another process opens the file at once, and the forked process's
    /// own close and its close of the inherited handle return.
    @Test func theParentClosingFirstLeavesNoLockToItsForkedChild() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let log = dir.path("fork.log"), go = dir.path("go")
        let child = try Child(["fork-parent-first", path, log, go], in: dir)
        defer { if child.process.isRunning { child.killNow() } }
        try #require(awaitLine(log, "closed", child) != nil, "\(said(child))")
        try runChild(["increment", path, "8", "3"], in: dir, seconds: 20)
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        #expect(child.wait(seconds: 60), "fork-parent-first did not finish")
        #expect(child.succeeded, "\(child.summary)")
        #expect(logLines(log) == ["closed", "forked 0"], "the forked process's closes: \(logLines(log))")
    }

    /// A process killed holding the writer lock while a process it forked lives: the forked
    /// process holds nothing of the dead one's (its copies of the lock file's descriptor and
    /// mapping were dropped at the fork), so the dead holder's slot is seen dead and the next
    /// writer takes the lock over.
    @Test func aForkedChildDoesNotKeepADeadHoldersLockAlive() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let log = dir.path("hold.log")
        let holder = try Child(["hold-fork", path, log], in: dir)
        try #require(awaitLine(log, "holding", holder) != nil, "\(said(holder))")
        let forked = pid_t(logLines(log)[0].split(separator: " ")[1]) ?? 0
        #expect(forked > 0)
        // (Process learns of the holder's end only once the forked process, which inherited the
        // descriptors Process gave the holder, is gone too: the holder is killed without waiting)
        kill(holder.pid, SIGKILL)
        defer {
            if forked > 0 { kill(forked, SIGKILL) }
            holder.wait(seconds: 10)
        }
        usleep(100_000)
        try runChild(["count", path, "1", "1"], in: dir, seconds: 20)
        let db = try DB(path, flags: 0)
        try db.read { txn throws in
            #expect(try ChildSchema(txn).counterValues(txn).n == 1)
        }
        db.close()
    }

    /// A child alone with a file opened with CS_DURABILITY_MEMORY forks; the forked process's
    /// close does not take itself for the last user: the file and its lock file stay, the
    /// child's byte-range locks stay held and the join lock free, and another process opens the
    /// file and commits.
    @Test func aForkedProcessClosingAnInheritedHandleRemovesNoFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let log = dir.path("fork.log"), stop = dir.path("stop")
        let child = try Child(["fork-close", path, log, "memory", stop], in: dir)
        defer { if child.process.isRunning { child.killNow() } }
        try #require(awaitLine(log, "ready", child) != nil, "\(said(child))")
        #expect(logLines(log).prefix(2) == ["forked 0", "files 1 1"], "\(logLines(log)); \(said(child))")
        // the child's byte-range locks, seen from a descriptor of this process (FORMAT.md §9):
        // closing the forked process's copy of the descriptor dropped none of them, and the
        // join lock is free
        let fd = open(path + ".lock", O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        func held(_ at: Int) -> Bool {
            var fl = flock()
            fl.l_type = Int16(F_WRLCK)
            fl.l_whence = Int16(SEEK_SET)
            fl.l_start = off_t(at)
            fl.l_len = 1
            return fcntl(fd, 36 /* F_OFD_GETLK */, &fl) == 0 && fl.l_type != Int16(F_UNLCK)
        }
        #expect(held((1 << 30) + 1), "the users' byte: the child has the file open")
        #expect(!held(1 << 30), "the join lock: nobody joins or leaves")
        #expect((0..<512).filter { held((1 << 30) + 64 + $0) }.count == 1, "the child's reader slot")
        close(fd)
        try runChild(["increment", path, "8", "3"], in: dir, seconds: 30)
        #expect(FileManager.default.createFile(atPath: stop, contents: nil))
        #expect(child.wait(seconds: 60), "fork-close did not finish")
        #expect(child.succeeded, "\(child.summary)")
    }
}
