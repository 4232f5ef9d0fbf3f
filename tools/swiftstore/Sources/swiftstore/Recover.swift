import ArgumentParser
import CStore
import CStoreCall
import Foundation

/// `swiftstore recover FILE`: replays the commits a crash left in the file's journal
/// (docs/FORMAT.md §13, Recovery), as any open that finds them alone and may write the file
/// does, and says how many. What a user runs when a read-only open refuses the file
/// (CS_READONLY: it cannot write the file, its journal or its lock file): run by a user who can.
struct Recover: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replay the commits a crash left in a database file's journal.",
        discussion: "Opens the file read-only, which replays the journal's commits onto it (when no other process has it open and this one may write the file, its journal and its lock file), syncs it and empties the journal; a file whose journal is then empty gets back the resting format version (6, which a library without the journal opens), whether or not it replayed commits; it commits nothing of its own. Prints \"recovered N journaled commits\", or \"nothing to recover\" (JSON: {\"file\", \"ok\", \"recoveredCommits\"}). Exit status 0: recovered, or nothing to recover. 1: another process has the file open (the commits in its journal are that process's, not a crash's: its checkpoints and its last close empty the journal); the file or its journal is damaged or of another database; or commits are lost (the newest commit had to be passed over, or the header says its newest commits may be in a journal that is not there: the file was copied or moved without it). 2: usage, or it cannot be opened (run it as a user who may write the file, its journal and its lock file).")

    @Argument(help: "The database file.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        // the core's advice for CS_READONLY is to run this command: say what to change instead
        let db = try openReadOnly(file, "recover", json: json) { e in
            e.code == Int32(CS_READONLY)
                ? "\(file) has commits in its journal to recover after a crash, and this user cannot write \(file), \(file).journal or \(file).lock: run `swiftstore recover` again as a user who may write all three (on a file system mounted read-write)"
                : e.message
        }
        let recovered = cs_db_recovered_commits(db)
        // a newest commit the open passed over, or commits that were only in a journal that is
        // not there (the file copied or moved without it): nothing replays them, they are lost
        var version: UInt64 = 0, opened: UInt64 = 0
        var why = [CChar](repeating: 0, count: 256)
        let rejected = cs_db_rejected_commit(db, &version, &opened, &why, why.count)
        let reason = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // another process had the file open when this one opened it: the open decided nothing
        // about the journal, whose commits are that process's (decided at the open, so a process
        // that opens the file after a replay does not hide it)
        let alone = cs_db_opened_alone(db)
        cs_db_close(db)
        if !alone && recovered == 0 {
            throw fail("recover", file,
                       "\(file) is open in another process; the commits in its journal, if any, are that process's (its checkpoints and its last close empty the journal): nothing to recover",
                       code: "CS_BUSY", status: ToolExit.refused, json: json)
        }
        if rejected {
            throw fail("recover", file,
                       "recovered \(recovered) journaled commits, but version \(version) was lost and \(file) holds version \(opened): \(reason)",
                       code: "CS_CORRUPT", status: ToolExit.refused, json: json)
        }
        if json {
            print(jsonString(["file": file, "ok": true, "recoveredCommits": Int(recovered)]))
        } else if recovered > 0 {
            print("\(file): recovered \(recovered) journaled commits")
        } else {
            print("\(file): nothing to recover (its journal holds no commits)")
        }
    }
}
