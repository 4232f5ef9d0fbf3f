// The change history (docs/FORMAT.md §8): for random write sequences, the records between two
// versions must describe exactly the difference between the two snapshots, computed here by
// reading both snapshots directly.

import CStore
import Foundation
import Testing

/// One object as read from a snapshot.
private struct Row: Equatable {
    var v: Val
    var s: Val
    var list: [Val]
    var set: [Val]
    var map: [([UInt8], Val)]

    static func == (a: Row, b: Row) -> Bool {
        a.v == b.v && a.s == b.s && a.list == b.list && a.set == b.set &&
            a.map.count == b.map.count && zip(a.map, b.map).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}

private struct Columns {
    var table: UInt32 = 0
    var v: UInt32 = 0
    var s: UInt32 = 0
    var list: UInt32 = 0
    var set: UInt32 = 0
    var map: UInt32 = 0
}

private func snapshot(_ txn: OpaquePointer, _ c: Columns) throws -> [Int64: Row] {
    var out: [Int64: Row] = [:]
    for key in try allKeys(txn, c.table) {
        var o = try openObj(txn, c.table, key)
        var l = try openColl(&o, c.list)
        var st = try openColl(&o, c.set)
        var m = try openColl(&o, c.map)
        out[key] = Row(v: getVal(&o, c.v) ?? .null, s: getVal(&o, c.s) ?? .null,
                       list: try listAll(&l), set: try listAll(&st), map: try mapAll(&m))
    }
    return out
}

/// The changes after `since` as read through cs_changes_* (shared by the C tests).
func changes(_ txn: OpaquePointer, since: UInt64) throws -> [cs_change] {
    var h: OpaquePointer?
    try must(cs_changes_open(txn, since, &h), "cs_changes_open(since \(since))")
    defer { cs_changes_close(h) }
    var out: [cs_change] = []
    var c = cs_change()
    while true {
        let rc = cs_changes_next(h, &c)
        if rc == Int32(CS_NOTFOUND) { break }
        try must(rc, "cs_changes_next")
        out.append(c)
    }
    return out
}

@Suite struct ChangeLogTests {
    /// Random writes in many transactions while a reader pins the first version; then the log
    /// from that version is replayed against the two snapshots.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func logMatchesTheSnapshotDifference(seed: UInt64) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = Columns()
            try db.write { txn throws in
                c.table = try addTable(txn, "T")
                c.v = try addColumn(txn, c.table, "v", CS_TYPE_INT)
                c.s = try addColumn(txn, c.table, "s", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
                c.list = try addColumn(txn, c.table, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
                c.set = try addColumn(txn, c.table, "st", CS_TYPE_STRING, coll: CS_COLL_SET)
                c.map = try addColumn(txn, c.table, "m", CS_TYPE_INT, coll: CS_COLL_MAP)
                for i in 0..<40 {
                    var o = try createObj(txn, c.table)
                    check(cs_obj_set_int(&o, c.v, Int64(i)))
                    var l = try openColl(&o, c.list)
                    for j in 0..<(i % 5) { check(listAppend(&l, .int(Int64(j)))) }
                }
            }
            let pinned = try db.begin(CS_TXN_READ)
            defer { check(cs_txn_end(pinned)) }
            let since = cs_txn_version(pinned)
            let before = try snapshot(pinned, c)

            var rng = SeededRNG(seed: seed)
            var counter: Int64 = 1000 // every written int is new, so every SET changes a value
            for _ in 0..<30 {
                try db.write { txn throws in
                    for _ in 0..<Int.random(in: 1...12, using: &rng) {
                        let keys = try allKeys(txn, c.table)
                        let op = Int.random(in: 0..<12, using: &rng)
                        if op == 0 || keys.isEmpty {
                            var o = try createObj(txn, c.table)
                            counter += 1
                            check(cs_obj_set_int(&o, c.v, counter))
                            continue
                        }
                        var o = try openObj(txn, c.table, keys.randomElement(using: &rng)!)
                        counter += 1
                        switch op {
                        case 1: check(cs_obj_delete(&o))
                        case 2: check(cs_obj_set_int(&o, c.v, counter))
                        case 3: check(setVal(&o, c.s, .string(Array("s\(counter)".utf8))))
                        case 4, 5:
                            var l = try openColl(&o, c.list)
                            let n = try collSize(&l)
                            check(listInsert(&l, Int.random(in: 0...n, using: &rng), .int(counter)))
                        case 6:
                            var l = try openColl(&o, c.list)
                            let n = try collSize(&l)
                            if n > 0 { check(cs_list_erase(&l, Int.random(in: 0..<n, using: &rng))) }
                        case 7:
                            var l = try openColl(&o, c.list)
                            let n = try collSize(&l)
                            if n > 1 {
                                let a = Int.random(in: 0..<n, using: &rng), b = Int.random(in: 0..<n, using: &rng)
                                if a != b {
                                    if Bool.random(using: &rng) { check(cs_list_move(&l, a, b)) } else { check(cs_list_swap(&l, a, b)) }
                                }
                            } else if n == 1 {
                                check(listSet(&l, 0, .int(counter)))
                            }
                        case 8:
                            var l = try openColl(&o, c.list)
                            if try collSize(&l) > 0 && Int.random(in: 0..<4, using: &rng) == 0 { check(cs_coll_clear(&l)) }
                        case 9:
                            var st = try openColl(&o, c.set)
                            let (rc, _) = setInsert(&st, .string(Array("t\(counter % 50)".utf8)))
                            check(rc)
                        case 10:
                            var st = try openColl(&o, c.set)
                            let n = try collSize(&st)
                            if n > 0, let v = listGet(&st, Int.random(in: 0..<n, using: &rng)) { _ = setErase(&st, v) }
                        default:
                            var m = try openColl(&o, c.map)
                            let key = Array("k\(counter % 7)".utf8)
                            if Bool.random(using: &rng) { check(mapSet(&m, key, .int(counter))) } else { _ = mapErase(&m, key) }
                        }
                    }
                }
            }
            let after = try db.begin(CS_TXN_READ)
            defer { check(cs_txn_end(after)) }
            let now = try snapshot(after, c)
            let log = try changes(after, since: since)
            #expect(!log.isEmpty)
            #expect(log.allSatisfy { $0.version > since && $0.version <= cs_txn_version(after) })
            #expect(zip(log, log.dropFirst()).allSatisfy { $0.version <= $1.version }, "records in commit order")

            // Objects: net creations and deletions.
            var created = Set<Int64>(), deleted = Set<Int64>()
            var touched: [Int64: Set<UInt32>] = [:]
            // Collections: replay positions on a model of "which old element sits here".
            var models: [Int64: [UInt32: [Int?]]] = [:]
            func model(_ key: Int64, _ col: UInt32) -> [Int?] {
                if let m = models[key]?[col] { return m }
                guard let row = before[key] else { return [] }
                let n = col == c.list ? row.list.count : col == c.set ? row.set.count : row.map.count
                return Array(0..<n).map { Optional($0) }
            }
            for r in log {
                #expect(r.table == c.table || r.kind == CS_CHANGE_SCHEMA)
                switch r.kind {
                case CS_CHANGE_CREATE:
                    for k in r.key..<(r.key + r.a) { created.insert(k) }
                case CS_CHANGE_DELETE:
                    for k in r.key..<(r.key + r.a) {
                        if created.contains(k) { created.remove(k) } else { deleted.insert(k) }
                        touched[k] = nil
                        models[k] = nil
                    }
                case CS_CHANGE_SET:
                    touched[r.key, default: []].insert(r.col)
                default:
                    touched[r.key, default: []].insert(r.col)
                    // Objects created after the pinned version have no old state to replay on.
                    guard before[r.key] != nil else { continue }
                    var m = model(r.key, r.col)
                    let a0 = Int(r.a), b0 = Int(r.b)
                    let inRange: Bool
                    switch r.kind {
                    case CS_CHANGE_INSERT: inRange = a0 >= 0 && a0 <= m.count
                    case CS_CHANGE_MOVE, CS_CHANGE_SWAP: inRange = a0 >= 0 && a0 < m.count && b0 >= 0 && b0 < m.count
                    case CS_CHANGE_CLEAR: inRange = true
                    default: inRange = a0 >= 0 && a0 < m.count
                    }
                    guard inRange else {
                        Issue.record("record \(r.kind) at \(a0)/\(b0) outside the replayed size \(m.count) for object \(r.key) col \(r.col)")
                        continue
                    }
                    let a = Int(r.a), b = Int(r.b)
                    switch r.kind {
                    case CS_CHANGE_INSERT: m.insert(nil, at: a)
                    case CS_CHANGE_ERASE: m.remove(at: a)
                    case CS_CHANGE_REPLACE: m[a] = nil
                    case CS_CHANGE_MOVE: let x = m.remove(at: a); m.insert(x, at: b)
                    case CS_CHANGE_SWAP: m.swapAt(a, b)
                    case CS_CHANGE_CLEAR: m = []
                    default: Issue.record("unexpected record kind \(r.kind)")
                    }
                    models[r.key, default: [:]][r.col] = m
                }
            }
            #expect(created == Set(now.keys).subtracting(before.keys), "created objects")
            #expect(deleted == Set(before.keys).subtracting(now.keys), "deleted objects")

            for (key, old) in before {
                guard let new = now[key] else { continue }
                let cols = touched[key] ?? []
                // Scalars: every written value was new, so logged == changed.
                #expect(cols.contains(c.v) == (old.v != new.v), "object \(key): v logged iff changed")
                #expect(cols.contains(c.s) == (old.s != new.s), "object \(key): s logged iff changed")
                // Collections: untouched ones are equal; touched ones replay to the new shape.
                for (col, oldVals, newVals) in [(c.list, old.list, new.list), (c.set, old.set, new.set)] {
                    guard cols.contains(col) else {
                        #expect(oldVals == newVals, "object \(key) col \(col) changed without a record")
                        continue
                    }
                    let m = model(key, col)
                    #expect(m.count == newVals.count, "object \(key) col \(col): replayed length")
                    for (pos, src) in m.enumerated() where pos < newVals.count {
                        if let j = src { #expect(newVals[pos] == oldVals[j], "object \(key) col \(col) position \(pos) kept element \(j)") }
                    }
                }
                if cols.contains(c.map) {
                    let m = model(key, c.map)
                    #expect(m.count == new.map.count, "object \(key): replayed map size")
                    for (pos, src) in m.enumerated() where pos < new.map.count {
                        if let j = src {
                            #expect(new.map[pos].0 == old.map[j].0 && new.map[pos].1 == old.map[j].1, "object \(key) map position \(pos)")
                        }
                    }
                } else {
                    #expect(old.map.count == new.map.count && zip(old.map, new.map).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 },
                            "object \(key): map changed without a record")
                }
            }
        }
    }

    @Test func historyIsTrimmedWithoutAPinAndKeptWithOne() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
            }
            let start = cs_db_version(db.h)
            let reader = try db.begin(CS_TXN_READ)
            for _ in 0..<5 { try db.write { txn throws in _ = try createObj(txn, t) } }
            // Kept while a transaction pins the start version.
            check(cs_txn_advance(reader, nil))
            let log = try changes(reader, since: start)
            #expect(log.map(\.kind) == Array(repeating: CS_CHANGE_CREATE, count: 5))
            #expect(log.map(\.key) == [0, 1, 2, 3, 4] && log.allSatisfy { $0.a == 1 })
            #expect(log.map(\.version) == Array((start + 1)...(start + 5)))
            // Nothing changed since the newest version.
            #expect(try changes(reader, since: cs_txn_version(reader)).isEmpty)
            check(cs_txn_end(reader))
            // Once nobody pins it, the next commit trims the history.
            try db.write { txn throws in _ = try createObj(txn, t) }
            let r2 = try db.begin(CS_TXN_READ)
            var h: OpaquePointer?
            expectCode(cs_changes_open(r2, start, &h), CS_NOTFOUND, "changes after a trimmed version")
            #expect(try changes(r2, since: cs_txn_version(r2) - 1).count == 1)
            expectCode(cs_changes_open(r2, cs_txn_version(r2) + 1, &h), CS_MISUSE, "a version newer than the transaction")
            check(cs_txn_end(r2))
        }
    }

    @Test func bulkCreatesAndDeletesAreRuns() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, v: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "T")
                v = try addColumn(txn, t, "v", CS_TYPE_INT)
            }
            let reader = try db.begin(CS_TXN_READ)
            let start = cs_txn_version(reader)
            try db.write { txn throws in
                for i in 0..<10_000 {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, v, Int64(i)))
                }
            }
            try db.write { txn throws in check(cs_table_clear(txn, t)) }
            check(cs_txn_advance(reader, nil))
            let log = try changes(reader, since: start)
            // Values written on objects created in the same commit are not listed separately.
            #expect(log.count == 2, "one run of creations, one run of deletions: \(log.map(\.kind))")
            #expect(log.first?.kind == CS_CHANGE_CREATE && log.first?.key == 0 && log.first?.a == 10_000)
            #expect(log.last?.kind == CS_CHANGE_DELETE && log.last?.key == 0 && log.last?.a == 10_000)
            check(cs_txn_end(reader))
        }
    }
}
