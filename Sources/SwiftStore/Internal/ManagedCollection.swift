import CStore
import Foundation

/// The core side of a managed List, MutableSet or Map: the owning object, its column and, for
/// collections nested in AnyRealmValue, the path from the column down to it. Every operation
/// reopens the core accessor from the owner's current accessor, so it follows the owner
/// through refreshes and fails cleanly once the owner is deleted.
final class ManagedCollection {
    let owner: ObjectBase
    let col: UInt32
    /// Objects read from the collection are of their model classes even though `owner` is a
    /// dynamic accessor (a legacy collection's own accessor of its owner's row).
    var typedElements = false
    /// Steps below the column: a list position, or a map key (kept as C strings that live as
    /// long as this object, since the core borrows them).
    private var steps: [(index: Int64, key: UnsafeMutablePointer<CChar>?, keyLength: Int)] = []

    init(owner: ObjectBase, column: UInt32) {
        self.owner = owner
        self.col = column
    }

    deinit {
        for s in steps { s.key?.deallocate() }
    }

    /// Where the collection is below its owner: its column, its kind when it is held in an
    /// AnyRealmValue, and its nesting steps (each map key's bytes with their terminating NUL).
    /// It belongs to no Realm (`CollectionAddress`).
    struct Path: @unchecked Sendable {
        let col: UInt32
        let mixedKind: MixedKind?
        let steps: [(index: Int64, key: [CChar]?)]
        var identities: [UInt32] = []
    }

    var path: Path {
        Path(col: col, mixedKind: mixedKind, steps: steps.map { s in
            (s.index, s.key.map { Array(UnsafeBufferPointer(start: $0, count: s.keyLength + 1)) })
        }, identities: identities)
    }

    /// The collection at `path` below `owner`.
    convenience init(owner: ObjectBase, path: Path) {
        self.init(owner: owner, column: path.col)
        mixedKind = path.mixedKind
        identities = path.identities
        for s in path.steps {
            var key: UnsafeMutablePointer<CChar>? = nil
            if let k = s.key {
                key = .allocate(capacity: k.count)
                key!.initialize(from: k, count: k.count)
            }
            steps.append((s.index, key, (s.key?.count ?? 1) - 1))
        }
    }

    /// The same collection (column and nesting steps) of `owner`, an accessor of this
    /// collection's owner in another Realm (a frozen one, or a live one when thawing).
    func rebased(onto owner: ObjectBase) -> ManagedCollection {
        ManagedCollection(owner: owner, path: path)
    }

    /// A collection nested in element `index` (list) or `key` (map) of this one; `parent` is this
    /// one's core accessor, open, through which the identity of a collection held in an
    /// AnyRealmValue (`kind`) is read (without it, none is kept and none checked).
    func nested(index: Int64 = -1, key: String? = nil, kind: MixedKind? = nil,
                in parent: UnsafeMutablePointer<cs_coll>? = nil) -> ManagedCollection {
        let child = ManagedCollection(owner: owner, column: col)
        child.mixedKind = kind
        child.typedElements = typedElements
        for s in steps {
            var copy: UnsafeMutablePointer<CChar>? = nil
            if let k = s.key {
                copy = .allocate(capacity: s.keyLength + 1)
                copy!.initialize(from: k, count: s.keyLength + 1)
            }
            child.steps.append((s.index, copy, s.keyLength))
        }
        if let key {
            let bytes = Array(key.utf8CString)
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count)
            p.initialize(from: bytes, count: bytes.count)
            child.steps.append((-1, p, bytes.count - 1))
        } else {
            child.steps.append((index, nil, 0))
        }
        var id: UInt32 = 0
        if kind != nil, let parent, let last = child.steps.last {
            var n = cs_coll()
            if cs_coll_open_nested(parent, last.index, last.key, last.keyLength, &n) == 0 { id = cs_coll_identity(&n) }
        }
        child.identities = (identities.isEmpty ? [UInt32](repeating: 0, count: steps.count + 1) : identities) + [id]
        return child
    }

    /// For a collection held in an AnyRealmValue: the identities of the collections on its path
    /// when this accessor was made (`cs_coll_identity`): element 0 the column's collection (a
    /// Mixed property's), element i + 1 the one step i leads to; 0 (or none): not checked, as for
    /// a collection written before identities were kept (docs/ARCHITECTURE.md, "Collections
    /// nested in AnyRealmValue").
    var identities: [UInt32] = []

    /// How `resolve` ended.
    private enum Resolution { case found, failed(Int32, nested: Bool), replaced }

    /// Opens the path into `c`. A step whose collection has another identity than this accessor
    /// was made for: when the step is a list position and the collection is elsewhere in that
    /// list (elements inserted or removed before it, or it was moved), the step takes its new
    /// position (not kept for a frozen Realm's accessor, which threads share) and the path goes
    /// on, as realm-core finds a collection by its key; otherwise the collection was replaced
    /// (made again there, or taken out of the list) and `replaced` is the answer.
    @inline(__always)
    private func resolve(_ c: inout cs_coll) -> Resolution {
        var rc = cs_coll_open(&owner.cobj, col, &c)
        if rc != 0 { return .failed(rc, nested: false) }
        if let want = identities.first, want != 0, cs_coll_identity(&c) != want { return .replaced }
        for i in steps.indices {
            var n = cs_coll()
            rc = cs_coll_open_nested(&c, steps[i].index, steps[i].key, steps[i].keyLength, &n)
            let want = i + 1 < identities.count ? identities[i + 1] : 0
            if want != 0 && (rc != 0 || cs_coll_identity(&n) != want) {
                guard steps[i].key == nil, let j = ManagedCollection.position(of: want, in: &c) else { return .replaced }
                if owner.core?.isFrozen != true { steps[i].index = j }
                rc = cs_coll_open_nested(&c, j, nil, 0, &n)
            }
            if rc != 0 { return .failed(rc, nested: true) }
            c = n
        }
        return .found
    }

    /// The position in list `c` (of Mixed values) of the nested collection with identity `id`,
    /// if any (a pass over the list, made only when a step's collection is not where it was).
    private static func position(of id: UInt32, in c: inout cs_coll) -> Int64? {
        guard cs_coll_kind_of(&c) == CS_COLL_LIST else { return nil }
        var n = 0
        guard cs_coll_size(&c, &n) == 0 else { return nil }
        for j in 0..<n {
            var v = cs_value()
            guard cs_list_get(&c, j, &v) == 0 else { return nil }
            guard v.type == CS_TYPE_LIST || v.type == CS_TYPE_DICT else { continue }
            var e = cs_coll()
            if cs_coll_open_nested(&c, Int64(j), nil, 0, &e) == 0 && cs_coll_identity(&e) == id { return Int64(j) }
        }
        return nil
    }

    /// The identity of the collection the path leads to now (0 when it leads to none).
    func currentIdentity() -> UInt32 {
        var c = cs_coll()
        guard cs_coll_open(&owner.cobj, col, &c) == 0 else { return 0 }
        for s in steps {
            var n = cs_coll()
            guard cs_coll_open_nested(&c, s.index, s.key, s.keyLength, &n) == 0 else { return 0 }
            c = n
        }
        return cs_coll_identity(&c)
    }

    var core: RealmCore { owner.core! }

    /// The kind of a collection held in an AnyRealmValue (the property itself or below it),
    /// nil for a List, MutableSet or Map property.
    enum MixedKind { case list, map }
    var mixedKind: MixedKind?

    /// Whether this is a collection held in an AnyRealmValue (a Mixed property's value, or
    /// nested below a collection's element).
    var isNested: Bool { mixedKind != nil || !steps.isEmpty }

    /// Opens the core accessor (checking the owner is readable on this thread).
    @inline(__always)
    func open(_ body: (UnsafeMutablePointer<cs_coll>) -> Void) {
        _ = owner.verifyReadable()
        var c = cs_coll()
        switch resolve(&c) {
        case .found: break
        case .failed(let rc, let nested): CoreCall.must(rc, nested ? "Opening a nested collection" : "Opening a collection")
        case .replaced:
            preconditionFailure("This collection is no more: the AnyRealmValue holding it was set to another value, "
                                + "and this accessor is invalidated")
        }
        body(&c)
    }

    /// Opens the accessor for a change (write transaction only).
    @inline(__always)
    func openForWrite(_ body: (UnsafeMutablePointer<cs_coll>) -> Void) {
        _ = owner.verifyWritable()
        core.didMutate()
        open(body)
    }

    /// Whether the owner is gone or, for a collection held in an AnyRealmValue, its path no
    /// longer leads to a collection of its kind (the owning property, or an element on the way,
    /// was set to another value).
    var isInvalidated: Bool {
        if owner.isInvalidated { return true }
        guard let kind = mixedKind else { return false }
        var c = cs_coll()
        guard case .found = resolve(&c) else { return true }
        return (cs_coll_kind_of(&c) == CS_COLL_MAP) != (kind == .map)
    }

    var count: Int {
        var n = 0
        open { c in
            var size = 0
            CoreCall.must(cs_coll_size(c, &size), "Counting a collection")
            n = size
        }
        return n
    }

    /// The value at position `i` (lists, sets, and map values in key order). Nested
    /// collections come back as `.list` / `.dictionary` accessors.
    func get(_ i: Int) -> StoredValue {
        var out = StoredValue.null
        open { c in
            var v = cs_value()
            let rc = cs_list_get(c, i, &v)
            if rc == Int32(CS_RANGE) { indexOutOfRange(i, c) }
            CoreCall.must(rc, "Reading a collection element")
            out = decode(v, index: Int64(i), key: nil, in: c)
        }
        return out
    }

    /// The object keys of a collection of links in order, read with one open of the accessor
    /// (-1 for a null map value).
    func linkKeys() -> [Int64] {
        var keys: [Int64] = []
        open { c in
            var n = 0
            CoreCall.must(cs_coll_size(c, &n), "Counting a collection")
            keys.reserveCapacity(n)
            for i in 0..<n {
                var v = cs_value()
                CoreCall.must(cs_list_get(c, i, &v), "Reading a collection element")
                keys.append(v.type == CS_TYPE_LINK ? v.v.link.key : -1)
            }
        }
        return keys
    }

    func decode(_ v: cs_value, index: Int64, key: String?, in c: UnsafeMutablePointer<cs_coll>) -> StoredValue {
        if v.type == CS_TYPE_LIST {
            return .list(List<AnyRealmValue>(managed: nested(index: index, key: key, kind: .list, in: c)))
        }
        if v.type == CS_TYPE_DICT {
            return .dictionary(Map<String, AnyRealmValue>(managed: nested(index: index, key: key, kind: .map, in: c)))
        }
        return core.stored(from: v, dynamic: owner.isDynamic && !typedElements)
    }

    private func indexOutOfRange(_ i: Int, _ c: UnsafeMutablePointer<cs_coll>) -> Never {
        var size = 0
        _ = cs_coll_size(c, &size)
        preconditionFailure("Index \(i) is out of bounds (must be less than \(size)).")
    }

    // MARK: Writing elements

    /// Calls `body` with a C value for `value`, adding unmanaged objects first. Embedded
    /// objects and nested collections are handled by the callers.
    private func withValue(_ value: StoredValue, policy: Realm.UpdatePolicy,
                           _ body: (UnsafePointer<cs_value>) -> Void) {
        if case .object(let o) = value {
            let linked = core.link(to: o, policy: policy)
            core.withCValue(.object(linked), body)
        } else {
            core.withCValue(value, body)
        }
    }

    private var targetIsEmbedded: Bool {
        owner.info?.target(column: col)?.isEmbedded == true && steps.isEmpty
    }

    func insert(_ value: StoredValue, at i: Int, policy: Realm.UpdatePolicy = .error) {
        openForWrite { c in
            if case .object(let o) = value, targetIsEmbedded {
                var e = cs_obj()
                CoreCall.must(cs_list_insert_embedded(c, i, &e), "Inserting an embedded object")
                embed(o, e, policy)
                return
            }
            if case .list(let l) = value {
                CoreCall.must(cs_list_insert(c, i, [cs_null()]), "Inserting into a list")
                CoreCall.must(cs_list_set_collection(c, i, CS_TYPE_LIST), "Nesting a list")
                MixedCollections.fill(list: nested(index: Int64(i)), from: Array(l), policy: policy)
                return
            }
            if case .dictionary(let m) = value {
                CoreCall.must(cs_list_insert(c, i, [cs_null()]), "Inserting into a list")
                CoreCall.must(cs_list_set_collection(c, i, CS_TYPE_DICT), "Nesting a dictionary")
                MixedCollections.fill(map: nested(index: Int64(i)), from: m.entries(), policy: policy)
                return
            }
            withValue(value, policy: policy) { v in
                let rc = cs_list_insert(c, i, v)
                if rc == Int32(CS_RANGE) { indexOutOfRange(i, c) }
                if rc != 0 { CoreCall.fail(rc, "Inserting into a list") }
            }
        }
    }

    /// Inserts `values` at positions 0, 1, ... of a list (`add` copying an unmanaged List into
    /// an empty one): values other than objects and nested collections through one opening of
    /// the list, the rest one by one as `insert` does.
    func insertAll(_ values: [StoredValue], policy: Realm.UpdatePolicy) {
        let plain = !values.contains {
            switch $0 {
            case .object, .list, .dictionary: return true
            default: return false
            }
        }
        guard plain else {
            for (i, v) in values.enumerated() { insert(v, at: i, policy: policy) }
            return
        }
        if values.isEmpty { return }
        openForWrite { c in
            for i in values.indices {
                core.withCValue(values[i]) { v in
                    let rc = cs_list_insert(c, i, v)
                    if rc == Int32(CS_RANGE) { indexOutOfRange(i, c) }
                    if rc != 0 { CoreCall.fail(rc, "Inserting into a list") }
                }
            }
        }
    }

    func append(_ value: StoredValue, policy: Realm.UpdatePolicy = .error) {
        insert(value, at: count, policy: policy)
    }

    func set(_ value: StoredValue, at i: Int, policy: Realm.UpdatePolicy = .error) {
        openForWrite { c in
            if case .object(let o) = value, targetIsEmbedded {
                CoreCall.must(cs_list_erase(c, i), "Replacing an embedded object")
                var e = cs_obj()
                CoreCall.must(cs_list_insert_embedded(c, i, &e), "Inserting an embedded object")
                embed(o, e, policy)
                return
            }
            if case .list(let l) = value {
                CoreCall.must(cs_list_set_collection(c, i, CS_TYPE_LIST), "Nesting a list")
                MixedCollections.fill(list: nested(index: Int64(i)), from: Array(l), policy: policy)
                return
            }
            if case .dictionary(let m) = value {
                CoreCall.must(cs_list_set_collection(c, i, CS_TYPE_DICT), "Nesting a dictionary")
                MixedCollections.fill(map: nested(index: Int64(i)), from: m.entries(), policy: policy)
                return
            }
            withValue(value, policy: policy) { v in
                let rc = cs_list_set(c, i, v)
                if rc == Int32(CS_RANGE) { indexOutOfRange(i, c) }
                if rc != 0 { CoreCall.fail(rc, "Setting a list element") }
            }
        }
    }

    private func embed(_ o: ObjectBase, _ row: cs_obj, _ policy: Realm.UpdatePolicy) {
        if o.core != nil { preconditionFailure("Cannot add an existing managed embedded object to a List.") }
        core.adopt(o, row: row, policy: policy)
    }

    func remove(at i: Int) {
        openForWrite { c in
            let rc = cs_list_erase(c, i)
            if rc == Int32(CS_RANGE) { indexOutOfRange(i, c) }
            CoreCall.must(rc, "Removing a list element")
        }
    }

    func move(from: Int, to: Int) {
        openForWrite { c in
            let rc = cs_list_move(c, from, to)
            if rc == Int32(CS_RANGE) { indexOutOfRange(Swift.max(from, to), c) }
            CoreCall.must(rc, "Moving a list element")
        }
    }

    func swap(_ i: Int, _ j: Int) {
        openForWrite { c in
            let rc = cs_list_swap(c, i, j)
            if rc == Int32(CS_RANGE) { indexOutOfRange(Swift.max(i, j), c) }
            CoreCall.must(rc, "Swapping list elements")
        }
    }

    func removeAll() {
        openForWrite { c in CoreCall.must(cs_coll_clear(c), "Clearing a collection") }
    }

    // MARK: Sets

    @discardableResult
    func setInsert(_ value: StoredValue, policy: Realm.UpdatePolicy = .error) -> Bool {
        var inserted = false
        openForWrite { c in
            withValue(value, policy: policy) { v in
                let rc = cs_set_insert(c, v, &inserted)
                if rc != 0 { CoreCall.fail(rc, "Inserting into a set") }
            }
        }
        return inserted
    }

    @discardableResult
    func setErase(_ value: StoredValue) -> Bool {
        var erased = false
        if case .object(let o) = value, o.core !== owner.core || o.isInvalidated { return false }
        openForWrite { c in
            core.withCValue(value) { v in CoreCall.must(cs_set_erase(c, v, &erased), "Removing from a set") }
        }
        return erased
    }

    /// Position of `value` in a set (or nil).
    func setFind(_ value: StoredValue) -> Int? {
        if case .object(let o) = value, o.core !== owner.core || o.isInvalidated { return nil }
        var index: Int?
        open { c in
            core.withCValue(value) { v in
                var i = 0
                if cs_set_find(c, v, &i) == 0 { index = i }
            }
        }
        return index
    }

    // MARK: Maps

    func mapGet(_ key: String) -> StoredValue? {
        var out: StoredValue?
        open { c in
            var v = cs_value()
            var k = key
            let rc = k.withUTF8 { kb in cs_map_get(c, kb.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, kb.count, &v) }
            if rc == Int32(CS_NOTFOUND) { return }
            CoreCall.must(rc, "Reading a map value")
            out = decode(v, index: -1, key: key, in: c)
        }
        return out
    }

    func mapSet(_ key: String, _ value: StoredValue, policy: Realm.UpdatePolicy = .error) {
        if key.isEmpty { preconditionFailure("Map keys cannot be empty") }
        if key.hasPrefix("$") || key.contains(".") || key.utf8.contains(0) {
            preconditionFailure("Map key '\(key)' is not allowed: keys cannot start with '$' or contain '.' or NUL")
        }
        openForWrite { c in
            let kb = Array(key.utf8CString)
            kb.withUnsafeBufferPointer { kp in
                let kptr = kp.baseAddress!
                let klen = kp.count - 1
                if case .object(let o) = value, targetIsEmbedded {
                    var e = cs_obj()
                    CoreCall.must(cs_map_set_embedded(c, kptr, klen, &e), "Setting an embedded object")
                    embed(o, e, policy)
                    return
                }
                if case .list(let l) = value {
                    CoreCall.must(cs_map_set_collection(c, kptr, klen, CS_TYPE_LIST), "Nesting a list")
                    MixedCollections.fill(list: nested(key: key), from: Array(l), policy: policy)
                    return
                }
                if case .dictionary(let m) = value {
                    CoreCall.must(cs_map_set_collection(c, kptr, klen, CS_TYPE_DICT), "Nesting a dictionary")
                    MixedCollections.fill(map: nested(key: key), from: m.entries(), policy: policy)
                    return
                }
                withValue(value, policy: policy) { v in
                    let rc = cs_map_set(c, kptr, klen, v)
                    if rc != 0 { CoreCall.fail(rc, "Setting a map value") }
                }
            }
        }
    }

    @discardableResult
    func mapErase(_ key: String) -> Bool {
        var erased = false
        openForWrite { c in
            var k = key
            let rc = k.withUTF8 { kb in
                cs_map_erase(c, kb.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, kb.count, &erased)
            }
            CoreCall.must(rc, "Removing a map key")
        }
        return erased
    }

    /// The entry at position `i` in key order.
    func mapEntry(_ i: Int) -> (String, StoredValue) {
        var out: (String, StoredValue) = ("", .null)
        open { c in
            var k = cs_value()
            var v = cs_value()
            let rc = cs_map_get_at(c, i, &k, &v)
            if rc == Int32(CS_RANGE) { indexOutOfRange(i, c) }
            CoreCall.must(rc, "Reading a map entry")
            let key = String(decoding: UnsafeRawBufferPointer(start: k.v.bytes.ptr, count: k.v.bytes.len), as: UTF8.self)
            out = (key, decode(v, index: -1, key: key, in: c))
        }
        return out
    }

    /// Every key, in key order.
    var mapKeys: [String] {
        (0..<count).map { mapEntry($0).0 }
    }

    /// A Results base over the elements: their objects' class for a collection of links, none
    /// for values.
    func queryBase() -> ResultsBase {
        var target: ClassInfo?
        if steps.isEmpty, let info = owner.info?.target(column: col) {
            if typedElements {
                target = core.info(named: info.objectSchema.className) ?? info
            } else {
                target = owner.isDynamic ? core.dynamicInfo(info) : info
            }
        }
        return ResultsBase(core: core, root: .collection(self, target))
    }

    /// A query over the elements (for filters, sorts and aggregates of managed collections).
    func query(_ text: String, _ args: [cs_value]) throws -> OpaquePointer {
        var q: OpaquePointer?
        var rc: Int32 = 0
        var errorText = ""
        open { c in
            rc = text.withCString { t in
                args.withUnsafeBufferPointer { a in cs_query_new_coll(c, t, strlen(t), a.baseAddress, a.count, &q) }
            }
            if rc != 0 { errorText = CoreCall.lastMessage }
        }
        if rc != 0 { throw Realm.Error(.fail, errorText) }
        return q!
    }
}

/// Filling nested collections of AnyRealmValue.
enum MixedCollections {
    static func fill(list: ManagedCollection, from items: [AnyRealmValue], policy: Realm.UpdatePolicy) {
        for (i, item) in items.enumerated() { list.insert(item._rlmEncode().value, at: i, policy: policy) }
    }

    static func fill(map: ManagedCollection, from entries: [(String, AnyRealmValue)], policy: Realm.UpdatePolicy) {
        for (k, v) in entries { map.mapSet(k, v._rlmEncode().value, policy: policy) }
    }

}

extension ManagedCollection {
    /// Whether `other` is the same stored collection: the same property of the same row of the
    /// same file, at the same nesting path (collection equality, `List ==`).
    func isSameCollection(as other: ManagedCollection) -> Bool {
        if self === other { return true }
        guard col == other.col, owner.isSameObject(as: other.owner), steps.count == other.steps.count else {
            return false
        }
        for (a, b) in zip(steps, other.steps) {
            guard a.index == b.index, a.keyLength == b.keyLength else { return false }
            switch (a.key, b.key) {
            case (nil, nil): continue
            case let (x?, y?): if memcmp(x, y, a.keyLength) != 0 { return false }
            default: return false
            }
        }
        return true
    }
}
