import CStore

/// A failed call into the storage core (cstore.h): its return code, the core's message and the
/// OS errno of the failure, and what the caller was doing.
///
/// The one place where a C return code becomes a Swift error. The library maps it to
/// `Realm.Error` (SwiftStore's `CoreCall`); the `swiftstore` tool, the benchmarks and the tests
/// throw and print it as it is.
public struct CStoreError: Error, CustomStringConvertible, Sendable {
    /// The return code (never `CS_OK`).
    public let code: Int32
    /// The core's message for the failure (`cs_errmsg`), empty if it left none.
    public let message: String
    /// The OS errno of the failure (`cs_errno`), 0 if none.
    public let osErrno: Int32
    /// What the caller was doing ("Opening the file"), empty if it did not say.
    public let context: String

    /// Captures the message and errno the core left on this thread for the failure `code`:
    /// make it right after the failing call, on the same thread.
    @inline(never)
    public init(_ code: Int32, context: String = "") {
        self.init(code: code, message: CStoreError.lastMessage, osErrno: cs_errno(), context: context)
    }

    /// An error with every part given.
    public init(code: Int32, message: String, osErrno: Int32 = 0, context: String = "") {
        self.code = code
        self.message = message
        self.osErrno = osErrno
        self.context = context
    }

    /// The constant's name of the code (`"CS_CORRUPT"`).
    public var codeName: String { CStoreError.codeName(code) }

    /// `context: CS_NAME: message`, leaving out the parts that are empty.
    public var description: String {
        var s = context.isEmpty ? codeName : "\(context): \(codeName)"
        if !message.isEmpty { s += ": \(message)" }
        return s
    }

    /// The constant's name of a return code (`"CS_CORRUPT"`).
    public static func codeName(_ code: Int32) -> String {
        guard let p = cs_errstr(code) else { return "code \(code)" }
        return String(cString: p)
    }

    /// The core's message for the last failure on this thread ("" if none).
    public static var lastMessage: String {
        guard let p = cs_errmsg() else { return "" }
        return String(cString: p)
    }

    /// Throws a `CStoreError` (with the core's message) unless `rc` is `CS_OK`.
    @inlinable @inline(__always)
    public static func check(_ rc: Int32, _ context: @autoclosure () -> String = "") throws {
        if rc != 0 { throw CStoreError(rc, context: context()) }
    }
}
