// Query forms RealmSwift's NSPredicate accepts that the parser once refused: BETWEEN with a list
// argument of two values, IN with [c] / [d] / [cd], %K arguments naming @type (and @count /
// @size), LinkingObjects properties by name through backlink aliases in the name map
// (CS_NAME_BACKLINK), and SORT / DISTINCT applied in the order they are written.

import CStore
import Foundation
import Testing

// MARK: - The fixture

/// Fruits (name, rank, a Mixed `any`, a list of `tags`) and boxes, each holding a list of fruits
/// (`items`) and a single `best` fruit. Rows:
///
///     fruit  name     rank  any        tags
///     0      apple    3     "x"        [a]
///     1      Äpple    1     7          []
///     2      date     5     2.5        [b, c]
///     3      Banana   2     nil        [c]
///     4      DATE     4     "y"        []
///
///     box    name  rank  items         best
///     0      A     1     [0, 1]        0
///     1      B     2     [0, 2, 2]     2
///     2      C     1     [3]           nil
struct FruitFixture {
    let txn: OpaquePointer
    let fruit, box: UInt32
    let f: [Int64]  // fruit keys
    let b: [Int64]  // box keys
    let col: [String: UInt32]

    func k(_ idx: [Int]) -> [Int64] { idx.map { f[$0] } }

    /// Expects the query over fruits (or `table`) to match exactly `keys`, in that order.
    func expect(_ text: String, _ keys: [Int64], _ args: [QArg] = [], table: UInt32? = nil,
                names: [NameEntry]? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        let (rc, msg, q) = makeNamedQuery(txn, table ?? fruit, text, args, names: names)
        guard rc == Int32(CS_OK), let q else {
            Issue.record("\(text): \(codeName(rc)) \(msg)", sourceLocation: sourceLocation)
            return
        }
        defer { cs_query_free(q) }
        do {
            let got = try keysOf(q, text, sourceLocation: sourceLocation)
            #expect(got == keys, "\(text): expected \(keys), got \(got)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(text): \(error)", sourceLocation: sourceLocation)
        }
    }

    /// Expects `code` (CS_QUERY unless told) with a message containing every one of `parts`.
    func expectError(_ text: String, _ parts: [String], _ args: [QArg] = [], table: UInt32? = nil,
                     names: [NameEntry]? = nil, code: Int = Int(CS_QUERY),
                     sourceLocation: SourceLocation = #_sourceLocation) {
        let (rc, msg, q) = makeNamedQuery(txn, table ?? fruit, text, args, names: names)
        if let q { cs_query_free(q) }
        #expect(rc == Int32(code), "\(text): expected \(codeName(Int32(code))), got \(codeName(rc)) \(msg)",
                sourceLocation: sourceLocation)
        for part in parts {
            #expect(msg.contains(part), "\(text): message '\(msg)' lacks '\(part)'", sourceLocation: sourceLocation)
        }
    }
}

func withFruitFixture(_ body: (FruitFixture) throws -> Void) throws {
    try withTempDir { dir in
        let db = try DB(dir.path())
        try db.write { txn throws in
            let fruit = try addTable(txn, "Fruit")
            let box = try addTable(txn, "Box")
            var col: [String: UInt32] = [:]
            col["name"] = try addColumn(txn, fruit, "name", CS_TYPE_STRING)
            col["rank"] = try addColumn(txn, fruit, "rank", CS_TYPE_INT)
            col["any"] = try addColumn(txn, fruit, "any", CS_TYPE_MIXED, flags: Int(CS_COL_NULLABLE))
            col["tags"] = try addColumn(txn, fruit, "tags", CS_TYPE_STRING, coll: CS_COLL_LIST)
            col["box.name"] = try addColumn(txn, box, "name", CS_TYPE_STRING)
            col["box.rank"] = try addColumn(txn, box, "rank", CS_TYPE_INT)
            col["items"] = try addColumn(txn, box, "items", CS_TYPE_LINK, coll: CS_COLL_LIST, target: fruit)
            col["best"] = try addColumn(txn, box, "best", CS_TYPE_LINK, flags: Int(CS_COL_NULLABLE), target: fruit)
            let rows: [(String, Int64, Val, [String])] = [
                ("apple", 3, .str("x"), ["a"]), ("Äpple", 1, .int(7), []), ("date", 5, .double(2.5), ["b", "c"]),
                ("Banana", 2, .null, ["c"]), ("DATE", 4, .str("y"), []),
            ]
            var f: [Int64] = []
            for (name, rank, any, tags) in rows {
                var o = try createObj(txn, fruit)
                check(setVal(&o, col["name"]!, .str(name)))
                check(cs_obj_set_int(&o, col["rank"]!, rank))
                check(setVal(&o, col["any"]!, any))
                var l = try openColl(&o, col["tags"]!)
                for t in tags { check(listAppend(&l, .str(t))) }
                f.append(o.key)
            }
            let boxes: [(String, Int64, [Int], Int?)] = [("A", 1, [0, 1], 0), ("B", 2, [0, 2, 2], 2), ("C", 1, [3], nil)]
            var b: [Int64] = []
            for (name, rank, items, best) in boxes {
                var o = try createObj(txn, box)
                check(setVal(&o, col["box.name"]!, .str(name)))
                check(cs_obj_set_int(&o, col["box.rank"]!, rank))
                var l = try openColl(&o, col["items"]!)
                for i in items { check(listAppend(&l, .link(fruit, f[i]))) }
                if let best { check(setVal(&o, col["best"]!, .link(fruit, f[best]))) }
                b.append(o.key)
            }
            try body(FruitFixture(txn: txn, fruit: fruit, box: box, f: f, b: b, col: col))
        }
    }
}

@Suite struct QueryParserGapsTests {
    // MARK: 1. BETWEEN %@ with a list argument

    @Test func betweenTakesAListArgumentOfTwoValues() throws {
        try withFruitFixture { fx in
            fx.expect("rank BETWEEN %@", fx.k([0, 3, 4]), [.list([.int(2), .int(4)])])
            fx.expect("rank BETWEEN $0", fx.k([0, 3, 4]), [.list([.int(2), .int(4)])])
            fx.expect("rank BETWEEN {2, 4}", fx.k([0, 3, 4]))
            // Bounds of another numeric type, and the argument after other arguments.
            fx.expect("name != %@ AND rank BETWEEN %@", fx.k([1, 3]), [.v(.str("apple")), .list([.double(0.5), .double(3.0)])])
            // A collection on the left: ANY element in the range.
            fx.expect("NOT rank BETWEEN %@", fx.k([1, 2]), [.list([.int(2), .int(4)])])
            // Other lengths, and a scalar, are refused with a clear message.
            fx.expectError("rank BETWEEN %@", ["BETWEEN needs a list argument of two values", "not 3", "1:14"],
                           [.list([.int(1), .int(2), .int(3)])])
            fx.expectError("rank BETWEEN %@", ["not 1"], [.list([.int(1)])])
            fx.expectError("rank BETWEEN %@", ["not 0"], [.list([])])
            fx.expectError("rank BETWEEN %@", ["BETWEEN needs {low, high} or a list argument of two values"], [.v(.int(3))])
            fx.expectError("rank BETWEEN %@", ["BETWEEN bounds must be of the property's type"],
                           [.list([.str("a"), .str("b")])])
            fx.expectError("rank BETWEEN %@", ["missing argument"])
        }
    }

    @Test func aBetweenListArgumentCannotBeReplaced() throws {
        try withFruitFixture { fx in
            let (rc, msg, q) = makeQuery(fx.txn, fx.fruit, "rank BETWEEN %@", [.list([.int(1), .int(2)])])
            #expect(rc == Int32(CS_OK), "\(msg)")
            defer { cs_query_free(q) }
            let buf = QArgBuffer([.list([.int(3), .int(4)])])
            expectCode(cs_query_set_args(q, buf.values, buf.count), CS_MISUSE, "set_args with a new list")
            let keys = try keysOf(q!, "rank BETWEEN %@")
            #expect(keys == fx.k([1, 3]))
        }
    }

    // MARK: 2. IN with [c], [d], [cd]

    @Test func inFoldsCaseAndDiacritics() throws {
        try withFruitFixture { fx in
            // Plain IN compares bytes.
            fx.expect("name IN {'APPLE', 'Date'}", [])
            fx.expect("name IN {'apple', 'DATE'}", fx.k([0, 4]))
            fx.expect("name IN[c] {'APPLE', 'Date'}", fx.k([0, 2, 4]))
            fx.expect("name IN[d] {'Apple', 'date'}", fx.k([1, 2]))
            fx.expect("name IN[cd] {'APPLE', 'Date'}", fx.k([0, 1, 2, 4]))
            fx.expect("name IN [cd] {'banana'}", fx.k([3]))
            // The same through a list argument.
            fx.expect("name IN[c] %@", fx.k([0, 2, 4]), [.list([.str("APPLE"), .str("Date")])])
            fx.expect("name IN[d] %@", fx.k([1, 2]), [.list([.str("Apple"), .str("date")])])
            fx.expect("name IN[cd] $0", fx.k([0, 1, 2, 4]), [.list([.str("APPLE"), .str("Date")])])
            fx.expect("NOT name IN[c] %@", fx.k([1, 3]), [.list([.str("APPLE"), .str("Date")])])
            // A collection on the right, and a Mixed on the left.
            fx.expect("'C' IN[c] tags", fx.k([2, 3]))
            fx.expect("any IN[c] {'X', 'Y'}", fx.k([0, 4]))
            fx.expect("any IN[c] {'X', 7}", fx.k([0, 1]))
            // Through links: boxes with a fruit named like "DATE".
            fx.expect("ANY items.name IN[c] {'Date'}", [fx.b[1]], table: fx.box)
            // Options on a non-string, and unknown options, are refused.
            fx.expectError("rank IN[c] {1, 2}", ["[c] and [d] apply to strings, not Int"])
            fx.expectError("name IN[x] {'a'}", ["unknown comparison option 'x'"])
            fx.expectError("name IN[c {'a'}", ["']' after the comparison options"])
        }
    }

    // MARK: 3. %K naming @type, @count, @size

    @Test func keyPathArgumentsNameTypeAndCount() throws {
        try withFruitFixture { fx in
            fx.expect("any.@type == 'string'", fx.k([0, 4]))
            fx.expect("%K == 'string'", fx.k([0, 4]), [.v(.str("any.@type"))])
            fx.expect("%K == %@", fx.k([1]), [.v(.str("any.@type")), .v(.str("int"))])
            fx.expect("%K IN {'double', 'null'}", fx.k([2, 3]), [.v(.str("any.@type"))])
            fx.expect("%K == 2", fx.k([2]), [.v(.str("tags.@count"))])
            fx.expect("%K == 0", fx.k([1, 4]), [.v(.str("tags.@size"))])
            fx.expect("%K == 3", [fx.b[1]], [.v(.str("items.@count"))], table: fx.box)
            fx.expect("%K > 4", [fx.b[1]], [.v(.str("items.@max.rank"))], table: fx.box)
            fx.expectError("%K == 'string'", ["@type applies to Mixed properties"], [.v(.str("name.@type"))])
            fx.expectError("%K == 1", ["unknown collection operator in %K argument"], [.v(.str("tags.@nope"))])
        }
    }

    // MARK: 4. Backlink aliases (LinkingObjects properties by name)

    @Test func backlinkAliasesWorkAsTheirLinksForms() throws {
        try withFruitFixture { fx in
            let items = fx.col["items"]!, best = fx.col["best"]!
            let names = [
                NameEntry(fx.box, UInt32(CS_NAME_BACKLINK) | items, "boxes"),
                NameEntry(fx.box, UInt32(CS_NAME_BACKLINK) | best, "bestOf"),
            ]
            // Each alias form against its @links form, and the exact answer.
            let pairs: [(String, String, [Int64])] = [
                ("boxes.@count == 2", "@links.Box.items.@count == 2", fx.k([0, 2])),
                ("boxes.@count == 0", "@links.Box.items.@count == 0", fx.k([4])),
                ("boxes.@size == 1", "@links.Box.items.@size == 1", fx.k([1, 3])),
                ("ANY boxes.name == 'B'", "ANY @links.Box.items.name == 'B'", fx.k([0, 2])),
                ("boxes.rank == 1", "@links.Box.items.rank == 1", fx.k([0, 1, 3])),
                ("ALL boxes.rank == 1", "ALL @links.Box.items.rank == 1", fx.k([1, 3, 4])),
                ("NONE boxes.rank == 1", "NONE @links.Box.items.rank == 1", fx.k([2, 4])),
                ("boxes.name IN {'C', 'Z'}", "@links.Box.items.name IN {'C', 'Z'}", fx.k([3])),
                ("boxes.@max.rank == 2", "@links.Box.items.@max.rank == 2", fx.k([0, 2])),
                ("SUBQUERY(boxes, $b, $b.rank == 2).@count == 2", "SUBQUERY(@links.Box.items, $b, $b.rank == 2).@count == 2", fx.k([2])),
                ("SUBQUERY(boxes, $b, $b.rank == 1 AND $b.name == 'C').@count == 1",
                 "SUBQUERY(@links.Box.items, $b, $b.rank == 1 AND $b.name == 'C').@count == 1", fx.k([3])),
                ("bestOf.@count == 1", "@links.Box.best.@count == 1", fx.k([0, 2])),
                ("ANY bestOf.name == 'A' OR boxes.name == 'C'", "ANY @links.Box.best.name == 'A' OR @links.Box.items.name == 'C'", fx.k([0, 3])),
                ("boxes.@count > 0 SORT(rank DESC)", "@links.Box.items.@count > 0 SORT(rank DESC)", fx.k([2, 0, 3, 1])),
            ]
            for (alias, links, want) in pairs {
                fx.expect(alias, want, names: names)
                fx.expect(links, want, names: names)
                fx.expect(links, want)
            }
            // Through %K, and from the other side (a box's items' boxes).
            fx.expect("%K == 'B'", fx.k([0, 2]), [.v(.str("boxes.name"))], names: names)
            fx.expect("%K == 2", fx.k([0, 2]), [.v(.str("boxes.@count"))], names: names)
            fx.expect("ANY items.boxes.name == 'B'", [fx.b[0], fx.b[1]], table: fx.box, names: names)
            // Without the map the name is unknown; an alias is not a value to sort by.
            fx.expectError("boxes.@count == 2", ["unknown property 'boxes' on Fruit"])
            fx.expectError("rank > 0 SORT(boxes)", ["SORT needs a single value per object"], names: names)
        }
    }

    @Test func backlinkAliasesInCollectionAndBacklinkQueries() throws {
        try withFruitFixture { fx in
            let items = fx.col["items"]!
            let names = [NameEntry(fx.box, UInt32(CS_NAME_BACKLINK) | items, "boxes")]
            // A query over box B's items (fruits 0, 2, 2): fruits in two boxes.
            var box = try openObj(fx.txn, fx.box, fx.b[1])
            var list = try openColl(&box, items)
            let text = "boxes.@count == 2"
            var q: OpaquePointer?
            let rc = withNameMap(names) { map in
                cs_query_new_coll_named(&list, text, text.utf8.count, nil, 0, map, &q)
            }
            try must(rc, "cs_query_new_coll_named")
            defer { cs_query_free(q) }
            #expect(try keysOf(q!, text) == fx.k([0, 2, 2]))
            // A query over the boxes linking to fruit 0 (A, B), through their items' boxes.
            var fruit0 = try openObj(fx.txn, fx.fruit, fx.f[0])
            let text2 = "ANY items.boxes.name == 'C'"
            var q2: OpaquePointer?
            let rc2 = withNameMap(names) { map in
                cs_query_new_backlinks_named(&fruit0, fx.box, items, text2, text2.utf8.count, nil, 0, map, &q2)
            }
            try must(rc2, "cs_query_new_backlinks_named")
            defer { cs_query_free(q2) }
            #expect(try keysOf(q2!, text2) == [])
        }
    }

    @Test func badBacklinkAliasesAreMisuse() throws {
        try withFruitFixture { fx in
            let items = fx.col["items"]!, name = fx.col["box.name"]!
            let flag = UInt32(CS_NAME_BACKLINK)
            fx.expectError("rank > 0", ["entry 0", "'boxes'", "a backlink alias needs a link column", "no link column"],
                           names: [NameEntry(fx.box, flag | name, "boxes")], code: Int(CS_MISUSE))
            fx.expectError("rank > 0", ["entry 0", "no link column 999"],
                           names: [NameEntry(fx.box, flag | 999, "boxes")], code: Int(CS_MISUSE))
            fx.expectError("rank > 0", ["two backlink aliases ('a', 'b') for the link 'Box.items'"],
                           names: [NameEntry(fx.box, flag | items, "a"), NameEntry(fx.box, flag | items, "b")],
                           code: Int(CS_MISUSE))
            fx.expectError("rank > 0", ["'boxes' is the public name of two properties of 'Fruit'"],
                           names: [NameEntry(fx.box, flag | items, "boxes"), NameEntry(fx.fruit, fx.col["rank"]!, "boxes")],
                           code: Int(CS_MISUSE))
            fx.expectError("rank > 0", ["'boxes' is the public name of two properties of 'Fruit'"],
                           names: [NameEntry(fx.box, flag | items, "boxes"), NameEntry(fx.box, flag | fx.col["best"]!, "boxes")],
                           code: Int(CS_MISUSE))
            // The C helper builds the same entry.
            let e = cs_name_map_backlink(fx.box, items, nil)
            #expect(e.table == fx.box && e.col == flag | items)
        }
    }

    // MARK: 5. SORT and DISTINCT in the order written

    @Test func sortAndDistinctApplyInTheOrderWritten() throws {
        try withFruitFixture { fx in
            let (a, b, c) = (fx.b[0], fx.b[1], fx.b[2]) // ranks 1, 2, 1
            // Distinct keeps the first object of each value in the order so far.
            fx.expect("TRUEPREDICATE SORT(name DESC) DISTINCT(rank)", [c, b], table: fx.box)
            fx.expect("TRUEPREDICATE DISTINCT(rank) SORT(name DESC)", [b, a], table: fx.box)
            fx.expect("TRUEPREDICATE SORT(name DESC) DISTINCT(rank) LIMIT(1)", [c], table: fx.box)
            fx.expect("TRUEPREDICATE LIMIT(1) SORT(name DESC) DISTINCT(rank)", [c], table: fx.box)
            fx.expect("TRUEPREDICATE SORT(name ASC) DISTINCT(rank) SORT(rank DESC)", [b, a], table: fx.box)
            fx.expect("rank < 3 DISTINCT(rank) DISTINCT(name)", [a, b], table: fx.box)
            // Of two SORTs the later is primary and the earlier breaks its ties.
            fx.expect("TRUEPREDICATE SORT(name DESC) SORT(rank)", [c, a, b], table: fx.box)
            fx.expect("TRUEPREDICATE SORT(name ASC) SORT(rank)", [a, c, b], table: fx.box)
            fx.expect("TRUEPREDICATE SORT(rank, name DESC)", [c, a, b], table: fx.box)
            fx.expect("TRUEPREDICATE SORT(rank) SORT(name)", [a, b, c], table: fx.box)
            // On fruits: by the number of tags, ties by rank (descending), then one per tag count.
            fx.expect("TRUEPREDICATE SORT(rank DESC) DISTINCT(name)", fx.k([2, 4, 0, 3, 1]))
            fx.expect("TRUEPREDICATE SORT(rank DESC) SORT(tags.@count)", fx.k([4, 1, 0, 3, 2]))
            fx.expect("TRUEPREDICATE SORT(rank DESC) SORT(tags.@count) DISTINCT(tags.@count)", fx.k([4, 0, 2]))
            fx.expect("TRUEPREDICATE DISTINCT(tags.@count) SORT(rank DESC) SORT(tags.@count)", fx.k([1, 0, 2]))
            // A query over a list (box B's items 0, 2, 2): positions follow the same rules.
            var box = try openObj(fx.txn, fx.box, b)
            var list = try openColl(&box, fx.col["items"]!)
            for (text, want) in [("TRUEPREDICATE SORT(rank DESC) DISTINCT(name)", fx.k([2, 0])),
                                 ("TRUEPREDICATE DISTINCT(name) SORT(rank DESC)", fx.k([2, 0])),
                                 ("TRUEPREDICATE SORT(rank DESC)", fx.k([2, 2, 0]))] {
                var q: OpaquePointer?
                try must(cs_query_new_coll(&list, text, text.utf8.count, nil, 0, &q), text)
                defer { cs_query_free(q) }
                let got = try keysOf(q!, text)
                #expect(got == want, "\(text)")
            }
        }
    }
}
