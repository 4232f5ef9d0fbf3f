// Replays the query-language fuzz corpus (Tests/Fixtures/query-corpus, from `make fuzz`'s
// query_parse target, plus its seeds in Fuzz/query-seeds) against the schema that target
// uses: every input must parse, bind and run to CS_OK or a CS_QUERY error, never crash.

import CStore
import Foundation
import Testing

private let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

private func corpusFiles() -> [URL] {
    var out: [URL] = []
    for dir in ["Tests/Fixtures/query-corpus", "Fuzz/query-seeds"] {
        let url = repoRoot.appendingPathComponent(dir)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        out += names.sorted().map { url.appendingPathComponent($0) }
    }
    return out
}

@Suite struct QueryCorpusTests {
    @Test func corpusRunsToAResultOrAQueryError() throws {
        let files = corpusFiles()
        #expect(files.count > 10, "the corpus and the seeds are found (\(files.count) files)")
        try withTempDir { dir in
            let db = try DB(dir.path())
            var dog: UInt32 = 0, age: UInt32 = 0
            try db.write { txn throws in
                let person = try addTable(txn, "Person")
                let pname = try addColumn(txn, person, "name", CS_TYPE_STRING)
                dog = try addTable(txn, "Dog")
                let name = try addColumn(txn, dog, "name", CS_TYPE_STRING, flags: CS_COL_INDEXED)
                age = try addColumn(txn, dog, "age", CS_TYPE_INT)
                _ = try addColumn(txn, dog, "weight", CS_TYPE_DOUBLE, flags: CS_COL_NULLABLE)
                _ = try addColumn(txn, dog, "born", CS_TYPE_TIMESTAMP)
                let tags = try addColumn(txn, dog, "tags", CS_TYPE_STRING, coll: CS_COLL_LIST)
                _ = try addColumn(txn, dog, "scores", CS_TYPE_INT, coll: CS_COLL_MAP, flags: CS_COL_NULLABLE)
                let owner = try addColumn(txn, dog, "owner", CS_TYPE_LINK, target: person)
                let extra = try addColumn(txn, dog, "extra", CS_TYPE_MIXED)
                let dogs = try addColumn(txn, person, "dogs", CS_TYPE_LINK, coll: CS_COLL_LIST, target: dog)
                var p = try createObj(txn, person)
                check(setVal(&p, pname, .string(Array("Ann".utf8))))
                var pl = try openColl(&p, dogs)
                for i in 0..<20 {
                    var d = try createObj(txn, dog)
                    check(setVal(&d, name, .string(Array("dog\(i)".utf8))))
                    check(cs_obj_set_int(&d, age, Int64(i % 7)))
                    if i % 2 == 1 { check(setVal(&d, owner, .link(person, p.key))) }
                    var l = try openColl(&d, tags)
                    for _ in 0..<(i % 3) { check(listAppend(&l, .string(Array("t".utf8)))) }
                    check(setVal(&d, extra, i % 3 == 0 ? .string(Array("x".utf8)) : .int(Int64(i))))
                    check(listAppend(&pl, .link(dog, d.key)))
                }
            }
            let txn = try db.begin(CS_TXN_READ)
            defer { check(cs_txn_end(txn)) }
            var ran = 0, refused = 0
            for file in files {
                let bytes = [UInt8](try Data(contentsOf: file))
                var items = [cs_value(), cs_value()]
                items[0].type = CS_TYPE_INT
                items[0].v.i = 3
                let itemName = Array("dog1".utf8)
                let argName = Array("dog3".utf8)
                try itemName.withUnsafeBufferPointer { ib in
                    try argName.withUnsafeBufferPointer { ab in
                        items[1].type = CS_TYPE_STRING
                        items[1].v.bytes.ptr = UnsafeRawPointer(ib.baseAddress)
                        items[1].v.bytes.len = ib.count
                        try items.withUnsafeBufferPointer { list in
                            var args = [cs_value(), cs_value(), cs_value(), cs_value()]
                            args[0].type = CS_TYPE_INT
                            args[0].v.i = 5
                            args[1].type = CS_TYPE_STRING
                            args[1].v.bytes.ptr = UnsafeRawPointer(ab.baseAddress)
                            args[1].v.bytes.len = ab.count
                            args[2].type = CS_TYPE_DOUBLE
                            args[2].v.d = 2.5
                            args[3].type = CS_TYPE_LIST
                            args[3].v.list.items = list.baseAddress
                            args[3].v.list.count = 2
                            var q: OpaquePointer?
                            let rc = bytes.withUnsafeBufferPointer { b in
                                b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(b.count, 1)) {
                                    cs_query_new(txn, dog, $0, b.count, args, 4, &q)
                                }
                            }
                            if rc == Int32(CS_QUERY) {
                                refused += 1
                                #expect(String(cString: cs_errmsg()).contains(" at "), "\(file.lastPathComponent): the message has a position")
                                return
                            }
                            try must(rc, "cs_query_new(\(file.lastPathComponent))")
                            defer { cs_query_free(q) }
                            var n: UInt64 = 0
                            let crc = cs_query_count(q, &n)
                            #expect(crc == Int32(CS_OK) || crc == Int32(CS_OVERFLOW), "\(file.lastPathComponent): count gave \(codeName(crc)) \(lastMessage())")
                            var sum = cs_value()
                            let arc = cs_query_aggregate(q, age, CS_AGG_SUM, &sum)
                            #expect(arc == Int32(CS_OK) || arc == Int32(CS_OVERFLOW), "\(file.lastPathComponent): sum gave \(codeName(arc)) \(lastMessage())")
                            ran += 1
                        }
                    }
                }
            }
            #expect(ran > 0 && ran + refused == files.count)
        }
    }
}
