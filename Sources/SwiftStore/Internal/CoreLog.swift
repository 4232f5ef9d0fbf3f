import CStore
import Foundation

/// The Swift side of the core's log function (cstore.h, "Logging"): one C trampoline is
/// installed for the process and hands every message to `Logger.shared`, so replacing the
/// logger never leaves the core holding a context that was freed.
enum CoreLog {
    private static let installed: Void = {
        cs_log_set({ _, level, category, message in
            guard let message else { return }
            let text = String(cString: message)
            let cat = category.map { String(cString: $0) } ?? "Realm.Storage"
            Logger.deliver(LogLevel(coreLevel: level), cat, text)
        }, nil)
    }()

    /// Installs the trampoline (once).
    static func install() { _ = installed }

    /// Sets the core's level filter.
    static func setLevel(_ level: LogLevel) {
        install()
        cs_log_set_level(level.coreLevel)
    }

    /// The core's level filter.
    static var level: LogLevel { LogLevel(coreLevel: cs_log_level()) }

    /// Reports an event of the Swift layer (a migration) through the same function.
    static func log(_ level: LogLevel, _ category: String, _ message: @autoclosure () -> String) {
        guard level != .off, level.coreLevel >= cs_log_level() else { return }
        install()
        cs_log_message(level.coreLevel, category, message())
    }
}

extension LogLevel {
    /// The core's number for this level (CS_LOG_*).
    var coreLevel: Int32 {
        switch self {
        case .all: return Int32(CS_LOG_ALL)
        case .trace: return Int32(CS_LOG_TRACE)
        case .debug: return Int32(CS_LOG_DEBUG)
        case .detail: return Int32(CS_LOG_DETAIL)
        case .info: return Int32(CS_LOG_INFO)
        case .warn: return Int32(CS_LOG_WARN)
        case .error: return Int32(CS_LOG_ERROR)
        case .fatal: return Int32(CS_LOG_FATAL)
        case .off: return Int32(CS_LOG_OFF)
        }
    }

    init(coreLevel: Int32) {
        switch Int(coreLevel) {
        case Int(CS_LOG_ALL): self = .all
        case Int(CS_LOG_TRACE): self = .trace
        case Int(CS_LOG_DEBUG): self = .debug
        case Int(CS_LOG_DETAIL): self = .detail
        case Int(CS_LOG_INFO): self = .info
        case Int(CS_LOG_WARN): self = .warn
        case Int(CS_LOG_ERROR): self = .error
        case Int(CS_LOG_FATAL): self = .fatal
        default: self = .off
        }
    }
}
