// Public names in queries (cs_name_map, cs_query_new_named and its collection and backlink
// forms): mapped class and property names resolve in comparisons, link paths, SORT / DISTINCT,
// %K, aggregates, @links and SUBQUERY; messages name the public names; a stored name with
// another public name is unknown; unmapped names work as before; a NULL or empty map is the
// plain query; a bad map is CS_MISUSE with a message naming the entry; the query keeps its own
// copy of the map, across schema changes.

import CStore
import Foundation
import Testing

// MARK: - Name maps from Swift

/// One entry of a name map; `name` nil passes a NULL public name.
struct NameEntry {
    let table: UInt32
    let col: UInt32
    let name: String?

    init(_ table: UInt32, _ col: UInt32 = CS_NONE, _ name: String?) {
        self.table = table
        self.col = col
        self.name = name
    }
}

/// Calls `body` with a C name map of `entries` (nil: a NULL map). The names and the entry array
/// are overwritten and freed as soon as `body` returns, so a query that kept pointers into them
/// would read garbage (and AddressSanitizer would report it).
func withNameMap<R>(_ entries: [NameEntry]?, noArray: Bool = false,
                    _ body: (UnsafePointer<cs_name_map>?) throws -> R) rethrows -> R {
    guard let entries else { return try body(nil) }
    let names: [UnsafeMutablePointer<CChar>?] = entries.map { e in e.name.map { strdup($0)! } }
    let buf = UnsafeMutablePointer<cs_name_map_entry>.allocate(capacity: max(entries.count, 1))
    defer {
        for n in names {
            if let n {
                memset(n, 0x58, strlen(n))
                free(n)
            }
        }
        memset(buf, 0xee, MemoryLayout<cs_name_map_entry>.stride * max(entries.count, 1))
        buf.deallocate()
    }
    for (i, e) in entries.enumerated() {
        buf[i] = cs_name_map_entry(table: e.table, col: e.col, public_name: names[i].map { UnsafePointer($0) })
    }
    var map = cs_name_map(entries: noArray ? nil : UnsafePointer(buf), count: entries.count)
    return try withUnsafePointer(to: &map) { try body($0) }
}

/// Makes a query over `table` with `entries` as its name map; the result code, the message on
/// failure, and the query.
func makeNamedQuery(_ txn: OpaquePointer, _ table: UInt32, _ text: String, _ args: [QArg] = [],
                    names entries: [NameEntry]?, noArray: Bool = false) -> (Int32, String, OpaquePointer?) {
    let buf = QArgBuffer(args)
    var q: OpaquePointer?
    let rc = withNameMap(entries, noArray: noArray) { map in
        cs_query_new_named(txn, table, text, text.utf8.count, buf.values, buf.count, map, &q)
    }
    withExtendedLifetime(buf) {}
    if rc != Int32(CS_OK) { return (rc, lastMessage(), nil) }
    return (rc, "", q)
}

// MARK: - The fixture

/// Cities (unmapped), people (`person_t`, public `Person`) and dogs (`dog_t`, public `Dog`),
/// most of whose properties have public names different from their stored names.
struct PetFixture {
    let txn: OpaquePointer
    let city, person, dog: UInt32
    let c: [Int64]  // city keys: Oslo, Rome
    let p: [Int64]  // person keys: Ann, Bob, Cy
    let d: [Int64]  // dog keys: Rex, Bo, Alf, Zed
    let col: [String: UInt32]  // "table.stored" -> column key
    let names: [NameEntry]

    func k(_ idx: [Int]) -> [Int64] { idx.map { d[$0] } }

    func keys(_ table: UInt32, _ text: String, _ args: [QArg] = [], names: [NameEntry]?) throws -> [Int64] {
        let (rc, msg, q) = makeNamedQuery(txn, table, text, args, names: names)
        if rc != Int32(CS_OK) { throw CStoreError(code: rc, message: msg, context: "cs_query_new_named(\(text))") }
        defer { cs_query_free(q) }
        return try keysOf(q!, text)
    }

    /// Expects the query over `table` (with the fixture's map, or `names`) to give `want`, in order.
    func expect(_ table: UInt32, _ text: String, _ want: [Int64], _ args: [QArg] = [], names: [NameEntry]?? = .none,
                sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let got = try keys(table, text, args, names: names ?? Optional(self.names))
            #expect(got == want, "\(text): expected \(want), got \(got)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(text): \(error)", sourceLocation: sourceLocation)
        }
    }

    func expectDogs(_ text: String, _ idx: [Int], _ args: [QArg] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        expect(dog, text, k(idx), args, sourceLocation: sourceLocation)
    }

    func expectPeople(_ text: String, _ idx: [Int], _ args: [QArg] = [], sourceLocation: SourceLocation = #_sourceLocation) {
        expect(person, text, idx.map { p[$0] }, args, sourceLocation: sourceLocation)
    }

    /// Expects `code` (CS_QUERY unless told) with a message containing every one of `parts`.
    func expectError(_ table: UInt32, _ text: String, _ parts: [String], _ args: [QArg] = [],
                     names: [NameEntry]?? = .none, code: Int = CS_QUERY, sourceLocation: SourceLocation = #_sourceLocation) {
        let map: [NameEntry]? = names ?? Optional(self.names)
        expectQueryError(makeNamedQuery(txn, table, text, args, names: map), text, parts, code: code,
                         sourceLocation: sourceLocation)
    }
}

/// Builds the pet fixture in a write transaction and runs `body` in it.
func withPets(_ body: (PetFixture) throws -> Void) throws {
    try withTempDir { dir in
        let db = try DB(dir.path())
        let txn = try db.begin(CS_TXN_WRITE)
        defer { _ = cs_txn_end(txn) }
        try body(try makePets(txn))
    }
}

func makePets(_ txn: OpaquePointer) throws -> PetFixture {
    let city = try addTable(txn, "City")
    let person = try addTable(txn, "person_t")
    let dog = try addTable(txn, "dog_t")
    var col: [String: UInt32] = [:]
    col["City.name"] = try addColumn(txn, city, "name", CS_TYPE_STRING)
    col["City.pop"] = try addColumn(txn, city, "pop", CS_TYPE_INT)
    col["person_t.first_name"] = try addColumn(txn, person, "first_name", CS_TYPE_STRING)
    col["person_t.years"] = try addColumn(txn, person, "years", CS_TYPE_INT)
    col["person_t.home"] = try addColumn(txn, person, "home", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: city)
    col["person_t.dog_list"] = try addColumn(txn, person, "dog_list", CS_TYPE_LINK, coll: CS_COLL_LIST, target: dog)
    col["dog_t.dog_age"] = try addColumn(txn, dog, "dog_age", CS_TYPE_INT)
    col["dog_t.name"] = try addColumn(txn, dog, "name", CS_TYPE_STRING)
    col["dog_t.owner_ref"] = try addColumn(txn, dog, "owner_ref", CS_TYPE_LINK, flags: CS_COL_NULLABLE, target: person)
    col["dog_t.pals"] = try addColumn(txn, dog, "pals", CS_TYPE_LINK, coll: CS_COLL_LIST, target: person)
    col["dog_t.vet_visits"] = try addColumn(txn, dog, "vet_visits", CS_TYPE_INT, coll: CS_COLL_LIST)
    col["dog_t.tags"] = try addColumn(txn, dog, "tags", CS_TYPE_INT, coll: CS_COLL_MAP)
    col["dog_t.a"] = try addColumn(txn, dog, "a", CS_TYPE_INT)
    col["dog_t.b"] = try addColumn(txn, dog, "b", CS_TYPE_INT)

    var c: [Int64] = []
    for (n, pop) in [("Oslo", Int64(700)), ("Rome", 2800)] {
        var o = try createObj(txn, city)
        try must(setVal(&o, col["City.name"]!, .str(n)))
        try must(setVal(&o, col["City.pop"]!, .int(pop)))
        c.append(o.key)
    }
    var p: [Int64] = []
    for (n, age, home) in [("Ann", Int64(30), Optional(0)), ("Bob", 17, 1), ("Cy", 65, nil)] {
        var o = try createObj(txn, person)
        try must(setVal(&o, col["person_t.first_name"]!, .str(n)))
        try must(setVal(&o, col["person_t.years"]!, .int(age)))
        try must(setVal(&o, col["person_t.home"]!, home.map { .link(city, c[$0]) } ?? .null))
        p.append(o.key)
    }
    // name, age, owner, friends, visits, tags, a, b
    let rows: [(String, Int64, Int?, [Int], [Int64], [(String, Int64)], Int64, Int64)] = [
        ("Rex", 1, 0, [0, 1], [1, 2, 3], [("a", 1)], 10, 0),
        ("Bo", 5, 1, [], [], [], 20, 1),
        ("Alf", 7, nil, [2], [10], [("b", 2)], 30, 2),
        ("Zed", 3, 0, [1], [5, 5], [], 40, 3),
    ]
    var d: [Int64] = []
    for r in rows {
        var o = try createObj(txn, dog)
        try must(setVal(&o, col["dog_t.name"]!, .str(r.0)))
        try must(setVal(&o, col["dog_t.dog_age"]!, .int(r.1)))
        try must(setVal(&o, col["dog_t.owner_ref"]!, r.2.map { .link(person, p[$0]) } ?? .null))
        var f = try openColl(&o, col["dog_t.pals"]!)
        for x in r.3 { try must(listAppend(&f, .link(person, p[x]))) }
        var v = try openColl(&o, col["dog_t.vet_visits"]!)
        for x in r.4 { try must(listAppend(&v, .int(x))) }
        var t = try openColl(&o, col["dog_t.tags"]!)
        for (key, x) in r.5 { try must(mapSet(&t, Array(key.utf8), .int(x))) }
        try must(setVal(&o, col["dog_t.a"]!, .int(r.6)))
        try must(setVal(&o, col["dog_t.b"]!, .int(r.7)))
        d.append(o.key)
    }
    // Ann: Rex, Zed; Bob: Bo; Cy: none
    for (owner, dogs) in [(0, [0, 3]), (1, [1])] {
        var o = try openObj(txn, person, p[owner])
        var l = try openColl(&o, col["person_t.dog_list"]!)
        for x in dogs { try must(listAppend(&l, .link(dog, d[x]))) }
    }
    let names: [NameEntry] = [
        NameEntry(person, CS_NONE, "Person"),
        NameEntry(dog, CS_NONE, "Dog"),
        NameEntry(city, col["City.name"]!, "name"),  // an entry that changes nothing
        NameEntry(person, col["person_t.first_name"]!, "firstName"),
        NameEntry(person, col["person_t.years"]!, "age"),
        NameEntry(person, col["person_t.home"]!, "city"),
        NameEntry(person, col["person_t.dog_list"]!, "dogs"),
        NameEntry(dog, col["dog_t.dog_age"]!, "age"),
        NameEntry(dog, col["dog_t.owner_ref"]!, "owner"),
        NameEntry(dog, col["dog_t.pals"]!, "friends"),
        NameEntry(dog, col["dog_t.vet_visits"]!, "visits"),
        NameEntry(dog, col["dog_t.a"]!, "b"),  // a and b swapped
        NameEntry(dog, col["dog_t.b"]!, "a"),
    ]
    return PetFixture(txn: txn, city: city, person: person, dog: dog, c: c, p: p, d: d, col: col, names: names)
}

// MARK: - Tests

@Suite struct QueryNameMapTests {
    @Test func mappedPropertiesInComparisons() throws {
        try withPets { f throws in
            f.expectDogs("age > 3", [1, 2])
            f.expectDogs("age == 1 OR age == 7", [0, 2])
            f.expectDogs("age BETWEEN {2, 5}", [1, 3])
            f.expectDogs("age IN {1, 3}", [0, 3])
            f.expectDogs("NOT (age < 5) AND name != 'Alf'", [1])
            f.expectPeople("firstName BEGINSWITH[c] 'a' OR age > 60", [0, 2])
            f.expectPeople("age == $0", [1], [.v(.int(17))])
            // a public name that is another column's stored name reaches the mapped column
            f.expectDogs("a == 1", [1])    // stored b
            f.expectDogs("b == 20", [1])   // stored a
            f.expectDogs("b == 1", [])
            f.expectDogs("a > 1 AND b < 40", [2])
        }
    }

    @Test func mappedNamesInLinkAndCollectionPaths() throws {
        try withPets { f throws in
            f.expectDogs("owner.firstName == 'Ann'", [0, 3])
            f.expectDogs("owner.age < 20", [1])
            f.expectDogs("owner.city.name == 'Oslo'", [0, 3])
            f.expectDogs("owner.city.pop > 1000", [1])
            f.expectDogs("owner == nil", [2])
            f.expectDogs("friends.age > 60", [2])
            f.expectDogs("ANY friends.firstName == 'Bob'", [0, 3])
            f.expectDogs("NONE friends.age > 60", [0, 1, 3])
            f.expectDogs("friends.city.name == 'Rome'", [0, 3])
            f.expectDogs("visits == 5", [3])
            f.expectDogs("tags['a'] == 1", [0])
            f.expectPeople("dogs.name == 'Zed'", [0])
            f.expectPeople("dogs.owner.city.name == 'Rome'", [1])
        }
    }

    @Test func mappedNamesInSortAndDistinct() throws {
        try withPets { f throws in
            f.expectDogs("TRUEPREDICATE SORT(age DESC)", [2, 1, 3, 0])
            f.expectDogs("TRUEPREDICATE SORT(owner.firstName ASC, age DESC)", [2, 3, 0, 1])
            f.expectDogs("age > 0 SORT(a DESC)", [3, 2, 1, 0])
            f.expectDogs("TRUEPREDICATE DISTINCT(owner.firstName)", [0, 1, 2])
            f.expectDogs("TRUEPREDICATE SORT(owner.city.name DESC) DISTINCT(owner) LIMIT(2)", [1, 0])
            f.expectPeople("TRUEPREDICATE SORT(age DESC)", [2, 0, 1])
        }
    }

    @Test func mappedNamesInKeyPathArguments() throws {
        try withPets { f throws in
            f.expectDogs("%K > %@", [1, 2], [.v(.str("age")), .v(.int(3))])
            f.expectDogs("%K == %@", [1], [.v(.str("owner.firstName")), .v(.str("Bob"))])
            f.expectDogs("%K == 2", [3], [.v(.str("visits.@count"))])
            f.expectPeople("%K == 5", [1], [.v(.str("dogs.@max.age"))])
            f.expectError(f.dog, "%K == 5", ["unknown property 'dog_age' on Dog", "at 1:1"], [.v(.str("dog_age"))])
            f.expectError(f.dog, "%K == 'Ann'", ["unknown property 'first_name' on Person", "at 1:1"],
                          [.v(.str("owner.first_name"))])
        }
    }

    @Test func mappedNamesInAggregates() throws {
        try withPets { f throws in
            f.expectPeople("dogs.@sum.age >= 4", [0, 1])
            f.expectPeople("dogs.@max.age == 5", [1])
            f.expectPeople("dogs.@min.age == 1", [0])
            f.expectPeople("dogs.@avg.age == 2", [0])
            f.expectPeople("dogs.@count == 0", [2])
            f.expectPeople("dogs.@size == 2", [0])
            f.expectDogs("visits.@sum > 5", [0, 2, 3])
            f.expectDogs("visits.@count == 0", [1])
            f.expectDogs("friends.@max.age > 60", [2])
            f.expectError(f.person, "dogs.@sum.agee > 1", ["unknown property 'agee' on Dog", "at 1:11"])
            f.expectError(f.person, "dogs.@sum.dog_age > 1", ["unknown property 'dog_age' on Dog", "at 1:11"])
        }
    }

    @Test func mappedNamesInLinksAndSubqueries() throws {
        try withPets { f throws in
            f.expectPeople("@links.Dog.owner.@count > 0", [0, 1])
            f.expectPeople("ANY @links.Dog.owner.age > 4", [1])
            f.expectPeople("@links.Dog.friends.@count >= 1", [0, 1, 2])
            f.expectPeople("@links.Dog.owner.@max.age == 3", [0])
            f.expectPeople("SUBQUERY(@links.Dog.owner, $d, $d.age > 2).@count == 1", [0, 1])
            f.expectDogs("SUBQUERY(friends, $f, $f.age > 20 AND $f.city.name == 'Oslo').@count > 0", [0])
            f.expectPeople("SUBQUERY(dogs, $d, $d.visits.@sum > 5).@count == 2", [0])
            f.expectDogs("owner.@links.Dog.owner.@count == 2", [0, 3])
            // class and property of @links by their stored names
            f.expectError(f.person, "@links.dog_t.owner.@count > 0", ["unknown class 'dog_t' in @links", "at 1:1"])
            f.expectError(f.person, "@links.Dog.owner_ref.@count > 0", ["'Dog.owner_ref' does not link to Person", "at 1:1"])
            f.expectError(f.person, "@links.Cat.owner.@count > 0", ["unknown class 'Cat' in @links"])
            f.expectError(f.person, "@links.Dog.name.@count > 0", ["'Dog.name' does not link to Person"])
            f.expectError(f.dog, "SUBQUERY(pals, $f, $f.age > 1).@count > 0", ["unknown property 'pals' on Dog", "at 1:10"])
            f.expectError(f.dog, "SUBQUERY(friends, $f, $f.years > 1).@count > 0", ["unknown property 'years' on Person", "at 1:26"])
        }
    }

    @Test func messagesNameThePublicNames() throws {
        try withPets { f throws in
            f.expectError(f.dog, "agee == 5", ["unknown property 'agee' on Dog at 1:1"])
            f.expectError(f.dog, "owner.nope == 1", ["unknown property 'nope' on Person at 1:7"])
            f.expectError(f.dog, "owner.city.nope == 1", ["unknown property 'nope' on City at 1:12"])
            f.expectError(f.dog, "friends.agee == 1", ["unknown property 'agee' on Person at 1:9"])
            f.expectError(f.person, "dogs.owner.nope == 1", ["unknown property 'nope' on Person at 1:12"])
            f.expectError(f.dog, "age == 'five'", ["cannot compare Int with String", "at 1:8"])
            // the aggregate API names the column by its public name too
            let (rc, msg, q) = makeNamedQuery(f.txn, f.person, "TRUEPREDICATE", names: f.names)
            try must(rc, msg)
            defer { cs_query_free(q) }
            var out = cs_value()
            expectCode(cs_query_aggregate(q, f.col["person_t.first_name"]!, CS_AGG_SUM, &out), CS_TYPE, "sum of a string")
            #expect(lastMessage().contains("cannot sum or average 'firstName' of type String"), "\(lastMessage())")
            expectCode(cs_query_aggregate(q, f.col["person_t.dog_list"]!, CS_AGG_MAX, &out), CS_TYPE, "max of a list")
            #expect(lastMessage().contains("cannot aggregate the collection property 'dogs'"), "\(lastMessage())")
            check(cs_query_aggregate(q, f.col["person_t.years"]!, CS_AGG_SUM, &out), "sum of ages")
            #expect(out.type == CS_TYPE_INT && out.v.i == 112)
        }
    }

    @Test func storedNamesWithAPublicNameAreRefused() throws {
        try withPets { f throws in
            f.expectError(f.dog, "dog_age == 1", ["unknown property 'dog_age' on Dog", "at 1:1"])
            f.expectError(f.dog, "owner_ref.firstName == 'Ann'", ["unknown property 'owner_ref' on Dog", "at 1:1"])
            f.expectError(f.dog, "owner.first_name == 'Ann'", ["unknown property 'first_name' on Person", "at 1:7"])
            f.expectError(f.dog, "owner.home.name == 'Oslo'", ["unknown property 'home' on Person", "at 1:7"])
            f.expectError(f.dog, "vet_visits.@count > 0", ["unknown property 'vet_visits' on Dog"])
            f.expectError(f.dog, "TRUEPREDICATE SORT(dog_age)", ["unknown property 'dog_age' on Dog", "at 1:20"])
            f.expectError(f.dog, "TRUEPREDICATE DISTINCT(dog_age)", ["unknown property 'dog_age' on Dog", "at 1:24"])
            f.expectError(f.person, "dog_list.@count > 0", ["unknown property 'dog_list' on Person"])
            f.expectError(f.person, "ANY @links.Dog.owner.dog_age > 4", ["unknown property 'dog_age' on Dog", "at 1:22"])
        }
    }

    @Test func unmappedNamesResolveAsBefore() throws {
        try withPets { f throws in
            f.expectDogs("name == 'Rex'", [0])
            f.expectDogs("tags.@count == 1", [0, 2])
            f.expectDogs("owner.city.pop == 700", [0, 3])
            f.expect(f.city, "name == 'Rome' AND pop > 1", [f.c[1]])
            f.expect(f.city, "@links.Person.city.@count == 1", [f.c[0], f.c[1]])
            // a map naming only some things: the rest keeps its stored names
            let partial = [NameEntry(f.dog, f.col["dog_t.dog_age"]!, "age")]
            f.expect(f.dog, "age > 3 AND owner_ref.first_name == 'Bob'", f.k([1]), names: .some(partial))
            f.expect(f.person, "@links.dog_t.owner_ref.@count > 0", [f.p[0], f.p[1]], names: .some(partial))
            f.expectError(f.dog, "dog_age > 3", ["unknown property 'dog_age' on dog_t"], names: .some(partial))
            f.expectError(f.dog, "agee > 3", ["unknown property 'agee' on dog_t"], names: .some(partial))
        }
    }

    @Test func aNullOrEmptyMapIsThePlainQuery() throws {
        try withPets { f throws in
            for map: [NameEntry]? in [nil, []] {
                f.expect(f.dog, "dog_age > 3", f.k([1, 2]), names: .some(map))
                f.expect(f.dog, "owner_ref.first_name == 'Ann' SORT(dog_age DESC)", f.k([3, 0]), names: .some(map))
                f.expect(f.person, "@links.dog_t.owner_ref.@count > 0", [f.p[0], f.p[1]], names: .some(map))
                f.expect(f.person, "dog_list.@sum.dog_age >= 4", [f.p[0], f.p[1]], names: .some(map))
                f.expectError(f.dog, "age > 3", ["unknown property 'age' on dog_t", "at 1:1"], names: .some(map))
                f.expectError(f.person, "@links.Dog.owner.@count > 0", ["unknown class 'Dog' in @links"], names: .some(map))
            }
            // and cs_query_new is the NULL map
            let text = "owner_ref.home.name == 'Oslo'"
            #expect(try queryKeys(f.txn, f.dog, text) == f.k([0, 3]))
        }
    }

    @Test func collectionAndBacklinkRootsTakeAMap() throws {
        try withPets { f throws in
            var ann = try openObj(f.txn, f.person, f.p[0])
            var dogs = try openColl(&ann, f.col["person_t.dog_list"]!)
            func collQuery(_ text: String, _ names: [NameEntry]?) -> (Int32, [Int64]) {
                var q: OpaquePointer?
                let rc = withNameMap(names) { map in
                    cs_query_new_coll_named(&dogs, text, text.utf8.count, nil, 0, map, &q)
                }
                guard rc == Int32(CS_OK), let q else { return (rc, []) }
                defer { cs_query_free(q) }
                do { return (rc, try keysOf(q, text)) } catch {
                    Issue.record("\(text): \(error)")
                    return (-1, [])
                }
            }
            #expect(collQuery("age > 2", f.names) == (Int32(CS_OK), f.k([3])))
            #expect(collQuery("owner.firstName == 'Ann' SORT(age DESC)", f.names) == (Int32(CS_OK), f.k([3, 0])))
            #expect(collQuery("dog_age > 2", f.names).0 == Int32(CS_QUERY))
            #expect(lastMessage().contains("unknown property 'dog_age' on Dog"), "\(lastMessage())")
            #expect(collQuery("dog_age > 2", nil) == (Int32(CS_OK), f.k([3])))
            #expect(collQuery("age > 2", [NameEntry(99, CS_NONE, "X")]).0 == Int32(CS_MISUSE))

            // Ann's backlinks through Dog.owner
            func backlinkQuery(_ text: String, _ names: [NameEntry]?) -> (Int32, [Int64]) {
                var q: OpaquePointer?
                let rc = withNameMap(names) { map in
                    cs_query_new_backlinks_named(&ann, f.dog, f.col["dog_t.owner_ref"]!, text, text.utf8.count, nil, 0, map, &q)
                }
                guard rc == Int32(CS_OK), let q else { return (rc, []) }
                defer { cs_query_free(q) }
                do { return (rc, try keysOf(q, text)) } catch {
                    Issue.record("\(text): \(error)")
                    return (-1, [])
                }
            }
            #expect(backlinkQuery("age > 2", f.names) == (Int32(CS_OK), f.k([3])))
            #expect(backlinkQuery("name == 'Rex' OR friends.firstName == 'Bob'", f.names) == (Int32(CS_OK), f.k([0, 3])))
            #expect(backlinkQuery("owner_ref.years == 30", f.names).0 == Int32(CS_QUERY))
            #expect(lastMessage().contains("unknown property 'owner_ref' on Dog"), "\(lastMessage())")
            #expect(backlinkQuery("owner_ref.years == 30", nil) == (Int32(CS_OK), f.k([0, 3])))
            #expect(backlinkQuery("age > 2", [NameEntry(f.dog, 99, "x")]).0 == Int32(CS_MISUSE))
        }
    }

    @Test func badMapsAreMisuseWithAClearMessage() throws {
        try withPets { f throws in
            let age = f.col["dog_t.dog_age"]!
            // the backlink column that dog_t.owner_ref adds to person_t
            var info = cs_table_info()
            try must(cs_table_info_get(f.txn, f.person, &info))
            var hidden = CS_NONE
            for c in 0..<info.col_slots {
                var ci = cs_column_info()
                if cs_column_info_get(f.txn, f.person, c, &ci) == Int32(CS_OK) && ci.flags & UInt32(CS_COL_HIDDEN) != 0 {
                    hidden = c
                }
            }
            #expect(hidden != CS_NONE)
            let cases: [([NameEntry], [String])] = [
                ([NameEntry(f.dog, CS_NONE, "Dog"), NameEntry(42, CS_NONE, "Cat")], ["name map entry 1 ('Cat')", "no table 42"]),
                ([NameEntry(f.dog, 77, "weight")], ["name map entry 0 ('weight')", "table 'dog_t' has no column 77"]),
                ([NameEntry(f.person, hidden, "owners")], ["name map entry 0 ('owners')", "is a backlink column"]),
                ([NameEntry(f.dog, age, "age"), NameEntry(f.dog, CS_NONE, nil)], ["name map entry 1", "1 to 1024 bytes"]),
                ([NameEntry(f.dog, age, "")], ["name map entry 0", "1 to 1024 bytes"]),
                ([NameEntry(f.dog, age, String(repeating: "x", count: 1025))], ["name map entry 0", "1 to 1024 bytes"]),
                ([NameEntry(f.dog, age, "age"), NameEntry(f.dog, age, "years")],
                 ["two entries", "'dog_t.dog_age'"]),
                ([NameEntry(f.dog, CS_NONE, "Dog"), NameEntry(f.dog, CS_NONE, "Hound")], ["two entries", "the class 'dog_t'"]),
                ([NameEntry(f.dog, CS_NONE, "Pet"), NameEntry(f.person, CS_NONE, "Pet")],
                 ["'Pet' is the public name of two classes"]),
                ([NameEntry(f.dog, age, "age"), NameEntry(f.dog, f.col["dog_t.a"]!, "age")],
                 ["'age' is the public name of two properties of 'dog_t'"]),
            ]
            for (entries, parts) in cases {
                f.expectError(f.dog, "TRUEPREDICATE", parts, names: .some(entries), code: CS_MISUSE)
            }
            // entries without an array
            let (rc, msg, q) = makeNamedQuery(f.txn, f.dog, "TRUEPREDICATE", names: [NameEntry(f.dog, CS_NONE, "Dog")], noArray: true)
            expectCode(rc, CS_MISUSE, "a map with a count and no entries")
            #expect(q == nil && msg.contains("no entry array"), "\(msg)")
            // the same public name on properties of different classes is fine (the fixture's `age`)
            f.expectDogs("age > 0 AND owner.age > 0", [0, 1, 3])
        }
    }

    @Test func theQueryKeepsItsOwnCopyAcrossSchemaChanges() throws {
        try withTempDir { dir in
            let db = try DB(dir.path())
            var f0: PetFixture?
            try db.write { txn in f0 = try makePets(txn) }
            let f = f0!
            let reader = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(reader) }
            // the map's memory is overwritten and freed as soon as each query is made
            let (rc1, m1, q1) = makeNamedQuery(reader, f.dog, "age > 3 AND owner.firstName == 'Bob' SORT(age)", names: f.names)
            try must(rc1, m1)
            defer { cs_query_free(q1) }
            let (rc2, m2, q2) = makeNamedQuery(reader, f.dog, "visits.@count == 2", names: f.names)
            try must(rc2, m2)
            defer { cs_query_free(q2) }
            let (rc3, m3, q3) = makeNamedQuery(reader, f.person, "@links.Dog.owner.@count > 0", names: f.names)
            try must(rc3, m3)
            defer { cs_query_free(q3) }
            #expect(try keysOf(q1!, "q1") == [f.d[1]])
            #expect(try keysOf(q2!, "q2") == [f.d[3]])
            #expect(try keysOf(q3!, "q3") == [f.p[0], f.p[1]])

            // a schema change: the queries bind again, through their copies of the map
            try db.write { txn in
                _ = try addColumn(txn, f.dog, "extra", CS_TYPE_STRING)
            }
            var changed = false
            try must(cs_txn_advance(reader, &changed), "cs_txn_advance")
            #expect(changed)
            #expect(try keysOf(q1!, "q1 after a schema change") == [f.d[1]])
            #expect(try keysOf(q2!, "q2 after a schema change") == [f.d[3]])
            #expect(try keysOf(q3!, "q3 after a schema change") == [f.p[0], f.p[1]])

            // vet_visits removed and its key reused by another column: `visits` does not follow
            var reused = CS_NONE
            try db.write { txn in
                try must(cs_column_remove(txn, f.dog, f.col["dog_t.vet_visits"]!), "cs_column_remove")
                reused = try addColumn(txn, f.dog, "weight", CS_TYPE_INT)
            }
            #expect(reused == f.col["dog_t.vet_visits"]!, "the removed column's key is reused")
            try must(cs_txn_advance(reader, &changed), "cs_txn_advance")
            var n: UInt64 = 0
            expectCode(cs_query_count(q2, &n), CS_QUERY, "visits after its column went")
            #expect(lastMessage().contains("unknown property 'visits' on Dog"), "\(lastMessage())")
            #expect(try keysOf(q1!, "q1 after the removal") == [f.d[1]])
            // a new query takes a map of the new schema: the new column by its stored name
            let current = f.names.filter { $0.name != "visits" }
            let (rc4, m4, q4) = makeNamedQuery(reader, f.dog, "weight == 0 AND age == 1", names: current)
            try must(rc4, m4)
            defer { cs_query_free(q4) }
            #expect(try keysOf(q4!, "q4") == [f.d[0]])
        }
    }
}
