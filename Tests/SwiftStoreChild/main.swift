// swiftstore-testchild: the helper executable SwiftStore's tests run as a separate process (a
// second process committing to a shared file, an open under a small address-space limit, an
// open as an unprivileged user). It prints one line of result on stdout and exits 0, or
// prints the error on stderr and exits 1.
//
//   add PATH NAME AGE          add a ProcPerson in one write and commit it
//   async-writes-kill PATH LOG N  4 tasks each await N asyncWrites (one ProcPerson "tT-I" each)
//                              through one actor's Realm, append each completed name to LOG,
//                              and kill the process with SIGKILL right after completion 2N
//   set-age PATH NAME AGE SLEEPERS  set the age of ProcPerson NAME in one write, while an
//                              observer of it in this process (on a queue) waits for the change;
//                              print "ok" once that observer saw it. The write waits until the
//                              lock file counts SLEEPERS threads asleep on the file (this
//                              process's notifier thread among them), so that its commit spares
//                              a notifier of its own
//   count PATH                 print the number of ProcPerson objects
//   edit PATH OP...            in one write: +NAME:AGE adds a ProcPerson, =NAME:AGE sets the
//                              age of one, -NAME deletes one; print "ok" once committed
//   open-limited PATH MB       limit the address space to (current + MB) MiB, then open PATH
//   open-as-nobody PATH        drop to uid/gid 65534, then open PATH
//   hold PATH LOG              open PATH, write "holding" to LOG and stay until killed
//   add-at PATH NAME AGE MS    as add, but first wait until MS milliseconds since 1970 (so that
//                              several children open a new file at the same moment)
//   soak-writer PATH ID LOG S  for S seconds, commit batches of ProcPersons named "wID-SEQ" (SEQ
//                              counting up from where the file is); after each commit append
//                              the last SEQ committed to LOG
//   soak-reader PATH W S       for S seconds, check that each writer 0..<W's objects are SEQs
//                              0...max with none missing (exit 2 naming the gap otherwise)
//   soak-observer PATH S       for S seconds, refresh and check that the object count never
//                              goes down (exit 2 otherwise)
//   stress-writer PATH ID N    with an observer of every ProcPerson on a queue (so that this
//                              process's notifier thread sleeps on the file and its commits
//                              spare it), commit N ProcPersons "sID-I" one per commit; print
//                              "ok" once the observer saw them all (exit 2 after 60 s without)
//   sleep-observer PATH LOG    observe every ProcPerson on a queue, append the count to LOG
//                              at the initial notification and at every change, and stay
//                              until killed
//   read-all PATH              open PATH and read every ProcPerson and property; print the
//                              count, or the thrown Realm.Error's code (exit 3)
//   default-schema PATH        open PATH without objectTypes (the schema is every model class
//                              in this process, found by the type-metadata scan), write one
//                              object of each class, print the class names
//
// The models here are all valid: on Linux every test target links into one test binary, so
// the default schema can only be exercised in a process whose models are known.
// Opening prints "opened" or the Realm.Error code's name.

import Foundation
import SwiftStore
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The model the multi-process tests share (the tests declare the same class name and
/// properties).
final class ProcPerson: Object {
    @Persisted(primaryKey: true) var name = ""
    @Persisted var age = 0
}

/// Models that exist only for the default-schema test.
final class ProcDog: Object {
    @Persisted var name = ""
    @Persisted var owner: ProcPerson?
    @Persisted var address: ProcAddress?
    @Persisted(originProperty: "dogs") var kennels: LinkingObjects<ProcKennel>
}

final class ProcAddress: EmbeddedObject {
    @Persisted var city = ""
}

final class ProcKennel: Object {
    @Persisted var dogs: List<ProcDog>
}

/// Writes through one actor-isolated Realm and kills the process right after a given number of
/// completions, logging each completed write first.
actor KillingWriter {
    let config: Realm.Configuration
    let log: FileHandle
    let killAfter: Int
    var completed = 0

    init(config: Realm.Configuration, log: FileHandle, killAfter: Int) {
        self.config = config
        self.log = log
        self.killAfter = killAfter
    }

    func write(task: Int, count: Int) async throws {
        let realm = try await Realm(configuration: config, actor: self)
        for i in 0..<count {
            let name = "t\(task)-\(i)"
            try await realm.asyncWrite { realm.add(ProcPerson(value: ["name": name, "age": i])) }
            // the completion: the write is durable now; the log line goes straight to the file
            log.write((name + "\n").data(using: .utf8)!)
            completed += 1
            if completed == killAfter { kill(getpid(), SIGKILL) }
        }
    }
}

func config(_ path: String) -> Realm.Configuration {
    Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [ProcPerson.self])
}

func fail(_ text: String) -> Never {
    FileHandle.standardError.write((text + "\n").data(using: .utf8)!)
    exit(1)
}

/// Opens a Realm and prints "opened" or the error code.
func tryOpen(_ path: String) {
    do {
        let realm = try Realm(configuration: config(path))
        _ = realm.objects(ProcPerson.self).count
        print("opened")
    } catch let error as Realm.Error {
        print(error.code.description)
        FileHandle.standardError.write((error.message + "\n").data(using: .utf8)!)
    } catch {
        fail("unexpected error: \(error)")
    }
}

/// The process's current virtual size in bytes (from /proc/self/statm, in pages).
func virtualSize() -> UInt64 {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
          let pages = text.split(separator: " ").first.flatMap({ UInt64($0) }) else { return 0 }
    return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
}

let args = CommandLine.arguments
guard args.count >= 3 else { fail("usage: swiftstore-testchild COMMAND PATH ...") }
let path = args[2]
switch args[1] {
case "async-write-exit":
    // Queues an asynchronous write and ends the process from its completion, without any
    // clean-up: what the completion promised must be in the file.
    do {
        let realm = try Realm(configuration: config(path))
        realm.writeAsync({ realm.add(ProcPerson(value: ["name": "durable", "age": 1])) }) { error in
            _exit(error == nil ? 0 : 3)
        }
        RunLoop.current.run(until: Date().addingTimeInterval(30))
        fail("the completion never ran")
    } catch {
        fail("async-write-exit failed: \(error)")
    }
case "async-writes-kill":
    guard args.count >= 5, let n = Int(args[4]) else { fail("usage: async-writes-kill PATH LOG N") }
    guard let log = FileHandle(forWritingAtPath: args[3]) else { fail("cannot open \(args[3])") }
    let writer = KillingWriter(config: config(path), log: log, killAfter: 2 * n)
    // detached: top-level code is on the main actor, whose thread sleeps below
    Task.detached {
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for t in 0..<4 { group.addTask { try await writer.write(task: t, count: n) } }
                try await group.waitForAll()
            }
        } catch {
            fail("async-writes-kill failed: \(error)")
        }
        fail("all writes completed and the process was not killed")
    }
    sleep(60)
    fail("the writes did not finish")
case "add":
    guard args.count == 5, let age = Int(args[4]) else { fail("usage: add PATH NAME AGE") }
    do {
        let realm = try Realm(configuration: config(path))
        try realm.write { realm.add(ProcPerson(value: ["name": args[3], "age": age])) }
        print("ok")
    } catch {
        fail("add failed: \(error)")
    }
case "set-age":
    guard args.count == 6, let age = Int(args[4]), let sleepers = UInt32(args[5]) else {
        fail("usage: set-age PATH NAME AGE SLEEPERS")
    }
    do {
        let realm = try Realm(configuration: config(path))
        guard let person = realm.object(ofType: ProcPerson.self, forPrimaryKey: args[3]) else { fail("no \(args[3])") }
        let seen = DispatchSemaphore(value: 0)
        let token = person.observe(on: DispatchQueue(label: "set-age")) { (c: ObjectChange<ProcPerson>) in
            if case .change(let p, _) = c, p.age == age { seen.signal() }
        }
        let asleep = waitForLockFileSleepers(path, sleepers)
        if !asleep.ok { fail("the lock file counts \(asleep.last.map { "\($0)" } ?? "no") sleepers, not \(sleepers)") }
        try realm.write { person.age = age }
        guard seen.wait(timeout: .now() + 30) == .success else { fail("the observer of this process saw nothing") }
        token.invalidate()
        print("ok")
    } catch {
        fail("set-age failed: \(error)")
    }
case "hold":
    guard args.count == 4 else { fail("usage: hold PATH LOG") }
    do {
        let realm = try Realm(configuration: config(path))
        _ = realm.objects(ProcPerson.self).count
        try "holding\n".write(toFile: args[3], atomically: true, encoding: .utf8)
        while true { pause() }
    } catch {
        fail("hold failed: \(error)")
    }
case "add-at":
    guard args.count == 6, let age = Int(args[4]), let start = Double(args[5]) else { fail("usage: add-at PATH NAME AGE MS") }
    let wait = start / 1000 - Date().timeIntervalSince1970
    if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
    do {
        let realm = try Realm(configuration: config(path))
        try realm.write { realm.add(ProcPerson(value: ["name": args[3], "age": age])) }
        print("ok")
    } catch {
        fail("add failed: \(error)")
    }
case "soak-writer":
    guard args.count == 6, let id = Int(args[3]), let seconds = Double(args[5]) else { fail("usage: soak-writer PATH ID LOG S") }
    let log = open(args[4], O_WRONLY | O_CREAT | O_APPEND, 0o644)
    if log < 0 { fail("cannot open \(args[4])") }
    do {
        let realm = try Realm(configuration: config(path))
        let mine = realm.objects(ProcPerson.self).filter("name BEGINSWITH %@", "w\(id)-")
        var next = (mine.max(ofProperty: "age") as Int?).map { $0 + 1 } ?? 0
        let end = Date().addingTimeInterval(seconds)
        var rng = SystemRandomNumberGenerator()
        while Date() < end {
            let batch = Int.random(in: 0..<10, using: &rng) == 0 ? 300 : Int.random(in: 1...3, using: &rng)
            try realm.write {
                for k in next..<(next + batch) {
                    realm.add(ProcPerson(value: ["name": "w\(id)-\(k)", "age": k]))
                }
            }
            next += batch
            let line = "\(next - 1)\n"
            _ = line.withCString { write(log, $0, strlen($0)) }
        }
        print("ok")
    } catch {
        fail("soak-writer failed: \(error)")
    }
case "soak-reader":
    guard args.count == 5, let writers = Int(args[3]), let seconds = Double(args[4]) else { fail("usage: soak-reader PATH W S") }
    do {
        let realm = try Realm(configuration: config(path))
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            realm.refresh()
            for w in 0..<writers {
                let mine = realm.objects(ProcPerson.self).filter("name BEGINSWITH %@", "w\(w)-")
                let n = mine.count
                let top = (mine.max(ofProperty: "age") as Int?) ?? -1
                if n != top + 1 {
                    FileHandle.standardError.write("writer \(w): \(n) objects but the highest seq is \(top)\n".data(using: .utf8)!)
                    exit(2)
                }
            }
            usleep(2000)
        }
        print("ok")
    } catch {
        fail("soak-reader failed: \(error)")
    }
case "soak-observer":
    guard args.count == 4, let seconds = Double(args[3]) else { fail("usage: soak-observer PATH S") }
    do {
        let realm = try Realm(configuration: config(path))
        let all = realm.objects(ProcPerson.self)
        var last = all.count
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            realm.refresh()
            let now = all.count
            if now < last {
                FileHandle.standardError.write("count went from \(last) to \(now)\n".data(using: .utf8)!)
                exit(2)
            }
            last = now
            usleep(1000)
        }
        print("ok \(last)")
    } catch {
        fail("soak-observer failed: \(error)")
    }
case "stress-writer":
    guard args.count == 5, let n = Int(args[4]) else { fail("usage: stress-writer PATH ID N") }
    do {
        let realm = try Realm(configuration: config(path))
        let mine = realm.objects(ProcPerson.self).filter("name BEGINSWITH %@", "s\(args[3])-")
        let seen = DispatchSemaphore(value: 0)
        let want = n
        let token = mine.observe(on: DispatchQueue(label: "stress-writer")) { @Sendable change in
            if case .update(let r, _, _, _) = change, r.count == want { seen.signal() }
        }
        for i in 0..<n {
            try realm.write { realm.add(ProcPerson(value: ["name": "s\(args[3])-\(i)", "age": i])) }
        }
        if seen.wait(timeout: .now() + 60) == .timedOut {
            FileHandle.standardError.write("the observer did not see \(n) objects\n".data(using: .utf8)!)
            exit(2)
        }
        token.invalidate()
        print("ok")
    } catch {
        fail("stress-writer failed: \(error)")
    }
case "sleep-observer":
    guard args.count == 4 else { fail("usage: sleep-observer PATH LOG") }
    let log = open(args[3], O_WRONLY | O_CREAT | O_APPEND, 0o644)
    if log < 0 { fail("cannot open \(args[3])") }
    do {
        let realm = try Realm(configuration: config(path))
        let fd = log
        let token = realm.objects(ProcPerson.self).observe(on: DispatchQueue(label: "sleep-observer")) { @Sendable change in
            var n = -1
            switch change {
            case .initial(let r): n = r.count
            case .update(let r, _, _, _): n = r.count
            case .error: break
            }
            let line = "\(n)\n"
            _ = line.withCString { write(fd, $0, strlen($0)) }
        }
        withExtendedLifetime(token) { while true { pause() } }
    } catch {
        fail("sleep-observer failed: \(error)")
    }
case "read-all":
    do {
        let realm = try Realm(configuration: config(path))
        var n = 0
        var total = 0
        for p in realm.objects(ProcPerson.self) {
            total &+= p.name.utf8.count &+ p.age
            n += 1
        }
        _ = realm.objects(ProcPerson.self).filter("age > 5").count
        _ = realm.objects(ProcPerson.self).sorted(byKeyPath: "age").first?.name
        if let lost = realm.discardedCommit { print("rolled back \(n) \(lost.version) \(lost.openedVersion)") }
        else { print("ok \(n)") }
        _ = total
    } catch let e as Realm.Error {
        print(e.code.description)
        FileHandle.standardError.write((e.message + "\n").data(using: .utf8)!)
        exit(3)
    } catch {
        fail("read-all failed: \(error)")
    }
case "edit":
    do {
        let realm = try Realm(configuration: config(path))
        try realm.write {
            for op in args.dropFirst(3) {
                let body = String(op.dropFirst())
                let parts = body.split(separator: ":").map(String.init)
                switch op.first {
                case "+" where parts.count == 2:
                    realm.add(ProcPerson(value: ["name": parts[0], "age": Int(parts[1]) ?? 0]))
                case "=" where parts.count == 2:
                    guard let p = realm.object(ofType: ProcPerson.self, forPrimaryKey: parts[0]) else { fail("no \(parts[0])") }
                    p.age = Int(parts[1]) ?? 0
                case "-":
                    guard let p = realm.object(ofType: ProcPerson.self, forPrimaryKey: body) else { fail("no \(body)") }
                    realm.delete(p)
                default:
                    fail("bad edit \(op)")
                }
            }
        }
        print("ok")
    } catch {
        fail("edit failed: \(error)")
    }
case "count":
    do {
        let realm = try Realm(configuration: config(path))
        print(realm.objects(ProcPerson.self).count)
    } catch {
        fail("count failed: \(error)")
    }
case "open-limited":
    guard args.count == 4, let mb = UInt64(args[3]) else { fail("usage: open-limited PATH MB") }
    var limit = rlimit()
    limit.rlim_cur = rlim_t(virtualSize() + mb << 20)
    limit.rlim_max = limit.rlim_cur
    if setrlimit(Int32(RLIMIT_AS.rawValue), &limit) != 0 { fail("setrlimit: \(errno)") }
    tryOpen(path)
case "open-as-nobody":
    if setgid(65534) != 0 || setuid(65534) != 0 { fail("cannot drop privileges: \(errno)") }
    tryOpen(path)
case "default-schema":
    do {
        let realm = try Realm(configuration: Realm.Configuration(fileURL: URL(fileURLWithPath: path)))
        try realm.write {
            let dog = ProcDog(value: ["name": "Rex", "owner": ["name": "Ann", "age": 3], "address": ["city": "Oslo"]])
            realm.add(ProcKennel(value: ["dogs": [dog]]))
        }
        let names = realm.schema.objectSchema.map(\.className).joined(separator: ",")
        let dog = realm.objects(ProcDog.self).first!
        print("\(names) \(dog.owner!.name) \(dog.address!.city) \(dog.kennels.count)")
    } catch {
        fail("default-schema failed: \(error)")
    }
default:
    fail("unknown command \(args[1])")
}
