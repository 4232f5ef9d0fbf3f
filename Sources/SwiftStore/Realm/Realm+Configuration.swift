import Foundation
import Synchronization

extension Realm {
    /// Where a Realm lives and how to open it: the file (or an in-memory identifier), the
    /// schema and its version, a migration, and limits.
    ///
    /// ```swift
    /// var config = Realm.Configuration()
    /// config.fileURL = dir.appendingPathComponent("app.realm")
    /// config.schemaVersion = 2
    /// config.migrationBlock = { migration, oldVersion in ... }
    /// let realm = try Realm(configuration: config)
    /// ```
    public struct Configuration: Sendable, CustomStringConvertible, Equatable {
        /// The configuration `Realm()` uses. Set it to change the default for the process.
        public static var defaultConfiguration: Configuration {
            get { defaultStorage.withLock { $0 } }
            set { defaultStorage.withLock { $0 = newValue } }
        }

        /// The file (default: `default.realm` in the working directory). Setting it clears
        /// `inMemoryIdentifier`.
        public var fileURL: URL? {
            get { _fileURL }
            set {
                _fileURL = newValue
                if newValue != nil { _inMemoryIdentifier = nil }
            }
        }

        /// A name for a Realm that lives in memory while any instance of it is open. Setting it
        /// clears `fileURL`.
        public var inMemoryIdentifier: String? {
            get { _inMemoryIdentifier }
            set {
                _inMemoryIdentifier = newValue
                if newValue != nil { _fileURL = nil }
            }
        }

        /// A 64-byte encryption key. Encryption is not supported yet: opening with a key throws
        /// `Realm.Error.fail` rather than writing an unencrypted file.
        public var encryptionKey: Data?

        /// Open the file read-only (it must exist; writes are refused).
        public var readOnly: Bool = false

        /// The version of the models' schema. When it is higher than the file's, the file is
        /// migrated (running `migrationBlock`).
        public var schemaVersion: UInt64 = 0

        /// Runs during a migration, with the migration and the file's previous schema version.
        public var migrationBlock: MigrationBlock?

        /// Delete the file and start over instead of failing when the schema changed without a
        /// migration.
        public var deleteRealmIfMigrationNeeded: Bool = false

        /// Asked on the first open of the file in this process, with the file's size and the
        /// bytes its data uses (`totalBytes`, `usedBytes`): return true to compact the file
        /// before it opens (a compacted copy replaces it; see `Realm.writeCopy`). Compaction is
        /// skipped without an error when another process has the file open. Not allowed with
        /// `readOnly` or an in-memory Realm (opening throws `.invalidInput`).
        ///
        /// ```swift
        /// config.shouldCompactOnLaunch = { totalBytes, usedBytes in
        ///     totalBytes > 100 * 1024 * 1024 && Double(usedBytes) / Double(totalBytes) < 0.5
        /// }
        /// ```
        public var shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)?

        /// A file to copy to `fileURL` when no file is there yet, on the first open in this
        /// process (a database shipped with the app). The copy is opened like any file.
        public var seedFilePath: URL?

        /// The model classes this Realm stores. When nil, every `Object` and `EmbeddedObject`
        /// subclass in the process is used.
        public var objectTypes: [ObjectBase.Type]? {
            get { _objectTypes?.types }
            set { _objectTypes = newValue.map { TypeList(types: $0) } }
        }

        /// The most versions that open transactions may pin at once; beginning a read that
        /// would pin more fails. Nil for no limit.
        public var maximumNumberOfActiveVersions: UInt?

        private var _fileURL: URL? {
            didSet { _filePath = _fileURL?.path }
        }
        /// `_fileURL`'s path, kept with it: `URL.path` parses the URL again at every call (about
        /// 0.6 µs), and every write reads `path` two or three times (the notifier's lookup in
        /// `beginWrite` and in the commit; docs/benchmarks/README.md, "notify.latency: the path
        /// and the hand-over").
        private var _filePath: String?
        private var _inMemoryIdentifier: String?
        private var _objectTypes: TypeList?

        /// Creates a configuration; every parameter has a default.
        public init(fileURL: URL? = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
                        .appendingPathComponent("default.realm"),
                    inMemoryIdentifier: String? = nil,
                    encryptionKey: Data? = nil,
                    readOnly: Bool = false,
                    schemaVersion: UInt64 = 0,
                    migrationBlock: MigrationBlock? = nil,
                    deleteRealmIfMigrationNeeded: Bool = false,
                    shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)? = nil,
                    objectTypes: [ObjectBase.Type]? = nil,
                    seedFilePath: URL? = nil,
                    maximumNumberOfActiveVersions: UInt? = nil) {
            self._fileURL = fileURL
            self._filePath = fileURL?.path
            self.encryptionKey = encryptionKey
            self.readOnly = readOnly
            self.schemaVersion = schemaVersion
            self.migrationBlock = migrationBlock
            self.deleteRealmIfMigrationNeeded = deleteRealmIfMigrationNeeded
            self.shouldCompactOnLaunch = shouldCompactOnLaunch
            self.seedFilePath = seedFilePath
            self.maximumNumberOfActiveVersions = maximumNumberOfActiveVersions
            self._objectTypes = objectTypes.map { TypeList(types: $0) }
            if let inMemoryIdentifier { self.inMemoryIdentifier = inMemoryIdentifier }
        }

        /// The path the core opens: the file, or a file in the temporary directory named after
        /// the in-memory identifier (deleted when its last handle closes).
        var path: String {
            if let id = _inMemoryIdentifier {
                let safe = id.map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
                return NSTemporaryDirectory() + "/swiftstore-memory-\(getpid())-\(safe).realm"
            }
            return _filePath ?? URL(fileURLWithPath: "default.realm").path
        }

        /// The identity instances are cached by.
        var cacheKey: String { path }

        /// A description listing the settings.
        public var description: String {
            var parts: [String] = []
            if let url = _fileURL { parts.append("fileURL = \(url.path)") }
            if let id = _inMemoryIdentifier { parts.append("inMemoryIdentifier = \(id)") }
            parts.append("readOnly = \(readOnly)")
            parts.append("schemaVersion = \(schemaVersion)")
            parts.append("migrationBlock = \(migrationBlock == nil ? "nil" : "set")")
            parts.append("deleteRealmIfMigrationNeeded = \(deleteRealmIfMigrationNeeded)")
            parts.append("shouldCompactOnLaunch = \(shouldCompactOnLaunch == nil ? "nil" : "set")")
            if let seed = seedFilePath { parts.append("seedFilePath = \(seed.path)") }
            parts.append("objectTypes = \(objectTypes.map { "\($0.map { $0.className() })" } ?? "nil")")
            parts.append("maximumNumberOfActiveVersions = \(maximumNumberOfActiveVersions.map(String.init) ?? "nil")")
            return "Realm.Configuration {\n\t" + parts.joined(separator: "\n\t") + "\n}"
        }

        /// Configurations are equal when their files, identifiers, flags, versions and types
        /// are (blocks are not compared).
        public static func == (a: Configuration, b: Configuration) -> Bool {
            a._fileURL == b._fileURL && a._inMemoryIdentifier == b._inMemoryIdentifier
                && a.encryptionKey == b.encryptionKey && a.readOnly == b.readOnly
                && a.schemaVersion == b.schemaVersion
                && a.deleteRealmIfMigrationNeeded == b.deleteRealmIfMigrationNeeded
                && a._objectTypes == b._objectTypes && a.seedFilePath == b.seedFilePath
                && a.maximumNumberOfActiveVersions == b.maximumNumberOfActiveVersions
        }
    }

    /// The block a migration runs: the migration and the file's previous schema version.
    public typealias MigrationBlock = SwiftStore.MigrationBlock
}

/// The block a migration runs: the migration and the file's previous schema version.
public typealias MigrationBlock = @Sendable (_ migration: Migration, _ oldSchemaVersion: UInt64) -> Void

/// A list of model classes that can cross threads (class metatypes are immutable).
struct TypeList: @unchecked Sendable, Equatable {
    let types: [ObjectBase.Type]
    static func == (a: TypeList, b: TypeList) -> Bool {
        a.types.map(ObjectIdentifier.init) == b.types.map(ObjectIdentifier.init)
    }
}

private let defaultStorage = Locked(Realm.Configuration())
