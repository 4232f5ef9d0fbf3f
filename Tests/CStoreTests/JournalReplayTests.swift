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
        try journalCommit(w!, 2000) // checkpoints first: the records again, then the sync
        cs_test_set_replay_hook(nil, nil)
        #expect(watch.calls > 0, "the checkpoint wrote the records again")
        let problems = watch.problems
        #expect(problems.count == 0, "\(problems.count) of \(watch.calls) looks: \(problems.prefix(3))")
        #expect(cs_db_verify(w!) == Int32(CS_OK), "\(lastMessage())")
        #expect(try journalObjectCount(w!) == 52)
    }
}
