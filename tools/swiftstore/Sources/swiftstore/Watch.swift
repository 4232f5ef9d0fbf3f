import ArgumentParser
import CStore
import CStoreCall
import Foundation

/// `swiftstore watch FILE CLASS ['predicate']`: the change sets of a query as commits (of any
/// process) change its results, through the core's notifier (docs/ARCHITECTURE.md, Change
/// notifications).
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print each change to the objects of a class that match a predicate as commits happen.",
        discussion: "Each change set gives the positions deleted (in the previous results), inserted and modified (in the previous results), as the notifications of SwiftStore's observe() report them. With --json each is one JSON object per line: {\"version\":V,\"deletions\":[...],\"insertions\":[...],\"modifications\":[...]}; the first line is {\"version\":V,\"initial\":true}, the version the watch starts from. Exit status 1 for an unknown class or a damaged file (or not a database), 2 for a malformed predicate (usage) or when the file cannot be opened or read.")

    @Argument(help: "The database file.") var file: String
    @Argument(help: "The class (table) name.") var className: String
    @Argument(help: "The predicate (default: every object).") var predicate: String = "TRUEPREDICATE"
    @Flag(help: "Print one JSON object per line.") var json = false
    @Option(help: "Exit after this many change sets (after the initial line).") var count: Int?

    func run() throws {
        var opts = cs_options()
        var db: OpaquePointer?
        var rc = cs_db_open(file, &opts, &db)
        if rc != 0 {
            writeError("swiftstore watch: \(CStoreError(rc))")
            throw ExitCode(ToolExit.code(for: rc))
        }
        defer { cs_db_close(db) }
        var table: UInt32 = 0
        var txn: OpaquePointer?
        rc = cs_txn_begin(db, Int32(CS_TXN_READ), &txn)
        if rc == 0 { rc = cs_table_find(txn, className, &table) }
        cs_txn_end(txn)
        if rc != 0 {
            writeError(rc == Int32(CS_NOTFOUND) ? "swiftstore watch: no class named '\(className)'" : "swiftstore watch: \(CStoreError(rc))")
            throw ExitCode(rc == Int32(CS_NOTFOUND) ? 1 : 2)
        }
        var notifier: OpaquePointer?
        rc = cs_notifier_open(db, &notifier)
        if rc != 0 {
            writeError("swiftstore watch: \(CStoreError(rc))")
            throw ExitCode(2)
        }
        defer { cs_notifier_close(notifier) }
        var watch: OpaquePointer?
        rc = predicate.withCString { cs_watch_query(notifier, table, $0, strlen($0), nil, 0, nil, nil, 0, Int32(CS_WATCH_DEEP), &watch) }
        if rc != 0 {
            writeError("swiftstore watch: \(CStoreError(rc))")
            throw ExitCode(rc == Int32(CS_QUERY) ? ToolExit.usageOrIO : ToolExit.code(for: rc))
        }
        defer { cs_watch_free(watch) }
        var c = cs_changeset()
        _ = cs_watch_take(watch, &c)
        emit(json ? oneLineJSON(["version": c.version, "initial": true]) : "version \(c.version): watching")
        var printed = 0
        while count.map({ printed < $0 }) ?? true {
            let seen = cs_db_commit_counter(db)
            var moved = false
            rc = cs_notifier_advance(notifier, &moved)
            if rc != 0 {
                writeError("swiftstore watch: \(CStoreError(rc))")
                throw ExitCode(2)
            }
            if cs_watch_pending(watch) {
                rc = cs_watch_take(watch, &c)
                if rc != 0 {
                    writeError("swiftstore watch: \(CStoreError(rc))")
                    throw ExitCode(2)
                }
                let d = ints(c.deletions, c.ndeletions), i = ints(c.insertions, c.ninsertions)
                let m = ints(c.modifications, c.nmodifications)
                if json {
                    emit(oneLineJSON(["version": c.version, "deletions": d, "insertions": i, "modifications": m]))
                } else {
                    emit("version \(c.version): deleted \(d) inserted \(i) modified \(m)")
                }
                printed += 1
                continue
            }
            _ = cs_notifier_wait(notifier, seen, -1)
        }
    }

    private func ints(_ p: UnsafePointer<Int>?, _ n: Int) -> [Int] {
        n == 0 ? [] : Array(UnsafeBufferPointer(start: p, count: n))
    }

    private func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
