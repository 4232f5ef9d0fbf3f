// RealmSwift conformance: iterating sections uses RealmSwift's iterator types, so code that
// names them (`SectionedResultsIterator<Key, Element>`, `SectionIterator<Element>`) compiles,
// and each iterator covers the sections, or the section's rows, there are when iteration starts.
import Foundation
import Testing
import TestSupport
import SwiftStore

final class CfSiWord: Object {
    @Persisted var text = ""
    @Persisted var letter = ""
}

@Suite("Conformance: section iterators")
struct SectionIteratorConformanceTests {
    @Test func iteratorsHaveRealmSwiftsNamesAndReadWhenIterationStarts() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfSiWord.self]))
        try realm.write {
            for t in ["apple", "avocado", "banana", "cherry", "blueberry"] {
                realm.create(CfSiWord.self, value: ["text": t, "letter": String(t.prefix(1))])
            }
        }
        let sections = realm.objects(CfSiWord.self).sectioned(by: \.letter, sortDescriptors: [
            SortDescriptor(keyPath: "letter"), SortDescriptor(keyPath: "text")])
        var outer: SectionedResultsIterator<String, CfSiWord> = sections.makeIterator()
        // a section added after the iterator was made is not iterated
        try realm.write { realm.create(CfSiWord.self, value: ["text": "date", "letter": "d"]) }
        var seen: [String: [String]] = [:]
        var order: [String] = []
        while let section = outer.next() {
            var inner: SectionIterator<CfSiWord> = section.makeIterator()
            var texts: [String] = []
            while let word = inner.next() { texts.append(word.text) }
            seen[section.key] = texts
            order.append(section.key)
        }
        #expect(order == ["a", "b", "c"])
        #expect(seen == ["a": ["apple", "avocado"], "b": ["banana", "blueberry"], "c": ["cherry"]])
        // a for-in loop goes through the same iterators and sees the new section
        #expect(sections.map(\.key) == ["a", "b", "c", "d"])
        // a section's iterator takes the section's size when made
        let bSection = sections[1]
        var bIterator = bSection.makeIterator()
        try realm.write { realm.create(CfSiWord.self, value: ["text": "berry", "letter": "b"]) }
        var bCount = 0
        while bIterator.next() != nil { bCount += 1 }
        #expect(bCount == 2)
        #expect(bSection.map(\.text) == ["banana", "berry", "blueberry"])
    }
}
