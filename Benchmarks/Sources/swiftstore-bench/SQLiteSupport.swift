// Thin wrappers over the SQLite C API for the raw SQLite peers.
//
// Settings of every raw SQLite peer (README.md): a connection opened with
// SQLITE_OPEN_NOMUTEX (one thread at a time, as a cs_txn is used), journal_mode=WAL, and
// synchronous=FULL for durable rows (NORMAL for commit.nosync); page size, cache size and
// mmap at SQLite's defaults. Statements are prepared once and reused with bound parameters.

import CSQLite
import Foundation

struct SQLiteError: Error, CustomStringConvertible {
    let call: String
    let code: Int32
    let message: String

    var description: String { "\(call) failed: SQLite error \(code): \(message)" }
}

/// One SQLite connection.
final class SQLiteDB {
    let handle: OpaquePointer

    init(path: String, create: Bool = true) throws {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let msg = db.map { String(cString: sqlite3_errmsg($0)) } ?? "no handle"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(call: "sqlite3_open_v2", code: rc, message: msg)
        }
        handle = db
    }

    func close() {
        sqlite3_close_v2(handle)
    }

    @inline(never)
    func error(_ rc: Int32, _ call: String) -> SQLiteError {
        SQLiteError(call: call, code: rc, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs one or more statements, discarding rows.
    func exec(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        if rc != SQLITE_OK { throw error(rc, sql) }
    }

    /// The WAL journal with the given synchronous level ("FULL", "NORMAL", "OFF").
    func configure(synchronous: String) throws {
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=\(synchronous)")
    }

    func prepare(_ sql: String) throws -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, sql) }
        return SQLiteStatement(db: self, stmt: stmt)
    }

    /// The single Int64 that `sql` returns.
    func scalar(_ sql: String) throws -> Int64 {
        let s = try prepare(sql)
        defer { s.finalize() }
        guard try s.step() else { throw SQLiteError(call: sql, code: 0, message: "no row") }
        return sqlite3_column_int64(s.stmt, 0)
    }
}

/// A prepared statement. Hot loops call sqlite3_* on `stmt` directly.
final class SQLiteStatement {
    let db: SQLiteDB
    let stmt: OpaquePointer

    init(db: SQLiteDB, stmt: OpaquePointer) {
        self.db = db
        self.stmt = stmt
    }

    /// Steps once: true for a row, false when done.
    @inline(__always)
    func step() throws -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw db.error(rc, "sqlite3_step")
    }

    /// Steps a statement that returns no row, then resets it.
    @inline(__always)
    func run() throws {
        let rc = sqlite3_step(stmt)
        if rc != SQLITE_DONE { throw db.error(rc, "sqlite3_step") }
        sqlite3_reset(stmt)
    }

    @inline(__always)
    func bind(_ index: Int32, _ value: Int64) throws {
        let rc = sqlite3_bind_int64(stmt, index, value)
        if rc != SQLITE_OK { throw db.error(rc, "sqlite3_bind_int64") }
    }

    func finalize() {
        sqlite3_finalize(stmt)
    }
}

/// The peer table: `t(i0 ... i9)`, 10 INTEGER NOT NULL columns, rowid keys from 1.
enum SQLiteIntTable {
    static let create = "CREATE TABLE t(" + (0..<10).map { "i\($0) INTEGER NOT NULL" }.joined(separator: ", ") + ")"
    static let insert = "INSERT INTO t(" + (0..<10).map { "i\($0)" }.joined(separator: ", ")
        + ") VALUES(" + (1...10).map { "?\($0)" }.joined(separator: ", ") + ")"
    static let selectAll = "SELECT " + (0..<10).map { "i\($0)" }.joined(separator: ", ") + " FROM t"
    static let sumAll = "SELECT SUM(" + (0..<10).map { "i\($0)" }.joined(separator: " + ") + ") FROM t"

    /// Inserts `count` rows whose 10 values are all the row number (first, first+1, ...),
    /// in the caller's transaction.
    static func insert(_ db: SQLiteDB, count: Int, first: Int64 = 0) throws {
        let ins = try db.prepare(insert)
        defer { ins.finalize() }
        for r in 0..<count {
            let v = first + Int64(r)
            for c in Int32(1)...10 {
                try ins.bind(c, v)
            }
            try ins.run()
        }
    }

    /// Builds a WAL database file of `rows` rows fast (synchronous=OFF) and closes it.
    static func buildFile(_ path: String, rows: Int) throws {
        let db = try SQLiteDB(path: path)
        defer { db.close() }
        try db.configure(synchronous: "OFF")
        try db.exec(create)
        try db.exec("BEGIN")
        try insert(db, count: rows)
        try db.exec("COMMIT")
    }
}
