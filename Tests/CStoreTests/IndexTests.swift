// Ordered indexes and primary keys (docs/ARCHITECTURE.md, Indexes; docs/FORMAT.md §6.5): cs_index_find, cs_index_find_all
// and cs_index_range checked against a Swift model under long seeded random workloads for every
// indexable type; building and dropping indexes on populated columns; primary-key uniqueness,
// lookups, rollback and persistence; and removed columns whose slots are reused.

import CStore
import Foundation
import Testing

// MARK: - An independent value order (docs/ARCHITECTURE.md, Values and their order)

/// Kinds of value in the order cs_value_compare puts them: null, bool, numeric, string, (binary), date,
/// ObjectId, UUID.
private func kindRank(_ v: Val) -> Int {
    switch v {
    case .null: return 0
    case .bool: return 1
    case .int, .float, .double, .decimal: return 2
    case .string: return 3
    case .binary: return 4
    case .timestamp: return 5
    case .objectId: return 6
    case .uuid: return 7
    case .link: return 8
    case .list, .dict: return 9
    }
}

/// Unsigned byte-wise comparison, a proper prefix first.
private func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
    let n = min(a.count, b.count)
    var i = 0
    while i < n {
        if a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
        i += 1
    }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

private func cmp<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a > b ? 1 : 0) }

/// The order the index must present: null first; bools false < true; ints numerically;
/// strings by UTF-8 bytes; timestamps by (seconds, nanoseconds); ids by bytes; values of
/// different kinds by kind.
private func order(_ a: Val, _ b: Val) -> Int {
    switch (a, b) {
    case (.null, .null): return 0
    case let (.bool(x), .bool(y)): return x == y ? 0 : (x ? 1 : -1)
    case let (.int(x), .int(y)): return cmp(x, y)
    case let (.string(x), .string(y)): return compareBytes(x, y)
    case let (.timestamp(s1, n1), .timestamp(s2, n2)): return s1 != s2 ? cmp(s1, s2) : cmp(n1, n2)
    case let (.objectId(x), .objectId(y)): return compareBytes(x, y)
    case let (.uuid(x), .uuid(y)): return compareBytes(x, y)
    default: return cmp(kindRank(a), kindRank(b))
    }
}

// MARK: - Calling the index API

private func withOptValue<R>(_ v: Val?, _ body: (UnsafePointer<cs_value>?) -> R) -> R {
    if let v { return withValue(v) { body($0) } }
    return body(nil)
}

private func copyKeys(_ keys: UnsafeMutablePointer<Int64>?, _ n: Int) -> [Int64] {
    guard let keys, n > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: keys, count: n))
}

private func indexFind(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32, _ v: Val) -> (Int32, Int64) {
    var key: Int64 = -1
    let rc = withValue(v) { cs_index_find(txn, t, c, $0, &key) }
    return (rc, key)
}

private func indexFindAll(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32, _ v: Val) -> (Int32, [Int64]) {
    var keys: UnsafeMutablePointer<Int64>?
    var n = 0
    let rc = withValue(v) { cs_index_find_all(txn, t, c, $0, &keys, &n) }
    defer { cs_keys_free(keys) }
    return (rc, rc == Int32(CS_OK) ? copyKeys(keys, n) : [])
}

private func indexRange(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32, _ lo: Val?, _ hi: Val?) -> (Int32, [Int64]) {
    var keys: UnsafeMutablePointer<Int64>?
    var n = 0
    let rc = withOptValue(lo) { pl in withOptValue(hi) { ph in cs_index_range(txn, t, c, pl, ph, &keys, &n) } }
    defer { cs_keys_free(keys) }
    return (rc, rc == Int32(CS_OK) ? copyKeys(keys, n) : [])
}

private func findPrimary(_ txn: OpaquePointer, _ t: UInt32, _ v: Val) -> (Int32, Int64) {
    var key: Int64 = -1
    let rc = withValue(v) { cs_table_find_primary(txn, t, $0, &key) }
    return (rc, key)
}

private func createPrimary(_ txn: OpaquePointer, _ t: UInt32, _ v: Val) -> (Int32, cs_obj) {
    var o = cs_obj()
    let rc = withValue(v) { cs_obj_create_primary(txn, t, $0, &o) }
    return (rc, o)
}

private func tableInfo(_ txn: OpaquePointer, _ t: UInt32) throws -> cs_table_info {
    var info = cs_table_info()
    try must(cs_table_info_get(txn, t, &info), "cs_table_info_get")
    return info
}

private func columnFlags(_ txn: OpaquePointer, _ t: UInt32, _ c: UInt32) throws -> UInt32 {
    var info = cs_column_info()
    try must(cs_column_info_get(txn, t, c, &info), "cs_column_info_get")
    return info.flags
}

private func describe(_ v: Val?) -> String { v.map { $0.description } ?? "open" }

/// Records an issue unless the key lists are equal; the message names the first difference.
@discardableResult
private func expectKeys(_ got: [Int64], _ want: [Int64], _ what: @autoclosure () -> String,
                        sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
    if got == want { return true }
    var i = 0
    while i < got.count && i < want.count && got[i] == want[i] { i += 1 }
    let g = i < got.count ? "\(got[i])" : "end"
    let w = i < want.count ? "\(want[i])" : "end"
    var message = "\(what()): got \(got.count) keys, want \(want.count); first difference at \(i): got \(g), want \(w)"
    if want.count <= 8 && got.count <= 8 { message += " (got \(got), want \(want))" }
    Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    return false
}

// MARK: - Value generators

private let alphabetIds: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]

/// Ids that share prefixes and repeat: three varying leading bytes, the rest all 00 or all FF.
private func structuredId(_ n: Int, _ rng: inout SeededRNG) -> [UInt8] {
    var b = [UInt8](repeating: rng.next() % 3 == 0 ? 0xFF : 0x00, count: n)
    for i in 0..<3 { b[i] = alphabetIds[Int(rng.next() % UInt64(alphabetIds.count))] }
    return b
}

private func specialIds(_ n: Int) -> [[UInt8]] {
    var lastOne = [UInt8](repeating: 0, count: n)
    lastOne[n - 1] = 1
    var firstHigh = [UInt8](repeating: 0, count: n)
    firstHigh[0] = 0x80
    var almostMax = [UInt8](repeating: 0xFF, count: n)
    almostMax[n - 1] = 0xFE
    return [[UInt8](repeating: 0, count: n), [UInt8](repeating: 0xFF, count: n), lastOne, firstHigh, almostMax]
}

/// Strings that are prefixes of one another, hold NUL bytes, or are multi-byte UTF-8.
private let specialStrings: [String] = [
    "", "a", "a\u{0}", "ab", "a\u{0}b", "a\u{0}\u{0}", "ab\u{0}", "aa", "b", "\u{0}", "\u{0}\u{0}",
    "\u{0}a", "é", "e\u{301}", "日", "日本", "\u{7F}", "\u{80}", "🙂", "\u{10FFFF}", "A", "z",
]
private let stringPieces: [String] = ["a", "b", "\u{0}", "é", "日", "🙂"]

/// A timestamp whose nanoseconds carry the sign of its seconds.
private func signedTimestamp(_ sec: Int64, _ ns: Int32) -> Val {
    .timestamp(sec, sec < 0 ? -ns : ns)
}

enum IndexedKind: String, CaseIterable, Sendable {
    case int, bool, string, timestamp, objectId, uuid

    var type: cs_type {
        switch self {
        case .int: return CS_TYPE_INT
        case .bool: return CS_TYPE_BOOL
        case .string: return CS_TYPE_STRING
        case .timestamp: return CS_TYPE_TIMESTAMP
        case .objectId: return CS_TYPE_OBJECTID
        case .uuid: return CS_TYPE_UUID
        }
    }

    /// The value a new object of a non-nullable column reads.
    var zero: Val {
        switch self {
        case .int: return .int(0)
        case .bool: return .bool(false)
        case .string: return .string([])
        case .timestamp: return .timestamp(0, 0)
        case .objectId: return .objectId([UInt8](repeating: 0, count: 12))
        case .uuid: return .uuid([UInt8](repeating: 0, count: 16))
        }
    }

    /// A value given to about a tenth of the objects, so its entries span several leaves.
    var hot: Val {
        switch self {
        case .int: return .int(7)
        case .bool: return .bool(true)
        case .string: return .str("a\u{0}")
        case .timestamp: return .timestamp(-1, -1)
        case .objectId: return .objectId([0x80] + [UInt8](repeating: 0, count: 11))
        case .uuid: return .uuid([0x80] + [UInt8](repeating: 0, count: 15))
        }
    }

    func random(_ rng: inout SeededRNG) -> Val {
        let r = rng.next() % 20
        if r < 2 { return hot }
        switch self {
        case .int:
            let specials: [Int64] = [.min, .min + 1, -1, 0, 1, .max, .max - 1, 255, 256, -256, 1 << 32, -(1 << 32)]
            if r < 5 { return .int(specials[Int(rng.next() % UInt64(specials.count))]) }
            if r < 12 { return .int(Int64(rng.next() % 201) - 100) }
            if r < 18 { return .int(Int64(rng.next() % 2_000_001) - 1_000_000) }
            return .int(Int64(bitPattern: rng.next()))
        case .bool:
            return .bool(rng.next() & 1 == 1)
        case .string:
            if r < 10 { return .str(specialStrings[Int(rng.next() % UInt64(specialStrings.count))]) }
            let n = Int(rng.next() % 5)
            var s = ""
            for _ in 0..<n { s += stringPieces[Int(rng.next() % UInt64(stringPieces.count))] }
            return .str(s)
        case .timestamp:
            if r < 6 {
                let specials: [Val] = [
                    .timestamp(0, 0), .timestamp(-1, 0), .timestamp(-1, -1), .timestamp(-1, -999_999_999),
                    .timestamp(0, 1), .timestamp(0, 999_999_999), .timestamp(1, 0), .timestamp(-2, -500),
                    .timestamp(.min, 0), .timestamp(.min, -999_999_999), .timestamp(.max, 999_999_999),
                    .timestamp(1_700_000_000, 123), .timestamp(-1_700_000_000, -123),
                ]
                return specials[Int(rng.next() % UInt64(specials.count))]
            }
            if r < 16 {
                let ns: [Int32] = [0, 1, 2, 500_000_000, 999_999_999]
                return signedTimestamp(Int64(rng.next() % 41) - 20, ns[Int(rng.next() % UInt64(ns.count))])
            }
            return signedTimestamp(Int64(bitPattern: rng.next()) >> Int64(rng.next() % 40),
                                   Int32(rng.next() % 1_000_000_000))
        case .objectId, .uuid:
            let n = self == .objectId ? 12 : 16
            let bytes: [UInt8]
            if r < 5 {
                let s = specialIds(n)
                bytes = s[Int(rng.next() % UInt64(s.count))]
            } else if r < 16 {
                bytes = structuredId(n, &rng)
            } else {
                bytes = randomBytes(n, &rng)
            }
            return self == .objectId ? .objectId(bytes) : .uuid(bytes)
        }
    }
}

// MARK: - Primary-key kinds

enum PrimaryKind: String, CaseIterable, Sendable {
    case int, string, objectId, uuid, nullableInt, nullableString

    var type: cs_type {
        switch self {
        case .int, .nullableInt: return CS_TYPE_INT
        case .string, .nullableString: return CS_TYPE_STRING
        case .objectId: return CS_TYPE_OBJECTID
        case .uuid: return CS_TYPE_UUID
        }
    }

    var nullable: Bool { self == .nullableInt || self == .nullableString }

    /// Distinct values for distinct i >= 0 (value 0 is null for the nullable kinds).
    func value(_ i: Int) -> Val {
        if nullable && i == 0 { return .null }
        switch self {
        case .int, .nullableInt:
            if i == 1 { return .int(.min) }
            if i == 2 { return .int(.max) }
            if i == 3 { return .int(0) }
            return .int(Int64(i) * 7919 - 1_000_003)
        case .string, .nullableString:
            let specials = ["", "a", "a\u{0}", "ab", "\u{0}", "日本", "a\u{0}b", "é"]
            if i >= 1 && i <= specials.count { return .str(specials[i - 1]) }
            return .str("k\(i)")
        case .objectId, .uuid:
            let n = self == .objectId ? 12 : 16
            var b = [UInt8](repeating: UInt8(truncatingIfNeeded: i % 7), count: n)
            b[n - 4] = UInt8(truncatingIfNeeded: i >> 24)
            b[n - 3] = UInt8(truncatingIfNeeded: i >> 16)
            b[n - 2] = UInt8(truncatingIfNeeded: i >> 8)
            b[n - 1] = UInt8(truncatingIfNeeded: i)
            return self == .objectId ? .objectId(b) : .uuid(b)
        }
    }

    /// A value of another type, which cannot be this column's primary key.
    var wrongType: Val {
        switch self {
        case .int, .nullableInt: return .str("1")
        case .string, .nullableString: return .int(1)
        case .objectId: return .uuid([UInt8](repeating: 1, count: 16))
        case .uuid: return .objectId([UInt8](repeating: 1, count: 12))
        }
    }
}

// MARK: - Tests

@Suite struct IndexTests {
    /// The order the tests rely on agrees with the library's own comparison on the indexable
    /// types (a guard against a mistake in the model, not a test of the index).
    @Test func modelOrderAgreesWithValueCompare() {
        var rng = SeededRNG(seed: stableSeed("index-order"))
        for kind in IndexedKind.allCases {
            let vals = (0..<60).map { _ in kind.random(&rng) } + [.null]
            for a in vals {
                for b in vals {
                    let lib = compareVals(a, b).signum()
                    #expect(Int(lib) == order(a, b), "\(a) vs \(b)")
                }
            }
        }
    }

    @Test(arguments: IndexedKind.allCases, [false, true])
    func randomWorkloadMatchesModel(kind: IndexedKind, nullable: Bool) throws {
        var rng = SeededRNG(seed: stableSeed("index-workload-\(kind.rawValue)-\(nullable)"))
        let name = "\(kind.rawValue)\(nullable ? "?" : "")"
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var c: UInt32 = 0
            var other: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                other = try addColumn(txn, t, "n", CS_TYPE_INT)
                c = try addColumn(txn, t, "v", kind.type, flags: CS_COL_INDEXED | (nullable ? CS_COL_NULLABLE : 0))
            }
            let zero: Val = nullable ? .null : kind.zero
            var model: [Int64: Val] = [:]
            var live: [Int64] = []
            var pos: [Int64: Int] = [:]

            func gen() -> Val {
                if nullable && rng.next() % 8 == 0 { return .null }
                return kind.random(&rng)
            }
            func resetLive() {
                live = model.keys.sorted()
                pos = [:]
                for (i, k) in live.enumerated() { pos[k] = i }
            }
            func removeLive(_ k: Int64) {
                let i = pos[k]!
                let last = live.removeLast()
                if last != k {
                    live[i] = last
                    pos[last] = i
                }
                pos[k] = nil
            }
            func deleteKey(_ txn: OpaquePointer, _ k: Int64) throws {
                var o = try openObj(txn, t, k)
                try must(cs_obj_delete(&o), "cs_obj_delete(\(k))")
                model[k] = nil
                removeLive(k)
            }

            /// `count` random operations: creates (with a value most of the time), sets
            /// (sometimes of the value already there) and deletes.
            func runOps(_ txn: OpaquePointer, _ count: Int, createPercent: UInt64) throws {
                for _ in 0..<count {
                    let r = rng.next() % 100
                    if live.isEmpty || r < createPercent {
                        var o = try createObj(txn, t)
                        #expect(model[o.key] == nil, "\(name): cs_obj_create returned the live key \(o.key)")
                        model[o.key] = zero
                        pos[o.key] = live.count
                        live.append(o.key)
                        if rng.next() % 4 != 0 {
                            let v = gen()
                            try must(setVal(&o, c, v), "set \(v) on new object \(o.key)")
                            model[o.key] = v
                        }
                    } else if r < createPercent + (100 - createPercent) * 3 / 4 {
                        let k = live[Int(rng.next() % UInt64(live.count))]
                        var o = try openObj(txn, t, k)
                        let v = rng.next() % 10 == 0 ? model[k]! : gen()
                        try must(setVal(&o, c, v), "set \(v) on \(k)")
                        model[k] = v
                        if rng.next() % 4 == 0 { try must(cs_obj_set_int(&o, other, Int64(rng.next() % 1000)), "set n") }
                    } else {
                        try deleteKey(txn, live[Int(rng.next() % UInt64(live.count))])
                    }
                }
            }

            /// The model's (value, key) pairs in index order.
            func sortedEntries() -> [(Val, Int64)] {
                var e = model.map { ($0.value, $0.key) }
                e.sort { a, b in
                    let o = order(a.0, b.0)
                    return o != 0 ? o < 0 : a.1 < b.1
                }
                return e
            }

            /// Compares the table, a scan of its objects and every lookup with the model.
            func checkPhase(_ txn: OpaquePointer, _ phase: String) throws -> Bool {
                let what = "\(name) \(phase)"
                var failures = 0
                // A scan over all objects: same keys, same values as the model.
                let scanned = try allKeys(txn, t)
                if !expectKeys(scanned, model.keys.sorted(), "\(what): object scan") { failures += 1 }
                for k in scanned {
                    var o = try openObj(txn, t, k)
                    let v = getVal(&o, c)
                    if v != model[k] {
                        Issue.record("\(what): object \(k) reads \(describe(v)), model \(describe(model[k]))")
                        failures += 1
                        if failures > 5 { return false }
                    }
                }
                let entries = sortedEntries()
                // The whole index, in value order then key order.
                let (rcAll, all) = indexRange(txn, t, c, nil, nil)
                expectCode(rcAll, CS_OK, "\(what): cs_index_range(open, open)")
                if !expectKeys(all, entries.map { $0.1 }, "\(what): full index range") { failures += 1 }

                // Equality probes: present values, fresh values, null and the default.
                var probes: [Val] = [.null, kind.zero, kind.hot]
                for _ in 0..<6 where !entries.isEmpty {
                    probes.append(entries[Int(rng.next() % UInt64(entries.count))].0)
                }
                for _ in 0..<5 { probes.append(kind.random(&rng)) }
                for p in probes {
                    let want = entries.filter { order($0.0, p) == 0 }.map { $0.1 }
                    let (rc, got) = indexFindAll(txn, t, c, p)
                    expectCode(rc, CS_OK, "\(what): cs_index_find_all(\(p))")
                    if !expectKeys(got, want, "\(what): cs_index_find_all(\(p))") { failures += 1 }
                    let (rc1, k) = indexFind(txn, t, c, p)
                    if let first = want.first {
                        expectCode(rc1, CS_OK, "\(what): cs_index_find(\(p))")
                        if rc1 == Int32(CS_OK) && k != first {
                            Issue.record("\(what): cs_index_find(\(p)) = \(k), want the lowest key \(first)")
                            failures += 1
                        }
                    } else {
                        expectCode(rc1, CS_NOTFOUND, "\(what): cs_index_find(\(p)) of an absent value")
                    }
                    if failures > 5 { return false }
                }

                // Range probes: bounds open, null, present or fresh; lo > hi included.
                func bound() -> Val? {
                    switch rng.next() % 6 {
                    case 0: return nil
                    case 1: return .null
                    case 2, 3: return entries.isEmpty ? kind.hot : entries[Int(rng.next() % UInt64(entries.count))].0
                    default: return kind.random(&rng)
                    }
                }
                var ranges: [(Val?, Val?)] = [(kind.hot, kind.hot), (.null, .null), (nil, .null)]
                for _ in 0..<6 { ranges.append((bound(), bound())) }
                for (lo, hi) in ranges {
                    let want = entries.filter { e in
                        (lo.map { order(e.0, $0) >= 0 } ?? true) && (hi.map { order(e.0, $0) <= 0 } ?? true)
                    }.map { $0.1 }
                    let (rc, got) = indexRange(txn, t, c, lo, hi)
                    let label = "\(what): cs_index_range(\(describe(lo)), \(describe(hi)))"
                    expectCode(rc, CS_OK, label)
                    if !expectKeys(got, want, label) { failures += 1 }
                    if failures > 5 { return false }
                }
                return failures == 0
            }

            func committedPhase(_ phase: String) throws -> Bool {
                let rc = cs_db_verify(db.h)
                expectCode(rc, CS_OK, "\(name) \(phase): cs_db_verify")
                let ok = try db.read { txn in try checkPhase(txn, phase) }
                return ok && rc == Int32(CS_OK)
            }

            // Build: enough objects that the index tree has inner nodes; check the uncommitted
            // state inside the writing transaction, then the committed one.
            do {
                let txn = try db.begin(CS_TXN_WRITE)
                defer { _ = cs_txn_end(txn) }
                try runOps(txn, 3300, createPercent: 100)
                guard try checkPhase(txn, "build (uncommitted)") else { return }
                if !nullable {
                    var o = try openObj(txn, t, live[0])
                    expectCode(setVal(&o, c, .null), CS_TYPE, "\(name): null into a non-nullable indexed column")
                }
                try must(cs_txn_commit(txn), "cs_txn_commit")
            }
            guard try committedPhase("build") else { return }

            // Batches of random operations, each committed or rolled back.
            for batch in 0..<3 {
                let snapshot = model
                let txn = try db.begin(CS_TXN_WRITE)
                defer { _ = cs_txn_end(txn) }
                try runOps(txn, 400, createPercent: 30)
                let rollback = batch == 1 || rng.next() % 4 == 0
                if rollback {
                    guard try checkPhase(txn, "batch \(batch) (before rollback)") else { return }
                    try must(cs_txn_rollback(txn), "cs_txn_rollback")
                    model = snapshot
                    resetLive()
                } else {
                    try must(cs_txn_commit(txn), "cs_txn_commit")
                }
                guard try committedPhase("batch \(batch) (\(rollback ? "rolled back" : "committed"))") else { return }
            }

            // Delete a contiguous run of index entries (about 45 % of them), which empties whole
            // leaves, and some scattered objects.
            try db.write { txn throws in
                let entries = sortedEntries()
                let from = entries.count / 10
                let to = entries.count * 55 / 100
                for e in entries[from..<to] { try deleteKey(txn, e.1) }
                for _ in 0..<100 where !live.isEmpty {
                    try deleteKey(txn, live[Int(rng.next() % UInt64(live.count))])
                }
            }
            guard try committedPhase("mass delete") else { return }

            try db.reopen()
            guard try committedPhase("reopen") else { return }

            // Grow again after the reopen.
            try db.write { txn in try runOps(txn, 1000, createPercent: 60) }
            guard try committedPhase("after reopen") else { return }

            // Down to three objects, then none.
            try db.write { txn throws in
                while live.count > 3 { try deleteKey(txn, live[Int(rng.next() % UInt64(live.count))]) }
            }
            guard try committedPhase("three left") else { return }
            try db.write { txn throws in
                while let k = live.last { try deleteKey(txn, k) }
            }
            guard try committedPhase("empty") else { return }
            try db.read { txn throws in
                expectCode(indexFind(txn, t, c, kind.hot).0, CS_NOTFOUND, "\(name): find in an emptied index")
                let (rc, keys) = indexRange(txn, t, c, nil, nil)
                expectCode(rc, CS_OK, "range of an emptied index")
                #expect(keys.isEmpty, "\(name): an emptied index still holds \(keys.count) entries")
            }
        }
    }

    @Test func rangeBoundsOfOtherTypes() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let i = try addColumn(txn, t, "i", CS_TYPE_INT, flags: CS_COL_INDEXED | CS_COL_NULLABLE)
                let s = try addColumn(txn, t, "s", CS_TYPE_STRING, flags: CS_COL_INDEXED)
                var ints: [Int64: Val] = [:]
                for n in 0..<30 {
                    var o = try createObj(txn, t)
                    let v: Val = n % 5 == 0 ? .null : .int(Int64(n % 11) - 5)
                    try must(setVal(&o, i, v), "set i")
                    try must(setVal(&o, s, .str("s\(n)")), "set s")
                    ints[o.key] = v
                }
                let sorted = ints.map { ($0.value, $0.key) }.sorted { a, b in
                    let o = order(a.0, b.0)
                    return o != 0 ? o < 0 : a.1 < b.1
                }
                func want(_ lo: Val?, _ hi: Val?) -> [Int64] {
                    sorted.filter { e in
                        (lo.map { order(e.0, $0) >= 0 } ?? true) && (hi.map { order(e.0, $0) <= 0 } ?? true)
                    }.map { $0.1 }
                }
                let nonNull = sorted.filter { $0.0 != .null }.map { $0.1 }
                let nulls = sorted.filter { $0.0 == .null }.map { $0.1 }
                let all = sorted.map { $0.1 }
                let cases: [(Val?, Val?, [Int64])] = [
                    (.bool(true), nil, nonNull),      // bools sort before numbers
                    (nil, .bool(false), nulls),
                    (nil, .str(""), all),             // strings sort after numbers
                    (.str(""), nil, []),
                    (.null, .null, nulls),
                    (.int(3), .int(-3), []),          // lo above hi
                    (.int(-2), .int(2), want(.int(-2), .int(2))),
                    (.timestamp(0, 0), nil, []),      // dates sort after numbers
                ]
                for (lo, hi, expected) in cases {
                    let (rc, got) = indexRange(txn, t, i, lo, hi)
                    expectCode(rc, CS_OK, "int range(\(describe(lo)), \(describe(hi)))")
                    expectKeys(got, expected, "int range(\(describe(lo)), \(describe(hi)))")
                }
                // Numbers sort before every string.
                let (rcs, gots) = indexRange(txn, t, s, .int(5), nil)
                expectCode(rcs, CS_OK, "string range(int 5, open)")
                #expect(gots.count == 30, "string range(int 5, open) holds \(gots.count) of 30")
                let (rcs2, gots2) = indexRange(txn, t, s, nil, .int(5))
                expectCode(rcs2, CS_OK, "string range(open, int 5)")
                #expect(gots2.isEmpty, "string range(open, int 5) holds \(gots2.count)")
            }
            db.verify("after range bounds")
        }
    }

    /// The value order compares Int and Double by numeric value, and cs_index_range orders
    /// bounds of another type by it, so a Double bound on an Int index selects by numeric value.
    @Test func rangeWithDoubleBoundsOnAnIntIndex() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let c = try addColumn(txn, t, "i", CS_TYPE_INT, flags: CS_COL_INDEXED)
                var byValue: [Int64: [Int64]] = [:]
                for n in 0..<40 {
                    var o = try createObj(txn, t)
                    let v = Int64(n % 11) - 5
                    try must(cs_obj_set_int(&o, c, v), "set")
                    byValue[v, default: []].append(o.key)
                }
                let cases: [(Val?, Val?, ClosedRange<Int64>)] = [
                    (.double(-2.5), .double(1.5), -2...1),
                    (.double(-2.0), .double(2.0), -2...2),
                    (.double(4.5), nil, 5...5),
                    (nil, .double(-4.25), -5...(-5)),
                ]
                for (lo, hi, values) in cases {
                    let label = "int index range(\(describe(lo)), \(describe(hi)))"
                    let want = values.flatMap { byValue[$0] ?? [] }
                    let (rc, got) = indexRange(txn, t, c, lo, hi)
                    expectCode(rc, CS_OK, label)
                    expectKeys(got, want, label)
                }
            }
        }
    }

    @Test func indexingAPopulatedColumnAndDroppingIt() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var c: UInt32 = 0
            var model: [Int64: Int64] = [:]
            func expectMatches(_ txn: OpaquePointer, _ phase: String) {
                for v in [Int64(0), 5, 36, 37, -1] {
                    let want = model.filter { $0.value == v }.map { $0.key }.sorted()
                    let (rc, got) = indexFindAll(txn, t, c, .int(v))
                    expectCode(rc, CS_OK, "\(phase): find_all(\(v))")
                    expectKeys(got, want, "\(phase): find_all(\(v))")
                    let (rc1, k) = indexFind(txn, t, c, .int(v))
                    if let first = want.first {
                        expectCode(rc1, CS_OK, "\(phase): find(\(v))")
                        #expect(k == first, "\(phase): find(\(v)) = \(k), want \(first)")
                    } else {
                        expectCode(rc1, CS_NOTFOUND, "\(phase): find(\(v))")
                    }
                }
                let (rc, got) = indexRange(txn, t, c, .int(10), .int(20))
                expectCode(rc, CS_OK, "\(phase): range")
                let want = model.filter { (10...20).contains($0.value) }.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map { $0.key }
                expectKeys(got, want, "\(phase): range(10, 20)")
            }
            func expectNoIndex(_ txn: OpaquePointer, _ phase: String) {
                expectCode(indexFind(txn, t, c, .int(5)).0, CS_MISUSE, "\(phase): cs_index_find without an index")
                expectCode(indexFindAll(txn, t, c, .int(5)).0, CS_MISUSE, "\(phase): cs_index_find_all without an index")
                expectCode(indexRange(txn, t, c, nil, nil).0, CS_MISUSE, "\(phase): cs_index_range without an index")
            }
            try db.write { txn throws in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "v", CS_TYPE_INT)
                for n in 0..<2000 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, c, Int64(n % 37)), "set")
                    model[o.key] = Int64(n % 37)
                }
            }
            try db.read { txn in expectNoIndex(txn, "never indexed") }

            // Indexing in a transaction that is rolled back leaves no index.
            do {
                let txn = try db.begin(CS_TXN_WRITE)
                try must(cs_column_set_indexed(txn, t, c, true), "cs_column_set_indexed(true)")
                expectMatches(txn, "indexed, before rollback")
                try must(cs_txn_rollback(txn), "cs_txn_rollback")
                expectNoIndex(txn, "after rollback of the indexing")
                check(cs_txn_end(txn))
            }

            try db.write { txn throws in
                try must(cs_column_set_indexed(txn, t, c, true), "cs_column_set_indexed(true)")
                #expect(try columnFlags(txn, t, c) & UInt32(CS_COL_INDEXED) != 0, "flag INDEXED after indexing")
                expectMatches(txn, "just indexed")
                // Writes after the build keep it right.
                for k in model.keys.sorted() where k % 3 == 0 {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_set_int(&o, c, 5), "set")
                    model[k] = 5
                }
                expectMatches(txn, "after writes")
            }
            db.verify("indexed")
            try db.read { txn in expectMatches(txn, "committed") }

            try db.write { txn throws in
                try must(cs_column_set_indexed(txn, t, c, false), "cs_column_set_indexed(false)")
                #expect(try columnFlags(txn, t, c) & UInt32(CS_COL_INDEXED) == 0, "flag INDEXED after dropping")
                expectNoIndex(txn, "dropped")
                // Writes while unindexed, seen by the next build.
                for k in model.keys.sorted() where k % 5 == 0 {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_set_int(&o, c, 36), "set")
                    model[k] = 36
                }
                for k in model.keys.sorted().prefix(100) {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_delete(&o), "delete")
                    model[k] = nil
                }
            }
            db.verify("dropped")
            try db.reopen()
            try db.read { txn in expectNoIndex(txn, "dropped, reopened") }
            try db.write { txn throws in
                try must(cs_column_set_indexed(txn, t, c, true), "cs_column_set_indexed(true) again")
                expectMatches(txn, "rebuilt")
            }
            db.verify("rebuilt")
            try db.reopen()
            try db.read { txn in expectMatches(txn, "rebuilt, reopened") }
        }
    }

    @Test func nonIndexableColumnsRefuseAnIndex() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                var col: UInt32 = 0
                let refused: [(String, cs_type, cs_coll_kind)] = [
                    ("d", CS_TYPE_DOUBLE, CS_COLL_NONE), ("li", CS_TYPE_INT, CS_COLL_LIST),
                    ("f", CS_TYPE_FLOAT, CS_COLL_NONE), ("bin", CS_TYPE_BINARY, CS_COLL_NONE),
                    ("ss", CS_TYPE_STRING, CS_COLL_SET),
                ]
                for (name, type, coll) in refused {
                    expectCode(cs_column_add(txn, t, name, type, coll, UInt32(CS_COL_INDEXED), CS_NONE, &col), CS_TYPE,
                               "cs_column_add(\(name), INDEXED)")
                    expectCode(cs_column_find(txn, t, name, &col), CS_NOTFOUND, "refused column \(name) exists")
                }
                // The same columns without the flag are fine, and still cannot be indexed.
                let d = try addColumn(txn, t, "d", CS_TYPE_DOUBLE)
                let li = try addColumn(txn, t, "li", CS_TYPE_INT, coll: CS_COLL_LIST)
                _ = try createObj(txn, t)
                expectCode(cs_column_set_indexed(txn, t, d, true), CS_TYPE, "cs_column_set_indexed(Double)")
                expectCode(cs_column_set_indexed(txn, t, li, true), CS_TYPE, "cs_column_set_indexed(List)")
                expectCode(withValue(.double(0)) { p in var k: Int64 = 0; return cs_index_find(txn, t, d, p, &k) },
                           CS_MISUSE, "cs_index_find on a Double column")
            }
            db.verify("after refused indexes")
        }
    }

    @Test(arguments: PrimaryKind.allCases)
    func primaryKeyLifecycle(kind: PrimaryKind) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var pk: UInt32 = 0
            var n: UInt32 = 0
            var keyOf: [Int: Int64] = [:]  // value number -> object key
            let used = 0..<300

            func expectAllFound(_ txn: OpaquePointer, _ phase: String) {
                for (i, key) in keyOf.sorted(by: { $0.key < $1.key }) {
                    let (rc, k) = findPrimary(txn, t, kind.value(i))
                    expectCode(rc, CS_OK, "\(kind) \(phase): find_primary(\(kind.value(i)))")
                    #expect(k == key, "\(kind) \(phase): find_primary(\(kind.value(i))) = \(k), want \(key)")
                }
                for i in 300..<320 where keyOf[i] == nil {
                    expectCode(findPrimary(txn, t, kind.value(i)).0, CS_NOTFOUND, "\(kind) \(phase): absent \(kind.value(i))")
                }
            }

            try db.write { txn throws in
                t = try addTable(txn, "P")
                n = try addColumn(txn, t, "n", CS_TYPE_INT)
                pk = try addColumn(txn, t, "id", kind.type, flags: kind.nullable ? CS_COL_NULLABLE : 0)
                try must(cs_table_set_primary_key(txn, t, pk), "cs_table_set_primary_key")
                #expect(try tableInfo(txn, t).primary == pk)
                #expect(try columnFlags(txn, t, pk) & UInt32(CS_COL_PRIMARY) != 0, "PRIMARY flag")
                for i in used {
                    let v = kind.value(i)
                    var (rc, o) = createPrimary(txn, t, v)
                    try must(rc, "cs_obj_create_primary(\(v))")
                    #expect(getVal(&o, pk) == v, "primary key read back")
                    try must(cs_obj_set_int(&o, n, Int64(i)), "set n")
                    keyOf[i] = o.key
                }
                expectAllFound(txn, "created")
                let keysBefore = try allKeys(txn, t)

                // Duplicates are refused and change nothing.
                for i in [0, 1, 2, 3, 4, 150, 299] {
                    let (rc, _) = createPrimary(txn, t, kind.value(i))
                    expectCode(rc, CS_CONSTRAINT, "\(kind): duplicate \(kind.value(i))")
                }
                var o = cs_obj()
                expectCode(cs_obj_create(txn, t, &o), CS_MISUSE, "\(kind): cs_obj_create on a primary-key table")
                expectCode(createPrimary(txn, t, kind.wrongType).0, CS_TYPE, "\(kind): primary key of another type")
                if !kind.nullable {
                    expectCode(createPrimary(txn, t, .null).0, CS_TYPE, "\(kind): null primary key, non-nullable")
                }
                #expect(try allKeys(txn, t) == keysBefore, "\(kind): failed creates changed the table")
                #expect(try tableCount(txn, t) == UInt64(used.count))

                // The primary key of an existing object cannot change; writing the same value can.
                var o5 = try openObj(txn, t, keyOf[5]!)
                expectCode(setVal(&o5, pk, kind.value(305)), CS_MISUSE, "\(kind): change the primary key to an unused value")
                expectCode(setVal(&o5, pk, kind.value(6)), CS_MISUSE, "\(kind): change the primary key to a used value")
                expectCode(setVal(&o5, pk, kind.value(5)), CS_OK, "\(kind): write the same primary key")
                #expect(getVal(&o5, pk) == kind.value(5))
                try must(cs_obj_set_int(&o5, n, 1005), "set another column")
                if kind.nullable {
                    var o0 = try openObj(txn, t, keyOf[0]!)
                    expectCode(setVal(&o0, pk, .null), CS_OK, "\(kind): write null over the null primary key")
                    expectCode(setVal(&o0, pk, kind.value(306)), CS_MISUSE, "\(kind): change a null primary key")
                }
                expectAllFound(txn, "after refused writes")
            }
            db.verify("\(kind) created")

            // Deleting an object frees its primary key.
            try db.write { txn throws in
                for i in [0, 5, 200] {
                    var o = try openObj(txn, t, keyOf[i]!)
                    try must(cs_obj_delete(&o), "delete")
                    expectCode(findPrimary(txn, t, kind.value(i)).0, CS_NOTFOUND, "\(kind): deleted \(kind.value(i))")
                    keyOf[i] = nil
                }
                for i in [0, 5] {
                    let (rc, o) = createPrimary(txn, t, kind.value(i))
                    try must(rc, "recreate \(kind.value(i))")
                    keyOf[i] = o.key
                }
                expectAllFound(txn, "after delete and reuse")
            }
            db.verify("\(kind) reuse")

            // A rolled-back write leaves its objects unfindable and its deletions undone.
            do {
                let txn = try db.begin(CS_TXN_WRITE)
                for i in 300..<320 {
                    let (rc, o) = createPrimary(txn, t, kind.value(i))
                    try must(rc, "create \(kind.value(i))")
                    let (rc2, k) = findPrimary(txn, t, kind.value(i))
                    expectCode(rc2, CS_OK, "\(kind): find before rollback")
                    #expect(k == o.key)
                }
                var o = try openObj(txn, t, keyOf[7]!)
                try must(cs_obj_delete(&o), "delete")
                try must(cs_txn_rollback(txn), "cs_txn_rollback")
                expectAllFound(txn, "rolled back (same transaction)")
                check(cs_txn_end(txn))
            }
            try db.read { txn throws in
                expectAllFound(txn, "rolled back")
                #expect(try tableCount(txn, t) == UInt64(keyOf.count))
            }
            db.verify("\(kind) rollback")

            try db.reopen()
            db.verify("\(kind) reopened")
            try db.read { txn throws in
                expectAllFound(txn, "reopened")
                #expect(try tableInfo(txn, t).primary == pk, "primary key after reopen")
                var o = try openObj(txn, t, keyOf[150]!)
                #expect(try getInt(&o, n) == 150)
            }
            try db.write { txn throws in
                expectCode(createPrimary(txn, t, kind.value(150)).0, CS_CONSTRAINT, "\(kind): duplicate after reopen")
                var o = cs_obj()
                expectCode(cs_obj_create(txn, t, &o), CS_MISUSE, "\(kind): cs_obj_create after reopen")
                let (rc, o2) = createPrimary(txn, t, kind.value(310))
                try must(rc, "create after reopen")
                keyOf[310] = o2.key
            }

            // Removing the primary key keeps the objects.
            try db.write { txn throws in
                try must(cs_table_set_primary_key(txn, t, CS_NONE), "clear the primary key")
                #expect(try tableInfo(txn, t).primary == CS_NONE)
                #expect(try columnFlags(txn, t, pk) & UInt32(CS_COL_PRIMARY) == 0, "PRIMARY flag after clearing")
                #expect(try tableCount(txn, t) == UInt64(keyOf.count))
                for (i, key) in keyOf {
                    var o = try openObj(txn, t, key)
                    #expect(getVal(&o, pk) == kind.value(i))
                }
                expectCode(indexFind(txn, t, pk, kind.value(150)).0, CS_MISUSE, "\(kind): the former key has no index")
                _ = try createObj(txn, t)
            }
            db.verify("\(kind) primary key cleared")
        }
    }

    @Test func primaryKeyOnPopulatedColumns() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var dup: UInt32 = 0, uniq: UInt32 = 0, twoNulls: UInt32 = 0, oneNull: UInt32 = 0, ids: UInt32 = 0
            var rows: [(Int64, Int)] = []  // (key, number)
            func uniqVal(_ i: Int) -> Val { .str(i == 0 ? "" : "s\(i)") }
            func oneNullVal(_ i: Int) -> Val { i == 7 ? .null : .int(Int64(i) - 500) }
            func idVal(_ i: Int) -> Val {
                var b = [UInt8](repeating: 0, count: 16)
                b[1] = 0x55  // never the all-zero default of objects created later
                b[0] = UInt8(truncatingIfNeeded: i >> 8)
                b[15] = UInt8(truncatingIfNeeded: i)
                return .uuid(b)
            }
            try db.write { txn throws in
                t = try addTable(txn, "T")
                dup = try addColumn(txn, t, "dup", CS_TYPE_INT)
                uniq = try addColumn(txn, t, "uniq", CS_TYPE_STRING, flags: CS_COL_INDEXED)
                twoNulls = try addColumn(txn, t, "twoNulls", CS_TYPE_INT, flags: CS_COL_NULLABLE)
                oneNull = try addColumn(txn, t, "oneNull", CS_TYPE_INT, flags: CS_COL_NULLABLE)
                ids = try addColumn(txn, t, "ids", CS_TYPE_UUID)
                for i in 0..<1200 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, dup, Int64(i % 1000)), "dup")
                    try must(setVal(&o, uniq, uniqVal(i)), "uniq")
                    try must(setVal(&o, twoNulls, i == 3 || i == 900 ? .null : .int(Int64(i))), "twoNulls")
                    try must(setVal(&o, oneNull, oneNullVal(i)), "oneNull")
                    try must(setVal(&o, ids, idVal(i)), "ids")
                    rows.append((o.key, i))
                }
            }
            func expectNoPrimary(_ txn: OpaquePointer, _ what: String) throws {
                #expect(try tableInfo(txn, t).primary == CS_NONE, "\(what): a primary key is left")
                for c in [dup, uniq, twoNulls, oneNull, ids] {
                    #expect(try columnFlags(txn, t, c) & UInt32(CS_COL_PRIMARY) == 0, "\(what): column \(c) flagged PRIMARY")
                }
                var k: Int64 = 0
                expectCode(withValue(.int(1)) { cs_table_find_primary(txn, t, $0, &k) }, CS_MISUSE,
                           "\(what): cs_table_find_primary without a primary key")
            }
            try db.write { txn throws in
                expectCode(cs_table_set_primary_key(txn, t, dup), CS_CONSTRAINT, "primary key over duplicate ints")
                try expectNoPrimary(txn, "after duplicate ints")
                expectCode(indexFind(txn, t, dup, .int(42)).0, CS_MISUSE, "dup has no index after the refusal")
                expectCode(cs_table_set_primary_key(txn, t, twoNulls), CS_CONSTRAINT, "primary key over two nulls")
                try expectNoPrimary(txn, "after two nulls")
                expectCode(indexFind(txn, t, twoNulls, .null).0, CS_MISUSE, "twoNulls has no index after the refusal")
                var o = try createObj(txn, t)   // still a table without a primary key
                try must(cs_obj_delete(&o), "delete")
            }
            db.verify("after refused primary keys")

            try db.write { txn throws in
                try must(cs_table_set_primary_key(txn, t, oneNull), "primary key over one null")
                #expect(try tableInfo(txn, t).primary == oneNull)
                for (key, i) in rows {
                    let (rc, k) = findPrimary(txn, t, oneNullVal(i))
                    expectCode(rc, CS_OK, "find_primary(\(oneNullVal(i)))")
                    #expect(k == key)
                }
                expectCode(createPrimary(txn, t, .null).0, CS_CONSTRAINT, "a second null primary key")
                // Switch to the string column (which also has its own index).
                try must(cs_table_set_primary_key(txn, t, uniq), "primary key over unique strings")
                #expect(try tableInfo(txn, t).primary == uniq)
                expectCode(indexFind(txn, t, oneNull, .null).0, CS_MISUSE, "the former primary key keeps no index")
                var o = cs_obj()
                expectCode(cs_obj_create(txn, t, &o), CS_MISUSE, "cs_obj_create with a primary key")
                expectCode(createPrimary(txn, t, uniqVal(0)).0, CS_CONSTRAINT, "duplicate empty string")
                let (rc, o2) = createPrimary(txn, t, .str("new"))
                try must(rc, "create new")
                rows.append((o2.key, -1))
            }
            db.verify("string primary key")
            try db.reopen()
            try db.read { txn throws in
                #expect(try tableInfo(txn, t).primary == uniq)
                for (key, i) in rows {
                    let (rc, k) = findPrimary(txn, t, i < 0 ? .str("new") : uniqVal(i))
                    expectCode(rc, CS_OK, "find_primary after reopen")
                    #expect(k == key)
                }
            }
            try db.write { txn throws in
                // The primary key's index stays when its INDEXED flag goes, and the column's
                // own index stays when it stops being the primary key.
                try must(cs_column_set_indexed(txn, t, uniq, false), "unindex the primary key")
                let (rc, k) = findPrimary(txn, t, uniqVal(10))
                expectCode(rc, CS_OK, "find_primary after unindexing")
                #expect(k == rows[10].0)
                try must(cs_column_set_indexed(txn, t, uniq, true), "index the primary key again")
                try must(cs_table_set_primary_key(txn, t, ids), "primary key over UUIDs")
                let (rc2, k2) = indexFind(txn, t, uniq, uniqVal(11))
                expectCode(rc2, CS_OK, "indexed former primary key")
                #expect(k2 == rows[11].0)
                let (rc3, k3) = findPrimary(txn, t, idVal(12))
                expectCode(rc3, CS_OK, "find_primary(uuid)")
                #expect(k3 == rows[12].0)
            }
            db.verify("uuid primary key")
        }
    }

    /// A refused primary key must not take away the ordinary index the column already had.
    @Test func refusedPrimaryKeyKeepsTheColumnsOwnIndex() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var c: UInt32 = 0
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                c = try addColumn(txn, t, "v", CS_TYPE_INT, flags: CS_COL_INDEXED)
                for i in 0..<600 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, c, Int64(i % 500)), "set")
                    keys.append(o.key)
                }
            }
            try db.write { txn throws in
                expectCode(cs_table_set_primary_key(txn, t, c), CS_CONSTRAINT, "primary key over duplicates")
                #expect(try tableInfo(txn, t).primary == CS_NONE, "a primary key is left")
                #expect(try columnFlags(txn, t, c) & UInt32(CS_COL_INDEXED) != 0, "the column lost its INDEXED flag")
                let (rc, got) = indexFindAll(txn, t, c, .int(42))
                expectCode(rc, CS_OK, "find_all after the refused primary key")
                expectKeys(got, [keys[42], keys[542]], "the column's index after the refused primary key")
                let (rc2, all) = indexRange(txn, t, c, nil, nil)
                expectCode(rc2, CS_OK, "range after the refused primary key")
                #expect(all.count == 600, "the column's index holds \(all.count) of 600 entries")
            }
            db.verify("after the refused primary key")
        }
    }

    @Test func tenThousandIntPrimaryKeysInRandomOrder() throws {
        var rng = SeededRNG(seed: stableSeed("index-10k-primary"))
        var values = (0..<10_000).map { Int64($0) * 1_000_003 - 5_000_000_000 }
        values[17] = .min
        values[9_000] = .max
        values.shuffle(using: &rng)
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var pk: UInt32 = 0
            var keyOf: [Int64: Int64] = [:]
            try db.write { txn throws in
                t = try addTable(txn, "T")
                pk = try addColumn(txn, t, "id", CS_TYPE_INT)
                try must(cs_table_set_primary_key(txn, t, pk), "cs_table_set_primary_key")
                for v in values {
                    let (rc, o) = createPrimary(txn, t, .int(v))
                    try must(rc, "create \(v)")
                    keyOf[v] = o.key
                }
            }
            db.verify("10k primary keys")
            try db.reopen()
            try db.read { txn throws in
                var missing = 0
                for v in values {
                    let (rc, k) = findPrimary(txn, t, .int(v))
                    if rc != Int32(CS_OK) || k != keyOf[v] {
                        missing += 1
                        if missing <= 5 { Issue.record("find_primary(\(v)) = \(codeName(rc)) \(k), want \(keyOf[v]!)") }
                    }
                    if v != .max && v != .min {
                        let (rc2, _) = findPrimary(txn, t, .int(v + 1))
                        if rc2 != Int32(CS_NOTFOUND) {
                            missing += 1
                            if missing <= 5 { Issue.record("find_primary(\(v + 1)) = \(codeName(rc2)), want CS_NOTFOUND") }
                        }
                    }
                }
                #expect(missing == 0, "\(missing) wrong lookups")
                let (rc, all) = indexRange(txn, t, pk, nil, nil)
                expectCode(rc, CS_OK, "range")
                expectKeys(all, values.sorted().map { keyOf[$0]! }, "whole primary-key index in value order")
            }
        }
    }

    @Test func removedIndexedColumnLeavesNoStaleEntries() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var a: UInt32 = 0
            var b: UInt32 = 0
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                a = try addColumn(txn, t, "a", CS_TYPE_INT, flags: CS_COL_INDEXED)
                b = try addColumn(txn, t, "b", CS_TYPE_STRING, flags: CS_COL_INDEXED)
                for i in 0..<1500 {
                    var o = try createObj(txn, t)
                    try must(cs_obj_set_int(&o, a, Int64(i % 50)), "a")
                    try must(setVal(&o, b, .str(i % 2 == 0 ? "" : "x\(i % 7)")), "b")
                    keys.append(o.key)
                }
            }
            func expectIndex(_ txn: OpaquePointer, _ c: UInt32, _ v: Val, _ want: [Int64], _ what: String) {
                let (rc, got) = indexFindAll(txn, t, c, v)
                expectCode(rc, CS_OK, "\(what): find_all(\(v))")
                expectKeys(got, want, "\(what): find_all(\(v))")
            }
            func expectWhole(_ txn: OpaquePointer, _ c: UInt32, _ want: [Int64], _ what: String) {
                let (rc, got) = indexRange(txn, t, c, nil, nil)
                expectCode(rc, CS_OK, "\(what): whole range")
                expectKeys(got, want, "\(what): whole range")
            }

            // A removal that is rolled back keeps the index.
            do {
                let txn = try db.begin(CS_TXN_WRITE)
                try must(cs_column_remove(txn, t, a), "cs_column_remove(a)")
                try must(cs_txn_rollback(txn), "cs_txn_rollback")
                expectIndex(txn, a, .int(7), keys.enumerated().filter { $0.offset % 50 == 7 }.map { $0.element }, "removal rolled back")
                check(cs_txn_end(txn))
            }

            // Remove and re-add in one transaction: same type, indexed, non-nullable.
            var c: UInt32 = 0
            try db.write { txn throws in
                try must(cs_column_remove(txn, t, a), "cs_column_remove(a)")
                c = try addColumn(txn, t, "c", CS_TYPE_INT, flags: CS_COL_INDEXED)
                #expect(c == a, "the new column reuses the removed slot (\(c) vs \(a))")
                expectIndex(txn, c, .int(0), keys, "new column in the same transaction")
                expectIndex(txn, c, .int(7), [], "new column in the same transaction")
                expectWhole(txn, c, keys, "new column in the same transaction")
            }
            db.verify("slot reused in one transaction")
            try db.read { txn throws in
                expectIndex(txn, c, .int(0), keys, "committed new column")
                expectIndex(txn, c, .int(49), [], "committed new column")
            }

            // Remove in one transaction, re-add with another type in the next.
            try db.write { txn in try must(cs_column_remove(txn, t, b), "cs_column_remove(b)") }
            db.verify("string column removed")
            var d: UInt32 = 0
            try db.write { txn throws in
                d = try addColumn(txn, t, "d", CS_TYPE_BOOL, flags: CS_COL_INDEXED | CS_COL_NULLABLE)
                #expect(d == b, "the new column reuses the removed slot (\(d) vs \(b))")
                expectIndex(txn, d, .null, keys, "bool column in a reused slot")
                expectIndex(txn, d, .bool(false), [], "bool column in a reused slot")
                expectWhole(txn, d, keys, "bool column in a reused slot")
                for k in keys where k % 4 == 0 {
                    var o = try openObj(txn, t, k)
                    try must(setVal(&o, d, .bool(true)), "set d")
                }
            }
            db.verify("bool column in a reused slot")

            // An unindexed column in a reused slot has no index until asked for one.
            var e: UInt32 = 0
            try db.write { txn throws in
                try must(cs_column_remove(txn, t, c), "cs_column_remove(c)")
                e = try addColumn(txn, t, "e", CS_TYPE_STRING)
                expectCode(indexFind(txn, t, e, .str("")).0, CS_MISUSE, "unindexed column in a reused slot")
                for k in keys where k % 3 == 0 {
                    var o = try openObj(txn, t, k)
                    try must(setVal(&o, e, .str("three")), "set e")
                }
                try must(cs_column_set_indexed(txn, t, e, true), "index e")
                expectIndex(txn, e, .str("three"), keys.filter { $0 % 3 == 0 }, "e indexed")
                expectIndex(txn, e, .str(""), keys.filter { $0 % 3 != 0 }, "e indexed")
            }
            db.verify("unindexed column in a reused slot")
            try db.reopen()
            db.verify("reopened")
            try db.read { txn throws in
                expectIndex(txn, d, .bool(true), keys.filter { $0 % 4 == 0 }, "reopened")
                expectIndex(txn, d, .null, keys.filter { $0 % 4 != 0 }, "reopened")
                expectIndex(txn, e, .str("three"), keys.filter { $0 % 3 == 0 }, "reopened")
            }
        }
    }

    @Test func removedPrimaryKeyColumnSlotIsReusedCleanly() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            var pk: UInt32 = 0
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                pk = try addColumn(txn, t, "id", CS_TYPE_STRING)
                try must(cs_table_set_primary_key(txn, t, pk), "cs_table_set_primary_key")
                for i in 0..<600 {
                    let (rc, o) = createPrimary(txn, t, .str("id\(i)"))
                    try must(rc, "create")
                    keys.append(o.key)
                }
            }
            var c: UInt32 = 0
            try db.write { txn throws in
                try must(cs_column_remove(txn, t, pk), "remove the primary-key column")
                #expect(try tableInfo(txn, t).primary == CS_NONE, "primary key after removing its column")
                #expect(try tableCount(txn, t) == 600)
                c = try addColumn(txn, t, "s", CS_TYPE_STRING, flags: CS_COL_INDEXED)
                #expect(c == pk, "the new column reuses the removed slot (\(c) vs \(pk))")
                let (rc, got) = indexFindAll(txn, t, c, .str(""))
                expectCode(rc, CS_OK, "find_all")
                expectKeys(got, keys, "every object reads the empty default")
                let (rc2, got2) = indexFindAll(txn, t, c, .str("id5"))
                expectCode(rc2, CS_OK, "find_all")
                expectKeys(got2, [], "an old primary key")
                var o = try createObj(txn, t)  // no primary key any more
                try must(setVal(&o, c, .str("id5")), "set")
                let (rc3, k) = indexFind(txn, t, c, .str("id5"))
                expectCode(rc3, CS_OK, "find")
                #expect(k == o.key)
            }
            db.verify("primary-key slot reused")
        }
    }
}
