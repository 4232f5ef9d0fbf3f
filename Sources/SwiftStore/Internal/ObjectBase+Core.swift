import CStore
import Foundation

// The core calls objects make outside the property-read hot path (which stays in
// Object/ObjectBase.swift; docs/ARCHITECTURE.md, The Swift layer).

extension ObjectBase {
    /// Another accessor of this object's row, with this object's generation (so it is
    /// invalidated with it): the owner of the collection accessors this object keeps in its
    /// `@Persisted` wrappers. A kept collection owned by the object itself would hold the object
    /// that holds it, and the two (with their Realm) would never be released. A collection the
    /// program holds on its own still keeps its row's Realm, as RealmSwift's collections do.
    @usableFromInline
    final var _rlmKeptCollectionOwner: ObjectBase {
        guard let core, let info else { return self }
        let twin = core.object(info, key: cobj.key)
        twin.generation = generation
        return twin
    }

    /// Creates the embedded object that the link column `col` of this object holds, replacing
    /// the one it held, and returns its key.
    func createEmbeddedRow(column col: UInt32) -> Int64 {
        var row = cs_obj()
        CoreCall.must(cs_obj_create_embedded(&cobj, col, &row), "Creating an embedded object")
        return row.key
    }

    /// Reads a Mixed column, opening a nested list or dictionary as an accessor.
    func readColumnMixed(_ col: UInt32) -> StoredValue {
        let core = verifyReadable()
        var v = cs_value()
        CoreCall.must(cs_obj_get(&cobj, col, &v), "Reading a property of \(type(of: self))")
        if v.type == CS_TYPE_LIST {
            let m = ManagedCollection(owner: self, column: col)
            m.mixedKind = .list
            m.identities = [m.currentIdentity()]
            return .list(List<AnyRealmValue>(managed: m))
        }
        if v.type == CS_TYPE_DICT {
            let m = ManagedCollection(owner: self, column: col)
            m.mixedKind = .map
            m.identities = [m.currentIdentity()]
            return .dictionary(Map<String, AnyRealmValue>(managed: m))
        }
        return core.stored(from: v, dynamic: isDynamic)
    }

    /// Reads a String column: the read check without retaining the core, the core's read, and
    /// the bytes decoded straight into a String (no `StoredValue` in between). Nil for null.
    final func readStringColumn(_ col: UInt32) -> String? {
        guard let ref = coreRef else { preconditionFailure("Object is not managed by a Realm") }
        let attached = ref._withUnsafeGuaranteedRef { $0.generation == generation && $0.isOnOwnerThread }
        if !attached { _ = verifyAttached() }
        var v = cs_value()
        let rc = cs_obj_get(&cobj, col, &v)
        if rc != 0 { readFailed(rc) }
        guard v.type == CS_TYPE_STRING else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: v.v.bytes.ptr, count: v.v.bytes.len), as: UTF8.self)
    }
}
