// Watches over collections nested in Mixed values (cs_watch_nested): the change set comes from
// comparing the collection's content in two versions. A random oracle applies each change set
// to the content the observer last saw and must get the new content; elements neither inserted
// nor modified must be equal to the ones they came from, and modified ones must differ when the
// change set covers one commit (coalesced commits may change an element and change it back: it
// stays modified, as a top-level List's replaced element does).

import CStore
import Foundation
import Testing


/// The nested list in `col` of object `key` as text: strings as themselves, nested lists as
/// their strings in brackets.
private func nestedContent(_ t: OpaquePointer, _ table: UInt32, _ key: Int64, _ col: UInt32) throws -> [String] {
    var o = try openObj(t, table, key)
    var c = try openColl(&o, col)
    var out: [String] = []
    for i in 0..<(try collSize(&c)) {
        var v = cs_value()
        try must(cs_list_get(&c, i, &v))
        if v.type == CS_TYPE_LIST {
            var n = cs_coll()
            try must(cs_coll_open_nested(&c, Int64(i), nil, 0, &n))
            out.append("[" + (try listAll(&n)).map { "\($0)" }.joined(separator: ",") + "]")
        } else {
            out.append("\(toVal(v))")
        }
    }
    return out
}

/// Checks that `change` takes `old` to `new` (see the file comment).
private func checkChange(_ change: TakenChange, _ old: [String], _ new: [String], oneCommit: Bool, _ what: String) {
    let del = Set(change.deletions), ins = Set(change.insertions), mod = Set(change.modifications)
    let kept = old.indices.filter { !del.contains($0) }
    #expect(kept.count + change.insertions.count == new.count, "\(what): \(old) -> \(new)")
    guard kept.count + change.insertions.count == new.count else { return }
    #expect(mod.isSubset(of: Set(kept)), "\(what): a modification of a deleted element")
    var k = 0
    var modNew: [Int] = []
    for j in new.indices where !ins.contains(j) {
        let from = kept[k]
        k += 1
        if mod.contains(from) {
            modNew.append(j)
            if oneCommit { #expect(old[from] != new[j], "\(what): \(from) reported modified but equal") }
        } else {
            #expect(old[from] == new[j], "\(what): \(from) -> \(j) changed unreported: \(old) -> \(new)")
        }
    }
    #expect(modNew == change.modificationsNew, "\(what): new positions of the modifications")
}

@Suite struct NestedNotifyTests {
    /// Random commits on a list nested in a Mixed column, taken after every commit or after
    /// several (coalesced), with short lists (compared by the longest-common-subsequence pass)
    /// and with long ones whose changed middle is too large for it (position by position).
    ///
    /// With `top`, the list is a List-of-Mixed property watched as a collection (cs_watch_coll):
    /// its own operations come from the history, and an element whose nested list changed inside
    /// must be reported modified (an equal value written over an element is reported too, so
    /// "modified" need not mean "different" there).
    @Test(arguments: [(false, 12, false), (true, 12, false), (false, 1500, false), (false, 12, true), (true, 12, true)])
    func randomNestedListOracle(coalesce: Bool, size: Int, top: Bool) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0, any: UInt32 = 0
            try db.write { t in
                table = try addTable(t, "H")
                any = try addColumn(t, table, "any", CS_TYPE_MIXED, coll: top ? CS_COLL_LIST : CS_COLL_NONE)
                var o = try createObj(t, table)
                if !top { try must(cs_obj_set_collection(&o, any, CS_TYPE_LIST)) }
                var c = try openColl(&o, any)
                for i in 0..<size { try must(listAppend(&c, .str("v\(i % 5)"))) }
            }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var w: OpaquePointer?
            try db.read { t in
                var o = try openObj(t, table, 0)
                var c = try openColl(&o, any)
                if top { try must(cs_watch_coll(notifier!, table, 0, any, nil, 0, Int32(CS_WATCH_DEEP), &w)) }
                else { try must(cs_watch_nested(notifier!, &c, &w)) }
            }
            defer { cs_watch_free(w) }
            #expect(try TakenChange(w!).initial)
            var seen = try db.read { try nestedContent($0, table, 0, any) }
            var rng = NotifyRng(state: coalesce ? 7 : UInt64(size))
            var reported = 0
            for round in 0..<300 {
                try db.write { t in
                    var o = try openObj(t, table, 0)
                    var c = try openColl(&o, any)
                    for _ in 0..<Int.random(in: 1...3, using: &rng) {
                        let n = try collSize(&c)
                        let pos = Int.random(in: 0..<max(n, 1), using: &rng)
                        let v = Val.str("v\(Int.random(in: 0..<5, using: &rng))")
                        switch Int.random(in: 0..<7, using: &rng) {
                        case 0, 1: try must(listInsert(&c, Int.random(in: 0...n, using: &rng), v))
                        case 2: if n > 0 { try must(cs_list_erase(&c, pos)) }
                        case 3: if n > 0 { try must(listSet(&c, pos, v)) }
                        case 4: if n > 1 { try must(cs_list_move(&c, pos, Int.random(in: 0..<n, using: &rng))) }
                        case 5: if n > 0 { try must(cs_list_set_collection(&c, pos, CS_TYPE_LIST)) }
                        default:
                            var x = cs_value()
                            if n > 0, cs_list_get(&c, pos, &x) == 0, x.type == CS_TYPE_LIST {
                                var inner = cs_coll()
                                try must(cs_coll_open_nested(&c, Int64(pos), nil, 0, &inner))
                                try must(listAppend(&inner, v))
                            } else {
                                try must(listAppend(&c, v))
                            }
                        }
                    }
                }
                try must(cs_notifier_advance(notifier!, nil))
                if coalesce && round % 4 != 3 { continue }
                let now = try db.read { try nestedContent($0, table, 0, any) }
                if !top { #expect(cs_watch_pending(w!) == (now != seen), "round \(round)") }
                guard cs_watch_pending(w!) else { continue }
                let change = try TakenChange(w!)
                reported += 1
                checkChange(change, seen, now, oneCommit: !coalesce && !top, "round \(round)")
                seen = now
            }
            #expect(reported > 50)
        }
    }

    /// Exact change sets on a nested dictionary and a list nested in it; the owner's column set
    /// to a plain value ends both watches with every element deleted.
    @Test func nestedMapAndReplacement() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0, any: UInt32 = 0
            try db.write { t in
                table = try addTable(t, "H")
                any = try addColumn(t, table, "any", CS_TYPE_MIXED)
                var o = try createObj(t, table)
                try must(cs_obj_set_collection(&o, any, CS_TYPE_DICT))
                var c = try openColl(&o, any)
                var one = cs_int(1)
                try must(cs_map_set(&c, "a", 1, &one))
                try must(cs_map_set_collection(&c, "l", 1, CS_TYPE_LIST))
            }
            // a nested accessor borrows its key: keep one that outlives every accessor
            let lkey = strdup("l")!
            defer { free(lkey) }
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var mw: OpaquePointer?, lw: OpaquePointer?
            try db.read { t in
                var o = try openObj(t, table, 0)
                var c = try openColl(&o, any)
                try must(cs_watch_nested(notifier!, &c, &mw))
                var l = cs_coll()
                try must(cs_coll_open_nested(&c, -1, lkey, 1, &l))
                try must(cs_watch_nested(notifier!, &l, &lw))
            }
            defer { cs_watch_free(mw); cs_watch_free(lw) }
            #expect(try TakenChange(mw!).initial && TakenChange(lw!).initial)
            try db.write { t in
                var o = try openObj(t, table, 0)
                var c = try openColl(&o, any)
                var two = cs_int(2)
                try must(cs_map_set(&c, "b", 1, &two))
                var erased = false
                try must(cs_map_erase(&c, "a", 1, &erased))
                var l = cs_coll()
                try must(cs_coll_open_nested(&c, -1, lkey, 1, &l))
                try must(listAppend(&l, .int(5)))
            }
            try must(cs_notifier_advance(notifier!, nil))
            let m = try TakenChange(mw!), l = try TakenChange(lw!)
            #expect(m.keysDeleted == ["a"] && m.keysInserted == ["b"] && m.keysModified == ["l"])
            #expect(l.insertions == [0] && l.deletions.isEmpty && l.modifications.isEmpty && !l.deleted)
            try db.write { t in
                var o = try openObj(t, table, 0)
                var v = cs_int(3)
                try must(cs_obj_set(&o, any, &v))
            }
            try must(cs_notifier_advance(notifier!, nil))
            let m2 = try TakenChange(mw!), l2 = try TakenChange(lw!)
            #expect(m2.deleted && m2.keysDeleted == ["b", "l"] && m2.keysInserted.isEmpty)
            #expect(l2.deleted && l2.deletions == [0])
            // the column holds a dictionary again: the ended watches stay quiet
            try db.write { t in
                var o = try openObj(t, table, 0)
                try must(cs_obj_set_collection(&o, any, CS_TYPE_DICT))
            }
            try must(cs_notifier_advance(notifier!, nil))
            #expect(!cs_watch_pending(mw!) && !cs_watch_pending(lw!))
        }
    }

    /// A nested collection's identity (cs_coll_identity): nonzero when it was made, another one
    /// when the property (or a list element) is set to a new collection of the same kind, the
    /// same when a list move carries it elsewhere; a nested watch whose path leads to a
    /// collection made again is told every element deleted, once, as when the path leads
    /// nowhere. Before, the identity did not exist and the watch reported the content's
    /// difference with the new list.
    @Test func nestedIdentityTellsAReplacedCollection() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var table: UInt32 = 0, any: UInt32 = 0
            var first: UInt32 = 0
            try db.write { t in
                table = try addTable(t, "H")
                any = try addColumn(t, table, "any", CS_TYPE_MIXED)
                var o = try createObj(t, table)
                try must(cs_obj_set_collection(&o, any, CS_TYPE_LIST))
                var c = try openColl(&o, any)
                try must(listAppend(&c, .int(1)))
                try must(listAppend(&c, .int(2)))
                first = cs_coll_identity(&c)
            }
            #expect(first != 0)
            var notifier: OpaquePointer?
            try must(cs_notifier_open(db.h, &notifier))
            defer { cs_notifier_close(notifier) }
            var w: OpaquePointer?
            try db.read { t in
                var o = try openObj(t, table, 0)
                var c = try openColl(&o, any)
                #expect(cs_coll_identity(&c) == first)
                try must(cs_watch_nested(notifier!, &c, &w))
            }
            defer { cs_watch_free(w) }
            #expect(try TakenChange(w!).initial)
            // set again to a list: another identity, and the watch's collection is gone
            var second: UInt32 = 0
            try db.write { t in
                var o = try openObj(t, table, 0)
                try must(cs_obj_set_collection(&o, any, CS_TYPE_LIST))
                var c = try openColl(&o, any)
                try must(listAppend(&c, .int(1)))
                try must(listAppend(&c, .int(2)))
                try must(listAppend(&c, .int(3)))
                second = cs_coll_identity(&c)
                // nested lists in it: a move keeps the moved one's identity
                try must(cs_list_set_collection(&c, 0, CS_TYPE_LIST))
                try must(cs_list_set_collection(&c, 1, CS_TYPE_LIST))
                var a = cs_coll(), b = cs_coll()
                try must(cs_coll_open_nested(&c, 0, nil, 0, &a))
                try must(cs_coll_open_nested(&c, 1, nil, 0, &b))
                let (ia, ib) = (cs_coll_identity(&a), cs_coll_identity(&b))
                #expect(ia != 0 && ib != 0 && ia != ib)
                try must(cs_list_move(&c, 0, 2))
                var moved = cs_coll(), now = cs_coll()
                try must(cs_coll_open_nested(&c, 2, nil, 0, &moved))
                try must(cs_coll_open_nested(&c, 0, nil, 0, &now))
                #expect(cs_coll_identity(&moved) == ia)
                #expect(cs_coll_identity(&now) == ib)
                try must(cs_list_swap(&c, 0, 2))
                try must(cs_coll_open_nested(&c, 0, nil, 0, &now))
                #expect(cs_coll_identity(&now) == ia)
            }
            #expect(second != 0 && second != first)
            try must(cs_notifier_advance(notifier!, nil))
            let gone = try TakenChange(w!)
            #expect(gone.deleted && gone.deletions == [0, 1] && gone.insertions.isEmpty)
            try db.write { t in
                var o = try openObj(t, table, 0)
                var c = try openColl(&o, any)
                try must(listAppend(&c, .int(4)))
            }
            try must(cs_notifier_advance(notifier!, nil))
            #expect(!cs_watch_pending(w!))
        }
    }
}
