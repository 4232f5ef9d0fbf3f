// Thin wrappers over cstore.h for the C API rows: opening, transactions, the 10-Int table
// (return codes are checked with CStoreCall's `check`).

import CStore
import CStoreCall
import Foundation

let csOK = Int32(CS_OK)
let csNotFound = Int32(CS_NOTFOUND)

/// Opens (creating when asked) a database file.
func csOpen(_ path: String, durability: cs_durability, create: Bool) throws -> OpaquePointer {
    var opts = cs_options()
    opts.flags = create ? UInt32(CS_OPEN_CREATE) : 0
    opts.durability = durability
    var db: OpaquePointer?
    try CStoreError.check(cs_db_open(path, &opts, &db), "cs_db_open")
    guard let db else { throw CStoreError(code: -1, message: "no handle", context: "cs_db_open") }
    return db
}

func csClose(_ db: OpaquePointer) throws {
    try CStoreError.check(cs_db_close(db), "cs_db_close")
}

/// Begins a transaction (CS_TXN_READ or CS_TXN_WRITE).
@inline(__always)
func csBegin(_ db: OpaquePointer, write: Bool) throws -> OpaquePointer {
    var txn: OpaquePointer?
    try CStoreError.check(cs_txn_begin(db, Int32(write ? CS_TXN_WRITE : CS_TXN_READ), &txn), "cs_txn_begin")
    return txn!
}

/// Runs `body` in a transaction and ends it; a write transaction is committed first.
/// On an error the transaction is ended (rolled back) before the error is passed on.
func csTransaction<T>(_ db: OpaquePointer, write: Bool, _ body: (OpaquePointer) throws -> T) throws -> T {
    let txn = try csBegin(db, write: write)
    do {
        let value = try body(txn)
        if write { try CStoreError.check(cs_txn_commit(txn), "cs_txn_commit") }
        try CStoreError.check(cs_txn_end(txn), "cs_txn_end")
        return value
    } catch {
        _ = cs_txn_end(txn)
        throw error
    }
}

/// The benchmark table: 10 non-nullable Int columns named i0 ... i9.
struct IntTable {
    let table: UInt32
    let columns: [UInt32]   // column keys of i0 ... i9

    static let columnCount = 10

    /// Creates the table (in a WRITE transaction).
    static func create(_ txn: OpaquePointer, name: String = "Item") throws -> IntTable {
        var table: UInt32 = 0
        try CStoreError.check(cs_table_add(txn, name, 0, &table), "cs_table_add")
        var cols: [UInt32] = []
        for c in 0..<columnCount {
            var col: UInt32 = 0
            try CStoreError.check(cs_column_add(txn, table, "i\(c)", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &col),
                   "cs_column_add")
            cols.append(col)
        }
        return IntTable(table: table, columns: cols)
    }

    /// Finds the table made by `create` (in any transaction).
    static func find(_ txn: OpaquePointer, name: String = "Item") throws -> IntTable {
        var table: UInt32 = 0
        try CStoreError.check(cs_table_find(txn, name, &table), "cs_table_find")
        var cols: [UInt32] = []
        for c in 0..<columnCount {
            var col: UInt32 = 0
            try CStoreError.check(cs_column_find(txn, table, "i\(c)", &col), "cs_column_find")
            cols.append(col)
        }
        return IntTable(table: table, columns: cols)
    }

    /// Creates `count` objects whose 10 values are all the row number (first, first+1, ...),
    /// in one cs_obj_create_many_int call (the C API's bulk path: a leaf at a time, one append
    /// per value). Returns their keys when `keys` is true (else an empty array).
    func insert(_ txn: OpaquePointer, count: Int, first: Int64 = 0, keys: Bool = false) throws -> [Int64] {
        let values = (0..<Int64(count)).map { first + $0 }
        var firstKey: Int64 = 0
        try values.withUnsafeBufferPointer { v in
            let perColumn = [UnsafePointer<Int64>?](repeating: v.baseAddress, count: columns.count)
            try CStoreError.check(cs_obj_create_many_int(txn, table, count, columns.count, columns, perColumn, &firstKey),
                                  "cs_obj_create_many_int")
        }
        return keys ? (0..<Int64(count)).map { firstKey + $0 } : []
    }

    /// Sum of all 10 values of every object, and the number of objects (a full pass).
    func sumAll(_ txn: OpaquePointer) throws -> (sum: Int64, count: Int64) {
        var it = cs_iter()
        var obj = cs_obj()
        var sum: Int64 = 0
        var count: Int64 = 0
        try CStoreError.check(cs_iter_init(&it, txn, table), "cs_iter_init")
        try columns.withUnsafeBufferPointer { cols in
            while true {
                let rc = cs_iter_next(&it, &obj)
                if rc == csNotFound { break }
                try CStoreError.check(rc, "cs_iter_next")
                for c in cols {
                    var v: Int64 = 0
                    try CStoreError.check(cs_obj_get_int(&obj, c, &v), "cs_obj_get_int")
                    sum &+= v
                }
                count += 1
            }
        }
        return (sum, count)
    }
}

/// Builds a database file of `rows` objects of the 10-Int table, fast (no syncs), and closes
/// it. Returns the object keys in creation order.
func csBuildIntFile(_ path: String, rows: Int) throws -> [Int64] {
    let db = try csOpen(path, durability: CS_DURABILITY_NOSYNC, create: true)
    do {
        let keys = try csTransaction(db, write: true) { txn in
            let t = try IntTable.create(txn)
            return try t.insert(txn, count: rows, keys: true)
        }
        try csClose(db)
        return keys
    } catch {
        _ = cs_db_close(db)
        throw error
    }
}
