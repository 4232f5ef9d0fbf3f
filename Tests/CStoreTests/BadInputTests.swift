// Damaged copies of real database files (docs/ARCHITECTURE.md, Errors and untrusted bytes): bytes flipped at random offsets,
// truncations at random lengths, 4 KiB pages swapped or zeroed. Every copy either fails to
// open or verify with CS_CORRUPT (CS_VERSION for a damaged format number), or verifies clean
// and then reads exactly one of the versions the file really held; reading a copy that
// failed to verify returns errors, never crashes. Copies are read in this process (a crash
// ends the test run); a watchdog aborts the run if one copy takes over 60 s, so a hang is
// reported too, and one over 10 s fails the test.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private struct Original {
    let name: String
    let bytes: [UInt8]
    let logical: Int
    let digests: Set<UInt64> // the newest version and the one before it (the other slot)
}

/// A file with several commits (free lists, a previous version in the other header slot) and
/// every kind of column: scalars, a list, a set, a map, Mixed and links.
private func buildHistory(_ dir: TempDir) throws -> Original {
    let path = dir.path("history.cstore")
    let db = try DB(path, durability: CS_DURABILITY_FULL)
    var rng = SeededRNG(seed: stableSeed("bad input history"))
    try db.write { txn throws in
        let target = try addTable(txn, "Target")
        _ = try addColumn(txn, target, "name", CS_TYPE_STRING)
        let t = try addTable(txn, "T")
        _ = try addColumn(txn, t, "i", CS_TYPE_INT, flags: CS_COL_INDEXED)
        _ = try addColumn(txn, t, "d", CS_TYPE_DOUBLE, flags: CS_COL_NULLABLE)
        _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
        _ = try addColumn(txn, t, "b", CS_TYPE_BINARY, flags: CS_COL_NULLABLE)
        _ = try addColumn(txn, t, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
        _ = try addColumn(txn, t, "list", CS_TYPE_INT, coll: CS_COLL_LIST)
        _ = try addColumn(txn, t, "set", CS_TYPE_STRING, coll: CS_COLL_SET)
        _ = try addColumn(txn, t, "map", CS_TYPE_DOUBLE, coll: CS_COLL_MAP)
        _ = try addColumn(txn, t, "link", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
        _ = try addColumn(txn, t, "links", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
    }
    func fill(_ txn: OpaquePointer, _ rows: Int) throws {
        let target = try findTable(txn, "Target")
        let t = try findTable(txn, "T")
        var targets: [Int64] = []
        for i in 0..<20 {
            var o = try createObj(txn, target)
            try must(setVal(&o, 0, .str("target \(i)")), "name")
            targets.append(o.key)
        }
        for i in 0..<rows {
            var o = try createObj(txn, t)
            try must(cs_obj_set_int(&o, 0, Int64(bitPattern: rng.next())), "i")
            if i % 3 != 0 { try must(setVal(&o, 1, .double(Double(i) / 7)), "d") }
            try must(setVal(&o, 2, .string(randomLetters(Int(rng.next() % 50), &rng))), "s")
            if i % 4 == 0 { try must(setVal(&o, 3, .binary(randomBytes(Int(rng.next() % 300), &rng))), "b") }
            try must(setVal(&o, 4, randomMixed(&rng, linkTarget: (target, targets))), "m")
            if i % 5 == 0 {
                var l = try openColl(&o, 5)
                for j in 0..<Int(rng.next() % 20) { try must(listAppend(&l, .int(Int64(j))), "list") }
                var s = try openColl(&o, 6)
                for _ in 0..<4 { _ = setInsert(&s, .string(randomLetters(6, &rng))) }
                var m = try openColl(&o, 7)
                for j in 0..<3 { try must(mapSet(&m, Array("k\(j)".utf8), .double(Double(j))), "map") }
                var ls = try openColl(&o, 9)
                for _ in 0..<3 { try must(listAppend(&ls, .link(target, targets[Int(rng.next() % 20)])), "links") }
            }
            try must(setVal(&o, 8, .link(target, targets[i % 20])), "link")
        }
    }
    try db.write { try fill($0, 1500) }
    for round in 0..<3 { // updates and deletes: free lists and a previous version
        try db.write { txn throws in
            let t = try findTable(txn, "T")
            let keys = try allKeys(txn, t)
            for k in keys where k % 7 == Int64(round) {
                var o = try openObj(txn, t, k)
                try must(cs_obj_delete(&o), "delete")
            }
            for k in keys.prefix(200) where k % 7 != Int64(round) {
                var o = try openObj(txn, t, k)
                try must(setVal(&o, 2, .str("updated \(round)")), "update")
            }
        }
    }
    let previous = try db.read { try contentDigest($0) }
    try db.write { try fill($0, 300) }
    db.verify("history")
    let latest = try db.read { try contentDigest($0) }
    let st = try db.stats()
    db.close()
    return Original(name: "history", bytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))),
                    logical: Int(st.logical_size), digests: [latest, previous])
}

private func buildOneCommit(_ dir: TempDir) throws -> Original {
    let path = dir.path("sample.cstore")
    let (data, st) = try buildSample(path, rows: 2500)
    let digest = try DB(path, flags: 0).read { try contentDigest($0) }
    // A one-commit file's other slot holds the empty version 1.
    let empty = try withTempDir { d -> UInt64 in
        let e = try DB(d.path())
        return try e.read { try contentDigest($0) }
    }
    return Original(name: "sample", bytes: [UInt8](data), logical: Int(st.logical_size), digests: [digest, empty])
}

/// One damaged copy: what was done, and the bytes.
private func damage(_ o: Original, _ rng: inout SeededRNG) -> (String, [UInt8]) {
    var b = o.bytes
    let page = 4096
    let pages = max(2, (o.logical + page - 1) / page)
    func offset() -> Int {
        switch rng.next() % 10 {
        case 0: return Int(rng.next() % 128)                       // the header's fields
        case 1: return Int(rng.next() % UInt64(b.count))           // anywhere, slack included
        default: return page + Int(rng.next() % UInt64(o.logical - page)) // the nodes
        }
    }
    switch rng.next() % 6 {
    case 0, 1:
        let n = 1 + Int(rng.next() % 4)
        var at: [Int] = []
        for _ in 0..<n {
            let off = offset()
            b[off] ^= UInt8(1 + rng.next() % 255)
            at.append(off)
        }
        return ("\(n) byte(s) flipped at \(at)", b)
    case 2:
        let off = offset()
        let len = min(1 + Int(rng.next() % 32), b.count - off)
        for i in off..<(off + len) { b[i] = UInt8(truncatingIfNeeded: rng.next()) }
        return ("\(len) random bytes at \(off)", b)
    case 3:
        let len = Int(rng.next() % UInt64(o.logical + page))
        return ("truncated to \(len) bytes", Array(b.prefix(len)))
    case 4:
        let p = Int(rng.next() % UInt64(pages))
        var q = Int(rng.next() % UInt64(pages))
        if q == p { q = (p + 1) % pages }
        let a = Array(b[(p * page)..<((p + 1) * page)])
        b.replaceSubrange((p * page)..<((p + 1) * page), with: b[(q * page)..<((q + 1) * page)])
        b.replaceSubrange((q * page)..<((q + 1) * page), with: a)
        return ("pages \(p) and \(q) swapped", b)
    default:
        let p = Int(rng.next() % UInt64(pages))
        b.replaceSubrange((p * page)..<((p + 1) * page), with: [UInt8](repeating: 0, count: page))
        return ("page \(p) zeroed", b)
    }
}

/// Aborts the process when the copy being checked has taken `limit` seconds: a hang in the
/// core becomes a failure with a message instead of a test run that never ends.
private final class Watchdog: @unchecked Sendable {
    private let state = Shared<(String, Date)?>(nil)
    private let stopped = Shared(false)

    init(limit: TimeInterval) {
        let state = self.state, stopped = self.stopped
        let th = Thread {
            while !stopped.value {
                if let (what, since) = state.value, Date().timeIntervalSince(since) > limit {
                    FileHandle.standardError.write(Data("BadInputTests: \(what) has run for over \(Int(limit)) s (a hang); aborting\n".utf8))
                    abort()
                }
                usleep(100_000)
            }
        }
        th.start()
    }

    func begin(_ what: String) { state.value = (what, Date()) }
    func end() { state.value = nil }
    func stop() { stopped.value = true }
}

@Suite struct BadInputTests {
    @Test func damagedCopiesAreRefusedOrReadSafely() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let originals = [try buildOneCommit(dir), try buildHistory(dir)]
        let copies = fullCampaign ? 3000 : underSanitizer ? 150 : 1000
        var rng = SeededRNG(seed: stableSeed("bad input"))
        let watchdog = Watchdog(limit: 60)
        defer { watchdog.stop() }
        var openFailed = 0, verifyFailed = 0, clean = 0, slow = 0
        var codes: [String: Int] = [:]
        var slowest: (Double, String) = (0, "")
        let started = Date()
        for i in 0..<copies {
            let o = originals[i % originals.count]
            let (how, bytes) = damage(o, &rng)
            let what = "copy \(i) of \(o.name): \(how)"
            let path = dir.path("copy.cstore")
            try? FileManager.default.removeItem(atPath: path)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let t0 = Date()
            watchdog.begin(what)

            let (rc, h) = openRaw(path, flags: CS_OPEN_READONLY)
            var outcome: Int32 = rc
            var rolledBack = false
            if rc == Int32(CS_OK), let h {
                rolledBack = cs_db_rejected_commit(h, nil, nil, nil, 0)
                let v = cs_db_verify(h)
                outcome = v
                if v == Int32(CS_OK) {
                    // Verified clean: every read succeeds and gives a version the file held.
                    var t: OpaquePointer?
                    if check(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "\(what): begin"), let t {
                        do {
                            let d = try contentDigest(t)
                            #expect(o.digests.contains(d), "\(what): verified clean but reads content the file never held")
                        } catch {
                            Issue.record("\(what): verified clean but reading failed: \(error)")
                        }
                        check(cs_txn_end(t))
                    }
                    clean += 1
                } else {
                    #expect(v == Int32(CS_CORRUPT), "\(what): cs_db_verify returned \(codeName(v)): \(lastMessage())")
                    #expect(!lastMessage().isEmpty, "\(what): the message says where")
                    verifyFailed += 1
                }
                check(cs_db_close(h), "\(what): close")
                // Read everything through the API whatever verify said (errors, no crash).
                if v != Int32(CS_OK) { readEverything(path) }
            } else {
                #expect(rc == Int32(CS_CORRUPT) || rc == Int32(CS_VERSION),
                        "\(what): open returned \(codeName(rc)): \(lastMessage())")
                openFailed += 1
            }
            codes[codeName(outcome), default: 0] += 1
            let f = cs_file_verify(path)
            // cs_file_verify also fails a file whose newest commit opening passed over
            #expect((f == Int32(CS_OK)) == (outcome == Int32(CS_OK) && !rolledBack),
                    "\(what): cs_file_verify returned \(codeName(f)), open and cs_db_verify \(codeName(outcome))")

            watchdog.end()
            let seconds = Date().timeIntervalSince(t0)
            if seconds > slowest.0 { slowest = (seconds, what) }
            if seconds > 10 {
                slow += 1
                Issue.record("\(what): took \(String(format: "%.1f", seconds)) s")
            }
        }
        print("bad input: \(copies) damaged copies in \(String(format: "%.1f", Date().timeIntervalSince(started))) s: \(openFailed) refused at open, \(verifyFailed) by verify, \(clean) verified clean; \(codes); slowest \(String(format: "%.2f", slowest.0)) s (\(slowest.1))")
        #expect(openFailed + verifyFailed > copies / 2, "most damage is detected")
        #expect(slow == 0)
    }

    @Test func aDirectoryIsAnIOErrorNotADamagedFile() throws {
        // A path that names a directory holds no bytes at all: it cannot be a damaged
        // database, and callers map CS_CORRUPT to "invalid database".
        try withTempDir { dir in
            let path = dir.path("a-directory.cstore")
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            for flags in [Int(CS_OPEN_READONLY), 0, Int(CS_OPEN_CREATE)] {
                let (rc, h) = openRaw(path, flags: flags)
                expectCode(rc, Int(CS_IOERR), "open of a directory, flags \(flags)")
                #expect(cs_errno() == EISDIR)
                if let h { cs_db_close(h) }
            }
        }
    }
}
