// RealmSwift conformance: `Logger` and `LogLevel`. The storage core reports opening a file,
// each commit with the version it made and the file's size, and migrations, through the logger
// the program sets, filtered by level. The logger is process-wide, so these tests run
// serialized and restore the default when done.
import Foundation
import Testing
import TestSupport
import SwiftStore

final class CfLogged: Object {
    @Persisted var x = 0
}

/// Collects messages (from any thread).
final class CfLogSink: @unchecked Sendable {
    private let lock = NSCondition()
    private var entries: [(LogLevel, String, String)] = []
    func add(_ level: LogLevel, _ category: String, _ message: String) {
        lock.lock(); entries.append((level, category, message)); lock.broadcast(); lock.unlock()
    }
    func messages(containing text: String) -> [(LogLevel, String, String)] {
        lock.lock(); defer { lock.unlock() }
        return entries.filter { $0.2.contains(text) }
    }
    /// Waits (up to `timeout` seconds) until a message satisfying `match` was logged; whether one was.
    func wait(timeout: TimeInterval = 10, for match: ((LogLevel, String, String)) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock(); defer { lock.unlock() }
        while !entries.contains(where: match) {
            if !lock.wait(until: deadline) { return entries.contains(where: match) }
        }
        return true
    }
}

@Suite("Conformance: logger", .serialized)
struct LoggerConformanceTests {
    @Test func coreReportsOpensCommitsAndMigrations() throws {
        let sink = CfLogSink()
        processLogLock.lock()
        defer { processLogLock.unlock() }
        let saved = Logger.shared
        let savedLevel = Logger.shared.level
        defer { Logger.shared = saved; Logger.shared.level = savedLevel }
        Logger.shared = Logger(function: { level, category, message in sink.add(level, category.rawValue, message) })
        Logger.shared.level = .debug

        let dir = TempDir()
        let path = dir.file().path
        do {
            let realm = try Realm(configuration: dir.config([CfLogged.self]))
            try realm.write { realm.add(CfLogged()) }
        }
        let opens = sink.messages(containing: path).filter { $0.2.hasPrefix("Open file") }
        #expect(!opens.isEmpty)
        #expect(opens.first?.0 == .info)
        #expect(opens.first?.1 == "Realm.Storage")
        let commits = sink.messages(containing: "Commit of version")
        #expect(!commits.isEmpty)
        #expect(commits.allSatisfy { $0.0 == .debug && $0.1 == "Realm.Storage.Transaction" })
        #expect(commits.contains { $0.2.contains("file size") })

        // The logger is process-wide: another test may migrate its own file from 0 to 1 while
        // this sink is installed (as `other` does here), so messages are told apart by path.
        let other = TempDir()
        _ = try Realm(configuration: other.config([CfLogged.self]))
        for migrating in [dir, other] {
            var config = migrating.config([CfLogged.self], version: 1)
            config.migrationBlock = { _, _ in }
            _ = try Realm(configuration: config)
        }
        #expect(sink.messages(containing: "Migrating \(path) from schema version 0 to 1").count == 1)
        #expect(sink.messages(containing: "Migrating \(other.file().path) from schema version 0 to 1").count == 1)
    }

    @Test func levelFiltersMessages() throws {
        let sink = CfLogSink()
        processLogLock.lock()
        defer { processLogLock.unlock() }
        let saved = Logger.shared
        let savedLevel = Logger.shared.level
        defer { Logger.shared = saved; Logger.shared.level = savedLevel }
        Logger.shared = Logger(level: .info) { level, message in sink.add(level, "", message) }
        #expect(Logger.shared.level == .info)
        #expect(Logger.logLevel(for: Category.Storage.transaction) == .info)

        let dir = TempDir()
        do {
            let realm = try Realm(configuration: dir.config([CfLogged.self]))
            try realm.write { realm.add(CfLogged()) }
        }
        // Commits are debug messages: filtered out at info; opens pass.
        #expect(sink.messages(containing: dir.file().path).count >= 1)
        #expect(sink.messages(containing: "Commit of version").isEmpty)

        Logger.setLogLevel(.off)
        let quiet = TempDir()
        _ = try Realm(configuration: quiet.config([CfLogged.self]))
        #expect(sink.messages(containing: quiet.file().path).isEmpty)

        Logger.shared.level = .all
        Logger.shared.log(level: .trace, message: "from the program")
        #expect(sink.messages(containing: "from the program").count == 1)
        #expect(LogLevel.allCases.map(\.rawValue) == Array(0...8))
    }

    /// Compaction on launch and the notifier's work are reported too: compaction at info
    /// with the sizes (Realm.Storage), the notifier's change computation and delivery at
    /// debug (Realm.Storage.Notification).
    @Test func compactionAndNotifierAreReported() throws {
        let sink = CfLogSink()
        processLogLock.lock()
        defer { processLogLock.unlock() }
        let saved = Logger.shared
        let savedLevel = Logger.shared.level
        defer { Logger.shared = saved; Logger.shared.level = savedLevel }
        Logger.shared = Logger(function: { level, category, message in sink.add(level, category.rawValue, message) })
        Logger.shared.level = .debug

        let dir = TempDir()
        let path = dir.file().path
        do {
            let realm = try Realm(configuration: dir.config([CfLogged.self]))
            try realm.write { for _ in 0..<200 { realm.add(CfLogged()) } }
            try realm.write { realm.deleteAll() }
        }
        var config = dir.config([CfLogged.self])
        config.shouldCompactOnLaunch = { _, _ in true }
        let thread = RunLoopThread()
        let events = Events<String>()
        let token = UncheckedBox<NotificationToken?>(nil)
        try thread.sync {
            let realm = try Realm(configuration: config)
            token.value = realm.objects(CfLogged.self).observe { change in
                switch change {
                case .initial(let r): events.add("initial \(r.count)")
                case .update(let r, _, _, _): events.add("update \(r.count)")
                case .error: events.add("error")
                }
            }
        }
        // a write made before the initial callback is folded into it, so the write below
        // waits for it: then it can only come as an update
        #expect(events.next() == "initial 0")
        let compaction = sink.messages(containing: "Compact").filter { $0.2.contains(path) }
        #expect(compaction.count == 2)
        #expect(compaction.allSatisfy { $0.0 == .info && $0.1 == "Realm.Storage" })
        #expect(compaction.last?.2.contains("bytes") == true)

        let writer = config
        onNewThread {
            let r = try! Realm(configuration: writer)
            try! r.write { r.add(CfLogged()) }
        }
        #expect(events.next() == "update 1")
        // (the thread that computed the changes, the notifier's or the committer's, logs that
        // after it scheduled the delivery, outside the notifier's lock: the line may come after
        // the delivery's)
        func notifierLine(_ text: String) -> ((LogLevel, String, String)) -> Bool {
            { $0.0 == .debug && $0.1 == "Realm.Storage.Notification" && $0.2.contains(path) && $0.2.contains(text) }
        }
        #expect(sink.wait(for: notifierLine("Computed the changes of version")))
        #expect(sink.wait(for: notifierLine("Delivering")))
        try thread.sync { token.value?.invalidate() }
        thread.stop()
    }
}
