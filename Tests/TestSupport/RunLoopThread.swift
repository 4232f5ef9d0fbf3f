import Foundation
#if canImport(CoreFoundation)
import CoreFoundation
#endif

/// A thread that runs its run loop until stopped, for tests of run-loop delivery: Swift Testing
/// runs tests on threads without a running run loop. `sync` runs a block on the thread (from
/// inside its run loop, so observers registered there deliver to it) and waits for it;
/// `Events` lets the test wait for callbacks without sleeping or polling.
public final class RunLoopThread: @unchecked Sendable {
    private var runLoop: RunLoop?
    private var stopped = false
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)

    public init() {
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            let rl = RunLoop.current
            // a timer far in the future keeps the loop from returning at once when idle
            rl.add(Timer(timeInterval: 1e9, repeats: true) { _ in }, forMode: .default)
            lock.lock()
            runLoop = rl
            lock.unlock()
            ready.signal()
            while !isStopped { _ = rl.run(mode: .default, before: .distantFuture) }
            done.signal()
        }
        thread.start()
        ready.wait()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// Runs `body` on the thread's run loop and returns what it returns (rethrowing).
    public func sync<R>(_ body: @escaping () throws -> R) throws -> R {
        let sem = DispatchSemaphore(value: 0)
        let box = Slot<(body: () throws -> R, result: Result<R, Error>?)>((body, nil))
        let timer = Timer(timeInterval: 0, repeats: false) { _ in
            box.value.result = Result { try box.value.body() }
            sem.signal()
        }
        runLoop!.add(timer, forMode: .default)
        sem.wait()
        return try box.value.result!.get()
    }

    /// Stops the run loop and waits for the thread to end.
    public func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        runLoop!.add(Timer(timeInterval: 0, repeats: false) { _ in CFRunLoopStop(CFRunLoopGetCurrent()) }, forMode: .default)
        done.wait()
    }

    deinit {
        if !isStopped { stop() }
    }
}

/// How long `Events.next` waits by default: 10 s, or 60 s under a sanitizer (`STORE_SANITIZER=1`,
/// set by `make asan` and `make tsan`), which makes every thread several times slower. A wait
/// that expects nothing to arrive gives its own timeout.
public let eventsTimeout: Double = ProcessInfo.processInfo.environment["STORE_SANITIZER"] == "1" ? 60 : 10

/// Records values from callbacks on any thread and lets a test wait for the next one.
public final class Events<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    private var taken = 0
    private let sem = DispatchSemaphore(value: 0)

    public init() {}

    public func add(_ item: T) {
        lock.lock()
        items.append(item)
        lock.unlock()
        sem.signal()
    }

    /// The next recorded value, waiting at most `timeout` seconds (nil after that).
    public func next(timeout: Double = eventsTimeout) -> T? {
        guard sem.wait(timeout: .now() + timeout) == .success else { return nil }
        lock.lock()
        defer { lock.unlock() }
        taken += 1
        return items[taken - 1]
    }

    /// Everything recorded so far.
    public var all: [T] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }

    /// How many values were recorded and not yet taken with `next`.
    public var waiting: Int {
        lock.lock()
        defer { lock.unlock() }
        return items.count - taken
    }
}

/// A value handed between the caller and the run-loop thread.
private final class Slot<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
