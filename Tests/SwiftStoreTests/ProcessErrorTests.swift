import Foundation
import Testing
@testable import SwiftStore

/// Error codes that need a process of their own: a small address-space limit, an unprivileged
/// user.
@Suite struct ProcessErrorTests {
    /// A file larger than the child's address space gives `.addressSpaceExhausted`, and the file
    /// is intact afterwards.
    @Test func addressSpaceExhausted() throws {
        let dir = TempDir()
        let config = Realm.Configuration(fileURL: dir.file(), objectTypes: [ProcPerson.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write { realm.add(ProcPerson(value: ["name": "Kept", "age": 1])) }
        }
        // Grow the file (sparse) past what the child may map: free space at the end is valid.
        let handle = try FileHandle(forWritingTo: dir.file())
        try handle.truncate(atOffset: 3 << 30)
        try handle.close()
        let r = try ChildProcess.run(["open-limited", dir.file().path, "512"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "addressSpaceExhausted", "\(r.stderr)")
        let realm = try Realm(configuration: config)
        #expect(realm.object(ofType: ProcPerson.self, forPrimaryKey: "Kept")?.age == 1)
    }

    /// A file the user may not read gives `.filePermissionDenied` (the child drops root).
    @Test func filePermissionDenied() throws {
        let dir = TempDir()
        let config = Realm.Configuration(fileURL: dir.file(), objectTypes: [ProcPerson.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write { realm.add(ProcPerson(value: ["name": "Kept", "age": 1])) }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: dir.file().path)
        // The directory must be reachable by the unprivileged user.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: dir.url.path)
        let r = try ChildProcess.run(["open-as-nobody", dir.file().path], in: dir)
        if getuid() != 0 {
            // Without root the child cannot switch users; the case needs root (CI runs as root).
            #expect(r.status != 0)
            return
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "filePermissionDenied", "\(r.stderr)")
    }
}
