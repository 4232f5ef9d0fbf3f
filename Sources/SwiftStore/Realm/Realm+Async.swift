import Dispatch
import Foundation

/// The id of an asynchronous write (`writeAsync`, `beginAsyncWrite`, `commitAsyncWrite`).
public typealias AsyncTransactionId = UInt32

extension Realm {
    // MARK: Actor-isolated Realms

    /// Opens the Realm of `configuration` isolated to `actor`: the instance is cached per actor
    /// and used from the actor's code, on whatever thread the actor runs (its accesses are
    /// serialised by the actor and not checked per thread; using it from outside the actor is
    /// not caught at run time, and Swift's checks reject it at compile time since `Realm` is
    /// not `Sendable`). Its `writeAsync` blocks run on the actor.
    ///
    /// - Throws: what `init(configuration:queue:)` throws.
    public init<A: Actor>(configuration: Realm.Configuration = .defaultConfiguration, actor: isolated A) async throws {
        self.init(core: try RealmCore.open(configuration, actor: actor))
    }

    /// Opens the Realm of `configuration` isolated to the calling actor (RealmSwift's
    /// `Realm.open`); on no actor, the calling thread's instance.
    public static func open(configuration: Realm.Configuration = .defaultConfiguration,
                            isolation: isolated (any Actor)? = #isolation) async throws -> Realm {
        if let isolation { return Realm(core: try RealmCore.open(configuration, actor: isolation)) }
        return try Realm(configuration: configuration, queue: nil)
    }

    // MARK: Asynchronous writes

    /// Whether asynchronous writes are queued or running on this instance.
    public var isPerformingAsynchronousWriteOperations: Bool {
        core.asyncWrites?.isBusy ?? false
    }

    /// Runs `block` in a write transaction and commits it, suspending until the commit is
    /// durable; returns what `block` returns. Writes queued by several tasks before the queue
    /// runs share one transaction and one sync (group commit), each caller resuming only after
    /// that sync. A throw from `block` cancels its write (the other writes of its group then run
    /// again in a new transaction) and is rethrown here. Use it on the Realm's actor (or thread).
    @discardableResult
    public func asyncWrite<Result>(_ block: () throws -> Result,
                                   isolation: isolated (any Actor)? = #isolation) async throws -> Result {
        core.verifyThread()
        if core.isFrozen { preconditionFailure("Can't perform transactions on a frozen Realm") }
        let queue = core.asyncWriteQueue
        return try await withoutActuallyEscaping(block) { block in
            let box = ResultBox<Result>()
            let unchecked = UncheckedSendable(value: (queue, box, block))
            try await withCheckedThrowingContinuation(isolation: isolation) { (c: CheckedContinuation<Void, Swift.Error>) in
                let (queue, box, block) = unchecked.value
                _ = queue.enqueue({ box.value = try block() }, done: { error in
                    if let error { c.resume(throwing: error) } else { c.resume() }
                })
            }
            return box.value!
        }
    }

    /// Queues `block` to run in a write transaction on this Realm's thread, queue or actor, and
    /// returns at once. `onComplete` runs there after the commit is durable (nil) or failed.
    /// Blocks queued before the queue runs share one transaction and one sync. The Realm's
    /// thread needs a running run loop (or use a queue- or actor-isolated Realm).
    @discardableResult
    public func writeAsync(_ block: @escaping () -> Void,
                           onComplete: ((Swift.Error?) -> Void)? = nil) -> AsyncTransactionId {
        core.verifyThread()
        if core.isFrozen { preconditionFailure("Can't perform transactions on a frozen Realm") }
        return core.asyncWriteQueue.enqueue(block, done: { onComplete?($0) })
    }

    /// Begins a write transaction asynchronously: `block` runs inside it on this Realm's
    /// thread, queue or actor, and ends it with `commitAsyncWrite` or `cancelWrite`.
    @discardableResult
    public func beginAsyncWrite(_ block: @escaping () -> Void) -> AsyncTransactionId {
        core.verifyThread()
        if core.isFrozen { preconditionFailure("Can't perform transactions on a frozen Realm") }
        return core.asyncWriteQueue.enqueue(grouped: false, block, done: { _ in })
    }

    /// Commits the open write transaction (the sync is made here, so the data is durable when
    /// this returns) and calls `onComplete` asynchronously on this Realm's thread, queue or
    /// actor. `allowGrouping` is accepted for RealmSwift's signature; grouping applies to
    /// `writeAsync` and `asyncWrite` blocks queued together.
    @discardableResult
    public func commitAsyncWrite(allowGrouping: Bool = false,
                                 _ onComplete: ((Swift.Error?) -> Void)? = nil) -> AsyncTransactionId {
        var failure: Swift.Error?
        do { try commitWrite() } catch { failure = error }
        let error = failure
        return core.asyncWriteQueue.post { onComplete?(error) }
    }

    /// Removes a queued `writeAsync`/`beginAsyncWrite` block that has not started.
    ///
    /// - Throws: never for an unknown id (a block that ran already is not an error here).
    public func cancelAsyncWrite(_ asyncTransactionId: AsyncTransactionId) throws {
        core.verifyThread()
        _ = core.asyncWrites?.cancel(asyncTransactionId)
    }

    /// Moves to the newest version, as `refresh()` does, from async code; returns whether the
    /// version moved.
    @discardableResult
    public func asyncRefresh(isolation: isolated (any Actor)? = #isolation) async -> Bool {
        refresh()
    }
}

/// Carries an async write's result out of its block.
final class ResultBox<T> {
    var value: T?
}
