import CStore
import CStoreCall
import Foundation

/// The one place where the storage core's return codes become `Realm.Error`s or traps.
///
/// A code is captured as a `CStoreError` (CStoreCall, shared with the tool, the benchmarks
/// and the tests) and mapped from there. Throwing paths (opening a file, committing) turn a code into a `Realm.Error`; paths that
/// RealmSwift does not let throw (property accessors, collection mutations) trap through
/// `CoreCall.must` with the core's message, as RealmSwift raises an exception there.
enum CoreCall {
    /// The core's message for the last failure on this thread.
    static var lastMessage: String { CStoreError.lastMessage }

    /// Maps a core return code to a `Realm.Error`, keeping the core's message and errno.
    static func error(_ rc: Int32, _ context: String, url: URL? = nil) -> Realm.Error {
        error(CStoreError(rc, context: context), url: url)
    }

    /// Maps a failure of the core to a `Realm.Error`, keeping the core's message and errno.
    static func error(_ failure: CStoreError, url: URL? = nil) -> Realm.Error {
        let rc = failure.code, context = failure.context
        let message = failure.message
        let errno = failure.osErrno
        let code: Realm.Error.Code
        switch Int(rc) {
        case Int(CS_NOTFOUND): code = .fileNotFound
        case Int(CS_CORRUPT): code = .invalidDatabase
        case Int(CS_FULL) where errno == ENOSPC: code = .outOfDiskSpace
        // a read-only file system refuses a read-write open: a permission matter, as in RealmSwift
        case Int(CS_READONLY) where errno == EROFS, Int(CS_IOERR) where errno == EROFS:
            code = .filePermissionDenied
        case Int(CS_FULL), Int(CS_IOERR), Int(CS_READONLY), Int(CS_BUSY): code = .fileAccess
        case Int(CS_PERM): code = .filePermissionDenied
        // a name the library must use is held by something else (the commit journal's,
        // `<file>.journal`, by a directory, a FIFO, a dangling link or a file that is not a
        // journal; the core's message names it): a file-access failure of the open or the
        // commit, as RealmSwift reports an auxiliary file of a Realm (its lock file) that is a
        // directory. `fileExists` stays for writing a copy over an existing file (writeCopy);
        // the core's other CS_EXISTS (a table, an object key, a feed slot named twice) carry no
        // errno: `.fail`
        case Int(CS_EXISTS) where errno == EEXIST: code = .fileAccess
        case Int(CS_VERSION):
            code = message.contains("lock file") ? .incompatibleLockFile : .unsupportedFileFormatVersion
        case Int(CS_NOMEM): code = .addressSpaceExhausted
        default: code = .fail
        }
        let text = message.isEmpty ? "\(context): \(failure.codeName)" : "\(context): \(message)"
        return Realm.Error(code, text, fileURL: url, errno: errno)
    }

    /// Throws unless `rc` is `CS_OK`.
    @inline(__always)
    static func check(_ rc: Int32, _ context: @autoclosure () -> String, url: URL? = nil) throws {
        if rc != 0 { throw error(rc, context(), url: url) }
    }

    /// Traps with the core's message unless `rc` is `CS_OK`: for operations RealmSwift does not
    /// let throw, where a failure means misuse or a damaged file.
    @inline(__always)
    static func must(_ rc: Int32, _ context: @autoclosure () -> String,
                     file: StaticString = #fileID, line: UInt = #line) {
        if rc != 0 { fail(rc, context(), file: file, line: line) }
    }

    /// Runs `body`, trapping with the failure's message if it throws: for the core calls behind
    /// Internal/'s throwing helpers where RealmSwift does not let the caller throw. Damage
    /// (`invalidDatabase`) ends in ``damaged(_:path:)``.
    @discardableResult
    static func must<R>(_ body: () throws -> R, file: StaticString = #fileID, line: UInt = #line) -> R {
        do { return try body() } catch let e as Realm.Error {
            if e.code == .invalidDatabase { damaged(e.message, path: e.fileURL?.path) }
            preconditionFailure(e.message, file: file, line: line)
        } catch {
            preconditionFailure("\(error)", file: file, line: line)
        }
    }

    /// Traps with a RealmSwift-like message for an error code; damage found in the file
    /// (`CS_CORRUPT`) ends in ``damaged(_:path:)``.
    static func fail(_ rc: Int32, _ context: String, path: String? = nil, file: StaticString = #fileID,
                     line: UInt = #line) -> Never {
        if rc == Int32(CS_CORRUPT) { damaged(context, path: path) }
        preconditionFailure("\(context): \(lastMessage) (\(CStoreError.codeName(rc)))",
                            file: file, line: line)
    }

    /// The one fatal error for damage found in a file where the API cannot throw (docs/FORMAT.md,
    /// What damage leads to): it names the file, what was being read and where the damage is,
    /// and the next step. `fatalError`, so the message is printed in optimised builds too.
    static func damaged(_ context: String, path: String?) -> Never {
        let found = String(cString: cs_errpath())
        let file = found.isEmpty ? path : found
        fatalError("SwiftStore: the database file \(file ?? "(unknown path)") is damaged: \(lastMessage) "
                   + "(while \(context)). Run `swiftstore verify \(file ?? "FILE")` for a full report; "
                   + "restore the file from a backup.")
    }
}
