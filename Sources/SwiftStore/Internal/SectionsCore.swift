import CStore
import Foundation

/// The sections of one version of sorted results (docs/ARCHITECTURE.md, Sectioned results):
/// the section keys in order of first appearance and, for each section, its rows as positions
/// in the results. Built in one pass over the results; it holds integers only, no objects.
struct SectionLayout<Key: Hashable> {
    /// The section keys, in order of first appearance in the results.
    private(set) var keys: [Key] = []
    /// The section of each key.
    private(set) var indexOfKey: [Key: Int] = [:]
    /// Section `s` holds rows `starts[s] ..< starts[s + 1]` of `order` (of the results when
    /// `order` is nil).
    private(set) var starts: [Int] = [0]
    /// When some key's elements are not adjacent in the results: the positions of the results
    /// grouped by section, and for each position its section and row. Nil when every section
    /// is a run of adjacent elements (the sort determines the key, the documented use).
    private(set) var order: [Int]?
    private var sectionOf: [Int32]?
    private var rowOf: [Int32]?

    /// No sections.
    init() {}

    /// The sections of `count` elements whose keys `keyAt` gives in result order.
    init(count: Int, keyAt: (Int) -> Key) {
        var ids: [Int32] = []
        ids.reserveCapacity(count)
        var counts: [Int] = []
        var last: Key?
        var lastId: Int32 = -1
        var adjacent = true
        for i in 0..<count {
            let k = keyAt(i)
            if lastId >= 0 && k == last! {
                counts[Int(lastId)] += 1
                ids.append(lastId)
                continue
            }
            if let s = indexOfKey[k] {
                adjacent = false
                lastId = Int32(s)
            } else {
                lastId = Int32(keys.count)
                indexOfKey[k] = keys.count
                keys.append(k)
                counts.append(0)
            }
            last = k
            counts[Int(lastId)] += 1
            ids.append(lastId)
        }
        starts.reserveCapacity(keys.count + 1)
        for c in counts { starts.append(starts[starts.count - 1] + c) }
        if adjacent { return }
        // group the positions by section (a counting sort) and remember each one's place
        var next = Array(starts.dropLast())
        var order = [Int](repeating: 0, count: count)
        var rowOf = [Int32](repeating: 0, count: count)
        for (i, s) in ids.enumerated() {
            let at = next[Int(s)]
            next[Int(s)] += 1
            order[at] = i
            rowOf[i] = Int32(at - starts[Int(s)])
        }
        self.order = order
        self.sectionOf = ids
        self.rowOf = rowOf
    }

    var count: Int { keys.count }

    /// The number of rows of section `s`.
    func rows(_ s: Int) -> Int { starts[s + 1] - starts[s] }

    /// The position in the results of row `r` of section `s`.
    func position(section s: Int, row r: Int) -> Int {
        let at = starts[s] + r
        return order.map { $0[at] } ?? at
    }

    /// The section and row of the element at `position` of the results.
    func path(of position: Int) -> (section: Int, row: Int) {
        if let sectionOf, let rowOf { return (Int(sectionOf[position]), Int(rowOf[position])) }
        // the last section starting at or before `position` (empty sections do not exist)
        var lo = 0, hi = keys.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= position { lo = mid } else { hi = mid - 1 }
        }
        return (lo, position - starts[lo])
    }
}

/// What a SectionedResults or a ResultsSection reads: sorted results and the block giving each
/// element's section key. The layout is computed on first use and again when the Realm's state
/// moved, as Results recompute their keys.
///
/// Sections over frozen results (docs/ARCHITECTURE.md, Sectioned results) are read by any
/// thread at once: their layout is fixed when they are made and read under a lock.
final class SectionsBase<Key: Hashable, Element: RealmCollectionValue> {
    let results: ResultsBase
    let keyOf: (Element) -> Key
    /// For sections by a key path naming a property: the property's name and a read of its
    /// column from an accessor (`_Persistable._rlmGet`), which the pass uses instead of applying
    /// the key path to each object.
    let keyColumn: (name: String, read: (ObjectBase, UInt32) -> Key)?
    /// The sort descriptors' key paths (added to an observer's key-path filter so that a write
    /// that moves an element to another section is always seen).
    let sortKeyPaths: [String]
    private var layout = SectionLayout<Key>()
    private var stamp: (UInt64, UInt64, UInt64) = (UInt64.max, 0, 0)
    /// For sections over frozen results: guards `layout` and `stamp`.
    private let frozenLock: NSLock?

    init(results: ResultsBase, sortKeyPaths: [String], keyOf: @escaping (Element) -> Key,
         keyColumn: (name: String, read: (ObjectBase, UInt32) -> Key)? = nil) {
        self.results = results
        self.sortKeyPaths = sortKeyPaths
        self.keyOf = keyOf
        self.keyColumn = keyColumn
        self.frozenLock = results.realmCore?.isFrozen == true ? NSLock() : nil
    }

    /// Sections over `results` (frozen at the version `layout` was computed at) with that
    /// layout: freezing does not run the key block again.
    private convenience init(frozen results: ResultsBase, of live: SectionsBase, layout: SectionLayout<Key>) {
        self.init(results: results, sortKeyPaths: live.sortKeyPaths, keyOf: live.keyOf, keyColumn: live.keyColumn)
        self.layout = layout
        self.stamp = results.core.stateStamp
    }

    /// Whether the sectioned results are frozen.
    var isFrozen: Bool { frozenLock != nil }

    /// The layout at the Realm's current state.
    func current() -> SectionLayout<Key> {
        if results.isDetached { return SectionLayout() }
        if let frozenLock {
            frozenLock.lock()
            defer { frozenLock.unlock() }
            return refreshed()
        }
        results.core.verifyThread()
        return refreshed()
    }

    private func refreshed() -> SectionLayout<Key> {
        let now = results.core.stateStamp
        if now == stamp { return layout }
        layout = SectionsBase.compute(results, keyOf, keyColumn)
        stamp = results.core.stateStamp
        return layout
    }

    /// The same sections frozen at the Realm's current version (themselves when frozen or
    /// detached): the frozen results with the layout they have now.
    func frozen() -> SectionsBase {
        guard let core = results.realmCore, !core.isFrozen else { return self }
        let layout = current() // checks the thread
        let frozenCore = core.frozen() // traps inside a write transaction
        guard let frozenResults = frozenCore.resolveExisting(results) else { ObjectBase.deleted() }
        return SectionsBase(frozen: frozenResults, of: self, layout: layout)
    }

    /// The live sections of frozen ones in the calling thread's Realm (themselves when live), or
    /// nil when the object the results hang from no longer exists there.
    func thawed() -> SectionsBase? {
        guard let core = results.realmCore, core.isFrozen else { return self }
        return core.liveForCallingThread().resolveExisting(results).map {
            SectionsBase(results: $0, sortKeyPaths: sortKeyPaths, keyOf: keyOf, keyColumn: keyColumn)
        }
    }

    /// The element at `position` of the sorted results.
    func element(at position: Int) -> Element {
        Element._rlmDecode(_Stored(results.element(at: position)))
    }

    /// One pass over the results calling `keyOf` on each element. Objects of exactly
    /// `Element`'s class are read through one accessor moved from row to row (the next row is
    /// usually in the same leaf), so the pass makes no object per element; the accessor is
    /// replaced when the block kept it, and not reused at all for classes whose accessors cache
    /// collection properties.
    static func compute(_ results: ResultsBase, _ keyOf: (Element) -> Key,
                        _ keyColumn: (name: String, read: (ObjectBase, UInt32) -> Key)? = nil) -> SectionLayout<Key> {
        let keys = results.currentKeys()
        guard let info = results.info else {
            return SectionLayout(count: keys.count) { i in
                keyOf(Element._rlmDecode(_Stored(results.element(forKey: keys[i]))))
            }
        }
        let core = results.core
        let exact = ObjectIdentifier(info.objectSchema.objectClass) == ObjectIdentifier(Element.self)
        let reusable = exact && info.reusesAccessors
        let txn = core.txn
        var cursor = cs_obj()
        var spare: ObjectBase?
        if let (name, read) = keyColumn, let col = info.column(named: name) {
            // the property's column, read through one accessor moved from row to row (no
            // object per element, no key path applied, no block run)
            return SectionLayout(count: keys.count) { i in
                var c = cs_obj()
                cs_obj_prepare(txn, info.table, keys[i], &cursor, &c)
                if c.leaf == nil { _ = cs_obj_exists(&c) }
                cursor = c
                if let s = spare { s.cobj = c } else { spare = core.object(info, accessor: c) }
                return read(spare!, col)
            }
        }
        return SectionLayout(count: keys.count) { i in
            var c = cs_obj()
            cs_obj_prepare(txn, info.table, keys[i], &cursor, &c)
            if c.leaf == nil { _ = cs_obj_exists(&c) }
            cursor = c
            if reusable, let s = spare {
                s.cobj = c
            } else {
                spare = core.object(info, accessor: c)
            }
            let key: Key
            if exact {
                key = keyOf(unsafeBitCast(spare!, to: Element.self))
            } else {
                key = keyOf(Element._rlmDecode(_Stored(.object(spare!))))
            }
            // kept by the block (stored somewhere): the next element gets its own accessor
            if !isKnownUniquelyReferenced(&spare) { spare = nil }
            return key
        }
    }
}

/// A collection change in terms of sections (docs/ARCHITECTURE.md, Sectioned results).
struct SectionChange {
    var deletions: [IndexPath] = []
    var insertions: [IndexPath] = []
    var modifications: [IndexPath] = []
    var sectionsToInsert = IndexSet()
    var sectionsToDelete = IndexSet()

    init() {}

    var isEmpty: Bool {
        deletions.isEmpty && insertions.isEmpty && modifications.isEmpty && sectionsToInsert.isEmpty
            && sectionsToDelete.isEmpty
    }

    /// The sections' change between `old` and `new`, from the sorted results' change set `p`
    /// (deletions and modifications at old positions, insertions at new ones). No element is
    /// read: the positions are mapped through the two layouts.
    ///
    /// - A section whose key is gone is in `sectionsToDelete` (old index) and its rows are not
    ///   listed as deletions; a new key is in `sectionsToInsert` (new index) and its rows are
    ///   listed as insertions.
    /// - A modified element that keeps its key and its row is a modification (old path);
    ///   otherwise it is a deletion (old path) and an insertion (new path).
    init<Key: Hashable>(old: SectionLayout<Key>, new: SectionLayout<Key>, _ p: ChangePayload) {
        for (s, k) in old.keys.enumerated() where new.indexOfKey[k] == nil { sectionsToDelete.insert(s) }
        for (s, k) in new.keys.enumerated() where old.indexOfKey[k] == nil { sectionsToInsert.insert(s) }
        func delete(_ position: Int) {
            let (s, r) = old.path(of: position)
            if !sectionsToDelete.contains(s) { deletions.append(IndexPath(item: r, section: s)) }
        }
        func insert(_ position: Int) {
            let (s, r) = new.path(of: position)
            insertions.append(IndexPath(item: r, section: s))
        }
        p.deletions.forEach(delete)
        p.insertions.forEach(insert)
        let now = SectionChange.newPositions(of: p.modifications, deletions: p.deletions, insertions: p.insertions)
        for (o, n) in zip(p.modifications, now) {
            let (so, ro) = old.path(of: o)
            let (sn, rn) = new.path(of: n)
            if old.keys[so] == new.keys[sn] && ro == rn {
                modifications.append(IndexPath(item: ro, section: so))
            } else {
                delete(o)
                insert(n)
            }
        }
        deletions.sort()
        insertions.sort()
    }

    /// The part of `self` about the section with key `key` (old index `old`, new index `new`,
    /// nil where it does not exist).
    func only(oldSection old: Int?, newSection new: Int?) -> SectionChange {
        var c = SectionChange()
        if let old {
            c.deletions = deletions.filter { $0.section == old }
            c.modifications = modifications.filter { $0.section == old }
            if sectionsToDelete.contains(old) { c.sectionsToDelete.insert(old) }
        }
        if let new {
            c.insertions = insertions.filter { $0.section == new }
            if sectionsToInsert.contains(new) { c.sectionsToInsert.insert(new) }
        }
        return c
    }

    /// The positions now of elements that stayed, given their old positions (ascending) and
    /// the change's deletions and insertions (ascending): an element that stayed keeps its
    /// rank among the elements that stayed.
    static func newPositions(of old: [Int], deletions: [Int], insertions: [Int]) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(old.count)
        var d = 0, i = 0
        for o in old {
            while d < deletions.count && deletions[d] < o { d += 1 }
            let rank = o - d // among the elements that stayed
            // the rank-th position (from 0) that is not an insertion
            var target = rank + i
            while i < insertions.count && insertions[i] <= target {
                i += 1
                target = rank + i
            }
            out.append(target)
        }
        return out
    }
}
