import Dispatch
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// Watches made off the notifier's lock, on the notifier thread: never older than the
/// registering Realm's version.
@Suite struct WatchVersionTests {
    /// A List (and a LinkingObjects) observer registered through a Realm that reads a version the notifier has not
    /// computed yet (another process's commit, which this process's notifier sees only when its
    /// thread wakes and advances; here a commit through another path to the same file, which
    /// calls no `committed()` on this path's notifier) must get the list as it is: its owner
    /// exists at the registering Realm's version. The notifier thread is held in another
    /// observer's watch making, so it has not advanced past that commit when `refresh()` makes
    /// the watch.
    @Test func ownerNewerThanTheNotifierIsNotReportedDeleted() throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "review-held")
        let held = Events<Seen>(), list = Events<String>(), owners = Events<String>()
        let other = try OtherHandle(f)
        let hold = try f.holdWatchMaking(on: queue, held)
        other.write { r in
            let p = r.create(NPerson.self, value: ["name": "Ann"])
            for n in ["a", "b"] { p.dogs.append(NDog(value: ["name": n])) }
        }
        try f.run { realm in
            realm.refresh()
            let ann = try #require(realm.objects(NPerson.self).first)
            f.tokens.append(ann.dogs.observe { c in
                switch c {
                case .initial(let x): list.add(x.isInvalidated ? "initial invalidated" : "initial \(x.count)")
                case .update(let x, _, _, _): list.add("update \(x.count)")
                case .error: list.add("error")
                }
            })
            f.tokens.append(ann.dogs[0].owners.observe { c in
                switch c {
                case .initial(let x): owners.add(x.isInvalidated ? "initial invalidated" : "initial \(x.count)")
                case .update(let x, _, _, _): owners.add("update \(x.count)")
                case .error: owners.add("error")
                }
            })
            // delivers the initial notifications before it returns
            realm.refresh()
            // both observers have a watch (the owner exists at the Realm's version)
            for token in f.tokens.suffix(2) { #expect(token.registration?.watch != nil) }
        }
        hold.release()
        #expect(list.next() == "initial 2")
        #expect(owners.next() == "initial 1")
        #expect(held.next() == Seen(initial: true, count: 0))
        // and they report the next change
        f.writeElsewhere { r in
            let ann = r.objects(NPerson.self).first!
            ann.dogs.append(NDog(value: ["name": "c"]))
            ann.dogs[0].name = "A"
        }
        #expect(list.next(timeout: 30) == "update 3")
        #expect(owners.next(timeout: 30) == "update 1")
        try f.finish()
    }

    /// A write begun inside an observer's block (on the delivering Realm) must not deliver a
    /// newer change set to another observer of that Realm before the one the current delivery
    /// is about to give it: each observer gets its change sets in commit order. (RealmSwift
    /// begins a write inside a notification block without sending more notifications.) On a
    /// queue (new with this branch: `beginWrite` on a queue's Realm now delivers) and on a run
    /// loop (as on main).
    @Test(arguments: [true, false])
    func beginWriteInsideABlockKeepsChangeSetsInOrder(onQueue: Bool) throws {
        let f = try Fixture()
        let queue = DispatchQueue(label: "review-nested")
        let config = f.config
        let a = Events<Seen>(), b = Events<Seen>()
        let box = UncheckedBox<Realm?>(nil)
        let once = UncheckedBox(false)
        let register = {
            let r = onQueue ? try Realm(configuration: config, queue: queue) : f.realm!
            box.value = r
            f.tokens.append(r.objects(NDog.self).observe(on: onQueue ? queue : nil) { c in
                a.add(Seen(c))
                if case .update = c, !once.value {
                    once.value = true
                    // another thread commits, then this block writes on the delivering Realm
                    onNewThread {
                        let w = try! Realm(configuration: config)
                        try! w.write { w.create(NDog.self, value: ["name": "2"]) }
                    }
                    box.value!.beginWrite()
                    box.value!.cancelWrite()
                }
            })
            f.tokens.append(r.objects(NDog.self).observe(on: onQueue ? queue : nil) { b.add(Seen($0)) })
        }
        if onQueue { try queue.sync(execute: register) } else { try f.run { _ in try register() } }
        #expect(a.next() == Seen(initial: true, count: 0))
        #expect(b.next() == Seen(initial: true, count: 0))
        f.writeElsewhere { r in r.create(NDog.self, value: ["name": "1"]) }
        #expect(a.next()?.insertions == [0])
        let first = b.next(), second = b.next()
        // the first commit's insertion (position 0) comes before the second's (position 1)
        #expect(first?.insertions == [0], "\(String(describing: first)) then \(String(describing: second))")
        #expect(second?.insertions == [1], "\(String(describing: first)) then \(String(describing: second))")
        if onQueue { queue.sync { box.value = nil } } else { box.value = nil }
        try f.finish()
    }

    /// A query observer of a class whose table a schema change added after the notifier's
    /// version (an additive schema change by another Realm, which the notifier computes only
    /// when its thread wakes) must not trap: its watch is made at a version where the table
    /// exists. Here `refresh()` on the queue's Realm makes the watch while the notifier thread
    /// is held in another observer's watch making (in a child process: the trap, "Cannot observe:
    /// no table with key 3" from NotifierCore.make, ends it).
    @Test func queryOnATableNewerThanTheNotifierDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let f = try! Fixture()
            let held = DispatchQueue(label: "review-held"), queue = DispatchQueue(label: "review-new-table")
            let hold = HoldMaking(f.config.path)
            try! f.run { realm in f.tokens.append(realm.objects(NToy.self).observe(on: held) { _ in }) }
            precondition(hold.waitEntered())
            let config = f.dir.config([NToy.self, NDog.self, NPerson.self, NSetOwner.self])
            let events = Events<Seen>()
            let token = try! queue.sync {
                let r = try Realm(configuration: config, queue: queue)
                let token = r.objects(NSetOwner.self).observe(on: queue) { events.add(Seen($0)) }
                r.refresh()
                return token
            }
            hold.release()
            precondition(events.next() == Seen(initial: true, count: 0))
            token.invalidate()
            try! f.finish()
        }
    }

}
