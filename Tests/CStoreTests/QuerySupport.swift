// What the query tests share (QueryTests, IndexQueryTests, IndexRangeTests, QueryCountTests,
// QueryNameMapTests, QueryOracleTests, QueryParserGapsTests):
// making and running queries with arguments, the keys and plan of a run, and the dogs, people and
// cities fixture.

import CStore
import Foundation
import Testing

// MARK: - Arguments and running

/// A query argument: one value, or a list (bound to IN %@).
enum QArg {
    case v(Val)
    case list([Val])
}

/// C copies of query arguments; the memory lives as long as the buffer.
final class QArgBuffer {
    private(set) var values: UnsafeMutablePointer<cs_value>
    let count: Int
    private var blocks: [UnsafeMutableRawPointer] = []

    init(_ args: [QArg]) {
        count = args.count
        values = .allocate(capacity: max(args.count, 1))
        for (i, a) in args.enumerated() {
            switch a {
            case .v(let v):
                values[i] = cValue(v)
            case .list(let items):
                let p = UnsafeMutablePointer<cs_value>.allocate(capacity: max(items.count, 1))
                blocks.append(UnsafeMutableRawPointer(p))
                for (k, it) in items.enumerated() { p[k] = cValue(it) }
                var x = cs_value()
                x.type = CS_TYPE_LIST
                x.v.list.items = UnsafePointer(p)
                x.v.list.count = items.count
                values[i] = x
            }
        }
    }

    private func cValue(_ v: Val) -> cs_value {
        switch v {
        case .string(let b), .binary(let b):
            let p = UnsafeMutableRawPointer.allocate(byteCount: max(b.count, 1), alignment: 1)
            blocks.append(p)
            p.copyMemory(from: b, byteCount: b.count)
            var x = cs_value()
            x.type = v.type
            x.v.bytes.ptr = UnsafeRawPointer(p)
            x.v.bytes.len = b.count
            return x
        default:
            return withValue(v) { $0.pointee }
        }
    }

    deinit {
        for b in blocks { b.deallocate() }
        values.deallocate()
    }
}

/// Builds a query; returns the result code, the message on failure, and the query.
func makeQuery(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ args: [QArg] = []) -> (Int32, String, OpaquePointer?) {
    let buf = QArgBuffer(args)
    let bytes = Array(text.utf8)
    var q: OpaquePointer?
    let rc = (bytes + [0]).withUnsafeBufferPointer { b -> Int32 in
        b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { p in
            cs_query_new(txn, table, p, b.count - 1, buf.values, buf.count, &q)
        }
    }
    withExtendedLifetime(buf) {}
    if rc != Int32(CS_OK) { return (rc, lastMessage(), nil) }
    return (rc, "", q)
}

/// The keys of a query (in result order); also checks cs_query_count agrees.
func queryKeys(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ args: [QArg] = [],
               sourceLocation: SourceLocation = #_sourceLocation) throws -> [Int64] {
    let (rc, msg, q) = makeQuery(txn, table, text, args)
    if rc != Int32(CS_OK) { throw CStoreError(code: rc, message: msg, context: "cs_query_new(\(text.prefix(80)))") }
    defer { cs_query_free(q) }
    return try keysOf(q!, text, sourceLocation: sourceLocation)
}

/// The keys of a query and the plan it ran with (`cs_query_last_plan`).
func keysAndPlan(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ args: [QArg]) throws -> ([Int64], cs_query_plan) {
    let (rc, msg, q) = makeQuery(txn, table, text, args)
    if rc != Int32(CS_OK) { throw CStoreError(code: rc, message: msg, context: "cs_query_new(\(text))") }
    defer { cs_query_free(q) }
    let keys = try keysOf(q!, text)
    var p = cs_query_plan()
    try must(cs_query_last_plan(q, &p), "cs_query_last_plan")
    return (keys, p)
}

func keysOf(_ q: OpaquePointer, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Int64] {
    var keys: UnsafeMutablePointer<Int64>?
    var n = 0
    try must(cs_query_keys(q, &keys, &n), "cs_query_keys(\(text))")
    let out = n == 0 ? [] : Array(UnsafeBufferPointer(start: keys, count: n))
    cs_keys_free(keys)
    var c: UInt64 = 0
    try must(cs_query_count(q, &c), "cs_query_count(\(text))")
    #expect(Int(c) == out.count, "cs_query_count(\(text)) = \(c) but cs_query_keys gave \(out.count) keys",
            sourceLocation: sourceLocation)
    return out
}

// MARK: - The fixture

/// Dogs, their owners (Person) and the owners' cities, with known values (see `dogRows`).
struct DogFixture {
    let txn: OpaquePointer
    let dog, person, city: UInt32
    let d: [Int64]  // dog keys by index
    let p: [Int64]  // person keys
    let c: [Int64]  // city keys
    var cols: [String: UInt32]

    /// Keys of dogs by index.
    func k(_ idx: [Int]) -> [Int64] { idx.map { d[$0] } }

    func keys(_ text: String, _ args: [QArg] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> [Int64] {
        try queryKeys(txn, dog, text, args, sourceLocation: sourceLocation)
    }

    /// Expects the query to match exactly the dogs `idx`, in that order.
    func expectDogs(_ text: String, _ idx: [Int], _ args: [QArg] = [],
                    sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let got = try keys(text, args, sourceLocation: sourceLocation)
            #expect(got == k(idx), "\(text.prefix(120)): expected dogs \(idx), got keys \(got)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(text.prefix(120)): \(String(describing: error).prefix(300))", sourceLocation: sourceLocation)
        }
    }

    /// Expects CS_QUERY with a message containing every one of `parts`.
    func expectError(_ text: String, _ parts: [String], _ args: [QArg] = [], table: UInt32? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        expectQueryError(makeQuery(txn, table ?? dog, text, args), String(text.prefix(80)), parts,
                         sourceLocation: sourceLocation)
    }
}

/// Expects a query's creation (`made`: code, message, query) to have failed with `code` and a
/// message containing every one of `parts`; frees the query if one was made.
func expectQueryError(_ made: (Int32, String, OpaquePointer?), _ what: String, _ parts: [String], code: Int = CS_QUERY,
                      sourceLocation: SourceLocation = #_sourceLocation) {
    let (rc, msg, q) = made
    if let q { cs_query_free(q) }
    #expect(rc == Int32(code), "\(what): expected \(codeName(Int32(code))), got \(codeName(rc)) \(msg)",
            sourceLocation: sourceLocation)
    for part in parts {
        #expect(msg.contains(part), "\(what): message \(msg.debugDescription) lacks \(part.debugDescription)",
                sourceLocation: sourceLocation)
    }
}

func oidBytes(_ b: UInt8) -> [UInt8] { [UInt8](repeating: b, count: 12) }
func uuidBytes(_ b: UInt8) -> [UInt8] { [UInt8](repeating: b, count: 16) }
func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
func uuidText(_ b: [UInt8]) -> String {
    let h = hex(b)
    let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { r in
        String(h[h.index(h.startIndex, offsetBy: r.lowerBound)..<h.index(h.startIndex, offsetBy: r.upperBound)])
    }
    return parts.joined(separator: "-")
}

struct DogRow {
    var age: Int64
    var nage: Int64?
    var dbl: Double
    var flt: Float
    var name: String
    var nname: String?
    var flag: Bool
    var born: (Int64, Int32)
    var owner: Int?
    var scores: [Int64]
    var friends: [Int]
    var tags: [(String, Int64)]
    var labels: [String]
}

/// The dogs. Dog i has oid bytes i+1, uuid bytes i+0x10 and binary [i, i] (dog 4: empty).
let dogRows: [DogRow] = [
    DogRow(age: 1, nage: nil, dbl: 1.5, flt: 0.5, name: "Rex", nname: nil, flag: true, born: (100, 0),
           owner: 0, scores: [1, 2, 3], friends: [0, 1], tags: [("a", 1), ("b", 2)], labels: ["x"]),
    DogRow(age: 5, nage: 10, dbl: -2.25, flt: 2.5, name: "rex", nname: "x", flag: false, born: (100, 500),
           owner: 1, scores: [], friends: [], tags: [], labels: []),
    DogRow(age: 5, nage: -3, dbl: 0.0, flt: -1, name: "Bo", nname: "", flag: true, born: (50, 0),
           owner: nil, scores: [10], friends: [2], tags: [("c", 30)], labels: []),
    DogRow(age: -7, nage: 10, dbl: 100.0, flt: 100, name: "Alf", nname: nil, flag: false, born: (200, 0),
           owner: 0, scores: [5, 5], friends: [1], tags: [("a", 5)], labels: []),
    DogRow(age: 42, nage: nil, dbl: 1e300, flt: 3.25, name: "", nname: "Rex", flag: true, born: (-10, -5),
           owner: 2, scores: [-1, 100], friends: [0, 1, 2], tags: [("b", -1)], labels: []),
    DogRow(age: 0, nage: 0, dbl: -0.5, flt: 0.0, name: "Zed", nname: "y", flag: false, born: (100, 0),
           owner: 1, scores: [0], friends: [2, 2], tags: [("z", 0)], labels: []),
]

/// Builds the dog fixture in a write transaction and runs `body` in it.
func withDogs(_ body: (DogFixture) throws -> Void) throws {
    try withTempDir { dir in
        let db = try DB(dir.path())
        let txn = try db.begin(CS_TXN_WRITE)
        defer { _ = cs_txn_end(txn) }
        let city = try addTable(txn, "City")
        let person = try addTable(txn, "Person")
        let dog = try addTable(txn, "Dog")
        let cName = try addColumn(txn, city, "name", CS_TYPE_STRING)
        let cPop = try addColumn(txn, city, "pop", CS_TYPE_INT)
        let pName = try addColumn(txn, person, "name", CS_TYPE_STRING)
        let pAge = try addColumn(txn, person, "age", CS_TYPE_INT)
        let pCity = try addColumn(txn, person, "city", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: city)
        var cols: [String: UInt32] = [:]
        cols["age"] = try addColumn(txn, dog, "age", CS_TYPE_INT)
        cols["nage"] = try addColumn(txn, dog, "nage", CS_TYPE_INT, flags: CS_COL_NULLABLE)
        cols["dbl"] = try addColumn(txn, dog, "dbl", CS_TYPE_DOUBLE)
        cols["flt"] = try addColumn(txn, dog, "flt", CS_TYPE_FLOAT)
        cols["name"] = try addColumn(txn, dog, "name", CS_TYPE_STRING)
        cols["nname"] = try addColumn(txn, dog, "nname", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
        cols["flag"] = try addColumn(txn, dog, "flag", CS_TYPE_BOOL)
        cols["born"] = try addColumn(txn, dog, "born", CS_TYPE_TIMESTAMP)
        cols["oid"] = try addColumn(txn, dog, "oid", CS_TYPE_OBJECTID)
        cols["uid"] = try addColumn(txn, dog, "uid", CS_TYPE_UUID)
        cols["bin"] = try addColumn(txn, dog, "bin", CS_TYPE_BINARY)
        cols["owner"] = try addColumn(txn, dog, "owner", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: person)
        cols["scores"] = try addColumn(txn, dog, "scores", CS_TYPE_INT, coll: CS_COLL_LIST)
        cols["friends"] = try addColumn(txn, dog, "friends", CS_TYPE_LINK, coll: CS_COLL_LIST, target: person)
        cols["tags"] = try addColumn(txn, dog, "tags", CS_TYPE_INT, coll: CS_COLL_MAP)
        cols["labels"] = try addColumn(txn, dog, "labels", CS_TYPE_STRING, coll: CS_COLL_LIST)

        var c: [Int64] = []
        for (n, pop) in [("Oslo", Int64(700)), ("Rome", 2800)] {
            var o = try createObj(txn, city)
            try must(setVal(&o, cName, .str(n)))
            try must(setVal(&o, cPop, .int(pop)))
            c.append(o.key)
        }
        var p: [Int64] = []
        for (n, a, ci) in [("Ann", Int64(30), Optional(0)), ("Bob", 17, 1), ("Cy", 65, nil)] {
            var o = try createObj(txn, person)
            try must(setVal(&o, pName, .str(n)))
            try must(setVal(&o, pAge, .int(a)))
            try must(setVal(&o, pCity, ci.map { .link(city, c[$0]) } ?? .null))
            p.append(o.key)
        }
        var d: [Int64] = []
        for (i, r) in dogRows.enumerated() {
            var o = try createObj(txn, dog)
            let col = { (n: String) in cols[n]! }
            try must(setVal(&o, col("age"), .int(r.age)))
            try must(setVal(&o, col("nage"), r.nage.map { .int($0) } ?? .null))
            try must(setVal(&o, col("dbl"), .double(r.dbl)))
            try must(setVal(&o, col("flt"), .float(r.flt)))
            try must(setVal(&o, col("name"), .str(r.name)))
            try must(setVal(&o, col("nname"), r.nname.map { .str($0) } ?? .null))
            try must(setVal(&o, col("flag"), .bool(r.flag)))
            try must(setVal(&o, col("born"), .timestamp(r.born.0, r.born.1)))
            try must(setVal(&o, col("oid"), .objectId(oidBytes(UInt8(i + 1)))))
            try must(setVal(&o, col("uid"), .uuid(uuidBytes(UInt8(i + 0x10)))))
            try must(setVal(&o, col("bin"), .binary(i == 4 ? [] : [UInt8(i), UInt8(i)])))
            try must(setVal(&o, col("owner"), r.owner.map { .link(person, p[$0]) } ?? .null))
            var s = try openColl(&o, col("scores"))
            for v in r.scores { try must(listAppend(&s, .int(v))) }
            var f = try openColl(&o, col("friends"))
            for v in r.friends { try must(listAppend(&f, .link(person, p[v]))) }
            var t = try openColl(&o, col("tags"))
            for (key, v) in r.tags { try must(mapSet(&t, Array(key.utf8), .int(v))) }
            var l = try openColl(&o, col("labels"))
            for v in r.labels { try must(listAppend(&l, .str(v))) }
            d.append(o.key)
        }
        try body(DogFixture(txn: txn, dog: dog, person: person, city: city, d: d, p: p, c: c, cols: cols))
    }
}
