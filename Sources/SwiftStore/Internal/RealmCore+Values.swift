import CStore
import Foundation

/// Conversions between the core's C values and `StoredValue`, and the writes that need the
/// Realm (links to unmanaged objects, embedded objects, nested collections).
extension RealmCore {
    /// A Swift value from a C value read through this instance's transaction. Links become
    /// managed objects; a nested collection in a Mixed value reads as null here (callers that
    /// can hold one open it themselves).
    func stored(from v: cs_value, dynamic: Bool = false) -> StoredValue {
        switch v.type {
        case CS_TYPE_NULL: return .null
        case CS_TYPE_INT: return .int(v.v.i)
        case CS_TYPE_BOOL: return .bool(v.v.b)
        case CS_TYPE_FLOAT: return .float(v.v.f)
        case CS_TYPE_DOUBLE: return .double(v.v.d)
        case CS_TYPE_STRING:
            let buffer = UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len)
            return .string(String(decoding: buffer, as: UTF8.self))
        case CS_TYPE_BINARY:
            if v.v.bytes.len == 0 { return .data(Data()) }
            return .data(Data(bytes: v.v.bytes.ptr, count: v.v.bytes.len))
        case CS_TYPE_TIMESTAMP:
            return .date(Date(timeIntervalSince1970: Double(v.v.ts.sec) + Double(v.v.ts.nsec) / 1e9))
        case CS_TYPE_OBJECTID:
            return .objectId(withUnsafeBytes(of: v.v.oid) { ObjectId(bytes: Array($0)) })
        case CS_TYPE_UUID:
            return .uuid(UUID(uuid: v.v.uuid))
        case CS_TYPE_DECIMAL:
            return .decimal(Decimal128(v.v.dec))
        case CS_TYPE_LINK:
            guard let info = infosByTable[v.v.link.table] else { return .null }
            return .object(object(dynamic ? dynamicInfo(info) : info, key: v.v.link.key))
        default:
            return .null
        }
    }

    /// Calls `body` with `value` as a C value. Objects must already be managed by this Realm
    /// (use `link(to:policy:)` first); nested collections are written by `write`.
    func withCValue<R>(_ value: StoredValue, _ body: (UnsafePointer<cs_value>) -> R) -> R {
        var v = cs_null()
        switch value {
        case .null, .list, .dictionary: break
        case .int(let i): v = cs_int(i)
        case .bool(let b): v = cs_bool(b)
        case .float(let f): v = cs_float(f)
        case .double(let d): v = cs_double(d)
        case .string(var s):
            return s.withUTF8 { buf in
                var sv = cs_string(buf.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                                   buf.count)
                if sv.v.bytes.ptr == nil { sv.v.bytes.ptr = UnsafeRawPointer(bitPattern: 1) }
                return body(&sv)
            }
        case .data(let d):
            return d.withUnsafeBytes { buf in
                var bv = cs_binary(buf.baseAddress, buf.count)
                if bv.v.bytes.ptr == nil { bv.v.bytes.ptr = UnsafeRawPointer(bitPattern: 1) }
                return body(&bv)
            }
        case .date(let date):
            let t = date.timeIntervalSince1970
            var sec = t.rounded(.towardZero)
            var nsec = ((t - sec) * 1e9).rounded()
            if nsec >= 1e9 { sec += 1; nsec -= 1e9 } else if nsec <= -1e9 { sec -= 1; nsec += 1e9 }
            v = cs_timestamp(Int64(sec), Int32(nsec))
        case .objectId(let o):
            v.type = CS_TYPE_OBJECTID
            let bytes = o.bytes
            withUnsafeMutableBytes(of: &v.v.oid) { dst in
                for i in 0..<12 { dst[i] = bytes[i] }
            }
        case .decimal(let d):
            v.type = CS_TYPE_DECIMAL
            v.v.dec = d.cValue
        case .uuid(let u):
            v.type = CS_TYPE_UUID
            v.v.uuid = u.uuid
        case .object(let o):
            guard let info = o.info, o.core === self else {
                preconditionFailure("Object is not managed by this Realm")
            }
            v = cs_link(info.table, o.cobj.key)
        }
        return body(&v)
    }

    /// Makes `object` managed by this Realm if it is not (adding it with `policy`) and returns
    /// its table and key. Traps for an object of another Realm, as RealmSwift does.
    func link(to object: ObjectBase, policy: Realm.UpdatePolicy) -> ObjectBase {
        if object.core === self {
            // an object `addAll` created and has not finished: finished here, where the single
            // adds would add it
            if let plan = addPlan, let i = plan.pending.removeValue(forKey: ObjectIdentifier(object)) {
                finishAdd(plan, i)
                return object
            }
            if object.isInvalidated { preconditionFailure("Adding a deleted or invalidated object to a Realm is not permitted") }
            return object
        }
        if let other = object.core {
            if other.db == db && other !== self {
                preconditionFailure("Object is already managed by another Realm. Use create instead to copy it into this Realm.")
            }
            preconditionFailure("Object is already managed by another Realm. Use create instead to copy it into this Realm.")
        }
        add(object, policy: policy)
        return object
    }

    /// Writes `value` into a single-value column of a managed object.
    func write(_ value: StoredValue, to obj: ObjectBase, column col: UInt32, policy: Realm.UpdatePolicy) {
        didMutate()
        switch value {
        case .object(let target):
            if let tinfo = obj.info?.target(column: col), tinfo.isEmbedded {
                embed(target, in: obj, column: col, policy: policy)
                return
            }
            if obj.info?.property(column: col)?.type == .any, target.core == nil,
               infos[ObjectIdentifier(type(of: target))]?.isEmbedded == true {
                preconditionFailure("Embedded objects cannot be stored in an AnyRealmValue property")
            }
            let linked = link(to: target, policy: policy)
            if policy == .modified, sameLink(obj, col, linked) { return }
            withCValue(.object(linked)) { v in
                CoreCall.must(cs_obj_set(&obj.cobj, col, v), "Setting a link")
            }
        case .list(let list):
            CoreCall.must(cs_obj_set_collection(&obj.cobj, col, CS_TYPE_LIST), "Setting a nested list")
            MixedCollections.fill(list: ManagedCollection(owner: obj, column: col), from: Array(list), policy: policy)
        case .dictionary(let map):
            CoreCall.must(cs_obj_set_collection(&obj.cobj, col, CS_TYPE_DICT), "Setting a nested dictionary")
            MixedCollections.fill(map: ManagedCollection(owner: obj, column: col), from: map.entries(), policy: policy)
        default:
            if policy == .modified {
                var old = cs_value()
                if cs_obj_get(&obj.cobj, col, &old) == 0 {
                    let same = withCValue(value) { cs_value_compare(&old, $0) == 0 && old.type == $0.pointee.type }
                    if same { return }
                }
            }
            withCValue(value) { v in
                let rc = cs_obj_set(&obj.cobj, col, v)
                if rc != 0 { failSet(rc, obj, col) }
            }
        }
    }

    private func sameLink(_ obj: ObjectBase, _ col: UInt32, _ target: ObjectBase) -> Bool {
        var old = cs_value()
        guard cs_obj_get(&obj.cobj, col, &old) == 0, old.type == CS_TYPE_LINK else { return false }
        return old.v.link.key == target.cobj.key && old.v.link.table == target.info?.table
    }

    /// Traps with a RealmSwift-like message for a failed property write.
    func failSet(_ rc: Int32, _ obj: ObjectBase, _ col: UInt32) -> Never {
        let name = obj.info?.property(column: col)?.name ?? "column \(col)"
        let cls = obj.info?.objectSchema.className ?? "?"
        if rc == Int32(CS_MISUSE), obj.info?.primaryColumn == col {
            preconditionFailure("Primary key can't be changed after an object is inserted.")
        }
        CoreCall.fail(rc, "Setting property '\(name)' of '\(cls)'")
    }

    /// Makes `target` the embedded object in `obj`'s link column `col`: a new embedded row is
    /// created and `target` (which must be unmanaged) becomes its accessor.
    func embed(_ target: ObjectBase, in obj: ObjectBase, column col: UInt32, policy: Realm.UpdatePolicy) {
        if target.core != nil {
            preconditionFailure("Cannot set a link to an existing managed embedded object")
        }
        var e = cs_obj()
        CoreCall.must(cs_obj_create_embedded(&obj.cobj, col, &e), "Creating an embedded object")
        adopt(target, row: e, policy: policy)
    }

    /// Makes an unmanaged object the accessor of the new row `row`, copying its values in.
    func adopt(_ target: ObjectBase, row: cs_obj, policy: Realm.UpdatePolicy) {
        let info = self.info(for: type(of: target))
        point(target, info, at: row)
        copyValues(of: target, info, policy: policy, skipPrimary: true)
        bind(target, info)
    }

    /// Copies every persisted value an unmanaged object holds into its (new) row.
    func copyValues(of o: ObjectBase, _ info: ClassInfo, policy: Realm.UpdatePolicy, skipPrimary: Bool) {
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(o).toOpaque())
        for b in info.bindings where b.stored {
            if skipPrimary && b.col == info.primaryColumn { continue }
            b.field.store(from: base + b.offset, into: o, column: b.col, policy: policy)
        }
        for b in info.legacyBindings {
            if skipPrimary && b.col == info.primaryColumn { continue }
            let box = base.load(fromByteOffset: b.offset, as: AnyObject.self)
            (box as? LegacyPropertyBox)?.store(into: o, column: b.col, policy: policy)
        }
    }
}
