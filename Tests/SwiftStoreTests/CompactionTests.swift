import Foundation
import Testing
@testable import SwiftStore

#if canImport(Glibc)
import Glibc
#endif

/// Values the closures the configuration keeps write, read by the test afterwards.
private final class Recorder<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ x: T) { lock.lock(); items.append(x); lock.unlock() }
    var all: [T] { lock.lock(); defer { lock.unlock() }; return items }
}

/// Fills a Realm and churns it: many objects written, half deleted, the rest rewritten.
private func churn(_ realm: Realm, count: Int) throws {
    for batch in stride(from: 0, to: count, by: 500) {
        try realm.write {
            for i in batch..<min(count, batch + 500) {
                realm.add(Person(name: "person \(i) " + String(repeating: "x", count: 100), age: i))
            }
        }
    }
    try realm.write {
        for p in Array(realm.objects(Person.self)) where p.age % 2 == 0 { realm.delete(p) }
    }
    try realm.write {
        for p in realm.objects(Person.self) { p.age += 1 }
    }
}

private func people(_ realm: Realm) -> [String] {
    realm.objects(Person.self).map { "\($0.name) \($0.age)" }.sorted()
}

private func size(_ url: URL) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? -1
}

@Suite struct CompactionTests {
    @Test func writeCopyHoldsTheReadVersion() throws {
        let dir = TempDir()
        let config = dir.config([Person.self, Dog.self, Address.self])
        let realm = try Realm(configuration: config)
        try churn(realm, count: 2000)
        let want = people(realm)
        let copyURL = dir.file("copy.realm")
        try realm.writeCopy(toFile: copyURL)
        #expect(size(copyURL) < size(config.fileURL!), "the copy is compacted")

        var copyConfig = config
        copyConfig.fileURL = copyURL
        do {
            let copy = try Realm(configuration: copyConfig)
            #expect(people(copy) == want)
        }

        // an existing target
        do {
            try realm.writeCopy(toFile: copyURL)
            Issue.record("an existing target must be refused")
        } catch let error as Realm.Error {
            #expect(error.code == .fileExists)
        }
        // an encryption key
        let other = dir.file("other.realm")
        #expect(throws: Realm.Error.self) { try realm.writeCopy(toFile: other, encryptionKey: Data(count: 64)) }
        #expect(!FileManager.default.fileExists(atPath: other.path))
        // writeCopy(configuration:)
        var third = config
        third.fileURL = dir.file("third.realm")
        try realm.writeCopy(configuration: third)
        let t = try Realm(configuration: third)
        #expect(people(t) == want)
    }

    @Test func writeCopyFromAThreadWhileAnotherWrites() throws {
        let dir = TempDir()
        let config = dir.config([Person.self, Dog.self, Address.self])
        let realm = try Realm(configuration: config)
        try churn(realm, count: 1000)
        let writerDone = DispatchSemaphore(value: 0)
        Thread {
            let r = try! Realm(configuration: config)
            for i in 0..<100 {
                try! r.write { r.add(Person(name: "late \(i)", age: -1)) }
            }
            writerDone.signal()
        }.start()
        let copyDone = DispatchSemaphore(value: 0)
        let copyURL = dir.file("copy.realm")
        nonisolated(unsafe) var copied: [String] = []
        nonisolated(unsafe) var failure: Error?
        Thread {
            do {
                let r = try Realm(configuration: config)
                copied = people(r)
                try r.writeCopy(toFile: copyURL)
            } catch { failure = error }
            copyDone.signal()
        }.start()
        copyDone.wait()
        writerDone.wait()
        #expect(failure == nil)
        var copyConfig = config
        copyConfig.fileURL = copyURL
        let copy = try Realm(configuration: copyConfig)
        #expect(people(copy) == copied, "the copy is the version the copying thread read")
    }

    @Test func shouldCompactOnLaunchRunsOnTheFirstOpen() throws {
        let dir = TempDir()
        var config = dir.config([Person.self, Dog.self, Address.self])
        let want: [String]
        do {
            let realm = try Realm(configuration: config)
            try churn(realm, count: 3000)
            want = people(realm)
        }
        let before = size(config.fileURL!)
        let calls = Recorder<(Int, Int)>()
        config.shouldCompactOnLaunch = { total, used in
            calls.append((total, used))
            return true
        }
        do {
            let realm = try Realm(configuration: config)
            #expect(people(realm) == want)
            // a second open while the first is alive is not a first open
            let again = try Realm(configuration: config)
            _ = again
        }
        let seen = calls.all
        #expect(seen.count == 1)
        if let (total, used) = seen.first {
            #expect(total == before)
            #expect(used > 0 && used < total)
            // used bytes count the free list's own nodes, which a compacted file has no more
            let after = size(config.fileURL!)
            #expect(after <= used && after > used * 9 / 10, "the compacted file is about the used bytes (\(after), \(used))")
        }
        // declining leaves the file alone
        config.shouldCompactOnLaunch = { _, _ in false }
        let now = size(config.fileURL!)
        do { _ = try Realm(configuration: config) }
        #expect(size(config.fileURL!) == now)
    }

    @Test func compactOnLaunchIsSkippedWhileAnotherProcessHasTheFile() throws {
        let dir = TempDir()
        let url = dir.file("shared.realm")
        var config = Realm.Configuration(fileURL: url, objectTypes: [ProcPerson.self])
        do {
            let realm = try Realm(configuration: config)
            for batch in 0..<10 {
                try realm.write {
                    for i in 0..<200 { realm.add(ProcPerson(value: ["name": "p\(batch)-\(i)", "age": i]), update: .modified) }
                }
            }
            try realm.write { realm.delete(realm.objects(ProcPerson.self).filter("age > 10")) }
        }
        guard let exe = ChildProcess.path else { Issue.record("swiftstore-testchild not built"); return }
        let log = dir.file("hold.log")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: exe)
        child.arguments = ["hold", url.path, log.path]
        try child.run()
        defer { kill(child.processIdentifier, SIGKILL); child.waitUntilExit() }
        let deadline = Date().addingTimeInterval(30)
        while !FileManager.default.fileExists(atPath: log.path) && Date() < deadline { usleep(5000) }
        #expect(FileManager.default.fileExists(atPath: log.path), "the other process opened the file")
        let before = size(url)
        let asked = Recorder<Bool>()
        config.shouldCompactOnLaunch = { _, _ in asked.append(true); return true }
        let realm = try Realm(configuration: config)
        #expect(realm.objects(ProcPerson.self).count == 110)
        #expect(asked.all == [true])
        #expect(size(url) == before, "not compacted while another process has it, and no error")
    }

    @Test func seedFileIsCopiedOnFirstOpen() throws {
        let dir = TempDir()
        let seedConfig = dir.config([Person.self, Dog.self, Address.self], file: "seed.realm")
        do {
            let realm = try Realm(configuration: seedConfig)
            try realm.write { realm.add(Person(name: "seeded", age: 7)) }
        }
        var config = dir.config([Person.self, Dog.self, Address.self], file: "app.realm")
        config.seedFilePath = seedConfig.fileURL
        do {
            let realm = try Realm(configuration: config)
            #expect(people(realm) == ["seeded 7"])
            try realm.write { realm.add(Person(name: "local", age: 1)) }
        }
        // an existing file is never replaced by the seed
        let realm = try Realm(configuration: config)
        #expect(people(realm) == ["local 1", "seeded 7"])
    }
}
