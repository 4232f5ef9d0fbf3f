import Foundation

extension Realm {
    /// A commit that was in the file but could not be used when the file was opened.
    ///
    /// A file keeps its newest two versions in two header slots. When the slot naming the
    /// newest commit is damaged, or that commit's bytes did not all reach the disk (a power
    /// cut in the middle of a commit), or the file was truncated, the file opens at the older,
    /// intact version, and that commit's changes are not in the Realm. Check
    /// ``Realm/discardedCommit`` after opening to learn about it:
    ///
    /// ```swift
    /// let realm = try Realm(configuration: config)
    /// if let lost = realm.discardedCommit {
    ///     log("opened at version \(lost.openedVersion); version \(lost.version) was lost: \(lost.reason)")
    /// }
    /// ```
    ///
    /// It is also reported when the file says its newest commits may be in its commit journal
    /// and the journal is missing (moved away, or the file copied without it after a crash):
    /// `version` is then the opened version + 1, and the reason names the journal.
    ///
    /// `swiftstore verify FILE` reports the same (exit status 1). The next write transaction
    /// replaces the discarded slot, after which the file no longer remembers it.
    public struct DiscardedCommit: Sendable, Equatable, CustomStringConvertible {
        /// The version the passed-over header slot claims (not to be trusted when the slot
        /// itself is damaged).
        public let version: UInt64
        /// The version the file opened at instead.
        public let openedVersion: UInt64
        /// Why the slot was not used, for example a hash mismatch of the commit's bytes.
        public let reason: String

        /// A one-line account: the versions and the reason.
        public var description: String {
            "version \(version) discarded, opened at version \(openedVersion): \(reason)"
        }
    }

    /// The commit that opening this Realm's file had to pass over because it was damaged, torn
    /// or truncated, or nil when the file opened at its newest commit. SwiftStore's own
    /// addition (RealmSwift has no counterpart); see ``DiscardedCommit``.
    public var discardedCommit: DiscardedCommit? { core.discardedCommit() }
}
