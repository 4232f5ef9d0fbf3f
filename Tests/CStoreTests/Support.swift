// Shared test code for the C core's tests: temporary directories, result-code checks,
// a Swift model of cs_value, database and transaction wrappers, and a seeded RNG.

import CStore
@_exported import CStoreCall
import Foundation
import Testing
@_exported import TestSupport

/// CS_MAX_BLOB (a macro Swift does not import): 16 MiB.
let csMaxBlob = 16 * 1024 * 1024

// MARK: - Result codes

/// The constant name of a result code ("CS_CORRUPT").
func codeName(_ rc: Int32) -> String { CStoreError.codeName(rc) }

/// The message of the last failure on this thread.
func lastMessage() -> String { CStoreError.lastMessage }

/// Records an issue unless `rc` is CS_OK. Returns whether it was.
@discardableResult
func check(_ rc: Int32, _ what: String = "call", sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    if rc == Int32(CS_OK) { return true }
    Issue.record("\(what) returned \(codeName(rc)) (\(rc)): \(lastMessage())", sourceLocation: sourceLocation)
    return false
}

/// Throws unless `rc` is CS_OK: for steps the rest of a test depends on.
func must(_ rc: Int32, _ what: String = "call") throws {
    try CStoreError.check(rc, what)
}

/// Expects `rc` to be exactly `expected`.
func expectCode(_ rc: Int32, _ expected: Int, _ what: String = "call",
                sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(rc == Int32(expected),
            "\(what): expected \(codeName(Int32(expected))), got \(codeName(rc)) (\(rc)): \(lastMessage())",
            sourceLocation: sourceLocation)
}

// MARK: - Temporary directories

func fileSize(_ path: String) -> Int {
    let attrs = try? FileManager.default.attributesOfItem(atPath: path)
    return (attrs?[.size] as? NSNumber)?.intValue ?? -1
}

// MARK: - Database and transactions

/// Opens a database and returns the result code and handle.
func openRaw(_ path: String, flags: Int, durability: cs_durability = CS_DURABILITY_NOSYNC,
             maxVersions: UInt32 = 0) -> (Int32, OpaquePointer?) {
    var opts = cs_options()
    opts.flags = UInt32(flags)
    opts.durability = durability
    opts.max_active_versions = maxVersions
    var handle: OpaquePointer?
    let rc = cs_db_open(path, &opts, &handle)
    return (rc, handle)
}

/// An open database handle with transaction wrappers.
final class DB {
    let path: String
    let flags: Int
    let durability: cs_durability
    private(set) var handle: OpaquePointer?

    init(_ path: String, flags: Int = CS_OPEN_CREATE, durability: cs_durability = CS_DURABILITY_NOSYNC) throws {
        self.path = path
        self.flags = flags
        self.durability = durability
        try open()
    }

    private func open() throws {
        let (rc, h) = openRaw(path, flags: flags, durability: durability)
        try must(rc, "cs_db_open(\(URL(fileURLWithPath: path).lastPathComponent))")
        handle = h
    }

    var h: OpaquePointer { handle! }

    func close(sourceLocation: SourceLocation = #_sourceLocation) {
        if let h = handle {
            check(cs_db_close(h), "cs_db_close", sourceLocation: sourceLocation)
            handle = nil
        }
    }

    /// Closes and opens the file again (without CS_OPEN_CREATE, so the file must exist).
    func reopen() throws {
        close()
        let (rc, h) = openRaw(path, flags: flags & ~CS_OPEN_CREATE, durability: durability)
        try must(rc, "cs_db_open (reopen)")
        handle = h
    }

    deinit {
        if let h = handle { _ = cs_db_close(h) }
    }

    func begin(_ mode: Int) throws -> OpaquePointer {
        var t: OpaquePointer?
        try must(cs_txn_begin(h, Int32(mode), &t), mode == CS_TXN_WRITE ? "cs_txn_begin(WRITE)" : "cs_txn_begin(READ)")
        return t!
    }

    /// Runs `body` in a write transaction and commits it (rolls back if `body` throws).
    @discardableResult
    func write<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        let txn = try begin(CS_TXN_WRITE)
        do {
            let r = try body(txn)
            try must(cs_txn_commit(txn), "cs_txn_commit")
            check(cs_txn_end(txn), "cs_txn_end")
            return r
        } catch {
            _ = cs_txn_end(txn)
            throw error
        }
    }

    /// Runs `body` in a read transaction.
    @discardableResult
    func read<R>(_ body: (OpaquePointer) throws -> R) throws -> R {
        let txn = try begin(CS_TXN_READ)
        defer { check(cs_txn_end(txn), "cs_txn_end") }
        return try body(txn)
    }

    func verify(_ phase: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        check(cs_db_verify(h), "cs_db_verify \(phase)", sourceLocation: sourceLocation)
    }

    func stats() throws -> cs_db_stats {
        var s = cs_db_stats()
        try must(cs_db_stats_get(h, &s), "cs_db_stats_get")
        return s
    }
}

// MARK: - Raw file bytes

/// The little-endian 64-bit number at byte `at` of a file's bytes.
func rawLE64(_ bytes: [UInt8], _ at: Int) -> Int {
    (0..<8).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) }
}

/// The offset of table `table`'s node in a database file's bytes, following the current version
/// (docs/FORMAT.md §2-§4 and §6): the header slot the selector (byte 12) names gives the top ref,
/// the top's slot 1 the table list, and the list's entry `table` the table node. Each node's
/// refs start after its 8-byte header.
func rawTableNode(_ bytes: [UInt8], _ table: UInt32) -> Int {
    let top = rawLE64(bytes, 16 + 64 * Int(bytes[12]))
    let tables = rawLE64(bytes, top + 8 + 8 * 1)
    return rawLE64(bytes, tables + 8 + 8 * Int(table))
}

// MARK: - Schema and objects

func addTable(_ txn: OpaquePointer, _ name: String, flags: Int = 0) throws -> UInt32 {
    var t: UInt32 = 0
    try must(cs_table_add(txn, name, UInt32(flags), &t), "cs_table_add(\(name))")
    return t
}

func addColumn(_ txn: OpaquePointer, _ table: UInt32, _ name: String, _ type: cs_type,
               coll: cs_coll_kind = CS_COLL_NONE, flags: Int = 0, target: UInt32 = CS_NONE) throws -> UInt32 {
    var c: UInt32 = 0
    try must(cs_column_add(txn, table, name, type, coll, UInt32(flags), target, &c), "cs_column_add(\(name))")
    return c
}

func findTable(_ txn: OpaquePointer, _ name: String) throws -> UInt32 {
    var t: UInt32 = 0
    try must(cs_table_find(txn, name, &t), "cs_table_find(\(name))")
    return t
}

func findColumn(_ txn: OpaquePointer, _ table: UInt32, _ name: String) throws -> UInt32 {
    var c: UInt32 = 0
    try must(cs_column_find(txn, table, name, &c), "cs_column_find(\(name))")
    return c
}

func createObj(_ txn: OpaquePointer, _ table: UInt32) throws -> cs_obj {
    var o = cs_obj()
    try must(cs_obj_create(txn, table, &o), "cs_obj_create")
    return o
}

func openObj(_ txn: OpaquePointer, _ table: UInt32, _ key: Int64) throws -> cs_obj {
    var o = cs_obj()
    try must(cs_obj_open(txn, table, key, &o), "cs_obj_open(\(key))")
    return o
}

func tableCount(_ txn: OpaquePointer, _ table: UInt32) throws -> UInt64 {
    var n: UInt64 = 0
    try must(cs_table_count(txn, table, &n), "cs_table_count")
    return n
}

/// Every object key of a table, in iteration order.
func allKeys(_ txn: OpaquePointer, _ table: UInt32) throws -> [Int64] {
    var it = cs_iter()
    try must(cs_iter_init(&it, txn, table), "cs_iter_init")
    var keys: [Int64] = []
    var o = cs_obj()
    while true {
        let rc = cs_iter_next(&it, &o)
        if rc == Int32(CS_NOTFOUND) { break }
        try must(rc, "cs_iter_next")
        keys.append(o.key)
    }
    return keys
}

func getInt(_ obj: inout cs_obj, _ col: UInt32) throws -> Int64 {
    var v: Int64 = 0
    try must(cs_obj_get_int(&obj, col, &v), "cs_obj_get_int")
    return v
}

// MARK: - Values

/// A Swift model of cs_value. Float and Double compare by bit pattern (so -0.0 != 0.0),
/// except that any NaN equals any NaN.
enum Val: Equatable, CustomStringConvertible {
    case null
    case int(Int64)
    case bool(Bool)
    case float(Float)
    case double(Double)
    case string([UInt8])
    case binary([UInt8])
    case timestamp(Int64, Int32)
    case objectId([UInt8])
    case uuid([UInt8])
    case decimal(UInt64, UInt64) // low, high
    case link(UInt32, Int64)
    case list
    case dict

    static func str(_ s: String) -> Val { .string(Array(s.utf8)) }

    static func == (a: Val, b: Val) -> Bool {
        switch (a, b) {
        case (.null, .null), (.list, .list), (.dict, .dict): return true
        case let (.int(x), .int(y)): return x == y
        case let (.bool(x), .bool(y)): return x == y
        case let (.float(x), .float(y)): return (x.isNaN && y.isNaN) || x.bitPattern == y.bitPattern
        case let (.double(x), .double(y)): return (x.isNaN && y.isNaN) || x.bitPattern == y.bitPattern
        case let (.string(x), .string(y)): return x == y
        case let (.binary(x), .binary(y)): return x == y
        case let (.timestamp(s1, n1), .timestamp(s2, n2)): return s1 == s2 && n1 == n2
        case let (.objectId(x), .objectId(y)): return x == y
        case let (.uuid(x), .uuid(y)): return x == y
        case let (.decimal(l1, h1), .decimal(l2, h2)): return l1 == l2 && h1 == h2
        case let (.link(t1, k1), .link(t2, k2)): return t1 == t2 && k1 == k2
        default: return false
        }
    }

    var description: String {
        func short(_ b: [UInt8]) -> String {
            b.count <= 40 ? "\(b)" : "\(b.count) bytes [\(b.prefix(8).map { String($0) }.joined(separator: ","))...]"
        }
        switch self {
        case .null: return "null"
        case .int(let i): return "int(\(i))"
        case .bool(let b): return "bool(\(b))"
        case .float(let f): return "float(\(f) 0x\(String(f.bitPattern, radix: 16)))"
        case .double(let d): return "double(\(d) 0x\(String(d.bitPattern, radix: 16)))"
        case .string(let b): return b.count <= 80 ? "string(\(String(decoding: b, as: UTF8.self).debugDescription))" : "string(\(short(b)))"
        case .binary(let b): return "binary(\(short(b)))"
        case .timestamp(let s, let n): return "timestamp(\(s), \(n))"
        case .objectId(let b): return "objectId(\(b))"
        case .uuid(let b): return "uuid(\(b))"
        case .decimal(let lo, let hi): return "decimal(lo 0x\(String(lo, radix: 16)), hi 0x\(String(hi, radix: 16)))"
        case .link(let t, let k): return "link(\(t), \(k))"
        case .list: return "list"
        case .dict: return "dict"
        }
    }

    var type: cs_type {
        switch self {
        case .null: return CS_TYPE_NULL
        case .int: return CS_TYPE_INT
        case .bool: return CS_TYPE_BOOL
        case .float: return CS_TYPE_FLOAT
        case .double: return CS_TYPE_DOUBLE
        case .string: return CS_TYPE_STRING
        case .binary: return CS_TYPE_BINARY
        case .timestamp: return CS_TYPE_TIMESTAMP
        case .objectId: return CS_TYPE_OBJECTID
        case .uuid: return CS_TYPE_UUID
        case .decimal: return CS_TYPE_DECIMAL
        case .link: return CS_TYPE_LINK
        case .list: return CS_TYPE_LIST
        case .dict: return CS_TYPE_DICT
        }
    }
}

/// A byte that stands in for the data of empty strings and binaries (never NULL).
nonisolated(unsafe) private let emptyBytes: UnsafeMutablePointer<UInt8> = {
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    p.pointee = 0
    return p
}()

/// Calls `body` with a cs_value holding `v` (bytes stay valid during the call).
func withValue<R>(_ v: Val, _ body: (UnsafePointer<cs_value>) throws -> R) rethrows -> R {
    var x = cs_value()
    x.type = v.type
    switch v {
    case .null, .list, .dict:
        x.v.i = 0
    case .int(let i): x.v.i = i
    case .bool(let b): x.v.i = 0; x.v.b = b
    case .float(let f): x.v.i = 0; x.v.f = f
    case .double(let d): x.v.d = d
    case .string(let bytes), .binary(let bytes):
        return try bytes.withUnsafeBufferPointer { buf in
            x.v.bytes.ptr = UnsafeRawPointer(buf.count == 0 ? UnsafePointer(emptyBytes) : buf.baseAddress!)
            x.v.bytes.len = buf.count
            return try withUnsafePointer(to: &x) { try body($0) }
        }
    case .timestamp(let s, let n): x.v.ts.sec = s; x.v.ts.nsec = n
    case .objectId(let bytes):
        precondition(bytes.count == 12)
        withUnsafeMutableBytes(of: &x.v.oid) { dst in for i in 0..<12 { dst[i] = bytes[i] } }
    case .uuid(let bytes):
        precondition(bytes.count == 16)
        withUnsafeMutableBytes(of: &x.v.uuid) { dst in for i in 0..<16 { dst[i] = bytes[i] } }
    case .decimal(let lo, let hi): x.v.dec.w = (lo, hi)
    case .link(let t, let k): x.v.link.table = t; x.v.link.key = k
    }
    return try withUnsafePointer(to: &x) { try body($0) }
}

/// Copies a cs_value into the Swift model.
func toVal(_ x: cs_value) -> Val {
    switch x.type {
    case CS_TYPE_NULL: return .null
    case CS_TYPE_INT: return .int(x.v.i)
    case CS_TYPE_BOOL: return .bool(x.v.b)
    case CS_TYPE_FLOAT: return .float(x.v.f)
    case CS_TYPE_DOUBLE: return .double(x.v.d)
    case CS_TYPE_STRING, CS_TYPE_BINARY:
        let bytes: [UInt8]
        if x.v.bytes.len == 0 || x.v.bytes.ptr == nil {
            bytes = []
        } else {
            bytes = Array(UnsafeRawBufferPointer(start: x.v.bytes.ptr, count: x.v.bytes.len))
        }
        return x.type == CS_TYPE_STRING ? .string(bytes) : .binary(bytes)
    case CS_TYPE_TIMESTAMP: return .timestamp(x.v.ts.sec, x.v.ts.nsec)
    case CS_TYPE_OBJECTID:
        var v = x
        return .objectId(withUnsafeBytes(of: &v.v.oid) { Array($0) })
    case CS_TYPE_UUID:
        var v = x
        return .uuid(withUnsafeBytes(of: &v.v.uuid) { Array($0) })
    case CS_TYPE_DECIMAL: return .decimal(x.v.dec.w.0, x.v.dec.w.1)
    case CS_TYPE_LINK: return .link(x.v.link.table, x.v.link.key)
    case CS_TYPE_LIST: return .list
    case CS_TYPE_DICT: return .dict
    default:
        Issue.record("unexpected value type \(x.type.rawValue)")
        return .null
    }
}

/// Reads a column into the model; records an issue on failure.
func getVal(_ obj: inout cs_obj, _ col: UInt32, sourceLocation: SourceLocation = #_sourceLocation) -> Val? {
    var x = cs_value()
    guard check(cs_obj_get(&obj, col, &x), "cs_obj_get(col \(col))", sourceLocation: sourceLocation) else { return nil }
    return toVal(x)
}

func setVal(_ obj: inout cs_obj, _ col: UInt32, _ v: Val) -> Int32 {
    withValue(v) { cs_obj_set(&obj, col, $0) }
}

func compareVals(_ a: Val, _ b: Val) -> Int32 {
    withValue(a) { pa in withValue(b) { pb in cs_value_compare(pa, pb) } }
}

// MARK: - Collections

func openColl(_ obj: inout cs_obj, _ col: UInt32) throws -> cs_coll {
    var c = cs_coll()
    try must(cs_coll_open(&obj, col, &c), "cs_coll_open(col \(col))")
    return c
}

func collSize(_ c: inout cs_coll) throws -> Int {
    var n = 0
    try must(cs_coll_size(&c, &n), "cs_coll_size")
    return n
}

func listGet(_ c: inout cs_coll, _ i: Int, sourceLocation: SourceLocation = #_sourceLocation) -> Val? {
    var x = cs_value()
    guard check(cs_list_get(&c, i, &x), "cs_list_get(\(i))", sourceLocation: sourceLocation) else { return nil }
    return toVal(x)
}

/// Every element of a list or set, by position.
func listAll(_ c: inout cs_coll) throws -> [Val] {
    let n = try collSize(&c)
    var out: [Val] = []
    out.reserveCapacity(n)
    for i in 0..<n {
        var x = cs_value()
        try must(cs_list_get(&c, i, &x), "cs_list_get(\(i))")
        out.append(toVal(x))
    }
    return out
}

func listAppend(_ c: inout cs_coll, _ v: Val) -> Int32 { withValue(v) { cs_list_append(&c, $0) } }
func listInsert(_ c: inout cs_coll, _ i: Int, _ v: Val) -> Int32 { withValue(v) { cs_list_insert(&c, i, $0) } }
func listSet(_ c: inout cs_coll, _ i: Int, _ v: Val) -> Int32 { withValue(v) { cs_list_set(&c, i, $0) } }

func setInsert(_ c: inout cs_coll, _ v: Val) -> (Int32, Bool) {
    var inserted = false
    let rc = withValue(v) { cs_set_insert(&c, $0, &inserted) }
    return (rc, inserted)
}

func setErase(_ c: inout cs_coll, _ v: Val) -> (Int32, Bool) {
    var erased = false
    let rc = withValue(v) { cs_set_erase(&c, $0, &erased) }
    return (rc, erased)
}

func setFind(_ c: inout cs_coll, _ v: Val) -> (Int32, Int) {
    var idx = 0
    let rc = withValue(v) { cs_set_find(&c, $0, &idx) }
    return (rc, idx)
}

func withKey<R>(_ key: [UInt8], _ body: (UnsafePointer<CChar>, Int) throws -> R) rethrows -> R {
    try key.withUnsafeBufferPointer { buf in
        let base = buf.count == 0 ? UnsafePointer(emptyBytes) : buf.baseAddress!
        return try base.withMemoryRebound(to: CChar.self, capacity: max(buf.count, 1)) { try body($0, buf.count) }
    }
}

func mapSet(_ c: inout cs_coll, _ key: [UInt8], _ v: Val) -> Int32 {
    withKey(key) { k, n in withValue(v) { cs_map_set(&c, k, n, $0) } }
}

func mapGet(_ c: inout cs_coll, _ key: [UInt8]) -> (Int32, Val?) {
    var x = cs_value()
    let rc = withKey(key) { k, n in cs_map_get(&c, k, n, &x) }
    return (rc, rc == Int32(CS_OK) ? toVal(x) : nil)
}

func mapErase(_ c: inout cs_coll, _ key: [UInt8]) -> (Int32, Bool) {
    var erased = false
    let rc = withKey(key) { k, n in cs_map_erase(&c, k, n, &erased) }
    return (rc, erased)
}

func mapFind(_ c: inout cs_coll, _ key: [UInt8]) -> (Int32, Int) {
    var idx = 0
    let rc = withKey(key) { k, n in cs_map_find(&c, k, n, &idx) }
    return (rc, idx)
}

/// Every (key, value) entry of a map, by position.
func mapAll(_ c: inout cs_coll) throws -> [([UInt8], Val)] {
    let n = try collSize(&c)
    var out: [([UInt8], Val)] = []
    for i in 0..<n {
        var k = cs_value()
        var v = cs_value()
        try must(cs_map_get_at(&c, i, &k, &v), "cs_map_get_at(\(i))")
        guard case .string(let kb) = toVal(k) else {
            Issue.record("map key at \(i) is not a string: \(toVal(k))")
            continue
        }
        out.append((kb, toVal(v)))
    }
    return out
}

// MARK: - Seeded random numbers

func randomBytes(_ n: Int, _ rng: inout SeededRNG) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: n)
    var i = 0
    while i < n {
        var w = rng.next()
        for _ in 0..<8 where i < n {
            out[i] = UInt8(truncatingIfNeeded: w)
            w >>= 8
            i += 1
        }
    }
    return out
}

/// Random lowercase letters: valid UTF-8 that LZ4 cannot shrink.
func randomLetters(_ n: Int, _ rng: inout SeededRNG) -> [UInt8] {
    (0..<n).map { _ in UInt8(97 + rng.next() % 26) }
}

/// A deterministic byte pattern of length `n` (cheap for large values).
func patternBytes(_ n: Int, seed: UInt8) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: n)
    for i in 0..<n { out[i] = UInt8(truncatingIfNeeded: i &* 31 &+ Int(seed) &+ (i >> 9)) }
    return out
}

/// A random value of a (non-Mixed) element type. Floats and doubles are finite and never -0.0.
func randomVal(_ type: cs_type, _ rng: inout SeededRNG, linkTarget: (UInt32, [Int64])? = nil) -> Val {
    switch type {
    case CS_TYPE_INT:
        switch rng.next() % 4 {
        case 0: return .int(Int64(bitPattern: rng.next()))
        case 1: return .int(Int64(rng.next() % 200) - 100)
        default: return .int(Int64(rng.next() % 100_000))
        }
    case CS_TYPE_BOOL: return .bool(rng.next() & 1 == 1)
    case CS_TYPE_FLOAT: return .float(Float(Int64(rng.next() % 2_000_001) - 1_000_000) / 8)
    case CS_TYPE_DOUBLE: return .double(Double(Int64(rng.next() % 2_000_000_001) - 1_000_000_000) / 1024)
    case CS_TYPE_STRING:
        let words = ["", "a", "ab", "hello", "Grüße", "日本語", "emoji 🙂", "zz", "x\u{0}y"]
        if rng.next() % 3 == 0 { return .str(words[Int(rng.next() % UInt64(words.count))]) }
        let len = Int(rng.next() % 40)
        return .string((0..<len).map { _ in UInt8(97 + rng.next() % 26) })
    case CS_TYPE_BINARY:
        return .binary(randomBytes(Int(rng.next() % 48), &rng))
    case CS_TYPE_TIMESTAMP:
        let sec = Int64(rng.next() % 4_000_000_000) - 2_000_000_000
        var nsec = Int32(rng.next() % 1_000_000_000)
        if sec < 0 { nsec = -nsec }
        return .timestamp(sec, nsec)
    case CS_TYPE_OBJECTID: return .objectId(randomBytes(12, &rng))
    case CS_TYPE_UUID: return .uuid(randomBytes(16, &rng))
    case CS_TYPE_DECIMAL:
        // Finite BID decimals: coefficient below 2^53, exponent bias 6176 +- 20, random sign.
        let coeff = rng.next() % (1 << 53)
        let exp = UInt64(6176 - 20 + Int(rng.next() % 41))
        let sign: UInt64 = rng.next() & 1 == 1 ? 1 << 63 : 0
        return .decimal(coeff, sign | (exp << 49))
    case CS_TYPE_LINK:
        let (t, keys) = linkTarget!
        return .link(t, keys[Int(rng.next() % UInt64(keys.count))])
    default:
        fatalError("randomVal: unsupported type \(type.rawValue)")
    }
}

/// The element types a Mixed may hold (besides null and nested collections).
let scalarTypes: [cs_type] = [
    CS_TYPE_INT, CS_TYPE_BOOL, CS_TYPE_FLOAT, CS_TYPE_DOUBLE, CS_TYPE_STRING, CS_TYPE_BINARY,
    CS_TYPE_TIMESTAMP, CS_TYPE_OBJECTID, CS_TYPE_UUID, CS_TYPE_DECIMAL,
]

func typeName(_ t: cs_type) -> String {
    switch t {
    case CS_TYPE_NULL: return "null"
    case CS_TYPE_INT: return "int"
    case CS_TYPE_BOOL: return "bool"
    case CS_TYPE_FLOAT: return "float"
    case CS_TYPE_DOUBLE: return "double"
    case CS_TYPE_STRING: return "string"
    case CS_TYPE_BINARY: return "binary"
    case CS_TYPE_TIMESTAMP: return "timestamp"
    case CS_TYPE_OBJECTID: return "objectId"
    case CS_TYPE_UUID: return "uuid"
    case CS_TYPE_DECIMAL: return "decimal"
    case CS_TYPE_LINK: return "link"
    case CS_TYPE_MIXED: return "mixed"
    default: return "type\(t.rawValue)"
    }
}

/// A random Mixed value: null, any scalar, or a link when a target is given.
func randomMixed(_ rng: inout SeededRNG, linkTarget: (UInt32, [Int64])?) -> Val {
    let r = Int(rng.next() % UInt64(scalarTypes.count + 2))
    if r == scalarTypes.count { return .null }
    if r == scalarTypes.count + 1 {
        if let lt = linkTarget { return randomVal(CS_TYPE_LINK, &rng, linkTarget: lt) }
        return .null
    }
    return randomVal(scalarTypes[r], &rng)
}

/// A lock-protected box for handles and flags shared with threads in tests.
final class Shared<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
    func mutate(_ body: (inout T) -> Void) {
        lock.lock()
        body(&stored)
        lock.unlock()
    }
}
