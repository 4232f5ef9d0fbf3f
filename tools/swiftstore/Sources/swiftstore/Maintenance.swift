import CStore
import CStoreCall
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// What the maintenance commands (compact, backup, restore) share: their exit codes, the
// progress display and the summary they print. Each command's work is a plain function
// (`compactCommand`, `backupCommand`, `restoreCommand`) that returns the exit code, so the
// argument parsing in front of it can change without touching it.

/// Exit codes of the maintenance commands (also in their `--help`).
enum ToolExit {
    /// Done.
    static let ok: Int32 = 0
    /// The database or backup is damaged, or the operation was refused (the file is open
    /// elsewhere, the target exists, a newer format).
    static let refused: Int32 = 1
    /// A usage or I/O error (no such file, permissions, disk full).
    static let usageOrIO: Int32 = 2

    /// The exit code for a failure of the core.
    static func code(for rc: Int32) -> Int32 {
        switch Int(rc) {
        case Int(CS_CORRUPT), Int(CS_BUSY), Int(CS_EXISTS), Int(CS_VERSION): return refused
        default: return usageOrIO
        }
    }

    static let help = "Exit status: 0 done; 1 damaged or refused (file open elsewhere, target exists, newer format); 2 usage or I/O error."

    /// The contract every command keeps, for the tool's own --help.
    static let contract = """
        Exit status, the same for every command: 0 done; 1 the file or backup is damaged, not a \
        database or of a newer format, or the request was refused (the file is open elsewhere, \
        the target exists, no such class or feed slot, a slot invalidated); 2 usage (a command \
        line or predicate that does not parse) or an I/O error (no such file, permissions, disk \
        full). Each command's --help says which of its failures are which.
        """
}

/// How a command reports: text or one JSON summary on stdout, and whether to show progress.
struct Output {
    var json = false
    var quiet = false

    /// Prints the summary: the JSON object, or the text lines (not with --quiet).
    func summary(_ object: [String: Any], text: [String]) {
        if json {
            print(oneLineJSON(object))
        } else if !quiet {
            for line in text { print(line) }
        }
    }

    /// Reports a failure of the core on stderr (and as JSON on stdout with --json); returns the
    /// exit code. `error` is made right after the failing call, so it holds the core's message.
    func failure(_ command: String, _ error: CStoreError, extra: [String: Any] = [:]) -> Int32 {
        writeError("swiftstore \(command): \(error)")
        if json {
            var o = extra
            o["ok"] = false
            o["error"] = error.codeName
            o["message"] = error.message
            print(oneLineJSON(o))
        }
        return ToolExit.code(for: error.code)
    }

    /// A progress display on stderr when it is a terminal and neither --json nor --quiet.
    func progress(_ label: String) -> Progress? {
        (json || quiet || isatty(2) == 0) ? nil : Progress(label)
    }
}

/// A one-line progress bar: bytes done, rate and time left, redrawn at most ten times a second.
final class Progress {
    let label: String
    let start = Date()
    var last = Date.distantPast

    init(_ label: String) { self.label = label }

    func update(done: UInt64, total: UInt64) {
        let now = Date()
        guard now.timeIntervalSince(last) >= 0.1 else { return }
        last = now
        let secs = max(now.timeIntervalSince(start), 0.001)
        let rate = Double(done) / secs
        var line = "\r\(label) \(Progress.bytes(done))"
        if total > 0 {
            let frac = min(1, Double(done) / Double(total))
            let width = 24
            let filled = Int(frac * Double(width))
            line += " / \(Progress.bytes(total)) [" + String(repeating: "#", count: filled)
                + String(repeating: " ", count: width - filled) + "] \(Int(frac * 100))%"
            if rate > 0 { line += " ETA \(Int((Double(total - min(done, total)) / rate).rounded()))s" }
        }
        line += "  \(Progress.bytes(UInt64(rate)))/s   "
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }

    static func bytes(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n)
        var i = 0
        while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
        return i == 0 ? "\(n) B" : String(format: "%.1f %@", v, units[i])
    }
}

/// The C progress callback that forwards to a `Progress` passed as its context.
let progressCallback: cs_progress = { ctx, done, total in
    guard let ctx else { return }
    Unmanaged<Progress>.fromOpaque(ctx).takeUnretainedValue().update(done: done, total: total)
}

/// The size of a file in bytes (0 if it cannot be read).
func sizeOfFile(_ path: String) -> UInt64 {
    var st = stat()
    return stat(path, &st) == 0 ? UInt64(st.st_size) : 0
}
