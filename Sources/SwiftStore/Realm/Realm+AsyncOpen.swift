import Dispatch
import Foundation

extension Realm {
    // MARK: Opening asynchronously

    /// Opens the Realm of `configuration` on a background queue (creating the file, running
    /// its migration, compacting it on launch, all off the caller's thread), then calls
    /// `callback` on `callbackQueue` with an instance confined to that queue, as
    /// `Realm(configuration:queue:)` gives, or with the error the open threw.
    ///
    /// `callbackQueue` must be a serial queue; the main queue (the default) delivers only while
    /// the main thread runs its run loop or `dispatchMain()`. The returned task's `cancel()`
    /// keeps the callback from being called if the open has not delivered yet.
    ///
    /// - Returns: the task of this open, to cancel it.
    @discardableResult
    public static func asyncOpen(configuration: Realm.Configuration = .defaultConfiguration,
                                 callbackQueue: DispatchQueue = .main,
                                 callback: @escaping (Result<Realm, Swift.Error>) -> Void) -> AsyncOpenTask {
        let task = AsyncOpenTask(state: AsyncOpenTask.State())
        let deliver = UncheckedSendable(value: callback)
        let state = task.state
        AsyncOpenTask.openQueue.async {
            // The work of opening (file creation, migration, compaction) happens here; the
            // instance made here keeps the file open until the callback queue has its own, and
            // is released back on this queue.
            let opened: Result<Realm, Swift.Error>
            do { opened = .success(try Realm(configuration: configuration, queue: AsyncOpenTask.openQueue)) } catch {
                opened = .failure(error)
            }
            let keep = UncheckedSendable(value: opened)
            callbackQueue.async {
                if state.deliver() {
                    switch keep.value {
                    case .failure(let error):
                        deliver.value(.failure(error))
                    case .success:
                        do {
                            deliver.value(.success(try Realm(configuration: configuration, queue: callbackQueue)))
                        } catch {
                            deliver.value(.failure(error))
                        }
                    }
                }
                AsyncOpenTask.openQueue.async { withExtendedLifetime(keep) {} }
            }
        }
        return task
    }

    /// A pending `asyncOpen`, which can be cancelled (RealmSwift's `Realm.AsyncOpenTask`; its
    /// download progress notifications belong to Device Sync and are not provided).
    public struct AsyncOpenTask: Sendable {
        /// Whether the open has been cancelled or has delivered.
        final class State: @unchecked Sendable {
            private let lock = NSLock()
            private var finished = false

            /// Marks the task cancelled; false if it delivered already.
            func cancel() {
                lock.lock()
                finished = true
                lock.unlock()
            }

            /// Marks the task delivered: false when it was cancelled first.
            func deliver() -> Bool {
                lock.lock()
                defer { lock.unlock() }
                if finished { return false }
                finished = true
                return true
            }
        }

        let state: State

        /// The serial queue the background open's own instance is confined to.
        static let openQueue = DispatchQueue(label: "SwiftStore.asyncOpen")

        /// The main queue, as one object: instances are cached per queue object, and on Linux
        /// each read of `DispatchQueue.main` makes a new one.
        static let mainQueue = DispatchQueue.main

        /// Cancels the open: the callback is not called unless it has started already. The
        /// file may still have been opened (and migrated) in the background.
        public func cancel() { state.cancel() }
    }

    /// Opens the Realm of `configuration` confined to the main actor (RealmSwift's
    /// `@MainActor init(configuration:downloadBeforeOpen:)`; the download options belong to
    /// Device Sync). The opening work runs off the main actor; the instance returned is the one
    /// confined to the main queue (`Realm(configuration:queue: .main)`), which the main actor's
    /// code runs on, so it is not checked per thread and its notifications arrive there.
    ///
    /// In async code `try await Realm()` picks this initialiser (as in RealmSwift); the
    /// synchronous one is `Realm(configuration:queue:)`.
    ///
    /// - Throws: what `init(configuration:queue:)` throws.
    @MainActor
    public init(configuration: Realm.Configuration = .defaultConfiguration) async throws {
        let prepared = try await Realm.prepareInBackground(configuration)
        self = try Realm(configuration: configuration, queue: AsyncOpenTask.mainQueue)
        AsyncOpenTask.openQueue.async { withExtendedLifetime(prepared) {} }
    }

    /// Opens (creates, migrates) the file on a background queue and returns a token holding it
    /// open, so that the caller's open on its own thread finds the work done.
    private static func prepareInBackground(_ configuration: Realm.Configuration) async throws -> UncheckedSendable<Realm> {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<UncheckedSendable<Realm>, Swift.Error>) in
            AsyncOpenTask.openQueue.async {
                do { c.resume(returning: UncheckedSendable(value: try Realm(configuration: configuration, queue: AsyncOpenTask.openQueue))) } catch {
                    c.resume(throwing: error)
                }
            }
        }
    }
}
