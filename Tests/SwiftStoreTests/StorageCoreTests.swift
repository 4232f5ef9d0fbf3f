import Foundation
import Testing
@testable import SwiftStore

@Suite struct StorageCoreTests {
    @Test func reportsTheCoreItLinks() {
        #expect(StorageCore.formatVersion == 8)
        let parts = StorageCore.libraryVersion.split(separator: ".")
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { Int($0) != nil })
    }
}
