import Foundation
import Testing
@testable import SwiftStore

/// The root of the Swift-only hierarchy the scan is asked about.
class ScanBase {}

/// A direct, final subclass of `ScanBase`.
final class ScanA: ScanBase {}

/// A direct subclass of `ScanBase` that has a subclass of its own.
class ScanB: ScanBase {}

/// An indirect subclass of `ScanBase`, through `ScanB`.
final class ScanC: ScanB {}

/// A generic subclass of `ScanBase`; its metadata needs a type argument, so the scan skips it.
class ScanG<T>: ScanBase {}

/// A subclass of a specialization of the generic class; it is not generic itself, so it is found.
final class ScanGInt: ScanG<Int> {}

/// A generic type whose nested class is generic through its parent and so is skipped.
enum ScanOuter<T> {
    /// A subclass of `ScanBase` nested in a generic context.
    final class Nested: ScanBase {}
}

/// A class outside every hierarchy under test.
final class ScanUnrelated {}

/// The root of the hierarchy built on NSObject, as the real `Object` base class is.
class ScanObjBase: NSObject {}

/// A direct subclass of `ScanObjBase`.
final class ScanObjA: ScanObjBase {}

/// A direct subclass of `ScanObjBase` that has a subclass of its own.
class ScanObjB: ScanObjBase {}

/// An indirect subclass of `ScanObjBase`, through `ScanObjB`.
final class ScanObjC: ScanObjB {}

/// Scans of the type metadata records of the test process.
@Suite struct TypeMetadataScanTests {
    /// The identities of a list of classes, to compare scans as sets.
    ///
    /// - Parameter classes: The classes.
    /// - Returns: Their `ObjectIdentifier`s.
    func ids(_ classes: [AnyClass]) -> Set<ObjectIdentifier> {
        Set(classes.map { ObjectIdentifier($0) })
    }

    /// A scan of a Swift root class finds its non-generic subclasses at every depth, and only them.
    @Test func findsEverySubclassOfASwiftRoot() {
        let found = TypeMetadataScan.classes(inheritingFrom: ScanBase.self)
        #expect(found.count == 4)
        #expect(ids(found) == ids([ScanA.self, ScanB.self, ScanC.self, ScanGInt.self]))
    }

    /// A scan of a class in the middle of a hierarchy finds only what lies below it.
    @Test func findsOnlyTheSubtreeOfAnInnerClass() {
        let found = TypeMetadataScan.classes(inheritingFrom: ScanB.self)
        #expect(ids(found) == ids([ScanC.self]))
        #expect(found.count == 1)
    }

    /// A scan of a class with no subclasses finds nothing.
    @Test func findsNothingUnderALeaf() {
        #expect(TypeMetadataScan.classes(inheritingFrom: ScanC.self).isEmpty)
        #expect(TypeMetadataScan.classes(inheritingFrom: ScanUnrelated.self).isEmpty)
    }

    /// A scan of an NSObject subclass finds its subclasses and nothing from Foundation.
    @Test func findsSubclassesOfAnNSObjectSubclass() {
        let found = TypeMetadataScan.classes(inheritingFrom: ScanObjBase.self)
        #expect(found.count == 3)
        #expect(ids(found) == ids([ScanObjA.self, ScanObjB.self, ScanObjC.self]))
    }

    /// A scan of NSObject itself reaches the test's classes as well as Foundation's own.
    @Test func findsClassesAcrossImagesUnderNSObject() {
        let found = ids(TypeMetadataScan.classes(inheritingFrom: NSObject.self))
        #expect(ids([ScanObjBase.self, ScanObjA.self, ScanObjB.self, ScanObjC.self]).isSubset(of: found))
        #expect(found.contains(ObjectIdentifier(NSString.self)))
        #expect(!found.contains(ObjectIdentifier(NSObject.self)))
        #expect(!found.contains(ObjectIdentifier(ScanA.self)))
    }

    /// The result is sorted by qualified name, so repeated scans agree element by element.
    @Test func returnsTheSameOrderEveryTime() {
        let first = TypeMetadataScan.classes(inheritingFrom: ScanBase.self)
        let second = TypeMetadataScan.classes(inheritingFrom: ScanBase.self)
        #expect(first.map { ObjectIdentifier($0) } == second.map { ObjectIdentifier($0) })
        let names = first.map { String(reflecting: $0) }
        #expect(names == names.sorted())
        #expect(names.first == String(reflecting: ScanA.self))
    }
}
