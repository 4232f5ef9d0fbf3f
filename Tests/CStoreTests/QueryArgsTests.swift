// cs_query_set_args: a prepared query rebound with new argument values, without parsing again.

import CStore
import Foundation
import Testing

@Suite struct QueryArgsTests {
    @Test func reboundArgumentsGiveFreshAnswers() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var t: UInt32 = 0, age: UInt32 = 0, name: UInt32 = 0
            try db.write { txn throws in
                t = try addTable(txn, "Dog")
                age = try addColumn(txn, t, "age", CS_TYPE_INT)
                name = try addColumn(txn, t, "name", CS_TYPE_STRING, flags: CS_COL_INDEXED)
                for i in 0..<10 {
                    var o = try createObj(txn, t)
                    check(cs_obj_set_int(&o, age, Int64(i)))
                    check(setVal(&o, name, .string(Array("d\(i % 3)".utf8))))
                }
            }
            let txn = try db.begin(CS_TXN_READ)
            defer { check(cs_txn_end(txn)) }
            // String arguments point at memory that must outlive the call: C strings of our own.
            let d1 = strdup("d1")!, d0c = strdup("d0")!, x = strdup("x")!
            defer { free(d1); free(d0c); free(x) }
            var q: OpaquePointer?
            let text = "age > $0 AND name == $1"
            let first = [cs_int(2), cs_string(d1, 2)]
            try must(first.withUnsafeBufferPointer { cs_query_new(txn, t, text, text.utf8.count, $0.baseAddress, 2, &q) }, "cs_query_new")
            defer { cs_query_free(q) }
            func count() throws -> UInt64 {
                var n: UInt64 = 0
                try must(cs_query_count(q, &n), "cs_query_count")
                return n
            }
            #expect(try count() == 2, "ages 4 and 7 are named d1")
            let d0 = Array("d0".utf8)
            try d0.withUnsafeBufferPointer { b in
                var args = [cs_int(-1), cs_value()]
                args[1].type = CS_TYPE_STRING
                args[1].v.bytes.ptr = UnsafeRawPointer(b.baseAddress)
                args[1].v.bytes.len = b.count
                try must(cs_query_set_args(q, args, 2), "cs_query_set_args")
            }
            #expect(try count() == 4, "ages 0, 3, 6 and 9 are named d0")
            // A double where an int was: still a number, checked again.
            let asDouble = [cs_double(5.5), cs_string(d0c, 2)]
            try must(asDouble.withUnsafeBufferPointer { cs_query_set_args(q, $0.baseAddress, 2) }, "set double")
            #expect(try count() == 2, "ages 6 and 9")
            // A string where a number is compared: the type check runs again and refuses it.
            let wrong = [cs_string(x, 1), cs_string(d0c, 2)]
            expectCode(wrong.withUnsafeBufferPointer { cs_query_set_args(q, $0.baseAddress, 2) }, CS_QUERY, "a string for age")
            // Too few arguments.
            let one = [cs_int(1)]
            expectCode(one.withUnsafeBufferPointer { cs_query_set_args(q, $0.baseAddress, 1) }, CS_QUERY, "one argument for two placeholders")
        }
    }
}
