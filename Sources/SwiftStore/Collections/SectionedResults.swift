import Foundation

/// What `SectionedResults` and `ResultsSection` share (RealmSwift's `RealmSectionedResult`).
/// Both are thread-confined: a `ThreadSafeReference` or `@ThreadSafe` hands them to another
/// thread, where they resolve to the same sections of that thread's Realm.
public protocol RealmSectionedResult: RandomAccessCollection, Equatable, ThreadConfined {
    /// The Realm of the elements, or nil if the results are detached.
    var realm: Realm? { get }
    /// Whether the collection can no longer be read.
    var isInvalidated: Bool { get }
    /// The number of sections (of `SectionedResults`) or elements (of a `ResultsSection`).
    var count: Int { get }
    /// Whether the collection is a frozen snapshot.
    var isFrozen: Bool { get }
    /// The collection frozen at the Realm's current version (itself when frozen): it never
    /// changes and any thread may read it.
    func freeze() -> Self
    /// The live collection of a frozen one in the calling thread's Realm (itself when live).
    func thaw() -> Self?
    /// Calls `block` with the collection now and after every commit that changes it.
    func observe(keyPaths: [String]?, on queue: DispatchQueue?,
                 _ block: @escaping (SectionedResultsChange<Self>) -> Void) -> NotificationToken
}

/// Sorted results grouped into sections by a key (RealmSwift's `SectionedResults`): the list a
/// contacts screen shows under letter headings.
///
/// ```swift
/// let byLetter = realm.objects(Contact.self).sectioned(by: { String($0.name.prefix(1)) },
///                                                      sortDescriptors: [SortDescriptor(keyPath: "name")])
/// for section in byLetter { print(section.key, section.count, section.first?.name ?? "") }
/// ```
///
/// Live and lazy: the sections are computed in one pass over the sorted results when first
/// read and again after the Realm moved; no object is kept per element. Sections appear in
/// the order of their first element; all elements with the same key are in one section.
public struct SectionedResults<Key: _Persistable & Hashable, SectionElement: RealmCollectionValue>: RealmSectionedResult, CustomStringConvertible {
    /// A section.
    public typealias Element = ResultsSection<Key, SectionElement>
    public typealias Index = Int

    let base: SectionsBase<Key, SectionElement>

    init(base: SectionsBase<Key, SectionElement>) {
        self.base = base
    }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of sections.
    public var endIndex: Int { count }

    /// The number of sections.
    public var count: Int { base.current().count }

    /// The keys of the sections, in section order.
    public var allKeys: [Key] { base.current().keys }

    /// The section at `index`.
    public subscript(index: Int) -> ResultsSection<Key, SectionElement> {
        let layout = base.current()
        precondition(index >= 0 && index < layout.count, "Index \(index) is out of bounds (must be less than \(layout.count)).")
        return ResultsSection(base: base, key: layout.keys[index])
    }

    /// Iterates the sections as they are when iteration starts.
    public func makeIterator() -> SectionedResultsIterator<Key, SectionElement> {
        SectionedResultsIterator(base: base, keys: base.current().keys)
    }

    /// The element at row `indexPath.item` of section `indexPath.section`.
    public subscript(indexPath: IndexPath) -> SectionElement {
        self[indexPath.section][indexPath.item]
    }

    /// The Realm of the elements, or nil if the results are detached.
    public var realm: Realm? { base.results.realmCore.map { Realm(core: $0) } }

    /// Whether the sections can no longer be read (their Realm was invalidated or the
    /// collection they section is gone).
    public var isInvalidated: Bool { base.results.isInvalidated }

    /// Whether these sections are a frozen snapshot (`freeze()`).
    public var isFrozen: Bool { base.isFrozen }

    /// These sections frozen at the Realm's current version (themselves when frozen): the
    /// sections of the frozen results, with the same keys and elements as now. They never
    /// change, any thread may read them, and observing them traps. Traps inside a write
    /// transaction.
    public func freeze() -> SectionedResults {
        SectionedResults(base: base.frozen())
    }

    /// The live sections of frozen ones in the calling thread's Realm (themselves when live):
    /// the same results and key block, sectioned at that Realm's version. Nil when the object
    /// the results hang from does not exist there.
    public func thaw() -> SectionedResults? {
        base.thawed().map { SectionedResults(base: $0) }
    }

    /// Whether both section the same results (the same live view).
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.base === rhs.base }

    /// `SectionedResults <n> ( key: count, ... )`.
    public var description: String {
        let layout = base.current()
        let parts = (0..<layout.count).map { "\t[\($0)] \(layout.keys[$0]): \(layout.rows($0)) elements" }
        return "SectionedResults<\(Key.self), \(SectionElement.self)> <\(layout.count)> (\n" + parts.joined(separator: ",\n") + "\n)"
    }
}

/// The elements of `SectionedResults` with one section key, in the results' order
/// (RealmSwift's `ResultsSection`). A section is identified by its key: once no element has the
/// key any more, it is empty.
public struct ResultsSection<Key: _Persistable & Hashable, T: RealmCollectionValue>: RealmSectionedResult, Identifiable, CustomStringConvertible {
    public typealias Element = T
    public typealias Index = Int

    let base: SectionsBase<Key, T>

    /// The key the section's elements share.
    public let key: Key

    init(base: SectionsBase<Key, T>, key: Key) {
        self.base = base
        self.key = key
    }

    /// The key (sections are identified by their key).
    public var id: Key { key }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { count }

    /// The number of elements.
    public var count: Int {
        let layout = base.current()
        return layout.indexOfKey[key].map { layout.rows($0) } ?? 0
    }

    /// The element at `index` of the section.
    public subscript(index: Int) -> T {
        let layout = base.current()
        let rows = layout.indexOfKey[key].map { layout.rows($0) } ?? 0
        precondition(index >= 0 && index < rows, "Index \(index) is out of bounds (must be less than \(rows)).")
        return base.element(at: layout.position(section: layout.indexOfKey[key]!, row: index))
    }

    /// Iterates the section's rows as they are when iteration starts.
    public func makeIterator() -> SectionIterator<T> {
        let layout = base.current()
        let positions = layout.indexOfKey[key].map { s in (0..<layout.rows(s)).map { layout.position(section: s, row: $0) } } ?? []
        return SectionIterator(positions: positions, element: base.element(at:))
    }

    /// The Realm of the elements, or nil if the results are detached.
    public var realm: Realm? { base.results.realmCore.map { Realm(core: $0) } }

    /// Whether the section can no longer be read.
    public var isInvalidated: Bool { base.results.isInvalidated }

    /// Whether this section is a frozen snapshot (`freeze()`).
    public var isFrozen: Bool { base.isFrozen }

    /// This section frozen at the Realm's current version (itself when frozen): the section
    /// with the same key of the frozen sectioned results. It never changes, any thread may
    /// read it, and observing it traps. Traps inside a write transaction.
    public func freeze() -> ResultsSection {
        ResultsSection(base: base.frozen(), key: key)
    }

    /// The live section with the same key of frozen sections, in the calling thread's Realm
    /// (itself when live); nil when the object the results hang from does not exist there.
    public func thaw() -> ResultsSection? {
        base.thawed().map { ResultsSection(base: $0, key: key) }
    }

    /// Whether both are the same section of the same sectioned results.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.base === rhs.base && lhs.key == rhs.key }

    /// `ResultsSection <key> <n> ( ... )`.
    public var description: String { "ResultsSection<\(T.self)> \(key) <\(count)>" }
}

// MARK: - Iterators

/// The iterator of `SectionedResults`: the sections there are when iteration starts, in order.
public struct SectionedResultsIterator<Key: _Persistable & Hashable, Element: RealmCollectionValue>: IteratorProtocol {
    let base: SectionsBase<Key, Element>
    let keys: [Key]
    var at = 0

    /// The next section, or nil at the end.
    public mutating func next() -> ResultsSection<Key, Element>? {
        guard at < keys.count else { return nil }
        at += 1
        return ResultsSection(base: base, key: keys[at - 1])
    }
}

/// The iterator of a `ResultsSection`: the section's rows as they are when iteration starts,
/// each element read from the results when it is reached.
public struct SectionIterator<Element: RealmCollectionValue>: IteratorProtocol {
    let positions: [Int]
    let element: (Int) -> Element
    var at = 0

    init(positions: [Int], element: @escaping (Int) -> Element) {
        self.positions = positions
        self.element = element
    }

    /// The next element, or nil at the end.
    public mutating func next() -> Element? {
        guard at < positions.count else { return nil }
        at += 1
        return element(positions[at - 1])
    }
}

// MARK: - Sectioning a collection

extension RealmCollection {
    /// The collection sorted by `sortDescriptors` and grouped by the key `keyBlock` gives
    /// each element. The primary sort descriptor must determine the key (elements with the
    /// same key adjacent); elements with the same key that are not adjacent still share one
    /// section. `keyBlock` is called once per element each time the sections are computed, in
    /// no set order (objects are visited in the order they are stored).
    public func sectioned<Key: _Persistable & Hashable>(sortDescriptors: [SortDescriptor],
                                                        _ keyBlock: @escaping (Element) -> Key) -> SectionedResults<Key, Element> {
        sectioned(sortDescriptors: sortDescriptors, keyBlock, keyProperty: nil)
    }

    /// `sectioned(sortDescriptors:_:)`, where `keyProperty` (when not nil) names the persisted
    /// property whose value `keyBlock` returns: the sections are then computed from its column.
    func sectioned<Key: _Persistable & Hashable>(sortDescriptors: [SortDescriptor], _ keyBlock: @escaping (Element) -> Key,
                                                 keyProperty: String?,
                                                 objectKeyOf: ((ObjectBase) -> Key)? = nil) -> SectionedResults<Key, Element> {
        if sortDescriptors.isEmpty {
            preconditionFailure("There must be at least one SortDescriptor when using SectionedResults.")
        }
        let sorted = self.sorted(by: sortDescriptors)
        let column = keyProperty.map { (name: $0, read: { (o: ObjectBase, col: UInt32) in Key._rlmGet(o, col) }) }
        return SectionedResults(base: SectionsBase(results: sorted.base, sortKeyPaths: sortDescriptors.map(\.keyPath),
                                                   keyOf: keyBlock, keyColumn: column, objectKeyOf: objectKeyOf))
    }

    /// The collection sorted by its values and grouped by the key `block` gives each value.
    public func sectioned<Key: _Persistable & Hashable>(by block: @escaping (Element) -> Key,
                                                        ascending: Bool = true) -> SectionedResults<Key, Element> {
        sectioned(sortDescriptors: [SortDescriptor(keyPath: "self", ascending: ascending)], block)
    }
}

extension RealmCollection where Element: ObjectBase {
    /// The objects sorted by the property `keyPath` names, one section per distinct value.
    public func sectioned<Key: _Persistable & Hashable>(by keyPath: KeyPath<Element, Key>,
                                                        ascending: Bool = true) -> SectionedResults<Key, Element> {
        let name = KeyPathTracer.name(for: keyPath, root: Element.self)
        return sectioned(sortDescriptors: [SortDescriptor(keyPath: name, ascending: ascending)], { $0[keyPath: keyPath] },
                         keyProperty: name.contains(".") ? nil : name,
                         objectKeyOf: { unsafeDowncast($0, to: Element.self)[keyPath: keyPath] })
    }

    /// The objects sorted by `sortDescriptors`, one section per distinct value of the property
    /// `keyPath` names, which must be the primary sort descriptor's.
    public func sectioned<Key: _Persistable & Hashable>(by keyPath: KeyPath<Element, Key>,
                                                        sortDescriptors: [SortDescriptor]) -> SectionedResults<Key, Element> {
        guard let first = sortDescriptors.first else {
            preconditionFailure("Can not section Results with empty sortDescriptor parameter.")
        }
        let name = KeyPathTracer.name(for: keyPath, root: Element.self)
        if name != first.keyPath {
            preconditionFailure("The section key path must match the primary sort descriptor.")
        }
        return sectioned(sortDescriptors: sortDescriptors, { $0[keyPath: keyPath] }, keyProperty: name.contains(".") ? nil : name,
                         objectKeyOf: { unsafeDowncast($0, to: Element.self)[keyPath: keyPath] })
    }

    /// The objects sorted by `sortDescriptors` and grouped by the key `block` gives each one
    /// (the primary sort descriptor must determine the key).
    public func sectioned<Key: _Persistable & Hashable>(by block: @escaping (Element) -> Key,
                                                        sortDescriptors: [SortDescriptor]) -> SectionedResults<Key, Element> {
        sectioned(sortDescriptors: sortDescriptors, block, keyProperty: nil,
                  objectKeyOf: { block(unsafeDowncast($0, to: Element.self)) })
    }
}
