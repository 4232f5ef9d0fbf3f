import ArgumentParser
import CStore
import CStoreCall
import Foundation

/// `swiftstore backup FILE OUT`.
struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write an LZ4-compressed backup of a database.",
        discussion: """
            Writes the newest version of FILE, compacted, as one LZ4 frame with block and content \
            checksums behind a header (docs/FORMAT.md §12) to the new file OUT. Taken from a read \
            transaction: writers may go on. \(ToolExit.help)
            """)

    @Argument(help: "The database file.") var file: String
    @Argument(help: "The backup to write (must not exist).") var out: String
    @Flag(help: "Print one JSON summary.") var json = false
    @Flag(help: "Print nothing but errors.") var quiet = false

    func run() throws {
        let code = backupCommand(file: file, out: out, output: Output(json: json, quiet: quiet))
        if code != 0 { throw ExitCode(code) }
    }
}

/// Backs `file` up to `out`; prints the summary; returns the exit code.
func backupCommand(file: String, out: String, output: Output) -> Int32 {
    let start = Date()
    var options = cs_options()
    options.flags = UInt32(CS_OPEN_READONLY)
    var db: OpaquePointer?
    var rc = cs_db_open(file, &options, &db)
    if rc != 0 { return output.failure("backup", CStoreError(rc), extra: ["file": file, "out": out]) }
    var info = cs_backup_info()
    let bar = output.progress("backup")
    if let bar {
        rc = cs_backup_write(db, out, progressCallback, Unmanaged.passUnretained(bar).toOpaque(), &info)
        bar.finish()
    } else {
        rc = cs_backup_write(db, out, nil, nil, &info)
    }
    if rc != 0 {
        let code = output.failure("backup", CStoreError(rc), extra: ["file": file, "out": out])
        cs_db_close(db)
        return code
    }
    cs_db_close(db)
    let secs = Date().timeIntervalSince(start)
    output.summary(
        ["ok": true, "file": file, "out": out, "version": Int(info.version), "format": Int(info.format),
         "databaseBytes": Int(info.db_bytes), "backupBytes": Int(info.backup_bytes), "seconds": secs],
        text: ["\(out): version \(info.version), \(Progress.bytes(info.db_bytes)) compacted -> "
               + "\(Progress.bytes(info.backup_bytes)) compressed in \(String(format: "%.2f", secs)) s"])
    return ToolExit.ok
}
