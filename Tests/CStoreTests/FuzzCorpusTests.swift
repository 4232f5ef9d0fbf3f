// Replays the committed fuzz corpora (Tests/Fixtures/fuzz-corpus and, for the journal target
// open_journal, Tests/Fixtures/fuzz-journal-corpus, rebuilt by `make fuzz-corpus`) in-process:
// every file goes through the same read-everything walk as the libFuzzer targets in Fuzz/
// (Fuzz/fuzz_common.c, fuzz_read_all): cs_file_verify, then a read-only open that reads every
// table, object, column, collection element, map entry and backlink; a journal is first
// replayed, as fuzz_replay_all does, by a read-write open of the base database beside it. Any
// result code is a pass; the test exists so that a crash the fuzzer once found stays fixed
// under `make test`. Keep the walk in step with fuzz_read_all and fuzz_replay_all.

import CStore
import Foundation
import Testing

/// The committed corpus, found relative to this file.
private let corpusDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // CStoreTests
    .deletingLastPathComponent()  // Tests
    .appendingPathComponent("Fixtures/fuzz-corpus", isDirectory: true)

/// The committed journal corpus: base.cstore, the database every journal replays onto
/// (Fuzz/fuzz_common.c, fuzz_journal_base), and the journals, each as open_journal put it on
/// disk (Fuzz/select_journal_corpus.sh).
private let journalCorpusDirectory = corpusDirectory.deletingLastPathComponent()
    .appendingPathComponent("fuzz-journal-corpus", isDirectory: true)

/// What one walk saw.
private struct WalkStats {
    var verifyRC: Int32 = 0
    var openRC: Int32 = 0
    var firstError: Int32 = 0
    var tables = 0
    var objects = 0
    var values = 0
    var calls = 0
}

/// The read-everything walk of Fuzz/fuzz_common.c, with the same caps so a damaged file that
/// claims huge counts cannot turn it into a hang.
private struct CorpusWalk {
    static let maxTables: UInt32 = 256
    static let maxCols: UInt32 = 256
    static let maxObjects = 4096
    static let maxElements = 1024
    static let maxDepth = 8
    static let budget = 400_000

    var stats = WalkStats()
    var txn: OpaquePointer?
    var sink: UInt8 = 0
    let file: String

    init(file: String) { self.file = file }

    /// Spends one API call from the budget; false when the budget is gone.
    mutating func spend() -> Bool {
        if stats.calls >= Self.budget { return false }
        stats.calls += 1
        return true
    }

    @discardableResult
    mutating func note(_ rc: Int32) -> Int32 {
        if rc != Int32(CS_OK), rc != Int32(CS_NOTFOUND), stats.firstError == 0 { stats.firstError = rc }
        return rc
    }

    mutating func touch(_ p: UnsafeRawPointer?, _ n: Int) {
        guard let p, n > 0 else { return }
        var x: UInt8 = 0
        for i in 0..<n { x ^= p.load(fromByteOffset: i, as: UInt8.self) }
        sink ^= x
    }

    mutating func touch(_ s: UnsafePointer<CChar>?) {
        guard let s else { return }
        touch(UnsafeRawPointer(s), strlen(s))
    }

    mutating func touch(_ v: cs_value) {
        stats.values += 1
        let t = v.type.rawValue
        #expect(t <= CS_TYPE_DICT.rawValue, "\(file): a value with unknown type \(t)")
        #expect(t != CS_TYPE_BACKLINK.rawValue && t != CS_TYPE_MIXED.rawValue,
                "\(file): a value typed as a column-only type \(t)")
        if v.type == CS_TYPE_STRING || v.type == CS_TYPE_BINARY {
            let len = v.v.bytes.len
            #expect(len <= csMaxBlob, "\(file): a value longer than CS_MAX_BLOB")
            #expect(v.v.bytes.ptr != nil || len == 0, "\(file): a NULL pointer with a length")
            if len <= csMaxBlob { touch(v.v.bytes.ptr, len) }
        }
        if v.type == CS_TYPE_LINK, spend() {
            var target = cs_obj()
            if note(cs_obj_open(txn, v.v.link.table, v.v.link.key, &target)) == Int32(CS_OK), spend() {
                _ = cs_obj_exists(&target)
            }
        }
    }

    static func isNested(_ v: cs_value) -> Bool { v.type == CS_TYPE_LIST || v.type == CS_TYPE_DICT }

    mutating func walkCollection(_ c: inout cs_coll, depth: Int) {
        var n = 0
        guard spend(), note(cs_coll_size(&c, &n)) == Int32(CS_OK) else { return }
        let kind = cs_coll_kind_of(&c)
        #expect(kind == CS_COLL_LIST || kind == CS_COLL_SET || kind == CS_COLL_MAP,
                "\(file): an open collection of no kind")
        for i in 0..<min(n, Self.maxElements) {
            var v = cs_value()
            var sub = cs_coll()
            if kind == CS_COLL_MAP {
                var key = cs_value()
                guard spend(), note(cs_map_get_at(&c, i, &key, &v)) == Int32(CS_OK) else { continue }
                touch(key)
                touch(v)
                guard key.type == CS_TYPE_STRING else { continue }
                let len = key.v.bytes.len
                let empty: StaticString = ""
                let k = key.v.bytes.ptr.map { $0.assumingMemoryBound(to: CChar.self) }
                    ?? UnsafeRawPointer(empty.utf8Start).assumingMemoryBound(to: CChar.self)
                var again = cs_value()
                if spend(), note(cs_map_get(&c, k, len, &again)) == Int32(CS_OK) { touch(again) }
                if Self.isNested(v), depth < Self.maxDepth, spend(),
                   note(cs_coll_open_nested(&c, -1, k, len, &sub)) == Int32(CS_OK) {
                    walkCollection(&sub, depth: depth + 1)
                }
            } else {
                guard spend(), note(cs_list_get(&c, i, &v)) == Int32(CS_OK) else { continue }
                touch(v)
                var at = 0
                if kind == CS_COLL_SET, spend() { note(cs_set_find(&c, &v, &at)) }
                if Self.isNested(v), depth < Self.maxDepth, spend(),
                   note(cs_coll_open_nested(&c, Int64(i), nil, 0, &sub)) == Int32(CS_OK) {
                    walkCollection(&sub, depth: depth + 1)
                }
            }
        }
    }

    mutating func walkColumn(_ o: inout cs_obj, _ col: UInt32, _ ci: cs_column_info) {
        var c = cs_coll()
        if ci.type == CS_TYPE_BACKLINK {
            var n = 0
            guard spend(), note(cs_obj_backlink_count(&o, ci.target, ci.origin_col, &n)) == Int32(CS_OK) else { return }
            for i in 0..<min(n, Self.maxElements) {
                var key: Int64 = 0
                guard spend(), note(cs_obj_backlink_get(&o, ci.target, ci.origin_col, i, &key)) == Int32(CS_OK)
                else { break }
                stats.values += 1
            }
            return
        }
        if ci.coll != CS_COLL_NONE {
            if spend(), note(cs_coll_open(&o, col, &c)) == Int32(CS_OK) { walkCollection(&c, depth: 0) }
            return
        }
        var v = cs_value()
        guard spend(), note(cs_obj_get(&o, col, &v)) == Int32(CS_OK) else { return }
        touch(v)
        var isNull = false
        if spend() { note(cs_obj_is_null(&o, col, &isNull)) }
        if ci.type == CS_TYPE_INT, spend() {
            var i: Int64 = 0
            note(cs_obj_get_int(&o, col, &i))
        }
        if ci.type == CS_TYPE_MIXED, Self.isNested(v), spend(), note(cs_coll_open(&o, col, &c)) == Int32(CS_OK) {
            walkCollection(&c, depth: 1)
        }
    }

    mutating func walkTable(_ table: UInt32) {
        var ti = cs_table_info()
        guard spend(), note(cs_table_info_get(txn, table, &ti)) == Int32(CS_OK) else { return }
        stats.tables += 1
        touch(ti.name)
        var found: UInt32 = 0
        if let name = ti.name, spend() { note(cs_table_find(txn, name, &found)) }
        var count: UInt64 = 0
        if spend() { note(cs_table_count(txn, table, &count)) }

        var cols: [(UInt32, cs_column_info)] = []
        for c in 0..<min(ti.col_slots, Self.maxCols) {
            var ci = cs_column_info()
            guard spend(), note(cs_column_info_get(txn, table, c, &ci)) == Int32(CS_OK) else { continue }
            touch(ci.name)
            if let name = ci.name, spend() { note(cs_column_find(txn, table, name, &found)) }
            cols.append((c, ci))
        }

        var it = cs_iter()
        guard spend(), note(cs_iter_init(&it, txn, table)) == Int32(CS_OK) else { return }
        for _ in 0..<Self.maxObjects {
            var o = cs_obj()
            var again = cs_obj()
            guard spend(), note(cs_iter_next(&it, &o)) == Int32(CS_OK) else { return }
            stats.objects += 1
            if spend() { _ = cs_obj_exists(&o) }
            if spend() { note(cs_obj_open(txn, table, o.key, &again)) }
            for (c, ci) in cols { walkColumn(&o, c, ci) }
        }
    }

    /// Verifies the file, opens it read-only, reads everything, closes it.
    mutating func readAll(_ path: String) -> WalkStats {
        stats.verifyRC = cs_file_verify(path)
        touch(cs_errmsg())
        var opts = cs_options()
        opts.flags = UInt32(CS_OPEN_READONLY)
        var db: OpaquePointer?
        stats.openRC = cs_db_open(path, &opts, &db)
        touch(cs_errmsg())
        guard stats.openRC == Int32(CS_OK), let db else { return stats }
        _ = cs_db_version(db)
        var dbStats = cs_db_stats()
        note(cs_db_stats_get(db, &dbStats))
        if note(cs_txn_begin(db, Int32(CS_TXN_READ), &txn)) == Int32(CS_OK) {
            _ = cs_schema_version(txn)
            let slots = cs_table_slots(txn)
            for t in 0..<min(slots, Self.maxTables) { walkTable(t) }
            #expect(cs_txn_end(txn) == Int32(CS_OK), "\(file): cs_txn_end of a read transaction failed")
            txn = nil
        }
        #expect(cs_db_close(db) == Int32(CS_OK), "\(file): cs_db_close failed: \(lastMessage())")
        return stats
    }
}

/// Every regular file of the corpus, in name order.
private func corpusFiles() throws -> [URL] {
    try FileManager.default
        .contentsOfDirectory(at: corpusDirectory, includingPropertiesForKeys: [.isRegularFileKey])
        .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
        .sorted { $0.lastPathComponent < $1.lastPathComponent }
}

/// Copies `file` into `dir` (so the lock file lands there, not in the repository) and walks it.
private func replay(_ file: URL, in dir: TempDir) throws -> WalkStats {
    let path = dir.path("input.cstore")
    try Data(contentsOf: file).write(to: URL(fileURLWithPath: path))
    var walk = CorpusWalk(file: file.lastPathComponent)
    return walk.readAll(path)
}

/// Writes the journal corpus's base database to `dir` with the journal id of `journal` (its bytes
/// 24-31, docs/FORMAT.md §13) in its header (bytes 144-159, §2, with file_id_check), the journal
/// beside it, as fuzz_journal_files does; replays it with a read-write open (verified when it
/// opens), then walks the result. The read-write open's result is the stats' openRC when it
/// failed.
private func replayJournal(_ file: URL, base: [UInt8], in dir: TempDir) throws -> (WalkStats, recovered: UInt64) {
    let path = dir.path("input.cstore")
    let journal = [UInt8](try Data(contentsOf: file))
    var db = base
    if journal.count >= 32 {
        let id = journal[24..<32].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        if id != 0 && db.count >= 160 {
            var h = (id ^ 0x6A6F_7572_6E61_6C21) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 29
            for b in 0..<8 {
                db[144 + b] = UInt8(truncatingIfNeeded: id >> (8 * UInt64(b)))
                db[152 + b] = UInt8(truncatingIfNeeded: (h | 1) >> (8 * UInt64(b)))
            }
        }
    }
    try? FileManager.default.removeItem(atPath: path + ".lock")
    try Data(db).write(to: URL(fileURLWithPath: path))
    try Data(journal).write(to: URL(fileURLWithPath: path + ".journal"))
    var opts = cs_options()
    opts.durability = CS_DURABILITY_FULL
    var h: OpaquePointer?
    let rc = cs_db_open(path, &opts, &h)
    var recovered: UInt64 = 0
    if rc == Int32(CS_OK), let h {
        recovered = cs_db_recovered_commits(h)
        _ = cs_db_verify(h)
        #expect(cs_db_close(h) == Int32(CS_OK), "\(file.lastPathComponent): cs_db_close after a replay failed")
    }
    var walk = CorpusWalk(file: file.lastPathComponent)
    var s = walk.readAll(path)
    if rc != Int32(CS_OK) { s.openRC = rc }
    return (s, recovered)
}

@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    @Test("every journal of the journal corpus replays onto its base to an error or success, never a crash")
    func replayJournalCorpus() throws {
        let base = [UInt8](try Data(contentsOf: journalCorpusDirectory.appendingPathComponent("base.cstore")))
        let files = try FileManager.default
            .contentsOfDirectory(at: journalCorpusDirectory, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent != "base.cstore" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        #expect(files.count > 4, "no journals beside the seeds in \(journalCorpusDirectory.path)")
        var replayed = 0
        try withTempDir { dir in
            for file in files {
                _ = try replayJournal(file, base: base, in: dir)
                replayed += 1
            }
        }
        #expect(replayed == files.count)
    }

    @Test("the journal seeds replay every commit onto the base and read without an error")
    func journalSeedsReplayClean() throws {
        let base = [UInt8](try Data(contentsOf: journalCorpusDirectory.appendingPathComponent("base.cstore")))
        for (name, commits) in [("seed-journal-one-row", 24), ("seed-journal-few-rows", 8), ("seed-journal-large", 4),
                                ("seed-journal-one", 1)] as [(String, UInt64)] {
            try withTempDir { dir in
                let (s, recovered) = try replayJournal(journalCorpusDirectory.appendingPathComponent(name), base: base, in: dir)
                expectCode(s.openRC, CS_OK, "the replay of \(name)")
                #expect(recovered == commits, "\(name): \(recovered) of \(commits) commits replayed")
                expectCode(s.verifyRC, CS_OK, "cs_file_verify after \(name)")
                #expect(s.firstError == 0, "reading after \(name) failed with \(codeName(s.firstError))")
                #expect(s.objects > 0)
            }
        }
    }

    @Test("every corpus file verifies and reads to an error or success, never a crash")
    func replayCorpus() throws {
        let files = try corpusFiles()
        #expect(files.count > 0, "no files in \(corpusDirectory.path)")
        var replayed = 0
        var healthy = 0
        try withTempDir { dir in
            for file in files {
                let s = try replay(file, in: dir)
                replayed += 1
                if s.verifyRC == Int32(CS_OK) { healthy += 1 }
            }
        }
        #expect(replayed == files.count)
        #expect(replayed > 0)
        #expect(healthy > 0, "no corpus file verified clean")
    }

    @Test("a seed made through the API verifies CS_OK and reads without an error")
    func knownValidSeed() throws {
        let seed = corpusDirectory.appendingPathComponent("seed-links")
        try withTempDir { dir in
            let s = try replay(seed, in: dir)
            expectCode(s.verifyRC, CS_OK, "cs_file_verify(seed-links)")
            expectCode(s.openRC, CS_OK, "cs_db_open(seed-links)")
            #expect(s.firstError == 0, "reading seed-links failed with \(codeName(s.firstError))")
            #expect(s.tables == 3)
            #expect(s.objects > 0)
            #expect(s.values > 0)
        }
    }
}
