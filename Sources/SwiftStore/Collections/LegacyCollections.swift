import Foundation

// Collections declared without @Persisted (`let dogs = List<Dog>()`, `let tags = MutableSet<String>()`,
// `let scores = Map<String, Int>()`) are properties as in RealmSwift: schema discovery finds
// them as legacy boxes, `add` copies their unmanaged contents into the new row, and binding
// then makes the very instance the object holds read and write the row's column through an
// accessor of its own (so the collection does not keep its owner alive), which reads objects
// of their model classes.

extension List: LegacyPropertyBox {
    static var shape: _PropertyShape { _rlmShape }
    var anyValue: Any { self }
    func setAny(_ value: Any) -> Bool {
        guard let v = Self._rlmFromAny(value) else { return false }
        if let managed { Self._rlmStore(v, managed.owner, managed.col, .error) } else { unmanaged = v.unmanaged }
        return true
    }
    func attach(owner: ObjectBase, column: UInt32) {
        managed = ManagedCollection.legacy(owner: owner, column: column)
        unmanaged = []
    }
    func store(into owner: ObjectBase, column: UInt32, policy: Realm.UpdatePolicy) {
        Self._rlmStore(self, owner, column, policy)
    }
    var storedElements: [(key: String?, value: StoredValue)] {
        Self._rlmStoredElements(self).map { ($0.key, $0.value.value) }
    }
}

extension MutableSet: LegacyPropertyBox {
    static var shape: _PropertyShape { _rlmShape }
    var anyValue: Any { self }
    func setAny(_ value: Any) -> Bool {
        guard let v = Self._rlmFromAny(value) else { return false }
        if let managed { Self._rlmStore(v, managed.owner, managed.col, .error) } else { unmanaged = v.unmanaged }
        return true
    }
    func attach(owner: ObjectBase, column: UInt32) {
        managed = ManagedCollection.legacy(owner: owner, column: column)
        unmanaged = []
    }
    func store(into owner: ObjectBase, column: UInt32, policy: Realm.UpdatePolicy) {
        Self._rlmStore(self, owner, column, policy)
    }
    var storedElements: [(key: String?, value: StoredValue)] {
        Self._rlmStoredElements(self).map { ($0.key, $0.value.value) }
    }
}

extension Map: LegacyPropertyBox {
    static var shape: _PropertyShape { _rlmShape }
    var anyValue: Any { self }
    func setAny(_ value: Any) -> Bool {
        guard let v = Self._rlmFromAny(value) else { return false }
        if let managed { Self._rlmStore(v, managed.owner, managed.col, .error) } else { unmanaged = v.unmanaged }
        return true
    }
    func attach(owner: ObjectBase, column: UInt32) {
        managed = ManagedCollection.legacy(owner: owner, column: column)
        unmanaged = [:]
    }
    func store(into owner: ObjectBase, column: UInt32, policy: Realm.UpdatePolicy) {
        Self._rlmStore(self, owner, column, policy)
    }
    var storedElements: [(key: String?, value: StoredValue)] {
        Self._rlmStoredElements(self).map { ($0.key, $0.value.value) }
    }
}

extension ManagedCollection {
    /// The database side of a legacy collection of `owner`: through a dynamic accessor of
    /// the owner's row, so the collection stored in the owner does not retain the owner.
    static func legacy(owner: ObjectBase, column: UInt32) -> ManagedCollection? {
        guard let core = owner.core, let info = owner.info else { return nil }
        let c = ManagedCollection(owner: core.dynamicObject(info, key: owner.cobj.key), column: column)
        c.typedElements = true
        return c
    }
}
