// cstore-testchild: the child process that multi-process and crash tests start and kill.
// Usage: cstore-testchild COMMAND [ARGS...]; see the commands below.
//
//   version                         prints the library version
//   setup PATH                      creates the schema the commands below share (tables
//                                   "Counter" with one object and "Rows")
//   increment PATH ID N             N write transactions; each adds 1 to the counter and appends
//                                   a row (ID, sequence 1...N); checks the invariants it reads
//   count PATH THREADS N [POLL_MS]  THREADS threads of one handle each make N write transactions
//                                   that add 1 to the counter's n (the writer lock shared by the
//                                   threads of several processes); POLL_MS: how often a waiter
//                                   looks whether the lock's holder died (cs_test_set_writer_lock_poll)
//   killer PATH                     begins a write that adds 1000 to the counter's n and is
//                                   SIGKILLed 0-3 ms later, holding the writer lock, uncommitted
//   claim-race PATH LOG             opens PATH with a writer-lock hook that, when the claim of
//                                   its reader slot finds the writer lock naming that slot (a dead
//                                   holder's), sets the lock's waiters bit first (as a waiter of
//                                   another process may); writes "idle RACED" to LOG (RACED: 1
//                                   when the hook ran) and sleeps until killed
//   check PATH STOPFILE             reads snapshots until STOPFILE exists, checking in each that
//                                   the counter equals the row count and that every writer's
//                                   sequences are 1...m; prints "snapshots S" at the end
//   commit-loop PATH LOG [MAX]      commits transaction k = counter + 1, k + 1, ... (full
//                                   durability), writing "about k" to LOG before each commit and
//                                   "committed k" after it; "ready" once the file is open
//   hold PATH LOG                   begins a write transaction (takes the writer lock), writes
//                                   "holding" to LOG and sleeps until killed
//   write-after PATH LOG GO POLL_MS opens PATH with the writer lock's poll at POLL_MS
//                                   (cs_test_set_writer_lock_poll), writes "open" to LOG, waits
//                                   until the file GO exists, then adds 1 to the counter's n in one
//                                   write transaction and writes "wrote MS" to LOG: the
//                                   milliseconds from seeing GO to the commit's end. Also
//                                   "begin NS" before it asks for the write, "took NS" when it
//                                   has it and "released NS" when it ended it: NS is the
//                                   system-wide CLOCK_MONOTONIC in nanoseconds, which the
//                                   test's process reads alike
//   pin PATH LOG                    begins a read transaction, writes "pinned VERSION" to LOG and
//                                   sleeps until killed
//   shrink-churn PATH LOG CALM STOP opens PATH with CS_OPEN_SHRINK and commits to its table
//                                   "S" (columns v: Int, s: String): while the file CALM does not
//                                   exist each commit sets s of 20 random objects (the churn),
//                                   after that each sets v of one (a quiet service); until STOP
//                                   exists. Writes "churn K" or "calm K" to LOG after commit K
//   commit-sparing PATH SLEEPERS    opens PATH with a notifier waiting in a thread and, once
//                                   the lock file counts SLEEPERS threads asleep (this one among
//                                   them), makes one commit sparing it (cs_txn_commit_sparing),
//                                   then ends the wait; prints "committed"
//   fork-close PATH LOG MODE STOP   opens PATH (MODE read: and begins a read transaction; write:
//                                   a write transaction; memory: with CS_DURABILITY_MEMORY) and
//                                   forks; the forked process (a copy of this single-threaded one)
//                                   tries a commit of the inherited write, a read and a write
//                                   transaction on the inherited handle (each must be refused with
//                                   CS_MISUSE), ends the inherited transaction, opens the file
//                                   anew and reads through that handle, closes it and then the
//                                   inherited handle (CS_OK), all of them whatever each returned, and exits
//                                   0 or 1-9 for the first that did not; then this process writes "forked STATUS" (the exit
//                                   status) and "ready VERSION" to LOG (memory: after "files P L",
//                                   whether the file and its lock file exist), waits until STOP
//                                   exists, checks that its read transaction still reads the same
//                                   snapshot (read) or commits one increment through its write
//                                   (write), then makes one more increment and closes
//   fork-parent-first PATH LOG GO   opens PATH and forks; the forked process opens PATH again (a
//                                   handle of its own), waits until this process closed its handle
//                                   and GO exists, then closes its own handle and the inherited
//                                   one (within 10 s: SIGALRM) and exits 0, or 1-3 for the first
//                                   call that failed; this process writes "closed" to LOG after its
//                                   close and "forked STATUS" when the forked process ended
//   hold-fork PATH LOG              begins a write transaction (takes the writer lock), forks a
//                                   process that sleeps until killed, writes "holding PID" (its
//                                   pid) to LOG and sleeps until killed
//   read-only PATH [--as-nobody]    opens PATH with CS_OPEN_READONLY (first dropping root to the
//                                   user nobody when asked), verifies it and prints
//                                   "rows R lockless L rw CODE", where L says whether waiting for
//                                   commits was refused for want of a lock file and CODE is what a
//                                   read-write open of PATH then returned
//
// Exit status: 0 on success, 64 for bad usage, 70-99 for a failure (the message on stderr).
import CStore
import TestSupport
import CStoreCall
import Foundation

#if canImport(Glibc)
import Glibc
#endif

func fail(_ status: Int32, _ message: String) -> Never {
    var text = message
    let reason = CStoreError.lastMessage
    if !reason.isEmpty { text += " (\(reason))" }
    FileHandle.standardError.write(Data("cstore-testchild: \(text)\n".utf8))
    exit(status)
}

func ok(_ rc: Int32, _ status: Int32, _ what: String) {
    if rc != Int32(CS_OK) { fail(status, "\(what) returned \(CStoreError.codeName(rc))") }
}

/// An append-only log written with write(2): what reached the kernel survives a SIGKILL.
struct Log {
    let fd: Int32
    init(_ path: String) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        if fd < 0 { fail(70, "cannot open the log \(path)") }
    }
    func line(_ s: String) {
        let bytes = Array((s + "\n").utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n != bytes.count { fail(71, "cannot write the log") }
    }
}

func openDB(_ path: String, flags: Int = 0, durability: cs_durability = CS_DURABILITY_NOSYNC) -> OpaquePointer {
    var opts = cs_options()
    opts.flags = UInt32(flags)
    opts.durability = durability
    var h: OpaquePointer?
    ok(cs_db_open(path, &opts, &h), 72, "cs_db_open(\(path))")
    return h!
}

func begin(_ h: OpaquePointer, _ mode: Int) -> OpaquePointer {
    var t: OpaquePointer?
    ok(cs_txn_begin(h, Int32(mode), &t), 73, "cs_txn_begin")
    return t!
}

/// The shared schema: Counter(n, sum) with one object, Rows(writer, seq, payload).
struct Schema {
    var counter: UInt32 = 0
    var rows: UInt32 = 0
    var counterKey: Int64 = 0
    let n: UInt32 = 0, sum: UInt32 = 1
    let writer: UInt32 = 0, seq: UInt32 = 1, payload: UInt32 = 2

    init(_ txn: OpaquePointer) {
        ok(cs_table_find(txn, "Counter", &counter), 74, "find Counter")
        ok(cs_table_find(txn, "Rows", &rows), 74, "find Rows")
        var it = cs_iter()
        var o = cs_obj()
        ok(cs_iter_init(&it, txn, counter), 74, "iter Counter")
        ok(cs_iter_next(&it, &o), 74, "the counter object")
        counterKey = o.key
    }

    func counterObj(_ txn: OpaquePointer) -> cs_obj {
        var o = cs_obj()
        ok(cs_obj_open(txn, counter, counterKey, &o), 75, "open the counter")
        return o
    }
}

func getInt(_ o: inout cs_obj, _ col: UInt32) -> Int64 {
    var v: Int64 = 0
    ok(cs_obj_get_int(&o, col, &v), 76, "cs_obj_get_int")
    return v
}

/// The payload of row `seq` in the commit loop: its length and bytes depend only on `seq`.
func payloadFor(_ seq: Int64) -> [UInt8] {
    let len = 1 + Int((UInt64(seq) &* 2_654_435_761) % 3000)
    return (0..<len).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seq) &* 13) }
}

func setup(_ path: String) {
    let h = openDB(path, flags: CS_OPEN_CREATE)
    let t = begin(h, CS_TXN_WRITE)
    var counter: UInt32 = 0, rows: UInt32 = 0, col: UInt32 = 0
    ok(cs_table_add(t, "Counter", 0, &counter), 77, "add Counter")
    ok(cs_column_add(t, counter, "n", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &col), 77, "add n")
    ok(cs_column_add(t, counter, "sum", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &col), 77, "add sum")
    ok(cs_table_add(t, "Rows", 0, &rows), 77, "add Rows")
    ok(cs_column_add(t, rows, "writer", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &col), 77, "add writer")
    ok(cs_column_add(t, rows, "seq", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &col), 77, "add seq")
    ok(cs_column_add(t, rows, "payload", CS_TYPE_BINARY, CS_COLL_NONE, 0, CS_NONE, &col), 77, "add payload")
    var o = cs_obj()
    ok(cs_obj_create(t, counter, &o), 77, "create the counter")
    ok(cs_txn_commit(t), 77, "commit")
    ok(cs_txn_end(t), 77, "end")
    ok(cs_db_close(h), 77, "close")
}

/// Checks one snapshot: counter == rows, sum == sum of seqs, every writer's seqs are 1...m in
/// key order. Returns a description of the first violation, or nil.
func checkSnapshot(_ txn: OpaquePointer, _ s: Schema) -> String? {
    var c = s.counterObj(txn)
    let n = getInt(&c, s.n)
    let sum = getInt(&c, s.sum)
    var count: UInt64 = 0
    ok(cs_table_count(txn, s.rows, &count), 78, "count Rows")
    if Int64(count) != n { return "counter \(n) but \(count) rows at version \(cs_txn_version(txn))" }
    var next: [Int64: Int64] = [:]
    var seqSum: Int64 = 0
    var it = cs_iter()
    ok(cs_iter_init(&it, txn, s.rows), 78, "iter Rows")
    var o = cs_obj()
    var seen: UInt64 = 0
    while true {
        let rc = cs_iter_next(&it, &o)
        if rc == Int32(CS_NOTFOUND) { break }
        ok(rc, 78, "cs_iter_next")
        let w = getInt(&o, s.writer)
        let q = getInt(&o, s.seq)
        let expected = (next[w] ?? 0) + 1
        if q != expected { return "writer \(w): seq \(q) after \(expected - 1)" }
        next[w] = q
        seqSum += q
        seen += 1
    }
    if seen != count { return "iterated \(seen) rows but the count is \(count)" }
    if seqSum != sum { return "sum \(sum) but the rows' seqs add up to \(seqSum)" }
    return nil
}

func increment(_ path: String, _ id: Int64, _ times: Int) {
    let h = openDB(path)
    for i in 1...times {
        let t = begin(h, CS_TXN_WRITE)
        let s = Schema(t)
        if i % 10 == 1, let problem = checkSnapshot(t, s) { fail(80, "before transaction \(i): \(problem)") }
        var c = s.counterObj(t)
        let n = getInt(&c, s.n)
        let sum = getInt(&c, s.sum)
        ok(cs_obj_set_int(&c, s.n, n + 1), 81, "set n")
        ok(cs_obj_set_int(&c, s.sum, sum + Int64(i)), 81, "set sum")
        var r = cs_obj()
        ok(cs_obj_create(t, s.rows, &r), 81, "create a row")
        ok(cs_obj_set_int(&r, s.writer, id), 81, "set writer")
        ok(cs_obj_set_int(&r, s.seq, Int64(i)), 81, "set seq")
        ok(cs_txn_commit(t), 82, "commit \(i)")
        ok(cs_txn_end(t), 82, "end")
    }
    ok(cs_db_close(h), 83, "close")
}

func count(_ path: String, threads: Int, _ times: Int) {
    let h = openDB(path)
    nonisolated(unsafe) let handle = h
    let done = DispatchSemaphore(value: 0) // (a join the thread sanitizer sees)
    let workers = (0..<threads).map { _ in
        Thread {
            defer { done.signal() }
            for _ in 0..<times {
                let t = begin(handle, CS_TXN_WRITE)
                let s = Schema(t)
                var c = s.counterObj(t)
                ok(cs_obj_set_int(&c, s.n, getInt(&c, s.n) + 1), 81, "set n")
                ok(cs_txn_commit(t), 82, "commit")
                ok(cs_txn_end(t), 82, "end")
            }
        }
    }
    for w in workers { w.start() }
    for _ in workers { done.wait() }
    ok(cs_db_close(h), 83, "close")
}

func killer(_ path: String) -> Never {
    let h = openDB(path)
    let t = begin(h, CS_TXN_WRITE)
    let s = Schema(t)
    var c = s.counterObj(t)
    ok(cs_obj_set_int(&c, s.n, getInt(&c, s.n) + 1000), 81, "set n")
    usleep(UInt32.random(in: 0...3000))
    raise(SIGKILL)
    exit(0)
}

/// The lock file's path for claim-race's hook, and whether the hook ran.
nonisolated(unsafe) var claimRaceLockFile = ""
nonisolated(unsafe) var claimRaced = 0

func claimRace(_ path: String, _ logPath: String) -> Never {
    let log = Log(logPath)
    claimRaceLockFile = path + ".lock"
    cs_test_set_writer_lock_hook { point in
        guard point == Int32(CS_TEST_WLOCK_CLAIM), claimRaced == 0 else { return }
        claimRaced = 1
        // a waiter of another process setting the waiters bit (FORMAT §9, offset 2176, bit 31)
        let fd = open(claimRaceLockFile, O_RDWR)
        guard fd >= 0, let m = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), m != MAP_FAILED else { exit(98) }
        // (no other process acts now: the holder is dead and the test's process waits for "idle")
        let word = m.advanced(by: 2176).assumingMemoryBound(to: UInt64.self)
        word.pointee |= 1 << 31
        munmap(m, 4096)
        close(fd)
    }
    let h = openDB(path)
    let t = begin(h, CS_TXN_READ)
    ok(cs_txn_end(t), 94, "end")
    log.line("idle \(claimRaced)")
    while true { pause() }
}

func checkLoop(_ path: String, _ stopFile: String) {
    let h = openDB(path)
    let t = begin(h, CS_TXN_READ)
    let s = Schema(t)
    var snapshots = 0
    var versions = Set<UInt64>()
    while true {
        // The stop file is looked for before advancing, so the last snapshot is the final one.
        let stop = access(stopFile, F_OK) == 0
        if snapshots > 0 { ok(cs_txn_advance(t, nil), 85, "advance") }
        if let problem = checkSnapshot(t, s) { fail(84, "snapshot \(snapshots): \(problem)") }
        snapshots += 1
        versions.insert(cs_txn_version(t))
        if stop { break }
    }
    var c = s.counterObj(t)
    let final = getInt(&c, s.n)
    ok(cs_txn_end(t), 85, "end")
    ok(cs_db_close(h), 85, "close")
    print("snapshots \(snapshots) versions \(versions.count) final \(final)")
}

func commitLoop(_ path: String, _ logPath: String, _ max: Int) {
    let log = Log(logPath)
    let h = openDB(path, durability: CS_DURABILITY_FULL)
    log.line("ready")
    for _ in 0..<max {
        let t = begin(h, CS_TXN_WRITE)
        let s = Schema(t)
        var c = s.counterObj(t)
        let k = getInt(&c, s.n) + 1
        ok(cs_obj_set_int(&c, s.n, k), 86, "set n")
        ok(cs_obj_set_int(&c, s.sum, getInt(&c, s.sum) + k), 86, "set sum")
        var r = cs_obj()
        ok(cs_obj_create(t, s.rows, &r), 86, "create a row")
        ok(cs_obj_set_int(&r, s.writer, 1), 86, "set writer")
        ok(cs_obj_set_int(&r, s.seq, k), 86, "set seq")
        let payload = payloadFor(k)
        var v = cs_value()
        v.type = CS_TYPE_BINARY
        let rc = payload.withUnsafeBytes { buf -> Int32 in
            v.v.bytes.ptr = UnsafeRawPointer(buf.baseAddress!)
            v.v.bytes.len = buf.count
            return cs_obj_set(&r, s.payload, &v)
        }
        ok(rc, 86, "set payload")
        log.line("about \(k)")
        ok(cs_txn_commit(t), 87, "commit \(k)")
        log.line("committed \(k)")
        ok(cs_txn_end(t), 87, "end")
    }
    ok(cs_db_close(h), 88, "close")
}

func hold(_ path: String, _ logPath: String) -> Never {
    let log = Log(logPath)
    let h = openDB(path)
    _ = begin(h, CS_TXN_WRITE)
    log.line("holding")
    while true { pause() }
}

func writeAfter(_ path: String, _ logPath: String, _ go: String, _ pollMs: UInt32) {
    let log = Log(logPath)
    cs_test_set_writer_lock_poll(pollMs)
    let h = openDB(path)
    log.line("open")
    for _ in 0..<60_000 {
        if access(go, F_OK) == 0 { break }
        usleep(1000)
    }
    let start = Date()
    log.line("begin \(monotonicNanoseconds())")
    let t = begin(h, CS_TXN_WRITE)
    log.line("took \(monotonicNanoseconds())")
    let s = Schema(t)
    var c = s.counterObj(t)
    ok(cs_obj_set_int(&c, s.n, getInt(&c, s.n) + 1), 81, "set n")
    ok(cs_txn_commit(t), 82, "commit")
    log.line("wrote \(Int(Date().timeIntervalSince(start) * 1000))")
    ok(cs_txn_end(t), 82, "end")
    log.line("released \(monotonicNanoseconds())")
    ok(cs_db_close(h), 83, "close")
}

func pin(_ path: String, _ logPath: String) -> Never {
    let log = Log(logPath)
    let h = openDB(path)
    let t = begin(h, CS_TXN_READ)
    log.line("pinned \(cs_txn_version(t))")
    while true { pause() }
}

/// Reads once (begin, end) and stays alive: its lock-file slot keeps an idle pin on that version.
func pinIdle(_ path: String, _ logPath: String) -> Never {
    let log = Log(logPath)
    let h = openDB(path)
    let t = begin(h, CS_TXN_READ)
    let v = cs_txn_version(t)
    ok(cs_txn_end(t), 94, "end")
    log.line("idle \(v)")
    while true { pause() }
}

func readOnly(_ path: String, asNobody: Bool) {
    if asNobody && getuid() == 0 {
        if setgroups(0, nil) != 0 || setgid(65534) != 0 || setuid(65534) != 0 {
            fail(90, "cannot drop to the user nobody: \(String(cString: strerror(errno)))")
        }
    }
    let h = openDB(path, flags: CS_OPEN_READONLY)
    ok(cs_db_verify(h), 91, "cs_db_verify")
    let t = begin(h, CS_TXN_READ)
    var table: UInt32 = 0
    ok(cs_table_find(t, "T", &table), 92, "find T")
    var n: UInt64 = 0
    ok(cs_table_count(t, table, &n), 92, "count")
    ok(cs_txn_end(t), 92, "end")
    let wait = cs_db_wait_for_commit(h, cs_db_commit_counter(h), 0)
    ok(cs_db_close(h), 93, "close")
    // A read-write open in the same place must fail (it needs to write the file and the lock).
    var opts = cs_options()
    var w: OpaquePointer?
    let rw = cs_db_open(path, &opts, &w)
    if rw == Int32(CS_OK), let w { _ = cs_db_close(w) }
    print("rows \(n) lockless \(wait == Int32(CS_MISUSE) ? 1 : 0) rw \(CStoreError.codeName(rw))")
}

func shrinkChurn(_ path: String, _ logPath: String, _ calmPath: String, _ stopPath: String) {
    let log = Log(logPath)
    let h = openDB(path, flags: CS_OPEN_SHRINK)
    var rng: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next() -> UInt64 {
        rng ^= rng << 13
        rng ^= rng >> 7
        rng ^= rng << 17
        return rng
    }
    var table: UInt32 = 0
    var keys: [Int64] = []
    do {
        let t = begin(h, CS_TXN_READ)
        ok(cs_table_find(t, "S", &table), 89, "find S")
        var it = cs_iter()
        var o = cs_obj()
        ok(cs_iter_init(&it, t, table), 89, "iter S")
        while cs_iter_next(&it, &o) == Int32(CS_OK) { keys.append(o.key) }
        ok(cs_txn_end(t), 89, "end")
    }
    if keys.isEmpty { fail(89, "S is empty") }
    var k = 0
    while access(stopPath, F_OK) != 0 {
        k += 1
        let calm = access(calmPath, F_OK) == 0
        let t = begin(h, CS_TXN_WRITE)
        for _ in 0..<(calm ? 1 : 20) {
            var o = cs_obj()
            ok(cs_obj_open(t, table, keys[Int(next() % UInt64(keys.count))], &o), 90, "open an object")
            if calm {
                ok(cs_obj_set_int(&o, 0, Int64(k)), 90, "set v")
                continue
            }
            let text = String(repeating: "x", count: Int(next() % 200)) + "\(k)"
            var v = cs_value()
            v.type = CS_TYPE_STRING
            let rc = text.utf8CString.withUnsafeBufferPointer { b -> Int32 in
                v.v.bytes.ptr = UnsafeRawPointer(b.baseAddress!)
                v.v.bytes.len = b.count - 1
                return cs_obj_set(&o, 1, &v)
            }
            ok(rc, 90, "set s")
        }
        ok(cs_txn_commit(t), 91, "commit \(k)")
        ok(cs_txn_end(t), 91, "end")
        log.line("\(calm ? "calm" : "churn") \(k)")
    }
    ok(cs_db_close(h), 92, "close")
}

/// One commit sparing this process's notifier, asleep on the file: the commit must still wake
/// the other processes' notifiers (the parent test's).
/// The snapshot a read transaction sees: the counter's n and sum and the row count.
func snapshotValues(_ t: OpaquePointer, _ s: Schema) -> [Int64] {
    var c = s.counterObj(t)
    var rows: UInt64 = 0
    ok(cs_table_count(t, s.rows, &rows), 78, "count Rows")
    return [getInt(&c, s.n), getInt(&c, s.sum), Int64(rows)]
}

/// Adds 1 to the counter's n and `seq` to its sum through write transaction `t`, with a row of
/// writer 99 and sequence `seq`, and commits it.
func bump(_ t: OpaquePointer, _ seq: Int64, _ status: Int32) {
    let s = Schema(t)
    var c = s.counterObj(t)
    ok(cs_obj_set_int(&c, s.n, getInt(&c, s.n) + 1), status, "set n")
    var r = cs_obj()
    ok(cs_obj_create(t, s.rows, &r), status, "create a row")
    ok(cs_obj_set_int(&r, s.writer, 99), status, "set writer")
    ok(cs_obj_set_int(&r, s.seq, seq), status, "set seq")
    ok(cs_obj_set_int(&c, s.sum, getInt(&c, s.sum) + seq), status, "set sum")
    ok(cs_txn_commit(t), status, "commit")
}

/// A handle inherited across fork (docs/ARCHITECTURE.md, Processes): the forked process may only
/// close it, which must leave this process's slot, pins, locks and files as they were.
func forkClose(_ path: String, _ logPath: String, _ mode: String, _ stopPath: String) {
    let log = Log(logPath)
    let h = openDB(path, durability: mode == "memory" ? CS_DURABILITY_MEMORY : CS_DURABILITY_NOSYNC)
    var txn: OpaquePointer?
    var before: [Int64] = []
    if mode == "read" {
        txn = begin(h, CS_TXN_READ)
        before = snapshotValues(txn!, Schema(txn!))
    } else if mode == "write" {
        txn = begin(h, CS_TXN_WRITE)
    }
    let pid = fork()
    if pid < 0 { fail(96, "fork: \(String(cString: strerror(errno)))") }
    if pid == 0 {
        // the forked process: this one's only thread, copied; nothing but the C API and _exit
        // (every step is made whatever the one before returned: the close is what matters most)
        var other: OpaquePointer?
        var status: Int32 = 0
        func expect(_ rc: Int32, _ wanted: Int, _ step: Int32) {
            if rc != Int32(wanted) && status == 0 { status = step }
        }
        if mode == "write" { expect(cs_txn_commit(txn!), CS_MISUSE, 1) }
        if mode == "read" {
            // the inherited read transaction: every move refused, and a read finds no data of the
            // parent's file (zeros where its mapping was) and returns instead of faulting
            expect(cs_txn_promote(txn!), CS_MISUSE, 9)
            expect(cs_txn_advance(txn!, nil), CS_MISUSE, 10)
            expect(cs_txn_advance_to(txn!, txn!), CS_MISUSE, 11)
            var frozen: OpaquePointer?
            expect(cs_txn_freeze(h, txn!, &frozen), CS_MISUSE, 12)
            var table: UInt32 = 0, rows: UInt64 = 0
            if cs_table_find(txn!, "Rows", &table) == Int32(CS_OK) { _ = cs_table_count(txn!, table, &rows) }
        }
        for (mode, step) in [(CS_TXN_READ, Int32(2)), (CS_TXN_WRITE, Int32(3))] {
            let rc = cs_txn_begin(h, Int32(mode), &other)
            expect(rc, CS_MISUSE, step)
            if rc == Int32(CS_OK) { _ = cs_txn_end(other) } // (not refused: ended, so the close still runs)
        }
        expect(cs_db_wait_for_commit(h, 0, 0), CS_MISUSE, 4)
        if let txn { expect(cs_txn_end(txn), CS_OK, 5) }
        // a handle of its own, opened beside the inherited one, works
        var opts = cs_options()
        opts.durability = CS_DURABILITY_NOSYNC
        var own: OpaquePointer?
        expect(cs_db_open(path, &opts, &own), CS_OK, 7)
        if let own {
            var w: OpaquePointer?
            let rc = cs_txn_begin(own, Int32(CS_TXN_READ), &w)
            expect(rc, CS_OK, 8)
            if rc == Int32(CS_OK) { expect(cs_txn_end(w), CS_OK, 8) }
            expect(cs_db_close(own), CS_OK, 8)
        }
        expect(cs_db_close(h), CS_OK, 6)
        _exit(status)
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    log.line("forked \(status)")
    if mode == "memory" {
        log.line("files \(access(path, F_OK) == 0 ? 1 : 0) \(access(path + ".lock", F_OK) == 0 ? 1 : 0)")
    }
    log.line("ready \(txn.map { cs_txn_version($0) } ?? 0)")
    for _ in 0..<60_000 {
        if access(stopPath, F_OK) == 0 { break }
        usleep(1000)
    }
    if mode == "read" {
        let s = Schema(txn!)
        if let problem = checkSnapshot(txn!, s) { fail(97, "the read transaction after the fork: \(problem)") }
        let after = snapshotValues(txn!, s)
        if after != before { fail(97, "the read transaction read \(before) before the fork, \(after) after") }
        ok(cs_txn_end(txn!), 97, "end")
    } else if mode == "write" {
        bump(txn!, 1, 98)
        ok(cs_txn_end(txn!), 98, "end")
    }
    let t = begin(h, CS_TXN_WRITE)
    bump(t, mode == "write" ? 2 : 1, 99)
    ok(cs_txn_end(t), 99, "end")
    ok(cs_db_close(h), 99, "close")
}

/// The parent closes first: the forked process opened a handle of its own, and after its
/// parent's close (while it still holds the inherited handle) another process opens the file and
/// its own handle closes (neither waits on a join lock left held by the parent's description).
func forkParentFirst(_ path: String, _ logPath: String, _ goPath: String) {
    let log = Log(logPath)
    let h = openDB(path)
    let closed = path + ".parent-closed"
    let pid = fork()
    if pid < 0 { fail(96, "fork: \(String(cString: strerror(errno)))") }
    if pid == 0 {
        var opts = cs_options()
        opts.durability = CS_DURABILITY_NOSYNC
        var own: OpaquePointer?
        if cs_db_open(path, &opts, &own) != Int32(CS_OK) { _exit(1) }
        for _ in 0..<30_000 where access(closed, F_OK) != 0 || access(goPath, F_OK) != 0 { usleep(1000) }
        alarm(10) // (a close stuck on a join lock ends the process by SIGALRM)
        if cs_db_close(own) != Int32(CS_OK) { _exit(2) }
        if cs_db_close(h) != Int32(CS_OK) { _exit(3) }
        _exit(0)
    }
    ok(cs_db_close(h), 95, "close")
    close(open(closed, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644))
    log.line("closed")
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    log.line("forked \(status)")
}

/// Holds the writer lock and forks a process that sleeps until killed, holding nothing of its own;
/// writes "holding PID" (the forked process's) to LOG and sleeps until killed.
func holdFork(_ path: String, _ logPath: String) -> Never {
    let log = Log(logPath)
    let h = openDB(path)
    _ = begin(h, CS_TXN_WRITE)
    let pid = fork()
    if pid < 0 { fail(96, "fork: \(String(cString: strerror(errno)))") }
    if pid == 0 {
        while true { pause() }
    }
    log.line("holding \(pid)")
    while true { pause() }
}

func commitSparing(_ path: String, sleepers: UInt32) {
    let h = openDB(path)
    var n: OpaquePointer?
    ok(cs_notifier_open(h, &n), 95, "cs_notifier_open")
    nonisolated(unsafe) let notifier = n!
    let seen = cs_db_commit_counter(h)
    let waiter = Thread { _ = cs_notifier_wait(notifier, seen, 60_000) }
    waiter.start()
    // (the waiter asleep, so that the commit has a notifier of its own to spare)
    let asleep = waitForLockFileSleepers(path, sleepers)
    if !asleep.ok { fail(95, "the lock file counts \(asleep.last.map { "\($0)" } ?? "no") sleepers, not \(sleepers)") }
    let t = begin(h, CS_TXN_WRITE)
    ok(cs_txn_commit_sparing(t, notifier), 96, "cs_txn_commit_sparing")
    ok(cs_txn_end(t), 96, "end")
    cs_notifier_wake(notifier)
    while !waiter.isFinished { usleep(1000) }
    cs_notifier_close(notifier)
    ok(cs_db_close(h), 97, "close")
    print("committed")
}

let args = CommandLine.arguments
guard args.count >= 2 else {
    FileHandle.standardError.write(Data("usage: cstore-testchild COMMAND ARGS...\n".utf8))
    exit(64)
}
func arg(_ i: Int) -> String {
    guard i < args.count else { fail(64, "\(args[1]): missing argument \(i - 1)") }
    return args[i]
}
switch args[1] {
case "version":
    print(String(cString: cs_library_version()))
case "setup":
    setup(arg(2))
case "increment":
    guard let id = Int64(arg(3)), let n = Int(arg(4)), n > 0 else { fail(64, "increment PATH ID N") }
    increment(arg(2), id, n)
case "count":
    guard let threads = Int(arg(3)), let n = Int(arg(4)), threads > 0, n > 0 else { fail(64, "count PATH THREADS N [POLL_MS]") }
    if args.count > 5, let ms = UInt32(args[5]) { cs_test_set_writer_lock_poll(ms) }
    count(arg(2), threads: threads, n)
case "killer":
    killer(arg(2))
case "claim-race":
    claimRace(arg(2), arg(3))
case "check":
    checkLoop(arg(2), arg(3))
case "commit-loop":
    commitLoop(arg(2), arg(3), args.count > 4 ? Int(args[4]) ?? 1_000_000 : 1_000_000)
case "hold":
    hold(arg(2), arg(3))
case "write-after":
    guard let ms = UInt32(arg(5)) else { fail(64, "write-after PATH LOG GO POLL_MS") }
    writeAfter(arg(2), arg(3), arg(4), ms)
case "pin":
    pin(arg(2), arg(3))
case "pin-idle":
    pinIdle(arg(2), arg(3))
case "shrink-churn":
    shrinkChurn(arg(2), arg(3), arg(4), arg(5))
case "commit-sparing":
    guard let sleepers = UInt32(arg(3)) else { fail(64, "commit-sparing PATH SLEEPERS") }
    commitSparing(arg(2), sleepers: sleepers)
case "fork-close":
    forkClose(arg(2), arg(3), arg(4), arg(5))
case "fork-parent-first":
    forkParentFirst(arg(2), arg(3), arg(4))
case "hold-fork":
    holdFork(arg(2), arg(3))
case "read-only":
    readOnly(arg(2), asNobody: args.count > 3 && args[3] == "--as-nobody")
default:
    FileHandle.standardError.write(Data("unknown command \(args[1])\n".utf8))
    exit(64)
}
