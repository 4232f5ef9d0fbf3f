import Foundation

// Projections (RealmSwift's `Projection` and `@Projected`): a light class that shows chosen
// properties of one object under names of its own, possibly reached through links, transformed
// by a key path (`\Person.lastName.localizedUppercase`) or mapped over a collection of objects
// (`\Person.friends.projectTo.firstName`). A projection keeps no state but its object: every
// read and write goes through the projected key path to the object (docs/REALMSWIFT.md,
// Projections).

/// What the projection's schema needs from a `@Projected` wrapper it finds by reflection.
protocol AnyProjected {
    var projectedKeyPath: AnyKeyPath { get }
}

/// Declares a property of a ``Projection`` that reads (and, where the key path is writable,
/// writes) the projected object through `keyPath`.
///
/// ```swift
/// class PersonProjection: Projection<Person> {
///     @Projected(\Person.firstName) var firstName
///     @Projected(\Person.lastName.localizedUppercase) var lastNameCaps
///     @Projected(\Person.address.city) var homeCity
///     @Projected(\Person.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>
/// }
/// ```
@propertyWrapper
public struct Projected<T: ObjectBase, Value>: AnyProjected {
    let keyPath: KeyPath<T, Value>
    var projectedKeyPath: AnyKeyPath { keyPath }

    /// Only usable on a ``Projection`` subclass (the enclosing-instance subscript is used there).
    @available(*, unavailable, message: "@Projected can only be used as a property on a Projection")
    public var wrappedValue: Value {
        get { fatalError("called wrappedValue getter") }
        // swiftlint:disable:next unused_setter_value
        set { fatalError("called wrappedValue setter") }
    }

    /// Reads and writes the projected object.
    public static subscript<EnclosingSelf: Projection<T>>(
        _enclosingInstance observed: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Self>
    ) -> Value {
        get {
            observed.rootObject[keyPath: observed[keyPath: storageKeyPath].keyPath]
        }
        set {
            guard let writable = observed[keyPath: storageKeyPath].keyPath as? ReferenceWritableKeyPath<T, Value> else {
                preconditionFailure("KeyPath is not writable")
            }
            observed.rootObject[keyPath: writable] = newValue
        }
    }

    /// Projects the value `projectedKeyPath` reads from the object.
    public init(_ projectedKeyPath: KeyPath<T, Value>) {
        keyPath = projectedKeyPath
    }
}

/// A projection as generic code sees it: its object and how to make one.
public protocol ProjectionObservable: AnyObject {
    /// The projected class (an `Object` or `EmbeddedObject` subclass).
    associatedtype Root: ObjectBase
    /// The projected object.
    var rootObject: Root { get }
    /// A projection of `object`.
    init(projecting object: Root)
}

/// A view-model class over one object: subclass it and declare ``Projected`` properties.
/// Every read and write goes to the object, so a projection of a managed object is live.
/// `realm.objects(PersonProjection.self)` gives the projections of every `Person`.
///
/// ```swift
/// class PersonProjection: Projection<Person> {
///     @Projected(\Person.firstName) var name
///     @Projected(\Person.friends.projectTo.firstName) var friendNames: ProjectedCollection<String>
/// }
/// let p = PersonProjection(projecting: person)
/// try realm.write { p.name = "Ann" }  // writes person.firstName
/// ```
open class Projection<Root: ObjectBase & RealmCollectionValue>: RealmCollectionValue, ProjectionObservable, CustomStringConvertible {
    /// Stored as the projected object.
    public typealias PersistedType = Root

    /// The projected object.
    public let rootObject: Root

    /// A projection of `object`. The projection's properties are checked here, so a
    /// `@Projected` key path that reads no persisted property fails at once.
    public required init(projecting object: Root) {
        rootObject = object
        _ = ProjectionSchema.properties(of: self)
    }

    /// Projections are equal when they project the same object.
    public static func == (lhs: Projection, rhs: Projection) -> Bool {
        lhs.rootObject == rhs.rootObject
    }

    /// Hashes the projected object.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rootObject)
    }

    /// `PersonProjection<Person> <address> { name(\.firstName) = Ann; ... }`, as RealmSwift
    /// prints projections.
    open var description: String {
        let lines = ProjectionSchema.properties(of: self).map {
            "\t\($0.label)(\\.\($0.origin)) = \(rootObject[keyPath: $0.keyPath].map { "\($0)" } ?? "nil");"
        }
        return "\(type(of: self))<\(type(of: rootObject))> <\(Unmanaged.passUnretained(rootObject).toOpaque())> {\n"
            + lines.joined(separator: "\n") + "\n}"
    }

    /// The Realm of the projected object, or nil when it is unmanaged.
    public var realm: Realm? { rootObject.realm }

    /// Whether the projected object was deleted or its Realm invalidated.
    public var isInvalidated: Bool { rootObject.isInvalidated }

    // A projection is stored as (and read from) its object.

    /// Implementation detail: stored as a link to the projected class.
    public static var _rlmShape: _PropertyShape { Root._rlmShape }
    /// Implementation detail: a projection has no default value (traps, as in RealmSwift).
    public static func _rlmDefaultValue() -> Self {
        preconditionFailure("A Projection has no default value; project an object with init(projecting:)")
    }
    /// Implementation detail: the projection of the object a stored link names.
    public static func _rlmDecode(_ stored: _Stored) -> Self { Self(projecting: Root._rlmDecode(stored)) }
    /// Implementation detail: a link to the projected object.
    public func _rlmEncode() -> _Stored { rootObject._rlmEncode() }
    /// Implementation detail: a projection, or the projection of an object made from `value`.
    public static func _rlmFromAny(_ value: Any) -> Self? {
        if let p = value as? Self { return p }
        return Root._rlmFromAny(value).map { Self(projecting: $0) }
    }
}

extension Projection: RealmFetchable {
    /// The class `realm.objects(SomeProjection.self)` reads.
    public static var _rlmObjectType: ObjectBase.Type { Root.self }
}

/// One `@Projected` property: its label, the key path and the persisted property path it
/// starts with (what notifications watch).
struct ProjectionProperty {
    let label: String
    let keyPath: AnyKeyPath
    let origin: String
}

/// The projected properties of each projection class, found once by reflection.
enum ProjectionSchema {
    private final class Cache: @unchecked Sendable {
        let lock = NSLock()
        var properties: [ObjectIdentifier: [ProjectionProperty]] = [:]
    }
    private static let cache = Cache()

    static func properties<P: ProjectionObservable>(of projection: P) -> [ProjectionProperty] {
        let id = ObjectIdentifier(type(of: projection))
        cache.lock.lock()
        let known = cache.properties[id]
        cache.lock.unlock()
        if let known { return known }
        var found: [ProjectionProperty] = []
        var mirror: Mirror? = Mirror(reflecting: projection)
        var levels: [[ProjectionProperty]] = []
        while let m = mirror {
            var level: [ProjectionProperty] = []
            for child in m.children {
                guard let label = child.label, label.hasPrefix("_"), let projected = child.value as? AnyProjected else { continue }
                let name = String(label.dropFirst())
                let origin = KeyPathTracer.name(for: projected.projectedKeyPath, root: P.Root.self, orNil: true)
                guard let origin else {
                    preconditionFailure("@Projected property '\(name)' must be a part of Realm object")
                }
                level.append(ProjectionProperty(label: name, keyPath: projected.projectedKeyPath, origin: origin))
            }
            levels.append(level)
            mirror = m.superclassMirror
        }
        // Superclass properties first, as they are declared.
        for level in levels.reversed() { found += level }
        cache.lock.lock()
        cache.properties[id] = found
        cache.lock.unlock()
        return found
    }
}

// MARK: - Notifications

extension ProjectionObservable {
    /// Calls `block` after every commit that deletes the projected object or changes one of
    /// the persisted properties its `@Projected` properties read (and nothing else). Each
    /// change names the projection's property, with values read through its key path. No
    /// initial call.
    ///
    /// - Parameters:
    ///   - keyPaths: the projection's properties to watch, by the persisted property path
    ///     they read ("lastName", "friends.firstName") or by label; nil or empty: all of them.
    ///     Every projected property that reads a watched path reports its change.
    ///   - queue: a serial queue to call `block` on; nil: the registering thread's run loop (the
    ///     Realm's queue for a Realm confined to one).
    /// - Returns: a token; notifications stop when it is invalidated or released.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (ObjectChange<Self>) -> Void) -> NotificationToken {
        let schema = ProjectionSchema.properties(of: self)
        var watched = schema
        if let keyPaths, !keyPaths.isEmpty {
            for k in keyPaths where !schema.contains(where: { $0.label == k || $0.origin == k }) {
                preconditionFailure("Property '\(k)' is not a projected property of '\(Self.self)'")
            }
            let paths = Set(schema.filter { keyPaths.contains($0.label) || keyPaths.contains($0.origin) }.map(\.origin))
            watched = schema.filter { paths.contains($0.origin) }
        }
        guard let object = rootObject as? Object else {
            preconditionFailure("Only projections of objects which are managed by a Realm support change notifications")
        }
        let origins = Array(Set(watched.map(\.origin))).sorted()
        let same: Self? = queue == nil ? self : nil
        return object.observe(keyPaths: origins, on: queue) { (change: ObjectChange<Object>) in
            switch change {
            case .deleted: block(.deleted)
            case .error(let e): block(.error(e))
            case .change(let o, let props):
                let root = o as! Root
                let projection = same ?? Self(projecting: root)
                // Old values mapped through the key paths: set on an unmanaged object.
                var old: Root?
                if props.contains(where: { $0.oldValue != nil }) {
                    let unmanaged = Root.init()
                    for p in props { if let v = p.oldValue { unmanaged.setValue(v, forKey: p.name) } }
                    old = unmanaged
                }
                var changes: [PropertyChange] = []
                for p in props {
                    for property in watched where property.origin.split(separator: ".").first.map(String.init) == p.name {
                        let oldValue: Any? = p.oldValue == nil ? nil : old.flatMap { $0[keyPath: property.keyPath] }
                        changes.append(PropertyChange(name: property.label, oldValue: oldValue,
                                                      newValue: root[keyPath: property.keyPath]))
                    }
                }
                if !changes.isEmpty { block(.change(projection, changes)) }
            }
        }
    }

    /// `observe(keyPaths:on:_:)` with the projection's own key paths (`\PersonProjection.name`).
    public func observe(keyPaths: [PartialKeyPath<Self>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (ObjectChange<Self>) -> Void) -> NotificationToken {
        let schema = ProjectionSchema.properties(of: self)
        let names = keyPaths.map { kp -> String in
            // A projection's key path reads one @Projected property: find it by tracing the
            // read on a projection of a tracing object.
            let tracer = KeyPathTracer()
            let root = KeyPathTracer.makeTracingInstance(of: Root.self, tracer) as! Root
            let value = Self(projecting: root)[keyPath: kp]
            if let tail = value as? _ProjectedTail { tracer.names.append(tail._tracedName) }
            let origin = tracer.names.joined(separator: ".")
            guard schema.contains(where: { $0.origin == origin }) else {
                preconditionFailure("Key path '\(kp)' does not refer to a projected property of '\(Self.self)'")
            }
            // Watched by the persisted path, as RealmSwift does: every projected property
            // reading that path reports the change.
            return origin
        }
        return observe(keyPaths: names, on: queue, block)
    }
}

// MARK: - Collections of objects projected to one of their properties

/// A value that ends a traced key path past the persisted properties the tracer saw: a
/// `ProjectedCollection` names the element property it maps.
protocol _ProjectedTail {
    var _tracedName: String { get }
}

/// The values of one property of each object in a `List` or `MutableSet` of objects, in the
/// collection's order, live: `\Person.dogs.projectTo.name` in a ``Projection``. Setting an
/// element writes that property of the object at that position.
public struct ProjectedCollection<Element: RealmCollectionValue>: RandomAccessCollection, CustomStringConvertible {
    public typealias Index = Int

    private let countOf: () -> Int
    private let objectAt: (Int) -> ObjectBase
    private let realmOf: () -> Realm?
    private let invalidated: () -> Bool
    /// Observes the backing collection; the block gets the projection of the collection the
    /// delivery passes (the queue's, for a queue observer).
    private let observeWith: (_ keyPaths: [String]?, _ queue: DispatchQueue?,
                              _ block: @escaping (_ delivered: ProjectedCollection, _ initial: Bool, _ d: [Int], _ i: [Int],
                                                  _ m: [Int]) -> Void) -> NotificationToken
    private let frozenOf: () -> Bool
    private let freezeWith: () -> ProjectedCollection
    private let thawWith: () -> ProjectedCollection?
    private let indexWith: (_ predicate: String, _ args: [Any]) -> Int?
    private let keyPath: AnyKeyPath
    private let propertyName: String

    init<E: ObjectBase>(_ any: AnyRealmCollection<E>, keyPath: AnyKeyPath, propertyName: String) {
        frozenOf = { any.isFrozen }
        freezeWith = { ProjectedCollection(any.freeze(), keyPath: keyPath, propertyName: propertyName) }
        thawWith = { any.thaw().map { ProjectedCollection($0, keyPath: keyPath, propertyName: propertyName) } }
        indexWith = { QueryOps.index(any, matching: $0, $1) }
        countOf = { any.count }
        objectAt = { any[$0] }
        realmOf = { any.realm }
        invalidated = { any.isInvalidated }
        observeWith = { keyPaths, queue, block in
            any.observe(keyPaths: keyPaths, on: queue) { change in
                switch change {
                case .initial(let c): block(ProjectedCollection(c, keyPath: keyPath, propertyName: propertyName), true, [], [], [])
                case .update(let c, let d, let i, let m):
                    block(ProjectedCollection(c, keyPath: keyPath, propertyName: propertyName), false, d, i, m)
                case .error: break
                }
            }
        }
        self.keyPath = keyPath
        self.propertyName = propertyName
    }

    /// Always 0.
    public var startIndex: Int { 0 }
    /// The number of objects in the backing collection.
    public var endIndex: Int { countOf() }

    /// The property of the object at `position`; setting it writes the object (in a write
    /// transaction when managed).
    public subscript(position: Int) -> Element {
        get { objectAt(position)[keyPath: keyPath] as! Element }
        nonmutating set { objectAt(position).setValue(newValue, forKey: propertyName) }
    }

    /// The Realm of the backing collection.
    public var realm: Realm? { realmOf() }
    /// Whether the backing collection can no longer be read.
    public var isInvalidated: Bool { invalidated() }

    /// The position of the first element equal to `element`, or nil.
    public func index(of element: Element) -> Int? {
        firstIndex(of: element)
    }

    /// The position of the first object of the backing collection that matches `predicate`
    /// (a predicate on the backing objects' properties), or nil.
    public func index(matching predicate: NSPredicate) -> Int? {
        indexWith(predicate.predicateFormat, predicate.arguments)
    }

    /// Whether the backing collection belongs to a frozen Realm.
    public var isFrozen: Bool { frozenOf() }

    /// The same projection of the backing collection frozen at its Realm's current version.
    public func freeze() -> ProjectedCollection { freezeWith() }

    /// The same projection of the live backing collection in the calling thread's Realm, or nil
    /// when the object it hangs from was deleted.
    public func thaw() -> ProjectedCollection? { thawWith() }

    /// `ProjectedCollection<String> { [0] a ... }`, as RealmSwift prints it.
    public var description: String {
        var text = "ProjectedCollection<\(Element.self)> {\n"
        for (i, v) in enumerated() { text += "\t[\(i)] \(v)\n" }
        return text + "}"
    }

    /// Observes the backing collection (see `List.observe(keyPaths:on:_:)`); the block gets
    /// this projected collection, or with a queue the same projection of the collection as the
    /// queue's Realm reads it (the observer then holds nothing of this one's Realm).
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (RealmCollectionChange<ProjectedCollection<Element>>) -> Void) -> NotificationToken {
        let me: ProjectedCollection? = queue == nil ? self : nil
        return observeWith(keyPaths, queue) { delivered, initial, d, i, m in
            let c = me ?? delivered
            block(initial ? .initial(c) : .update(c, deletions: d, insertions: i, modifications: m))
        }
    }
}

extension ProjectedCollection: _ProjectedTail {
    var _tracedName: String { propertyName }
}

/// Maps a `List` or `MutableSet` of objects to one property of each (`list.projectTo.name`),
/// for `@Projected` key paths.
@dynamicMemberLookup
public struct CollectionElementMapper<Element: ObjectBase & RealmCollectionValue> {
    let backing: AnyRealmCollection<Element>

    /// The collection of `member` of each object.
    public subscript<V>(dynamicMember member: KeyPath<Element, V>) -> ProjectedCollection<V> {
        ProjectedCollection(backing, keyPath: member, propertyName: KeyPathTracer.name(for: member, root: Element.self))
    }
}

extension List where Element: ObjectBase {
    /// The list mapped to one property of its objects: `\Person.dogs.projectTo.name`.
    public var projectTo: CollectionElementMapper<Element> {
        CollectionElementMapper(backing: AnyRealmCollection(self))
    }
}

extension MutableSet where Element: ObjectBase {
    /// The set mapped to one property of its objects: `\Person.dogs.projectTo.name`.
    public var projectTo: CollectionElementMapper<Element> {
        CollectionElementMapper(backing: AnyRealmCollection(self))
    }
}

// MARK: Freezing and handing over

extension Projection: ThreadConfined {
    /// Whether the projected object belongs to a frozen Realm.
    public var isFrozen: Bool { rootObject.isFrozen }

    /// A projection of the projected object frozen at its Realm's current version (itself when
    /// it is frozen already): readable from any thread.
    public func freeze() -> Self {
        rootObject.isFrozen ? self : Self(projecting: rootObject.freeze())
    }

    /// A projection of the live object in the calling thread's Realm (itself when it is live),
    /// or nil when the object was deleted.
    public func thaw() -> Self? {
        guard rootObject.isFrozen else { return self }
        return rootObject.thaw().map { Self(projecting: $0) }
    }
}

extension Projection: ConfinedValue {
    var confinedCore: RealmCore? { rootObject.confinedCore }
    func resolved(in core: RealmCore) -> Self? { rootObject.resolved(in: core).map { Self(projecting: $0) } }
}
