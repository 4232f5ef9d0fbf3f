import Foundation

/// A value behind a lock, for state shared between threads (caches, registries).
///
/// An `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`: ThreadSanitizer
/// intercepts pthread mutexes, but does not see the ordering `Mutex` gives on Linux and
/// reports the state it guards as racing (`make tsan` would fail on correct code).
final class Locked<Value>: @unchecked Sendable {
    /// Guards `value`.
    private let lock = NSLock()
    /// Only read or written with `lock` held.
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
