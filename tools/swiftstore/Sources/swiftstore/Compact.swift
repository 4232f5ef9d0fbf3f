import ArgumentParser
import CStore
import CStoreCall
import Foundation

/// `swiftstore compact FILE (--in-place | OUT)`.
struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a compacted copy of a database, or compact it in place.",
        discussion: """
            With OUT, writes a compacted copy of the newest version to the new file OUT (writers \
            may go on meanwhile). With --in-place, replaces FILE by its compacted copy (synced, \
            verified, then renamed over it); refused while another process has FILE open. On a \
            terminal (stderr) a progress bar shows the bytes written, the rate and the time left; \
            nothing is shown on a pipe or with --json or --quiet. \
            \(ToolExit.help)
            """)

    @Argument(help: "The database file.") var file: String
    @Argument(help: "Where to write the compacted copy (must not exist).") var out: String?
    @Flag(help: "Compact FILE itself.") var inPlace = false
    @Flag(help: "Print one JSON summary.") var json = false
    @Flag(help: "Print nothing but errors.") var quiet = false

    func validate() throws {
        if inPlace == (out != nil) { throw ValidationError("give either OUT or --in-place") }
    }

    func run() throws {
        let code = compactCommand(file: file, out: out, output: Output(json: json, quiet: quiet))
        if code != 0 { throw ExitCode(code) }
    }
}

/// Compacts `file` in place (`out` nil) or into `out`; prints the summary; returns the exit code.
func compactCommand(file: String, out: String?, output: Output) -> Int32 {
    let start = Date()
    let before = sizeOfFile(file)
    var version: UInt64 = 0
    if let out {
        var options = cs_options()
        options.flags = UInt32(CS_OPEN_READONLY)
        var db: OpaquePointer?
        var rc = cs_db_open(file, &options, &db)
        if rc == 0 {
            var txn: OpaquePointer?
            rc = cs_txn_begin(db, Int32(CS_TXN_READ), &txn)
            if rc == 0 {
                version = cs_txn_version(txn)
                if let bar = output.progress("compact") {
                    rc = cs_txn_write_copy(txn, out, progressCallback, Unmanaged.passUnretained(bar).toOpaque())
                    bar.finish()
                } else {
                    rc = cs_txn_write_copy(txn, out, nil, nil)
                }
                cs_txn_end(txn)
            }
        }
        // report before closing, while the failure's message is the thread's last one
        let code = rc == 0 ? ToolExit.ok : output.failure("compact", CStoreError(rc), extra: ["file": file, "out": out])
        if let db { cs_db_close(db) }
        if code != ToolExit.ok { return code }
    } else {
        var options = cs_options()
        var info = cs_compact_info()
        let rc: Int32
        if let bar = output.progress("compact") {
            rc = cs_db_compact(file, &options, progressCallback, Unmanaged.passUnretained(bar).toOpaque(), &info)
            bar.finish()
        } else {
            rc = cs_db_compact(file, &options, nil, nil, &info)
        }
        if rc != 0 { return output.failure("compact", CStoreError(rc), extra: ["file": file, "inPlace": true]) }
        version = info.version
    }
    let after = sizeOfFile(out ?? file)
    let secs = Date().timeIntervalSince(start)
    output.summary(
        ["ok": true, "file": file, "out": out ?? file, "inPlace": out == nil, "version": Int(version),
         "bytesBefore": Int(before), "bytesAfter": Int(after), "seconds": secs],
        text: ["\(out ?? file): \(Progress.bytes(before)) -> \(Progress.bytes(after)) "
               + "(saved \(Progress.bytes(before > after ? before - after : 0))) in \(String(format: "%.2f", secs)) s"])
    return ToolExit.ok
}
