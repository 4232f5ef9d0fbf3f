import Foundation

// String-keyed access to an object's link collections as collections of `DynamicObject`, on
// every `Object` (RealmSwift offers them on `Object`, not only on `DynamicObject`). For a typed
// object the collections are read through a dynamic view of the same row, so they are live and
// writable like the typed ones.

extension Object {
    /// The row as a `DynamicObject` (itself when it already is one). Unmanaged typed objects
    /// have no row to view dynamically.
    private func dynamicView(_ what: String, _ propertyName: String) -> ObjectBase {
        if self is DynamicObject { return self }
        guard let core, let info else {
            preconditionFailure("\(what)('\(propertyName)') needs a managed object; \(Self.className()) is unmanaged")
        }
        return core.dynamicObject(info, key: cobj.key)
    }

    /// The list property `propertyName` (of links) as a `List<DynamicObject>`.
    ///
    /// For code that knows a property only by name, such as migrations or generic tools; typed
    /// code reads the property itself.
    public func dynamicList(_ propertyName: String) -> List<DynamicObject> {
        let value = KeyValueCoding.value(dynamicView("dynamicList", propertyName), forKey: propertyName)
        guard let list = value as? List<DynamicObject> else {
            preconditionFailure("Property '\(propertyName)' of '\(objectSchema.className)' is not a list of objects")
        }
        return list
    }

    /// The set property `propertyName` (of links) as a `MutableSet<DynamicObject>`.
    public func dynamicMutableSet(_ propertyName: String) -> MutableSet<DynamicObject> {
        let value = KeyValueCoding.value(dynamicView("dynamicMutableSet", propertyName), forKey: propertyName)
        guard let set = value as? MutableSet<DynamicObject> else {
            preconditionFailure("Property '\(propertyName)' of '\(objectSchema.className)' is not a set of objects")
        }
        return set
    }

    /// The map property `propertyName` (of links) as a `Map<String, DynamicObject?>`.
    public func dynamicMap(_ propertyName: String) -> Map<String, DynamicObject?> {
        let value = KeyValueCoding.value(dynamicView("dynamicMap", propertyName), forKey: propertyName)
        guard let map = value as? Map<String, DynamicObject?> else {
            preconditionFailure("Property '\(propertyName)' of '\(objectSchema.className)' is not a map of objects")
        }
        return map
    }
}
