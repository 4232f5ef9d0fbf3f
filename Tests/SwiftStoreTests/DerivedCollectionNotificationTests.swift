import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// Observing a query over a List, a MutableSet or LinkingObjects (filtered or sorted; Maps in
/// SectionedValuesNotificationTests): the change sets are positions in the query's results.
@Suite struct DerivedCollectionNotificationTests {
    /// Sectioned results over a List whose owner another thread deletes, observed on the run loop
    /// and on a queue: one update deleting every section (results over a deleted owner read as
    /// invalidated, and their sections as none), as the List's own observer gets every element
    /// deleted. Sections observed while the owner is deleted before their watch is made: one
    /// `.initial` with no sections. (In a child process: reading the sections of such results
    /// ran their query and trapped.)
    @Test func sectionsOverAListWhoseOwnerIsDeleted() async {
        await #expect(processExitsWith: .success) {
            let f = try! SFixture()
            let queue = DispatchQueue(label: "sections-owner-deleted")
            let onRunLoop = Events<SeenSections>(), onQueue = Events<SeenSections>()
            try! f.run { realm in
                try realm.write {
                    let g = realm.create(SGroup.self, value: ["name": "g"])
                    for (id, name, age) in [(1, "d", 4), (2, "b", 2), (3, "c", 3)] {
                        g.members.append(realm.create(SContact.self, value: ["id": id, "name": name, "age": age]))
                    }
                }
                let sections = realm.objects(SGroup.self).first!.members.sectioned(by: \.age)
                f.tokens.append(sections.observe { onRunLoop.add(SeenSections($0)) })
                f.tokens.append(sections.observe(on: queue) { onQueue.add(SeenSections($0)) })
            }
            precondition(onRunLoop.next() == SeenSections(initial: true, keys: ["2", "3", "4"]))
            precondition(onQueue.next() == SeenSections(initial: true, keys: ["2", "3", "4"]))
            f.writeElsewhere { r in r.delete(r.objects(SGroup.self)) }
            precondition(onRunLoop.next() == SeenSections(keys: [], secDel: [0, 1, 2]))
            precondition(onQueue.next() == SeenSections(keys: [], secDel: [0, 1, 2]))
            // the owner deleted before the watch of a new observer is made
            try! f.run { realm in try realm.write { realm.create(SGroup.self, value: ["name": "h"]) } }
            let held = Events<Seen>(), late = Events<SeenSections>()
            // (the notifier thread is held making another observer's watch)
            let hold = HoldMaking(f.config.path)
            try! f.run { realm in f.tokens.append(realm.objects(SContact.self).observe(on: queue) { held.add(Seen($0)) }) }
            precondition(hold.waitEntered())
            try! f.run { realm in
                let sections = realm.objects(SGroup.self).first!.members.sectioned(by: \.age)
                f.tokens.append(sections.observe(on: queue) { late.add(SeenSections($0)) })
            }
            f.writeElsewhere { r in r.delete(r.objects(SGroup.self)) }
            hold.release()
            precondition(late.next() == SeenSections(initial: true, keys: []))
            try! f.finish()
        }
    }

    @Test func sortedAndFilteredList() throws {
        let f = try SFixture()
        let sorted = Events<Seen>(), young = Events<Seen>(), sections = Events<SeenSections>()
        try f.run { realm in
            try realm.write {
                let g = realm.create(SGroup.self, value: ["name": "g"])
                for (id, name, age) in [(1, "d", 4), (2, "b", 2), (3, "c", 3)] {
                    g.members.append(realm.create(SContact.self, value: ["id": id, "name": name, "age": age]))
                }
            }
            let g = realm.objects(SGroup.self).first!
            f.tokens.append(g.members.sorted(byKeyPath: "age").observe { sorted.add(Seen($0)) })
            f.tokens.append(g.members.filter("age < 4").observe { young.add(Seen($0)) })
            f.tokens.append(g.members.sectioned(by: \.age).observe { sections.add(SeenSections($0)) })
        }
        #expect(sorted.next() == Seen(initial: true, count: 3))
        #expect(young.next() == Seen(initial: true, count: 2))
        #expect(sections.next() == SeenSections(initial: true, keys: ["2", "3", "4"]))
        // "d" (age 4) becomes 1: moves to the front of the sorted list, enters the filter at its
        // list position 0
        f.writeElsewhere { r in r.objects(SContact.self).filter("id == 1").first!.age = 1 }
        #expect(sorted.next() == Seen(count: 3, del: [2], ins: [0]))
        #expect(young.next() == Seen(count: 3, ins: [0]))
        #expect(sections.next() == SeenSections(keys: ["1", "2", "3"], ins: [[0, 0]], secIns: [0], secDel: [2]))
        // a property the sort and the filter do not read: a modification in place
        f.writeElsewhere { r in r.objects(SContact.self).filter("id == 3").first!.name = "cc" }
        #expect(sorted.next() == Seen(count: 3, mod: [2]))
        #expect(young.next() == Seen(count: 3, mod: [2]))
        #expect(sections.next() == SeenSections(keys: ["1", "2", "3"], mod: [[2, 0]]))
        // removing from the list and appending a new member
        f.writeElsewhere { r in
            let g = r.objects(SGroup.self).first!
            g.members.remove(at: 1)
            g.members.append(r.create(SContact.self, value: ["id": 4, "name": "a", "age": 9]))
        }
        #expect(sorted.next() == Seen(count: 3, del: [1], ins: [2]))
        #expect(young.next() == Seen(count: 2, del: [1]))
        #expect(sections.next() == SeenSections(keys: ["1", "3", "9"], ins: [[2, 0]], secIns: [2], secDel: [1]))
        try f.finish()
    }

    @Test func sortedLinkingObjects() throws {
        let f = try SFixture()
        let children = Events<Seen>(), plain = Events<Seen>()
        try f.run { realm in
            try realm.write {
                let g = realm.create(SGroup.self, value: ["name": "g"])
                realm.create(SGroup.self, value: ["name": "m", "parent": g])
                realm.create(SGroup.self, value: ["name": "k", "parent": g])
            }
            let g = realm.objects(SGroup.self).filter("name == 'g'").first!
            f.tokens.append(g.children.sorted(byKeyPath: "name").observe { children.add(Seen($0)) })
            f.tokens.append(g.children.observe { plain.add(Seen($0)) })
        }
        #expect(children.next() == Seen(initial: true, count: 2))
        #expect(plain.next() == Seen(initial: true, count: 2))
        f.writeElsewhere { r in
            let g = r.objects(SGroup.self).filter("name == 'g'").first!
            r.create(SGroup.self, value: ["name": "a", "parent": g])
        }
        #expect(plain.next() == Seen(count: 3, ins: [2]))
        #expect(children.next() == Seen(count: 3, ins: [0]))
        f.writeElsewhere { r in r.objects(SGroup.self).filter("name == 'm'").first!.parent = nil }
        #expect(children.next() == Seen(count: 2, del: [2]))
        f.writeElsewhere { r in r.objects(SGroup.self).filter("name == 'k'").first!.tags.append("x") }
        #expect(children.next() == Seen(count: 2, mod: [1]))
        try f.finish()
    }
}
