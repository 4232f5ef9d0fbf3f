// RealmSwift conformance: unmanaged List, MutableSet and Map. What RealmSwift's unmanaged
// collections do (aggregates, key-value coding) works on them; what they
// refuse (filter, sorted, distinct: queries need a Realm) fails with RealmSwift's message,
// which names the Objective-C class behind each kind. index(matching:) on unmanaged elements
// is UnmanagedIndexMatchingConformanceTests'.
import Foundation
import Testing
import SwiftStore

final class CfLoose: Object {
    @Persisted var name = ""
    @Persisted var age = 0
}

@Suite("Conformance: unmanaged collections")
struct UnmanagedCollectionConformanceTests {
    @Test func unmanagedCollectionsAggregateSearchAndAnswerKeyValueCoding() {
        let list = List<Int>()
        list.append(objectsIn: [3, 1, 2])
        #expect(list.min() == 1 && list.max() == 3 && list.sum() == 6 && list.average() == 2.0)
        let people = List<CfLoose>()
        people.append(objectsIn: [CfLoose(value: ["name": "a", "age": 5]), CfLoose(value: ["name": "b", "age": 7])])
        #expect(people.sum(ofProperty: "age") as Int == 12)
        #expect(people.value(forKey: "name") as? [String] == ["a", "b"])
        let set = MutableSet<Double>()
        set.insert(objectsIn: [1.5, 2.5])
        #expect(set.max() == 2.5 && set.average() == 2.0)
        let map = Map<String, Int>()
        map["x"] = 4
        map["y"] = 6
        #expect(map.min() == 4 && map.sum() == 10)
    }

    @Test func filteringAnUnmanagedListFailsWithRealmSwiftsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List<CfLoose>()
            _ = list.filter("age > 1")
        }
        expectMessage(result, "This method may only be called on RLMArray instances retrieved from an RLMRealm")
    }

    @Test func sortingAnUnmanagedSetFailsWithRealmSwiftsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let set = MutableSet<Int>()
            _ = set.sorted(ascending: false)
        }
        expectMessage(result, "This method may only be called on RLMSet instances retrieved from an RLMRealm")
    }

    @Test func filteringAnUnmanagedMapFailsWithRealmSwiftsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let map = Map<String, CfLoose?>()
            _ = map.filter("age > 1")
        }
        expectMessage(result, "This method may only be called on RLMDictionary instances retrieved from an RLMRealm")
    }
}
