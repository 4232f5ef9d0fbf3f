// Lists, sets and maps of every element type, driven by seeded random operations and checked
// against Swift models, within a transaction, after commit and after a reopen.

import CStore
import Foundation
import Testing

private let typesByName: [String: cs_type] = [
    "int": CS_TYPE_INT, "bool": CS_TYPE_BOOL, "float": CS_TYPE_FLOAT, "double": CS_TYPE_DOUBLE,
    "string": CS_TYPE_STRING, "binary": CS_TYPE_BINARY, "timestamp": CS_TYPE_TIMESTAMP,
    "objectId": CS_TYPE_OBJECTID, "uuid": CS_TYPE_UUID, "decimal": CS_TYPE_DECIMAL,
    "link": CS_TYPE_LINK, "mixed": CS_TYPE_MIXED,
]

/// (element type, nullable) cases. Links are not nullable in lists and sets; Mixed always
/// admits null, so it is only tested with the nullable flag.
private let collectionCases: [String] = [
    "int", "int?", "bool", "bool?", "float", "float?", "double", "double?", "string", "string?",
    "binary", "binary?", "timestamp", "timestamp?", "objectId", "objectId?", "uuid", "uuid?",
    "decimal", "decimal?", "link", "mixed?",
]

private struct Fixture {
    var t: UInt32 = 0
    var target: UInt32 = 0
    var targetKeys: [Int64] = []
    var col: UInt32 = 0
    var owner: Int64 = 0
    var other: Int64 = 0
    var type: cs_type = CS_TYPE_INT
    var nullable = false

    /// A table with a collection column of `kind`, a link target table with 40 objects, and
    /// two owner objects.
    init(_ db: DB, caseName: String, kind: cs_coll_kind) throws {
        nullable = caseName.hasSuffix("?")
        type = typesByName[String(caseName.prefix { $0 != "?" })]!
        var fixture = self
        try db.write { txn throws in
            fixture.target = try addTable(txn, "Target")
            fixture.t = try addTable(txn, "Owner")
            let flags = fixture.nullable ? CS_COL_NULLABLE : 0
            fixture.col = try addColumn(txn, fixture.t, "c", fixture.type, coll: kind, flags: flags,
                                        target: fixture.type == CS_TYPE_LINK ? fixture.target : CS_NONE)
            for _ in 0..<40 { fixture.targetKeys.append(try createObj(txn, fixture.target).key) }
            fixture.owner = try createObj(txn, fixture.t).key
            fixture.other = try createObj(txn, fixture.t).key
        }
        self = fixture
    }

    func randomValue(_ rng: inout SeededRNG) -> Val {
        if nullable && rng.next() % 10 == 0 { return .null }
        if type == CS_TYPE_MIXED { return randomMixed(&rng, linkTarget: (target, targetKeys)) }
        return randomVal(type, &rng, linkTarget: (target, targetKeys))
    }

    func open(_ txn: OpaquePointer, _ key: Int64) throws -> cs_coll {
        var o = try openObj(txn, t, key)
        return try openColl(&o, col)
    }
}

private func firstDifference(_ a: [Val], _ b: [Val]) -> String {
    if a.count != b.count { return "sizes \(a.count) vs model \(b.count)" }
    for i in 0..<a.count where a[i] != b[i] { return "at \(i): \(a[i]) vs model \(b[i])" }
    return "none"
}

@Suite struct CollectionTests {
    // MARK: Lists

    @Test(arguments: collectionCases)
    func listRandomOperations(_ caseName: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let f = try Fixture(db, caseName: caseName, kind: CS_COLL_LIST)
            var rng = SeededRNG(seed: 0xC0FFEE ^ stableSeed(caseName))
            var model: [Val] = []
            let otherModel: [Val] = (0..<3).map { _ in f.randomValue(&rng) }
            let ops = 3000
            func runOps(_ range: Range<Int>) throws {
                let txn = try db.begin(CS_TXN_WRITE)
                var ended = false
                defer { if !ended { _ = cs_txn_end(txn) } }
                var c = try f.open(txn, f.owner)
                #expect(cs_coll_kind_of(&c) == CS_COLL_LIST)
                if range.lowerBound == 0 {
                    var oc = try f.open(txn, f.other)
                    for v in otherModel { check(listAppend(&oc, v)) }
                }
                for op in range {
                    let r = rng.next() % 100
                    if op == 300 {
                        try must(cs_coll_clear(&c), "cs_coll_clear")
                        model.removeAll()
                    } else if model.isEmpty || r < 35 {
                        let v = f.randomValue(&rng)
                        try must(listAppend(&c, v), "append \(v)")
                        model.append(v)
                    } else if r < 65 {
                        let i = Int(rng.next() % UInt64(model.count + 1))
                        let v = f.randomValue(&rng)
                        try must(listInsert(&c, i, v), "insert \(v) at \(i)")
                        model.insert(v, at: i)
                    } else if r < 80 {
                        let i = Int(rng.next() % UInt64(model.count))
                        try must(cs_list_erase(&c, i), "erase \(i)")
                        model.remove(at: i)
                    } else if r < 90 {
                        let i = Int(rng.next() % UInt64(model.count))
                        let v = f.randomValue(&rng)
                        try must(listSet(&c, i, v), "set \(i) to \(v)")
                        model[i] = v
                    } else if r < 95 {
                        let from = Int(rng.next() % UInt64(model.count))
                        let to = Int(rng.next() % UInt64(model.count))
                        try must(cs_list_move(&c, from, to), "move \(from) -> \(to)")
                        let e = model.remove(at: from)
                        model.insert(e, at: to)
                    } else {
                        let i = Int(rng.next() % UInt64(model.count))
                        let j = Int(rng.next() % UInt64(model.count))
                        try must(cs_list_swap(&c, i, j), "swap \(i) \(j)")
                        model.swapAt(i, j)
                    }
                    if op % 500 == 499 {
                        let got = try listAll(&c)
                        #expect(got == model, "after op \(op): first difference \(firstDifference(got, model))")
                        if got != model { throw CStoreError(code: 0, message: "", context: "list diverged") }
                    } else if !model.isEmpty && op % 7 == 0 {
                        let i = Int(rng.next() % UInt64(model.count))
                        #expect(listGet(&c, i) == model[i], "get \(i) after op \(op)")
                    }
                }
                try must(cs_txn_commit(txn), "commit")
                ended = true
                check(cs_txn_end(txn))
            }
            try runOps(0..<(ops / 2))
            try runOps((ops / 2)..<ops)
            #expect(model.count > 1000, "the test grows the list past 1000 elements")
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    var c = try f.open(txn, f.owner)
                    let got = try listAll(&c)
                    #expect(got == model, "\(phase): first difference \(firstDifference(got, model))")
                    var oc = try f.open(txn, f.other)
                    #expect(try listAll(&oc) == otherModel, "\(phase): the other object's list")
                    var x = cs_value()
                    expectCode(cs_list_get(&c, model.count, &x), CS_RANGE, "get at size")
                }
                db.verify(phase)
            }
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                let v = f.randomValue(&rng)
                expectCode(listInsert(&c, model.count + 1, v), CS_RANGE, "insert past the end")
                expectCode(listSet(&c, model.count, v), CS_RANGE, "set at size")
                expectCode(cs_list_erase(&c, model.count), CS_RANGE, "erase at size")
                expectCode(cs_list_move(&c, 0, model.count), CS_RANGE, "move to size")
                expectCode(cs_list_swap(&c, model.count, 0), CS_RANGE, "swap at size")
                if !f.nullable && f.type != CS_TYPE_MIXED {
                    expectCode(listAppend(&c, .null), CS_TYPE, "null into a non-nullable list")
                }
                #expect(try collSize(&c) == model.count, "failed operations change nothing")
            }
        }
    }

    // MARK: Sets

    @Test(arguments: collectionCases)
    func setRandomOperations(_ caseName: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let f = try Fixture(db, caseName: caseName, kind: CS_COLL_SET)
            var rng = SeededRNG(seed: 0x5E7 ^ stableSeed(caseName))
            var model: [Val] = [] // sorted by cs_value_compare, no two comparing equal
            func position(_ v: Val) -> (Int, Bool) {
                var lo = 0, hi = model.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    let c = compareVals(model[mid], v)
                    if c == 0 { return (mid, true) }
                    if c < 0 { lo = mid + 1 } else { hi = mid }
                }
                return (lo, false)
            }
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                #expect(cs_coll_kind_of(&c) == CS_COLL_SET)
                var history: [Val] = []
                for op in 0..<1500 {
                    let r = rng.next() % 100
                    if r < 70 || history.isEmpty {
                        let v = f.randomValue(&rng)
                        history.append(v)
                        let (rc, inserted) = setInsert(&c, v)
                        try must(rc, "insert \(v)")
                        let (pos, found) = position(v)
                        #expect(inserted == !found, "inserted flag for \(v) at op \(op)")
                        if !found { model.insert(v, at: pos) }
                        // Inserting it again is a no-op.
                        let (rc2, again) = setInsert(&c, v)
                        check(rc2)
                        #expect(!again, "duplicate insert of \(v)")
                    } else if r < 90 {
                        let v = history[Int(rng.next() % UInt64(history.count))]
                        let (rc, erased) = setErase(&c, v)
                        try must(rc, "erase \(v)")
                        let (pos, found) = position(v)
                        #expect(erased == found, "erased flag for \(v) at op \(op)")
                        if found { model.remove(at: pos) }
                    } else {
                        let v = rng.next() % 2 == 0 && !history.isEmpty
                            ? history[Int(rng.next() % UInt64(history.count))] : f.randomValue(&rng)
                        let (rc, idx) = setFind(&c, v)
                        let (pos, found) = position(v)
                        if found {
                            #expect(rc == Int32(CS_OK) && idx == pos, "find \(v): rc \(rc) index \(idx), model \(pos)")
                        } else {
                            expectCode(rc, CS_NOTFOUND, "find missing \(v)")
                        }
                    }
                    if op % 300 == 299 {
                        let got = try listAll(&c)
                        #expect(got == model, "after op \(op): \(firstDifference(got, model))")
                    }
                }
            }
            // The stored order is ascending by cs_value_compare.
            for i in 1..<max(model.count, 1) {
                #expect(compareVals(model[i - 1], model[i]) < 0)
            }
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    var c = try f.open(txn, f.owner)
                    let got = try listAll(&c)
                    #expect(got == model, "\(phase): \(firstDifference(got, model))")
                    for (i, v) in model.enumerated() where i % 5 == 0 {
                        let (rc, idx) = setFind(&c, v)
                        #expect(rc == Int32(CS_OK) && idx == i, "\(phase): find \(v)")
                    }
                }
                db.verify(phase)
            }
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                try must(cs_coll_clear(&c), "cs_coll_clear")
                #expect(try collSize(&c) == 0)
            }
            try db.read { txn throws in
                var c = try f.open(txn, f.owner)
                #expect(try collSize(&c) == 0, "cleared set stays empty")
            }
            db.verify("after clear")
        }
    }

    @Test func setOrderFollowsValueCompareAcrossMixedKinds() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let f = try Fixture(db, caseName: "mixed?", kind: CS_COLL_SET)
            let link = Val.link(f.target, f.targetKeys[3])
            let uuid = Val.uuid(Array(0..<16))
            let oid = Val.objectId(Array(0..<12))
            // Inserted in reverse of the documented order.
            let ordered: [Val] = [.null, .bool(false), .bool(true), .double(-5.5), .int(-1), .float(0.5),
                                  .int(2), .double(1e10), .str(""), .str("a"), .str("b"),
                                  .binary([]), .binary([0]), .timestamp(-1, 0), .timestamp(5, 0), oid, uuid, link]
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                for v in ordered.reversed() {
                    let (rc, inserted) = setInsert(&c, v)
                    check(rc, "insert \(v)")
                    #expect(inserted)
                }
                // Numeric equality across types: 2.0 and Int 2 are the same element.
                let (rc, inserted) = setInsert(&c, .double(2.0))
                check(rc)
                #expect(!inserted, "Double 2.0 duplicates Int 2 in a Mixed set")
            }
            try db.reopen()
            try db.read { txn throws in
                var c = try f.open(txn, f.owner)
                let got = try listAll(&c)
                #expect(got == ordered, "\(firstDifference(got, ordered))")
            }
            db.verify()
        }
    }

    // MARK: Maps

    @Test(arguments: collectionCases)
    func mapRandomOperations(_ caseName: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let f = try Fixture(db, caseName: caseName, kind: CS_COLL_MAP)
            var rng = SeededRNG(seed: 0x3A9 ^ stableSeed(caseName))
            var keyPool: [[UInt8]] = ["a", "b", "ab", "B", "Grüße", "日本", "z", "key 1", "key 10", "key 2"].map { Array($0.utf8) }
            for i in 0..<290 { keyPool.append(Array("k\(i * 7919 % 1000)".utf8)) }
            var model: [[UInt8]: Val] = [:]
            func sortedModel() -> [([UInt8], Val)] {
                model.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            }
            func checkAll(_ c: inout cs_coll, _ phase: String) throws {
                let got = try mapAll(&c)
                let want = sortedModel()
                #expect(got.map { $0.0 } == want.map { $0.0 }, "\(phase): keys in byte order")
                #expect(got.map { $0.1 } == want.map { $0.1 }, "\(phase): values")
            }
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                #expect(cs_coll_kind_of(&c) == CS_COLL_MAP)
                for op in 0..<2000 {
                    let key = keyPool[Int(rng.next() % UInt64(keyPool.count))]
                    let r = rng.next() % 100
                    if r < 55 {
                        let v = f.randomValue(&rng)
                        try must(mapSet(&c, key, v), "set \(key) to \(v)")
                        model[key] = v
                    } else if r < 75 {
                        let (rc, erased) = mapErase(&c, key)
                        try must(rc, "erase")
                        #expect(erased == (model[key] != nil), "erased flag at op \(op)")
                        model[key] = nil
                    } else if r < 90 {
                        let (rc, v) = mapGet(&c, key)
                        if let m = model[key] {
                            #expect(rc == Int32(CS_OK) && v == m, "get at op \(op): \(codeName(rc)) \(String(describing: v)) vs \(m)")
                        } else {
                            expectCode(rc, CS_NOTFOUND, "get missing key at op \(op)")
                        }
                    } else {
                        let (rc, idx) = mapFind(&c, key)
                        if model[key] != nil {
                            let want = model.keys.filter { $0.lexicographicallyPrecedes(key) }.count
                            #expect(rc == Int32(CS_OK) && idx == want, "find at op \(op)")
                        } else {
                            expectCode(rc, CS_NOTFOUND, "find missing key at op \(op)")
                        }
                    }
                    if op % 400 == 399 { try checkAll(&c, "after op \(op)") }
                }
                #expect(try collSize(&c) == model.count)
            }
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    var c = try f.open(txn, f.owner)
                    try checkAll(&c, phase)
                    var k = cs_value(), v = cs_value()
                    expectCode(cs_map_get_at(&c, model.count, &k, &v), CS_RANGE, "get_at at size")
                }
                db.verify(phase)
            }
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                try must(cs_coll_clear(&c), "cs_coll_clear")
            }
            model.removeAll()
            try db.read { txn throws in
                var c = try f.open(txn, f.owner)
                try checkAll(&c, "after clear")
            }
        }
    }

    @Test func mapOverwriteKeepsOneEntry() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let f = try Fixture(db, caseName: "string?", kind: CS_COLL_MAP)
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                check(mapSet(&c, Array("k".utf8), .str("one")))
                check(mapSet(&c, Array("k".utf8), .str("two")))
                check(mapSet(&c, Array("k".utf8), .null))
                check(mapSet(&c, Array("j".utf8), .str("x")))
                #expect(try collSize(&c) == 2)
            }
            try db.reopen()
            try db.read { txn throws in
                var c = try f.open(txn, f.owner)
                let all = try mapAll(&c)
                #expect(all.map { $0.0 } == [Array("j".utf8), Array("k".utf8)])
                #expect(all.map { $0.1 } == [.str("x"), .null])
                let (rc, v) = mapGet(&c, Array("k".utf8))
                #expect(rc == Int32(CS_OK) && v == .null, "a null value is present, not missing")
                let (rc2, idx) = mapFind(&c, Array("k".utf8))
                #expect(rc2 == Int32(CS_OK) && idx == 1)
            }
        }
    }

    @Test func collectionsReadInLaterTransactionsAndBigListsSplit() throws {
        // A list of 20,000 ints built by appends, checked by sum and at sampled positions.
        try withTempDir { dir in
            let db = try DB(dir.path())
            let f = try Fixture(db, caseName: "int", kind: CS_COLL_LIST)
            let n = 20_000
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                for i in 0..<n { try must(listAppend(&c, .int(Int64(i * 3))), "append") }
            }
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                // Insert at the front and in the middle of the big list.
                try must(listInsert(&c, 0, .int(-1)), "insert front")
                try must(listInsert(&c, n / 2, .int(-2)), "insert middle")
            }
            try db.reopen()
            try db.read { txn throws in
                var c = try f.open(txn, f.owner)
                let all = try listAll(&c)
                #expect(all.count == n + 2)
                var expected: [Val] = (0..<n).map { .int(Int64($0 * 3)) }
                expected.insert(.int(-1), at: 0)
                expected.insert(.int(-2), at: n / 2)
                #expect(all == expected, "\(firstDifference(all, expected))")
            }
            db.verify()
        }
    }

    @Test func bigValuesAndUnusualMapKeys() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let lf = try Fixture(db, caseName: "binary", kind: CS_COLL_LIST)
            var rng = SeededRNG(seed: 31)
            let values: [Val] = [.binary(randomBytes(100 * 1024, &rng)), .binary([]), .binary(randomBytes(5000, &rng)),
                                 .binary(patternBytes(1024 * 1024, seed: 2))]
            let keys: [[UInt8]] = [[], [0], [0, 0], Array("a".utf8), [0x61, 0], Array(repeating: 0x6B, count: 2048), [0xFF]]
            var mt: UInt32 = 0
            var mc: UInt32 = 0
            var mk: Int64 = 0
            try db.write { txn throws in
                var c = try lf.open(txn, lf.owner)
                for v in values { check(listAppend(&c, v)) }
                mt = try addTable(txn, "M")
                mc = try addColumn(txn, mt, "m", CS_TYPE_STRING, coll: CS_COLL_MAP)
                var o = try createObj(txn, mt)
                mk = o.key
                var m = try openColl(&o, mc)
                for (i, k) in keys.reversed().enumerated() {
                    check(mapSet(&m, k, .string(randomLetters(i * 3000, &rng))), "map key \(k.prefix(4)) (\(k.count) bytes)")
                }
            }
            try db.reopen()
            try db.read { txn throws in
                var c = try lf.open(txn, lf.owner)
                #expect(try listAll(&c) == values)
                var o = try openObj(txn, mt, mk)
                var m = try openColl(&o, mc)
                let all = try mapAll(&m)
                #expect(all.map { $0.0 } == keys, "keys in byte order, the empty key first")
                for (k, v) in all {
                    guard let i = keys.reversed().firstIndex(of: k) else { continue }
                    guard case .string(let b) = v else { Issue.record("value of \(k.count)-byte key is \(v)"); continue }
                    #expect(b.count == keys.reversed().distance(from: keys.reversed().startIndex, to: i) * 3000)
                }
            }
            db.verify()
        }
    }

    /// Collections grown to 12,000 elements (several tree levels) and erased back to 50 at
    /// random positions, so the trees split and then merge.
    @Test(arguments: ["list", "set", "map"])
    func bigCollectionsGrowAndShrink(_ kind: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let collKind = kind == "list" ? CS_COLL_LIST : (kind == "set" ? CS_COLL_SET : CS_COLL_MAP)
            let f = try Fixture(db, caseName: "string", kind: collKind)
            var rng = SeededRNG(seed: 0xB16 ^ stableSeed(kind))
            let n = 12_000
            var list: [Val] = []
            var sorted: [[UInt8]] = []       // set elements or map keys, by bytes
            var values: [[UInt8]: Val] = [:] // map values
            func word(_ i: Int) -> [UInt8] { Array("w\((i &* 7919) % 1_000_003)-\(i % 97)".utf8) }
            func lowerBound(_ w: [UInt8]) -> Int {
                var lo = 0, hi = sorted.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if sorted[mid].lexicographicallyPrecedes(w) { lo = mid + 1 } else { hi = mid }
                }
                return lo
            }
            func checkAll(_ c: inout cs_coll, _ phase: String) throws {
                switch kind {
                case "list":
                    let got = try listAll(&c)
                    #expect(got == list, "\(phase): \(firstDifference(got, list))")
                case "set":
                    let got = try listAll(&c)
                    let want = sorted.map { Val.string($0) }
                    #expect(got == want, "\(phase): \(firstDifference(got, want))")
                default:
                    let got = try mapAll(&c)
                    #expect(got.map { $0.0 } == sorted, "\(phase): keys")
                    #expect(got.map { $0.1 } == sorted.map { values[$0]! }, "\(phase): values")
                }
            }
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                for i in 0..<n {
                    let w = word(i)
                    switch kind {
                    case "list":
                        let at = list.isEmpty ? 0 : Int(rng.next() % UInt64(list.count + 1))
                        try must(listInsert(&c, at, .string(w)), "insert")
                        list.insert(.string(w), at: at)
                    case "set":
                        let (rc, inserted) = setInsert(&c, .string(w))
                        try must(rc, "insert")
                        let pos = lowerBound(w)
                        let present = pos < sorted.count && sorted[pos] == w
                        #expect(inserted == !present)
                        if !present { sorted.insert(w, at: pos) }
                    default:
                        let v = Val.string(Array("v\(i)".utf8))
                        try must(mapSet(&c, w, v), "map set")
                        let pos = lowerBound(w)
                        if !(pos < sorted.count && sorted[pos] == w) { sorted.insert(w, at: pos) }
                        values[w] = v
                    }
                }
                try checkAll(&c, "after growing")
            }
            db.verify("after growing")
            try db.write { txn throws in
                var c = try f.open(txn, f.owner)
                var size = try collSize(&c)
                var step = 0
                while size > 50 {
                    let i = Int(rng.next() % UInt64(size))
                    switch kind {
                    case "list":
                        try must(cs_list_erase(&c, i), "erase")
                        list.remove(at: i)
                    case "set":
                        let (rc, erased) = setErase(&c, .string(sorted[i]))
                        try must(rc, "erase")
                        #expect(erased)
                        sorted.remove(at: i)
                    default:
                        let key = sorted.remove(at: i)
                        let (rc, erased) = mapErase(&c, key)
                        try must(rc, "erase")
                        #expect(erased)
                        values[key] = nil
                    }
                    size -= 1
                    step += 1
                    if step % 3000 == 0 { try checkAll(&c, "after \(step) erases") }
                }
                try checkAll(&c, "after shrinking")
            }
            db.verify("after shrinking")
            try db.reopen()
            try db.read { txn throws in
                var c = try f.open(txn, f.owner)
                try checkAll(&c, "after reopen")
            }
        }
    }
}
