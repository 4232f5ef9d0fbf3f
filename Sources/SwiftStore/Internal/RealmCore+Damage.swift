import CStore

extension RealmCore {
    /// The commit that opening the file passed over, if any (cs_db_rejected_commit).
    func discardedCommit() -> Realm.DiscardedCommit? {
        var version: UInt64 = 0
        var opened: UInt64 = 0
        var buffer = [CChar](repeating: 0, count: 256)
        guard cs_db_rejected_commit(db, &version, &opened, &buffer, buffer.count) else { return nil }
        let reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Realm.DiscardedCommit(version: version, openedVersion: opened, reason: reason)
    }

    /// True when walking every node of the newest version finds damage (cs_db_verify); the
    /// message is then the core's last one. Only for diagnosing a failure before a trap.
    func fileFailsVerification() -> Bool {
        cs_db_verify(db) == Int32(CS_CORRUPT)
    }
}
