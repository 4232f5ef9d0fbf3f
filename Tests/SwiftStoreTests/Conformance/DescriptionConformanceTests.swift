// RealmSwift conformance: `description` of objects and of every collection kind, in
// RealmSwift's format.
//
// Objects print as `Class {\n\tprop = value;\n}`; collections as
// `Name<element type> <address> (\n\t[0] element,\n\t[1] element\n)`, with the element type
// the class name or RealmSwift's name of the value type ("int", "string", ...), at most 100
// elements followed by `\n\t... n objects skipped.`; maps as
// `Map<string, type> <address> (\n[key]: value,\n[key]: value\n)`. Values print as RealmSwift's
// Objective-C values do (Bool as 1/0, numbers as NSNumber, dates as NSDate, nil in a
// collection as `<null>` and in a property as `(null)`). Nesting indents with a tab per level
// and stops after five levels with `<Maximum depth exceeded>`. The address differs per run, so
// the tests compare the text with each address replaced by `<0x>`.
import Foundation
import Testing
import SwiftStore

final class CfDsOwner: Object {
    @Persisted var name = ""
    @Persisted var next: CfDsOwner?
    @Persisted(originProperty: "owner") var items: LinkingObjects<CfDsItem>
}

final class CfDsItem: Object {
    @Persisted var name = ""
    @Persisted var flag = true
    @Persisted var int8: Int8 = 3
    @Persisted var double = 1.0
    @Persisted var float: Float = 0.5
    @Persisted var date = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var data = Data([1, 2, 255])
    @Persisted var optString: String?
    @Persisted var decimal = Decimal128(stringLiteral: "1.5")
    @Persisted var tags: List<String>
    @Persisted var owner: CfDsOwner?
}

final class CfDsUUID: Object {
    @Persisted var id = UUID()
    @Persisted var ids: List<UUID>
}

final class CfDsValues: Object {
    @Persisted var ints: List<Int>
    @Persisted var optInts: List<Int?>
    @Persisted var doubles: List<Double>
    @Persisted var floats: List<Float>
    @Persisted var bools: List<Bool>
    @Persisted var dates: List<Date>
    @Persisted var datas: List<Data>
    @Persisted var mixed: List<AnyRealmValue>
    @Persisted var owners: List<CfDsOwner>
    @Persisted var intSet: MutableSet<Int>
    @Persisted var intMap: Map<String, Int?>
    @Persisted var ownerMap: Map<String, CfDsOwner?>
}

@Suite("Conformance: descriptions")
struct DescriptionConformanceTests {
    /// The text with every `<0x…>` address replaced by `<0x>`.
    private func plain(_ text: String) -> String {
        text.replacingOccurrences(of: "<0x[0-9a-f]+>", with: "<0x>", options: .regularExpression)
    }

    private let itemText = """
        CfDsItem {
        \tname = a;
        \tflag = 1;
        \tint8 = 3;
        \tdouble = 1;
        \tfloat = 0.5;
        \tdate = 2001-01-01 00:00:00 +0000;
        \tdata = <length = 3, bytes = 0x0102ff — 3 total bytes>;
        \toptString = (null);
        \tdecimal = 1.5;
        \ttags = List<string> <0x> (
        \t\t[0] x,
        \t\t[1] y
        \t);
        \towner = CfDsOwner {
        \t\tname = o;
        \t\tnext = (null);
        \t};
        }
        """

    private func item() -> CfDsItem {
        let item = CfDsItem(value: ["name": "a"])
        item.tags.append(objectsIn: ["x", "y"])
        item.owner = CfDsOwner(value: ["name": "o"])
        return item
    }

    /// Objects, unmanaged and managed, with every kind of property.
    @Test func objects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfDsOwner.self, CfDsItem.self, CfDsValues.self]))
        let item = item()
        #expect(plain(item.description) == itemText)
        try realm.write { realm.add(item) }
        #expect(plain(item.description) == itemText)
        // Data properties show at most 24 bytes.
        try realm.write { item.data = Data(0..<30) }
        #expect(item.description.contains(
            "\tdata = <length = 24, bytes = 0x000102030405060708090a0b0c0d0e0f1011121314151617 — 30 total bytes>;\n"))
    }

    /// Lists, sets and maps of values, unmanaged and managed.
    @Test func collectionsOfValues() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfDsOwner.self, CfDsItem.self, CfDsValues.self]))
        let v = CfDsValues()
        v.ints.append(objectsIn: [1, 2])
        v.optInts.append(objectsIn: [nil, 3])
        v.doubles.append(objectsIn: [1.0, 0.1, 2.5])
        v.floats.append(objectsIn: [0.1, 3])
        v.bools.append(objectsIn: [true, false])
        v.dates.append(Date(timeIntervalSinceReferenceDate: 86_400.5))
        v.datas.append(objectsIn: [Data([0xab, 1]), Data(0..<30)])
        v.mixed.append(objectsIn: [.int(1), .string("s"), .none, .bool(false)])
        v.intSet.insert(7)
        v.intMap["k"] = 4
        let expected: [(String, () -> String)] = [
            ("List<int> <0x> (\n\t[0] 1,\n\t[1] 2\n)", { v.ints.description }),
            ("List<int> <0x> (\n\t[0] <null>,\n\t[1] 3\n)", { v.optInts.description }),
            ("List<double> <0x> (\n\t[0] 1,\n\t[1] 0.1,\n\t[2] 2.5\n)", { v.doubles.description }),
            ("List<float> <0x> (\n\t[0] 0.1,\n\t[1] 3\n)", { v.floats.description }),
            ("List<bool> <0x> (\n\t[0] 1,\n\t[1] 0\n)", { v.bools.description }),
            ("List<date> <0x> (\n\t[0] 2001-01-02 00:00:00 +0000\n)", { v.dates.description }),
            ("List<mixed> <0x> (\n\t[0] 1,\n\t[1] s,\n\t[2] <null>,\n\t[3] 0\n)", { v.mixed.description }),
            ("MutableSet<int> <0x> (\n\t[0] 7\n)", { v.intSet.description }),
            ("Map<string, int> <0x> (\n[k]: 4\n)", { v.intMap.description }),
            ("List<int> <0x> (\n\n)", { List<Int>().description }),
        ]
        for (text, describe) in expected {
            #expect(plain(describe()) == text)
        }
        let datas = "List<data> <0x> (\n\t[0] {length = 2, bytes = 0xab01},\n"
                + "\t[1] {length = 30, bytes = 0x00010203 04050607 08090a0b 0c0d0e0f ... 16171819 1a1b1c1d }\n)"
        #expect(plain(v.datas.description) == datas)
        try realm.write { realm.add(v) }
        for (text, describe) in expected {
            #expect(plain(describe()) == text)
        }
        #expect(plain(v.datas.description) == datas)
        // AnyRealmCollection prints what it wraps.
        #expect(AnyRealmCollection(v.ints).description == v.ints.description)
    }

    /// Collections of objects (nested objects indented), Results, LinkingObjects, and maps
    /// of objects.
    @Test func collectionsOfObjects() throws {
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfDsOwner.self, CfDsItem.self, CfDsValues.self]))
        let v = CfDsValues()
        v.owners.append(CfDsOwner(value: ["name": "p"]))
        v.ownerMap["m"] = CfDsOwner(value: ["name": "q"])
        v.ownerMap["n"] = nil as CfDsOwner?
        v.ints.append(objectsIn: [2, 1])
        let owners = "List<CfDsOwner> <0x> (\n\t[0] CfDsOwner {\n\t\tname = p;\n\t\tnext = (null);\n\t}\n)"
        #expect(plain(v.owners.description) == owners)
        #expect(plain(CfDsOwner().items.description) == "LinkingObjects<CfDsItem> <0x> (\n\n)")
        try realm.write { realm.add(v) }
        #expect(plain(v.owners.description) == owners)
        #expect(plain(v.ownerMap.description)
                == "Map<string, CfDsOwner> <0x> (\n[m]: CfDsOwner {\n\t\tname = q;\n\t\tnext = (null);\n\t},\n[n]: <null>\n)")
        let results = realm.objects(CfDsOwner.self).filter("name == 'p'")
        #expect(plain(results.description)
                == "Results<CfDsOwner> <0x> (\n\t[0] CfDsOwner {\n\t\tname = p;\n\t\tnext = (null);\n\t}\n)")
        let item = CfDsItem(value: ["name": "i"])
        try realm.write {
            realm.add(item)
            item.owner = v.owners[0]
        }
        #expect(plain(v.owners[0].items.description).hasPrefix(
            "LinkingObjects<CfDsItem> <0x> (\n\t[0] CfDsItem {\n\t\tname = i;\n\t\tflag = 1;\n"))
        #expect(plain(AnyRealmCollection(results).description) == plain(results.description))
        // Results of values name the value type.
        #expect(plain(v.ints.sorted(ascending: true).description) == "Results<int> <0x> (\n\t[0] 1,\n\t[1] 2\n)")
    }

    /// At most 100 elements, then the number skipped.
    @Test func truncation() throws {
        let list = List<Int>()
        list.append(objectsIn: 0..<105)
        let text = list.description
        #expect(text.hasSuffix("\n\t[98] 98,\n\t[99] 99\n\t... 5 objects skipped.\n)"))
        #expect(!text.contains("[100]"))
        let exactly = List<Int>()
        exactly.append(objectsIn: 0..<100)
        #expect(exactly.description.hasSuffix("\n\t[99] 99\n)"))
    }

    /// Five levels of nesting are described; the sixth is `<Maximum depth exceeded>`.
    /// RealmSwift prints a UUID property with NSUUID's `description`. Foundation on Linux gives
    /// the upper-case `uuidString` (Apple's NSUUID adds its class name and address), so that is
    /// what an object's description shows, managed or not, and in a collection too.
    @Test func uuidsPrintAsFoundationOnLinuxPrintsNSUUID() throws {
        let text = "5f3a7c1e-0b2d-4e6f-8a9b-0c1d2e3f4a5b"
        let u = UUID(uuidString: text)!
        #expect(NSUUID(uuidString: text)!.description == text.uppercased())
        let o = CfDsUUID()
        o.id = u
        o.ids.append(u)
        let expected = "CfDsUUID {\n\tid = \(text.uppercased());\n\tids = List<uuid> <0x> (\n\t\t[0] \(text.uppercased())\n\t);\n}"
        #expect(plain(o.description) == expected)
        let dir = TempDir()
        let realm = try Realm(configuration: dir.config([CfDsUUID.self]))
        try realm.write { realm.add(o) }
        #expect(o.realm != nil)
        #expect(plain(o.description) == expected)
    }

    @Test func depth() {
        let a = CfDsOwner(value: ["name": "a"])
        a.next = a
        let text = a.description
        #expect(text.components(separatedBy: "name = a;").count - 1 == 5)
        #expect(text.contains("\t\t\t\t\tnext = <Maximum depth exceeded>;\n"))
        let v = CfDsValues()
        v.owners.append(a)
        // The list is level one, its object level two: four objects, then the mark.
        #expect(v.owners.description.components(separatedBy: "name = a;").count - 1 == 4)
    }
}
