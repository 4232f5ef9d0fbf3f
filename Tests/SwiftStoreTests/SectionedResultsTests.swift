import Foundation
import Synchronization
import Testing
import TestSupport
@testable import SwiftStore

final class SContact: Object {
    @Persisted var id = 0
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var adopted = false
}

/// A class with a collection property (its accessors cache the list, so sectioning makes one
/// accessor per element instead of moving one from row to row).
final class SGroup: Object {
    @Persisted var name = ""
    @Persisted var tags: List<String>
    @Persisted var members: List<SContact>
    @Persisted var parent: SGroup?
    @Persisted(originProperty: "parent") var children: LinkingObjects<SGroup>
}

/// Counts the accessors made of its class.
final class SCounted: Object {
    static let made = Atomic<Int>(0)
    @Persisted var name = ""

    required init() {
        super.init()
        SCounted.made.add(1, ordering: .relaxed)
    }
}

let sectionModels: [ObjectBase.Type] = [SContact.self, SGroup.self, SCounted.self]
private let models = sectionModels

/// First letter of a name ("" for an empty name).
private func initial(_ c: SContact) -> String { String(c.name.prefix(1)) }

/// The sections as plain values: key and the ids of its contacts.
private func snapshot<K>(_ s: SectionedResults<K, SContact>) -> [String] {
    s.map { section in "\(section.key):" + section.map { String($0.id) }.joined(separator: ",") }
}

/// A sectioned change as plain values.
struct SeenSections: Equatable, CustomStringConvertible {
    var initial = false
    var keys: [String] = []
    var del: [[Int]] = []
    var ins: [[Int]] = []
    var mod: [[Int]] = []
    var secIns: [Int] = []
    var secDel: [Int] = []

    init(initial: Bool = false, keys: [String], del: [[Int]] = [], ins: [[Int]] = [], mod: [[Int]] = [],
         secIns: [Int] = [], secDel: [Int] = []) {
        (self.initial, self.keys, self.del, self.ins, self.mod, self.secIns, self.secDel) =
            (initial, keys, del, ins, mod, secIns, secDel)
    }

    init<K, E>(_ change: SectionedResultsChange<SectionedResults<K, E>>) {
        switch change {
        case .initial(let s):
            initial = true
            keys = s.allKeys.map { "\($0)" }
        case .update(let s, let d, let i, let m, let si, let sd):
            keys = s.allKeys.map { "\($0)" }
            (del, ins, mod) = (d.map { [$0.section, $0.item] }, i.map { [$0.section, $0.item] }, m.map { [$0.section, $0.item] })
            (secIns, secDel) = (Array(si), Array(sd))
        }
    }

    /// A section's change: `keys` holds the section's contacts' names.
    init<K>(section change: SectionedResultsChange<ResultsSection<K, SContact>>) {
        switch change {
        case .initial(let s):
            initial = true
            keys = s.map(\.name)
        case .update(let s, let d, let i, let m, let si, let sd):
            keys = s.map(\.name)
            (del, ins, mod) = (d.map { [$0.section, $0.item] }, i.map { [$0.section, $0.item] }, m.map { [$0.section, $0.item] })
            (secIns, secDel) = (Array(si), Array(sd))
        }
    }

    var description: String {
        "\(initial ? "initial" : "update")(\(keys) -\(del) +\(ins) ~\(mod) +s\(secIns) -s\(secDel))"
    }
}

/// A test's Realm on a run-loop thread (Fixture), with the section tests' models by default.
final class SFixture: Fixture, @unchecked Sendable {
    override init(models: [ObjectBase.Type] = sectionModels) throws {
        try super.init(models: models)
    }
}

func add(_ r: Realm, _ contacts: [(Int, String, Int)]) {
    for (id, name, age) in contacts { r.create(SContact.self, value: ["id": id, "name": name, "age": age]) }
}

private func contact(_ r: Realm, _ id: Int) -> SContact { r.objects(SContact.self).filter("id == %@", id).first! }

@Suite struct SectionedResultsTests {
    // MARK: Reading

    @Test func keyPathSections() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try realm.write { add(realm, [(1, "b", 30), (2, "a", 20), (3, "c", 30), (4, "d", 10), (5, "e", 20)]) }
            let byAge = realm.objects(SContact.self).sectioned(by: \.age, ascending: true)
            #expect(byAge.count == 3)
            #expect(byAge.allKeys == [10, 20, 30])
            #expect(snapshot(byAge) == ["10:4", "20:2,5", "30:1,3"])
            #expect(byAge[1].key == 20 && byAge[1].id == 20 && byAge[1].count == 2)
            #expect(byAge[1][1].id == 5)
            #expect(byAge[IndexPath(item: 1, section: 2)].id == 3)
            #expect(byAge.realm != nil && !byAge.isInvalidated && !byAge.isFrozen)
            #expect(byAge == byAge && byAge[0] == byAge[0] && byAge[0] != byAge[1])
            #expect(AnyRealmCollection(realm.objects(SContact.self)).sectioned(by: \.age).allKeys == [10, 20, 30])
            let down = realm.objects(SContact.self).sectioned(by: \.age, ascending: false)
            #expect(down.allKeys == [30, 20, 10])
            // ties keep the sort's stable order; later descriptors break them
            let named = realm.objects(SContact.self).sectioned(by: \.age, sortDescriptors: [SortDescriptor(keyPath: "age"),
                                                                                           SortDescriptor(keyPath: "name", ascending: false)])
            #expect(snapshot(named) == ["10:4", "20:5,2", "30:3,1"])
            // a filtered collection, and the sections following a write (live)
            let older = realm.objects(SContact.self).filter("age >= 20").sectioned(by: \.age)
            #expect(older.allKeys == [20, 30])
            try realm.write { contact(realm, 4).age = 40 }
            #expect(snapshot(older) == ["20:2,5", "30:1,3", "40:4"])
            #expect(byAge.allKeys == [20, 30, 40])
            let section = byAge[0]
            try realm.write { realm.delete(realm.objects(SContact.self).filter("age == 20")) }
            #expect(section.count == 0) // its key is gone
            #expect(byAge.allKeys == [30, 40])
        }
    }

    @Test func blockSectionsByFirstLetter() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try realm.write { add(realm, [(1, "Bob", 1), (2, "anna", 2), (3, "Bea", 3), (4, "Al", 4), (5, "Carl", 5)]) }
            let byLetter = realm.objects(SContact.self).sectioned(by: initial, sortDescriptors: [SortDescriptor(keyPath: "name")])
            #expect(byLetter.allKeys == ["A", "B", "C", "a"])
            #expect(snapshot(byLetter) == ["A:4", "B:3,1", "C:5", "a:2"])
            #expect(byLetter[1].map(\.name) == ["Bea", "Bob"])
            let other = realm.objects(SContact.self).sectioned(sortDescriptors: [SortDescriptor(keyPath: "name", ascending: false)]) {
                $0.name.lowercased().prefix(1) == "b"
            }
            // byte order, descending: anna, Carl, Bob, Bea, Al
            #expect(other.allKeys == [false, true])
            #expect(snapshot(other) == ["false:2,5,4", "true:1,3"])
        }
    }

    /// Elements with the same key that the sort does not put together still share one
    /// section, in the order of the key's first element.
    @Test func keysNotAdjacentShareASection() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try realm.write { add(realm, [(1, "a", 1), (2, "b", 2), (3, "c", 3), (4, "d", 4), (5, "e", 5)]) }
            let parity = realm.objects(SContact.self).sectioned(by: { $0.age % 2 }, sortDescriptors: [SortDescriptor(keyPath: "age")])
            #expect(parity.allKeys == [1, 0])
            #expect(snapshot(parity) == ["1:1,3,5", "0:2,4"])
            #expect(parity[IndexPath(item: 2, section: 0)].id == 5)
            #expect(Array(parity[1]).map(\.id) == [2, 4])
        }
    }

    /// Sections of a List and of a collection of values; a class whose accessors cache a
    /// collection gets one accessor per element.
    @Test func listsAndValues() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try realm.write {
                add(realm, [(1, "b", 3), (2, "a", 1), (3, "c", 1)])
                let g = realm.create(SGroup.self, value: ["name": "g"])
                g.tags.append(objectsIn: ["pear", "apple", "plum", "avocado", "fig"])
                g.members.append(objectsIn: realm.objects(SContact.self))
                realm.create(SGroup.self, value: ["name": "h", "parent": g])
                realm.create(SGroup.self, value: ["name": "g2", "parent": g])
            }
            let g = realm.objects(SGroup.self).first!
            let tags = g.tags.sectioned(by: { String($0.prefix(1)) }, ascending: true)
            #expect(tags.allKeys == ["a", "f", "p"])
            #expect(tags.map { Array($0) } == [["apple", "avocado"], ["fig"], ["pear", "plum"]])
            let members = g.members.sectioned(by: \.age)
            #expect(snapshot(members) == ["1:2,3", "3:1"])
            let groups = realm.objects(SGroup.self).sectioned(by: { String($0.name.prefix(1)) + "\($0.tags.count)" },
                                                              sortDescriptors: [SortDescriptor(keyPath: "name")])
            #expect(groups.allKeys == ["g5", "g0", "h0"])
            #expect(groups[0].map(\.name) == ["g"])
            let children = g.children.sectioned(by: \.name, ascending: false)
            #expect(children.allKeys == ["h", "g2"])
        }
    }

    /// String keys are numbered by their bytes before the layout pass; keys equal as Strings
    /// but spelled with other bytes (a precomposed and a decomposed "é") are still one key, and
    /// more distinct keys than the numbering takes (256) give the same sections as the keys
    /// themselves. The names are added out of order, so the sorted results are not in key order.
    @Test func stringKeysWithOtherBytesAndManyKeys() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            var rng = SeededRNG(seed: stableSeed("sections.interning"))
            let names = (0..<3000).map { String(format: "%04d", $0) }.shuffled(using: &rng)
            try realm.write {
                for (i, name) in names.enumerated() { realm.create(SContact.self, value: ["id": i, "name": name]) }
            }
            let sorted = realm.objects(SContact.self).sorted(byKeyPath: "name").map(\.name)
            // "é" for names with an even digit first: precomposed, but decomposed for "0000", the
            // first of them sorted and not the first of them stored
            func even(_ name: String) -> Bool { Int(name.prefix(1))! % 2 == 0 }
            #expect(names.first(where: even) != "0000")
            let accented = realm.objects(SContact.self).sectioned(
                by: { (c: SContact) -> String in
                    even(c.name) ? (c.name == "0000" ? "e\u{301}" : "\u{E9}") : "o"
                },
                sortDescriptors: [SortDescriptor(keyPath: "name")])
            // sections come in the order of their first element: "0..." is even
            #expect(accented.allKeys == ["\u{E9}", "o"])
            #expect(accented.count == 2)
            // a section's key is its first element's, as that element spells it
            #expect(Array(accented[0].key.unicodeScalars) == Array("e\u{301}".unicodeScalars))
            let evens = sorted.filter(even)
            #expect(accented[0].count + accented[1].count == 3000)
            // names of even first digit, in the sorted order, all in section 0
            #expect(accented[0].count == evens.count)
            #expect(accented[0].map(\.name) == evens)
            // 300 distinct keys (the first three digits), then every name its own key
            for width in [3, 4] {
                let many = realm.objects(SContact.self).sectioned(by: { String($0.name.prefix(width)) },
                                                                  sortDescriptors: [SortDescriptor(keyPath: "name")])
                var want: [String] = []
                for name in sorted where want.last != String(name.prefix(width)) { want.append(String(name.prefix(width))) }
                #expect(many.allKeys == want, "keys of width \(width)")
                #expect(many.count == (width == 3 ? 300 : 3000))
                for (s, section) in many.enumerated() {
                    #expect(section.allSatisfy { String($0.name.prefix(width)) == want[s] })
                }
                #expect(many.map(\.count).reduce(0, +) == 3000)
            }
            // 26 keys whose sections are not runs of the sorted order (the layout then keeps
            // each element's section and row)
            let scattered = realm.objects(SContact.self).sectioned(by: { String(UnicodeScalar(97 + $0.id % 26)!) },
                                                                   sortDescriptors: [SortDescriptor(keyPath: "name")])
            #expect(scattered.count == 26)
            for section in scattered {
                #expect(section.allSatisfy { String(UnicodeScalar(97 + $0.id % 26)!) == section.key })
                #expect(section.map(\.name) == section.map(\.name).sorted())
            }
            let scatteredTotal: Int = scattered.map(\.count).reduce(0, +) // typed: quicker to compile
            #expect(scatteredTotal == 3000)
        }
    }

    /// The pass computing the sections moves one accessor from row to row; a block that keeps
    /// its argument gets an accessor of its own.
    @Test func sectioningMakesNoObjectPerElement() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try realm.write {
                for i in 0..<20_000 { realm.create(SCounted.self, value: ["name": String(UnicodeScalar(97 + i % 26)!) + "\(i)"]) }
            }
            let before = SCounted.made.load(ordering: .relaxed)
            let sections = realm.objects(SCounted.self).sectioned(by: { String($0.name.prefix(1)) },
                                                                  sortDescriptors: [SortDescriptor(keyPath: "name")])
            #expect(sections.count == 26)
            #expect(sections.map(\.count).reduce(0, +) == 20_000)
            #expect(sections[25].first!.name.hasPrefix("z"))
            let made = SCounted.made.load(ordering: .relaxed) - before
            #expect(made < 100, "made \(made) accessors")
            var kept: [SCounted] = []
            let keeping = realm.objects(SCounted.self).filter("name BEGINSWITH 'b'").sectioned(
                by: { (c: SCounted) -> String in kept.append(c); return String(c.name.prefix(2)) },
                sortDescriptors: [SortDescriptor(keyPath: "name")])
            let bs = realm.objects(SCounted.self).filter("name BEGINSWITH 'b'").sorted(byKeyPath: "name").map(\.name)
            #expect(keeping.count == Set(bs.map { $0.prefix(2) }).count)
            // each kept object still reads its own element (the block runs in no set order)
            #expect(Set(kept.map(\.name)).count == kept.count)
            let keptNames: [String] = kept.map(\.name).sorted() // typed: quicker to compile
            #expect(keptNames == bs.sorted())
        }
    }

    // MARK: Change derivation

    /// `newPositions` against positions computed by applying the change to a list.
    @Test func newPositionsOfModifiedElements() {
        var rng = SeededRNG(seed: stableSeed("sections.positions"))
        for _ in 0..<500 {
            let old = Array(0..<Int.random(in: 0...30, using: &rng))
            let deleted = Set(old.filter { _ in Int.random(in: 0..<4, using: &rng) == 0 })
            var now = old.filter { !deleted.contains($0) }
            var next = 1000
            for _ in 0..<Int.random(in: 0...8, using: &rng) {
                now.insert(next, at: Int.random(in: 0...now.count, using: &rng))
                next += 1
            }
            let insertions = now.indices.filter { now[$0] >= 1000 }
            let stayed = old.filter { !deleted.contains($0) && Bool.random(using: &rng) }
            let got = SectionChange.newPositions(of: stayed, deletions: deleted.sorted(), insertions: insertions)
            #expect(got == stayed.map { now.firstIndex(of: $0)! })
        }
    }

    // MARK: Notifications

    @Test func initialThenMovesBetweenSections() throws {
        let f = try SFixture()
        let seen = Events<SeenSections>()
        try f.run { realm in
            try realm.write { add(realm, [(1, "Ann", 1), (2, "Bob", 2), (3, "Bea", 3)]) }
            let s = realm.objects(SContact.self).sectioned(by: initial, sortDescriptors: [SortDescriptor(keyPath: "name")])
            f.tokens.append(s.observe { seen.add(SeenSections($0)) })
            // folded into the initial notification
            try realm.write { add(realm, [(4, "Cy", 4)]) }
        }
        #expect(seen.next() == SeenSections(initial: true, keys: ["A", "B", "C"]))
        // Ann -> Dan: leaves A (section gone), D appears at the end
        f.writeElsewhere { r in contact(r, 1).name = "Dan" }
        #expect(seen.next() == SeenSections(keys: ["B", "C", "D"], ins: [[2, 0]], secIns: [2], secDel: [0]))
        // Bob -> Cat: B keeps Bea; Cat goes before Cy in C
        f.writeElsewhere { r in contact(r, 2).name = "Cat" }
        #expect(seen.next() == SeenSections(keys: ["B", "C", "D"], del: [[0, 1]], ins: [[1, 0]]))
        // a modification in place; a deletion; an insertion into an existing section
        f.writeElsewhere { r in
            contact(r, 4).age = 40
            r.delete(contact(r, 3))
            add(r, [(5, "Dot", 5)])
        }
        #expect(seen.next() == SeenSections(keys: ["C", "D"], ins: [[1, 1]], mod: [[1, 1]], secDel: [0]))
        try f.finish()
    }

    /// RealmSwift's sectioned change rules: rows of a deleted section are not listed, rows of an
    /// inserted one are; a modified element that changes row is a deletion and an insertion.
    @Test func realmSwiftExampleOnAQueue() throws {
        let f = try SFixture()
        let seen = Events<SeenSections>()
        let queue = DispatchQueue(label: "sections")
        try f.run { realm in
            try realm.write { add(realm, [(1, "apple", 0), (2, "box", 0), (3, "banana", 0), (4, "cake", 0)]) }
            let s = realm.objects(SContact.self).sectioned(by: initial, sortDescriptors: [SortDescriptor(keyPath: "name")])
            f.tokens.append(s.observe(keyPaths: ["name"], on: queue) { change in
                dispatchPrecondition(condition: .onQueue(queue))
                seen.add(SeenSections(change))
            })
        }
        #expect(seen.next() == SeenSections(initial: true, keys: ["a", "b", "c"]))
        f.writeElsewhere { r in
            r.delete(contact(r, 3))
            r.delete(contact(r, 1))
            contact(r, 2).name = "bog"
            add(r, [(5, "zebra", 0)])
        }
        #expect(seen.next() == SeenSections(keys: ["b", "c", "z"], del: [[1, 0], [1, 1]], ins: [[0, 0], [2, 0]],
                                            secIns: [2], secDel: [0]))
        f.writeElsewhere { r in
            contact(r, 2).name = "bogg"
            contact(r, 4).age = 1 // not in the key paths
        }
        #expect(seen.next() == SeenSections(keys: ["b", "c", "z"], mod: [[0, 0]]))
        f.writeElsewhere { r in contact(r, 4).age = 2 }
        f.writeElsewhere { r in add(r, [(6, "cider", 0)]) }
        #expect(seen.next() == SeenSections(keys: ["b", "c", "z"], ins: [[1, 1]]))
        try f.finish()
    }

    /// A key-path filter: writes to other properties are not reported, unless they move an
    /// element to another section (the section key's sort property is always watched).
    @Test func keyPathFilteredObserver() throws {
        let f = try SFixture()
        let byAge = Events<SeenSections>(), swiftPaths = Events<SeenSections>()
        try f.run { realm in
            try realm.write { add(realm, [(1, "Ann", 1), (2, "Bo", 2)]) }
            let s = realm.objects(SContact.self).sectioned(by: initial, sortDescriptors: [SortDescriptor(keyPath: "name")])
            f.tokens.append(s.observe(keyPaths: ["age"]) { byAge.add(SeenSections($0)) })
            f.tokens.append(s.observe(keyPaths: [\SContact.age]) { swiftPaths.add(SeenSections($0)) })
        }
        #expect(byAge.next() == SeenSections(initial: true, keys: ["A", "B"]))
        #expect(swiftPaths.next() == SeenSections(initial: true, keys: ["A", "B"]))
        f.writeElsewhere { r in contact(r, 1).adopted = true }
        f.writeElsewhere { r in contact(r, 2).age = 5 }
        #expect(byAge.next() == SeenSections(keys: ["A", "B"], mod: [[1, 0]]))
        #expect(swiftPaths.next() == SeenSections(keys: ["A", "B"], mod: [[1, 0]]))
        // Ann -> Al keeps both order and section: still not a move; Bo -> Cid changes section
        // without moving in the sorted results
        f.writeElsewhere { r in contact(r, 2).name = "Cid" }
        #expect(byAge.next() == SeenSections(keys: ["A", "C"], ins: [[1, 0]], secIns: [1], secDel: [1]))
        #expect(swiftPaths.next() == SeenSections(keys: ["A", "C"], ins: [[1, 0]], secIns: [1], secDel: [1]))
        try f.finish()
    }

    /// A section's observer is called only for changes inside its own section, with the index
    /// paths of the whole sectioned results.
    @Test func sectionObserver() throws {
        let f = try SFixture()
        let a = Events<SeenSections>(), b = Events<SeenSections>()
        try f.run { realm in
            try realm.write { add(realm, [(1, "apple", 0), (2, "box", 0), (3, "banana", 0), (4, "cake", 0)]) }
            let s = realm.objects(SContact.self).sectioned(by: initial, sortDescriptors: [SortDescriptor(keyPath: "name")])
            f.tokens.append(s[0].observe(keyPaths: ["name"]) { a.add(SeenSections(section: $0)) })
            f.tokens.append(s[1].observe(keyPaths: [\SContact.name]) { b.add(SeenSections(section: $0)) })
        }
        #expect(a.next() == SeenSections(initial: true, keys: ["apple"]))
        #expect(b.next() == SeenSections(initial: true, keys: ["banana", "box"]))
        // only section "a" changes: "b" is not called
        f.writeElsewhere { r in add(r, [(5, "avocado", 0)]) }
        #expect(a.next() == SeenSections(keys: ["apple", "avocado"], ins: [[0, 1]]))
        // only "b": banana deleted
        f.writeElsewhere { r in r.delete(contact(r, 3)) }
        #expect(b.next() == SeenSections(keys: ["box"], del: [[1, 0]]))
        // a change in "c" alone calls neither
        f.writeElsewhere { r in contact(r, 4).name = "cakes" }
        // "a" disappears
        f.writeElsewhere { r in r.delete(r.objects(SContact.self).filter("name BEGINSWITH 'a'")) }
        #expect(a.next() == SeenSections(keys: [], secDel: [0]))
        // box -> bog, bag added: b is now section 0
        f.writeElsewhere { r in
            contact(r, 2).name = "bog"
            add(r, [(6, "bag", 0)])
        }
        #expect(b.next() == SeenSections(keys: ["bag", "bog"], del: [[0, 0]], ins: [[0, 0], [0, 1]]))
        // "a" comes back
        f.writeElsewhere { r in add(r, [(7, "app", 0)]) }
        #expect(a.next() == SeenSections(keys: ["app"], ins: [[0, 0]], secIns: [0]))
        #expect(a.waiting == 0 && b.waiting == 0)
        try f.finish()
    }

    /// The changes as an AsyncSequence, for sectioned results and for one section.
    @Test func asyncSequences() async throws {
        let dir = TempDir()
        let config = dir.config(models)
        let made = UncheckedBox<(RealmChanges<SectionedResultsChange<SectionedResults<Int, SContact>>>,
                                 RealmChanges<SectionedResultsChange<ResultsSection<Int, SContact>>>)?>(nil)
        let thread = RunLoopThread()
        try thread.sync {
            let realm = try Realm(configuration: config)
            try realm.write { add(realm, [(1, "a", 1), (2, "b", 2)]) }
            let s = realm.objects(SContact.self).sectioned(by: \.age)
            made.value = (s.changes(), s[1].changes(keyPaths: ["name"]))
        }
        let (all, second) = made.value!
        var it = all.makeAsyncIterator()
        var it2 = second.makeAsyncIterator()
        guard case .initial(let first)? = await it.next() else { Issue.record("no initial"); return }
        #expect(first.count == 2)
        guard case .initial? = await it2.next() else { Issue.record("no initial"); return }
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write { contact(r, 2).name = "c" }
        }
        if case .update(_, let d, let i, let m, let si, let sd)? = await it.next() {
            #expect(d.isEmpty && i.isEmpty && m == [IndexPath(item: 0, section: 1)] && si.isEmpty && sd.isEmpty)
        } else {
            Issue.record("no update")
        }
        if case .update(_, _, _, let m, _, _)? = await it2.next() {
            #expect(m == [IndexPath(item: 0, section: 1)])
        } else {
            Issue.record("no section update")
        }
        made.value = nil
        thread.stop()
    }

    /// Random commits: applying each reported change to the previous sections must give the
    /// new sections, both when each change is taken and when changes coalesce.
    @Test func randomCommitsOracle() throws {
        let f = try SFixture()
        let seen = Events<(SeenSections, [String])>()
        try f.run { realm in
            let s = realm.objects(SContact.self).sectioned(by: initial, sortDescriptors: [SortDescriptor(keyPath: "name")])
            f.tokens.append(s.observe { change in
                switch change {
                case .initial(let v): seen.add((SeenSections(change), snapshot(v)))
                case .update(let v, _, _, _, _, _): seen.add((SeenSections(change), snapshot(v)))
                }
            })
        }
        guard var (_, shown) = seen.next() else { Issue.record("no initial"); return }
        var rng = SeededRNG(seed: stableSeed("sections.oracle"))
        var nextId = 1
        let letters = ["a", "b", "c", "d", "e"]
        for round in 0..<150 {
            var ops: [(Int, Int, String)] = [] // kind, id, name
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let name = letters.randomElement(using: &rng)! + String(Int.random(in: 0..<50, using: &rng))
                ops.append((Int.random(in: 0..<3, using: &rng), Int.random(in: 1..<max(2, nextId), using: &rng), name))
            }
            let first = nextId
            nextId += ops.filter { $0.0 == 0 }.count
            let batch = ops
            f.writeElsewhere { r in
                var id = first
                for (kind, target, name) in batch {
                    switch kind {
                    case 0:
                        add(r, [(id, name, 0)])
                        id += 1
                    case 1:
                        if let c = r.objects(SContact.self).filter("id == %@", target).first { r.delete(c) }
                    default:
                        r.objects(SContact.self).filter("id == %@", target).first?.name = name
                    }
                }
            }
            // let some commits pile up before taking the change
            if round % 3 == 1 { continue }
            let target = snapshotNow(f)
            while shown != target {
                guard let (change, now) = seen.next() else { Issue.record("no change in round \(round)"); return }
                let applied = apply(change, to: shown)
                #expect(matches(applied, now), "round \(round): \(change) on \(shown) gave \(applied), not \(now)")
                // a modification names an element that keeps its key and its row
                for m in change.mod {
                    let before = rows(shown[m[0]])
                    let after = now.first { rows($0).key == before.key }.map(rows)
                    #expect(after != nil && m[1] < after!.ids.count && after!.ids[m[1]] == before.ids[m[1]],
                            "round \(round): modification \(m) on \(shown) -> \(now)")
                }
                shown = now
            }
        }
        try f.finish()
    }
}

/// The sections now, read on the fixture's thread after refreshing.
private func snapshotNow(_ f: SFixture) -> [String] {
    (try? f.run { realm -> [String] in
        realm.refresh()
        return snapshot(realm.objects(SContact.self).sectioned(by: initial, sortDescriptors: [SortDescriptor(keyPath: "name")]))
    }) ?? []
}

/// Applies a sectioned change to sections given as "key:id,id" (ids only; modifications must
/// name rows that exist before and after).
private func apply(_ c: SeenSections, to old: [String]) -> [String] {
    var sections: [(String, [String])] = old.map { s in
        let parts = s.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        return (String(parts[0]), parts[1].isEmpty ? [] : parts[1].split(separator: ",").map(String.init))
    }
    for m in c.mod where m[0] >= sections.count || m[1] >= sections[m[0]].1.count { return ["bad modification \(m)"] }
    for d in c.del.sorted(by: { ($0[0], $0[1]) > ($1[0], $1[1]) }) { sections[d[0]].1.remove(at: d[1]) }
    for s in c.secDel.sorted(by: >) { sections.remove(at: s) }
    // keys of inserted sections come from the new key list
    for s in c.secIns.sorted() { sections.insert((c.keys[s], []), at: s) }
    for i in c.ins {
        guard i[0] < sections.count, i[1] <= sections[i[0]].1.count else { return ["bad insertion \(i)"] }
        sections[i[0]].1.insert("?", at: i[1])
    }
    return sections.map { "\($0.0):" + $0.1.joined(separator: ",") }
}

/// A section given as "key:id,id".
private func rows(_ s: String) -> (key: String, ids: [String]) {
    let parts = s.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
    return (String(parts[0]), parts[1].split(separator: ",").map(String.init))
}

/// Whether applied sections equal the new ones, an inserted row ("?") matching any id.
private func matches(_ applied: [String], _ now: [String]) -> Bool {
    guard applied.count == now.count else { return false }
    for (a, n) in zip(applied, now) {
        let pa = a.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let pn = n.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard pa[0] == pn[0] else { return false }
        let ia = pa[1].split(separator: ","), inn = pn[1].split(separator: ",")
        guard ia.count == inn.count else { return false }
        for (x, y) in zip(ia, inn) where x != "?" && x != y { return false }
    }
    return true
}
