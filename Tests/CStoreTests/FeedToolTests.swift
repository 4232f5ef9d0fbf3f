// `swiftstore slot` and `swiftstore changes` (tools/swiftstore, docs/ARCHITECTURE.md, The
// change feed in the tool): the JSON lines of every operation and value type, acknowledgement,
// --follow woken by another process's commit, and `info`'s slot listing.

import CStore
import Foundation
import Testing

private struct Run {
    let status: Int32
    let stdout: String
    let stderr: String
    var lines: [[String: Any]] {
        stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }
}

private func tool(_ args: [String], in dir: TempDir, timeout: Double = 60) throws -> Run {
    guard let path = swiftstoreToolPath else { throw CStoreError(code: -1, message: "the swiftstore tool is not built (make tool)", context: "swiftstore") }
    let r = try runProcess(path, args, outputIn: dir.url, timeout: timeout)
    return Run(status: r.status, stdout: r.stdout, stderr: r.stderr)
}

private struct Model {
    var dog: UInt32 = 0, owner: UInt32 = 0, addr: UInt32 = 0
    var name: UInt32 = 0, age: UInt32 = 0, good: UInt32 = 0, weight: UInt32 = 0, ratio: UInt32 = 0
    var chip: UInt32 = 0, born: UInt32 = 0, oid: UInt32 = 0, uuid: UInt32 = 0, price: UInt32 = 0
    var ownerLink: UInt32 = 0, home: UInt32 = 0, tags: UInt32 = 0, marks: UInt32 = 0
    var ownerId: UInt32 = 0, street: UInt32 = 0
}

/// The feed's commit time text ("2026-11-27T08:51:37.123456Z") as a Date, nil when malformed.
private func commitTime(_ text: Any?) -> Date? {
    guard let s = text as? String, s.hasSuffix("Z"), let dot = s.firstIndex(of: "."),
          let whole = ISO8601DateFormatter().date(from: String(s[..<dot]) + "Z") else { return nil }
    let frac = s[s.index(after: dot)..<s.index(before: s.endIndex)]
    guard frac.count == 6, let us = Int(frac) else { return nil }
    return whole.addingTimeInterval(Double(us) / 1e6)
}

private func pkObj(_ txn: OpaquePointer, _ t: UInt32, _ pk: Val) throws -> cs_obj {
    var o = cs_obj()
    try withValue(pk) { try must(cs_obj_create_primary(txn, t, $0, &o), "cs_obj_create_primary") }
    return o
}

@Suite struct FeedToolTests {
    @Test func changesPrintsEveryOperationAndTypeThenAcknowledges() throws {
        try withTempDir { dir in
            let path = dir.path("feed.cstore")
            let db = try DB(path)
            var m = Model()
            try db.write { txn throws in
                m.owner = try addTable(txn, "Owner")
                m.ownerId = try addColumn(txn, m.owner, "id", CS_TYPE_INT)
                try must(cs_table_set_primary_key(txn, m.owner, m.ownerId), "pk")
                m.addr = try addTable(txn, "Addr", flags: CS_TABLE_EMBEDDED)
                m.street = try addColumn(txn, m.addr, "street", CS_TYPE_STRING)
                m.dog = try addTable(txn, "Dog")
                m.name = try addColumn(txn, m.dog, "name", CS_TYPE_STRING)
                try must(cs_table_set_primary_key(txn, m.dog, m.name), "pk")
                m.age = try addColumn(txn, m.dog, "age", CS_TYPE_INT)
                m.good = try addColumn(txn, m.dog, "good", CS_TYPE_BOOL)
                m.weight = try addColumn(txn, m.dog, "weight", CS_TYPE_FLOAT)
                m.ratio = try addColumn(txn, m.dog, "ratio", CS_TYPE_DOUBLE)
                m.chip = try addColumn(txn, m.dog, "chip", CS_TYPE_BINARY)
                m.born = try addColumn(txn, m.dog, "born", CS_TYPE_TIMESTAMP)
                m.oid = try addColumn(txn, m.dog, "oid", CS_TYPE_OBJECTID)
                m.uuid = try addColumn(txn, m.dog, "uuid", CS_TYPE_UUID)
                m.price = try addColumn(txn, m.dog, "price", CS_TYPE_DECIMAL)
                m.ownerLink = try addColumn(txn, m.dog, "owner", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: m.owner)
                m.home = try addColumn(txn, m.dog, "home", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: m.addr)
                m.tags = try addColumn(txn, m.dog, "tags", CS_TYPE_STRING, coll: CS_COLL_LIST)
                m.marks = try addColumn(txn, m.dog, "marks", CS_TYPE_INT, coll: CS_COLL_MAP)
                var gone = try pkObj(txn, m.dog, .str("Gone"))
                check(cs_obj_set_int(&gone, m.age, 9))
            }
            db.close()
            let created = try tool(["slot", "create", path, "m"], in: dir)
            #expect(created.status == 0, "\(created.stderr)")
            try db.reopen()
            let began = Date()
            var price = cs_decimal128()
            try must(cs_decimal_parse("12.50", 5, &price), "decimal")
            let rexKey = try db.write { txn throws -> Int64 in
                var o = try pkObj(txn, m.owner, .int(7))
                var d = try pkObj(txn, m.dog, .str("Rex"))
                check(cs_obj_set_int(&d, m.age, 3))
                check(setVal(&d, m.good, .bool(true)))
                check(setVal(&d, m.weight, .float(1.5)))
                check(setVal(&d, m.ratio, .double(0.25)))
                check(setVal(&d, m.chip, .binary([1, 2, 3, 255])))
                check(setVal(&d, m.born, .timestamp(1_700_000_000, 500_000_000)))
                check(setVal(&d, m.oid, .objectId(Array(1...12))))
                check(setVal(&d, m.uuid, .uuid(Array(repeating: 0xab, count: 16))))
                check(setVal(&d, m.price, .decimal(price.w.0, price.w.1)))
                o = try openObj(txn, m.owner, try allKeys(txn, m.owner)[0])
                check(setVal(&d, m.ownerLink, .link(m.owner, o.key)))
                var a = cs_obj()
                try must(cs_obj_create_embedded(&d, m.home, &a), "embedded")
                check(setVal(&a, m.street, .str("Main St")))
                var tags = try openColl(&d, m.tags)
                check(listAppend(&tags, .str("brown")))
                return d.key
            }
            try db.write { txn throws in
                var d = try openObj(txn, m.dog, rexKey)
                check(cs_obj_set_int(&d, m.age, 4))
                var tags = try openColl(&d, m.tags)
                check(listAppend(&tags, .str("small")))
                var home = cs_value()
                try must(cs_obj_get(&d, m.home, &home), "home")
                var a = try openObj(txn, m.addr, home.v.link.key)
                check(setVal(&a, m.street, .str("High St")))
                for k in try allKeys(txn, m.dog) where k != rexKey {
                    var g = try openObj(txn, m.dog, k)
                    check(cs_obj_delete(&g))
                }
            }
            db.close()
            let ended = Date()

            let r = try tool(["changes", path, "--slot", "m", "--json"], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let lines = r.lines
            // every line carries its commit's time: within the commits' window, one per version
            var timeOf: [Int: Date] = [:]
            for l in lines {
                guard let v = l["version"] as? Int, let t = commitTime(l["time"]) else {
                    Issue.record("a line without a commit time: \(l)")
                    continue
                }
                #expect(t >= began.addingTimeInterval(-0.001) && t <= ended.addingTimeInterval(0.001), "\(l)")
                #expect(timeOf[v].map { $0 == t } ?? true, "two times for version \(v)")
                timeOf[v] = t
            }
            #expect(timeOf.count == 2)
            let byVersion = timeOf.sorted { $0.key < $1.key }
            #expect(byVersion.count == 2 && byVersion[0].value < byVersion[1].value)
            let insertRex = lines.first { $0["op"] as? String == "insert" && $0["class"] as? String == "Dog" }
            let c = insertRex?["changes"] as? [String: Any] ?? [:]
            #expect(insertRex?["pk"] as? String == "Rex")
            // both commits are read in one batch, at the second version: what the second commit
            // changed again is left out of the first commit's line, never printed with the value
            // it had only later
            #expect(c["age"] == nil && c["tags"] == nil && c["home"] == nil)
            #expect(insertRex?["changedLater"] as? [String] == ["age", "home", "tags"])
            #expect(c["good"] as? Bool == true)
            #expect(c["ratio"] as? Double == 0.25)
            #expect((c["chip"] as? [String: Any])?["$binary"] as? String == Data([1, 2, 3, 255]).base64EncodedString())
            #expect((c["born"] as? [String: Any])?["$date"] as? Double == 1_700_000_000.5)
            #expect((c["oid"] as? [String: Any])?["$oid"] as? String == "0102030405060708090a0b0c")
            #expect((c["uuid"] as? [String: Any])?["$uuid"] as? String == String(repeating: "ab", count: 16))
            #expect((c["price"] as? [String: Any])?["$decimal"] as? String == "12.50")
            #expect(c["owner"] as? Int == 7) // a link as the target's primary key
            #expect(lines.contains { $0["op"] as? String == "insert" && $0["class"] as? String == "Owner" && $0["pk"] as? Int == 7 })
            // the second commit: an update (age), a collection change, the embedded change as the
            // owner's property, and a delete
            let v2 = lines.compactMap { $0["version"] as? Int }.max() ?? 0
            let upd = lines.filter { ($0["version"] as? Int) == v2 && $0["class"] as? String == "Dog" && $0["op"] as? String != "delete" }
            #expect(upd.contains { ($0["changes"] as? [String: Any])?["age"] as? Int == 4 })
            #expect(upd.contains { (($0["changes"] as? [String: Any])?["home"] as? [String: Any])?["street"] as? String == "High St" })
            #expect(upd.contains { ($0["changes"] as? [String: Any])?["tags"] as? [String] == ["brown", "small"] })
            #expect(upd.allSatisfy { $0["changedLater"] == nil })
            #expect(lines.contains { $0["op"] as? String == "delete" && $0["class"] as? String == "Dog" && $0["version"] as? Int == v2 })
            #expect(!lines.contains { $0["class"] as? String == "Addr" })

            // acknowledged: a second run prints nothing, and info shows the slot at the last version
            let again = try tool(["changes", path, "--slot", "m", "--json"], in: dir)
            #expect(again.status == 0 && again.lines.isEmpty, "\(again.stdout) \(again.stderr)")
            let info = try tool(["info", path, "--json"], in: dir)
            let slots = ((try? JSONSerialization.jsonObject(with: Data(info.stdout.utf8))) as? [String: Any])?["feedSlots"] as? [[String: Any]]
            #expect(slots?.first?["name"] as? String == "m")
            #expect(slots?.first?["position"] as? Int == v2)

            let unknown = try tool(["changes", path, "--slot", "nope"], in: dir)
            #expect(unknown.status == 1 && unknown.stderr.contains("no feed slot named 'nope'"), "\(unknown.stderr)")
        }
    }

    /// A delete line names the deleted object's primary key even in the first batch a `changes`
    /// run reads, when no transaction of the tool pinned the version before the delete: the
    /// history records each deleted object's primary key (FORMAT.md §8.3). One class per
    /// primary-key type, a null key, and a class without one (its line has only the object key).
    @Test func deleteLinesCarryThePrimaryKeyInTheFirstBatch() throws {
        try withTempDir { dir in
            let path = dir.path("deletes.cstore")
            let db = try DB(path)
            let pks: [(String, cs_type, Val, Int)] = [
                ("ByInt", CS_TYPE_INT, .int(-42), 0),
                ("ByNullInt", CS_TYPE_INT, .null, CS_COL_NULLABLE),
                ("ByString", CS_TYPE_STRING, .str("Rex the dog"), 0),
                ("ByObjectId", CS_TYPE_OBJECTID, .objectId(Array(1...12)), 0),
                ("ByUUID", CS_TYPE_UUID, .uuid(Array(repeating: 0xcd, count: 16)), 0),
            ]
            var tables: [UInt32] = []
            var plain: UInt32 = 0
            try db.write { txn throws in
                for (name, type, value, flags) in pks {
                    let t = try addTable(txn, name)
                    let c = try addColumn(txn, t, "id", type, flags: flags)
                    try must(cs_table_set_primary_key(txn, t, c), "pk")
                    tables.append(t)
                    _ = try pkObj(txn, t, value)
                    _ = try pkObj(txn, t, type == CS_TYPE_STRING ? .str("kept") : type == CS_TYPE_INT ? .int(1) :
                                    type == CS_TYPE_OBJECTID ? .objectId(Array(repeating: 9, count: 12)) : .uuid(Array(repeating: 9, count: 16)))
                }
                plain = try addTable(txn, "Plain")
                _ = try addColumn(txn, plain, "v", CS_TYPE_INT)
                _ = try createObj(txn, plain)
                try must(cs_feed_create(txn, "d", 0), "create slot")
            }
            var plainKey: Int64 = 0
            try db.write { txn throws in
                for (i, t) in tables.enumerated() {
                    for k in try allKeys(txn, t) {
                        var o = try openObj(txn, t, k)
                        if getVal(&o, 0) == pks[i].2 { check(cs_obj_delete(&o)) }
                    }
                }
                plainKey = try allKeys(txn, plain)[0]
                var o = try openObj(txn, plain, plainKey)
                check(cs_obj_delete(&o))
            }
            db.close()
            let r = try tool(["changes", path, "--slot", "d", "--json"], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let deletes = r.lines.filter { $0["op"] as? String == "delete" }
            func pkOf(_ cls: String) -> Any? { deletes.first { $0["class"] as? String == cls }?["pk"] }
            #expect(deletes.count == pks.count + 1, "\(r.stdout)")
            #expect(pkOf("ByInt") as? Int == -42)
            #expect(pkOf("ByNullInt") is NSNull)
            #expect(pkOf("ByString") as? String == "Rex the dog")
            #expect((pkOf("ByObjectId") as? [String: Any])?["$oid"] as? String == "0102030405060708090a0b0c")
            #expect((pkOf("ByUUID") as? [String: Any])?["$uuid"] as? String == String(repeating: "cd", count: 16))
            let plainLine = deletes.first { $0["class"] as? String == "Plain" }
            #expect(plainLine?["pk"] == nil && plainLine?["key"] as? Int == Int(plainKey))
        }
    }

    @Test func followIsWokenByAnotherProcessesCommit() throws {
        try withTempDir { dir in
            let path = dir.path("follow.cstore")
            let db = try DB(path)
            let t = try db.write { txn throws -> UInt32 in
                let t = try addTable(txn, "T")
                _ = try addColumn(txn, t, "v", CS_TYPE_INT)
                try must(cs_feed_create(txn, "f", 0), "create slot")
                return t
            }
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var result: Run?
            Thread.detachNewThread {
                result = try? tool(["changes", path, "--slot", "f", "--json", "--follow", "--count", "3"], in: dir, timeout: 60)
                done.signal()
            }
            Thread.sleep(forTimeInterval: 1.0) // the follower reaches its wait
            for i in 0..<3 {
                try db.write { txn throws in
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, 0, Int64(i)))
                }
                Thread.sleep(forTimeInterval: 0.2)
            }
            #expect(done.wait(timeout: .now() + 60) == .success)
            let lines = result?.lines ?? []
            #expect(lines.count == 3, "\(result?.stdout ?? "") \(result?.stderr ?? "")")
            #expect(lines.compactMap { ($0["changes"] as? [String: Any])?["v"] as? Int } == [0, 1, 2])
        }
    }
}
