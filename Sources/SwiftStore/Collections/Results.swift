import CStore
import Foundation

/// The objects of a class in a Realm, the objects linking to one object, or a query over a
/// collection: a live, lazy view (RealmSwift's `Results`). It shows the Realm's current state
/// each time it is read (after `refresh()`, a commit, or a write in the same transaction), and
/// reads objects only when they are accessed; `count` and aggregates run in the core.
///
/// ```swift
/// let puppies = realm.objects(Dog.self).filter("age < %@", 2).sorted(byKeyPath: "name")
/// print(puppies.count, puppies.first?.name ?? "", puppies.average(ofProperty: "age") as Double?)
/// ```
public struct Results<Element: RealmCollectionValue>: RealmCollection {
    let base: ResultsBase

    init(base: ResultsBase) {
        self.base = base
    }

    init(core: RealmCore, source: ResultsBase.Root) {
        base = ResultsBase(core: core, root: source)
    }

    public typealias Index = Int

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { count }

    /// The number of elements (computed in the core; no element is read).
    public var count: Int { base.count }

    /// The element at `position`.
    public subscript(position: Int) -> Element {
        Element._rlmDecode(_Stored(base.element(at: position)))
    }

    /// The Realm the elements belong to.
    public var realm: Realm? { base.realmCore.map { Realm(core: $0) } }

    /// Whether the results can no longer be read (their owner was deleted or the Realm
    /// invalidated).
    public var isInvalidated: Bool { base.isInvalidated }

    /// Implementation detail: the query these results run.
    public var _rlmQueryRoot: _RealmQueryRoot? { _RealmQueryRoot(base: base) }

    /// Iterates the elements as they are when iteration starts.
    public func makeIterator() -> RLMIterator<Element> {
        RLMIterator(snapshotOf: base)
    }

    /// `Results<Dog> <n> ( [0] Dog { ... }, ... )`, as RealmSwift prints results.
    public var description: String {
        describe(depth: 0)
    }
}

/// Iterates a collection as it was when iteration started (RealmSwift's `RLMIterator`): the
/// object keys are taken then and each object is read when reached (objects deleted meanwhile
/// are skipped); a collection of values is copied then.
public struct RLMIterator<Element: RealmCollectionValue>: IteratorProtocol {
    @usableFromInline let base: ResultsBase?
    @usableFromInline let keys: [Int64]
    @usableFromInline let values: [Element]
    @usableFromInline var position = 0
    /// For objects of exactly `Element`'s class: the class and the Realm (kept alive by `base`)
    /// and the Realm's state when the keys were taken. While that state holds, every key still
    /// names an object, so `next()` makes the accessor without a cast or an existence check.
    @usableFromInline let direct: (info: Unmanaged<ClassInfo>, core: Unmanaged<RealmCore>, stamp: (UInt64, UInt64, UInt64))?
    /// The accessor of the last object made on the direct path: the next key is usually the
    /// next row of its cluster leaf, so the next accessor starts positioned without a descent.
    @usableFromInline var cursor = cs_obj()
    /// The instance the direct path gave last, for classes whose instances hold nothing but
    /// their accessor (`ClassInfo.reusesAccessors`): when nothing else references it any more,
    /// the next element is read through it, moved to the next row, instead of a new instance.
    @usableFromInline var spare: ObjectBase?

    init(base: ResultsBase, keys: [Int64]) {
        self.base = base
        self.keys = keys
        self.values = []
        if let info = base.info, ObjectIdentifier(info.objectSchema.objectClass) == ObjectIdentifier(Element.self) {
            let core = base.core
            direct = (Unmanaged.passUnretained(info), Unmanaged.passUnretained(core), core.stateStamp)
        } else {
            direct = nil
        }
    }

    init(values: [Element]) {
        self.base = nil
        self.keys = []
        self.values = values
        self.direct = nil
    }

    /// An iterator over a managed collection's snapshot (keys for objects, values otherwise).
    init(snapshotOf base: ResultsBase) {
        if base.info != nil {
            self.init(base: base, keys: base.currentKeys())
        } else {
            self.init(values: base.currentKeys().map { Element._rlmDecode(_Stored(base.element(forKey: $0))) })
        }
    }

    /// The next element. The common case (objects of exactly `Element`'s class, nothing
    /// written since the pass began) is inlined into the caller, specialized for `Element`.
    @inlinable
    public mutating func next() -> Element? {
        if let direct, position < keys.count {
            let key = keys[position]
            let made = direct.core._withUnsafeGuaranteedRef {
                $0.nextObject(direct.info, key: key, stamp: direct.stamp, cursor: &cursor, spare: &spare)
            }
            if let made {
                position += 1
                // `Element` is the object's own class (checked when the iterator was made).
                return unsafeBitCast(made, to: Element.self)
            }
        }
        return nextChecked()
    }

    /// The next element the slow way: values, objects seen through another class, or keys
    /// that may name deleted objects (each is checked; deleted ones are skipped).
    @usableFromInline
    mutating func nextChecked() -> Element? {
        if keys.isEmpty {
            guard position < values.count else { return nil }
            position += 1
            return values[position - 1]
        }
        guard let base else { return nil }
        while position < keys.count {
            let key = keys[position]
            position += 1
            let value = base.element(forKey: key)
            if case .object(let o) = value, o.isInvalidated { continue }
            return Element._rlmDecode(_Stored(value))
        }
        return nil
    }
}

/// The iterator of `Results` (the same snapshot iterator every collection uses).
public typealias ResultsIterator<Element: RealmCollectionValue> = RLMIterator<Element>

extension Results: Encodable where Element: Encodable {}

extension Results: _DynamicSequence {
    var dynamicElements: [Any] { map { $0 as Any } }
}
