// A property-based test of the query engine: random objects, then thousands of random
// predicates (comparisons, string operators with [c] [d] [cd], AND / OR / NOT, BETWEEN, IN,
// link paths, ANY / ALL / NONE and @count / @min / @max / @sum / @avg over a list, SORT and
// LIMIT), each checked against an oracle written here in Swift over the values read back with
// cs_obj_get and cs_list_get. The oracle calls no comparison or query function of the core.
//
// Semantics the oracle implements (docs/ARCHITECTURE.md, Queries and Values and their order):
// - null equals only null; an ordered comparison, BETWEEN or a string operator with null is false.
// - numbers of different types compare by exact value.
// - NaN (the Double column holds some): == and != treat it as a value unequal to every number;
//   <, <=, >, >= and BETWEEN with NaN are false. SORT puts null first, then NaN, then numbers.
// - strings compare by UTF-8 bytes (= code point order). [c] is Unicode simple case folding and
//   [d] drops the combining marks of the canonical decomposition, both only for U+0000..U+017F,
//   taken from Foundation's Unicode data here; [cd] does both. LIKE: * any run, ? one character.
// - a path through the list is ANY unless ALL or NONE says otherwise (ALL of an empty list holds);
//   @count of an empty list is 0, @sum 0, @min / @max / @avg null.
// - a null link yields null for every property behind it.
// - SORT is stable (ties keep key order); LIMIT keeps a prefix.
//
// The seed is fixed; set QUERY_ORACLE_SEED to run another. A mismatch prints seed and predicate.

import CStore
import Foundation
import Testing

// MARK: - The oracle's values

private enum OV {
    case null
    case int(Int64)
    case dbl(Double)
    case str([UInt32])
    case bool(Bool)
    case ts(Int64, Int32)
}

private enum Op: CaseIterable {
    case eq, ne, lt, le, gt, ge, begins, ends, contains, like

    var text: String {
        switch self {
        case .eq: return "=="
        case .ne: return "!="
        case .lt: return "<"
        case .le: return "<="
        case .gt: return ">"
        case .ge: return ">="
        case .begins: return "BEGINSWITH"
        case .ends: return "ENDSWITH"
        case .contains: return "CONTAINS"
        case .like: return "LIKE"
        }
    }

    /// The operator with its operands swapped (k < x is x > k).
    var mirrored: Op {
        switch self {
        case .lt: return .gt
        case .le: return .ge
        case .gt: return .lt
        case .ge: return .le
        default: return self
        }
    }

    static let ordering: [Op] = [.eq, .ne, .lt, .le, .gt, .ge]
}

/// Simple case folding for U+0000..U+017F (Unicode CaseFolding.txt status C and S).
private func foldCase(_ c: UInt32) -> UInt32 {
    guard c <= 0x17F, let s = Unicode.Scalar(c) else { return c }
    switch c {
    case 0x17F: return 0x73      // long s -> s
    case 0xB5: return 0x3BC      // micro sign -> Greek small mu
    case 0x130: return c         // I with dot above: no simple folding
    default: break
    }
    let lower = s.properties.lowercaseMapping.unicodeScalars
    return lower.count == 1 ? lower.first!.value : c
}

/// Drops the combining marks of the canonical decomposition, for U+0000..U+017F.
private func stripMarks(_ c: UInt32) -> [UInt32] {
    guard c <= 0x17F, let s = Unicode.Scalar(c) else { return [c] }
    let d = String(Character(s)).decomposedStringWithCanonicalMapping.unicodeScalars
    let kept = d.filter { $0.properties.canonicalCombiningClass == .notReordered }
    return kept.map { $0.value }
}

/// The two rules as tables over U+0000..U+017F, computed once.
private let caseTable: [UInt32] = (0...0x17F).map { foldCase(UInt32($0)) }
private let markTable: [[UInt32]] = (0...0x17F).map { stripMarks(UInt32($0)) }

private func fold(_ s: [UInt32], caseFold: Bool, diacritics: Bool) -> [UInt32] {
    if !caseFold && !diacritics { return s }
    var out: [UInt32] = []
    out.reserveCapacity(s.count)
    for c in s {
        if diacritics && c <= 0x17F {
            for p in markTable[Int(c)] { out.append(caseFold && p <= 0x17F ? caseTable[Int(p)] : p) }
        } else {
            out.append(caseFold && c <= 0x17F ? caseTable[Int(c)] : c)
        }
    }
    return out
}

private func likeMatch(_ s: [UInt32], _ p: [UInt32]) -> Bool {
    // dp[j]: p[0..<j] matches s[0..<i]
    var dp = [Bool](repeating: false, count: p.count + 1)
    dp[0] = true
    for j in 0..<p.count where p[j] == 42 { dp[j + 1] = dp[j] }
    for c in s {
        var next = [Bool](repeating: false, count: p.count + 1)
        for j in 0..<p.count {
            if p[j] == 42 { next[j + 1] = next[j] || dp[j + 1] }
            else if p[j] == 63 || p[j] == c { next[j + 1] = dp[j] }
        }
        dp = next
    }
    return dp[p.count]
}

private func lexCompare(_ a: [UInt32], _ b: [UInt32]) -> Int {
    for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
    return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
}

/// Exact comparison of two finite-or-NaN numbers; nil when either is NaN.
private func numCompare(_ a: OV, _ b: OV) -> Int? {
    switch (a, b) {
    case let (.int(x), .int(y)): return x == y ? 0 : (x < y ? -1 : 1)
    case let (.int(x), .dbl(y)):
        if y.isNaN { return nil }
        if y >= 9_223_372_036_854_775_808.0 { return -1 }
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = y.rounded(.down), w = Int64(whole)
        if x != w { return x < w ? -1 : 1 }
        return y > whole ? -1 : 0
    case let (.dbl(x), .int(y)): return numCompare(.int(y), .dbl(x)).map { -$0 }
    case let (.dbl(x), .dbl(y)):
        if x.isNaN || y.isNaN { return nil }
        return x == y ? 0 : (x < y ? -1 : 1)
    default: return nil
    }
}

private func ordered(_ op: Op, _ c: Int) -> Bool {
    switch op {
    case .eq: return c == 0
    case .ne: return c != 0
    case .lt: return c < 0
    case .le: return c <= 0
    case .gt: return c > 0
    case .ge: return c >= 0
    default: return false
    }
}

/// `a op b` with [c] / [d] flags.
private func holds(_ op: Op, _ a: OV, _ b: OV, caseFold: Bool = false, diacritics: Bool = false) -> Bool {
    let an: Bool, bn: Bool
    if case .null = a { an = true } else { an = false }
    if case .null = b { bn = true } else { bn = false }
    if an || bn {
        switch op {
        case .eq: return an && bn
        case .ne: return !(an && bn)
        default: return false
        }
    }
    switch (a, b) {
    case let (.str(x0), .str(y0)):
        let x = fold(x0, caseFold: caseFold, diacritics: diacritics)
        let y = fold(y0, caseFold: caseFold, diacritics: diacritics)
        switch op {
        case .begins: return x.starts(with: y)
        case .ends: return x.count >= y.count && Array(x.suffix(y.count)) == y
        case .contains:
            if y.isEmpty { return true }
            if y.count > x.count { return false }
            for i in 0...(x.count - y.count) where Array(x[i..<(i + y.count)]) == y { return true }
            return false
        case .like: return likeMatch(x, y)
        default: return ordered(op, lexCompare(x, y))
        }
    case let (.bool(x), .bool(y)):
        return op == .eq ? x == y : op == .ne ? x != y : false
    case let (.ts(s1, n1), .ts(s2, n2)):
        let c = s1 != s2 ? (s1 < s2 ? -1 : 1) : (n1 == n2 ? 0 : (n1 < n2 ? -1 : 1))
        return ordered(op, c)
    default:
        guard let c = numCompare(a, b) else {
            // NaN: unequal to every number, unordered
            return op == .ne
        }
        return ordered(op, c)
    }
}

/// Total order for SORT: null, then NaN, then numbers; strings by code points; false < true.
private func sortCompare(_ a: OV, _ b: OV) -> Int {
    switch (a, b) {
    case (.null, .null): return 0
    case (.null, _): return -1
    case (_, .null): return 1
    case let (.str(x), .str(y)): return lexCompare(x, y)
    case let (.bool(x), .bool(y)): return x == y ? 0 : (x ? 1 : -1)
    case let (.ts(s1, n1), .ts(s2, n2)): return s1 != s2 ? (s1 < s2 ? -1 : 1) : (n1 == n2 ? 0 : (n1 < n2 ? -1 : 1))
    default:
        let an: Bool = { if case .dbl(let d) = a { return d.isNaN }; return false }()
        let bn: Bool = { if case .dbl(let d) = b { return d.isNaN }; return false }()
        if an || bn { return an && bn ? 0 : (an ? -1 : 1) }
        return numCompare(a, b) ?? 0
    }
}

// MARK: - Rows read back from the file

private struct OwnerRow {
    let rank: Int64
    let oname: [UInt32]
}

private struct Row {
    let key: Int64
    let i: Int64
    let ni: Int64?
    let d: Double
    let s: [UInt32]
    let ns: [UInt32]?
    let b: Bool
    let t: (Int64, Int32)
    let owner: OwnerRow?
    let list: [Int64]
}

private func scalars(_ v: Val) -> [UInt32]? {
    guard case .string(let b) = v else { return nil }
    return String(decoding: b, as: UTF8.self).unicodeScalars.map { $0.value }
}

// MARK: - The predicate generator

private struct Gen {
    var rng: SeededRNG
    let alphabet: [String] = ["a", "A", "é", "É", "ā", "Ā", "z"]

    mutating func int(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
    mutating func pick<T>(_ a: [T]) -> T { a[int(a.count)] }
    mutating func chance(_ pct: Int) -> Bool { int(100) < pct }

    mutating func word(max: Int = 3, pattern: Bool = false) -> String {
        let n = int(max + 1)
        var s = ""
        for _ in 0..<n {
            if pattern && chance(30) { s += pick(["*", "?"]) } else { s += pick(alphabet) }
        }
        return s
    }

    mutating func flags() -> (String, Bool, Bool) {
        switch int(4) {
        case 0: return ("", false, false)
        case 1: return ("[c]", true, false)
        case 2: return ("[d]", false, true)
        default: return (pick(["[cd]", "[dc]"]), true, true)
        }
    }

    mutating func numConst() -> (String, OV) {
        if chance(70) {
            let k = Int64(int(13)) - 6
            return ("\(k)", .int(k))
        }
        let d = Double(int(13) - 6) / 2
        return ("\(d)", .dbl(d))
    }

    typealias Pred = (String, (Row) -> Bool)

    mutating func atom() -> Pred {
        switch int(12) {
        case 0, 1: // numbers
            let cols: [(String, (Row) -> OV)] = [
                ("i", { .int($0.i) }), ("ni", { $0.ni.map { .int($0) } ?? .null }),
                ("d", { .dbl($0.d) }), ("owner.rank", { $0.owner.map { .int($0.rank) } ?? .null }),
            ]
            let (name, get) = pick(cols)
            let op = pick(Op.ordering)
            let (kt, k) = numConst()
            if chance(20) { return ("\(kt) \(op.text) \(name)", { holds(op.mirrored, get($0), k) }) }
            return ("\(name) \(op.text) \(kt)", { holds(op, get($0), k) })
        case 2, 3: // strings
            let cols: [(String, (Row) -> OV)] = [
                ("s", { .str($0.s) }), ("ns", { $0.ns.map { .str($0) } ?? .null }),
                ("owner.oname", { $0.owner.map { .str($0.oname) } ?? .null }),
            ]
            let (name, get) = pick(cols)
            let op = pick(Op.allCases)
            let (ft, c, d) = flags()
            let w = word(pattern: op == .like)
            let k = OV.str(w.unicodeScalars.map { $0.value })
            return ("\(name) \(op.text)\(ft) '\(w)'", { holds(op, get($0), k, caseFold: c, diacritics: d) })
        case 4: // nulls and bools
            let forms: [Pred] = [
                ("ni == nil", { $0.ni == nil }), ("ni != nil", { $0.ni != nil }), ("nil == ni", { $0.ni == nil }),
                ("ns == nil", { $0.ns == nil }), ("ns != NULL", { $0.ns != nil }),
                ("owner == nil", { $0.owner == nil }), ("owner != nil", { $0.owner != nil }),
                ("owner.rank == nil", { $0.owner == nil }), ("owner.oname != nil", { $0.owner != nil }),
                ("b == true", { $0.b }), ("b == false", { !$0.b }), ("b != true", { !$0.b }), ("b != false", { $0.b }),
            ]
            return pick(forms)
        case 5: // timestamps
            let op = pick(Op.ordering)
            let sec = Int64(int(6)), ns = Int32(pick([0, 500, 999_999_999]))
            return ("t \(op.text) T\(sec):\(ns)", { holds(op, .ts($0.t.0, $0.t.1), .ts(sec, ns)) })
        case 6: // BETWEEN
            let cols: [(String, (Row) -> OV)] = [
                ("i", { .int($0.i) }), ("ni", { $0.ni.map { .int($0) } ?? .null }), ("d", { .dbl($0.d) }),
                ("owner.rank", { $0.owner.map { .int($0.rank) } ?? .null }),
            ]
            let (name, get) = pick(cols)
            let (lt, lo) = numConst(), (ht, hi) = numConst()
            return ("\(name) BETWEEN {\(lt), \(ht)}", { holds(.ge, get($0), lo) && holds(.le, get($0), hi) })
        case 7: // IN
            switch int(3) {
            case 0:
                let ks = (0..<(1 + int(3))).map { _ in Int64(int(11)) - 5 }
                return ("i IN {\(ks.map { "\($0)" }.joined(separator: ", "))}", { r in ks.contains(r.i) })
            case 1:
                let ks = (0..<(1 + int(3))).map { _ in Int64(int(11)) - 5 }
                let withNil = chance(50)
                let items = ks.map { "\($0)" } + (withNil ? ["nil"] : [])
                return ("ni IN {\(items.joined(separator: ", "))}", { r in r.ni.map { ks.contains($0) } ?? withNil })
            default:
                let ws = (0..<(1 + int(3))).map { _ in word(max: 2) }
                let ks = ws.map { $0.unicodeScalars.map { $0.value } }
                return ("s IN {\(ws.map { "'\($0)'" }.joined(separator: ", "))}", { r in ks.contains(r.s) })
            }
        case 8, 9: // the list
            let op = pick(Op.ordering)
            let k = Int64(int(9)) - 4
            switch int(4) {
            case 0: return ("list \(op.text) \(k)", { r in r.list.contains { holds(op, .int($0), .int(k)) } })
            case 1: return ("ANY list \(op.text) \(k)", { r in r.list.contains { holds(op, .int($0), .int(k)) } })
            case 2: return ("ALL list \(op.text) \(k)", { r in r.list.allSatisfy { holds(op, .int($0), .int(k)) } })
            default: return ("NONE list \(op.text) \(k)", { r in !r.list.contains { holds(op, .int($0), .int(k)) } })
            }
        case 10: // list aggregates
            let op = pick(Op.ordering)
            let (kt, k) = numConst()
            switch int(6) {
            case 0, 1: return ("list.@count \(op.text) \(kt)", { holds(op, .int(Int64($0.list.count)), k) })
            case 2: return ("list.@sum \(op.text) \(kt)", { holds(op, .int($0.list.reduce(0, +)), k) })
            case 3: return ("list.@min \(op.text) \(kt)", { holds(op, $0.list.min().map { .int($0) } ?? .null, k) })
            case 4: return ("list.@max \(op.text) \(kt)", { holds(op, $0.list.max().map { .int($0) } ?? .null, k) })
            default:
                return ("list.@avg \(op.text) \(kt)", { r in
                    holds(op, r.list.isEmpty ? .null : .dbl(Double(r.list.reduce(0, +)) / Double(r.list.count)), k)
                })
            }
        default: // a value IN the list
            let k = Int64(int(9)) - 4
            return ("\(k) IN list", { $0.list.contains(k) })
        }
    }

    mutating func pred(_ depth: Int) -> Pred {
        if depth == 0 || chance(35) { return atom() }
        switch int(5) {
        case 0, 1:
            let (a, fa) = pred(depth - 1), (b, fb) = pred(depth - 1)
            return ("(\(a)) \(pick(["AND", "&&", "and"])) (\(b))", { fa($0) && fb($0) })
        case 2, 3:
            let (a, fa) = pred(depth - 1), (b, fb) = pred(depth - 1)
            return ("(\(a)) \(pick(["OR", "||", "or"])) (\(b))", { fa($0) || fb($0) })
        default:
            let (a, fa) = pred(depth - 1)
            return ("\(pick(["NOT ", "!"]))(\(a))", { !fa($0) })
        }
    }

    /// A SORT key: its text and the value it sorts by.
    mutating func sortKey() -> (String, (Row) -> OV) {
        pick([
            ("i", { .int($0.i) }), ("ni", { $0.ni.map { .int($0) } ?? .null }), ("d", { .dbl($0.d) }),
            ("s", { .str($0.s) }), ("ns", { $0.ns.map { .str($0) } ?? .null }), ("b", { .bool($0.b) }),
            ("t", { .ts($0.t.0, $0.t.1) }), ("owner.rank", { $0.owner.map { .int($0.rank) } ?? .null }),
            ("owner.oname", { $0.owner.map { .str($0.oname) } ?? .null }),
        ])
    }
}

// MARK: - The test

@Suite struct QueryOracleTests {
    /// Run twice: without indexes, and with every indexable column indexed, so that conditions
    /// answered from indexes (==, IN, ranges, BEGINSWITH, [c]) meet the same oracle.
    @Test(arguments: [false, true]) func randomPredicatesMatchTheOracle(indexed: Bool) throws {
        let ix = indexed ? CS_COL_INDEXED : 0
        let seed: UInt64 = ProcessInfo.processInfo.environment["QUERY_ORACLE_SEED"].flatMap { UInt64($0) } ?? 0x5157_4F52_4143_4C45
        let objects = 2_000, predicates = underSanitizer ? 250 : 2_000
        var rng = SeededRNG(seed: seed)
        try withTempDir { dir in
            let db = try DB(dir.path())
            var item: UInt32 = 0
            var col: [String: UInt32] = [:]
            try db.write { txn in
                let owner = try addTable(txn, "Owner")
                let rank = try addColumn(txn, owner, "rank", CS_TYPE_INT)
                let oname = try addColumn(txn, owner, "oname", CS_TYPE_STRING)
                item = try addTable(txn, "Item")
                col["i"] = try addColumn(txn, item, "i", CS_TYPE_INT, flags: ix)
                col["ni"] = try addColumn(txn, item, "ni", CS_TYPE_INT, flags: CS_COL_NULLABLE | ix)
                col["d"] = try addColumn(txn, item, "d", CS_TYPE_DOUBLE)
                col["s"] = try addColumn(txn, item, "s", CS_TYPE_STRING, flags: ix)
                col["ns"] = try addColumn(txn, item, "ns", CS_TYPE_STRING, flags: CS_COL_NULLABLE | ix)
                col["b"] = try addColumn(txn, item, "b", CS_TYPE_BOOL, flags: ix)
                col["t"] = try addColumn(txn, item, "t", CS_TYPE_TIMESTAMP, flags: ix)
                col["owner"] = try addColumn(txn, item, "owner", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: owner)
                col["list"] = try addColumn(txn, item, "list", CS_TYPE_INT, coll: CS_COLL_LIST)

                var g = Gen(rng: rng)
                var owners: [Int64] = []
                for _ in 0..<20 {
                    var o = try createObj(txn, owner)
                    try must(setVal(&o, rank, .int(Int64(g.int(10)) - 3)))
                    try must(setVal(&o, oname, .str(g.word())))
                    owners.append(o.key)
                }
                for _ in 0..<objects {
                    var o = try createObj(txn, item)
                    let small = Int64(g.int(13)) - 6
                    try must(setVal(&o, col["i"]!, .int(g.chance(5) ? Int64(bitPattern: g.rng.next()) : small)))
                    try must(setVal(&o, col["ni"]!, g.chance(25) ? .null : .int(Int64(g.int(13)) - 6)))
                    try must(setVal(&o, col["d"]!, .double(g.chance(4) ? .nan : Double(g.int(17) - 8) / 2)))
                    try must(setVal(&o, col["s"]!, .str(g.word())))
                    try must(setVal(&o, col["ns"]!, g.chance(25) ? .null : .str(g.word())))
                    try must(setVal(&o, col["b"]!, .bool(g.chance(50))))
                    try must(setVal(&o, col["t"]!, .timestamp(Int64(g.int(6)), Int32(g.pick([0, 500, 999_999_999])))))
                    try must(setVal(&o, col["owner"]!, g.chance(15) ? .null : .link(owner, g.pick(owners))))
                    var l = try openColl(&o, col["list"]!)
                    for _ in 0..<g.int(5) { try must(listAppend(&l, .int(Int64(g.int(9)) - 4))) }
                }
                rng = g.rng
            }

            let txn = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(txn) }
            // Read every row back through cs_obj_get / cs_list_get.
            var rows: [Row] = []
            for key in try allKeys(txn, item) {
                var o = try openObj(txn, item, key)
                func get(_ n: String) throws -> Val {
                    guard let v = getVal(&o, col[n]!) else { throw CStoreError(code: -1, message: "", context: "read \(n)") }
                    return v
                }
                guard case .int(let i) = try get("i"), case .double(let d) = try get("d"),
                      case .bool(let b) = try get("b"), case .timestamp(let ts, let tn) = try get("t"),
                      let s = scalars(try get("s")) else {
                    Issue.record("unexpected value types in row \(key)")
                    return
                }
                let niV = try get("ni"), nsV = try get("ns"), ownV = try get("owner")
                var ni: Int64? = nil
                if case .int(let x) = niV { ni = x }
                var ownerRow: OwnerRow? = nil
                if case .link(let ot, let ok) = ownV {
                    var oo = try openObj(txn, ot, ok)
                    let ocols = (try findColumn(txn, ot, "rank"), try findColumn(txn, ot, "oname"))
                    guard case .int(let r) = getVal(&oo, ocols.0), let on = getVal(&oo, ocols.1).flatMap(scalars) else {
                        Issue.record("bad owner \(ok)")
                        return
                    }
                    ownerRow = OwnerRow(rank: r, oname: on)
                }
                var lc = try openColl(&o, col["list"]!)
                let list: [Int64] = try listAll(&lc).compactMap { if case .int(let x) = $0 { return x }; return nil }
                rows.append(Row(key: key, i: i, ni: ni, d: d, s: s, ns: scalars(nsV), b: b, t: (ts, tn),
                                owner: ownerRow, list: list))
            }
            #expect(rows.count == objects)

            var g = Gen(rng: rng)
            var mismatches = 0
            var nonEmpty = 0
            var fromIndex = 0
            for n in 0..<predicates {
                let (predText, f) = g.pred(3)
                var text = predText
                var sortKeys: [((Row) -> OV, Bool)] = []
                var limit: Int? = nil
                if g.chance(30) {
                    var parts: [String] = []
                    for _ in 0..<(1 + g.int(2)) {
                        let (kt, kf) = g.sortKey()
                        let asc = g.chance(50)
                        parts.append("\(kt) \(asc ? "ASC" : "DESC")")
                        sortKeys.append((kf, asc))
                    }
                    text += " SORT(\(parts.joined(separator: ", ")))"
                }
                if g.chance(10) {
                    limit = g.int(50)
                    text += " LIMIT(\(limit!))"
                }

                var expected = rows.filter(f)
                if !sortKeys.isEmpty {
                    // stable: ties keep key order. The rows' positions are sorted, each row's sort
                    // values taken once (the same order; sorting the rows themselves, their values
                    // taken at every comparison, was half of this test's time)
                    let values = expected.map { row in sortKeys.map { key in key.0(row) } }
                    let order = expected.indices.sorted { x, y in
                        for k in 0..<sortKeys.count {
                            let c = sortCompare(values[x][k], values[y][k])
                            if c != 0 { return sortKeys[k].1 ? c < 0 : c > 0 }
                        }
                        return x < y
                    }
                    expected = order.map { expected[$0] }
                }
                if let limit { expected = Array(expected.prefix(limit)) }
                let want = expected.map { $0.key }
                if !want.isEmpty { nonEmpty += 1 }

                let got: [Int64]
                do {
                    let (rc, msg, q) = makeQuery(txn, item, text)
                    if rc != Int32(CS_OK) { throw CStoreError(code: rc, message: msg, context: "cs_query_new") }
                    defer { cs_query_free(q) }
                    got = try keysOf(q!, text)
                    var plan = cs_query_plan()
                    _ = cs_query_last_plan(q, &plan)
                    if plan.kind == CS_PLAN_INDEX.rawValue { fromIndex += 1 }
                } catch {
                    mismatches += 1
                    if mismatches <= 10 { Issue.record("seed \(seed) predicate #\(n): \(text)\n  engine failed: \(error)") }
                    continue
                }
                if got != want {
                    mismatches += 1
                    if mismatches <= 10 {
                        let gs = Set(got), ws = Set(want)
                        let extra = got.filter { !ws.contains($0) }.prefix(3)
                        let missing = want.filter { !gs.contains($0) }.prefix(3)
                        func show(_ k: Int64) -> String {
                            guard let r = rows.first(where: { $0.key == k }) else { return "\(k)" }
                            let str = { (x: [UInt32]?) in x.map { "'" + String(String.UnicodeScalarView($0.compactMap(Unicode.Scalar.init))) + "'" } ?? "nil" }
                            return "key \(k): i=\(r.i) ni=\(r.ni.map { "\($0)" } ?? "nil") d=\(r.d) s=\(str(r.s)) ns=\(str(r.ns)) b=\(r.b) t=T\(r.t.0):\(r.t.1) owner=\(r.owner.map { "(rank \($0.rank), oname \(str($0.oname)))" } ?? "nil") list=\(r.list)"
                        }
                        Issue.record("""
                            seed \(seed) predicate #\(n): \(text)
                              engine \(got.count) keys, oracle \(want.count) keys\(gs == ws ? " (same set, different order)" : "")
                              engine only: \(extra.map(show))
                              oracle only: \(missing.map(show))
                              first engine keys: \(got.prefix(8)), oracle: \(want.prefix(8))
                            """)
                    }
                }
            }
            #expect(mismatches == 0, "seed \(seed): \(mismatches) of \(predicates) predicates disagree with the oracle")
            // with indexes a good share of the predicates is answered from one (none without)
            #expect(indexed ? fromIndex > predicates / 10 : fromIndex == 0, "\(fromIndex) predicates used an index")
            #expect(nonEmpty > predicates / 4, "the generator should make predicates that match something (\(nonEmpty))")
        }
    }
}
