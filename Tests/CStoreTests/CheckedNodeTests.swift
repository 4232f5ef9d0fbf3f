// The checked-node set of a read transaction (node.h, node_at_seen; docs/ARCHITECTURE.md, The
// lookup's checked nodes): a lookup in a read transaction checks each node it meets once per
// snapshot, not on every visit. These tests damage nodes in the file (an unknown flag bit in a
// node's header, which only the node check sees) and check that the set never hides the damage
// where a check is due: a node that failed its check fails it on every visit; and whenever the
// transaction's snapshot moves (an advance after another handle's commit, a new transaction after
// another process's commit, a write and its commit in the same transaction, online shrinking that
// moves nodes and cuts the file) the nodes are checked again, so damage that is in the new
// snapshot shows, and the lookups give the new snapshot's values.

import CStore
import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

private func findPK(_ txn: OpaquePointer, _ t: UInt32, _ v: Int64) -> (Int32, Int64) {
    var key: Int64 = -1
    var pk = cs_int(v)
    let rc = cs_table_find_primary(txn, t, &pk, &key)
    return (rc, key)
}

/// What column v holds for primary key k, unless a test changed it.
private func valueOf(_ k: Int64) -> Int64 { k &* 7 &+ 3 }

/// A table `name` with an Int primary key `id` (its keys are the primary keys) and an Int `v`,
/// holding primary keys 0..<n.
private func addKeyed(_ txn: OpaquePointer, _ name: String, _ n: Int) throws -> (table: UInt32, v: UInt32) {
    let t = try addTable(txn, name)
    let id = try addColumn(txn, t, "id", CS_TYPE_INT)
    let v = try addColumn(txn, t, "v", CS_TYPE_INT)
    try must(cs_table_set_primary_key(txn, t, id), "cs_table_set_primary_key")
    for k in 0..<Int64(n) {
        var o = cs_obj()
        var pk = cs_int(k)
        try must(cs_obj_create_primary(txn, t, &pk, &o), "cs_obj_create_primary(\(k))")
        try must(cs_obj_set_int(&o, v, valueOf(k)), "cs_obj_set_int")
    }
    return (t, v)
}

/// Looks every primary key 0..<n up as the pk.get rows do (cs_table_find_primary, cs_obj_open,
/// cs_obj_get_int of v) and returns the keys for which a step gave CS_CORRUPT, in key order. Any
/// other failure, a wrong key or a value other than `want(k)` is an issue.
private func lookUpAll(_ txn: OpaquePointer, _ t: UInt32, _ v: UInt32, _ n: Int, _ phase: String,
                       want: (Int64) -> Int64 = valueOf) -> [Int64] {
    var corrupt: [Int64] = []
    var wrong = 0
    func fail(_ s: String) {
        wrong += 1
        if wrong <= 5 { Issue.record("\(phase): \(s)") }
    }
    for k in 0..<Int64(n) {
        let (rc, key) = findPK(txn, t, k)
        if rc == Int32(CS_CORRUPT) { corrupt.append(k); continue }
        guard rc == Int32(CS_OK), key == k else { fail("pk \(k) gave \(codeName(rc)) (key \(key))"); continue }
        var o = cs_obj()
        let orc = cs_obj_open(txn, t, key, &o)
        if orc == Int32(CS_CORRUPT) { corrupt.append(k); continue }
        guard orc == Int32(CS_OK) else { fail("cs_obj_open(\(k)) gave \(codeName(orc))"); continue }
        var x: Int64 = 0
        let grc = cs_obj_get_int(&o, v, &x)
        if grc == Int32(CS_CORRUPT) { corrupt.append(k); continue }
        guard grc == Int32(CS_OK), x == want(k) else { fail("pk \(k): v is \(x) (\(codeName(grc))), want \(want(k))"); continue }
    }
    return corrupt
}

/// Node refs in a file's bytes (docs/FORMAT.md §6): table `table`'s cluster root, and ref slot `i`
/// of the node at `node` (slot 0 a leaf's key list or an inner node's first keys; slot 1 + c
/// column c of a leaf or child c of an inner node).
private func rootOf(_ bytes: [UInt8], _ table: UInt32) -> Int { rawLE64(bytes, rawTableNode(bytes, table) + 8) }
private func slot(_ bytes: [UInt8], _ node: Int, _ i: Int) -> Int { rawLE64(bytes, node + 8 + 8 * i) }

/// Replaces byte `at` of the file at `path` with f(byte), behind the library's back (its
/// mapping shares the page cache, so an open handle sees the new byte).
private func patchByte(_ path: String, _ at: Int, _ f: (UInt8) -> UInt8) throws {
    let fd = open(path, O_RDWR)
    guard fd >= 0 else { throw CStoreError(code: -1, message: "cannot open for patching", context: path) }
    defer { close(fd) }
    var b: UInt8 = 0
    guard pread(fd, &b, 1, off_t(at)) == 1 else { throw CStoreError(code: -1, message: "pread", context: path) }
    var nb = f(b)
    guard pwrite(fd, &nb, 1, off_t(at)) == 1 else { throw CStoreError(code: -1, message: "pwrite", context: path) }
}

/// Writes the 8-byte little-endian `value` at byte `at` of the file at `path`.
private func patchWord(_ path: String, _ at: Int, _ value: Int) throws {
    for i in 0..<8 { try patchByte(path, at + i) { _ in UInt8((value >> (8 * i)) & 0xFF) } }
}

/// Damages the node at `node`: an unknown flag bit (0x40) in its header, which node_at_file
/// refuses and nothing else looks at.
private func damage(_ path: String, _ node: Int) throws { try patchByte(path, node + 2) { $0 | 0x40 } }

private func sizeOnDisk(_ path: String) -> Int {
    var st = stat()
    return stat(path, &st) == 0 ? Int(st.st_size) : 0
}

/// The keys that must fail when leaf `leafIndex` of the root is damaged: exactly one run of keys,
/// more than one key long, and not every key.
private func expectOneDamagedRun(_ corrupt: [Int64], _ n: Int, _ phase: String) {
    #expect(corrupt.count > 1 && corrupt.count < n, "\(phase): \(corrupt.count) lookups gave CS_CORRUPT")
    if let f = corrupt.first, let l = corrupt.last {
        #expect(l - f + 1 == Int64(corrupt.count), "\(phase): the damaged keys are one leaf's run: \(f)...\(l), \(corrupt.count)")
    }
}

@Suite struct CheckedNodeTests {
    let n = 2000 // a root and about eight leaves

    /// A damaged leaf, key list or column node, or a ref to one overwritten with all ones, fails
    /// its check on every visit: a ref enters the set only once its node passed, and no ref read
    /// from the file matches an empty slot, so the lookups that reach it give CS_CORRUPT the
    /// second time as the first, while the lookups around it, through the same cached root, find
    /// their objects.
    @Test func aDamagedNodeFailsItsCheckOnEveryVisit() throws {
        try withTempDir { dir in
            let path = dir.path("orig.cstore")
            var t: UInt32 = 0, v: UInt32 = 0
            do {
                let db = try DB(path)
                try db.write { txn in (t, v) = try addKeyed(txn, "K", n) }
                db.close()
            }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let root = rootOf(bytes, t)
            #expect(bytes[root + 2] & 0x01 != 0, "the root is an inner node")
            let leaf2 = slot(bytes, root, 3), leaf5 = slot(bytes, root, 6)
            #expect(bytes[leaf2 + 2] & 0x01 == 0, "the root's children are leaves")

            // a node's header damaged, or a ref to it overwritten with all ones (blank or erased
            // bytes): a ref no check passes, and the value an empty slot of the set holds
            let allOnes = -1
            // (the root's first keys damaged: every lookup fails, not one leaf's run)
            let damages: [(String, Bool, (String) throws -> Void)] = [
                ("a leaf", false, { try damage($0, leaf2) }),
                ("a leaf's column v", false, { try damage($0, slot(bytes, leaf5, 2)) }),
                ("a leaf's key list", false, { try damage($0, slot(bytes, leaf2, 0)) }),
                ("a child ref of all ones", false, { try patchWord($0, root + 8 + 8 * 3, allOnes) }),
                ("a key-list ref of all ones", false, { try patchWord($0, leaf2 + 8, allOnes) }),
                ("the root's first-keys ref of all ones", true, { try patchWord($0, root + 8, allOnes) }),
                // (a column slot of all ones is a tagged number, refused before any node is read)
                ("a column ref of all ones", false, { try patchWord($0, leaf5 + 8 + 8 * 2, allOnes) }),
            ]
            for (what, everyKey, damageCopy) in damages {
                let copy = dir.path("copy.cstore")
                try? FileManager.default.removeItem(atPath: copy)
                try Data(bytes).write(to: URL(fileURLWithPath: copy))
                try damageCopy(copy)
                let db = try DB(copy, flags: 0)
                try db.read { txn in
                    let first = lookUpAll(txn, t, v, n, "\(what), first pass")
                    if everyKey {
                        #expect(first.count == n, "\(what): \(first.count) lookups gave CS_CORRUPT, want all \(n)")
                    } else {
                        expectOneDamagedRun(first, n, "\(what), first pass")
                    }
                    let second = lookUpAll(txn, t, v, n, "\(what), second pass")
                    #expect(second == first, "\(what): the second pass fails where the first did")
                }
                db.close()
            }
        }
    }

    /// A reader that advances past another handle's commit checks its nodes again: damage that
    /// the new snapshot reaches shows, though the reader checked the same node, undamaged, in
    /// its old snapshot.
    @Test func aReaderThatAdvancesChecksItsNodesAgain() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var t: UInt32 = 0, v: UInt32 = 0, other: UInt32 = 0, w: UInt32 = 0
            try db.write { txn in
                (t, v) = try addKeyed(txn, "K", n)
                other = try addTable(txn, "Other")
                w = try addColumn(txn, other, "w", CS_TYPE_INT)
                _ = try createObj(txn, other)
            }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let leaf2 = slot(bytes, rootOf(bytes, t), 3)
            let reader = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(reader) }
            #expect(lookUpAll(reader, t, v, n, "before").isEmpty)

            // another handle changes another table: K's nodes stay where they are
            let second = try DB(path, flags: 0)
            try second.write { txn in
                var it = cs_iter()
                try must(cs_iter_init(&it, txn, other), "iter")
                var o = cs_obj()
                try must(cs_iter_next(&it, &o), "the Other object")
                try must(cs_obj_set_int(&o, w, 42), "set w")
            }
            second.close()
            try damage(path, leaf2)
            var changed = false
            try must(cs_txn_advance(reader, &changed), "advance")
            #expect(changed)
            expectOneDamagedRun(lookUpAll(reader, t, v, n, "after the advance"), n, "after the advance")
        }
    }

    /// A newer version can be exactly as long as the one before, in the same mapping (a commit
    /// placed in free space): then only the epoch tells the two snapshots apart, and a
    /// transaction begun on the newer one (the handle's ended transaction reused) checks its
    /// nodes again.
    @Test func aNewVersionOfTheSameLengthIsCheckedAgain() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var t: UInt32 = 0, v: UInt32 = 0, other: UInt32 = 0, w: UInt32 = 0, fill: UInt32 = 0
            try db.write { txn in
                (t, v) = try addKeyed(txn, "K", n)
                other = try addTable(txn, "Other")
                w = try addColumn(txn, other, "w", CS_TYPE_INT)
                _ = try createObj(txn, other)
            }
            try db.write { txn in
                fill = try addTable(txn, "Fill")
                let s = try addColumn(txn, fill, "s", CS_TYPE_STRING)
                for i in 0..<20_000 {
                    var o = try createObj(txn, fill)
                    try must(setVal(&o, s, .str(String(repeating: "f", count: 20 + i % 30))), "set s")
                }
            }
            try db.write { txn in try must(cs_table_clear(txn, fill), "clear Fill") }
            let second = try DB(path, flags: 0)
            defer { second.close() }
            func touchOther(_ x: Int64) throws {
                try second.write { txn in
                    var it = cs_iter()
                    try must(cs_iter_init(&it, txn, other), "iter")
                    var o = cs_obj()
                    try must(cs_iter_next(&it, &o), "the Other object")
                    try must(cs_obj_set_int(&o, w, x), "set w")
                }
            }
            // a few commits into the free space, so that the next one lands there too
            for x in 0..<4 { try touchOther(Int64(x)) }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let leaf2 = slot(bytes, rootOf(bytes, t), 3)

            try db.read { txn in #expect(lookUpAll(txn, t, v, n, "before").isEmpty) }
            let lengthBefore = try db.stats().logical_size
            let versionBefore = try db.stats().version
            try touchOther(100)
            let lengthAfter = try db.stats().logical_size
            #expect(try db.stats().version == versionBefore + 1)
            #expect(lengthAfter == lengthBefore, "the commit was placed in free space: the version's length is the same")
            try damage(path, leaf2)
            try db.read { txn in
                expectOneDamagedRun(lookUpAll(txn, t, v, n, "the new version"), n, "the new version")
            }
        }
    }

    /// A transaction begun after another process committed (the handle's ended transaction
    /// reused for it, on the new version) checks its nodes again.
    @Test func aNewTransactionAfterAnotherProcessCommitsChecksItsNodesAgain() throws {
        guard testChildPath != nil else {
            Issue.record("cstore-testchild is not built")
            return
        }
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.path("shared.cstore")
        let setup = try Child(["setup", path], in: dir)
        #expect(setup.wait(seconds: 60) && setup.process.terminationStatus == 0, "setup: \(setup.summary)")
        let db = try DB(path, flags: 0)
        var t: UInt32 = 0, v: UInt32 = 0
        try db.write { txn in (t, v) = try addKeyed(txn, "K", n) }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let leaf2 = slot(bytes, rootOf(bytes, t), 3)
        try db.read { txn in #expect(lookUpAll(txn, t, v, n, "before").isEmpty) }

        let child = try Child(["increment", path, "1", "3"], in: dir)
        #expect(child.wait(seconds: 60) && child.process.terminationStatus == 0, "increment: \(child.summary)")
        try damage(path, leaf2)
        try db.read { txn in
            expectOneDamagedRun(lookUpAll(txn, t, v, n, "a new transaction"), n, "a new transaction")
        }
    }

    /// A read transaction promoted to write: the lookups inside the write see its own writes (no
    /// set while writing: its nodes change), and after its commit it reads the new version with
    /// its nodes checked again.
    @Test func aWriteAndItsCommitInTheSameTransaction() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var t: UInt32 = 0, v: UInt32 = 0
            try db.write { txn in (t, v) = try addKeyed(txn, "K", n) }
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let leaf2 = slot(bytes, rootOf(bytes, t), 3)
            let txn = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(txn) }
            #expect(lookUpAll(txn, t, v, n, "before").isEmpty)

            try must(cs_txn_promote(txn), "promote")
            var o = try openObj(txn, t, 0)
            try must(cs_obj_set_int(&o, v, -1), "set v of pk 0")
            var last = cs_obj()
            var pk = cs_int(Int64(n))
            try must(cs_obj_create_primary(txn, t, &pk, &last), "create pk n")
            try must(cs_obj_set_int(&last, v, valueOf(Int64(n))), "set v of pk n")
            let changed: (Int64) -> Int64 = { $0 == 0 ? -1 : valueOf($0) }
            #expect(lookUpAll(txn, t, v, n + 1, "inside the write", want: changed).isEmpty)
            // the write copied the leaves of pk 0 and pk n, not leaf 2, which the new version
            // shares with the one read before: damaged now, every visit inside the write sees it
            try damage(path, leaf2)
            expectOneDamagedRun(lookUpAll(txn, t, v, n + 1, "inside the write, damaged", want: changed), n + 1,
                                "inside the write, damaged")
            try must(cs_txn_commit(txn), "commit")
            expectOneDamagedRun(lookUpAll(txn, t, v, n + 1, "after the commit", want: changed), n + 1, "after the commit")
        }
    }

    /// Online shrinking moves a table's nodes out of the file's tail and cuts the file: a reader
    /// that checked the old nodes and advances finds every object at its new place, and a ref to
    /// where an old node was (past the cut) is refused, not read.
    @Test func lookupsAfterOnlineShrinkingMovedTheNodes() throws {
        try withTempDir { dir in
            let path = dir.path()
            let db = try DB(path)
            var t: UInt32 = 0, v: UInt32 = 0, fill: UInt32 = 0, tick: UInt32 = 0
            try db.write { txn in
                tick = try addTable(txn, "Tick")
                _ = try addColumn(txn, tick, "n", CS_TYPE_INT)
                _ = try createObj(txn, tick)
                fill = try addTable(txn, "Fill")
                let s = try addColumn(txn, fill, "s", CS_TYPE_STRING)
                for i in 0..<20_000 {
                    var o = try createObj(txn, fill)
                    try must(setVal(&o, s, .str(String(repeating: "f", count: 100 + i % 50))), "set s")
                }
            }
            // live bytes after the hole, more than a shrinking commit's window (128 KiB), so the
            // window's nodes have the hole below them to move into
            try db.write { txn in
                let keep = try addTable(txn, "Keep")
                let s = try addColumn(txn, keep, "s", CS_TYPE_STRING)
                for i in 0..<3000 {
                    var o = try createObj(txn, keep)
                    try must(setVal(&o, s, .str(String(repeating: "k", count: 100 + i % 50))), "set s")
                }
            }
            try db.write { txn in (t, v) = try addKeyed(txn, "K", n) }
            let before = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let oldLeaf2 = slot(before, rootOf(before, t), 3)
            // a reader checks K's nodes and ends: the handle keeps its transaction struct (and
            // the set in it) for its next transaction
            try db.read { txn in #expect(lookUpAll(txn, t, v, n, "before").isEmpty) }

            // the table before K goes; a shrinking handle's commits move K into the hole
            let shrinker = try DB(path, flags: CS_OPEN_SHRINK)
            try shrinker.write { txn in try must(cs_table_clear(txn, fill), "clear Fill") }
            var commits = 0
            while sizeOnDisk(path) > oldLeaf2 && commits < 400 {
                try shrinker.write { txn in
                    var it = cs_iter()
                    try must(cs_iter_init(&it, txn, tick), "iter")
                    var o = cs_obj()
                    try must(cs_iter_next(&it, &o), "the Tick object")
                    try must(cs_obj_set_int(&o, 0, Int64(commits)), "set n")
                }
                commits += 1
            }
            #expect(sizeOnDisk(path) <= oldLeaf2, "the file was cut below K's old leaf after \(commits) commits: \(sizeOnDisk(path)) bytes")
            shrinker.close()
            let reader = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(reader) }
            #expect(lookUpAll(reader, t, v, n, "after shrinking").isEmpty)

            let after = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let root = rootOf(after, t)
            #expect(slot(after, root, 3) != oldLeaf2, "leaf 2 moved")
            // a damaged root sends the descent to where leaf 2 was, past the file's end now
            try patchWord(path, root + 8 + 8 * 3, oldLeaf2)
            let later = try db.begin(CS_TXN_READ)
            defer { _ = cs_txn_end(later) }
            expectOneDamagedRun(lookUpAll(reader, t, v, n, "a ref past the cut"), n, "a ref past the cut")
            expectOneDamagedRun(lookUpAll(later, t, v, n, "a ref past the cut, new transaction"), n,
                                "a ref past the cut, new transaction")
        }
    }
}
