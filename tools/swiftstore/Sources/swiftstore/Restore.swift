import ArgumentParser
import CStore
import CStoreCall
import Foundation

/// `swiftstore restore IN FILE [--force]`.
struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a database from a backup.",
        discussion: """
            Decompresses the backup IN, checks its checksums and size, verifies the result and \
            only then puts it at FILE; a damaged or truncated backup changes nothing. An existing \
            FILE is replaced only with --force, and only while no process has it open. \
            \(ToolExit.help)
            """)

    @Argument(help: "The backup.") var backup: String
    @Argument(help: "The database file to restore to.") var file: String
    @Flag(help: "Replace an existing FILE.") var force = false
    @Flag(help: "Print one JSON summary.") var json = false
    @Flag(help: "Print nothing but errors.") var quiet = false

    func run() throws {
        let code = restoreCommand(backup: backup, file: file, force: force, output: Output(json: json, quiet: quiet))
        if code != 0 { throw ExitCode(code) }
    }
}

/// Restores `backup` to `file`, then verifies `file`; prints the summary; returns the exit code.
func restoreCommand(backup: String, file: String, force: Bool, output: Output) -> Int32 {
    let start = Date()
    var info = cs_backup_info()
    let flags = force ? UInt32(CS_RESTORE_FORCE) : 0
    var rc: Int32
    if let bar = output.progress("restore") {
        rc = cs_backup_restore(backup, file, nil, flags, progressCallback, Unmanaged.passUnretained(bar).toOpaque(), &info)
        bar.finish()
    } else {
        rc = cs_backup_restore(backup, file, nil, flags, nil, nil, &info)
    }
    if rc != 0 { return output.failure("restore", CStoreError(rc), extra: ["backup": backup, "file": file]) }
    rc = cs_file_verify(file)
    if rc != 0 { return output.failure("restore", CStoreError(rc), extra: ["backup": backup, "file": file, "restored": true]) }
    let secs = Date().timeIntervalSince(start)
    output.summary(
        ["ok": true, "backup": backup, "file": file, "version": Int(info.version), "format": Int(info.format),
         "databaseBytes": Int(info.db_bytes), "verified": true, "seconds": secs],
        text: ["\(file): restored version \(info.version) (\(Progress.bytes(info.db_bytes))) and verified "
               + "in \(String(format: "%.2f", secs)) s"])
    return ToolExit.ok
}
