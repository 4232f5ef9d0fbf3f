import CStore
import Foundation
import Testing
@testable import SwiftStore
#if canImport(Glibc)
import Glibc
#endif

/// A cs_io whose opens for writing fail with EROFS, as on a read-only file system.
final class ReadOnlyFileSystemIO: @unchecked Sendable {
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { _, path, flags, mode in
            if flags & O_ACCMODE != O_RDONLY { errno = EROFS; return -1 }
            return Glibc.open(path!, flags, mode)
        }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { _, _, _, _, _ in errno = EROFS; return -1 }
        x.fdatasync = { _, fd in Glibc.fdatasync(fd) }
        x.ftruncate = { _, _, _ in errno = EROFS; return -1 }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        io.initialize(to: x)
    }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }
}

@Suite struct ErrorCodeTests {
    /// A read-write open on a read-only file system is `filePermissionDenied`, as in RealmSwift.
    @Test func readOnlyFileSystemIsPermissionDenied() throws {
        let dir = TempDir()
        let config = dir.config([Dog.self, Person.self, Address.self])
        do { _ = try Realm(configuration: config) } // the file exists
        let path = config.fileURL!.path
        let fs = ReadOnlyFileSystemIO()
        RealmCore.ioForTesting.withLock { $0[path] = UInt(bitPattern: fs.io) }
        defer { RealmCore.ioForTesting.withLock { $0[path] = nil } }
        #expect {
            _ = try Realm(configuration: config)
        } throws: { ($0 as? Realm.Error)?.code == .filePermissionDenied }
    }

    /// A directory at the path of the commit journal (`<file>.journal`, docs/FORMAT.md §13): the
    /// open throws `fileAccess` (as RealmSwift does for a lock file that is a directory), with a
    /// message that names the journal's path, not the generic `fail`.
    @Test func somethingAtTheJournalsPathIsFileAccess() throws {
        let dir = TempDir()
        let config = dir.config([Dog.self, Person.self, Address.self])
        do { _ = try Realm(configuration: config) } // the file exists
        let path = config.fileURL!.path
        try? FileManager.default.removeItem(atPath: path + ".journal")
        try FileManager.default.createDirectory(atPath: path + ".journal", withIntermediateDirectories: false)
        do {
            _ = try Realm(configuration: config)
            Issue.record("the open succeeded")
        } catch let e as Realm.Error {
            #expect(e.code == .fileAccess, "\(e.code): \(e.message)")
            #expect(e.message.contains(path + ".journal") && e.message.contains("directory"), "\(e.message)")
        }
        var isDir: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: path + ".journal", isDirectory: &isDir) && isDir.boolValue)
    }
}
