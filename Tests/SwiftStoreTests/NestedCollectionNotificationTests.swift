// Observing lists and dictionaries held in an AnyRealmValue (docs/ARCHITECTURE.md, Change
// notifications, "Collections nested in AnyRealmValue"): exact change sets for each kind of
// write, two levels of nesting, the owner deleted, the owning property set to another value,
// the owning object's observers, and a random oracle for the content diff.
import Foundation
import Testing
import TestSupport
@testable import SwiftStore

final class NestHolder: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var anyValue: AnyRealmValue
    @Persisted var anyList: List<AnyRealmValue>
    @Persisted var anyMap: Map<String, AnyRealmValue>
}

private let nestModels: [ObjectBase.Type] = [NestHolder.self]

/// A collection change as plain values; the count is -1 once the collection is invalidated.
private struct NSeen: Equatable, CustomStringConvertible {
    var initial = false
    var count = 0
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []

    init(_ change: RealmCollectionChange<List<AnyRealmValue>>) {
        switch change {
        case .initial(let c):
            initial = true
            count = c.isInvalidated ? -1 : c.count
        case .update(let c, let d, let i, let m):
            count = c.isInvalidated ? -1 : c.count
            (deletions, insertions, modifications) = (d, i, m)
        case .error:
            count = -2
        }
    }

    init(initial: Bool = false, count: Int, del: [Int] = [], ins: [Int] = [], mod: [Int] = []) {
        (self.initial, self.count, deletions, insertions, modifications) = (initial, count, del, ins, mod)
    }

    var description: String { "\(initial ? "initial" : "update")(\(count) -\(deletions) +\(insertions) ~\(modifications))" }
}

/// A map change as plain values (keys sorted).
private struct MSeen: Equatable, CustomStringConvertible {
    var initial = false
    var deleted: [String] = []
    var inserted: [String] = []
    var modified: [String] = []

    init(_ change: RealmMapChange<Map<String, AnyRealmValue>>) {
        switch change {
        case .initial: initial = true
        case .update(_, let d, let i, let m): (deleted, inserted, modified) = (d.sorted(), i.sorted(), m.sorted())
        case .error: deleted = ["error"]
        }
    }

    init(initial: Bool = false, del: [String] = [], ins: [String] = [], mod: [String] = []) {
        (self.initial, deleted, inserted, modified) = (initial, del, ins, mod)
    }

    var description: String { "\(initial ? "initial" : "update")(-\(deleted) +\(inserted) ~\(modified))" }
}

/// The changed property names of an object change (["deleted"] for a deletion).
private func names(_ change: ObjectChange<NestHolder>) -> [String] {
    switch change {
    case .deleted: return ["deleted"]
    case .change(_, let props): return props.map(\.name)
    case .error: return ["error"]
    }
}

/// A Realm on a run-loop thread (Fixture) holding one NestHolder (id 0) with the given value.
private final class NestFixture: Fixture, @unchecked Sendable {
    init(_ value: AnyRealmValue) throws {
        try super.init(models: nestModels)
        _ = try thread.sync {
            try self.realm.write { self.realm.create(NestHolder.self, value: ["id": 0, "anyValue": value]) }
        }
    }

    func run<R>(_ body: @escaping (Realm, NestHolder) throws -> R) throws -> R {
        try thread.sync { try body(self.realm, self.realm.object(ofType: NestHolder.self, forPrimaryKey: 0)!) }
    }

    /// A commit from another thread, on the holder.
    func write(_ body: @escaping @Sendable (Realm, NestHolder) -> Void) {
        writeElsewhere { r in body(r, r.object(ofType: NestHolder.self, forPrimaryKey: 0)!) }
    }
}

private func ints(_ v: [Int]) -> AnyRealmValue { .fromArray(v.map { .int($0) }) }

@Suite struct NestedCollectionNotificationTests {
    /// Insert, delete, set, append and removeAll on a list held in a property, with the owning
    /// object's observers: the property counts as changed, a key-path filter on it fires, one
    /// on another property does not, and a Results observer (deep) sees the object modified.
    @Test func nestedListOperations() throws {
        let f = try NestFixture(ints([0, 1, 2, 3, 4]))
        let list = Events<NSeen>(), object = Events<[String]>(), byAny = Events<[String]>(), byName = Events<[String]>(),
            results = Events<String>()
        try f.run { realm, h in
            f.tokens.append(h.anyValue.listValue!.observe { list.add(NSeen($0)) })
            f.tokens.append(h.observe { (c: ObjectChange<NestHolder>) in object.add(names(c)) })
            f.tokens.append(h.observe(keyPaths: ["anyValue"]) { (c: ObjectChange<NestHolder>) in byAny.add(names(c)) })
            f.tokens.append(h.observe(keyPaths: ["name"]) { (c: ObjectChange<NestHolder>) in byName.add(names(c)) })
            f.tokens.append(realm.objects(NestHolder.self).observe { c in
                if case .update(_, let d, let i, let m) = c { results.add("\(d) \(i) \(m)") } else { results.add("initial") }
            })
        }
        #expect(list.next() == NSeen(initial: true, count: 5))
        #expect(results.next() == "initial")
        func ownerSaw() {
            #expect(object.next() == ["anyValue"])
            #expect(byAny.next() == ["anyValue"])
            #expect(results.next() == "[] [] [0]")
        }
        f.write { _, h in h.anyValue.listValue!.insert(.int(10), at: 1) }        // [0 10 1 2 3 4]
        #expect(list.next() == NSeen(count: 6, ins: [1]))
        ownerSaw()
        f.write { _, h in h.anyValue.listValue!.remove(at: 3) }                 // [0 10 1 3 4]
        #expect(list.next() == NSeen(count: 5, del: [3]))
        ownerSaw()
        f.write { _, h in h.anyValue.listValue![0] = .string("zero") }          // [zero 10 1 3 4]
        #expect(list.next() == NSeen(count: 5, mod: [0]))
        ownerSaw()
        f.write { _, h in h.anyValue.listValue!.append(.double(5.5)) }          // [zero 10 1 3 4 5.5]
        #expect(list.next() == NSeen(count: 6, ins: [5]))
        ownerSaw()
        // several operations in one commit: insert at the front, set in the middle, remove the end
        f.write { _, h in
            let l = h.anyValue.listValue!
            l.insert(.int(-1), at: 0)                                            // [-1 zero 10 1 3 4 5.5]
            l[3] = .int(100)                                                     // [-1 zero 10 100 3 4 5.5]
            l.remove(at: 6)                                                      // [-1 zero 10 100 3 4]
        }
        #expect(list.next() == NSeen(count: 6, del: [5], ins: [0], mod: [2]))
        ownerSaw()
        f.write { _, h in h.anyValue.listValue!.removeAll() }
        #expect(list.next() == NSeen(count: 0, del: [0, 1, 2, 3, 4, 5]))
        ownerSaw()
        // a write of another property: the list and the "anyValue" filter see nothing
        f.write { _, h in h.name = "n" }
        #expect(object.next() == ["name"])
        #expect(byName.next() == ["name"])
        #expect(results.next() == "[] [] [0]")
        f.write { _, h in h.anyValue.listValue!.append(.int(1)) }
        #expect(list.next() == NSeen(count: 1, ins: [0]))
        ownerSaw()
        #expect(list.waiting == 0 && byName.waiting == 0 && byAny.waiting == 0 && object.waiting == 0)
        try f.finish()
    }

    /// Assigning an element the value it already has is not seen by the nested list's observer
    /// (its content did not change), unlike a top-level List's; the owning object still reports
    /// the property.
    @Test func equalSelfAssignmentIsNotSeenInsideNestedList() throws {
        let f = try NestFixture(ints([1, 2]))
        let list = Events<NSeen>(), object = Events<[String]>()
        try f.run { _, h in
            f.tokens.append(h.anyValue.listValue!.observe { list.add(NSeen($0)) })
            f.tokens.append(h.observe { (c: ObjectChange<NestHolder>) in object.add(names(c)) })
        }
        #expect(list.next() == NSeen(initial: true, count: 2))
        f.write { _, h in h.anyValue.listValue![1] = .int(2) }
        #expect(object.next() == ["anyValue"])
        f.write { _, h in h.anyValue.listValue![0] = .int(7) }
        #expect(object.next() == ["anyValue"])
        #expect(list.next() == NSeen(count: 2, mod: [0]))
        #expect(list.waiting == 0)
        try f.finish()
    }

    /// A dictionary held in a property: keys inserted, deleted and modified, a value replaced by
    /// a nested list, and a change inside that list (its key modified).
    @Test func nestedMapOperations() throws {
        let f = try NestFixture(.fromDictionary(["a": .int(1), "b": .int(2)]))
        let map = Events<MSeen>(), byAny = Events<[String]>()
        try f.run { _, h in
            f.tokens.append(h.anyValue.dictionaryValue!.observe { map.add(MSeen($0)) })
            f.tokens.append(h.observe(keyPaths: ["anyValue"]) { (c: ObjectChange<NestHolder>) in byAny.add(names(c)) })
        }
        #expect(map.next() == MSeen(initial: true))
        f.write { _, h in h.anyValue.dictionaryValue!["c"] = .string("x") }
        #expect(map.next() == MSeen(ins: ["c"]))
        f.write { _, h in h.anyValue.dictionaryValue!["a"] = nil }
        #expect(map.next() == MSeen(del: ["a"]))
        f.write { _, h in h.anyValue.dictionaryValue!["b"] = .int(5) }
        #expect(map.next() == MSeen(mod: ["b"]))
        f.write { _, h in h.anyValue.dictionaryValue!["b"] = ints([1]) }
        #expect(map.next() == MSeen(mod: ["b"]))
        f.write { _, h in h.anyValue.dictionaryValue!["b"]!.listValue!.append(.int(2)) }
        #expect(map.next() == MSeen(mod: ["b"]))
        f.write { _, h in
            let m = h.anyValue.dictionaryValue!
            m["c"] = nil
            m["d"] = .bool(true)
            m["b"] = .int(0)
        }
        #expect(map.next() == MSeen(del: ["c"], ins: ["d"], mod: ["b"]))
        f.write { _, h in h.anyValue.dictionaryValue!.removeAll() }
        #expect(map.next() == MSeen(del: ["b", "d"]))
        for _ in 0..<7 { #expect(byAny.next() == ["anyValue"]) }
        #expect(map.waiting == 0 && byAny.waiting == 0)
        try f.finish()
    }

    /// Two levels: a list in a dictionary in a list. A change in the innermost list is an
    /// insertion there, a modification of its key in the dictionary and of its position in the
    /// outer list.
    @Test func twoLevelsDeep() throws {
        let f = try NestFixture(.fromArray([.int(0), .fromDictionary(["k": ints([1, 2]), "z": .int(9)]), .int(3)]))
        let outer = Events<NSeen>(), middle = Events<MSeen>(), inner = Events<NSeen>(), byAny = Events<[String]>()
        try f.run { _, h in
            let o = h.anyValue.listValue!
            let m = o[1].dictionaryValue!
            f.tokens.append(o.observe { outer.add(NSeen($0)) })
            f.tokens.append(m.observe { middle.add(MSeen($0)) })
            f.tokens.append(m["k"]!.listValue!.observe { inner.add(NSeen($0)) })
            f.tokens.append(h.observe(keyPaths: ["anyValue"]) { (c: ObjectChange<NestHolder>) in byAny.add(names(c)) })
        }
        #expect(outer.next() == NSeen(initial: true, count: 3))
        #expect(middle.next() == MSeen(initial: true))
        #expect(inner.next() == NSeen(initial: true, count: 2))
        f.write { _, h in h.anyValue.listValue![1].dictionaryValue!["k"]!.listValue!.append(.int(3)) }
        #expect(inner.next() == NSeen(count: 3, ins: [2]))
        #expect(middle.next() == MSeen(mod: ["k"]))
        #expect(outer.next() == NSeen(count: 3, mod: [1]))
        #expect(byAny.next() == ["anyValue"])
        f.write { _, h in h.anyValue.listValue![1].dictionaryValue!["k"]!.listValue!.remove(at: 0) }
        #expect(inner.next() == NSeen(count: 2, del: [0]))
        #expect(middle.next() == MSeen(mod: ["k"]))
        #expect(outer.next() == NSeen(count: 3, mod: [1]))
        #expect(byAny.next() == ["anyValue"])
        // a change beside the inner list: the inner list sees nothing
        f.write { _, h in h.anyValue.listValue![1].dictionaryValue!["z"] = .int(10) }
        #expect(middle.next() == MSeen(mod: ["z"]))
        #expect(outer.next() == NSeen(count: 3, mod: [1]))
        #expect(byAny.next() == ["anyValue"])
        f.write { _, h in h.anyValue.listValue![2] = .int(4) }
        #expect(outer.next() == NSeen(count: 3, mod: [2]))
        #expect(byAny.next() == ["anyValue"])
        #expect(inner.waiting == 0 && middle.waiting == 0 && outer.waiting == 0)
        try f.finish()
    }

    /// A collection nested in an element of a List<AnyRealmValue> property.
    @Test func nestedInListProperty() throws {
        let f = try NestFixture(.none)
        try f.run { realm, h in
            try realm.write {
                h.anyList.append(.int(1))
                h.anyList.append(ints([5, 6]))
            }
        }
        let inner = Events<NSeen>()
        try f.run { _, h in f.tokens.append(h.anyList[1].listValue!.observe { inner.add(NSeen($0)) }) }
        #expect(inner.next() == NSeen(initial: true, count: 2))
        f.write { _, h in h.anyList[1].listValue!.insert(.int(4), at: 0) }
        #expect(inner.next() == NSeen(count: 3, ins: [0]))
        // the list property's element 0 changes: the nested list (element 1) does not
        f.write { _, h in h.anyList[0] = .int(2) }
        f.write { _, h in h.anyList[1].listValue![2] = .int(7) }
        #expect(inner.next() == NSeen(count: 3, mod: [2]))
        #expect(inner.waiting == 0)
        try f.finish()
    }

    /// A List<AnyRealmValue> and a Map<String, AnyRealmValue> property: a change inside a
    /// collection an element holds is a modification of that element (with the property's own
    /// operations in the same commit), and a change beside it is not.
    @Test func elementHoldingChangedCollectionIsModified() throws {
        let f = try NestFixture(.none)
        try f.run { realm, h in
            try realm.write {
                for i in 0..<3 { h.anyList.append(.int(i)) }
                h.anyList.append(ints([5, 6]))                                      // [0 1 2 [5 6]]
                h.anyMap["a"] = .fromDictionary(["x": .int(1)])
                h.anyMap["b"] = .int(2)
            }
        }
        let list = Events<NSeen>(), map = Events<MSeen>()
        try f.run { _, h in
            f.tokens.append(h.anyList.observe { list.add(NSeen($0)) })
            f.tokens.append(h.anyMap.observe { map.add(MSeen($0)) })
        }
        #expect(list.next() == NSeen(initial: true, count: 4))
        #expect(map.next() == MSeen(initial: true))
        f.write { _, h in h.anyList[3].listValue!.append(.int(7)) }
        #expect(list.next() == NSeen(count: 4, mod: [3]))
        f.write { _, h in h.anyMap["a"]!.dictionaryValue!["y"] = .int(2) }
        #expect(map.next() == MSeen(mod: ["a"]))
        // the property's own operations and a change inside an element in one commit
        f.write { _, h in
            h.anyList.remove(at: 0)                                                 // [1 2 [5 6 7]]
            h.anyList[2].listValue![0] = .int(50)                                   // [1 2 [50 6 7]]
            h.anyList.insert(.string("s"), at: 1)                                   // [1 s 2 [50 6 7]]
            h.anyMap["c"] = .int(3)
            h.anyMap["a"]!.dictionaryValue!["x"] = nil
        }
        #expect(list.next() == NSeen(count: 4, del: [0], ins: [1], mod: [3]))
        #expect(map.next() == MSeen(ins: ["c"], mod: ["a"]))
        // an element replaced by an equal value still counts (the property's records say so)
        f.write { _, h in h.anyList[0] = .int(1) }
        #expect(list.next() == NSeen(count: 4, mod: [0]))
        #expect(list.waiting == 0 && map.waiting == 0)
        try f.finish()
    }

    /// A list nested under a key of a dictionary held in an AnyRealmValue, observed on a queue:
    /// the observer keeps the list's address (owner, column, the key step), not the
    /// registering accessor, and the list it delivers reads the queue's Realm.
    @Test func nestedListUnderAKeyObservedOnAQueue() throws {
        let f = try NestFixture(.fromDictionary(["a": .int(1), "b": ints([1, 2])]))
        let queue = DispatchQueue(label: "nested-key")
        let seen = Events<String>()
        try f.run { _, h in
            f.tokens.append(h.anyValue.dictionaryValue!["b"]!.listValue!.observe(on: queue) { change in
                switch change {
                case .initial(let l): seen.add("initial \(l.count) \(l.realm?.core.queue === queue)")
                case .update(let l, let d, let i, let m): seen.add("\(l.count) -\(d) +\(i) ~\(m)")
                case .error: seen.add("error")
                }
            })
        }
        #expect(seen.next() == "initial 2 true")
        f.write { _, h in h.anyValue.dictionaryValue!["b"]!.listValue!.append(.int(3)) }
        #expect(seen.next() == "3 -[] +[2] ~[]")
        f.write { _, h in h.anyValue.dictionaryValue!["b"]!.listValue![0] = .int(9) }
        #expect(seen.next() == "3 -[] +[] ~[0]")
        try f.finish()
    }

    /// A filtered and a sorted view of a list held in an AnyRealmValue, observed on the run loop
    /// and on a queue: the change sets are positions in the views, translated from the nested
    /// list's own change set (a value set in place that enters, leaves or moves in the view).
    @Test func filteredAndSortedNestedList() throws {
        let f = try NestFixture(ints([5, 1, 4, 2, 3]))
        let big = Events<Seen>(), order = Events<Seen>(), queued = Events<Seen>()
        let queue = DispatchQueue(label: "nested-derived")
        // count -1 once the view is invalidated (its list gone)
        func seen(_ c: RealmCollectionChange<Results<AnyRealmValue>>) -> Seen {
            if case .update(let r, let d, let i, let m) = c, r.isInvalidated { return Seen(count: -1, del: d, ins: i, mod: m) }
            return Seen(c)
        }
        try f.run { _, h in
            let l = h.anyValue.listValue!
            f.tokens.append(l.filter("self > 2").observe { big.add(seen($0)) })
            f.tokens.append(l.sorted(ascending: true).observe { order.add(seen($0)) })
            f.tokens.append(l.filter("self > 2").observe(on: queue) { queued.add(seen($0)) })
        }
        #expect(big.next() == Seen(initial: true, count: 3))                       // 5 4 3
        #expect(order.next() == Seen(initial: true, count: 5))                     // 1 2 3 4 5
        #expect(queued.next() == Seen(initial: true, count: 3))
        f.write { _, h in h.anyValue.listValue!.append(.int(6)) }                  // [5 1 4 2 3 6]
        #expect(big.next() == Seen(count: 4, ins: [3]))
        #expect(order.next() == Seen(count: 6, ins: [5]))
        #expect(queued.next() == Seen(count: 4, ins: [3]))
        f.write { _, h in h.anyValue.listValue![1] = .int(10) }                    // [5 10 4 2 3 6]
        #expect(big.next() == Seen(count: 5, ins: [1]))                            // 5 10 4 3 6
        #expect(order.next() == Seen(count: 6, del: [0], ins: [5]))                // 2 3 4 5 6 10
        #expect(queued.next() == Seen(count: 5, ins: [1]))
        f.write { _, h in h.anyValue.listValue![0] = .int(0) }                     // [0 10 4 2 3 6]
        #expect(big.next() == Seen(count: 4, del: [0]))                            // 10 4 3 6
        #expect(order.next() == Seen(count: 6, del: [3], ins: [0]))                // 0 2 3 4 6 10
        #expect(queued.next() == Seen(count: 4, del: [0]))
        f.write { _, h in h.anyValue.listValue![5] = .int(7) }                     // [0 10 4 2 3 7]
        #expect(big.next() == Seen(count: 4, mod: [3]))
        #expect(order.next() == Seen(count: 6, mod: [4]))
        #expect(queued.next() == Seen(count: 4, mod: [3]))
        f.write { _, h in h.anyValue.listValue!.remove(at: 2) }                    // [0 10 2 3 7]
        #expect(big.next() == Seen(count: 3, del: [1]))                            // 10 3 7
        #expect(order.next() == Seen(count: 5, del: [3]))                          // 0 2 3 7 10
        #expect(queued.next() == Seen(count: 3, del: [1]))
        // a change the filtered views do not show: nothing is delivered to them; the value
        // keeps its place in the sorted view
        f.write { _, h in h.anyValue.listValue![2] = .int(1) }                     // [0 10 1 3 7]
        #expect(order.next() == Seen(count: 5, mod: [1]))                          // 0 1 3 7 10
        // the owning property set to a plain value: the list is gone, every element deleted,
        // and the views read as invalidated (count -1 here)
        f.write { _, h in h.anyValue = .int(1) }
        #expect(big.next() == Seen(count: -1, del: [0, 1, 2]))
        #expect(order.next() == Seen(count: -1, del: [0, 1, 2, 3, 4]))
        #expect(queued.next() == Seen(count: -1, del: [0, 1, 2]))
        #expect(big.waiting == 0 && order.waiting == 0 && queued.waiting == 0)
        try f.finish()
    }

    /// A filtered view of a dictionary held in an AnyRealmValue (values in key order).
    @Test func filteredNestedMap() throws {
        let f = try NestFixture(.fromDictionary(["a": .int(1), "b": .int(5), "c": .int(3)]))
        let big = Events<Seen>()
        try f.run { _, h in
            f.tokens.append(h.anyValue.dictionaryValue!.filter("self > 2").observe { big.add(Seen($0)) })
        }
        #expect(big.next() == Seen(initial: true, count: 2))                       // b:5 c:3
        f.write { _, h in h.anyValue.dictionaryValue!["a"] = .int(9) }
        #expect(big.next() == Seen(count: 3, ins: [0]))                            // a:9 b:5 c:3
        f.write { _, h in h.anyValue.dictionaryValue!["b"] = nil }
        #expect(big.next() == Seen(count: 2, del: [1]))                            // a:9 c:3
        f.write { _, h in h.anyValue.dictionaryValue!["c"] = .int(4) }
        #expect(big.next() == Seen(count: 2, mod: [1]))
        f.write { _, h in h.anyValue.dictionaryValue!["d"] = .int(0) }            // not shown
        f.write { _, h in h.anyValue.dictionaryValue!["0"] = .int(8) }
        #expect(big.next() == Seen(count: 3, ins: [0]))                            // 0:8 a:9 c:4
        #expect(big.waiting == 0)
        try f.finish()
    }

    /// The owner deleted: as for a List property, every element is deleted, the list reads as
    /// invalidated, and nothing follows.
    @Test func ownerDeleted() throws {
        let f = try NestFixture(ints([1, 2, 3]))
        let list = Events<NSeen>(), map = Events<MSeen>()
        try f.run { realm, _ in
            try realm.write { realm.create(NestHolder.self, value: ["id": 1, "anyValue": AnyRealmValue.fromDictionary(["x": .int(1), "y": .int(2)])]) }
            let h0 = realm.object(ofType: NestHolder.self, forPrimaryKey: 0)!
            let h1 = realm.object(ofType: NestHolder.self, forPrimaryKey: 1)!
            f.tokens.append(h0.anyValue.listValue!.observe { list.add(NSeen($0)) })
            f.tokens.append(h1.anyValue.dictionaryValue!.observe { map.add(MSeen($0)) })
        }
        #expect(list.next() == NSeen(initial: true, count: 3))
        #expect(map.next() == MSeen(initial: true))
        f.write { r, h in
            r.delete(h)
            r.delete(r.object(ofType: NestHolder.self, forPrimaryKey: 1)!)
        }
        #expect(list.next() == NSeen(count: -1, del: [0, 1, 2]))
        #expect(map.next() == MSeen(del: ["x", "y"]))
        f.writeElsewhere { r in r.create(NestHolder.self, value: ["id": 0, "anyValue": ints([1])]) }
        f.write { r, h in h.anyValue.listValue!.append(.int(2)) }
        #expect(list.next(timeout: 0.5) == nil)
        #expect(map.waiting == 0)
        try f.finish()
    }

    /// The owning property set again, to a collection of the same kind, another kind or a plain
    /// value: as in RealmSwift (realm-core gives every collection it makes in a Mixed value a new
    /// key, and an accessor of the old one is stale), the old collection is gone: its observer
    /// gets every element deleted, its accessor reads as invalidated (a new read of the property
    /// gives the new collection), and nothing follows, also when the property is set to a list
    /// again. Before, the observer and the accessor followed the new list of the same kind and
    /// reported the content's difference (update(4 +[3] ~[1])).
    @Test func propertyReassigned() throws {
        let f = try NestFixture(ints([1, 2, 3]))
        let list = Events<NSeen>()
        let old = try f.run { _, h -> UncheckedBox<List<AnyRealmValue>> in
            let l = h.anyValue.listValue!
            f.tokens.append(l.observe { list.add(NSeen($0)) })
            return UncheckedBox(l)
        }
        #expect(list.next() == NSeen(initial: true, count: 3))
        f.write { _, h in h.anyValue = ints([1, 9, 3, 4]) }
        #expect(list.next() == NSeen(count: -1, del: [0, 1, 2]))
        try f.run { realm, h in
            realm.refresh()
            #expect(old.value.isInvalidated)
            #expect(h.anyValue.listValue?.isInvalidated == false)
            #expect(h.anyValue.listValue?.count == 4)
        }
        f.write { _, h in h.anyValue.listValue!.append(.int(5)) }
        f.write { _, h in h.anyValue = .fromDictionary(["a": .int(1)]) }
        f.write { _, h in h.anyValue = ints([1]) }
        #expect(list.next(timeout: 0.5) == nil)

        let g = try NestFixture(.fromDictionary(["a": .int(1)]))
        let map = Events<MSeen>(), plain = Events<MSeen>()
        try g.run { _, h in g.tokens.append(h.anyValue.dictionaryValue!.observe { map.add(MSeen($0)) }) }
        #expect(map.next() == MSeen(initial: true))
        g.write { _, h in h.anyValue = .fromDictionary(["a": .int(1), "b": .int(2)]) }
        #expect(map.next() == MSeen(del: ["a"]))
        try g.run { _, h in g.tokens.append(h.anyValue.dictionaryValue!.observe { plain.add(MSeen($0)) }) }
        #expect(plain.next() == MSeen(initial: true))
        g.write { _, h in h.anyValue = .string("plain") }
        #expect(plain.next() == MSeen(del: ["a", "b"]))
        try g.run { _, h in #expect(h.anyValue == .string("plain")) }
        #expect(map.waiting == 0)
        try f.finish()
        try g.finish()
    }

    /// A list nested in a list's element, the element set to a new list: the old nested list's
    /// observer gets every element deleted and its accessor reads as invalidated; an observer of
    /// the outer list sees the element modified. A list moved within its list, or shifted by an
    /// insert before it, is followed by its accessor and its observer, as realm-core finds a
    /// collection by its key: the observer of the list that was at position 1 is told nothing
    /// for the move and the append to it after (insertion 1), and an accessor held across an
    /// insert at 0 reads the same list. (With the identity checked at the recorded position only,
    /// the observer was told every element deleted and the accessor trapped.)
    @Test func nestedElementReassigned() throws {
        let f = try NestFixture(.fromArray([ints([1, 2]), ints([7])]))
        let inner = Events<NSeen>(), outer = Events<NSeen>(), moved = Events<NSeen>()
        let old = try f.run { _, h -> UncheckedBox<List<AnyRealmValue>> in
            let l = h.anyValue.listValue![0].listValue!
            f.tokens.append(l.observe { inner.add(NSeen($0)) })
            f.tokens.append(h.anyValue.listValue!.observe { outer.add(NSeen($0)) })
            return UncheckedBox(l)
        }
        #expect(inner.next() == NSeen(initial: true, count: 2))
        #expect(outer.next() == NSeen(initial: true, count: 2))
        f.write { _, h in h.anyValue.listValue![0] = ints([3]) }
        #expect(inner.next() == NSeen(count: -1, del: [0, 1]))
        #expect(outer.next() == NSeen(count: 2, mod: [0]))
        try f.run { realm, h in
            realm.refresh()
            #expect(old.value.isInvalidated)
            #expect(h.anyValue.listValue![0].listValue!.count == 1)
            f.tokens.append(h.anyValue.listValue![1].listValue!.observe { moved.add(NSeen($0)) })
        }
        #expect(moved.next() == NSeen(initial: true, count: 1))
        f.write { _, h in h.anyValue.listValue!.move(from: 1, to: 0) }
        try f.run { realm, h in
            realm.refresh()
            #expect(h.anyValue.listValue![0].listValue!.first == .int(7))
        }
        f.write { _, h in h.anyValue.listValue![0].listValue!.append(.int(8)) }
        #expect(moved.next() == NSeen(count: 2, ins: [1]))
        try f.run { realm, h in
            realm.refresh()
            #expect(h.anyValue.listValue![0].listValue!.count == 2)
            // an accessor held across an insert before it reads the same list
            let second = h.anyValue.listValue![1].listValue!
            try realm.write { h.anyValue.listValue!.insert(.int(0), at: 0) }
            #expect(!second.isInvalidated)
            #expect(Array(second) == [.int(3)])
            try realm.write { second.append(.int(4)) }
            #expect(Array(h.anyValue.listValue![2].listValue!) == [.int(3), .int(4)])
        }
        #expect(inner.waiting == 0 && moved.waiting == 0)
        try f.finish()
    }

    /// The AsyncSequence form on a nested list: changes in order, and the sequence ends with
    /// its observer removed when the task is cancelled.
    @Test func asyncSequenceOnNestedList() async throws {
        let f = try NestFixture(ints([1]))
        let path = f.config.path
        let stream = try f.run { _, h in UncheckedBox(h.anyValue.listValue!.changes()) }
        var it = stream.value.makeAsyncIterator()
        #expect(await it.next().map(NSeen.init) == NSeen(initial: true, count: 1))
        f.write { _, h in h.anyValue.listValue!.insert(.int(0), at: 0) }
        #expect(await it.next().map(NSeen.init) == NSeen(count: 2, ins: [0]))
        f.write { _, h in h.anyValue.listValue![1] = .int(5) }
        #expect(await it.next().map(NSeen.init) == NSeen(count: 2, mod: [1]))
        let waiting = it
        let task = Task {
            var i = waiting
            return await i.next().map(NSeen.init)
        }
        task.cancel()
        #expect(await task.value == nil)
        #expect((FileNotifier.running(path)?.observerCount ?? 0) == 0)
        try f.finish()
    }
}

/// A small canonical text of a value (nested collections included), for comparing contents.
private func text(_ v: AnyRealmValue) -> String {
    switch v {
    case .list(let l): return "[" + l.map(text).joined(separator: ",") + "]"
    case .dictionary(let m): return "{" + m.keys.sorted().map { "\($0):\(text(m[$0]!))" }.joined(separator: ",") + "}"
    default: return "\(v)"
    }
}

@Suite struct NestedCollectionDiffOracleTests {
    /// Random commits of several operations each on a nested list (values drawn from a small
    /// set, so equal elements are common, some of them nested lists): the old content with the
    /// change set applied gives the new content, an element kept unmodified is equal to the one
    /// it came from, and a modified one differs from it.
    @Test func randomListCommits() throws {
        let f = try NestFixture(ints([]))
        let list = Events<(NSeen, [String])>()
        try f.run { _, h in
            let l = h.anyValue.listValue!
            f.tokens.append(l.observe { c in list.add((NSeen(c), l.map(text))) })
        }
        var old = list.next()!.1
        var rng = SystemRandomNumberGenerator()
        var delivered = 0
        for round in 0..<150 {
            let ops = (0..<Int.random(in: 1...4, using: &rng)).map { _ in (Int.random(in: 0..<6, using: &rng), Int.random(in: 0..<1000, using: &rng), Int.random(in: 0..<5, using: &rng)) }
            let sizeNow = old.count
            try f.run { realm, h in
                try realm.write {
                    let l = h.anyValue.listValue!
                    for (op, pos, v) in ops {
                        let value: AnyRealmValue = v == 4 ? ints([pos % 2]) : .int(v)
                        let n = l.count
                        switch op {
                        case 0, 1: l.insert(value, at: n == 0 ? 0 : pos % (n + 1))
                        case 2: if n > 0 { l.remove(at: pos % n) }
                        case 3: if n > 0 { l[pos % n] = value }
                        case 4: if n > 1 { l.move(from: pos % n, to: (pos / 7) % n) }
                        default:
                            if n > 0, case .list(let inner) = l[pos % n] { inner.append(.int(v)) }
                            else if sizeNow > 30 { l.removeAll() }
                            else { l.append(value) }
                        }
                    }
                }
            }
            let now = try f.run { _, h in h.anyValue.listValue!.map(text) }
            if now == old { continue }
            guard let (seen, snapshot) = list.next() else {
                Issue.record("no notification in round \(round)")
                break
            }
            delivered += 1
            #expect(snapshot == now)
            let del = Set(seen.deletions), ins = Set(seen.insertions)
            let kept = old.indices.filter { !del.contains($0) }
            #expect(seen.deletions.allSatisfy { $0 < old.count } && seen.insertions.allSatisfy { $0 < now.count })
            #expect(kept.count + seen.insertions.count == now.count, "round \(round): \(old) -> \(now) as \(seen)")
            guard kept.count + seen.insertions.count == now.count else { break }
            let modifiedOld = Set(seen.modifications)
            var rebuilt: [String] = []
            var k = 0
            for j in 0..<now.count {
                if ins.contains(j) {
                    rebuilt.append(now[j])
                    continue
                }
                let from = kept[k]
                k += 1
                if modifiedOld.contains(from) {
                    #expect(old[from] != now[j], "round \(round): modified \(from) is unchanged")
                    rebuilt.append(now[j])
                } else {
                    #expect(old[from] == now[j], "round \(round): kept \(from) -> \(j) changed: \(old) -> \(now) as \(seen)")
                    rebuilt.append(old[from])
                }
            }
            #expect(rebuilt == now)
            #expect(modifiedOld.isSubset(of: Set(kept)))
            old = now
        }
        #expect(delivered > 50)
        try f.finish()
    }

    /// The same for a nested dictionary: the old content with the deleted keys removed, the
    /// inserted and modified ones taken from the new content, gives the new content, and every
    /// other key is unchanged.
    @Test func randomMapCommits() throws {
        let f = try NestFixture(.fromDictionary([:]))
        let map = Events<(MSeen, [String: String])>()
        func snapshot(_ m: Map<String, AnyRealmValue>) -> [String: String] {
            Dictionary(uniqueKeysWithValues: m.keys.map { ($0, text(m[$0]!)) })
        }
        try f.run { _, h in
            let m = h.anyValue.dictionaryValue!
            f.tokens.append(m.observe { c in map.add((MSeen(c), snapshot(m))) })
        }
        var old = map.next()!.1
        for round in 0..<150 {
            let ops = (0..<Int.random(in: 1...4)).map { _ in (Int.random(in: 0..<4), "k\(Int.random(in: 0..<8))", Int.random(in: 0..<4)) }
            try f.run { realm, h in
                try realm.write {
                    let m = h.anyValue.dictionaryValue!
                    for (op, key, v) in ops {
                        switch op {
                        case 0, 1: m[key] = v == 3 ? ints([v]) : .int(v)
                        case 2: m[key] = nil
                        default: if case .list(let l)? = m[key] { l.append(.int(v)) } else { m[key] = .string("s\(v)") }
                        }
                    }
                }
            }
            let now = try f.run { _, h in snapshot(h.anyValue.dictionaryValue!) }
            if now == old { continue }
            guard let (seen, snap) = map.next() else {
                Issue.record("no notification in round \(round)")
                break
            }
            #expect(snap == now)
            var rebuilt = old
            for k in seen.deleted {
                #expect(old[k] != nil && now[k] == nil, "round \(round): \(k) deleted")
                rebuilt[k] = nil
            }
            for k in seen.inserted {
                #expect(old[k] == nil && now[k] != nil, "round \(round): \(k) inserted")
                rebuilt[k] = now[k]
            }
            for k in seen.modified {
                #expect(old[k] != nil && now[k] != nil && old[k] != now[k], "round \(round): \(k) modified")
                rebuilt[k] = now[k]
            }
            #expect(rebuilt == now, "round \(round): \(old) -> \(now) as \(seen)")
            old = now
        }
        try f.finish()
    }
}

/// An actor reading nested collections through its own Realm and observing them on a `Sink`.
private actor NestSource {
    let config: Realm.Configuration
    init(config: Realm.Configuration) { self.config = config }

    func observe(on sink: Sink, list: Events<NSeen>, map: Events<MSeen>) async throws -> [NotificationToken] {
        let r = try await Realm(configuration: config, actor: self)
        let h = r.object(ofType: NestHolder.self, forPrimaryKey: 0)!
        let l = h.anyValue.listValue!, m = h.anyValue.listValue![1].dictionaryValue!
        var tokens: [NotificationToken] = []
        tokens.append(await l.observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            list.add(NSeen(c))
        })
        tokens.append(await m.observe(keyPaths: nil, on: sink) { sink, c in
            sink.preconditionIsolated()
            map.add(MSeen(c))
        })
        return tokens
    }
}

// Named to run in the pass of its own that actor deliveries need (Makefile, POOL_SUITES).
@Suite struct NestedActorNotificationTests {
    /// The actor forms of List and Map on collections nested in an AnyRealmValue.
    @Test func nestedCollectionsObservedOnAnotherActor() async throws {
        let dir = TempDir()
        let config = dir.config(nestModels)
        let commit: @Sendable (@escaping @Sendable (NestHolder) -> Void) -> Void = { body in
            onNewThread {
                let r = try! Realm(configuration: config)
                try! r.write { body(r.object(ofType: NestHolder.self, forPrimaryKey: 0)!) }
            }
        }
        onNewThread {
            let r = try! Realm(configuration: config)
            try! r.write {
                r.create(NestHolder.self, value: ["id": 0, "anyValue": AnyRealmValue.fromArray([.int(1), .fromDictionary(["a": .int(1)])])])
            }
        }
        let sink = Sink(config: config)
        let source = NestSource(config: config)
        let list = Events<NSeen>(), map = Events<MSeen>()
        let tokens = try await source.observe(on: sink, list: list, map: map)
        #expect(await list.nextAsync() == NSeen(initial: true, count: 2))
        #expect(await map.nextAsync() == MSeen(initial: true))
        commit { h in
            h.anyValue.listValue!.append(.int(0))
            h.anyValue.listValue![1].dictionaryValue!["b"] = .int(2)
        }
        #expect(await list.nextAsync() == NSeen(count: 3, ins: [2], mod: [1]))
        #expect(await map.nextAsync() == MSeen(ins: ["b"]))
        for t in tokens { t.invalidate() }
    }
}
