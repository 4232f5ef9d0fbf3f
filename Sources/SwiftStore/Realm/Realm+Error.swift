import Foundation

extension Realm {
    /// An error thrown by SwiftStore: a `code` from RealmSwift's set, a message, and the file it
    /// concerns. Match it by code, as in RealmSwift:
    ///
    /// ```swift
    /// do { _ = try Realm(configuration: config) }
    /// catch Realm.Error.fileNotFound { ... }
    /// catch let error as Realm.Error where error.code == .schemaMismatch { ... }
    /// ```
    public struct Error: Swift.Error, CustomStringConvertible, Equatable, Sendable {
        /// What went wrong, in RealmSwift's terms. New codes may be added.
        public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
            public let rawValue: Int
            /// Creates a code from its number.
            public init(rawValue: Int) { self.rawValue = rawValue }

            /// Any failure without a more specific code.
            public static let fail = Code(rawValue: 1)
            /// The file could not be opened or used (I/O failure, locked, disk full).
            public static let fileAccess = Code(rawValue: 2)
            /// The operating system denied access to the file.
            public static let filePermissionDenied = Code(rawValue: 3)
            /// The destination file exists already.
            public static let fileExists = Code(rawValue: 4)
            /// The file does not exist (for example a read-only open of a missing file).
            public static let fileNotFound = Code(rawValue: 5)
            /// The file's format must be upgraded, and the open does not allow writing.
            public static let fileFormatUpgradeRequired = Code(rawValue: 6)
            /// A file operation (delete, copy) failed.
            public static let fileOperationFailed = Code(rawValue: 19)
            /// The lock file was made by an incompatible version of the library.
            public static let incompatibleLockFile = Code(rawValue: 8)
            /// Mapping the file ran out of address space or memory.
            public static let addressSpaceExhausted = Code(rawValue: 9)
            /// The models do not match the file's schema and no migration was asked for.
            public static let schemaMismatch = Code(rawValue: 10)
            /// The file is not a database or is damaged.
            public static let invalidDatabase = Code(rawValue: 20)
            /// The file was written by a newer version of the library.
            public static let unsupportedFileFormatVersion = Code(rawValue: 16)
            /// The Realm is open, so its files cannot be deleted or replaced.
            public static let alreadyOpen = Code(rawValue: 12)
            /// An argument was not valid.
            public static let invalidInput = Code(rawValue: 13)
            /// The disk is full.
            public static let outOfDiskSpace = Code(rawValue: 14)

            /// The code's name ("fileNotFound").
            public var description: String {
                switch self {
                case .fail: return "fail"
                case .fileAccess: return "fileAccess"
                case .filePermissionDenied: return "filePermissionDenied"
                case .fileExists: return "fileExists"
                case .fileNotFound: return "fileNotFound"
                case .fileFormatUpgradeRequired: return "fileFormatUpgradeRequired"
                case .fileOperationFailed: return "fileOperationFailed"
                case .incompatibleLockFile: return "incompatibleLockFile"
                case .addressSpaceExhausted: return "addressSpaceExhausted"
                case .schemaMismatch: return "schemaMismatch"
                case .invalidDatabase: return "invalidDatabase"
                case .unsupportedFileFormatVersion: return "unsupportedFileFormatVersion"
                case .alreadyOpen: return "alreadyOpen"
                case .invalidInput: return "invalidInput"
                case .outOfDiskSpace: return "outOfDiskSpace"
                default: return "code \(rawValue)"
                }
            }
        }

        /// What went wrong.
        public let code: Code
        /// A human-readable explanation (includes the storage core's own message).
        public let message: String
        /// The file the error concerns, if any.
        public let fileURL: URL?
        /// The operating system's errno behind the failure (0 when there was none).
        public let underlyingErrno: Int32

        /// Creates an error.
        public init(_ code: Code, _ message: String, fileURL: URL? = nil, errno: Int32 = 0) {
            self.code = code
            self.message = message
            self.fileURL = fileURL
            self.underlyingErrno = errno
        }

        /// The message, as `NSError.localizedDescription` gives it in RealmSwift.
        public var localizedDescription: String { message }

        /// `Realm.Error(code): message`.
        public var description: String { "Realm.Error(\(code)): \(message)" }

        /// `catch Realm.Error.fail`, and so on for each code.
        public static var fail: Code { .fail }
        /// See ``Code/fileAccess``.
        public static var fileAccess: Code { .fileAccess }
        /// See ``Code/filePermissionDenied``.
        public static var filePermissionDenied: Code { .filePermissionDenied }
        /// See ``Code/fileExists``.
        public static var fileExists: Code { .fileExists }
        /// See ``Code/fileNotFound``.
        public static var fileNotFound: Code { .fileNotFound }
        /// See ``Code/fileFormatUpgradeRequired``.
        public static var fileFormatUpgradeRequired: Code { .fileFormatUpgradeRequired }
        /// See ``Code/fileOperationFailed``.
        public static var fileOperationFailed: Code { .fileOperationFailed }
        /// See ``Code/incompatibleLockFile``.
        public static var incompatibleLockFile: Code { .incompatibleLockFile }
        /// See ``Code/addressSpaceExhausted``.
        public static var addressSpaceExhausted: Code { .addressSpaceExhausted }
        /// See ``Code/schemaMismatch``.
        public static var schemaMismatch: Code { .schemaMismatch }
        /// See ``Code/invalidDatabase``.
        public static var invalidDatabase: Code { .invalidDatabase }
        /// See ``Code/unsupportedFileFormatVersion``.
        public static var unsupportedFileFormatVersion: Code { .unsupportedFileFormatVersion }
        /// See ``Code/alreadyOpen``.
        public static var alreadyOpen: Code { .alreadyOpen }
        /// See ``Code/invalidInput``.
        public static var invalidInput: Code { .invalidInput }
        /// See ``Code/outOfDiskSpace``.
        public static var outOfDiskSpace: Code { .outOfDiskSpace }
    }
}

/// Matches an error by code in a `catch` clause: `catch Realm.Error.fileNotFound`.
public func ~= (code: Realm.Error.Code, error: Swift.Error) -> Bool {
    (error as? Realm.Error)?.code == code
}
