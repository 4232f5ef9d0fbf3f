// RealmSwift conformance: which object instances a cancelled write leaves invalidated.
//
// RealmSwift's rule comes from its core's object accessor: an accessor re-checks its row when
// the data changed, and once it has seen its row gone it stays invalid for good. So after
// `cancelWrite()` restores deleted rows, every instance that was seen invalidated during the
// write (an `isInvalidated` read, a description, a comparison) and every instance passed to
// `delete` stays invalidated, while instances nobody looked at read their restored row again.
// That holds alike for other instances of a deleted row, for objects removed by
// `deleteAll()` and for embedded objects deleted with their owner.
import Foundation
import Testing
import SwiftStore

final class CfCwOwner: Object {
    @Persisted var name = ""
    @Persisted var address: CfCwAddress?
}

final class CfCwAddress: EmbeddedObject {
    @Persisted var city = ""
}

@Suite("Conformance: cancelWrite and object instances")
struct CancelWriteConformanceTests {
    private func open(_ dir: TempDir) throws -> Realm {
        let realm = try Realm(configuration: dir.config([CfCwOwner.self, CfCwAddress.self]))
        try realm.write {
            realm.add(CfCwOwner(value: ["name": "a", "address": ["city": "Oslo"]]))
            realm.add(CfCwOwner(value: ["name": "b", "address": ["city": "Rome"]]))
        }
        return realm
    }

    /// Another instance of a row deleted in the cancelled write: invalidated for good if it
    /// was seen deleted during the write, valid again if it was not.
    @Test func otherInstancesOfADeletedRow() throws {
        let dir = TempDir()
        let realm = try open(dir)
        let deleted = realm.objects(CfCwOwner.self).filter("name == 'a'").first!
        let seen = realm.objects(CfCwOwner.self).filter("name == 'a'").first!
        let unseen = realm.objects(CfCwOwner.self).filter("name == 'a'").first!
        realm.beginWrite()
        realm.delete(deleted)
        #expect(seen.isInvalidated)
        realm.cancelWrite()
        #expect(deleted.isInvalidated)
        #expect(seen.isInvalidated)
        #expect(seen.description == "[invalid object]")
        #expect(!unseen.isInvalidated)
        #expect(unseen.name == "a")
        #expect(realm.objects(CfCwOwner.self).count == 2)
    }

    /// Objects removed by `deleteAll()`: the same rule.
    @Test func objectsRemovedByDeleteAll() throws {
        let dir = TempDir()
        let realm = try open(dir)
        let a = realm.objects(CfCwOwner.self).filter("name == 'a'").first!
        let b = realm.objects(CfCwOwner.self).filter("name == 'b'").first!
        realm.beginWrite()
        realm.deleteAll()
        #expect(a.isInvalidated)
        realm.cancelWrite()
        #expect(a.isInvalidated)
        #expect(!b.isInvalidated)
        #expect(b.name == "b")
        #expect(realm.objects(CfCwOwner.self).count == 2)
        // Seen in a comparison counts as seen (the receiver is looked at first).
        let b2 = realm.objects(CfCwOwner.self).filter("name == 'b'").first!
        realm.beginWrite()
        realm.deleteAll()
        #expect(!b2.isSameObject(as: b))
        realm.cancelWrite()
        #expect(b2.isInvalidated)
    }

    /// Embedded objects deleted with their owner: the same rule.
    @Test func embeddedObjectsDeletedWithTheirOwner() throws {
        let dir = TempDir()
        let realm = try open(dir)
        let owner = realm.objects(CfCwOwner.self).filter("name == 'a'").first!
        let seen = owner.address!
        let unseen = owner.address!
        realm.beginWrite()
        realm.delete(owner)
        #expect(seen.isInvalidated)
        realm.cancelWrite()
        #expect(owner.isInvalidated)
        #expect(seen.isInvalidated)
        #expect(!unseen.isInvalidated)
        #expect(unseen.city == "Oslo")
    }

    /// An instance seen invalid after a committed delete never comes back either: the rule
    /// is the accessor's, not the transaction's.
    @Test func seenInvalidStaysInvalid() throws {
        let dir = TempDir()
        let realm = try open(dir)
        let a = realm.objects(CfCwOwner.self).filter("name == 'a'").first!
        realm.beginWrite()
        realm.delete(realm.objects(CfCwOwner.self).filter("name == 'a'"))
        #expect(a.isInvalidated)
        realm.add(CfCwOwner(value: ["name": "c"]))
        realm.cancelWrite()
        #expect(a.isInvalidated)
        #expect(realm.objects(CfCwOwner.self).filter("name == 'a'").first?.isInvalidated == false)
    }
}
