/// Implementation detail: a collection property a query can step into (List, MutableSet,
/// LinkingObjects), RealmSwift's `RealmCollection` as far as `Query` needs it.
public protocol _QueryableCollection {
    /// The type of the elements.
    associatedtype Element
}

/// Implementation detail: a keyed collection property a query can step into (Map),
/// RealmSwift's `RealmKeyedCollection` as far as `Query` needs it.
public protocol _QueryableKeyedCollection {
    /// The type of the keys.
    associatedtype Key: _MapKey
    /// The type of the values.
    associatedtype Value: RealmCollectionValue
}

extension List: _QueryableCollection {}
extension MutableSet: _QueryableCollection {}
extension LinkingObjects: _QueryableCollection {}
extension Map: _QueryableKeyedCollection {}
