import ArgumentParser
import CLibPQ
import CStore
import CStoreCall
import Foundation

// `swiftstore mirror FILE postgresql://...` (docs/ARCHITECTURE.md, The PostgreSQL mirror): the
// file's classes as PostgreSQL tables, kept equal by following a feed slot, one PostgreSQL
// transaction per SwiftStore commit that also records the version it applied.

struct MirrorError: Error, CustomStringConvertible {
    let description: String
}

/// The channel each applied commit is announced on (NOTIFY, with the version as the payload).
let mirrorChannel = "swiftstore_mirror"

/// A libpq connection.
final class PGConn {
    private let conn: OpaquePointer
    /// The server-side name of each statement prepared on this connection, by its SQL. An
    /// UPDATE's text depends on the columns it sets, so beyond `maxPrepared` statements the
    /// others are sent unprepared rather than filling the server's memory.
    private var prepared: [String: String] = [:]
    private var preparedCount = 0
    private static let maxPrepared = 256

    init(_ url: String) throws {
        guard let c = PQconnectdb(url) else { throw MirrorError(description: "PostgreSQL: cannot allocate a connection") }
        conn = c
        if PQstatus(c) != CONNECTION_OK {
            let msg = String(cString: PQerrorMessage(c)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(c)
            throw MirrorError(description: "PostgreSQL: cannot connect: \(msg)")
        }
        _ = try? exec("SET client_min_messages = warning")
    }

    deinit { PQfinish(conn) }

    /// Whether the connection is still up (false once the server closed it or it broke).
    var isConnected: Bool { PQstatus(conn) == CONNECTION_OK }

    private func error(_ r: OpaquePointer?, _ sql: String) -> MirrorError {
        let msg = r.map { String(cString: PQresultErrorMessage($0)) } ?? String(cString: PQerrorMessage(conn))
        return MirrorError(description: "PostgreSQL: \(msg.trimmingCharacters(in: .whitespacesAndNewlines)) (in: \(sql.prefix(200)))")
    }

    /// Runs statements with no parameters; returns the rows of the last one (text, nil for NULL).
    @discardableResult
    func exec(_ sql: String) throws -> [[String?]] {
        let r = PQexec(conn, sql)
        defer { PQclear(r) }
        return try rows(r, sql)
    }

    @discardableResult
    func exec(_ sql: String, _ params: [String?]) throws -> [[String?]] {
        let r = withCParams(params) { PQexecParams(conn, sql, Int32(params.count), nil, $0, nil, nil, 0) }
        defer { PQclear(r) }
        return try rows(r, sql)
    }

    /// Runs `statements` as one transaction in one round trip: libpq's pipeline mode sends them
    /// all, then a Sync, and the server runs everything before the Sync as one implicit
    /// transaction (committed at the Sync, rolled back whole when any statement fails). No
    /// BEGIN or COMMIT goes in `statements`.
    func transaction(_ statements: [PGStatement]) throws {
        guard PQenterPipelineMode(conn) == 1 else { throw error(nil, "entering pipeline mode") }
        defer { PQexitPipelineMode(conn) }
        // each distinct statement is prepared once per connection (its first use prepares it
        // in the same pipeline), so the server parses and plans it only once
        var replies: [String] = []
        var newlyPrepared: [String] = []
        for st in statements {
            var name = prepared[st.sql]
            if name == nil && prepared.count < Self.maxPrepared {
                preparedCount += 1
                name = "swiftstore_\(preparedCount)"
                guard PQsendPrepare(conn, name!, st.sql, Int32(st.params.count), nil) == 1 else { throw error(nil, st.sql) }
                replies.append(st.sql)
                newlyPrepared.append(st.sql)
                prepared[st.sql] = name
            }
            let sent = withCParams(st.params) { params in
                if let name { return PQsendQueryPrepared(conn, name, Int32(st.params.count), params, nil, nil, 0) }
                return PQsendQueryParams(conn, st.sql, Int32(st.params.count), nil, params, nil, nil, 0)
            }
            guard sent == 1 else { throw error(nil, st.sql) }
            replies.append(st.sql)
        }
        guard PQpipelineSync(conn) == 1 else { throw error(nil, "sync") }
        // one result (then NULL) per message sent, then the Sync's; after a failure the later
        // ones report PIPELINE_ABORTED and the first error is the one thrown
        var failure: MirrorError?
        defer { if failure != nil { for sql in newlyPrepared { prepared[sql] = nil } } }
        for st in replies {
            while let r = PQgetResult(conn) {
                let status = PQresultStatus(r)
                if failure == nil && status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK {
                    failure = status == PGRES_PIPELINE_ABORTED ? error(nil, st) : error(r, st)
                }
                PQclear(r)
            }
        }
        guard let sync = PQgetResult(conn) else { throw failure ?? error(nil, "sync") }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        if let failure { throw failure }
        guard synced else { throw error(nil, "sync") }
    }

    private func withCParams<R>(_ params: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        var cstrs: [UnsafeMutablePointer<CChar>?] = params.map { $0.map { strdup($0) } ?? nil }
        defer { for p in cstrs { free(p) } }
        return cstrs.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress.map { base in
                base.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buf.count) { body($0) }
            } ?? body(nil)
        }
    }

    private func rows(_ r: OpaquePointer?, _ sql: String) throws -> [[String?]] {
        let st = PQresultStatus(r)
        guard st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK else { throw error(r, sql) }
        var out: [[String?]] = []
        for i in 0..<PQntuples(r) {
            var row: [String?] = []
            for j in 0..<PQnfields(r) {
                row.append(PQgetisnull(r, i, j) != 0 ? nil : String(cString: PQgetvalue(r, i, j)))
            }
            out.append(row)
        }
        return out
    }

    /// COPY ... FROM STDIN: `fill` appends rows in COPY's text format to the buffer and calls
    /// `flush` after each, which sends the buffer whenever it passes 1 MiB.
    func copy(_ sql: String, _ fill: (CopyBuffer) throws -> Void) throws {
        let r = PQexec(conn, sql)
        let st = PQresultStatus(r)
        PQclear(r)
        guard st == PGRES_COPY_IN else { throw error(nil, sql) }
        let buf = CopyBuffer { bytes in
            let ok = bytes.withUnsafeBytes { PQputCopyData(self.conn, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
            if ok != 1 { throw self.error(nil, sql) }
        }
        try fill(buf)
        try buf.send()
        if PQputCopyEnd(conn, nil) != 1 { throw error(nil, sql) }
        let fin = PQgetResult(conn)
        let fst = PQresultStatus(fin)
        defer { PQclear(fin) }
        while let more = PQgetResult(conn) { PQclear(more) }
        guard fst == PGRES_COMMAND_OK else { throw error(fin, sql) }
    }
}

/// One statement of a pipelined transaction: SQL with $n placeholders and their text values.
struct PGStatement {
    let sql: String
    let params: [String?]
}

/// The rows of a COPY on their way to the server.
final class CopyBuffer {
    var bytes: [UInt8] = []
    private let sink: ([UInt8]) throws -> Void

    init(_ sink: @escaping ([UInt8]) throws -> Void) {
        self.sink = sink
        bytes.reserveCapacity(1 << 21)
    }

    func flush() throws { if bytes.count > (1 << 20) { try send() } }

    func send() throws {
        if bytes.isEmpty { return }
        try sink(bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A quoted PostgreSQL identifier.
func pgIdent(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

/// How one class is mirrored: its table's columns (after `_key`) and their PostgreSQL types.
struct PGTable: Equatable {
    var name: String
    var columns: [String]   // property names
    var types: [String]     // PostgreSQL types
    var cols: [UInt32]      // SwiftStore column keys
    var primary: String?    // the primary-key property
    var ddlTypes: [String: String] { Dictionary(uniqueKeysWithValues: zip(columns, types)) }

    static func == (a: PGTable, b: PGTable) -> Bool {
        a.name == b.name && a.columns == b.columns && a.types == b.types && a.primary == b.primary
    }

    var json: [String: Any] { ["name": name, "columns": columns, "types": types, "primary": primary ?? NSNull()] }

    init(name: String, columns: [String], types: [String], cols: [UInt32], primary: String?) {
        self.name = name
        self.columns = columns
        self.types = types
        self.cols = cols
        self.primary = primary
    }

    init?(json: [String: Any]) {
        guard let n = json["name"] as? String, let c = json["columns"] as? [String], let t = json["types"] as? [String] else { return nil }
        self.init(name: n, columns: c, types: t, cols: [], primary: json["primary"] as? String)
    }

    func createSQL() -> String {
        var defs = ["\"_key\" bigint NOT NULL UNIQUE"]
        for (c, t) in zip(columns, types) { defs.append("\(pgIdent(c)) \(t)") }
        if let p = primary { defs.append("PRIMARY KEY (\(pgIdent(p)))") } else { defs[0] = "\"_key\" bigint PRIMARY KEY" }
        return "CREATE TABLE \(pgIdent(name)) (\(defs.joined(separator: ", ")))"
    }
}

/// The PostgreSQL type of a property (docs/ARCHITECTURE.md, The PostgreSQL mirror).
func pgType(_ txn: OpaquePointer, _ info: cs_column_info) -> String {
    if info.coll != CS_COLL_NONE { return "jsonb" }
    switch info.type {
    case CS_TYPE_INT: return "bigint"
    case CS_TYPE_BOOL: return "boolean"
    case CS_TYPE_FLOAT: return "real"
    case CS_TYPE_DOUBLE: return "double precision"
    case CS_TYPE_STRING: return "text"
    case CS_TYPE_BINARY: return "bytea"
    case CS_TYPE_TIMESTAMP: return "timestamptz"
    case CS_TYPE_OBJECTID: return "text"
    case CS_TYPE_UUID: return "uuid"
    case CS_TYPE_DECIMAL: return "numeric"
    case CS_TYPE_LINK:
        guard let t = tableShape(txn, info.target) else { return "bigint" }
        if t.embedded { return "jsonb" }
        if t.primary != CS_NONE, let c = t.columns.first(where: { $0.col == t.primary }) { return pgType(txn, c.info) }
        return "bigint"
    default: return "jsonb" // Mixed
    }
}

/// The mirrored tables of a version: every class that is not embedded.
func pgTables(_ txn: OpaquePointer) throws -> [UInt32: PGTable] {
    var out: [UInt32: PGTable] = [:]
    for t in 0..<cs_table_slots(txn) {
        guard let s = tableShape(txn, t), !s.embedded else { continue }
        if s.columns.contains(where: { $0.name == "_key" }) {
            throw MirrorError(description: "class \(s.name) has a property named _key, the column the mirror keeps the object key in")
        }
        let primary = s.columns.first { $0.col == s.primary }?.name
        out[t] = PGTable(name: s.name, columns: s.columns.map(\.name), types: s.columns.map { pgType(txn, $0.info) },
                         cols: s.columns.map(\.col), primary: primary)
    }
    return out
}

/// Values in PostgreSQL's text form, written as bytes straight into a buffer: raw (the text of a
/// query parameter) or escaped for COPY's text format (backslash, newline, carriage return and
/// tab escaped). The initial copy writes every value this way, with no String per value.
struct PGValues {
    var feed: FeedValues
    let txn: OpaquePointer
    /// Column descriptions by table, for the columns they were read for (a schema change
    /// applied meanwhile gives the table other columns).
    private var infos: [UInt32: (cols: [UInt32], infos: [cs_column_info])] = [:]

    init(_ txn: OpaquePointer) {
        self.txn = txn
        feed = FeedValues(txn)
    }

    // MARK: Bytes

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func appendInt(_ v: Int64, _ out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var n = 0
            repeat {
                digits[n] = UInt8(truncatingIfNeeded: m % 10) + 48
                m /= 10
                n += 1
            } while m != 0
            while n > 0 {
                n -= 1
                out.append(digits[n])
            }
        }
    }

    /// `width` digits of `v`, zero-padded.
    private static func appendPadded(_ v: Int, _ width: Int, _ out: inout [UInt8]) {
        var p = 1
        for _ in 1..<width { p *= 10 }
        var r = v
        while p > 0 {
            out.append(UInt8(r / p) + 48)
            r %= p
            p /= 10
        }
    }

    static func appendHex(_ p: UnsafeRawBufferPointer, _ out: inout [UInt8]) {
        for b in p {
            out.append(hexDigits[Int(b >> 4)])
            out.append(hexDigits[Int(b & 15)])
        }
    }

    /// Text bytes, escaped for COPY when `escaped`.
    static func appendText<S: Sequence>(_ bytes: S, escaped: Bool, _ out: inout [UInt8]) where S.Element == UInt8 {
        guard escaped else { return out.append(contentsOf: bytes) }
        for b in bytes {
            switch b {
            case 92: out.append(92); out.append(92)
            case 10: out.append(92); out.append(110)
            case 13: out.append(92); out.append(114)
            case 9: out.append(92); out.append(116)
            default: out.append(b)
            }
        }
    }

    static func float(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return "\(d)"
    }

    static func appendTimestamp(_ sec: Int64, _ nsec: Int32, _ out: inout [UInt8]) {
        // microseconds (PostgreSQL's resolution), rounded toward negative infinity
        var s = sec, us = Int64(nsec) / 1000
        if us < 0 { s -= 1; us += 1_000_000 }
        var t = time_t(s)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        let year = Int(tmv.tm_year) + 1900
        let y = year > 0 ? year : 1 - year
        if y < 10000 { appendPadded(y, 4, &out) } else { appendInt(Int64(y), &out) }
        for (sep, v) in [(45, Int(tmv.tm_mon) + 1), (45, Int(tmv.tm_mday)), (32, Int(tmv.tm_hour)), (58, Int(tmv.tm_min)), (58, Int(tmv.tm_sec))] {
            out.append(UInt8(sep))
            appendPadded(v, 2, &out)
        }
        out.append(UInt8(ascii: "."))
        appendPadded(Int(us), 6, &out)
        out.append(contentsOf: Array("+00".utf8))
        if year <= 0 { out.append(contentsOf: Array(" BC".utf8)) }
    }

    /// A value's JSON text, also when it is not an array or object.
    static func jsonText(_ value: Any) -> String { String(oneLineJSON([value]).dropFirst().dropLast()) }

    // MARK: Values

    /// Appends one scalar value; false (and nothing appended) for NULL.
    mutating func append(_ v: cs_value, escaped: Bool, to out: inout [UInt8]) throws -> Bool {
        switch v.type {
        case CS_TYPE_NULL: return false
        case CS_TYPE_INT: PGValues.appendInt(v.v.i, &out)
        case CS_TYPE_BOOL: out.append(v.v.b ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case CS_TYPE_FLOAT:
            let f = v.v.f
            out.append(contentsOf: (f.isFinite ? "\(f)" : PGValues.float(Double(f))).utf8)
        case CS_TYPE_DOUBLE: out.append(contentsOf: PGValues.float(v.v.d).utf8)
        case CS_TYPE_STRING:
            let b = UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len)
            if b.contains(0) { throw MirrorError(description: "a string holds a NUL byte, which PostgreSQL text cannot store") }
            PGValues.appendText(b, escaped: escaped, &out)
        case CS_TYPE_BINARY:
            // \x then hex digits; COPY's text format reads a backslash as an escape
            if escaped { out.append(92) }
            out.append(92)
            out.append(UInt8(ascii: "x"))
            PGValues.appendHex(UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len), &out)
        case CS_TYPE_TIMESTAMP: PGValues.appendTimestamp(v.v.ts.sec, v.v.ts.nsec, &out)
        case CS_TYPE_OBJECTID:
            var o = v.v.oid
            withUnsafeBytes(of: &o) { PGValues.appendHex($0, &out) }
        case CS_TYPE_UUID:
            var u = v.v.uuid
            withUnsafeBytes(of: &u) { raw in
                for (i, range) in [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].enumerated() {
                    if i > 0 { out.append(UInt8(ascii: "-")) }
                    PGValues.appendHex(UnsafeRawBufferPointer(rebasing: raw[range]), &out)
                }
            }
        case CS_TYPE_DECIMAL:
            var d = v.v.dec
            var buf = [CChar](repeating: 0, count: 64)
            _ = cs_decimal_format(&d, &buf, buf.count)
            let text = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.hasSuffix("Inf") { out.append(contentsOf: (text.hasPrefix("-") ? "-Infinity" : "Infinity").utf8) }
            else { out.append(contentsOf: text.utf8) }
        case CS_TYPE_LINK:
            let target = v.v.link.table, key = v.v.link.key
            guard let s = feed.shape(target) else { return false }
            if s.embedded {
                PGValues.appendText(oneLineJSON(try feed.object(target, key)).utf8, escaped: escaped, &out)
            } else if s.primary != CS_NONE {
                var o = cs_obj()
                guard cs_obj_open(txn, target, key, &o) == 0 else { return false }
                var pv = cs_value()
                try CStoreError.check(cs_obj_get(&o, s.primary, &pv))
                return try append(pv, escaped: escaped, to: &out)
            } else {
                PGValues.appendInt(key, &out)
            }
        default: // Mixed as jsonb
            PGValues.appendText(PGValues.jsonText(try feed.scalar(v)).utf8, escaped: escaped, &out)
        }
        return true
    }

    /// Appends one property of an object (collections and embedded objects as jsonb text);
    /// false (and nothing appended) for NULL.
    mutating func append(_ o: inout cs_obj, _ col: UInt32, _ info: cs_column_info, escaped: Bool, to out: inout [UInt8]) throws -> Bool {
        if info.coll != CS_COLL_NONE {
            PGValues.appendText(PGValues.jsonText(try feed.property(&o, col, info)).utf8, escaped: escaped, &out)
            return true
        }
        var v = cs_value()
        try CStoreError.check(cs_obj_get(&o, col, &v))
        if info.type == CS_TYPE_MIXED {
            if v.type == CS_TYPE_NULL { return false }
            PGValues.appendText(PGValues.jsonText(try feed.property(&o, col, info)).utf8, escaped: escaped, &out)
            return true
        }
        return try append(v, escaped: escaped, to: &out)
    }

    /// One property as a query parameter (nil: NULL).
    mutating func property(_ o: inout cs_obj, _ col: UInt32, _ info: cs_column_info) throws -> String? {
        var b: [UInt8] = []
        return try append(&o, col, info, escaped: false, to: &b) ? String(decoding: b, as: UTF8.self) : nil
    }

    /// The descriptions of a mirrored table's columns, in `t.cols` order.
    private mutating func columnInfos(_ table: UInt32, _ t: PGTable) throws -> [cs_column_info] {
        if let known = infos[table], known.cols == t.cols { return known.infos }
        let list = try t.cols.map { col in
            var ci = cs_column_info()
            try CStoreError.check(cs_column_info_get(txn, table, col, &ci))
            return ci
        }
        infos[table] = (t.cols, list)
        return list
    }

    /// Every column of a row as query parameters: `_key` first, then the table's columns.
    mutating func row(_ table: UInt32, _ t: PGTable, _ key: Int64) throws -> [String?] {
        var o = cs_obj()
        try CStoreError.check(cs_obj_open(txn, table, key, &o))
        var out: [String?] = [String(key)]
        for (col, ci) in zip(t.cols, try columnInfos(table, t)) {
            out.append(try property(&o, col, ci))
        }
        return out
    }

    /// Appends an object's row in COPY's text format: `_key`, then the table's columns,
    /// tab-separated, NULL as \N, ended by a newline.
    mutating func appendCopyRow(_ o: inout cs_obj, _ t: PGTable, to out: inout [UInt8]) throws {
        PGValues.appendInt(o.key, &out)
        for (col, ci) in zip(t.cols, try columnInfos(o.table, t)) {
            out.append(9)
            if try !append(&o, col, ci, escaped: true, to: &out) {
                out.append(92)
                out.append(78)
            }
        }
        out.append(10)
    }
}

struct Mirror: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mirror a database file into PostgreSQL and keep the mirror equal to it.",
        discussion: """
        The first run creates a feed slot (--slot, default "mirror"), one table per class that is not embedded (a "_key" column with the object key, the class's primary key as PRIMARY KEY, one column per property; lists, sets, maps, embedded objects and Mixed values as jsonb) and the table swiftstore_mirror with the version applied, and copies the current objects with COPY. Then it applies every later commit as one PostgreSQL transaction that also records the commit's version, so a mirror killed at any point resumes exactly where it stopped; the same transaction sends NOTIFY on the channel swiftstore_mirror with the version as payload, for consumers that LISTEN. Schema changes: new classes and added properties are applied (the class's table is copied again); removed or retyped properties, removed classes and primary-key changes are refused with a message (exit status 1). Without --follow it exits once it has caught up. With --follow it keeps running when the connection to PostgreSQL drops: it connects again (pausing 0.1 s, doubling to 5 s, between tries) and goes on after the version the mirror recorded last. Exit status 1 for a refused schema change, an invalidated slot or a damaged file (or not a database), 2 for usage or a file or PostgreSQL error.
        """)

    @Argument(help: "The database file.") var file: String
    @Argument(help: "The PostgreSQL connection URL (postgresql://...).") var url: String
    @Option(help: "The feed slot the mirror follows.") var slot = "mirror"
    @Option(help: "The slot's byte limit when the mirror creates it (0: none).") var limit: UInt64 = 0
    @Flag(help: "Keep following new commits.") var follow = false

    func run() throws {
        do {
            try mirror()
        } catch let e as MirrorError {
            writeError("swiftstore mirror: \(e.description)")
            throw ExitCode(e.description.hasPrefix("refused") || e.description.contains("invalidated") ? 1 : 2)
        } catch let e as CStoreError {
            writeError("swiftstore mirror: \(e)")
            throw ExitCode(e.code == Int32(CS_FULL) ? ToolExit.refused : ToolExit.code(for: e.code))
        }
    }

    private func mirror() throws {
        if let reason = notAFile(file) { throw MirrorError(description: reason) }
        var options = cs_options()
        var dbp: OpaquePointer?
        try CStoreError.check(cs_db_open(file, &options, &dbp))
        let db = dbp!
        defer { cs_db_close(db) }
        var pg = try PGConn(url)
        try pg.exec("CREATE TABLE IF NOT EXISTS swiftstore_mirror (id int PRIMARY KEY, slot text NOT NULL, version bigint NOT NULL, tables jsonb NOT NULL)")
        var since: UInt64
        var mirrored: [String: PGTable] = [:]
        if let state = try appliedState(pg) {
            (since, mirrored) = state
        } else {
            since = try initialCopy(db, pg, &mirrored)
        }
        var seen = cs_db_commit_counter(db)
        var unacked: UInt64 = 0, lastAck = monotonicSeconds()
        while true {
            var txn: OpaquePointer?
            try CStoreError.check(cs_txn_begin(db, Int32(CS_TXN_READ), &txn))
            let version = cs_txn_version(txn)
            var applied: UInt64 = 0
            do {
                if version != since { applied = try apply(txn!, pg, since: since, &mirrored) }
            } catch {
                cs_txn_end(txn)
                // a follower outlives a dropped connection: PostgreSQL rolled back the commit
                // being applied, and the version it recorded says where to go on
                guard follow, !pg.isConnected else { throw error }
                writeError("swiftstore mirror: \(error); reconnecting")
                (pg, since, mirrored) = try reconnect()
                writeError("swiftstore mirror: reconnected; going on after version \(since)")
                continue
            }
            cs_txn_end(txn)
            since = version
            // The slot is acknowledged lazily: PostgreSQL's recorded version, not the slot,
            // says what was applied, so an acknowledgment only lets the file drop history. One
            // is a durable commit to the file, so a follower makes at most one per
            // `ackInterval` while commits keep coming, and one when they stop for that long.
            if applied > 0 { unacked = applied }
            if unacked > 0 && (!follow || monotonicSeconds() - lastAck >= Self.ackInterval) {
                try ack(db, unacked)
                unacked = 0
                lastAck = monotonicSeconds()
            }
            if !follow { return }
            if unacked > 0 && cs_db_wait_for_commit(db, seen, Int32(Self.ackInterval * 1000)) == Int32(CS_BUSY) {
                try ack(db, unacked)
                unacked = 0
                lastAck = monotonicSeconds()
            }
            _ = cs_db_wait_for_commit(db, seen, -1)
            seen = cs_db_commit_counter(db)
        }
    }

    /// The longest a following mirror leaves applied commits unacknowledged while it runs.
    static let ackInterval = 0.1

    /// The version the mirror applied last and its tables, as swiftstore_mirror records them;
    /// nil before the initial copy.
    private func appliedState(_ pg: PGConn) throws -> (UInt64, [String: PGTable])? {
        let meta = try pg.exec("SELECT version, tables::text FROM swiftstore_mirror WHERE id = 1")
        guard let row = meta.first, let v = row[0], let tj = row[1] else { return nil }
        var mirrored: [String: PGTable] = [:]
        let arr = (try? JSONSerialization.jsonObject(with: Data(tj.utf8))) as? [[String: Any]] ?? []
        for t in arr.compactMap(PGTable.init(json:)) { mirrored[t.name] = t }
        return (UInt64(v) ?? 0, mirrored)
    }

    /// A new connection and the mirror's state read through it, tried again with a growing
    /// pause (0.1 s doubling to 5 s) for as long as the server cannot be reached.
    private func reconnect() throws -> (PGConn, UInt64, [String: PGTable]) {
        var pause = 0.1
        while true {
            usleep(useconds_t(pause * 1_000_000))
            pause = min(pause * 2, 5)
            guard let c = try? PGConn(url) else { continue }
            do {
                guard let (version, tables) = try appliedState(c) else {
                    throw MirrorError(description: "the table swiftstore_mirror is gone from the PostgreSQL database")
                }
                return (c, version, tables)
            } catch where !c.isConnected {
                continue
            }
        }
    }

    private func ack(_ db: OpaquePointer, _ version: UInt64) throws {
        var w: OpaquePointer?
        try CStoreError.check(cs_txn_begin(db, Int32(CS_TXN_WRITE), &w))
        defer { cs_txn_end(w) }
        try CStoreError.check(cs_feed_ack(w, slot, version))
        try CStoreError.check(cs_txn_commit(w))
    }

    private func tablesJSON(_ m: [String: PGTable]) -> String {
        oneLineJSON(m.values.sorted { $0.name < $1.name }.map(\.json))
    }

    /// Copies one class's objects with COPY.
    private func copyTable(_ pg: PGConn, _ txn: OpaquePointer, _ table: UInt32, _ t: PGTable) throws {
        let cols = (["_key"] + t.columns).map(pgIdent).joined(separator: ", ")
        var values = PGValues(txn)
        try pg.copy("COPY \(pgIdent(t.name)) (\(cols)) FROM STDIN") { buf in
            var it = cs_iter()
            try CStoreError.check(cs_iter_init(&it, txn, table))
            var o = cs_obj()
            while cs_iter_next(&it, &o) == 0 {
                try values.appendCopyRow(&o, t, to: &buf.bytes)
                try buf.flush()
            }
        }
    }

    /// The first run: slot, tables, snapshot, in one PostgreSQL transaction.
    private func initialCopy(_ db: OpaquePointer, _ pg: PGConn, _ mirrored: inout [String: PGTable]) throws -> UInt64 {
        var w: OpaquePointer?
        try CStoreError.check(cs_txn_begin(db, Int32(CS_TXN_WRITE), &w))
        var info = cs_feed_slot_info()
        if cs_feed_slot_get(w, slot, &info) == Int32(CS_NOTFOUND) {
            try CStoreError.check(cs_feed_create(w, slot, limit))
            try CStoreError.check(cs_txn_commit(w))
        }
        cs_txn_end(w)
        var txn: OpaquePointer?
        try CStoreError.check(cs_txn_begin(db, Int32(CS_TXN_READ), &txn))
        defer { cs_txn_end(txn) }
        let version = cs_txn_version(txn)
        let tables = try pgTables(txn!)
        try pg.exec("BEGIN")
        do {
            for (key, t) in tables.sorted(by: { $0.key < $1.key }) {
                try pg.exec("DROP TABLE IF EXISTS \(pgIdent(t.name))")
                try pg.exec(t.createSQL())
                try copyTable(pg, txn!, key, t)
                mirrored[t.name] = t
            }
            try pg.exec("INSERT INTO swiftstore_mirror (id, slot, version, tables) VALUES (1, $1, $2, $3::jsonb)",
                        [slot, String(version), tablesJSON(mirrored)])
            try pg.exec("COMMIT")
        } catch {
            _ = try? pg.exec("ROLLBACK")
            throw error
        }
        try ack(db, version)
        return version
    }

    /// A schema change: new classes and added properties are applied, anything else refused.
    private func applySchema(_ pg: PGConn, _ txn: OpaquePointer, _ version: UInt64, _ mirrored: inout [String: PGTable]) throws {
        let now = try pgTables(txn)
        let names = Set(now.values.map(\.name))
        for old in mirrored.keys where !names.contains(old) {
            throw MirrorError(description: "refused: the schema change of version \(version) removes class \(old); the mirror applies only new classes and added properties (drop the mirror's tables and swiftstore_mirror to copy it again)")
        }
        for (key, t) in now.sorted(by: { $0.key < $1.key }) {
            guard let old = mirrored[t.name] else {
                try pg.exec(t.createSQL())
                try copyTable(pg, txn, key, t)
                mirrored[t.name] = t
                continue
            }
            if old == t { continue }
            let oldTypes = old.ddlTypes, newTypes = t.ddlTypes
            for (c, ty) in oldTypes where newTypes[c] != ty {
                throw MirrorError(description: "refused: the schema change of version \(version) \(newTypes[c] == nil ? "removes" : "changes the type of") property \(t.name).\(c); the mirror applies only new classes and added properties")
            }
            if old.primary != t.primary {
                throw MirrorError(description: "refused: the schema change of version \(version) changes the primary key of \(t.name)")
            }
            for (c, ty) in zip(t.columns, t.types) where oldTypes[c] == nil {
                try pg.exec("ALTER TABLE \(pgIdent(t.name)) ADD COLUMN \(pgIdent(c)) \(ty)")
            }
            try pg.exec("DELETE FROM \(pgIdent(t.name))")
            try copyTable(pg, txn, key, t)
            mirrored[t.name] = t
        }
    }

    /// Applies the commits after `since`, one PostgreSQL transaction each; returns the last
    /// version applied (0: none).
    private func apply(_ txn: OpaquePointer, _ pg: PGConn, since: UInt64, _ mirrored: inout [String: PGTable]) throws -> UInt64 {
        let lines: [FeedLine]
        do {
            lines = try feedLines(txn, slot: slot, since: since, previous: nil, render: false)
        } catch let e as CStoreError where e.code == Int32(CS_FULL) {
            throw MirrorError(description: "\(e.message)")
        }
        var values = PGValues(txn)
        var tables = try pgTables(txn)
        var last: UInt64 = 0
        var i = 0
        while i < lines.count {
            let version = lines[i].version
            var j = i
            while j < lines.count && lines[j].version == version { j += 1 }
            // a commit of data alone goes to the server as one pipelined round trip; one that
            // changes the schema runs its statements one at a time (COPY cannot be pipelined)
            let changesSchema = lines[i..<j].contains { $0.op == .schema }
            var pipelined: [PGStatement] = []
            func run(_ sql: String, _ params: [String?]) throws {
                if changesSchema { try pg.exec(sql, params) } else { pipelined.append(PGStatement(sql: sql, params: params)) }
            }
            if changesSchema { try pg.exec("BEGIN") }
            do {
                for line in lines[i..<j] {
                    if line.op == .schema {
                        try applySchema(pg, txn, version, &mirrored)
                        tables = try pgTables(txn)
                        continue
                    }
                    guard let t = tables[line.table] else { continue }
                    let name = pgIdent(t.name)
                    switch line.op {
                    case .delete:
                        try run("DELETE FROM \(name) WHERE \"_key\" = $1", [String(line.key)])
                    case .insert:
                        let row = try values.row(line.table, t, line.key)
                        let cols = (["_key"] + t.columns).map(pgIdent)
                        let ph = (1...cols.count).map { "$\($0)" }.joined(separator: ", ")
                        let set = cols.dropFirst().map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
                        try run("INSERT INTO \(name) (\(cols.joined(separator: ", "))) VALUES (\(ph)) ON CONFLICT (\"_key\") "
                                + (set.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(set)"), row)
                    default:
                        var o = cs_obj()
                        try CStoreError.check(cs_obj_open(txn, line.table, line.key, &o))
                        var sets: [String] = [], params: [String?] = [String(line.key)]
                        for col in line.cols {
                            guard let idx = t.cols.firstIndex(of: col) else { continue }
                            var ci = cs_column_info()
                            try CStoreError.check(cs_column_info_get(txn, line.table, col, &ci))
                            params.append(try values.property(&o, col, ci))
                            sets.append("\(pgIdent(t.columns[idx])) = $\(params.count)")
                        }
                        if sets.isEmpty { continue }
                        try run("UPDATE \(name) SET \(sets.joined(separator: ", ")) WHERE \"_key\" = $1", params)
                    }
                }
                // the tables' description changes only with the schema
                if changesSchema {
                    try run("UPDATE swiftstore_mirror SET version = $1, tables = $2::jsonb WHERE id = 1", [String(version), tablesJSON(mirrored)])
                } else {
                    try run("UPDATE swiftstore_mirror SET version = $1 WHERE id = 1", [String(version)])
                }
                // consumers LISTENing on the channel learn of each applied commit as it commits
                try run("SELECT pg_notify($1, $2)", [mirrorChannel, String(version)])
                if changesSchema { try pg.exec("COMMIT") } else { try pg.transaction(pipelined) }
            } catch {
                if changesSchema { _ = try? pg.exec("ROLLBACK") }
                throw error
            }
            last = version
            i = j
        }
        return last
    }
}
