import CStore
import Foundation
import Synchronization
import Testing
@testable import SwiftStore
#if canImport(Glibc)
import Glibc
#endif

/// A cs_io passing every call to the system and counting the syncs.
final class SyncCountingIO: @unchecked Sendable {
    let syncs = Atomic<Int>(0)
    let io: UnsafeMutablePointer<cs_io>

    init() {
        io = .allocate(capacity: 1)
        var x = cs_io()
        x.open = { _, path, flags, mode in Glibc.open(path!, flags, mode) }
        x.close = { _, fd in Glibc.close(fd) }
        x.pread = { _, fd, buf, n, off in Glibc.pread(fd, buf, n, off) }
        x.pwrite = { _, fd, buf, n, off in Glibc.pwrite(fd, buf, n, off) }
        x.fdatasync = { ctx, fd in
            let me = Unmanaged<SyncCountingIO>.fromOpaque(ctx!).takeUnretainedValue()
            me.syncs.add(1, ordering: .relaxed)
            return Glibc.fdatasync(fd)
        }
        x.ftruncate = { _, fd, size in Glibc.ftruncate(fd, size) }
        x.fstat = { _, fd, st in Glibc.fstat(fd, st!) }
        io.initialize(to: x)
        io.pointee.ctx = Unmanaged.passUnretained(self).toOpaque()
    }

    var count: Int { syncs.load(ordering: .relaxed) }

    func attach(_ path: String) { RealmCore.ioForTesting.withLock { $0[path] = UInt(bitPattern: io) } }
    func detach(_ path: String) { RealmCore.ioForTesting.withLock { $0[path] = nil } }

    deinit {
        io.deinitialize(count: 1)
        io.deallocate()
    }
}

/// An actor owning an actor-isolated Realm.
actor DogWriter {
    let config: Realm.Configuration
    init(config: Realm.Configuration) { self.config = config }

    func add(count: Int, tag: Int) async throws {
        let realm = try await Realm(configuration: config, actor: self)
        for i in 0..<count {
            try await realm.asyncWrite {
                realm.add(Dog(value: ["name": "t\(tag)-\(i)", "age": tag]))
            }
        }
    }

    func failingWrite() async -> String? {
        let realm = try! await Realm(configuration: config, actor: self)
        struct Refused: Error {}
        do {
            try await realm.asyncWrite { realm.add(Dog(value: ["name": "never"])); throw Refused() }
        } catch is Refused {
            return realm.objects(Dog.self).filter("name == 'never'").isEmpty ? "cancelled" : "kept"
        } catch {
            return "\(error)"
        }
        return nil
    }

    func count() async throws -> Int {
        let realm = try await Realm(configuration: config, actor: self)
        await realm.asyncRefresh()
        return realm.objects(Dog.self).count
    }

    func isSameInstance() async throws -> Bool {
        let a = try await Realm(configuration: config, actor: self)
        let b = try await Realm(configuration: config, actor: self)
        return a == b && !a.isPerformingAsynchronousWriteOperations
    }
}

@Suite struct AsyncWriteTests {
    @Test func manyTasksWritingThroughAnActorRealmLoseNothing() async throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        let writer = DogWriter(config: config)
        #expect(try await writer.isSameInstance())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask { try await writer.add(count: 25, tag: t) }
            }
            try await group.waitForAll()
        }
        #expect(try await writer.count() == 200)
        let realm = try Realm(configuration: config, queue: nil)
        for t in 0..<8 {
            #expect(realm.objects(Dog.self).filter("age == %@", t).count == 25)
        }
        #expect(await writer.failingWrite() == "cancelled")
    }

    @Test func queuedWriteAsyncBlocksShareOneSync() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        let io = SyncCountingIO()
        io.attach(config.path)
        defer { io.detach(config.path) }
        let thread = RunLoopThread()
        defer { thread.stop() }
        let done = Events<Int>()
        let synchronousSyncs = try thread.sync { () -> Int in
            let realm = try Realm(configuration: config)
            let before = io.count
            for i in 0..<10 { try realm.write { realm.add(Dog(value: ["name": "sync\(i)"])) } }
            return io.count - before
        }
        #expect(synchronousSyncs >= 10, "every synchronous commit syncs")
        let before = io.count
        let synced = UncheckedBox<[Int]>([])
        try thread.sync {
            let realm = try Realm(configuration: config)
            for i in 0..<100 {
                realm.writeAsync({ realm.add(Dog(value: ["name": "async\(i)", "age": i])) }) { error in
                    // Each completion runs after its data is durable: the syncs counted so far
                    // include the one that covered it.
                    synced.value.append(io.count - before)
                    done.add(error == nil ? i : -1)
                }
            }
            #expect(realm.isPerformingAsynchronousWriteOperations)
        }
        var completed: [Int] = []
        for _ in 0..<100 { if let i = done.next() { completed.append(i) } }
        #expect(completed == Array(0..<100))
        let asyncSyncs = io.count - before
        #expect(asyncSyncs >= 1 && asyncSyncs <= 5, "100 queued writes took \(asyncSyncs) syncs")
        #expect(synced.value.allSatisfy { $0 >= 1 })
        let count = try thread.sync { try Realm(configuration: config).objects(Dog.self).filter("name BEGINSWITH 'async'").count }
        #expect(count == 100)
    }

    @Test func beginAndCommitAsyncWriteAndCancel() throws {
        let dir = TempDir()
        let config = dir.config(objectModels)
        let thread = RunLoopThread()
        defer { thread.stop() }
        let done = Events<String>()
        try thread.sync {
            let realm = try Realm(configuration: config)
            realm.beginAsyncWrite {
                realm.add(Dog(value: ["name": "begun"]))
                realm.commitAsyncWrite { error in done.add(error == nil ? "committed" : "\(error!)") }
            }
            let id = realm.writeAsync({ realm.add(Dog(value: ["name": "cancelled"])) }) { _ in done.add("ran") }
            try realm.cancelAsyncWrite(id)
            realm.writeAsync({ realm.add(Dog(value: ["name": "last"])) }) { _ in done.add("last") }
        }
        #expect(done.next() == "committed")
        #expect(done.next() == "last")
        let names = try thread.sync { Array(try Realm(configuration: config).objects(Dog.self).map(\.name)) }
        #expect(names == ["begun", "last"])
    }

    /// A completion runs only after its data is durable: a child process queues a write and
    /// exits at once (no clean-up) from its completion; the parent then finds the object.
    @Test func dataIsThereWhenTheProcessDiesRightAfterTheCompletion() throws {
        let dir = TempDir()
        let path = dir.file("test.realm").path
        let child = try ChildProcess.run(["async-write-exit", path], in: dir)
        #expect(child.status == 0, "\(child.stderr)")
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [ProcPerson.self])
        let realm = try Realm(configuration: config)
        #expect(realm.objects(ProcPerson.self).filter("name == 'durable'").count == 1)
    }

    /// The same through groups: a child's 4 tasks await one-object asyncWrites on one actor's
    /// Realm (queued together, so they share commits and syncs), log each completed write and
    /// are killed with SIGKILL right after the 100th completion; every logged write is in the
    /// file, and no write is there twice.
    @Test func groupedWritesAreThereWhenTheProcessIsKilledRightAfterACompletion() throws {
        let dir = TempDir()
        let path = dir.file("test.realm").path
        let log = dir.file("completed.log")
        #expect(FileManager.default.createFile(atPath: log.path, contents: nil))
        let child = try ChildProcess.run(["async-writes-kill", path, log.path, "50"], in: dir)
        #expect(child.status == SIGKILL, "the child was not killed: \(child.status) \(child.stderr)")
        let logged = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(logged.count == 100)
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [ProcPerson.self])
        let realm = try Realm(configuration: config)
        let stored = Set(realm.objects(ProcPerson.self).map(\.name))
        let missing = logged.filter { !stored.contains($0) }
        #expect(missing.isEmpty, "completed but not in the file: \(missing)")
        #expect(stored.count >= logged.count && stored.count <= 200)
    }
}
