import CStore
import Foundation
import Testing
@testable import SwiftStore

final class DamagedReadItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
}

/// Damage the library detects while reading, where the API cannot throw, ends in one fatal
/// error that names the file, what was read and the next step (docs/FORMAT.md, What damage
/// leads to); where the API can throw, it throws `Realm.Error`.
@Suite struct DamagedReadTests {
    /// Writes a file of 300 objects and damages the header of the cluster leaf that holds the
    /// first of them (its flags get a bit no node has).
    static func damagedFile(_ dir: TempDir) throws -> Realm.Configuration {
        let config = dir.config([DamagedReadItem.self])
        let path = config.fileURL!.path
        do {
            let realm = try Realm(configuration: config)
            try realm.write { for i in 0..<300 { realm.add(DamagedReadItem(value: ["id": i, "name": "n\(i)"])) } }
            // two more commits that leave the first leaf alone: the damage below is then in
            // an older node, not in a commit the header slots check
            for i in 300..<302 { try realm.write { realm.add(DamagedReadItem(value: ["id": i, "name": "n\(i)"])) } }
        }
        var db: OpaquePointer?
        var options = cs_options()
        options.flags = UInt32(CS_OPEN_READONLY)
        try #require(cs_db_open(path, &options, &db) == 0)
        var txn: OpaquePointer?
        try #require(cs_txn_begin(db, Int32(CS_TXN_READ), &txn) == 0)
        var table: UInt32 = 0
        try #require(cs_table_find(txn, "DamagedReadItem", &table) == 0)
        var it = cs_iter()
        try #require(cs_iter_init(&it, txn, table) == 0)
        var o = cs_obj()
        try #require(cs_iter_next(&it, &o) == 0)
        let leaf = try #require(o.leaf).assumingMemoryBound(to: UInt8.self)
        let count = Int(leaf[4]) | Int(leaf[5]) << 8 | Int(leaf[6]) << 16 | Int(leaf[7]) << 24
        let image = Array(UnsafeBufferPointer(start: leaf, count: 8 + 8 * count))
        cs_txn_end(txn)
        cs_db_close(db)
        var bytes = try FileBytes.read(config.fileURL!)
        // every copy (older ones are free space now, the live one is among them)
        let found = stride(from: 4096, to: bytes.count - image.count, by: 8).filter {
            bytes[$0] == image[0] && Array(bytes[$0..<($0 + image.count)]) == image
        }
        try #require(!found.isEmpty)
        for at in found { bytes[at + 2] |= 0x80 }
        try FileBytes.write(bytes, config.fileURL!)
        return config
    }

    @Test func readingADamagedLeafIsOneClearFatalError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let config = try! DamagedReadTests.damagedFile(dir)
            let realm = try! Realm(configuration: config)
            let item = realm.object(ofType: DamagedReadItem.self, forPrimaryKey: 0)
            _ = item?.name
            _ = realm.objects(DamagedReadItem.self).map(\.name)
        }
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(text.contains("SwiftStore: the database file /"), "\(text.suffix(600))")
        #expect(text.contains("is damaged: database corrupt: bad node header at"), "\(text.suffix(600))")
        #expect(text.contains("Run `swiftstore verify /"), "\(text.suffix(600))")
    }

    /// The throwing APIs that read every node (a compacted copy, compaction on launch, a
    /// backup through the core) throw `Realm.Error` for the damaged leaf instead of copying it
    /// or stopping the process, and the file is left as it was.
    @Test func throwingAPIsThrowRealmErrorForDamage() throws {
        let dir = TempDir()
        let config = try Self.damagedFile(dir)
        let before = try FileBytes.read(config.fileURL!)
        let copy = dir.file("copy.realm")
        do {
            let realm = try Realm(configuration: config)
            try realm.writeCopy(toFile: copy)
            Issue.record("writeCopy of a damaged file did not throw")
        } catch let error as Realm.Error {
            #expect(error.code == .invalidDatabase || error.code == .fail, "\(error)")
            #expect(error.localizedDescription.contains("corrupt") || error.localizedDescription.contains("damaged"),
                    "\(error.localizedDescription)")
        }
        #expect(!FileManager.default.fileExists(atPath: copy.path), "a partial copy was left behind")

        var compacting = config
        compacting.shouldCompactOnLaunch = { _, _ in true }
        // the Realm above is gone with its scope: compaction in place needs the file to itself
        do {
            _ = try Realm(configuration: compacting)
            Issue.record("compacting a damaged file did not throw")
        } catch let error as Realm.Error {
            #expect(error.code == .invalidDatabase || error.code == .fail, "\(error)")
        }
        #expect(try FileBytes.read(config.fileURL!) == before, "the damaged file was changed")
    }

    /// `verify` names the damaged node.
    @Test func verifyNamesTheDamagedNode() throws {
        let dir = TempDir()
        let config = try Self.damagedFile(dir)
        #expect(cs_file_verify(config.fileURL!.path) == Int32(CS_CORRUPT))
        #expect(String(cString: cs_errmsg()).contains("node at") || String(cString: cs_errmsg()).contains("bad node header at"))
    }
}
