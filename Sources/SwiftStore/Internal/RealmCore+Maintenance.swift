import CStore
import Foundation

// The storage core's maintenance calls for the Swift layer: compacted copies
// (`cs_txn_write_copy`), compaction on launch (`cs_db_stats_get`, `cs_db_compact`) and seed
// files. docs/ARCHITECTURE.md, Compaction, copies and backups.

extension RealmCore {
    /// Runs before the first open of a file in this process: copies `seedFilePath` when there
    /// is no file yet, then asks `shouldCompactOnLaunch` and compacts when it says so. A
    /// compaction refused because another process (or handle) has the file is skipped.
    static func prepareFirstOpen(_ config: Realm.Configuration, url: URL?) throws {
        let path = config.path
        if isOpen(path) { return }
        let fm = FileManager.default
        if let seed = config.seedFilePath, config.inMemoryIdentifier == nil, !fm.fileExists(atPath: path) {
            do {
                try fm.copyItem(at: seed, to: URL(fileURLWithPath: path))
            } catch {
                throw Realm.Error(.fileOperationFailed, "Cannot copy the seed file '\(seed.path)' to '\(path)': "
                                  + error.localizedDescription, fileURL: url)
            }
        }
        guard let shouldCompact = config.shouldCompactOnLaunch else { return }
        if config.readOnly || config.inMemoryIdentifier != nil {
            throw Realm.Error(.invalidInput, "shouldCompactOnLaunch needs a writable file (not readOnly, not in memory)",
                              fileURL: url)
        }
        guard fm.fileExists(atPath: path) else { return }
        var opts = cs_options()
        var db: OpaquePointer?
        try CoreCall.check(cs_db_open(path, &opts, &db), "Opening \(path)", url: url)
        var st = cs_db_stats()
        let rc = cs_db_stats_get(db, &st)
        let error = rc == 0 ? nil : CoreCall.error(rc, "Reading \(path)", url: url)
        cs_db_close(db)
        if let error { throw error }
        // the header counts as used: a compacted file is exactly header + reachable nodes
        let used = Int(st.used_bytes) + 4096
        guard shouldCompact(Int(st.file_size), used) else { return }
        let category = Category.Storage.all.rawValue
        CoreLog.log(.info, category, "Compacting '\(path)': file size \(st.file_size) bytes, \(used) bytes in use")
        let crc = cs_db_compact(path, &opts, nil, nil, nil)
        if crc == Int32(CS_BUSY) {
            CoreLog.log(.detail, category, "Compaction of '\(path)' skipped: the file is open elsewhere")
            return
        }
        try CoreCall.check(crc, "Compacting \(path)", url: url)
        let size = (try? fm.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        CoreLog.log(.info, category, "Compacted '\(path)' from \(st.file_size) to \(size.map(String.init) ?? "?") bytes")
    }

    /// Writes a compacted copy of the version this instance reads to a new file at `path`.
    func writeCopy(toPath path: String) throws {
        let dest = URL(fileURLWithPath: path)
        if isInWriteTransaction {
            throw Realm.Error(.fail, "Cannot write a copy of a Realm inside a write transaction", fileURL: dest)
        }
        let rc = cs_txn_write_copy(txn, path, nil, nil)
        if rc == Int32(CS_EXISTS) {
            throw Realm.Error(.fileExists, "File at path '\(path)' already exists.", fileURL: dest,
                              errno: EEXIST)
        }
        try CoreCall.check(rc, "Writing a copy to \(path)", url: dest)
    }
}
