import ArgumentParser
import CStore
import CStoreCall
import Foundation

/// `swiftstore slot create|drop FILE NAME`: manages the file's feed slots
/// (docs/ARCHITECTURE.md, Feed slots).
struct Slot: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create or drop a feed slot (a named consumer whose unacknowledged changes the file keeps).",
        discussion: "A new slot starts at the version its creation commits: `swiftstore changes --slot NAME` then prints every change committed after it. `swiftstore info` lists the slots with their positions and the bytes of history each holds back. Exit status 1 for an existing (create) or unknown (drop) slot or a damaged file (or not a database), 2 for usage (an action other than create or drop) or when the file cannot be opened.")

    @Argument(help: "create or drop") var action: String
    @Argument(help: "The database file.") var file: String
    @Argument(help: "The slot name (1 to 63 bytes).") var name: String
    @Option(help: "create: invalidate the slot when it holds back more than this many bytes of history (0: no limit).") var limit: UInt64 = 0

    func run() throws {
        guard action == "create" || action == "drop" else {
            writeError("swiftstore slot: the action is create or drop, not '\(action)'")
            throw ExitCode(ToolExit.usageOrIO)
        }
        try withWriteTransaction(file, "slot") { txn in
            let rc = action == "create" ? cs_feed_create(txn, name, limit) : cs_feed_drop(txn, name)
            if rc != 0 {
                writeError("swiftstore slot: \(CStoreError(rc))")
                throw ExitCode(rc == Int32(CS_EXISTS) || rc == Int32(CS_NOTFOUND) || rc == Int32(CS_MISUSE) ? 1 : 2)
            }
        }
        print(action == "create" ? "created feed slot '\(name)'" : "dropped feed slot '\(name)'")
    }
}

/// Opens a file for writing and runs `body` in a write transaction it then commits.
func withWriteTransaction(_ file: String, _ command: String, _ body: (OpaquePointer) throws -> Void) throws {
    try withTransaction(file, command, write: true) { _, txn in
        try body(txn)
        do {
            try CStoreError.check(cs_txn_commit(txn))
        } catch let e as CStoreError {
            writeError("swiftstore \(command): \(e)")
            throw ExitCode(2)
        }
    }
}

/// The feed slots of a version, for `info`.
func feedSlots(_ txn: OpaquePointer) throws -> [[String: Any]] {
    var n: UInt32 = 0
    try CStoreError.check(cs_feed_count(txn, &n))
    var out: [[String: Any]] = []
    for i in 0..<n {
        var s = cs_feed_slot_info()
        try CStoreError.check(cs_feed_slot_at(txn, i, &s))
        let name = withUnsafeBytes(of: &s.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        var o: [String: Any] = ["name": name, "position": Int(s.position), "heldBytes": Int(s.held_bytes), "limit": Int(s.limit)]
        if s.invalidated != 0 {
            o["invalidatedAt"] = Int(s.invalidated)
            o["overBytes"] = Int(s.over_bytes)
        }
        out.append(o)
    }
    return out
}

/// `swiftstore changes FILE --slot NAME [--follow] [--json]`: the change feed
/// (docs/ARCHITECTURE.md, The change feed in the tool).
struct Changes: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every change committed after a feed slot's position, in commit order, and acknowledge it.",
        discussion: """
        One line per object and commit: {"version", "time" (the commit time, RFC 3339 in UTC with microseconds, by the committing process's clock; null for a version committed by a library that kept no commit times), "op" (insert, update, delete, collection), "class", "key" (the object key), "pk" (the primary key, when the class has one and it can be read), "changes" (property -> new value)}; a schema change is {"version", "op":"schema", "classes":[...]}. Values: dates {"$date": seconds}, decimals {"$decimal": text}, ObjectId {"$oid": hex}, UUID {"$uuid": hex}, binary {"$binary": base64}, links as the target's primary key (or {"$key": object key} when it has none), embedded objects inline, lists and sets as arrays, maps as objects. A change to an embedded object is printed as an update of its owner's property. Every value printed is the one the property had right after the line's commit: a batch of commits is read at once, at its last version, so when a later commit of the batch changes the same property of the same object again, the earlier line leaves the value out and names the property in "changedLater" (the later line has the value); an object deleted later in the batch gets only its delete line. \
        Acknowledgement: after the lines of a batch are written to standard output, the slot is acknowledged up to the batch's last version (one commit); --no-ack leaves the slot where it is. \
        --follow keeps waiting for commits of any process (it sleeps on the file's commit counter, no polling). Exit status 1 for an unknown or invalidated slot or a damaged file (or not a database), 2 for usage or when the file cannot be opened.
        """)

    @Argument(help: "The database file.") var file: String
    @Option(help: "The feed slot to read (create it with `swiftstore slot create`).") var slot: String
    @Flag(help: "Keep waiting for new commits.") var follow = false
    @Flag(help: "Print JSON lines (the default text form is one short line per change).") var json = false
    @Flag(help: "Do not acknowledge what was printed.") var noAck = false
    @Option(help: "--follow: exit after this many lines.") var count: Int?

    func run() throws {
        if let reason = notAFile(file) {
            writeError("swiftstore changes: \(reason)")
            throw ExitCode(2)
        }
        var options = cs_options()
        var db: OpaquePointer?
        var rc = cs_db_open(file, &options, &db)
        if rc != 0 {
            writeError("swiftstore changes: \(CStoreError(rc))")
            throw ExitCode(ToolExit.code(for: rc))
        }
        defer { cs_db_close(db) }
        var printed = 0
        var since = UInt64.max // the slot's position
        var previous: OpaquePointer? // pins the version the next batch starts at (delete lines' pk)
        defer { if previous != nil { cs_txn_end(previous) } }
        while true {
            let seen = cs_db_commit_counter(db)
            var txn: OpaquePointer?
            rc = cs_txn_begin(db, Int32(CS_TXN_READ), &txn)
            if rc != 0 {
                writeError("swiftstore changes: \(CStoreError(rc))")
                throw ExitCode(2)
            }
            let version = cs_txn_version(txn)
            if since != version {
                let lines: [FeedLine]
                do {
                    lines = try feedLines(txn!, slot: slot, since: since, previous: previous)
                } catch let e as CStoreError {
                    cs_txn_end(txn)
                    writeError("swiftstore changes: \(e)")
                    throw ExitCode(e.code == Int32(CS_NOTFOUND) || e.code == Int32(CS_FULL) ? 1 : 2)
                }
                for line in lines {
                    let text = json ? oneLineJSON(line.json) : shortLine(line)
                    FileHandle.standardOutput.write(Data((text + "\n").utf8))
                    printed += 1
                }
                if !noAck && !lines.isEmpty {
                    let last = lines.last!.version
                    var w: OpaquePointer?
                    rc = cs_txn_begin(db, Int32(CS_TXN_WRITE), &w)
                    if rc == 0 { rc = cs_feed_ack(w, slot, last) }
                    if rc == 0 { rc = cs_txn_commit(w) }
                    if w != nil { cs_txn_end(w) }
                    if rc != 0 {
                        cs_txn_end(txn)
                        writeError("swiftstore changes: acknowledging version \(last): \(CStoreError(rc))")
                        throw ExitCode(2)
                    }
                }
            }
            since = version
            if previous != nil { cs_txn_end(previous) }
            previous = txn
            if !follow || (count.map { printed >= $0 } ?? false) { return }
            _ = cs_db_wait_for_commit(db, seen, -1)
        }
    }

    private func shortLine(_ l: FeedLine) -> String {
        let at = commitTimeText(l.time).map { " at \($0)" } ?? ""
        if l.op == .schema { return "version \(l.version)\(at): schema changed" }
        let id = l.pk.map { "pk=\(oneLineJSONFragment($0))" } ?? "key=\(l.key)"
        let vals = l.values.sorted { $0.key < $1.key }.map { "\($0.key)=\(oneLineJSONFragment($0.value))" }.joined(separator: " ")
        return "version \(l.version)\(at): \(l.op.rawValue) \(l.className) \(id)\(vals.isEmpty ? "" : " " + vals)"
    }
}
