// Int primary keys as object keys (docs/FORMAT.md §6.1, docs/ARCHITECTURE.md, Primary keys as
// object keys): a table that gets an Int primary key before it ever held an object gives each
// object its primary key as its key when that key was never used, retires the keys of deleted
// objects, and finds an object by primary key with one descent of its cluster tree.
import CStore
import Foundation
import Testing

private let pkEnd: Int64 = 1 << 61

/// A table "P" with an Int primary key "id" (set while the table is empty) and an Int "v".
private func makeKeyed(_ txn: OpaquePointer) throws -> (t: UInt32, id: UInt32, v: UInt32) {
    let t = try addTable(txn, "P")
    let id = try addColumn(txn, t, "id", CS_TYPE_INT)
    let v = try addColumn(txn, t, "v", CS_TYPE_INT)
    try must(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
    return (t, id, v)
}

private func createPk(_ txn: OpaquePointer, _ t: UInt32, _ pk: Int64, v: UInt32? = nil, value: Int64 = 0) throws -> Int64 {
    var o = cs_obj()
    var p = cs_int(pk)
    try must(cs_obj_create_primary(txn, t, &p, &o), "cs_obj_create_primary(\(pk))")
    if let v { try must(cs_obj_set_int(&o, v, value), "set v") }
    return o.key
}

/// The key cs_table_find_primary gives for `pk`, nil when it reports CS_NOTFOUND.
private func findPk(_ txn: OpaquePointer, _ t: UInt32, _ pk: Int64, sourceLocation: SourceLocation = #_sourceLocation) -> Int64? {
    var p = cs_int(pk)
    var key: Int64 = -1
    let rc = cs_table_find_primary(txn, t, &p, &key)
    if rc == Int32(CS_NOTFOUND) { return nil }
    #expect(rc == 0, "cs_table_find_primary(\(pk)): \(codeName(rc)) \(lastMessage())", sourceLocation: sourceLocation)
    return key
}

@Suite struct PrimaryKeyKeyingTests {
    /// Present, absent, negative and huge primary keys: the ones in [0, 2^61) are the keys
    /// themselves, the others come from the counter at 2^61; every one is found again, with
    /// its values, in the write, in a read and after reopening.
    @Test func intPrimaryKeysAreObjectKeys() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let pks: [Int64] = [5, 0, 1_000_003, -3, pkEnd - 1, pkEnd, Int64.max, Int64.min, 77]
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            var keys: [Int64: Int64] = [:]
            try db.write { txn throws in
                c = try makeKeyed(txn)
                for (i, pk) in pks.enumerated() { keys[pk] = try createPk(txn, c.t, pk, v: c.v, value: Int64(i) * 10) }
                for pk in pks { #expect(findPk(txn, c.t, pk) == keys[pk], "in the write: \(pk)") }
            }
            for pk in pks where pk >= 0 && pk < pkEnd { #expect(keys[pk] == pk, "pk \(pk) is its own key") }
            let counter = pks.filter { $0 < 0 || $0 >= pkEnd }.map { keys[$0]! }
            #expect(counter == (0..<Int64(counter.count)).map { pkEnd + $0 }, "the others count up from 2^61")
            func checkAll(_ phase: String) throws {
                try db.read { txn throws in
                    for (i, pk) in pks.enumerated() {
                        let k = findPk(txn, c.t, pk)
                        #expect(k == keys[pk], "\(phase): \(pk)")
                        guard let k else { continue }
                        var o = try openObj(txn, c.t, k)
                        #expect(try getInt(&o, c.id) == pk, "\(phase): the object found has pk \(pk)")
                        #expect(try getInt(&o, c.v) == Int64(i) * 10, "\(phase): its value")
                    }
                    for pk: Int64 in [1, 4, 6, 1_000_002, pkEnd - 2, pkEnd + 1, -1, Int64.max - 1] {
                        #expect(findPk(txn, c.t, pk) == nil, "\(phase): absent \(pk)")
                    }
                }
            }
            try checkAll("read")
            db.verify("after the inserts")
            try db.reopen()
            try checkAll("reopened")
            #expect(try fileFormatVersions(db.path) == (6, 6), "a file with a pk-keyed table is format 6")
        }
    }

    /// A write transaction remembers the leaf of the last object cs_table_find_primary found by
    /// its key, for the cs_obj_open that follows (an upsert). Between the lookup and the open,
    /// random writes move rows within the leaf (a smaller key inserted), split leaves, copy
    /// them, delete the object found or others: the open must still give that object with its
    /// current values, or CS_NOTFOUND once it is deleted, checked against a model. The same
    /// holds across a rollback and in a read transaction after the commit.
    @Test func aLookupInAWriteIsRememberedOnlyWhileItHolds() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            var model: [Int64: Int64] = [:]
            try db.write { txn throws in
                c = try makeKeyed(txn)
                // every other key of [0, 4000): several leaves, with room for keys in between
                for pk in stride(from: Int64(0), to: 4000, by: 2) {
                    _ = try createPk(txn, c.t, pk, v: c.v, value: pk * 3)
                    model[pk] = pk * 3
                }
            }
            var rng = NotifyRng(state: 16)
            var deleted: Set<Int64> = []
            func checkOpen(_ txn: OpaquePointer, _ p: Int64, _ what: String) throws {
                var o = cs_obj()
                let rc = cs_obj_open(txn, c.t, p, &o)
                guard let want = model[p] else {
                    expectCode(rc, CS_NOTFOUND, "\(what): \(p) is deleted")
                    return
                }
                try must(rc, "\(what): open \(p)")
                #expect(try getInt(&o, c.id) == p, "\(what): the object opened is \(p)")
                #expect(try getInt(&o, c.v) == want, "\(what): \(p)'s value")
            }
            try db.write { txn throws in
                for step in 0..<3000 {
                    let p = Int64.random(in: 0..<4000, using: &rng)
                    let found = findPk(txn, c.t, p)
                    #expect(found == (model[p] != nil ? p : nil), "step \(step): lookup of \(p)")
                    guard found != nil else { continue }
                    // a write between the lookup and the open
                    let q = Int64.random(in: max(0, p - 300)..<min(4000, p + 300), using: &rng)
                    switch Int.random(in: 0..<5, using: &rng) {
                    case 0: // nothing
                        break
                    case 1: // create (a smaller key in the same leaf moves p's row; may split)
                        // (not a deleted key: that would come back under a counter key)
                        if model[q] == nil && !deleted.contains(q) && findPk(txn, c.t, q) == nil {
                            _ = try createPk(txn, c.t, q, v: c.v, value: -q)
                            model[q] = -q
                            _ = findPk(txn, c.t, p) // p is the last lookup again
                        }
                    case 2: // delete p or a neighbour
                        let d = Bool.random(using: &rng) ? p : q
                        if model[d] != nil {
                            var o = try openObj(txn, c.t, d)
                            try must(cs_obj_delete(&o), "delete \(d)")
                            model[d] = nil
                            deleted.insert(d)
                        }
                    case 3: // change a neighbour (copies its leaf when it is not a copy yet)
                        if model[q] != nil {
                            var o = try openObj(txn, c.t, q)
                            try must(cs_obj_set_int(&o, c.v, q + Int64(step)), "set \(q)")
                            model[q] = q + Int64(step)
                            _ = findPk(txn, c.t, p)
                        }
                    default: // a create refused for an existing primary key
                        var o = cs_obj()
                        var pk = cs_int(p)
                        expectCode(cs_obj_create_primary(txn, c.t, &pk, &o), CS_CONSTRAINT, "create \(p) again")
                    }
                    try checkOpen(txn, p, "step \(step)")
                }
            }
            db.verify("after the writes")
            // a rollback: the lookup's leaf (a copy in the write) is gone with it
            let rolledBack = model
            let txn = try db.begin(CS_TXN_WRITE)
            let live = model.keys.sorted()
            let p = live[live.count / 2]
            #expect(findPk(txn, c.t, p) == p)
            var o = try openObj(txn, c.t, p)
            try must(cs_obj_delete(&o), "delete \(p)")
            try must(cs_txn_rollback(txn), "rollback")
            model = rolledBack
            #expect(findPk(txn, c.t, p) == p, "after the rollback")
            try checkOpen(txn, p, "after the rollback")
            check(cs_txn_end(txn), "cs_txn_end")
            try db.read { txn throws in
                for p in live.prefix(200) {
                    #expect(findPk(txn, c.t, p) == p)
                    try checkOpen(txn, p, "read")
                }
            }
        }
    }

    /// A deleted object's key is retired: the same primary key inserted again gets a counter key,
    /// an accessor to the deleted object stays dead, and the change history reports a delete of
    /// one key and a create of another.
    @Test func aDeletedPrimaryKeyIsNeverItsKeyAgain() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            try db.write { txn throws in
                c = try makeKeyed(txn)
                for pk: Int64 in [40, 41, 42, 43] { _ = try createPk(txn, c.t, pk, v: c.v, value: pk) }
            }
            let before = cs_db_version(db.h)
            let pin = try db.begin(CS_TXN_READ) // keeps the history after `before`
            try db.write { txn throws in
                var o = try openObj(txn, c.t, 42)
                try must(cs_obj_delete(&o), "delete 42")
            }
            var fresh: Int64 = 0
            try db.write { txn throws in
                #expect(findPk(txn, c.t, 42) == nil, "42 is gone")
                fresh = try createPk(txn, c.t, 42, v: c.v, value: 4200)
            }
            #expect(fresh >= pkEnd, "42 again takes a counter key, not the retired 42 (got \(fresh))")
            try db.read { txn throws in
                var old = cs_obj()
                old.txn = txn
                old.table = c.t
                old.key = 42
                #expect(!cs_obj_exists(&old), "an accessor to the deleted object stays invalid")
                expectCode(cs_obj_open(txn, c.t, 42, &old), CS_NOTFOUND, "key 42 opens nothing")
                #expect(findPk(txn, c.t, 42) == fresh, "the index finds the new 42")
                var o = try openObj(txn, c.t, fresh)
                #expect(try getInt(&o, c.v) == 4200)
                let log = try changes(txn, since: before)
                #expect(log.contains { $0.kind == CS_CHANGE_DELETE && $0.key == 42 }, "the delete of key 42")
                #expect(log.contains { $0.kind == CS_CHANGE_CREATE && $0.key == fresh }, "the create of the new key")
                #expect(!log.contains { $0.kind == CS_CHANGE_CREATE && $0.key == 42 }, "no second create of key 42")
            }
            _ = cs_txn_end(pin)
            db.verify("after the re-insert")
            // the retired key survives a reopen, and a second delete and re-insert takes another key
            try db.reopen()
            var third: Int64 = 0
            try db.write { txn throws in
                var o = try openObj(txn, c.t, fresh)
                try must(cs_obj_delete(&o), "delete the new 42")
                third = try createPk(txn, c.t, 42)
                #expect(try createPk(txn, c.t, 44) == 44, "a never-used pk still is its own key")
            }
            #expect(third >= pkEnd && third != fresh)
            try db.read { txn throws in #expect(findPk(txn, c.t, 42) == third) }
            db.verify("after the second re-insert")
        }
    }

    /// A write that creates an object whose key (its primary key) is below keys the table had
    /// still records changes to those older objects: only objects created in the write have
    /// their changes folded into the create.
    @Test func changesToOlderObjectsAreRecordedWhenANewKeyIsSmaller() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            try db.write { txn throws in
                c = try makeKeyed(txn)
                _ = try createPk(txn, c.t, 500, v: c.v, value: 1)
            }
            let before = cs_db_version(db.h)
            let pin = try db.begin(CS_TXN_READ) // keeps the history after `before`
            defer { _ = cs_txn_end(pin) }
            try db.write { txn throws in
                _ = try createPk(txn, c.t, 7, v: c.v, value: 2)
                var o = try openObj(txn, c.t, 500)
                try must(cs_obj_set_int(&o, c.v, 99), "set on the older object")
            }
            try db.read { txn throws in
                let log = try changes(txn, since: before)
                #expect(log.contains { $0.kind == CS_CHANGE_SET && $0.key == 500 && $0.col == c.v },
                        "the older object's change is recorded: \(log.map { ($0.kind.rawValue, $0.key) })")
                #expect(!log.contains { $0.kind == CS_CHANGE_SET && $0.key == 7 }, "the new object's values are part of its create")
            }
        }
    }

    /// A write that creates objects in a table holding none (empty when the write began, or
    /// emptied by it) keeps no per-key record of them (every object the table then holds is
    /// new): the history still reports each create once, no change of a new object (even one
    /// made after later objects with higher keys), and changes of objects of other tables.
    @Test func aWriteFillingAnEmptyTableRecordsOnlyItsCreates() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            var other = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            try db.write { txn throws in
                c = try makeKeyed(txn)
                let t2 = try addTable(txn, "Q")
                let id2 = try addColumn(txn, t2, "id", CS_TYPE_INT)
                let v2 = try addColumn(txn, t2, "v", CS_TYPE_INT)
                try must(cs_table_set_primary_key(txn, t2, id2), "cs_table_set_primary_key")
                other = (t2, id2, v2)
                _ = try createPk(txn, other.t, 3, v: other.v, value: 1)
            }
            func createdKeys(_ log: [cs_change], _ table: UInt32) -> [Int64] {
                log.filter { $0.kind == CS_CHANGE_CREATE && $0.table == table }
                    .flatMap { $0.key..<($0.key + max($0.a, 1)) }.sorted()
            }
            let n: Int64 = 1000
            // 1. P empty at the start: keys in scattered order, values set afterwards
            var before = cs_db_version(db.h)
            var pin = try db.begin(CS_TXN_READ) // keeps the history after `before`
            try db.write { txn throws in
                for i in 0..<n { _ = try createPk(txn, c.t, (i * 7919) % n) }
                for k in 0..<n {
                    var o = try openObj(txn, c.t, k)
                    try must(cs_obj_set_int(&o, c.v, k * 2), "set \(k)")
                }
                var o = try openObj(txn, other.t, 3)
                try must(cs_obj_set_int(&o, other.v, 2), "set Q.3")
            }
            try db.read { txn throws in
                let log = try changes(txn, since: before)
                #expect(createdKeys(log, c.t) == Array(0..<n), "one create per new object")
                #expect(!log.contains { $0.kind == CS_CHANGE_SET && $0.table == c.t }, "no change of a new object")
                #expect(log.contains { $0.kind == CS_CHANGE_SET && $0.table == other.t && $0.key == 3 },
                        "the older object of the other table")
                var o = try openObj(txn, c.t, 17)
                #expect(try getInt(&o, c.v) == 34)
            }
            _ = cs_txn_end(pin)
            // 2. P emptied by the write, then filled with other keys (smaller and larger ones)
            before = cs_db_version(db.h)
            pin = try db.begin(CS_TXN_READ)
            try db.write { txn throws in
                try must(cs_table_clear(txn, c.t), "clear")
                for k: Int64 in [5000, 2000, 7000, 6000] { _ = try createPk(txn, c.t, k, v: c.v, value: 1) }
                for k: Int64 in [5000, 2000, 7000, 6000] {
                    var o = try openObj(txn, c.t, k)
                    try must(cs_obj_set_int(&o, c.v, k), "set \(k)")
                }
            }
            try db.read { txn throws in
                let log = try changes(txn, since: before)
                #expect(createdKeys(log, c.t) == [2000, 5000, 6000, 7000])
                #expect(!log.contains { $0.kind == CS_CHANGE_SET && $0.table == c.t }, "no change of a new object")
                #expect(log.filter { $0.kind == CS_CHANGE_DELETE && $0.table == c.t }.reduce(Int64(0)) { $0 + max($1.a, 1) } == n,
                        "the cleared objects' deletes")
            }
            _ = cs_txn_end(pin)
            // 3. P not empty: a new smaller key next to an older object that changes
            before = cs_db_version(db.h)
            pin = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(pin) }
            try db.write { txn throws in
                #expect(try createPk(txn, c.t, 1500, v: c.v, value: 1) == 1500)
                var o = try openObj(txn, c.t, 6000)
                try must(cs_obj_set_int(&o, c.v, 1), "set 6000")
                var n1500 = try openObj(txn, c.t, 1500)
                try must(cs_obj_set_int(&n1500, c.v, 2), "set 1500")
            }
            try db.read { txn throws in
                let log = try changes(txn, since: before)
                #expect(log.contains { $0.kind == CS_CHANGE_SET && $0.table == c.t && $0.key == 6000 }, "the older object's change")
                #expect(!log.contains { $0.kind == CS_CHANGE_SET && $0.key == 1500 }, "the new object's values are part of its create")
            }
            db.verify("after the writes")
        }
    }

    /// Tables that are not pk-keyed allocate keys as before: String primary keys, a primary key
    /// set on a table that already held objects, and a table without a primary key.
    @Test func otherTablesKeepSequentialKeys() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let s = try addTable(txn, "S")
                let name = try addColumn(txn, s, "name", CS_TYPE_STRING)
                try must(cs_table_set_primary_key(txn, s, name), "string pk")
                var keys: [Int64] = []
                for n in ["a", "b", "c"] {
                    var o = cs_obj()
                    try withValue(.str(n)) { try must(cs_obj_create_primary(txn, s, $0, &o), "create \(n)") }
                    keys.append(o.key)
                }
                #expect(keys == [0, 1, 2])

                let late = try addTable(txn, "Late")
                let id = try addColumn(txn, late, "id", CS_TYPE_INT)
                var o = try createObj(txn, late)
                try must(cs_obj_set_int(&o, id, 100), "set id")
                try must(cs_obj_delete(&o), "delete: the table held an object")
                try must(cs_table_set_primary_key(txn, late, id), "pk on a table that held an object")
                #expect(try createPk(txn, late, 9) == 1, "the counter goes on")
                #expect(findPk(txn, late, 9) == 1)
            }
            db.verify()
        }
    }

    /// A migration turns primary keys off and on again: the keying stays while every object
    /// with a key below 2^61 still has that key as its primary key, and is dropped for good
    /// (lookups through the index, new keys from the counter) once one does not.
    @Test func primaryKeyOffAndOnKeepsOrDropsTheKeying() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            try db.write { txn throws in
                c = try makeKeyed(txn)
                for pk: Int64 in [1, 2, 3] { _ = try createPk(txn, c.t, pk) }
            }
            var extra: Int64 = 0
            try db.write { txn throws in
                try must(cs_table_set_primary_key(txn, c.t, CS_NONE), "pk off")
                var o = try createObj(txn, c.t)
                extra = o.key
                try must(cs_obj_set_int(&o, c.id, 10), "id 10 on an object made without a pk")
                var two = try openObj(txn, c.t, 2)
                try must(cs_obj_delete(&two), "delete 2 while the pk is off")
                try must(cs_table_set_primary_key(txn, c.t, c.id), "pk on again")
                #expect(extra >= pkEnd)
                #expect(findPk(txn, c.t, 10) == extra, "found through the index")
                #expect(try createPk(txn, c.t, 11) == 11, "still keyed")
                #expect(try createPk(txn, c.t, 2) >= pkEnd, "2 was retired while the pk was off")
            }
            db.verify("keying kept")
            try db.write { txn throws in
                try must(cs_table_set_primary_key(txn, c.t, CS_NONE), "pk off")
                var o = try openObj(txn, c.t, 3)
                try must(cs_obj_set_int(&o, c.id, 300), "key 3 now has pk 300")
                try must(cs_table_set_primary_key(txn, c.t, c.id), "pk on again")
                #expect(findPk(txn, c.t, 300) == 3)
                #expect(findPk(txn, c.t, 3) == nil, "key 3 is no longer pk 3")
                let k = try createPk(txn, c.t, 12)
                #expect(k >= pkEnd, "the keying is dropped: 12 takes a counter key (got \(k))")
            }
            db.verify("keying dropped")
            try db.read { txn throws in
                for pk: Int64 in [1, 10, 11, 12, 300] { #expect(findPk(txn, c.t, pk) != nil, "\(pk)") }
            }
        }
    }

    /// Compaction and backup copy the keying slots: keys, retired keys and the counter are the
    /// same in the copy, which verifies and keeps refusing a retired key.
    @Test func compactionAndBackupKeepKeysAndRetiredKeys() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var c = (t: UInt32(0), id: UInt32(0), v: UInt32(0))
            try db.write { txn throws in
                c = try makeKeyed(txn)
                for pk: Int64 in [3, 8, 13, -1] { _ = try createPk(txn, c.t, pk, v: c.v, value: pk * 2) }
                var o = try openObj(txn, c.t, 8)
                try must(cs_obj_delete(&o), "delete 8")
            }
            let copy = dir.path("copy.cstore")
            try db.read { txn throws in try must(cs_txn_write_copy(txn, copy, nil, nil), "write copy") }
            let backup = dir.path("b.csbackup")
            try must(cs_backup_write(db.h, backup, nil, nil, nil), "backup")
            let restored = dir.path("restored.cstore")
            try must(cs_backup_restore(backup, restored, nil, 0, nil, nil, nil), "restore")
            for path in [copy, restored] {
                let d = try DB(path)
                d.verify(path)
                #expect(try fileFormatVersions(path).0 == 5)
                try d.read { txn throws in
                    #expect(try allKeys(txn, c.t) == [3, 13, pkEnd])
                    #expect(findPk(txn, c.t, 13) == 13)
                    #expect(findPk(txn, c.t, -1) == pkEnd)
                    #expect(findPk(txn, c.t, 8) == nil)
                }
                try d.write { txn throws in
                    #expect(try createPk(txn, c.t, 8) == pkEnd + 1, "8 stays retired, the counter goes on")
                }
                d.verify(path + " after a write")
                d.close()
            }
        }
    }

    /// verify reports a retired-key tree whose keys are out of order.
    @Test func verifyCatchesUnsortedRetiredKeys() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var t: UInt32 = 0
            try db.write { txn throws in
                let c = try makeKeyed(txn)
                t = c.t
                for pk: Int64 in [20, 100, 101] { _ = try createPk(txn, t, pk) }
            }
            try db.write { txn throws in
                for k: Int64 in [20, 100] {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_delete(&o), "delete \(k)")
                }
            }
            // two more commits elsewhere, so the damaged node is not in the newest commit's runs
            for i in 0..<2 {
                try db.write { txn throws in
                    let o = try addTable(txn, "Other\(i)")
                    _ = try createObj(txn, o)
                }
            }
            db.verify("healthy")
            db.close()
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            func le64(_ at: Int) -> Int { rawLE64(bytes, at) }
            let tableNode = rawTableNode(bytes, t)
            #expect(Int(bytes[tableNode + 4]) | Int(bytes[tableNode + 5]) << 8 == 6, "the table node has the keying slots")
            #expect(le64(tableNode + 8 + 8 * 4) == (3 << 1) | 1, "flags: pk-keyed, no primary-key index (tagged 3)")
            let retired = le64(tableNode + 8 + 8 * 5)
            #expect(retired > 4096 && retired % 8 == 0)
            #expect(bytes[retired + 2] == 0 && bytes[retired + 3] == 8 && bytes[retired + 4] == 2,
                    "a plain packed leaf of two bytes")
            #expect(bytes[retired + 8] == 20 && bytes[retired + 9] == 100)
            bytes.swapAt(retired + 8, retired + 9)
            let sum = nodeChecksum(bytes, at: retired, payload: 2)
            bytes[retired] = UInt8(sum & 0xFF)
            bytes[retired + 1] = UInt8(sum >> 8)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let (rc, h) = openRaw(path, flags: 0)
            if rc == 0 {
                expectCode(cs_db_verify(h), CS_CORRUPT, "verify of unsorted retired keys")
                #expect(lastMessage().contains("retired"), "the message names the retired keys: \(lastMessage())")
                _ = cs_db_close(h)
            } else {
                Issue.record("the damaged file did not open: \(codeName(rc)) \(lastMessage())")
            }
            expectCode(cs_file_verify(path), CS_CORRUPT, "cs_file_verify of unsorted retired keys")
        }
    }
}

/// A node's check (docs/FORMAT.md §3), computed as the writer does, for a node of `payload`
/// bytes (padded to 8) at `at`.
private func nodeChecksum(_ b: [UInt8], at: Int, payload: Int) -> UInt16 {
    func le(_ i: Int, _ n: Int) -> UInt64 { (0..<n).reduce(UInt64(0)) { $0 | UInt64(b[i + $1]) << (8 * UInt64($1)) } }
    let flags = UInt64(b[at + 2]), width = UInt64(b[at + 3]), count = le(at + 4, 4)
    let words = (payload + 7) / 8
    var a: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ (flags << 40) ^ (width << 32) ^ count
    var s: UInt64 = 0
    for i in 0..<words {
        let w = le(at + 8 + i * 8, 8)
        a = (a ^ w) &* 0x1_0000_0001_b3
        s = s &+ (w ^ (a >> 29))
    }
    a ^= s &* 0xff51_afd7_ed55_8ccd
    a ^= a >> 33
    return UInt16(truncatingIfNeeded: a ^ (a >> 16) ^ (a >> 32) ^ (a >> 48))
}
