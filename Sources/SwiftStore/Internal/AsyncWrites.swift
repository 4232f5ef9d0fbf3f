import Foundation

/// A value handed between isolation domains where the code guarantees the hand-over (a Realm
/// instance moved to the one actor or thread that uses it).
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
}

/// The asynchronous writes queued on one Realm instance (docs/ARCHITECTURE.md, Asynchronous
/// writes and group commit). Blocks queued before the queue is drained run one after another
/// in one write transaction, committed once: one sync makes all of them durable, and each
/// completion runs after that sync. The queue is used only on the instance's own thread,
/// queue or actor.
final class AsyncWriteQueue {
    struct Entry {
        let id: UInt32
        /// Runs inside the write transaction (a `beginAsyncWrite` block ends it itself).
        let block: () throws -> Void
        /// Whether the block shares a transaction with the grouped blocks next to it.
        let grouped: Bool
        /// Whether this is only a callback to run (no transaction).
        let callbackOnly: Bool
        let done: (Error?) -> Void
    }
    private unowned let core: RealmCore
    private var entries: [Entry] = []
    private var nextId: UInt32 = 1
    private var scheduled = false
    /// True while a drain runs blocks or commits.
    private(set) var isRunning = false
    /// True while queued blocks wait for a write transaction of the instance to end.
    private var waitingForWrite = false
    /// The instance, held while blocks are queued (so a Realm released by its caller still
    /// runs the writes it queued); nil when idle, so the instance is not kept forever.
    private var keepAlive: RealmCore?

    init(core: RealmCore) { self.core = core }

    var isBusy: Bool { isRunning || !entries.isEmpty }

    /// Queues `block`; `done` gets nil after the commit that made it durable, or the error.
    /// `grouped` false: the block commits (or cancels) the transaction itself.
    func enqueue(grouped: Bool = true, _ block: @escaping () throws -> Void, done: @escaping (Error?) -> Void) -> UInt32 {
        let id = nextId
        nextId &+= 1
        if nextId == 0 { nextId = 1 }
        entries.append(Entry(id: id, block: block, grouped: grouped, callbackOnly: false, done: done))
        schedule()
        return id
    }

    /// Queues `body` to run on the instance's thread, queue or actor, in order with the writes.
    func post(_ body: @escaping () -> Void) -> UInt32 {
        let id = nextId
        nextId &+= 1
        if nextId == 0 { nextId = 1 }
        let entry = Entry(id: id, block: body, grouped: false, callbackOnly: true, done: { _ in })
        // A completion posted by a block that runs now goes before the blocks queued after it.
        if isRunning { entries.insert(entry, at: 0) } else { entries.append(entry) }
        schedule()
        return id
    }

    /// Removes a queued block that has not started; false when there is none with that id.
    func cancel(_ id: UInt32) -> Bool {
        guard let i = entries.firstIndex(where: { $0.id == id }) else { return false }
        entries.remove(at: i)
        return true
    }

    /// Arranges for `drain` to run on the instance's thread, queue or actor.
    private func schedule() {
        keepAlive = core
        if scheduled { return }
        scheduled = true
        let me = UncheckedSendable(value: self)
        if let actor = core.actor {
            Task { await AsyncWriteQueue.run(on: actor) { me.value.drain() } }
        } else if let queue = core.queue {
            queue.async { me.value.drain() }
        } else if let runLoop = core.runLoop {
            // A timer wakes a sleeping run loop on Linux; RunLoop.perform does not.
            runLoop.add(Timer(timeInterval: 0, repeats: false) { _ in me.value.drain() }, forMode: .default)
        }
    }

    /// Called when a write transaction of the instance ends: resumes waiting blocks.
    func writeDidEnd() {
        if waitingForWrite && !isRunning {
            waitingForWrite = false
            if entries.isEmpty { keepAlive = nil } else { schedule() }
        }
    }

    static func run(on actor: isolated any Actor, _ body: () -> Void) {
        body()
    }

    /// Runs every queued block: the grouped ones in one transaction per group, committed once.
    func drain() {
        scheduled = false
        guard !isRunning else { return }
        isRunning = true
        defer {
            isRunning = false
            if !entries.isEmpty && !waitingForWrite { schedule() }
            if entries.isEmpty && !waitingForWrite && !scheduled { keepAlive = nil }
        }
        while !entries.isEmpty {
            if core.isInWriteTransaction {
                // A write of the instance is open (a block queued from inside one, or a
                // beginAsyncWrite block not committed yet): its end resumes the queue.
                waitingForWrite = true
                return
            }
            if entries[0].callbackOnly {
                try? entries.removeFirst().block()
                continue
            }
            if !entries[0].grouped {
                let e = entries.removeFirst()
                core.beginWrite()
                do { try e.block() } catch {
                    if core.isInWriteTransaction { core.cancelWrite() }
                    e.done(error)
                    continue
                }
                if core.isInWriteTransaction {
                    // A beginAsyncWrite block that neither committed nor cancelled: RealmSwift
                    // leaves the transaction open for a later commitAsyncWrite.
                    e.done(nil)
                    waitingForWrite = true
                    return
                }
                e.done(nil)
                continue
            }
            var batch: [Entry] = []
            while let first = entries.first, first.grouped, !first.callbackOnly { batch.append(entries.removeFirst()) }
            runGroup(batch)
        }
    }

    /// Runs a group in one transaction. A block that throws is reported and dropped, and the
    /// transaction of its group is cancelled; the other blocks of the group then run again in
    /// a new transaction (their writes were rolled back with it).
    private func runGroup(_ group: [Entry]) {
        var batch = group
        while !batch.isEmpty {
            core.beginWrite()
            var failed: (Int, Error)?
            for (i, e) in batch.enumerated() {
                do { try e.block() } catch {
                    failed = (i, error)
                    break
                }
                if !core.isInWriteTransaction {
                    preconditionFailure("An asynchronous write block must not end its own transaction")
                }
            }
            if let (i, error) = failed {
                core.cancelWrite()
                batch[i].done(error)
                batch.remove(at: i)
                continue
            }
            do {
                try core.commitWrite()
            } catch {
                for e in batch { e.done(error) }
                return
            }
            for e in batch { e.done(nil) }
            return
        }
    }
}

extension RealmCore {
    /// The instance's async write queue, made on first use.
    var asyncWriteQueue: AsyncWriteQueue {
        if let q = asyncWrites { return q }
        let q = AsyncWriteQueue(core: self)
        asyncWrites = q
        return q
    }
}
