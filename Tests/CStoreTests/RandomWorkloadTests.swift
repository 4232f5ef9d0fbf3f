// A seeded random workload over two linked tables, checked against a Swift model after every
// commit or rollback (values, link lists, backlink counts) and by cs_db_verify.

import CStore
import Foundation
import Testing

private struct ModelA: Equatable {
    var n: Int64 = 0
    var s: Val = .null          // nullable string
    var one: Int64? = nil       // nullable link to B
    var many: [Int64] = []      // list of links to B
}

private struct Model: Equatable {
    var a: [Int64: ModelA] = [:]
    var b: [Int64: Int64] = [:]

    mutating func deleteB(_ key: Int64) {
        b[key] = nil
        for (k, var x) in a {
            if x.one == key { x.one = nil }
            x.many.removeAll { $0 == key }
            a[k] = x
        }
    }
}

@Suite struct RandomWorkloadTests {
    @Test(arguments: [1 as UInt64, 2, 3])
    func modelCheckedWorkload(seed: UInt64) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (ta, tb, an, asx, aone, amany, bn): (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0, 0)
            try db.write { txn throws in
                ta = try addTable(txn, "A")
                tb = try addTable(txn, "B")
                an = try addColumn(txn, ta, "n", CS_TYPE_INT)
                asx = try addColumn(txn, ta, "s", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
                aone = try addColumn(txn, ta, "one", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: tb)
                amany = try addColumn(txn, ta, "many", CS_TYPE_LINK, coll: CS_COLL_LIST, target: tb)
                bn = try addColumn(txn, tb, "n", CS_TYPE_INT)
            }
            var rng = SeededRNG(seed: seed)
            var model = Model()
            var committed = model

            func pick<K>(_ d: [Int64: K]) -> Int64? {
                guard !d.isEmpty else { return nil }
                let keys = d.keys.sorted()
                return keys[Int(rng.next() % UInt64(keys.count))]
            }

            func compare(_ txn: OpaquePointer, _ phase: String) throws {
                let aKeys = try allKeys(txn, ta)
                let bKeys = try allKeys(txn, tb)
                #expect(aKeys == model.a.keys.sorted(), "\(phase): keys of A")
                #expect(bKeys == model.b.keys.sorted(), "\(phase): keys of B")
                var bad = 0
                for k in aKeys {
                    guard let want = model.a[k] else { continue }
                    var o = try openObj(txn, ta, k)
                    var got = ModelA()
                    got.n = try getInt(&o, an)
                    got.s = getVal(&o, asx) ?? .int(-1)
                    if case .link(_, let lk) = getVal(&o, aone) ?? .null { got.one = lk }
                    var l = try openColl(&o, amany)
                    got.many = try listAll(&l).map { v -> Int64 in
                        if case .link(_, let lk) = v { return lk }
                        return -1
                    }
                    if got != want {
                        bad += 1
                        if bad <= 3 { Issue.record("\(phase): A \(k) is \(got), model \(want)") }
                    }
                }
                for k in bKeys {
                    guard let want = model.b[k] else { continue }
                    var o = try openObj(txn, tb, k)
                    let n = try getInt(&o, bn)
                    var c1 = 0, c2 = 0
                    check(cs_obj_backlink_count(&o, ta, aone, &c1))
                    check(cs_obj_backlink_count(&o, ta, amany, &c2))
                    let w1 = model.a.values.filter { $0.one == k }.count
                    let w2 = model.a.values.reduce(0) { $0 + $1.many.filter { $0 == k }.count }
                    if n != want || c1 != w1 || c2 != w2 {
                        bad += 1
                        if bad <= 3 { Issue.record("\(phase): B \(k) n \(n) backlinks \(c1)/\(c2), model \(want) \(w1)/\(w2)") }
                    }
                }
                #expect(bad == 0, "\(phase): \(bad) objects differ")
                if bad > 0 { throw CStoreError(code: 0, message: phase, context: "model check") }
            }

            for round in 0..<40 {
                let txn = try db.begin(CS_TXN_WRITE)
                var ended = false
                defer { if !ended { _ = cs_txn_end(txn) } }
                for _ in 0..<Int(rng.next() % 120) {
                    switch rng.next() % 12 {
                    case 0, 1:
                        var o = try createObj(txn, tb)
                        let n = Int64(bitPattern: rng.next()) >> Int64(rng.next() % 64)
                        try must(cs_obj_set_int(&o, bn, n), "set B.n")
                        model.b[o.key] = n
                    case 2, 3:
                        let o = try createObj(txn, ta)
                        model.a[o.key] = ModelA()
                    case 4:
                        if let k = pick(model.b) {
                            var o = try openObj(txn, tb, k)
                            try must(cs_obj_delete(&o), "delete B")
                            model.deleteB(k)
                        }
                    case 5:
                        if let k = pick(model.a) {
                            var o = try openObj(txn, ta, k)
                            try must(cs_obj_delete(&o), "delete A")
                            model.a[k] = nil
                        }
                    case 6:
                        if let k = pick(model.a) {
                            var o = try openObj(txn, ta, k)
                            let n = Int64(rng.next() % 1000) - 500
                            try must(cs_obj_set_int(&o, an, n), "set A.n")
                            model.a[k]!.n = n
                        }
                    case 7:
                        if let k = pick(model.a) {
                            var o = try openObj(txn, ta, k)
                            let v: Val = rng.next() % 4 == 0 ? .null : .string(randomLetters(Int(rng.next() % 300), &rng))
                            try must(setVal(&o, asx, v), "set A.s")
                            model.a[k]!.s = v
                        }
                    case 8:
                        if let k = pick(model.a) {
                            var o = try openObj(txn, ta, k)
                            let target = rng.next() % 5 == 0 ? nil : pick(model.b)
                            try must(setVal(&o, aone, target.map { .link(tb, $0) } ?? .null), "set A.one")
                            model.a[k]!.one = target
                        }
                    case 9, 10:
                        if let k = pick(model.a), let target = pick(model.b) {
                            var o = try openObj(txn, ta, k)
                            var l = try openColl(&o, amany)
                            let i = Int(rng.next() % UInt64(model.a[k]!.many.count + 1))
                            try must(listInsert(&l, i, .link(tb, target)), "insert into A.many")
                            model.a[k]!.many.insert(target, at: i)
                        }
                    default:
                        if let k = pick(model.a), !model.a[k]!.many.isEmpty {
                            var o = try openObj(txn, ta, k)
                            var l = try openColl(&o, amany)
                            let i = Int(rng.next() % UInt64(model.a[k]!.many.count))
                            try must(cs_list_erase(&l, i), "erase from A.many")
                            model.a[k]!.many.remove(at: i)
                        }
                    }
                }
                try compare(txn, "round \(round) before commit")
                if rng.next() % 5 == 0 {
                    try must(cs_txn_rollback(txn), "rollback")
                    model = committed
                    try compare(txn, "round \(round) after rollback")
                } else {
                    try must(cs_txn_commit(txn), "commit")
                    committed = model
                }
                ended = true
                check(cs_txn_end(txn))
                check(cs_db_verify(db.h), "cs_db_verify after round \(round)")
            }
            try db.reopen()
            try db.read { txn throws in try compare(txn, "after reopen") }
            db.verify("after reopen")
            #expect(model.a.count > 20 && model.b.count > 20, "the workload leaves data behind")
        }
    }
}
