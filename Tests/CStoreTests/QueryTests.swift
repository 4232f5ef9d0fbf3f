// The query engine (docs/ARCHITECTURE.md, Queries and Values and their order): malformed and ill-typed predicates fail with CS_QUERY
// and a message naming the offending token and its line:column (never a crash, however deep
// the nesting), and well-formed ones return exactly the expected keys for every operator and
// value type, key paths through links, lists and maps, SORT / DISTINCT / LIMIT, aggregates,
// and a query that follows its transaction to newer versions.

import CStore
import Foundation
import Testing

// MARK: - Errors

@Suite struct QueryErrorTests {
    @Test func malformedAndIllTypedPredicatesNameTheTokenAndPosition() throws {
        try withDogs { f in
            // unknown properties
            f.expectError("agee == 5", ["unknown property 'agee' on Dog", "at 1:1"])
            f.expectError("owner.nope == 1", ["unknown property 'nope' on Person", "at 1:7"])
            f.expectError("owner.city.nope == 1", ["unknown property 'nope' on City", "at 1:12"])
            f.expectError("age == 5 AND\n  agee == 3", ["'agee'", "at 2:3"])
            f.expectError("name == 'é' AND agee == 1", ["'agee'", "at 1:17"]) // columns count characters
            f.expectError("age.foo == 1", ["'foo'", "at 1:5"])
            f.expectError("%K == 5", ["unknown property 'agee' on Dog", "at 1:1"], [.v(.str("agee"))])
            // type mismatches
            f.expectError("age == 'five'", ["cannot compare Int with String", "at 1:8"])
            f.expectError("name == 5", ["cannot compare String with Int", "at 1:9"])
            f.expectError("flag == 'yes'", ["cannot compare Bool with String", "at 1:9"])
            f.expectError("born == 5", ["cannot compare Date with Int", "at 1:9"])
            f.expectError("owner == 5", ["cannot compare object with Int", "at 1:10"])
            f.expectError("bin > 5", ["cannot compare Data with Int", "at 1:7"])
            f.expectError("oid == 'x'", ["cannot compare ObjectId with String", "at 1:8"])
            f.expectError("uid == oid(010101010101010101010101)", ["cannot compare UUID with ObjectId", "at 1:8"])
            f.expectError("dbl CONTAINS 'x'", ["CONTAINS does not apply to Double", "at 1:"])
            f.expectError("name LIKE 5", ["cannot compare String with Int", "at 1:11"])
            f.expectError("age == %@", ["cannot compare Int with String", "at 1:8"], [.v(.str("5"))])
            f.expectError("owner == $0", ["cannot compare object with Int", "at 1:10"], [.v(.int(1))])
            f.expectError("scores == 'a'", ["cannot compare Int with String", "at 1:11"])
            f.expectError("friends.age == 'a'", ["cannot compare Int with String", "at 1:16"])
            // ordering of unordered types
            // (ObjectId and UUID are ordered by their bytes: IndexRangeTests)
            f.expectError("flag < true", ["Bool values have no order", "<, <=, > and >=", "use == or !=", "at 1:1"])
            f.expectError("flag >= false", ["Bool values have no order", "at 1:1"])
            f.expectError("true > flag", ["Bool values have no order", "at 1:1"])
            f.expectError("flag BETWEEN {false, true}", ["Bool values have no order", "BETWEEN", "at 1:1"])
            f.expectError("owner < nil", ["object values have no order", "at 1:1"])
            // string operators and options on non-strings
            f.expectError("age BEGINSWITH 'a'", ["BEGINSWITH does not apply to Int", "at 1:1"])
            f.expectError("age BEGINSWITH 5", ["BEGINSWITH does not apply to Int", "at 1:1"])
            f.expectError("flag ENDSWITH true", ["ENDSWITH does not apply to Bool", "at 1:1"])
            f.expectError("scores CONTAINS 1", ["CONTAINS does not apply to Int", "at 1:1"])
            f.expectError("born LIKE T1:0", ["LIKE does not apply to Date", "at 1:1"])
            f.expectError("age ==[c] 5", ["[c] and [d] apply to strings, not Int", "at 1:1"])
            f.expectError("dbl >[d] 5", ["[c] and [d] apply to strings, not Double", "at 1:1"])
            f.expectError("name ==[x] 'a'", ["unknown comparison option 'x'", "at 1:8"])
            f.expectError("name ==[c 'a'", ["']'", "found ''a''", "at 1:11"])
            f.expectError("name ==[] 'a'", ["expected [c], [d] or [cd]", "at 1:8"])
            // strings, numbers and literals
            f.expectError("name == 'abc", ["unterminated string", "at 1:9"])
            f.expectError("name == \"abc", ["unterminated string", "at 1:9"])
            f.expectError("name == 'abc\\", ["unterminated string", "at 1:9"])
            f.expectError("name == 'a\\u12'", ["bad \\u escape", "at 1:11"])
            f.expectError("age == 12abc", ["bad number", "at 1:8"])
            f.expectError("age == 0x", ["bad hexadecimal number", "at 1:8"])
            f.expectError("oid == oid(123)", ["bad oid literal", "at 1:8"])
            f.expectError("oid == oid(zz0101010101010101010101)", ["bad oid literal", "at 1:8"])
            f.expectError("oid == oid(01010101010101010101010101)", ["bad oid literal", "at 1:8"])
            f.expectError("uid == uuid(1234)", ["bad uuid literal", "at 1:8"])
            f.expectError("uid == uuid(10101010-1010-1010-1010-10101010101g)", ["bad uuid literal", "at 1:8"])
            f.expectError("uid == uuid(10101010-1010-1010-1010-101010101010", ["bad uuid literal", "at 1:8"])
            f.expectError("born == T100:x", ["bad timestamp literal", "at 1:9"])
            f.expectError("born == T100:1000000000", ["bad timestamp literal", "at 1:9"])
            f.expectError("bin == B64\"!!\"", ["bad base64 literal", "at 1:8"])
            f.expectError("bin == B64\"AQE=", ["unterminated base64 literal", "at 1:8"])
            // structure
            f.expectError("", ["empty query", "at 1:1"])
            f.expectError("   \n ", ["empty query"])
            f.expectError("(age == 5", ["expected ')' but found end of input", "at 1:10"])
            f.expectError("((age == 5) OR (age == 1)", ["expected ')'", "at 1:26"])
            f.expectError("age == 5)", ["')'", "at 1:9"])
            f.expectError("age IN {1, 2", ["'}'", "end of input", "at 1:13"])
            f.expectError("age IN {1 2}", ["'}'", "found '2'", "at 1:11"])
            f.expectError("age == 5 garbage", ["found 'garbage'", "at 1:10"])
            f.expectError("age == 5 #", ["unexpected character '#'", "at 1:10"])
            f.expectError("age 5", ["expected a comparison operator but found '5'", "at 1:5"])
            f.expectError("age = = 5", ["expected a value or a key path but found '='", "at 1:7"])
            f.expectError("age == ", ["expected a value or a key path but found end of input", "at 1:8"])
            f.expectError("age == 5 AND", ["end of input", "at 1:13"])
            f.expectError("age == 5 OR || age == 1", ["found '||'", "at 1:13"])
            f.expectError("NOT", ["end of input", "at 1:4"])
            f.expectError("age BETWEEN {1}", ["',' in BETWEEN", "found '}'", "at 1:15"])
            f.expectError("age BETWEEN 1, 2", ["'{' after BETWEEN", "found '1'", "at 1:13"])
            f.expectError("age BETWEEN {1, 2", ["'}' to close BETWEEN", "at 1:18"])
            f.expectError("name BETWEEN {'a', 'b'}", ["BETWEEN needs numbers, dates, object ids or UUIDs, not String", "at 1:1"])
            f.expectError("age BETWEEN {1, 'b'}", ["BETWEEN bounds", "Int", "at 1:1"])
            f.expectError("age IN 5", ["IN needs a list", "at 1:8"])
            f.expectError("age IN %@", ["IN needs a list", "at 1:8"], [.v(.int(5))])
            f.expectError("age IN {1, 'x'}", ["cannot compare Int with String", "at 1:12"])
            f.expectError("%q == 5", ["unknown placeholder '%q'", "at 1:1"])
            f.expectError("$ == 5", ["'$'", "at 1:1"])
            f.expectError("@ == 5", ["'@'", "at 1:1"])
            // SORT, DISTINCT, LIMIT
            f.expectError("TRUEPREDICATE SORT(age", ["',' or ')'", "end of input", "at 1:23"])
            f.expectError("TRUEPREDICATE SORT(agee ASC)", ["unknown property 'agee' on Dog", "at 1:20"])
            f.expectError("TRUEPREDICATE SORT(scores ASC)", ["SORT needs a single value", "at 1:20"])
            f.expectError("TRUEPREDICATE SORT(age UP)", ["',' or ')'", "found 'UP'", "at 1:24"])
            f.expectError("TRUEPREDICATE SORT()", ["expected a key path in SORT", "at 1:20"])
            f.expectError("TRUEPREDICATE DISTINCT(friends)", ["DISTINCT needs a single value", "at 1:24"])
            f.expectError("TRUEPREDICATE DISTINCT()", ["expected a key path in DISTINCT", "at 1:24"])
            f.expectError("TRUEPREDICATE LIMIT(-1)", ["LIMIT needs a non-negative integer", "at 1:21"])
            f.expectError("TRUEPREDICATE LIMIT(x)", ["LIMIT needs a non-negative integer", "at 1:21"])
            f.expectError("TRUEPREDICATE LIMIT(2.5)", ["LIMIT needs a non-negative integer", "at 1:21"])
            f.expectError("TRUEPREDICATE LIMIT 5", ["expected '('", "found '5'", "at 1:21"])
            f.expectError("TRUEPREDICATE LIMIT(5", ["')'", "end of input", "at 1:22"])
            f.expectError("TRUEPREDICATE ORDER(age)", ["found 'ORDER'", "at 1:15"])
            // arguments
            f.expectError("age == $1", ["missing argument for $1 (1 given)", "at 1:8"], [.v(.int(1))])
            f.expectError("age == %@", ["missing argument for %@ (0 given)", "at 1:8"])
            f.expectError("age == %@ AND age == %@", ["missing argument for %@ (1 given)", "at 1:22"], [.v(.int(1))])
            // collections
            f.expectError("ANY age > 5", ["ANY, ALL and NONE need a key path through a collection", "at 1:1"])
            f.expectError("ALL name == 'x'", ["ANY, ALL and NONE", "at 1:1"])
            f.expectError("NONE owner.name == 'x'", ["ANY, ALL and NONE", "at 1:1"])
            f.expectError("ANY 5 == age", ["ANY, ALL and NONE must be followed by a key path", "at 1:1"])
            f.expectError("age.@count > 1", ["collection operators apply to lists, sets and maps", "at 1:5"])
            f.expectError("owner.@count > 1", ["collection operators apply to lists, sets and maps", "at 1:7"])
            f.expectError("scores.@foo > 1", ["unknown collection operator '@foo'", "at 1:8"])
            f.expectError("labels.@sum > 1", ["@sum/@avg need numbers, not String", "at 1:8"])
            f.expectError("labels.@avg > 1", ["@sum/@avg need numbers, not String", "at 1:8"])
            f.expectError("labels.@min > 1", ["@min/@max need numbers or dates, not String", "at 1:8"])
            f.expectError("friends.@sum.name > 1", ["@sum/@avg need numbers, not String", "at 1:9"])
            f.expectError("friends.@max.city > 1", ["@min/@max need numbers or dates, not object", "at 1:9"])
            f.expectError("friends.@max > 1", ["an aggregate over objects needs a property", "at 1:9"])
            f.expectError("friends.@min.nope > 1", ["unknown property 'nope' on Person", "at 1:14"])
        }
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        try withDogs { f in
            let n = 10_000
            let parens = String(repeating: "(", count: n) + "age == 1" + String(repeating: ")", count: n)
            f.expectError(parens, ["nested too deeply"])
            f.expectError(String(repeating: "NOT ", count: n) + "age == 1", ["nested too deeply"])
            f.expectError(String(repeating: "!", count: n) + "age == 1", ["nested too deeply"])
            f.expectError(String(repeating: "(", count: n), ["nested too deeply"])
            // nested list literals
            let lists = "age IN " + String(repeating: "{", count: n) + "1" + String(repeating: "}", count: n)
            let (rc, msg, q) = makeQuery(f.txn, f.dog, lists)
            if let q { cs_query_free(q) }
            #expect(rc == Int32(CS_QUERY), "nested lists: \(codeName(rc)) \(msg)")
            // nested SUBQUERY
            var sub = "age == 1"
            for _ in 0..<2_000 { sub = "SUBQUERY(friends, $x, \(sub)).@count > 0" }
            let (rc2, msg2, q2) = makeQuery(f.txn, f.dog, sub)
            if let q2 { cs_query_free(q2) }
            #expect(rc2 == Int32(CS_QUERY), "nested subqueries: \(codeName(rc2)) \(msg2)")
            // cs_query_check of the same
            let b = Array(parens.utf8)
            let rc3 = b.withUnsafeBufferPointer { p in
                p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: p.count) { cs_query_check($0, p.count, 0) }
            }
            #expect(rc3 == Int32(CS_QUERY) && lastMessage().contains("nested too deeply"), "\(lastMessage())")
        }
    }

    @Test func longFlatChainsAreNotNesting() throws {
        // A generated "x == 1 OR x == 2 OR ..." is flat, not nested: it must run.
        try withDogs { f in
            for n in [500, 5_000] {
                let ors = (0..<n).map { "age == \($0)" }.joined(separator: " OR ")
                f.expectDogs(ors, [0, 1, 2, 4, 5])
                let ands = (0..<n).map { _ in "age >= 0" }.joined(separator: " AND ")
                f.expectDogs(ands, [0, 1, 2, 4, 5])
            }
        }
    }

    @Test func queryCheckWithoutASchema() {
        func checkText(_ s: String, _ nargs: Int) -> (Int32, String) {
            let b = Array(s.utf8)
            let rc = b.withUnsafeBufferPointer { p -> Int32 in
                if p.count == 0 { return cs_query_check("", 0, nargs) }
                return p.baseAddress!.withMemoryRebound(to: CChar.self, capacity: p.count) { cs_query_check($0, p.count, nargs) }
            }
            return (rc, rc == Int32(CS_OK) ? "" : lastMessage())
        }
        #expect(checkText("agee == 5 AND name BEGINSWITH[c] $0", 1).0 == Int32(CS_OK))
        let (rc1, m1) = checkText("age == $0", 0)
        #expect(rc1 == Int32(CS_QUERY) && m1.contains("$0") && m1.contains("at 1:8"), "\(m1)")
        let (rc2, m2) = checkText("age == ", 0)
        #expect(rc2 == Int32(CS_QUERY) && m2.contains("at 1:8"), "\(m2)")
        let (rc3, m3) = checkText("", 0)
        #expect(rc3 == Int32(CS_QUERY) && m3.contains("empty query"), "\(m3)")
    }
}

// MARK: - Positive queries

@Suite struct QueryResultTests {
    @Test func intComparisons() throws {
        try withDogs { f in
            f.expectDogs("age == 5", [1, 2])
            f.expectDogs("age != 5", [0, 3, 4, 5])
            f.expectDogs("age < 5", [0, 3, 5])
            f.expectDogs("age <= 5", [0, 1, 2, 3, 5])
            f.expectDogs("age > 5", [4])
            f.expectDogs("age >= 5", [1, 2, 4])
            f.expectDogs("age = 5", [1, 2])
            f.expectDogs("age <> 5", [0, 3, 4, 5])
            f.expectDogs("age => 5", [1, 2, 4])
            f.expectDogs("age =< 0", [3, 5])
            f.expectDogs("5 == age", [1, 2])
            f.expectDogs("5 < age", [4])
            f.expectDogs("-7 >= age", [3])
            f.expectDogs("age == 0x2A", [4])
            f.expectDogs("age == 5.0", [1, 2])
            f.expectDogs("age < 1.5", [0, 3, 5])
            f.expectDogs("age > 4.99", [1, 2, 4])
            f.expectDogs("age == 5.5", [])
            f.expectDogs("age == $0", [1, 2], [.v(.int(5))])
            f.expectDogs("age > %@", [4], [.v(.int(5))])
            f.expectDogs("age < %@", [0, 3, 5], [.v(.double(4.5))])
            f.expectDogs("age == %@", [0], [.v(.float(1))])
            f.expectDogs("age > $1 AND age < $0", [0, 5], [.v(.int(5)), .v(.int(-1))])
        }
    }

    @Test func floatingPointComparisons() throws {
        try withDogs { f in
            f.expectDogs("dbl == 1.5", [0])
            f.expectDogs("dbl != 0", [0, 1, 3, 4, 5])
            f.expectDogs("dbl < 0", [1, 5])
            f.expectDogs("dbl <= 0", [1, 2, 5])
            f.expectDogs("dbl > 1.5", [3, 4])
            f.expectDogs("dbl >= 1.5", [0, 3, 4])
            f.expectDogs("dbl == 100", [3])
            f.expectDogs("dbl > 1e299", [4])
            f.expectDogs("dbl == -2.25", [1])
            f.expectDogs("flt == 0.5", [0])
            f.expectDogs("flt != 0.5", [1, 2, 3, 4, 5])
            f.expectDogs("flt < 0", [2])
            f.expectDogs("flt <= 0", [2, 5])
            f.expectDogs("flt > 2.5", [3, 4])
            f.expectDogs("flt >= 2.5", [1, 3, 4])
            f.expectDogs("flt == 3.25", [4])
            f.expectDogs("flt == 100", [3])
            f.expectDogs("flt > 0.1", [0, 1, 3, 4])
            f.expectDogs("flt == $0", [4], [.v(.float(3.25))])
            f.expectDogs("dbl < $0", [1, 5], [.v(.int(0))])
        }
    }

    @Test func boolTimestampObjectIdUuidBinary() throws {
        try withDogs { f in
            f.expectDogs("flag == true", [0, 2, 4])
            f.expectDogs("flag != true", [1, 3, 5])
            f.expectDogs("flag == false", [1, 3, 5])
            f.expectDogs("flag == TRUE", [0, 2, 4])
            f.expectDogs("flag == %@", [1, 3, 5], [.v(.bool(false))])

            f.expectDogs("born == T100:0", [0, 5])
            f.expectDogs("born != T100:0", [1, 2, 3, 4])
            f.expectDogs("born < T100:0", [2, 4])
            f.expectDogs("born <= T100:0", [0, 2, 4, 5])
            f.expectDogs("born > T100:0", [1, 3])
            f.expectDogs("born >= T100:500", [1, 3])
            f.expectDogs("born > T100:499", [1, 3])
            f.expectDogs("born == T100:500", [1])
            f.expectDogs("born < T0:0", [4])
            f.expectDogs("born == $0", [4], [.v(.timestamp(-10, -5))])
            f.expectDogs("born < $0", [4], [.v(.timestamp(-10, -4))])

            f.expectDogs("oid == oid(\(hex(oidBytes(1))))", [0])
            f.expectDogs("oid != oid(\(hex(oidBytes(1))))", [1, 2, 3, 4, 5])
            f.expectDogs("oid == oid(\(hex(oidBytes(6)).uppercased()))", [5])
            f.expectDogs("oid == $0", [2], [.v(.objectId(oidBytes(3)))])
            f.expectDogs("oid IN {oid(\(hex(oidBytes(2)))), oid(\(hex(oidBytes(5))))}", [1, 4])

            f.expectDogs("uid == uuid(\(uuidText(uuidBytes(0x10))))", [0])
            f.expectDogs("uid != uuid(\(uuidText(uuidBytes(0x10))))", [1, 2, 3, 4, 5])
            f.expectDogs("uid == uuid(\(uuidText(uuidBytes(0x15)).uppercased()))", [5])
            f.expectDogs("uid == %@", [3], [.v(.uuid(uuidBytes(0x13)))])

            func b64(_ b: [UInt8]) -> String { Data(b).base64EncodedString() }
            f.expectDogs("bin == B64\"\(b64([1, 1]))\"", [1])
            f.expectDogs("bin == B64\"\"", [4])
            f.expectDogs("bin != B64\"\(b64([1, 1]))\"", [0, 2, 3, 4, 5])
            f.expectDogs("bin == $0", [3], [.v(.binary([3, 3]))])
            f.expectDogs("bin BEGINSWITH B64\"\(b64([2]))\"", [2])
            f.expectDogs("bin ENDSWITH B64\"\(b64([5]))\"", [5])
            f.expectDogs("bin CONTAINS B64\"\"", [0, 1, 2, 3, 4, 5])
        }
    }

    @Test func nullsOnNullableColumns() throws {
        try withDogs { f in
            f.expectDogs("nage == nil", [0, 4])
            f.expectDogs("nage == NULL", [0, 4])
            f.expectDogs("nil == nage", [0, 4])
            f.expectDogs("nage != nil", [1, 2, 3, 5])
            f.expectDogs("nage == 10", [1, 3])
            f.expectDogs("nage != 10", [0, 2, 4, 5])
            f.expectDogs("nage < 0", [2])
            f.expectDogs("nage > -100", [1, 2, 3, 5])
            f.expectDogs("nage == $0", [0, 4], [.v(.null)])
            f.expectDogs("nname == nil", [0, 3])
            f.expectDogs("nname != nil", [1, 2, 4, 5])
            f.expectDogs("nname == ''", [2])
            f.expectDogs("nname ==[c] nil", [0, 3])
            f.expectDogs("nname BEGINSWITH ''", [1, 2, 4, 5])
            f.expectDogs("nname ==[c] 'REX'", [4])
            f.expectDogs("NOT nname == nil", [1, 2, 4, 5])
        }
    }

    @Test func stringOperators() throws {
        try withDogs { f in
            f.expectDogs("name == 'Rex'", [0])
            f.expectDogs("name == \"Rex\"", [0])
            f.expectDogs("name != 'Rex'", [1, 2, 3, 4, 5])
            f.expectDogs("name ==[c] 'REX'", [0, 1])
            f.expectDogs("name !=[c] 'REX'", [2, 3, 4, 5])
            f.expectDogs("name == ''", [4])
            f.expectDogs("name BEGINSWITH 'R'", [0])
            f.expectDogs("name BEGINSWITH[c] 'R'", [0, 1])
            f.expectDogs("name ENDSWITH 'x'", [0, 1])
            f.expectDogs("name ENDSWITH 'ed'", [5])
            f.expectDogs("name CONTAINS 'e'", [0, 1, 5])
            f.expectDogs("name CONTAINS ''", [0, 1, 2, 3, 4, 5])
            f.expectDogs("name BEGINSWITH ''", [0, 1, 2, 3, 4, 5])
            f.expectDogs("name LIKE 'R*'", [0])
            f.expectDogs("name LIKE '?ex'", [0, 1])
            f.expectDogs("name LIKE[c] 'r*'", [0, 1])
            f.expectDogs("name LIKE '*'", [0, 1, 2, 3, 4, 5])
            f.expectDogs("name LIKE ''", [4])
            f.expectDogs("name LIKE '*e*'", [0, 1, 5])
            f.expectDogs("name LIKE 'A?f'", [3])
            f.expectDogs("name LIKE '??'", [2])
            f.expectDogs("name LIKE '*x'", [0, 1])
            f.expectDogs("name < 'B'", [3, 4])
            f.expectDogs("name <= 'Bo'", [2, 3, 4])
            f.expectDogs("name > 'Z'", [1, 5])
            f.expectDogs("name >= 'rex'", [1])
            f.expectDogs("name BEGINSWITH $0", [0], [.v(.str("Re"))])
            f.expectDogs("name == 'R\\u0065x'", [0])
            f.expectDogs("name CONTAINS[c] %@", [0, 1], [.v(.str("EX"))])
        }
    }

    /// A table of single strings for the [c] / [d] rules.
    private func withWords(_ words: [String], _ body: (OpaquePointer, UInt32, [Int64]) throws -> Void) throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn in
                let t = try addTable(txn, "Word")
                let w = try addColumn(txn, t, "w", CS_TYPE_STRING)
                var keys: [Int64] = []
                for s in words {
                    var o = try createObj(txn, t)
                    try must(setVal(&o, w, .str(s)))
                    keys.append(o.key)
                }
                try body(txn, t, keys)
            }
        }
    }

    @Test func caseAndDiacriticFoldingOverLatin1AndLatinExtendedA() throws {
        let words = ["É", "é", "E", "e", "Ā", "ā", "A", "a", "ß", "ss", "SS", "ÿ", "Ÿ", "y", "Y",
                     "Élan", "élan", "elan", "ELAN"]
        try withWords(words) { txn, t, k in
            func expect(_ q: String, _ idx: [Int], _ args: [QArg] = [], sourceLocation: SourceLocation = #_sourceLocation) {
                do {
                    let got = try queryKeys(txn, t, q, args)
                    let names = got.compactMap { key in k.firstIndex(of: key).map { words[$0] } }
                    #expect(got == idx.map { k[$0] }, "\(q): expected \(idx.map { words[$0] }), got \(names)",
                            sourceLocation: sourceLocation)
                } catch {
                    Issue.record("\(q): \(error)", sourceLocation: sourceLocation)
                }
            }
            expect("w == 'é'", [1])
            expect("w ==[c] 'é'", [0, 1])
            expect("w ==[c] 'É'", [0, 1])
            expect("w ==[d] 'é'", [1, 3])
            expect("w ==[d] 'É'", [0, 2])
            expect("w ==[cd] 'é'", [0, 1, 2, 3])
            expect("w ==[dc] 'E'", [0, 1, 2, 3])
            expect("w ==[c] 'ā'", [4, 5])
            expect("w ==[c] 'Ā'", [4, 5])
            expect("w ==[d] 'A'", [4, 6])
            expect("w ==[cd] 'a'", [4, 5, 6, 7])
            expect("w ==[c] 'ss'", [9, 10]) // ß has no simple case folding: it stays as is
            expect("w ==[cd] 'ß'", [8])
            expect("w ==[c] 'ß'", [8])
            expect("w ==[c] 'ÿ'", [11, 12])
            expect("w ==[c] 'Ÿ'", [11, 12])
            expect("w ==[d] 'y'", [11, 13])
            expect("w ==[d] 'Y'", [12, 14])
            expect("w ==[cd] 'Y'", [11, 12, 13, 14])
            expect("w !=[c] 'e'", [0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
            expect("w BEGINSWITH 'É'", [0, 15])
            expect("w BEGINSWITH[c] 'é'", [0, 1, 15, 16])
            expect("w BEGINSWITH[cd] 'el'", [15, 16, 17, 18])
            expect("w BEGINSWITH[d] 'el'", [16, 17])
            expect("w ENDSWITH[c] 'LAN'", [15, 16, 17, 18])
            expect("w CONTAINS[d] 'la'", [15, 16, 17])
            expect("w CONTAINS[c] 'LA'", [15, 16, 17, 18])
            expect("w LIKE[cd] 'e?an'", [15, 16, 17, 18])
            expect("w LIKE[c] 'é*'", [0, 1, 15, 16])
            expect("w LIKE 'É*'", [0, 15])
            expect("w LIKE '?'", [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14]) // ? is one character, not one byte
            expect("w IN {'é', 'ā'}", [1, 5])
            // UTF-8 byte order: uppercase ASCII < lowercase ASCII < everything non-ASCII
            expect("w < 'a'", [2, 6, 10, 14, 18])
            expect("w > 'z'", [0, 1, 4, 5, 8, 11, 12, 15, 16])
            expect("w > 'ÿ'", [4, 5, 12]) // U+0100, U+0101, U+0178 follow U+00FF
            expect("w ==[c] %@", [0, 1], [.v(.str("É"))])
        }
    }

    @Test func foldingFollowsUnicodeDataNotLookalikes() throws {
        // [d] removes only the combining marks of a canonical decomposition: letters with a
        // stroke or bar (Ø, Đ, Ħ, Ł, Ŧ) and dotless ı have none, so they do not become O, D...
        // [c] is simple case folding: ſ (U+017F) folds to s; İ (U+0130) has no simple folding.
        let words = ["Ø", "ø", "O", "o", "Đ", "đ", "D", "Ħ", "H", "Ł", "ł", "L", "Ŧ", "T", "ı", "i", "ſ", "s", "S", "İ", "Ñ", "N", "Ç", "c"]
        try withWords(words) { txn, t, k in
            func expect(_ q: String, _ idx: [Int], sourceLocation: SourceLocation = #_sourceLocation) {
                do {
                    let got = try queryKeys(txn, t, q)
                    let names = got.compactMap { key in k.firstIndex(of: key).map { words[$0] } }
                    #expect(got == idx.map { k[$0] }, "\(q): expected \(idx.map { words[$0] }), got \(names)",
                            sourceLocation: sourceLocation)
                } catch {
                    Issue.record("\(q): \(error)", sourceLocation: sourceLocation)
                }
            }
            expect("w ==[d] 'Ñ'", [20, 21])
            expect("w ==[d] 'N'", [20, 21])
            expect("w ==[cd] 'ç'", [22, 23])
            expect("w ==[d] 'O'", [2])
            expect("w ==[c] 'ø'", [0, 1])
            expect("w ==[d] 'D'", [6])
            expect("w ==[cd] 'd'", [6])
            expect("w ==[d] 'H'", [8])
            expect("w ==[d] 'L'", [11])
            expect("w ==[c] 'ł'", [9, 10])
            expect("w ==[d] 'T'", [13])
            expect("w ==[d] 'i'", [15])
            expect("w ==[c] 's'", [16, 17, 18])
            expect("w ==[c] 'ı'", [14])
            expect("w ==[c] 'İ'", [19])
        }
    }

    @Test func logicAndConstants() throws {
        try withDogs { f in
            f.expectDogs("TRUEPREDICATE", [0, 1, 2, 3, 4, 5])
            f.expectDogs("FALSEPREDICATE", [])
            f.expectDogs("truepredicate", [0, 1, 2, 3, 4, 5])
            f.expectDogs("NOT TRUEPREDICATE", [])
            f.expectDogs("NOT age == 5", [0, 3, 4, 5])
            f.expectDogs("!(age == 5)", [0, 3, 4, 5])
            f.expectDogs("NOT NOT age == 5", [1, 2])
            f.expectDogs("age == 5 && flag == true", [2])
            f.expectDogs("age == 5 AND flag == true", [2])
            f.expectDogs("age == 5 and flag == true", [2])
            f.expectDogs("age == 5 || age == 42", [1, 2, 4])
            f.expectDogs("age == 5 OR age == 42", [1, 2, 4])
            f.expectDogs("age == 1 OR age == 5 AND flag == false", [0, 1])
            f.expectDogs("(age == 1 OR age == 5) AND flag == false", [1])
            f.expectDogs("NOT (age == 1 OR age == 5) AND flag == false", [3, 5])
            f.expectDogs("TRUEPREDICATE AND age > 5", [4])
            f.expectDogs("FALSEPREDICATE OR age > 5", [4])
            f.expectDogs("age == 5 AND (FALSEPREDICATE OR NOT flag == true)", [1])
            f.expectDogs("age BETWEEN {0, 5}", [0, 1, 2, 5])
            f.expectDogs("age BETWEEN {5, 0}", [])
            f.expectDogs("NOT age BETWEEN {0, 5}", [3, 4])
            f.expectDogs("dbl BETWEEN {-1, 1.5}", [0, 2, 5])
            f.expectDogs("nage BETWEEN {-3, 0}", [2, 5])
            f.expectDogs("born BETWEEN {T50:0, T100:0}", [0, 2, 5])
            f.expectDogs("age BETWEEN {$0, $1}", [0, 5], [.v(.int(0)), .v(.int(1))])
            f.expectDogs("age IN {1, 42}", [0, 4])
            f.expectDogs("age IN {}", [])
            f.expectDogs("name IN {'Rex', 'Bo'}", [0, 2])
            f.expectDogs("nage IN {nil, 10}", [0, 1, 3, 4])
            f.expectDogs("age IN %@", [1, 2, 5], [.list([.int(5), .int(0)])])
            f.expectDogs("age IN %@", [], [.list([])])
            f.expectDogs("name IN %@", [3, 5], [.list([.str("Zed"), .str("Alf"), .str("zed")])])
            f.expectDogs("NOT age IN $0", [0, 3, 4], [.list([.int(5), .int(0)])])
            f.expectDogs("5 IN scores", [3])
            f.expectDogs("%K == 5", [1, 2], [.v(.str("age"))])
        }
    }

    @Test func linkPaths() throws {
        try withDogs { f in
            f.expectDogs("owner == nil", [2])
            f.expectDogs("owner != nil", [0, 1, 3, 4, 5])
            f.expectDogs("owner == %@", [0, 3], [.v(.link(f.person, f.p[0]))])
            f.expectDogs("owner != $0", [0, 2, 3, 4], [.v(.link(f.person, f.p[1]))])
            f.expectDogs("owner.name == 'Ann'", [0, 3])
            f.expectDogs("owner.name BEGINSWITH[c] 'b'", [1, 5])
            f.expectDogs("owner.age > 20", [0, 3, 4])
            f.expectDogs("owner.age == nil", [2])
            f.expectDogs("owner.city.name == 'Oslo'", [0, 3])
            f.expectDogs("owner.city.pop > 1000", [1, 5])
            f.expectDogs("owner.city == nil", [2, 4])
            f.expectDogs("owner.city.name == nil", [2, 4])
            f.expectDogs("owner.city == %@", [1, 5], [.v(.link(f.city, f.c[1]))])
            f.expectDogs("friends.name == 'Bob'", [0, 3, 4])
            f.expectDogs("ANY friends.name == 'Bob'", [0, 3, 4])
            f.expectDogs("SOME friends.name == 'Bob'", [0, 3, 4])
            f.expectDogs("ALL friends.age > 16", [0, 1, 2, 3, 4, 5])
            f.expectDogs("ALL friends.age > 20", [1, 2, 5])
            f.expectDogs("NONE friends.name == 'Cy'", [0, 1, 3])
            f.expectDogs("friends.city.name == 'Rome'", [0, 3, 4])
            f.expectDogs("friends == %@", [0, 4], [.v(.link(f.person, f.p[0]))])
            f.expectDogs("friends.@count == 2", [0, 5])
            f.expectDogs("friends.@count == 0", [1])
            f.expectDogs("friends.@size > 1", [0, 4, 5])
            f.expectDogs("friends.@max.age == 65", [2, 4, 5])
            f.expectDogs("friends.@min.age < 20", [0, 3, 4])
            f.expectDogs("friends.@sum.age == 47", [0])
            f.expectDogs("friends.@sum.age == 0", [1])
            f.expectDogs("friends.@avg.age > 40", [2, 5])
            f.expectDogs("friends.@avg.age == nil", [1])
            f.expectDogs("friends.@max.age == nil", [1])
        }
    }

    @Test func listsOfValues() throws {
        try withDogs { f in
            f.expectDogs("scores == 5", [3])
            f.expectDogs("ANY scores > 4", [2, 3, 4])
            f.expectDogs("scores > 4", [2, 3, 4])
            f.expectDogs("ALL scores > 0", [0, 1, 2, 3])
            f.expectDogs("NONE scores > 4", [0, 1, 5])
            f.expectDogs("ANY scores IN {0, 3}", [0, 5])
            f.expectDogs("ALL scores BETWEEN {0, 10}", [0, 1, 2, 3, 5])
            f.expectDogs("scores.@count == 0", [1])
            f.expectDogs("scores.@count >= 2", [0, 3, 4])
            f.expectDogs("scores.@size == 1", [2, 5])
            f.expectDogs("scores.@min == -1", [4])
            f.expectDogs("scores.@max >= 10", [2, 4])
            f.expectDogs("scores.@sum == 6", [0])
            f.expectDogs("scores.@sum == 0", [1, 5])
            f.expectDogs("scores.@avg == 5", [3])
            f.expectDogs("scores.@avg > 1.5", [0, 2, 3, 4])
            f.expectDogs("scores.@avg == nil", [1])
            f.expectDogs("scores.@min == nil", [1])
            f.expectDogs("scores.@max == nil", [1])
            f.expectDogs("labels == 'x'", [0])
            f.expectDogs("labels.@count == 1", [0])
        }
    }

    @Test func maps() throws {
        try withDogs { f in
            f.expectDogs("tags.@allKeys == 'a'", [0, 3])
            f.expectDogs("tags.@allKeys BEGINSWITH 'z'", [5])
            f.expectDogs("ANY tags.@allKeys ==[c] 'B'", [0, 4])
            f.expectDogs("NONE tags.@allKeys == 'a'", [1, 2, 4, 5])
            f.expectDogs("tags.@count == 0", [1])
            f.expectDogs("tags.@count == 2", [0])
            f.expectDogs("tags > 10", [2])
            f.expectDogs("tags.@allValues == 1", [0])
            f.expectDogs("ALL tags >= 0", [0, 1, 2, 3, 5])
            f.expectDogs("tags.@sum == 3", [0])
            f.expectDogs("tags.@max == 30", [2])
            f.expectDogs("tags.@min < 0", [4])
            f.expectDogs("tags.@avg == 1.5", [0])
        }
    }

    @Test func mapSubscriptAndSubqueryFromDesign() throws {
        // map['key'] and SUBQUERY(...).@count are among the supported forms (docs/ARCHITECTURE.md, Queries).
        try withDogs { f in
            f.expectDogs("tags['a'] == 5", [3])
            f.expectDogs("tags['b'] > 0", [0])
            f.expectDogs("SUBQUERY(friends, $f, $f.age > 20 AND $f.name BEGINSWITH 'A').@count > 0", [0, 4])
        }
    }

    @Test func sortDistinctLimit() throws {
        try withDogs { f in
            f.expectDogs("TRUEPREDICATE SORT(age ASC)", [3, 5, 0, 1, 2, 4])
            f.expectDogs("TRUEPREDICATE SORT(age)", [3, 5, 0, 1, 2, 4])
            f.expectDogs("TRUEPREDICATE SORT(age DESC)", [4, 1, 2, 0, 5, 3]) // 1 and 2 tie: key order
            f.expectDogs("TRUEPREDICATE SORT(age DESCENDING)", [4, 1, 2, 0, 5, 3])
            f.expectDogs("TRUEPREDICATE SORT(age DESC, name ASC)", [4, 2, 1, 0, 5, 3])
            f.expectDogs("TRUEPREDICATE SORT(flag ASC, age DESC)", [1, 5, 3, 4, 2, 0])
            f.expectDogs("TRUEPREDICATE SORT(born ASC)", [4, 2, 0, 5, 1, 3])
            f.expectDogs("TRUEPREDICATE SORT(born DESC)", [3, 1, 0, 5, 2, 4])
            f.expectDogs("TRUEPREDICATE SORT(nage ASC)", [0, 4, 2, 5, 1, 3])
            f.expectDogs("TRUEPREDICATE SORT(nage DESC)", [1, 3, 5, 2, 0, 4])
            f.expectDogs("TRUEPREDICATE SORT(name ASC)", [4, 3, 2, 0, 5, 1])
            f.expectDogs("TRUEPREDICATE SORT(dbl ASC)", [1, 5, 2, 0, 3, 4])
            f.expectDogs("TRUEPREDICATE SORT(owner.name ASC)", [2, 0, 3, 1, 5, 4])
            f.expectDogs("TRUEPREDICATE SORT(owner.city.pop DESC)", [1, 5, 0, 3, 2, 4])
            f.expectDogs("age >= 0 SORT(age DESC)", [4, 1, 2, 0, 5])
            f.expectDogs("TRUEPREDICATE DISTINCT(age)", [0, 1, 3, 4, 5])
            f.expectDogs("TRUEPREDICATE DISTINCT(flag)", [0, 1])
            f.expectDogs("TRUEPREDICATE DISTINCT(nage)", [0, 1, 2, 5])
            f.expectDogs("TRUEPREDICATE DISTINCT(owner)", [0, 1, 2, 4])
            f.expectDogs("TRUEPREDICATE DISTINCT(flag, age)", [0, 1, 2, 3, 4, 5])
            f.expectDogs("TRUEPREDICATE DISTINCT(owner.city)", [0, 1, 2])
            f.expectDogs("TRUEPREDICATE DISTINCT(age) SORT(name ASC)", [4, 3, 0, 5, 1])
            f.expectDogs("TRUEPREDICATE SORT(age ASC) LIMIT(2)", [3, 5])
            f.expectDogs("TRUEPREDICATE LIMIT(0)", [])
            f.expectDogs("age == 5 LIMIT(1)", [1])
            f.expectDogs("TRUEPREDICATE LIMIT(100)", [0, 1, 2, 3, 4, 5])
            f.expectDogs("TRUEPREDICATE DISTINCT(age) LIMIT(2)", [0, 1])
            f.expectDogs("flag == true SORT(age DESC) LIMIT(2)", [4, 2])
        }
    }

    @Test func aggregates() throws {
        try withDogs { f in
            func agg(_ text: String, _ col: String, _ op: cs_aggregate) throws -> (Int32, Val) {
                let (rc, msg, q) = makeQuery(f.txn, f.dog, text)
                guard rc == Int32(CS_OK), let q else { throw CStoreError(code: rc, message: msg, context: text) }
                defer { cs_query_free(q) }
                var out = cs_value()
                let arc = cs_query_aggregate(q, f.cols[col]!, op, &out)
                return (arc, arc == Int32(CS_OK) ? toVal(out) : .null)
            }
            func expectAgg(_ text: String, _ col: String, _ op: cs_aggregate, _ want: Val,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
                let (rc, v) = try agg(text, col, op)
                #expect(rc == Int32(CS_OK), "\(text) \(col) \(op): \(codeName(rc)) \(lastMessage())", sourceLocation: sourceLocation)
                #expect(v == want, "\(text) \(col) op \(op.rawValue): expected \(want), got \(v)", sourceLocation: sourceLocation)
            }
            try expectAgg("TRUEPREDICATE", "age", CS_AGG_SUM, .int(46))
            try expectAgg("TRUEPREDICATE", "age", CS_AGG_COUNT, .int(6))
            try expectAgg("age > 0", "age", CS_AGG_SUM, .int(53))
            try expectAgg("TRUEPREDICATE", "age", CS_AGG_MIN, .int(-7))
            try expectAgg("TRUEPREDICATE", "age", CS_AGG_MAX, .int(42))
            try expectAgg("TRUEPREDICATE", "age", CS_AGG_AVG, .double(46.0 / 6.0))
            try expectAgg("TRUEPREDICATE", "nage", CS_AGG_SUM, .int(17))
            try expectAgg("TRUEPREDICATE", "nage", CS_AGG_AVG, .double(4.25))
            try expectAgg("TRUEPREDICATE", "nage", CS_AGG_MIN, .int(-3))
            try expectAgg("TRUEPREDICATE", "born", CS_AGG_MIN, .timestamp(-10, -5))
            try expectAgg("TRUEPREDICATE", "born", CS_AGG_MAX, .timestamp(200, 0))
            try expectAgg("flag == false", "born", CS_AGG_MIN, .timestamp(100, 0))
            try expectAgg("dbl < 10", "dbl", CS_AGG_SUM, .double(-1.25))
            try expectAgg("dbl < 10", "dbl", CS_AGG_AVG, .double(-1.25 / 4))
            try expectAgg("dbl < 10", "dbl", CS_AGG_MAX, .double(1.5))
            try expectAgg("TRUEPREDICATE", "flt", CS_AGG_AVG, .double(105.25 / 6))
            try expectAgg("TRUEPREDICATE", "flt", CS_AGG_MIN, .float(-1))
            try expectAgg("age == 5 LIMIT(1)", "age", CS_AGG_COUNT, .int(1))
            try expectAgg("TRUEPREDICATE SORT(age DESC) LIMIT(2)", "age", CS_AGG_SUM, .int(47))
            // the empty set: sum 0, the others null
            try expectAgg("FALSEPREDICATE", "age", CS_AGG_SUM, .int(0))
            try expectAgg("FALSEPREDICATE", "age", CS_AGG_COUNT, .int(0))
            try expectAgg("FALSEPREDICATE", "age", CS_AGG_MIN, .null)
            try expectAgg("FALSEPREDICATE", "age", CS_AGG_MAX, .null)
            try expectAgg("FALSEPREDICATE", "age", CS_AGG_AVG, .null)
            try expectAgg("FALSEPREDICATE", "born", CS_AGG_MIN, .null)
            try expectAgg("FALSEPREDICATE", "born", CS_AGG_MAX, .null)
            try expectAgg("FALSEPREDICATE", "dbl", CS_AGG_AVG, .null)
            try expectAgg("nage == nil", "nage", CS_AGG_AVG, .null)
            try expectAgg("nage == nil", "nage", CS_AGG_MAX, .null)
            let (rs, vs) = try agg("FALSEPREDICATE", "dbl", CS_AGG_SUM)
            #expect(rs == Int32(CS_OK) && (vs == .double(0) || vs == .int(0)), "empty Double sum: \(vs)")
            // non-numeric columns
            for (col, op) in [("name", CS_AGG_SUM), ("name", CS_AGG_MIN), ("flag", CS_AGG_AVG), ("born", CS_AGG_SUM), ("oid", CS_AGG_MAX)] {
                let (rc, _) = try agg("TRUEPREDICATE", col, op)
                #expect(rc == Int32(CS_TYPE), "aggregate \(op.rawValue) of \(col): \(codeName(rc))")
                if rc != Int32(CS_OK) { #expect(lastMessage().contains(col), "\(lastMessage())") }
            }
        }
    }

    @Test func integerSumOverflowIsAnError() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            try db.write { txn in
                let t = try addTable(txn, "N")
                let v = try addColumn(txn, t, "v", CS_TYPE_INT)
                let l = try addColumn(txn, t, "l", CS_TYPE_INT, coll: CS_COLL_LIST)
                for x in [Int64.max, Int64.max - 1, 1] {
                    var o = try createObj(txn, t)
                    try must(setVal(&o, v, .int(x)))
                    var c = try openColl(&o, l)
                    try must(listAppend(&c, .int(x)))
                    try must(listAppend(&c, .int(x)))
                }
                var (rc, msg, q) = makeQuery(txn, t, "TRUEPREDICATE")
                try must(rc, msg)
                var out = cs_value()
                expectCode(cs_query_aggregate(q, v, CS_AGG_SUM, &out), CS_OVERFLOW, "sum of Int.max + Int.max - 1 + 1")
                cs_query_free(q)
                (rc, msg, q) = makeQuery(txn, t, "v < 0 OR v == 1")
                try must(rc, msg)
                check(cs_query_aggregate(q, v, CS_AGG_SUM, &out), "sum that fits")
                #expect(toVal(out) == .int(1))
                cs_query_free(q)
                // the average of large integers does not overflow
                (rc, msg, q) = makeQuery(txn, t, "v > 1")
                try must(rc, msg)
                let arc = cs_query_aggregate(q, v, CS_AGG_AVG, &out)
                #expect(arc == Int32(CS_OK), "avg of Int.max and Int.max - 1: \(codeName(arc)) \(lastMessage())")
                if arc == Int32(CS_OK) { #expect(toVal(out) == .double(9.223372036854775807e18)) }
                check(cs_query_aggregate(q, v, CS_AGG_MAX, &out), "max")
                #expect(toVal(out) == .int(Int64.max))
                cs_query_free(q)
                // @sum inside a predicate overflows too
                (rc, msg, q) = makeQuery(txn, t, "l.@sum > 0")
                try must(rc, msg)
                var keys: UnsafeMutablePointer<Int64>?
                var n = 0
                expectCode(cs_query_keys(q, &keys, &n), CS_OVERFLOW, "l.@sum over [Int.max, Int.max]")
                cs_keys_free(keys)
                cs_query_free(q)
            }
        }
    }

    @Test func queryFollowsItsTransactionToNewerVersions() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, v: UInt32 = 0
            var first: [Int64] = []
            try db.write { txn in
                t = try addTable(txn, "N")
                v = try addColumn(txn, t, "v", CS_TYPE_INT)
                for x in [1, 10, 3, 20] as [Int64] {
                    var o = try createObj(txn, t)
                    try must(setVal(&o, v, .int(x)))
                    first.append(o.key)
                }
            }
            let reader = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(reader) }
            let (rc, msg, q) = makeQuery(reader, t, "v > 5 SORT(v DESC)")
            try must(rc, msg)
            defer { cs_query_free(q) }
            #expect(try keysOf(q!, "before") == [first[3], first[1]])
            var added: Int64 = 0
            try db.write { txn in
                var o = try createObj(txn, t)
                try must(setVal(&o, v, .int(15)))
                added = o.key
                var o0 = try openObj(txn, t, first[0])
                try must(setVal(&o0, v, .int(100)))
            }
            #expect(try keysOf(q!, "not advanced") == [first[3], first[1]], "the reader still sees its version")
            var changed = false
            try must(cs_txn_advance(reader, &changed), "cs_txn_advance")
            #expect(changed)
            #expect(try keysOf(q!, "advanced") == [first[0], first[3], added, first[1]])
            // a schema change: the query binds again and still works
            try db.write { txn in
                _ = try addColumn(txn, t, "w", CS_TYPE_STRING)
                var o = try createObj(txn, t)
                try must(setVal(&o, v, .int(7)))
            }
            try must(cs_txn_advance(reader, &changed), "cs_txn_advance")
            let got = try keysOf(q!, "after schema change")
            #expect(got.count == 5 && got.first == first[0], "\(got)")
        }
    }
}
