// The free list's delta chain (docs/FORMAT.md §7.1.1, format version 6): a commit writes one
// delta node of the extents it removed and added instead of rewriting free-list chunks, chained to
// the previous commits' nodes; a commit folds the chain into the chunks once it is long; every
// reader of the free list (the writer of a version it did not write, verify, info) replays it.

import CStore
import Foundation
import Testing

/// The delta chain of the current version of a database file's bytes (docs/FORMAT.md §2, §4,
/// §7.1.1): the header slot the selector names gives the top, the top's slot 3 the newest delta
/// node. Returns the chain's nodes, newest first, each with its offset and elements 0-4.
struct RawDelta: Equatable {
    var ref: Int, prev: Int, nodes: Int, entries: Int, removed: Int, added: Int
}

func rawDeltaChain(_ bytes: [UInt8]) -> [RawDelta] {
    let top = rawLE64(bytes, 16 + 64 * Int(bytes[12]))
    var at = rawLE64(bytes, top + 8 + 8 * 3)
    var out: [RawDelta] = []
    while at != 0 && out.count < 100_000 {
        func el(_ i: Int) -> Int { rawLE64(bytes, at + 8 + 8 * i) }
        let d = RawDelta(ref: at, prev: el(0), nodes: el(1), entries: el(2), removed: el(3), added: el(4))
        out.append(d)
        at = d.prev
    }
    return out
}

/// The top's slot 2 (the checkpoint's root) of the current version.
func rawFreeRoot(_ bytes: [UInt8]) -> Int {
    let top = rawLE64(bytes, 16 + 64 * Int(bytes[12]))
    return rawLE64(bytes, top + 8 + 8 * 2)
}

private func fileBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// A file of `rows` objects of one Int column, loaded in one commit.
private func loadInts(_ db: DB, rows: Int) throws {
    try db.write { txn throws in
        let t = try addTable(txn, "T")
        let c = try addColumn(txn, t, "v", CS_TYPE_INT)
        for i in 0..<rows {
            var o = try createObj(txn, t)
            try must(cs_obj_set_int(&o, c, Int64(i)), "set")
        }
    }
}

/// One commit setting one value of a pseudo-random row (u-th update).
private func updateOne(_ db: DB, _ u: Int, rows: Int) throws {
    try db.write { txn throws in
        let t = try findTable(txn, "T")
        var o = try openObj(txn, t, Int64((u * 7919) % rows))
        try must(cs_obj_set_int(&o, 0, Int64(-u - 1)), "update")
    }
}

/// The checkpoint's chunks in order, each as its lower bound and its extents (position, length;
/// padding left out), read from the raw bytes (FORMAT.md §7.1).
private func rawChunks(_ bytes: [UInt8]) -> [(bound: Int, extents: [(Int, Int)])] {
    func count(_ node: Int) -> Int { Int(bytes[node + 4]) | Int(bytes[node + 5]) << 8 | Int(bytes[node + 6]) << 16 | Int(bytes[node + 7]) << 24 }
    func el(_ node: Int, _ i: Int) -> Int { rawLE64(bytes, node + 8 + 8 * i) }
    var out: [(bound: Int, extents: [(Int, Int)])] = []
    let root = rawFreeRoot(bytes)
    guard root != 0 else { return out }
    for p in 0..<count(root) / 2 {
        let page = el(root, 2 * p + 1)
        for c in 0..<count(page) / 2 {
            let bound = el(page, 2 * c) >> 1, chunk = el(page, 2 * c + 1)
            var extents: [(Int, Int)] = []
            for k in 0..<count(chunk) / 3 where el(chunk, 3 * k + 1) != 0 {
                extents.append((el(chunk, 3 * k), el(chunk, 3 * k + 1)))
            }
            out.append((bound, extents))
        }
    }
    return out
}

@Suite struct DeltaChainTests {
    /// Each small commit adds one node to the chain (its element 1 counts the nodes, element 2
    /// the entries, element 0 names the previous head) and keeps the checkpoint's root; once the
    /// chain holds more than 4,096 entries or 512 nodes (the writer's thresholds; 4,096 is more
    /// than a quarter of this small list's extents) a commit folds it: slot 3 becomes 0 and slot 2
    /// names a new root.
    @Test func smallCommitsChainDeltaNodesAndFoldPastTheThreshold() throws {
        try withTempDir { dir in
            let path = dir.path("chain.cstore")
            let db = try DB(path)
            try loadInts(db, rows: 3000)
            var prev = rawDeltaChain(try fileBytes(path))
            var prevRoot = rawFreeRoot(try fileBytes(path))
            var folds = 0, deltas = 0
            for u in 0..<1400 {
                try updateOne(db, u, rows: 3000)
                let bytes = try fileBytes(path)
                let chain = rawDeltaChain(bytes)
                let root = rawFreeRoot(bytes)
                if chain.isEmpty {
                    folds += 1
                    let last = prev.first
                    #expect(last != nil, "commit \(u): a fold follows a chain")
                    if let last {
                        #expect(last.entries > 4096 || last.nodes >= 512, "commit \(u) folded a chain of \(last.nodes) nodes, \(last.entries) entries")
                    }
                    #expect(root != prevRoot && root != 0, "commit \(u): the fold writes a new root")
                } else {
                    deltas += 1
                    let head = chain[0]
                    #expect(head.nodes == (prev.first?.nodes ?? 0) + 1, "commit \(u): one more node")
                    #expect(head.prev == (prev.first?.ref ?? 0), "commit \(u): chained to the previous head")
                    #expect(head.entries == (prev.first?.entries ?? 0) + head.removed + head.added)
                    #expect(chain.count == head.nodes, "commit \(u): the chain has the nodes it counts")
                    #expect(root == prevRoot, "commit \(u): a delta commit keeps the checkpoint's root")
                    #expect(head.removed + head.added > 0, "commit \(u): the commit changed the free list")
                }
                prev = chain
                prevRoot = root
                if u % 50 == 0 { db.verify("after commit \(u)") }
            }
            #expect(folds >= 2 && deltas > 1200, "\(folds) folds, \(deltas) delta commits")
            db.verify("at the end")
            db.close()
            check(cs_file_verify(path), "cs_file_verify after the chain")
        }
    }

    /// A delta commit writes one node of a few hundred bytes for the free list, where a one-row
    /// commit rewrote up to a few chunks of up to 256 extents (6 KiB each) before.
    @Test func aDeltaCommitWritesFewBytes() throws {
        try withTempDir { dir in
            let path = dir.path("bytes.cstore")
            let db = try DB(path)
            try loadInts(db, rows: 20000)
            var total: UInt64 = 0, n: UInt64 = 0
            for u in 0..<400 {
                let txn = try db.begin(CS_TXN_WRITE)
                let t = try findTable(txn, "T")
                var o = try openObj(txn, t, Int64((u * 7919) % 20000))
                try must(cs_obj_set_int(&o, 0, Int64(u % 2 == 0 ? -1 : -2)), "update")
                try must(cs_txn_commit(txn), "commit")
                let bytes = try fileBytes(path)
                let chain = rawDeltaChain(bytes)
                if u >= 200, let head = chain.first {
                    // the delta node: 8 bytes of header, 5 fixed words, the pairs and triples
                    let size = 8 + 8 * (5 + 2 * head.removed + 3 * head.added)
                    #expect(size < 4096, "commit \(u): a delta node of \(size) bytes")
                    total += UInt64(size)
                    n += 1
                }
                check(cs_txn_end(txn))
            }
            #expect(n > 150, "delta commits measured: \(n)")
            #expect(total / n < 640, "delta nodes of \(total / n) bytes on average")
            db.verify()
            db.close()
        }
    }

    /// Closing and opening again reads the checkpoint and replays the chain: the reopened file
    /// verifies (every byte in exactly one node or free extent), reports the same free space,
    /// takes more delta commits on top of the replayed list and folds them.
    @Test func reopeningReplaysTheChain() throws {
        try withTempDir { dir in
            let path = dir.path("replay.cstore")
            let db = try DB(path)
            try loadInts(db, rows: 3000)
            for u in 0..<60 { try updateOne(db, u, rows: 3000) }
            let chain = rawDeltaChain(try fileBytes(path))
            #expect(chain.count >= 10, "a chain to replay: \(chain.count) nodes")
            let before = try db.stats()
            db.close()
            check(cs_file_verify(path), "cs_file_verify replays the chain")
            try db.reopen()
            let after = try db.stats()
            #expect(after.free_bytes == before.free_bytes && after.free_extents == before.free_extents)
            db.verify("reopened")
            var sawFold = false
            for u in 60..<1200 {
                try updateOne(db, u, rows: 3000)
                if rawDeltaChain(try fileBytes(path)).isEmpty { sawFold = true }
                if u % 100 == 0 {
                    // every so often from scratch again: the next commit's writer loads the list
                    try db.reopen()
                    db.verify("reopened at \(u)")
                }
            }
            #expect(sawFold, "the replayed chain was folded")
            db.verify("after the commits on the replayed list")
            db.close()
            check(cs_file_verify(path), "cs_file_verify at the end")
        }
    }

    /// A damaged delta node (one that the newest commit's one-sync hash does not cover, so the
    /// version opens) is rejected with CS_CORRUPT naming it, by verify and by the next commit,
    /// which must load the free list; a damaged removal likewise.
    @Test func aDamagedDeltaNodeIsRejected() throws {
        try withTempDir { dir in
            let path = dir.path("damaged.cstore")
            do {
                let db = try DB(path)
                try loadInts(db, rows: 3000)
                for u in 0..<20 { try updateOne(db, u, rows: 3000) }
                db.close()
            }
            let pristine = try fileBytes(path)
            let chain = rawDeltaChain(pristine)
            #expect(chain.count >= 3)
            let victim = chain[1] // written by the commit before the newest one
            func put64(_ b: inout [UInt8], _ at: Int, _ v: Int) {
                for k in 0..<8 { b[at + k] = UInt8((v >> (8 * k)) & 0xff) }
            }
            func expectRejected(_ bytes: [UInt8], _ what: String, _ message: String) throws {
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                let vrc = cs_file_verify(path)
                #expect(vrc == Int32(CS_CORRUPT), "\(what): verify returned \(codeName(vrc))")
                #expect(lastMessage().contains("delta node at \(victim.ref)"), "\(what): verify says \(lastMessage())")
                let db = try DB(path, flags: 0)
                let txn = try db.begin(CS_TXN_WRITE)
                let t = try findTable(txn, "T")
                var o = try openObj(txn, t, 1)
                try must(cs_obj_set_int(&o, 0, 12345), "update")
                let rc = cs_txn_commit(txn)
                #expect(rc == Int32(CS_CORRUPT), "\(what): the commit returned \(codeName(rc))")
                #expect(lastMessage().contains("free list delta node at \(victim.ref)") && lastMessage().contains(message),
                        "\(what): the commit says \(lastMessage())")
                _ = cs_txn_end(txn)
                db.close()
            }
            // its node count no longer continues the chain
            var b = pristine
            put64(&b, victim.ref + 8 + 8, victim.nodes + 5)
            try expectRejected(b, "a wrong node count", "chain")
            // a removal of an extent the list does not hold
            if victim.removed > 0 {
                b = pristine
                let lenAt = victim.ref + 8 + 8 * 5 + 8
                put64(&b, lenAt, rawLE64(pristine, lenAt) + 8)
                try expectRejected(b, "a removal of the wrong length", "not a free extent")
            }
            // an addition overlapping the header
            if victim.added > 0 {
                b = pristine
                put64(&b, victim.ref + 8 + 8 * (5 + 2 * victim.removed), 8)
                try expectRejected(b, "an addition inside the header", "invalid extent")
            }
            // the pristine bytes still verify and commit
            try Data(pristine).write(to: URL(fileURLWithPath: path))
            check(cs_file_verify(path), "the undamaged file verifies")
            let db = try DB(path, flags: 0)
            try updateOne(db, 99, rows: 3000)
            db.verify()
            db.close()
        }
    }

    /// An addition is checked against the whole list, not only its own chunk's extents: one that
    /// lies after its chunk's last extent but reaches into the next chunk's first is damage
    /// (CS_CORRUPT), and the writer commits nothing on it.
    @Test func anAdditionReachingIntoTheNextChunkIsRejected() throws {
        try withTempDir { dir in
            let path = dir.path("overlap.cstore")
            let rows = 20000
            do {
                let db = try DB(path)
                try loadInts(db, rows: rows)
                // until a fold has left a checkpoint of several chunks and a chain holds additions
                for u in 0..<4000 {
                    let bytes = try fileBytes(path)
                    if rawChunks(bytes).count >= 3 && (rawDeltaChain(bytes).first?.added ?? 0) > 0 { break }
                    try updateOne(db, u, rows: rows)
                }
                db.close()
            }
            let pristine = try fileBytes(path)
            let chunks = rawChunks(pristine)
            let chain = rawDeltaChain(pristine)
            try #require(chunks.count >= 3 && !chain.isEmpty && chain[0].added > 0)
            // the list as the reader sees it once the chain is replayed (oldest node first),
            // less the head's first addition, which the damage replaces
            let head = chain[0]
            let firstAdd = head.ref + 8 + 8 * (5 + 2 * head.removed)
            var free = Set<[Int]>()
            for c in chunks { for e in c.extents { free.insert([e.0, e.1]) } }
            for d in chain.reversed() {
                for k in 0..<d.removed {
                    let at = d.ref + 8 + 8 * (5 + 2 * k)
                    if rawLE64(pristine, at + 8) != 0 { free.remove([rawLE64(pristine, at), rawLE64(pristine, at + 8)]) }
                }
                for k in 0..<d.added {
                    let at = d.ref + 8 + 8 * (5 + 2 * d.removed + 3 * k)
                    if at != firstAdd && rawLE64(pristine, at + 8) != 0 { free.insert([rawLE64(pristine, at), rawLE64(pristine, at + 8)]) }
                }
            }
            // a boundary whose chunk before it ends with room below the bound, and whose chunk
            // after it holds an extent
            var damage: (Int, Int)?
            for j in 1..<chunks.count {
                let bound = chunks[j].bound, next = j + 1 < chunks.count ? chunks[j + 1].bound : Int.max
                let before = free.filter { $0[0] < bound }.map { $0[0] + $0[1] }.max() ?? 4096
                guard let after = free.filter({ $0[0] >= bound && $0[0] < next }).map({ $0[0] }).min(),
                      before <= bound - 8 else { continue }
                damage = (bound - 8, after - (bound - 8) + 8) // from just below the bound into the next chunk's first
                break
            }
            let (pos, len) = try #require(damage)
            var b = pristine
            for (at, v) in [(firstAdd, pos), (firstAdd + 8, len)] {
                for k in 0..<8 { b[at + k] = UInt8((v >> (8 * k)) & 0xff) }
            }
            try Data(b).write(to: URL(fileURLWithPath: path))
            #expect(cs_file_verify(path) == Int32(CS_CORRUPT), "verify: \(lastMessage())")
            let db = try DB(path, flags: 0)
            let txn = try db.begin(CS_TXN_WRITE)
            var o = try openObj(txn, try findTable(txn, "T"), 1)
            try must(cs_obj_set_int(&o, 0, 12345), "update")
            let rc = cs_txn_commit(txn)
            #expect(rc == Int32(CS_CORRUPT), "the commit returned \(codeName(rc))")
            #expect(lastMessage().contains("overlaps a free extent"), "the commit says \(lastMessage())")
            _ = cs_txn_end(txn)
            db.close()
            #expect(try fileBytes(path) == b, "nothing was written")
        }
    }

    /// A file read by an older version pinned by a reader keeps its chain readable: a reader on
    /// version V reads V's chain while the writer folds later ones, and backdating reads the
    /// pinned version's list (checkpoint plus chain).
    @Test func aPinnedReaderKeepsItsChain() throws {
        try withTempDir { dir in
            let path = dir.path("pinned.cstore")
            let db = try DB(path)
            try loadInts(db, rows: 3000)
            for u in 0..<30 { try updateOne(db, u, rows: 3000) }
            let reader = try DB(path, flags: 0)
            let r = try reader.begin(CS_TXN_READ)
            let t = try findTable(r, "T")
            var o = try openObj(r, t, 0)
            let seen = try getInt(&o, 0)
            var sawFold = false
            for u in 30..<1200 {
                try updateOne(db, u, rows: 3000)
                if rawDeltaChain(try fileBytes(path)).isEmpty { sawFold = true }
            }
            #expect(sawFold)
            var o2 = try openObj(r, t, 0)
            #expect(try getInt(&o2, 0) == seen, "the pinned version reads as it was")
            check(cs_txn_end(r))
            reader.close()
            for u in 1200..<1220 { try updateOne(db, u, rows: 3000) }
            db.verify()
            db.close()
            check(cs_file_verify(path))
        }
    }
}
