import Foundation

/// The task executor that notification deliveries to actors start on (docs/ARCHITECTURE.md,
/// Change notifications).
///
/// A delivery to an actor-isolated Realm is a task that hops onto the actor. Started on the
/// global concurrent pool, it would wait for a free pool thread, and a program whose pool
/// threads are all blocked (in a synchronous wait, say) would get no notifications until one
/// is released. This executor runs its jobs on a thread of its own, and a task that prefers it
/// also runs an idle default actor's code there, so such a delivery never needs a pool thread.
/// Actors with an executor of their own still run their code on it. A delivery that finds the
/// actor busy is run wherever Swift's runtime next runs the actor, which is the global pool
/// when the task on the actor moves off it (docs/ARCHITECTURE.md, "Delivery on an actor").
final class DeliveryExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = DeliveryExecutor()

    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []

    /// The thread the jobs run on (set before it starts).
    private var thread: Thread?

    private init() {
        let thread = Thread { [self] in runJobs() }
        thread.name = "SwiftStore notification delivery"
        self.thread = thread
        thread.start()
    }

    /// Whether the caller runs on this executor's thread (for tests).
    var isCurrentThread: Bool { Thread.current === thread }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func runJobs() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}
