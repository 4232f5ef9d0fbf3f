import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// A class with collections of values and a Map of objects.
final class SShelf: Object {
    @Persisted var name = ""
    @Persisted var tags: List<String>
    @Persisted var scores: MutableSet<Int>
    @Persisted var stock: Map<String, Int>
    @Persisted var people: Map<String, SContact?>
}

private let shelfModels: [ObjectBase.Type] = sectionModels + [SShelf.self]

private func shelf(_ r: Realm) -> SShelf { r.objects(SShelf.self).first! }

/// Observing sections of collections of values (List, MutableSet, a Map's values), of an
/// AnyRealmCollection, and queries over a Map: the change sets come from the collection's own
/// change set, as index paths of the sections.
@Suite struct SectionedValuesNotificationTests {
    @Test func sectionsOfAListOfStrings() throws {
        let f = try SFixture(models: shelfModels)
        let seen = Events<SeenSections>(), wrapped = Events<SeenSections>()
        try f.run { realm in
            try realm.write { realm.create(SShelf.self, value: ["name": "s", "tags": ["pear", "apple", "plum"]]) }
            let tags = shelf(realm).tags
            f.tokens.append(tags.sectioned(by: { String($0.prefix(1)) }, ascending: true).observe { seen.add(SeenSections($0)) })
            f.tokens.append(AnyRealmCollection(tags).sectioned(by: { String($0.prefix(1)) }, ascending: true)
                .observe { wrapped.add(SeenSections($0)) })
        }
        #expect(seen.next() == SeenSections(initial: true, keys: ["a", "p"]))
        #expect(wrapped.next() == SeenSections(initial: true, keys: ["a", "p"]))
        // apple avocado | fig | pear plum: avocado joins "a", "f" appears
        f.writeElsewhere { r in shelf(r).tags.append(objectsIn: ["avocado", "fig"]) }
        let appended = SeenSections(keys: ["a", "f", "p"], ins: [[0, 1], [1, 0]], secIns: [1])
        #expect(seen.next() == appended)
        #expect(wrapped.next() == appended)
        // pear -> banana in place in the list: leaves "p" (plum stays), "b" appears
        f.writeElsewhere { r in shelf(r).tags[0] = "banana" }
        let replaced = SeenSections(keys: ["a", "b", "f", "p"], del: [[2, 0]], ins: [[1, 0]], secIns: [1])
        #expect(seen.next() == replaced)
        #expect(wrapped.next() == replaced)
        // apple and avocado removed: "a" is gone, its rows not listed
        f.writeElsewhere { r in
            let tags = shelf(r).tags
            tags.remove(at: 3)
            tags.remove(at: 1)
        }
        #expect(seen.next() == SeenSections(keys: ["b", "f", "p"], secDel: [0]))
        #expect(wrapped.next() == SeenSections(keys: ["b", "f", "p"], secDel: [0]))
        try f.finish()
    }

    @Test func sectionsOfAMutableSetOfInts() throws {
        let f = try SFixture(models: shelfModels)
        let seen = Events<SeenSections>(), section = Events<[Int]>()
        try f.run { realm in
            try realm.write { realm.create(SShelf.self, value: ["name": "s", "scores": [3, 14, 17, 25]]) }
            let s = shelf(realm).scores.sectioned(by: { $0 / 10 }, ascending: true)
            #expect(s.map { Array($0) } == [[3], [14, 17], [25]])
            f.tokens.append(s.observe { seen.add(SeenSections($0)) })
            f.tokens.append(s[0].observe { change in
                if case .update(let c, _, _, _, _, _) = change { section.add(Array(c)) }
            })
        }
        #expect(seen.next() == SeenSections(initial: true, keys: ["0", "1", "2"]))
        f.writeElsewhere { r in
            let scores = shelf(r).scores
            scores.insert(12)
            scores.remove(25)
        }
        #expect(seen.next() == SeenSections(keys: ["0", "1"], ins: [[1, 0]], secDel: [2]))
        // only section 0 changes: its observer is called this time only
        f.writeElsewhere { r in shelf(r).scores.insert(1) }
        #expect(seen.next() == SeenSections(keys: ["0", "1"], ins: [[0, 0]]))
        #expect(section.next() == [1, 3])
        #expect(section.waiting == 0)
        try f.finish()
    }

    @Test func sectionsOfAMapsValues() throws {
        let f = try SFixture(models: shelfModels)
        let seen = Events<SeenSections>()
        try f.run { realm in
            try realm.write { realm.create(SShelf.self, value: ["name": "s", "stock": ["x": 5, "y": 12, "z": 31]]) }
            let s = shelf(realm).stock.sorted(ascending: true).sectioned(by: { $0 / 10 }, ascending: true)
            #expect(s.map { Array($0) } == [[5], [12], [31]])
            f.tokens.append(s.observe { seen.add(SeenSections($0)) })
        }
        #expect(seen.next() == SeenSections(initial: true, keys: ["0", "1", "3"]))
        // w added (18), y removed (12), z changed 31 -> 7: sections 0: 5 7, 1: 18
        f.writeElsewhere { r in
            let stock = shelf(r).stock
            stock["w"] = 18
            stock.removeObject(for: "y")
            stock["z"] = 7
        }
        #expect(seen.next() == SeenSections(keys: ["0", "1"], del: [[1, 0]], ins: [[0, 1], [1, 0]], secDel: [2]))
        // a value changed without moving: a modification
        f.writeElsewhere { r in shelf(r).stock["x"] = 6 }
        #expect(seen.next() == SeenSections(keys: ["0", "1"], mod: [[0, 0]]))
        try f.finish()
    }

    @Test func filteredMapOfObjects() throws {
        let f = try SFixture(models: shelfModels)
        let seen = Events<Seen>(), sections = Events<SeenSections>()
        try f.run { realm in
            try realm.write {
                let s = realm.create(SShelf.self, value: ["name": "s"])
                for (key, id, age) in [("a", 1, 1), ("b", 2, 5), ("c", 3, 3)] {
                    s.people[key] = realm.create(SContact.self, value: ["id": id, "name": "n\(id)", "age": age])
                }
            }
            let people = shelf(realm).people
            let older = people.filter("age > 1")
            #expect(older.map { $0!.id } == [2, 3])
            f.tokens.append(older.observe { seen.add(Seen($0)) })
            let byAge = people.filter("age > 1").sectioned(sortDescriptors: [SortDescriptor(keyPath: "age")]) { $0!.age }
            f.tokens.append(byAge.observe { sections.add(SeenSections($0)) })
        }
        #expect(seen.next() == Seen(initial: true, count: 2))
        #expect(sections.next() == SeenSections(initial: true, keys: ["3", "5"]))
        // b removed, d added: the map is a c d
        f.writeElsewhere { r in
            let people = shelf(r).people
            people["d"] = r.create(SContact.self, value: ["id": 4, "name": "n4", "age": 7])
            people.removeObject(for: "b")
        }
        #expect(seen.next() == Seen(count: 2, del: [0], ins: [1]))
        #expect(sections.next() == SeenSections(keys: ["3", "7"], ins: [[1, 0]], secIns: [1], secDel: [1]))
        // an object of the map modified
        f.writeElsewhere { r in r.objects(SContact.self).filter("id == 3").first!.name = "changed" }
        #expect(seen.next() == Seen(count: 2, mod: [0]))
        #expect(sections.next() == SeenSections(keys: ["3", "7"], mod: [[0, 0]]))
        try f.finish()
    }
}
