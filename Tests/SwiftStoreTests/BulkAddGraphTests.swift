import Foundation
import Testing
import TestSupport
@testable import SwiftStore

/// `realm.add` of a sequence of objects with links, collections, embedded objects,
/// AnyRealmValue, legacy boxes and eager bindings (docs/ARCHITECTURE.md, Bulk creation with
/// primary keys and indexes): each test adds the same objects as one sequence in one Realm and
/// one at a time in another, and expects the same objects, field by field and key by key.
final class BGOwner: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var friend: BGOwner?
    @Persisted var pet: BGPet?
    @Persisted var pets: List<BGPet>
    @Persisted var petSet: MutableSet<BGPet>
    @Persisted var petMap: Map<String, BGPet?>
    @Persisted var address: BGAddress?
    @Persisted var addresses: List<BGAddress>
    @Persisted var addressMap: Map<String, BGAddress?>
    @Persisted var any: AnyRealmValue
    @Persisted var anyList: List<AnyRealmValue>
    @Persisted var tags: MutableSet<String>
    @Persisted var scores: Map<String, Int>
    @Persisted var ints: List<Int>
    @Persisted(originProperty: "owner") var petsOwned: LinkingObjects<BGPet>
}

final class BGPet: Object {
    @Persisted(indexed: true) var name = ""
    @Persisted var owner: BGOwner?
    @Persisted var next: BGPet?
    @Persisted var ints: List<Int>
    @Persisted var when: Date?
    @Persisted(originProperty: "pet") var petOf: LinkingObjects<BGOwner>
}

final class BGAddress: EmbeddedObject {
    @Persisted var street = ""
    @Persisted var pet: BGPet?
    @Persisted var inner: BGInner?
}

final class BGInner: EmbeddedObject {
    @Persisted var n = 0
    @Persisted var pet: BGPet?
}

/// Legacy boxes: a List and a Map declared without @Persisted, and a RealmProperty.
final class BGLegacy: Object {
    @Persisted var name = ""
    let pets = List<BGPet>()
    let scores = Map<String, Int>()
    let age = RealmProperty<Int?>()
}

/// An Encodable class: its wrappers are bound when an object becomes managed.
final class BGCodable: Object, Encodable {
    @Persisted var name = ""
    @Persisted var other: BGCodable?
    @Persisted var ints: List<Int>
}

/// A primary-key class with plain values on both sides of a link to its own class.
final class BGNode: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var before = ""
    @Persisted var parent: BGNode?
    @Persisted var after = ""
    @Persisted var tags: List<String>
}

/// A class that is not in the Realm's schema.
final class BGOutside: Object {
    @Persisted var name = ""
}

let bulkGraphTypes: [ObjectBase.Type] = [BGOwner.self, BGPet.self, BGAddress.self, BGInner.self, BGLegacy.self, BGCodable.self,
                                         BGNode.self]

func bgPet(_ name: String) -> BGPet {
    let p = BGPet()
    p.name = name
    return p
}

func bgOwner(_ id: Int, _ name: String = "") -> BGOwner {
    let o = BGOwner()
    o.id = id
    o.name = name.isEmpty ? "o\(id)" : name
    return o
}

private func key(_ o: ObjectBase?) -> String {
    guard let o else { return "nil" }
    return "\(o.objectSchema.className)#\(o.objectKey)"
}

private func text(_ v: AnyRealmValue) -> String {
    switch v {
    case .object(let o): return key(o)
    case .list(let l): return "[" + l.map(text).joined(separator: ",") + "]"
    case .dictionary(let m): return "{" + m.map { "\($0.key):\(text($0.value))" }.joined(separator: ",") + "}"
    default: return "\(v)"
    }
}

private func text(_ i: BGInner?) -> String {
    guard let i else { return "nil" }
    return "(\(key(i)) \(i.n) \(key(i.pet)))"
}

private func text(_ a: BGAddress?) -> String {
    guard let a else { return "nil" }
    return "(\(key(a)) \(a.street) \(key(a.pet)) \(text(a.inner)))"
}

/// Every object of every class, in key order, with its key and every field (links as keys).
func bulkGraphDump(_ realm: Realm) -> [String] {
    var out: [String] = []
    for o in realm.objects(BGOwner.self) {
        out.append("\(key(o)) \(o.id) \(o.name) friend=\(key(o.friend)) pet=\(key(o.pet)) "
                   + "pets=\(o.pets.map(key)) set=\(o.petSet.map(key)) map=\(o.petMap.map { "\($0.key):\(key($0.value ?? nil))" }) "
                   + "address=\(text(o.address)) addresses=\(o.addresses.map(text)) "
                   + "addressMap=\(o.addressMap.map { "\($0.key):\(text($0.value ?? nil))" }) any=\(text(o.any)) "
                   + "anyList=\(o.anyList.map(text)) tags=\(Array(o.tags)) scores=\(o.scores.map { "\($0.key):\($0.value)" }) "
                   + "ints=\(Array(o.ints)) owned=\(o.petsOwned.map(key))")
    }
    for p in realm.objects(BGPet.self) {
        out.append("\(key(p)) \(p.name) owner=\(key(p.owner)) next=\(key(p.next)) ints=\(Array(p.ints)) when=\(String(describing: p.when)) "
                   + "petOf=\(p.petOf.map(key))")
    }
    for l in realm.objects(BGLegacy.self) {
        out.append("\(key(l)) \(l.name) pets=\(l.pets.map(key)) scores=\(l.scores.map { "\($0.key):\($0.value)" }) age=\(String(describing: l.age.value))")
    }
    for c in realm.objects(BGCodable.self) {
        out.append("\(key(c)) \(c.name) other=\(key(c.other)) ints=\(Array(c.ints))")
    }
    for n in realm.objects(BGNode.self) {
        out.append("\(key(n)) \(n.id) \(n.before) parent=\(key(n.parent)) \(n.after) tags=\(Array(n.tags))")
    }
    return out
}

/// Runs `body` twice, in two new Realms: once adding its sequences with `add(_:update:)` of the
/// sequence, once adding each object alone, and expects the same dump (also after reopening).
/// `body` makes new objects each time.
private func expectSameGraph(_ body: (_ realm: Realm, _ add: ([Object], Realm.UpdatePolicy) -> Void) throws -> Void,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
    var dumps: [[String]] = []
    for batched in [true, false] {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config(bulkGraphTypes))
        try body(realm) { objects, policy in
            if batched { realm.add(objects, update: policy) } else { for o in objects { realm.add(o, update: policy) } }
        }
        dumps.append(bulkGraphDump(realm))
        #expect((realm.core.batchedAdds > 0) == batched, "batches made: \(realm.core.batchedAdds)", sourceLocation: sourceLocation)
        let again = try Realm(configuration: dir.config(bulkGraphTypes))
        again.refresh()
        #expect(bulkGraphDump(again) == dumps.last!, "after reopening", sourceLocation: sourceLocation)
    }
    #expect(dumps[0].count == dumps[1].count, sourceLocation: sourceLocation)
    for (a, b) in zip(dumps[0], dumps[1]) where a != b {
        Issue.record("batched: \(a)\none by one: \(b)", sourceLocation: sourceLocation)
        break
    }
    #expect(dumps[0].count > 3, sourceLocation: sourceLocation)
}

private func anyList(_ items: [AnyRealmValue]) -> AnyRealmValue {
    let l = List<AnyRealmValue>()
    l.append(objectsIn: items)
    return .list(l)
}

private func anyDict(_ items: KeyValuePairs<String, AnyRealmValue>) -> AnyRealmValue {
    let m = Map<String, AnyRealmValue>()
    for (k, v) in items { m[k] = v }
    return .dictionary(m)
}

/// A sequence that uses every property kind: owners linking forward to owners later in the
/// sequence (added first, as RealmSwift's cascade does) and to themselves, pets reached from
/// many owners and again in the sequence, a pet only an embedded object reaches, managed pets,
/// AnyRealmValue holding objects in nested lists and dictionaries, legacy boxes and an
/// Encodable class, mixed in one sequence.
private func everyKindSequence(kept: BGPet, n: Int = 40) -> [Object] {
    let shared = bgPet("shared")
    shared.ints.append(objectsIn: [7, 8])
    let owners = (0..<n).map { bgOwner(($0 * 7) % n) }
    var seq: [Object] = []
    var codables: [BGCodable] = []
    for (i, o) in owners.enumerated() {
        let p = bgPet("p\(i)")
        p.owner = o
        p.ints.append(objectsIn: [i, i + 1, i + 2])
        p.when = i % 2 == 0 ? Date(timeIntervalSince1970: Double(i)) : nil
        p.next = i % 3 == 0 ? shared : nil
        o.pet = p
        o.friend = i == 0 ? o : owners[(i + 3) % n]
        o.pets.append(objectsIn: [p, kept, shared])
        o.petSet.insert(p)
        o.petSet.insert(shared)
        o.petMap["a"] = p
        o.petMap["b"] = .some(nil)
        o.petMap["k"] = kept
        let a = BGAddress()
        a.street = "s\(i)"
        a.pet = bgPet("through an address \(i)")
        let inner = BGInner()
        inner.n = i
        inner.pet = i % 2 == 0 ? p : shared
        a.inner = inner
        o.address = a
        for j in 0..<2 {
            let b = BGAddress()
            b.street = "s\(i).\(j)"
            b.pet = j == 0 ? shared : nil
            o.addresses.append(b)
        }
        let m = BGAddress()
        m.street = "m\(i)"
        o.addressMap["x"] = m
        switch i % 4 {
        case 0: o.any = .object(bgPet("any \(i)"))
        case 1: o.any = anyList([.int(i), .object(p), anyList([.object(bgPet("nested \(i)"))])])
        case 2: o.any = anyDict(["q": .object(bgPet("dict \(i)")), "r": .string("s\(i)"), "s": .object(kept)])
        default: o.any = .string("plain \(i)")
        }
        o.anyList.append(objectsIn: [.object(shared), .int(i), .object(kept)])
        o.tags.insert("t\(i % 3)")
        o.scores["s"] = i
        o.scores["t"] = -i
        o.ints.append(objectsIn: [i, i * 2])
        seq.append(o)
        if i % 5 == 0 { seq.append(p) } // reached already: added once
        if i % 4 == 1 {
            let l = BGLegacy()
            l.name = "legacy \(i)"
            l.pets.append(objectsIn: [p, bgPet("legacy pet \(i)")])
            l.scores["a"] = i
            l.age.value = i % 8 == 1 ? nil : i
            seq.append(l)
        }
        if i % 4 == 2 {
            let c = BGCodable()
            c.name = "codable \(i)"
            c.ints.append(i)
            codables.append(c)
            seq.append(c)
        }
        if i % 10 == 9 { seq.append(bgPet("alone \(i)")) }
    }
    // a chain of Encodable objects linking forward, and a cycle back to the first
    for (j, c) in codables.enumerated() { c.other = codables[(j + 1) % codables.count] }
    seq.append(shared)
    seq.append(kept) // managed already
    return seq
}

@Suite struct BulkAddGraphTests {
    /// Every property kind, `.error`: the same objects, keys and values; every object reached
    /// is managed afterwards, its collections live.
    @Test func everyPropertyKindMatchesSingleAdds() throws {
        try expectSameGraph { realm, add in
            let kept = bgPet("kept")
            try realm.write { realm.add(kept) }
            let seq = everyKindSequence(kept: kept)
            let first = seq[0] as! BGOwner
            let codable = seq.compactMap { $0 as? BGCodable }[0]
            let legacy = seq.compactMap { $0 as? BGLegacy }[0]
            let heldLegacyPets = legacy.pets // a legacy box is the very collection that becomes managed
            try realm.write { add(seq, .error) }
            #expect(seq.allSatisfy { $0.realm != nil && !$0.isInvalidated })
            #expect(first.pet?.realm != nil && first.address?.realm != nil && first.friend?.realm != nil)
            #expect(first.pets.realm != nil && Array(first.pets.map(\.name)) == ["p0", "kept", "shared"])
            #expect(Array(first.pet!.ints) == [0, 1, 2] && first.address?.street == "s0" && first.address?.inner?.n == 0)
            #expect(first.scores.realm != nil && first.scores.count == 2)
            #expect(first.anyList.realm != nil && first.anyList.count == 3)
            #expect(heldLegacyPets.realm != nil && heldLegacyPets.count == 2)
            try realm.write {
                first.pets.append(bgPet("appended"))
                codable.name = "renamed"
                heldLegacyPets.append(bgPet("appended through a legacy list"))
                legacy.age.value = 99
            }
            #expect(first.pets.count == 4)
            #expect(realm.objects(BGCodable.self).filter("name == 'renamed'").count == 1)
            #expect(realm.objects(BGLegacy.self).filter("age == 99").count == 1)
            #expect(legacy.pets.count == 3)
        }
    }

    /// A class linking to itself in a cycle, an object linking to itself, the same instance
    /// several times in the sequence, and a pet that links back to an owner the sequence adds
    /// later.
    @Test func cyclesAndTheSameInstanceTwice() throws {
        try expectSameGraph { realm, add in
            let a = bgOwner(1), b = bgOwner(2), c = bgOwner(3), d = bgOwner(4)
            a.friend = b
            b.friend = a
            c.friend = c
            let p = bgPet("p"), q = bgPet("q")
            p.next = q
            q.next = p
            p.owner = d // d is later in the sequence: added through p first
            a.pets.append(objectsIn: [p, p, q])
            try realm.write { add([p, a, b, a, c, p, c, d, b], .error) }
            #expect(realm.objects(BGOwner.self).count == 4)
            #expect(realm.objects(BGPet.self).count == 2)
            #expect(a.friend?.friend?.id == 1)
            // absolute figures too (both paths share the stores): creation order is key order
            #expect(Array(realm.objects(BGPet.self).map(\.name)) == ["p", "q"])
            #expect(Array(realm.objects(BGOwner.self).map(\.id)) == [1, 2, 3, 4])
            #expect(Array(a.pets.map(\.name)) == ["p", "p", "q"])
            #expect(Array(d.petsOwned.map(\.name)) == ["p"])
        }
    }

    /// Links to objects managed before the add go in with their class's batch only where the
    /// single adds would set them right after creating the object: the backlinks of a target
    /// (LinkingObjects, in the order the links were made) are the single adds' also when a
    /// link before them adds other objects first, when the sequence updates objects, and when
    /// the sequence links the same target from many objects.
    @Test(arguments: [Realm.UpdatePolicy.error, .modified, .all])
    func backlinksKeepTheOrderOfSingleAdds(_ policy: Realm.UpdatePolicy) throws {
        try expectSameGraph { realm, add in
            let keptPets = (0..<3).map { bgPet("kept \($0)") }
            let keptOwner = bgOwner(1000, "kept owner")
            try realm.write {
                for p in keptPets { realm.add(p) }
                realm.add(keptOwner)
                if policy != .error { realm.add(bgOwner(7, "old 7")) }
            }
            var seq: [Object] = []
            for i in 0..<30 {
                let o = bgOwner(i)
                o.pet = keptPets[i % 3]
                // a friend before `pet` in the class: the friend (and its pet link) is added first
                if i % 4 == 1 {
                    let f = bgOwner(100 + i)
                    f.pet = keptPets[i % 3]
                    o.friend = f
                }
                let p = bgPet("new \(i)")
                p.owner = keptOwner
                if i % 5 == 2 {
                    let q = bgPet("next \(i)")
                    q.owner = keptOwner
                    p.next = q
                }
                seq.append(o)
                // a class without a primary key is added with an update policy only through a
                // link (RealmSwift traps on one in the sequence: PreconditionTests)
                if policy == .error { seq.append(p) } else { o.pets.append(p) }
            }
            try realm.write { add(seq, policy) }
            #expect(keptPets[0].petOf.count > 5)
            #expect(keptOwner.petsOwned.count == 36)
        }
    }

    /// `.modified`/`.all`: an object whose primary key is met again inside its own graph (a
    /// link to another instance with the same key) is updated by that instance in the middle of
    /// its own add: plain values declared before the link end with the second instance's, those
    /// after it with the first's, as the single add stores them in declaration order.
    @Test(arguments: [Realm.UpdatePolicy.modified, .all])
    func aPrimaryKeyMetAgainInsideItsOwnGraph(_ policy: Realm.UpdatePolicy) throws {
        try expectSameGraph { realm, add in
            let a = BGNode(), b = BGNode(), c = BGNode()
            a.id = 1; a.before = "a"; a.after = "a"; a.tags.append("a")
            b.id = 1; b.before = "b"; b.after = "b"; b.tags.append("b")
            c.id = 2; c.before = "c"; c.after = "c"
            a.parent = b
            b.parent = c
            let d = BGNode()
            d.id = 3; d.before = "d"; d.after = "d"
            try realm.write { add([d, a, bgOwner(50)], policy) }
            #expect(realm.object(ofType: BGNode.self, forPrimaryKey: 1)?.after == "a")
            #expect(realm.object(ofType: BGNode.self, forPrimaryKey: 1)?.before == "b")
        }
    }

    /// A sequence that is not an array is added element by element as it is produced, as
    /// RealmSwift's loop of single adds does: an element made after the previous ones were
    /// added can find them.
    @Test func aLazySequenceSeesWhatItsEarlierElementsAdded() throws {
        var dumps: [[String]] = []
        for asSequence in [true, false] {
            let dir = TempDir()
            let realm = try Realm(configuration: dir.config(bulkGraphTypes))
            let seq = [1, 1, 2].lazy.map { (id: Int) -> BGPet in
                let p = bgPet("n\(realm.objects(BGPet.self).count)")
                p.owner = realm.object(ofType: BGOwner.self, forPrimaryKey: id) ?? bgOwner(id)
                return p
            }
            try realm.write {
                if asSequence { realm.add(seq) } else { for p in seq { realm.add(p) } }
            }
            #expect(Array(realm.objects(BGPet.self).map(\.name)) == ["n0", "n1", "n2"])
            #expect(realm.objects(BGOwner.self).count == 2)
            dumps.append(bulkGraphDump(realm))
        }
        #expect(dumps[0] == dumps[1])
    }

    /// Sequences of one class that needs the walk (links among the sequence) in random order,
    /// into a table that already holds objects.
    @Test func largeRandomGraphs() throws {
        try expectSameGraph { realm, add in
            var rng = SeededRNG(seed: 16)
            try realm.write { add((0..<200).map { bgOwner($0 * 2) }, .error) }
            let owners = (0..<1000).map { _ in bgOwner(0) }
            for (i, o) in owners.enumerated() { o.id = 1000 + i * 7919 % 1000 }
            let pets = (0..<500).map { bgPet("r\($0)") }
            for o in owners {
                if Bool.random(using: &rng) { o.friend = owners.randomElement(using: &rng) }
                for _ in 0..<Int.random(in: 0..<4, using: &rng) { o.pets.append(pets.randomElement(using: &rng)!) }
                if Int.random(in: 0..<5, using: &rng) == 0 { o.pet = pets.randomElement(using: &rng) }
            }
            for p in pets where Bool.random(using: &rng) { p.owner = owners.randomElement(using: &rng) }
            var seq: [Object] = owners.shuffled(using: &rng)
            seq.insert(contentsOf: pets.prefix(100).map { $0 as Object }, at: 300)
            try realm.write { add(seq, .error) }
            #expect(realm.objects(BGOwner.self).count == 1200)
        }
    }

    /// `.modified` and `.all`: objects (in the sequence, or reached through links) whose
    /// primary key exists update it; one twice in the sequence creates and then updates; the
    /// links and collections of an updated object are those of the last one added.
    @Test func updatePoliciesMatchSingleAdds() throws {
        for policy in [Realm.UpdatePolicy.modified, .all] {
            try expectSameGraph { realm, add in
                let kept = bgPet("kept")
                try realm.write {
                    realm.add(kept)
                    for id in 0..<10 {
                        let o = bgOwner(id, "old \(id)")
                        o.pets.append(bgPet("old pet \(id)"))
                        o.scores["old"] = id
                        realm.add(o)
                    }
                }
                var seq: [Object] = []
                for id in 5..<15 {
                    let o = bgOwner(id, "new \(id)")
                    o.pet = bgPet("new pet \(id)")
                    o.pets.append(objectsIn: [o.pet!, kept])
                    o.scores["new"] = id
                    o.friend = bgOwner(id % 3, "through a link \(id)") // exists: updated through the link
                    let a = BGAddress()
                    a.street = "new street \(id)"
                    o.address = a
                    seq.append(o)
                }
                let twin = bgOwner(12, "twin")
                twin.pets.append(bgPet("twin pet"))
                seq.insert(twin, at: 3) // before the 12 of the loop: that one updates it
                let again = bgOwner(20, "first 20")
                let last = bgOwner(20, "second 20")
                last.friend = again
                seq.append(contentsOf: [again, last])
                try realm.write { add(seq, policy) }
                #expect(realm.objects(BGOwner.self).count == 16)
                #expect(realm.object(ofType: BGOwner.self, forPrimaryKey: 20)?.name == "second 20")
                #expect(realm.object(ofType: BGOwner.self, forPrimaryKey: 12)?.name == "new 12")
                #expect(seq.allSatisfy { $0.realm != nil })
            }
        }
    }

    /// Observers see one change set from another thread's batched add, the same as from the
    /// single adds: the insertions of every class, and an updated object as a modification.
    @Test func notificationsOfASequenceWithLinks() throws {
        var seen: [[Seen?]] = []
        for batched in [true, false] {
            let f = try Fixture(models: bulkGraphTypes)
            let owners = Events<Seen>(), pets = Events<Seen>(), sorted = Events<Seen>()
            try f.run { realm in
                try realm.write { for id in [10, 20] { realm.add(bgOwner(id)) } }
                f.tokens.append(realm.objects(BGOwner.self).observe { owners.add(Seen($0)) })
                f.tokens.append(realm.objects(BGPet.self).observe { pets.add(Seen($0)) })
                f.tokens.append(realm.objects(BGPet.self).sorted(byKeyPath: "name").observe { sorted.add(Seen($0)) })
            }
            var got = [owners.next(), pets.next(), sorted.next()]
            f.writeElsewhere { r in
                let objects = [25, 5, 20, 15].map { bgOwner($0, "n\($0)") }
                for (i, o) in objects.enumerated() {
                    o.pet = bgPet("z\(9 - i)")
                    o.pets.append(bgPet("a\(i)"))
                }
                objects[0].friend = bgOwner(1) // added through the link, before 5
                if batched { r.add(objects, update: .modified) } else { for o in objects { r.add(o, update: .modified) } }
            }
            got.append(contentsOf: [owners.next(), pets.next(), sorted.next()])
            seen.append(got)
            try f.finish()
        }
        #expect(seen[0] == seen[1])
        // owners by key (the ids): 1 5 10 15 20 25; 20 existed (at 1 before the write)
        #expect(seen[0][3] == Seen(count: 6, ins: [0, 1, 3, 5], mod: [1]))
        #expect(seen[0][4] == Seen(count: 8, ins: Array(0..<8), mod: []))
    }

    /// The batched add's errors, in exit tests: each is the error the single adds of the same
    /// objects report (checked too), at the same object.
    @Test(arguments: [
        (0, "Attempting to create an object of type 'BGOwner' with an existing primary key value '1'."),
        (1, "Attempting to create an object of type 'BGOwner' with an existing primary key value '5'."),
        (2, "Attempting to create an object of type 'BGOwner' with an existing primary key value '7'."),
        (3, "Object is already managed by another Realm. Use create instead to copy it into this Realm."),
        (4, "Adding a deleted or invalidated object to a Realm is not permitted"),
        (5, "Adding a deleted or invalidated object to a Realm is not permitted"),
        (6, "Cannot set a link to an existing managed embedded object"),
        (7, "Cannot add an existing managed embedded object to a List."),
        (8, "Adding a deleted or invalidated object to a Realm is not permitted"),
        (9, "Adding a deleted or invalidated object to a Realm is not permitted"),
        (10, "Attempting to create an object of type 'BGOwner' with an existing primary key value '5'."),
        (11, "Map key 'a.b' is not allowed"),
        (12, "Map key '$x' is not allowed"),
        (13, "Object is already managed by another Realm. Use create instead to copy it into this Realm."),
        (14, "Object type 'BGOutside' is not managed by the Realm"),
        (15, "Attempting to create an object of type 'BGOwner' with an existing primary key value '1'."),
    ])
    func errorsAreThoseOfSingleAdds(_ scenario: Int, _ message: String) async {
        let batched = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [scenario] in
            bulkGraphErrorScenario(scenario, batched: true)
        }
        expectMessage(batched, message)
        let single = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [scenario] in
            bulkGraphErrorScenario(scenario, batched: false)
        }
        expectMessage(single, message)
    }
}

/// The error scenarios, by number, each adding its objects as one sequence (`batched`) or one
/// at a time; each ends in a trap. The scenario exits normally if nothing trapped.
func bulkGraphErrorScenario(_ scenario: Int, batched: Bool) {
    let dir = TempDir()
    let realm = try! Realm(configuration: dir.config(bulkGraphTypes))
    func add(_ objects: [Object], _ policy: Realm.UpdatePolicy = .error) {
        if batched { realm.add(objects, update: policy) } else { for o in objects { realm.add(o, update: policy) } }
    }
    try! realm.write { for id in [5, 7] { realm.add(bgOwner(id)) } }
    realm.beginWrite()
    switch scenario {
    case 0: // a primary key twice in the sequence, the second reached through a link
        let a = bgOwner(1), b = bgOwner(2)
        b.friend = bgOwner(1)
        add([a, bgPet("x"), b])
    case 1: // a primary key in the file
        add([bgOwner(6), bgOwner(5)])
    case 2: // pets are created first; the first existing key in the single adds' order is 7,
        // reached through a link of 8, before the 5 of the sequence
        let o = bgOwner(8)
        o.friend = bgOwner(7)
        add([bgPet("x"), bgOwner(9), o, bgOwner(5)])
    case 3: // a link to an object of another Realm
        let otherDir = TempDir()
        let other = try! Realm(configuration: otherDir.config(bulkGraphTypes))
        let p = bgPet("other")
        try! other.write { other.add(p) }
        let o = bgOwner(2)
        o.pets.append(p)
        add([bgOwner(1), o])
    case 4: // a link to a deleted object
        let p = bgPet("deleted")
        realm.add(p)
        realm.delete(p)
        let o = bgOwner(2)
        o.pet = p
        add([bgOwner(1), o])
    case 5: // a deleted object in the sequence
        let p = bgPet("deleted")
        realm.add(p)
        realm.delete(p)
        add([bgPet("a"), p, bgPet("b")])
    case 6: // an embedded object that is managed already
        let first = bgOwner(1)
        first.address = BGAddress()
        realm.add(first)
        let o = bgOwner(2)
        o.address = first.address
        add([bgOwner(3), o])
    case 7: // the same unmanaged embedded object twice
        let a = BGAddress()
        let o = bgOwner(2)
        o.addresses.append(objectsIn: [a, a])
        add([bgOwner(1), o])
    case 8: // a deleted object linked before a primary key in the file: the first error counts
        let p = bgPet("deleted")
        realm.add(p)
        realm.delete(p)
        let o = bgOwner(2)
        o.pet = p
        add([o, bgOwner(5)])
    case 9: // the same after another class's objects were created (pets first)
        let p = bgPet("deleted")
        realm.add(p)
        realm.delete(p)
        let o = bgOwner(2)
        o.pet = p
        add([bgPet("new"), o, bgOwner(5)])
    case 10: // a value the core refuses (over its size limit) after the first error
        add([bgPet("first"), bgOwner(5), bgPet(String(repeating: "x", count: 17 << 20))])
    case 11: // an invalid map key
        let o = bgOwner(2)
        o.scores["a.b"] = 1
        add([bgOwner(1), o, bgOwner(5)])
    case 12: // an invalid key of a dictionary nested in an AnyRealmValue list
        let o = bgOwner(2)
        o.anyList.append(anyDict(["$x": .int(1)]))
        add([bgPet("first"), o, bgOwner(5)])
    case 13: // a frozen object
        let p = bgPet("frozen")
        realm.add(p)
        try! realm.commitWrite()
        let frozen = p.freeze()
        realm.beginWrite()
        let o = bgOwner(2)
        o.pets.append(frozen)
        add([bgOwner(1), o, bgOwner(5)])
    case 14: // an object of a class not in the schema
        add([bgPet("first"), BGOutside(), bgOwner(5)])
    case 15: // a key twice in a class created after another (pets first): the strict walk
        let o = bgOwner(2)
        o.friend = bgOwner(1)
        add([bgPet("x"), bgOwner(1), o, bgOwner(5)])
    default:
        break
    }
    realm.cancelWrite()
}
