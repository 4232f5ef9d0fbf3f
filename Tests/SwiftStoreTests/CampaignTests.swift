import CStore
import Foundation
import Testing
@testable import SwiftStore
#if canImport(Glibc)
import Glibc
#endif

/// The reliability campaign through the Swift API (docs/FORMAT.md, What damage leads to): a
/// multi-process soak with SIGKILL at random, and generated damage of every kind. The short
/// form runs in `make test`; `make test-full` (STORE_FULL_CAMPAIGN=1) runs the long one.
/// (The full-disk sweep is DiskFullTests.diskFullAtEveryPoint.)
enum Campaign {
    static let full = ProcessInfo.processInfo.environment["STORE_FULL_CAMPAIGN"] != nil
}

/// A `swiftstore-testchild` started without waiting for it.
final class Child {
    let process = Process()
    let role: String
    let err: URL
    var killedByUs = false

    init(_ args: [String], role: String, dir: TempDir) throws {
        guard let path = ChildProcess.path else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "swiftstore-testchild"])
        }
        self.role = role
        err = dir.url.appendingPathComponent("\(role)-\(UUID().uuidString.prefix(8)).err")
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = args
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
    }

    func kill() {
        killedByUs = true
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    var stderr: String { (try? String(contentsOf: err, encoding: .utf8)) ?? "" }

    /// nil while running or when killed by the campaign, else a description of a failure.
    var failure: String? {
        if process.isRunning || killedByUs { return nil }
        if process.terminationReason == .exit && process.terminationStatus == 0 { return nil }
        return "\(role) ended with \(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus): \(stderr.suffix(400))"
    }
}

/// Walks the nodes packed one after another in a run (docs/FORMAT.md §3): each one's offset,
/// size and flags.
func nodes(in bytes: [UInt8], from start: Int, length: Int) -> [(at: Int, size: Int, flags: UInt8)] {
    var out: [(Int, Int, UInt8)] = []
    var p = start
    while p + 8 <= start + length && p + 8 <= bytes.count {
        let flags = bytes[p + 2], width = Int(bytes[p + 3])
        let count = Int(bytes[p + 4]) | Int(bytes[p + 5]) << 8 | Int(bytes[p + 6]) << 16 | Int(bytes[p + 7]) << 24
        var payload = flags & 0x08 != 0 ? count * width : (count * width + 7) / 8
        if flags & 0x10 != 0 { payload += (count + 63) / 64 * 8 }
        if flags & 0x20 != 0 { payload += 8 } // a framed node's base (FORMAT.md §3)
        let size = 8 + (payload + 7) / 8 * 8
        if size <= 8 && count > 0 { break }
        out.append((p, size, flags))
        p += size
    }
    return out
}

@Suite(.serialized) struct CampaignTests {
    /// Writers, a reader, an observer and first opens of new files, all killed with SIGKILL at
    /// random; then every commit a writer saw return is in the file, nothing is out of order,
    /// and the file verifies.
    @Test func multiProcessSoakWithKills() throws {
        let seconds = Campaign.full ? 600.0 : 6.0
        let dir = TempDir()
        let path = dir.file().path
        let writers = 2
        let start = Date()
        let end = start.addingTimeInterval(seconds)
        func remaining() -> String { String(format: "%.2f", max(0.2, end.timeIntervalSinceNow)) }
        func spawn(_ role: String) throws -> Child {
            if role.hasPrefix("writer") {
                let id = role.dropFirst(6)
                return try Child(["soak-writer", path, String(id), dir.file("log\(id)").path, remaining()], role: role, dir: dir)
            }
            if role == "reader" { return try Child(["soak-reader", path, "\(writers)", remaining()], role: role, dir: dir) }
            return try Child(["soak-observer", path, remaining()], role: role, dir: dir)
        }
        // the file exists before the readers start (first opens are exercised below)
        let first = try ChildGroup.run([["add", path, "seed", "0"]], in: dir)
        #expect(first[0].0 == 0, "\(first[0].1)")
        var roles = (0..<writers).map { "writer\($0)" } + ["reader", "observer"]
        var children: [String: Child] = [:]
        for r in roles { children[r] = try spawn(r) }
        var kills = 0, processes = children.count + 1, firstOpenRounds = 0
        var rng = SystemRandomNumberGenerator()
        var nextFirstOpen = Date().addingTimeInterval(1)
        while Date() < end {
            usleep(UInt32.random(in: 30_000...250_000, using: &rng))
            for (r, c) in children {
                if let f = c.failure { Issue.record("\(f)") }
                if !c.process.isRunning && Date() < end.addingTimeInterval(-0.3) {
                    children[r] = try spawn(r)
                    processes += 1
                }
            }
            if Date() >= end { break }
            roles.shuffle(using: &rng)
            if let victim = children[roles[0]], victim.process.isRunning {
                victim.kill()
                kills += 1
                children[roles[0]] = try spawn(roles[0])
                processes += 1
            }
            if Date() >= nextFirstOpen {
                // several processes open a new file at one moment; one may be killed meanwhile
                nextFirstOpen = Date().addingTimeInterval(Campaign.full ? 5 : 1.5)
                firstOpenRounds += 1
                let fresh = dir.file("fresh\(firstOpenRounds).realm").path
                let at = (Date().timeIntervalSince1970 + 0.25) * 1000
                var group: [Child] = []
                for k in 0..<3 {
                    group.append(try Child(["add-at", fresh, "p\(k)", "\(k)", "\(at)"], role: "first-open", dir: dir))
                }
                processes += 3
                let victim = Int.random(in: 0..<4, using: &rng) // 3: nobody is killed
                if victim < 3 {
                    usleep(UInt32.random(in: 200_000...300_000, using: &rng))
                    group[victim].kill()
                    kills += 1
                }
                for c in group {
                    // a hang is a failure, not a stuck test run
                    let deadline = Date().addingTimeInterval(60)
                    while c.process.isRunning && Date() < deadline { usleep(5000) }
                    if c.process.isRunning {
                        Issue.record("first open round \(firstOpenRounds): a process hung for 60 s")
                        c.kill()
                    }
                    if let f = c.failure { Issue.record("first open round \(firstOpenRounds): \(f)") }
                }
                let survivors = group.filter { !$0.killedByUs }.count
                let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: fresh),
                                                                         objectTypes: [FirstOpenPerson.self]))
                #expect(realm.objects(FirstOpenPerson.self).count >= survivors, "first open round \(firstOpenRounds)")
                #expect(cs_file_verify(fresh) == 0, "first open round \(firstOpenRounds): \(String(cString: cs_errmsg()))")
            }
        }
        for c in children.values {
            if c.process.isRunning {
                c.kill()
                kills += 1
            } else if let f = c.failure {
                Issue.record("\(f)")
            }
        }
        // every commit a writer saw return is there, in order, and the file verifies
        var commits = 0
        let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: path),
                                                                 objectTypes: [FirstOpenPerson.self]))
        for w in 0..<writers {
            let log = (try? String(contentsOf: dir.file("log\(w)"), encoding: .utf8)) ?? ""
            let lines = log.split(separator: "\n").compactMap { Int($0) }
            commits += lines.count
            let mine = realm.objects(FirstOpenPerson.self).filter("name BEGINSWITH %@", "w\(w)-")
            let top = (mine.max(ofProperty: "age") as Int?) ?? -1
            #expect(mine.count == top + 1, "writer \(w): \(mine.count) objects, highest seq \(top)")
            #expect(top >= (lines.max() ?? -1), "writer \(w): logged seq \(lines.max() ?? -1) but the file has \(top)")
            #expect(lines == lines.sorted(), "writer \(w): log out of order")
        }
        #expect(cs_file_verify(path) == 0, "\(String(cString: cs_errmsg()))")
        #expect(commits > 0 && kills > 0)
        print("soak: \(String(format: "%.0f", Date().timeIntervalSince(start))) s, \(processes) processes, \(kills) SIGKILLs, "
              + "\(commits) commits checked, \(firstOpenRounds) first-open rounds, \(realm.objects(FirstOpenPerson.self).count) objects; verify clean")
    }

    /// Damage of every kind to a file written through the Swift API, each read in a child
    /// process: it opens at an intact version (reporting a rollback when it passed over the
    /// newest commit), or is refused with a thrown error, or stops at the documented fatal
    /// error; never another signal, never a hang.
    @Test func generatedCorruption() throws {
        let dir = TempDir()
        let config = Realm.Configuration(fileURL: dir.file(), objectTypes: [FirstOpenPerson.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write { for i in 0..<20 { realm.add(FirstOpenPerson(value: ["name": "a\(i)", "age": i])) } }
            try realm.write { for i in 20..<620 { realm.add(FirstOpenPerson(value: ["name": "b\(i)", "age": i])) } }
            try realm.write { realm.add(FirstOpenPerson(value: ["name": "c", "age": 620])) }
        }
        let pristine = try FileBytes.read(config.fileURL!)
        let newest = FileBytes.newestSlot(pristine)
        // the previous commit's runs: the other slot's run list
        var other = pristine
        other[12] ^= 1
        let newestRuns = FileBytes.newestRuns(pristine)
        let olderRuns = FileBytes.newestRuns(other)
        try #require(!newestRuns.isEmpty && !olderRuns.isEmpty)
        let newestNodes = newestRuns.flatMap { nodes(in: pristine, from: $0.0, length: $0.1) }
        let olderNodes = olderRuns.flatMap { nodes(in: pristine, from: $0.0, length: $0.1) }

        var cases: [(String, [UInt8])] = []
        func flipped(_ at: Int, _ mask: UInt8) -> [UInt8] { var b = pristine; b[at] ^= mask; return b }
        for n in newestNodes {
            cases.append(("newest commit, node at \(n.at) (flags \(n.flags)) header", flipped(n.at + 2, 0x80)))
            cases.append(("newest commit, node at \(n.at) payload", flipped(n.at + 8 + (n.size - 8) / 2, 0x04)))
        }
        for n in olderNodes {
            cases.append(("older node at \(n.at) (flags \(n.flags)) flags", flipped(n.at + 2, 0x80)))
            cases.append(("older node at \(n.at) width", flipped(n.at + 3, 0x40)))
            cases.append(("older node at \(n.at) count", flipped(n.at + 6, 0x10)))
            if n.size > 8 { cases.append(("older node at \(n.at) payload", flipped(n.at + 8 + (n.size - 8) / 2, 0x01))) }
        }
        for at in stride(from: 0, to: 144, by: Campaign.full ? 1 : 5) {
            cases.append(("header byte \(at)", flipped(at, 0x01)))
        }
        let boundaries = Set((newestNodes + olderNodes).map(\.at) + [pristine.count - 8])
        for b in boundaries.sorted() where b > 4096 {
            cases.append(("truncated at \(b)", Array(pristine[..<b])))
        }
        if !Campaign.full {
            // the short form: a spread of every kind
            var rng = SystemRandomNumberGenerator()
            cases = Array(cases.shuffled(using: &rng).prefix(45))
        }
        var outcomes: [String: Int] = [:]
        for (i, (what, bytes)) in cases.enumerated() {
            let file = dir.file("case\(i).realm")
            try Data(bytes).write(to: file)
            let r = try ChildProcess.run(["read-all", file.path], in: dir, timeout: 30)
            let outcome: String
            if r.status == 0 && r.stdout == "ok 621" {
                outcome = "opened"
            } else if r.status == 0 && r.stdout.hasPrefix("ok ") {
                // the library's reads check node headers and bounds, not checksums (FORMAT.md,
                // What damage leads to): values read from a damaged payload are what they are,
                // and verify must find the damage
                outcome = "read without detection, found by verify"
                #expect(cs_file_verify(file.path) == Int32(CS_CORRUPT), "\(what): \(r.stdout) and verify finds nothing")
            } else if r.status == 0 && r.stdout.hasPrefix("rolled back ") {
                outcome = "rolled back"
                #expect(r.stdout.hasPrefix("rolled back 620 "), "\(what): \(r.stdout)")
            } else if r.status == 3 {
                outcome = "refused: \(r.stdout)"
            } else if r.stderr.contains("SwiftStore: the database file") && r.stderr.contains("swiftstore verify") {
                outcome = "damage trap"
            } else {
                outcome = "bad"
                let keep = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("swiftstore-bad-case-\(i).realm")
                try? FileManager.default.removeItem(at: keep)
                try? FileManager.default.copyItem(at: file, to: keep)
                Issue.record("\(what): status \(r.status), stdout \(r.stdout), stderr \(r.stderr.suffix(500)) (kept as \(keep.path))")
            }
            outcomes[outcome, default: 0] += 1
            if Campaign.full {
                let v = try Tool.run(["verify", file.path], timeout: 60)
                #expect([0, 1, 2].contains(v.status), "\(what): verify exit \(v.status) \(v.stderr.suffix(300))")
            }
            try? FileManager.default.removeItem(at: file)
        }
        _ = newest
        print("corruption: \(cases.count) damaged files (\(newestNodes.count) nodes of the newest commit, \(olderNodes.count) older nodes, header bytes, \(boundaries.count) truncations): \(outcomes.sorted { $0.key < $1.key })")
    }
}
