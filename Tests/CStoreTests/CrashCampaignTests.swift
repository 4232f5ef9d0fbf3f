// Writer processes killed with SIGKILL at random moments while they commit in a loop
// (docs/FORMAT.md §2, Commit protocol: the header flip is the only commit point). The writer
// logs "about to commit k" and "committed k" around every commit; after each kill the file opens, verifies and holds
// exactly the last committed transaction (k - 1 or k when the kill landed between the two
// lines), whole, and takes the next writer's commits.
// 200+ kills with STORE_FULL_CAMPAIGN=1 (`make test-full`), 20 otherwise; `make asan` skips
// this suite (its name contains "Campaign").

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the writer's log says about the transaction in flight when it was killed.
struct CommitLog {
    var committed: Int64 = 0 // last "committed k"
    var about: Int64 = 0     // last "about k"
    var ready = false

    init(_ lines: [String]) {
        for l in lines {
            if l == "ready" { ready = true }
            let parts = l.split(separator: " ")
            guard parts.count == 2, let k = Int64(parts[1]) else { continue }
            if parts[0] == "about" { about = k }
            if parts[0] == "committed" { committed = k }
        }
    }

    /// The versions the file may hold: the last committed k, or the one being committed.
    func allowed(before: Int64) -> Set<Int64> {
        var s: Set<Int64> = [max(committed, before)]
        if about > committed { s.insert(about) }
        return s
    }
}

@Suite struct CrashCampaignTests {
    /// Checks the state of the file through `txn`: the counter k, k rows with seqs 1...k and
    /// the payloads of the last rows. Returns k.
    private func checkState(_ txn: OpaquePointer, _ s: ChildSchema, _ what: String) throws -> Int64 {
        let (problem, _) = try childInvariantProblem(txn, s)
        #expect(problem == nil, "\(what): \(problem ?? "")")
        let (k, _) = try s.counterValues(txn)
        let keys = try allKeys(txn, s.rows)
        // The newest rows are whole: their payloads are exactly what the writer stored.
        for key in keys.suffix(3) {
            var o = try openObj(txn, s.rows, key)
            let seq = try getInt(&o, s.seq)
            let v = getVal(&o, s.payload)
            #expect(v == .binary(childPayload(seq)), "\(what): the payload of row \(seq) differs")
        }
        return k
    }

    @Test func writerKilledAtRandomMomentsCampaign() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path()
        try runChild(["setup", path], in: dir)
        let kills = fullCampaign ? 220 : 20
        let seed = stableSeed("crash campaign") ^ UInt64(UInt32(truncatingIfNeeded: time(nil)))
        var rng = SeededRNG(seed: seed) // the delays; the seed is in every failure message
        var last: Int64 = 0
        var landedMidCommit = 0
        var inFlightKept = 0 // kills inside a commit after which the file held that commit
        var killedBeforeReady = 0
        var handle: DB? = try DB(path)
        let s = try handle!.read { try ChildSchema($0) }
        let started = Date()

        for i in 0..<kills {
            let log = dir.path("log-\(i)")
            let child = try Child(["commit-loop", path, log], in: dir)
            // Mostly kill inside the commit loop; sometimes while the child is still opening.
            if rng.next() % 8 == 0 {
                usleep(UInt32(rng.next() % 30_000))
            } else {
                let ready = waitUntil(seconds: 30) { CommitLog(logLines(log)).ready || !child.process.isRunning }
                #expect(ready, "kill \(i): the writer never became ready")
                usleep(UInt32(1000 + rng.next() % 40_000))
            }
            kill(child.pid, SIGKILL)
            child.process.waitUntilExit()
            guard child.killedBySIGKILL else {
                Issue.record("kill \(i): the writer ended before the kill: \(child.summary)")
                break
            }
            let cl = CommitLog(logLines(log))
            if !cl.ready { killedBeforeReady += 1 }
            if cl.about > cl.committed { landedMidCommit += 1 }
            let allowed = cl.allowed(before: last)
            let what = "kill \(i) of seed \(seed) (log: committed \(cl.committed), about \(cl.about))"

            // Every third kill is checked from a fresh open (this process alone on the file,
            // so the lock file starts over from the header); the others through a handle that
            // stayed open across the kill and shares the dead writer's lock file.
            if i % 3 == 0 {
                handle?.close()
                handle = nil
                check(cs_file_verify(path), "\(what): cs_file_verify")
                handle = try DB(path, flags: 0)
            }
            let db = handle!
            db.verify(what)
            // A write transaction sees the newest version the file holds (the writer lock
            // settles a commit the dead writer left unpublished); roll it back.
            let w = try db.begin(CS_TXN_WRITE)
            let k = try checkState(w, s, what)
            check(cs_txn_rollback(w))
            check(cs_txn_end(w))
            #expect(allowed.contains(k), "\(what): the file holds transaction \(k), expected one of \(allowed.sorted())")
            let r = try db.begin(CS_TXN_READ)
            #expect(try s.counterValues(r).n == k, "\(what): a reader after the kill sees the same version")
            check(cs_txn_end(r))
            if cl.about > cl.committed && k == cl.about { inFlightKept += 1 }
            last = max(last, k)
        }
        handle?.close()
        check(cs_file_verify(path), "cs_file_verify at the end")
        // A last writer runs to completion on the file the campaign left.
        let log = dir.path("log-final")
        try runChild(["commit-loop", path, log, "5"], in: dir)
        let db = try DB(path, flags: 0)
        try db.read { txn throws in
            let k = try checkState(txn, s, "after the campaign")
            #expect(k == last + 5, "five more commits after the campaign: \(k), expected \(last + 5)")
        }
        db.verify("after the campaign")
        db.close()
        let seconds = Date().timeIntervalSince(started)
        print("crash campaign: \(kills) kills in \(String(format: "%.1f", seconds)) s, \(last) transactions committed, \(landedMidCommit) kills between \"about\" and \"committed\" (\(inFlightKept) of them left that commit in the file), \(killedBeforeReady) before the writer was ready")
        #expect(last > 0, "the writers committed something between kills")
        if fullCampaign { #expect(landedMidCommit > 0, "some kills landed inside a commit") }
    }
}
