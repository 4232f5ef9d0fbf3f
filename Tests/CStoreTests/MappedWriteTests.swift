// A commit's in-place writes through a writable shared mapping (docs/ARCHITECTURE.md, Writes
// through a mapping): every byte stored through it lies in blocks allocated through the I/O
// layer first (never a SIGBUS: a copy of the file with holes, another process growing or
// cutting the file, a full disk), the I/O layer sees every byte, and the syncs a commit makes
// leave no page written through the mapping dirty.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// True when `path` lies on ext4 (or ext2/3), the file systems the mapping path is taken on:
/// the type of the mount (in /proc/mounts) that holds it.
func onExt4(_ path: String) -> Bool {
    let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return false }
    var best = "", type = ""
    for line in mounts.split(separator: "\n") {
        let f = line.split(separator: " ")
        guard f.count >= 3 else { continue }
        let point = String(f[1])
        let under = real == point || real.hasPrefix(point == "/" ? "/" : point + "/")
        if under && point.count >= best.count {
            best = point
            type = String(f[2])
        }
    }
    return type == "ext4" || type == "ext3" || type == "ext2"
}

/// A cs_io that passes every call to the system and keeps a model of which bytes of the
/// database file have blocks: what `allocate` and `pwrite` reached, less what a truncation cut
/// (truncations made outside the layer are told to it with `cut`). Every write through the
/// mapping is checked against the model before it is copied.
final class AllocModelIO {
    let path: String
    var dbFDs = Set<Int32>()
    var allocated = IndexSet()
    var failAllocate = false
    var mapped: [(off: Int, len: Int)] = []
    /// The order of the layer's calls: a number per allocate and per mapped write.
    var seq = 0
    var mappedSeq: [Int] = []
    var allocs: [(seq: Int, off: Int, len: Int)] = []
    var pwrites = 0
    var violations: [String] = []
    let io: UnsafeMutablePointer<cs_io>

    init(path: String) {
        self.path = path
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, p, flags, mode in
            let me = Unmanaged<AllocModelIO>.fromOpaque(ctx!).takeUnretainedValue()
            let fd = Glibc.open(p!, flags, mode)
            if fd >= 0 && String(cString: p!) == me.path { me.dbFDs.insert(fd) }
            return fd
        }
        x.close = { ctx, fd in
            let me = Unmanaged<AllocModelIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.dbFDs.remove(fd)
            return Glibc.close(fd)
        }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<AllocModelIO>.fromOpaque(ctx!).takeUnretainedValue()
            let w = Glibc.pwrite(fd, buf, n, off)
            if w > 0 && me.dbFDs.contains(fd) {
                me.pwrites += 1
                me.allocated.insert(integersIn: Int(off)..<(Int(off) + w))
            }
            return w
        }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { ctx, fd, size in
            let me = Unmanaged<AllocModelIO>.fromOpaque(ctx!).takeUnretainedValue()
            let r = Glibc.ftruncate(fd, size)
            if r == 0 && me.dbFDs.contains(fd) { me.cut(Int(size)) }
            return r
        }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.allocate = { ctx, fd, off, len in
            let me = Unmanaged<AllocModelIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.failAllocate && me.dbFDs.contains(fd) {
                errno = ENOSPC
                return -1
            }
            let r = posix_fallocate(fd, off, len)
            if r != 0 {
                errno = r
                return -1
            }
            if me.dbFDs.contains(fd) {
                me.allocated.insert(integersIn: Int(off)..<Int(off + len))
                me.seq += 1
                me.allocs.append((me.seq, Int(off), Int(len)))
            }
            return 0
        }
        x.write_mapped = { ctx, fd, map, buf, n, off in
            let me = Unmanaged<AllocModelIO>.fromOpaque(ctx!).takeUnretainedValue()
            let r = Int(off)..<(Int(off) + n)
            if !me.dbFDs.contains(fd) { me.violations.append("a mapped write to a descriptor that is not the database file's") }
            if !me.allocated.contains(integersIn: r) {
                me.violations.append("a mapped write of \(n) bytes at \(off) outside the allocated bytes")
                return 0 // not copied: the store could have raised SIGBUS
            }
            me.mapped.append((Int(off), n))
            me.seq += 1
            me.mappedSeq.append(me.seq)
            memcpy(map! + Int(off), buf!, n)
            return 0
        }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }

    /// The file was cut to `size` bytes: its blocks past it are gone.
    func cut(_ size: Int) { allocated.remove(integersIn: size..<(1 << 50)) }

    func mappedInto(_ r: Range<Int>) -> Bool { mapped.contains { $0.off < r.upperBound && $0.off + $0.len > r.lowerBound } }

    func open(durability: cs_durability = CS_DURABILITY_FULL) throws -> OpaquePointer {
        var opts = cs_options()
        opts.durability = durability
        opts.io = UnsafePointer(io)
        var h: OpaquePointer?
        try must(cs_db_open(path, &opts, &h), "cs_db_open through the allocation model")
        return h!
    }
}

/// Adds `n` objects with a `len`-byte string each to table 0 (columns v, s).
private func addRows(_ h: OpaquePointer, _ n: Int, _ len: Int, from: Int) throws {
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
    for i in 0..<n {
        var o = try createObj(t!, 0)
        try must(cs_obj_set_int(&o, 0, Int64(from + i)), "set v")
        try must(setVal(&o, 1, .str(String(repeating: "m", count: len))), "set s")
    }
    let rc = cs_txn_commit(t!)
    _ = cs_txn_end(t)
    try must(rc, "commit of \(n) rows")
}

/// Commits of 40 rows of `len`-byte strings (mostly runs under 64 KiB, stored through the
/// mapping on ext4) until one stores into `r`, at most `limit` of them; whether one did.
@discardableResult
private func commitInto(_ m: AllocModelIO, _ h: OpaquePointer, _ r: Range<Int>, from: Int, limit: Int = 150,
                        len: Int = 900) throws -> Bool {
    for k in 0..<limit {
        if m.mappedInto(r) { return true }
        try addRows(h, 40, len, from: from + 40 * k)
    }
    return m.mappedInto(r)
}

private func makeFile(_ path: String, rows: Int) throws {
    let db = try DB(path, durability: CS_DURABILITY_FULL)
    try db.write { txn in
        let t = try addTable(txn, "T")
        _ = try addColumn(txn, t, "v", CS_TYPE_INT)
        _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
    }
    try addRows(db.h, rows, 100, from: 0)
    db.close()
}

/// The dirty pages of this process's writable shared mappings of the file at `path` (its
/// `rw-s` areas in /proc/self/smaps), in kB; -1 when it has none.
private func writableMappingDirtyKB(_ path: String) -> Int {
    var st = stat()
    // read to its end (the file's size says 0)
    guard stat(path, &st) == 0, let fh = FileHandle(forReadingAtPath: "/proc/self/smaps") else { return -1 }
    defer { try? fh.close() }
    let smaps = String(decoding: fh.readDataToEndOfFile(), as: UTF8.self)
    var inArea = false, found = false, dirty = 0
    for line in smaps.split(separator: "\n") {
        let f = line.split(separator: " ", omittingEmptySubsequences: true)
        if let first = f.first, first.contains("-"), f.count >= 5, first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
            // the device (major:minor, hex) and the inode: this file and no other test's
            let dev = f[3].split(separator: ":").compactMap { UInt64($0, radix: 16) }
            let d = UInt64(st.st_dev) // glibc's encoding of major and minor (sys/sysmacros.h)
            let major = ((d >> 8) & 0xfff) | ((d >> 32) & ~UInt64(0xfff))
            let minor = (d & 0xff) | ((d >> 12) & ~UInt64(0xff))
            let sameDev = dev.count == 2 && dev[0] == major && dev[1] == minor
            inArea = f[1] == "rw-s" && UInt64(f[4]) == UInt64(st.st_ino) && sameDev
            found = found || inArea
        } else if inArea, f.count >= 2, f[0] == "Shared_Dirty:" || f[0] == "Private_Dirty:" {
            dirty += Int(f[1]) ?? 0
        }
    }
    return found ? dirty : -1
}

@Suite struct MappedWriteTests {
    /// A copy of the file with holes (its free tail never written, as a sparse copy leaves it),
    /// then another process growing the file with a hole (a growth cut short before its
    /// allocation), then cutting it and growing it again: each commit's stores through the
    /// mapping land in allocated bytes only, and the file verifies.
    @Test func everyStoreThroughTheMappingLandsInAllocatedBytes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("m.cstore")
        try makeFile(path, rows: 300)
        // a hole of 3 MiB past the end, as a sparse copy of a file with a free tail leaves it
        let size0 = fileSize(path)
        #expect(truncate(path, off_t(size0 + (3 << 20))) == 0)

        let m = AllocModelIO(path: path)
        let h = try m.open()
        defer { _ = cs_db_close(h) }
        try addRows(h, 800, 900, from: 1000) // a large commit: runs over 64 KiB go by pwrite
        let ext4 = onExt4(path)
        let intoHole = try commitInto(m, h, size0..<(size0 + (3 << 20)), from: 10_000)
        if ext4 {
            #expect(intoHole, "commits stored into the hole through the mapping")
        } else {
            #expect(m.mapped.isEmpty, "no mapping path off ext4")
        }

        // another process grows the file by a hole (its allocation never happened)
        let size1 = fileSize(path)
        #expect(truncate(path, off_t(size1 + (2 << 20))) == 0)
        let intoSecond = try commitInto(m, h, size1..<(size1 + (2 << 20)), from: 100_000, limit: 250)
        if ext4 { #expect(intoSecond, "commits stored into the second hole") }

        // another process cuts the free tail, then grows the file by a hole again
        var s = cs_db_stats()
        try must(cs_db_stats_get(h, &s), "stats")
        let cutAt = (Int(s.logical_size) + 4095) & ~4095
        let size2 = fileSize(path)
        #expect(truncate(path, off_t(cutAt)) == 0)
        m.cut(cutAt)
        let size3 = max(cutAt + (2 << 20), size2 + 8192)
        #expect(truncate(path, off_t(size3)) == 0)
        let intoThird = try commitInto(m, h, cutAt..<size3, from: 200_000, limit: 250, len: 100)
        if ext4 { #expect(intoThird, "commits stored into what was cut and grown again") }

        #expect(m.violations.isEmpty, "\(m.violations.prefix(5))")
        #expect(m.mapped.allSatisfy { $0.len <= 64 << 10 }, "runs over 64 KiB go by pwrite")
        check(cs_db_verify(h), "verify")
    }

    /// Another process cuts the free tail and grows the file back to the very size this
    /// process last saw, leaving a hole (killed between its growth's ftruncate and its
    /// allocation): the size alone does not show it, the allocated blocks do, and the next
    /// commit allocates before it stores.
    @Test func aCutFileGrownBackToTheSameSizeIsAllocatedAgain() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("h.cstore")
        try makeFile(path, rows: 300)
        let m = AllocModelIO(path: path)
        let h = try m.open(durability: CS_DURABILITY_NOSYNC)
        defer { _ = cs_db_close(h) }
        try addRows(h, 800, 900, from: 1000) // grows the file; this process allocates it
        var s = cs_db_stats()
        try must(cs_db_stats_get(h, &s), "stats")
        let size = fileSize(path), cutAt = (Int(s.logical_size) + 4095) & ~4095
        #expect(size - cutAt >= 64 << 10, "the file has a free tail to cut: \(size) bytes, logical \(cutAt)")
        #expect(truncate(path, off_t(cutAt)) == 0)
        m.cut(cutAt)
        #expect(truncate(path, off_t(size)) == 0) // the same size, a hole [cutAt, size)
        // the next commit allocates the hole before its first store through the mapping
        let seq0 = m.seq, n0 = m.mapped.count
        var t: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
        var o = try createObj(t!, 0)
        try must(cs_obj_set_int(&o, 0, 1), "set")
        try must(cs_txn_commit(t!), "commit")
        _ = cs_txn_end(t)
        if onExt4(path) {
            #expect(m.mapped.count > n0, "the commit stored through the mapping")
            let first = m.mappedSeq.count > n0 ? m.mappedSeq[n0] : Int.max
            #expect(m.allocs.contains { $0.seq > seq0 && $0.seq < first && $0.off <= cutAt && $0.off + $0.len >= size },
                    "the commit allocated [\(cutAt), \(size)) before its first store: \(m.allocs.suffix(3))")
        }
        let into = try commitInto(m, h, cutAt..<size, from: 5000, limit: 60, len: 100)
        if onExt4(path) { #expect(into, "a commit stored into the former hole") }
        #expect(m.violations.isEmpty, "\(m.violations.prefix(5))")
        check(cs_db_verify(h), "verify")
    }

    /// Steady one-row durable commits on ext4 store every run and the header through the
    /// mapping: no pwrite to the database file.
    @Test func steadyCommitsMakeNoPwriteToTheDatabaseFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("s.cstore")
        try makeFile(path, rows: 2000)
        let m = AllocModelIO(path: path)
        let h = try m.open()
        defer { _ = cs_db_close(h) }
        func setOne(_ k: Int64, _ v: Int64) throws {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            var o = try openObj(t!, 0, k)
            try must(cs_obj_set_int(&o, 0, v), "set")
            try must(cs_txn_commit(t!), "commit")
            _ = cs_txn_end(t)
        }
        var keys: [Int64] = []
        var r: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_READ), &r), "begin read")
        keys = try allKeys(r!, 0)
        _ = cs_txn_end(r)
        for i in 0..<20 { try setOne(keys[i * 37 % keys.count], -Int64(i)) } // settle (first checkpoint)
        let p0 = m.pwrites, m0 = m.mapped.count
        for i in 0..<100 {
            let before = m.mapped.count
            try setOne(keys[i * 7919 % keys.count], -Int64(i + 100))
            if onExt4(path) {
                #expect(m.mapped.count >= before + 2 && m.mapped.last?.off == 0,
                        "commit \(i): its runs, then the header last, through the mapping")
            }
        }
        if onExt4(path) {
            #expect(m.pwrites == p0, "no pwrite to the database file in 100 commits")
        } else {
            #expect(m.mapped.count == m0)
        }
        #expect(m.violations.isEmpty, "\(m.violations.prefix(5))")
        check(cs_db_verify(h), "verify")
    }

    /// A commit without a journal record (NOSYNC here) stores its runs through the mapping and
    /// writes its header with pwrite: that write is the system call that reports an I/O error
    /// of the file system before the commit reports success.
    @Test func aCommitWithoutARecordWritesItsHeaderWithPwrite() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("n.cstore")
        try makeFile(path, rows: 2000)
        let m = AllocModelIO(path: path)
        let h = try m.open(durability: CS_DURABILITY_NOSYNC)
        defer { _ = cs_db_close(h) }
        var r: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_READ), &r), "begin read")
        let keys = try allKeys(r!, 0)
        _ = cs_txn_end(r)
        for i in 0..<30 {
            let p0 = m.pwrites, m0 = m.mapped.count
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            var o = try openObj(t!, 0, keys[i * 7919 % keys.count])
            try must(cs_obj_set_int(&o, 0, -Int64(i)), "set")
            try must(cs_txn_commit(t!), "commit")
            _ = cs_txn_end(t)
            if onExt4(path) {
                #expect(m.pwrites == p0 + 1 && m.mapped.count > m0 && !m.mapped[m0...].contains { $0.off == 0 },
                        "commit \(i): its runs through the mapping, its header alone with pwrite")
            }
        }
        #expect(m.violations.isEmpty, "\(m.violations.prefix(5))")
        check(cs_db_verify(h), "verify")
    }

    /// On tmpfs no writable mapping is made (its allocation walks every page): commits there
    /// write with pwrite.
    @Test func noWritableMappingOnTmpfs() throws {
        let base = "/dev/shm"
        guard FileManager.default.isWritableFile(atPath: base), !onExt4(base) else {
            print("noWritableMappingOnTmpfs: no tmpfs at /dev/shm")
            return
        }
        let path = base + "/swiftstore-mapped-\(getpid())-\(UUID().uuidString).cstore"
        defer { for s in ["", ".lock", ".journal"] { try? FileManager.default.removeItem(atPath: path + s) } }
        try makeFile(path, rows: 200)
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_NOSYNC)
        defer { db.close() }
        try addRows(db.h, 10, 100, from: 500)
        #expect(writableMappingDirtyKB(path) == -1, "no writable mapping of a file on tmpfs")
    }

    /// A full disk: the allocation before the first store fails, so commits write with pwrite
    /// (those that fit in the file land), and one that must grow the file fails with CS_FULL,
    /// without a SIGBUS either way.
    @Test func aFullDiskWritesWithPwriteAndFailsGrowthWithFull() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("f.cstore")
        try makeFile(path, rows: 500)
        let m = AllocModelIO(path: path)
        m.failAllocate = true
        let h = try m.open()
        var r: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_READ), &r), "begin read")
        let keys = try allKeys(r!, 0)
        _ = cs_txn_end(r)
        var landed = 0
        for i in 0..<30 {
            var t: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            var o = try openObj(t!, 0, keys[i])
            try must(cs_obj_set_int(&o, 0, 5000 + Int64(i)), "set")
            let rc = cs_txn_commit(t!)
            _ = cs_txn_end(t)
            if rc == Int32(CS_OK) { landed += 1 } else { expectCode(rc, CS_FULL, "a commit that had to grow") }
        }
        #expect(landed > 0, "commits into free space land with pwrite")
        #expect(m.mapped.isEmpty, "nothing stored through the mapping without an allocation")
        var t: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
        for i in 0..<3000 {
            var o = try createObj(t!, 0)
            try must(cs_obj_set_int(&o, 0, Int64(100_000 + i)), "set v")
            try must(setVal(&o, 1, .str(String(repeating: "g", count: 1000))), "set s")
        }
        expectCode(cs_txn_commit(t!), CS_FULL, "a commit that must grow the file on a full disk")
        _ = cs_txn_end(t)
        #expect(m.violations.isEmpty, "\(m.violations.prefix(5))")
        check(cs_db_close(h), "close")
        let db = try DB(path, flags: 0)
        try db.read { txn in
            #expect(try tableCount(txn, 0) == 500)
            var o = try openObj(txn, 0, keys[0])
            #expect(try getInt(&o, 0) == 5000 || landed == 0)
        }
        db.verify()
        db.close()
    }

    /// fdatasync writes the pages a commit stored through the mapping (docs/ARCHITECTURE.md,
    /// Writes through a mapping): after a journaled commit (which does not sync the database
    /// file) the writable mapping holds dirty pages; after a commit that syncs the file (a
    /// two-sync one, over 1 MiB) none is dirty, neither its own nor the earlier commit's.
    @Test func syncsLeaveNoPageOfTheMappingDirty() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("d.cstore")
        try makeFile(path, rows: 500)
        guard onExt4(path) else {
            print("syncsLeaveNoPageOfTheMappingDirty: not on ext4, the mapping path is not taken")
            return
        }
        let db = try DB(path, flags: 0, durability: CS_DURABILITY_FULL)
        defer { db.close() }
        // the session's first durable commit may come after a checkpoint and sync the file
        // itself; the later ones are journaled and leave the file unsynced
        for i in 0..<3 {
            try db.write { txn in
                var o = try openObj(txn, 0, try allKeys(txn, 0)[3 + i])
                try must(cs_obj_set_int(&o, 0, -3), "set")
            }
        }
        #expect(writableMappingDirtyKB(path) > 0, "journaled commits leave their stores dirty")
        try addRows(db.h, 1500, 1000, from: 50_000) // about 1.5 MB: two syncs
        #expect(writableMappingDirtyKB(path) == 0, "the commit's syncs wrote every page stored through the mapping")
        db.verify()
    }
}
