// swiftstore-testchild: the helper executable SwiftStore's tests run as a separate process (a
// second process committing to a shared file, an open under a small address-space limit, an
// open as an unprivileged user). It prints one line of result on stdout and exits 0, or
// prints the error on stderr and exits 1.
//
//   add PATH NAME AGE          add a ProcPerson in one write and commit it
//   count PATH                 print the number of ProcPerson objects
//   open-limited PATH MB       limit the address space to (current + MB) MiB, then open PATH
//   open-as-nobody PATH        drop to uid/gid 65534, then open PATH
//   add-at PATH NAME AGE MS    as add, but first wait until MS milliseconds since 1970 (so that
//                              several children open a new file at the same moment)
//   default-schema PATH        open PATH without objectTypes (the schema is every model class
//                              in this process, found by the type-metadata scan), write one
//                              object of each class, print the class names
//
// The models here are all valid: on Linux every test target links into one test binary, so
// the default schema can only be exercised in a process whose models are known.
// Opening prints "opened" or the Realm.Error code's name.

import Foundation
import SwiftStore
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
case "add":
    guard args.count == 5, let age = Int(args[4]) else { fail("usage: add PATH NAME AGE") }
    do {
        let realm = try Realm(configuration: config(path))
        try realm.write { realm.add(ProcPerson(value: ["name": args[3], "age": age])) }
        print("ok")
    } catch {
        fail("add failed: \(error)")
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
