import Foundation

/// How much a `Logger` reports, from nothing (`off`) to everything (`all`), as RealmSwift's
/// levels. A message is delivered when its level is at least as severe as the level set:
/// at `.info`, info, warn, error and fatal messages are.
public enum LogLevel: Int, Sendable, CaseIterable, CustomStringConvertible {
    case off, fatal, error, warn, info, detail, debug, trace, all

    /// The level's name: "Info", "Debug", ...
    public var description: String {
        switch self {
        case .off: return "Off"
        case .fatal: return "Fatal"
        case .error: return "Error"
        case .warn: return "Warn"
        case .info: return "Info"
        case .detail: return "Detail"
        case .debug: return "Debug"
        case .trace: return "Trace"
        case .all: return "All"
        }
    }
}

/// A category of log messages, named as RealmSwift names them ("Realm.Storage.Transaction").
public protocol LogCategory: Sendable {
    /// The category's dotted name.
    var rawValue: String { get }
}

/// The categories SwiftStore reports in (RealmSwift's storage categories; the sync and app
/// categories belong to Device Sync and are not offered).
public enum Category: String, LogCategory {
    /// Every message.
    case realm = "Realm"
    /// Messages of the Swift layer (migrations).
    case sdk = "Realm.SDK"

    /// Storage messages: opens, commits and their sizes.
    public enum Storage: String, LogCategory {
        /// Every storage message (opening files).
        case all = "Realm.Storage"
        /// Commits, with the version made and the file's size.
        case transaction = "Realm.Storage.Transaction"
        /// Queries.
        case query = "Realm.Storage.Query"
        /// Object changes.
        case object = "Realm.Storage.Object"
        /// Change notifications.
        case notification = "Realm.Storage.Notification"
    }
}

/// The process-wide logger, as RealmSwift's `Logger`: the storage core reports what it does
/// (opening a file, each commit with the version it made and the file's size, migrations)
/// to `Logger.shared`, filtered by level.
///
/// ```swift
/// Logger.shared = Logger(level: .debug) { level, message in print("\(level): \(message)") }
/// Logger.shared.level = .info
/// ```
///
/// The level is one for the process (setting it on any logger, or with `setLogLevel`, sets
/// it for all), as in RealmSwift. The default logger discards messages: Linux has no Apple
/// System Log to send them to, so a program sets a logger to see them. Log functions run on
/// the thread doing the work and must not use a Realm.
public final class Logger: @unchecked Sendable {
    private let function: @Sendable (LogLevel, LogCategory, String) -> Void

    private static let lock = NSLock()
    nonisolated(unsafe) private static var current = Logger(function: { _, _, _ in })

    /// The logger every message goes to. Setting it replaces the previous one.
    public static var shared: Logger {
        get { lock.lock(); defer { lock.unlock() }; return current }
        set {
            CoreLog.install()
            lock.lock(); current = newValue; lock.unlock()
        }
    }

    /// A logger that calls `logFunction` with each message's level and text, and sets the
    /// process's level to `level`.
    public convenience init(level: LogLevel, logFunction: @escaping @Sendable (LogLevel, String) -> Void) {
        self.init(function: { level, _, message in logFunction(level, message) })
        self.level = level
    }

    /// A logger that calls `function` with each message's level, category and text.
    public init(function: @escaping @Sendable (LogLevel, LogCategory, String) -> Void) {
        self.function = function
        CoreLog.install()
    }

    /// The process's level (the same for every logger).
    public var level: LogLevel {
        get { CoreLog.level }
        set { CoreLog.setLevel(newValue) }
    }

    /// Sends a message at `level` through this logger, if the level passes.
    public func log(level: LogLevel, message: String) {
        guard level != .off, level.coreLevel >= CoreLog.level.coreLevel else { return }
        function(level, Category.sdk, message)
    }

    /// Sets the process's level. Categories are not filtered apart: every category shares it.
    public static func setLogLevel(_ level: LogLevel, for category: LogCategory = Category.realm) {
        CoreLog.setLevel(level)
    }

    /// The process's level (the same for every category).
    public static func logLevel(for category: LogCategory) -> LogLevel { CoreLog.level }

    /// Hands a message from the core to the shared logger.
    static func deliver(_ level: LogLevel, _ category: String, _ message: String) {
        shared.function(level, CategoryName(rawValue: category), message)
    }
}

/// A category received from the core, by name.
struct CategoryName: LogCategory {
    let rawValue: String
}
