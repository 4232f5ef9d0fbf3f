// Online shrinking (docs/FORMAT.md §7.3, docs/ARCHITECTURE.md, Online shrinking): a writer
// process whose handle has CS_OPEN_SHRINK moves live nodes out of the file's tail and truncates
// the file, while this process reads; a version a reader pins stays readable throughout, and
// once the readers are gone and the churn has stopped the file comes back to near its live
// size.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct OnlineShrinkTests {
    /// The file's size on disk.
    private func fileSize(_ path: String) -> UInt64 {
        var st = stat()
        return stat(path, &st) == 0 ? UInt64(st.st_size) : 0
    }

    /// The number K of the last "churn K" / "calm K" line of the child's log, 0 before any.
    private func lastCommit(_ log: String) -> Int {
        guard let l = logLines(log).last, let k = Int(l.split(separator: " ").last ?? "") else { return 0 }
        return k
    }

    /// A digest of every object of table S in the transaction's version.
    private func digest(_ txn: OpaquePointer) throws -> UInt64 { try contentDigest(txn) }

    @Test func aWriterProcessShrinksTheFileWhileThisProcessReads() throws {
        guard testChildPath != nil else {
            Issue.record("cstore-testchild is not built")
            return
        }
        let rows = 60_000 // live bytes well above the 1 MiB a file may keep past its logical end
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("shrink.cstore")
        let db = try DB(path)
        var rng = SeededRNG(seed: 19)
        try db.write { txn throws in
            let t = try addTable(txn, "S")
            _ = try addColumn(txn, t, "v", CS_TYPE_INT)
            _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
            for i in 0..<rows {
                var o = try createObj(txn, t)
                try must(cs_obj_set_int(&o, 0, Int64(i)), "set v")
                try must(setVal(&o, 1, .str(String(repeating: "y", count: Int(rng.next() % 200)))), "set s")
            }
        }
        let loaded = try db.stats()

        // A reader pins the loaded version while the child churns: nothing freed meanwhile is
        // reusable, so the file grows.
        let r0 = try db.begin(CS_TXN_READ)
        let d0 = try digest(r0)
        let log = dir.path("writer.log"), calm = dir.path("calm"), stop = dir.path("stop")
        let child = try Child(["shrink-churn", path, log, calm, stop], in: dir)
        defer {
            _ = FileManager.default.createFile(atPath: stop, contents: nil)
            if !child.wait(seconds: 60) { Issue.record("the writer did not stop: \(child.summary)") }
        }
        let churn = underSanitizer ? 120 : 250
        #expect(waitUntil(seconds: 240) { lastCommit(log) >= churn || !child.process.isRunning },
                "the writer makes \(churn) churning commits: \(child.summary)")
        #expect(child.process.isRunning, "\(child.summary)")
        #expect(try digest(r0) == d0, "the pinned version reads as it did while the writer churned and shrank")
        let grown = fileSize(path)
        #expect(grown > loaded.file_size * 2, "the file grew while a reader pinned the start: \(loaded.file_size) -> \(grown)")

        // A second reader takes the newest version, spread over the grown file, and the first
        // goes. The churn stops; the writer goes on with one-row commits.
        let r1 = try db.begin(CS_TXN_READ)
        let d1 = try digest(r1)
        check(cs_txn_end(r0))
        _ = FileManager.default.createFile(atPath: calm, contents: nil)
        let calmFrom = lastCommit(log)
        #expect(waitUntil(seconds: 120) { lastCommit(log) >= calmFrom + 300 || !child.process.isRunning },
                "the writer makes 300 quiet commits: \(child.summary)")
        // What the reader's version uses is not moved over nor cut off: reading all of it
        // (which would be a SIGBUS past the end of the file) gives what it gave before.
        #expect(try digest(r1) == d1, "the version a reader pins reads the same while the writer shrinks the file")
        let pinned = fileSize(path)
        let pinnedStats = try db.stats()
        // The grown version's nodes lie all over the grown file: while it is pinned, the file
        // cannot come near its live size.
        #expect(Double(pinned) > 1.25 * Double(pinnedStats.used_bytes),
                "a reader's version keeps what it uses: \(pinned) bytes for \(pinnedStats.used_bytes) live")
        check(cs_txn_end(r1))

        // With no reader left, the writer's quiet commits bring the file to within 25% of its
        // live bytes.
        var st = try db.stats()
        let shrunk = waitUntil(seconds: 120) {
            guard let s = try? db.stats() else { return false }
            st = s
            return Double(s.file_size) <= 1.25 * Double(s.used_bytes) || !child.process.isRunning
        }
        #expect(child.process.isRunning, "\(child.summary)")
        #expect(shrunk && Double(st.file_size) <= 1.25 * Double(st.used_bytes),
                "the file returns to within 25% of its live size: \(st.file_size) bytes on disk for \(st.used_bytes) live (grown to \(grown), \(pinned) while the second reader pinned, \(pinnedStats.used_bytes) live then)")
        print("online shrinking: loaded \(loaded.file_size) bytes (\(loaded.used_bytes) live), grown to \(grown) under a pinned reader, \(pinned) while a reader pinned the grown version, \(st.file_size) after (\(st.used_bytes) live, logical \(st.logical_size))")
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        #expect(child.wait(seconds: 60) && child.succeeded, "\(child.summary)")
        db.verify("after online shrinking")
        try db.read { txn throws in
            let t = try findTable(txn, "S")
            #expect(try tableCount(txn, t) == rows)
        }
        db.close()
        check(cs_file_verify(path))
    }
}
