// `swiftstore mirror` against a real PostgreSQL server (docs/ARCHITECTURE.md, The PostgreSQL
// mirror). The server comes from .ci/with-postgres (`make test` runs the suite under it), which
// sets STORE_PG_URL; without it these tests are skipped. A checker reads every mirrored row
// back through psql and compares it with the source file, after random workloads, after the
// mirror process is killed at random points, and after the source is compacted.

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let pgURL = ProcessInfo.processInfo.environment["STORE_PG_URL"]
private let mirrorFull = ProcessInfo.processInfo.environment["STORE_FULL_CAMPAIGN"] != nil

private func psqlPath() -> String {
    if let bin = ProcessInfo.processInfo.environment["STORE_PG_BIN"], FileManager.default.isExecutableFile(atPath: bin + "/psql") {
        return bin + "/psql"
    }
    return "/usr/bin/psql"
}

/// A fresh PostgreSQL database for one test; returns its URL.
private func freshDatabase(_ name: String) throws -> String {
    let url = pgURL!
    _ = try psql(url, "DROP DATABASE IF EXISTS \(name)")
    _ = try psql(url, "CREATE DATABASE \(name)")
    return url.replacingOccurrences(of: "@/postgres?", with: "@/\(name)?")
}

/// Runs SQL through psql (unaligned, tab-separated, no headers); the output lines.
private func psql(_ url: String, _ sql: String) throws -> [String] {
    let dir = FileManager.default.temporaryDirectory
    let r = try runProcess(psqlPath(), ["-X", "-q", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", url, "-c", sql], outputIn: dir)
    if r.status != 0 { throw CStoreError(code: -1, message: "psql: \(r.stderr)", context: sql) }
    return r.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { !$0.isEmpty }
}

private func tool(_ args: [String], in dir: TempDir, timeout: Double = 120) throws -> ProcessOutput {
    guard let path = swiftstoreToolPath else { throw CStoreError(code: -1, message: "the swiftstore tool is not built (make tool)", context: "swiftstore") }
    return try runProcess(path, args, outputIn: dir.url, timeout: timeout)
}

/// `swiftstore mirror FILE URL --follow` started in the background.
private func startFollower(_ path: String, _ url: String, stderr: FileHandle) throws -> Process {
    guard let toolPath = swiftstoreToolPath else { throw CStoreError(code: -1, message: "the swiftstore tool is not built", context: "") }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: toolPath)
    p.arguments = ["mirror", path, url, "--follow"]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = stderr
    try p.run()
    return p
}

/// The workload's schema: Item (primary key id) and Plain (no primary key).
private struct Schema {
    var item: UInt32 = 0, id: UInt32 = 0, n: UInt32 = 0, s: UInt32 = 0, d: UInt32 = 0, b: UInt32 = 0, tags: UInt32 = 0
    var plain: UInt32 = 0, v: UInt32 = 0

    static func create(_ db: DB) throws -> Schema {
        var c = Schema()
        try db.write { txn throws in
            c.item = try addTable(txn, "Item")
            c.id = try addColumn(txn, c.item, "id", CS_TYPE_STRING)
            try must(cs_table_set_primary_key(txn, c.item, c.id), "pk")
            c.n = try addColumn(txn, c.item, "n", CS_TYPE_INT)
            c.s = try addColumn(txn, c.item, "s", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
            c.d = try addColumn(txn, c.item, "d", CS_TYPE_DOUBLE)
            c.b = try addColumn(txn, c.item, "b", CS_TYPE_BOOL)
            c.tags = try addColumn(txn, c.item, "tags", CS_TYPE_INT, coll: CS_COLL_LIST)
            c.plain = try addTable(txn, "Plain")
            c.v = try addColumn(txn, c.plain, "v", CS_TYPE_INT)
        }
        return c
    }
}

/// `commits` random commits: creates, updates, deletes and list operations.
private func workload(_ db: DB, _ c: Schema, _ rng: inout SeededRNG, commits: Int, serial: inout Int) throws {
    for _ in 0..<commits {
        try db.write { txn throws in
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                serial += 1
                let items = try allKeys(txn, c.item)
                var op = Int.random(in: 0..<10, using: &rng)
                if items.isEmpty && op >= 3 && op <= 7 { op = 0 }
                switch op {
                case 0, 1, 2:
                    var o = cs_obj()
                    try withValue(.str("id-\(serial)")) { try must(cs_obj_create_primary(txn, c.item, $0, &o), "create") }
                    check(cs_obj_set_int(&o, c.n, Int64(serial)))
                    check(setVal(&o, c.d, .double(Double(serial) / 7)))
                    if serial % 3 == 0 { check(setVal(&o, c.s, .str("tab\there \\ \"q\" line\nnext é"))) }
                case 3:
                    var o = try openObj(txn, c.item, items.randomElement(using: &rng)!)
                    check(cs_obj_delete(&o))
                case 4, 5:
                    var o = try openObj(txn, c.item, items.randomElement(using: &rng)!)
                    check(cs_obj_set_int(&o, c.n, Int64(serial)))
                    check(setVal(&o, c.b, .bool(serial % 2 == 0)))
                    check(setVal(&o, c.s, serial % 5 == 0 ? .null : .str("s\(serial)")))
                case 6, 7:
                    var o = try openObj(txn, c.item, items.randomElement(using: &rng)!)
                    var l = try openColl(&o, c.tags)
                    let n = try collSize(&l)
                    if n > 0 && serial % 3 == 0 { check(cs_list_erase(&l, Int.random(in: 0..<n, using: &rng))) }
                    else { check(listInsert(&l, Int.random(in: 0...n, using: &rng), .int(Int64(serial)))) }
                case 8:
                    var o = try createObj(txn, c.plain)
                    check(cs_obj_set_int(&o, c.v, Int64(serial)))
                default:
                    let plains = try allKeys(txn, c.plain)
                    if let k = plains.randomElement(using: &rng) {
                        var o = try openObj(txn, c.plain, k)
                        if serial % 2 == 0 { check(cs_obj_delete(&o)) } else { check(cs_obj_set_int(&o, c.v, Int64(serial))) }
                    }
                }
            }
        }
    }
}

/// A test's set-up: a temporary directory, a fresh PostgreSQL database and a source file
/// (`file` in the directory) with the workload's schema.
private func withSource(_ database: String, file: String = "src.cstore", _ body: (TempDir, String, String, DB, Schema) throws -> Void) throws {
    try withTempDir { dir in
        let url = try freshDatabase(database)
        let path = dir.path(file)
        let db = try DB(path)
        try body(dir, url, path, db, try Schema.create(db))
    }
}

/// The checker: every row of both tables, read back from PostgreSQL, equals the source.
private func expectMirrorEqual(_ db: DB, _ c: Schema, _ url: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    var want: [String] = []
    var wantPlain: [String] = []
    let version = try db.read { txn throws -> UInt64 in
        for k in try allKeys(txn, c.item) {
            var o = try openObj(txn, c.item, k)
            var l = try openColl(&o, c.tags)
            let tags = try listAll(&l).map { v -> String in if case .int(let i) = v { return String(i) }; return "?" }
            let s: String
            switch getVal(&o, c.s) {
            case .string(let b)?: s = String(decoding: b, as: UTF8.self).replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\t", with: "\\t").replacingOccurrences(of: "\n", with: "\\n")
            default: s = "<null>"
            }
            var d = 0.0
            if case .double(let x)? = getVal(&o, c.d) { d = x }
            var b = false
            if case .bool(let x)? = getVal(&o, c.b) { b = x }
            var id = ""
            if case .string(let x)? = getVal(&o, c.id) { id = String(decoding: x, as: UTF8.self) }
            let dbits = String(format: "%016llx", d.bitPattern) // the exact double, as float8send writes it
            want.append([String(k), id, String(try getInt(&o, c.n)), s, dbits, b ? "t" : "f", "[" + tags.joined(separator: ", ") + "]"].joined(separator: "\t"))
        }
        for k in try allKeys(txn, c.plain) {
            var o = try openObj(txn, c.plain, k)
            wantPlain.append("\(k)\t\(try getInt(&o, c.v))")
        }
        return cs_txn_version(txn)
    }
    let got = try psql(url, """
        SELECT _key, id, n, coalesce(replace(replace(replace(s, E'\\\\', E'\\\\\\\\'), E'\\t', E'\\\\t'), E'\\n', E'\\\\n'), '<null>'),
               encode(float8send(d), 'hex'), b, tags::text FROM "Item" ORDER BY _key
        """)
    let gotPlain = try psql(url, "SELECT _key, v FROM \"Plain\" ORDER BY _key")
    #expect(got.count == want.count, "Item rows: mirror \(got.count), source \(want.count)", sourceLocation: sourceLocation)
    for (g, w) in zip(got, want) where g != w {
        #expect(g == w, "first differing Item row (source version \(version))", sourceLocation: sourceLocation)
        break
    }
    #expect(gotPlain == wantPlain, "Plain rows differ", sourceLocation: sourceLocation)
}

@Suite(.enabled(if: pgURL != nil, "needs a PostgreSQL server: run under .ci/with-postgres (make test does)"))
struct MirrorTests {
    @Test func mirrorEqualsSourceAfterRandomWorkloadsAndCompaction() throws {
        try withTempDir { dir in
            let url = try freshDatabase("mirror_random")
            let path = dir.path("src.cstore")
            var db: DB? = try DB(path)
            let c = try Schema.create(db!)
            var rng = SeededRNG(seed: 20)
            var serial = 0
            try workload(db!, c, &rng, commits: 40, serial: &serial)
            var r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            try expectMirrorEqual(db!, c, url)
            for round in 0..<3 {
                try workload(db!, c, &rng, commits: 30, serial: &serial)
                r = try tool(["mirror", path, url], in: dir)
                #expect(r.status == 0, "round \(round): \(r.stderr)")
                try expectMirrorEqual(db!, c, url)
            }
            // the source is compacted: the slot and its history survive, the mirror goes on
            try workload(db!, c, &rng, commits: 20, serial: &serial)
            db!.close()
            var opts = cs_options()
            var info = cs_compact_info()
            try must(cs_db_compact(path, &opts, nil, nil, &info), "cs_db_compact")
            db = try DB(path, flags: 0)
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "after compaction: \(r.stderr)")
            try expectMirrorEqual(db!, c, url)
            try workload(db!, c, &rng, commits: 20, serial: &serial)
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            try expectMirrorEqual(db!, c, url)
            let applied = try psql(url, "SELECT version FROM swiftstore_mirror")
            #expect(applied.first.flatMap { UInt64($0) } ?? 0 <= (try db!.read { cs_txn_version($0) }))
        }
    }

    @Test func aKilledMirrorResumesExactlyWhereItStopped() throws {
        try withSource("mirror_kills") { dir, url, path, db, c in
            var rng = SeededRNG(seed: 21)
            var serial = 0
            try workload(db, c, &rng, commits: 10, serial: &serial)
            let kills = mirrorFull ? 100 : 10
            var killed = 0
            for _ in 0..<kills {
                let p = try startFollower(path, url, stderr: FileHandle.nullDevice)
                // commits while it runs, then a kill at a random moment
                try workload(db, c, &rng, commits: Int.random(in: 2...8, using: &rng), serial: &serial)
                usleep(UInt32.random(in: 0...60_000, using: &rng))
                if p.isRunning {
                    kill(p.processIdentifier, SIGKILL)
                    killed += 1
                }
                p.waitUntilExit()
            }
            #expect(killed > kills / 2, "only \(killed) of \(kills) runs were still running when killed")
            let r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            try expectMirrorEqual(db, c, url)
        }
    }

    /// A following mirror whose PostgreSQL connection is cut (its backend terminated) connects
    /// again and goes on after the version it recorded, missing and repeating nothing.
    @Test func aFollowingMirrorReconnectsWhenItsConnectionDrops() throws {
        try withSource("mirror_reconnect") { dir, url, path, db, c in
            var rng = SeededRNG(seed: 33)
            var serial = 0
            try workload(db, c, &rng, commits: 5, serial: &serial)
            let errPath = dir.path("follower.err")
            _ = FileManager.default.createFile(atPath: errPath, contents: nil)
            // The follower names its connection, so that only its backend is cut: a psql this
            // test ran a moment ago may still be listed while its backend exits.
            let p = try startFollower(path, url + "&application_name=mirror_follower",
                                      stderr: try FileHandle(forWritingTo: URL(fileURLWithPath: errPath)))
            defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) }; p.waitUntilExit() }
            /// Waits until the mirror recorded the version of the workload's last commit or a later
            /// one (the follower's own commits to its slot come after it).
            func caughtUp() throws -> Bool {
                let want = try db.read { cs_txn_version($0) }
                for _ in 0..<600 {
                    // (the table does not exist until the initial copy commits)
                    if let v = (try? psql(url, "SELECT version FROM swiftstore_mirror WHERE id = 1"))?.first.flatMap({ UInt64($0) }),
                       v >= want { return true }
                    if !p.isRunning { return false }
                    usleep(100_000)
                }
                return false
            }
            #expect(try caughtUp())
            for round in 0..<3 {
                let cut = try psql(url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'mirror_follower'")
                #expect(cut == ["1"], "round \(round): backends terminated \(cut)")
                try workload(db, c, &rng, commits: 4, serial: &serial)
                #expect(try caughtUp(), "round \(round): the follower did not catch up (running: \(p.isRunning)); stderr: \(String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))")
                try expectMirrorEqual(db, c, url)
            }
            #expect(p.isRunning)
            let err = String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self)
            #expect(err.components(separatedBy: "reconnected").count - 1 == 3, "\(err)")
        }
    }

    /// `make test-full` only: 1M objects of 10 properties mirrored, compared row for row.
    @Test(.enabled(if: mirrorFull, "1M objects: make test-full")) func aMillionObjectsMirrorRowForRow() throws {
        try withTempDir { dir in
            let url = try freshDatabase("mirror_million")
            let path = dir.path("million.cstore")
            let db = try DB(path)
            let n = 1_000_000
            try db.write { txn throws in
                let t = try addTable(txn, "Row")
                let cols = try (0..<10).map { try addColumn(txn, t, "c\($0)", CS_TYPE_INT) }
                for i in 0..<n {
                    var o = try createObj(txn, t)
                    for (j, c) in cols.enumerated() { check(cs_obj_set_int(&o, c, Int64(i * 10 + j))) }
                }
            }
            let r = try tool(["mirror", path, url], in: dir, timeout: 900)
            #expect(r.status == 0, "\(r.stderr)")
            var want: [String] = []
            want.reserveCapacity(n)
            try db.read { txn throws in
                let t = try findTable(txn, "Row")
                for k in try allKeys(txn, t) {
                    var o = try openObj(txn, t, k)
                    want.append(([String(k)] + (0..<10).map { String(try! getInt(&o, UInt32($0))) }).joined(separator: "\t"))
                }
            }
            let got = try psql(url, "SELECT _key, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9 FROM \"Row\" ORDER BY _key")
            #expect(got.count == n)
            #expect(got == want, "the mirrored rows differ from the source")
        }
    }

    @Test func typesAreMappedExactly() throws {
        try withTempDir { dir in
            let url = try freshDatabase("mirror_types")
            let path = dir.path("types.cstore")
            let db = try DB(path)
            try db.write { txn throws in
                let owner = try addTable(txn, "Owner")
                let oid = try addColumn(txn, owner, "oid", CS_TYPE_INT)
                try must(cs_table_set_primary_key(txn, owner, oid), "pk")
                let addr = try addTable(txn, "Addr", flags: CS_TABLE_EMBEDDED)
                let street = try addColumn(txn, addr, "street", CS_TYPE_STRING)
                let t = try addTable(txn, "T")
                let f = try addColumn(txn, t, "f", CS_TYPE_FLOAT)
                let d = try addColumn(txn, t, "d", CS_TYPE_DOUBLE)
                let bin = try addColumn(txn, t, "bin", CS_TYPE_BINARY)
                let ts = try addColumn(txn, t, "ts", CS_TYPE_TIMESTAMP)
                let ob = try addColumn(txn, t, "ob", CS_TYPE_OBJECTID)
                let u = try addColumn(txn, t, "u", CS_TYPE_UUID)
                let dec = try addColumn(txn, t, "dec", CS_TYPE_DECIMAL)
                let link = try addColumn(txn, t, "owner", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: owner)
                let home = try addColumn(txn, t, "home", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: addr)
                let m = try addColumn(txn, t, "m", CS_TYPE_STRING, coll: CS_COLL_MAP)
                let any = try addColumn(txn, t, "any", CS_TYPE_MIXED, flags: CS_COL_NULLABLE)
                var ow = cs_obj()
                try withValue(.int(42)) { try must(cs_obj_create_primary(txn, owner, $0, &ow), "owner") }
                var o = try createObj(txn, t)
                check(setVal(&o, f, .float(0.1)))
                check(setVal(&o, d, .double(-1.0e-300)))
                check(setVal(&o, bin, .binary([0, 1, 0xfe, 0xff])))
                check(setVal(&o, ts, .timestamp(1_700_000_000, 123_456_000)))
                check(setVal(&o, ob, .objectId(Array(0..<12))))
                check(setVal(&o, u, .uuid(Array(0..<16))))
                var price = cs_decimal128()
                let text = "-1234567890.0123456789"
                try must(cs_decimal_parse(text, text.utf8.count, &price), "decimal")
                check(setVal(&o, dec, .decimal(price.w.0, price.w.1)))
                check(setVal(&o, link, .link(owner, ow.key)))
                var a = cs_obj()
                try must(cs_obj_create_embedded(&o, home, &a), "embedded")
                check(setVal(&a, street, .str("Main")))
                var mc = try openColl(&o, m)
                try withValue(.str("v")) { v in try must(cs_map_set(&mc, "k", 1, v), "map") }
                // a Mixed value holding [1, "a", {"k": [2]}]
                try must(cs_obj_set_collection(&o, any, CS_TYPE_LIST), "mixed list")
                var l = try openColl(&o, any)
                check(listAppend(&l, .int(1)))
                check(listAppend(&l, .str("a")))
                check(listAppend(&l, .null))
                try must(cs_list_set_collection(&l, 2, CS_TYPE_DICT), "nested dict")
                var d2 = cs_coll()
                try must(cs_coll_open_nested(&l, 2, nil, 0, &d2), "open nested")
                try must(cs_map_set_collection(&d2, "k", 1, CS_TYPE_LIST), "nested list")
                var l3 = cs_coll()
                try must(cs_coll_open_nested(&d2, -1, "k", 1, &l3), "open nested list")
                check(listAppend(&l3, .int(2)))
            }
            let r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let row = try psql(url, """
                SELECT f = real '0.1', d = double precision '-1e-300', encode(bin, 'hex'), extract(epoch from ts)::text,
                       ob, u::text, dec::text, owner, home->>'street', m->>'k',
                       format_type(a.atttypid, a.atttypmod), "any"::text FROM "T", pg_attribute a
                WHERE a.attrelid = '"T"'::regclass AND a.attname = 'dec'
                """)
            #expect(row == ["t\tt\t0001feff\t1700000000.123456\t000102030405060708090a0b\t00010203-0405-0607-0809-0a0b0c0d0e0f\t-1234567890.0123456789\t42\tMain\tv\tnumeric\t[1, \"a\", {\"k\": [2]}]"], "\(row)")
        }
    }

    /// Text that COPY's format escapes, NULLs, dates before 1970 and before year 1, and the
    /// special floats, written once by the initial copy and once by an applied insert: both
    /// rows must read back the same.
    @Test func escapedTextNullsAndOldDatesCopyExactly() throws {
        try withTempDir { dir in
            let url = try freshDatabase("mirror_escapes")
            let path = dir.path("escapes.cstore")
            let db = try DB(path)
            var cols: [UInt32] = []
            let table = try db.write { txn throws -> UInt32 in
                let t = try addTable(txn, "E")
                cols = [try addColumn(txn, t, "s", CS_TYPE_STRING, flags: CS_COL_NULLABLE),
                        try addColumn(txn, t, "bin", CS_TYPE_BINARY),
                        try addColumn(txn, t, "ts", CS_TYPE_TIMESTAMP),
                        try addColumn(txn, t, "old", CS_TYPE_TIMESTAMP),
                        try addColumn(txn, t, "b", CS_TYPE_BOOL),
                        try addColumn(txn, t, "d", CS_TYPE_DOUBLE),
                        try addColumn(txn, t, "n", CS_TYPE_INT, flags: CS_COL_NULLABLE)]
                return t
            }
            let values: [Val] = [.str("tab\there\nnew\\line\rend é"), .binary([0x5c, 0x09, 0x0a, 0]),
                                 .timestamp(-1, -500_000_000), .timestamp(-62_135_596_801, 0),
                                 .bool(true), .double(-.infinity), .int(Int64.min)]
            let add = { (vals: [Val]) in
                try db.write { txn throws in
                    var o = try createObj(txn, table)
                    for (c, v) in zip(cols, vals) { check(setVal(&o, c, v)) }
                }
            }
            try add(values)
            try add([.null, .binary([]), .timestamp(0, 0), .timestamp(0, 0), .bool(false), .double(.nan), .null])
            var r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            try add(values) // applied by the second run as an INSERT with parameters
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let rows = try psql(url, """
                SELECT s IS NULL, encode(convert_to(coalesce(s, ''), 'UTF8'), 'hex'), encode(bin, 'hex'),
                       to_char(ts, 'YYYY-MM-DD HH24:MI:SS.US'), to_char(old, 'YYYY-MM-DD HH24:MI:SS BC'),
                       b, d::text, coalesce(n::text, 'null') FROM "E" ORDER BY "_key"
                """)
            let text = Array("tab\there\nnew\\line\rend é".utf8).map { String(format: "%02x", $0) }.joined()
            let first = "f\t\(text)\t5c090a00\t1969-12-31 23:59:58.500000\t0001-12-31 23:59:59 BC\tt\t-Infinity\t\(Int64.min)"
            #expect(rows == [first, "t\t\t\t1970-01-01 00:00:00.000000\t1970-01-01 00:00:00 AD\tf\tNaN\tnull", first], "\(rows)")
        }
    }

    @Test func schemaChangesAreAppliedOrRefused() throws {
        try withSource("mirror_schema", file: "schema.cstore") { dir, url, path, db, c in
            var rng = SeededRNG(seed: 22)
            var serial = 0
            try workload(db, c, &rng, commits: 10, serial: &serial)
            var r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            // an added property and a new class are applied, with their values
            try db.write { txn throws in
                let extra = try addColumn(txn, c.plain, "extra", CS_TYPE_STRING, flags: CS_COL_NULLABLE)
                for k in try allKeys(txn, c.plain) {
                    var o = try openObj(txn, c.plain, k)
                    check(setVal(&o, extra, .str("x\(k)")))
                }
                let n = try addTable(txn, "Later")
                _ = try addColumn(txn, n, "w", CS_TYPE_INT)
                var o = try createObj(txn, n)
                check(cs_obj_set_int(&o, 0, 5))
            }
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let extras = try psql(url, "SELECT count(*) FILTER (WHERE extra = 'x' || _key), count(*) FROM \"Plain\"")
            let plainCount = try db.read { try allKeys($0, c.plain).count }
            #expect(extras == ["\(plainCount)\t\(plainCount)"])
            #expect(try psql(url, "SELECT w FROM \"Later\"") == ["5"])
            try expectMirrorEqual(db, c, url)
            // a removed property is refused with a message, and nothing of that commit is applied
            let before = try psql(url, "SELECT version FROM swiftstore_mirror")
            try db.write { txn throws in try must(cs_column_remove(txn, c.plain, try findColumn(txn, c.plain, "extra")), "remove") }
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 1 && r.stderr.contains("refused") && r.stderr.contains("Plain.extra"), "\(r.status) \(r.stderr)")
            #expect(try psql(url, "SELECT version FROM swiftstore_mirror") == before)
        }
    }

    /// A commit is one PostgreSQL transaction: when PostgreSQL rejects one of its statements
    /// (here a row inserted by hand holds the primary key the commit creates), none of the
    /// commit's other statements stays and the recorded version does not move; once the clash
    /// is gone the mirror applies the commit whole.
    @Test func aCommitPostgreSQLRejectsAppliesNothingOfIt() throws {
        try withSource("mirror_reject") { dir, url, path, db, c in
            var rng = SeededRNG(seed: 34)
            var serial = 0
            try workload(db, c, &rng, commits: 5, serial: &serial)
            let keptKey = try db.write { txn throws -> Int64 in
                var o = cs_obj()
                try withValue(.str("kept")) { try must(cs_obj_create_primary(txn, c.item, $0, &o), "create") }
                return o.key
            }
            var r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            let before = try psql(url, "SELECT version FROM swiftstore_mirror")
            _ = try psql(url, "INSERT INTO \"Item\" (_key, id, n) VALUES (987654321, 'clash', 1)")
            try db.write { txn throws in
                var kept = try openObj(txn, c.item, keptKey)
                check(cs_obj_set_int(&kept, c.n, 424_242))
                var o = cs_obj()
                try withValue(.str("clash")) { try must(cs_obj_create_primary(txn, c.item, $0, &o), "create") }
            }
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 2 && r.stderr.contains("duplicate key"), "\(r.status) \(r.stderr)")
            #expect(try psql(url, "SELECT version FROM swiftstore_mirror") == before)
            #expect(try psql(url, "SELECT n FROM \"Item\" WHERE id = 'kept'") != ["424242"])
            _ = try psql(url, "DELETE FROM \"Item\" WHERE _key = 987654321")
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try psql(url, "SELECT n FROM \"Item\" WHERE id = 'kept'") == ["424242"])
            try expectMirrorEqual(db, c, url)
        }
    }

    /// Each applied commit is announced with NOTIFY on the channel swiftstore_mirror, its
    /// version as the payload, so a consumer can wait for changes instead of polling.
    @Test func eachAppliedCommitIsAnnouncedOnTheMirrorChannel() throws {
        try withSource("mirror_notify") { dir, url, path, db, c in
            var r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            // a psql session listening on the channel
            let listener = Process()
            listener.executableURL = URL(fileURLWithPath: psqlPath())
            listener.arguments = ["-X", "-q", "-At", url]
            let input = Pipe(), output = Pipe()
            listener.standardInput = input
            listener.standardOutput = output
            listener.standardError = output
            try listener.run()
            defer { if listener.isRunning { listener.terminate() }; listener.waitUntilExit() }
            input.fileHandleForWriting.write(Data("LISTEN swiftstore_mirror;\nSELECT 'listening';\n".utf8))
            var heard = ""
            while !heard.contains("listening") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                heard += String(decoding: chunk, as: UTF8.self)
            }
            #expect(heard.contains("listening"), "\(heard)")
            var versions: [String] = []
            for i in 0..<3 {
                try db.write { txn throws in
                    var o = try createObj(txn, c.plain)
                    check(cs_obj_set_int(&o, c.v, Int64(i)))
                }
                versions.append(String(try db.read { cs_txn_version($0) }))
            }
            r = try tool(["mirror", path, url], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
            // psql prints the notifications it received when it runs its next command
            input.fileHandleForWriting.write(Data("SELECT 'done';\n".utf8))
            input.fileHandleForWriting.closeFile()
            heard = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let payloads = heard.split(separator: "\n").compactMap { line -> String? in
                guard line.contains("notification \"swiftstore_mirror\""), let a = line.range(of: "payload \"") else { return nil }
                return String(line[a.upperBound...].prefix { $0 != "\"" })
            }
            #expect(payloads == versions, "\(heard)")
        }
    }

    /// A following mirror acknowledges its slot lazily, at most every 0.1 s while commits come
    /// and once they stop, so the slot ends at the version PostgreSQL recorded.
    @Test func aFollowerAcknowledgesItsSlotOnceCommitsStop() throws {
        try withSource("mirror_ack") { dir, url, path, db, c in
            var rng = SeededRNG(seed: 35)
            var serial = 0
            let p = try startFollower(path, url, stderr: FileHandle.nullDevice)
            defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) }; p.waitUntilExit() }
            try workload(db, c, &rng, commits: 20, serial: &serial)
            let want = try db.read { cs_txn_version($0) }
            var recorded: UInt64 = 0, position: UInt64 = 0
            for _ in 0..<600 where recorded < want || position < want {
                // (the slot is created before the initial copy commits in PostgreSQL)
                position = try db.read { txn throws -> UInt64 in
                    var info = cs_feed_slot_info()
                    return cs_feed_slot_get(txn, "mirror", &info) == CS_OK ? info.position : 0
                }
                recorded = (try? psql(url, "SELECT version FROM swiftstore_mirror WHERE id = 1"))?.first.flatMap { UInt64($0) } ?? 0
                if recorded < want || position < want { usleep(50_000) }
            }
            #expect(recorded >= want && position >= want, "recorded \(recorded), slot at \(position), source at \(want)")
            #expect(p.isRunning)
            try expectMirrorEqual(db, c, url)
        }
    }
}
