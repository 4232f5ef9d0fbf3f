import Foundation
import Testing
@testable import SwiftStore

/// LinkingObjects: the objects linking to an object, live, queryable like a Results, empty
/// while unmanaged. Models and seeds are in RealmCollectionTests.swift:
/// apple.boxes (through `items`) is [A, B], banana's [B], cherry's [A], date's [B], elder's [A];
/// A.members (through `box`) is [apple, cherry], B's [banana, date], C's [].
@Suite struct LinkingObjectsTests {
    struct Fixture {
        let dir: TempDir
        let realm: Realm
        let a: ColBox, b: ColBox, c: ColBox

        init(_ name: String = #function) throws {
            dir = TempDir(name)
            let realm = try Realm(configuration: dir.config(colModels))
            (a, b, c) = try colSeedBoxes(realm)
            self.realm = realm
        }

        func item(_ id: Int) -> ColItem { realm.object(ofType: ColItem.self, forPrimaryKey: id)! }
    }

    @Test func basics() throws {
        let f = try Fixture()
        let apple = f.item(1)
        #expect(apple.boxes.count == 2)
        #expect(apple.boxes.map(\.name) == ["A", "B"])
        #expect(apple.boxes.first?.name == "A")
        #expect(apple.boxes.last?.name == "B")
        #expect(apple.boxes[1].name == "B")
        #expect(apple.boxes.realm == f.realm)
        #expect(!apple.boxes.isInvalidated)
        #expect(f.item(2).boxes.map(\.name) == ["B"])
        #expect(f.a.members.map(\.id) == [1, 3])
        #expect(f.b.members.map(\.id) == [2, 4])
        #expect(f.c.members.count == 0)
        #expect(f.c.members.count == 0)
        #expect(apple.boxes.startIndex == 0 && apple.boxes.endIndex == 2)
    }

    @Test func filter() throws {
        let f = try Fixture()
        let apple = f.item(1)
        #expect(apple.boxes.filter("rank > 1").map(\.name) == ["B"])
        #expect(apple.boxes.filter("rank > %@", 5).count == 0)
        #expect(apple.boxes.filter(NSPredicate(format: "name == %@", "A")).map(\.name) == ["A"])
        #expect(boxNames(apple.boxes, "items.@count == 3") == ["A", "B"])
        #expect(boxNames(apple.boxes, "ANY items.name == 'banana'") == ["B"])
        #expect(boxNames(apple.boxes, "numbers.@sum > 10") == ["B"])
        #expect(ids(f.a.members, "int == 3 AND flag == true") == [1])
        #expect(ids(f.b.members, "box.rank == 2") == [2, 4])
        #expect(ids(f.b.members, "@links.ColBox.items.@count == 1") == [2, 4])
        let thrown = try? f.a.members.filter(throwing: "double < %@", 1.0)
        #expect(thrown?.map(\.id) == [3])
    }

    @Test func sortedAndDistinct() throws {
        let f = try Fixture()
        let apple = f.item(1)
        #expect(apple.boxes.sorted(byKeyPath: "rank", ascending: false).map(\.name) == ["B", "A"])
        #expect(apple.boxes.sorted(by: \.name).map(\.name) == ["A", "B"])
        #expect(f.a.members.sorted(by: [SortDescriptor(keyPath: "double"), SortDescriptor(keyPath: "name")]).map(\.id) == [3, 1])
        #expect(f.b.members.sorted(byKeyPath: "date", ascending: false).map(\.id) == [4, 2])
        #expect(f.b.members.distinct(by: ["flag"]).count == 2)
        #expect(f.a.members.distinct(by: ["int"]).map(\.id) == [1])
        #expect(f.a.members.distinct(by: [\ColItem.int, \ColItem.flag]).map(\.id) == [1, 3])
    }

    @Test func aggregates() throws {
        let f = try Fixture()
        let apple = f.item(1)
        #expect(apple.boxes.sum(ofProperty: "rank") as Int == 3)
        #expect(apple.boxes.average(ofProperty: "rank") as Double? == 1.5)
        #expect(apple.boxes.max(of: \.rank) == 2)
        #expect(apple.boxes.min(ofProperty: "rank") as Int? == 1)
        #expect(f.a.members.sum(of: \.int) == 6)
        #expect(f.a.members.average(of: \.double) == 1.0)
        #expect(f.a.members.min(of: \.date) == colT0.addingTimeInterval(20))
        #expect(f.a.members.max(ofProperty: "double") as Double? == 1.5)
        #expect(f.a.members.sum(of: \.int32) == Int32(6))
        #expect(f.b.members.sum(ofProperty: "optInt") as Int == 0)
        #expect(f.b.members.average(ofProperty: "optInt") as Double? == nil)
        #expect(f.c.members.sum(of: \.int) == 0)
        #expect(f.c.members.min(of: \.int) == nil)
        #expect(f.c.members.average(of: \.double) == nil)
    }

    @Test func positions() throws {
        let f = try Fixture()
        let apple = f.item(1)
        #expect(apple.boxes.index(of: f.b) == 1)
        #expect(apple.boxes.index(of: f.c) == nil)
        #expect(apple.boxes.index(matching: "rank == 2") == 1)
        #expect(apple.boxes.index(matching: NSPredicate(format: "name == %@", "A")) == 0)
        #expect(apple.boxes.index(matching: "rank > 9") == nil)
        #expect(apple.boxes.objects(at: [1]).map(\.name) == ["B"])
        #expect(f.a.members.objects(at: [0, 1]).map(\.id) == [1, 3])
    }

    @Test func keyValueCoding() throws {
        let f = try Fixture()
        let apple = f.item(1)
        #expect(kvcArray(apple.boxes.value(forKey: "name"), as: String.self) == ["A", "B"])
        #expect(kvcArray(apple.boxes.value(forKeyPath: "rank"), as: Int.self) == [1, 2])
        #expect(apple.boxes.value(forKeyPath: "@count") as? Int == 2)
        #expect(apple.boxes.value(forKeyPath: "@sum.rank") as? Int == 3)
        #expect(apple.boxes.value(forKeyPath: "@avg.rank") as? Double == 1.5)
        #expect(apple.boxes.value(forKeyPath: "@max.rank") as? Int == 2)
        #expect(kvcArray(f.b.members.value(forKeyPath: "@unionOfObjects.name"), as: String.self) == ["banana", "date"])
        try f.realm.write { f.a.members.setValue(true, forKey: "flag") }
        #expect(f.item(3).flag == true)
        try f.realm.write { apple.boxes.setValue(7, forKey: "rank") }
        #expect(f.a.rank == 7 && f.b.rank == 7 && f.c.rank == 3)
    }

    @Test func aHeldLinkingObjectsFollowsLinks() throws {
        let f = try Fixture()
        let banana = f.item(2)
        let owners = banana.boxes
        #expect(owners.map(\.name) == ["B"])
        try f.realm.write { f.a.items.append(banana) }
        #expect(owners.map(\.name) == ["B", "A"])
        try f.realm.write { f.b.items.remove(at: 1) }
        #expect(owners.map(\.name) == ["A"])
        try f.realm.write { f.c.items.append(banana) }
        #expect(owners.count == 2)
        try f.realm.write { f.realm.delete(f.c) }
        #expect(owners.map(\.name) == ["A"])
    }

    @Test func aHeldLinkingObjectsFollowsToOneLinks() throws {
        let f = try Fixture()
        let members = f.a.members
        #expect(members.map(\.id) == [1, 3])
        try f.realm.write { f.item(5).box = f.a }
        #expect(members.map(\.id) == [1, 3, 5])
        try f.realm.write { f.item(1).box = f.b }
        // The last backlink takes the removed one's place, as in RealmSwift.
        #expect(members.map(\.id) == [5, 3])
        try f.realm.write { f.realm.delete(f.item(3)) }
        #expect(members.map(\.id) == [5])
        #expect(f.b.members.count == 3)
    }

    @Test func aHeldResultsOfLinkingObjectsFollowsLinks() throws {
        let f = try Fixture()
        let threes = f.a.members.filter("int == 3")
        #expect(threes.map(\.id) == [1, 3])
        try f.realm.write { f.item(3).int = 0 }
        #expect(threes.map(\.id) == [1])
        try f.realm.write {
            f.item(4).box = f.a
            f.item(4).int = 3
        }
        #expect(threes.map(\.id) == [1, 4])
        #expect(threes.sum(ofProperty: "int") as Int == 6)
    }

    @Test func chaining() throws {
        let f = try Fixture()
        let chained = f.a.members.filter("int == 3").filter("double > 0").sorted(byKeyPath: "name", ascending: false)
        #expect(chained.map(\.id) == [3, 1])
        #expect(chained.filter("flag == true").map(\.id) == [1])
    }

    @Test func theSameObjectsAsAQueryOverTheOriginClass() throws {
        let f = try Fixture()
        for id in 1...5 {
            let item = f.item(id)
            let viaQuery = f.realm.objects(ColBox.self).filter("ANY items == %@", item).map(\.name).sorted()
            #expect(item.boxes.map(\.name).sorted() == viaQuery, "item \(id)")
        }
    }

    // MARK: Enumeration

    @Test func forInEnumeratesTheStartStateWhileTheLoopUnlinks() async {
        await #expect(processExitsWith: .success) {
            let f = try! Fixture()
            var seen: [Int] = []
            try! f.realm.write {
                for item in f.a.members {
                    seen.append(item.id)
                    item.box = nil
                    if seen.count > 10 { break }
                }
            }
            precondition(seen == [1, 3])
            precondition(f.a.members.count == 0)
        }
    }

    @Test func forInEnumeratesTheStartStateWhileTheLoopDeletes() async {
        await #expect(processExitsWith: .success) {
            let f = try! Fixture()
            let apple = f.item(1)
            var seen: [String] = []
            try! f.realm.write {
                for box in apple.boxes {
                    seen.append(box.name)
                    f.realm.delete(box)
                    if seen.count > 10 { break }
                }
            }
            precondition(seen == ["A", "B"])
            precondition(apple.boxes.count == 0)
            precondition(f.realm.objects(ColBox.self).map(\.name) == ["C"])
        }
    }

    @Test func forInEnumeratesTheStartStateWhileTheLoopLinksMore() async {
        await #expect(processExitsWith: .success) {
            let f = try! Fixture()
            var seen = 0
            try! f.realm.write {
                for item in f.b.members {
                    seen += 1
                    f.realm.create(ColItem.self, value: ["id": item.id + 100, "box": f.b])
                    if seen > 10 { break }
                }
            }
            precondition(seen == 2)
            precondition(f.b.members.count == 2 + seen)
        }
    }

    // MARK: Invalidation

    @Test func theOwnersDeletionInvalidatesIt() throws {
        let f = try Fixture()
        let apple = f.item(1)
        let boxes = apple.boxes
        try f.realm.write { f.realm.delete(apple) }
        #expect(boxes.isInvalidated)
        #expect(boxes.count == 0)
        #expect(boxes.count == 0)
    }

    @Test func invalidatingTheRealmInvalidatesIt() throws {
        let f = try Fixture()
        let boxes = f.item(1).boxes
        f.realm.invalidate()
        #expect(boxes.isInvalidated)
        #expect(boxes.count == 0)
    }

    // MARK: Unmanaged

    @Test func emptyWhileTheOwnerIsUnmanaged() {
        let item = ColItem()
        #expect(item.boxes.count == 0)
        #expect(item.boxes.count == 0)
        #expect(item.boxes.realm == nil)
        #expect(!item.boxes.isInvalidated)
        #expect(item.boxes.first == nil)
        #expect(item.boxes.last == nil)
        #expect(item.boxes.index(of: ColBox()) == nil)
        #expect(item.boxes.sum(ofProperty: "rank") as Int == 0)
        #expect(item.boxes.min(ofProperty: "rank") as Int? == nil)
        #expect(item.boxes.average(of: \.rank) == nil)
        #expect(item.boxes.value(forKeyPath: "@count") as? Int == 0)
        #expect(kvcArray(item.boxes.value(forKey: "name"), as: String.self) == [])
        #expect(Array(item.boxes).count == 0)
    }

    @Test func theLegacyInitializerIsEmpty() {
        let links = LinkingObjects(fromType: ColBox.self, property: "items")
        #expect(links.count == 0)
        #expect(links.realm == nil)
        #expect(links.count == 0)
    }

    /// RealmSwift backs an unmanaged LinkingObjects with empty detached results, which filter
    /// and sort to empty results. (In a child process: a trap here must not stop the others.)
    @Test func queryingAnUnmanagedOwnersLinkingObjectsGivesEmptyResults() async {
        await #expect(processExitsWith: .success) {
            let item = ColItem()
            precondition(item.boxes.filter("rank > 0").isEmpty, "filter")
            precondition(item.boxes.sorted(byKeyPath: "rank").isEmpty, "sorted")
            precondition(item.boxes.index(matching: "rank > 0") == nil, "index(matching:)")
        }
    }

    @Test func becomesLiveWhenTheOwnerIsAdded() throws {
        let f = try Fixture()
        let fig = ColItem(value: ["id": 6, "name": "fig"])
        #expect(fig.boxes.count == 0)
        try f.realm.write {
            f.realm.add(fig)
            f.a.items.append(fig)
        }
        #expect(fig.boxes.map(\.name) == ["A"])
        #expect(fig.boxes.realm == f.realm)
    }
}
