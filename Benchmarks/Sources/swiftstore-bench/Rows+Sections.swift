// The sectioned-results row (Benchmarks/README.md, Sectioned results): 200k objects grouped by
// the first letter of a string property, every section's count and first object read.
// SwiftStore: `sectioned(by:sortDescriptors:)` on `realm.objects`; GRDB: the rows fetched ordered
// by the property, grouped with `Dictionary(grouping:by:)`, the groups read in key order.
// Neither side has an index on the property.

import Foundation
import GRDB
import SwiftStore

/// The model of the row: one string property, stored as the table `SectionPerson`.
final class SectionPerson: Object {
    @Persisted var name = ""
}

/// The name of person `i`: an upper-case letter (spread unevenly: the letter of a hash) and a
/// number; every name is distinct and sorts the same byte-wise and in the core.
func sectionName(_ i: Int) -> String {
    let h = UInt64(i) &* 0x9E37_79B9_7F4A_7C15
    let letter = UnicodeScalar(UInt8(65 + Int((h >> 33) % 26)))
    return String(Character(letter)) + String((h >> 7) % 1_000_000) + "-" + String(i)
}

/// The answer both sides compute: for each section in key order, (index + 1) * count plus the
/// byte sum of its first name.
func sectionChecksum(_ sections: [(count: Int, first: String)]) -> Int64 {
    var sum: Int64 = 0
    for (i, s) in sections.enumerated() {
        sum += Int64(i + 1) * Int64(s.count)
        sum += s.first.utf8.reduce(0) { $0 + Int64($1) }
    }
    return sum
}

/// The expected answer, computed untimed from the names.
private func expectedSectionChecksum(_ n: Int) -> Int64 {
    let names = (0..<n).map(sectionName).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    var sections: [(count: Int, first: String)] = []
    var last: Character?
    for name in names {
        if name.first != last {
            sections.append((0, name))
            last = name.first
        }
        sections[sections.count - 1].count += 1
    }
    return sectionChecksum(sections)
}

func sectionedRow() -> Row {
    Row(
        id: "sectioned.200k", size: 200_000, mode: "durable", peer: "grdb", goal: "<= 0.25x",
        swiftstore: swiftstoreSectioned,
        peerSide: grdbSectioned)
}

/// Timed: `sectioned(by: first letter, sortDescriptors: [name])` on a new Results, then each
/// section's `count` and first object's name.
func swiftstoreSectioned(_ ctx: RowContext) throws -> Runner {
    let url = ctx.directory.appendingPathComponent("bench.realm")
    let config = Realm.Configuration(fileURL: url, objectTypes: [SectionPerson.self])
    try {
        let realm = try Realm(configuration: config)
        try realm.write {
            for i in 0..<ctx.size {
                let p = SectionPerson()
                p.name = sectionName(i)
                realm.add(p)
            }
        }
    }()
    let box = RealmBox(try Realm(configuration: config))
    let want = expectedSectionChecksum(ctx.size)
    return Runner(
        run: { _ in
            guard let realm = box.realm else { throw BenchError(description: "the Realm was released") }
            var got: Int64 = 0
            let ms = measure {
                let sections = realm.objects(SectionPerson.self)
                    .sectioned(by: { String($0.name.prefix(1)) }, sortDescriptors: [SortDescriptor(keyPath: "name")])
                var read: [(count: Int, first: String)] = []
                for section in sections {
                    read.append((section.count, section[0].name))
                }
                got = sectionChecksum(read)
            }
            return Sample(ms: ms, check: Check(what: "sections checksum", got: got, want: want))
        },
        tearDown: { box.realm = nil })
}

/// GRDB's record of the row.
struct GRDBSectionPerson: FetchableRecord {
    var id: Int64
    var name: String

    init(row: GRDB.Row) {
        id = row[0]
        name = row[1]
    }
}

/// Timed: `SELECT id, name FROM person ORDER BY name` as records in a read, grouped by first
/// letter with `Dictionary(grouping:by:)`, then each group's count and first record's name in
/// key order.
func grdbSectioned(_ ctx: RowContext) throws -> Runner {
    let path = ctx.directory.appendingPathComponent("bench.sqlite").path
    let queue = try grdbQueue(path)
    try queue.write { db in
        try db.execute(sql: "CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        let insert = try db.makeStatement(sql: "INSERT INTO person (name) VALUES (?)")
        for i in 0..<ctx.size { try insert.execute(arguments: [sectionName(i)]) }
    }
    let want = expectedSectionChecksum(ctx.size)
    return Runner(
        run: { _ in
            var got: Int64 = 0
            let ms = try measure {
                let people = try queue.read { db in
                    try GRDBSectionPerson.fetchAll(db, sql: "SELECT id, name FROM person ORDER BY name")
                }
                let groups = Dictionary(grouping: people) { String($0.name.prefix(1)) }
                var read: [(count: Int, first: String)] = []
                for key in groups.keys.sorted() {
                    let group = groups[key]!
                    read.append((group.count, group[0].name))
                }
                got = sectionChecksum(read)
            }
            return Sample(ms: ms, check: Check(what: "sections checksum", got: got, want: want))
        },
        tearDown: { try? queue.close() })
}
