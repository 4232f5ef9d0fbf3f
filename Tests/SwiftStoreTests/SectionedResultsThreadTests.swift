import Foundation
import Testing
@testable import SwiftStore

private let threadModels: [ObjectBase.Type] = [SContact.self, SGroup.self, SCounted.self]

private func firstLetter(_ c: SContact) -> String { String(c.name.prefix(1)) }

/// The sections as plain values: key, then the ids of its contacts.
private func idsBySection<K>(_ s: SectionedResults<K, SContact>) -> [String] {
    s.map { section in "\(section.key):" + section.map { String($0.id) }.joined(separator: ",") }
}

/// Generic over any thread-confined value, as user code written against RealmSwift is.
private func reference<T: ThreadConfined>(_ value: T) -> ThreadSafeReference<T> { ThreadSafeReference(to: value) }

/// SectionedResults and ResultsSection as thread-confined values: ThreadSafeReference and
/// @ThreadSafe hand them to another thread, where they are live sections of that thread's Realm.
@Suite struct SectionedResultsThreadTests {
    func seeded(_ dir: TempDir) throws -> Realm {
        let realm = try Realm(configuration: dir.config(threadModels))
        try realm.write {
            add(realm, [(1, "Alice", 30), (2, "Bob", 25), (3, "Anna", 41), (4, "Carl", 25), (5, "Bea", 30)])
        }
        return realm
    }

    @Test func referencesResolveOnAnotherThreadAsLiveSections() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let config = realm.configuration
        let sections = realm.objects(SContact.self).filter("age < 40")
            .sectioned(by: firstLetter, sortDescriptors: [SortDescriptor(keyPath: "name")])
        #expect(idsBySection(sections) == ["A:1", "B:5,2", "C:4"])
        let refs = UncheckedBox((reference(sections), ThreadSafeReference(to: sections[1])))
        // a write after the references were made: the other thread's Realm is at least at
        // the references' version, and here it is newer
        try realm.write { add(realm, [(6, "Ada", 20)]) }
        let seen = UncheckedBox<[String]>([])
        onNewThread {
            let r = try! Realm(configuration: config)
            let (all, b) = refs.value
            let s = r.resolve(all)!
            let section = r.resolve(b)!
            seen.value.append("\(s.isFrozen) \(section.isFrozen) \(s.realm == r)")
            seen.value.append(idsBySection(s).joined(separator: " "))
            seen.value.append("\(section.key):" + section.map { String($0.id) }.joined(separator: ","))
            // live on this thread: a write here shows in both
            try! r.write { add(r, [(7, "Bo", 1)]) }
            seen.value.append(idsBySection(s).joined(separator: " "))
            seen.value.append(section.map(\.name).joined(separator: ","))
            seen.value.append("\(all.isInvalidated) \(b.isInvalidated)")
        }
        #expect(seen.value == ["false false true", "A:6,1 B:5,2 C:4", "B:5,2", "A:6,1 B:5,7,2 C:4",
                               "Bea,Bo,Bob", "true true"])
        // a reference resolves once
        #expect(refs.value.0.isInvalidated)
    }

    @Test func sectionsOfADeletedListResolveToNil() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let config = realm.configuration
        let group = SGroup()
        try realm.write {
            realm.add(group)
            group.members.append(objectsIn: realm.objects(SContact.self).sorted(byKeyPath: "id"))
        }
        let sections = group.members.sectioned(by: \.age)
        #expect(idsBySection(sections) == ["25:2,4", "30:1,5", "41:3"])
        let refs = UncheckedBox((ThreadSafeReference(to: sections), ThreadSafeReference(to: sections[2])))
        let kept = UncheckedBox(ThreadSafeReference(to: sections))
        try realm.write { realm.delete(group) }
        let seen = UncheckedBox<[Bool]>([])
        onNewThread {
            let r = try! Realm(configuration: config)
            seen.value = [r.resolve(refs.value.0) == nil, r.resolve(refs.value.1) == nil]
        }
        #expect(seen.value == [true, true])
        _ = kept
    }

    @Test func threadSafeWrapperHoldsSections() throws {
        let dir = TempDir()
        let realm = try seeded(dir)
        let config = realm.configuration
        let holder = SectionsHolder()
        holder.sections = realm.objects(SContact.self).sectioned(by: \.age, ascending: false)
        holder.section = holder.sections![0]
        let seen = UncheckedBox<[String]>([])
        onNewThread {
            let r = try! Realm(configuration: config)
            seen.value.append(holder.sections!.allKeys.map(String.init).joined(separator: ","))
            try! r.write { add(r, [(8, "Dan", 50)]) }
            seen.value.append(holder.sections!.allKeys.map(String.init).joined(separator: ","))
            seen.value.append("\(holder.section!.key) \(holder.section!.count) \(holder.section!.realm == r)")
        }
        #expect(seen.value == ["41,30,25", "50,41,30,25", "41 1 true"])
        realm.refresh()
        #expect(holder.sections!.allKeys == [50, 41, 30, 25])
    }
}

/// Sections kept as thread-safe references.
final class SectionsHolder: @unchecked Sendable {
    @ThreadSafe var sections: SectionedResults<Int, SContact>?
    @ThreadSafe var section: ResultsSection<Int, SContact>?
}
