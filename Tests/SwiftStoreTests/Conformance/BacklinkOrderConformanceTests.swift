// RealmSwift conformance: the order of LinkingObjects.
//
// RealmSwift's core keeps, per target object and link property, the origin keys in the order
// the links were made, one entry per link (an origin whose List holds the target twice is
// listed twice). Removing a link takes the first entry of that origin out by moving the last
// entry into its place. LinkingObjects lists the origins in that order.
import Foundation
import Testing
import SwiftStore

final class CfBlTarget: Object {
    @Persisted var name = ""
    @Persisted(originProperty: "link") var fromLinks: LinkingObjects<CfBlOrigin>
    @Persisted(originProperty: "list") var fromLists: LinkingObjects<CfBlOrigin>
}

final class CfBlOrigin: Object {
    @Persisted var name = ""
    @Persisted var link: CfBlTarget?
    @Persisted var list: List<CfBlTarget>
}

@Suite("Conformance: backlink order")
struct BacklinkOrderConformanceTests {
    private func names(_ l: LinkingObjects<CfBlOrigin>) -> [String] { l.map(\.name) }

    private func open(_ dir: TempDir) throws -> (Realm, CfBlTarget, [String: CfBlOrigin]) {
        let realm = try Realm(configuration: dir.config([CfBlTarget.self, CfBlOrigin.self]))
        let target = CfBlTarget(value: ["name": "t"])
        var origins: [String: CfBlOrigin] = [:]
        try realm.write {
            realm.add(target)
            for n in ["a", "b", "c", "d", "e", "f"] {
                let o = CfBlOrigin(value: ["name": n])
                realm.add(o)
                origins[n] = o
            }
        }
        return (realm, target, origins)
    }

    /// The order links were made, not the origins' creation order; a removed link's place
    /// is taken by the last one.
    @Test func singleLinks() throws {
        let dir = TempDir()
        let (realm, target, o) = try open(dir)
        try realm.write {
            for n in ["c", "a", "d", "b"] { o[n]!.link = target }
        }
        #expect(names(target.fromLinks) == ["c", "a", "d", "b"])
        try realm.write { o["a"]!.link = nil }
        #expect(names(target.fromLinks) == ["c", "b", "d"])
        // Deleting an origin removes its link the same way.
        try realm.write { realm.delete(o["c"]!) }
        #expect(names(target.fromLinks) == ["d", "b"])
        // Filtered and counted in the same order.
        #expect(target.fromLinks.filter("name != 'x'").map(\.name) == ["d", "b"])
        try realm.write { o["e"]!.link = target }
        #expect(names(target.fromLinks) == ["d", "b", "e"])
        // Removing the last keeps the others in place.
        try realm.write { o["e"]!.link = nil }
        #expect(names(target.fromLinks) == ["d", "b"])
    }

    /// One entry per link: a List holding the target twice lists its owner twice; removing
    /// one occurrence removes the owner's first entry.
    @Test func listLinksAndDuplicates() throws {
        let dir = TempDir()
        let (realm, target, o) = try open(dir)
        try realm.write {
            o["e"]!.list.append(target)
            o["f"]!.list.append(target)
            o["e"]!.list.append(target)
            o["d"]!.list.append(target)
        }
        #expect(names(target.fromLists) == ["e", "f", "e", "d"])
        #expect(target.fromLists.count == 4)
        try realm.write { o["e"]!.list.remove(at: 0) }
        #expect(names(target.fromLists) == ["d", "f", "e"])
        try realm.write { o["f"]!.list.removeAll() }
        #expect(names(target.fromLists) == ["d", "e"])
    }
}
