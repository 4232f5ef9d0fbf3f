// Feed slots (docs/ARCHITECTURE.md, Feed slots; docs/FORMAT.md §8.1): a named consumer's
// unacknowledged history is kept without any reader pinning it, acknowledged history goes, a
// dropped slot keeps nothing, and a slot past its byte limit is invalidated with a clear error.

import CStore
import CStoreCall
import Foundation
import Testing

private func slot(_ txn: OpaquePointer, _ name: String) throws -> cs_feed_slot_info {
    var info = cs_feed_slot_info()
    try must(cs_feed_slot_get(txn, name, &info), "cs_feed_slot_get(\(name))")
    return info
}

/// The versions of the change records the slot hands out (after `since`, default its position).
private func feedVersions(_ txn: OpaquePointer, _ name: String, since: UInt64 = UInt64.max) throws -> [UInt64] {
    var h: OpaquePointer?
    try must(cs_feed_changes_open(txn, name, since, &h), "cs_feed_changes_open(\(name))")
    defer { cs_changes_close(h) }
    var out: [UInt64] = []
    var c = cs_change()
    while true {
        let rc = cs_changes_next(h, &c)
        if rc == Int32(CS_NOTFOUND) { break }
        try must(rc, "cs_changes_next")
        if out.last != c.version { out.append(c.version) }
    }
    return out
}

/// Each version's commit time as the slot's records give it (every record of a version must
/// carry the same time).
private func feedTimes(_ txn: OpaquePointer, _ name: String) throws -> [(version: UInt64, time: Int64)] {
    var h: OpaquePointer?
    try must(cs_feed_changes_open(txn, name, UInt64.max, &h), "cs_feed_changes_open(\(name))")
    defer { cs_changes_close(h) }
    var out: [(version: UInt64, time: Int64)] = []
    var c = cs_change()
    while true {
        let rc = cs_changes_next(h, &c)
        if rc == Int32(CS_NOTFOUND) { break }
        try must(rc, "cs_changes_next")
        if let last = out.last, last.version == c.version {
            #expect(last.time == c.time_us, "version \(c.version): two records, two times")
        } else {
            out.append((c.version, c.time_us))
        }
    }
    return out
}

/// The wall clock in microseconds since 1970, as the commit times count.
private func nowMicroseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
}

/// Whether the plain history (no slot) still reaches back to `since`.
private func historyReaches(_ txn: OpaquePointer, _ since: UInt64) -> Bool {
    var h: OpaquePointer?
    let rc = cs_changes_open(txn, since, &h)
    if rc == Int32(CS_OK) { cs_changes_close(h) }
    return rc == Int32(CS_OK)
}

private struct Fixture {
    let db: DB
    let table: UInt32
    let v: UInt32
    let s: UInt32

    init(_ path: String) throws {
        db = try DB(path)
        var t: UInt32 = 0, v: UInt32 = 0, s: UInt32 = 0
        try db.write { txn throws in
            t = try addTable(txn, "T")
            v = try addColumn(txn, t, "v", CS_TYPE_INT)
            s = try addColumn(txn, t, "s", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
            for i in 0..<50 {
                var o = try createObj(txn, t)
                check(cs_obj_set_int(&o, v, Int64(i)))
            }
        }
        table = t
        self.v = v
        self.s = s
    }

    /// One commit that writes property v of `n` objects (one SET record each).
    func touch(_ n: Int, _ value: Int64) throws {
        try db.write { txn throws in
            for key in try allKeys(txn, table).prefix(n) {
                var o = try openObj(txn, table, key)
                check(cs_obj_set_int(&o, v, value))
            }
        }
    }

    var version: UInt64 { (try? db.read { cs_txn_version($0) }) ?? 0 }
}

@Suite struct FeedSlotTests {
    @Test func aSlotKeepsItsHistoryWithoutReadersAndAnAckReleasesIt() throws {
        try withTempDir { dir in
            let f = try Fixture(dir.path())
            try f.db.write { txn throws in try must(cs_feed_create(txn, "mirror", 0), "cs_feed_create") }
            let start = f.version
            for i in 0..<30 { try f.touch(5, Int64(100 + i)) }
            let end = f.version
            try f.db.read { txn throws in
                #expect(try slot(txn, "mirror").position == start)
                // no transaction pins `start`, yet every commit after it is there
                #expect(try feedVersions(txn, "mirror") == Array((start + 1)...end))
                #expect(try slot(txn, "mirror").held_bytes > 30 * 16)
            }
            // acknowledge half; the next commit trims what is acknowledged
            let mid = start + 15
            try f.db.write { txn throws in try must(cs_feed_ack(txn, "mirror", mid), "cs_feed_ack") }
            try f.touch(1, 1)
            try f.db.read { txn throws in
                let info = try slot(txn, "mirror")
                #expect(info.position == mid)
                // (the ack's own commit recorded no change, so it lists no version)
                #expect(try feedVersions(txn, "mirror") == Array((mid + 1)...end) + [cs_txn_version(txn)])
                #expect(!historyReaches(txn, mid - 1))
                // the held bytes are those of the entries after the position, recomputed at the ack
                #expect(info.held_bytes > 0)
            }
            // an ack never moves back, and cannot pass the committed version
            try f.db.write { txn throws in
                try must(cs_feed_ack(txn, "mirror", start), "cs_feed_ack(back)")
                expectCode(cs_feed_ack(txn, "mirror", cs_txn_version(txn) + 1), CS_RANGE, "ack ahead")
            }
            try f.db.read { txn throws in #expect(try slot(txn, "mirror").position == mid) }
            f.db.verify("after acks")
        }
    }

    @Test func withoutASlotTheSameHistoryIsTrimmed() throws {
        // the control for the test above: the retention comes from the slot
        try withTempDir { dir in
            let f = try Fixture(dir.path())
            let start = f.version
            for i in 0..<5 { try f.touch(5, Int64(100 + i)) }
            try f.db.read { txn throws in #expect(!historyReaches(txn, start)) }
        }
    }

    @Test func dataVersionsAreStillReclaimedWhileASlotHoldsHistory() throws {
        try withTempDir { dir in
            let f = try Fixture(dir.path())
            try f.db.write { txn throws in try must(cs_feed_create(txn, "lagging", 0), "cs_feed_create") }
            let big = String(repeating: "x", count: 20_000)
            func rewrite(_ rounds: Int) throws {
                for i in 0..<rounds {
                    try f.db.write { txn throws in
                        var o = try openObj(txn, f.table, try allKeys(txn, f.table)[0])
                        check(setVal(&o, f.s, .str(big + "\(i)")))
                    }
                }
            }
            try rewrite(20)
            let after20 = try f.db.stats().logical_size
            try rewrite(200)
            let after220 = try f.db.stats().logical_size
            // 200 more 20 kB values would add 4 MB if their old versions were kept
            #expect(after220 < after20 + 400_000, "logical size \(after20) -> \(after220)")
            try f.db.read { txn throws in #expect(try feedVersions(txn, "lagging").count == 220) }
            f.db.verify("after churn")
        }
    }

    @Test func aDroppedSlotKeepsNothing() throws {
        try withTempDir { dir in
            let f = try Fixture(dir.path())
            try f.db.write { txn throws in
                try must(cs_feed_create(txn, "a", 0), "create a")
                try must(cs_feed_create(txn, "b", 0), "create b")
                expectCode(cs_feed_create(txn, "a", 0), CS_EXISTS, "duplicate")
                expectCode(cs_feed_create(txn, "", 0), CS_MISUSE, "empty name")
                expectCode(cs_feed_create(txn, String(repeating: "n", count: Int(CS_FEED_NAME_MAX) + 1), 0), CS_MISUSE, "long name")
            }
            let start = f.version
            for i in 0..<5 { try f.touch(3, Int64(i)) }
            try f.db.write { txn throws in
                try must(cs_feed_drop(txn, "a"), "drop a")
                expectCode(cs_feed_drop(txn, "a"), CS_NOTFOUND, "drop twice")
            }
            try f.db.read { txn throws in
                var n: UInt32 = 0
                try must(cs_feed_count(txn, &n))
                #expect(n == 1)
                var info = cs_feed_slot_info()
                try must(cs_feed_slot_at(txn, 0, &info))
                #expect(withUnsafeBytes(of: info.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } == "b")
                #expect(historyReaches(txn, start)) // b still holds it
            }
            try f.db.write { txn throws in try must(cs_feed_drop(txn, "b"), "drop b") }
            try f.touch(1, 9)
            try f.db.read { txn throws in
                #expect(!historyReaches(txn, start))
                var info = cs_feed_slot_info()
                expectCode(cs_feed_slot_get(txn, "b", &info), CS_NOTFOUND, "dropped slot")
            }
            let reader = try f.db.begin(CS_TXN_READ)
            expectCode(cs_feed_create(reader, "c", 0), CS_READONLY, "create in a read transaction")
            check(cs_txn_end(reader))
            f.db.verify("after drops")
        }
    }

    @Test func aSlotPastItsLimitIsInvalidatedWithAClearError() throws {
        try withTempDir { dir in
            let f = try Fixture(dir.path())
            try f.db.write { txn throws in
                try must(cs_feed_create(txn, "slow", 2000), "create slow")
                try must(cs_feed_create(txn, "fast", 0), "create fast")
            }
            let start = f.version
            var invalidatedAt: UInt64 = 0
            for i in 0..<40 {
                try f.touch(20, Int64(1000 + i))
                let info = try f.db.read { txn throws in try slot(txn, "slow") }
                if info.invalidated != 0 {
                    invalidatedAt = info.invalidated
                    #expect(info.held_bytes == 0)
                    #expect(info.over_bytes > 2000)
                    break
                }
                #expect(info.held_bytes <= 2000)
                // the fast consumer keeps up
                try f.db.write { txn throws in try must(cs_feed_ack(txn, "fast", cs_txn_version(txn)), "ack fast") }
            }
            #expect(invalidatedAt > start)
            try f.db.read { txn throws in
                var h: OpaquePointer?
                expectCode(cs_feed_changes_open(txn, "slow", UInt64.max, &h), CS_FULL, "invalidated slot")
                let msg = lastMessage()
                #expect(msg.contains("invalidated") && msg.contains("limit of 2000"), "\(msg)")
            }
            try f.db.write { txn throws in expectCode(cs_feed_ack(txn, "slow", cs_txn_version(txn)), CS_FULL, "ack invalidated") }
            try f.touch(1, 1)
            // it holds nothing back any more: the history is trimmed to the fast slot
            try f.db.read { txn throws in #expect(!historyReaches(txn, start)) }
            f.db.verify("after invalidation")
        }
    }

    @Test func everyCommitRecordsItsTime() throws {
        try withTempDir { dir in
            let f = try Fixture(dir.path())
            try f.db.write { txn throws in try must(cs_feed_create(txn, "t", 0), "cs_feed_create") }
            var bounds: [(UInt64, Int64, Int64)] = [] // version, clock before and after its commit
            for i in 0..<6 {
                let before = nowMicroseconds()
                try f.touch(3, Int64(i))
                bounds.append((f.version, before, nowMicroseconds()))
                usleep(2000)
            }
            let times = try f.db.read { try feedTimes($0, "t") }
            #expect(times.map(\.version) == bounds.map(\.0))
            for ((v, time), (_, lo, hi)) in zip(times, bounds) {
                #expect(time >= lo && time <= hi, "version \(v): time \(time) outside [\(lo), \(hi)]")
            }
            #expect(zip(times, times.dropFirst()).allSatisfy { $0.time < $1.time })
            // the times are part of the version: another process reads them, a reopen keeps them
            try f.db.reopen()
            #expect(try f.db.read { try feedTimes($0, "t") }.map(\.time) == times.map(\.time))
            f.db.verify("with commit times")
        }
    }

    @Test func slotsSurviveReopenAndCompaction() throws {
        try withTempDir { dir in
            let path = dir.path()
            var f: Fixture? = try Fixture(path)
            try f!.db.write { txn throws in try must(cs_feed_create(txn, "m", 1 << 20), "create") }
            let start = f!.version
            for i in 0..<10 { try f!.touch(4, Int64(i)) }
            let end = f!.version
            let times = try f!.db.read { try feedTimes($0, "m") }
            #expect(times.count == 10 && times.allSatisfy { $0.time > 0 })
            f!.db.close()
            f = nil
            var opts = cs_options()
            var info = cs_compact_info()
            try must(cs_db_compact(path, &opts, nil, nil, &info), "cs_db_compact")
            let db = try DB(path, flags: 0)
            db.verify("compacted")
            try db.read { txn throws in
                let s = try slot(txn, "m")
                #expect(s.position == start && s.limit == 1 << 20)
                #expect(try feedVersions(txn, "m") == Array((start + 1)...end))
                // compaction copies the commit times with the history
                #expect(try feedTimes(txn, "m").map(\.time) == times.map(\.time))
            }
        }
    }

    /// The history records the primary key of each object a commit deletes (FORMAT.md §8.3),
    /// so a consumer reads it without the version before the delete: per version, for Int and
    /// String keys, not for a class without one nor for an object created and deleted in one
    /// write. It is kept while a slot holds the history, copied by compaction, and freed with
    /// the history (verify counts every byte).
    @Test func deletedObjectsPrimaryKeysAreKeptWithTheHistory() throws {
        try withTempDir { dir in
            let path = dir.path("pk.cstore")
            var db: DB? = try DB(path)
            var p: UInt32 = 0, q: UInt32 = 0, r: UInt32 = 0
            var keys: [String: Int64] = [:]
            try db!.write { txn throws in
                p = try addTable(txn, "P")
                try must(cs_table_set_primary_key(txn, p, try addColumn(txn, p, "id", CS_TYPE_STRING)), "pk")
                q = try addTable(txn, "Q")
                try must(cs_table_set_primary_key(txn, q, try addColumn(txn, q, "n", CS_TYPE_INT)), "pk")
                r = try addTable(txn, "R")
                _ = try addColumn(txn, r, "v", CS_TYPE_INT)
                for id in ["a", "b", String(repeating: "long key ", count: 20)] {
                    var o = cs_obj()
                    try withValue(.str(id)) { try must(cs_obj_create_primary(txn, p, $0, &o), "create") }
                    keys[id] = o.key
                }
                var o = cs_obj()
                try withValue(.int(-5)) { try must(cs_obj_create_primary(txn, q, $0, &o), "create") }
                keys["q"] = o.key
                keys["r"] = try createObj(txn, r).key
                try must(cs_feed_create(txn, "k", 0), "cs_feed_create")
            }
            func delete(_ txn: OpaquePointer, _ t: UInt32, _ k: Int64) throws {
                var o = try openObj(txn, t, k)
                try must(cs_obj_delete(&o), "delete")
            }
            let start = try db!.read { cs_txn_version($0) }
            var bornAndGone: Int64 = 0
            try db!.write { txn throws in
                try delete(txn, p, keys["a"]!)
                try delete(txn, q, keys["q"]!)
                try delete(txn, r, keys["r"]!)
                var o = cs_obj()
                try withValue(.str("brief")) { try must(cs_obj_create_primary(txn, p, $0, &o), "create") }
                bornAndGone = o.key
                try must(cs_obj_delete(&o), "delete")
            }
            try db!.write { txn throws in
                try delete(txn, p, keys[String(repeating: "long key ", count: 20)]!)
            }
            try db!.write { txn throws in try delete(txn, p, keys["b"]!) }
            let v1 = start + 1, v2 = start + 2, v3 = start + 3

            /// (version, table, key) -> the recorded key, nil when CS_NOTFOUND
            func recorded(_ txn: OpaquePointer, _ asks: [(UInt64, UInt32, Int64)]) throws -> [Val?] {
                var h: OpaquePointer?
                try must(cs_feed_changes_open(txn, "k", start, &h), "cs_feed_changes_open")
                defer { cs_changes_close(h) }
                return try asks.map { (v, t, k) in
                    var out = cs_value()
                    let rc = cs_changes_deleted_pk(h, v, t, k, &out)
                    if rc == Int32(CS_NOTFOUND) { return nil }
                    try must(rc, "cs_changes_deleted_pk")
                    return toVal(out)
                }
            }
            let asks: [(UInt64, UInt32, Int64)] = [
                (v1, p, keys["a"]!), (v1, q, keys["q"]!), (v1, r, keys["r"]!), (v1, p, bornAndGone),
                (v2, p, keys[String(repeating: "long key ", count: 20)]!), (v3, p, keys["b"]!),
                (v2, p, keys["a"]!), (v3, q, keys["q"]!),
            ]
            let expected: [Val?] = [.str("a"), .int(-5), nil, nil, .str(String(repeating: "long key ", count: 20)), .str("b"), nil, nil]
            #expect(try db!.read { try recorded($0, asks) } == expected)
            db!.verify("with deleted keys")

            // compaction copies them with the history
            db!.close()
            db = nil
            var opts = cs_options()
            var info = cs_compact_info()
            try must(cs_db_compact(path, &opts, nil, nil, &info), "cs_db_compact")
            db = try DB(path, flags: 0)
            db!.verify("compacted")
            #expect(try db!.read { try recorded($0, asks) } == expected)

            // acknowledged, the history goes with its deleted keys: verify finds no byte unaccounted for
            try db!.write { txn throws in try must(cs_feed_ack(txn, "k", v3), "ack") }
            try db!.write { txn throws in _ = try createObj(txn, r) }
            try db!.write { txn throws in _ = try createObj(txn, r) }
            db!.verify("trimmed")
            let last = try db!.read { cs_txn_version($0) }
            try db!.read { txn throws in
                var h: OpaquePointer?
                try must(cs_feed_changes_open(txn, "k", last - 1, &h), "open")
                defer { cs_changes_close(h) }
                var out = cs_value()
                #expect(cs_changes_deleted_pk(h, v3, p, keys["b"]!, &out) == Int32(CS_NOTFOUND))
            }
            db!.close()
        }
    }
}
