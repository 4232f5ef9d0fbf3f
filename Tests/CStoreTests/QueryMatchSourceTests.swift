// cs_query_match_source: a table query's predicate evaluated on objects whose values come from
// callbacks (docs/ARCHITECTURE.md, Queries on unmanaged objects). The source here mirrors the
// file (handles are the object keys, values read with cs_obj_get and the collection calls), so
// for every predicate the match must pick exactly the objects the query itself finds.

import CStore
import Foundation
import Testing

/// A source reading the fixture's own objects, counting the calls it answers.
private final class MirrorSource {
    let txn: OpaquePointer
    var calls = 0
    init(_ txn: OpaquePointer) { self.txn = txn }

    func open(_ table: UInt32, _ handle: Int64) -> cs_obj {
        var o = cs_obj()
        precondition(cs_obj_open(txn, table, handle, &o) == Int32(CS_OK))
        return o
    }

    func coll(_ table: UInt32, _ handle: Int64, _ col: UInt32) -> cs_coll {
        var o = open(table, handle)
        var c = cs_coll()
        precondition(cs_coll_open(&o, col, &c) == Int32(CS_OK))
        return c
    }

    var source: cs_query_source {
        cs_query_source(
            ctx: Unmanaged.passUnretained(self).toOpaque(),
            get: { ctx, table, handle, col, out in
                let me = Unmanaged<MirrorSource>.fromOpaque(ctx!).takeUnretainedValue()
                me.calls += 1
                var o = me.open(table, handle)
                return cs_obj_get(&o, col, out)
            },
            coll_size: { ctx, table, handle, col, out in
                let me = Unmanaged<MirrorSource>.fromOpaque(ctx!).takeUnretainedValue()
                me.calls += 1
                var c = me.coll(table, handle, col)
                return cs_coll_size(&c, out)
            },
            coll_get: { ctx, table, handle, col, i, key, out in
                let me = Unmanaged<MirrorSource>.fromOpaque(ctx!).takeUnretainedValue()
                me.calls += 1
                var c = me.coll(table, handle, col)
                if Int(c.kind) == Int(CS_COLL_MAP.rawValue) { return cs_map_get_at(&c, i, key, out) }
                return cs_list_get(&c, i, out)
            })
    }
}

@Suite("cs_query_match_source")
struct QueryMatchSourceTests {
    static let predicates: [(String, [QArg])] = [
        ("TRUEPREDICATE", []), ("FALSEPREDICATE", []), ("age == 5", []), ("age > %@", [.v(.int(1))]),
        ("age BETWEEN {0, 5}", []), ("age IN {1, 42}", []), ("nage == nil", []), ("nage > age", []),
        ("dbl < 0", []), ("dbl > 1e299", []), ("flt >= 2.5", []), ("NOT (flag == true)", []), ("flag == true AND age < 5", []),
        ("name == 'Rex'", []), ("name ==[c] 'REX'", []), ("name BEGINSWITH 'R'", []), ("name CONTAINS[c] 'E'", []),
        ("name LIKE '?e*'", []), ("name ENDSWITH[cd] 'X'", []), ("name > 'B'", []), ("nname == nil", []),
        ("nname == name", []), ("nname IN {'x', 'Rex'}", []),
        ("born > T100:0", []), ("born BETWEEN {T50:0, T100:0}", []), 
        ("owner == nil", []), ("owner.name == 'Ann'", []), ("owner.age > 20", []), ("owner.city.name == 'Rome'", []),
        ("owner.city == nil", []), ("ANY friends.age > 60", []), ("ALL friends.age > 20", []),
        ("NONE friends.name == 'Bob'", []), ("friends.@count == 2", []), ("friends.@max.age > 60", []),
        ("friends.@avg.age < 40", []), ("ANY friends.city.pop > 1000", []),
        ("scores.@count == 0", []), ("ANY scores > 4", []), ("ALL scores == 5", []), ("scores.@sum > 5", []),
        ("scores.@min < 0", []), ("scores.@avg > 2", []), ("%@ IN scores", [.v(.int(10))]),
        ("tags['a'] > 1", []), ("tags['b'] == nil", []), ("tags.@count == 1", []), ("ANY tags.@allKeys == 'z'", []),
        ("ANY tags > 4", []), ("tags.@sum == 3", []), ("ANY labels == 'x'", []),
        ("SUBQUERY(friends, $f, $f.age > 20 AND $f.city != nil).@count > 0", []),
        ("%K == %@", [.v(.string(Array("name".utf8))), .v(.string(Array("Bo".utf8)))]),
        ("age > 0 && (name == 'Rex' || owner.age == 17)", []),
    ]

    @Test func aMirrorSourceMatchesExactlyWhatTheQueryFinds() throws {
        try withDogs { f in
            let mirror = MirrorSource(f.txn)
            var source = mirror.source
            for (text, args) in Self.predicates {
                let (rc, msg, q) = makeQuery(f.txn, f.dog, text, args)
                #expect(rc == Int32(CS_OK), "\(text): \(msg)")
                guard let q else { continue }
                defer { cs_query_free(q) }
                let expected = Set(try keysOf(q, text))
                var got: Set<Int64> = []
                for key in f.d {
                    var r = false
                    try must(cs_query_match_source(q, &source, key, &r), "cs_query_match_source(\(text))")
                    if r { got.insert(key) }
                }
                #expect(got == expected, "\(text): source \(got.sorted()) query \(expected.sorted())")
            }
            #expect(mirror.calls > 0)
        }
    }

    @Test func valuesComeFromTheSourceNotTheFile() throws {
        // A source that reports every Int as 1000: "age > 100" then holds for every dog.
        try withDogs { f in
            var source = cs_query_source(
                ctx: nil,
                get: { _, _, _, _, out in out!.pointee = cs_int(1000); return 0 },
                coll_size: { _, _, _, _, out in out!.pointee = 0; return 0 },
                coll_get: { _, _, _, _, _, _, _ in Int32(CS_NOTFOUND) })
            let (_, _, q) = makeQuery(f.txn, f.dog, "age > 100")
            defer { cs_query_free(q) }
            for key in f.d {
                var r = false
                try must(cs_query_match_source(q, &source, key, &r), "match")
                #expect(r)
            }
            let (_, _, counted) = makeQuery(f.txn, f.dog, "scores.@count == 0 AND ALL scores > 5")
            defer { cs_query_free(counted) }
            var r = false
            try must(cs_query_match_source(counted, &source, 12345, &r), "match")
            #expect(r)
        }
    }

    /// cs_query_new_values + cs_query_match_value against a query over each dog's scores and
    /// labels (a collection of values of the same element type).
    @Test func valuesMatchAsTheCollectionQueryMatchesThem() throws {
        let cases: [(String, cs_type, String)] = [
            ("scores", CS_TYPE_INT, "self > 2"), ("scores", CS_TYPE_INT, "self BETWEEN {0, 5}"),
            ("scores", CS_TYPE_INT, "self IN {1, 100}"), ("scores", CS_TYPE_INT, "NOT (self == 5) AND self < 50"),
            ("scores", CS_TYPE_INT, "self == 2.0"), ("labels", CS_TYPE_STRING, "self ==[c] 'X'"),
            ("labels", CS_TYPE_STRING, "self BEGINSWITH 'x' OR self == nil"),
        ]
        try withDogs { f in
            for (column, type, text) in cases {
                let bytes = Array(text.utf8)
                var values: OpaquePointer?
                try must(cs_query_new_values(f.txn, type, text, bytes.count, nil, 0, nil, &values), "values \(text)")
                defer { cs_query_free(values) }
                for key in f.d {
                    var o = cs_obj()
                    try must(cs_obj_open(f.txn, f.dog, key, &o), "open")
                    var c = cs_coll()
                    try must(cs_coll_open(&o, f.cols[column]!, &c), "coll")
                    var q: OpaquePointer?
                    try must(cs_query_new_coll(&c, text, bytes.count, nil, 0, &q), "coll \(text)")
                    defer { cs_query_free(q) }
                    let expected = Set(try keysOf(q!, text))
                    var n = 0
                    try must(cs_coll_size(&c, &n), "size")
                    var got: Set<Int64> = []
                    for i in 0..<n {
                        var v = cs_value()
                        try must(cs_list_get(&c, i, &v), "get")
                        var r = false
                        try must(cs_query_match_value(values, &v, &r), "match \(text)")
                        if r { got.insert(Int64(i)) }
                    }
                    #expect(got == expected, "\(column) \(text): \(got.sorted()) vs \(expected.sorted())")
                }
            }
            var q: OpaquePointer?
            try must(cs_query_new(f.txn, f.dog, "age > 1", 7, nil, 0, &q), "table query")
            defer { cs_query_free(q) }
            var v = cs_int(1)
            var r = true
            #expect(cs_query_match_value(q, &v, &r) == Int32(CS_MISUSE))
            #expect(!r)
        }
    }

    @Test func aSourceErrorIsReturnedAndMisuseIsRefused() throws {
        try withDogs { f in
            var failing = cs_query_source(
                ctx: nil,
                get: { _, _, _, _, _ in Int32(CS_IOERR) },
                coll_size: { _, _, _, _, _ in Int32(CS_IOERR) },
                coll_get: { _, _, _, _, _, _, _ in Int32(CS_IOERR) })
            let (_, _, q) = makeQuery(f.txn, f.dog, "age > 1")
            defer { cs_query_free(q) }
            var r = true
            #expect(cs_query_match_source(q, &failing, f.d[0], &r) == Int32(CS_IOERR))
            #expect(cs_query_match_source(q, nil, f.d[0], &r) == Int32(CS_MISUSE))
            #expect(!r)
        }
    }
}
