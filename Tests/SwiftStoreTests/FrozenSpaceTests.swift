import CStore
import Foundation
import Testing
@testable import SwiftStore
#if canImport(Glibc)
import Glibc
#endif

final class SpaceItem: Object {
    @Persisted var payload = ""
}

/// The space of a version that only a frozen value pins: held while the value lives, bounded
/// meanwhile, and reused once the value goes; `swiftstore info` shows the pin.
@Suite struct FrozenSpaceTests {
    private static let blob = String(repeating: "x", count: 500)

    private func add(_ realm: Realm, _ n: Int) throws {
        try realm.write { for _ in 0..<n { realm.add(SpaceItem(value: ["payload": FrozenSpaceTests.blob])) } }
    }

    /// The end of the last byte in use in the file (the allocator's high-water mark).
    private func logicalSize(_ realm: Realm) throws -> Int {
        var stats = cs_db_stats()
        #expect(cs_db_stats_get(realm.core.db, &stats) == 0)
        return Int(stats.logical_size)
    }

    @Test func releasedFrozenVersionSpaceComesBack() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([SpaceItem.self]))
        try add(realm, 1000)
        var frozen: Results<SpaceItem>? = realm.objects(SpaceItem.self).freeze()
        let pinned = frozen!.realm!.core.version
        let l1 = try logicalSize(realm)

        // while it is held: its objects' space stays taken, so replacing them needs new space
        try realm.write { realm.delete(realm.objects(SpaceItem.self)) }
        try add(realm, 1000)
        let l2 = try logicalSize(realm)
        #expect(l2 > l1 + 250_000, "\(l1) -> \(l2)")
        // ... but only its version is held: rewriting the data again and again reuses the
        // space of the versions in between, and the file stops growing
        for _ in 0..<6 {
            try realm.write { realm.delete(realm.objects(SpaceItem.self)) }
            try add(realm, 1000)
        }
        let l3 = try logicalSize(realm)
        for _ in 0..<6 {
            try realm.write { realm.delete(realm.objects(SpaceItem.self)) }
            try add(realm, 1000)
        }
        let l4 = try logicalSize(realm)
        // (each round writes about 500 kB: without reuse six rounds would add megabytes)
        #expect(l4 < l3 + 50_000, "\(l3) -> \(l4)")
        #expect(frozen!.count == 1000)

        // another process sees the pin: this process, the frozen version, and its age
        if Tool.path != nil {
            let r = try Tool.run(["info", "--json", realm.configuration.fileURL!.path])
            #expect(r.status == 0, "\(r.stderr)")
            let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            let pins = o?["pins"] as? [[String: Any]] ?? []
            let mine = pins.first { ($0["pid"] as? Int) == Int(getpid()) }
            #expect(mine?["oldest"] as? Int == Int(pinned), "\(r.stdout)")
            let age = mine?["ageSeconds"] as? Double ?? -1
            #expect(age >= 0 && age < 600, "\(r.stdout)")
            let text = try Tool.run(["info", realm.configuration.fileURL!.path])
            #expect(text.stdout.contains("pid \(getpid()): versions \(pinned)-"), "\(text.stdout)")
        } else {
            Issue.record("the swiftstore tool is not built (make tool)")
        }

        // once it goes, the next commits reuse its space: as much data again as it held needs
        // little new space at the end of the file
        frozen = nil
        let l5 = try logicalSize(realm)
        try add(realm, 1000)
        let l6 = try logicalSize(realm)
        // (about 500 kB added: with its space still taken the end would move by all of it)
        #expect(l6 < l5 + 250_000, "\(l5) -> \(l6)")
    }
}
