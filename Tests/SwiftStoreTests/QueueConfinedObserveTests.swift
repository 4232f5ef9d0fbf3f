import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// A Realm confined to a serial queue (`Realm(configuration:queue:)`) delivers the notifications
/// of observers registered without a queue on its queue, as RealmSwift does, rather than on the
/// run loop of whichever thread the queue ran the registration on (docs/ARCHITECTURE.md, Change
/// notifications).
@Suite struct QueueConfinedObserveTests {
    @Test func observersWithoutAQueueAreCalledOnTheRealmsQueue() throws {
        let dir = TempDir()
        let config = dir.config([BKOwner.self, BKDog.self])
        let q = DispatchQueue(label: "confined")
        let key = DispatchSpecificKey<Int>()
        q.setSpecific(key: key, value: 1)
        let onQueue: @Sendable () -> Bool = { DispatchQueue.getSpecific(key: key) == 1 }
        let results = Events<String>(), list = Events<String>(), object = Events<String>(), realmEvents = Events<String>()
        let state = UncheckedBox<(Realm?, [NotificationToken])>((nil, []))
        try q.sync {
            let r = try Realm(configuration: config, queue: q)
            try r.write {
                let a = r.create(BKDog.self, value: ["name": "a"])
                r.create(BKOwner.self, value: ["name": "Ann"]).dogs.append(a)
            }
            state.value.0 = r
            let dogs = r.objects(BKDog.self)
            state.value.1.append(dogs.observe { change in
                switch change {
                case .initial(let d): results.add("initial \(d.count) \(onQueue())")
                case .update(let d, let del, let ins, let mod): results.add("update \(d.count) \(del) \(ins) \(mod) \(onQueue())")
                case .error: results.add("error")
                }
            })
            state.value.1.append(r.objects(BKOwner.self).first!.dogs.observe { change in
                switch change {
                case .initial(let d): list.add("initial \(d.count) \(onQueue())")
                case .update(let d, let del, let ins, let mod): list.add("update \(d.count) \(del) \(ins) \(mod) \(onQueue())")
                case .error: list.add("error")
                }
            })
            state.value.1.append(dogs.first!.observe { (c: ObjectChange<BKDog>) in
                switch c {
                case .change(let d, let props): object.add("change \(d.name) \(props.map(\.name)) \(onQueue())")
                case .deleted: object.add("deleted")
                case .error: object.add("error")
                }
            })
            state.value.1.append(r.observe { n, realm in realmEvents.add("\(n) \(realm.objects(BKDog.self).count) \(onQueue())") })
        }
        #expect(results.next() == "initial 1 true")
        #expect(list.next() == "initial 1 true")
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write {
                r.objects(BKDog.self).first!.name = "b"
                r.objects(BKOwner.self).first!.dogs.append(r.create(BKDog.self, value: ["name": "c"]))
            }
        }
        #expect(results.next() == "update 2 [] [1] [0] true")
        #expect(list.next() == "update 2 [] [1] [0] true")
        #expect(object.next() == "change b [\"name\"] true")
        #expect(realmEvents.next() == "didChange 2 true")
        q.sync {
            for t in state.value.1 { t.invalidate() }
            state.value = (nil, [])
        }
        #expect(results.waiting == 0 && list.waiting == 0 && object.waiting == 0 && realmEvents.waiting == 0)
    }
}
