// One descent of a cluster tree (cluster.c, docs/ARCHITECTURE.md "The lookup's cache misses"):
// each node's key list is searched first at the position its parent's keys predict (the key's
// place if the node's keys were spread evenly between its first key and the next sibling's),
// confirmed against its neighbour, and searched in full only when the guess is wrong. These tests
// check its answers against the set of keys the table must hold, for key distributions where the
// guess is right (dense keys) and where it is mostly wrong (sparse, random over 2^61, runs with
// large jumps, deleted stretches), in key lists as a write leaves them and as a commit packs them
// (with a base or without, FORMAT.md §3), and that damaged key lists give answers or CS_CORRUPT.
// Below the root, a descent also guesses where a leaf child lies from the stride of the inner
// node's first children and prefetches it: only a prefetch, so answers must not depend on whether
// the guess is right (a load in key order), wrong (leaves moved by later writes) or damaged.

import CStore
import Foundation
import Testing
import TestSupport

private func findPK(_ txn: OpaquePointer, _ t: UInt32, _ v: Int64) -> (Int32, Int64) {
    var key: Int64 = -1
    var pk = cs_int(v)
    let rc = cs_table_find_primary(txn, t, &pk, &key)
    return (rc, key)
}

/// What column v holds for primary key k.
private func valueOf(_ k: Int64) -> Int64 { k ^ 0x5A5A }

/// A table `name` with an Int primary key `id` (so its keys are the primary keys) and an Int `v`.
private func addKeyedTable(_ txn: OpaquePointer, _ name: String) throws -> (table: UInt32, v: UInt32) {
    let t = try addTable(txn, name)
    let id = try addColumn(txn, t, "id", CS_TYPE_INT)
    let v = try addColumn(txn, t, "v", CS_TYPE_INT)
    try must(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
    return (t, v)
}

private func createKeyed(_ txn: OpaquePointer, _ t: UInt32, _ v: UInt32, _ k: Int64) throws {
    var o = cs_obj()
    var pk = cs_int(k)
    try must(cs_obj_create_primary(txn, t, &pk, &o), "cs_obj_create_primary(\(k))")
    try must(cs_obj_set_int(&o, v, valueOf(k)), "cs_obj_set_int")
}

/// Every key of `present` is found, opens the object holding it, and every probe not in it is not
/// found. Returns the number of wrong answers (and records the first few).
private func checkLookups(_ txn: OpaquePointer, _ t: UInt32, _ v: UInt32, present: Set<Int64>, probes: [Int64],
                          _ phase: String) throws -> Int {
    var wrong = 0
    func fail(_ s: String) {
        wrong += 1
        if wrong <= 5 { Issue.record("\(phase): \(s)") }
    }
    for k in present.sorted() {
        let (rc, key) = findPK(txn, t, k)
        guard rc == Int32(CS_OK) else { fail("pk \(k) not found (\(codeName(rc)))"); continue }
        guard key == k else { fail("pk \(k) found as object \(key)"); continue }
        var o = try openObj(txn, t, key)
        let got = try getInt(&o, v)
        if got != valueOf(k) { fail("pk \(k) opened an object holding \(got)") }
    }
    for k in probes where !present.contains(k) {
        let (rc, key) = findPK(txn, t, k)
        if rc != Int32(CS_NOTFOUND) { fail("absent pk \(k) gave \(codeName(rc)) (key \(key))") }
        var o = cs_obj()
        let orc = cs_obj_open(txn, t, k, &o)
        if orc != Int32(CS_NOTFOUND) { fail("cs_obj_open of absent key \(k) gave \(codeName(orc))") }
    }
    return wrong
}

/// The keys around each present key, the ends of the key range, and random values.
private func probesFor(_ keys: [Int64], _ rng: inout SeededRNG) -> [Int64] {
    let top = (Int64(1) << 61) - 1
    var p: [Int64] = [0, 1, top, top - 1, -1, Int64.min, Int64.max]
    for k in keys {
        if k > 0 { p.append(k - 1) }
        if k < top { p.append(k + 1) }
    }
    for _ in 0..<2000 { p.append(Int64.random(in: 0...top, using: &rng)) }
    if let lo = keys.min(), let hi = keys.max(), hi > lo {
        for _ in 0..<2000 { p.append(Int64.random(in: lo...hi, using: &rng)) }
    }
    return p
}

@Suite struct ClusterSearchTests {
    /// Key distributions, each inserted in the order given.
    private static func distributions(_ rng: inout SeededRNG) -> [(name: String, keys: [Int64])] {
        var out: [(String, [Int64])] = []
        // dense, in key order: three levels (70,000 / 256 leaves, more than 256 of them)
        out.append(("dense", (0..<70_000).map { Int64($0) }))
        // dense, scattered order: leaves split while filling, so they hold 128 to 256 keys
        out.append(("dense scattered", (0..<40_000).map { Int64(($0 * 7919) % 40_000) }))
        // dense from a large start: packed over a base
        out.append(("dense at 2^40", (0..<30_000).map { (Int64(1) << 40) + Int64($0) }))
        out.append(("every third", (0..<30_000).map { Int64($0) * 3 }))
        // random over the whole primary-key range: 64-bit elements, 128-bit interpolation
        var random = Set<Int64>()
        while random.count < 20_000 { random.insert(Int64.random(in: 0..<(Int64(1) << 61), using: &rng)) }
        out.append(("random over 2^61", Array(random)))
        // runs of 100 consecutive keys with jumps of 10^3 to 10^12 between them
        var runs: [Int64] = []
        var at: Int64 = 5
        for _ in 0..<300 {
            for j in 0..<100 { runs.append(at + Int64(j)) }
            at += 100 + Int64.random(in: 1_000...1_000_000_000_000, using: &rng)
        }
        out.append(("runs with jumps", runs))
        // the two ends of the range together
        let top = (Int64(1) << 61) - 1
        out.append(("both ends", (0..<5_000).map { Int64($0) } + (0..<5_000).map { top - Int64($0) }))
        // keys growing geometrically: every interpolation guess is far off
        var geo: [Int64] = []
        var g: Double = 1
        while g < Double(Int64(1) << 60) && geo.count < 3_000 {
            if geo.last != Int64(g) { geo.append(Int64(g)) }
            g *= 1.013
        }
        out.append(("geometric", geo))
        return out
    }

    /// Every distribution: found and not found exactly as the key set says, in the writing
    /// transaction (key lists as written) and after the commit (packed, with or without a base).
    @Test func lookupsMatchTheKeySetForEveryDistribution() throws {
        var rng = SeededRNG(seed: stableSeed("cluster search distributions"))
        try withTempDir { dir in
            let db = try DB(dir.path())
            for (i, d) in Self.distributions(&rng).enumerated() {
                let present = Set(d.keys)
                let probes = probesFor(d.keys, &rng)
                let (t, v) = try db.write { txn -> (UInt32, UInt32) in
                    let (t, v) = try addKeyedTable(txn, "T\(i)")
                    for k in d.keys { try createKeyed(txn, t, v, k) }
                    let wrong = try checkLookups(txn, t, v, present: present, probes: probes, "\(d.name), writing")
                    #expect(wrong == 0)
                    return (t, v)
                }
                try db.read { txn in
                    let wrong = try checkLookups(txn, t, v, present: present, probes: probes, "\(d.name), committed")
                    #expect(wrong == 0)
                }
            }
            db.verify()
        }
    }

    /// Deleted stretches (whole leaves' worth and single keys) leave gaps that the guesses land
    /// in: lookups agree with what is left, inside the deleting write and after it, for primary
    /// keys and for counter keys (cs_obj_open).
    @Test func deletedGapsAreNotFoundAndTheirNeighboursAre() throws {
        var rng = SeededRNG(seed: stableSeed("cluster search deleted gaps"))
        let n = 60_000
        func deleted(_ k: Int64, _ coin: UInt64) -> Bool { (k / 300) % 3 == 1 || coin % 5 == 0 }
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, v, c, cv) = try db.write { txn -> (UInt32, UInt32, UInt32, UInt32) in
                let (t, v) = try addKeyedTable(txn, "Keyed")
                let c = try addTable(txn, "Counter")
                let cv = try addColumn(txn, c, "v", CS_TYPE_INT)
                for k in 0..<Int64(n) {
                    try createKeyed(txn, t, v, k)
                    var o = try createObj(txn, c)
                    #expect(o.key == k)
                    try must(cs_obj_set_int(&o, cv, valueOf(k)))
                }
                return (t, v, c, cv)
            }
            var gone = Set<Int64>()
            for k in 0..<Int64(n) where deleted(k, rng.next()) { gone.insert(k) }
            let left = Set((0..<Int64(n)).filter { !gone.contains($0) })
            let probes = probesFor(Array(left), &rng) + Array(gone)
            func checkCounter(_ txn: OpaquePointer, _ phase: String) throws {
                var wrong = 0
                for k in Int64(-2)..<Int64(n + 300) {
                    var o = cs_obj()
                    let rc = cs_obj_open(txn, c, k, &o)
                    if left.contains(k) {
                        if rc != Int32(CS_OK) { wrong += 1; if wrong <= 5 { Issue.record("\(phase): key \(k) gave \(codeName(rc))") } }
                        else if try getInt(&o, cv) != valueOf(k) { wrong += 1; Issue.record("\(phase): key \(k) holds a wrong value") }
                    } else if rc != Int32(CS_NOTFOUND) {
                        wrong += 1
                        if wrong <= 5 { Issue.record("\(phase): deleted or absent key \(k) gave \(codeName(rc))") }
                    }
                }
                #expect(wrong == 0, "\(phase)")
            }
            try db.write { txn in
                for k in gone.sorted() {
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_delete(&o), "cs_obj_delete(\(k))")
                    var p = try openObj(txn, c, k)
                    try must(cs_obj_delete(&p), "cs_obj_delete(counter \(k))")
                }
                let wrong = try checkLookups(txn, t, v, present: left, probes: probes, "deleting write")
                #expect(wrong == 0)
                try checkCounter(txn, "deleting write")
            }
            try db.read { txn in
                let wrong = try checkLookups(txn, t, v, present: left, probes: probes, "committed")
                #expect(wrong == 0)
                try checkCounter(txn, "committed")
            }
            db.verify()
        }
    }

    /// A committed file of 70,000 dense primary keys (root, inner nodes, leaves) whose key lists
    /// are overwritten: the root's first keys, an inner node's, a leaf's keys with random bytes,
    /// and a leaf key list whose header claims more elements than fit. Every lookup answers
    /// (found with the key asked for, or not found) or is CS_CORRUPT; none crashes; and the
    /// damage shows in some lookup.
    @Test func damagedKeyListsGiveAnswersOrCorruptNeverACrash() throws {
        var rng = SeededRNG(seed: stableSeed("cluster search damage"))
        let n = 70_000
        try withTempDir { dir in
            let path = dir.path("orig.cstore")
            let table: UInt32 = try {
                let db = try DB(path)
                defer { db.close() }
                return try db.write { txn -> UInt32 in
                    let (t, v) = try addKeyedTable(txn, "T")
                    for k in 0..<Int64(n) { try createKeyed(txn, t, v, k) }
                    return t
                }
            }()
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let root = rawLE64(bytes, rawTableNode(bytes, table) + 8)
            // a node's refs start after its 8-byte header: slot 0 the key list, slot 1 child 0
            func slot(_ node: Int, _ i: Int) -> Int { rawLE64(bytes, node + 8 + 8 * i) }
            #expect(bytes[root + 2] & 0x01 != 0, "the root is an inner node")
            let inner = slot(root, 1)
            #expect(bytes[inner + 2] & 0x01 != 0, "the root's first child is an inner node")
            let leaf = slot(inner, 3)
            #expect(bytes[leaf + 2] & 0x01 == 0, "the inner node's children are leaves")
            func payloadBytes(_ node: Int) -> Int {
                let flags = bytes[node + 2], width = Int(bytes[node + 3])
                let count = (0..<4).reduce(0) { $0 | Int(bytes[node + 4 + $1]) << (8 * $1) }
                return (count * width + 7) / 8 + (flags & 0x20 != 0 ? 8 : 0)
            }
            var cases: [(String, [UInt8])] = []
            for (what, keys) in [("root first keys", slot(root, 0)), ("inner first keys", slot(inner, 0)),
                                 ("leaf keys", slot(leaf, 0))] {
                for round in 0..<3 {
                    var b = bytes
                    for i in 0..<payloadBytes(keys) { b[keys + 8 + i] = UInt8.random(in: 0...255, using: &rng) }
                    cases.append(("\(what), random bytes \(round)", b))
                }
            }
            var claim = bytes
            let leafKeys = slot(leaf, 0)
            for i in 0..<4 { claim[leafKeys + 4 + i] = 0xFF }
            cases.append(("leaf keys claiming 2^32 - 1 elements", claim))

            for (what, b) in cases {
                let copy = dir.path("copy.cstore")
                try? FileManager.default.removeItem(atPath: copy)
                try Data(b).write(to: URL(fileURLWithPath: copy))
                let (rc, h) = openRaw(copy, flags: CS_OPEN_READONLY)
                guard rc == Int32(CS_OK), let h else {
                    #expect(rc == Int32(CS_CORRUPT), "\(what): open gave \(codeName(rc))")
                    continue
                }
                var txn: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_READ), &txn))
                // cs_table_find_primary falls back on the unique index when the descent finds
                // nothing, so the descent's own answers are cs_obj_open's
                var opened: [String: Int] = [:]
                for k in stride(from: Int64(-1), to: Int64(n + 2), by: 1) {
                    let (frc, key) = findPK(txn!, table, k)
                    #expect(frc == Int32(CS_NOTFOUND) || frc == Int32(CS_CORRUPT) || (frc == Int32(CS_OK) && key == k),
                            "\(what): pk \(k) gave \(codeName(frc)) (key \(key))")
                    var o = cs_obj()
                    let orc = cs_obj_open(txn!, table, k, &o)
                    opened[codeName(orc), default: 0] += 1
                    #expect(orc == Int32(CS_OK) || orc == Int32(CS_NOTFOUND) || orc == Int32(CS_CORRUPT),
                            "\(what): cs_obj_open(\(k)) gave \(codeName(orc))")
                }
                #expect((opened[codeName(Int32(CS_OK))] ?? 0) < n, "\(what): the damage shows: \(opened)")
                print("cluster search, damaged \(what): cs_obj_open gave \(opened.sorted { $0.key < $1.key })")
                check(cs_txn_end(txn!))
                check(cs_db_close(h))
            }
        }
    }

    /// The leaf a descent predicts from its inner node's first children (cluster.c,
    /// predict_child) is only prefetched, so answers are exact whether the guess is right or not;
    /// and the guesses are made where they should be (cs_test_lookup_predictions, in builds with
    /// the core's assertions): after a load in key order (sibling leaves one size apart) nearly
    /// every descent below the root predicts the child it takes; after writes that copy
    /// scattered leaves elsewhere, among them the first children of some inner nodes, fewer do
    /// (the guesses point at freed places, or no stride is found); after a load in random order
    /// (leaves of uneven sizes) hardly any guess is made.
    @Test func predictedLeavesOnlyPrefetchAnswersAreExact() throws {
        var rng = SeededRNG(seed: stableSeed("cluster search predicted leaves"))
        let n: Int64 = 70_000
        var counts: [UInt64] = [0, 0, 0]
        let counting = cs_test_lookup_predictions(&counts)
        #expect(counting, "the prediction counts need a build with the core's assertions (docs/CONTRIBUTING.md)")
        /// Opens every key of 0..<count in `t` and returns the prediction counts of those lookups.
        func predictions(_ txn: OpaquePointer, _ t: UInt32, _ count: Int64) throws -> [UInt64] {
            _ = cs_test_lookup_predictions(&counts)
            for k in 0..<count { _ = try openObj(txn, t, k) }
            _ = cs_test_lookup_predictions(&counts)
            return counts
        }
        try withTempDir { dir in
            let db = try DB(dir.path())
            let (t, v, w) = try db.write { txn -> (UInt32, UInt32, UInt32) in
                let (t, v) = try addKeyedTable(txn, "T")
                let w = try addColumn(txn, t, "w", CS_TYPE_INT)
                for k in 0..<n { try createKeyed(txn, t, v, k) }
                return (t, v, w)
            }
            let present = Set(0..<n)
            let probes = probesFor(Array(0..<n), &rng)
            var rightInKeyOrder: UInt64 = 0
            try db.read { txn in
                let wrong = try checkLookups(txn, t, v, present: present, probes: probes, "loaded in key order")
                #expect(wrong == 0)
                let c = try predictions(txn, t, n)
                rightInKeyOrder = c[0]
                // one inner level below the root (274 leaves, three inner nodes): one count per
                // lookup. The first inner node's first leaf is the first half of the root leaf's
                // split, smaller than the others, so that node finds no stride; the others do, and
                // their guesses are right
                if counting {
                    #expect(c[0] * 3 >= UInt64(n) && c[0] * 10 >= (c[0] + c[1]) * 9,
                            "key order: predictions right, wrong, none: \(c)")
                }
            }
            // one row in every leaf whose index is a multiple of 5 or below 3 (leaves 0-2 are the
            // first children of the first inner node): each such leaf is copied elsewhere
            var written: [Int64: Int64] = [:]
            try db.write { txn in
                for leaf in stride(from: Int64(0), to: n / 256, by: 1) where leaf % 5 == 0 || leaf < 3 {
                    let k = leaf * 256 + Int64.random(in: 0..<256, using: &rng)
                    var o = try openObj(txn, t, k)
                    try must(cs_obj_set_int(&o, w, -k - 1), "cs_obj_set_int")
                    written[k] = -k - 1
                }
            }
            try db.read { txn in
                let wrong = try checkLookups(txn, t, v, present: present, probes: probes, "after leaves moved")
                #expect(wrong == 0)
                var wrongW = 0
                for k in stride(from: Int64(0), to: n, by: 1) {
                    var o = try openObj(txn, t, k)
                    if try getInt(&o, w) != (written[k] ?? 0) { wrongW += 1 }
                }
                #expect(wrongW == 0, "values of w read back wrong for \(wrongW) objects")
                let c = try predictions(txn, t, n)
                if counting { #expect(c[0] < rightInKeyOrder, "leaves moved: predictions right, wrong, none: \(c)") }
            }
            // 120k keys in random order: leaves of uneven sizes
            let m: Int64 = 120_000
            let (s, sv) = try db.write { txn -> (UInt32, UInt32) in
                let (s, sv) = try addKeyedTable(txn, "S")
                for i in 0..<m { try createKeyed(txn, s, sv, (i * 7919) % m) }
                return (s, sv)
            }
            try db.read { txn in
                let c = try predictions(txn, s, m)
                if counting { #expect((c[0] + c[1]) * 10 <= UInt64(m), "random order: predictions right, wrong, none: \(c)") }
                var wrong = 0
                for k in 0..<m {
                    var o = try openObj(txn, s, k)
                    if try getInt(&o, sv) != valueOf(k) { wrong += 1 }
                }
                #expect(wrong == 0)
            }
            db.verify()
        }
    }

    /// An inner node whose first six child refs are damaged into one stride (past the file's
    /// end, among the refs a write's own nodes take, or inside the file at the wrong places)
    /// makes the descent predict a leaf from them: every lookup still answers (found with the key
    /// asked for, or not found) or is CS_CORRUPT, none crashes, and the damage shows.
    @Test func damagedChildStridesGiveAnswersOrCorruptNeverACrash() throws {
        let n = 70_000
        try withTempDir { dir in
            let path = dir.path("orig.cstore")
            let table: UInt32 = try {
                let db = try DB(path)
                defer { db.close() }
                return try db.write { txn -> UInt32 in
                    let (t, v) = try addKeyedTable(txn, "T")
                    for k in 0..<Int64(n) { try createKeyed(txn, t, v, k) }
                    return t
                }
            }()
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let root = rawLE64(bytes, rawTableNode(bytes, table) + 8)
            func slot(_ node: Int, _ i: Int) -> Int { rawLE64(bytes, node + 8 + 8 * i) }
            let inner = slot(root, 2) // below the root, where leaves are predicted
            #expect(bytes[inner + 2] & 0x01 != 0, "the root's child is an inner node")
            #expect(bytes[slot(inner, 1) + 2] & 0x01 == 0, "its children are leaves")
            let child0 = UInt64(slot(inner, 1)), stride = UInt64(slot(inner, 2) - slot(inner, 1))
            #expect(stride > 0 && stride <= 65536, "the load in key order left its leaves one stride apart")
            var cases: [(String, [UInt8])] = []
            for (what, first, step) in [("past the end", UInt64(bytes.count + 4096), stride),
                                        ("in the write slabs' range", (UInt64(1) << 62) + 8, stride),
                                        ("inside, at the wrong places", child0, 64)] {
                var b = bytes
                for k in 0..<6 {
                    let ref = first &+ UInt64(k) &* step
                    for i in 0..<8 { b[inner + 8 + 8 * (1 + k) + i] = UInt8(truncatingIfNeeded: ref >> (8 * UInt64(i))) }
                }
                cases.append((what, b))
            }
            for (what, b) in cases {
                let copy = dir.path("copy.cstore")
                try? FileManager.default.removeItem(atPath: copy)
                try Data(b).write(to: URL(fileURLWithPath: copy))
                let (rc, h) = openRaw(copy, flags: CS_OPEN_READONLY)
                guard rc == Int32(CS_OK), let h else {
                    #expect(rc == Int32(CS_CORRUPT), "\(what): open gave \(codeName(rc))")
                    continue
                }
                var txn: OpaquePointer?
                try must(cs_txn_begin(h, Int32(CS_TXN_READ), &txn))
                var opened: [String: Int] = [:]
                for k in Int64(-1)..<Int64(n + 2) {
                    var o = cs_obj()
                    let orc = cs_obj_open(txn!, table, k, &o)
                    opened[codeName(orc), default: 0] += 1
                    #expect(orc == Int32(CS_OK) || orc == Int32(CS_NOTFOUND) || orc == Int32(CS_CORRUPT),
                            "\(what): cs_obj_open(\(k)) gave \(codeName(orc))")
                    if orc == Int32(CS_OK) { #expect(o.key == k, "\(what): cs_obj_open(\(k)) opened \(o.key)") }
                }
                #expect((opened[codeName(Int32(CS_OK))] ?? 0) < n, "\(what): the damage shows: \(opened)")
                check(cs_txn_end(txn!))
                check(cs_db_close(h))
            }
        }
    }
}
