import CStore
import Foundation
import Testing
@testable import SwiftStore
#if canImport(Glibc)
import Glibc
#endif

/// Runs the `swiftstore` tool as built by its own package (tools/swiftstore, `make tool`,
/// which `make test` runs first).
enum Tool {
    static let path: String? = swiftstoreToolPath

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Runs the tool with `args` (killed after `timeout` seconds).
    static func run(_ args: [String], timeout: Double = 60) throws -> Result {
        guard let path else {
            throw Realm.Error(.fail, "the swiftstore tool is not built (make tool)")
        }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try runProcess(path, args, outputIn: dir, timeout: timeout)
        return Result(status: r.signalled ? 128 + r.status : r.status, stdout: r.stdout, stderr: r.stderr)
    }
}

final class ToolItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

/// The tool as users meet it: exit codes, JSON output, and damaged files.
@Suite struct ToolTests {
    func makeFile(_ dir: TempDir, count: Int = 50) throws -> String {
        let config = dir.config([ToolItem.self])
        let realm = try Realm(configuration: config)
        try realm.write { for i in 0..<5 { realm.add(ToolItem(value: ["id": i, "name": "first \(i)"])) } }
        try realm.write { for i in 5..<count { realm.add(ToolItem(value: ["id": i, "name": "later \(i)"])) } }
        return config.fileURL!.path
    }

    @Test func directoryCannotBeOpened() throws {
        let dir = TempDir()
        for command in [["info"], ["verify"], ["dump"], ["query"]] {
            var args = command + [dir.url.path]
            if command == ["query"] { args += ["ToolItem", "TRUEPREDICATE"] }
            let r = try Tool.run(args)
            #expect(r.status == 2, "\(command): \(r.status) \(r.stderr)")
        }
    }

    @Test func dumpOfMissingClassIsAnError() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let r = try Tool.run(["dump", path, "--class", "Missing"])
        #expect(r.status == 1, "\(r.status)")
        #expect(r.stderr.contains("no class named 'Missing'"), "\(r.stderr)")
        let q = try Tool.run(["query", path, "Missing", "TRUEPREDICATE"])
        #expect(q.status == 1)
    }

    @Test func infoJSONErrorsAreJSON() throws {
        let dir = TempDir()
        let r = try Tool.run(["info", "--json", dir.file("absent.realm").path])
        #expect(r.status == 2)
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(object?["error"] as? String != nil, "stdout: \(r.stdout)")
        #expect(object?["code"] as? String == "CS_NOTFOUND" || object?["code"] != nil)
    }

    /// `query --json` prints JSON Lines: one object per line, each parsing on its own.
    @Test func queryJSONIsJSONLines() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let r = try Tool.run(["query", "--json", path, "ToolItem", "id < 3"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        for line in lines {
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(o?["name"] as? String != nil, "\(line)")
        }
        let help = try Tool.run(["query", "--help"])
        #expect(help.stdout.contains("JSON Lines"), "\(help.stdout)")
    }

    /// A damaged newest commit: verify exits 1 and says so; info reports it, as text and JSON.
    @Test func rejectedNewestCommitIsReported() throws {
        let dir = TempDir()
        let path = try makeFile(dir)
        let url = URL(fileURLWithPath: path)
        var b = try FileBytes.read(url)
        let runs = FileBytes.newestRuns(b)
        try #require(!runs.isEmpty)
        b[runs[0].0 + runs[0].1 / 2] ^= 0x08
        try FileBytes.write(b, url)
        let v = try Tool.run(["verify", path])
        #expect(v.status == 1, "\(v.stdout) \(v.stderr)")
        #expect(v.stderr.contains("newest commit was rejected"), "\(v.stderr)")
        let info = try Tool.run(["info", "--json", path])
        #expect(info.status == 0, "\(info.stderr)")
        let o = try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any]
        let rejected = o?["rejectedCommit"] as? [String: Any]
        #expect(rejected?["reason"] as? String != nil, "\(info.stdout)")
        let text = try Tool.run(["info", path])
        #expect(text.stdout.contains("rejected"), "\(text.stdout)")
    }

    /// The state a crashed writer leaves (the database file and its journal with records, no
    /// process left): `verify` and `info` recover the records as a read-write open would and
    /// say so, instead of refusing the file.
    @Test func verifyAndInfoRecoverACrashedWritersJournal() throws {
        let dir = TempDir()
        let config = dir.config([ToolItem.self])
        let path = config.fileURL!.path
        var copies: [String] = []
        do {
            let realm = try Realm(configuration: config)
            for i in 0..<3 { try realm.write { realm.add(ToolItem(value: ["id": i, "name": "n\(i)"])) } }
            // copied while the writer holds the file: its journal holds the commits (a SIGKILL
            // now would leave these bytes)
            var records: UInt64 = 0, bytes: UInt64 = 0
            #expect(cs_file_journal_info(path, &records, &bytes) == 0 && records >= 3, "records: \(records)")
            for name in ["v", "i", "j"] {
                let copy = dir.url.appendingPathComponent("\(name).realm").path
                try FileManager.default.copyItem(atPath: path, toPath: copy)
                try FileManager.default.copyItem(atPath: path + ".journal", toPath: copy + ".journal")
                copies.append(copy)
            }
            _ = realm
        }
        let v = try Tool.run(["verify", copies[0]])
        #expect(v.status == 0, "\(v.stdout) \(v.stderr)")
        #expect(v.stdout.contains("recovered") && v.stdout.contains("healthy"), "\(v.stdout)")
        let info = try Tool.run(["info", copies[1]])
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.stdout.contains("recovered:"), "\(info.stdout)")
        let j = try Tool.run(["info", "--json", copies[2]])
        let o = try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any]
        #expect((o?["recoveredCommits"] as? Int ?? 0) >= 3, "\(j.stdout)")
        #expect(o?["journalRecords"] as? Int == 0, "\(j.stdout)")
        let again = try Tool.run(["verify", copies[0]])
        #expect(again.status == 0 && !again.stdout.contains("recovered"), "\(again.stdout)")
        let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: copies[0]), objectTypes: [ToolItem.self]))
        #expect(realm.objects(ToolItem.self).count == 3)
    }

    /// `swiftstore recover` on the state a crashed writer leaves: it replays the journal's
    /// commits and says how many (text and JSON), finds nothing the second time, and refuses a
    /// file another process has open (its journal's commits are that process's).
    @Test func recoverReplaysACrashedWritersJournal() throws {
        let dir = TempDir()
        let config = dir.config([ToolItem.self])
        let path = config.fileURL!.path
        var copies: [String] = []
        var records: UInt64 = 0, bytes: UInt64 = 0
        do {
            let realm = try Realm(configuration: config)
            for i in 0..<3 { try realm.write { realm.add(ToolItem(value: ["id": i, "name": "n\(i)"])) } }
            #expect(cs_file_journal_info(path, &records, &bytes) == 0 && records >= 3, "records: \(records)")
            for name in ["r", "j", "lost"] {
                let copy = dir.url.appendingPathComponent("\(name).realm").path
                try FileManager.default.copyItem(atPath: path, toPath: copy)
                if name != "lost" { try FileManager.default.copyItem(atPath: path + ".journal", toPath: copy + ".journal") }
                copies.append(copy)
            }
            // the writer is alive: refused, and its journal is left alone
            let busy = try Tool.run(["recover", path])
            #expect(busy.status == 1, "\(busy.status) \(busy.stdout) \(busy.stderr)")
            #expect(busy.stderr.contains("open in another process"), "\(busy.stderr)")
            var still: UInt64 = 0
            #expect(cs_file_journal_info(path, &still, &bytes) == 0 && still == records)
            _ = realm
        }
        let r = try Tool.run(["recover", copies[0]])
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(r.stdout == "\(copies[0]): recovered \(records) journaled commits\n", "\(r.stdout)")
        var left: UInt64 = 9
        #expect(cs_file_journal_info(copies[0], &left, &bytes) == 0 && left == 0, "the journal is empty: \(left)")
        let again = try Tool.run(["recover", copies[0]])
        #expect(again.status == 0 && again.stdout.contains("nothing to recover"), "\(again.stdout) \(again.stderr)")
        let j = try Tool.run(["recover", "--json", copies[1]])
        #expect(j.status == 0, "\(j.stderr)")
        let o = try JSONSerialization.jsonObject(with: Data(j.stdout.utf8)) as? [String: Any]
        #expect(o?["recoveredCommits"] as? Int == Int(records) && o?["ok"] as? Bool == true, "\(j.stdout)")
        #expect(cs_file_verify(copies[1]) == 0, "\(String(cString: cs_errmsg()))")
        let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: copies[0]), objectTypes: [ToolItem.self]))
        #expect(realm.objects(ToolItem.self).count == 3)
        // another process has the file open, with no commit in its journal: refused all the same
        // (whether the journal holds commits is that process's business until it closes)
        do {
            let open = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: copies[1]), objectTypes: [ToolItem.self]))
            let busy = try Tool.run(["recover", copies[1]])
            #expect(busy.status == 1, "\(busy.status) \(busy.stdout) \(busy.stderr)")
            #expect(busy.stderr.contains("open in another process"), "\(busy.stderr)")
            _ = open
        }
        let missing = try Tool.run(["recover", dir.url.appendingPathComponent("absent.realm").path])
        #expect(missing.status == 2, "\(missing.stderr)")
        // copied without its journal: nothing can be recovered, and the commits only the journal
        // held are lost, which recover says (exit 1, as verify) rather than "nothing to recover"
        let lost = try Tool.run(["recover", copies[2]])
        #expect(lost.status == 1, "\(lost.status) \(lost.stdout) \(lost.stderr)")
        #expect(lost.stderr.contains("journal") && !lost.stdout.contains("nothing to recover"), "\(lost.stdout) \(lost.stderr)")
    }

    /// `swiftstore recover` on a file whose header says its commits may be in the journal
    /// (format version 8) while the journal holds no record (copied while a writer had it open,
    /// its journal cut to its header): nothing to recover, and the file is left at the resting
    /// version 6 (docs/FORMAT.md §13, Recovery), which a library without the journal opens.
    @Test func recoverLeavesAFileWithAnEmptyJournalAtTheRestingVersion() throws {
        let dir = TempDir()
        let config = dir.config([ToolItem.self])
        let path = config.fileURL!.path
        let copy = dir.url.appendingPathComponent("copy.realm").path
        do {
            let realm = try Realm(configuration: config)
            try realm.write { realm.add(ToolItem(value: ["id": 1, "name": "one"])) }
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            let journal = try Data(contentsOf: URL(fileURLWithPath: path + ".journal"))
            try journal.prefix(4096).write(to: URL(fileURLWithPath: copy + ".journal"))
            _ = realm
        }
        func version() throws -> [UInt8] { Array([UInt8](try Data(contentsOf: URL(fileURLWithPath: copy)))[8..<12]) }
        #expect(try version() == [8, 0, 8, 0], "copied at version 8")
        let r = try Tool.run(["recover", copy])
        #expect(r.status == 0 && r.stdout == "\(copy): nothing to recover (its journal holds no commits)\n", "\(r.stdout) \(r.stderr)")
        #expect(try version() == [6, 0, 6, 0], "left at the resting version")
        let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: copy), objectTypes: [ToolItem.self]))
        #expect(realm.objects(ToolItem.self).count == 1)
    }

    /// A database file this user may read but not write (nor its directory, so neither its
    /// journal nor its lock file), the state a crashed writer of another user leaves: every
    /// command that would write fails with exit status 2 and a message that says what to do
    /// (`recover`: the tool's own wording of CS_READONLY, naming the three files; `verify`,
    /// `info`, `backup`, `compact`: the core's, naming `swiftstore recover`; `slot`, `changes`,
    /// `compact --in-place`, `restore --force`: the file or the directory cannot be written), and
    /// nothing is lost: the file and its journal keep every byte, no lock file appears, and
    /// `recover` run by the owner then replays every commit. Root ignores permission bits, so as
    /// root the tool runs as the user nobody (setpriv, or runuser); otherwise as this user over
    /// a file made read-only.
    @Test func writingCommandsOnAFileThisUserCannotWrite() throws {
        var runner: [String] = []
        if getuid() == 0 {
            if FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
                runner = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            } else if FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") {
                runner = ["/usr/sbin/runuser", "-u", "nobody", "--"]
            } else {
                print("skipped writingCommandsOnAFileThisUserCannotWrite: running as root, and neither setpriv nor runuser exists to run the tool as another user")
                return
            }
        }
        guard let tool = Tool.path else { throw Realm.Error(.fail, "the swiftstore tool is not built (make tool)") }
        let dir = TempDir()
        // the tool and the files must be reachable by the other user: the test's own
        // directory and its parent (given back its mode after) are made so
        var modes: [(String, mode_t)] = []
        for d in [dir.url, dir.url.deletingLastPathComponent()] {
            var st = stat()
            if stat(d.path, &st) == 0 {
                modes.append((d.path, st.st_mode & 0o7777))
                chmod(d.path, st.st_mode & 0o7777 | 0o005)
            }
        }
        defer {
            chmod(dir.url.appendingPathComponent("ro").path, 0o755)
            dir.remove()
            for (p, m) in modes where FileManager.default.fileExists(atPath: p) { chmod(p, m) }
        }
        for p in [dir.url.path, (tool as NSString).deletingLastPathComponent] where !runner.isEmpty {
            var a = URL(fileURLWithPath: p)
            while a.path != "/" {
                var st = stat()
                if stat(a.path, &st) != 0 || st.st_mode & 0o001 == 0 {
                    Issue.record("\(a.path) is not searchable by other users: cannot run the tool as nobody")
                    return
                }
                a.deleteLastPathComponent()
            }
        }
        let config = dir.config([ToolItem.self])
        let path = config.fileURL!.path
        let ro = dir.url.appendingPathComponent("ro")
        try FileManager.default.createDirectory(at: ro, withIntermediateDirectories: false)
        let crashed = ro.appendingPathComponent("crashed.realm").path
        let clean = ro.appendingPathComponent("clean.realm").path
        var records: UInt64 = 0, bytes: UInt64 = 0
        do {
            let realm = try Realm(configuration: config)
            for i in 0..<3 { try realm.write { realm.add(ToolItem(value: ["id": i, "name": "n\(i)"])) } }
            // copied while the writer holds the file: the state a SIGKILL leaves
            #expect(cs_file_journal_info(path, &records, &bytes) == 0 && records >= 3, "records: \(records)")
            try FileManager.default.copyItem(atPath: path, toPath: crashed)
            try FileManager.default.copyItem(atPath: path + ".journal", toPath: crashed + ".journal")
            _ = realm
        }
        try FileManager.default.copyItem(atPath: path, toPath: clean)
        let backup = dir.url.appendingPathComponent("backup.csbackup").path
        #expect(try Tool.run(["backup", path, backup]).status == 0)
        for f in [crashed, crashed + ".journal", clean, backup] { #expect(chmod(f, 0o444) == 0) }
        #expect(chmod(ro.path, 0o555) == 0)
        let before = try [crashed, crashed + ".journal", clean].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        func run(_ args: [String]) throws -> Tool.Result {
            let r = try runProcess(runner.first ?? tool, Array(runner.dropFirst()) + (runner.isEmpty ? [] : [tool]) + args,
                                   outputIn: dir.url, timeout: 60)
            return Tool.Result(status: r.status, stdout: r.stdout, stderr: r.stderr)
        }
        let recover = try run(["recover", crashed])
        #expect(recover.status == 2, "\(recover.status) \(recover.stdout) \(recover.stderr)")
        #expect(recover.stderr == "swiftstore recover: \(crashed) has commits in its journal to recover after a crash, and this user cannot write \(crashed), \(crashed).journal or \(crashed).lock: run `swiftstore recover` again as a user who may write all three (on a file system mounted read-write)\n",
                "\(recover.stderr)")
        let json = try run(["recover", "--json", crashed])
        let o = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(json.status == 2 && o?["code"] as? String == "CS_READONLY" && o?["status"] as? Int == 2, "\(json.stdout)")
        #expect((o?["error"] as? String)?.contains("this user cannot write") == true, "\(json.stdout)")
        let copy = dir.url.appendingPathComponent("copy.realm").path
        for args in [["verify", crashed], ["info", crashed], ["backup", crashed, dir.url.appendingPathComponent("b2").path],
                     ["compact", crashed, copy]] {
            let r = try run(args)
            #expect(r.status == 2, "\(args): \(r.status) \(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("\(records) commits in its journal to recover after a crash") && r.stderr.contains("run `swiftstore recover \(crashed)`"),
                    "\(args): \(r.stderr)")
        }
        for file in [crashed, clean] {
            for args in [["slot", "create", file, "s"], ["changes", file, "--slot", "s"], ["compact", "--in-place", file]] {
                let r = try run(args)
                #expect(r.status == 2, "\(args): \(r.status) \(r.stdout) \(r.stderr)")
                #expect(r.stderr.contains("CS_PERM: cannot open \(file): Permission denied"), "\(args): \(r.stderr)")
            }
            let r = try run(["restore", backup, file, "--force"])
            #expect(r.status == 2 && r.stderr.contains("cannot create \(file).restore: Permission denied"), "restore over \(file): \(r.stderr)")
        }
        let after = try [crashed, crashed + ".journal", clean].map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        #expect(after == before, "every byte kept")
        #expect(!FileManager.default.fileExists(atPath: crashed + ".lock") && !FileManager.default.fileExists(atPath: copy))
        // the owner (a user who may write all three) recovers every commit
        #expect(chmod(ro.path, 0o755) == 0)
        for f in [crashed, crashed + ".journal"] { #expect(chmod(f, 0o644) == 0) }
        let owner = try Tool.run(["recover", crashed])
        #expect(owner.status == 0 && owner.stdout == "\(crashed): recovered \(records) journaled commits\n", "\(owner.stdout) \(owner.stderr)")
    }

    /// Damaged bytes in an older node: dump and query check node checksums, exit 1 and name
    /// the node's offset instead of printing garbage.
    @Test func damagedNodeStopsDumpAndQuery() throws {
        let dir = TempDir()
        let path = try makeFile(dir, count: 400)
        let url = URL(fileURLWithPath: path)
        do {
            // two more commits that leave the first leaf alone: the damage below is then in an
            // older node, not in a commit the header slots check
            let realm = try Realm(configuration: dir.config([ToolItem.self]))
            for i in 400..<402 { try realm.write { realm.add(ToolItem(value: ["id": i, "name": "n"])) } }
        }
        // the string leaf holding "first 3" (every copy: older ones are free space now)
        var b = try FileBytes.read(url)
        let needle = Array("first 3".utf8)
        let found = (4096..<(b.count - needle.count)).filter { b[$0] == needle[0] && Array(b[$0..<($0 + needle.count)]) == needle }
        try #require(!found.isEmpty)
        for at in found { b[at] ^= 0x20 }
        try FileBytes.write(b, url)
        #expect(try Tool.run(["verify", path]).status == 1)
        for args in [["dump", path], ["query", path, "ToolItem", "TRUEPREDICATE"], ["query", "--json", path, "ToolItem", "id >= 0"]] {
            let r = try Tool.run(args)
            #expect(r.status == 1, "\(args[0]): \(r.status) \(r.stdout.suffix(200)) \(r.stderr)")
            #expect(r.stderr.contains("node at"), "\(args[0]): \(r.stderr)")
            #expect(!r.stdout.contains("First 3") && !r.stdout.contains("first 3"), "\(args[0]) printed damaged data")
        }
    }
}
