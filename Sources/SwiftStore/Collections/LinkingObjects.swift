import Foundation

/// The objects whose link property points at an object: computed backlinks (RealmSwift's
/// `LinkingObjects`). Declare them with `@Persisted(originProperty:)`; they are empty while
/// the owning object is unmanaged.
///
/// ```swift
/// final class Dog: Object {
///     @Persisted(originProperty: "dogs") var owners: LinkingObjects<Person>
/// }
/// ```
public struct LinkingObjects<Element: ObjectBase & RealmCollectionValue>: RealmCollection {
    /// The name of the link property in `Element` these are the backlinks of.
    public let propertyName: String
    let base: ResultsBase?

    /// Backlinks through `propertyName` of `type` (the legacy declaration form).
    public init(fromType type: Element.Type, property propertyName: String) {
        self.propertyName = propertyName
        self.base = nil
    }

    init(propertyName: String, base: ResultsBase?) {
        self.propertyName = propertyName
        self.base = base
    }

    public typealias Index = Int
    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of linking objects.
    public var endIndex: Int { count }
    /// The number of linking objects (0 when the owner is unmanaged).
    public var count: Int { base?.count ?? 0 }

    /// The linking object at `position`.
    public subscript(position: Int) -> Element {
        guard let base else { preconditionFailure("Index \(position) is out of bounds (must be less than 0).") }
        return Element._rlmDecode(_Stored(.object(base.object(at: position))))
    }

    /// The Realm of the owning object, or nil if it is unmanaged.
    public var realm: Realm? { base?.realmCore.map { Realm(core: $0) } }

    /// Whether the owning object was deleted or its Realm invalidated.
    public var isInvalidated: Bool { base?.isInvalidated ?? false }

    /// `LinkingObjects<Person> <n> ( ... )`.
    public var description: String {
        describe(depth: 0)
    }

    /// Iterates the linking objects as they are when iteration starts.
    public func makeIterator() -> RLMIterator<Element> {
        guard let base else { return RLMIterator(values: []) }
        return RLMIterator(snapshotOf: base)
    }

    /// Implementation detail: the query over the backlinks (empty, detached results while the
    /// owner is unmanaged: they filter and sort to empty results, as in RealmSwift).
    public var _rlmQueryRoot: _RealmQueryRoot? { _RealmQueryRoot(base: base ?? ResultsBase.detached()) }
}

extension LinkingObjects: _RealmSchemaDiscoverable, _Persistable {
    public static var _rlmShape: _PropertyShape {
        _PropertyShape(.linkingObjects, collection: .linkingObjects, objectType: Element.self)
    }
    public static func _rlmDefaultValue() -> LinkingObjects<Element> {
        LinkingObjects(propertyName: "", base: nil)
    }
    public static var _rlmCachesAccessor: Bool { true }
    /// `index` is the property's position in the owner's schema (bound by `ClassInfo`).
    public static func _rlmGet(_ obj: ObjectBase, _ index: UInt32) -> LinkingObjects<Element> {
        guard let info = obj.info, let core = obj.core else { return _rlmDefaultValue() }
        let i = Int(index)
        let name = info.objectSchema.allProperties[i].linkOriginPropertyName ?? ""
        guard let (table, col) = info.backlinks[i], let origin = info.targets[i] else {
            return LinkingObjects(propertyName: name, base: nil)
        }
        return LinkingObjects(propertyName: name,
                              base: ResultsBase(core: core, source: .backlinks(obj, table, col, origin)))
    }
    public static func _rlmSet(_ obj: ObjectBase, _ col: UInt32, _ value: LinkingObjects<Element>) {
        preconditionFailure("LinkingObjects properties are read-only")
    }
    public static func _rlmStore(_ value: LinkingObjects<Element>, _ obj: ObjectBase, _ col: UInt32,
                                 _ policy: Realm.UpdatePolicy) {}
    public static func _rlmFromAny(_ value: Any) -> LinkingObjects<Element>? { nil }
}


