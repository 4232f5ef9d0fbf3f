// The tool's compact, backup and restore commands (tools/swiftstore): their exit codes (0 done,
// 1 damaged or refused, 2 usage or I/O error) and their --json summaries.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `swiftstore` executable, built next to `cstore-testchild`.
private let toolPath: String? = swiftstoreToolPath

private struct ToolRun {
    let status: Int32
    let stdout: String
    let stderr: String
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
    }
}

private func tool(_ args: [String], in dir: TempDir) throws -> ToolRun {
    guard let toolPath else { throw CStoreError(code: -1, message: "the swiftstore tool is not built (make tool)", context: "swiftstore") }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: toolPath)
    p.arguments = args
    let out = dir.url.appendingPathComponent("tool.out"), err = dir.url.appendingPathComponent("tool.err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    p.standardOutput = try FileHandle(forWritingTo: out)
    p.standardError = try FileHandle(forWritingTo: err)
    try p.run()
    p.waitUntilExit()
    return ToolRun(status: p.terminationStatus, stdout: readText(out.path), stderr: readText(err.path))
}

@Suite struct ToolMaintenanceTests {
    @Test func compactBackupRestoreExitCodesAndJSON() throws {
        try withTempDir { dir in
            let path = dir.path("db.cstore")
            let db = try DB(path)
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                for i in 0..<2000 {
                    var o = try createObj(txn, t)
                    try must(setVal(&o, 0, .str("row \(i) " + String(repeating: "y", count: 50))), "set")
                }
            }
            try db.write { txn throws in
                let t = try findTable(txn, "T")
                for k in try allKeys(txn, t) where k % 2 == 0 {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_delete(&o), "delete")
                }
            }
            let keys = try db.read { try allKeys($0, try findTable($0, "T")) }

            // compact into a copy while the database is open here: fine
            var r = try tool(["compact", path, dir.path("copy.cstore"), "--json"], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.json["ok"] as? Bool == true)
            #expect((r.json["bytesAfter"] as? Int ?? 0) < (r.json["bytesBefore"] as? Int ?? 0))
            // the copy exists now: refused (1)
            r = try tool(["compact", path, dir.path("copy.cstore"), "--json"], in: dir)
            #expect(r.status == 1)
            #expect(r.json["error"] as? String == "CS_EXISTS", "\(r.stdout)")
            // in place while this process has the file open: refused (1)
            r = try tool(["compact", "--in-place", path], in: dir)
            #expect(r.status == 1)
            #expect(r.stderr.contains("pid \(getpid())"), "names the process: \(r.stderr)")
            // usage: neither OUT nor --in-place (ArgumentParser exits 64 for usage errors)
            r = try tool(["compact", path], in: dir)
            #expect(r.status != 0)
            // backup with the file open here: fine (a read transaction)
            let backup = dir.path("db.csbackup")
            r = try tool(["backup", path, backup, "--json"], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.json["backupBytes"] as? Int == fileSize(backup))
            db.close()

            r = try tool(["compact", "--in-place", path, "--quiet"], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.isEmpty, "--quiet prints nothing")

            // restore: a new target, then an existing one without and with --force
            let target = dir.path("restored.cstore")
            r = try tool(["restore", backup, target, "--json"], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.json["verified"] as? Bool == true)
            r = try tool(["restore", backup, target], in: dir)
            #expect(r.status == 1, "an existing target is refused")
            r = try tool(["restore", backup, target, "--force"], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let restored = try DB(target, flags: 0)
            #expect(try restored.read { try allKeys($0, try findTable($0, "T")) } == keys)
            restored.close()

            // a damaged backup: refused (1), target unchanged
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: backup)))
            bytes[bytes.count / 2] ^= 0xFF
            let bad = dir.path("bad.csbackup")
            try Data(bytes).write(to: URL(fileURLWithPath: bad))
            let before = try Data(contentsOf: URL(fileURLWithPath: target))
            r = try tool(["restore", bad, target, "--force", "--json"], in: dir)
            #expect(r.status == 1)
            #expect(r.json["error"] as? String == "CS_CORRUPT")
            #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == before)
            // a missing file: I/O error (2)
            r = try tool(["backup", dir.path("missing.cstore"), dir.path("x.csbackup")], in: dir)
            #expect(r.status == 2)
            r = try tool(["restore", dir.path("missing.csbackup"), dir.path("y.cstore")], in: dir)
            #expect(r.status == 2)
        }
    }
}
