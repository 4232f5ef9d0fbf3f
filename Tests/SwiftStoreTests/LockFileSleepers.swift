import Foundation
import Testing

/// The number of threads the lock file of the database at `path` counts as asleep on its commit
/// counter (bytes 112-115, docs/FORMAT.md §9).
func sleepers(_ path: String) throws -> UInt32 {
    try #require(lockFileSleepers(path), "cannot read \(path).lock")
}

/// Waits (up to 30 s) until the lock file of the database at `path` counts `n` sleepers.
func waitForSleepers(_ path: String, _ n: UInt32) throws {
    let r = waitForLockFileSleepers(path, n)
    try #require(r.ok, "the lock file counts \(r.last.map { "\($0)" } ?? "no") sleepers, not \(n)")
}
