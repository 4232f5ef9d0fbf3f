import Foundation

extension SchemaDiscovery {
    /// The model classes of the default schema (a configuration without `objectTypes`): every
    /// `Object` and `EmbeddedObject` subclass in the process's type metadata, except the base
    /// classes themselves and classes whose `_realmIgnoreClass()` returns true.
    static func defaultObjectTypes() -> [ObjectBase.Type] {
        TypeMetadataScan.classes(inheritingFrom: ObjectBase.self).compactMap { $0 as? ObjectBase.Type }
            .filter { $0 != Object.self && $0 != EmbeddedObject.self && $0 != DynamicObject.self }
            .filter { !$0._realmIgnoreClass() }
    }
}
