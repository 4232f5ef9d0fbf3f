// cs_db_verify and cs_file_verify on links (check.c, "What it checks" 4 and 5): every link column's
// (origin, target) pairs must be those its target table's backlinks name, every link must name an
// object that exists, and every object of an embedded table must have exactly one owner. The
// damaged files are made with cs_test_backlink_put and cs_test_link_put, which write a backlink
// without its link or a link without its backlink; in each the number of links still equals the
// number of backlinks, so a count alone passes them.

import CStore
import Foundation
import Testing

/// Tables and columns of the files these tests build: Origin links to Target through a single
/// link, a list, a set, a map and a second single link, and owns Part (an embedded table)
/// through a single link, a second single link, a list and a map; Part links to Target.
private struct Links {
    var target: UInt32 = 0, origin: UInt32 = 0, part: UInt32 = 0
    var single: UInt32 = 0, list: UInt32 = 0, set: UInt32 = 0, map: UInt32 = 0, other: UInt32 = 0
    var owner: UInt32 = 0, owner2: UInt32 = 0, parts: UInt32 = 0, partMap: UInt32 = 0
    var partTarget: UInt32 = 0

    init(_ txn: OpaquePointer) throws {
        target = try addTable(txn, "Target")
        origin = try addTable(txn, "Origin")
        part = try addTable(txn, "Part", flags: CS_TABLE_EMBEDDED)
        single = try addColumn(txn, origin, "single", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
        list = try addColumn(txn, origin, "list", CS_TYPE_LINK, coll: CS_COLL_LIST, target: target)
        set = try addColumn(txn, origin, "set", CS_TYPE_LINK, coll: CS_COLL_SET, target: target)
        map = try addColumn(txn, origin, "map", CS_TYPE_LINK, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE, target: target)
        other = try addColumn(txn, origin, "other", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
        owner = try addColumn(txn, origin, "owner", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: part)
        owner2 = try addColumn(txn, origin, "owner2", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: part)
        parts = try addColumn(txn, origin, "parts", CS_TYPE_LINK, coll: CS_COLL_LIST, target: part)
        partMap = try addColumn(txn, origin, "partMap", CS_TYPE_LINK, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE, target: part)
        partTarget = try addColumn(txn, part, "target", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
    }

    /// The column of a link collection kind named in a test's arguments.
    func column(_ kind: String) -> UInt32 {
        switch kind {
        case "list": return list
        case "set": return set
        case "map": return map
        default: return single
        }
    }
}

/// Makes `origin` link to `to` through the column of `kind` (a single link set, a list or set
/// added to, a map entry "k" set), keeping the backlinks as the core does.
private func link(_ txn: OpaquePointer, _ s: Links, _ kind: String, _ origin: Int64, _ to: Int64) throws {
    var o = try openObj(txn, s.origin, origin)
    let v = Val.link(s.target, to)
    switch kind {
    case "single":
        try must(setVal(&o, s.single, v), "set single")
    case "list":
        var c = try openColl(&o, s.list)
        try must(listAppend(&c, v), "list append")
    case "set":
        var c = try openColl(&o, s.set)
        try must(setInsert(&c, v).0, "set insert")
    default:
        var c = try openColl(&o, s.map)
        try must(mapSet(&c, Array("k".utf8), v), "map set")
    }
}

/// Adds (or removes) one backlink of Target object `target` from `origin` through `col`,
/// touching no link.
private func backlink(_ txn: OpaquePointer, _ s: Links, _ target: Int64, _ col: UInt32, _ origin: Int64,
                      add: Bool, table: UInt32? = nil) throws {
    try must(cs_test_backlink_put(txn, table ?? s.target, target, s.origin, col, origin, add),
             "cs_test_backlink_put(\(add ? "add" : "remove"))")
}

/// Expects cs_db_verify on `db` and cs_file_verify of its file (after closing it) to report
/// CS_CORRUPT with a message holding each of `says`.
private func expectDamage(_ db: DB, _ says: [String], _ what: String,
                          sourceLocation: SourceLocation = #_sourceLocation) {
    let rc = cs_db_verify(db.h)
    let msg = lastMessage()
    #expect(rc == Int32(CS_CORRUPT), "\(what): cs_db_verify returned \(codeName(rc))", sourceLocation: sourceLocation)
    for s in says {
        #expect(msg.contains(s), "\(what): the message names \(s): \(msg)", sourceLocation: sourceLocation)
    }
    db.close()
    let f = cs_file_verify(db.path)
    let fmsg = lastMessage()
    #expect(f == Int32(CS_CORRUPT), "\(what): cs_file_verify returned \(codeName(f))", sourceLocation: sourceLocation)
    for s in says {
        #expect(fmsg.contains(s), "\(what): cs_file_verify's message names \(s): \(fmsg)", sourceLocation: sourceLocation)
    }
}

@Suite struct VerifyLinksTests {
    /// Healthy files with every kind of link verify: single links, lists (one target twice), sets,
    /// maps (an entry left null by its target's deletion), two columns into one table, embedded
    /// objects owned through a single link, a list and a map, embedded objects linking on, the
    /// backlink order changed by removals, deletions, moves and swaps, and link columns added over
    /// existing objects and removed.
    @Test func everyKindOfLinkVerifies() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var s: Links?
            var origins: [Int64] = []
            var targets: [Int64] = []
            try db.write { txn throws in
                let l = try Links(txn)
                s = l
                for _ in 0..<6 { targets.append(try createObj(txn, l.target).key) }
                for i in 0..<40 {
                    var o = try createObj(txn, l.origin)
                    origins.append(o.key)
                    let t = { (j: Int) in Val.link(l.target, targets[(i + j) % targets.count]) }
                    try must(setVal(&o, l.single, t(0)), "single")
                    if i % 3 == 0 { try must(setVal(&o, l.other, t(0)), "other, the same target") }
                    var list = try openColl(&o, l.list)
                    for v in [t(1), t(2), t(1)] { try must(listAppend(&list, v), "list") }
                    var set = try openColl(&o, l.set)
                    for v in [t(0), t(3)] { try must(setInsert(&set, v).0, "set") }
                    var map = try openColl(&o, l.map)
                    try must(mapSet(&map, Array("a".utf8), t(4)), "map a")
                    try must(mapSet(&map, Array("b".utf8), t(4)), "map b, the same target")
                    try must(mapSet(&map, Array("n".utf8), .null), "map n, null")
                    var e = cs_obj()
                    try must(cs_obj_create_embedded(&o, l.owner, &e), "owner")
                    try must(setVal(&e, l.partTarget, t(5)), "the embedded object's link")
                    if i % 2 == 0 { try must(cs_obj_create_embedded(&o, l.owner2, &e), "owner2") }
                    var parts = try openColl(&o, l.parts)
                    for j in 0..<2 { try must(cs_list_insert_embedded(&parts, j, &e), "parts") }
                    var partMap = try openColl(&o, l.partMap)
                    try must(withKey(Array("p".utf8)) { p, n in cs_map_set_embedded(&partMap, p, n, &e) }, "partMap")
                }
            }
            db.verify("after creating")
            let l = s!
            try db.write { txn throws in
                // a map entry's target deleted (the entry stays, null), list entries removed and
                // replaced, an embedded object replaced, an owner deleted with what it owns
                var t4 = try openObj(txn, l.target, targets[4])
                try must(cs_obj_delete(&t4), "delete a target")
                var o = try openObj(txn, l.origin, origins[1])
                var list = try openColl(&o, l.list)
                try must(cs_list_erase(&list, 0), "erase from a list")
                try must(listSet(&list, 0, .link(l.target, targets[0])), "replace in a list")
                var e = cs_obj()
                try must(cs_obj_create_embedded(&o, l.owner, &e), "replace an embedded object")
                var gone = try openObj(txn, l.origin, origins[2])
                try must(cs_obj_delete(&gone), "delete an owner")
                // elements moved, swapped and erased keep their pairs
                var o5 = try openObj(txn, l.origin, origins[5])
                var parts = try openColl(&o5, l.parts)
                try must(cs_list_move(&parts, 0, 1), "move an embedded object in a list")
                var list5 = try openColl(&o5, l.list)
                try must(cs_list_swap(&list5, 0, 2), "swap in a list")
                var set5 = try openColl(&o5, l.set)
                try must(setErase(&set5, .link(l.target, targets[5])).0, "erase from a set")
                // a link column added over existing objects (none of them holds a value yet), one
                // link in it, and a link column removed with its backlinks
                let late = try addColumn(txn, l.origin, "late", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: l.target)
                try must(setVal(&o5, late, .link(l.target, targets[0])), "set late")
                try must(cs_column_remove(txn, l.origin, l.other), "remove a link column")
            }
            db.verify("after changes")
            db.close()
            check(cs_file_verify(db.path), "cs_file_verify")
        }
    }

    /// More healthy shapes verify: a table linking to itself (single and list, an object to
    /// itself), embedded objects owning embedded objects, a Mixed value linking to an object
    /// later deleted, and the changes that delete embedded objects on the way: a list of them
    /// erased from and cleared, a map entry replaced and erased, one deleted directly, a link
    /// column into the embedded table removed, and a table owning embedded objects removed.
    @Test func moreLinkShapesVerify() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var node: UInt32 = 0, holder: UInt32 = 0, part: UInt32 = 0, sub: UInt32 = 0, keeper: UInt32 = 0
            var next: UInt32 = 0, kids: UInt32 = 0, mixed: UInt32 = 0, parts: UInt32 = 0, partMap: UInt32 = 0
            var child: UInt32 = 0, kept: UInt32 = 0
            var nodes: [Int64] = [], holders: [Int64] = []
            try db.write { txn throws in
                node = try addTable(txn, "Node")
                holder = try addTable(txn, "Holder")
                part = try addTable(txn, "Part", flags: CS_TABLE_EMBEDDED)
                sub = try addTable(txn, "Sub", flags: CS_TABLE_EMBEDDED)
                keeper = try addTable(txn, "Keeper")
                next = try addColumn(txn, node, "next", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: node)
                kids = try addColumn(txn, node, "kids", CS_TYPE_LINK, coll: CS_COLL_LIST, target: node)
                mixed = try addColumn(txn, node, "any", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                parts = try addColumn(txn, holder, "parts", CS_TYPE_LINK, coll: CS_COLL_LIST, target: part)
                partMap = try addColumn(txn, holder, "partMap", CS_TYPE_LINK, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE, target: part)
                child = try addColumn(txn, part, "child", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: sub)
                kept = try addColumn(txn, keeper, "kept", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: sub)
                for _ in 0..<8 { nodes.append(try createObj(txn, node).key) }
                for (i, k) in nodes.enumerated() {
                    var o = try openObj(txn, node, k)
                    try must(setVal(&o, next, .link(node, nodes[(i + 1) % nodes.count])), "next")
                    var list = try openColl(&o, kids)
                    for v in [k, nodes[(i + 3) % nodes.count], k] { try must(listAppend(&list, .link(node, v)), "kids") }
                }
                var last = try openObj(txn, node, nodes[7])
                try must(setVal(&last, mixed, .link(node, nodes[6])), "a Mixed link")
                for _ in 0..<4 {
                    var h = try createObj(txn, holder)
                    holders.append(h.key)
                    var list = try openColl(&h, parts)
                    for j in 0..<3 {
                        var e = cs_obj()
                        try must(cs_list_insert_embedded(&list, j, &e), "parts")
                        var sube = cs_obj()
                        try must(cs_obj_create_embedded(&e, child, &sube), "a part's own embedded object")
                    }
                    var map = try openColl(&h, partMap)
                    for key in ["a", "b"] {
                        var e = cs_obj()
                        try must(withKey(Array(key.utf8)) { p, n in cs_map_set_embedded(&map, p, n, &e) }, "partMap")
                        var sube = cs_obj()
                        try must(cs_obj_create_embedded(&e, child, &sube), "a map part's embedded object")
                    }
                }
                for _ in 0..<3 {
                    var k = try createObj(txn, keeper)
                    var e = cs_obj()
                    try must(cs_obj_create_embedded(&k, kept, &e), "kept")
                }
            }
            db.verify("after creating")
            try db.write { txn throws in
                var six = try openObj(txn, node, nodes[6])
                try must(cs_obj_delete(&six), "delete a node others link to (and a Mixed value names)")
                var h0 = try openObj(txn, holder, holders[0])
                var list = try openColl(&h0, parts)
                try must(cs_list_erase(&list, 1), "erase an embedded object from a list")
                var h1 = try openObj(txn, holder, holders[1])
                var list1 = try openColl(&h1, parts)
                try must(cs_coll_clear(&list1), "clear a list of embedded objects")
                var map = try openColl(&h1, partMap)
                var e = cs_obj()
                try must(withKey(Array("a".utf8)) { p, n in cs_map_set_embedded(&map, p, n, &e) }, "replace a map part")
                var erased = false
                try must(withKey(Array("b".utf8)) { p, n in cs_map_erase(&map, p, n, &erased) }, "erase a map part")
                #expect(erased)
                var h2 = try openObj(txn, holder, holders[2])
                var list2 = try openColl(&h2, parts)
                var v = cs_value()
                try must(cs_list_get(&list2, 0, &v), "the first part")
                var first = try openObj(txn, part, v.v.link.key)
                try must(cs_obj_delete(&first), "delete an embedded object directly")
            }
            db.verify("after deleting embedded objects")
            try db.write { txn throws in
                try must(cs_column_remove(txn, holder, partMap), "remove a link column into Part")
            }
            db.verify("after removing a link column into an embedded table")
            try db.write { txn throws in
                try must(cs_table_remove(txn, keeper), "remove a table owning embedded objects")
            }
            db.verify("after removing a table that owned embedded objects")
            db.close()
            check(cs_file_verify(db.path), "cs_file_verify")
        }
    }

    /// One link's backlink moved to another target: the target it names has no backlink from
    /// its origin and another target has one too many.
    @Test(arguments: ["single", "list", "set", "map"])
    func backlinkOnTheWrongTarget(_ kind: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let s = try Links(txn)
                let t0 = try createObj(txn, s.target).key, t1 = try createObj(txn, s.target).key
                let o0 = try createObj(txn, s.origin).key, o1 = try createObj(txn, s.origin).key
                try link(txn, s, kind, o0, t0)
                try link(txn, s, kind, o1, t1)
                try backlink(txn, s, t0, s.column(kind), o0, add: false)
                try backlink(txn, s, t1, s.column(kind), o0, add: true)
            }
            expectDamage(db, ["'Origin.\(kind)' of object 0 holds 1 link to object 0 of 'Target', which has 0 backlinks"],
                         "a \(kind) link's backlink on another target")
        }
    }

    /// A list holding one target twice whose target has only one backlink for it, the other
    /// given to an object that does not link there.
    @Test func listTwiceWithOneBacklink() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let s = try Links(txn)
                let t0 = try createObj(txn, s.target).key
                let o0 = try createObj(txn, s.origin).key, o1 = try createObj(txn, s.origin).key
                try link(txn, s, "list", o0, t0)
                try link(txn, s, "list", o0, t0)
                try backlink(txn, s, t0, s.list, o0, add: false)
                try backlink(txn, s, t0, s.list, o1, add: true)
            }
            expectDamage(db, ["'Origin.list' of object 0 holds 2 links to object 0 of 'Target', which has 1 backlink from it"],
                         "a list's second link without its backlink")
        }
    }

    /// A backlink naming an origin object that does not exist, in place of a real link's.
    @Test func backlinkFromAMissingObject() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let s = try Links(txn)
                let t0 = try createObj(txn, s.target).key
                let o0 = try createObj(txn, s.origin).key
                try link(txn, s, "single", o0, t0)
                try backlink(txn, s, t0, s.single, o0, add: false)
                try backlink(txn, s, t0, s.single, 12345, add: true)
            }
            expectDamage(db, ["backlink for 'Origin.single' from object 12345, which 'Origin' does not hold"],
                         "a backlink from a missing object")
        }
    }

    /// A backlink from an object that holds no link there, beside a real one: the counts differ
    /// (as a count alone found before), and the message names the backlink.
    @Test func strayBacklinkIsNamed() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let s = try Links(txn)
                let t0 = try createObj(txn, s.target).key
                let o0 = try createObj(txn, s.origin).key, o1 = try createObj(txn, s.origin).key
                try link(txn, s, "map", o0, t0)
                try backlink(txn, s, t0, s.map, o1, add: true)
            }
            expectDamage(db, ["object 0 of 'Target' has 1 backlink for 'Origin.map' from object 1, which holds 0 links to it"],
                         "a stray backlink")
        }
    }

    /// A link to a key its target table does not hold, with a stray backlink elsewhere keeping
    /// the counts equal: a single link written as it is, and a list whose target was deleted
    /// while its backlink was missing (so the deletion did not find the list).
    @Test(arguments: ["single", "list"])
    func danglingLink(_ kind: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var gone: Int64 = 0
            try db.write { txn throws in
                let s = try Links(txn)
                let t0 = try createObj(txn, s.target).key
                let o0 = try createObj(txn, s.origin).key, o1 = try createObj(txn, s.origin).key
                if kind == "single" {
                    gone = 999_999
                    var o = try openObj(txn, s.origin, o0)
                    try withValue(.link(s.target, gone)) { try must(cs_test_link_put(&o, s.single, $0), "cs_test_link_put") }
                } else {
                    var t = try createObj(txn, s.target)
                    gone = t.key
                    try link(txn, s, kind, o0, gone)
                    try backlink(txn, s, gone, s.list, o0, add: false)
                    try must(cs_obj_delete(&t), "delete the target")
                }
                try backlink(txn, s, t0, s.column(kind), o1, add: true)
            }
            expectDamage(db, ["'Origin.\(kind)' of object 0 links to object \(gone), which 'Target' does not hold"],
                         "a \(kind) link to a missing object")
        }
    }

    /// An embedded object whose owner's link and its backlink were both taken away: links and
    /// backlinks agree, but it has no owner.
    @Test func embeddedObjectWithoutOwner() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let s = try Links(txn)
                var o = try createObj(txn, s.origin)
                var e = cs_obj()
                try must(cs_obj_create_embedded(&o, s.owner, &e), "create embedded")
                var keep = cs_obj()
                try must(cs_obj_create_embedded(&o, s.owner2, &keep), "create a second, owned one")
                try withValue(.null) { try must(cs_test_link_put(&o, s.owner, $0), "cs_test_link_put(null)") }
                try backlink(txn, s, e.key, s.owner, o.key, add: false, table: s.part)
            }
            expectDamage(db, ["embedded object 0 of 'Part' has 0 owners"], "an embedded object without owner")
        }
    }

    /// An embedded object linked, with matching backlinks, by two owners: through the same
    /// column from two objects, or through two columns of one object.
    @Test(arguments: ["two objects", "two columns"])
    func embeddedObjectWithTwoOwners(_ how: String) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let s = try Links(txn)
                var o = try createObj(txn, s.origin)
                var e = cs_obj()
                try must(cs_obj_create_embedded(&o, s.owner, &e), "create embedded")
                var second = o
                if how == "two objects" { second = try createObj(txn, s.origin) }
                let col = how == "two objects" ? s.owner : s.owner2
                try withValue(.link(s.part, e.key)) { try must(cs_test_link_put(&second, col, $0), "cs_test_link_put") }
                try backlink(txn, s, e.key, col, second.key, add: true, table: s.part)
            }
            expectDamage(db, ["embedded object 0 of 'Part' has 2 owners"], "an embedded object with two owners (\(how))")
        }
    }
}
