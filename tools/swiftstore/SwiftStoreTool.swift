import ArgumentParser
import CStore
import Foundation

/// `swiftstore`: inspect and maintain SwiftStore database files.
@main
struct SwiftStoreTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swiftstore",
        abstract: "Inspect, verify and maintain SwiftStore database files.",
        version: String(cString: cs_library_version()),
        subcommands: [Info.self, Verify.self]
    )
}

/// A failure of the core, carried to the exit code and message.
struct CoreError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { "\(String(cString: cs_errstr(code))): \(message)" }

    static func check(_ rc: Int32) throws {
        if rc != 0 { throw CoreError(code: rc, message: String(cString: cs_errmsg())) }
    }
}

func writeError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func jsonString(_ object: Any) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the format version, versions, sizes and tables of a database file.")

    @Argument(help: "The database file.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        var options = cs_options()
        options.flags = UInt32(CS_OPEN_READONLY)
        var db: OpaquePointer?
        do {
            try CoreError.check(cs_db_open(file, &options, &db))
        } catch let e as CoreError {
            writeError("swiftstore info: \(e)")
            throw ExitCode(2)
        }
        defer { cs_db_close(db) }
        var stats = cs_db_stats()
        var txn: OpaquePointer?
        var tables: [[String: Any]] = []
        do {
            try CoreError.check(cs_db_stats_get(db, &stats))
            try CoreError.check(cs_txn_begin(db, Int32(CS_TXN_READ), &txn))
            defer { cs_txn_end(txn) }
            for key in 0..<cs_table_slots(txn) {
                var info = cs_table_info()
                if cs_table_info_get(txn, key, &info) != 0 { continue }
                var columns = 0
                for col in 0..<info.col_slots {
                    var ci = cs_column_info()
                    if cs_column_info_get(txn, key, col, &ci) == 0 && (ci.flags & UInt32(CS_COL_HIDDEN)) == 0 {
                        columns += 1
                    }
                }
                tables.append([
                    "name": String(cString: info.name), "objects": Int(info.count),
                    "properties": columns, "embedded": (info.flags & UInt32(CS_TABLE_EMBEDDED)) != 0,
                ])
            }
        } catch let e as CoreError {
            writeError("swiftstore info: \(e)")
            throw ExitCode(1)
        }
        let report: [String: Any] = [
            "file": file, "format": Int(stats.read_format), "version": Int(stats.version),
            "fileSize": Int(stats.file_size), "logicalSize": Int(stats.logical_size),
            "usedBytes": Int(stats.used_bytes), "freeBytes": Int(stats.free_bytes),
            "freeExtents": Int(stats.free_extents), "tables": tables,
        ]
        if json {
            print(jsonString(report))
            return
        }
        print("file:          \(file)")
        print("format:        \(stats.read_format)")
        print("version:       \(stats.version)")
        print("file size:     \(stats.file_size) bytes")
        print("logical size:  \(stats.logical_size) bytes")
        print("used:          \(stats.used_bytes) bytes")
        print("free:          \(stats.free_bytes) bytes in \(stats.free_extents) extents")
        print("tables:        \(tables.count)")
        for t in tables {
            print("  \(t["name"]!): \(t["objects"]!) objects, \(t["properties"]!) properties\((t["embedded"] as! Bool) ? " (embedded)" : "")")
        }
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every node and invariant of a database file.",
        discussion: "Exit status 0: healthy. 1: damaged (the first problem and where is printed). 2: cannot open.")

    @Argument(help: "The database file.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    func run() throws {
        let rc = cs_file_verify(file)
        let message = rc == 0 ? "healthy" : String(cString: cs_errmsg())
        if json {
            print(jsonString(["file": file, "healthy": rc == 0, "code": String(cString: cs_errstr(rc)), "message": message]))
        } else if rc == 0 {
            print("\(file): healthy")
        } else {
            writeError("\(file): \(String(cString: cs_errstr(rc))): \(message)")
        }
        if rc == 0 { return }
        throw ExitCode(rc == Int32(CS_CORRUPT) ? 1 : 2)
    }
}
