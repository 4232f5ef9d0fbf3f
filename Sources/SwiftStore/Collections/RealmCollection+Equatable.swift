import Foundation

// Collection equality as RealmSwift defines it. Unmanaged List, MutableSet and Map compare by
// contents (a List in order, a MutableSet as a set, a Map key by key). Managed collections
// compare by identity of what they read: the same property of the same object for List,
// MutableSet and Map; the same query (the same Realm, source, filters, sorts and distincts) for
// Results and LinkingObjects. A managed collection never equals an unmanaged one, and
// AnyRealmCollection compares the collections it wraps.

/// What collection equality needs from each collection type.
protocol CollectionIdentity {
    /// Whether `other` is a collection equal to this one.
    func isSameCollection(as other: Any) -> Bool
}

extension ResultsBase {
    /// The same query: the same Realm instance, source, filters and clauses.
    func isSameQuery(as other: ResultsBase) -> Bool {
        if self === other { return true }
        guard realmCore === other.realmCore else { return false }
        switch (root, other.root) {
        case let (.table(a), .table(b)):
            guard a.table == b.table else { return false }
        case let (.backlinks(o1, t1, c1, _), .backlinks(o2, t2, c2, _)):
            guard t1 == t2, c1 == c2, o1.isSameObject(as: o2) else { return false }
        case let (.collection(a, _), .collection(b, _)):
            guard a.isSameCollection(as: b) else { return false }
        case (.detached, .detached):
            break
        default:
            return false
        }
        guard predicates.count == other.predicates.count, clauses.count == other.clauses.count else { return false }
        for (a, b) in zip(predicates, other.predicates) {
            // (arguments as the addresses of Frozen snapshots keep them: an object as its link,
            // so that thawed results, whose objects are links, equal the original)
            guard a.0 == b.0,
                  String(describing: a.1.map(LinkArgument.detaching)) == String(describing: b.1.map(LinkArgument.detaching))
            else { return false }
        }
        for (a, b) in zip(clauses, other.clauses) {
            switch (a, b) {
            case let (.sort(x), .sort(y)): guard x == y else { return false }
            case let (.distinct(x), .distinct(y)): guard x == y else { return false }
            default: return false
            }
        }
        return true
    }
}

extension List: Equatable, CollectionIdentity {
    /// Unmanaged lists are equal when they hold equal elements in the same order; managed lists
    /// when they are the same property of the same object.
    public static func == (lhs: List, rhs: List) -> Bool {
        if lhs === rhs { return true }
        switch (lhs.managed, rhs.managed) {
        case let (a?, b?): return a.isSameCollection(as: b)
        case (nil, nil): return lhs.unmanaged == rhs.unmanaged
        default: return false
        }
    }

    /// `==` with any value: false unless `object` is a List of the same element type.
    public func isEqual(_ object: Any?) -> Bool { isSameCollection(as: object as Any) }

    func isSameCollection(as other: Any) -> Bool { (other as? List).map { self == $0 } ?? false }
}

extension MutableSet: Equatable, CollectionIdentity {
    /// Unmanaged sets are equal when they hold the same elements (in any order); managed sets
    /// when they are the same property of the same object.
    public static func == (lhs: MutableSet, rhs: MutableSet) -> Bool {
        if lhs === rhs { return true }
        switch (lhs.managed, rhs.managed) {
        case let (a?, b?): return a.isSameCollection(as: b)
        case (nil, nil): return Set(lhs.unmanaged) == Set(rhs.unmanaged)
        default: return false
        }
    }

    /// `==` with any value: false unless `object` is a MutableSet of the same element type.
    public func isEqual(_ object: Any?) -> Bool { isSameCollection(as: object as Any) }

    func isSameCollection(as other: Any) -> Bool { (other as? MutableSet).map { self == $0 } ?? false }
}

extension Map: Equatable, CollectionIdentity {
    /// Unmanaged maps are equal when they hold the same keys with equal values; managed maps
    /// when they are the same property of the same object.
    public static func == (lhs: Map, rhs: Map) -> Bool {
        if lhs === rhs { return true }
        switch (lhs.managed, rhs.managed) {
        case let (a?, b?): return a.isSameCollection(as: b)
        case (nil, nil): return lhs.unmanaged == rhs.unmanaged
        default: return false
        }
    }

    /// `==` with any value: false unless `object` is a Map of the same key and value types.
    public func isEqual(_ object: Any?) -> Bool { isSameCollection(as: object as Any) }

    func isSameCollection(as other: Any) -> Bool { (other as? Map).map { self == $0 } ?? false }
}

extension Results: Equatable, CollectionIdentity {
    /// Results are equal when they run the same query on the same Realm: the same source,
    /// filters, sorts and distincts.
    public static func == (lhs: Results, rhs: Results) -> Bool { lhs.base.isSameQuery(as: rhs.base) }

    func isSameCollection(as other: Any) -> Bool { (other as? Results).map { self == $0 } ?? false }
}

extension LinkingObjects: Equatable, CollectionIdentity {
    /// Managed backlinks are equal when they are those of the same object through the same
    /// property (with the same filters); unmanaged ones (always empty) when they name the same
    /// property.
    public static func == (lhs: LinkingObjects, rhs: LinkingObjects) -> Bool {
        switch (lhs.base, rhs.base) {
        case let (a?, b?): return a.isSameQuery(as: b)
        case (nil, nil): return lhs.propertyName == rhs.propertyName
        default: return false
        }
    }

    func isSameCollection(as other: Any) -> Bool { (other as? LinkingObjects).map { self == $0 } ?? false }
}

extension AnyRealmCollection: Equatable, CollectionIdentity {
    /// Equal when the wrapped collections are equal (by the rules of their own type).
    public static func == (lhs: AnyRealmCollection, rhs: AnyRealmCollection) -> Bool {
        guard let a = lhs.base as? CollectionIdentity else { return false }
        return a.isSameCollection(as: rhs.base)
    }

    func isSameCollection(as other: Any) -> Bool { (other as? AnyRealmCollection).map { self == $0 } ?? false }
}
