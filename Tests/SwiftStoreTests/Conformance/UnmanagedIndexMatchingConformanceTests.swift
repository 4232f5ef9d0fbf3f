// RealmSwift conformance: index(matching:) on unmanaged collections. RealmSwift's unmanaged List
// evaluates the predicate on each element in memory (an empty one answers nil without looking at
// the predicate); MutableSet refuses index(matching:) whether managed or not; an unmanaged
// LinkingObjects is empty. SwiftStore evaluates with the core's own query language, so the
// oracle here is the managed path: every predicate must pick the same elements before and after
// the objects are added to a Realm.
import Foundation
import Testing
import SwiftStore

enum CfPredKind: String, PersistableEnum { case red, green, blue }

final class CfPredTarget: Object {
    @Persisted var name = ""
    @Persisted var score = 0
    @Persisted var weight: Double?
}

final class CfPredItem: Object {
    @Persisted var i = 0
    @Persisted var i8: Int8 = 0
    @Persisted var optInt: Int?
    @Persisted var b = false
    @Persisted var optB: Bool?
    @Persisted var f: Float = 0
    @Persisted var d = 0.0
    @Persisted var optD: Double?
    @Persisted var s = ""
    @Persisted var optS: String?
    @Persisted var data = Data()
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var optDate: Date?
    @Persisted var oid = ObjectId("000000000000000000000000")
    @Persisted var dec = Decimal128(0)
    @Persisted var uuid = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
    @Persisted var any: AnyRealmValue = .none
    @Persisted var kind = CfPredKind.red
    @Persisted var link: CfPredTarget?
    @Persisted var links: List<CfPredTarget>
    @Persisted var ints: List<Int>
    @Persisted var optStrings: List<String?>
    @Persisted var tags: MutableSet<String>
    @Persisted var counts: Map<String, Int>
    @Persisted var targets: Map<String, CfPredTarget?>
}

final class CfPredOther: Object {
    @Persisted var name = ""
}

final class CfPredHolder: Object {
    @Persisted var items: List<CfPredItem>
}

/// The predicates the oracle runs, with their arguments.
private let oidA = ObjectId("5f1a00000000000000000001")
private let oidB = ObjectId("5f1a00000000000000000002")
private let uuidA = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
private let dateA = Date(timeIntervalSince1970: 1_000_000)
private let dateB = Date(timeIntervalSince1970: 2_000_000)

nonisolated(unsafe) private let predicates: [(String, [Any])] = [
    ("TRUEPREDICATE", []), ("FALSEPREDICATE", []),
    ("i > 5", []), ("i == %@", [3]), ("i != 4", []), ("i BETWEEN {2, 8}", []), ("i IN {1, 3, 5}", []),
    ("i IN %@", [[1, 2, 9]]), ("i8 >= 2", []), ("i8 < %@", [Int8(3)]),
    ("optInt == nil", []), ("optInt != nil AND optInt < 3", []), ("optInt > i", []),
    ("b == true", []), ("b == false OR i < 2", []), ("NOT (b == true)", []), ("optB == nil", []), ("optB != true", []),
    ("f > 1.5", []), ("f <= %@", [Float(2.5)]), ("d <= %@", [2.5]), ("d > f", []), ("optD == nil", []),
    ("optD >= 1", []), ("d == 1.5", []),
    ("s == 'ab'", []), ("s ==[c] 'AB'", []), ("s != 'ab'", []), ("s BEGINSWITH 'a'", []),
    ("s BEGINSWITH[c] 'A'", []), ("s ENDSWITH 'z'", []), ("s CONTAINS 'b'", []), ("s CONTAINS[d] 'e'", []),
    ("s CONTAINS[cd] 'E'", []), ("s LIKE 'a*'", []), ("s LIKE[c] '?B*'", []), ("s > 'b'", []),
    ("s IN {'ab', 'z'}", []), ("s ==[c] %@", ["ÉB"]), ("s ==[cd] 'eb'", []),
    ("optS == nil", []), ("optS CONTAINS 'a'", []), ("optS == s", []), ("optS BEGINSWITH[c] 'Z'", []),
    ("data == %@", [Data([1, 2])]), ("data BEGINSWITH %@", [Data([1])]), 
    ("date > %@", [dateA]), ("date BETWEEN {%@, %@}", [dateA, dateB]), ("optDate == nil", []),
    ("optDate < %@", [dateB]),
    ("oid == %@", [oidA]), ("oid != %@", [oidB]), ("dec > 2.5", []), ("dec == %@", [Decimal128(3)]),
    ("dec BETWEEN {1, 4}", []), ("uuid == %@", [uuidA]), ("uuid != nil", []),
    ("any == 3", []), ("any == 'ab'", []), ("any == nil", []), ("any > 1.5", []), ("any.@type == 'string'", []),
    ("any.@type == 'int'", []), ("any ==[c] 'AB'", []),
    ("kind == 'green'", []), ("kind IN {'red', 'blue'}", []), ("kind == %@", [CfPredKind.blue.rawValue]),
    ("link == nil", []), ("link != nil", []), ("link.name == 'n1'", []), ("link.score > 2", []),
    ("link.weight == nil", []), ("link.name BEGINSWITH[c] 'N'", []),
    ("ANY links.score > 3", []), ("links.score > 3", []), ("ALL links.score > 1", []),
    ("NONE links.name == 'n2'", []), ("links.@count > 1", []), ("links.@size == 0", []),
    ("links.@sum.score > 4", []), ("links.@max.score == 5", []), ("links.@min.score < 2", []),
    ("links.@avg.score >= 2", []), ("links.@avg.weight > 1", []), ("ANY links.weight == nil", []),
    ("ints.@count == 0", []), ("ANY ints > 4", []), ("ALL ints < 5", []), ("NONE ints == 2", []),
    ("ints.@sum > 5", []), ("ints.@min < 1", []), ("ints.@max >= 6", []), ("ints.@avg > 2", []),
    ("%@ IN ints", [3]), ("ANY ints IN {1, 7}", []), ("ANY ints BETWEEN {2, 3}", []),
    ("ANY optStrings == nil", []), ("ANY optStrings BEGINSWITH 'a'", []), ("optStrings.@count >= 2", []),
    ("ANY tags == 'x'", []), ("tags.@count > 1", []), ("ANY tags CONTAINS[c] 'Y'", []), ("'y' IN tags", []),
    ("counts['a'] > 1", []), ("counts['zz'] == nil", []), ("counts.@count == 2", []),
    ("ANY counts.@allKeys == 'b'", []), ("ANY counts.@allValues > 3", []), ("counts.@sum > 4", []),
    ("counts.@max < 3", []), ("ANY counts > 5", []),
    ("targets['k'].score > 1", []), ("targets['k'] == nil", []), ("ANY targets.@allValues.score == 3", []),
    ("targets.@count > 0", []),
    ("SUBQUERY(links, $l, $l.score > 2 AND $l.name BEGINSWITH 'n').@count > 0", []),
    ("SUBQUERY(links, $l, $l.weight == nil).@count == 1", []),
    ("%K > %@", ["i", 3]), ("%K BEGINSWITH %@", ["s", "a"]),
    ("i > 3 && (s == 'ab' || d < 1)", []), ("!(i > 3) AND link.score IN {1, 2}", []),
    ("link.score == i", []), ("ANY links.score == i", []),
]

/// Random objects: small value ranges, so each predicate matches some and misses some.
private func makeItems(_ n: Int, seed: String) -> [CfPredItem] {
    var rng = SeededRNG(seed: stableSeed(seed))
    let words = ["ab", "AB", "éb", "Eb", "b", "z", "abz", "", "Zed", "aéz"]
    func word() -> String { words.randomElement(using: &rng)! }
    func maybe() -> Bool { Bool.random(using: &rng) }
    func target() -> CfPredTarget {
        CfPredTarget(value: ["name": ["n1", "n2", "N3", "x"].randomElement(using: &rng)!,
                             "score": Int.random(in: 0...5, using: &rng),
                             "weight": (maybe() ? nil : Double(Int.random(in: 0...4, using: &rng)) / 2) as Any])
    }
    let shared = (0..<4).map { _ in target() }
    return (0..<n).map { _ in
        let o = CfPredItem()
        o.i = Int.random(in: 0...9, using: &rng)
        o.i8 = Int8.random(in: 0...4, using: &rng)
        o.optInt = maybe() ? nil : Int.random(in: 0...6, using: &rng)
        o.b = maybe()
        o.optB = [nil, true, false].randomElement(using: &rng)!
        o.f = Float(Int.random(in: 0...6, using: &rng)) / 2
        o.d = Double(Int.random(in: 0...6, using: &rng)) / 2
        o.optD = maybe() ? nil : Double(Int.random(in: 0...4, using: &rng))
        o.s = word()
        o.optS = maybe() ? nil : word()
        o.data = [Data(), Data([1]), Data([1, 2]), Data([2, 1, 3])].randomElement(using: &rng)!
        o.date = [dateA, dateB, Date(timeIntervalSince1970: 1_500_000), Date(timeIntervalSince1970: 0)].randomElement(using: &rng)!
        o.optDate = maybe() ? nil : [dateA, dateB].randomElement(using: &rng)!
        o.oid = maybe() ? oidA : oidB
        o.dec = Decimal128(floatLiteral: Double(Int.random(in: 0...10, using: &rng)) / 2)
        o.uuid = maybe() ? uuidA : UUID(uuidString: "99999999-2222-3333-4444-555555555555")!
        o.any = [.none, .int(3), .int(1), .string("ab"), .string("Ab"), .double(2.5), .bool(true),
                 .decimal128(Decimal128(3))].randomElement(using: &rng)!
        o.kind = CfPredKind.allCases.randomElement(using: &rng)!
        o.link = maybe() ? nil : (maybe() ? shared.randomElement(using: &rng)! : target())
        for _ in 0..<Int.random(in: 0...3, using: &rng) { o.links.append(maybe() ? shared.randomElement(using: &rng)! : target()) }
        for _ in 0..<Int.random(in: 0...3, using: &rng) { o.ints.append(Int.random(in: 0...7, using: &rng)) }
        for _ in 0..<Int.random(in: 0...3, using: &rng) { o.optStrings.append(maybe() ? nil : word()) }
        for _ in 0..<Int.random(in: 0...3, using: &rng) { o.tags.insert(["x", "y", "Y", "zz"].randomElement(using: &rng)!) }
        for k in ["a", "b", "c"] where maybe() { o.counts[k] = Int.random(in: 0...6, using: &rng) }
        if maybe() { o.targets["k"] = maybe() ? target() : nil }
        if maybe() { o.targets["j"] = shared.randomElement(using: &rng)! }
        return o
    }
}

final class CfPredValues: Object {
    @Persisted var ints: List<Int>
    @Persisted var optInts: List<Int?>
    @Persisted var strings: List<String>
    @Persisted var optStrings: List<String?>
    @Persisted var doubles: List<Double>
    @Persisted var dates: List<Date>
    @Persisted var decimals: List<Decimal128>
    @Persisted var anys: List<AnyRealmValue>

    /// index(matching:) on the list named `name`.
    func index(_ name: String, _ p: SwiftStore.NSPredicate) -> Int? {
        switch name {
        case "ints": return ints.index(matching: p)
        case "optInts": return optInts.index(matching: p)
        case "strings": return strings.index(matching: p)
        case "optStrings": return optStrings.index(matching: p)
        case "doubles": return doubles.index(matching: p)
        case "dates": return dates.index(matching: p)
        case "decimals": return decimals.index(matching: p)
        default: return anys.index(matching: p)
        }
    }
}

nonisolated(unsafe) private let valuePredicates: [(String, String, [Any])] = [
    ("ints", "self > 3", []), ("ints", "self BETWEEN {2, 5}", []), ("ints", "self IN {1, 4}", []),
    ("ints", "self == %@", [3]), ("ints", "NOT (self == 2)", []), ("ints", "self < %@", [2.5]),
    ("optInts", "self == nil", []), ("optInts", "self != nil AND self < 3", []), ("optInts", "self >= 2", []),
    ("strings", "self BEGINSWITH[c] 'a'", []), ("strings", "self LIKE '*b'", []), ("strings", "self ==[cd] 'eb'", []),
    ("strings", "self > 'b'", []), ("strings", "self CONTAINS 'z'", []), ("strings", "self IN {'ab', 'Zed'}", []),
    ("optStrings", "self == nil", []), ("optStrings", "self ENDSWITH 'b'", []), ("optStrings", "self !=[c] 'AB'", []),
    ("doubles", "self > 1.5", []), ("doubles", "self == 2", []), ("doubles", "self BETWEEN {0.5, 1.5}", []),
    ("dates", "self > %@", [dateA]), ("dates", "self == %@", [dateB]),
    ("decimals", "self > 2.5", []), ("decimals", "self == %@", [Decimal128(3)]),
    ("anys", "self == 3", []), ("anys", "self == 'ab'", []), ("anys", "self ==[c] 'AB'", []), ("anys", "self == nil", []),
    ("anys", "self > 1.5", []), ("anys", "self.@type == 'string'", []),
]

@Suite("Conformance: index(matching:) on unmanaged collections")
struct UnmanagedIndexMatchingConformanceTests {
    /// For each predicate: which elements match (each alone in a list) and the first match in
    /// the whole list, unmanaged and then managed. The two must agree on every predicate.
    @Test func unmanagedListsMatchExactlyAsManagedOnes() throws {
        let items = makeItems(60, seed: "unmanaged-index-matching")
        let all = CfPredHolder()
        all.items.append(objectsIn: items)
        let singles = items.map { item -> CfPredHolder in
            let h = CfPredHolder()
            h.items.append(item)
            return h
        }
        func answers() -> [String: [Int?]] {
            var out: [String: [Int?]] = [:]
            for (text, args) in predicates {
                let predicate = NSPredicate(format: text, argumentArray: args)
                var row = singles.map { $0.items.index(matching: predicate) }
                row.append(all.items.index(matching: predicate))
                out[text] = row
            }
            return out
        }
        let unmanaged = answers()
        let typed: [Int?] = typedAnswers(all.items)

        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfPredHolder.self, CfPredItem.self, CfPredTarget.self]))
        try realm.write {
            realm.add(all)
            realm.add(singles)
        }
        #expect(all.items.realm != nil)
        let managed = answers()
        for (text, _) in predicates {
            let u = unmanaged[text]!, m = managed[text]!
            #expect(u == m, "\(text): unmanaged \(u.map { $0.map(String.init) ?? "-" }) managed \(m.map { $0.map(String.init) ?? "-" })")
        }
        // The oracle is only worth something if the predicates tell elements apart.
        let discriminating = managed.values.filter { row in Set(row.dropLast().map { $0 != nil }).count == 2 }.count
        #expect(discriminating > predicates.count * 3 / 4)
        #expect(typed == typedAnswers(all.items))
    }

    /// The Query<T> closure form on the same data.
    private func typedAnswers(_ list: List<CfPredItem>) -> [Int?] {
        [
            list.index(matching: { $0.i > 5 }),
            list.index(matching: { $0.s.contains("B", options: [.caseInsensitive]) }),
            list.index(matching: { $0.s.starts(with: "e", options: [.caseInsensitive, .diacriticInsensitive]) }),
            list.index(matching: { $0.links.score.avg > 2 }),
            list.index(matching: { $0.link.name == "n1" && $0.optInt != nil }),
            list.index(matching: { $0.ints.contains(3) }),
            list.index(matching: { $0.counts["a"] > 2 }),
            list.index(matching: { $0.kind == .green }),
            list.index(matching: { $0.dec.contains(2...3) }),
            list.index(matching: { ($0.links.score > 2).count > 1 }),
        ]
    }

    /// Lists of values: `self` names the element, as on a managed list.
    @Test func unmanagedListsOfValuesMatchExactlyAsManagedOnes() throws {
        var rng = SeededRNG(seed: stableSeed("unmanaged-index-matching-values"))
        let words = ["ab", "AB", "éb", "Eb", "b", "z", "abz", "", "Zed"]
        func fill(_ h: CfPredValues, _ n: Int) {
            for _ in 0..<n {
                h.ints.append(Int.random(in: 0...6, using: &rng))
                h.optInts.append(Bool.random(using: &rng) ? nil : Int.random(in: 0...4, using: &rng))
                h.strings.append(words.randomElement(using: &rng)!)
                h.optStrings.append(Bool.random(using: &rng) ? nil : words.randomElement(using: &rng)!)
                h.doubles.append(Double(Int.random(in: 0...6, using: &rng)) / 2)
                h.dates.append([dateA, dateB, Date(timeIntervalSince1970: 0)].randomElement(using: &rng)!)
                h.decimals.append(Decimal128(floatLiteral: Double(Int.random(in: 0...8, using: &rng)) / 2))
                h.anys.append([.none, .int(3), .int(1), .string("ab"), .string("Ab"), .double(2.5),
                               .bool(true)].randomElement(using: &rng)!)
            }
        }
        let singles = (0..<40).map { _ -> CfPredValues in
            let h = CfPredValues()
            fill(h, 1)
            return h
        }
        let all = CfPredValues()
        fill(all, 30)
        func answers() -> [[Int?]] {
            valuePredicates.map { (list, text, args) in
                let p = NSPredicate(format: text, argumentArray: args)
                return singles.map { $0.index(list, p) } + [all.index(list, p)]
            }
        }
        let unmanaged = answers()
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfPredValues.self]))
        try realm.write {
            realm.add(singles)
            realm.add(all)
        }
        let managed = answers()
        for (i, (list, text, _)) in valuePredicates.enumerated() {
            #expect(unmanaged[i] == managed[i], "\(list): \(text)")
        }
        let discriminating = managed.filter { row in Set(row.dropLast().map { $0 != nil }).count == 2 }.count
        #expect(discriminating > valuePredicates.count * 3 / 4)
    }

    @Test func anyRealmCollectionOverAnUnmanagedListEvaluates() {
        let list = List<CfPredTarget>()
        list.append(objectsIn: [CfPredTarget(value: ["name": "a", "score": 1]), CfPredTarget(value: ["name": "b", "score": 7])])
        let any = AnyRealmCollection(list)
        #expect(any.index(matching: "score > 5") == 1)
        #expect(any.index(matching: NSPredicate(format: "name == %@", argumentArray: ["a"])) == 0)
        #expect(any.index(matching: { $0.name == "c" }) == nil)
    }

    @Test func anUnmanagedObjectArgumentMatchesByIdentity() {
        let t1 = CfPredTarget(value: ["name": "a"]), t2 = CfPredTarget(value: ["name": "a"])
        let list = List<CfPredItem>()
        list.append(objectsIn: [CfPredItem(value: ["link": t1]), CfPredItem(value: ["link": t2, "links": [t1]])])
        #expect(list.index(matching: "link == %@", t2) == 1)
        #expect(list.index(matching: "%@ IN links", t1) == 1)
        #expect(list.index(matching: "link != %@", t1) == 1)
    }

    /// An AnyRealmValue may hold an object of a class the element class does not reach.
    @Test func anAnyRealmValueHoldingAnUnrelatedObjectMatchesAsWhenManaged() throws {
        let items = [CfPredItem(value: ["any": AnyRealmValue.object(CfPredOther(value: ["name": "o"]))]),
                     CfPredItem(value: ["any": AnyRealmValue.int(1)])]
        let holders = items.map { item -> CfPredHolder in
            let h = CfPredHolder()
            h.items.append(item)
            return h
        }
        let texts = ["any == nil", "any != nil", "any.@type == 'object'", "any == 1", "any.@type == 'int'"]
        func answers() -> [[Int?]] { texts.map { t in holders.map { $0.items.index(matching: t) } } }
        let unmanaged = answers()
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfPredHolder.self, CfPredItem.self, CfPredTarget.self,
                                                        CfPredOther.self]))
        try realm.write { realm.add(holders) }
        #expect(unmanaged == answers())
        #expect(unmanaged[2] == [0, nil])
    }

    @Test func anEmptyUnmanagedListAnswersNilWithoutReadingThePredicate() {
        // RealmSwift's unmanaged RLMArray returns NSNotFound before looking at the predicate.
        let list = List<CfPredTarget>()
        #expect(list.index(matching: "nosuch > 1") == nil)
        #expect(list.index(matching: "score > 1") == nil)
    }

    @Test func unmanagedLinkingObjectsAreEmpty() {
        let target = CfPredTarget()
        let owners = LinkingObjects(fromType: CfPredItem.self, property: "link")
        _ = target
        #expect(owners.index(matching: "i > 1") == nil)
    }

    @Test func anInvalidPredicateOnAnUnmanagedListTrapsAsOnAManagedOne() async {
        let unmanaged = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List<CfPredTarget>()
            list.append(CfPredTarget())
            _ = list.index(matching: "nosuch > 1")
        }
        let managed = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([CfPredHolder.self, CfPredItem.self, CfPredTarget.self]))
            let h = CfPredItem()
            h.links.append(CfPredTarget())
            try! realm.write { realm.add(h) }
            _ = h.links.index(matching: "nosuch > 1")
        }
        expectMessage(unmanaged, "nosuch")
        #expect(Self.trapLine(unmanaged) == Self.trapLine(managed))
        #expect(!Self.trapLine(managed).isEmpty)
    }

    @Test func anIllTypedPredicateOnAnUnmanagedListTrapsAsOnAManagedOne() async {
        let unmanaged = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let list = List<CfPredTarget>()
            list.append(CfPredTarget())
            _ = list.index(matching: "name > %@", 5)
        }
        let managed = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dir = TempDir()
            let realm = try! Realm(configuration: dir.config([CfPredHolder.self, CfPredItem.self, CfPredTarget.self]))
            let h = CfPredItem()
            h.links.append(CfPredTarget())
            try! realm.write { realm.add(h) }
            _ = h.links.index(matching: "name > %@", 5)
        }
        #expect(Self.trapLine(unmanaged) == Self.trapLine(managed))
        #expect(!Self.trapLine(managed).isEmpty)
    }

    @Test func theTypedFormOnAMutableSetTrapsWithRealmSwiftsMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let set = MutableSet<CfPredTarget>()
            set.insert(CfPredTarget())
            _ = set.index(matching: { $0.score > 1 })
        }
        expectMessage(result, "index(matching:) is not available on MutableSet")
    }

    /// The message of a trap: the stderr line holding "Fatal error", from the message on.
    static func trapLine(_ result: ExitTest.Result?) -> String {
        let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.contains("Fatal error") }),
              let r = line.range(of: "Fatal error") else { return "" }
        return String(line[r.lowerBound...])
    }
}
