import Foundation
import Testing
import CStore
import CStoreCall
@testable import SwiftStore

// The type-safe query DSL generates the predicate text and arguments RealmSwift 10.54 does
// (RealmSwift/Query.swift); each test states the exact pair.

// This file imports Foundation and SwiftStore, which both declare NSPredicate and
// NSCompoundPredicate: in a type position the bare name is ambiguous, and in an expression
// either may be picked. A file-level typealias makes the names SwiftStore's.
private typealias NSPredicate = SwiftStore.NSPredicate
private typealias NSCompoundPredicate = SwiftStore.NSCompoundPredicate

// MARK: - Models

enum QDslKind: Int, PersistableEnum { case a = 1, b = 2, c = 3 }
enum QDslMood: String, PersistableEnum { case calm, happy }

struct QDslCelsius: CustomPersistable, Hashable {
    var degrees: Double
    init(degrees: Double) { self.degrees = degrees }
    init(persistedValue: Double) { degrees = persistedValue }
    var persistableValue: Double { degrees }
}

final class QDslToy: Object {
    @Persisted var name = ""
    @Persisted var price = 0.0
    /// A property named like an aggregate: member lookup still reaches it.
    @Persisted var max = 0
}

final class QDslDog: Object {
    @Persisted var name = ""
    @Persisted var age = 0
    @Persisted var isGood = false
    @Persisted var kind: QDslKind?
    @Persisted var owner: QDslOwner?
    @Persisted var toys: List<QDslToy>
    @Persisted(originProperty: "dogs") var owners: LinkingObjects<QDslOwner>
}

final class QDslOwner: Object {
    @Persisted var name = ""
    @Persisted var optName: String?
    @Persisted var age = 0
    @Persisted var optAge: Int?
    @Persisted var isActive = false
    @Persisted var score = 0.0
    @Persisted var date = Date(timeIntervalSince1970: 0)
    @Persisted var decimal = Decimal128(value: 0)
    @Persisted var data = Data()
    @Persisted var oid = ObjectId()
    @Persisted var mixed: AnyRealmValue
    @Persisted var kind = QDslKind.a
    @Persisted var optKind: QDslKind?
    @Persisted var mood = QDslMood.calm
    @Persisted var temperature = QDslCelsius(degrees: 0)
    @Persisted var optTemperature: QDslCelsius?
    @Persisted var best: QDslDog?
    @Persisted var partner: QDslOwner?
    @Persisted var dogs: List<QDslDog>
    @Persisted var dogSet: MutableSet<QDslDog>
    @Persisted var tags: List<String>
    @Persisted var scores: MutableSet<Int>
    @Persisted var optScores: List<Int?>
    @Persisted var kinds: List<QDslKind>
    @Persisted var temperatures: List<QDslCelsius>
    @Persisted var prices: Map<String, Double>
    @Persisted var optPrices: Map<String, Int?>
    @Persisted var labels: Map<String, String>
    @Persisted var flags: Map<String, Bool>
    @Persisted var dogMap: Map<String, QDslDog?>
}

// MARK: - Helpers

/// Whether two arguments are the same: objects by identity, arrays element by element,
/// anything else by type and description.
private func sameArgument(_ a: Any, _ b: Any) -> Bool {
    if let a = a as? ObjectBase, let b = b as? ObjectBase { return a === b }
    if let a = a as? [Any], let b = b as? [Any] {
        return a.count == b.count && zip(a, b).allSatisfy { sameArgument($0, $1) }
    }
    return "\(type(of: a))" == "\(type(of: b))" && String(describing: a) == String(describing: b)
}

/// Expects the core's query parser to accept `text` with `nargs` arguments (a syntax check
/// without a schema). Map and AnyRealmValue subscripts (`[%@]`, `[%K]`) are skipped: the check
/// runs without argument values, and the parser needs a string value to accept a key argument.
private func expectParses(_ text: String, nargs: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    guard !text.contains("[%") else { return }
    let rc = text.withCString { cs_query_check($0, strlen($0), nargs) }
    #expect(rc == 0, "the core's parser refused \(text): \(CStoreError.lastMessage)", sourceLocation: sourceLocation)
}

/// Expects `query` (on a fresh root query) to give exactly `text` and `args`, and the core's
/// parser to accept the text.
private func check<Root>(_ text: String, _ args: [Any] = [], sourceLocation: SourceLocation = #_sourceLocation,
                         _ query: (Query<Root>) -> Query<Bool>) {
    let (actualText, actualArgs) = query(Query<Root>._constructForTesting())._constructPredicate()
    #expect(actualText == text, sourceLocation: sourceLocation)
    expectParses(actualText, nargs: actualArgs.count, sourceLocation: sourceLocation)
    #expect(actualArgs.count == args.count, "arguments: \(actualArgs)", sourceLocation: sourceLocation)
    for (i, (a, b)) in zip(actualArgs, args).enumerated() {
        #expect(sameArgument(a, b), "argument \(i): \(type(of: a)) \(a) is not \(type(of: b)) \(b)",
                sourceLocation: sourceLocation)
    }
}

private let date = Date(timeIntervalSince1970: 1_000_000)

// MARK: - Tests

@Suite struct QueryDSLTests {
    // MARK: Comparisons

    @Test func equalityWithValues() {
        check("(age == %@)", [3]) { (q: Query<QDslOwner>) in q.age == 3 }
        check("(age != %@)", [3]) { (q: Query<QDslOwner>) in q.age != 3 }
        check("(name == %@)", ["Foó"]) { (q: Query<QDslOwner>) in q.name == "Foó" }
        check("(score == %@)", [1.5]) { (q: Query<QDslOwner>) in q.score == 1.5 }
        check("(date == %@)", [date]) { (q: Query<QDslOwner>) in q.date == date }
        check("(data == %@)", [Data([1, 2])]) { (q: Query<QDslOwner>) in q.data == Data([1, 2]) }
        let oid = ObjectId.generate()
        check("(oid == %@)", [oid]) { (q: Query<QDslOwner>) in q.oid == oid }
        check("(decimal == %@)", [Decimal128(value: 2)]) { (q: Query<QDslOwner>) in q.decimal == Decimal128(value: 2) }
        check("(isActive == %@)", [false]) { (q: Query<QDslOwner>) in q.isActive == false }
    }

    @Test func optionalsCompareWithNilAsNSNull() {
        check("(optAge == %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optAge == nil }
        check("(optAge != %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optAge != nil }
        check("(optName == %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optName == nil }
        check("(best == %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.best == nil }
        // A non-nil optional argument is unwrapped.
        check("(optAge == %@)", [5]) { (q: Query<QDslOwner>) in q.optAge == 5 }
        check("(optAge > %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optAge > nil }
        check("(optAge <= %@)", [7]) { (q: Query<QDslOwner>) in q.optAge <= 7 }
    }

    @Test func objectEquality() {
        let dog = QDslDog()
        check("(best == %@)", [dog]) { (q: Query<QDslOwner>) in q.best == dog }
        check("(best != %@)", [dog]) { (q: Query<QDslOwner>) in q.best != dog }
    }

    @Test func orderedComparisons() {
        check("(age > %@)", [3]) { (q: Query<QDslOwner>) in q.age > 3 }
        check("(age >= %@)", [3]) { (q: Query<QDslOwner>) in q.age >= 3 }
        check("(age < %@)", [3]) { (q: Query<QDslOwner>) in q.age < 3 }
        check("(age <= %@)", [3]) { (q: Query<QDslOwner>) in q.age <= 3 }
        check("(score > %@)", [2.5]) { (q: Query<QDslOwner>) in q.score > 2.5 }
        check("(date < %@)", [date]) { (q: Query<QDslOwner>) in q.date < date }
        check("(decimal >= %@)", [Decimal128(value: 1)]) { (q: Query<QDslOwner>) in q.decimal >= Decimal128(value: 1) }
        check("(mixed > %@)", [AnyRealmValue.int(3)]) { (q: Query<QDslOwner>) in q.mixed > .int(3) }
        check("(name > %@)", ["m"]) { (q: Query<QDslOwner>) in q.name > "m" }
        check("(data <= %@)", [Data([9])]) { (q: Query<QDslOwner>) in q.data <= Data([9]) }
    }

    @Test func columnComparisons() {
        check("(age > partner.age)") { (q: Query<QDslOwner>) in q.age > q.partner.age }
        check("(name == partner.name)") { (q: Query<QDslOwner>) in q.name == q.partner.name }
        check("(optName != optName)") { (q: Query<QDslOwner>) in q.optName != q.optName }
        check("(kind >= kind)") { (q: Query<QDslOwner>) in q.kind >= q.kind }
        check("(best.name CONTAINS[cd] name)") { (q: Query<QDslOwner>) in
            q.best.name.contains(q.name, options: [.caseInsensitive, .diacriticInsensitive])
        }
        check("(name CONTAINS[cd] optName)") { (q: Query<QDslOwner>) in
            q.name.contains(q.optName, options: [.caseInsensitive, .diacriticInsensitive])
        }
        check("(name BEGINSWITH partner.name)") { (q: Query<QDslOwner>) in q.name.starts(with: q.partner.name) }
        check("(name ENDSWITH[c] optName)") { (q: Query<QDslOwner>) in q.name.ends(with: q.optName, options: .caseInsensitive) }
        check("(name ==[d] optName)") { (q: Query<QDslOwner>) in q.name.equals(q.optName, options: .diacriticInsensitive) }
        check("(name !=[cd] optName)") { (q: Query<QDslOwner>) in
            q.name.notEquals(q.optName, options: [.caseInsensitive, .diacriticInsensitive])
        }
        check("(name LIKE[c] optName)") { (q: Query<QDslOwner>) in q.name.like(q.optName, caseInsensitive: true) }
    }

    @Test func nestedLinkPaths() {
        check("(best.name == %@)", ["Rex"]) { (q: Query<QDslOwner>) in q.best.name == "Rex" }
        check("(best.owner.partner.age > %@)", [30]) { (q: Query<QDslOwner>) in q.best.owner.partner.age > 30 }
        check("(partner.best.isGood == %@)", [true]) { (q: Query<QDslOwner>) in q.partner.best.isGood == true }
    }

    @Test func inAndRanges() {
        check("(age IN %@)", [[1, 2]]) { (q: Query<QDslOwner>) in q.age.in([1, 2]) }
        check("(NOT age IN %@)", [[1]]) { (q: Query<QDslOwner>) in !q.age.in([1]) }
        check("(optAge IN %@)", [[1, NSNull()] as [Any]]) { (q: Query<QDslOwner>) in q.optAge.in([1, nil]) }
        check("(kind IN %@)", [[QDslKind.a, QDslKind.c]]) { (q: Query<QDslOwner>) in q.kind.in([.a, .c]) }
        check("(age BETWEEN {%@, %@})", [1, 5]) { (q: Query<QDslOwner>) in q.age.contains(1...5) }
        check("((age >= %@) && (age < %@))", [1, 5]) { (q: Query<QDslOwner>) in q.age.contains(1..<5) }
        check("(optAge BETWEEN {%@, %@})", [1, 5]) { (q: Query<QDslOwner>) in q.optAge.contains(1...5) }
        check("((optAge >= %@) && (optAge < %@))", [1, 5]) { (q: Query<QDslOwner>) in q.optAge.contains(1..<5) }
        check("(date BETWEEN {%@, %@})", [date, date]) { (q: Query<QDslOwner>) in q.date.contains(date...date) }
        check("(name BETWEEN {%@, %@})", ["a", "m"]) { (q: Query<QDslOwner>) in q.name.contains("a"..."m") }
        // RealmSwift drops this NOT; the text here keeps it.
        check("(NOT age BETWEEN {%@, %@})", [1, 5]) { (q: Query<QDslOwner>) in !q.age.contains(1...5) }
        check("NOT ((age >= %@) && (age < %@))", [1, 5]) { (q: Query<QDslOwner>) in !q.age.contains(1..<5) }
    }

    // MARK: Bool key paths and compounds

    @Test func bareBoolKeyPaths() {
        check("isActive == true") { (q: Query<QDslOwner>) in q.isActive }
        check("isActive == false") { (q: Query<QDslOwner>) in !q.isActive }
        check("best.isGood == true") { (q: Query<QDslOwner>) in q.best.isGood }
        check("(isActive == true && (age > %@))", [3]) { (q: Query<QDslOwner>) in q.isActive && q.age > 3 }
        check("((age > %@) || isActive == false)", [3]) { (q: Query<QDslOwner>) in q.age > 3 || !q.isActive }
        // A Bool through a collection: RealmSwift writes no ANY here.
        check("dogs.isGood == true") { (q: Query<QDslOwner>) in q.dogs.isGood }
        // A double negation keeps both NOTs.
        check("NOT isActive == false") { (q: Query<QDslOwner>) in !(!q.isActive) }
    }

    @Test func compoundPrecedence() {
        check("((age == %@) && (name == %@))", [1, "a"]) { (q: Query<QDslOwner>) in q.age == 1 && q.name == "a" }
        check("((age == %@) || (name == %@))", [1, "a"]) { (q: Query<QDslOwner>) in q.age == 1 || q.name == "a" }
        // && binds tighter than ||.
        check("((age == %@) || ((age == %@) && (name == %@)))", [1, 2, "x"]) { (q: Query<QDslOwner>) in
            q.age == 1 || q.age == 2 && q.name == "x"
        }
        check("(((age == %@) || (age == %@)) && (name == %@))", [1, 2, "x"]) { (q: Query<QDslOwner>) in
            (q.age == 1 || q.age == 2) && q.name == "x"
        }
        check("(((age == %@) && (name == %@)) && (score > %@))", [1, "x", 2.0]) { (q: Query<QDslOwner>) in
            q.age == 1 && q.name == "x" && q.score > 2.0
        }
        check("(((age == %@) || (name == %@)) && ((age != %@) || (name != %@)))", [1, "a", 1, "a"]) { (q: Query<QDslOwner>) in
            (q.age == 1 || q.name == "a") && (q.age != 1 || q.name != "a")
        }
        check("(NOT ((age == %@) || (name CONTAINS %@)) && (name == %@))", [1, "b", "b"]) { (q: Query<QDslOwner>) in
            !(q.age == 1 || q.name.contains("b")) && (q.name == "b")
        }
        check("(NOT age == %@)", [1]) { (q: Query<QDslOwner>) in !(q.age == 1) }
    }

    // MARK: Strings and data

    @Test func stringOperationsWithOptions() {
        let modifiers: [(String, StringOptions)] = [
            ("", []), ("[c]", [.caseInsensitive]), ("[d]", [.diacriticInsensitive]),
            ("[cd]", [.caseInsensitive, .diacriticInsensitive]),
        ]
        for (m, options) in modifiers {
            check("(name ==\(m) %@)", ["Foó"]) { (q: Query<QDslOwner>) in q.name.equals("Foó", options: options) }
            check("(NOT name ==\(m) %@)", ["Foó"]) { (q: Query<QDslOwner>) in !q.name.equals("Foó", options: options) }
            check("(name !=\(m) %@)", ["Foó"]) { (q: Query<QDslOwner>) in q.name.notEquals("Foó", options: options) }
            check("(name CONTAINS\(m) %@)", ["o"]) { (q: Query<QDslOwner>) in q.name.contains("o", options: options) }
            check("(NOT name CONTAINS\(m) %@)", ["o"]) { (q: Query<QDslOwner>) in !q.name.contains("o", options: options) }
            check("(name BEGINSWITH\(m) %@)", ["F"]) { (q: Query<QDslOwner>) in q.name.starts(with: "F", options: options) }
            check("(optName ENDSWITH\(m) %@)", ["ó"]) { (q: Query<QDslOwner>) in q.optName.ends(with: "ó", options: options) }
        }
        check("(name LIKE %@)", ["F*ó"]) { (q: Query<QDslOwner>) in q.name.like("F*ó") }
        check("(name LIKE[c] %@)", ["f?ó"]) { (q: Query<QDslOwner>) in q.name.like("f?ó", caseInsensitive: true) }
        check("(optName LIKE %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optName.like(nil) }
    }

    @Test func dataOperations() {
        let bytes = Data([0, 1])
        check("(data BEGINSWITH %@)", [bytes]) { (q: Query<QDslOwner>) in q.data.starts(with: bytes) }
        check("(data ENDSWITH %@)", [bytes]) { (q: Query<QDslOwner>) in q.data.ends(with: bytes) }
        check("(NOT data CONTAINS %@)", [bytes]) { (q: Query<QDslOwner>) in !q.data.contains(bytes) }
        check("(data == %@)", [bytes]) { (q: Query<QDslOwner>) in q.data.equals(bytes) }
        check("(NOT data != %@)", [bytes]) { (q: Query<QDslOwner>) in !q.data.notEquals(bytes) }
    }

    // MARK: Enums and custom persistable types

    @Test func enumsAndRawValues() {
        check("(kind == %@)", [QDslKind.b]) { (q: Query<QDslOwner>) in q.kind == .b }
        check("(kind > %@)", [QDslKind.a]) { (q: Query<QDslOwner>) in q.kind > .a }
        check("(optKind == %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optKind == nil }
        check("(optKind != %@)", [QDslKind.c]) { (q: Query<QDslOwner>) in q.optKind != .c }
        check("(kind > %@)", [1]) { (q: Query<QDslOwner>) in q.kind.rawValue > 1 }
        check("(kind BETWEEN {%@, %@})", [1, 2]) { (q: Query<QDslOwner>) in q.kind.rawValue.contains(1...2) }
        check("(optKind == %@)", [2]) { (q: Query<QDslOwner>) in q.optKind.rawValue == 2 }
        check("(mood BEGINSWITH %@)", ["ca"]) { (q: Query<QDslOwner>) in q.mood.rawValue.starts(with: "ca") }
        check("(mood == %@)", [QDslMood.happy]) { (q: Query<QDslOwner>) in q.mood == .happy }
        check("(ANY kinds == %@)", [QDslKind.a]) { (q: Query<QDslOwner>) in q.kinds == .a }
        check("(%@ IN kinds)", [2]) { (q: Query<QDslOwner>) in q.kinds.rawValue.contains(2) }
        check("(kinds.@max < %@)", [3]) { (q: Query<QDslOwner>) in q.kinds.rawValue.max < 3 }
    }

    @Test func customPersistableValues() {
        let warm = QDslCelsius(degrees: 20)
        check("(temperature == %@)", [warm]) { (q: Query<QDslOwner>) in q.temperature == warm }
        check("(temperature > %@)", [warm]) { (q: Query<QDslOwner>) in q.temperature > warm }
        check("(temperature > %@)", [20.0]) { (q: Query<QDslOwner>) in q.temperature.persistableValue > 20.0 }
        check("(optTemperature == %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optTemperature == nil }
        check("(optTemperature < %@)", [5.0]) { (q: Query<QDslOwner>) in q.optTemperature.persistableValue < 5.0 }
        check("(temperature BETWEEN {%@, %@})", [1.0, 2.0]) { (q: Query<QDslOwner>) in
            q.temperature.persistableValue.contains(1.0...2.0)
        }
        check("(%@ IN temperatures)", [warm]) { (q: Query<QDslOwner>) in
            q.temperatures.contains(warm)
        }
        check("(temperatures.@avg > %@)", [1.0]) { (q: Query<QDslOwner>) in q.temperatures.persistableValue.avg > 1.0 }
        // On a scalar, persistableValue is the same query.
        check("(age == %@)", [1]) { (q: Query<QDslOwner>) in q.age.persistableValue == 1 }
    }

    // MARK: Lists, sets and linking objects

    @Test func implicitAnyOverCollections() {
        check("(ANY tags == %@)", ["a"]) { (q: Query<QDslOwner>) in q.tags == "a" }
        check("(ANY tags != %@)", ["a"]) { (q: Query<QDslOwner>) in q.tags != "a" }
        check("(ANY scores > %@)", [3]) { (q: Query<QDslOwner>) in q.scores > 3 }
        check("(ANY optScores <= %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optScores <= nil }
        check("(ANY dogs.age > %@)", [2]) { (q: Query<QDslOwner>) in q.dogs.age > 2 }
        check("(ANY dogSet.name BEGINSWITH[c] %@)", ["r"]) { (q: Query<QDslOwner>) in
            q.dogSet.name.starts(with: "r", options: .caseInsensitive)
        }
        check("(ANY dogs.owner.name == %@)", ["Ann"]) { (q: Query<QDslOwner>) in q.dogs.owner.name == "Ann" }
        check("(ANY dogs.toys.price < %@)", [2.0]) { (q: Query<QDslOwner>) in q.dogs.toys.price < 2.0 }
        // Through an optional link RealmSwift writes no ANY (the core treats list paths as any).
        check("(partner.dogs.age > %@)", [1]) { (q: Query<QDslOwner>) in q.partner.dogs.age > 1 }
        check("(((ANY dogs.age != %@) && (ANY dogs.owner.age > %@)) && ((ANY dogSet.age != %@) && (ANY dogSet.owner.age > %@)))",
              [123, 456, 123, 456]) { (q: Query<QDslOwner>) in
            ((q.dogs.age != 123) && (q.dogs.owner.age > 456)) && ((q.dogSet.age != 123) && (q.dogSet.owner.age > 456))
        }
    }

    @Test func collectionContains() {
        let dog = QDslDog()
        check("(%@ IN tags)", ["a"]) { (q: Query<QDslOwner>) in q.tags.contains("a") }
        check("(NOT %@ IN tags)", ["a"]) { (q: Query<QDslOwner>) in !q.tags.contains("a") }
        check("(%@ IN optScores)", [NSNull()]) { (q: Query<QDslOwner>) in q.optScores.contains(nil) }
        check("(%@ IN dogs)", [dog]) { (q: Query<QDslOwner>) in q.dogs.contains(dog) }
        check("(%@ IN dogSet)", [dog]) { (q: Query<QDslOwner>) in q.dogSet.contains(dog) }
        check("(ANY tags IN %@)", [["a", "b"]]) { (q: Query<QDslOwner>) in q.tags.containsAny(in: ["a", "b"]) }
        check("(ANY optScores IN %@)", [[1, NSNull()] as [Any]]) { (q: Query<QDslOwner>) in q.optScores.containsAny(in: [1, nil]) }
        check("(ANY dogs IN %@)", [[dog]]) { (q: Query<QDslOwner>) in q.dogs.containsAny(in: [dog]) }
        check("(NOT ANY dogs IN %@)", [[dog]]) { (q: Query<QDslOwner>) in !q.dogs.containsAny(in: [dog]) }
        check("((scores.@min >= %@) && (scores.@max <= %@))", [1, 5]) { (q: Query<QDslOwner>) in q.scores.contains(1...5) }
        check("((scores.@min >= %@) && (scores.@max < %@))", [1, 5]) { (q: Query<QDslOwner>) in q.scores.contains(1..<5) }
        check("((optScores.@min >= %@) && (optScores.@max <= %@))", [1, 5]) { (q: Query<QDslOwner>) in q.optScores.contains(1...5) }
        check("((age == %@) && (%@ IN tags))", [1, "a"]) { (q: Query<QDslOwner>) in q.age == 1 && q.tags.contains("a") }
    }

    @Test func linkingObjects() {
        let owner = QDslOwner()
        check("(%@ IN owners)", [owner]) { (q: Query<QDslDog>) in q.owners.contains(owner) }
        check("(ANY owners IN %@)", [[owner]]) { (q: Query<QDslDog>) in q.owners.containsAny(in: [owner]) }
        check("(NOT %@ IN owners)", [owner]) { (q: Query<QDslDog>) in !q.owners.contains(owner) }
        check("(NOT ANY owners IN %@)", [[owner]]) { (q: Query<QDslDog>) in !q.owners.containsAny(in: [owner]) }
        check("(ANY owners.age > %@)", [3]) { (q: Query<QDslDog>) in q.owners.age > 3 }
        check("(owners.@count == %@)", [0]) { (q: Query<QDslDog>) in q.owners.count == 0 }
    }

    @Test func countsAndAggregates() {
        check("(dogs.@count > %@)", [1]) { (q: Query<QDslOwner>) in q.dogs.count > 1 }
        check("(tags.@count == %@)", [0]) { (q: Query<QDslOwner>) in q.tags.count == 0 }
        check("(scores.@min >= %@)", [1]) { (q: Query<QDslOwner>) in q.scores.min >= 1 }
        check("(scores.@max < %@)", [9]) { (q: Query<QDslOwner>) in q.scores.max < 9 }
        check("(scores.@avg > %@)", [2]) { (q: Query<QDslOwner>) in q.scores.avg > 2 }
        check("(scores.@sum == %@)", [10]) { (q: Query<QDslOwner>) in q.scores.sum == 10 }
        check("(optScores.@sum != %@)", [NSNull()]) { (q: Query<QDslOwner>) in q.optScores.sum != nil }
        check("(best.toys.@count >= %@)", [2]) { (q: Query<QDslOwner>) in q.best.toys.count >= 2 }
        // Over a property of the objects in a collection: the aggregate follows the collection.
        check("(dogs.@avg.age > %@)", [3]) { (q: Query<QDslOwner>) in q.dogs.age.avg > 3 }
        check("(dogs.@min.age <= %@)", [1]) { (q: Query<QDslOwner>) in q.dogs.age.min <= 1 }
        check("(dogs.@max.age == %@)", [9]) { (q: Query<QDslOwner>) in q.dogs.age.max == 9 }
        check("(dogSet.@sum.age != %@)", [0]) { (q: Query<QDslOwner>) in q.dogSet.age.sum != 0 }
        // Two aggregates are single values, so they compare (RealmSwift refuses these).
        check("(dogs.@sum.age == dogs.@max.age)") { (q: Query<QDslOwner>) in q.dogs.age.sum == q.dogs.age.max }
        check("(dogs.@count == tags.@count)") { (q: Query<QDslOwner>) in q.dogs.count == q.tags.count }
        // Through an optional link the aggregate still follows the collection (RealmSwift
        // would write partner.@avg.dogs.age).
        check("(partner.dogs.@avg.age > %@)", [3]) { (q: Query<QDslOwner>) in q.partner.dogs.age.avg > 3 }
        check("(dogs.@max.kind > %@)", [QDslKind.b]) { (q: Query<QDslOwner>) in q.dogs.kind.max > .b }
        check("(best.toys.@sum.max == %@)", [3]) { (q: Query<QDslOwner>) in q.best.toys.max.sum == 3 }
        check("(max > %@)", [5]) { (q: Query<QDslToy>) in q.max > 5 }
        check("((((((scores.@min <= %@) && (scores.@max >= %@)) && (scores.@sum == %@)) && (scores.@count != %@)) && (scores.@avg > %@)) && (scores.@avg < %@))",
              [1, 3, 4, 0, 1, 3]) { (q: Query<QDslOwner>) in
            (q.scores.min <= 1) && (q.scores.max >= 3) && (q.scores.sum == 4) && (q.scores.count != 0)
                && (q.scores.avg > 1) && (q.scores.avg < 3)
        }
    }

    @Test func subqueryCounts() {
        check("(SUBQUERY(dogs, $col1, ($col1.age > %@)).@count > %@)", [5, 1]) { (q: Query<QDslOwner>) in
            (q.dogs.age > 5).count > 1
        }
        check("((age == %@) && (SUBQUERY(dogSet, $col1, ($col1.name == %@)).@count == %@))", [5, "Bar", 0]) { (q: Query<QDslOwner>) in
            q.age == 5 && (q.dogSet.name == "Bar").count == 0
        }
        check("(SUBQUERY(dogs, $col1, (($col1.age > %@) && ($col1.age <= %@))).@count > %@)", [0, 5, 0]) { (q: Query<QDslOwner>) in
            (q.dogs.age > 0 && q.dogs.age <= 5).count > 0
        }
        check("(SUBQUERY(dogs, $col1, ($col1.toys.@count >= %@)).@count > %@)", [0, 0]) { (q: Query<QDslOwner>) in
            (q.dogs.toys.count >= 0).count > 0
        }
        check("(SUBQUERY(dogs, $col1, (($col1.toys.@count >= %@) && (SUBQUERY(dogs, $col2, ($col2.age != %@)).@count > %@))).@count > %@)",
              [0, 123, 0, 0]) { (q: Query<QDslOwner>) in
            (q.dogs.toys.count >= 0 && (q.dogs.age != 123).count > 0).count > 0
        }
        check("((SUBQUERY(dogs, $col1, ($col1.age == %@)).@count == %@) && (SUBQUERY(dogs, $col2, ($col2.name == %@)).@count == %@))",
              [5, 1, "Bar", 0]) { (q: Query<QDslOwner>) in
            (q.dogs.age == 5).count == 1 && (q.dogs.name == "Bar").count == 0
        }
        check("(SUBQUERY(dogs, $col1, ($col1.name == name)).@count == %@)", [0]) { (q: Query<QDslOwner>) in
            (q.dogs.name == q.name).count == 0
        }
        // Two properties of the same element (RealmSwift refuses this as comparing collections).
        check("(SUBQUERY(dogs, $col1, ($col1.name == $col1.owner.name)).@count > %@)", [0]) { (q: Query<QDslOwner>) in
            (q.dogs.name == q.dogs.owner.name).count > 0
        }
        check("(SUBQUERY(scores, $col1, ($col1 > %@)).@count >= %@)", [5, 2]) { (q: Query<QDslOwner>) in
            (q.scores > 5).count >= 2
        }
        check("(SUBQUERY(dogs, $col1, (NOT $col1.name CONTAINS[c] %@)).@count == %@)", ["x", 0]) { (q: Query<QDslOwner>) in
            (!q.dogs.name.contains("x", options: .caseInsensitive)).count == 0
        }
        check("(SUBQUERY(dogs, $col1, $col1.isGood == true).@count > %@)", [1]) { (q: Query<QDslOwner>) in
            q.dogs.isGood.count > 1
        }
    }

    // MARK: Maps

    @Test func mapKeysValuesAndSubscripts() {
        check("(ANY prices.@allKeys == %@)", ["a"]) { (q: Query<QDslOwner>) in q.prices.keys == "a" }
        check("(ANY prices.@allKeys != %@)", ["a"]) { (q: Query<QDslOwner>) in q.prices.keys != "a" }
        check("(ANY prices.@allKeys CONTAINS[cd] %@)", ["a"]) { (q: Query<QDslOwner>) in
            q.prices.keys.contains("a", options: [.caseInsensitive, .diacriticInsensitive])
        }
        check("(ANY prices.@allKeys BEGINSWITH %@)", ["a"]) { (q: Query<QDslOwner>) in q.prices.keys.starts(with: "a") }
        check("(ANY prices.@allKeys LIKE[c] %@)", ["a*"]) { (q: Query<QDslOwner>) in q.prices.keys.like("a*", caseInsensitive: true) }
        check("(ANY prices.@allValues > %@)", [2.0]) { (q: Query<QDslOwner>) in q.prices.values > 2.0 }
        check("(ANY labels.@allValues ENDSWITH %@)", ["z"]) { (q: Query<QDslOwner>) in q.labels.values.ends(with: "z") }
        check("(ANY dogMap.@allValues.name == %@)", ["Rex"]) { (q: Query<QDslOwner>) in q.dogMap.values.name == "Rex" }
        check("(prices[%@] == %@)", ["a", 1.0]) { (q: Query<QDslOwner>) in q.prices["a"] == 1.0 }
        check("(prices[%@] >= %@)", ["a", 1.0]) { (q: Query<QDslOwner>) in q.prices["a"] >= 1.0 }
        check("(optPrices[%@] == %@)", ["a", NSNull()]) { (q: Query<QDslOwner>) in q.optPrices["a"] == nil }
        check("(labels[%@] CONTAINS %@)", ["k", "x"]) { (q: Query<QDslOwner>) in q.labels["k"].contains("x") }
        check("(NOT labels[%@] CONTAINS %@)", ["k", "x"]) { (q: Query<QDslOwner>) in !q.labels["k"].contains("x") }
        check("(labels[%@] LIKE[c] %@)", ["k", "x*"]) { (q: Query<QDslOwner>) in q.labels["k"].like("x*", caseInsensitive: true) }
        check("(((age != %@) && (prices[%@] == %@)) && (prices[%@] == %@))", [1, "foo", 1.0, "bar", 2.0]) { (q: Query<QDslOwner>) in
            (q.age != 1) && (q.prices["foo"] == 1.0) && (q.prices["bar"] == 2.0)
        }
        // A Bool map value used as a predicate (RealmSwift writes only `flags[%@]`).
        check("flags[%@] == true", ["on"]) { (q: Query<QDslOwner>) in q.flags["on"] }
        check("flags[%@] == false", ["on"]) { (q: Query<QDslOwner>) in !q.flags["on"] }
        check("(flags[%@] == true && (age > %@))", ["on", 1]) { (q: Query<QDslOwner>) in q.flags["on"] && q.age > 1 }
    }

    @Test func mapContainsCountAndAggregates() {
        let dog = QDslDog()
        check("(%@ IN prices)", [2.0]) { (q: Query<QDslOwner>) in q.prices.contains(2.0) }
        check("(NOT %@ IN prices)", [2.0]) { (q: Query<QDslOwner>) in !q.prices.contains(2.0) }
        check("(%@ IN dogMap)", [dog]) { (q: Query<QDslOwner>) in q.dogMap.contains(dog) }
        check("(%@ IN optPrices)", [NSNull()]) { (q: Query<QDslOwner>) in q.optPrices.contains(nil) }
        check("(ANY prices IN %@)", [[1.0, 2.0]]) { (q: Query<QDslOwner>) in q.prices.containsAny(in: [1.0, 2.0]) }
        check("(prices.@count > %@)", [1]) { (q: Query<QDslOwner>) in q.prices.count > 1 }
        check("(prices.@min >= %@)", [1.0]) { (q: Query<QDslOwner>) in q.prices.min >= 1.0 }
        check("(prices.@max <= %@)", [9.0]) { (q: Query<QDslOwner>) in q.prices.max <= 9.0 }
        check("(prices.@avg < %@)", [5.0]) { (q: Query<QDslOwner>) in q.prices.avg < 5.0 }
        check("(optPrices.@sum == %@)", [3]) { (q: Query<QDslOwner>) in q.optPrices.sum == 3 }
        check("((prices.@min >= %@) && (prices.@max <= %@))", [1.0, 2.0]) { (q: Query<QDslOwner>) in q.prices.contains(1.0...2.0) }
        check("((optPrices.@min >= %@) && (optPrices.@max < %@))", [1, 2]) { (q: Query<QDslOwner>) in q.optPrices.contains(1..<2) }
    }

    // MARK: AnyRealmValue

    @Test func anyRealmValueSubscripts() {
        check("(mixed == %@)", [AnyRealmValue.none]) { (q: Query<QDslOwner>) in q.mixed == .none }
        check("(mixed[%@] == %@)", [0, AnyRealmValue.int(1)]) { (q: Query<QDslOwner>) in q.mixed[0] == .int(1) }
        check("(mixed[%@] == %@)", ["k", AnyRealmValue.string("v")]) { (q: Query<QDslOwner>) in q.mixed["k"] == .string("v") }
        check("(mixed[%K] > %@)", ["#any", AnyRealmValue.double(2)]) { (q: Query<QDslOwner>) in q.mixed.any > .double(2) }
        check("(mixed[%@][%@][%K] != %@)", ["k", 1, "#any", AnyRealmValue.bool(true)]) { (q: Query<QDslOwner>) in
            q.mixed["k"][1].any != .bool(true)
        }
        check("(best.owner.mixed[%@] == %@)", [2, AnyRealmValue.none]) { (q: Query<QDslOwner>) in q.best.owner.mixed[2] == .none }
    }

    // MARK: Roots other than objects

    @Test func primitiveCollectionRoot() {
        let (text, args) = (Query<Int>(isPrimitive: true) > 5)._constructPredicate()
        #expect(text == "(self > %@)")
        #expect(args.count == 1 && (args[0] as? Int) == 5)
        let (text2, _) = Query<String>(isPrimitive: true).like("a*")._constructPredicate()
        #expect(text2 == "(self LIKE %@)")
    }

    @Test func optionalObjectRoot() {
        // Map<String, Object?>.where { ... } queries on an optional object.
        check("(name == %@)", ["Rex"]) { (q: Query<QDslDog?>) in q.name == "Rex" }
        check("(toys.name == %@)", ["ball"]) { (q: Query<QDslDog?>) in q.toys.name == "ball" }
    }

    // MARK: NSPredicate

    @Test func typealiasedNSPredicateIsSwiftStores() {
        #expect(ObjectIdentifier(NSPredicate.self) == ObjectIdentifier(SwiftStore.NSPredicate.self))
        let p = NSPredicate(format: "age > %@ AND name == %@", 3, "a")
        #expect(p.predicateFormat == "age > %@ AND name == %@")
        #expect(p.arguments.count == 2)
        #expect(p.description == "age > 3 AND name == \"a\"")
    }

    @Test func predicateArgumentsAndDescription() {
        let p = NSPredicate(format: "%K == %@ OR tag IN %@ OR x == %@ OR s == 'a%@'", argumentArray: ["name", "O\"k", ["a", "b"], NSNull()])
        #expect(p.arguments.count == 4)
        #expect(p.description == "name == \"O\\\"k\" OR tag IN {\"a\", \"b\"} OR x == nil OR s == 'a%@'")
        let optional: Int? = nil
        let q = NSPredicate(format: "a == %@ AND b == %d", optional as Any, 4)
        #expect(q.arguments[0] is NSNull)
        #expect(q.description == "a == nil AND b == 4")
        #expect(NSPredicate(format: "a == 1").arguments.isEmpty)
        #expect(NSPredicate(format: "a == 1", argumentArray: nil).arguments.isEmpty)
        #expect(NSPredicate(value: true).predicateFormat == "TRUEPREDICATE")
        #expect(NSPredicate(value: false).predicateFormat == "FALSEPREDICATE")
        #expect(NSPredicate(format: "k == %@", QDslKind.b).description == "k == 2")
        #expect(NSPredicate(format: "m == %@", AnyRealmValue.string("x")).description == "m == \"x\"")
    }

    @Test func predicateEquality() {
        #expect(NSPredicate(format: "a == %@", 1) == NSPredicate(format: "a == %@", 1))
        #expect(NSPredicate(format: "a == %@", 1) != NSPredicate(format: "a == %@", 2))
        #expect(NSPredicate(format: "a == %@", 1) != NSPredicate(format: "b == %@", 1))
        #expect(NSPredicate(format: "a IN %@", [1, 2]) == NSPredicate(format: "a IN %@", [1, 2]))
        let dog = QDslDog()
        #expect(NSPredicate(format: "d == %@", dog) == NSPredicate(format: "d == %@", dog))
        #expect(NSPredicate(format: "d == %@", dog) != NSPredicate(format: "d == %@", QDslDog()))
    }

    @Test func compoundPredicates() {
        let a = NSPredicate(format: "age > %@", 3)
        let b = NSPredicate(format: "name == %@ OR name == %@", "x", "y")
        let and = NSCompoundPredicate(andPredicateWithSubpredicates: [a, b])
        expectParses(and.predicateFormat, nargs: and.arguments.count)
        #expect(and.predicateFormat == "(age > %@) AND (name == %@ OR name == %@)")
        #expect(and.arguments.count == 3)
        #expect(and.description == "(age > 3) AND (name == \"x\" OR name == \"y\")")
        #expect(and.compoundPredicateType == .and)
        #expect(and.subpredicates.count == 2)
        let or = NSCompoundPredicate(orPredicateWithSubpredicates: [a, and])
        #expect(or.predicateFormat == "(age > %@) OR ((age > %@) AND (name == %@ OR name == %@))")
        #expect(or.arguments.count == 4)
        expectParses(or.predicateFormat, nargs: or.arguments.count)
        let not = NSCompoundPredicate(notPredicateWithSubpredicate: b)
        expectParses(not.predicateFormat, nargs: not.arguments.count)
        #expect(not.predicateFormat == "NOT (name == %@ OR name == %@)")
        #expect(not.compoundPredicateType == .not)
        #expect(NSCompoundPredicate(andPredicateWithSubpredicates: []).predicateFormat == "TRUEPREDICATE")
        #expect(NSCompoundPredicate(orPredicateWithSubpredicates: []).predicateFormat == "FALSEPREDICATE")
        // A compound predicate is an NSPredicate.
        let asPredicate: NSPredicate = and
        #expect(asPredicate.arguments.count == 3)
    }

    @Test func queryBecomesAPredicate() {
        let query = Query<QDslOwner>._constructForTesting()
        let p = NSPredicate._fromQuery(query.age > 3 && query.tags.contains("a"))
        #expect(p.predicateFormat == "((age > %@) && (%@ IN tags))")
        #expect(p.description == "((age > 3) && (\"a\" IN tags))")
        let q = (query.name == "x").predicate
        #expect(q == NSPredicate(format: "(name == %@)", "x"))
    }

    // MARK: Misuse

    @Test func aKeyPathAfterAMapSubscriptTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = (Query<QDslOwner>._constructForTesting().dogMap["a"].name == "x")._constructPredicate()
        }
        expectMessage(result, "Cannot apply key path to Map subscripts.")
    }

    @Test func comparingTwoCollectionsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let q = Query<QDslOwner>._constructForTesting()
            _ = (q.tags == q.tags)._constructPredicate()
        }
        expectMessage(result, "Comparing two collection columns is not permitted.")
    }

    @Test func aSubqueryWithoutACollectionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let q = Query<QDslOwner>._constructForTesting()
            _ = ((q.name == q.name).count == 0)._constructPredicate()
        }
        expectMessage(result, "Subqueries must contain a keypath starting with a collection.")
    }

    @Test func anOperatorOnTheWrongTypeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Query<QDslOwner>._constructForTesting().isActive > false
        }
        expectMessage(result, "Query operation '>' is not supported for values of type 'Bool'")
    }

    @Test func anAggregateOfStringsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Query<QDslOwner>._constructForTesting().tags.max
        }
        expectMessage(result, "Query operation '@max' is not supported for values of type 'String'")
    }
}
