// RealmSwift conformance: `_realmIgnoreClass()` keeps a model class out of the default schema.
// The test process holds model classes that clash on purpose (other suites test that), so the
// default class list is checked directly rather than by opening a Realm with it.
import Foundation
import Testing
@testable import SwiftStore

@Suite("Conformance: default schema")
struct DefaultSchemaConformanceTests {
    @Test func ignoredClassesAreLeftOut() {
        let names = SchemaDiscovery.defaultObjectTypes().map { ObjectIdentifier($0) }
        #expect(!names.contains(ObjectIdentifier(CfIgnored.self)))
        #expect(names.contains(ObjectIdentifier(CfKennel.self)))
        #expect(!names.contains(ObjectIdentifier(Object.self)))
    }
}
