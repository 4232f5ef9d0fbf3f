import CStore
import Foundation
import Testing
@testable import SwiftStore

final class DamageItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

/// Reading and changing a database file's bytes the way damage does (docs/FORMAT.md §2).
enum FileBytes {
    static func read(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }
    static func write(_ bytes: [UInt8], _ url: URL) throws { try Data(bytes).write(to: url) }

    static func u64(_ b: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) }
    }

    /// The selected header slot's (version, run list position, run length).
    static func newestSlot(_ b: [UInt8]) -> (slot: Int, version: UInt64, runPos: Int, runLen: Int) {
        let sel = Int(b[12] & 1)
        let base = 16 + 64 * sel
        return (sel, u64(b, base + 8), Int(u64(b, base + 32)), Int(u64(b, base + 40)))
    }

    /// The (position, length) runs the newest one-sync commit wrote.
    static func newestRuns(_ b: [UInt8]) -> [(Int, Int)] {
        let s = newestSlot(b)
        guard s.runLen > 0 else { return [] }
        let count = Int(b[s.runPos + 4]) | Int(b[s.runPos + 5]) << 8 | Int(b[s.runPos + 6]) << 16 | Int(b[s.runPos + 7]) << 24
        var runs: [(Int, Int)] = []
        for i in stride(from: 0, to: count, by: 2) {
            let p = Int(u64(b, s.runPos + 8 + 8 * i)), n = Int(u64(b, s.runPos + 16 + 8 * i))
            if n > 0 { runs.append((p, n)) }
        }
        return runs
    }
}

/// A damaged, torn or truncated newest commit opens the file at the previous version, and says
/// so: `Realm.discardedCommit`, cs_db_stats, `cs_file_verify` (docs/FORMAT.md §2).
@Suite struct DamagedCommitTests {
    /// Two commits: 5 objects, then 5,000 more in a commit small enough for one sync.
    func makeFile(_ dir: TempDir) throws -> Realm.Configuration {
        let config = dir.config([DamageItem.self])
        let realm = try Realm(configuration: config)
        try realm.write { for i in 0..<5 { realm.add(DamageItem(value: ["id": i, "name": "a"])) } }
        try realm.write { for i in 5..<5005 { realm.add(DamageItem(value: ["id": i, "name": "b"])) } }
        return config
    }

    @Test func flippedByteInNewestCommitIsReported() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        var b = try FileBytes.read(config.fileURL!)
        let slot = FileBytes.newestSlot(b)
        let runs = FileBytes.newestRuns(b)
        try #require(!runs.isEmpty, "the last commit was not a one-sync commit")
        b[runs[0].0 + runs[0].1 / 2] ^= 0x10
        try FileBytes.write(b, config.fileURL!)

        let realm = try Realm(configuration: config)
        #expect(realm.objects(DamageItem.self).count == 5)
        let lost = try #require(realm.discardedCommit)
        #expect(lost.version == slot.version)
        #expect(lost.openedVersion == slot.version - 1)
        #expect(lost.reason.contains("hash"), "\(lost.reason)")
        #expect(cs_file_verify(config.fileURL!.path) == Int32(CS_CORRUPT))
        #expect(String(cString: cs_errmsg()).contains("newest commit was rejected"))
    }

    @Test func damagedNewestHeaderSlotIsReported() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        var b = try FileBytes.read(config.fileURL!)
        let slot = FileBytes.newestSlot(b)
        b[16 + 64 * slot.slot + 8] ^= 0x01 // the version field: the slot's check no longer matches
        try FileBytes.write(b, config.fileURL!)
        let realm = try Realm(configuration: config)
        #expect(realm.objects(DamageItem.self).count == 5)
        let lost = try #require(realm.discardedCommit)
        #expect(lost.reason.contains("check"), "\(lost.reason)")
    }

    @Test func truncatedNewestCommitIsReported() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        let b = try FileBytes.read(config.fileURL!)
        let runs = FileBytes.newestRuns(b)
        let end = runs.map { $0.0 + $0.1 }.max()!
        try FileBytes.write(Array(b[..<(end - 8)]), config.fileURL!)
        let realm = try Realm(configuration: config)
        #expect(realm.objects(DamageItem.self).count == 5)
        #expect(realm.discardedCommit != nil)
    }

    @Test func intactFileReportsNothing() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        let realm = try Realm(configuration: config)
        #expect(realm.discardedCommit == nil)
        #expect(realm.objects(DamageItem.self).count == 5005)
        #expect(cs_file_verify(config.fileURL!.path) == 0)
    }

    /// The next commit replaces the discarded slot; the file is whole again.
    @Test func nextCommitForgetsTheDiscardedSlot() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        var b = try FileBytes.read(config.fileURL!)
        let runs = FileBytes.newestRuns(b)
        b[runs[0].0 + 3] ^= 0x40
        try FileBytes.write(b, config.fileURL!)
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.discardedCommit != nil)
            try realm.write { realm.add(DamageItem(value: ["id": 9999, "name": "c"])) }
        }
        #expect(cs_file_verify(config.fileURL!.path) == 0, "\(String(cString: cs_errmsg()))")
        let realm = try Realm(configuration: config)
        #expect(realm.discardedCommit == nil)
        #expect(realm.objects(DamageItem.self).count == 6)
    }
}
