// backup.1GB: an LZ4 backup of the compact.1GB file, against SQLite's VACUUM INTO followed by
// compressing that file with liblz4 at the same settings (README.md, Rows).

import CLZ4
import CSQLite
import CStore
import CStoreCall
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The frame settings both sides use: LZ4's default fast level, 4 MiB independent blocks,
/// block and content checksums (as cs_backup_write).
private func lz4Prefs() -> LZ4F_preferences_t {
    var p = LZ4F_preferences_t()
    p.frameInfo.blockSizeID = LZ4F_max4MB
    p.frameInfo.blockMode = LZ4F_blockIndependent
    p.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled
    p.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled
    p.compressionLevel = 0
    return p
}

/// Compresses the file at `src` into a new file `dst` as one LZ4 frame and syncs it; returns the
/// compressed size.
private func lz4CompressFile(_ src: String, _ dst: String) throws -> Int {
    var prefs = lz4Prefs()
    var cx: OpaquePointer?
    guard LZ4F_isError(LZ4F_createCompressionContext(&cx, UInt32(LZ4F_VERSION))) == 0, let cx else {
        throw SQLiteError(call: "LZ4F_createCompressionContext", code: -1, message: "failed")
    }
    defer { LZ4F_freeCompressionContext(cx) }
    let inFD = open(src, O_RDONLY), outFD = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0o644)
    defer { close(inFD); close(outFD) }
    guard inFD >= 0, outFD >= 0 else { throw SQLiteError(call: "open", code: errno, message: "cannot open \(src) / \(dst)") }
    let chunk = 4 << 20
    let cap = LZ4F_compressBound(chunk, &prefs)
    let inBuf = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
    let outBuf = UnsafeMutableRawPointer.allocate(byteCount: cap, alignment: 16)
    defer { inBuf.deallocate(); outBuf.deallocate() }
    var total = 0
    func put(_ n: Int) throws {
        guard LZ4F_isError(n) == 0 else { throw SQLiteError(call: "LZ4F", code: -1, message: String(cString: LZ4F_getErrorName(n))) }
        var done = 0
        while done < n {
            let w = write(outFD, outBuf + done, n - done)
            if w <= 0 { throw SQLiteError(call: "write", code: errno, message: "write failed") }
            done += w
        }
        total += n
    }
    try put(LZ4F_compressBegin(cx, outBuf, cap, &prefs))
    while true {
        let r = read(inFD, inBuf, chunk)
        if r < 0 { throw SQLiteError(call: "read", code: errno, message: "read failed") }
        if r == 0 { break }
        try put(LZ4F_compressUpdate(cx, outBuf, cap, inBuf, r, nil))
    }
    try put(LZ4F_compressEnd(cx, outBuf, cap, nil))
    if fdatasync(outFD) != 0 { throw SQLiteError(call: "fdatasync", code: errno, message: "sync failed") }
    return total
}

func backupRow() -> Row {
    Row(
        id: "backup.1GB", size: 20_000_000, mode: "durable", peer: "sqlite", goal: "<= 0.5x",
        swiftstore: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            try buildChurnedIntFile(path, rows: ctx.size)
            let want = Int64(ctx.size / 2)
            return Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let out = dir.appendingPathComponent("b.csbackup").path
                var info = cs_backup_info()
                let ms = try measure {
                    let src = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
                    defer { _ = cs_db_close(src) }
                    try CStoreError.check(cs_backup_write(src, out, nil, nil, &info), "cs_backup_write")
                }
                // the answer: the backup checks through and restores to the right row count
                try CStoreError.check(cs_backup_check(out, nil), "cs_backup_check")
                let restored = dir.appendingPathComponent("restored.cstore").path
                try CStoreError.check(cs_backup_restore(out, restored, nil, 0, nil, nil, nil), "cs_backup_restore")
                let db = try csOpen(restored, durability: CS_DURABILITY_NOSYNC, create: false)
                defer { _ = cs_db_close(db) }
                let (_, count) = try csTransaction(db, write: false) { try IntTable.find($0).sumAll($0) }
                return Sample(ms: ms, check: Check(what: "object count after restore", got: count, want: want))
            })
        },
        peerSide: { ctx in
            let path = ctx.directory.appendingPathComponent("bench.sqlite").path
            try buildChurnedSQLiteFile(path, rows: ctx.size)
            let want = Int64(ctx.size / 2)
            return Runner(run: { rep in
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let vacuumed = dir.appendingPathComponent("vacuum.sqlite").path
                let out = dir.appendingPathComponent("vacuum.sqlite.lz4").path
                let ms = try measure {
                    let db = try SQLiteDB(path: path, create: false)
                    defer { db.close() }
                    try db.configure(synchronous: "FULL")
                    try db.exec("VACUUM INTO '\(vacuumed)'")
                    _ = try lz4CompressFile(vacuumed, out)
                }
                let copy = try SQLiteDB(path: vacuumed, create: false)
                defer { copy.close() }
                return Sample(ms: ms, check: Check(what: "row count", got: try copy.scalar("SELECT COUNT(*) FROM t"), want: want))
            })
        })
}
