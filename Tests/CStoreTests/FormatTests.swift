// The file header of docs/FORMAT.md §2: magic, format versions, the two top-ref slots and the
// selector, and what opening does when they are damaged or newer than this library.

import CStore
import Foundation
import Testing

/// Builds a file with two commits: 100 objects, then 50 more. Returns the file's bytes and the
/// database version after each of the two commits.
private func twoCommitFile(_ path: String, durability: cs_durability = CS_DURABILITY_NOSYNC) throws -> (bytes: [UInt8], first: UInt64, second: UInt64, table: UInt32) {
    let db = try DB(path, durability: durability)
    var t: UInt32 = 0
    try db.write { txn throws in
        t = try addTable(txn, "T")
        let c = try addColumn(txn, t, "v", CS_TYPE_INT)
        for i in 0..<100 {
            var o = try createObj(txn, t)
            try must(cs_obj_set_int(&o, c, Int64(i)), "set")
        }
    }
    let first = cs_db_version(db.h)
    try db.write { txn throws in
        for _ in 0..<50 { _ = try createObj(txn, t) }
    }
    let second = cs_db_version(db.h)
    db.close()
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    return (bytes, first, second, t)
}

private func write(_ bytes: [UInt8], to path: String) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

private func le16(_ b: [UInt8], _ at: Int) -> Int { Int(b[at]) | Int(b[at + 1]) << 8 }

private func le64(_ b: [UInt8], _ at: Int) -> UInt64 {
    (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) }
}

@Suite struct FormatTests {
    @Test func headerMatchesStatsAndVersions() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let st = try db.stats()
            db.close()
            let b = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.path())))
            #expect(b.count >= 4096)
            #expect(Array(b[0..<8]) == Array("CSTORE\r\n".utf8), "magic")
            #expect(le16(b, 8) == Int(st.read_format), "read format version in the header")
            #expect(le16(b, 10) == Int(st.write_format), "write format version in the header")
            // A file is written in the lowest version that describes it: 1 until some column has
            // a Mixed index (IndexQueryTests.formatVersionRule); cs_format_version() is the newest.
            #expect(st.read_format == 1 && st.write_format == 1, "a new file is format version 1")
            #expect(cs_format_version() >= st.write_format)
            #expect(b[12] <= 1, "selector is 0 or 1")
            let slot = 16 + 64 * Int(b[12])
            #expect(le64(b, slot + 8) == st.version, "the selected slot holds the newest version")
            #expect(le64(b, slot + 16) == st.logical_size, "the selected slot holds the logical size")
            #expect(le64(b, slot) % 8 == 0 && le64(b, slot) >= 4096, "the top ref is 8-aligned, past the header")
            let lib = String(cString: cs_library_version())
            let parts = lib.split(separator: ".")
            #expect(parts.count == 3 && parts.allSatisfy { Int($0) != nil }, "library version \(lib) is MAJOR.MINOR.PATCH")
        }
    }

    @Test func tornSelectedSlotFallsBackToThePreviousVersion() throws {
        try withTempDir { dir in
            let (pristine, first, second, t) = try twoCommitFile(dir.path("pristine.cstore"))
            #expect(second == first + 1)
            var b = pristine
            let selected = Int(b[12])
            #expect(le64(b, 16 + 64 * selected + 8) == second)
            #expect(le64(b, 16 + 64 * (1 - selected) + 8) == first, "the other slot keeps the previous version")
            b[16 + 64 * selected + 56] ^= 0x10 // break the selected slot's check
            let path = dir.path("torn.cstore")
            try write(b, to: path)
            let db = try DB(path, flags: 0)
            #expect(cs_db_version(db.h) == first, "open uses the other slot")
            try db.read { txn throws in #expect(try tableCount(txn, t) == 100, "the previous version's data") }
            db.verify("previous version")
            // The fallback version can be written to.
            try db.write { txn throws in _ = try createObj(txn, t) }
            try db.reopen()
            try db.read { txn throws in #expect(try tableCount(txn, t) == 101) }
            db.verify("after a commit on the fallback version")
        }
    }

    /// A small FULL commit syncs once: its slot carries a hash of every byte it wrote, so a
    /// commit whose header reached the disk but whose data did not is detected at open, and the
    /// previous version (which that commit never overwrote) is used.
    @Test func oneSyncCommitWithLostDataFallsBack() throws {
        try withTempDir { dir in
            let (pristine, first, second, t) = try twoCommitFile(dir.path("pristine.cstore"), durability: CS_DURABILITY_FULL)
            let selected = Int(pristine[12])
            let slot = 16 + 64 * selected
            #expect(le64(pristine, slot + 8) == second)
            #expect(le64(pristine, slot + 24) & 1 == 1, "the second commit is a one-sync commit")
            let runList = Int(le64(pristine, slot + 32))
            let firstRun = Int(le64(pristine, runList + 8))
            let runLength = Int(le64(pristine, runList + 16))
            #expect(runLength > 16)
            // Every byte of the commit's runs is covered: damage one in the middle of the first run.
            for at in [firstRun + 9, firstRun + runLength / 2, firstRun + runLength - 1] {
                var b = pristine
                b[at] ^= 0x5a
                let path = dir.path("lost-\(at).cstore")
                try write(b, to: path)
                let db = try DB(path, flags: 0)
                #expect(cs_db_version(db.h) == first, "damage at \(at): open uses the previous version")
                try db.read { txn throws in #expect(try tableCount(txn, t) == 100) }
                db.verify("fallback after damage at \(at)")
                db.close()
            }
            // Undamaged, the one-sync commit is the newest version.
            let path = dir.path("intact.cstore")
            try write(pristine, to: path)
            let db = try DB(path, flags: 0)
            #expect(cs_db_version(db.h) == second)
            try db.read { txn throws in #expect(try tableCount(txn, t) == 150) }
            db.close()
        }
    }

    @Test func bothSlotsBrokenIsCorrupt() throws {
        try withTempDir { dir in
            var (b, _, _, _) = try twoCommitFile(dir.path("pristine.cstore"))
            b[16 + 56] ^= 0x10
            b[80 + 56] ^= 0x10
            let path = dir.path("broken.cstore")
            try write(b, to: path)
            let (rc, h) = openRaw(path, flags: 0)
            expectCode(rc, CS_CORRUPT, "open with both header slots broken")
            if let h, rc == Int32(CS_OK) { _ = cs_db_close(h) }
            expectCode(cs_file_verify(path), CS_CORRUPT, "cs_file_verify with both header slots broken")
        }
    }

    @Test func newerReadVersionIsVersionError() throws {
        try withTempDir { dir in
            var (b, _, _, _) = try twoCommitFile(dir.path("pristine.cstore"))
            let next = UInt16(cs_format_version() + 1)
            b[8] = UInt8(next & 0xFF)
            b[9] = UInt8(next >> 8)
            b[10] = b[8]
            b[11] = b[9]
            let path = dir.path("newer.cstore")
            try write(b, to: path)
            for flags in [0, CS_OPEN_READONLY] {
                let (rc, h) = openRaw(path, flags: flags)
                expectCode(rc, CS_VERSION, "open a file of read format \(next) with flags \(flags)")
                if let h, rc == Int32(CS_OK) { _ = cs_db_close(h) }
            }
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) == b, "the file is untouched")
        }
    }

    @Test func newerWriteVersionIsReadableButNotWritable() throws {
        try withTempDir { dir in
            var (b, _, _, t) = try twoCommitFile(dir.path("pristine.cstore"))
            let next = UInt16(cs_format_version() + 1)
            b[10] = UInt8(next & 0xFF)
            b[11] = UInt8(next >> 8)
            let path = dir.path("newer-write.cstore")
            try write(b, to: path)
            let (rc, h) = openRaw(path, flags: CS_OPEN_READONLY)
            try must(rc, "read-only open of a file with a newer write version")
            var txn: OpaquePointer?
            try must(cs_txn_begin(h, Int32(CS_TXN_READ), &txn), "begin read")
            #expect(try tableCount(txn!, t) == 150, "it reads")
            check(cs_txn_end(txn))
            check(cs_db_close(h))
            // Writing is refused, at open or at the first write.
            let (rc2, h2) = openRaw(path, flags: 0)
            if rc2 == Int32(CS_OK), let h2 {
                var w: OpaquePointer?
                let begin = cs_txn_begin(h2, Int32(CS_TXN_WRITE), &w)
                var commit = begin
                if begin == Int32(CS_OK), let w {
                    var o = cs_obj()
                    _ = cs_obj_create(w, t, &o)
                    commit = cs_txn_commit(w)
                    _ = cs_txn_end(w)
                }
                #expect(commit != Int32(CS_OK), "a write to a file of a newer write version is refused")
                _ = cs_db_close(h2)
            } else {
                expectCode(rc2, CS_VERSION, "read-write open of a newer write version")
            }
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))).prefix(4096) == b.prefix(4096),
                    "the header is untouched")
        }
    }

    @Test func slotPointingOutsideTheFileIsCorrupt() throws {
        try withTempDir { dir in
            let (pristine, _, _, _) = try twoCommitFile(dir.path("pristine.cstore"))
            // Truncating the file past the header makes both slots' top refs point outside it.
            let path = dir.path("short.cstore")
            try write(Array(pristine.prefix(4096)), to: path)
            let (rc, h) = openRaw(path, flags: 0)
            expectCode(rc, CS_CORRUPT, "open of a header-only file")
            if let h, rc == Int32(CS_OK) { _ = cs_db_close(h) }
        }
    }
}
