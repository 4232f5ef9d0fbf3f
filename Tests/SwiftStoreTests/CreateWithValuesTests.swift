import Foundation
import Testing
@testable import SwiftStore

// `realm.add` of a new object creates its row with its plain values in one core call, read as
// their own types (docs/ARCHITECTURE.md, Creating an object with its values); a batched add reads
// them the same way. What a single add and a batch store must not change.

/// Every type `add` reads directly, with and without initial values, and a List, a link and a
/// String after them (stored one by one after the row is made).
final class CWAll: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var i = 7
    @Persisted var i64: Int64 = -9_000_000_000
    @Persisted var i32: Int32 = -70_000
    @Persisted var i16: Int16 = -300
    @Persisted var i8: Int8 = -5
    @Persisted var oi: Int?
    @Persisted var oi64: Int64?
    @Persisted var oi32: Int32? = 32
    @Persisted var oi16: Int16?
    @Persisted var oi8: Int8? = -8
    @Persisted var b = true
    @Persisted var ob: Bool?
    @Persisted var d = 2.5
    @Persisted var od: Double?
    @Persisted var f: Float = 1.25
    @Persisted var of: Float?
    @Persisted var s = "initial"
    @Persisted var os: String?
    @Persisted var never: Int
    @Persisted var neverString: String
    @Persisted var tags: List<Int>
    @Persisted var next: CWAll?
    @Persisted var after = "after"
}

/// A class without a primary key, String first.
final class CWPlain: Object {
    @Persisted var name = ""
    @Persisted var n = 0
    @Persisted var on: Int?
}

/// No property read directly: the row is made with no value named.
final class CWOnlyList: Object {
    @Persisted var items: List<String>
    @Persisted var link: CWPlain?
}

/// A Date (not read directly, holds no object) before the direct values.
final class CWDateFirst: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var created = Date(timeIntervalSince1970: 5)
    @Persisted var n = 0
    @Persisted var s = ""
}

/// A primary key not read directly: `add` takes the general path.
final class CWObjectIdKey: Object {
    @Persisted(primaryKey: true) var id = ObjectId.generate()
    @Persisted var n = 0
}

/// A String primary key (found through its index) and an Optional Int one.
final class CWStringKey: Object {
    @Persisted(primaryKey: true) var id = ""
    @Persisted var n = 0
    @Persisted var s: String?
}

final class CWOptionalKey: Object {
    @Persisted(primaryKey: true) var id: Int?
    @Persisted var n = 0
}

/// A primary key met again inside its own graph: `before` is declared before the link, `after`
/// after it.
final class CWNode: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var before = ""
    @Persisted var parent: CWNode?
    @Persisted var after = ""
}

/// The values of a CWAll as text, for comparisons.
private func describe(_ o: CWAll) -> String {
    let opt: (Any?) -> String = { $0.map { "\($0)" } ?? "nil" }
    return [
        "\(o.id)", "\(o.i)", "\(o.i64)", "\(o.i32)", "\(o.i16)", "\(o.i8)", opt(o.oi), opt(o.oi64), opt(o.oi32),
        opt(o.oi16), opt(o.oi8), "\(o.b)", opt(o.ob), "\(o.d)", opt(o.od), "\(o.f)", opt(o.of), o.s, opt(o.os),
        "\(o.never)", o.neverString, "\(Array(o.tags))", opt(o.next?.id), o.after,
    ].joined(separator: "|")
}

/// A CWAll whose values depend on `k`: every other one keeps its initial values, the rest set
/// every property (nil, empty and non-ASCII Strings, extremes of each width).
private func makeAll(_ k: Int) -> CWAll {
    let o = CWAll()
    o.id = k
    if k % 2 == 0 { return o }
    o.i = Int.min + k
    o.i64 = Int64.max - Int64(k)
    o.i32 = Int32.min
    o.i16 = Int16.max
    o.i8 = Int8.min
    o.oi = k % 3 == 0 ? nil : -k
    o.oi64 = Int64(k) << 40
    o.oi32 = nil
    o.oi16 = Int16(k)
    o.oi8 = k % 5 == 0 ? nil : 8
    o.b = false
    o.ob = k % 3 == 1
    o.d = -Double(k) / 3
    o.od = k % 3 == 0 ? nil : Double.infinity
    o.f = Float(k) * 0.5
    o.of = -0.0
    o.s = k % 3 == 0 ? "" : "naïve \(k) 🐟"
    o.os = k % 3 == 0 ? nil : String(repeating: "x", count: k * 37)
    o.tags.append(objectsIn: [k, -k])
    o.after = "after \(k)"
    return o
}

@Suite struct CreateWithValuesTests {
    /// Single adds and one batched add of the same objects (ids in a scattered order, so rows go
    /// into the middle of leaves) read back as the objects held before they were added, and as
    /// each other; the added objects are managed and live.
    @Test func everyDirectTypeReadsBackAsAdded() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CWAll.self, CWPlain.self]))
        let n = 301
        let ids = (0..<n).map { $0 * 7919 % n }
        let singles = ids.map { makeAll($0) }
        let expected = singles.map(describe)
        try realm.write { for o in singles { realm.add(o) } }
        // each created by the direct path; after the create, `tags` (not read directly), `next`
        // (a link) and `after` (a direct value declared after the link) are stored again
        #expect(realm.core.directAdds == n)
        #expect(realm.core.laterStores == 3 * n)
        let batch = ids.map { makeAll($0 + 1000) }
        let expectedBatch = batch.map(describe)
        try realm.write { realm.add(batch) }
        #expect(singles.map(describe) == expected)
        #expect(batch.map(describe) == expectedBatch)
        for (k, o) in zip(ids, singles) {
            #expect(o.realm != nil && !o.isInvalidated)
            let fetched = try #require(realm.object(ofType: CWAll.self, forPrimaryKey: k))
            #expect(describe(fetched) == describe(o))
        }
        // live: a change through another accessor is seen by the added object
        let first = singles[1]
        try realm.write { realm.object(ofType: CWAll.self, forPrimaryKey: first.id)!.oi = 99 }
        #expect(first.oi == 99)
        try realm.write {
            realm.add([CWPlain(), CWPlain(value: ["name": "b", "n": 2, "on": 3])])
            let p = CWPlain()
            p.name = "c"
            p.on = nil
            realm.add(p)
        }
        #expect(realm.objects(CWPlain.self).map { "\($0.name) \($0.n) \($0.on.map { "\($0)" } ?? "nil")" } == [" 0 nil", "b 2 3", "c 0 nil"])
    }

    /// A class without a property read directly (a List and a link only): single adds and a
    /// batch create its rows with nothing named, then store the List and the link.
    @Test func aClassWithNothingReadDirectly() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CWOnlyList.self, CWPlain.self]))
        func make(_ k: Int) -> CWOnlyList {
            let o = CWOnlyList()
            o.items.append(objectsIn: (0..<k).map { "item \($0)" })
            if k % 2 == 1 { o.link = CWPlain(value: ["name": "linked \(k)"]) }
            return o
        }
        try realm.write {
            for k in 0..<4 { realm.add(make(k)) }
            realm.add((4..<8).map(make))
        }
        let all = realm.objects(CWOnlyList.self)
        #expect(all.map { $0.items.count } == Array(0..<8))
        #expect(all.map { $0.link?.name ?? "-" } == ["-", "linked 1", "-", "linked 3", "-", "linked 5", "-", "linked 7"])
    }

    /// Only a property that can hold objects makes the direct values after it stored again: a
    /// Date first is stored once after the create, the Int and String after it are not; a class
    /// whose primary key is not read directly takes the general path.
    @Test func whatIsStoredAfterTheCreate() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CWDateFirst.self, CWObjectIdKey.self]))
        try realm.write {
            for k in 0..<10 {
                let o = CWDateFirst()
                o.id = k
                o.created = Date(timeIntervalSince1970: Double(k * 100))
                o.n = -k
                o.s = "s\(k)"
                realm.add(o)
            }
        }
        #expect(realm.core.directAdds == 10)
        #expect(realm.core.laterStores == 10)
        #expect(realm.objects(CWDateFirst.self).map { "\($0.id) \($0.created.timeIntervalSince1970) \($0.n) \($0.s)" }
                == (0..<10).map { "\($0) \(Double($0 * 100)) \(-$0) s\($0)" })
        try realm.write { for k in 0..<3 { realm.add(CWObjectIdKey(value: ["n": k])) } }
        #expect(realm.core.directAdds == 10, "no direct add for an ObjectId primary key")
        #expect(realm.objects(CWObjectIdKey.self).map(\.n).sorted() == [0, 1, 2])
    }

    /// `.modified`/`.all` with a String primary key (found through its index) and an Optional
    /// Int one (nil a key like the others): an existing key updates its row, a new one creates.
    @Test(arguments: [Realm.UpdatePolicy.modified, .all])
    func updatesWithStringAndOptionalKeys(_ policy: Realm.UpdatePolicy) throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CWStringKey.self, CWOptionalKey.self]))
        func str(_ id: String, _ n: Int, _ s: String?) -> CWStringKey {
            let o = CWStringKey()
            o.id = id
            o.n = n
            o.s = s
            return o
        }
        func opt(_ id: Int?, _ n: Int) -> CWOptionalKey {
            let o = CWOptionalKey()
            o.id = id
            o.n = n
            return o
        }
        try realm.write {
            realm.add([str("a", 1, "x"), str("", 2, nil)])
            realm.add(opt(nil, 1))
            realm.add(opt(7, 2))
        }
        try realm.write {
            realm.add(str("a", 10, nil), update: policy)
            realm.add(str("", 20, "y"), update: policy)
            realm.add(str("b", 30, "z"), update: policy)
            realm.add(opt(nil, 10), update: policy)
            realm.add(opt(7, 20), update: policy)
            realm.add(opt(8, 30), update: policy)
        }
        #expect(realm.objects(CWStringKey.self).sorted(byKeyPath: "id").map { "\($0.id):\($0.n):\($0.s ?? "nil")" }
                == [":20:y", "a:10:nil", "b:30:z"])
        #expect(realm.objects(CWOptionalKey.self).sorted(byKeyPath: "n").map { "\($0.id.map { "\($0)" } ?? "nil"):\($0.n)" }
                == ["nil:10", "7:20", "8:30"])
    }

    /// A link to a new object is added with the object that holds it, after the holder's row.
    @Test func linksAndListsAfterThePlainValues() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CWAll.self, CWPlain.self]))
        let a = makeAll(1), b = makeAll(2)
        a.next = b
        b.next = a
        try realm.write { realm.add(a) }
        #expect(b.realm != nil)
        #expect(realm.objects(CWAll.self).count == 2)
        #expect(a.next?.id == 2 && b.next?.id == 1)
        #expect(Array(a.tags) == [1, -1] && b.tags.isEmpty)
    }

    /// Under `.modified`/`.all` an existing primary key updates its row and a new one creates a
    /// row with the object's values; under `.error` the create is the uniqueness check (an
    /// existing key traps: PreconditionTests).
    @Test(arguments: [Realm.UpdatePolicy.modified, .all])
    func updatesAndCreatesUnderUpdatePolicies(_ policy: Realm.UpdatePolicy) throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CWAll.self, CWPlain.self]))
        try realm.write { realm.add(makeAll(3)) }
        let again = makeAll(3)
        again.s = "updated"
        again.oi = nil
        let fresh = makeAll(5)
        try realm.write {
            realm.add(again, update: policy)
            realm.add(fresh, update: policy)
        }
        #expect(realm.objects(CWAll.self).count == 2)
        let three = try #require(realm.object(ofType: CWAll.self, forPrimaryKey: 3))
        #expect(three.s == "updated" && three.oi == nil)
        #expect(describe(try #require(realm.object(ofType: CWAll.self, forPrimaryKey: 5))) == describe(makeAll(5)))
        #expect(Array(three.tags) == [3, -3], "the List is replaced by the object's")
    }

    /// A single add under `.modified`/`.all` whose object links another instance with the same
    /// primary key: that instance updates the row in the middle of the add, so the values
    /// declared before the link end with its values and those after the link with the first
    /// object's, as the add stores them in declaration order.
    @Test(arguments: [Realm.UpdatePolicy.modified, .all])
    func aPrimaryKeyMetAgainInsideItsOwnSingleAdd(_ policy: Realm.UpdatePolicy) throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CWNode.self]))
        let a = CWNode(), b = CWNode()
        a.id = 1; a.before = "a"; a.after = "a"
        b.id = 1; b.before = "b"; b.after = "b"
        a.parent = b
        try realm.write { realm.add(a, update: policy) }
        let row = try #require(realm.object(ofType: CWNode.self, forPrimaryKey: 1))
        #expect(row.before == "b")
        #expect(row.after == "a")
        #expect(realm.objects(CWNode.self).count == 1)
    }

    /// The write's change set: objects added one by one in a scattered order are insertions at
    /// their places in a sorted Results, and an object that updates a row is a modification.
    @Test func notificationsOfSingleAdds() throws {
        let f = try Fixture(models: [CWAll.self, CWPlain.self])
        let seen = Events<Seen>()
        try f.run { realm in
            try realm.write { for k in [10, 20, 30] { realm.add(makeAll(k)) } }
            f.tokens.append(realm.objects(CWAll.self).sorted(byKeyPath: "id").observe { seen.add(Seen($0)) })
        }
        #expect(seen.next() == Seen(initial: true, count: 3))
        try f.run { realm in
            try realm.write {
                for k in [25, 5, 15] { realm.add(makeAll(k)) }
                let changed = makeAll(20)
                changed.s = "changed"
                realm.add(changed, update: .modified)
            }
        }
        // sorted after the write: 5 10 15 20 25 30 (insertions in the new order, the
        // modification at 20's index before the write, as RealmSwift reports them)
        #expect(seen.next() == Seen(count: 6, ins: [0, 2, 4], mod: [1]))
        try f.finish()
    }
}
