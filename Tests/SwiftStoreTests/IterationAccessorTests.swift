// A loop over Results that reads each object and lets it go is served by one instance moved from
// row to row (docs/ARCHITECTURE.md, The Swift layer: Results): these tests show every element
// still reads its own row, objects the loop keeps stay their own, classes with state of their
// own (a plain stored property) get an instance per element, and frozen results read from two
// threads at once give each thread's loop its own instance.

import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import SwiftStore

final class ICounted: Object {
    static let made = Atomic<Int>(0)
    @Persisted var n = 0
    @Persisted var name = ""

    required init() {
        super.init()
        ICounted.made.add(1, ordering: .relaxed)
    }
}

/// The same shape, counted on its own (the suites run in parallel).
final class IFrozenCounted: Object {
    static let made = Atomic<Int>(0)
    @Persisted var n = 0
    @Persisted var name = ""

    required init() {
        super.init()
        IFrozenCounted.made.add(1, ordering: .relaxed)
    }
}

/// The same shape, not counted.
final class IPlain: Object {
    @Persisted var n = 0
    @Persisted var name = ""
}

/// A class with a stored property that is not persisted: an instance keeps a value of its own.
final class INoted: Object {
    static let made = Atomic<Int>(0)
    @Persisted var n = 0
    var note = ""

    required init() {
        super.init()
        INoted.made.add(1, ordering: .relaxed)
    }
}

private let models: [ObjectBase.Type] = [ICounted.self, IFrozenCounted.self, IPlain.self, INoted.self]

/// `n` objects of `type` with n = 0..<n and name "name \(n - i)" (where the class has one).
private func seed<T: Object>(_ realm: Realm, _ type: T.Type, _ n: Int) throws {
    try realm.write {
        for i in 0..<n {
            let value: [String: Any] = T.self == INoted.self ? ["n": i] : ["n": i, "name": "name \(n - i)"]
            realm.create(type, value: value)
        }
    }
}

@Suite struct IterationAccessorTests {
    @Test func aLoopThatKeepsNoObjectReadsEveryRowThroughOneInstance() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try seed(realm, ICounted.self, 5000)
            let before = ICounted.made.load(ordering: .relaxed)
            var sum = 0, chars = 0
            for o in realm.objects(ICounted.self) {
                sum += o.n
                chars += o.name.count
            }
            #expect(sum == 4999 * 5000 / 2)
            #expect(chars == (1...5000).map { "name \($0)".count }.reduce(0, +))
            // sorted by name ("name 1" < "name 10" < ... byte order) and filtered
            var sorted: [Int] = []
            for o in realm.objects(ICounted.self).filter("n >= 100").sorted(byKeyPath: "name") { sorted.append(o.n) }
            let want = (100..<5000).sorted { Array("name \(5000 - $0)".utf8).lexicographicallyPrecedes(Array("name \(5000 - $1)".utf8)) }
            #expect(sorted == want)
            let made = ICounted.made.load(ordering: .relaxed) - before
            #expect(made < 10, "made \(made) instances for 9,900 elements")
        }
    }

    @Test func objectsTheLoopKeepsStayTheirOwn() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try seed(realm, IPlain.self, 600)
            var kept: [IPlain] = []
            var last: IPlain?
            for o in realm.objects(IPlain.self) {
                if o.n % 3 == 0 { kept.append(o) }
                if let last { #expect(last.n == o.n - 1 && last !== o) }
                last = o
            }
            #expect(kept.map(\.n) == Array(stride(from: 0, to: 600, by: 3)))
            #expect(Set(kept.map(ObjectIdentifier.init)).count == kept.count)
            let all = Array(realm.objects(IPlain.self))
            #expect(all.map(\.n) == Array(0..<600))
            #expect(Set(all.map(ObjectIdentifier.init)).count == 600)
            #expect(realm.objects(IPlain.self).first { $0.n == 42 }?.name == "name 558")
        }
    }

    @Test func aClassWithStateOfItsOwnGetsAnInstancePerElement() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try seed(realm, INoted.self, 300)
            let before = INoted.made.load(ordering: .relaxed)
            var fresh = 0
            for o in realm.objects(INoted.self) {
                if o.note.isEmpty { fresh += 1 }
                o.note = "seen"
            }
            #expect(fresh == 300)
            #expect(INoted.made.load(ordering: .relaxed) - before == 300)
        }
    }

    @Test func aLoopThatWritesStillReadsEveryRow() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try seed(realm, IPlain.self, 400)
            try realm.write {
                for o in realm.objects(IPlain.self) where o.n % 2 == 0 { o.n += 1000 }
            }
            let ns = realm.objects(IPlain.self).map(\.n)
            #expect(ns == (0..<400).map { $0 % 2 == 0 ? $0 + 1000 : $0 })
        }
    }
}

/// Frozen results are read from two threads at once, each loop through its own instance (in the
/// `make tsan` filter through the suite's name).
@Suite struct IterationAccessorFreezeTests {
    @Test func frozenResultsReadFromTwoThreads() throws {
        try withTempDir { dir in
            let realm = try Realm(configuration: dir.config(models))
            try seed(realm, IFrozenCounted.self, 3000)
            let before = IFrozenCounted.made.load(ordering: .relaxed)
            let frozen = UncheckedBox(realm.objects(IFrozenCounted.self).freeze())
            let sums = Mutex([0, 0])
            let group = DispatchGroup()
            for k in 0..<2 {
                group.enter()
                Thread {
                    var s = 0
                    for o in frozen.value { s += o.n + o.name.count }
                    sums.withLock { $0[k] = s }
                    group.leave()
                }.start()
            }
            group.wait()
            let want = 2999 * 3000 / 2 + (1...3000).map { "name \($0)".count }.reduce(0, +)
            #expect(sums.withLock { $0 } == [want, want])
            #expect(IFrozenCounted.made.load(ordering: .relaxed) - before < 10)
        }
    }
}
