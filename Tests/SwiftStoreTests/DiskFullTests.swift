import CStore
import Foundation
import Testing
@testable import SwiftStore
#if canImport(Glibc)
import Glibc
#endif

/// A cs_io that passes every call to the system but can fail, with ENOSPC, the n-th write or
/// allocation it sees from the moment it is armed (the disk filling up at that point).
final class DiskFullIO: @unchecked Sendable {
    /// Calls (writes and allocations) from arming until the first failing one; nil: disarmed.
    var failAt: Int?
    /// Fail every allocation (and nothing else).
    var failAllocations = false
    /// Allocations seen.
    var allocations = 0
    /// Writes and allocations seen since arming.
    var calls = 0
    /// True once a call has been failed.
    var failed = false
    /// The first failed write: offset and length (nil: none, or an allocation failed first).
    var firstFailedWrite: (off: Int, n: Int)?
    /// A nearly full disk: the bytes files may still grow by (nil: no limit). A write past a
    /// file's end and an allocation use them up; a write that needs more writes what fits and
    /// returns the short count (the next one fails with ENOSPC), as a file system does; a
    /// truncation gives back what it cuts.
    var freeBytes: Int?
    /// Refuse (ENOSPC) the creation of a journal (`<file>.journal`) that does not exist.
    var failJournalCreate = false
    /// Journal creations refused.
    var journalCreateRefusals = 0
    /// Bytes written into journals (every write that returned a count).
    var journalBytes = 0
    /// Allocations asked of journals, and those refused.
    var journalAllocations = 0
    var journalAllocationRefusals = 0
    private var journalFDs = Set<Int32>()
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, path, flags, mode in
            let me = Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue()
            let journal = String(cString: path!).hasSuffix(".journal")
            if journal && me.failJournalCreate && flags & O_CREAT != 0 && access(path!, F_OK) != 0 {
                me.journalCreateRefusals += 1
                errno = ENOSPC
                return -1
            }
            let fd = Glibc.open(path!, flags, mode)
            if fd >= 0 && journal { me.journalFDs.insert(fd) }
            return fd
        }
        x.close = { ctx, fd in
            Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue().journalFDs.remove(fd)
            return Glibc.close(fd)
        }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue()
            let w = me.write(fd, buf, n, off)
            if w > 0 && me.journalFDs.contains(fd) { me.journalBytes += w }
            return w
        }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { ctx, fd, size in
            let me = Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue()
            if let free = me.freeBytes {
                var st = stat()
                if Glibc.fstat(fd, &st) == 0 && Int(st.st_size) > Int(size) { me.freeBytes = free + Int(st.st_size) - Int(size) }
            }
            return Glibc.ftruncate(fd, size)
        }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.allocate = { ctx, fd, off, len in
            let me = Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.allocations += 1
            let journal = me.journalFDs.contains(fd)
            if journal { me.journalAllocations += 1 }
            if me.failAllocations || me.full() {
                me.failed = true
                if journal { me.journalAllocationRefusals += 1 }
                errno = ENOSPC
                return -1
            }
            if let free = me.freeBytes {
                var st = stat()
                let size = Glibc.fstat(fd, &st) == 0 ? Int(st.st_size) : 0
                let growth = max(0, Int(off + len) - size)
                if growth > free {
                    me.failed = true
                    if journal { me.journalAllocationRefusals += 1 }
                    errno = ENOSPC
                    return -1
                }
                me.freeBytes = free - growth
            }
            let r = posix_fallocate(fd, off, len)
            if r != 0 { errno = r; return -1 }
            return 0
        }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    /// A write through the layer: ENOSPC once the disk is full, what fits on a nearly full one.
    private func write(_ fd: Int32, _ buf: UnsafeRawPointer?, _ n: Int, _ off: off_t) -> Int {
        if full() {
            if firstFailedWrite == nil && calls == failAt { firstFailedWrite = (Int(off), n) }
            errno = ENOSPC
            return -1
        }
        if let free = freeBytes {
            var st = stat()
            let size = Glibc.fstat(fd, &st) == 0 ? Int(st.st_size) : 0
            let growth = max(0, Int(off) + n - size)
            let fits = growth <= free ? n : max(0, size + free - Int(off))
            if fits == 0 { failed = true; errno = ENOSPC; return -1 }
            let w = Glibc.pwrite(fd, buf, fits, off)
            if w > 0 { freeBytes = free - max(0, Int(off) + w - size) }
            return w
        }
        return Glibc.pwrite(fd, buf, n, off)
    }

    private func full() -> Bool {
        guard let n = failAt else { return false }
        calls += 1
        if calls >= n { failed = true; return true }
        return false
    }

    /// Routes opens of `path` through this layer until `detach`.
    func attach(_ path: String) {
        RealmCore.ioForTesting.withLock { $0[path] = UInt(bitPattern: io) }
    }

    func detach(_ path: String) {
        RealmCore.ioForTesting.withLock { $0[path] = nil }
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }
}

final class DiskFullItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var payload = ""
}

/// A full disk seen through the Swift API (docs/FORMAT.md, Allocation): every write and
/// allocation the library makes can fail with ENOSPC; each such failure is a thrown
/// `outOfDiskSpace`, and the file reopens with every earlier commit.
@Suite(.serialized) struct DiskFullTests {
    /// Opening a new file allocates the lock file's blocks before mapping it.
    @Test func lockFileAllocationFailureThrows() throws {
        let dir = TempDir()
        let path = dir.file().path
        let io = DiskFullIO()
        io.attach(path)
        defer { io.detach(path) }
        io.failAllocations = true
        // no block can be allocated: the lock file cannot be made, and that is an error
        #expect {
            _ = try Realm(configuration: dir.config([DiskFullItem.self]))
        } throws: { ($0 as? Realm.Error)?.code == .outOfDiskSpace }
        #expect(io.allocations > 0)
        // the lock file's own allocation, once the database file's first writes went through
        for n in 2..<40 {
            let d2 = TempDir()
            let p2 = d2.file().path
            let io2 = DiskFullIO()
            io2.attach(p2)
            defer { io2.detach(p2) }
            io2.failAt = n
            do {
                // (judged before the Realm closes: the close's checkpoint writes too, and a
                // failure there is only logged, docs/FORMAT.md §13)
                let failedInOpen = try withExtendedLifetime(Realm(configuration: d2.config([DiskFullItem.self]))) { io2.failed }
                // a journaled commit's header write follows its commit point: the commit is
                // durable, and says so (docs/FORMAT.md §13, Commit step 4)
                if failedInOpen, let w = io2.firstFailedWrite, w.off == 0 && w.n == 192 { continue }
                #expect(!failedInOpen, "open at call \(n) succeeded although a call failed")
                break
            } catch let e as Realm.Error {
                #expect(e.code == .outOfDiskSpace, "call \(n): \(e)")
            }
        }
    }

    /// The database file's growth is allocated: a commit that needs more of the file than the
    /// disk has fails, and the file keeps its earlier commits.
    @Test func growthAllocationFailureThrows() throws {
        let dir = TempDir()
        let path = dir.file().path
        let io = DiskFullIO()
        io.attach(path)
        defer { io.detach(path) }
        let config = dir.config([DiskFullItem.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write { realm.add(DiskFullItem(value: ["id": 1, "payload": "a"])) }
            io.io.pointee.allocate = { ctx, _, _, _ in
                let me = Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue()
                me.calls += 1
                errno = ENOSPC
                return -1
            }
            let big = String(repeating: "x", count: 4000)
            #expect {
                try realm.write { for i in 2..<2000 { realm.add(DiskFullItem(value: ["id": i, "payload": big])) } }
            } throws: { ($0 as? Realm.Error)?.code == .outOfDiskSpace }
            #expect(io.calls > 0, "the growth was not allocated")
            #expect(realm.objects(DiskFullItem.self).count == 1)
        }
        io.detach(path)
        let again = try Realm(configuration: config)
        #expect(again.objects(DiskFullItem.self).count == 1)
    }

    /// The disk fills at every write and allocation of a workload in turn (open, first write,
    /// growth, commits): each ends in `outOfDiskSpace` and the file, reopened on a disk with
    /// room, holds every commit that returned.
    @Test func diskFullAtEveryPoint() throws {
        let full = ProcessInfo.processInfo.environment["STORE_FULL_CAMPAIGN"] != nil
        let commits = full ? 12 : 6
        var points = 0
        var headerPoints = 0
        var n = 1
        while true {
            let dir = TempDir()
            let path = dir.file().path
            let config = dir.config([DiskFullItem.self])
            let io = DiskFullIO()
            io.attach(path)
            io.failAt = n
            var done = 0
            var caught: Realm.Error?
            do {
                let realm = try Realm(configuration: config)
                for c in 0..<commits {
                    let payload = String(repeating: "p", count: c % 3 == 2 ? 300_000 : 100)
                    try realm.write { realm.add(DiskFullItem(value: ["id": c, "payload": payload])) }
                    done += 1
                }
            } catch let e as Realm.Error {
                caught = e
            }
            io.detach(path)
            if !io.failed {
                #expect(caught == nil)
                #expect(done == commits)
                break
            }
            points += 1
            if caught == nil {
                // the disk filled in the checkpoint of the last close (docs/FORMAT.md §13), which
                // only logs: every commit returned, and the journal still holds them
                #expect(done == commits, "point \(n): no error, yet \(done) of \(commits) commits")
            } else {
                #expect(caught?.code == .outOfDiskSpace, "point \(n): \(String(describing: caught))")
            }
            // the header write follows the commit point (the journal's sync, docs/FORMAT.md §13):
            // a commit whose header write failed is durable and returned, and the next one fails
            if io.firstFailedWrite.map({ $0.off == 0 && $0.n == 192 }) ?? false { headerPoints += 1 }
            if FileManager.default.fileExists(atPath: path),
               let realm = try? Realm(configuration: config) {
                let ids = Set(realm.objects(DiskFullItem.self).map(\.id))
                #expect(ids == Set(0..<done), "point \(n): \(ids.sorted()) after \(done) commits")
                #expect(cs_file_verify(path) == 0, "point \(n): \(String(cString: cs_errmsg()))")
            } else {
                #expect(done == 0, "point \(n): the file does not reopen after \(done) commits")
            }
            n += 1
        }
        #expect(points > commits)
        #expect(headerPoints > 0, "the disk filled at a journaled commit's header write")
        print("disk full: \(points) failure points, each reopened with every earlier commit")
    }
    /// Collects the core's messages about `path` through the Logger while `body` runs (the
    /// sink of LoggerConformanceTests; the Logger is process-wide, so messages are told apart
    /// by path, and it is replaced under processLogLock).
    private func logged(_ path: String, _ body: () throws -> Void) rethrows -> [(LogLevel, String)] {
        let sink = CfLogSink()
        processLogLock.lock()
        defer { processLogLock.unlock() }
        let saved = Logger.shared
        let savedLevel = Logger.shared.level
        defer { Logger.shared = saved; Logger.shared.level = savedLevel }
        Logger.shared = Logger(function: { level, category, message in sink.add(level, category.rawValue, message) })
        Logger.shared.level = .info
        try body()
        return sink.messages(containing: path).map { ($0.0, $0.2) }
    }

    /// A file with one object (id 0), closed, its journal removed (as for a new file, or one an
    /// older library wrote): the session's first durable commit must make the journal.
    private func fileWithoutItsJournal() throws -> (TempDir, String, Realm.Configuration) {
        let dir = TempDir()
        let path = dir.file().path
        let config = dir.config([DiskFullItem.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write { realm.add(DiskFullItem(value: ["id": 0, "payload": "a"])) }
        }
        try FileManager.default.removeItem(atPath: path + ".journal")
        return (dir, path, config)
    }

    /// A nearly full disk: the journal cannot get its space (docs/FORMAT.md §13), but a small
    /// durable commit fits in place with one sync, as before the journal. The commits fall
    /// back to that instead of failing, the log says so once, and the file reopens with every
    /// commit and verifies.
    @Test func aNearlyFullDiskFallsBackToCommitsWithoutTheJournal() throws {
        // a clean close leaves an empty journal; without one, the session's first checkpoint
        // must make it (as for a new file, or one an older library wrote)
        let (dir, path, config) = try fileWithoutItsJournal()
        defer { dir.remove() }
        let io = DiskFullIO()
        io.attach(path)
        defer { io.detach(path) }
        io.freeBytes = 256 << 10
        let messages = try logged(path) {
            let realm = try Realm(configuration: config)
            for i in 1...4 {
                try realm.write { realm.add(DiskFullItem(value: ["id": i, "payload": "p\(i)"])) }
            }
        }
        let fallbacks = messages.filter { $0.1.contains("journal") && $0.1.contains("without") }
        #expect(fallbacks.count == 1, "said once: \(messages.map(\.1))")
        #expect(fallbacks.first?.0 == .warn)
        #expect(io.freeBytes ?? 0 > 0, "the failed growth of the journal was given back")
        io.detach(path)
        let again = try Realm(configuration: config)
        #expect(Set(again.objects(DiskFullItem.self).map(\.id)) == Set(0...4))
        #expect(cs_file_verify(path) == 0, "\(String(cString: cs_errmsg()))")
    }

    /// A disk too full for the journal's first 1 MiB (docs/FORMAT.md §13, Commit step 1): every
    /// durable commit falls back to an in-place one and asks for the journal's space again, by
    /// an allocation, which writes nothing; it never writes zeros into the journal only to cut
    /// them back. The first commit after the disk has room again is journaled.
    @Test func commitsOnAFullDiskWriteNothingIntoTheJournal() throws {
        let (dir, path, config) = try fileWithoutItsJournal()
        defer { dir.remove() }
        let io = DiskFullIO()
        io.attach(path)
        defer { io.detach(path) }
        io.freeBytes = 256 << 10
        var records: UInt64 = 9, bytes: UInt64 = 0
        do {
            let realm = try Realm(configuration: config)
            for i in 1...8 {
                try realm.write { realm.add(DiskFullItem(value: ["id": i, "payload": "p\(i)"])) }
            }
            #expect(io.journalBytes == 0, "bytes written into the journal by 8 commits on a full disk: \(io.journalBytes)")
            #expect(io.journalAllocationRefusals >= 8, "each commit asked for the space: \(io.journalAllocationRefusals)")
            #expect(cs_file_journal_info(path, &records, &bytes) == 0 && records == 0, "no record: \(records)")
            io.freeBytes = nil
            try realm.write { realm.add(DiskFullItem(value: ["id": 9, "payload": "p9"])) }
            #expect(cs_file_journal_info(path, &records, &bytes) == 0 && records == 1, "journaled again: \(records)")
        }
        io.detach(path)
        let again = try Realm(configuration: config)
        #expect(Set(again.objects(DiskFullItem.self).map(\.id)) == Set(0...9))
        #expect(cs_file_verify(path) == 0, "\(String(cString: cs_errmsg()))")
    }

    /// A disk too full to create the journal at all (docs/FORMAT.md §13, Commit step 1): the
    /// commits are made in place, and the log says so once, as a warning naming the file.
    @Test func aJournalTheDiskCannotCreateIsLoggedOnce() throws {
        let (dir, path, config) = try fileWithoutItsJournal()
        defer { dir.remove() }
        let io = DiskFullIO()
        io.attach(path)
        defer { io.detach(path) }
        io.failJournalCreate = true
        let messages = try logged(path) {
            let realm = try Realm(configuration: config)
            for i in 1...3 {
                try realm.write { realm.add(DiskFullItem(value: ["id": i, "payload": "p\(i)"])) }
            }
        }
        #expect(io.journalCreateRefusals >= 3, "each commit tried to create it: \(io.journalCreateRefusals)")
        #expect(!FileManager.default.fileExists(atPath: path + ".journal"))
        let warnings = messages.filter { $0.0 == .warn }
        #expect(warnings.count == 1, "said once: \(messages.map(\.1))")
        #expect(warnings.first?.1.hasPrefix("The disk is too full for the journal of \(path) (disk full while creating the journal") == true,
                "\(warnings.map(\.1))")
        #expect(warnings.first?.1.contains("in place with one sync each") == true, "\(warnings.map(\.1))")
        io.detach(path)
        let again = try Realm(configuration: config)
        #expect(Set(again.objects(DiskFullItem.self).map(\.id)) == Set(0...3))
    }

    /// The checkpoint at the last close fails (the disk filled): nobody can be told through a
    /// return value, so the core logs a warning; the journal keeps the commits and the next
    /// open replays them.
    @Test func aFailedCheckpointAtTheLastCloseIsLoggedAndReplayedByTheNextOpen() throws {
        let dir = TempDir()
        let path = dir.file().path
        let config = dir.config([DiskFullItem.self])
        let io = DiskFullIO()
        io.attach(path)
        defer { io.detach(path) }
        let messages = try logged(path) {
            let realm = try Realm(configuration: config)
            for i in 0..<3 {
                try realm.write { realm.add(DiskFullItem(value: ["id": i, "payload": "p\(i)"])) }
            }
            io.failAt = 1 // the close's checkpoint makes the next write
        }
        #expect(io.failed, "the checkpoint at the close failed")
        let warnings = messages.filter { $0.0 == .warn && $0.1.contains("checkpoint") }
        #expect(warnings.count == 1, "\(messages.map(\.1))")
        var records: UInt64 = 0, bytes: UInt64 = 0
        #expect(cs_file_journal_info(path, &records, &bytes) == 0 && records > 0, "the journal keeps the commits: \(records)")
        io.detach(path)
        let reopened = try logged(path) {
            let again = try Realm(configuration: config)
            #expect(Set(again.objects(DiskFullItem.self).map(\.id)) == Set(0..<3))
        }
        #expect(reopened.contains { $0.1.hasPrefix("Recovered") }, "\(reopened.map(\.1))")
        #expect(cs_file_verify(path) == 0, "\(String(cString: cs_errmsg()))")
    }
}
