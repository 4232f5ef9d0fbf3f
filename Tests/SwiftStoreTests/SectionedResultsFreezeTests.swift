import Foundation
import Testing
@testable import SwiftStore

private let freezeModels: [ObjectBase.Type] = [SContact.self, SGroup.self, SCounted.self]

/// The sections as plain values: key, then the ids of its contacts.
private func layoutOf<K>(_ s: SectionedResults<K, SContact>) -> [String] {
    s.map { section in "\(section.key):" + section.map { String($0.id) }.joined(separator: ",") }
}

/// The same, read by index and index path instead of by iteration.
private func layoutByIndex<K>(_ s: SectionedResults<K, SContact>) -> [String] {
    (0..<s.count).map { i in
        let section = s[i]
        return "\(s.allKeys[i]):" + (0..<section.count).map { String(s[IndexPath(item: $0, section: i)].id) }
            .joined(separator: ",")
    }
}

private func byInitial(_ c: SContact) -> String { String(c.name.prefix(1)) }

/// Frozen sectioned results and sections: freeze and thaw, the frozen sections staying at their
/// version while others write, and reads from many threads at once.
@Suite struct SectionedResultsFreezeTests {
    func seeded(_ dir: TempDir) throws -> Realm {
        let realm = try Realm(configuration: dir.config(freezeModels))
        try realm.write {
            add(realm, [(1, "Alice", 30), (2, "Bob", 25), (3, "Anna", 41), (4, "Carl", 25), (5, "Bea", 30)])
        }
        return realm
    }

    @Test func freezeThawRoundTrip() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let live = realm.objects(SContact.self).sectioned(by: byInitial, sortDescriptors: [SortDescriptor(keyPath: "name")])
        #expect(!live.isFrozen)
        #expect(!live[0].isFrozen)
        let frozen = live.freeze()
        #expect(frozen.isFrozen)
        #expect(frozen.realm?.isFrozen == true)
        #expect(frozen.freeze() == frozen, "freezing frozen sections gives themselves")
        #expect(frozen != live)
        #expect(frozen.allKeys == ["A", "B", "C"])
        #expect(layoutOf(frozen) == ["A:1,3", "B:5,2", "C:4"])
        #expect(layoutByIndex(frozen) == layoutOf(live))
        #expect(frozen[0].isFrozen)
        #expect(frozen[1].realm?.isFrozen == true)

        let thawed = try #require(frozen.thaw())
        #expect(!thawed.isFrozen)
        #expect(thawed.realm == realm, "thawed into the calling thread's live Realm")
        #expect(layoutOf(thawed) == layoutOf(live))
        #expect(live.thaw() == live, "thawing live sections gives themselves")

        // A section on its own.
        let liveB = live[1]
        let frozenB = liveB.freeze()
        #expect(frozenB.isFrozen && frozenB.key == "B")
        #expect(frozenB.map(\.id) == [5, 2])
        #expect(frozenB.freeze() == frozenB)
        let thawedB = try #require(frozenB.thaw())
        #expect(!thawedB.isFrozen && thawedB.key == "B")
        #expect(thawedB.map(\.id) == [5, 2])
        #expect(liveB.thaw() == liveB)
    }

    @Test func aWriteAfterFreezingDoesNotChangeTheFrozenSections() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let live = realm.objects(SContact.self).sectioned(by: byInitial, sortDescriptors: [SortDescriptor(keyPath: "name")])
        let frozen = live.freeze()
        let frozenA = live[0].freeze()
        let frozenC = frozen[2]
        let before = layoutOf(live)
        try realm.write {
            realm.delete(realm.objects(SContact.self).filter("id == 4")) // section C goes away
            realm.objects(SContact.self).filter("id == 1").first!.name = "Zoe" // A -> Z
            add(realm, [(6, "Adam", 20), (7, "Dora", 50)])
        }
        #expect(layoutOf(live) == ["A:6,3", "B:5,2", "D:7", "Z:1"], "the live sections moved")
        #expect(layoutOf(frozen) == before, "the frozen ones did not")
        #expect(layoutByIndex(frozen) == before)
        #expect(frozen.allKeys == ["A", "B", "C"])
        #expect(frozenA.map(\.id) == [1, 3] && frozenA.map(\.name) == ["Alice", "Anna"])
        #expect(frozenC.count == 1 && frozenC[0].name == "Carl")
        #expect(frozen.freeze() == frozen)

        // Freezing again gives the new version; thawing the old one gives the live state now.
        #expect(layoutOf(live.freeze()) == layoutOf(live))
        let thawed = try #require(frozen.thaw())
        #expect(layoutOf(thawed) == layoutOf(live))
        let thawedA = try #require(frozenA.thaw())
        #expect(thawedA.map(\.id) == [6, 3])
    }

    @Test func sectionsOfAListThawToNilOnceTheOwnerIsDeleted() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(freezeModels))
        let group = SGroup()
        try realm.write {
            realm.add(group)
            add(realm, [(1, "Alice", 30), (2, "Bob", 25), (3, "Anna", 41)])
            group.members.append(objectsIn: realm.objects(SContact.self).sorted(byKeyPath: "id"))
        }
        let live = group.members.sectioned(sortDescriptors: [SortDescriptor(keyPath: "name")], byInitial)
        let frozen = live.freeze()
        #expect(frozen.isFrozen)
        #expect(layoutOf(frozen) == ["A:1,3", "B:2"])
        #expect(try #require(frozen.thaw()).count == 2)
        try realm.write { realm.delete(group) }
        #expect(frozen.thaw() == nil)
        #expect(frozen[0].thaw() == nil)
        #expect(layoutOf(frozen) == ["A:1,3", "B:2"], "the frozen sections still read")
    }

    @Test func frozenSectionsAreReadFromManyThreadsWhileAnotherThreadWrites() throws {
        let dir = TempDir()
        let config = dir.config(freezeModels)
        let realm = try Realm(configuration: config)
        let letters = Array("ABCDEFGHIJ")
        try realm.write {
            for i in 0..<300 {
                realm.create(SContact.self, value: ["id": i, "name": "\(letters[i % letters.count])\(1000 - i)", "age": i])
            }
        }
        let live = realm.objects(SContact.self).sectioned(by: byInitial, sortDescriptors: [SortDescriptor(keyPath: "name")])
        let expected = layoutOf(live)
        #expect(expected.count == letters.count)
        let shared = UncheckedBox((live.freeze(), live[3].freeze()))
        let expectedD = live[3].map(\.id)

        // A writer renames, deletes and adds contacts while the readers run.
        let writerDone = DispatchSemaphore(value: 0)
        Thread {
            let r = try! Realm(configuration: config)
            for round in 0..<20 {
                try! r.write {
                    for c in r.objects(SContact.self).filter("id < 100") { c.name = "\(letters[(c.id + round + 1) % letters.count])\(c.id)" }
                    r.delete(r.objects(SContact.self).filter("id == %@", 299 - round))
                    r.create(SContact.self, value: ["id": 1000 + round, "name": "K\(round)", "age": 0])
                }
            }
            writerDone.signal()
        }.start()

        let bad = UncheckedBox(0)
        let lock = NSLock()
        let group = DispatchGroup()
        for t in 0..<4 {
            group.enter()
            Thread {
                let (sections, sectionD) = shared.value
                var errors = 0
                for round in 0..<5 {
                    // half the threads start by index, half by iteration
                    let first = (t + round) % 2 == 0 ? layoutByIndex(sections) : layoutOf(sections)
                    if first != expected { errors += 1 }
                    if sections.count != letters.count || sections.allKeys != letters.map(String.init) { errors += 1 }
                    if sectionD.map(\.id) != expectedD || sectionD.count != expectedD.count { errors += 1 }
                    if sections[3].key != sectionD.key || sections[3].map(\.id) != expectedD { errors += 1 }
                }
                lock.lock(); bad.value += errors; lock.unlock()
                group.leave()
            }.start()
        }
        group.wait()
        writerDone.wait()
        #expect(bad.value == 0)
        realm.refresh()
        #expect(layoutOf(live) != expected, "the writer changed the live sections")
        #expect(layoutOf(try #require(shared.value.0.thaw())) == layoutOf(live))
    }

    @Test func observingFrozenSectionedResultsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([SContact.self, SGroup.self, SCounted.self]))
            let frozen = realm.objects(SContact.self).sectioned(by: \.age).freeze()
            _ = frozen.observe { _ in }
        }
        expectMessage(result, "Frozen Realms do not change and do not have change notifications.")
    }

    @Test func observingAFrozenSectionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([SContact.self, SGroup.self, SCounted.self]))
            try! realm.write { realm.create(SContact.self, value: ["id": 1, "name": "A", "age": 3]) }
            let frozen = realm.objects(SContact.self).sectioned(by: \.age)[0].freeze()
            _ = frozen.observe { _ in }
        }
        expectMessage(result, "Frozen Realms do not change and do not have change notifications.")
    }

    @Test func freezingInsideAWriteTransactionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([SContact.self, SGroup.self, SCounted.self]))
            let live = realm.objects(SContact.self).sectioned(by: \.age)
            realm.beginWrite()
            _ = live.freeze()
        }
        expectMessage(result, "Cannot freeze an object in the same write transaction as it was created in.")
    }
}
