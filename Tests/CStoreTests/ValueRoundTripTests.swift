// Every value type's get/set/null round trip, read back in the writing transaction, in a new
// transaction, and after closing and reopening the file.

import CStore
import Foundation
import Testing

/// Writes each value into column "c" (of `type`) of its own object, then reads every value back
/// in the same transaction, in a new one, and after a reopen. Returns nothing; records issues.
private func roundTrip(_ type: cs_type, nullable: Bool = false, _ values: [Val],
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
    try withTempDir { dir in
        let db = try DB(dir.path())
        var table: UInt32 = 0
        var col: UInt32 = 0
        let keys: [Int64] = try db.write { txn throws in
            table = try addTable(txn, "T")
            col = try addColumn(txn, table, "c", type, flags: nullable ? CS_COL_NULLABLE : 0)
            var keys: [Int64] = []
            for v in values {
                var o = try createObj(txn, table)
                check(setVal(&o, col, v), "cs_obj_set(\(v))", sourceLocation: sourceLocation)
                let back = getVal(&o, col, sourceLocation: sourceLocation)
                #expect(back == v, "same transaction", sourceLocation: sourceLocation)
                keys.append(o.key)
            }
            return keys
        }
        func readAll(_ phase: String) throws {
            try db.read { txn throws in
                for (i, v) in values.enumerated() {
                    var o = try openObj(txn, table, keys[i])
                    let back = getVal(&o, col, sourceLocation: sourceLocation)
                    #expect(back == v, "\(phase): row \(i)", sourceLocation: sourceLocation)
                    var isNull = false
                    check(cs_obj_is_null(&o, col, &isNull), "cs_obj_is_null", sourceLocation: sourceLocation)
                    #expect(isNull == (v == .null), "\(phase): is_null of row \(i)", sourceLocation: sourceLocation)
                }
            }
        }
        try readAll("after commit")
        db.verify("after commit", sourceLocation: sourceLocation)
        try db.reopen()
        try readAll("after reopen")
        db.verify("after reopen", sourceLocation: sourceLocation)
        db.close()
        check(cs_file_verify(dir.path()), "cs_file_verify", sourceLocation: sourceLocation)
    }
}

private let bidOne: Val = .decimal(1, 0x3040_0000_0000_0000)          // 1E0
private let bidMinus12345e2: Val = .decimal(12345, 0xB03C_0000_0000_0000) // -123.45

@Suite struct ValueRoundTripTests {
    @Test func intExtremesAndSigns() throws {
        try roundTrip(CS_TYPE_INT, [
            .int(0), .int(1), .int(-1), .int(Int64.min), .int(Int64.max), .int(127), .int(-128),
            .int(255), .int(-32768), .int(65535), .int(1 << 31), .int(-(1 << 31) - 1),
            .int(1 << 40), .int(-(1 << 52)), .int(Int64.min + 1), .int(Int64.max - 1),
        ])
    }

    @Test func bool() throws {
        try roundTrip(CS_TYPE_BOOL, [.bool(true), .bool(false), .bool(true)])
    }

    @Test func floatSpecials() throws {
        try roundTrip(CS_TYPE_FLOAT, [
            .float(0), .float(-0.0), .float(.nan), .float(.infinity), .float(-.infinity),
            .float(.greatestFiniteMagnitude), .float(-.greatestFiniteMagnitude),
            .float(.leastNonzeroMagnitude), .float(3.14159), .float(-1e-30),
        ])
    }

    @Test func doubleSpecials() throws {
        try roundTrip(CS_TYPE_DOUBLE, [
            .double(0), .double(-0.0), .double(.nan), .double(.infinity), .double(-.infinity),
            .double(.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude),
            .double(.pi), .double(-1e300), .double(1.0 / 3.0),
        ])
    }

    @Test func strings() throws {
        var rng = SeededRNG(seed: 7)
        let ascii500 = (0..<500).map { _ in UInt8(32 + rng.next() % 95) }
        let big = (0..<(100 * 1024)).map { (i: Int) -> UInt8 in UInt8(97 + i % 26) }
        let multi = Array("Grüße, 日本語, Ελληνικά, emoji 🙂👍🏽 and ZWJ 👨‍👩‍👧".utf8)
        try roundTrip(CS_TYPE_STRING, [
            .str(""), .str("a"), .str("hello world"), .string(ascii500), .string(big),
            .string(multi), .string([0x61, 0, 0x62, 0]), .string([0, 0, 0]), .str(""),
            .string(Array(repeating: 0x7A, count: 15)), .string(Array(repeating: 0x7A, count: 64)),
        ])
    }

    @Test func binaries() throws {
        try roundTrip(CS_TYPE_BINARY, [
            .binary([]), .binary([0]), .binary([0xFF, 0, 0xFE]),
            .binary(patternBytes(1024 * 1024, seed: 3)), .binary(patternBytes(300, seed: 9)),
        ])
    }

    @Test func binaryOfExactlyMaxBlob() throws {
        try roundTrip(CS_TYPE_BINARY, [.binary(patternBytes(csMaxBlob, seed: 5))])
    }

    @Test func stringOfExactlyMaxBlob() throws {
        try roundTrip(CS_TYPE_STRING, [.string(patternBytes(csMaxBlob, seed: 0x41).map { 0x41 + $0 % 26 })])
    }

    @Test func valuesOverMaxBlobAreFull() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let bcol = try addColumn(txn, t, "b", CS_TYPE_BINARY)
                let scol = try addColumn(txn, t, "s", CS_TYPE_STRING)
                var o = try createObj(txn, t)
                let tooBig = [UInt8](repeating: 0x41, count: csMaxBlob + 1)
                expectCode(setVal(&o, bcol, .binary(tooBig)), CS_FULL, "binary of CS_MAX_BLOB+1")
                expectCode(setVal(&o, scol, .string(tooBig)), CS_FULL, "string of CS_MAX_BLOB+1")
                // The failed sets leave the defaults in place.
                #expect(getVal(&o, bcol) == .binary([]))
                #expect(getVal(&o, scol) == .str(""))
            }
            db.verify()
        }
    }

    @Test func timestamps() throws {
        try roundTrip(CS_TYPE_TIMESTAMP, [
            .timestamp(0, 0), .timestamp(1_700_000_000, 123_456_789), .timestamp(-1, -500_000_000),
            .timestamp(-86_400 * 365 * 200, 0), .timestamp(-5, -1), .timestamp(Int64.max / 2, 999_999_999),
            .timestamp(Int64.min / 2, -999_999_999), .timestamp(0, 1),
        ])
    }

    @Test func objectIds() throws {
        var rng = SeededRNG(seed: 11)
        try roundTrip(CS_TYPE_OBJECTID, [
            .objectId([UInt8](repeating: 0, count: 12)), .objectId([UInt8](repeating: 0xFF, count: 12)),
            .objectId(randomBytes(12, &rng)), .objectId(Array(0..<12)),
        ])
    }

    @Test func uuids() throws {
        var rng = SeededRNG(seed: 12)
        try roundTrip(CS_TYPE_UUID, [
            .uuid([UInt8](repeating: 0, count: 16)), .uuid([UInt8](repeating: 0xFF, count: 16)),
            .uuid(randomBytes(16, &rng)), .uuid(Array(0..<16)),
        ])
    }

    @Test func decimalsKeepTheirSixteenBytes() throws {
        try roundTrip(CS_TYPE_DECIMAL, [
            bidOne, bidMinus12345e2, .decimal(0, 0x3040_0000_0000_0000),
            .decimal(0, 0x7C00_0000_0000_0000), // NaN
            .decimal(0, 0x7800_0000_0000_0000), // +Infinity
            .decimal(0x0123_4567_89AB_CDEF, 0x3042_0000_0000_0FED),
        ])
    }

    @Test func nullableColumnsOfEveryType() throws {
        let samples: [(cs_type, Val)] = [
            (CS_TYPE_INT, .int(-42)), (CS_TYPE_BOOL, .bool(false)), (CS_TYPE_FLOAT, .float(1.5)),
            (CS_TYPE_DOUBLE, .double(-2.25)), (CS_TYPE_STRING, .str("")), (CS_TYPE_BINARY, .binary([])),
            (CS_TYPE_TIMESTAMP, .timestamp(-3, -7)), (CS_TYPE_OBJECTID, .objectId(Array(1...12))),
            (CS_TYPE_UUID, .uuid(Array(1...16))), (CS_TYPE_DECIMAL, bidOne),
        ]
        for (type, value) in samples {
            // null, a value, null again, and the zero-like value (empty string / false / 0) are distinct
            try roundTrip(type, nullable: true, [.null, value, .null, value])
        }
    }

    @Test func newObjectsReadDefaults() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            let expected: [(cs_type, Val)] = [
                (CS_TYPE_INT, .int(0)), (CS_TYPE_BOOL, .bool(false)), (CS_TYPE_FLOAT, .float(0)),
                (CS_TYPE_DOUBLE, .double(0)), (CS_TYPE_STRING, .str("")), (CS_TYPE_BINARY, .binary([])),
                (CS_TYPE_TIMESTAMP, .timestamp(0, 0)),
            ]
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                var cols: [UInt32] = []
                var ncols: [UInt32] = []
                for (i, (type, _)) in expected.enumerated() {
                    cols.append(try addColumn(txn, t, "c\(i)", type))
                    ncols.append(try addColumn(txn, t, "n\(i)", type, flags: CS_COL_NULLABLE))
                }
                let mixed = try addColumn(txn, t, "m", CS_TYPE_MIXED)
                var o = try createObj(txn, t)
                for (i, (_, v)) in expected.enumerated() {
                    #expect(getVal(&o, cols[i]) == v, "default of non-nullable \(typeName(expected[i].0))")
                    #expect(getVal(&o, ncols[i]) == .null, "default of nullable \(typeName(expected[i].0))")
                }
                #expect(getVal(&o, mixed) == .null, "default of Mixed")
                var n: Int64 = 99
                check(cs_obj_get_int(&o, ncols[0], &n))
                #expect(n == 0, "cs_obj_get_int reads a null as 0")
            }
        }
    }

    @Test func nullIntoNonNullableIsTypeError() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                for (i, type) in (scalarTypes).enumerated() {
                    let c = try addColumn(txn, t, "c\(i)", type)
                    var o = try createObj(txn, t)
                    expectCode(setVal(&o, c, .null), CS_TYPE, "null into non-nullable \(typeName(type))")
                }
            }
            db.verify()
        }
    }

    @Test func wrongTypeIsTypeError() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn throws in
                let t = try addTable(txn, "T")
                let ci = try addColumn(txn, t, "i", CS_TYPE_INT)
                let cs = try addColumn(txn, t, "s", CS_TYPE_STRING)
                let cb = try addColumn(txn, t, "b", CS_TYPE_BOOL)
                let cts = try addColumn(txn, t, "ts", CS_TYPE_TIMESTAMP)
                let cu = try addColumn(txn, t, "u", CS_TYPE_UUID, flags: CS_COL_NULLABLE)
                var o = try createObj(txn, t)
                check(cs_obj_set_int(&o, ci, 5))
                expectCode(setVal(&o, ci, .str("5")), CS_TYPE, "string into int")
                expectCode(setVal(&o, cs, .int(5)), CS_TYPE, "int into string")
                expectCode(setVal(&o, cs, .binary([1])), CS_TYPE, "binary into string")
                expectCode(setVal(&o, cb, .double(1)), CS_TYPE, "double into bool")
                expectCode(setVal(&o, cts, .bool(true)), CS_TYPE, "bool into timestamp")
                expectCode(setVal(&o, cu, .objectId(Array(0..<12))), CS_TYPE, "objectId into uuid")
                expectCode(cs_obj_set_int(&o, cs, 1), CS_TYPE, "cs_obj_set_int into string")
                var n: Int64 = 0
                expectCode(cs_obj_get_int(&o, cs, &n), CS_TYPE, "cs_obj_get_int of a string")
                // failed sets change nothing
                #expect(getVal(&o, ci) == .int(5))
                #expect(getVal(&o, cs) == .str(""))
                #expect(getVal(&o, cu) == .null)
            }
            db.verify()
        }
    }

    @Test func linksAndNullLinks() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (target, origin, col): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var targetKeys: [Int64] = []
            var originKeys: [Int64] = []
            try db.write { txn throws in
                target = try addTable(txn, "Target")
                origin = try addTable(txn, "Origin")
                col = try addColumn(txn, origin, "link", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: target)
                for _ in 0..<3 { targetKeys.append(try createObj(txn, target).key) }
                for i in 0..<4 {
                    var o = try createObj(txn, origin)
                    originKeys.append(o.key)
                    #expect(getVal(&o, col) == .null, "a new link is null")
                    if i < 3 { check(setVal(&o, col, .link(target, targetKeys[2 - i]))) }
                }
                // set, then null again
                var o = try openObj(txn, origin, originKeys[1])
                check(setVal(&o, col, .null))
                check(setVal(&o, col, .link(target, targetKeys[1])))
            }
            let expected: [Val] = [.link(target, targetKeys[2]), .link(target, targetKeys[1]),
                                   .link(target, targetKeys[0]), .null]
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    for (i, k) in originKeys.enumerated() {
                        var o = try openObj(txn, origin, k)
                        #expect(getVal(&o, col) == expected[i], "\(phase) row \(i)")
                    }
                }
                db.verify(phase)
            }
        }
    }

    @Test func mixedHoldsEveryType() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, other, col): (UInt32, UInt32, UInt32) = (0, 0, 0)
            var values: [Val] = []
            var keys: [Int64] = []
            try db.write { txn throws in
                other = try addTable(txn, "Other")
                t = try addTable(txn, "T")
                col = try addColumn(txn, t, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                let target = try createObj(txn, other)
                _ = try createObj(txn, other)
                values = [
                    .null, .int(Int64.min), .int(7), .bool(true), .bool(false), .float(-0.0), .float(.nan),
                    .double(.infinity), .double(2.5), .str(""), .str("Grüße 🙂"), .string([0, 1, 0]),
                    .binary([]), .binary(patternBytes(5000, seed: 1)), .timestamp(-10, -20),
                    .objectId(Array(0..<12)), .uuid(Array(100..<116)), bidMinus12345e2,
                    .link(other, target.key),
                ]
                for v in values {
                    var o = try createObj(txn, t)
                    keys.append(o.key)
                    check(setVal(&o, col, v), "set Mixed \(v)")
                    #expect(getVal(&o, col) == v)
                }
            }
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    for (i, k) in keys.enumerated() {
                        var o = try openObj(txn, t, k)
                        #expect(getVal(&o, col) == values[i], "\(phase) row \(i)")
                    }
                }
                db.verify(phase)
            }
        }
    }

    @Test func mixedNestedListAndDictionary() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, col): (UInt32, UInt32) = (0, 0)
            var (k1, k2): (Int64, Int64) = (0, 0)
            let inner = strdup("inner")!
            defer { free(inner) }
            try db.write { txn throws in
                t = try addTable(txn, "T")
                col = try addColumn(txn, t, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                var o1 = try createObj(txn, t)
                k1 = o1.key
                try must(cs_obj_set_collection(&o1, col, CS_TYPE_LIST), "cs_obj_set_collection(LIST)")
                #expect(getVal(&o1, col) == .list)
                var list = try openColl(&o1, col)
                #expect(cs_coll_kind_of(&list) == CS_COLL_LIST)
                check(listAppend(&list, .int(1)))
                check(listAppend(&list, .str("two")))
                check(listAppend(&list, .null))
                try must(cs_list_set_collection(&list, 2, CS_TYPE_DICT), "cs_list_set_collection(DICT)")
                var dict = cs_coll()
                try must(cs_coll_open_nested(&list, 2, nil, 0, &dict), "cs_coll_open_nested(2)")
                #expect(cs_coll_kind_of(&dict) == CS_COLL_MAP)
                check(mapSet(&dict, Array("k".utf8), .int(7)))
                try must(cs_map_set_collection(&dict, inner, 5, CS_TYPE_LIST), "cs_map_set_collection")
                var innerList = cs_coll()
                try must(cs_coll_open_nested(&dict, -1, inner, 5, &innerList), "cs_coll_open_nested(inner)")
                check(listAppend(&innerList, .double(2.5)))
                check(listAppend(&innerList, .bool(true)))

                var o2 = try createObj(txn, t)
                k2 = o2.key
                try must(cs_obj_set_collection(&o2, col, CS_TYPE_DICT), "cs_obj_set_collection(DICT)")
                var d2 = try openColl(&o2, col)
                #expect(cs_coll_kind_of(&d2) == CS_COLL_MAP)
                check(mapSet(&d2, Array("b".utf8), .str("bee")))
                check(mapSet(&d2, Array("a".utf8), .timestamp(1, 2)))
            }
            for phase in ["after commit", "after reopen"] {
                if phase == "after reopen" { try db.reopen() }
                try db.read { txn throws in
                    var o1 = try openObj(txn, t, k1)
                    #expect(getVal(&o1, col) == .list, "\(phase)")
                    var list = try openColl(&o1, col)
                    #expect(try listAll(&list) == [.int(1), .str("two"), .dict], "\(phase)")
                    var dict = cs_coll()
                    try must(cs_coll_open_nested(&list, 2, nil, 0, &dict), "cs_coll_open_nested(2)")
                    let entries = try mapAll(&dict)
                    #expect(entries.map { $0.0 } == [Array("inner".utf8), Array("k".utf8)], "\(phase)")
                    #expect(entries.map { $0.1 } == [.list, .int(7)], "\(phase)")
                    var innerList = cs_coll()
                    try must(cs_coll_open_nested(&dict, -1, inner, 5, &innerList), "cs_coll_open_nested(inner)")
                    #expect(try listAll(&innerList) == [.double(2.5), .bool(true)], "\(phase)")

                    var o2 = try openObj(txn, t, k2)
                    #expect(getVal(&o2, col) == .dict, "\(phase)")
                    var d2 = try openColl(&o2, col)
                    let e2 = try mapAll(&d2)
                    #expect(e2.map { $0.0 } == [Array("a".utf8), Array("b".utf8)], "\(phase)")
                    #expect(e2.map { $0.1 } == [.timestamp(1, 2), .str("bee")], "\(phase)")
                }
                db.verify(phase)
            }
            // Replacing the nested collection with a scalar frees it.
            try db.write { txn throws in
                var o1 = try openObj(txn, t, k1)
                check(setVal(&o1, col, .int(3)))
                #expect(getVal(&o1, col) == .int(3))
                var c = cs_coll()
                expectCode(cs_coll_open(&o1, col, &c), CS_TYPE, "cs_coll_open on a Mixed holding an int")
            }
            db.verify("after replacing the nested list")
        }
    }

    @Test func mixedNestingSevenLevelsDeep() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var (t, col, k): (UInt32, UInt32, Int64) = (0, 0, 0)
            let key = strdup("d")!
            defer { free(key) }
            // Levels alternate list, dict, list, ...; each holds one scalar and the next level.
            func descend(_ txn: OpaquePointer, create: Bool) throws -> [Val] {
                var o = try openObj(txn, t, k)
                if create { try must(cs_obj_set_collection(&o, col, CS_TYPE_LIST), "level 0") }
                var levels: [cs_coll] = [try openColl(&o, col)]
                var seen: [Val] = []
                for depth in 0..<7 {
                    var cur = levels[depth]
                    var next = cs_coll()
                    if depth % 2 == 0 {
                        if create {
                            try must(listAppend(&cur, .int(Int64(depth))), "append")
                            try must(listAppend(&cur, .null), "append")
                            try must(cs_list_set_collection(&cur, 1, depth == 6 ? CS_TYPE_LIST : CS_TYPE_DICT), "nest")
                        }
                        seen.append(contentsOf: try listAll(&cur))
                        try must(cs_coll_open_nested(&cur, 1, nil, 0, &next), "open level \(depth + 1)")
                    } else {
                        if create {
                            try must(mapSet(&cur, Array("a".utf8), .int(Int64(depth))), "map set")
                            try must(cs_map_set_collection(&cur, key, 1, CS_TYPE_LIST), "nest")
                        }
                        seen.append(contentsOf: try mapAll(&cur).map { $0.1 })
                        try must(cs_coll_open_nested(&cur, -1, key, 1, &next), "open level \(depth + 1)")
                    }
                    levels.append(next)
                }
                var last = levels[7]
                if create { try must(listAppend(&last, .str("bottom")), "append at the bottom") }
                seen.append(contentsOf: try listAll(&last))
                return seen
            }
            var written: [Val] = []
            try db.write { txn throws in
                t = try addTable(txn, "T")
                col = try addColumn(txn, t, "m", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                k = try createObj(txn, t).key
                written = try descend(txn, create: true)
            }
            let expected: [Val] = [.int(0), .dict, .int(1), .list, .int(2), .dict, .int(3), .list,
                                   .int(4), .dict, .int(5), .list, .int(6), .list, .str("bottom")]
            #expect(written == expected)
            try db.reopen()
            try db.read { txn throws in #expect(try descend(txn, create: false) == expected) }
            db.verify()
            // Deleting the object frees the whole nest.
            try db.write { txn throws in
                var o = try openObj(txn, t, k)
                try must(cs_obj_delete(&o), "delete")
            }
            db.verify("after delete")
        }
    }
}
