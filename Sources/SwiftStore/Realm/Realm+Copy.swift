import Foundation

extension Realm {
    /// Writes a compacted copy of the data this instance reads to a new file: only what the
    /// current version holds, with no free space, openable as a Realm like any other file.
    /// Other threads and processes may go on writing meanwhile; the copy is the version this
    /// instance reads (call `refresh()` first for the newest).
    ///
    /// ```swift
    /// try realm.writeCopy(toFile: backupURL)
    /// ```
    ///
    /// - Parameters:
    ///   - fileURL: where to write the copy; nothing may exist there.
    ///   - encryptionKey: must be nil (encryption is not supported yet).
    /// - Throws: `Realm.Error.fileExists` when `fileURL` exists, `.fail` for an encryption key
    ///   or inside a write transaction, `.filePermissionDenied`, `.outOfDiskSpace`,
    ///   `.fileAccess`. Wraps `cs_txn_write_copy`.
    public func writeCopy(toFile fileURL: URL, encryptionKey: Data? = nil) throws {
        core.verifyThread()
        if encryptionKey != nil {
            throw Realm.Error(.fail, "Encryption is not supported by this version of SwiftStore; "
                              + "write the copy without an encryptionKey", fileURL: fileURL)
        }
        try core.writeCopy(toPath: fileURL.path)
    }

    /// Writes a compacted copy of the data this instance reads to the file of `configuration`
    /// (its `fileURL` and `encryptionKey`), as `writeCopy(toFile:encryptionKey:)`.
    ///
    /// - Throws: as `writeCopy(toFile:encryptionKey:)`; `.invalidInput` for an in-memory
    ///   configuration.
    public func writeCopy(configuration: Configuration) throws {
        guard configuration.inMemoryIdentifier == nil, let url = configuration.fileURL else {
            throw Realm.Error(.invalidInput, "writeCopy(configuration:) needs a configuration with a fileURL")
        }
        try writeCopy(toFile: url, encryptionKey: configuration.encryptionKey)
    }
}
