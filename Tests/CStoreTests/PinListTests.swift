// The pins other processes hold, as `swiftstore info` lists them (cs_db_pins, docs/FORMAT.md §9:
// the reader slot's pid, range and the pin's start time).

import CStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct PinListTests {
    private func pins(_ db: OpaquePointer?) -> [cs_pin_info] {
        var n = 0
        #expect(cs_db_pins(db, nil, 0, &n) == 0)
        var list = [cs_pin_info](repeating: cs_pin_info(), count: max(n, 1))
        #expect(cs_db_pins(db, &list, list.count, &n) == 0)
        return Array(list.prefix(n))
    }

    /// Another process pinning a version is listed with its pid, the version and when it
    /// started pinning it; this process is not listed; a killed process's pin is gone.
    @Test func otherProcessesPinsWithPidVersionAndStart() throws {
        let dir = TempDir()
        let path = dir.path()
        _ = try runChild(["setup", path], in: dir)
        var db: OpaquePointer?
        #expect(cs_db_open(path, nil, &db) == 0)
        defer { cs_db_close(db) }
        var t: OpaquePointer?
        #expect(cs_txn_begin(db, Int32(CS_TXN_READ), &t) == 0)
        defer { cs_txn_end(t) }
        #expect(pins(db).isEmpty)

        let before = UInt64(Date().timeIntervalSince1970 * 1000)
        let log = dir.path("pin.log")
        let pinner = try Child(["pin", path, log], in: dir)
        defer { pinner.killNow() }
        #expect(waitUntil(seconds: 30) { logLines(log).contains { $0.hasPrefix("pinned") } }, "\(pinner.stderr)")
        let after = UInt64(Date().timeIntervalSince1970 * 1000)
        let version = logLines(log).first.flatMap { UInt64($0.split(separator: " ").last ?? "") }
        let listed = pins(db)
        #expect(listed.count == 1)
        #expect(listed.first?.pid == UInt32(pinner.pid))
        #expect(listed.first?.oldest == version)
        #expect(listed.first?.newest == version)
        #expect(listed.first?.state == 0)
        let since = listed.first?.since_ms ?? 0
        #expect(since >= before && since <= after, "\(before) <= \(since) <= \(after)")
        #expect(!listed.contains { $0.pid == UInt32(getpid()) })

        pinner.killNow()
        #expect(pinner.killedBySIGKILL)
        #expect(pins(db).isEmpty)
    }
}
