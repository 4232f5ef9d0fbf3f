// The tool's maintenance commands (tools/swiftstore): compact, backup and restore with their
// --json summaries and progress display, info's sizes, and the exit codes every command keeps
// (0 done, 1 damaged or refused, 2 usage or I/O error).

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
            // usage: neither OUT nor --in-place
            r = try tool(["compact", path], in: dir)
            #expect(r.status == 2, "\(r.status) \(r.stderr)")
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

    /// Every command's exit codes: 0 done; 1 damaged (here: not a database), refused or not
    /// found in the file; 2 a command line that does not parse (ArgumentParser's own 64 is not
    /// used), a malformed predicate, or a file that cannot be opened.
    @Test func everyCommandKeepsTheExitCodeContract() throws {
        try withTempDir { dir in
            let path = dir.path("db.cstore")
            let db = try DB(path)
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "n", CS_TYPE_INT)
                for i in 0..<20 {
                    var o = try createObj(txn, t)
                    try must(setVal(&o, 0, .int(Int64(i))), "set")
                }
            }
            db.close()
            let junk = dir.path("junk.cstore") // not a database: as damaged as a file can be
            var rng = SeededRNG(seed: stableSeed("junk"))
            try Data((0..<16384).map { _ in UInt8(truncatingIfNeeded: rng.next()) }).write(to: URL(fileURLWithPath: junk))
            let missing = dir.path("missing.cstore")
            let backup = dir.path("db.csbackup")
            var n = 0
            func fresh(_ ext: String) -> String { n += 1; return dir.path("out\(n).\(ext)") }
            func expectStatus(_ args: [String], _ want: Int32, _ why: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
                let r = try tool(args, in: dir)
                #expect(r.status == want, "\(args.joined(separator: " ")) (\(why)): \(r.status) \(r.stderr)", sourceLocation: sourceLocation)
            }
            // 0: done
            try expectStatus(["info", path], 0, "ok")
            try expectStatus(["verify", path], 0, "ok")
            try expectStatus(["recover", path], 0, "ok (nothing to recover)")
            try expectStatus(["query", path, "T", "n < 3"], 0, "ok")
            try expectStatus(["dump", path], 0, "ok")
            try expectStatus(["watch", path, "T", "--count", "0"], 0, "ok")
            try expectStatus(["slot", "create", path, "s"], 0, "ok")
            try expectStatus(["changes", path, "--slot", "s"], 0, "ok")
            try expectStatus(["compact", path, fresh("cstore")], 0, "ok")
            try expectStatus(["backup", path, backup], 0, "ok")
            try expectStatus(["restore", backup, fresh("cstore")], 0, "ok")
            try expectStatus(["compact", "--in-place", path], 0, "ok")
            // 1: damaged, refused, or not in the file
            for args in [["info", junk], ["verify", junk], ["recover", junk], ["query", junk, "T", "n < 3"], ["dump", junk],
                         ["watch", junk, "T", "--count", "0"], ["slot", "create", junk, "x"], ["changes", junk, "--slot", "s"],
                         ["mirror", junk, "postgresql://localhost:1/none"], ["compact", junk, fresh("cstore")],
                         ["compact", "--in-place", junk], ["backup", junk, fresh("csbackup")], ["restore", junk, fresh("cstore")]] {
                try expectStatus(args, 1, "not a database or backup")
            }
            try expectStatus(["query", path, "Missing", "TRUEPREDICATE"], 1, "no such class")
            try expectStatus(["dump", path, "--class", "Missing"], 1, "no such class")
            try expectStatus(["watch", path, "Missing", "--count", "0"], 1, "no such class")
            try expectStatus(["slot", "create", path, "s"], 1, "the slot exists")
            try expectStatus(["slot", "drop", path, "nope"], 1, "no such slot")
            try expectStatus(["changes", path, "--slot", "nope"], 1, "no such slot")
            try expectStatus(["compact", path, backup], 1, "the target exists")
            try expectStatus(["backup", path, backup], 1, "the target exists")
            try expectStatus(["restore", backup, path], 1, "the target exists")
            // 2: usage
            for command in ["info", "verify", "recover", "query", "dump", "watch", "changes", "slot", "mirror", "compact", "backup", "restore"] {
                try expectStatus([command, "--no-such-option"], 2, "an unknown option")
                try expectStatus([command], 2, "missing arguments")
            }
            try expectStatus(["no-such-command"], 2, "an unknown command")
            try expectStatus(["--no-such-option"], 2, "an unknown option")
            try expectStatus(["query", path, "T", "n <"], 2, "a malformed predicate")
            try expectStatus(["watch", path, "T", "n <", "--count", "0"], 2, "a malformed predicate")
            try expectStatus(["watch", path, "T", "--count", "many"], 2, "a bad option value")
            try expectStatus(["slot", "rename", path, "s"], 2, "an unknown action")
            try expectStatus(["compact", path, fresh("cstore"), "--in-place"], 2, "both OUT and --in-place")
            // 2: I/O (no such file)
            for args in [["info", missing], ["verify", missing], ["recover", missing], ["query", missing, "T", "n < 3"], ["dump", missing],
                         ["watch", missing, "T", "--count", "0"], ["slot", "create", missing, "x"], ["changes", missing, "--slot", "s"],
                         ["mirror", missing, "postgresql://localhost:1/none"], ["compact", missing, fresh("cstore")],
                         ["compact", "--in-place", missing], ["backup", missing, fresh("csbackup")], ["restore", missing, fresh("cstore")]] {
                try expectStatus(args, 2, "no such file")
            }
            // the contract is in --help, the tool's and every command's (as wrapped to the width)
            func words(_ text: String) -> String { text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
            let root = try tool(["--help"], in: dir)
            #expect(root.status == 0)
            #expect(words(root.stdout).contains("Exit status, the same for every command: 0 done; 1 the file"), "\(root.stdout)")
            for command in ["info", "verify", "recover", "query", "dump", "watch", "changes", "slot", "mirror", "compact", "backup", "restore"] {
                let h = try tool([command, "--help"], in: dir)
                #expect(h.status == 0 && words(h.stdout).contains("Exit status"), "\(command) --help: \(h.stdout)")
            }
        }
    }

    /// `info` gives the bytes used and free, per table, of the history, and exactly what
    /// compaction saves (the compacted copy's size), as text and as JSON.
    @Test func infoShowsWhereTheBytesGo() throws {
        try withTempDir { dir in
            let path = dir.path("db.cstore")
            let db = try DB(path)
            var rng = SeededRNG(seed: stableSeed("info"))
            try db.write { txn throws in
                let big = try addTable(txn, "Big")
                _ = try addColumn(txn, big, "s", CS_TYPE_STRING)
                let small = try addTable(txn, "Small")
                _ = try addColumn(txn, small, "n", CS_TYPE_INT)
                for i in 0..<4000 {
                    var o = try createObj(txn, big)
                    try must(setVal(&o, 0, .string(randomLetters(100, &rng))), "set s")
                    if i < 10 {
                        var p = try createObj(txn, small)
                        try must(setVal(&p, 0, .int(Int64(i))), "set n")
                    }
                }
            }
            try db.write { txn throws in
                let big = try findTable(txn, "Big")
                for k in try allKeys(txn, big) where k % 2 == 0 {
                    var o = try openObj(txn, big, k)
                    try must(cs_obj_delete(&o), "delete")
                }
            }
            db.close()
            let r = try tool(["info", "--json", path], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let o = r.json
            let tables = o["tables"] as? [[String: Any]] ?? []
            let bytes = Dictionary(uniqueKeysWithValues: tables.map { ($0["name"] as? String ?? "", $0["bytes"] as? Int ?? -1) })
            #expect((bytes["Big"] ?? 0) > 2000 * 100, "Big: \(bytes)")
            #expect((bytes["Small"] ?? 0) > 0 && (bytes["Small"] ?? 0) < (bytes["Big"] ?? 0) / 10, "Small: \(bytes)")
            #expect(o["historyBytes"] as? Int != nil && o["schemaBytes"] as? Int != nil, "\(r.stdout)")
            #expect((o["usedBytes"] as? Int ?? 0) > 0 && (o["freeBytes"] as? Int ?? 0) > 0, "used and free: \(r.stdout)")
            let compacted = o["compactedSize"] as? Int ?? -1
            #expect(o["fileSize"] as? Int == fileSize(path))
            #expect(o["compactionSaves"] as? Int == fileSize(path) - compacted, "\(r.stdout)")
            let copy = dir.path("copy.cstore")
            #expect(try tool(["compact", path, copy], in: dir).status == 0)
            #expect(fileSize(copy) == compacted, "info's compacted size is what compact writes")
            let text = try tool(["info", path], in: dir)
            #expect(text.stdout.contains("history:") && text.stdout.contains("would save \(fileSize(path) - compacted) bytes"), "\(text.stdout)")
            #expect(text.stdout.contains("Big: 2000 objects, 1 properties, \(bytes["Big"] ?? 0) bytes"), "\(text.stdout)")
        }
    }

    /// compact shows a progress bar (bytes done, rate, time left) when stderr is a terminal,
    /// and nothing on a pipe.
    @Test func compactShowsProgressOnATerminalOnly() throws {
        guard let toolPath, FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            Issue.record("needs the tool and script(1) (util-linux) for a pseudo-terminal")
            return
        }
        try withTempDir { dir in
            let path = dir.path("db.cstore")
            let db = try DB(path)
            var rng = SeededRNG(seed: stableSeed("bar"))
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "s", CS_TYPE_STRING)
                for _ in 0..<20000 {
                    var o = try createObj(txn, t)
                    try must(setVal(&o, 0, .string(randomLetters(200, &rng))), "set")
                }
            }
            db.close()
            // on a pipe: the summary on stdout, nothing on stderr
            let piped = try tool(["compact", path, dir.path("piped.cstore")], in: dir)
            #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
            // on a terminal: script(1) runs the tool on a pseudo-terminal and copies what it shows
            let out = dir.path("copy.cstore")
            let r = try runProcess("/usr/bin/script", ["-qec", "'\(toolPath)' compact '\(path)' '\(out)'", "/dev/null"], outputIn: dir.url, timeout: 120)
            #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
            #expect(r.stdout.contains("\rcompact "), "a progress line: \(r.stdout.debugDescription)")
            #expect(r.stdout.contains("/s") && r.stdout.contains("ETA") && r.stdout.contains("%"), "rate, time left and share done: \(r.stdout.debugDescription)")
            #expect(fileSize(out) == fileSize(dir.path("piped.cstore")))
        }
    }
}
