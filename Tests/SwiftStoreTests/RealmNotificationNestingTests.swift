import Dispatch
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// `refresh()` and writes inside Realm observers' blocks (docs/ARCHITECTURE.md, Change
/// notifications), as in RealmSwift: realm-core sends `.refreshRequired` and the `.didChange`
/// that follows a commit through the Realm outside its sending-notifications state, so
/// `refresh()` and `beginWrite` inside those blocks move the Realm and deliver collection
/// change sets; a Realm notification raised while a Realm observer's block of that Realm runs
/// is not sent (RealmSwift's Realm sends none from inside one of its notification blocks).
@Suite struct RealmNotificationNestingTests {
    /// With autorefresh off, `refresh()` inside the `.refreshRequired` block moves the Realm and
    /// delivers the collection observer's change set before it returns, and the Realm observer
    /// gets no `.didChange` nested in its own block.
    @Test func refreshInsideRefreshRequiredDeliversWithoutANestedDidChange() throws {
        let f = try Fixture()
        let events = Events<String>()
        try f.run { realm in
            realm.autorefresh = false
            f.tokens.append(realm.objects(NDog.self).observe { c in
                if case .update(_, _, let i, _) = c { events.add("dogs +\(i)") } else { events.add("dogs initial") }
            })
            f.tokens.append(realm.observe { n, r in
                events.add("\(n)")
                if n == .refreshRequired { events.add("refresh \(r.refresh()) \(r.objects(NDog.self).count)") }
            })
        }
        #expect(events.next() == "dogs initial")
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "a"]) }
        #expect(events.next() == "refreshRequired")
        #expect(events.next() == "dogs +[0]")
        #expect(events.next() == "refresh true 1")
        // (nothing else comes: a round trip through the thread's run loop)
        try f.run { _ in }
        try f.run { _ in }
        #expect(events.waiting == 0, "\(events.all)")
        try f.finish()
    }

    /// Inside the `.didChange` that follows a commit through the Realm, `refresh()` moves the
    /// Realm to another thread's newer commit and delivers the collection change sets, with no
    /// `.didChange` nested in the block; a write committed inside the block sends no nested
    /// `.didChange` either (no recursion), its `beginWrite` delivering the collection change
    /// set of the commit first; the next commit is reported again.
    @Test func refreshAndWriteInsideTheDidChangeOfACommit() throws {
        let f = try Fixture()
        let events = Events<String>()
        let config = f.config
        let step = UncheckedBox(0)
        try f.run { realm in
            f.tokens.append(realm.objects(NDog.self).observe { c in
                if case .update(let d, _, let i, _) = c { events.add("dogs \(d.count) +\(i)") } else { events.add("dogs initial") }
            })
            f.tokens.append(realm.observe { _, r in
                events.add("didChange \(r.objects(NDog.self).count)")
                step.value += 1
                if step.value == 1 {
                    onNewThread {
                        let w = try! Realm(configuration: config)
                        try! w.write { w.create(NDog.self, value: ["name": "other"]) }
                    }
                    events.add("refresh \(r.refresh()) \(r.objects(NDog.self).count)")
                } else if step.value == 2 {
                    try! r.write { r.create(NDog.self, value: ["name": "nested"]) }
                    events.add("wrote")
                }
            })
        }
        #expect(events.next() == "dogs initial")
        _ = try f.run { realm in try realm.write { realm.create(NDog.self, value: ["name": "a"]) } }
        #expect(events.next() == "didChange 1")
        #expect(events.next() == "dogs 2 +[0, 1]")
        #expect(events.next() == "refresh true 2")
        _ = try f.run { realm in try realm.write { realm.create(NDog.self, value: ["name": "b"]) } }
        // (`beginWrite` in the block first delivers what the collection observer was not given)
        #expect(events.next() == "didChange 3")
        #expect(events.next() == "dogs 3 +[2]")
        #expect(events.next() == "wrote")
        #expect(events.next() == "dogs 4 +[3]")
        try f.run { _ in }
        #expect(events.waiting == 0, "\(events.all)")
        _ = try f.run { realm in try realm.write { realm.create(NDog.self, value: ["name": "c"]) } }
        #expect(events.next() == "didChange 5")
        #expect(events.next() == "dogs 5 +[4]")
        try f.finish()
    }

    /// A Realm observer's `.didChange` block releases the Realm's last token (its delivery
    /// target leaves the notifier), registers a new Realm observer on the same Realm and calls
    /// `refresh()` over another thread's commit: the new observer gets no `.didChange` nested in
    /// the old block either (the Realm, not the target, is sending notifications), and gets the
    /// next commit's.
    @Test func aNewObserverRegisteredInsideADidChangeGetsNoNestedDidChange() throws {
        let f = try Fixture()
        let events = Events<String>()
        let config = f.config
        let first = UncheckedBox<NotificationToken?>(nil), second = UncheckedBox<NotificationToken?>(nil)
        try f.run { realm in
            first.value = realm.observe { _, r in
                guard first.value != nil else { return }
                events.add("first didChange")
                first.value = nil
                second.value = r.observe { n, _ in events.add("second \(n)") }
                onNewThread {
                    let w = try! Realm(configuration: config)
                    try! w.write { w.create(NDog.self, value: ["name": "other"]) }
                }
                events.add("refresh \(r.refresh()) \(r.objects(NDog.self).count)")
            }
        }
        _ = try f.run { realm in try realm.write { realm.create(NDog.self, value: ["name": "a"]) } }
        #expect(events.next() == "first didChange")
        #expect(events.next() == "refresh true 2")
        // (nothing else comes: round trips through the thread's run loop)
        try f.run { _ in }
        try f.run { _ in }
        #expect(events.waiting == 0, "\(events.all)")
        _ = try f.run { realm in try realm.write { realm.create(NDog.self, value: ["name": "b"]) } }
        #expect(events.next() == "second didChange")
        try f.run { _ in second.value = nil }
        try f.finish()
    }
}
