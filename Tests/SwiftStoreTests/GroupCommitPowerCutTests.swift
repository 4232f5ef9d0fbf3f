import CStore
import Foundation
import Testing
@testable import SwiftStore
#if canImport(Glibc)
import Glibc
#endif

/// A cs_io that passes every call to the system and keeps, for the database file and its commit
/// journal (`<file>.journal`, docs/FORMAT.md §13), the bytes a power cut would leave: writes are
/// pending until a sync of their file applies them. Each sync also records its file's image
/// before it, the writes it made durable and the other file's synced image, so a test can
/// rebuild both files as a cut at any point of that sync would leave them.
final class PowerCutImageIO: @unchecked Sendable {
    enum Op {
        case write(off: Int, bytes: [UInt8])
        case truncate(size: Int)
    }

    struct Sync {
        let journal: Bool   // a sync of the journal (else of the database file)
        let before: [UInt8]
        let ops: [Op]
        let other: [UInt8]  // the other file's synced image then
    }

    let io: UnsafeMutablePointer<cs_io>
    private let lock = NSLock()
    private let path: String
    private var fds: Set<Int32> = []
    private var pending: [Op] = []
    private var image: [UInt8]
    private var jfds: Set<Int32> = []
    private var jpending: [Op] = []
    private var jimage: [UInt8] = []
    private var log: [Sync] = []

    /// Tracks the database file at `path`, whose durable bytes are `initial`.
    init(path: String, initial: [UInt8]) {
        self.path = path
        image = initial
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, p, flags, mode in
            let fd = Glibc.open(p!, flags, mode)
            let me = Unmanaged<PowerCutImageIO>.fromOpaque(ctx!).takeUnretainedValue()
            if fd >= 0 && String(cString: p!) == me.path { _ = me.locked { me.fds.insert(fd) } }
            if fd >= 0 && String(cString: p!) == me.path + ".journal" { _ = me.locked { me.jfds.insert(fd) } }
            return fd
        }
        x.close = { ctx, fd in
            let me = Unmanaged<PowerCutImageIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.locked {
                _ = me.fds.remove(fd)
                _ = me.jfds.remove(fd)
            }
            return Glibc.close(fd)
        }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let w = Glibc.pwrite(fd, buf, n, off)
            let me = Unmanaged<PowerCutImageIO>.fromOpaque(ctx!).takeUnretainedValue()
            if w > 0 {
                let bytes = Array(UnsafeRawBufferPointer(start: buf, count: w))
                me.locked {
                    if me.fds.contains(fd) { me.pending.append(.write(off: Int(off), bytes: bytes)) }
                    if me.jfds.contains(fd) { me.jpending.append(.write(off: Int(off), bytes: bytes)) }
                }
            }
            return w
        }
        x.fdatasync = { ctx, fd in
            let me = Unmanaged<PowerCutImageIO>.fromOpaque(ctx!).takeUnretainedValue()
            let r = Glibc.fdatasync(fd)
            if r == 0 {
                me.locked {
                    if me.jfds.contains(fd) {
                        me.log.append(Sync(journal: true, before: me.jimage, ops: me.jpending, other: me.image))
                        for op in me.jpending { PowerCutImageIO.apply(op, to: &me.jimage) }
                        me.jpending = []
                    }
                    guard me.fds.contains(fd) else { return }
                    me.log.append(Sync(journal: false, before: me.image, ops: me.pending, other: me.jimage))
                    for op in me.pending { PowerCutImageIO.apply(op, to: &me.image) }
                    me.pending = []
                }
            }
            return r
        }
        // the commit's stores through its writable mapping (docs/ARCHITECTURE.md, Writes
        // through a mapping), pending like a pwrite's
        x.write_mapped = { ctx, fd, map, buf, n, off in
            let me = Unmanaged<PowerCutImageIO>.fromOpaque(ctx!).takeUnretainedValue()
            let bytes = Array(UnsafeRawBufferPointer(start: buf, count: n))
            me.locked { if me.fds.contains(fd) { me.pending.append(.write(off: Int(off), bytes: bytes)) } }
            memcpy(map! + Int(off), buf!, n)
            return 0
        }
        x.ftruncate = { ctx, fd, size in
            let r = Glibc.ftruncate(fd, size)
            let me = Unmanaged<PowerCutImageIO>.fromOpaque(ctx!).takeUnretainedValue()
            if r == 0 { me.locked { if me.fds.contains(fd) { me.pending.append(.truncate(size: Int(size))) } } }
            return r
        }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    private func locked<R>(_ body: () -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    static func apply(_ op: Op, to image: inout [UInt8]) {
        switch op {
        case .write(let off, let bytes):
            if image.count < off + bytes.count { image += [UInt8](repeating: 0, count: off + bytes.count - image.count) }
            image.replaceSubrange(off..<off + bytes.count, with: bytes)
        case .truncate(let size):
            if size < image.count { image.removeSubrange(size...) } else { image += [UInt8](repeating: 0, count: size - image.count) }
        }
    }

    /// What a power cut now would leave of the database file and of the journal.
    var syncedImage: [UInt8] { locked { image } }
    var syncedJournal: [UInt8] { locked { jimage } }
    /// The syncs made so far.
    var syncs: [Sync] { locked { log } }

    func attach() { RealmCore.ioForTesting.withLock { $0[path] = UInt(bitPattern: io) } }
    func detach() { RealmCore.ioForTesting.withLock { $0[path] = nil } }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }
}

/// Power cuts over the commits of grouped asynchronous writes, through the I/O layer.
@Suite struct GroupCommitPowerCutTests {
    /// The names of the Dogs in a file holding `image` (nil when it does not open).
    static func names(in image: [UInt8], journal: [UInt8], dir: TempDir, _ n: Int) -> Set<String>? {
        let url = dir.file("cut\(n).realm")
        guard (try? Data(image).write(to: url)) != nil,
              (try? Data(journal).write(to: URL(fileURLWithPath: url.path + ".journal"))) != nil else { return nil }
        defer {
            try? FileManager.default.removeItem(at: url)
            try? FileManager.default.removeItem(atPath: url.path + ".lock")
            try? FileManager.default.removeItem(atPath: url.path + ".journal")
        }
        let config = Realm.Configuration(fileURL: url, objectTypes: objectModels)
        guard let realm = try? Realm(configuration: config) else { return nil }
        return Set(realm.objects(Dog.self).map(\.name))
    }

    /// Groups of asynchronous writes: a cut right after any completion leaves every write whose
    /// completion ran; a cut at any point of a group's commit (any prefix of its writes reached
    /// the disk, in order, or any one of them alone went missing) leaves the file as it was
    /// before the group or with the whole group, never damaged and never part of a group.
    @Test func aCutLeavesWholeGroupsAndEveryCompletedWrite() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        // the file is created through the I/O layer too: every byte of it is tracked
        let io = PowerCutImageIO(path: config.path, initial: [])
        io.attach()
        defer { io.detach() }
        let thread = RunLoopThread()
        defer { thread.stop() }
        try thread.sync {
            let realm = try Realm(configuration: config)
            try realm.write { realm.add(Dog(value: ["name": "seed"])) }
        }
        let firstSyncs = io.syncs.count
        // per completion: the names completed by then and the image a cut would leave
        let cuts = UncheckedBox<[(Set<String>, [UInt8], [UInt8])]>([])
        let done = Events<Int>()
        let groups = 4, perGroup = 8
        for g in 0..<groups {
            try thread.sync {
                let realm = try Realm(configuration: config)
                for i in 0..<perGroup {
                    let name = "g\(g)-\(i)"
                    realm.writeAsync({ realm.add(Dog(value: ["name": name, "age": i])) }) { error in
                        let completed = Set((0...g).flatMap { k in (0..<(k == g ? i + 1 : perGroup)).map { "g\(k)-\($0)" } })
                        cuts.value.append((completed, io.syncedImage, io.syncedJournal))
                        done.add(error == nil ? 1 : 0)
                    }
                }
            }
            for _ in 0..<perGroup { #expect(done.next() == 1) }
        }
        try thread.sync { _ = try Realm(configuration: config).objects(Dog.self).count }

        for (n, (completed, image, journal)) in cuts.value.enumerated() {
            guard let found = Self.names(in: image, journal: journal, dir: dir, n) else {
                Issue.record("the image after completion \(n) does not open")
                continue
            }
            let missing = completed.subtracting(found)
            #expect(missing.isEmpty, "completion \(n): completed but lost in a power cut: \(missing.sorted())")
        }

        // every state of every group's commit a cut can leave
        let before = Set(["seed"])
        var states = 0
        for (s, sync) in io.syncs.enumerated() where s >= firstSyncs {
            var variants: [[PowerCutImageIO.Op]] = (0...sync.ops.count).map { Array(sync.ops.prefix($0)) }
            for skip in sync.ops.indices {
                var ops = sync.ops
                ops.remove(at: skip)
                variants.append(ops)
            }
            let (db0, j0) = sync.journal ? (sync.other, sync.before) : (sync.before, sync.other)
            let start = Self.names(in: db0, journal: j0, dir: dir, 1000 + s)
            for ops in variants {
                var image = sync.before
                for op in ops { PowerCutImageIO.apply(op, to: &image) }
                states += 1
                let (db, j) = sync.journal ? (sync.other, image) : (image, sync.other)
                guard let found = Self.names(in: db, journal: j, dir: dir, 2000 + states) else {
                    Issue.record("sync \(s): a cut left a file that does not open")
                    continue
                }
                let groupsIn = Set(found.subtracting(before).map { $0.split(separator: "-")[0] })
                for g in groupsIn {
                    let whole = Set((0..<perGroup).map { "\(g)-\($0)" })
                    #expect(whole.isSubset(of: found), "sync \(s): part of group \(g) survived a cut")
                }
                if let start {
                    #expect(start.isSubset(of: found), "sync \(s): a cut lost what an earlier sync made durable")
                }
            }
        }
        // a group's commit syncs the journal only (docs/FORMAT.md §13); the first also checkpoints
        let groupSyncs = io.syncs[firstSyncs...].filter(\.journal).count
        #expect(groupSyncs >= groups && groupSyncs < groups * perGroup,
                "\(groups * perGroup) writes in \(groups) groups took \(groupSyncs) syncs")
        #expect(states > 0)
    }
}
