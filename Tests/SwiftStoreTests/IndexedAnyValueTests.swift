// An indexed AnyRealmValue property (`@Persisted(indexed: true) var value: AnyRealmValue`): the
// schema keeps the index, the file holds it (so it is format version 2), and queries through it
// answer as RealmSwift's: numbers equal across Int, Float, Double and Decimal128, strings apart
// from data, nil, IN lists, and answers that follow writes.

import Foundation
import Testing
import CStore
@testable import SwiftStore

final class IdxAny: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted(indexed: true) var value: AnyRealmValue = .none
}

@Suite struct IndexedAnyValueTests {
    private func ids(_ r: Results<IdxAny>) -> [Int] { r.map(\.id).sorted() }

    @Test func indexedAnyRealmValueQueries() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([IdxAny.self]))
        #expect(realm.schema["IdxAny"]?["value"]?.isIndexed == true)
        let values: [AnyRealmValue] = [
            .int(1), .double(1), .float(1), .decimal128(Decimal128(value: "1.00")), .double(2.5), .string("a"),
            .data(Data("a".utf8)), .none, .bool(true), .int(-4), .decimal128(Decimal128(value: "2.50")),
        ]
        try realm.write {
            for (i, v) in values.enumerated() { realm.create(IdxAny.self, value: ["id": i, "value": v]) }
        }
        let all = realm.objects(IdxAny.self)
        #expect(ids(all.filter("value == 1")) == [0, 1, 2, 3])
        #expect(ids(all.filter("value == %@", 1.0)) == [0, 1, 2, 3])
        #expect(ids(all.filter("value == %@", Decimal128(value: "2.50"))) == [4, 10])
        #expect(ids(all.filter("value == 'a'")) == [5])
        #expect(ids(all.filter("value == %@", Data("a".utf8))) == [6])
        #expect(ids(all.filter("value == nil")) == [7])
        #expect(ids(all.filter("value IN {1, 'a'}")) == [0, 1, 2, 3, 5])
        #expect(ids(all.where { $0.value == .int(-4) }) == [9])

        // Writes move objects between answers.
        try realm.write {
            realm.object(ofType: IdxAny.self, forPrimaryKey: 0)!.value = .string("a")
            realm.delete(realm.object(ofType: IdxAny.self, forPrimaryKey: 1)!)
            realm.object(ofType: IdxAny.self, forPrimaryKey: 7)!.value = .int(1)
        }
        #expect(ids(all.filter("value == 1")) == [2, 3, 7])
        #expect(ids(all.filter("value == 'a'")) == [0, 5])
        #expect(ids(all.filter("value == nil")).isEmpty)

        // The index is in the file and the core answers from it; the header says version 8 while
        // the commit journal may hold commits (docs/FORMAT.md §13; every journaled commit marks
        // it, and versions 6 to 8 include Mixed indexes).
        let header = try Data(contentsOf: dir.file()).prefix(12)
        #expect(header[8] == 8 && header[10] == 8)
    }
}
