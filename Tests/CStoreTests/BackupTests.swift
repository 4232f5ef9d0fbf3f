// Backups (docs/FORMAT.md §12): an LZ4 frame of a compacted copy behind a header. A round trip
// gives back the compacted copy byte for byte; damaged or truncated backups are refused without
// touching the target; an existing target needs CS_RESTORE_FORCE.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let goldenV2 = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent("format-v2.cstore")

private func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

/// A churned copy of the golden file: every type, indexes, and free space.
private func source(_ dir: TempDir) throws -> DB {
    let path = dir.path("src.cstore")
    try FileManager.default.copyItem(atPath: goldenV2.path, toPath: path)
    let db = try DB(path, flags: 0)
    var rng = SeededRNG(seed: stableSeed("backup"))
    try db.write { txn throws in
        let t = try addTable(txn, "Bulk")
        _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
        for _ in 0..<3000 {
            var o = try createObj(txn, t)
            try must(setVal(&o, 0, .string(randomLetters(64, &rng))), "set")
        }
    }
    try db.write { txn throws in
        let t = try findTable(txn, "Bulk")
        for k in try allKeys(txn, t) where k % 3 == 0 {
            var o = try openObj(txn, t, k)
            try must(cs_obj_delete(&o), "delete")
        }
    }
    return db
}

@Suite struct BackupTests {
    @Test func roundTripGivesBackTheCompactedCopy() throws {
        try withTempDir { dir in
            let db = try source(dir)
            let want = try db.read { try contentsAndIndexDump($0) }
            let copy = dir.path("copy.cstore")
            try db.read { txn in try must(cs_txn_write_copy(txn, copy, nil, nil), "write copy") }
            let backup = dir.path("b.csbackup")
            var info = cs_backup_info()
            #expect(check(cs_backup_write(db.h, backup, nil, nil, &info), "cs_backup_write"))
            #expect(info.version == cs_db_version(db.h))
            #expect(info.format == 4, "the compacted copy holds framed nodes (FORMAT.md §3, §11)")
            #expect(Int(info.db_bytes) == fileSize(copy))
            #expect(Int(info.backup_bytes) == fileSize(backup))
            #expect(info.backup_bytes < info.db_bytes, "compressed")
            #expect(cs_backup_write(db.h, backup, nil, nil, nil) == Int32(CS_EXISTS))
            db.close()

            var checked = cs_backup_info()
            #expect(check(cs_backup_check(backup, &checked)))
            #expect(checked.db_bytes == info.db_bytes && checked.version == info.version)

            let restored = dir.path("restored.cstore")
            var rinfo = cs_backup_info()
            #expect(check(cs_backup_restore(backup, restored, nil, 0, nil, nil, &rinfo), "restore"))
            #expect(rinfo.version == info.version)
            #expect(try bytes(restored) == bytes(copy), "the restored file is the compacted copy, byte for byte")
            check(cs_file_verify(restored))
            let r = try DB(restored, flags: 0)
            #expect(try r.read { try contentsAndIndexDump($0) } == want)
            r.close()
            #expect(!FileManager.default.fileExists(atPath: restored + ".restore"))
        }
    }

    @Test func anExistingTargetNeedsForceAndTheFileToItself() throws {
        try withTempDir { dir in
            let db = try source(dir)
            let backup = dir.path("b.csbackup")
            try must(cs_backup_write(db.h, backup, nil, nil, nil), "backup")
            let want = try db.read { try contentsAndIndexDump($0) }
            let target = dir.path("target.cstore")
            let other = try DB(target)
            try other.write { txn throws in _ = try addTable(txn, "Other") }
            let before = try bytes(target)
            #expect(cs_backup_restore(backup, target, nil, 0, nil, nil, nil) == Int32(CS_EXISTS))
            #expect(try bytes(target) == before)
            // forced, but the target is open through a handle of this process
            #expect(cs_backup_restore(backup, target, nil, UInt32(CS_RESTORE_FORCE), nil, nil, nil) == Int32(CS_BUSY))
            #expect(try bytes(target) == before)
            other.close()
            #expect(check(cs_backup_restore(backup, target, nil, UInt32(CS_RESTORE_FORCE), nil, nil, nil), "forced restore"))
            let r = try DB(target, flags: 0)
            #expect(try r.read { try contentsAndIndexDump($0) } == want)
            r.close()
            db.close()
        }
    }

    @Test func damagedOrTruncatedBackupsAreRefused() throws {
        try withTempDir { dir in
            let db = try source(dir)
            let backup = dir.path("b.csbackup")
            try must(cs_backup_write(db.h, backup, nil, nil, nil), "backup")
            db.close()
            let good = try bytes(backup)
            let target = dir.path("target.cstore")
            let bad = dir.path("bad.csbackup")
            func refused(_ b: [UInt8], _ what: String) throws {
                try Data(b).write(to: URL(fileURLWithPath: bad))
                let rc = cs_backup_restore(bad, target, nil, 0, nil, nil, nil)
                #expect(rc == Int32(CS_CORRUPT), "\(what): \(codeName(rc)) \(lastMessage())")
                #expect(!FileManager.default.fileExists(atPath: target), "\(what): nothing restored")
                #expect(!FileManager.default.fileExists(atPath: target + ".restore"), "\(what): nothing left behind")
                #expect(cs_backup_check(bad, nil) == Int32(CS_CORRUPT), "\(what): the check refuses it too")
            }
            var rng = SeededRNG(seed: stableSeed("flips"))
            // flipped bytes: in the lead, the frame header, and all through the blocks
            var positions = [0, 9, 20, 60, 72, 73, 76, good.count - 1, good.count - 5]
            for _ in 0..<24 { positions.append(Int(rng.next() % UInt64(good.count))) }
            for p in positions {
                var b = good
                b[p] ^= 0x20
                try refused(b, "byte \(p) of \(good.count) flipped")
            }
            for n in [0, 10, 72, 80, good.count / 3, good.count / 2, good.count - 4, good.count - 1] {
                try refused(Array(good.prefix(n)), "truncated to \(n) bytes")
            }
            try refused(good + [0, 1, 2, 3], "trailing bytes")
            // the good one still restores
            #expect(check(cs_backup_restore(backup, target, nil, 0, nil, nil, nil)))
        }
    }
}

private func restore(_ backup: String, _ path: String, io: UnsafePointer<cs_io>? = nil, force: Bool) -> Int32 {
    var opts = cs_options()
    opts.durability = CS_DURABILITY_FULL
    opts.io = io
    return cs_backup_restore(backup, path, &opts, force ? UInt32(CS_RESTORE_FORCE) : 0, nil, nil, nil)
}

extension BackupTests {
    /// A power cut before any write, sync, unlink, rename or directory sync of a restore (cut
    /// through the I/O layer, as compaction's test does) leaves at the path the file that was
    /// there before (or none) or the restored one, whole; a restore afterwards clears what the
    /// cut left behind. Run for a new target and for a forced restore over another database.
    @Test(arguments: [false, true])
    func powerCutAtEveryStepOfARestore(overExisting: Bool) throws {
        try withTempDir { dir in
            let db = try source(dir)
            let backup = dir.path("b.csbackup")
            try must(cs_backup_write(db.h, backup, nil, nil, nil), "backup")
            let want = try db.read { try contentsAndIndexDump($0) }
            db.close()

            // what was at the path before: another database, or nothing
            let oldPath = dir.path("old.cstore")
            let old = try DB(oldPath, durability: CS_DURABILITY_FULL)
            try old.write { txn throws in _ = try addTable(txn, "Old") }
            old.close()
            let oldBytes = try bytes(oldPath)

            let path = dir.path("db.cstore")
            let tmp = path + ".restore"
            func reset() throws {
                for p in [path, path + ".lock", tmp, tmp + ".lock"] { try? FileManager.default.removeItem(atPath: p) }
                if overExisting { try Data(oldBytes).write(to: URL(fileURLWithPath: path)) }
            }
            /// The file `image` holds verifies and is the restored database (`restored`) or the
            /// one that was there before (nil: there was none).
            func expectState(_ image: [UInt8]?, restored: Bool, _ what: String) throws {
                guard let image else {
                    #expect(!overExisting, "\(what): the old file is gone")
                    return
                }
                let probe = dir.path("probe.cstore")
                for p in [probe, probe + ".lock"] { try? FileManager.default.removeItem(atPath: p) }
                try Data(image).write(to: URL(fileURLWithPath: probe))
                #expect(check(cs_file_verify(probe), "\(what): verifies"))
                let p = try DB(probe, flags: 0)
                if restored {
                    #expect(try p.read { try contentsAndIndexDump($0) } == want, "\(what): the backup's contents")
                } else {
                    #expect(try p.read { txn in (try? findTable(txn, "Old")) != nil }, "\(what): the old database")
                }
                p.close()
            }

            // a full run first, to count the events
            try reset()
            let full = CompactCutIO()
            #expect(check(restore(backup, path, io: full.io, force: overExisting), "uncut restore"))
            let total = full.events.count
            let renameAt = full.events.firstIndex(of: .rename(tmp, path))
            #expect(renameAt != nil, "the restore renames through the I/O layer: \(full.events)")
            #expect(full.events.firstIndex(of: .sync(tmp)).map { $0 < renameAt! } == true, "synced before the rename: \(full.events)")
            #expect(full.events.last == .syncDir, "the directory is synced after the rename: \(full.events)")
            #expect(full.events.contains(.write(tmp)) && !full.events.contains(.write(path)), "written only at \(tmp)")

            for cut in 0...total {
                try reset()
                let io = CompactCutIO()
                io.cutBefore = cut
                let rc = restore(backup, path, io: io.io, force: overExisting)
                let what = "power cut before event \(cut) (\(cut < total ? full.events[cut].description : "none"))"
                #expect((rc == Int32(CS_OK)) == (cut == total), "\(what): \(codeName(rc))")
                // what the disk holds: the rename lasts only once the directory was synced
                let renamed = io.events.contains(.rename(tmp, path))
                let dirSynced = renamed && io.events.lastIndex(of: .syncDir).map { $0 > io.events.firstIndex(of: .rename(tmp, path))! } == true
                if renamed {
                    try expectState(io.synced[tmp] ?? [], restored: true, "\(what), restored file")
                }
                if !dirSynced {
                    try expectState(overExisting ? oldBytes : nil, restored: false, "\(what), what was there before")
                }
                // the live path holds a whole file, or none for a new target before the rename
                if overExisting || renamed {
                    #expect(check(cs_file_verify(path), "\(what): the path opens"))
                } else {
                    #expect(!FileManager.default.fileExists(atPath: path), "\(what): nothing at a new target")
                }
                // a restore afterwards clears what the cut left behind
                try? FileManager.default.removeItem(atPath: path + ".lock")
                #expect(check(restore(backup, path, force: true), "\(what): restore afterwards"))
                #expect(!FileManager.default.fileExists(atPath: tmp), "\(what): no leftover")
                let r = try DB(path, flags: 0)
                #expect(try r.read { try contentsAndIndexDump($0) } == want, "\(what): restored afterwards")
                r.close()
            }
        }
    }
}
