import Foundation
import Testing
@testable import SwiftStore

// MARK: - Models

final class ErrItem: Object {
    @Persisted var name = ""
    @Persisted var n = 0
}

/// ErrItem with an extra property: opening an ErrItem file with it needs a migration.
final class ErrItemV2: Object {
    override class func className() -> String { "ErrItem" }
    @Persisted var name = ""
    @Persisted var n = 0
    @Persisted var extra = 0
}

// MARK: - Helpers

/// Writes a real file holding ErrItems named `names`, and closes it.
@discardableResult
private func makeFile(_ dir: TempDir, _ names: [String] = ["a", "b"]) throws -> Realm.Configuration {
    let config = dir.config([ErrItem.self])
    let realm = try Realm(configuration: config)
    try realm.write {
        for (i, name) in names.enumerated() { realm.create(ErrItem.self, value: ["name": name, "n": i]) }
    }
    return config
}

/// The names stored in the file (opened normally, then closed).
private func storedNames(_ config: Realm.Configuration) throws -> [String] {
    let realm = try Realm(configuration: config)
    return realm.objects(ErrItem.self).map(\.name).sorted()
}

private func patch(_ url: URL, at offset: UInt64, _ bytes: [UInt8]) throws {
    let handle = try FileHandle(forUpdating: url)
    defer { try? handle.close() }
    try handle.seek(toOffset: offset)
    try handle.write(contentsOf: Data(bytes))
}

private func bytes(_ url: URL, at offset: Int, count: Int) throws -> [UInt8] {
    Array(try Data(contentsOf: url)[offset..<offset + count])
}

private func truncate(_ url: URL, to size: UInt64) throws {
    let handle = try FileHandle(forUpdating: url)
    defer { try? handle.close() }
    try handle.truncate(atOffset: size)
}

// MARK: - Tests

@Suite struct RealmErrorTests {
    // MARK: Error codes from real situations

    @Test func fileNotFoundForAReadOnlyOpenOfAMissingFile() {
        let dir = TempDir()
        var config = dir.config([ErrItem.self])
        config.readOnly = true
        var caught = false
        do {
            _ = try Realm(configuration: config)
        } catch Realm.Error.fileNotFound {
            caught = true
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught)
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: config) }
        #expect(error?.code == .fileNotFound)
        #expect(error?.fileURL?.path == dir.file().path)
        #expect(error?.localizedDescription.contains(dir.file().path) == true)
        #expect(!FileManager.default.fileExists(atPath: dir.file().path))
    }

    @Test func invalidDatabaseForAFileOfRandomBytes() throws {
        let dir = TempDir()
        var generator = SystemRandomNumberGenerator()
        let junk = Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try junk.write(to: dir.file())
        let config = dir.config([ErrItem.self])
        var caught = false
        do {
            _ = try Realm(configuration: config)
        } catch Realm.Error.invalidDatabase {
            caught = true
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught)
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: config) }
        #expect(error?.code == .invalidDatabase)
        #expect(error?.fileURL?.path == dir.file().path)
        // The failed open did not touch the file.
        #expect(try Data(contentsOf: dir.file()) == junk)
    }

    @Test func invalidDatabaseForATextFile() throws {
        let dir = TempDir()
        try Data("hello, world\n".utf8).write(to: dir.file())
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: dir.config([ErrItem.self])) }
        #expect(error?.code == .invalidDatabase)
        #expect(try Data(contentsOf: dir.file()) == Data("hello, world\n".utf8))
    }

    @Test(arguments: [100, 2048, 4096] as [UInt64])
    func invalidDatabaseForATruncatedFile(size: UInt64) throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        try truncate(dir.file(), to: size)
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: config) }
        #expect(error?.code == .invalidDatabase)
        #expect(error?.fileURL?.path == dir.file().path)
    }

    @Test func emptyFileIsInitializedAsANewRealm() throws {
        let dir = TempDir()
        try Data().write(to: dir.file())
        let realm = try Realm(configuration: dir.config([ErrItem.self]))
        #expect(realm.isEmpty)
    }

    @Test func unsupportedFileFormatVersionForANewerReadVersion() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        #expect(try bytes(dir.file(), at: 8, count: 4) == [6, 0, 6, 0]) // FORMAT.md §2: committed, so 6
        try patch(dir.file(), at: 8, [99, 0])
        var caught = false
        do {
            _ = try Realm(configuration: config)
        } catch Realm.Error.unsupportedFileFormatVersion {
            caught = true
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught)
        var readOnly = config
        readOnly.readOnly = true
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: readOnly) }
        #expect(error?.code == .unsupportedFileFormatVersion)
        #expect(error?.fileURL?.path == dir.file().path)
        // The failed opens left the file as it was: restoring the version byte makes it readable.
        #expect(try bytes(dir.file(), at: 8, count: 2) == [99, 0])
        try patch(dir.file(), at: 8, [1, 0])
        #expect(try storedNames(config) == ["a", "b"])
    }

    @Test func newerWriteVersionCanBeReadButNotWritten() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        try patch(dir.file(), at: 10, [99, 0])
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: config) }
        #expect(error?.code == .unsupportedFileFormatVersion)
        var readOnly = config
        readOnly.readOnly = true
        #expect(try storedNames(readOnly) == ["a", "b"])
    }

    @Test func incompatibleLockFile() async throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        let path = dir.file().path
        // Another opener holds the lock file; it then sees a layout it does not know (FORMAT.md §9).
        var holder: Realm? = try Realm(configuration: config, queue: nil)
        #expect(try bytes(URL(fileURLWithPath: path + ".lock"), at: 8, count: 4) == [6, 0, 0, 0])
        try patch(URL(fileURLWithPath: path + ".lock"), at: 8, [99, 0, 0, 0])
        await #expect(processExitsWith: .success) { [path = path as String] in
            let config = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [ErrItem.self])
            do {
                _ = try Realm(configuration: config)
                FileHandle.standardError.write(Data("the open succeeded\n".utf8))
                exit(3)
            } catch Realm.Error.incompatibleLockFile {
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("unexpected error \(error)\n".utf8))
                exit(4)
            }
        }
        holder = nil
        _ = holder
        // Alone again, the next open rebuilds the lock file; the data is intact.
        #expect(try storedNames(config) == ["a", "b"])
    }

    @Test func failForAnEncryptionKey() throws {
        let dir = TempDir()
        var config = dir.config([ErrItem.self])
        config.encryptionKey = Data(repeating: 7, count: 64)
        var caught = false
        do {
            _ = try Realm(configuration: config)
        } catch Realm.Error.fail {
            caught = true
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught)
        #expect(!FileManager.default.fileExists(atPath: dir.file().path))
        // An existing file is left alone.
        let plain = try makeFile(dir)
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: config) }
        #expect(error?.code == .fail)
        #expect(try storedNames(plain) == ["a", "b"])
    }

    @Test func fileAccessWhenThePathIsADirectory() throws {
        let dir = TempDir()
        let config = Realm.Configuration(fileURL: dir.url, objectTypes: [ErrItem.self])
        var caught = false
        do {
            _ = try Realm(configuration: config)
        } catch Realm.Error.fileAccess {
            caught = true
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught)
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: config) }
        #expect(error?.fileURL?.path == dir.url.path)
        #expect(error?.localizedDescription.isEmpty == false)
    }

    @Test func schemaMismatchLeavesTheFileIntact() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        var caught = false
        do {
            _ = try Realm(configuration: dir.config([ErrItemV2.self]))
        } catch Realm.Error.schemaMismatch {
            caught = true
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught)
        let error = #expect(throws: Realm.Error.self) { _ = try Realm(configuration: dir.config([ErrItemV2.self])) }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.localizedDescription == """
            Migration is required due to the following errors:
            - Property 'ErrItem.extra' has been added.
            """)
        #expect(try storedNames(config) == ["a", "b"])
        #expect(try schemaVersionAtURL(dir.file()) == 0)
    }

    @Test func catchClausesMatchOnlyTheirOwnCode() {
        let error: Swift.Error = Realm.Error(.schemaMismatch, "m")
        var matched: [String] = []
        do { throw error } catch Realm.Error.fileNotFound { matched.append("fileNotFound") } catch Realm.Error.schemaMismatch {
            matched.append("schemaMismatch")
        } catch { matched.append("other") }
        #expect(matched == ["schemaMismatch"])
        #expect(!(Realm.Error.fail ~= error))
        #expect(Realm.Error.schemaMismatch ~= error)
        #expect(!(Realm.Error.schemaMismatch ~= CocoaError(.fileNoSuchFile)))
    }

    @Test func codeRawValuesMatchRealmSwift() {
        // RLMError in RLMConstants.h.
        #expect(Realm.Error.Code.fail.rawValue == 1)
        #expect(Realm.Error.Code.fileAccess.rawValue == 2)
        #expect(Realm.Error.Code.filePermissionDenied.rawValue == 3)
        #expect(Realm.Error.Code.fileExists.rawValue == 4)
        #expect(Realm.Error.Code.fileNotFound.rawValue == 5)
        #expect(Realm.Error.Code.fileFormatUpgradeRequired.rawValue == 6)
        #expect(Realm.Error.Code.incompatibleLockFile.rawValue == 8)
        #expect(Realm.Error.Code.addressSpaceExhausted.rawValue == 9)
        #expect(Realm.Error.Code.schemaMismatch.rawValue == 10)
        #expect(Realm.Error.Code.unsupportedFileFormatVersion.rawValue == 16)
        #expect(Realm.Error.Code.fileOperationFailed.rawValue == 19)
        #expect(Realm.Error.Code.invalidDatabase.rawValue == 20)
    }

    // MARK: fileExists and deleteFiles

    @Test func fileExistsAndDeleteFiles() throws {
        let dir = TempDir()
        let config = dir.config([ErrItem.self])
        let lock = dir.file().path + ".lock"
        #expect(!Realm.fileExists(for: config))
        do {
            _ = try Realm(configuration: config)
            #expect(Realm.fileExists(for: config))
            #expect(FileManager.default.fileExists(atPath: lock))
        }
        #expect(Realm.fileExists(for: config))
        #expect(try Realm.deleteFiles(for: config) == true)
        #expect(!Realm.fileExists(for: config))
        #expect(!FileManager.default.fileExists(atPath: dir.file().path))
        #expect(!FileManager.default.fileExists(atPath: lock))
        #expect(try Realm.deleteFiles(for: config) == false)
        // The directory itself stays.
        #expect(FileManager.default.fileExists(atPath: dir.url.path))
    }

    @Test func deleteFilesOfAnOpenRealmThrows() throws {
        let dir = TempDir()
        let config = try makeFile(dir)
        let realm = try Realm(configuration: config)
        let error = #expect(throws: Realm.Error.self) { try Realm.deleteFiles(for: config) }
        #expect(error?.code == Realm.Error.Code(rawValue: 12)) // RLMErrorAlreadyOpen
        #expect(Realm.fileExists(for: config))
        #expect(realm.objects(ErrItem.self).count == 2)
    }

    // MARK: Configuration

    @Test func defaultConfiguration() {
        let config = Realm.Configuration()
        #expect(config.fileURL?.lastPathComponent == "default.realm")
        #expect(config.inMemoryIdentifier == nil)
        #expect(config.encryptionKey == nil)
        #expect(config.readOnly == false)
        #expect(config.schemaVersion == 0)
        #expect(config.migrationBlock == nil)
        #expect(config.deleteRealmIfMigrationNeeded == false)
        #expect(config.objectTypes == nil)
        #expect(config.maximumNumberOfActiveVersions == nil)
    }

    @Test func fileURLAndInMemoryIdentifierClearEachOther() {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("x.realm")
        var config = Realm.Configuration(fileURL: url)
        #expect(config.fileURL == url)
        config.inMemoryIdentifier = "mem"
        #expect(config.inMemoryIdentifier == "mem")
        #expect(config.fileURL == nil)
        config.fileURL = url
        #expect(config.fileURL == url)
        #expect(config.inMemoryIdentifier == nil)
        // The initializer applies the identifier last.
        let both = Realm.Configuration(fileURL: url, inMemoryIdentifier: "mem")
        #expect(both.fileURL == nil)
        #expect(both.inMemoryIdentifier == "mem")
    }

    @Test func configurationEquality() {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("x.realm")
        let a = Realm.Configuration(fileURL: url, schemaVersion: 2, objectTypes: [ErrItem.self])
        var b = Realm.Configuration(fileURL: url, schemaVersion: 2, objectTypes: [ErrItem.self])
        #expect(a == b)
        b.schemaVersion = 3
        #expect(a != b)
        b = a
        b.objectTypes = [ErrItemV2.self]
        #expect(a != b)
        b = a
        b.readOnly = true
        #expect(a != b)
    }

    @Test func inMemoryRealmKeepsDataWhileAnInstanceIsOpen() throws {
        let config = Realm.Configuration(inMemoryIdentifier: UUID().uuidString, objectTypes: [ErrItem.self])
        do {
            let realm = try Realm(configuration: config)
            #expect(realm.configuration.fileURL == nil)
            try realm.write { realm.create(ErrItem.self, value: ["name": "a"]) }
            // Another instance (confined to a queue) sees the data while this one is open.
            let queue = DispatchQueue(label: "RealmErrorTests.inMemory")
            let count = try queue.sync {
                try Realm(configuration: config, queue: queue).objects(ErrItem.self).count
            }
            #expect(count == 1)
            #expect(realm.objects(ErrItem.self).count == 1)
        }
        // Every instance released: the data is gone.
        let realm = try Realm(configuration: config)
        #expect(realm.isEmpty)
    }

    @Test func inMemoryRealmsWithDifferentIdentifiersAreSeparate() throws {
        let a = try Realm(configuration: .init(inMemoryIdentifier: UUID().uuidString, objectTypes: [ErrItem.self]))
        let b = try Realm(configuration: .init(inMemoryIdentifier: UUID().uuidString, objectTypes: [ErrItem.self]))
        try a.write { a.create(ErrItem.self, value: ["name": "a"]) }
        #expect(a.objects(ErrItem.self).count == 1)
        #expect(b.objects(ErrItem.self).count == 0)
    }

    @Test func readOnlyRealmReads() throws {
        let dir = TempDir()
        try makeFile(dir)
        var config = dir.config([ErrItem.self])
        config.readOnly = true
        let realm = try Realm(configuration: config)
        #expect(realm.configuration.readOnly)
        #expect(realm.objects(ErrItem.self).map(\.name).sorted() == ["a", "b"])
        #expect(realm.objects(ErrItem.self).filter { $0.n == 1 }.map(\.name) == ["b"])
    }

    @Test func readOnlyRealmRefusesBeginWrite() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            do {
                let realm = try Realm(configuration: dir.config([ErrItem.self]))
                try realm.write { realm.create(ErrItem.self, value: ["name": "a"]) }
            } catch {
                exit(0) // setup failed: exiting successfully fails the test
            }
            var config = dir.config([ErrItem.self])
            config.readOnly = true
            guard let realm = try? Realm(configuration: config), realm.objects(ErrItem.self).count == 1 else {
                exit(0)
            }
            realm.beginWrite()
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("read-only"))
    }

    @Test func readOnlyRealmRefusesWrite() async {
        await #expect(processExitsWith: .failure) {
            let dir = TempDir()
            do {
                let realm = try Realm(configuration: dir.config([ErrItem.self]))
                try realm.write { realm.create(ErrItem.self, value: ["name": "a"]) }
            } catch {
                exit(0)
            }
            var config = dir.config([ErrItem.self])
            config.readOnly = true
            guard let realm = try? Realm(configuration: config) else { exit(0) }
            _ = try? realm.write { realm.create(ErrItem.self, value: ["name": "b"]) }
            exit(0) // reaching here means the write was allowed
        }
    }
}

/// `maximumNumberOfActiveVersions`: Realms pinned at older versions count against the limit.
@Suite struct ActiveVersionLimitTests {
    @Test func aThirdPinnedVersionIsRefusedWithTheCoresMessage() throws {
        let dir = TempDir()
        var config = dir.config([Dog.self, Person.self, Address.self])
        config.maximumNumberOfActiveVersions = 2
        let realm = try Realm(configuration: config)
        // A Realm confined to a queue keeps the version it opened at pinned.
        let q1 = DispatchQueue(label: "pin-1")
        let first = UncheckedBox<Realm?>(nil)
        q1.sync { first.value = try! Realm(configuration: config, queue: q1) }
        try realm.write { realm.add(Dog(value: ["name": "a"])) }
        let q2 = DispatchQueue(label: "pin-2")
        let second = UncheckedBox<Realm?>(nil)
        q2.sync { second.value = try! Realm(configuration: config, queue: q2) }
        // Two versions are pinned now (the first queue's and the current one); a write would
        // make a third.
        var message = ""
        do {
            try realm.write { realm.add(Dog(value: ["name": "b"])) }
        } catch let error as Realm.Error {
            message = error.localizedDescription
        }
        #expect(message.contains("too many active versions"), "\(message)")
        #expect(!realm.isInWriteTransaction)
        #expect(realm.objects(Dog.self).map(\.name) == ["a"], "the refused write left nothing behind")
        // Letting the oldest go makes room again.
        q1.sync { first.value = nil }
        try realm.write { realm.add(Dog(value: ["name": "c"])) }
        #expect(realm.objects(Dog.self).map(\.name) == ["a", "c"])
        q2.sync { second.value = nil }
    }
}
