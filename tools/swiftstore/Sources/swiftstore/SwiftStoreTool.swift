import ArgumentParser
import CStore
import CStoreCall
import Foundation

/// `swiftstore`: inspect and maintain SwiftStore database files.
@main
struct SwiftStoreTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swiftstore",
        abstract: "Inspect, verify and maintain SwiftStore database files.",
        discussion: ToolExit.contract,
        version: String(cString: cs_library_version()),
        subcommands: [Info.self, Verify.self, Recover.self, Query.self, Dump.self, Watch.self, Changes.self, Slot.self, Mirror.self, Compact.self, Backup.self, Restore.self]
    )

    /// Parses and runs the command as ArgumentParser does, except that a command line it
    /// rejects exits with 2 (the tool's usage status) instead of its 64.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                writeError(fullMessage(for: error))
                exit(withError: ExitCode(ToolExit.usageOrIO))
            }
            exit(withError: error)
        }
    }
}

func writeError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Exits with `status` after printing `text` as the tool's error: on stderr, or (with `json`)
/// as a JSON object {"file", "error", "code"} on stdout, so `--json` output always parses.
func fail(_ command: String, _ file: String, _ text: String, code: String, status: Int32, json: Bool) -> ExitCode {
    if json {
        print(jsonString(["file": file, "error": text, "code": code, "status": Int(status)]))
    } else {
        writeError("swiftstore \(command): \(text)")
    }
    return ExitCode(status)
}

/// Exit status 2 ("cannot open") for a path that is not a regular file, with the reason.
func notAFile(_ file: String) -> String? {
    var st = stat()
    if stat(file, &st) != 0 { return "cannot open \(file): \(String(cString: strerror(errno)))" }
    if (st.st_mode & S_IFMT) == S_IFDIR { return "cannot open \(file): it is a directory" }
    if (st.st_mode & S_IFMT) != S_IFREG { return "cannot open \(file): not a regular file" }
    return nil
}

/// The text of a rejected newest commit (cs_db_stats), or nil.
func rejectedCommit(_ stats: cs_db_stats) -> (version: UInt64, reason: String)? {
    guard stats.rejected != 0 else { return nil }
    var s = stats
    let reason = withUnsafeBytes(of: &s.rejected_reason) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    return (stats.rejected_version, reason)
}

/// Walks every node of the open file and checks its checksum and bounds (cs_db_verify), so
/// that the read commands never print values read from damaged bytes. Exits 1 naming the
/// damaged node.
func checkNodes(_ db: OpaquePointer?, _ file: String, _ command: String) throws {
    let rc = cs_db_verify(db)
    if rc == 0 { return }
    writeError("swiftstore \(command): \(file) is damaged: \(CStoreError.lastMessage); nothing was printed from it (run `swiftstore verify \(file)`)")
    throw ExitCode(rc == Int32(CS_CORRUPT) ? 1 : 2)
}

func jsonString(_ object: Any) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the format version, versions, sizes and tables of a database file.",
        discussion: "Sizes: the file's size, the bytes the newest version uses and those on the free lists, the bytes of each table (objects, columns, collections, indexes) and of the change history, and exactly what `swiftstore compact` would save (the file's size less the compacted copy's). Exit status 0: printed. 1: the file is damaged, not a database, or of a newer format. 2: usage, or it cannot be opened. With --json, errors are printed as a JSON object {\"file\", \"error\", \"code\", \"status\"} on stdout. A newest commit that opening had to pass over (damaged, torn or truncated) is reported as \"rejected\" (JSON: \"rejectedCommit\"). The versions other processes pin are listed with each process's id, the versions, and how long the oldest has been pinned (JSON: \"pins\", with \"ageSeconds\"). Commits a crash left in the journal are replayed by the open when no other process has the file open and this one may write it and its journal (text: \"recovered\", JSON: \"recoveredCommits\"); when it may not, the open fails (status 2) and says what to do.")

    @Argument(help: "The database file.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        let db = try openReadOnly(file, "info", json: json)
        defer { cs_db_close(db) }
        var stats = cs_db_stats()
        var txn: OpaquePointer?
        var tables: [[String: Any]] = []
        var slots: [[String: Any]] = []
        var space = cs_space_info()
        var pins: [[String: Any]] = []
        do {
            try CStoreError.check(cs_db_stats_get(db, &stats))
            pins = try pinnedVersions(db)
            try CStoreError.check(cs_txn_begin(db, Int32(CS_TXN_READ), &txn))
            defer { cs_txn_end(txn) }
            var tableBytes = [UInt64](repeating: 0, count: Int(cs_table_slots(txn)))
            try CStoreError.check(cs_txn_space(txn, &tableBytes, UInt32(tableBytes.count), &space))
            for key in 0..<cs_table_slots(txn) {
                var info = cs_table_info()
                if cs_table_info_get(txn, key, &info) != 0 { continue }
                var columns = 0
                for col in 0..<info.col_slots {
                    var ci = cs_column_info()
                    if cs_column_info_get(txn, key, col, &ci) == 0 && (ci.flags & UInt32(CS_COL_HIDDEN)) == 0 {
                        columns += 1
                    }
                }
                tables.append([
                    "name": String(cString: info.name), "objects": Int(info.count),
                    "properties": columns, "embedded": (info.flags & UInt32(CS_TABLE_EMBEDDED)) != 0,
                    "bytes": Int(tableBytes[Int(key)]),
                ])
            }
            slots = try feedSlots(txn!)
        } catch let e as CStoreError {
            throw fail("info", file, e.message, code: e.codeName, status: ToolExit.refused, json: json)
        }
        let rejected = rejectedCommit(stats)
        // commits a crash left in the journal, replayed by this open (docs/FORMAT.md §13)
        let recovered = cs_db_recovered_commits(db)
        let saves = stats.file_size > space.compacted_size ? stats.file_size - space.compacted_size : 0
        var report: [String: Any] = [
            "file": file, "format": Int(stats.read_format), "version": Int(stats.version),
            "fileSize": Int(stats.file_size), "logicalSize": Int(stats.logical_size),
            "usedBytes": Int(stats.used_bytes), "freeBytes": Int(stats.free_bytes),
            "freeExtents": Int(stats.free_extents), "tables": tables,
            "schemaBytes": Int(space.schema_bytes), "historyBytes": Int(space.history_bytes),
            "compactedSize": Int(space.compacted_size), "compactionSaves": Int(saves), "feedSlots": slots,
            "pins": pins,
        ]
        if let rejected {
            // the header's newest slot was passed over: the file opened at an older version
            report["rejectedCommit"] = ["version": Int(rejected.version), "reason": rejected.reason]
        }
        // the commit journal (docs/FORMAT.md §13): commits since its last checkpoint
        var journalRecords: UInt64 = 0, journalBytes: UInt64 = 0
        let hasJournal = cs_file_journal_info(file, &journalRecords, &journalBytes) == 0
        report["journalRecords"] = Int(journalRecords)
        if recovered > 0 { report["recoveredCommits"] = Int(recovered) }
        if json {
            print(jsonString(report))
            return
        }
        print("file:          \(file)")
        print("format:        \(stats.read_format)")
        print("version:       \(stats.version)")
        if let rejected {
            print("rejected:      a newer commit (version \(rejected.version)) was rejected: \(rejected.reason)")
        }
        if recovered > 0 {
            print("recovered:     \(recovered) journaled commits (a crash left them in the journal; replayed by this open)")
        }
        if hasJournal {
            print("journal:       \(journalRecords) commits (\(journalBytes) bytes) since its last checkpoint")
        }
        print("file size:     \(stats.file_size) bytes")
        print("logical size:  \(stats.logical_size) bytes")
        print("used:          \(stats.used_bytes) bytes")
        print("free:          \(stats.free_bytes) bytes in \(stats.free_extents) extents")
        print("schema:        \(space.schema_bytes) bytes")
        print("history:       \(space.history_bytes) bytes (the change history)")
        print("compaction:    would save \(saves) bytes: \(stats.file_size) -> \(space.compacted_size) (`swiftstore compact`)")
        print("feed slots:    \(slots.count)")
        for s in slots {
            if let at = s["invalidatedAt"] {
                print("  \(s["name"]!): invalidated at version \(at) (held back \(s["overBytes"]!) bytes, limit \(s["limit"]!))")
            } else {
                let limit = (s["limit"] as! Int) == 0 ? "no limit" : "limit \(s["limit"]!) bytes"
                print("  \(s["name"]!): at version \(s["position"]!), holds back \(s["heldBytes"]!) bytes of history (\(limit))")
            }
        }
        print("pinned:        \(pins.count) other process(es) pin versions")
        for p in pins {
            let age = (p["ageSeconds"] as? Double).map { String(format: "for %.1f s", $0) } ?? "since an unknown time"
            let state = p["state"] as! String == "in use" ? "" : " (\(p["state"]!))"
            print("  pid \(p["pid"]!): versions \(p["oldest"]!)-\(p["newest"]!), \(age)\(state)")
        }
        print("tables:        \(tables.count)")
        for t in tables {
            print("  \(t["name"]!): \(t["objects"]!) objects, \(t["properties"]!) properties, \(t["bytes"]!) bytes\((t["embedded"] as! Bool) ? " (embedded)" : "")")
        }
    }
}

/// The versions other processes pin (their reader slots), for `info`: pid, oldest and newest
/// version, how long the oldest has been pinned (absent when not recorded) and the slot's state.
func pinnedVersions(_ db: OpaquePointer) throws -> [[String: Any]] {
    var n = 0
    try CStoreError.check(cs_db_pins(db, nil, 0, &n))
    var list = [cs_pin_info](repeating: cs_pin_info(), count: max(n, 1))
    try CStoreError.check(cs_db_pins(db, &list, list.count, &n))
    let now = Date().timeIntervalSince1970 * 1000
    return list.prefix(min(n, list.count)).map { p in
        var o: [String: Any] = ["pid": Int(p.pid), "oldest": Int(p.oldest), "newest": Int(p.newest),
                                "state": p.state == 0 ? "in use" : p.state == 1 ? "idle" : "revoked"]
        if p.since_ms != 0 { o["ageSeconds"] = max(0, (now - Double(p.since_ms)) / 1000) }
        return o
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every node and invariant of a database file.",
        discussion: "Exit status 0: healthy. 1: damaged (the first problem and where is printed), including a newest commit that had to be passed over (the file then opens at an older version), or of a newer format. 2: usage, or it cannot be opened. Commits a crash left in the journal are replayed first, as a read-write open would (\"recovered N journaled commits\"; JSON: \"recoveredCommits\"), when no other process has the file open and this one may write it and its journal.")

    @Argument(help: "The database file.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        if let reason = notAFile(file) {
            throw fail("verify", file, reason, code: "CS_IOERR", status: 2, json: json)
        }
        var recovered: UInt64 = 0
        let rc = cs_file_verify_recovered(file, &recovered)
        let message = rc == 0 ? "healthy" : CStoreError.lastMessage
        if json {
            var report: [String: Any] = ["file": file, "healthy": rc == 0, "code": CStoreError.codeName(rc), "message": message]
            if recovered > 0 { report["recoveredCommits"] = Int(recovered) }
            print(jsonString(report))
        } else if rc == 0 {
            if recovered > 0 {
                print("\(file): recovered \(recovered) journaled commits (a crash left them in the journal)")
            }
            print("\(file): healthy")
        } else {
            writeError("\(file): \(CStoreError.codeName(rc)): \(message)")
        }
        if rc == 0 { return }
        throw ExitCode(ToolExit.code(for: rc))
    }
}

// MARK: - objects as JSON

/// A JSON-ready rendering of a value read from the core.
func jsonValue(_ v: cs_value, _ txn: OpaquePointer) -> Any {
    switch v.type {
    case CS_TYPE_NULL: return NSNull()
    case CS_TYPE_INT: return v.v.i
    case CS_TYPE_BOOL: return v.v.b
    case CS_TYPE_FLOAT: return v.v.f.isFinite ? Double(v.v.f) : "\(v.v.f)"
    case CS_TYPE_DOUBLE: return v.v.d.isFinite ? v.v.d : "\(v.v.d)"
    case CS_TYPE_STRING:
        let b = UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len)
        return String(decoding: b, as: UTF8.self)
    case CS_TYPE_BINARY:
        let b = UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len)
        return ["$binary": Data(b).base64EncodedString()]
    case CS_TYPE_TIMESTAMP:
        return ["$date": Double(v.v.ts.sec) + Double(v.v.ts.nsec) / 1e9]
    case CS_TYPE_OBJECTID:
        var o = v.v.oid
        let hex = withUnsafeBytes(of: &o) { $0.map { String(format: "%02x", $0) }.joined() }
        return ["$oid": hex]
    case CS_TYPE_UUID:
        var u = v.v.uuid
        let hex = withUnsafeBytes(of: &u) { $0.map { String(format: "%02x", $0) }.joined() }
        return ["$uuid": hex]
    case CS_TYPE_DECIMAL:
        var d = v.v.dec
        var buf = [CChar](repeating: 0, count: 64)
        _ = cs_decimal_format(&d, &buf, buf.count)
        let text = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return ["$decimal": String(decoding: text, as: UTF8.self)]
    case CS_TYPE_LINK:
        var info = cs_table_info()
        let name = cs_table_info_get(txn, v.v.link.table, &info) == 0 ? String(cString: info.name) : "?"
        return ["$link": ["class": name, "key": v.v.link.key]]
    case CS_TYPE_LIST: return ["$list": "nested"]
    case CS_TYPE_DICT: return ["$dictionary": "nested"]
    default: return NSNull()
    }
}

/// Every property of one object (collections as arrays or objects).
func jsonObject(_ txn: OpaquePointer, _ table: UInt32, _ key: Int64) throws -> [String: Any] {
    var o = cs_obj()
    try CStoreError.check(cs_obj_open(txn, table, key, &o))
    var info = cs_table_info()
    try CStoreError.check(cs_table_info_get(txn, table, &info))
    var out: [String: Any] = ["_key": key]
    for col in 0..<info.col_slots {
        var ci = cs_column_info()
        guard cs_column_info_get(txn, table, col, &ci) == 0, (ci.flags & UInt32(CS_COL_HIDDEN)) == 0 else { continue }
        let name = String(cString: ci.name)
        if ci.coll == CS_COLL_NONE {
            var v = cs_value()
            try CStoreError.check(cs_obj_get(&o, col, &v))
            out[name] = jsonValue(v, txn)
            continue
        }
        var c = cs_coll()
        try CStoreError.check(cs_coll_open(&o, col, &c))
        var n = 0
        try CStoreError.check(cs_coll_size(&c, &n))
        if ci.coll == CS_COLL_MAP {
            var m: [String: Any] = [:]
            for i in 0..<n {
                var k = cs_value(), v = cs_value()
                try CStoreError.check(cs_map_get_at(&c, i, &k, &v))
                m[jsonValue(k, txn) as? String ?? "?"] = jsonValue(v, txn)
            }
            out[name] = m
        } else {
            var a: [Any] = []
            for i in 0..<n {
                var v = cs_value()
                try CStoreError.check(cs_list_get(&c, i, &v))
                a.append(jsonValue(v, txn))
            }
            out[name] = a
        }
    }
    return out
}

func oneLineJSON(_ object: Any) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

/// Opens a file read-only and runs `body` in a read transaction; errors exit with status 2.
func withReadTransaction(_ file: String, _ command: String, _ body: (OpaquePointer) throws -> Void) throws {
    try withTransaction(file, command, write: false) { db, txn in
        try checkNodes(db, file, command)
        try body(txn)
    }
}

/// Opens a file read-only for `command`, as `info` and `recover` do: a path that is not a file
/// and a failed open exit through `fail` (status 2, or as ToolExit.code says for the core's
/// error, in JSON with `json`); `message` words the core's error for the command.
func openReadOnly(_ file: String, _ command: String, json: Bool,
                  message: (CStoreError) -> String = { $0.message }) throws -> OpaquePointer {
    if let reason = notAFile(file) {
        throw fail(command, file, reason, code: "CS_IOERR", status: 2, json: json)
    }
    var options = cs_options()
    options.flags = UInt32(CS_OPEN_READONLY)
    var db: OpaquePointer?
    do {
        try CStoreError.check(cs_db_open(file, &options, &db))
    } catch let e as CStoreError {
        throw fail(command, file, message(e), code: e.codeName, status: ToolExit.code(for: e.code), json: json)
    }
    return db!
}

/// Opens a file (read-only unless `write`) and runs `body` with the handle and a transaction
/// of that kind, which it then ends and closes; failures to open exit as ToolExit.code says.
func withTransaction(_ file: String, _ command: String, write: Bool,
                     _ body: (OpaquePointer, OpaquePointer) throws -> Void) throws {
    if let reason = notAFile(file) {
        writeError("swiftstore \(command): \(reason)")
        throw ExitCode(2)
    }
    var options = cs_options()
    if !write { options.flags = UInt32(CS_OPEN_READONLY) }
    var db: OpaquePointer?
    var txn: OpaquePointer?
    do {
        try CStoreError.check(cs_db_open(file, &options, &db))
        try CStoreError.check(cs_txn_begin(db, Int32(write ? CS_TXN_WRITE : CS_TXN_READ), &txn))
    } catch let e as CStoreError {
        writeError("swiftstore \(command): \(e)")
        if db != nil { cs_db_close(db) }
        throw ExitCode(ToolExit.code(for: e.code))
    }
    defer {
        cs_txn_end(txn)
        cs_db_close(db)
    }
    try body(db!, txn!)
}

struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the objects of a class that match a predicate.",
        discussion: "The predicate uses the query language of SwiftStore's filter(), for example 'age > 3 AND name BEGINSWITH[c] \"r\" SORT(age DESC) LIMIT(10)'. With --json the output is JSON Lines: one JSON object per line per matching object (its properties and \"_key\"), nothing else. Every node is checksummed before anything is printed. Exit status 1 for an unknown class or a damaged file (the damaged node's offset is printed; or not a database), 2 for a malformed predicate (usage) or when the file cannot be opened.")

    @Argument(help: "The database file.") var file: String
    @Argument(help: "The class (table) name.") var className: String
    @Argument(help: "The predicate.") var predicate: String
    @Flag(help: "Print JSON Lines: one JSON object per matching object, one per line.") var json = false

    func run() throws {
        try withReadTransaction(file, "query") { txn in
            var table: UInt32 = 0
            guard cs_table_find(txn, className, &table) == 0 else {
                writeError("swiftstore query: no class named '\(className)'")
                throw ExitCode(1)
            }
            var q: OpaquePointer?
            let rc = predicate.withCString { cs_query_new(txn, table, $0, strlen($0), nil, 0, &q) }
            if rc != 0 {
                writeError("swiftstore query: \(CStoreError(rc))")
                throw ExitCode(rc == Int32(CS_QUERY) ? ToolExit.usageOrIO : ToolExit.code(for: rc))
            }
            defer { cs_query_free(q) }
            var keys: UnsafeMutablePointer<Int64>?
            var count = 0
            do {
                try CStoreError.check(cs_query_keys(q, &keys, &count))
                defer { cs_keys_free(keys) }
                for i in 0..<count {
                    let object = try jsonObject(txn, table, keys![i])
                    print(json ? oneLineJSON(object) : describe(object))
                }
                if !json { print("\(count) object\(count == 1 ? "" : "s")") }
            } catch let e as CStoreError {
                writeError("swiftstore query: \(e)")
                throw ExitCode(2)
            }
        }
    }
}

/// A short text form of an object: `Dog[3] name="Rex" age=3`.
func describe(_ object: [String: Any]) -> String {
    let key = object["_key"] as? Int64 ?? -1
    let fields = object.filter { $0.key != "_key" }.sorted { $0.key < $1.key }.map { "\($0.key)=\(oneLineJSONFragment($0.value))" }
    return "[\(key)] " + fields.joined(separator: " ")
}

func oneLineJSONFragment(_ v: Any) -> String {
    if let s = v as? String { return oneLineJSON([s]).dropFirst().dropLast().description }
    if v is NSNull { return "null" }
    if JSONSerialization.isValidJSONObject(v) { return oneLineJSON(v) }
    return "\(v)"
}

struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every object as a JSON line: {\"class\": ..., \"object\": {...}}.",
        discussion: "The output is JSON Lines. Every node is checksummed before anything is printed. Exit status 1 for an unknown --class or a damaged file (the damaged node's offset is printed; or not a database), 2 for usage or when the file cannot be opened.")

    @Argument(help: "The database file.") var file: String
    @Option(name: .customLong("class"), help: "Only this class.") var className: String?

    func run() throws {
        try withReadTransaction(file, "dump") { txn in
            if let only = className {
                var table: UInt32 = 0
                guard cs_table_find(txn, only, &table) == 0 else {
                    writeError("swiftstore dump: no class named '\(only)'")
                    throw ExitCode(1)
                }
            }
            do {
                for table in 0..<cs_table_slots(txn) {
                    var info = cs_table_info()
                    guard cs_table_info_get(txn, table, &info) == 0 else { continue }
                    let name = String(cString: info.name)
                    if let only = className, only != name { continue }
                    var it = cs_iter()
                    try CStoreError.check(cs_iter_init(&it, txn, table))
                    var o = cs_obj()
                    while cs_iter_next(&it, &o) == 0 {
                        print(oneLineJSON(["class": name, "object": try jsonObject(txn, table, o.key)]))
                    }
                }
            } catch let e as CStoreError {
                writeError("swiftstore dump: \(e)")
                throw ExitCode(2)
            }
        }
    }
}
