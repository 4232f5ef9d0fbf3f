// The writer lock shared by the processes of one file (docs/ARCHITECTURE.md, Processes; the
// lock file's word at 2176, docs/FORMAT.md §9): a process killed at any step of taking it, or
// while it holds it, leaves it to the next writer, which recovers a commit the dead one left
// unpublished; a reader slot claimed again does not inherit a dead writer's hold; threads of
// several processes exclude each other; a write may end on another thread than it began on;
// a lock file of layout 5 in use is refused.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The hook point at which `killAtHookPoint` kills the process (set in an exit test's child).
nonisolated(unsafe) private var killPoint: Int32 = 0

/// A writer-lock hook (cs_test_set_writer_lock_hook) that kills the process at `killPoint`.
private let killAtHookPoint: @convention(c) (Int32) -> Void = { point in
    if point == killPoint { raise(SIGKILL) }
}

/// The files `pauseAtSteal` creates and then waits for (set in an exit test's child).
nonisolated(unsafe) private var pauseFiles = ("", "")

/// A writer-lock hook that, about to take the lock from a dead holder, creates the first of
/// `pauseFiles` and waits (at most 30 s) until the second exists.
private let pauseAtSteal: @convention(c) (Int32) -> Void = { point in
    guard point == Int32(CS_TEST_WLOCK_STEAL) else { return }
    close(open(pauseFiles.0, O_CREAT | O_WRONLY, 0o644))
    for _ in 0..<30_000 where access(pauseFiles.1, F_OK) != 0 { usleep(1000) }
}

/// In a child process: opens `path` (full durability, the commit journal), begins a write that
/// appends `rows` objects to table "T" and commits it, the process killed at writer-lock hook
/// point `point` (once armed: `armAfterBegin` arms it after the write began, so that only the
/// commit's points count). Exits with 20 when it was not killed.
private func childKilledAt(_ path: String, _ point: Int32, rows: Int, armAfterBegin: Bool) -> Never {
    alarm(60) // a child stuck in the lock ends (SIGALRM) instead of hanging the test
    var opts = cs_options()
    var h: OpaquePointer?
    guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
    killPoint = point
    if !armAfterBegin { cs_test_set_writer_lock_hook(killAtHookPoint) }
    var txn: OpaquePointer?
    guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn) == Int32(CS_OK), let txn else { exit(11) }
    if armAfterBegin { cs_test_set_writer_lock_hook(killAtHookPoint) }
    var table: UInt32 = 0
    guard cs_table_find(txn, "T", &table) == Int32(CS_OK) else { exit(12) }
    for _ in 0..<rows {
        var o = cs_obj()
        guard cs_obj_create(txn, table, &o) == Int32(CS_OK) else { exit(13) }
    }
    if point == 0 { raise(SIGKILL) } // killed holding the lock, inside its write
    _ = cs_txn_commit(txn)
    exit(20)
}

/// Begins a write on a thread of this process, appends one object to `table` and commits;
/// returns the commit's code, or nil when the write had not finished after `seconds` (the
/// thread is then left stuck in the writer lock).
private func writeOneWithin(_ h: OpaquePointer, _ table: UInt32, seconds: Double = 60) -> Int32? {
    let handle = Shared(h)
    let result = Shared<Int32?>(nil)
    let taker = Thread {
        var w: OpaquePointer?
        let rc = cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w)
        if rc == Int32(CS_OK), let w {
            var o = cs_obj()
            _ = cs_obj_create(w, table, &o)
            let c = cs_txn_commit(w)
            _ = cs_txn_end(w)
            result.value = c
        } else {
            result.value = rc
        }
    }
    taker.start()
    let deadline = Date().addingTimeInterval(seconds)
    while result.value == nil && Date() < deadline { usleep(1000) }
    return result.value
}

/// A file with table "T" (one Int column) holding `rows` objects.
private func makeFileT(_ path: String, rows: Int) throws -> (DB, UInt32) {
    let db = try DB(path)
    let t = try db.write { txn throws -> UInt32 in
        let t = try addTable(txn, "T")
        _ = try addColumn(txn, t, "v", CS_TYPE_INT)
        for _ in 0..<rows { _ = try createObj(txn, t) }
        return t
    }
    return (db, t)
}

/// The `OFD` byte-range lock command numbers (fcntl.h; not imported into Swift).
private let F_OFD_GETLK_: Int32 = 36, F_OFD_SETLK_: Int32 = 37

@Suite struct WriterLockTests {
    /// A writer killed after its header write, before it published its version (the lock
    /// file's committing flag set): the next writer, in this process, takes the lock from it,
    /// finds the flag and builds on the version in the header, so the dead writer's commit
    /// is kept and this process's commit follows it.
    @Test func aWriterKilledBeforePublishingIsRecoveredByTheNextWriter() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let (db, t) = try makeFileT(path, rows: 10)
        await #expect(processExitsWith: .signal(SIGKILL), "killed before publishing") { [path = path as String] in
            childKilledAt(path, Int32(CS_TEST_WLOCK_PUBLISH), rows: 5, armAfterBegin: true)
        }
        let rc = writeOneWithin(db.h, t)
        #expect(rc == Int32(CS_OK), "a write after the dead writer: \(rc.map(codeName) ?? "still waiting after 60 s")")
        guard rc != nil else { return } // the thread is stuck; leave the handle open
        try db.read { txn throws in
            #expect(try tableCount(txn, t) == 16, "10 + the dead writer's 5 (in the header) + 1")
        }
        db.verify()
        db.close()
        check(cs_file_verify(path))
    }

    /// A process killed at each step of taking the lock, or holding it inside its write: the
    /// next write of this process is not blocked, and what the dead one never committed is not
    /// seen.
    @Test(arguments: [("inside its write", Int32(0)), ("just after taking the lock", Int32(CS_TEST_WLOCK_TAKEN))])
    func aWriterKilledHoldingTheLockLeavesItToTheNextWriter(_ when: String, _ point: Int32) async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let (db, t) = try makeFileT(path, rows: 10)
        await #expect(processExitsWith: .signal(SIGKILL), "killed \(when)") { [path = path as String, point = point as Int32] in
            childKilledAt(path, point, rows: 100, armAfterBegin: false)
        }
        let rc = writeOneWithin(db.h, t)
        #expect(rc == Int32(CS_OK), "a write after the dead writer: \(rc.map(codeName) ?? "still waiting after 60 s")")
        guard rc != nil else { return }
        try db.read { txn throws in #expect(try tableCount(txn, t) == 11, "the dead writer's objects never appear") }
        db.verify()
        db.close()
        check(cs_file_verify(path))
    }

    /// A process dies holding the lock while a second has the file open (so the dead one's
    /// reader slot stays unclaimed); the second, writing, finds the owner dead and is killed
    /// about to take the lock from it (before its compare-and-swap) or just after (holding the
    /// lock it took): this process's write still gets the lock.
    @Test(arguments: [("before its steal", Int32(CS_TEST_WLOCK_STEAL)), ("after its steal", Int32(CS_TEST_WLOCK_TAKEN))])
    func aWriterKilledTakingTheLockFromADeadOneLeavesItToTheNextWriter(_ when: String, _ point: Int32) async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let (db, t) = try makeFileT(path, rows: 10)
        let holds = dir.path("a-holds"), bOpen = dir.path("b-open")
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await #expect(processExitsWith: .signal(SIGKILL), "the first dies holding the lock") { [path = path as String, holds = holds as String, bOpen = bOpen as String] in
                    alarm(60)
                    var opts = cs_options()
                    var h: OpaquePointer?
                    guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
                    var txn: OpaquePointer?
                    guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn) == Int32(CS_OK), txn != nil else { exit(11) }
                    close(open(holds, O_CREAT | O_WRONLY, 0o644))
                    for _ in 0..<30_000 where access(bOpen, F_OK) != 0 { usleep(1000) }
                    usleep(50_000) // (the second most likely waiting for the lock by now)
                    raise(SIGKILL)
                    exit(20)
                }
            }
            group.addTask {
                await #expect(processExitsWith: .signal(SIGKILL), "the second killed \(when)") { [path = path as String, holds = holds as String, bOpen = bOpen as String, point = point as Int32] in
                    for _ in 0..<30_000 where access(holds, F_OK) != 0 { usleep(1000) }
                    alarm(60)
                    var opts = cs_options()
                    var h: OpaquePointer?
                    guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
                    killPoint = point
                    cs_test_set_writer_lock_hook(killAtHookPoint)
                    close(open(bOpen, O_CREAT | O_WRONLY, 0o644))
                    var txn: OpaquePointer?
                    _ = cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn)
                    exit(20)
                }
            }
        }
        let rc = writeOneWithin(db.h, t)
        #expect(rc == Int32(CS_OK), "a write after both: \(rc.map(codeName) ?? "still waiting after 60 s")")
        guard rc != nil else { return }
        try db.read { txn throws in #expect(try tableCount(txn, t) == 11) }
        db.verify()
        db.close()
        check(cs_file_verify(path))
    }

    /// A process dies holding the lock; another process opens the file and gets the dead one's
    /// reader slot (the lowest free one), and stays alive without writing. The slot's byte
    /// lock is held again, by a process that never took the writer lock: this process's write
    /// must not wait for it.
    @Test func aReaderSlotClaimedAgainDoesNotInheritADeadWritersLock() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let (db, t) = try makeFileT(path, rows: 10)
        await #expect(processExitsWith: .signal(SIGKILL), "a writer dies holding the lock") { [path = path as String] in
            childKilledAt(path, 0, rows: 10, armAfterBegin: false)
        }
        let log = dir.path("pin.log")
        let holder = try Child(["pin-idle", path, log], in: dir)
        defer { holder.killNow() }
        let deadline = Date().addingTimeInterval(30)
        while !readText(log).hasPrefix("idle ") && holder.process.isRunning && Date() < deadline { usleep(2000) }
        #expect(readText(log).hasPrefix("idle "), "the second process opened the file: \(holder.summary)")
        var pins = [cs_pin_info](repeating: cs_pin_info(), count: 8)
        var n = 0
        check(cs_db_pins(db.h, &pins, 8, &n))
        #expect(n == 1 && pins[0].pid == UInt32(holder.pid), "one other process has the file open: \(n)")
        let rc = writeOneWithin(db.h, t)
        #expect(rc == Int32(CS_OK), "a write with the dead writer's slot in use again: \(rc.map(codeName) ?? "still waiting after 60 s")")
        guard rc != nil else { return }
        try db.read { txn throws in #expect(try tableCount(txn, t) == 11) }
        db.verify()
        db.close()
    }

    /// As above, but a waiter of another process sets the lock's waiters bit between the
    /// claimer's look at the word and its clear (a hook in the claiming process stands for it):
    /// the claimer clears the dead holder's token all the same.
    @Test func aClaimerRacingAWaiterStillClearsADeadWritersLock() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let (db, t) = try makeFileT(path, rows: 10)
        await #expect(processExitsWith: .signal(SIGKILL), "a writer dies holding the lock") { [path = path as String] in
            childKilledAt(path, 0, rows: 10, armAfterBegin: false)
        }
        let log = dir.path("claim.log")
        let claimer = try Child(["claim-race", path, log], in: dir)
        defer { claimer.killNow() }
        let deadline = Date().addingTimeInterval(30)
        while !readText(log).hasPrefix("idle ") && claimer.process.isRunning && Date() < deadline { usleep(2000) }
        #expect(readText(log) == "idle 1\n", "the claimer got the dead writer's slot and raced: \(readText(log)) \(claimer.summary)")
        let rc = writeOneWithin(db.h, t)
        #expect(rc == Int32(CS_OK), "a write with the dead writer's slot in use again: \(rc.map(codeName) ?? "still waiting after 60 s")")
        guard rc != nil else { return }
        try db.read { txn throws in #expect(try tableCount(txn, t) == 11) }
        db.verify()
        db.close()
    }

    /// A process dies holding the lock while a second has the file open; the second finds it
    /// dead and stops just before its compare-and-swap; meanwhile a third opens the file, gets
    /// the dead one's reader slot and takes the lock. The second's swap, from the dead holder's token, must fail (the third's
    /// token names the same slot but another claim): it gets the lock only after the third's
    /// commit.
    @Test func aLateStealerDoesNotTakeTheLockFromTheSlotsNextHolder() async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let (db, t) = try makeFileT(path, rows: 10)
        let pHolds = dir.path("p-holds"), xOpen = dir.path("x-open")
        let atSteal = dir.path("x-at-steal"), qHolds = dir.path("q-holds"), qDone = dir.path("q-done")
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await #expect(processExitsWith: .signal(SIGKILL), "the first dies holding the lock") { [path = path as String, pHolds = pHolds as String, xOpen = xOpen as String] in
                    alarm(60)
                    var opts = cs_options()
                    var h: OpaquePointer?
                    guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
                    var txn: OpaquePointer?
                    guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn) == Int32(CS_OK), txn != nil else { exit(11) }
                    close(open(pHolds, O_CREAT | O_WRONLY, 0o644))
                    for _ in 0..<30_000 where access(xOpen, F_OK) != 0 { usleep(1000) }
                    raise(SIGKILL)
                    exit(20)
                }
            }
            group.addTask {
                await #expect(processExitsWith: .success, "the late stealer waits for the third's commit") { [path = path as String, pHolds = pHolds as String, xOpen = xOpen as String, atSteal = atSteal as String, qHolds = qHolds as String, qDone = qDone as String] in
                    alarm(60)
                    for _ in 0..<30_000 where access(pHolds, F_OK) != 0 { usleep(1000) }
                    var opts = cs_options()
                    var h: OpaquePointer?
                    guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
                    close(open(xOpen, O_CREAT | O_WRONLY, 0o644)) // (in a slot of its own: the first is alive)
                    // begins once the first is dead (its slot's byte lock, slot 1, free: FORMAT
                    // §9), so that nobody waited on its token and the swap is from exactly it
                    let lfd = open(path + ".lock", O_RDONLY)
                    for _ in 0..<30_000 {
                        var fl = flock()
                        fl.l_type = Int16(F_WRLCK)
                        fl.l_whence = Int16(SEEK_SET)
                        fl.l_start = (1 << 30) + 64 + 1
                        fl.l_len = 1
                        if fcntl(lfd, F_OFD_GETLK_, &fl) == 0 && fl.l_type == Int16(F_UNLCK) { break }
                        usleep(1000)
                    }
                    close(lfd)
                    pauseFiles = (atSteal, qHolds)
                    cs_test_set_writer_lock_hook(pauseAtSteal)
                    var txn: OpaquePointer?
                    guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn) == Int32(CS_OK), let txn else { exit(11) }
                    if access(qDone, F_OK) != 0 { exit(30) } // two holders at once
                    guard cs_txn_end(txn) == Int32(CS_OK) else { exit(12) }
                    exit(0)
                }
            }
            group.addTask {
                await #expect(processExitsWith: .success, "the third takes the lock in the dead one's slot") { [path = path as String, atSteal = atSteal as String, qHolds = qHolds as String, qDone = qDone as String] in
                    alarm(60)
                    for _ in 0..<30_000 where access(atSteal, F_OK) != 0 { usleep(1000) }
                    var opts = cs_options()
                    var h: OpaquePointer?
                    guard cs_db_open(path, &opts, &h) == Int32(CS_OK), let h else { exit(10) }
                    var txn: OpaquePointer?
                    guard cs_txn_begin(h, Int32(CS_TXN_WRITE), &txn) == Int32(CS_OK), let txn else { exit(11) }
                    close(open(qHolds, O_CREAT | O_WRONLY, 0o644))
                    usleep(300_000)
                    close(open(qDone, O_CREAT | O_WRONLY, 0o644))
                    guard cs_txn_commit(txn) == Int32(CS_OK), cs_txn_end(txn) == Int32(CS_OK) else { exit(12) }
                    exit(0)
                }
            }
        }
        let rc = writeOneWithin(db.h, t)
        #expect(rc == Int32(CS_OK), "a write after both: \(rc.map(codeName) ?? "still waiting after 60 s")")
        guard rc != nil else { return }
        db.verify()
        db.close()
        check(cs_file_verify(path))
    }

    /// Three processes of four threads each and four threads of this process add 1 to one
    /// counter in write transactions of their own, while 20 processes in turn take the lock,
    /// add 1000 and are killed before their commit: no increment is lost and none of the
    /// killed ones' appears.
    @Test func threadsOfSeveralProcessesLoseNoIncrement() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let perThread = 300
        let children = try (1...3).map { _ in try Child(["count", path, "4", "\(perThread)"], in: dir) }
        // processes that die holding the lock while the others count, one after another (each
        // in the slot of the one before): the counters' waiters take the lock from them
        let killed = Shared<[String]>([])
        let killers = Thread {
            for _ in 0..<20 {
                guard let k = try? Child(["killer", path], in: dir) else { return }
                k.wait(seconds: 60)
                killed.mutate { $0.append(k.killedBySIGKILL ? "killed" : k.summary) }
            }
        }
        killers.start()
        let db = try DB(path, flags: 0)
        var counter: UInt32 = 0, key: Int64 = 0
        try db.read { txn throws in
            try must(cs_table_find(txn, "Counter", &counter), "find Counter")
            var it = cs_iter()
            var o = cs_obj()
            try must(cs_iter_init(&it, txn, counter), "iter")
            try must(cs_iter_next(&it, &o), "the counter")
            key = o.key
        }
        let handle = Shared(db.h)
        let failures = Shared(0)
        let done = DispatchSemaphore(value: 0)
        let threads = (0..<4).map { [counter, key] _ in
            Thread {
                defer { done.signal() }
                for _ in 0..<perThread {
                    var w: OpaquePointer?
                    guard cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w) == Int32(CS_OK), let w else {
                        failures.mutate { $0 += 1 }
                        return
                    }
                    var o = cs_obj(), v: Int64 = 0
                    if cs_obj_open(w, counter, key, &o) != Int32(CS_OK) || cs_obj_get_int(&o, 0, &v) != Int32(CS_OK)
                        || cs_obj_set_int(&o, 0, v + 1) != Int32(CS_OK) || cs_txn_commit(w) != Int32(CS_OK) {
                        failures.mutate { $0 += 1 }
                    }
                    _ = cs_txn_end(w)
                }
            }
        }
        for th in threads { th.start() }
        for c in children {
            #expect(c.wait(seconds: 240), "a counting process did not finish in 240 s")
            #expect(c.succeeded, "\(c.summary)")
        }
        for _ in threads { #expect(done.wait(timeout: .now() + 240) == .success, "a thread of this process did not finish in 240 s") }
        while !killers.isFinished { usleep(2000) }
        #expect(killed.value == Array(repeating: "killed", count: 20), "every killer died holding the lock")
        #expect(failures.value == 0)
        try db.read { txn throws in
            var o = cs_obj(), v: Int64 = 0
            try must(cs_obj_open(txn, counter, key, &o), "open the counter")
            try must(cs_obj_get_int(&o, 0, &v), "n")
            #expect(v == Int64(16 * perThread), "3 processes x 4 threads + 4 threads, \(perThread) increments each")
        }
        db.verify()
        db.close()
    }

    /// Hand-offs between processes are woken, not found by the holder-liveness poll: with the
    /// poll at 300 s in two processes of four threads each, they and this process's thread, all
    /// contending, finish 900 commits well within 150 s (seconds, even under a sanitizer on a
    /// busy machine); a release that did not wake a sleeping waiter would stall it for 300 s.
    /// (This process keeps its 10 ms: the poll is process-wide, and the tests beside this one
    /// find dead holders by it.)
    @Test func waitersOfOtherProcessesAreWokenByTheRelease() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let start = Date()
        let children = try (1...2).map { _ in try Child(["count", path, "4", "100", "300000"], in: dir) }
        defer { for c in children where c.process.isRunning { c.killNow() } }
        let db = try DB(path, flags: 0)
        var counter: UInt32 = 0
        try db.read { txn throws in try must(cs_table_find(txn, "Counter", &counter), "find Counter") }
        for _ in 0..<100 {
            try db.write { txn throws in
                var it = cs_iter()
                var o = cs_obj(), v: Int64 = 0
                try must(cs_iter_init(&it, txn, counter), "iter")
                try must(cs_iter_next(&it, &o), "the counter")
                try must(cs_obj_get_int(&o, 0, &v), "n")
                try must(cs_obj_set_int(&o, 0, v + 1), "set n")
            }
        }
        for c in children {
            let took = Date().timeIntervalSince(start)
            #expect(c.wait(seconds: 150 - took), "900 contended commits did not finish in 150 s: a waiter slept through a release (its poll is 300 s)")
            #expect(c.succeeded, "\(c.summary)")
        }
        try db.read { txn throws in
            var it = cs_iter()
            var o = cs_obj(), v: Int64 = 0
            try must(cs_iter_init(&it, txn, counter), "iter")
            try must(cs_iter_next(&it, &o), "the counter")
            try must(cs_obj_get_int(&o, 0, &v), "n")
            #expect(v == 900)
        }
        db.close()
    }

    /// The lock belongs to the process, not to a thread: a write begun on one thread and
    /// committed and ended on another (an actor's write resumed elsewhere) releases it, and
    /// another process then writes.
    @Test func aWriteEndedOnAnotherThreadReleasesTheLockForOtherProcesses() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let db = try DB(path, flags: 0)
        let txn = Shared<OpaquePointer?>(nil)
        let handle = Shared(db.h)
        let began = Thread {
            var w: OpaquePointer?
            if cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w) == Int32(CS_OK) { txn.value = w }
        }
        began.start()
        while !began.isFinished { usleep(1000) }
        guard txn.value != nil else {
            Issue.record("cs_txn_begin failed")
            return
        }
        let codes = Shared<[Int32]>([])
        let ended = Thread { codes.value = [cs_txn_commit(txn.value!), cs_txn_end(txn.value!)] }
        ended.start()
        while !ended.isFinished { usleep(1000) }
        #expect(codes.value == [Int32(CS_OK), Int32(CS_OK)])
        try runChild(["increment", path, "1", "3"], in: dir, seconds: 30)
        try db.read { txn throws in
            var counter: UInt32 = 0
            try must(cs_table_find(txn, "Counter", &counter), "find Counter")
            #expect(try tableCount(txn, counter) == 1)
        }
        db.close()
    }

    /// A writer that starts waiting after the holder died looks at the holder's slot at once,
    /// not at its first poll: a process that opened the file while the holder lived (so its
    /// open did not claim the holder's slot, which clears a dead holder's lock) and writes
    /// after the holder was killed, with the poll at 5 s, takes the lock well before 5 s.
    @Test func aWaiterFindsADeadHolderAtOnce() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let holdLog = dir.path("hold.log"), log = dir.path("write.log"), go = dir.path("go")
        let holder = try Child(["hold", path, holdLog], in: dir)
        defer { if holder.process.isRunning { holder.killNow() } }
        try #require(waitUntil(seconds: 30) { logLines(holdLog) == ["holding"] }, "\(holder.summary)")
        let writer = try Child(["write-after", path, log, go, "5000"], in: dir)
        defer { if writer.process.isRunning { writer.killNow() } }
        try #require(waitUntil(seconds: 30) { logLines(log) == ["open"] }, "write-after did not open the file")
        holder.killNow()
        #expect(FileManager.default.createFile(atPath: go, contents: nil))
        #expect(writer.wait(seconds: 30), "write-after did not finish")
        #expect(writer.succeeded, "\(writer.summary)")
        // from asking for the lock to having it (the child's stamps on the machine's monotonic
        // clock: its commit and a busy machine's scheduling are not in it); at its poll it would
        // be 5 s, so half a poll tells the two apart
        func stamp(_ what: String) -> UInt64? {
            logLines(log).first { $0.hasPrefix(what + " ") }.flatMap { UInt64($0.dropFirst(what.count + 1)) }
        }
        guard let begun = stamp("begin"), let took = stamp("took") else {
            Issue.record("write-after's log: \(logLines(log))")
            return
        }
        let waited = (Double(took) - Double(begun)) / 1e9
        #expect(waited < 2.5, "the write after a dead holder waited \(waited) s for the lock (the poll is 5 s)")
    }

    /// Waiters asleep when the holder dies notice it at their poll (the bound, FORMAT.md §9); the
    /// one that takes the lock from the dead holder wakes nobody then, and needs not: it takes
    /// it with the waiters bit set, so its release wakes the others at once. Two processes ask
    /// for the lock while its holder lives: the first with the poll at 60 s, the second at
    /// 1.5 s. After the holder is killed the second finds it dead at its poll (or at once, if
    /// it asked late), takes the lock and commits; the first, asleep on the dead holder's word,
    /// takes it as soon as the second released it (without the bit it would sleep on until its
    /// own poll, a minute after it asked). The children stamp when they asked for the lock,
    /// took it and released it on the machine's monotonic clock, so that the time they take to
    /// start, commit and exit is not measured.
    @Test func theWaitersOfADeadHolderFollowTheOneThatTookItsLock() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let holdLog = dir.path("hold.log")
        let holder = try Child(["hold", path, holdLog], in: dir)
        defer { if holder.process.isRunning { holder.killNow() } }
        try #require(waitUntil(seconds: 30) { logLines(holdLog) == ["holding"] }, "\(holder.summary)")
        // [0]: the long poll, asks first; [1]: the short poll, asks second
        let logs = [dir.path("long.log"), dir.path("short.log")], gos = [dir.path("long.go"), dir.path("short.go")]
        let polls = ["60000", "1500"]
        var waiters: [Child] = []
        defer { for w in waiters where w.process.isRunning { w.killNow() } }
        for i in 0..<2 {
            waiters.append(try Child(["write-after", path, logs[i], gos[i], polls[i]], in: dir))
            try #require(waitUntil(seconds: 60) { logLines(logs[i]) == ["open"] }, "\(waiters[i].summary)")
        }
        func stamp(_ i: Int, _ what: String) -> Double? {
            guard let line = logLines(logs[i]).first(where: { $0.hasPrefix(what + " ") }),
                  let ns = UInt64(line.dropFirst(what.count + 1)) else { return nil }
            return Double(ns) / 1e9
        }
        for i in 0..<2 {
            #expect(FileManager.default.createFile(atPath: gos[i], contents: nil))
            try #require(waitUntil(seconds: 30) { stamp(i, "begin") != nil }, "\(waiters[i].summary)")
        }
        usleep(100_000) // (both asleep, most likely; either way the order below holds)
        let killed = Double(monotonicNanoseconds()) / 1e9
        holder.killNow()
        for w in waiters {
            #expect(w.wait(seconds: 120), "a waiter did not finish in 120 s")
            #expect(w.succeeded, "\(w.summary)")
        }
        guard let longTook = stamp(0, "took"), let shortTook = stamp(1, "took"), let shortReleased = stamp(1, "released") else {
            Issue.record("the waiters' stamps: \(logLines(logs[0])) \(logLines(logs[1]))")
            return
        }
        #expect(longTook > killed && shortTook > killed, "a waiter took the lock before its holder was killed")
        #expect(shortTook < longTook, "the waiter with the long poll took the lock first")
        // at its poll after the kill (a poll, and time to wake and look)
        #expect(shortTook - killed < 3.0, "the short poll's waiter took the lock \(shortTook - killed) s after the kill (poll 1.5 s)")
        // woken by the release: milliseconds (the second stamps its release after making it, so a
        // hold-up there only makes this smaller); left asleep: its poll, a minute after it asked
        #expect(longTook - shortReleased < 5, "the long poll's waiter took the lock \(longTook - shortReleased) s after the other released it: not woken by the release")
        let db = try DB(path, flags: 0)
        try db.read { txn throws in
            #expect(try ChildSchema(txn).counterValues(txn).n == 2, "each waiter's one increment; none of the dead holder's")
        }
        db.close()
    }

    /// The threads' write lock (docs/ARCHITECTURE.md, Transactions) is released by whichever
    /// thread ends the write: two pipelines of this process each begin a write on one thread
    /// and hand it to another, which adds an object, commits and ends it, many times at once.
    /// Every write lands and none overlaps another (the objects count up; the file verifies),
    /// and under ThreadSanitizer (`make tsan`) the release from the other thread is a defined
    /// hand-over (a pthread mutex unlocked by a thread that did not lock it is reported).
    @Test func writesEndedOnOtherThreadsTakeTurns() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (db, t) = try makeFileT(dir.path(), rows: 0)
        let rounds = underSanitizer ? 100 : 400
        let handle = Shared(db.h)
        let failures = Shared<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        for pipeline in 0..<2 {
            let box = Shared<OpaquePointer?>(nil)
            let handed = DispatchSemaphore(value: 0), ended = DispatchSemaphore(value: 0)
            let beginner = Thread {
                for r in 0..<rounds {
                    var w: OpaquePointer?
                    let rc = cs_txn_begin(handle.value, Int32(CS_TXN_WRITE), &w)
                    if rc != Int32(CS_OK) { failures.mutate { $0.append("\(pipeline)/\(r) begin: \(codeName(rc))") } }
                    box.value = rc == Int32(CS_OK) ? w : nil
                    handed.signal()
                    ended.wait()
                }
                finished.signal()
            }
            let ender = Thread {
                for r in 0..<rounds {
                    handed.wait()
                    if let w = box.value {
                        var o = cs_obj()
                        var codes = [cs_obj_create(w, t, &o), cs_obj_set_int(&o, 0, Int64(pipeline))]
                        codes.append(cs_txn_commit(w))
                        codes.append(cs_txn_end(w))
                        if codes.contains(where: { $0 != Int32(CS_OK) }) {
                            failures.mutate { $0.append("\(pipeline)/\(r): \(codes.map(codeName))") }
                        }
                    }
                    ended.signal()
                }
                finished.signal()
            }
            beginner.start()
            ender.start()
        }
        for _ in 0..<4 { #expect(finished.wait(timeout: .now() + 120) == .success, "a pipeline did not finish in 120 s") }
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
        try db.read { txn throws in #expect(try tableCount(txn, t) == UInt64(2 * rounds)) }
        db.verify()
        db.close()
    }

    /// A lock file of layout 5 (a library whose writer lock was a byte-range lock) that
    /// another process has open is refused with CS_VERSION: the two libraries would not
    /// exclude each other's writers. Once that process is gone the first opener makes the
    /// lock file anew, of layout 6.
    @Test func aLayout5LockFileInUseIsRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let (db, _) = try makeFileT(path, rows: 1)
        db.close()
        let lockPath = path + ".lock"
        var image = [UInt8](repeating: 0, count: 4096 + 64 * 512)
        image.replaceSubrange(0..<8, with: Array("CSLOCK\r\n".utf8))
        image[8] = 5
        image[12] = 0; image[13] = 2 // 512 slots
        #expect(FileManager.default.createFile(atPath: lockPath, contents: Data(image)))
        // the other process: a descriptor of its own holding the users' byte shared
        let other = open(lockPath, O_RDWR | O_CLOEXEC) // a child spawned meanwhile by another test must not inherit its lock
        #expect(other >= 0)
        var fl = flock()
        fl.l_type = Int16(F_RDLCK)
        fl.l_whence = Int16(SEEK_SET)
        fl.l_start = (1 << 30) + 1
        fl.l_len = 1
        #expect(fcntl(other, F_OFD_SETLK_, &fl) == 0)
        let (rc, h) = openRaw(path, flags: 0)
        #expect(rc == Int32(CS_VERSION), "\(codeName(rc)): \(lastMessage())")
        if let h { _ = cs_db_close(h) }
        close(other)
        let again = try DB(path, flags: 0)
        let fd = open(lockPath, O_RDONLY)
        var layout: UInt32 = 0
        #expect(pread(fd, &layout, 4, 8) == 4)
        close(fd)
        #expect(layout == 6, "the lock file made anew")
        again.close()
    }
}
