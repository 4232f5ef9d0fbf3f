import Foundation
import Testing

/// The number of threads the lock file of the database at `path` counts as asleep on its commit
/// counter (bytes 112-115, docs/FORMAT.md §9).
func sleepers(_ path: String) throws -> UInt32 {
    let h = try FileHandle(forReadingFrom: URL(fileURLWithPath: path + ".lock"))
    defer { try? h.close() }
    try h.seek(toOffset: 112)
    let b = [UInt8](h.readData(ofLength: 4))
    return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
}

/// Waits (up to 30 s) until the lock file of the database at `path` counts `n` sleepers.
func waitForSleepers(_ path: String, _ n: UInt32) throws {
    let deadline = Date().addingTimeInterval(30)
    while true {
        let count = try sleepers(path)
        if count == n { return }
        try #require(Date() < deadline, "the lock file counts \(count) sleepers, not \(n)")
        usleep(1000)
    }
}
