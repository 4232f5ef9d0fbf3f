// RealmSwift conformance: the Realm.Error codes RealmSwift gives when a file cannot be opened as
// a Realm (its core's InvalidDatabase and FileAccessError map to .invalidDatabase and
// .fileAccess; a file the user may not read is .filePermissionDenied, in ProcessErrorTests).
import Foundation
import Testing
import TestSupport
import SwiftStore

final class CfErDog: Object {
    @Persisted var name = ""
}

@Suite("Conformance: error codes")
struct ErrorCodeConformanceTests {
    @Test func aFileThatIsNotARealmIsInvalidDatabase() throws {
        let dir = TempDir()
        let url = dir.file("notes.realm")
        try Data(String(repeating: "not a database, just some text\n", count: 300).utf8).write(to: url)
        #expect {
            _ = try Realm(configuration: Realm.Configuration(fileURL: url, objectTypes: [CfErDog.self]))
        } throws: { ($0 as? Realm.Error)?.code == .invalidDatabase }
    }

    @Test func aDirectoryIsFileAccess() throws {
        let dir = TempDir()
        let url = dir.file("folder.realm")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        #expect {
            _ = try Realm(configuration: Realm.Configuration(fileURL: url, objectTypes: [CfErDog.self]))
        } throws: { ($0 as? Realm.Error)?.code == .fileAccess }
    }
}
