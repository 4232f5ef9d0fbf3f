// The lock file's count of threads asleep on a database's commit counter (bytes 112-115,
// docs/FORMAT.md §9), which tests and their child processes wait on before a commit that must
// find a notifier asleep.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The number of threads the lock file of the database at `dbPath` counts asleep, or nil when
/// the lock file cannot be read.
public func lockFileSleepers(_ dbPath: String) -> UInt32? {
    let fd = open(dbPath + ".lock", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var b = [UInt8](repeating: 0, count: 4)
    guard pread(fd, &b, 4, 112) == 4 else { return nil }
    return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
}

/// Waits (up to `seconds`) until the lock file of the database at `dbPath` counts `n` sleepers:
/// whether it did, and the count it read last (nil: the lock file could not be read).
public func waitForLockFileSleepers(_ dbPath: String, _ n: UInt32, seconds: Double = 30) -> (ok: Bool, last: UInt32?) {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        let count = lockFileSleepers(dbPath)
        if count == n { return (true, count) }
        if Date() >= deadline { return (false, count) }
        usleep(1000)
    }
}
