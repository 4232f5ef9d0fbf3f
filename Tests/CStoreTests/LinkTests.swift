// Links, backlinks and embedded objects (docs/ARCHITECTURE.md, Storage: Links): backlink counts and order, what happens
// to links when their target is deleted, and cascading deletes of embedded objects.
//
// Deleting a link target: a single link becomes null, the target is removed from lists and
// sets, and in a map the entry stays with a null value (as Realm's Map<String, Object?>).

import CStore
import Foundation
import Testing

private func backlinks(_ txn: OpaquePointer, _ table: UInt32, _ key: Int64,
                       _ originTable: UInt32, _ originCol: UInt32) throws -> [Int64] {
    var o = try openObj(txn, table, key)
    var n = 0
    try must(cs_obj_backlink_count(&o, originTable, originCol, &n), "cs_obj_backlink_count")
    var out: [Int64] = []
    for i in 0..<n {
        var k: Int64 = 0
        try must(cs_obj_backlink_get(&o, originTable, originCol, i, &k), "cs_obj_backlink_get(\(i))")
        out.append(k)
    }
    return out
}

@Suite struct LinkTests {
    @Test func backlinksCountSingleAndListLinks() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (target, origin, single, many): (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            var tk: [Int64] = []
            var ok: [Int64] = []
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                origin = try addTable(txn, "Origin")
                single = try addColumn(txn, origin, "single", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                many = try addColumn(txn, origin, "many", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
                for _ in 0..<2 { tk.append(try createObj(txn, target).key) }
                for _ in 0..<5 { ok.append(try createObj(txn, origin).key) }
                for (i, t) in [(0, 0), (1, 0), (2, 1)] {
                    var o = try openObj(txn, origin, ok[i])
                    check(setVal(&o, single, .link(target, tk[t])))
                }
                var o3 = try openObj(txn, origin, ok[3])
                var l3 = try openColl(&o3, many)
                for t in [0, 0, 1] { check(listAppend(&l3, .link(target, tk[t]))) }
                var o4 = try openObj(txn, origin, ok[4])
                var l4 = try openColl(&o4, many)
                check(listAppend(&l4, .link(target, tk[0])))

                #expect(try backlinks(txn, target, tk[0], origin, single) == [ok[0], ok[1]])
                #expect(try backlinks(txn, target, tk[1], origin, single) == [ok[2]])
                #expect(try backlinks(txn, target, tk[0], origin, many) == [ok[3], ok[3], ok[4]],
                        "a list holding the target twice counts twice")
                #expect(try backlinks(txn, target, tk[1], origin, many) == [ok[3]])
            }
            try db.write { txn throws in
                var o0 = try openObj(txn, origin, ok[0])
                check(setVal(&o0, single, .link(target, tk[1])))
                var o1 = try openObj(txn, origin, ok[1])
                check(setVal(&o1, single, .null))
                var o3 = try openObj(txn, origin, ok[3])
                var l3 = try openColl(&o3, many)
                check(cs_list_erase(&l3, 0))
            }
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    #expect(try backlinks(txn, target, tk[0], origin, single) == [], "\(phase)")
                    #expect(try backlinks(txn, target, tk[1], origin, single) == [ok[2], ok[0]], "\(phase)")
                    // removing ok[3]'s first entry moved the last one (ok[4]) into its place
                    #expect(try backlinks(txn, target, tk[0], origin, many) == [ok[4], ok[3]], "\(phase)")
                    #expect(try backlinks(txn, target, tk[1], origin, many) == [ok[3]], "\(phase)")
                    var t0 = try openObj(txn, target, tk[0])
                    var k: Int64 = 0
                    expectCode(cs_obj_backlink_get(&t0, origin, many, 2, &k), CS_RANGE, "backlink past the end")
                }
                db.verify(phase)
            }
        }
    }

    @Test func deletingTargetFixesEveryKindOfLink() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (target, origin): (UInt32, UInt32) = (0, 0)
            var (single, list, set, map): (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            var tk: [Int64] = []
            var ok: Int64 = 0
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                origin = try addTable(txn, "Origin")
                single = try addColumn(txn, origin, "single", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                list = try addColumn(txn, origin, "list", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
                set = try addColumn(txn, origin, "set", CS_TYPE_LINK, coll: CS_COLL_SET, target: target)
                map = try addColumn(txn, origin, "map", CS_TYPE_LINK, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE, target: target)
                for _ in 0..<3 { tk.append(try createObj(txn, target).key) }
                var o = try createObj(txn, origin)
                ok = o.key
                check(setVal(&o, single, .link(target, tk[1])))
                var l = try openColl(&o, list)
                for t in [0, 1, 2, 1] { check(listAppend(&l, .link(target, tk[t]))) }
                var s = try openColl(&o, set)
                for t in [2, 1, 0] { check(setInsert(&s, .link(target, tk[t])).0) }
                var m = try openColl(&o, map)
                check(mapSet(&m, Array("a".utf8), .link(target, tk[1])))
                check(mapSet(&m, Array("b".utf8), .link(target, tk[2])))
            }
            db.verify("before delete")
            try db.write { txn throws in
                var t1 = try openObj(txn, target, tk[1])
                try must(cs_obj_delete(&t1), "delete target")
            }
            for phase in ["after delete", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    var o = try openObj(txn, origin, ok)
                    #expect(getVal(&o, single) == .null, "\(phase): single link nulled")
                    var l = try openColl(&o, list)
                    #expect(try listAll(&l) == [.link(target, tk[0]), .link(target, tk[2])], "\(phase): removed from list")
                    var s = try openColl(&o, set)
                    let setVals = try listAll(&s)
                    #expect(setVals.count == 2 && setVals.contains(.link(target, tk[0])) && setVals.contains(.link(target, tk[2])),
                            "\(phase): removed from set: \(setVals)")
                    var m = try openColl(&o, map)
                    let entries = try mapAll(&m)
                    #expect(entries.map { $0.0 } == [Array("a".utf8), Array("b".utf8)], "\(phase): map keys kept")
                    #expect(entries.map { $0.1 } == [.null, .link(target, tk[2])], "\(phase): map value nulled")
                    #expect(try backlinks(txn, target, tk[2], origin, list) == [ok], "\(phase)")
                    #expect(try backlinks(txn, target, tk[0], origin, set) == [ok], "\(phase)")
                    #expect(try tableCount(txn, target) == 2, "\(phase)")
                }
                db.verify(phase)
            }
            // Clearing the target table empties every link.
            try db.write { txn throws in try must(cs_table_clear(txn, target), "cs_table_clear") }
            try db.read { txn throws in
                var o = try openObj(txn, origin, ok)
                var l = try openColl(&o, list)
                #expect(try collSize(&l) == 0)
                var s = try openColl(&o, set)
                #expect(try collSize(&s) == 0)
                var m = try openColl(&o, map)
                #expect(try mapAll(&m).map { $0.1 } == [.null, .null])
                #expect(try tableCount(txn, target) == 0)
            }
            db.verify("after clearing the target table")
        }
    }

    @Test func deletingOriginRemovesBacklinks() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (target, origin, col): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var tk: Int64 = 0
            var ok: [Int64] = []
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                origin = try addTable(txn, "Origin")
                col = try addColumn(txn, origin, "l", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
                tk = try createObj(txn, target).key
                for _ in 0..<3 {
                    var o = try createObj(txn, origin)
                    ok.append(o.key)
                    var l = try openColl(&o, col)
                    check(listAppend(&l, .link(target, tk)))
                }
                var o1 = try openObj(txn, origin, ok[1])
                check(cs_obj_delete(&o1))
                #expect(try backlinks(txn, target, tk, origin, col) == [ok[0], ok[2]])
            }
            db.verify()
        }
    }

    @Test func embeddedObjectsCascade() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (owner, emb, emb2): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var (single, list, map, kids, name, num): (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0)
            var ownerKey: Int64 = 0
            var otherOwner: Int64 = 0
            func counts(_ txn: OpaquePointer) throws -> (UInt64, UInt64) {
                (try tableCount(txn, emb), try tableCount(txn, emb2))
            }
            try db.write { txn throws in
                owner = try addTable(txn, "Owner")
                emb = try addTable(txn, "Emb", flags: CS_TABLE_EMBEDDED)
                emb2 = try addTable(txn, "Emb2", flags: CS_TABLE_EMBEDDED)
                single = try addColumn(txn, owner, "e", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: emb)
                list = try addColumn(txn, owner, "list", CS_TYPE_LINK, coll: CS_COLL_LIST, target: emb)
                map = try addColumn(txn, owner, "map", CS_TYPE_LINK, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE, target: emb)
                name = try addColumn(txn, emb, "name", CS_TYPE_STRING)
                kids = try addColumn(txn, emb, "kids", CS_TYPE_LINK, coll: CS_COLL_LIST, target: emb2)
                num = try addColumn(txn, emb2, "n", CS_TYPE_INT)

                var bad = cs_obj()
                expectCode(cs_obj_create(txn, emb, &bad), CS_MISUSE, "cs_obj_create on an embedded table")

                var o = try createObj(txn, owner)
                ownerKey = o.key
                var e = cs_obj()
                try must(cs_obj_create_embedded(&o, single, &e), "cs_obj_create_embedded")
                check(setVal(&e, name, .str("single")))
                var k = try openColl(&e, kids)
                for i in 0..<2 {
                    var kid = cs_obj()
                    try must(cs_list_insert_embedded(&k, i, &kid), "insert kid")
                    check(cs_obj_set_int(&kid, num, Int64(i + 1)))
                }
                #expect(getVal(&o, single) == .link(emb, e.key))
                var n = 0
                check(cs_obj_backlink_count(&e, owner, single, &n))
                #expect(n == 1, "an embedded object has exactly one owner")

                var l = try openColl(&o, list)
                for i in 0..<3 {
                    var x = cs_obj()
                    try must(cs_list_insert_embedded(&l, i, &x), "cs_list_insert_embedded")
                    check(setVal(&x, name, .str("list \(i)")))
                    var xk = try openColl(&x, kids)
                    var kid = cs_obj()
                    try must(cs_list_insert_embedded(&xk, 0, &kid), "insert grandchild")
                }
                var m = try openColl(&o, map)
                for key in ["x", "y"] {
                    var x = cs_obj()
                    let rc = withKey(Array(key.utf8)) { p, len in cs_map_set_embedded(&m, p, len, &x) }
                    try must(rc, "cs_map_set_embedded")
                    check(setVal(&x, name, .str("map \(key)")))
                }
                // A second owner, untouched by what follows.
                var o2 = try createObj(txn, owner)
                otherOwner = o2.key
                var e2 = cs_obj()
                try must(cs_obj_create_embedded(&o2, single, &e2), "cs_obj_create_embedded")
                var k2 = try openColl(&e2, kids)
                var kid2 = cs_obj()
                try must(cs_list_insert_embedded(&k2, 0, &kid2), "insert kid")

                // A plain link into an embedded table is refused.
                expectCode(setVal(&o2, single, .link(emb, e.key)), CS_MISUSE, "cs_obj_set of a link into an embedded table")
                #expect(try counts(txn) == (1 + 3 + 2 + 1, 2 + 3 + 1))
            }
            db.verify("after creating embedded objects")

            try db.write { txn throws in
                // Replacing the single embedded object deletes the old one and its kids.
                var o = try openObj(txn, owner, ownerKey)
                var e = cs_obj()
                try must(cs_obj_create_embedded(&o, single, &e), "replace embedded")
                #expect(getVal(&e, name) == .str(""))
                #expect(try counts(txn) == (7, 4), "old embedded object and its two kids deleted")
                // Overwriting a map entry with a new embedded object deletes the old one.
                var m = try openColl(&o, map)
                var x = cs_obj()
                try must(withKey(Array("x".utf8)) { p, len in cs_map_set_embedded(&m, p, len, &x) }, "replace map entry")
                #expect(try counts(txn) == (7, 4))
                let entries = try mapAll(&m)
                #expect(entries.count == 2 && entries[0].1 == .link(emb, x.key), "key \"x\" holds the new object")
                // Clearing the list deletes its three objects and their grandchildren.
                var l = try openColl(&o, list)
                try must(cs_coll_clear(&l), "cs_coll_clear")
                #expect(try counts(txn) == (4, 1))
            }
            db.verify("after replacing and clearing")
            try db.reopen()
            try db.write { txn throws in
                #expect(try counts(txn) == (4, 1), "after reopen")
                var o = try openObj(txn, owner, ownerKey)
                try must(cs_obj_delete(&o), "delete owner")
                #expect(try counts(txn) == (1, 1), "the owner's embedded objects are gone, the other owner's stay")
                var o2 = try openObj(txn, owner, otherOwner)
                try must(cs_obj_delete(&o2), "delete other owner")
                #expect(try counts(txn) == (0, 0), "recursive cascade")
            }
            db.verify("after deleting owners")
            try db.reopen()
            try db.read { txn throws in #expect(try counts(txn) == (0, 0)) }
        }
    }

    @Test func mixedLinkToAnotherTable() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (a, b, m): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var (ak, bk): (Int64, Int64) = (0, 0)
            try db.write { txn throws in
                a = try addTable(txn, "A")
                b = try addTable(txn, "B")
                m = try addColumn(txn, a, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                bk = try createObj(txn, b).key
                var o = try createObj(txn, a)
                ak = o.key
                check(setVal(&o, m, .link(b, bk)))
            }
            try db.reopen()
            try db.read { txn throws in
                var o = try openObj(txn, a, ak)
                #expect(getVal(&o, m) == .link(b, bk))
            }
            db.verify()
        }
    }

    @Test func selfLinksAndDeletingALinkedOwner() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, next, kids): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var keys: [Int64] = []
            try db.write { txn throws in
                t = try addTable(txn, "Node")
                next = try addColumn(txn, t, "next", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: t)
                kids = try addColumn(txn, t, "kids", CS_TYPE_LINK, coll: CS_COLL_LIST, target: t)
                for _ in 0..<4 { keys.append(try createObj(txn, t).key) }
                // 0 -> 0 (itself), 1 -> 0, 2 -> 1, 3 -> 2; kids of 0: [0, 3, 0]
                for (i, to) in [(0, 0), (1, 0), (2, 1), (3, 2)] {
                    var o = try openObj(txn, t, keys[i])
                    check(setVal(&o, next, .link(t, keys[to])))
                }
                var o0 = try openObj(txn, t, keys[0])
                var l = try openColl(&o0, kids)
                for k in [0, 3, 0] { check(listAppend(&l, .link(t, keys[k]))) }
                #expect(try backlinks(txn, t, keys[0], t, next) == [keys[0], keys[1]])
                #expect(try backlinks(txn, t, keys[0], t, kids) == [keys[0], keys[0]])
            }
            db.verify("with self links")
            try db.write { txn throws in
                var o0 = try openObj(txn, t, keys[0])
                try must(cs_obj_delete(&o0), "delete an object that links to itself")
                var o1 = try openObj(txn, t, keys[1])
                #expect(getVal(&o1, next) == .null)
                #expect(try backlinks(txn, t, keys[3], t, kids) == [], "links from the deleted object are gone")
            }
            db.verify("after deleting the self-linked object")
            try db.reopen()
            try db.read { txn throws in
                #expect(try allKeys(txn, t) == Array(keys[1...]))
                var o3 = try openObj(txn, t, keys[3])
                #expect(getVal(&o3, next) == .link(t, keys[2]))
            }
        }
    }

    @Test func removingAPopulatedLinkColumnRemovesBacklinks() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (target, origin, col, other): (UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0)
            var tk: Int64 = 0
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                origin = try addTable(txn, "Origin")
                col = try addColumn(txn, origin, "l", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
                other = try addColumn(txn, origin, "one", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                tk = try createObj(txn, target).key
                for _ in 0..<300 {
                    var o = try createObj(txn, origin)
                    var l = try openColl(&o, col)
                    check(listAppend(&l, .link(target, tk)))
                    check(setVal(&o, other, .link(target, tk)))
                }
                #expect(try backlinks(txn, target, tk, origin, col).count == 300)
            }
            try db.write { txn throws in
                try must(cs_column_remove(txn, origin, col), "cs_column_remove of a populated link list")
                #expect(try backlinks(txn, target, tk, origin, other).count == 300, "the other link column is intact")
            }
            db.verify("after removing the link column")
            try db.reopen()
            db.verify("after reopen")
        }
    }

    @Test func rollbackRestoresLinksAndBacklinks() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (target, origin, col): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var tk: [Int64] = []
            var ok: Int64 = 0
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                origin = try addTable(txn, "Origin")
                col = try addColumn(txn, origin, "one", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                for _ in 0..<2 { tk.append(try createObj(txn, target).key) }
                var o = try createObj(txn, origin)
                ok = o.key
                check(setVal(&o, col, .link(target, tk[0])))
            }
            let txn = try db.begin(CS_TXN_WRITE)
            var o = try openObj(txn, origin, ok)
            check(setVal(&o, col, .link(target, tk[1])))
            var t0 = try openObj(txn, target, tk[0])
            check(cs_obj_delete(&t0))
            check(cs_txn_rollback(txn))
            #expect(try backlinks(txn, target, tk[0], origin, col) == [ok])
            #expect(try backlinks(txn, target, tk[1], origin, col) == [])
            var again = try openObj(txn, origin, ok)
            #expect(getVal(&again, col) == .link(target, tk[0]))
            check(cs_txn_end(txn))
            db.verify()
        }
    }

    @Test func linksToMissingObjectsOrWrongTablesAreRefused() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let target = try addTable(txn, "Target")
                let other = try addTable(txn, "Other")
                let origin = try addTable(txn, "Origin")
                let one = try addColumn(txn, origin, "one", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                let many = try addColumn(txn, origin, "many", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
                let mixed = try addColumn(txn, origin, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                let tk = try createObj(txn, target).key
                let ok = try createObj(txn, other).key
                var o = try createObj(txn, origin)
                #expect(setVal(&o, one, .link(target, tk + 1000)) != Int32(CS_OK), "a link to a missing object")
                #expect(setVal(&o, one, .link(other, ok)) != Int32(CS_OK), "a link into a table other than the target")
                #expect(setVal(&o, mixed, .link(target, tk + 1000)) != Int32(CS_OK), "a Mixed link to a missing object")
                var l = try openColl(&o, many)
                #expect(listAppend(&l, .link(target, tk + 1000)) != Int32(CS_OK), "a list link to a missing object")
                #expect(listAppend(&l, .link(other, ok)) != Int32(CS_OK), "a list link into the wrong table")
                #expect(getVal(&o, one) == .null)
                #expect(getVal(&o, mixed) == .null)
                #expect(try collSize(&l) == 0)
                var c = cs_coll()
                expectCode(cs_coll_open(&o, one, &c), CS_TYPE, "cs_coll_open on a single link column")
                expectCode(cs_obj_set_collection(&o, one, CS_TYPE_LIST), CS_TYPE, "cs_obj_set_collection on a link column")
                expectCode(cs_list_set_collection(&l, 0, CS_TYPE_LIST), CS_TYPE, "cs_list_set_collection on a list of links")
            }
            db.verify()
        }
    }
}
