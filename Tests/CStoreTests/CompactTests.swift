// Compaction and compacted copies (docs/FORMAT.md §11): a copy holds every object and value of
// the version it was made from, the change history and format version carry over, a churned
// file shrinks to near the size of a fresh file with the same data, in-place compaction is
// refused while another process or handle has the file, and a power cut at any write, sync,
// rename or unlink of the compaction leaves the old file or the new one at the path.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let goldenV2 = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent("format-v2.cstore")

/// Adds a table "Churn" (Int n, String s) and churns it: `rows` inserts in batches, then every
/// other row deleted and the rest rewritten, so the file is left with much free space.
private func churn(_ db: DB, rows: Int, payload: Int = 200) throws {
    var rng = SeededRNG(seed: stableSeed("churn"))
    try db.write { txn throws in
        let t = try addTable(txn, "Churn")
        _ = try addColumn(txn, t, "n", CS_TYPE_INT)
        _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
    }
    let batch = 500
    for start in stride(from: 0, to: rows, by: batch) {
        try db.write { txn throws in
            let t = try findTable(txn, "Churn")
            for i in start..<min(rows, start + batch) {
                var o = try createObj(txn, t)
                try must(setVal(&o, 0, .int(Int64(i))), "set n")
                try must(setVal(&o, 1, .string(randomLetters(payload, &rng))), "set s")
            }
        }
    }
    let keys = try db.read { try allKeys($0, try findTable($0, "Churn")) }
    for chunk in stride(from: 0, to: keys.count, by: batch) {
        try db.write { txn throws in
            let t = try findTable(txn, "Churn")
            for (i, k) in keys[chunk..<min(keys.count, chunk + batch)].enumerated() {
                var o = try openObj(txn, t, k)
                if (chunk + i) % 2 == 0 {
                    try must(cs_obj_delete(&o), "delete")
                } else {
                    try must(setVal(&o, 1, .string(randomLetters(payload, &rng))), "rewrite s")
                }
            }
        }
    }
}

/// The change records after `since` (one line each).
private func changes(_ db: DB, since: UInt64) throws -> [String] {
    try db.read { txn in
        var ch: OpaquePointer?
        try must(cs_changes_open(txn, since, &ch), "cs_changes_open")
        defer { cs_changes_close(ch) }
        var out: [String] = []
        var c = cs_change()
        while cs_changes_next(ch, &c) == Int32(CS_OK) {
            out.append("\(c.version) \(c.kind.rawValue) \(c.table) \(c.col) \(c.key) \(c.a) \(c.b)")
        }
        return out
    }
}

private func compact(_ path: String, io: UnsafePointer<cs_io>? = nil) -> (Int32, cs_compact_info) {
    var opts = cs_options()
    opts.durability = CS_DURABILITY_FULL
    opts.io = io
    var info = cs_compact_info()
    let rc = cs_db_compact(path, &opts, nil, nil, &info)
    return (rc, info)
}

@Suite struct CompactTests {
    @Test func compactionKeepsEveryValueHistoryAndFormat() throws {
        try withTempDir { dir in
            let path = dir.path("v2.cstore")
            try FileManager.default.copyItem(atPath: goldenV2.path, toPath: path)
            let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
            try churn(db, rows: 3000)
            let before = try db.read { try contentsAndIndexDump($0) }
            let version = cs_db_version(db.h)
            let history = try changes(db, since: version - 1)
            #expect(!history.isEmpty, "the last commit left records")
            db.close()
            let sizeBefore = fileSize(path)

            let (rc, info) = compact(path)
            #expect(check(rc, "cs_db_compact"))
            #expect(Int(info.size_before) == sizeBefore)
            #expect(Int(info.size_after) == fileSize(path))
            #expect(info.version == version)
            #expect(!FileManager.default.fileExists(atPath: path + ".compact"))
            check(cs_file_verify(path), "the compacted file verifies")
            // the copy holds the framed nodes the commits packed (FORMAT.md §3, §11)
            #expect(try fileFormatVersions(path) == (4, 4), "the format version carries over")

            try db.reopen()
            #expect(cs_db_version(db.h) == version, "the version number carries over")
            let after = try db.read { try contentsAndIndexDump($0) }
            #expect(after.count == before.count)
            #expect(after == before)
            #expect(try changes(db, since: version - 1) == history, "the change history carries over")
            let st = try db.stats()
            #expect(st.free_bytes == 0 && st.free_extents == 0, "empty free lists")
            #expect(st.used_bytes + 4096 == st.logical_size, "nothing but reachable nodes")
            // the compacted file takes new commits like any other
            try db.write { txn throws in
                let t = try findTable(txn, "Churn")
                var o = try createObj(txn, t)
                try must(setVal(&o, 0, .int(-1)), "set")
            }
            db.verify("after a commit on the compacted file")
            db.close()
            print("compaction: \(sizeBefore) bytes before, \(info.size_after) after")
        }
    }

    @Test func churnedFileShrinksToNearAFreshFile() throws {
        try withTempDir { dir in
            let path = dir.path("churned.cstore")
            let db = try DB(path, durability: CS_DURABILITY_NOSYNC)
            try churn(db, rows: 20000)
            let live = try db.read { txn -> [(Int64, Val)] in
                let t = try findTable(txn, "Churn")
                return try allKeys(txn, t).map { k in
                    var o = try openObj(txn, t, k)
                    return (try getInt(&o, 0), getVal(&o, 1) ?? .null)
                }
            }
            db.close()
            let churned = fileSize(path)

            // the same rows written once into a new file
            let freshPath = dir.path("fresh.cstore")
            let fresh = try DB(freshPath, durability: CS_DURABILITY_NOSYNC)
            try fresh.write { txn throws in
                let t = try addTable(txn, "Churn")
                _ = try addColumn(txn, t, "n", CS_TYPE_INT)
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                for (n, s) in live {
                    var o = try createObj(txn, t)
                    try must(setVal(&o, 0, .int(n)), "n")
                    try must(setVal(&o, 1, s), "s")
                }
            }
            let freshLogical = Int(try fresh.stats().logical_size)
            fresh.close()

            let (rc, info) = compact(path)
            #expect(check(rc, "cs_db_compact"))
            let after = fileSize(path)
            #expect(Int(info.size_after) == after)
            print("size.after.churn (20k rows): churned \(churned) bytes, compacted \(after), fresh file \(freshLogical) (logical), \(fileSize(freshPath)) (physical)")
            #expect(after < churned / 2, "compaction gave back the churn's free space")
            #expect(Double(after) <= Double(freshLogical) * 1.10, "within 10% of a fresh file with the same rows")
            check(cs_file_verify(path), "verifies")
        }
    }

    @Test func writeCopyIsTheReadVersionWhileAWriterGoesOn() throws {
        try withTempDir { dir in
            let path = dir.path("src.cstore")
            try FileManager.default.copyItem(atPath: goldenV2.path, toPath: path)
            let db = try DB(path, flags: 0)
            try churn(db, rows: 1000)
            let reader = try db.begin(CS_TXN_READ)
            let want = try contentsAndIndexDump(reader)
            let version = cs_txn_version(reader)
            // a writer commits from another thread while the copy is written
            let writer = Thread {
                guard let other = try? DB(path, flags: 0) else { return }
                defer { other.close() }
                for i in 0..<50 {
                    try? other.write { txn throws in
                        let t = try findTable(txn, "Churn")
                        var o = try createObj(txn, t)
                        try must(setVal(&o, 0, .int(Int64(100_000 + i))), "set")
                    }
                }
            }
            writer.start()
            let copy = dir.path("copy.cstore")
            #expect(check(cs_txn_write_copy(reader, copy, nil, nil), "cs_txn_write_copy"))
            #expect(cs_txn_write_copy(reader, copy, nil, nil) == Int32(CS_EXISTS), "an existing target is refused")
            #expect(String(cString: cs_errmsg()).contains("exists"))
            check(cs_txn_end(reader))
            #expect(waitUntil(seconds: 60) { writer.isFinished })
            check(cs_file_verify(copy), "the copy verifies")
            let c = try DB(copy, flags: 0)
            #expect(cs_db_version(c.h) == version)
            #expect(try c.read { try contentsAndIndexDump($0) } == want)
            #expect(try c.stats().free_bytes == 0)
            c.close()

            let w = try db.begin(CS_TXN_WRITE)
            #expect(cs_txn_write_copy(w, dir.path("w.cstore"), nil, nil) == Int32(CS_MISUSE), "not from a write transaction")
            check(cs_txn_end(w))
            #expect(!FileManager.default.fileExists(atPath: dir.path("w.cstore")))
            db.close()
        }
    }

    @Test func inPlaceCompactionNeedsTheFileToItself() throws {
        try withTempDir { dir in
            let path = dir.path("shared.cstore")
            let db = try DB(path)
            try churn(db, rows: 500)
            // another handle in this process
            var (rc, _) = compact(path)
            #expect(rc == Int32(CS_BUSY))
            #expect(String(cString: cs_errmsg()).contains("other handle"), "\(lastMessage())")
            db.close()

            // another process
            let log = dir.path("pin.log")
            let pinner = try Child(["pin", path, log], in: dir)
            defer { pinner.killNow() }
            #expect(waitUntil(seconds: 30) { readText(log).contains("pinned") }, "\(pinner.stderr)")
            let sizeBefore = fileSize(path)
            (rc, _) = compact(path)
            #expect(rc == Int32(CS_BUSY))
            let msg = lastMessage()
            #expect(msg.contains("pid \(pinner.pid)"), "the message names the process: \(msg)")
            #expect(fileSize(path) == sizeBefore && !FileManager.default.fileExists(atPath: path + ".compact"))
            pinner.killNow()
            // once it is gone the file is the compactor's
            (rc, _) = compact(path)
            #expect(check(rc, "cs_db_compact after the other process ended"))
            check(cs_file_verify(path))
        }
    }
}

// MARK: - power cuts

/// A cs_io that passes every call through and records the writes, syncs, renames, unlinks and
/// directory syncs ("events") with, per file, the bytes that were synced. From event `cutBefore`
/// on, every such call fails with EIO (the power is gone).
final class CompactCutIO {
    enum Event: Equatable, CustomStringConvertible {
        case write(String), sync(String), rename(String, String), unlink(String), syncDir
        var description: String {
            switch self {
            case .write(let p): return "write \(URL(fileURLWithPath: p).lastPathComponent)"
            case .sync(let p): return "fdatasync \(URL(fileURLWithPath: p).lastPathComponent)"
            case .rename(let a, let b): return "rename \(URL(fileURLWithPath: a).lastPathComponent) -> \(URL(fileURLWithPath: b).lastPathComponent)"
            case .unlink(let p): return "unlink \(URL(fileURLWithPath: p).lastPathComponent)"
            case .syncDir: return "sync dir"
            }
        }
    }

    var cutBefore = Int.max
    var events: [Event] = []
    var fdPath: [Int32: String] = [:]
    var pending: [String: [(Int, [UInt8])]] = [:] // writes since the last sync, per path
    var synced: [String: [UInt8]] = [:]           // per path, the image at its last sync
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, path, flags, mode in
            let me = Unmanaged<CompactCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            let fd = Glibc.open(path!, flags, mode)
            if fd >= 0 { me.fdPath[fd] = String(cString: path!) }
            return fd
        }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<CompactCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            let p = me.fdPath[fd] ?? "?"
            guard me.event(.write(p)) else { errno = EIO; return -1 }
            let r = Glibc.pwrite(fd, buf, n, off)
            if r > 0 { me.pending[p, default: []].append((Int(off), Array(UnsafeRawBufferPointer(start: buf, count: r)))) }
            return r
        }
        x.fdatasync = { ctx, fd in
            let me = Unmanaged<CompactCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            let p = me.fdPath[fd] ?? "?"
            guard me.event(.sync(p)) else { errno = EIO; return -1 }
            var img = me.synced[p] ?? []
            for (off, bytes) in me.pending[p] ?? [] {
                if img.count < off + bytes.count { img += [UInt8](repeating: 0, count: off + bytes.count - img.count) }
                img.replaceSubrange(off..<off + bytes.count, with: bytes)
            }
            me.synced[p] = img
            me.pending[p] = []
            return Glibc.fdatasync(fd)
        }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.rename = { ctx, a, b in
            let me = Unmanaged<CompactCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            guard me.event(.rename(String(cString: a!), String(cString: b!))) else { errno = EIO; return -1 }
            return Glibc.rename(a!, b!)
        }
        x.unlink = { ctx, p in
            let me = Unmanaged<CompactCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            guard me.event(.unlink(String(cString: p!))) else { errno = EIO; return -1 }
            return Glibc.unlink(p!)
        }
        x.sync_dir = { ctx, d in
            let me = Unmanaged<CompactCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            guard me.event(.syncDir) else { errno = EIO; return -1 }
            let fd = Glibc.open(d!, O_RDONLY | O_DIRECTORY)
            if fd < 0 { return -1 }
            defer { Glibc.close(fd) }
            return Glibc.fsync(fd)
        }
        x.ctx = nil
        io.pointee = x
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit { io.deallocate() }

    func event(_ e: Event) -> Bool {
        if events.count >= cutBefore { return false }
        events.append(e)
        return true
    }
}

extension CompactTests {
    @Test func powerCutAtEveryStepLeavesTheOldFileOrTheNewOne() throws {
        try withTempDir { dir in
            // the original: a churned copy of the golden file
            let seed = dir.path("seed.cstore")
            try FileManager.default.copyItem(atPath: goldenV2.path, toPath: seed)
            let db = try DB(seed, flags: 0, durability: CS_DURABILITY_FULL)
            try churn(db, rows: 2000)
            let want = try db.read { try contentsAndIndexDump($0) }
            db.close()
            try? FileManager.default.removeItem(atPath: seed + ".lock")
            let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: seed)))

            let path = dir.path("db.cstore")
            let tmp = path + ".compact"
            func checkState(_ bytes: [UInt8], _ what: String) throws {
                let probe = dir.path("probe.cstore")
                try? FileManager.default.removeItem(atPath: probe)
                try? FileManager.default.removeItem(atPath: probe + ".lock")
                try Data(bytes).write(to: URL(fileURLWithPath: probe))
                #expect(check(cs_file_verify(probe), "\(what): verifies"))
                let p = try DB(probe, flags: 0)
                #expect(try p.read { try contentsAndIndexDump($0) } == want, "\(what): same contents")
                p.close()
            }

            // a full run first, to count the events
            try Data(original).write(to: URL(fileURLWithPath: path))
            let full = CompactCutIO()
            #expect(check(compact(path, io: full.io).0, "uncut compaction"))
            let total = full.events.count
            #expect(total >= 4, "\(full.events)")
            #expect(full.events.contains(.rename(tmp, path)))
            #expect(full.events.last == .syncDir, "the directory is synced after the rename: \(full.events)")
            #expect(!full.events.contains(.write(path)), "the original is never written")

            for cut in 0...total {
                for p in [path, path + ".lock", tmp, tmp + ".lock"] { try? FileManager.default.removeItem(atPath: p) }
                try Data(original).write(to: URL(fileURLWithPath: path))
                let io = CompactCutIO()
                io.cutBefore = cut
                let rc = compact(path, io: io.io).0
                let what = "power cut before event \(cut) (\(cut < total ? full.events[cut].description : "none"))"
                #expect((rc == Int32(CS_OK)) == (cut == total), "\(what): \(codeName(rc))")
                // what the disk holds: the rename is durable only once the directory synced
                let renamed = io.events.contains(.rename(tmp, path))
                let dirSynced = renamed && io.events.firstIndex(of: .syncDir).map { $0 > io.events.firstIndex(of: .rename(tmp, path))! } == true
                let newImage = io.synced[tmp] ?? []
                if !renamed {
                    try checkState(original, "\(what), old file")
                } else {
                    try checkState(newImage, "\(what), new file")
                    if !dirSynced { try checkState(original, "\(what), rename lost") }
                }
                // the live directory also holds a file that opens, and a later compaction
                // clears whatever the cut left behind
                check(cs_file_verify(path), "\(what): the path opens")
                for p in [path + ".lock"] { try? FileManager.default.removeItem(atPath: p) }
                #expect(check(compact(path).0, "\(what): compaction afterwards"))
                #expect(!FileManager.default.fileExists(atPath: tmp))
            }
        }
    }
}

/// The system calls, with a hook run just before the rename of an in-place compaction.
final class RenameHookIO {
    var beforeRename: () -> Void = {}
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { _, path, flags, mode in Glibc.open(path!, flags, mode) }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { _, fd, buf, n, off in Glibc.pwrite(fd, buf, n, off) }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.rename = { ctx, a, b in
            Unmanaged<RenameHookIO>.fromOpaque(ctx!).takeUnretainedValue().beforeRename()
            return Glibc.rename(a!, b!)
        }
        io.pointee = x
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit { io.deallocate() }
}

extension CompactTests {
    @Test func aProcessThatOpenedTheOldFileWritesToTheNewOne() throws {
        // A process opens the file while it is being compacted: it has the old file open and
        // waits to join the lock file. After the rename it must find the new file at the path
        // and write there (file.c re-checks the path after joining); writes to the old, unlinked
        // file would be lost.
        try withTempDir { dir in
            let path = dir.path("shared.cstore")
            try runChild(["setup", path], in: dir)
            let hook = RenameHookIO()
            var child: Child?
            var sawOldFileOpen = false
            hook.beforeRename = {
                child = try? Child(["increment", path, "1", "20"], in: dir)
                guard let pid = child?.pid else { return }
                // wait until the child has the old file open (it then waits on the lock file)
                sawOldFileOpen = waitUntil(seconds: 30) {
                    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
                    return fds.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == path }
                }
                usleep(100_000)
            }
            #expect(check(compact(path, io: hook.io).0, "cs_db_compact"))
            #expect(sawOldFileOpen, "the child opened the old file before the rename")
            guard let c = child else { Issue.record("no child"); return }
            #expect(c.wait(seconds: 60), "the child finished")
            #expect(c.succeeded, "\(c.summary)")
            let db = try DB(path, flags: 0)
            let n = try db.read { txn -> Int64 in
                var o = try openObj(txn, try findTable(txn, "Counter"), 0)
                return try getInt(&o, 0)
            }
            #expect(n == 20, "the child's 20 commits are in the file at the path")
            db.verify()
            db.close()
        }
    }
}
