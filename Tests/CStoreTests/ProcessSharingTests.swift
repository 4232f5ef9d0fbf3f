// One file shared by several processes (docs/ARCHITECTURE.md, Processes): writers in separate processes lose no
// transaction and tear none, readers in other processes see only whole transactions, and the
// reader slot of a process killed while pinning an old version is reaped so that its space is
// reused.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Checks the invariants every committed version of a `cstore-testchild setup` file keeps:
/// the counter equals the row count, its sum equals the sum of the rows' sequences, and every
/// writer's sequences are 1...m in key order. Returns the first violation, or nil; also the
/// number of rows per writer.
func childInvariantProblem(_ txn: OpaquePointer, _ s: ChildSchema) throws -> (String?, [Int64: Int64]) {
    let (n, sum) = try s.counterValues(txn)
    let count = try tableCount(txn, s.rows)
    if Int64(count) != n { return ("counter \(n) but \(count) rows at version \(cs_txn_version(txn))", [:]) }
    var next: [Int64: Int64] = [:]
    var seqSum: Int64 = 0
    var it = cs_iter()
    try must(cs_iter_init(&it, txn, s.rows), "cs_iter_init")
    var o = cs_obj()
    var seen: UInt64 = 0
    while true {
        let rc = cs_iter_next(&it, &o)
        if rc == Int32(CS_NOTFOUND) { break }
        try must(rc, "cs_iter_next")
        let w = try getInt(&o, s.writer)
        let q = try getInt(&o, s.seq)
        let expected = (next[w] ?? 0) + 1
        if q != expected { return ("writer \(w): seq \(q) follows \(expected - 1)", next) }
        next[w] = q
        seqSum += q
        seen += 1
    }
    if seen != count { return ("iterated \(seen) rows, count says \(count)", next) }
    if seqSum != sum { return ("sum \(sum), the rows' seqs add up to \(seqSum)", next) }
    return (nil, next)
}

@Suite struct ProcessSharingTests {
    /// Three writer processes each commit N increments (counter + 1, a row (writer, seq))
    /// while a reader process and a reader thread here check every snapshot they see. At the
    /// end the counter is exactly 3N and each writer's rows are 1...N.
    @Test func threeWriterProcessesLoseNoTransaction() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let perWriter = fullCampaign ? 600 : 150
        let stopFile = dir.path("stop")
        let checker = try Child(["check", path, stopFile], in: dir)
        let writers = try (1...3).map { id in try Child(["increment", path, "\(id)", "\(perWriter)"], in: dir) }

        // This process reads too, on its own handle, while the writers run.
        let db = try DB(path)
        let s = try db.read { try ChildSchema($0) }
        let reader = try db.begin(CS_TXN_READ)
        var snapshots = 0
        var versions = Set<UInt64>()
        var lastN: Int64 = -1
        while writers.contains(where: { $0.process.isRunning }) && snapshots < 1_000_000 {
            let (problem, _) = try childInvariantProblem(reader, s)
            #expect(problem == nil, "snapshot \(snapshots) in the parent: \(problem ?? "")")
            if problem != nil { break }
            let n = try s.counterValues(reader).n
            #expect(n >= lastN, "the counter went back from \(lastN) to \(n)")
            lastN = n
            versions.insert(cs_txn_version(reader))
            snapshots += 1
            try must(cs_txn_advance(reader, nil), "advance")
            usleep(200)
        }
        check(cs_txn_end(reader))
        for w in writers {
            #expect(w.wait(seconds: 180), "a writer did not finish in 180 s")
            #expect(w.succeeded, "\(w.summary)")
        }
        #expect(FileManager.default.createFile(atPath: stopFile, contents: nil))
        #expect(checker.wait(seconds: 60), "the reader process did not stop")
        #expect(checker.succeeded, "\(checker.summary)")
        #expect(checker.stdout.hasPrefix("snapshots ") && checker.stdout.hasSuffix(" final \(3 * perWriter)\n"),
                "the reader process checked snapshots up to the last commit: \(checker.stdout)")

        try db.read { txn throws in
            let (problem, perId) = try childInvariantProblem(txn, s)
            #expect(problem == nil, "final state: \(problem ?? "")")
            let (n, sum) = try s.counterValues(txn)
            #expect(n == Int64(3 * perWriter), "counter \(n), expected \(3 * perWriter)")
            #expect(sum == Int64(3 * perWriter * (perWriter + 1) / 2))
            #expect(perId == [1: Int64(perWriter), 2: Int64(perWriter), 3: Int64(perWriter)], "rows per writer: \(perId)")
        }
        #expect(versions.count > 1, "the parent saw the file change while the writers ran (\(versions.count) versions)")
        print("three writer processes: \(3 * perWriter) transactions; the parent checked \(snapshots) snapshots (\(versions.count) versions), the reader process \(checker.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
        db.verify("after three writer processes")
        db.close()
        check(cs_file_verify(path), "cs_file_verify after three writer processes")
    }

    /// Logical size after 150 commits that each replace a 64 KiB row of a 3 MiB table, with
    /// a reader process pinning the first version: "none" (no reader), "alive" (the reader
    /// lives throughout) or "killed" (SIGKILLed before the commits).
    private func churn(_ scenario: String) throws -> cs_db_stats {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        let db = try DB(path)
        var rng = SeededRNG(seed: stableSeed("churn"))
        let rowBytes = 64 * 1024
        let (t, c) = try db.write { txn throws -> (UInt32, UInt32) in
            let t = try addTable(txn, "Blob")
            let c = try addColumn(txn, t, "data", CS_TYPE_BINARY)
            for _ in 0..<48 {
                var o = try createObj(txn, t)
                try must(setVal(&o, c, .binary(randomBytes(rowBytes, &rng))), "set data")
            }
            return (t, c)
        }
        let pinnedVersion = cs_db_version(db.h)
        var child: Child?
        if scenario.hasPrefix("idle") {
            // a process that read once and went idle: its slot keeps an idle pin
            let log = dir.path("pin.log")
            let idler = try Child(["pin-idle", path, log], in: dir)
            child = idler
            let idle = waitUntil(seconds: 30) { logLines(log).contains { $0.hasPrefix("idle") } }
            #expect(idle, "the reader process read a version: \(idler.stderr)")
            #expect(logLines(log).first == "idle \(pinnedVersion)")
            if scenario == "idle-killed" {
                idler.killNow()
                #expect(idler.killedBySIGKILL)
            }
        } else if scenario != "none" {
            let log = dir.path("pin.log")
            let pinner = try Child(["pin", path, log], in: dir)
            child = pinner
            let pinned = waitUntil(seconds: 30) { logLines(log).contains { $0.hasPrefix("pinned") } }
            #expect(pinned, "the reader process pinned a version: \(pinner.stderr)")
            #expect(logLines(log).first == "pinned \(pinnedVersion)")
            if scenario == "killed" {
                pinner.killNow()
                #expect(pinner.killedBySIGKILL)
            }
        }
        for _ in 0..<150 {
            try db.write { txn throws in
                let first = try allKeys(txn, t).first!
                var old = try openObj(txn, t, first)
                try must(cs_obj_delete(&old), "delete")
                var o = try createObj(txn, t)
                try must(setVal(&o, c, .binary(randomBytes(rowBytes, &rng))), "set data")
            }
        }
        let st = try db.stats()
        db.verify("after churn (\(scenario))")
        child?.killNow()
        db.close()
        return st
    }

    /// docs/FORMAT.md §7, Backdating: space freed between two pinned versions is recycled. A reader
    /// pinning the first version keeps that version's 3 MiB, not every version after it.
    @Test func liveReaderKeepsOnlyItsOwnVersionsSpace() throws {
        let none = try churn("none")
        let alive = try churn("alive")
        let slack = 3 * 1024 * 1024 + 2 * 1024 * 1024 // the pinned rows, plus room for the churn
        #expect(alive.logical_size <= none.logical_size + UInt64(slack),
                "150 commits with a reader pinning the first version: logical size \(alive.logical_size) bytes, \(none.logical_size) without the reader; the space freed by versions nobody reads is not recycled")
    }

    /// A process whose last transaction ended keeps its slot's range published but idle (txn.c
    /// pin_drop): a writer of another process revokes it, so it holds back no space, alive or
    /// killed, while a reader that still holds its transaction does.
    @Test func idleReaderProcessHoldsNoSpace() throws {
        let none = try churn("none")
        let alive = try churn("alive")
        let idle = try churn("idle")
        let idleKilled = try churn("idle-killed")
        let mib = 1024 * 1024
        #expect(alive.logical_size >= none.logical_size + UInt64(2 * mib),
                "a live reader keeps its version's space: alive \(alive.logical_size), none \(none.logical_size)")
        #expect(idle.logical_size <= none.logical_size + UInt64(mib),
                "an idle reader holds back space: idle \(idle.logical_size), none \(none.logical_size)")
        #expect(idleKilled.logical_size <= none.logical_size + UInt64(mib),
                "a killed idle reader holds back space: \(idleKilled.logical_size), none \(none.logical_size)")
    }

    @Test func killedReaderProcessSlotIsReapedAndItsSpaceReused() throws {
        let none = try churn("none")
        let alive = try churn("alive")
        let killed = try churn("killed")
        let mib = 1024.0 * 1024.0
        func mb(_ s: cs_db_stats) -> String {
            String(format: "logical %.1f MiB, free %.1f MiB", Double(s.logical_size) / mib, Double(s.free_bytes) / mib)
        }
        // The pinned first version holds 3 MiB of rows that every later version has replaced:
        // while its reader lives they cannot be reused; once it is dead they must be.
        #expect(alive.logical_size >= none.logical_size + 2 * 1024 * 1024,
                "a live reader keeps its version's space: alive \(mb(alive)), no reader \(mb(none))")
        #expect(Double(killed.logical_size) <= Double(none.logical_size) * 1.2 + mib,
                "a killed reader's space is reused: killed \(mb(killed)), no reader \(mb(none)), alive \(mb(alive))")
        print("space after churn: no reader \(mb(none)); live reader \(mb(alive)); killed reader \(mb(killed))")
        #expect(killed.logical_size + 2 * 1024 * 1024 <= alive.logical_size,
                "killed \(mb(killed)) vs alive \(mb(alive))")
    }
}
