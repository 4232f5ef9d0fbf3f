// mirror.initial.1M (`swiftstore mirror` copying 1M objects of 10 properties into PostgreSQL,
// against psql's COPY FROM of the same rows as CSV) and mirror.lag (a commit of one object to
// its row being visible in PostgreSQL, against the commit of the same PostgreSQL transaction):
// README.md, Rows. Both need a PostgreSQL server (STORE_PG_URL: `make bench` runs the suite
// under .ci/with-postgres) and the release build of the tool (`make bench` builds it).

import CLibPQ
import CStore
import CStoreCall
import Foundation

#if canImport(Glibc)
import Glibc
#endif

private func pgURL() throws -> String {
    guard let url = ProcessInfo.processInfo.environment["STORE_PG_URL"] else {
        throw BenchError(description: "needs a PostgreSQL server: run under .ci/with-postgres (make bench does)")
    }
    return url
}

/// The `swiftstore` tool's release build (STORE_TOOL overrides).
private func toolPath() throws -> String {
    let path = ProcessInfo.processInfo.environment["STORE_TOOL"] ?? "../tools/swiftstore/.build/release/swiftstore"
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw BenchError(description: "no swiftstore tool at \(path) (cd tools/swiftstore && swift build -c release)")
    }
    return path
}

private func psqlPath() -> String {
    if let bin = ProcessInfo.processInfo.environment["STORE_PG_BIN"] { return bin + "/psql" }
    return "/usr/bin/psql"
}

/// Runs a program to its end; throws unless it exits 0.
private func runProgram(_ path: String, _ args: [String]) throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.standardOutput = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    if p.terminationStatus != 0 { throw BenchError(description: "\(path) \(args.prefix(2)) exited \(p.terminationStatus)") }
}

/// One libpq connection.
private final class BenchPG {
    let conn: OpaquePointer

    init(_ url: String) throws {
        conn = PQconnectdb(url)
        if PQstatus(conn) != CONNECTION_OK {
            let msg = String(cString: PQerrorMessage(conn))
            PQfinish(conn)
            throw BenchError(description: "PostgreSQL: \(msg)")
        }
        PQclear(PQexec(conn, "SET client_min_messages = warning"))
    }

    deinit { PQfinish(conn) }

    /// The first column of the first row (nil: no row).
    @discardableResult
    func exec(_ sql: String) throws -> String? {
        let r = PQexec(conn, sql)
        defer { PQclear(r) }
        let st = PQresultStatus(r)
        guard st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK else {
            throw BenchError(description: "PostgreSQL: \(String(cString: PQresultErrorMessage(r))) in \(sql.prefix(80))")
        }
        return PQntuples(r) > 0 && PQnfields(r) > 0 ? String(cString: PQgetvalue(r, 0, 0)) : nil
    }
}

/// Sum of every value of the 10-Int table's rows 0..<n (each row holds its number 10 times).
private func intTableSum(_ n: Int) -> Int64 { 10 * Int64(n) * Int64(n - 1) / 2 }

private let sumSQL = "SELECT coalesce(sum(i0 + i1 + i2 + i3 + i4 + i5 + i6 + i7 + i8 + i9), 0)::bigint FROM "

func mirrorInitialRow() -> Row {
    Row(
        id: "mirror.initial.1M", size: 1_000_000, mode: "durable", peer: "psql COPY", goal: "<= 1.5x",
        swiftstore: { ctx in
            let url = try pgURL(), tool = try toolPath()
            let path = ctx.directory.appendingPathComponent("bench.cstore").path
            _ = try csBuildIntFile(path, rows: ctx.size)
            let pg = try BenchPG(url)
            let want = intTableSum(ctx.size)
            return Runner(run: { rep in
                try pg.exec("DROP TABLE IF EXISTS \"Item\", swiftstore_mirror")
                // a copy of the file per repetition: the mirror creates its feed slot in it
                let dir = try ctx.freshDirectory(rep)
                defer { ctx.remove(dir) }
                let src = dir.appendingPathComponent("src.cstore").path
                try FileManager.default.copyItem(atPath: path, toPath: src)
                // the whole command: open, slot, tables, COPY of every object, commit
                let ms = try measure { try runProgram(tool, ["mirror", src, url]) }
                let got = Int64(try pg.exec(sumSQL + "\"Item\"") ?? "") ?? -1
                return Sample(ms: ms, check: Check(what: "sum of all values in PostgreSQL", got: got, want: want))
            })
        },
        peerSide: { ctx in
            let url = try pgURL()
            let csv = ctx.directory.appendingPathComponent("rows.csv").path
            // the same rows as the mirror writes: the object key, then the 10 values
            var text = ""
            text.reserveCapacity(ctx.size * 80)
            for r in 0..<ctx.size {
                text += String(r)
                for _ in 0..<10 { text += "," + String(r) }
                text += "\n"
            }
            try text.write(toFile: csv, atomically: false, encoding: .utf8)
            let pg = try BenchPG(url)
            let want = intTableSum(ctx.size)
            let cols = (0..<10).map { "i\($0) bigint" }.joined(separator: ", ")
            return Runner(run: { _ in
                try pg.exec("DROP TABLE IF EXISTS peer_copy")
                try pg.exec("CREATE TABLE peer_copy (\"_key\" bigint PRIMARY KEY, \(cols))")
                let ms = try measure { try runProgram(psqlPath(), ["-X", "-q", url, "-c", "\\copy peer_copy FROM '\(csv)' CSV"]) }
                let got = Int64(try pg.exec(sumSQL + "peer_copy") ?? "") ?? -1
                return Sample(ms: ms, check: Check(what: "sum of all values in PostgreSQL", got: got, want: want))
            })
        })
}

func mirrorLagRow() -> Row {
    Row(
        id: "mirror.lag", size: 500, mode: "durable", peer: "postgresql commit", goal: "<= 3x",
        swiftstore: { ctx in
            let url = try pgURL(), tool = try toolPath()
            let path = ctx.directory.appendingPathComponent("lag.cstore").path
            _ = try csBuildIntFile(path, rows: 1_000)
            let pg = try BenchPG(url)
            try pg.exec("DROP TABLE IF EXISTS \"Item\", swiftstore_mirror")
            try runProgram(tool, ["mirror", path, url])
            let follower = Process()
            follower.executableURL = URL(fileURLWithPath: tool)
            follower.arguments = ["mirror", path, url, "--follow"]
            try follower.run()
            let db = try csOpen(path, durability: CS_DURABILITY_FULL, create: false)
            return Runner(run: { rep in
                var lags: [Double] = []
                var seen: Int64 = 0
                for c in 0..<ctx.size {
                    let value = Int64(1_000_000 + rep * 10_000 + c)
                    let key = try csTransaction(db, write: true) { txn in
                        try IntTable.find(txn).insert(txn, count: 1, first: value, keys: true)[0]
                    }
                    // from the return of the commit to the row read back through libpq
                    let start = nowNanoseconds()
                    while try pg.exec("SELECT i0 FROM \"Item\" WHERE \"_key\" = \(key)") == nil {}
                    lags.append(Double(nowNanoseconds() - start) / 1e6)
                    seen += 1
                }
                return Sample(ms: median(lags), check: Check(what: "commits seen in PostgreSQL", got: seen, want: Int64(ctx.size)))
            }, tearDown: {
                follower.terminate()
                follower.waitUntilExit()
                _ = cs_db_close(db)
            })
        },
        peerSide: { ctx in
            // the floor: PostgreSQL committing the transaction the mirror commits per commit
            let pg = try BenchPG(try pgURL())
            let cols = (0..<10).map { "i\($0) bigint" }.joined(separator: ", ")
            try pg.exec("DROP TABLE IF EXISTS peer_lag, peer_lag_version")
            try pg.exec("CREATE TABLE peer_lag (\"_key\" bigint PRIMARY KEY, \(cols))")
            try pg.exec("CREATE TABLE peer_lag_version (id int PRIMARY KEY, version bigint)")
            try pg.exec("INSERT INTO peer_lag_version VALUES (1, 0)")
            return Runner(run: { rep in
                var times: [Double] = []
                for c in 0..<ctx.size {
                    let k = rep * 10_000 + c
                    let vals = (0..<10).map { _ in String(k) }.joined(separator: ", ")
                    let ms = try measure {
                        try pg.exec("BEGIN")
                        try pg.exec("INSERT INTO peer_lag VALUES (\(k), \(vals))")
                        try pg.exec("UPDATE peer_lag_version SET version = \(k) WHERE id = 1")
                        try pg.exec("COMMIT")
                    }
                    times.append(ms)
                }
                let n = Int64(try pg.exec("SELECT count(*) FROM peer_lag WHERE \"_key\" >= \(rep * 10_000) AND \"_key\" < \(rep * 10_000 + ctx.size)") ?? "") ?? -1
                return Sample(ms: median(times), check: Check(what: "rows committed", got: n, want: Int64(ctx.size)))
            })
        })
}
