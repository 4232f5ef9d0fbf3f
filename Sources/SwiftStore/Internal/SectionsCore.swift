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

    /// The sections of elements whose keys in result order are `keys`.
    @_specialize(where Key == String)
    @_specialize(where Key == Int)
    init(keys: [Key]) {
        self.init(count: keys.count) { keys[$0] }
    }

    /// The sections of elements whose keys are `keys` (results order), or, with `index`,
    /// `keys[index[i]]` for the element at position `i` (keys stored in another order). The
    /// common key types run specialized: the keys are read and compared without value witness
    /// calls.
    @_specialize(where Key == String)
    @_specialize(where Key == Int)
    init(keys: UnsafeBufferPointer<Key>, index: UnsafeBufferPointer<Int32>?) {
        if Key.self == String.self, let index, let base = keys.baseAddress,
           let interned = SectionLayout<String>(
               interning: UnsafeBufferPointer(start: UnsafeRawPointer(base).assumingMemoryBound(to: String.self),
                                              count: keys.count),
               index: index) {
            self = unsafeBitCast(interned, to: SectionLayout<Key>.self)
            return
        }
        if let index {
            self.init(count: index.count) { keys[Int(index[$0])] }
        } else {
            self.init(count: keys.count) { keys[$0] }
        }
    }

    /// The sections of `count` elements whose keys `keyAt` gives in result order.
    @_specialize(where Key == String)
    @_specialize(where Key == Int)
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

extension SectionLayout where Key == String {
    /// `init(keys:index:)` for String keys when at most 256 distinct ones are met (nil
    /// otherwise): each key, in the order stored, is replaced by a one-byte number of its
    /// distinct value, so the layout pass reads `index`'s order from a small array of bytes
    /// instead of gathering 16-byte Strings from all over the keys (a cache miss per element
    /// once the keys outgrow the cache). A String's 16 bytes are the same only for the same
    /// value, so a table of the bit patterns seen finds most numbers; a pattern not in it is
    /// looked up by value (so equal Strings with different bytes share a number).
    init?(interning keys: UnsafeBufferPointer<String>, index: UnsafeBufferPointer<Int32>) {
        guard MemoryLayout<String>.size == 16 else { return nil }
        let n = keys.count
        let slots = 1024, most = 256
        var distinct: [String] = []
        var byValue: [String: UInt8] = [:]
        var patterns = [(UInt64, UInt64)](repeating: (0, 0), count: slots)
        var numbers = [Int16](repeating: -1, count: slots)
        var placed = 0
        let ids = UnsafeMutablePointer<UInt8>.allocate(capacity: max(n, 1))
        defer { ids.deallocate() }
        let complete = patterns.withUnsafeMutableBufferPointer { pat in
            numbers.withUnsafeMutableBufferPointer { num in
                for j in 0..<n {
                    let bits = unsafeBitCast(keys[j], to: (UInt64, UInt64).self)
                    var h = Int(truncatingIfNeeded: ((bits.0 ^ (bits.1 &* 0x9E37_79B9_7F4A_7C15)) &* 0xFF51_AFD7_ED55_8CCD) >> 54)
                    while true {
                        let id = num[h]
                        if id >= 0 && pat[h] == bits {
                            ids[j] = UInt8(id)
                            break
                        }
                        if id >= 0 {
                            h = (h + 1) & (slots - 1)
                            continue
                        }
                        // a pattern not seen: its value's number (new if the value is new)
                        let k = keys[j]
                        let number: UInt8
                        if let known = byValue[k] {
                            number = known
                        } else {
                            if distinct.count == most { return false }
                            number = UInt8(distinct.count)
                            byValue[k] = number
                            distinct.append(k)
                        }
                        // at most half the slots are taken, so every probe meets a free one
                        if placed < slots / 2 {
                            pat[h] = bits
                            num[h] = Int16(number)
                            placed += 1
                        }
                        ids[j] = number
                        break
                    }
                }
                return true
            }
        }
        guard complete else { return nil }
        // while every number's positions are adjacent (the sort decides the key, the documented
        // use), a section is a run of one number, its key spelled as the run's first element's:
        // the runs are found from the bytes alone
        var runKeys: [String] = []
        var runStarts: [Int] = [0]
        var sectionOfNumber = [Int16](repeating: -1, count: most)
        let adjacent = sectionOfNumber.withUnsafeMutableBufferPointer { sec in
            var previous = -1
            for i in 0..<index.count {
                let j = Int(index[i])
                let id = Int(ids[j])
                if id == previous { continue }
                if sec[id] >= 0 { return false }
                sec[id] = Int16(runKeys.count)
                if i > 0 { runStarts.append(i) }
                runKeys.append(keys[j])
                previous = id
            }
            return true
        }
        if adjacent {
            if index.count > 0 { runStarts.append(index.count) }
            for (s, k) in runKeys.enumerated() { indexOfKey[k] = s }
            self.keys = runKeys
            self.starts = runStarts
            return
        }
        // where the number changes from the previous position, the key itself (so a section's
        // key is its first element's, spelled as that element's); elsewhere the number's
        // first-met value, equal to the previous key
        var previous = -1
        self = distinct.withUnsafeBufferPointer { d in
            SectionLayout<String>(count: index.count) { i in
                let j = Int(index[i])
                let id = Int(ids[j])
                if id == previous { return d[id] }
                previous = id
                return keys[j]
            }
        }
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
    /// For elements of a class type: `keyOf` taking the object as an `ObjectBase` (made where
    /// the element type is known to be a class), which the pass calls on its moving accessor
    /// with no generic copy of the reference per element.
    let objectKeyOf: ((ObjectBase) -> Key)?
    /// The sort descriptors' key paths (added to an observer's key-path filter so that a write
    /// that moves an element to another section is always seen).
    let sortKeyPaths: [String]
    private var layout = SectionLayout<Key>()
    private var stamp: (UInt64, UInt64, UInt64) = (UInt64.max, 0, 0)
    /// For sections over frozen results: guards `layout` and `stamp`.
    private let frozenLock: NSLock?

    init(results: ResultsBase, sortKeyPaths: [String], keyOf: @escaping (Element) -> Key,
         keyColumn: (name: String, read: (ObjectBase, UInt32) -> Key)? = nil,
         objectKeyOf: ((ObjectBase) -> Key)? = nil) {
        self.results = results
        self.sortKeyPaths = sortKeyPaths
        self.keyOf = keyOf
        self.keyColumn = keyColumn
        self.objectKeyOf = objectKeyOf
        self.frozenLock = results.realmCore?.isFrozen == true ? NSLock() : nil
    }

    /// Sections over `results` (frozen at the version `layout` was computed at) with that
    /// layout: freezing does not run the key block again.
    private convenience init(frozen results: ResultsBase, of live: SectionsBase, layout: SectionLayout<Key>) {
        self.init(results: results, sortKeyPaths: live.sortKeyPaths, keyOf: live.keyOf, keyColumn: live.keyColumn,
                  objectKeyOf: live.objectKeyOf)
        self.layout = layout
        self.stamp = results.core.stateStamp
    }

    /// Whether the sectioned results are frozen.
    var isFrozen: Bool { frozenLock != nil }

    /// The layout at the Realm's current state: no sections for results over a List, MutableSet
    /// or LinkingObjects whose owner is gone (they read as invalidated; their query cannot run),
    /// as those results have no elements (docs/ARCHITECTURE.md, Sectioned results).
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

    /// Whether the results hang from an object (a collection's owner, the target of
    /// backlinks) that no longer exists.
    private var ownerIsGone: Bool {
        switch results.root {
        case .backlinks, .collection: return results.isInvalidated
        case .table, .detached: return false
        }
    }

    private func refreshed() -> SectionLayout<Key> {
        let now = results.core.stateStamp
        if now == stamp { return layout }
        // (an owner goes only with a change of state: checked when the stamp moved)
        layout = ownerIsGone ? SectionLayout() : SectionsBase.compute(results, keyOf, keyColumn, objectKeyOf)
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
        return resolved(in: core.liveForCallingThread())
    }

    /// The same sections (results, key block and sort) read through `core`, or nil when the
    /// object the results hang from does not exist there. The layout is computed there when
    /// first read.
    func resolved(in core: RealmCore) -> SectionsBase? {
        core.resolveExisting(results).map {
            SectionsBase(results: $0, sortKeyPaths: sortKeyPaths, keyOf: keyOf, keyColumn: keyColumn,
                         objectKeyOf: objectKeyOf)
        }
    }

    /// The element at `position` of the sorted results.
    func element(at position: Int) -> Element {
        Element._rlmDecode(_Stored(results.element(at: position)))
    }

    /// One pass over the results calling `keyOf` on each element. Objects are visited in the
    /// order of their keys (the order of the table's storage, whatever the sort), each key
    /// stored in visit order with, for each position of the results, the index of its key; the
    /// layout is then made from those keys in results order. Objects of exactly `Element`'s
    /// class are read through one accessor moved from row to row in place (in key order the
    /// next row is usually in the same leaf, so no tree descent), so the pass makes no object
    /// per element; the accessor is replaced when the block kept it, and not reused at all for
    /// classes whose accessors cache collection properties.
    static func compute(_ results: ResultsBase, _ keyOf: (Element) -> Key,
                        _ keyColumn: (name: String, read: (ObjectBase, UInt32) -> Key)? = nil,
                        _ objectKeyOf: ((ObjectBase) -> Key)? = nil) -> SectionLayout<Key> {
        let keys = results.currentKeys()
        guard let info = results.info else {
            return SectionLayout(count: keys.count) { i in
                keyOf(Element._rlmDecode(_Stored(results.element(forKey: keys[i]))))
            }
        }
        let n = keys.count
        if n == 0 { return SectionLayout(keys: [Key]()) }
        let core = results.core
        let exact = ObjectIdentifier(info.objectSchema.objectClass) == ObjectIdentifier(Element.self)
        let reusable = exact && info.reusesAccessors
        let txn = core.txn
        let table = info.table
        let visit = KeyOrder.visit(keys)
        // the keys in visit order, written in place (no generic Array appends per element)
        let values = UnsafeMutablePointer<Key>.allocate(capacity: n)
        var made = 0
        defer {
            values.deinitialize(count: made)
            values.deallocate()
        }
        // the previous element's accessor, when the next element gets an instance of its own
        var last = cs_obj()
        /// A new instance for the object with key `k`, positioned from the previous element's.
        func fresh(_ k: Int64, first: Bool) -> ObjectBase {
            var c = cs_obj()
            if first {
                cs_obj_prepare(txn, table, k, nil, &c)
            } else {
                cs_obj_prepare(txn, table, k, &last, &c)
            }
            if c.leaf == nil { _ = cs_obj_exists(&c) }
            return core.object(info, accessor: c)
        }
        // the keys in visit order: those given, those sorted, or a range (no array)
        let ordered: [Int64] = visit.map { $0.ascending ?? [] } ?? keys
        ordered.withUnsafeBufferPointer { o in
            let order = KeyOrder.KeyAt(base: visit != nil && visit!.ascending == nil ? nil : o.baseAddress,
                                       lo: visit?.lo ?? 0)
            if let (name, read) = keyColumn, let col = info.column(named: name) {
                // the property's column (no key path applied, no block run)
                let o = fresh(order[0], first: true)
                for j in 0..<n {
                    if j > 0 {
                        cs_obj_advance(&o.cobj, order[j])
                        if o.cobj.leaf == nil { _ = cs_obj_exists(&o.cobj) }
                    }
                    (values + j).initialize(to: read(o, col))
                    made = j + 1
                }
                return
            }
            if reusable {
                // the moving instance lives in a slot of its own, so the uniqueness check sees
                // only the block's references; it is given to the block without reference
                // counting when the block takes an `ObjectBase` (a class-typed `Element`
                // would be copied, so retained and released, on every call)
                let slot = UnsafeMutablePointer<ObjectBase>.allocate(capacity: 1)
                var filled = false
                defer {
                    if filled { slot.deinitialize(count: 1) }
                    slot.deallocate()
                }
                // one closure for the whole loop (an optional one bound in the loop would
                // retain and release its context per element)
                func pass(_ keyOfObject: (ObjectBase) -> Key) {
                    var moving: Unmanaged<ObjectBase>?
                    for j in 0..<n {
                        let k = order[j]
                        let m: Unmanaged<ObjectBase>
                        if let moving {
                            m = moving
                            m._withUnsafeGuaranteedRef { o in
                                cs_obj_advance(&o.cobj, k)
                                if o.cobj.leaf == nil { _ = cs_obj_exists(&o.cobj) }
                            }
                        } else {
                            if filled { slot.deinitialize(count: 1) }
                            slot.initialize(to: fresh(k, first: j == 0))
                            filled = true
                            m = Unmanaged.passUnretained(slot.pointee)
                            moving = m
                        }
                        (values + j).initialize(to: m._withUnsafeGuaranteedRef { keyOfObject($0) })
                        made = j + 1
                        // kept by the block (stored somewhere): the next element gets its own
                        // accessor, positioned from this one
                        if !isKnownUniquelyReferenced(&slot.pointee) {
                            last = slot.pointee.cobj
                            moving = nil
                        }
                    }
                }
                if let objectKeyOf {
                    pass(objectKeyOf)
                } else {
                    pass { keyOf(unsafeBitCast($0, to: Element.self)) }
                }
                return
            }
            for j in 0..<n {
                let o = fresh(order[j], first: j == 0)
                if exact {
                    (values + j).initialize(to: keyOf(unsafeBitCast(o, to: Element.self)))
                } else {
                    (values + j).initialize(to: keyOf(Element._rlmDecode(_Stored(.object(o)))))
                }
                made = j + 1
                last = o.cobj
            }
        }
        guard let visit else {
            return SectionLayout(keys: UnsafeBufferPointer(start: values, count: n), index: nil)
        }
        return visit.index.withUnsafeBufferPointer { index in
            SectionLayout(keys: UnsafeBufferPointer(start: values, count: n), index: index)
        }
    }
}

/// Visiting the elements of results in the order of their object keys (the table's storage
/// order), where reading them in results order would descend the tree for each one.
enum KeyOrder {
    /// The positions of `keys` in ascending key order, with the keys in that order, or nil when
    /// `keys` is ascending already. Keys within a range under twice their count are placed by
    /// their offsets in a table of the range (one pass); others by an LSD radix sort on the
    /// keys' offsets from the smallest, 11 bits a pass, as many passes as the largest offset
    /// needs (two for 4 million consecutive keys).
    static func ascending(_ keys: [Int64]) -> (positions: [Int32], keys: [Int64])? {
        let n = keys.count
        guard n > 1, n <= Int(Int32.max) else { return nil }
        return ascending(keys, range(keys))
    }

    /// The smallest and largest of `keys` (at least one) and whether they are ascending.
    static func range(_ keys: [Int64]) -> (lo: Int64, hi: Int64, sorted: Bool) {
        keys.withUnsafeBufferPointer { k in
            var lo = k[0], hi = k[0], sorted = true
            for i in 1..<k.count {
                let x = k[i]
                if x < k[i - 1] { sorted = false }
                if x < lo { lo = x }
                if x > hi { hi = x }
            }
            return (lo, hi, sorted)
        }
    }

    /// `ascending` for 1 < n <= Int32.max keys whose `range` is given.
    private static func ascending(_ keys: [Int64], _ range: (lo: Int64, hi: Int64, sorted: Bool))
        -> (positions: [Int32], keys: [Int64])? {
        let n = keys.count, (lo, hi) = (range.lo, range.hi)
        if range.sorted { return nil }
        if UInt64(bitPattern: hi &- lo) < UInt64(n) * 2 {
            // keys spread over less than twice their count (a table whose keys were given in
            // order, with few deleted): each key's slot in a table of the range, then the range
            // read in order
            return denseAscending(keys, lo: lo, span: Int(hi - lo) + 1)
        }
        return radixAscending(keys, lo: lo, hi: hi)
    }

    /// `ascending` by an LSD radix sort of the keys' offsets from `lo` (`hi` the largest key).
    static func radixAscending(_ keys: [Int64], lo: Int64, hi: Int64) -> (positions: [Int32], keys: [Int64]) {
        let n = keys.count
        let bits = 64 - UInt64(bitPattern: hi &- lo).leadingZeroBitCount
        let digit = 11, mask = UInt64(1 << 11 - 1)
        var pos = [Int32](unsafeUninitializedCapacity: n) { b, c in
            for i in 0..<n { b[i] = Int32(i) }
            c = n
        }
        var off = keys.map { UInt64(bitPattern: $0 &- lo) }
        var pos2 = [Int32](repeating: 0, count: n)
        var off2 = [UInt64](repeating: 0, count: n)
        var count = [Int](repeating: 0, count: Int(mask) + 1)
        var shift = 0
        while shift < bits {
            let sh = UInt64(shift)
            off.withUnsafeBufferPointer { k in
                pos.withUnsafeBufferPointer { p in
                    off2.withUnsafeMutableBufferPointer { k2 in
                        pos2.withUnsafeMutableBufferPointer { p2 in
                            count.withUnsafeMutableBufferPointer { cnt in
                                for b in 0..<cnt.count { cnt[b] = 0 }
                                for i in 0..<n { cnt[Int((k[i] >> sh) & mask)] += 1 }
                                var sum = 0
                                for b in 0..<cnt.count {
                                    let c = cnt[b]
                                    cnt[b] = sum
                                    sum += c
                                }
                                for i in 0..<n {
                                    let d = Int((k[i] >> sh) & mask)
                                    k2[cnt[d]] = k[i]
                                    p2[cnt[d]] = p[i]
                                    cnt[d] += 1
                                }
                            }
                        }
                    }
                }
            }
            swap(&pos, &pos2)
            swap(&off, &off2)
            shift += digit
        }
        return (pos, off.map { Int64(bitPattern: $0) &+ lo })
    }

    /// `ascending` for distinct keys within `lo ..< lo + span`: the position of each key put
    /// at its offset in a table of `span` slots (-1 for an absent key), then the table read in
    /// order. Keys that repeat (results never list an object twice) fall back to the sort.
    static func denseAscending(_ keys: [Int64], lo: Int64, span: Int) -> (positions: [Int32], keys: [Int64])? {
        let n = keys.count
        var slot = [Int32](repeating: -1, count: span)
        let distinct = slot.withUnsafeMutableBufferPointer { s in
            keys.withUnsafeBufferPointer { k in
                for i in 0..<n {
                    let at = Int(k[i] &- lo)
                    if s[at] >= 0 { return false }
                    s[at] = Int32(i)
                }
                return true
            }
        }
        guard distinct else { return radixAscending(keys, lo: lo, hi: lo &+ Int64(span - 1)) }
        var pos = [Int32]()
        var ascending = [Int64]()
        pos.reserveCapacity(n)
        ascending.reserveCapacity(n)
        slot.withUnsafeBufferPointer { s in
            for at in 0..<span where s[at] >= 0 {
                pos.append(s[at])
                ascending.append(lo &+ Int64(at))
            }
        }
        return (pos, ascending)
    }

    /// The `j`-th key of a visit: `base[j]`, or `lo + j` for a range.
    struct KeyAt {
        let base: UnsafePointer<Int64>?
        let lo: Int64

        @inline(__always) subscript(_ j: Int) -> Int64 {
            if let base { return base[j] }
            return lo &+ Int64(j)
        }
    }

    /// The order of a visit of results' elements by ascending key: the keys in that order and,
    /// for each position of the results, the index of its key in that order.
    struct Visit {
        /// The keys in ascending order; nil when they are `lo ..< lo + index.count`.
        let ascending: [Int64]?
        /// The smallest key.
        let lo: Int64
        /// For each position of the results, the index of its key in `ascending`.
        let index: [Int32]

        /// The `j`-th key in ascending order.
        @inline(__always) func key(_ j: Int) -> Int64 { ascending.map { $0[j] } ?? lo &+ Int64(j) }
    }

    /// The visit of `keys` (results order) in ascending key order, or nil when `keys` is
    /// ascending already. When the keys are every key of a range once (a table whose objects
    /// were added in order and none deleted, whatever the sort), the `j`-th key visited is
    /// `lo + j` and the index of position `i` is `keys[i] - lo`: one pass over the keys and a
    /// bit per key to see that none repeats; otherwise `ascending` gives the order.
    static func visit(_ keys: [Int64]) -> Visit? {
        let n = keys.count
        guard n > 1, n <= Int(Int32.max) else { return nil }
        let r = range(keys)
        let (lo, hi) = (r.lo, r.hi)
        if r.sorted { return nil }
        if UInt64(bitPattern: hi &- lo) == UInt64(n - 1) {
            var seen = [UInt64](repeating: 0, count: (n + 63) / 64)
            var index = [Int32](repeating: 0, count: n)
            let distinct = seen.withUnsafeMutableBufferPointer { s in
                index.withUnsafeMutableBufferPointer { ix in
                    keys.withUnsafeBufferPointer { k in
                        var repeated: UInt64 = 0
                        for i in 0..<n {
                            let at = Int(truncatingIfNeeded: k[i] &- lo)
                            let bit: UInt64 = 1 << UInt64(at & 63)
                            repeated |= s[at >> 6] & bit
                            s[at >> 6] |= bit
                            ix[i] = Int32(truncatingIfNeeded: at)
                        }
                        return repeated == 0
                    }
                }
            }
            if distinct { return Visit(ascending: nil, lo: lo, index: index) }
        }
        guard let (positions, ascending) = KeyOrder.ascending(keys, r) else { return nil }
        var index = [Int32](repeating: 0, count: n)
        index.withUnsafeMutableBufferPointer { ix in
            positions.withUnsafeBufferPointer { v in
                for j in 0..<n { ix[Int(v[j])] = Int32(j) }
            }
        }
        return Visit(ascending: ascending, lo: lo, index: index)
    }

    /// `value(key)` for the element with each key of `keys` (results order), called in
    /// ascending key order and kept in that order, with, for each position of the results, the
    /// index of its value (nil when the keys are ascending: the orders are the same). The
    /// values are stored one after the other and read back by position: storing each value at
    /// its element's position instead scatters the stores over the whole array, and each
    /// store that misses the cache holds up the stores behind it.
    static func collectInVisitOrder<T>(_ keys: [Int64], _ value: (Int64) -> T) -> (values: [T], index: [Int32]?) {
        guard let visit = KeyOrder.visit(keys) else { return (keys.map(value), nil) }
        return ((0..<keys.count).map { value(visit.key($0)) }, visit.index)
    }

    /// `value(key)` for the element with each key of `keys` (results order), called in
    /// ascending key order; returned in results order.
    static func collect<T>(_ keys: [Int64], _ value: (Int64) -> T) -> [T] {
        guard let (visit, ascending) = KeyOrder.ascending(keys) else { return keys.map(value) }
        return [T](unsafeUninitializedCapacity: keys.count) { b, c in
            for (p, k) in zip(visit, ascending) {
                (b.baseAddress! + Int(p)).initialize(to: value(k))
            }
            c = keys.count
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
