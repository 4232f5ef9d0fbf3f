// What the commit journal's test suites share (docs/FORMAT.md §13): a small file to commit
// into, one commit through a handle, the power-cut set-up (the file opened through PowerCutIO,
// PowerCutTests.swift) and the images a cut leaves written back to disk.

import CStore
import Foundation
import Testing

/// A file with table T (v: Int, b: Binary) and 10 objects (v = 0...9, sum 45), closed (its
/// journal is empty and the header rests at format version 6).
func journalPrepare(_ path: String) throws {
    let db = try DB(path, durability: CS_DURABILITY_FULL)
    try db.write { txn throws in
        let t = try addTable(txn, "T")
        _ = try addColumn(txn, t, "v", CS_TYPE_INT)
        _ = try addColumn(txn, t, "b", CS_TYPE_BINARY)
        for i in 0..<10 {
            var o = try createObj(txn, t)
            try must(cs_obj_set_int(&o, 0, Int64(i)), "set v")
        }
    }
    db.close()
}

/// One commit through `h` into a file made by journalPrepare: an object with v = `v` and a
/// value of `bytes` random bytes in b. Returns the version it made.
@discardableResult
func journalCommit(_ h: OpaquePointer, _ v: Int64, bytes: Int = 0) throws -> UInt64 {
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
    let table = try findTable(t!, "T")
    var o = try createObj(t!, table)
    try must(cs_obj_set_int(&o, 0, v), "set v")
    if bytes > 0 {
        var rng = SeededRNG(seed: UInt64(bitPattern: v))
        try must(setVal(&o, 1, .binary(randomBytes(bytes, &rng))), "set b")
    }
    try must(cs_txn_commit(t!), "commit \(v)")
    let version = cs_txn_version(t!)
    check(cs_txn_end(t))
    return version
}

/// The objects of T through `h`.
func journalObjectCount(_ h: OpaquePointer) throws -> UInt64 {
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "begin read")
    defer { _ = cs_txn_end(t) }
    var n: UInt64 = 0
    try must(cs_table_count(t!, try findTable(t!, "T"), &n), "count")
    return n
}

/// A file made by journalPrepare at `dir`/`name`, opened (FULL) through a PowerCutIO whose
/// synced disk is the prepared file: the set-up of every power-cut test of the journal.
func journalPowerCutFile(_ dir: TempDir, _ name: String = "a.cstore") throws -> (path: String, pio: PowerCutIO, h: OpaquePointer) {
    let path = dir.path(name)
    try journalPrepare(path)
    let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    return (path, pio, try pio.open(path))
}

/// The disk a power cut leaves after journaled commits (one per value of v in `values`, through
/// journalCommit) into a file made by journalPrepare in `dir`: the database file and the journal
/// as last synced, and the last commit's version.
func journalCrash(_ dir: TempDir, _ values: [Int64]) throws -> (synced: [UInt8], jsynced: [UInt8], version: UInt64) {
    let (_, pio, h) = try journalPowerCutFile(dir)
    var version: UInt64 = 0
    for v in values { version = try journalCommit(h, v) }
    pio.cutNow()
    let cut = pio.cut!
    _ = cs_db_close(h)
    return (cut.synced, cut.jsynced, version)
}

/// The disk a power cut leaves after `commits` journaled one-row commits into a file whose free
/// list spans several chunks (table T of `rows` objects with four Int columns c0...c3, then 300
/// scattered updates in NOSYNC), so that from the second on the records patch the free-list
/// nodes the earlier ones wrote (docs/FORMAT.md §13, Layout). The u-th commit sets c0 of a
/// random object to -u - 10; `want` is c0 of each object changed.
func journalPatchedCrash(_ dir: TempDir, commits: Int, rows: Int = 5000)
    throws -> (synced: [UInt8], jsynced: [UInt8], version: UInt64, want: [Int64: Int64]) {
    let path = dir.path("a.cstore")
    do {
        let db = try DB(path, durability: CS_DURABILITY_NOSYNC)
        try db.write { txn throws in
            let t = try addTable(txn, "T")
            for c in 0..<4 { _ = try addColumn(txn, t, "c\(c)", CS_TYPE_INT) }
            for i in 0..<rows {
                var o = try createObj(txn, t)
                for c in 0..<4 { try must(cs_obj_set_int(&o, UInt32(c), Int64(i)), "set") }
            }
        }
        var rng = SeededRNG(seed: 21)
        for _ in 0..<300 {
            try db.write { txn throws in
                let t = try findTable(txn, "T")
                var o = try openObj(txn, t, Int64(rng.next() % UInt64(rows)))
                try must(cs_obj_set_int(&o, 1, -1), "set")
            }
        }
        db.close()
    }
    let pio = PowerCutIO(disk: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
    let h = try pio.open(path)
    var rng = SeededRNG(seed: 22)
    var want: [Int64: Int64] = [:]
    var version: UInt64 = 0
    for u in 0..<commits {
        var t: OpaquePointer?
        try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
        let table = try findTable(t!, "T")
        let k = Int64(rng.next() % UInt64(rows))
        var o = try openObj(t!, table, k)
        try must(cs_obj_set_int(&o, 0, -Int64(u) - 10), "set")
        want[k] = -Int64(u) - 10
        try must(cs_txn_commit(t!), "commit \(u)")
        version = cs_txn_version(t!)
        check(cs_txn_end(t))
    }
    pio.cutNow()
    let cut = pio.cut!
    _ = cs_db_close(h)
    return (cut.synced, cut.jsynced, version, want)
}

/// Opens `image` (with `journal` beside it) as `dir`/image.cstore with the real I/O and checks
/// it: it verifies, and c0 of each object of `want` is its value there. Returns the version
/// opened (nil, with an issue recorded, when it does not open).
func journalPatchedReopen(_ dir: TempDir, _ image: [UInt8], _ journal: [UInt8]?, _ want: [Int64: Int64],
                          _ what: String) throws -> UInt64? {
    let path = dir.path("image.cstore")
    try writeJournalImage(path, image, journal)
    let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
    guard rc == Int32(CS_OK), let h else {
        Issue.record("\(what): open returned \(codeName(rc)): \(lastMessage())")
        return nil
    }
    defer { _ = cs_db_close(h) }
    #expect(check(cs_db_verify(h), "\(what): verifies"))
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "begin read")
    defer { _ = cs_txn_end(t) }
    let table = try findTable(t!, "T")
    for (k, v) in want {
        var o = try openObj(t!, table, k)
        let got = try getInt(&o, 0)
        if got != v {
            Issue.record("\(what): object \(k) has \(got), want \(v)")
            break
        }
    }
    return cs_txn_version(t!)
}

/// Writes a power cut's images to `path`: the database file, and the journal beside it when
/// given (nil: none); any lock file or journal already there is removed first.
func writeJournalImage(_ path: String, _ db: [UInt8], _ journal: [UInt8]?) throws {
    for p in [path, path + ".lock", path + ".journal"] { try? FileManager.default.removeItem(atPath: p) }
    try Data(db).write(to: URL(fileURLWithPath: path))
    if let journal { try Data(journal).write(to: URL(fileURLWithPath: path + ".journal")) }
}

/// Opens `image` (with `journal` beside it, nil: none) as `dir`/image.cstore with the real I/O,
/// after checking that it verifies: its version and the sum of T's v (nil, with an issue
/// recorded, when it does not open).
func journalReopen(_ dir: TempDir, _ image: [UInt8], _ journal: [UInt8]?, _ what: String) throws -> (UInt64, Int64)? {
    let path = dir.path("image.cstore")
    try writeJournalImage(path, image, journal)
    let (rc, h) = openRaw(path, flags: 0, durability: CS_DURABILITY_FULL)
    guard rc == Int32(CS_OK), let h else {
        Issue.record("\(what): open returned \(codeName(rc)): \(lastMessage())")
        return nil
    }
    defer { _ = cs_db_close(h) }
    #expect(check(cs_db_verify(h), "\(what): verifies"))
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_READ), &t), "begin read")
    defer { _ = cs_txn_end(t) }
    let table = try findTable(t!, "T")
    var sum: Int64 = 0
    for k in try allKeys(t!, table) {
        var o = try openObj(t!, table, k)
        sum += try getInt(&o, 0)
    }
    return (cs_txn_version(t!), sum)
}

/// One commit through `h` into a file set up by `cstore-testchild setup`, made as the child's
/// commit-loop makes it (the counter's n and sum, a row with writer 1 and its payload), so the
/// child's checker accepts it. Returns the commit's result.
func childStyleIncrement(_ h: OpaquePointer) throws -> Int32 {
    var t: OpaquePointer?
    try must(cs_txn_begin(h, Int32(CS_TXN_WRITE), &t), "begin")
    defer { _ = cs_txn_end(t) }
    let s = try ChildSchema(t!)
    var c = try openObj(t!, s.counter, s.counterKey)
    let k = try getInt(&c, s.n) + 1
    try must(cs_obj_set_int(&c, s.n, k), "set n")
    try must(cs_obj_set_int(&c, s.sum, try getInt(&c, s.sum) + k), "set sum")
    var r = try createObj(t!, s.rows)
    try must(cs_obj_set_int(&r, s.writer, 1), "set writer")
    try must(cs_obj_set_int(&r, s.seq, k), "set seq")
    try must(setVal(&r, s.payload, .binary(childPayload(k))), "set payload")
    return cs_txn_commit(t!)
}

/// The runs of each record of a journal image (docs/FORMAT.md §13, Layout: records from 4096,
/// each with its length at offset 24, its number of runs at 32 and the (position, length) pairs
/// from 64, a length with bit 63 set for a patched run), up to the first that is not a record.
func journalRecordRuns(_ j: [UInt8]) -> [[(pos: UInt64, len: UInt64, patched: Bool)]] {
    func u64(_ at: Int) -> UInt64 { j[at..<(at + 8)].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) } }
    var out: [[(pos: UInt64, len: UInt64, patched: Bool)]] = []
    var off = 4096
    while off + 64 <= j.count, Array(j[off..<(off + 8)]) == Array("CSJREC\r\n".utf8) {
        let len = Int(u64(off + 24)), n = Int(u64(off + 32) & 0xFFFF_FFFF)
        guard len >= 64 + 16 * n, off + len <= j.count else { break }
        out.append((0..<n).map { i in
            let l = u64(off + 64 + 16 * i + 8)
            return (u64(off + 64 + 16 * i), l & ~(1 << 63), l >> 63 == 1)
        })
        off += len
    }
    return out
}

/// The offsets of the records in a journal image (docs/FORMAT.md §13: records from 4096, each
/// with its length at offset 24); stops at the first that is not a record.
func journalRecordOffsets(_ j: [UInt8]) -> [Int] {
    var out: [Int] = []
    var off = 4096
    while off + 64 <= j.count, Array(j[off..<(off + 8)]) == Array("CSJREC\r\n".utf8) {
        let len = rawLE64(j, off + 24)
        guard len >= 64, off + len <= j.count else { break }
        out.append(off)
        off += len
    }
    return out
}

/// `record_check` of docs/FORMAT.md §13 (journal.c): two lanes of xxHash64's round over the
/// record's 8-byte words (its check word, at 56, taken as zero), seeded with the generation and
/// the id, then its final mix; low bit set. For tests that forge records.
func journalRecordCheck(_ rec: [UInt8], gen: UInt64, id: UInt64) -> UInt64 {
    let p1: UInt64 = 0x9E37_79B1_85EB_CA87, p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }
    func round(_ v: UInt64, _ w: UInt64) -> UInt64 { rotl(v &+ w &* p2, 31) &* p1 }
    func word(_ i: Int) -> UInt64 {
        i == 56 ? 0 : rec[i..<(i + 8)].enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) }
    }
    var a = gen ^ p1, b = id ^ p2, i = 0
    while i + 16 <= rec.count {
        a = round(a, word(i))
        b = round(b, word(i + 8))
        i += 16
    }
    if i + 8 <= rec.count { a = round(a, word(i)) }
    var h = rotl(a, 7) &+ rotl(b, 18) &+ UInt64(rec.count)
    h ^= h >> 33
    h = h &* p2
    h ^= h >> 29
    h = h &* 0x1656_67B1_9E37_79F9
    h ^= h >> 32
    return h | 1
}

/// A record of docs/FORMAT.md §13 made by hand and sealed with its check: generation `gen`,
/// version `version`, the run pairs (position, length word: bit 63 for a patched run) and each
/// run's data (its bytes, or its operations) in that order.
func journalForgeRecord(gen: UInt64, id: UInt64, version: UInt64, runs: [(pos: UInt64, lenWord: UInt64, data: [UInt8])]) -> [UInt8] {
    func le(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
    var data: [UInt8] = []
    for r in runs { data += r.data }
    while data.count % 8 != 0 { data.append(0) }
    let length = 64 + 16 * runs.count + data.count
    var rec = Array("CSJREC\r\n".utf8) + le(gen) + le(version) + le(UInt64(length))
    rec += le(UInt64(runs.count)) + le(UInt64(data.count)) + le(0) + le(0)
    for r in runs { rec += le(r.pos) + le(r.lenWord) }
    rec += data
    let check = journalRecordCheck(rec, gen: gen, id: id)
    rec.replaceSubrange(56..<64, with: le(check))
    return rec
}

/// A patch operation's words (docs/FORMAT.md §13, Layout): a literal of `bytes`, or a copy of n
/// bytes from position `src` of the database file.
func journalLiteral(_ bytes: [UInt8]) -> [UInt8] {
    let w = UInt64(bytes.count) << 1
    return (0..<8).map { UInt8(truncatingIfNeeded: w >> (8 * UInt64($0))) } + bytes
}
func journalCopy(_ n: UInt64, from src: UInt64) -> [UInt8] {
    let w = n << 1 | 1
    return (0..<8).map { UInt8(truncatingIfNeeded: w >> (8 * UInt64($0))) } + (0..<8).map { UInt8(truncatingIfNeeded: src >> (8 * UInt64($0))) }
}
