/// Any `RealmCollection` of `Element` (a Results, a List, a MutableSet, LinkingObjects...)
/// behind one type (RealmSwift's `AnyRealmCollection`).
///
/// ```swift
/// func show(_ dogs: AnyRealmCollection<Dog>) { print(dogs.count) }
/// show(AnyRealmCollection(realm.objects(Dog.self)))
/// show(AnyRealmCollection(person.dogs))
/// ```
public struct AnyRealmCollection<Element: RealmCollectionValue>: RealmCollection {
    private let countOf: () -> Int
    private let elementAt: (Int) -> Element
    private let realmOf: () -> Realm?
    private let invalidated: () -> Bool
    private let root: () -> _RealmQueryRoot?
    private let text: () -> String
    private let frozenOf: () -> Bool
    private let freezeOf: () -> AnyRealmCollection
    private let thawOf: () -> AnyRealmCollection?
    /// The wrapped collection read through another Realm of its file (ThreadSafeReference).
    let resolveOf: (RealmCore) -> AnyRealmCollection?
    /// The wrapped collection.
    let base: Any

    /// Wraps `base`.
    public init<C: RealmCollection>(_ base: C) where C.Element == Element {
        countOf = { base.count }
        elementAt = { base[base.index(base.startIndex, offsetBy: $0)] }
        realmOf = { base.realm }
        invalidated = { base.isInvalidated }
        root = { base._rlmQueryRoot }
        text = { base.description }
        frozenOf = { base.isFrozen }
        freezeOf = { AnyRealmCollection(base.freeze()) }
        thawOf = { base.thaw().map { AnyRealmCollection($0) } }
        resolveOf = { core in
            guard let c = base as? any ConfinedValue else { return nil }
            return (c.resolved(in: core) as? C).map { AnyRealmCollection($0) }
        }
        self.base = base
    }

    public typealias Index = Int

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { count }
    /// The number of elements.
    public var count: Int { countOf() }

    /// The element at `position`.
    public subscript(position: Int) -> Element { elementAt(position) }

    /// The Realm of the wrapped collection.
    public var realm: Realm? { realmOf() }
    /// Whether the wrapped collection can no longer be read.
    public var isInvalidated: Bool { invalidated() }
    /// Implementation detail: the wrapped collection's query.
    public var _rlmQueryRoot: _RealmQueryRoot? { root() }
    /// The wrapped collection's description.
    public var description: String { text() }
    /// Whether the wrapped collection belongs to a frozen Realm.
    public var isFrozen: Bool { frozenOf() }
    /// The wrapped collection frozen (itself when frozen).
    public func freeze() -> AnyRealmCollection { isFrozen ? self : freezeOf() }
    /// The live counterpart of the wrapped frozen collection, or nil when its object was deleted.
    public func thaw() -> AnyRealmCollection? { isFrozen ? thawOf() : self }
}

extension AnyRealmCollection: Encodable where Element: Encodable {}

extension LinkingObjects: Encodable where Element: Encodable {}
