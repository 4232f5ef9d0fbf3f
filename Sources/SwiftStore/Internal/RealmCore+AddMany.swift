import CStore
import Foundation

/// `realm.add` of a sequence: every new object of every class is created with its class's other
/// new objects in one core call, with the results of `add(_:policy:)` on each object in turn
/// (docs/ARCHITECTURE.md, `realm.add` of a sequence).
extension RealmCore {
    /// Adds a sequence of objects with the same results as `add(_:policy:)` on each in turn.
    ///
    /// Three passes. The plan walks the objects as the single adds would (each object, then its
    /// properties in order, each unmanaged object a link or collection reaches before the rest,
    /// including cycles and objects reached twice) and lists the objects that would be created,
    /// in creation order, and those that would update a row (an existing primary key, or one
    /// met earlier in the walk, under `.modified`/`.all`). Nothing is written while planning: an
    /// object the plan cannot take (of another Realm, a primary key twice under `.error`, a
    /// misplaced embedded object, an invalid map key) makes the whole sequence go through `add`
    /// object by object, which reports the error as a single add does; an invalidated object is
    /// reported by the store that meets it, in the single adds' order. Then each
    /// class's new objects are created by one `cs_obj_create_many_keys` call with their
    /// plain-value columns and the links the single adds would set right after creating them
    /// (a class's keys depend only on the order of its own creations, which is the walk's), and
    /// become managed. Only an array is planned; another sequence is added element by element. Last, the objects' other properties (links,
    /// collections, embedded objects, AnyRealmValue, legacy boxes) are stored and the objects
    /// bound, in the walk's order: an object is finished where the single adds would have added
    /// it (`link(to:policy:)` finishes a planned object it meets), so embedded objects are
    /// created, and rows updated, in the same order.
    func addAll<S: Sequence>(_ objects: S, policy: Realm.UpdatePolicy) where S.Element: ObjectBase {
        verifyWrite("add objects to a Realm")
        // Only a sequence whose elements all exist already (an array) is read whole first: any
        // other (a lazy map, a generator) is added element by element as it produces them, as
        // RealmSwift's loop does, so an element made after earlier ones were added sees them.
        let top: [ObjectBase]
        switch objects {
        case let a as [S.Element]: top = a
        case let a as ContiguousArray<S.Element>: top = Array(a)
        case let a as ArraySlice<S.Element>: top = Array(a)
        default:
            for o in objects { add(o, policy: policy) }
            return
        }
        // A migration's primary keys are ordinary values while its block runs; a sequence added
        // while another is being finished (no such path today) is added object by object.
        if isMigration || addPlan != nil {
            for o in top { add(o, policy: policy) }
            return
        }
        let plan = AddPlan(core: self, policy: policy)
        guard plan.walk(top), !plan.nodes.isEmpty, createRows(plan) else {
            for o in top { add(o, policy: policy) }
            return
        }
        if plan.pending.isEmpty && !plan.topWasManaged.contains(true) { return }
        addPlan = plan
        defer { addPlan = nil }
        for (t, o) in top.enumerated() {
            if let i = plan.pending.removeValue(forKey: ObjectIdentifier(o)) {
                finishAdd(plan, i)
            } else if plan.topWasManaged[t] {
                add(o, policy: policy) // managed before: the checks of a single add
            }
        }
        // Every planned object is reached from the sequence; finish any the walk reached and the
        // stores did not (none is expected), in plan order.
        for i in plan.pending.values.sorted() where plan.pending.removeValue(forKey: ObjectIdentifier(plan.nodes[i].object)) != nil {
            finishAdd(plan, i)
        }
    }

    /// Creates the rows of the plan's new objects, one core call per class, and makes every
    /// planned object managed (not yet bound). False, with nothing created, when the first
    /// call is refused (a primary key that exists, under `.error`): the caller then adds object
    /// by object, which reports it.
    private func createRows(_ plan: AddPlan) -> Bool {
        didMutate()
        // Every batch's values first: a value the core would refuse (a String or Data over its
        // size limit) gives up before anything is created, so the single adds report it where
        // they meet it.
        var prepared: [ObjectIdentifier: BatchValues] = [:]
        for cp in plan.classes where !cp.created.isEmpty && cp.batchable {
            var links: [(offset: Int, field: any PersistedField.Type, col: UInt32)] = []
            if !cp.hasUpdates {
                for (l, link) in cp.links.enumerated() where cp.linkBatched[l] { links.append(link) }
                if !links.isEmpty {
                    let cols = Set(links.map(\.col))
                    cp.finishRest = cp.rest.filter { !cols.contains($0.col) }
                }
            }
            guard let values = batchValues(cp, links, plan) else { return false }
            prepared[ObjectIdentifier(cp)] = values
        }
        var createdAny = false
        for cp in plan.classes where !cp.created.isEmpty {
            let info = cp.info
            if cp.batchable, let values = prepared[ObjectIdentifier(cp)] {
                var keys = [Int64](repeating: 0, count: cp.created.count)
                let rc = cs_obj_create_many_keys(txn, info.table, cp.created.count, values.cols.count, values.cols, values.values, &keys)
                if rc != 0 && !createdAny { return false } // nothing created: the single adds report it
                if rc == Int32(CS_CONSTRAINT) { plan.trapAtFirstError() }
                if rc != 0 { CoreCall.fail(rc, "Creating \(cp.created.count) \(info.objectSchema.className) objects") }
                batchedAdds += cp.created.count
                var prev = cs_obj()
                for (r, i) in cp.created.enumerated() {
                    var row = cs_obj()
                    if r > 0 { cs_obj_prepare(txn, info.table, keys[r], &prev, &row) } else { cs_obj_prepare(txn, info.table, keys[r], nil, &row) }
                    plan.nodes[i].batched = true
                    point(plan.nodes[i].object, info, at: row)
                    prev = row
                }
            } else {
                for i in cp.created {
                    var row = cs_obj()
                    let o = plan.nodes[i].object
                    if let pk = cp.primaryKey {
                        let rc = withCValue(KeyValueCoding.unmanagedStored(o, pk)) { cs_obj_create_primary(txn, info.table, $0, &row) }
                        if rc == Int32(CS_CONSTRAINT) {
                            if !createdAny { return false }
                            plan.trapAtFirstError()
                        }
                        if rc != 0 { CoreCall.fail(rc, "Creating a \(info.objectSchema.className)") }
                    } else {
                        CoreCall.must(cs_obj_create(txn, info.table, &row), "Creating a \(info.objectSchema.className)")
                    }
                    createdAny = true
                    point(o, info, at: row)
                }
            }
            createdAny = true
        }
        // Objects that update a row: one that exists, or one created above for an object met
        // earlier in the walk with the same primary key.
        for i in plan.nodes.indices where !plan.nodes[i].isCreated {
            let n = plan.nodes[i]
            var row = cs_obj()
            CoreCall.must(cs_obj_open(txn, n.cls.info.table, plan.rowKey(i), &row), "Opening an object")
            point(n.object, n.cls.info, at: row)
        }
        // Objects created whole by a batch (every property a batched column, bound lazily)
        // need nothing more: only the others stay pending.
        let whole = plan.nodes.filter { $0.batched && !$0.rewrite && !$0.cls.needsFinish }
        if whole.count == plan.nodes.count {
            plan.pending.removeAll()
        } else {
            for n in whole { plan.pending.removeValue(forKey: ObjectIdentifier(n.object)) }
        }
        return true
    }

    /// The columns and values of the `cs_obj_create_many_keys` call for the new objects of `cp`'s
    /// class: its plain-value columns and the links `links` (to objects managed before the add);
    /// nil when a value is over the core's size limit.
    private func batchValues(_ cp: AddPlan.ClassPlan, _ links: [(offset: Int, field: any PersistedField.Type, col: UInt32)],
                             _ plan: AddPlan) -> BatchValues? {
        let n = cp.created.count
        let out = BatchValues()
        out.values.reserveCapacity((cp.batch.count + links.count) * n)
        let limit = cs_max_blob()
        func copied(_ s: String) -> cs_value? {
            var str = s
            if str.utf8.count > limit { return nil }
            return str.withUTF8 { buf in
                let copy = UnsafeMutableRawPointer.allocate(byteCount: max(buf.count, 1), alignment: 1)
                out.owned.append(copy)
                if let b = buf.baseAddress { copy.copyMemory(from: b, byteCount: buf.count) }
                return cs_string(copy.assumingMemoryBound(to: CChar.self), buf.count)
            }
        }
        for b in cp.batch {
            // the commonest types read as themselves, without a generic call per value
            if let kind = DirectKind.of(b.field) {
                for i in cp.created {
                    let p = UnsafeRawPointer(Unmanaged.passUnretained(plan.nodes[i].object).toOpaque()) + b.offset
                    if !kind.isString {
                        out.values.append(kind.scalar(at: p))
                    } else if let str = kind.string(at: p) {
                        guard let v = copied(str) else { return nil }
                        out.values.append(v)
                    } else {
                        out.values.append(cs_null())
                    }
                }
                continue
            }
            for i in cp.created {
                let o = plan.nodes[i].object
                let base = UnsafeRawPointer(Unmanaged.passUnretained(o).toOpaque())
                let sv = b.field.storedValue(at: base + b.offset) ?? KeyValueCoding.unmanagedStored(o, b.property)
                switch sv {
                case .string(let str):
                    guard let v = copied(str) else { return nil }
                    out.values.append(v)
                case .data(let d):
                    if d.count > limit { return nil }
                    let copy = UnsafeMutableRawPointer.allocate(byteCount: max(d.count, 1), alignment: 1)
                    out.owned.append(copy)
                    d.withUnsafeBytes { if let b = $0.baseAddress { copy.copyMemory(from: b, byteCount: $0.count) } }
                    out.values.append(cs_binary(UnsafeRawPointer(copy), d.count))
                default:
                    out.values.append(withCValue(sv) { $0.pointee })
                }
            }
        }
        // links to objects managed before this add (walkValues checked them)
        for l in links {
            for i in cp.created {
                let o = plan.nodes[i].object
                let base = UnsafeRawPointer(Unmanaged.passUnretained(o).toOpaque())
                if case .object(let t) = l.field.storedValue(at: base + l.offset), let tinfo = t.info {
                    out.values.append(cs_link(tinfo.table, t.cobj.key))
                } else {
                    out.values.append(cs_null())
                }
            }
        }
        out.cols = cp.batch.map(\.col) + links.map(\.col)
        return out
    }

    /// Stores what the row of planned object `i` does not hold yet and binds the object: its
    /// properties besides the batched columns (a new object) or all of them (an update), as
    /// `add` copies them.
    func finishAdd(_ plan: AddPlan, _ i: Int) {
        let n = plan.nodes[i]
        let o = n.object, info = n.cls.info
        if n.batched && !n.rewrite {
            let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(o).toOpaque())
            for b in n.cls.finishRest { b.field.store(from: base + b.offset, into: o, column: b.col, policy: plan.policy) }
            for b in info.legacyBindings where b.col != info.primaryColumn {
                let box = base.load(fromByteOffset: b.offset, as: AnyObject.self)
                (box as? LegacyPropertyBox)?.store(into: o, column: b.col, policy: plan.policy)
            }
        } else {
            copyValues(of: o, info, policy: plan.policy, skipPrimary: true)
        }
        bind(o, info)
    }
}

/// The columns and values of one `cs_obj_create_many_keys` call (column by column), with the
/// copies of the strings and data they point at.
final class BatchValues {
    var cols: [UInt32] = []
    var values: [cs_value] = []
    var owned: [UnsafeMutableRawPointer] = []
    deinit { for p in owned { p.deallocate() } }
}

/// What `RealmCore.addAll` will do, worked out before it writes anything: the objects the
/// single adds would create or update, in their order.
final class AddPlan {
    /// A primary key as a dictionary key (the types a primary key can have).
    enum PrimaryKey: Hashable {
        case null
        case int(Int64)
        case string(String)
        case objectId([UInt8])
        case uuid(UUID)

        init?(_ v: StoredValue) {
            switch v {
            case .null: self = .null
            case .int(let i): self = .int(i)
            case .string(let s): self = .string(s)
            case .objectId(let o): self = .objectId(o.bytes)
            case .uuid(let u): self = .uuid(u)
            default: return nil
            }
        }
    }

    /// How a planned object gets its row.
    enum Kind {
        /// A new row.
        case create
        /// Updates the existing row with this key.
        case update(Int64)
        /// Updates the row of the planned object at this index (the same primary key, met
        /// earlier in the walk).
        case twin(Int)
    }

    struct Node {
        let object: ObjectBase
        let cls: ClassPlan
        let kind: Kind
        /// Created by `cs_obj_create_many_keys` with the batched columns.
        var batched = false
        /// A later object has the same primary key (a twin): `finishAdd` stores every property
        /// again, in declaration order, so a twin met inside this object's own graph updates
        /// the row between them as the single add does.
        var rewrite = false
        var isCreated: Bool { if case .create = kind { return true } else { return false } }
    }

    /// How objects of one class are planned and created.
    final class ClassPlan {
        let info: ClassInfo
        let primaryKey: Property?
        /// Plain-value columns the batch creates objects with (the primary key among them).
        var batch: [(offset: Int, field: any PersistedField.Type, col: UInt32, property: Property)] = []
        /// The other @Persisted properties (not the primary key), stored per object afterwards.
        var rest: [(offset: Int, field: any PersistedField.Type, col: UInt32)] = []
        /// The properties that can reach other objects, or hold map keys, in `copyValues`
        /// order (@Persisted, then legacy boxes); `embedded`: a link to an embedded class.
        var walks: [(offset: Int, field: (any PersistedField.Type)?, embedded: Bool, single: Bool, link: Int?)] = []
        /// The links to top-level classes (single values, not the primary key): batched
        /// columns too while `linkBatched` says so (see `AddPlan.walkValues`).
        var links: [(offset: Int, field: any PersistedField.Type, col: UInt32)] = []
        /// Per link: whether every new object's link can go in with the batch.
        var linkBatched: [Bool] = []
        /// Whether an object of the class updates a row (its links are then all set in order,
        /// one by one, so that backlinks keep the order of the single adds).
        var hasUpdates = false
        /// What `finishAdd` stores for an object the batch created: `rest`, less the links
        /// the batch held (set by `createRows`).
        var finishRest: [(offset: Int, field: any PersistedField.Type, col: UInt32)] = []
        /// Whether `cs_obj_create_many_keys` can create the class's objects (a top-level class
        /// whose primary key, if any, is a batched column); else each is created alone.
        var batchable = true
        /// Whether a new object created by the batch still needs `finishAdd`: properties
        /// besides the batched columns, legacy boxes, or wrappers bound eagerly.
        var needsFinish: Bool { !finishRest.isEmpty || !info.legacyBindings.isEmpty || info.bindsEagerly }
        /// Indices of the planned new objects, in creation order.
        var created: [Int] = []
        /// The planned object of each primary key met.
        var keys: [PrimaryKey: Int] = [:]
        /// The primary key's wrapper, when it is a batched column.
        var pkBinding: (offset: Int, field: any PersistedField.Type)?

        init(_ info: ClassInfo) {
            self.info = info
            let props = info.objectSchema.allProperties
            primaryKey = info.objectSchema.primaryKeyProperty
            var pkBatched = false
            for b in info.bindings where b.stored {
                guard let pi = info.propertyIndex(column: b.col) else { continue }
                let p = props[pi]
                let embeddedTarget = p.type == .object && info.targets[pi]?.isEmbedded == true
                var link: Int?
                if p.type == .object && !p.isCollection && !embeddedTarget && info.targets[pi] != nil {
                    link = links.count
                    links.append((b.offset, b.field, b.col))
                    linkBatched.append(true)
                }
                if p.type == .object || p.type == .any || p.isMap {
                    walks.append((b.offset, b.field, embeddedTarget, !p.isCollection, link))
                }
                if Self.plain(p) {
                    batch.append((b.offset, b.field, b.col, p))
                    if b.col == info.primaryColumn {
                        pkBatched = true
                        pkBinding = (b.offset, b.field)
                    }
                } else if b.col != info.primaryColumn {
                    rest.append((b.offset, b.field, b.col))
                }
            }
            for b in info.legacyBindings {
                guard let pi = info.propertyIndex(column: b.col) else { continue }
                let p = props[pi]
                if p.type == .object || p.type == .any || p.isMap {
                    walks.append((b.offset, nil, p.type == .object && info.targets[pi]?.isEmbedded == true, false, nil))
                }
            }
            batchable = !info.isEmbedded && (info.primaryColumn == CS_NONE || pkBatched)
            finishRest = rest
        }

        /// The unmanaged primary key of `o`: through its wrapper (as the batch reads it) when
        /// the key is a batched column, else through key-value coding.
        func primaryKeyValue(_ o: ObjectBase, _ pk: Property) -> StoredValue {
            if let b = pkBinding {
                let base = UnsafeRawPointer(Unmanaged.passUnretained(o).toOpaque())
                if let v = b.field.storedValue(at: base + b.offset) { return v }
            }
            return KeyValueCoding.unmanagedStored(o, pk)
        }

        /// A single value of a type `cs_obj_create_many_keys` takes without looking at links.
        private static func plain(_ p: Property) -> Bool {
            if p.isCollection || p.legacy { return false }
            switch p.type {
            case .int, .bool, .float, .double, .string, .data, .date, .objectId, .decimal128, .UUID: return true
            default: return false
            }
        }
    }

    unowned let core: RealmCore
    let policy: Realm.UpdatePolicy
    var nodes: [Node] = []
    /// Classes in the order first met.
    private(set) var classes: [ClassPlan] = []
    private var classByType: [ObjectIdentifier: ClassPlan] = [:]
    private var lastClass: (type: ObjectIdentifier, plan: ClassPlan)?
    /// The node of each planned object; once the rows exist, of each one not finished yet.
    var pending: [ObjectIdentifier: Int] = [:]
    /// Unmanaged embedded objects met (each may be embedded once).
    private var embedded = Set<ObjectIdentifier>()

    /// Per object added: whether it was managed before (a single add checks it again).
    private(set) var topWasManaged: [Bool] = []
    /// For the strict walk: the plan whose rows are being created.
    private let original: AddPlan?
    /// The objects added, in order.
    private var top: [ObjectBase] = []

    init(core: RealmCore, policy: Realm.UpdatePolicy, original: AddPlan? = nil) {
        self.core = core
        self.policy = policy
        self.original = original
    }

    /// Plans adding `objects` in order; false if an object needs the single adds (see
    /// `RealmCore.addAll`).
    func walk(_ objects: [ObjectBase]) -> Bool {
        top = objects
        topWasManaged.reserveCapacity(objects.count)
        nodes.reserveCapacity(objects.count)
        pending.reserveCapacity(objects.count)
        for o in objects {
            topWasManaged.append(o.core != nil)
            if !visit(o) { return false }
        }
        return true
    }

    private func classPlan(_ o: ObjectBase) -> ClassPlan? {
        let id = ObjectIdentifier(type(of: o))
        if let last = lastClass, last.type == id { return last.plan }
        if let cp = classByType[id] {
            lastClass = (id, cp)
            return cp
        }
        guard let info = core.infos[id], info.objectSchema.objectClass != DynamicObject.self else { return nil }
        let cp = ClassPlan(info)
        classByType[id] = cp
        classes.append(cp)
        return cp
    }

    /// An object added, or linked from an object added: planned if it is new.
    private func visit(_ o: ObjectBase) -> Bool {
        let id = ObjectIdentifier(o)
        var createdHere = false // the strict walk: created by the original plan's batches
        if let c = o.core {
            guard c === core else { return false }
            guard let original, original.pending[id] != nil else {
                // managed before this add: a single add checks it is valid, which storing the
                // link checks (and the strict walk, where the order of errors matters)
                if original != nil, o.isInvalidated {
                    preconditionFailure("Adding a deleted or invalidated object to a Realm is not permitted")
                }
                return true
            }
            createdHere = true // (only new objects are managed while rows are being created)
        }
        if pending[id] != nil { return true }
        guard let cp = classPlan(o), !cp.info.isEmbedded else { return false }
        var kind = Kind.create
        // Under `.error` the plan does no key work: the core refuses a batch with a key twice or
        // one that exists, before creating anything (then the single adds, or the strict walk,
        // report it). The strict walk and the update policies look keys up.
        if let pk = cp.primaryKey, policy != .error || original != nil {
            let value = cp.primaryKeyValue(o, pk)
            guard let key = PrimaryKey(value) else { return false }
            if let first = cp.keys[key] {
                if policy == .error {
                    preconditionFailure("Attempting to create an object of type '\(cp.info.objectSchema.className)' "
                                        + "with an existing primary key value '\(KeyValueCoding.describe(value))'.")
                }
                kind = .twin(first)
                nodes[first].rewrite = true
            } else {
                if policy != .error || (original != nil && !createdHere) {
                    var found: Int64 = 0
                    let rc = core.withCValue(value) { cs_table_find_primary(core.txn, cp.info.table, $0, &found) }
                    if rc == 0 {
                        if policy == .error {
                            preconditionFailure("Attempting to create an object of type '\(cp.info.objectSchema.className)' "
                                                + "with an existing primary key value '\(KeyValueCoding.describe(value))'.")
                        }
                        kind = .update(found)
                    }
                }
                cp.keys[key] = nodes.count
            }
        }
        pending[id] = nodes.count
        let created: Bool
        if case .create = kind { created = true } else { created = false }
        if created { cp.created.append(nodes.count) } else { cp.hasUpdates = true }
        nodes.append(Node(object: o, cls: cp, kind: kind))
        return walkValues(o, cp, created: created)
    }

    /// Plans the objects `o`'s properties reach, in the order `copyValues` stores them.
    ///
    /// A new object's link can go in with its class's batch (`linkBatched`) when it is nil or
    /// names an object managed (and valid) before this add, and no new object was planned while
    /// walking the properties before it: then the single adds would set it right after creating
    /// the object, so the backlinks of its target come in creation order either way.
    private func walkValues(_ o: ObjectBase, _ cp: ClassPlan, created: Bool = false) -> Bool {
        if cp.walks.isEmpty { return true }
        let base = UnsafeRawPointer(Unmanaged.passUnretained(o).toOpaque())
        let start = nodes.count
        for w in cp.walks {
            if w.single, let field = w.field {
                // a link or an AnyRealmValue: one value, read without making an array
                let v = field.storedValue(at: base + w.offset) ?? .null
                if let l = w.link, cp.linkBatched[l] {
                    var direct = created && nodes.count == start
                    if direct, case .object(let t) = v {
                        direct = t.core === core && original == nil && !t.isInvalidated
                    }
                    if !direct { cp.linkBatched[l] = false }
                }
                if !walkValue(v, key: nil, embedded: w.embedded) { return false }
                continue
            }
            let elements: [(key: String?, value: StoredValue)]
            if let field = w.field {
                elements = field.storedElements(at: base + w.offset)
            } else {
                let box = base.load(fromByteOffset: w.offset, as: AnyObject.self)
                elements = (box as? LegacyPropertyBox)?.storedElements ?? []
            }
            for e in elements where !walkValue(e.value, key: e.key, embedded: w.embedded) { return false }
        }
        return true
    }

    private func walkValue(_ v: StoredValue, key: String?, embedded target: Bool) -> Bool {
        if let key, key.isEmpty || key.hasPrefix("$") || key.contains(".") || key.utf8.contains(0) { return false }
        switch v {
        case .object(let t):
            guard target else { return visit(t) }
            guard t.core == nil, embedded.insert(ObjectIdentifier(t)).inserted,
                  let cp = classPlan(t), cp.info.isEmbedded else { return false }
            return walkValues(t, cp)
        case .list(let l):
            for e in Array(l) where !walkValue(e._rlmEncode().value, key: nil, embedded: false) { return false }
            return true
        case .dictionary(let m):
            for (k, e) in m.entries() where !walkValue(e._rlmEncode().value, key: k, embedded: false) { return false }
            return true
        default:
            return true
        }
    }

    /// The key of the row planned object `i` writes to (after `createRows`).
    func rowKey(_ i: Int) -> Int64 {
        switch nodes[i].kind {
        case .create: return nodes[i].object.cobj.key
        case .update(let key): return key
        case .twin(let first): return rowKey(first)
        }
    }

    /// Under `.error`, after the core refused a class's batch once other rows were created:
    /// traps as the single adds would, at the first error in their order, found by walking the
    /// objects again, strictly: a primary key that exists (looked up for each new object not
    /// created yet) or an invalidated object (the plan left that check to the stores).
    func trapAtFirstError() -> Never {
        let strict = AddPlan(core: core, policy: policy, original: self)
        _ = strict.walk(top)
        CoreCall.fail(Int32(CS_CONSTRAINT), "Creating objects")
    }
}
