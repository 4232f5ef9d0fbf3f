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
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { _, path, flags, mode in Glibc.open(path!, flags, mode) }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.full() {
                if me.firstFailedWrite == nil && me.calls == me.failAt { me.firstFailedWrite = (Int(off), n) }
                errno = ENOSPC
                return -1
            }
            return Glibc.pwrite(fd, buf, n, off)
        }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.allocate = { ctx, fd, off, len in
            let me = Unmanaged<DiskFullIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.allocations += 1
            if me.failAllocations || me.full() { me.failed = true; errno = ENOSPC; return -1 }
            let r = posix_fallocate(fd, off, len)
            if r != 0 { errno = r; return -1 }
            return 0
        }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
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
                // failure there is reported to nobody, docs/FORMAT.md §13)
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
                // reports nothing: every commit returned, and the journal still holds them
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
}
