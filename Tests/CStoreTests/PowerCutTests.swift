// Simulated power cuts during a commit (docs/FORMAT.md §2, "Commit protocol"): a cs_io that
// remembers every write since the last sync cuts the power before the n-th write, sync or
// truncate of a commit, for every n the commit makes. What the disk then holds is the state
// of the last sync plus any part of the unsynced writes: none, all, a prefix torn at a
// 4096-byte page boundary, or any subset of their pages (a disk may reorder writes between
// syncs). Reopened with the real I/O, every such file verifies and holds the old version or
// the new one, never anything else; the old one while the header write had not happened, the
// new one once the commit's last sync returned. Commits of at most 1 MiB sync once (data and
// header together; the header's hash of the written bytes must reject a header that reached
// the disk without all of its data), larger ones twice (data, then header).
// A durable commit of at most 1 MiB is journaled (docs/FORMAT.md §13): one record appended to
// `<file>.journal` and synced, then the in-place writes unsynced. The model keeps the journal's
// disk state too, and each disk image of the database file is reopened with an image of the
// journal: synced only, with its unsynced writes, or with the last one torn.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A cs_io that passes calls through to the system while keeping a model of the disk: the
/// image at the last fdatasync plus the writes and truncates made since. Once armed, it counts
/// writes, syncs and truncates ("events"); at event `cutBefore` the power goes: the model is
/// kept as it was and every later write, sync or truncate fails with EIO.
final class PowerCutIO {
    enum Op {
        case write(Int, [UInt8])
        case truncate(Int)
    }

    enum Event: Equatable, CustomStringConvertible {
        case write(Int, Int) // offset, length (the database file)
        case sync
        case truncate(Int)
        case jwrite(Int, Int) // the journal
        case jsync
        case jtruncate(Int)

        var description: String {
            switch self {
            case .write(let off, let n): return "write(\(n) bytes at \(off))"
            case .sync: return "fdatasync"
            case .truncate(let n): return "ftruncate(\(n))"
            case .jwrite(let off, let n): return "journal write(\(n) bytes at \(off))"
            case .jsync: return "journal fdatasync"
            case .jtruncate(let n): return "journal ftruncate(\(n))"
            }
        }
    }

    var synced: [UInt8]
    var pending: [Op] = []
    /// The journal's model (empty: no journal yet).
    var jsynced: [UInt8] = []
    var jpending: [Op] = []
    /// Descriptors of journal files (`<file>.journal`), and of files the model ignores (the
    /// lock file).
    var journalFDs = Set<Int32>()
    var otherFDs = Set<Int32>()
    var armed = false
    /// A full disk for the journal: its creation (an open with O_CREAT of a journal that does
    /// not exist), every allocation and every write past its end fail with ENOSPC;
    /// `journalRefusals` counts them. A growth first gets `journalRoom` bytes past the end (a
    /// file system allocates or writes what fits, then refuses), which a truncation of the
    /// journal gives back.
    var failJournalCreate = false
    var failJournalGrowth = false
    var journalRoom = 0
    var journalRefusals = 0
    var events: [Event] = []
    var cutBefore = Int.max
    private(set) var cut: (synced: [UInt8], pending: [Op], jsynced: [UInt8], jpending: [Op])?
    let io: UnsafeMutablePointer<cs_io>

    /// Writes the library stored through its writable mapping (write_mapped).
    var mappedWrites = 0

    /// `disk`: the file's bytes when it is opened (taken as synced). `mapped`: the layer has
    /// write_mapped, as the default one does, so commits store through the writable mapping
    /// where the file system allows it; without it every write is a pwrite.
    init(disk: [UInt8], mapped: Bool = true) {
        synced = disk
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { ctx, path, flags, mode in
            let me = Unmanaged<PowerCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            let p = String(cString: path!)
            if me.failJournalCreate && p.hasSuffix(".journal") && flags & O_CREAT != 0 && access(path!, F_OK) != 0 {
                me.journalRefusals += 1
                errno = ENOSPC
                return -1
            }
            let fd = Glibc.open(path!, flags, mode)
            if fd >= 0 && p.hasSuffix(".journal") {
                me.journalFDs.insert(fd)
                if me.jsynced.isEmpty, let d = PowerCutIO.contents(fd) { me.jsynced = d }
            } else if fd >= 0 && p.hasSuffix(".lock") {
                me.otherFDs.insert(fd)
            }
            return fd
        }
        x.close = { ctx, fd in
            let me = Unmanaged<PowerCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.journalFDs.remove(fd)
            me.otherFDs.remove(fd)
            return Glibc.close(fd)
        }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { ctx, fd, buf, n, off in
            let me = Unmanaged<PowerCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.otherFDs.contains(fd) { return Glibc.pwrite(fd, buf, n, off) }
            let j = me.journalFDs.contains(fd)
            var n = n
            if j && me.failJournalGrowth {
                var st = stat()
                let size = Glibc.fstat(fd, &st) == 0 ? Int(st.st_size) : 0
                if Int(off) + n > size {
                    let fits = max(0, size + me.journalRoom - Int(off))
                    if fits == 0 {
                        me.journalRefusals += 1
                        errno = ENOSPC
                        return -1
                    }
                    n = min(n, fits)
                    me.journalRoom -= max(0, Int(off) + n - size)
                }
            }
            // a journal growth writes its zeros in 64 KiB pieces (journal.c, JOURNAL_ZERO_PIECE):
            // a piece that continues the one just before is counted apart (zeroPieces)
            let zeros = j && n > 0 && UnsafeRawBufferPointer(start: buf, count: n).allSatisfy { $0 == 0 }
            let continues = zeros && me.armed && me.cut == nil && me.lastZeroEnd == Int(off) &&
                me.events.last.map { if case .jwrite = $0 { return true }; return false } == true
            guard me.event(j ? .jwrite(Int(off), n) : .write(Int(off), n)) else { errno = EIO; return -1 }
            if continues { me.zeroPieces += 1 }
            me.lastZeroEnd = zeros ? Int(off) + n : -1
            let r = Glibc.pwrite(fd, buf, n, off)
            if r > 0 {
                let op = Op.write(Int(off), Array(UnsafeRawBufferPointer(start: buf, count: r)))
                if j { me.jpending.append(op) } else { me.pending.append(op) }
            }
            return r
        }
        x.fdatasync = { ctx, fd in
            let me = Unmanaged<PowerCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            if me.otherFDs.contains(fd) { return Glibc.fdatasync(fd) }
            // after a sync the disk holds the file's bytes, other processes' writes included
            if me.journalFDs.contains(fd) {
                guard me.event(.jsync) else { errno = EIO; return -1 }
                me.jsynced = PowerCutIO.contents(fd) ?? PowerCutIO.apply(me.jpending, to: me.jsynced)
                me.jpending = []
                return Glibc.fdatasync(fd)
            }
            guard me.event(.sync) else { errno = EIO; return -1 }
            me.synced = PowerCutIO.contents(fd) ?? PowerCutIO.apply(me.pending, to: me.synced)
            me.pending = []
            return Glibc.fdatasync(fd)
        }
        x.ftruncate = { ctx, fd, size in
            let me = Unmanaged<PowerCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            // the journal's own truncation (a growth a full disk refused, cut back) is the
            // journal's, not the database file's
            let j = me.journalFDs.contains(fd)
            guard me.event(j ? .jtruncate(Int(size)) : .truncate(Int(size))) else { errno = EIO; return -1 }
            var st = stat()
            if j && Glibc.fstat(fd, &st) == 0 && Int(st.st_size) > Int(size) { me.journalRoom += Int(st.st_size) - Int(size) }
            if j { me.jpending.append(.truncate(Int(size))) } else { me.pending.append(.truncate(Int(size))) }
            return Glibc.ftruncate(fd, size)
        }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        x.allocate = { ctx, fd, off, len in
            let me = Unmanaged<PowerCutIO>.fromOpaque(ctx!).takeUnretainedValue()
            // an allocation is no event (the writes into it are); the journal's model learns
            // the size it gives, and a full disk gives the journal `journalRoom` bytes at most
            var len = len
            var refused = false
            if me.journalFDs.contains(fd) {
                var st = stat()
                let size = Glibc.fstat(fd, &st) == 0 ? Int(st.st_size) : 0
                if me.failJournalGrowth && Int(off + len) > size {
                    me.journalRefusals += 1
                    refused = true
                    len = off_t(max(0, min(Int(off + len), size + me.journalRoom) - Int(off)))
                    me.journalRoom -= max(0, Int(off + len) - size)
                }
                if len > 0 && Int(off + len) > size { me.jpending.append(.truncate(Int(off + len))) }
            }
            if len > 0 {
                let r = posix_fallocate(fd, off, len)
                if r != 0 { errno = r; return -1 }
            }
            if refused { errno = ENOSPC; return -1 }
            return 0
        }
        if mapped {
            // the commit's stores through its writable mapping (docs/ARCHITECTURE.md, Writes
            // through a mapping): events and pending writes like a pwrite's, then the copy
            x.write_mapped = { ctx, fd, map, buf, n, off in
                let me = Unmanaged<PowerCutIO>.fromOpaque(ctx!).takeUnretainedValue()
                guard me.event(.write(Int(off), n)) else { errno = EIO; return -1 }
                me.pending.append(.write(Int(off), Array(UnsafeRawBufferPointer(start: buf, count: n))))
                me.mappedWrites += 1
                memcpy(map! + Int(off), buf!, n)
                return 0
            }
        }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }

    /// Journal writes of zeros that continue the zeros written just before (a growth's second
    /// and later pieces): a cut between two of them leaves the same journal to recovery as a
    /// cut before the first, so campaigns leave them out when they size their image sets.
    var zeroPieces = 0
    private var lastZeroEnd = -1

    /// Records an event; false once the power is off.
    private func event(_ e: Event) -> Bool {
        if cut != nil { return false }
        guard armed else { return true }
        if events.count == cutBefore {
            cut = (synced, pending, jsynced, jpending)
            return false
        }
        events.append(e)
        return true
    }

    /// The disk state if the power went now (for a cut after the last event).
    func cutNow() { if cut == nil { cut = (synced, pending, jsynced, jpending) } }

    /// The bytes of the file open at `fd`.
    static func contents(_ fd: Int32) -> [UInt8]? {
        var st = stat()
        guard Glibc.fstat(fd, &st) == 0 else { return nil }
        var d = [UInt8](repeating: 0, count: Int(st.st_size))
        let n = d.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, $0.count, 0) }
        return n == d.count ? d : nil
    }

    static func apply(_ ops: [Op], to image: [UInt8]) -> [UInt8] {
        var d = image
        for op in ops { apply(op, to: &d) }
        return d
    }

    static func apply(_ op: Op, to d: inout [UInt8]) {
        switch op {
        case .write(let off, let bytes):
            if off + bytes.count > d.count { d += [UInt8](repeating: 0, count: off + bytes.count - d.count) }
            d.replaceSubrange(off..<(off + bytes.count), with: bytes)
        case .truncate(let n):
            if n < d.count { d.removeSubrange(n...) } else { d += [UInt8](repeating: 0, count: n - d.count) }
        }
    }

    func open(_ path: String, flags: Int = 0, durability: cs_durability = CS_DURABILITY_FULL) throws -> OpaquePointer {
        var opts = cs_options()
        opts.flags = UInt32(flags)
        opts.durability = durability
        opts.io = UnsafePointer(io)
        var h: OpaquePointer?
        try must(cs_db_open(path, &opts, &h), "cs_db_open through the power-cut cs_io")
        return h!
    }
}

/// The disk images a power cut may leave, given the synced image and the unsynced operations.
/// `light`: fewer random variants per cut (for commits with many events, outside the full
/// campaign).
func powerCutImages(_ synced: [UInt8], _ pending: [PowerCutIO.Op],
                            _ rng: inout SeededRNG, light: Bool) -> [(String, [UInt8])] {
    let page = 4096
    var out: [(String, [UInt8])] = [("none of the unsynced writes", synced)]
    if pending.isEmpty { return out }
    let all = PowerCutIO.apply(pending, to: synced)
    out.append(("all unsynced writes", all))
    // A prefix of the unsynced writes whose last write is torn at a page boundary.
    let torn: [Int] = pending.indices.filter {
        if case .write(let off, let bytes) = pending[$0] { return (off / page) != ((off + bytes.count - 1) / page) }
        return false
    }
    var picks = Set<Int>()
    if let l = torn.last { picks.insert(l) }
    if let f = torn.first, !light { picks.insert(f) }
    for _ in 0..<(light ? 1 : 2) where !torn.isEmpty { picks.insert(torn[Int(rng.next() % UInt64(torn.count))]) }
    for j in picks.sorted() {
        guard case .write(let off, let bytes) = pending[j] else { continue }
        let image = PowerCutIO.apply(Array(pending[..<j]), to: synced)
        let firstBoundary = (off / page + 1) * page
        let lastBoundary = ((off + bytes.count - 1) / page) * page
        for boundary in Set([firstBoundary, lastBoundary]).sorted() {
            var d = image
            PowerCutIO.apply(.write(off, Array(bytes[..<(boundary - off)])), to: &d)
            out.append(("unsynced writes 0..<\(j), then write \(j) torn at \(boundary)", d))
        }
    }
    // Any subset of the pages the unsynced writes touched (the disk reordered them).
    var pages = Set<Int>()
    for op in pending {
        if case .write(let off, let bytes) = op {
            for p in (off / page)...((off + bytes.count - 1) / page) { pages.insert(p) }
        }
    }
    // The header page without the data, and all the data but one page (when the header write
    // is among the unsynced ones): the header's hash must catch the missing bytes.
    let header = pending.lastIndex { if case .write(0, _) = $0 { return true }; return false }
    if let header, header > 0 {
        var d = synced
        PowerCutIO.apply(pending[header], to: &d)
        out.append(("the header write alone", d))
        let data = pages.filter { $0 > 0 && $0 * page < all.count }.sorted()
        for _ in 0..<min(light ? 1 : 3, data.count) {
            let p = data[Int(rng.next() % UInt64(data.count))]
            var e = all
            let lo = p * page, hi = min(lo + page, all.count)
            let old = lo < synced.count ? Array(synced[lo..<min(hi, synced.count)]) : []
            let revert = old + [UInt8](repeating: 0, count: hi - lo - old.count)
            if Array(all[lo..<hi]) == revert { continue } // the page did not change
            e.replaceSubrange(lo..<hi, with: revert)
            out.append(("all unsynced writes but page \(p)", e))
        }
    }
    for v in 0..<(light ? 2 : 4) {
        var d = synced
        if all.count > d.count { d += [UInt8](repeating: 0, count: all.count - d.count) } else { d.removeSubrange(all.count...) }
        var kept = 0
        for p in pages.sorted() where rng.next() % 2 == 0 {
            let lo = p * page
            let hi = min(lo + page, all.count)
            if lo < hi { d.replaceSubrange(lo..<hi, with: all[lo..<hi]); kept += 1 }
        }
        out.append(("\(kept) of the \(pages.count) unsynced pages (variant \(v))", d))
    }
    return out
}

/// The journal images a power cut may leave: the synced state, all unsynced writes, and the
/// last unsynced write torn at a page boundary (a prefix of it).
func journalImages(_ synced: [UInt8], _ pending: [PowerCutIO.Op]) -> [(String, [UInt8])] {
    var out: [(String, [UInt8])] = [("the journal as synced", synced)]
    if pending.isEmpty { return out }
    out.append(("the journal with its unsynced writes", PowerCutIO.apply(pending, to: synced)))
    if case .write(let off, let bytes) = pending[pending.count - 1], bytes.count > 4096 {
        var d = PowerCutIO.apply(Array(pending.dropLast()), to: synced)
        let boundary = (off / 4096 + 1) * 4096
        PowerCutIO.apply(.write(off, Array(bytes[..<(boundary - off)])), to: &d)
        out.append(("the journal with its last write torn at \(boundary)", d))
    }
    return out
}

/// A digest of everything reachable in the newest version: tables, keys and values.
func contentDigest(_ txn: OpaquePointer) throws -> UInt64 {
    var h: UInt64 = 0xCBF2_9CE4_8422_2325
    func mix(_ s: String) { for b in s.utf8 { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 } }
    for table in 0..<cs_table_slots(txn) {
        var info = cs_table_info()
        guard cs_table_info_get(txn, table, &info) == Int32(CS_OK) else { continue }
        mix("table \(table) \(String(cString: info.name)) \(info.count)")
        var cols: [UInt32] = []
        for col in 0..<info.col_slots {
            var ci = cs_column_info()
            guard cs_column_info_get(txn, table, col, &ci) == Int32(CS_OK) else { continue }
            mix("col \(col) \(String(cString: ci.name)) \(ci.type.rawValue) \(ci.coll.rawValue)")
            if ci.coll == CS_COLL_NONE && ci.type != CS_TYPE_BACKLINK { cols.append(col) }
        }
        var it = cs_iter()
        try must(cs_iter_init(&it, txn, table), "cs_iter_init")
        var o = cs_obj()
        while true {
            let rc = cs_iter_next(&it, &o)
            if rc == Int32(CS_NOTFOUND) { break }
            try must(rc, "cs_iter_next")
            mix("o \(o.key)")
            for col in cols {
                var v = cs_value()
                try must(cs_obj_get(&o, col, &v), "cs_obj_get")
                mix(toVal(v).description)
            }
        }
    }
    return h
}

@Suite struct PowerCutTests {
    /// One commit, cut at each of its events. `prepare` builds the file before the commit,
    /// `change` is the commit's content.
    /// `flags`: the commit's handle is opened with them; `truncates`: the commit ends by
    /// cutting the file after its last sync (online shrinking, docs/FORMAT.md §7.3).
    /// `mapped`: the power-cut layer has write_mapped (the path the default layer takes on
    /// ext4, docs/ARCHITECTURE.md, Writes through a mapping), else every write is a pwrite.
    /// `inspect` is shown the uncut commit's model (its events).
    /// `session`: commits made through the commit's handle before it, uncut (journaled ones
    /// leave records of the same generation, whose free-list nodes the commit's record may
    /// patch); the old version is the one they leave. `patched`: the commit's record must hold
    /// a patched run (docs/FORMAT.md §13, Layout).
    private func cutEveryEvent(_ name: String, syncs: Int, flags: Int = 0, truncates: Bool = false, mapped: Bool = true,
                               session: ((OpaquePointer) throws -> Void)? = nil, patched: Bool = false,
                               lightExpected: Bool? = nil, inspect: ((PowerCutIO) -> Void)? = nil,
                               prepare: (DB) throws -> Void, change: (OpaquePointer) throws -> Void) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let base = dir.path("base.cstore")
        do {
            let db = try DB(base, durability: CS_DURABILITY_FULL)
            try prepare(db)
            db.close()
        }
        let pristine = [UInt8](try Data(contentsOf: URL(fileURLWithPath: base)))
        var oldDigest = try DB(base, flags: 0).read { try contentDigest($0) }

        /// Runs the commit on a fresh copy, cutting before event `cut`; returns the model.
        func run(cutBefore cut: Int) throws -> (PowerCutIO, Int32) {
            let path = dir.path("run.cstore")
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + ".journal")
            try Data(pristine).write(to: URL(fileURLWithPath: path))
            let pio = PowerCutIO(disk: pristine, mapped: mapped)
            let h = try pio.open(path, flags: flags)
            var t: OpaquePointer?
            if let session {
                try session(h)
                try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "begin read")
                oldDigest = try contentDigest(t!)
                check(cs_txn_end(t))
            }
            try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
            try change(t!)
            pio.cutBefore = cut
            pio.armed = true
            let rc = cs_txn_commit(t!)
            pio.cutNow()
            check(cs_txn_end(t))
            _ = cs_db_close(h)
            return (pio, rc)
        }

        // Count the commit's events, and take the new version's digest.
        let (counter, rc) = try run(cutBefore: Int.max)
        try must(rc, "the uncut commit")
        let events = counter.events
        inspect?(counter)
        // which path the campaign exercises: stores through the mapping on ext4 when the layer
        // has write_mapped, pwrite otherwise
        // (a two-sync commit over 1 MiB may write everything with pwrite: runs over 64 KiB and
        // the header of a commit without a record do)
        if mapped && onExt4(dir.url.path) {
            if syncs == 1 { #expect(counter.mappedWrites > 0, "\(name): the commit stores through the writable mapping") }
        } else if mapped {
            #expect(counter.mappedWrites == 0, "\(name): off ext4 the commit writes with pwrite only")
        }
        print("power cuts (\(name)): the commit made \(counter.mappedWrites) stores through the mapping")
        if patched, let state = counter.cut {
            let runs = journalRecordRuns(PowerCutIO.apply(state.jpending, to: state.jsynced))
            let last = runs.last ?? []
            #expect(last.contains { $0.patched }, "\(name): the commit's record holds a patched run: \(last)")
            print("power cuts (\(name)): the commit's record holds \(last.filter { $0.patched }.count) patched runs of \(last.count)")
        }
        let newDigest = try DB(dir.path("run.cstore"), flags: 0).read { try contentDigest($0) }
        #expect(newDigest != oldDigest, "\(name): the commit changes the content")
        // FULL (FORMAT.md §2, §13): a one-sync commit is journaled: its record appended to the
        // journal and synced, then its runs and the header write at 0 in place, unsynced; a
        // two-sync commit writes the data, syncs, writes the header and syncs. A shrinking
        // commit then truncates the file (§7.3).
        let n = events.count
        let headerWrite = events.lastIndex { if case .write(0, let len) = $0 { return len <= 4096 }; return false } ?? -1
        let journalSync = events.lastIndex(of: .jsync) ?? -1
        // the last event at which the old version must survive, the first after which the new must
        var lastOld = headerWrite, firstNew = n
        if syncs == 1 {
            let tail = truncates ? 2 : 1
            #expect(headerWrite > 0 && headerWrite == n - tail, "\(name): the commit ends with the header write: \(events)")
            #expect(journalSync > 0 && journalSync < headerWrite, "\(name): the journal is synced before the in-place writes: \(events)")
            if journalSync > 0, case .jwrite = events[journalSync - 1] {} else {
                Issue.record("\(name): the journal's sync follows the record's write: \(events)")
            }
            #expect(!events[max(journalSync, 0)...].contains(.sync), "\(name): the database file is not synced after the record: \(events)")
            lastOld = journalSync - 1
            firstNew = journalSync + 1
        } else {
            let tail = truncates ? 3 : 2
            #expect(headerWrite > 0 && headerWrite == n - tail && events[n - tail + 1] == .sync,
                    "\(name): the commit ends with the header write and a sync: \(events)")
            let syncsBefore = events.prefix(max(headerWrite, 0)).filter { $0 == .sync }.count
            #expect(syncsBefore >= 1 && headerWrite > 0 && events[headerWrite - 1] == .sync,
                    "\(name): the data is synced just before the header: \(events)")
        }
        if truncates {
            let cut: Bool
            if case .truncate(let size) = events[n - 1] { cut = size < pristine.count } else { cut = false }
            #expect(cut, "\(name): the commit ends by making the file shorter: \(events)")
        }

        // the reduced image set for long commits; a growth's zero pieces count as one event (as
        // the one pwrite of the whole growth they replaced did)
        let light = n - counter.zeroPieces > 20 && !fullCampaign
        if let lightExpected { #expect(light == lightExpected, "\(name): light image set \(light), \(n) events, \(counter.zeroPieces) of them further zero pieces") }
        var rng = SeededRNG(seed: stableSeed("power cut \(name)"))
        var images = 0
        var sawOld = 0, sawNew = 0
        for cut in 0...n {
            let (pio, rc) = try run(cutBefore: cut)
            if cut == n { check(rc, "\(name): the commit with the power cut after its last event") }
            else if truncates && cut == n - 1 { check(rc, "\(name): the commit whose truncation failed has landed") }
            else if syncs == 1 && cut > journalSync {
                // past the commit point (the journal's sync): the commit is durable and says so
                check(rc, "\(name): the commit cut after its journal's sync has landed")
            }
            else { #expect(rc != Int32(CS_OK), "\(name): the commit cut before event \(cut) failed") }
            guard let state = pio.cut else { Issue.record("\(name): no cut state"); continue }
            let journals = journalImages(state.jsynced, state.jpending)
            var combos: [(String, [UInt8], String, [UInt8])] = []
            for (k, (desc, image)) in powerCutImages(state.synced, state.pending, &rng, light: light).enumerated() {
                if k == 0 { for (jd, j) in journals { combos.append((desc, image, jd, j)) } }
                else { let (jd, j) = journals[k % journals.count]; combos.append((desc, image, jd, j)) }
            }
            for (desc, image, jdesc, journal) in combos {
                images += 1
                let what = "\(name): power cut before event \(cut) of \(n) (\(cut < n ? events[cut].description : "after the last")), disk has \(desc), \(jdesc)"
                let path = dir.path("image.cstore")
                try? FileManager.default.removeItem(atPath: path)
                try? FileManager.default.removeItem(atPath: path + ".lock")
                try Data(image).write(to: URL(fileURLWithPath: path))
                try Data(journal).write(to: URL(fileURLWithPath: path + ".journal"))
                let (orc, oh) = openRaw(path, flags: 0)
                guard orc == Int32(CS_OK), let oh else {
                    Issue.record("\(what): open returned \(codeName(orc)): \(lastMessage())")
                    continue
                }
                let db = DBHandle(oh)
                let vrc = cs_db_verify(oh)
                #expect(vrc == Int32(CS_OK), "\(what): cs_db_verify returned \(codeName(vrc)): \(lastMessage())")
                var t: OpaquePointer?
                guard check(cs_txn_begin(oh, Int32(CS_TXN_READ), &t), "\(what): begin read"), let t else {
                    db.close()
                    continue
                }
                let digest = try? contentDigest(t)
                check(cs_txn_end(t))
                let isOld = digest == oldDigest, isNew = digest == newDigest
                #expect(isOld || isNew, "\(what): the file holds neither the old nor the new version")
                if isOld { sawOld += 1 }
                if isNew { sawNew += 1 }
                if cut <= lastOld { #expect(isOld, "\(what): the commit point was not reached, so the old version") }
                if syncs == 2 && (desc.hasPrefix("the header write alone") || desc.hasPrefix("all unsynced writes but page")) {
                    #expect(isOld, "\(what): the header reached the disk without all of the commit's data, so the old version")
                }
                if cut >= firstNew || cut == n { #expect(isNew, "\(what): the commit's record was synced, so the new version") }
                // The file takes commits again (checked on a third of the images, to save time).
                if !isNew && images % 3 != 0 {
                    db.close()
                    continue
                }
                var w: OpaquePointer?
                try must(cs_txn_begin(oh, Int32(CS_TXN_WRITE), &w), "begin write")
                var table: UInt32 = 0
                try must(cs_table_find(w!, "T", &table), "find T")
                _ = try createObj(w!, table)
                check(cs_txn_commit(w!), "\(what): a commit after the power cut")
                check(cs_txn_end(w))
                check(cs_db_verify(oh), "\(what): verify after a commit on the recovered file")
                db.close()
            }
        }
        #expect(sawOld > 0 && sawNew > 0)
        print("power cuts (\(name)): \(n) events per commit, \(images) disk images checked (\(sawOld) old, \(sawNew) new)")
    }

    /// A commit that appends 700 objects and changes 100 to a 500-object file: it grows the
    /// file.
    @Test func powerCutAtEveryStepOfAGrowingCommit() throws {
        // a session's first journaled commit: the new journal's 16 zero pieces leave it with the
        // full image set
        try cutEveryEvent("growing commit", syncs: 1, lightExpected: false, prepare: { db in
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let v = try addColumn(txn, t, "v", CS_TYPE_INT)
                let s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                for i in 0..<500 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, v, Int64(i)), "set v")
                    try must(setVal(&o, s, .str("row \(i)")), "set s")
                }
            }
        }, change: { txn in
            let t = try findTable(txn, "T")
            let keys = try allKeys(txn, t)
            for k in keys.prefix(100) {
                var o = try openObj(txn, t, k)
                try must(cs_obj_set_int(&o, 0, -k), "change v")
            }
            for i in 0..<700 {
                var o = try createObj(txn, t)
                try must(cs_obj_set_int(&o, 0, Int64(10_000 + i)), "set v")
                try must(setVal(&o, 1, .str(String(repeating: "x", count: i % 90))), "set s")
            }
        })
    }

    /// The first journaled commit on a file of about 2 MB: its checkpoint makes the new
    /// journal 1 MiB, then grows it ahead of need to the file's size rounded up to 1 MiB
    /// (docs/FORMAT.md §13, Layout), zeros synced with the checkpoint's journal header; a cut anywhere in the growths
    /// leaves the old version, and the journal's zeros, written or not, are never taken for
    /// records.
    @Test func powerCutAtEveryStepOfAGrowthAheadOfNeed() throws {
        try cutEveryEvent("growth ahead of need", syncs: 1, lightExpected: false, inspect: { counter in
            let ends = counter.events.compactMap { e -> Int? in
                if case .jwrite(let off, let n) = e { return off + n }
                return nil
            }
            let end = ends.max() ?? 0
            #expect(end > 1 << 20 && end % (1 << 20) == 0, "the journal's zeros reach past its first MiB: \(end)")
        }, prepare: { db in
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let v = try addColumn(txn, t, "v", CS_TYPE_INT)
                let s = try addColumn(txn, t, "s", CS_TYPE_STRING)
                for i in 0..<1600 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, v, Int64(i)), "set v")
                    try must(setVal(&o, s, .str(String(repeating: "y", count: 1000) + "\(i)")), "set s")
                }
            }
        }, change: { txn in
            let t = try findTable(txn, "T")
            for k in try allKeys(txn, t).prefix(10) {
                var o = try openObj(txn, t, k)
                try must(cs_obj_set_int(&o, 0, -k), "change v")
            }
        })
    }

    /// A file of 3,000 objects (v: Int, s: String) with free extents scattered through it
    /// (scattered updates and deletes), for commits into free space.
    private func freeSpaceFile(_ db: DB) throws {
        var rng = SeededRNG(seed: 7)
        try db.write { txn throws in
            let t = try addTable(txn, "T")
            _ = try addColumn(txn, t, "v", CS_TYPE_INT)
            _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
            for i in 0..<3000 {
                var o = try createObj(txn, t)
                try must(cs_obj_set_int(&o, 0, Int64(i)), "set v")
                try must(setVal(&o, 1, .string(randomLetters(Int(rng.next() % 60), &rng))), "set s")
            }
        }
        for round in 0..<8 { // scattered updates and deletes leave free extents behind
            try db.write { txn throws in
                let t = try findTable(txn, "T")
                let keys = try allKeys(txn, t)
                for _ in 0..<150 {
                    var o = try openObj(txn, t, keys[Int(rng.next() % UInt64(keys.count))])
                    try must(cs_obj_set_int(&o, 0, Int64(round * 100_000) + Int64(rng.next() % 1000)), "update")
                }
                for k in keys.suffix(40) {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_delete(&o), "delete")
                }
            }
        }
        try db.write { txn throws in // every other object of the first half: most leaves
            let t = try findTable(txn, "T")
            let keys = try allKeys(txn, t)
            for k in keys.prefix(keys.count / 2) where k % 2 == 0 {
                var o = try openObj(txn, t, k)
                try must(cs_obj_delete(&o), "delete")
            }
        }
        let st = try db.stats()
        #expect(st.free_bytes > 32 * 1024, "the file has free space to reuse: \(st.free_bytes) bytes")
    }

    /// A commit on a file with free space from earlier commits: it writes into reused space
    /// (and may write many scattered runs).
    /// `mapped` false: the same campaign over the pwrite path (an I/O layer without
    /// write_mapped, or a file system the mapping path is not taken on).
    @Test(arguments: [true, false])
    func powerCutAtEveryStepOfACommitIntoFreeSpace(mapped: Bool) throws {
        try cutEveryEvent(mapped ? "commit into free space" : "commit into free space, pwrite", syncs: 1, mapped: mapped,
                          prepare: freeSpaceFile, change: { txn in
            var rng = SeededRNG(seed: 8)
            let t = try findTable(txn, "T")
            let keys = try allKeys(txn, t)
            for _ in 0..<200 {
                var o = try openObj(txn, t, keys[Int(rng.next() % UInt64(keys.count))])
                try must(setVal(&o, 1, .string(randomLetters(Int(rng.next() % 60), &rng))), "update s")
            }
            for k in keys.prefix(30) {
                var o = try openObj(txn, t, k)
                try must(cs_obj_delete(&o), "delete")
            }
        })
    }

    /// The same commit after journaled commits of its session: its record holds the free-list
    /// nodes it rewrites as patches of the nodes those commits' records wrote (docs/FORMAT.md
    /// §13, Layout), and the power cut leaves the session's in-place writes unsynced too, so the
    /// disk images hold any subset of them: the replay rebuilds every patched run from the
    /// records before it, whatever the disk holds there.
    @Test func powerCutAtEveryStepOfAPatchedCommit() throws {
        try cutEveryEvent("patched commit", syncs: 1, session: { h in
            var rng = SeededRNG(seed: 9)
            for _ in 0..<4 {
                var t: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
                let table = try findTable(t!, "T")
                let keys = try allKeys(t!, table)
                for _ in 0..<40 {
                    var o = try openObj(t!, table, keys[Int(rng.next() % UInt64(keys.count))])
                    try must(setVal(&o, 1, .string(randomLetters(Int(rng.next() % 60), &rng))), "update s")
                }
                try must(cs_txn_commit(t!), "a commit of the session")
                check(cs_txn_end(t))
            }
        }, patched: true, prepare: freeSpaceFile, change: { txn in
            // a small commit: its free-list chunk keeps most of its extents, so the patch of it
            // is much shorter than its bytes (one that frees hundreds of nodes is not)
            var rng = SeededRNG(seed: 8)
            let t = try findTable(txn, "T")
            let keys = try allKeys(txn, t)
            for _ in 0..<3 {
                var o = try openObj(txn, t, keys[Int(rng.next() % UInt64(keys.count))])
                try must(setVal(&o, 1, .string(randomLetters(Int(rng.next() % 60), &rng))), "update s")
            }
            var o = try openObj(txn, t, keys[7])
            try must(cs_obj_delete(&o), "delete")
        })
    }

    /// A shrinking commit (CS_OPEN_SHRINK, docs/FORMAT.md §7.3) on a file whose tail holds
    /// live nodes past a large hole: it cuts the free tail from the logical size, moves nodes
    /// out of the tail into the hole and, after the header's sync, truncates the file. Cut at
    /// every write, sync and the truncate.
    @Test func powerCutAtEveryStepOfAShrinkingCommit() throws {
        func change(_ txn: OpaquePointer) throws {
            let t = try findTable(txn, "T")
            let keys = try allKeys(txn, t)
            var o = try openObj(txn, t, keys[keys.count / 2])
            try must(cs_obj_set_int(&o, 0, -1), "set v")
        }
        try cutEveryEvent("shrinking commit", syncs: 1, flags: CS_OPEN_SHRINK, truncates: true, lightExpected: false,
                          prepare: { db in
            var rng = SeededRNG(seed: 21)
            func fill(_ txn: OpaquePointer, _ t: UInt32, _ n: Int) throws {
                for i in 0..<n {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, 0, Int64(i)), "set v")
                    try must(setVal(&o, 1, .string(randomLetters(Int(rng.next() % 100), &rng))), "set s")
                }
            }
            // Objects, a 3 MB value past them, more objects past that (each a commit of its
            // own, so each goes past the end), then the value deleted: a hole in the middle
            // and live nodes in the tail.
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                try fill(txn, t, 2000)
            }
            try db.write { txn throws in
                let b = try addTable(txn, "Blob")
                let c = try addColumn(txn, b, "data", CS_TYPE_BINARY)
                var o = try createObj(txn, b)
                try must(setVal(&o, c, .binary(randomBytes(3_000_000, &rng))), "set data")
            }
            try db.write { txn throws in try fill(txn, try findTable(txn, "T"), 4000) }
            try db.write { txn throws in
                let b = try findTable(txn, "Blob")
                var o = try openObj(txn, b, try allKeys(txn, b)[0])
                try must(cs_obj_delete(&o), "delete the value")
            }
            // Shrinking commits through a second handle until the commit under test, tried on
            // a copy, truncates the file.
            let shrinker = try DB(db.path, flags: CS_OPEN_SHRINK, durability: CS_DURABILITY_FULL)
            defer { shrinker.close() }
            let probe = db.path + ".probe"
            var ready = false
            for round in 0..<64 {
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: db.path)))
                try? FileManager.default.removeItem(atPath: probe)
                try? FileManager.default.removeItem(atPath: probe + ".lock")
                try? FileManager.default.removeItem(atPath: probe + ".journal")
                try Data(bytes).write(to: URL(fileURLWithPath: probe))
                let pio = PowerCutIO(disk: bytes)
                let h = try pio.open(probe, flags: CS_OPEN_SHRINK)
                var t: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
                try change(t!)
                pio.armed = true
                try must(cs_txn_commit(t!), "the commit on a copy")
                let events = pio.events // the commit's, without the close's checkpoint
                check(cs_txn_end(t))
                _ = cs_db_close(h)
                if case .truncate = events.last {
                    ready = true
                    break
                }
                try shrinker.write { txn throws in
                    let t = try findTable(txn, "T")
                    var o = try openObj(txn, t, try allKeys(txn, t)[0])
                    try must(cs_obj_set_int(&o, 0, Int64(round)), "set v")
                }
            }
            try? FileManager.default.removeItem(atPath: probe)
            try? FileManager.default.removeItem(atPath: probe + ".lock")
            try? FileManager.default.removeItem(atPath: probe + ".journal")
            #expect(ready, "the shrinking commits reach a state where the next one truncates")
        }, change: change)
    }

    /// A commit that adds a table with a large value: one long write over many pages, torn at
    /// its first and last page boundary. 300 KB is a one-sync commit, 1.5 MB a two-sync one.
    @Test(arguments: [300_000, 1_500_000])
    func powerCutAtEveryStepOfACommitWithALargeValue(_ size: Int) throws {
        try cutEveryEvent("commit with a \(size)-byte value", syncs: size > 1 << 20 ? 2 : 1, prepare: { db in
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                for i in 0..<100 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, 0, Int64(i)), "set v")
                }
            }
        }, change: { txn in
            var rng = SeededRNG(seed: 9)
            let b = try addTable(txn, "Blob")
            let c = try addColumn(txn, b, "data", CS_TYPE_BINARY)
            var o = try createObj(txn, b)
            try must(setVal(&o, c, .binary(randomBytes(size, &rng))), "set data")
            let t = try findTable(txn, "T")
            var first = try openObj(txn, t, try allKeys(txn, t)[0])
            try must(cs_obj_set_int(&first, 0, 4242), "set v")
        })
    }
}

/// Closes a cs_db handle once (for handles opened with openRaw).
final class DBHandle {
    private var h: OpaquePointer?
    init(_ h: OpaquePointer) { self.h = h }
    func close() {
        if let h { check(cs_db_close(h), "cs_db_close") }
        h = nil
    }
    deinit { if let h { _ = cs_db_close(h) } }
}
