import Dispatch
import Foundation

/// An open database: the entry point for reading and writing objects (RealmSwift's `Realm`).
///
/// ```swift
/// let realm = try Realm()
/// try realm.write {
///     realm.add(Dog(value: ["name": "Rex", "age": 3]))
/// }
/// let puppies = realm.objects(Dog.self)
/// ```
///
/// Instances are cached per thread (and per queue for `Realm(queue:)`) and confined to it: use
/// a Realm, and the objects read from it, only on the thread that opened it.
public struct Realm: Equatable {
    let core: RealmCore

    init(core: RealmCore) {
        self.core = core
    }

    // MARK: Opening

    /// Opens the Realm of `Configuration.defaultConfiguration`.
    ///
    /// - Parameter queue: a serial queue to confine the instance to instead of the thread.
    /// - Throws: `Realm.Error` when the file cannot be opened, is damaged or needs a migration.
    public init(queue: DispatchQueue? = nil) throws {
        try self.init(configuration: .defaultConfiguration, queue: queue)
    }

    /// Opens the Realm `configuration` describes.
    ///
    /// - Throws: `Realm.Error`: `.fileNotFound` (read-only open of a missing file),
    ///   `.filePermissionDenied`, `.invalidDatabase` (not a database or damaged),
    ///   `.unsupportedFileFormatVersion`, `.incompatibleLockFile`, `.schemaMismatch`,
    ///   `.addressSpaceExhausted`, `.fileAccess`, `.fail`. Wraps `cs_db_open`.
    public init(configuration: Configuration, queue: DispatchQueue? = nil) throws {
        core = try RealmCore.open(configuration, queue: queue)
    }

    /// Opens the Realm at `fileURL` with the default configuration's other settings.
    public init(fileURL: URL) throws {
        var config = Configuration.defaultConfiguration
        config.fileURL = fileURL
        try self.init(configuration: config)
    }

    // MARK: State

    /// The configuration the Realm was opened with.
    public var configuration: Configuration { core.config }

    /// The schema of the Realm's model classes.
    public var schema: Schema { core.schema }

    /// Whether no object of any class in the schema exists.
    public var isEmpty: Bool {
        core.verifyThread()
        for info in core.infosByName.values where core.objectCount(info) > 0 { return false }
        return true
    }

    /// Whether a write transaction is open.
    public var isInWriteTransaction: Bool { core.isInWriteTransaction }

    /// Whether this is a frozen Realm (`freeze()`): pinned at one version, immutable, and
    /// readable from any thread or task without a confinement check.
    public var isFrozen: Bool { core.isFrozen }

    // MARK: Writes

    /// How `add` and `create` treat an object whose primary key exists already.
    public enum UpdatePolicy: Int, Sendable {
        /// Trap: the primary key must be new.
        case error = 1
        /// Overwrite every property of the existing object.
        case all = 2
        /// Write only the properties whose values differ.
        case modified = 3
    }

    /// Runs `block` in a write transaction and commits it; a throw from `block` cancels it.
    /// The observers of `tokens` are not told about this write. Traps, as RealmSwift does, when
    /// a token belongs to another Realm's observer (for a queue observer: another queue's).
    ///
    /// - Throws: what `block` throws, `Realm.Error` when the commit fails (the changes are then
    ///   rolled back), or when the file cannot be written until it is reopened (an earlier
    ///   failed sync or header write; the code is that failure's).
    @discardableResult
    public func write<Result>(withoutNotifying tokens: [NotificationToken] = [], _ block: () throws -> Result) throws -> Result {
        try core.beginWriteThrowing()
        let result: Result
        do {
            result = try block()
        } catch {
            if isInWriteTransaction { cancelWrite() }
            throw error
        }
        if isInWriteTransaction { try commitWrite(withoutNotifying: tokens) }
        return result
    }

    /// Begins a write transaction, first advancing to the newest version. Traps when one is
    /// open already or the Realm is read-only. Wraps `cs_txn_promote`. What this Realm's
    /// observers were not given yet is delivered first, synchronously; an observer whose initial
    /// notification is still pending is left out, so that notification includes the write, as
    /// RealmSwift's documentation shows.
    public func beginWrite() {
        core.beginWrite()
    }

    /// Commits the write transaction. The observers of `tokens` are not told about it (a token
    /// of another Realm's observer traps); this Realm's `observe` blocks get `.didChange`.
    ///
    /// - Throws: `Realm.Error` (for example `.fileAccess` on a full disk); the transaction is
    ///   rolled back. Wraps `cs_txn_commit`.
    public func commitWrite(withoutNotifying tokens: [NotificationToken] = []) throws {
        try core.commitWrite(withoutNotifying: tokens)
    }

    /// Discards the write transaction's changes. Objects created in it become invalid. A
    /// notification that came during the write is delivered after it, as after a commit.
    public func cancelWrite() {
        core.cancelWrite()
    }

    /// Adds an unmanaged object (and the unmanaged objects it links to) to the Realm. With
    /// `.modified` or `.all`, an object whose primary key exists updates that object instead.
    public func add(_ object: Object, update: UpdatePolicy = .error) {
        if update != .error { Realm.verifyUpdatable(core.schema(of: object)) }
        core.add(object, policy: update)
    }

    /// Traps, as RealmSwift does, when `.modified` or `.all` is asked of a class without a
    /// primary key (objects such a call reaches through links are added, not checked).
    static func verifyUpdatable(_ schema: ObjectSchema) {
        if schema.primaryKeyProperty == nil {
            preconditionFailure("'\(schema.className)' does not have a primary key and can not be updated")
        }
    }

    /// Adds every object of a sequence, with the results of `add(_:update:)` on each in turn:
    /// the same objects (with the unmanaged objects they link to, embedded objects and
    /// collections), the same keys, the same updates under `.modified`/`.all` and the same error.
    /// The new objects of each class are created together, in one batch, when the sequence is an
    /// array (read whole first); any other sequence is added element by element as it produces
    /// them, so an element made after earlier ones were added can find them.
    public func add<S: Sequence>(_ objects: S, update: UpdatePolicy = .error) where S.Element: Object {
        guard update != .error else { return core.addAll(objects, policy: update) }
        // every object is checked as the single adds check it: an array before anything is added
        // (the first failure traps either way), another sequence as it produces each object
        switch objects {
        case let a as [S.Element]:
            for o in a { Realm.verifyUpdatable(core.schema(of: o)) }
            core.addAll(a, policy: update)
        case let a as ContiguousArray<S.Element>:
            for o in a { Realm.verifyUpdatable(core.schema(of: o)) }
            core.addAll(a, policy: update)
        case let a as ArraySlice<S.Element>:
            for o in a { Realm.verifyUpdatable(core.schema(of: o)) }
            core.addAll(a, policy: update)
        default:
            let core = self.core
            core.addAll(objects.lazy.map { o in
                Realm.verifyUpdatable(core.schema(of: o))
                return o
            }, policy: update)
        }
    }

    /// Creates an object from a dictionary, an array in property order, or an object (which
    /// may belong to another Realm: its values are copied), and returns it. With `.modified`
    /// or `.all` and an existing primary key, updates that object with the values given.
    @discardableResult
    public func create<T: Object>(_ type: T.Type, value: Any = [String: Any](), update: UpdatePolicy = .error) -> T {
        if update != .error { Realm.verifyUpdatable(SchemaDiscovery.objectSchema(for: type)) }
        return core.create(core.info(for: type), value: value, policy: update) as! T
    }

    /// Creates an object of the class named `typeName` (dynamic API).
    @discardableResult
    public func dynamicCreate(_ typeName: String, value: Any = [String: Any](), update: UpdatePolicy = .error) -> DynamicObject {
        guard let info = core.info(named: typeName) else {
            preconditionFailure("Object type '\(typeName)' is not managed by the Realm.")
        }
        if update != .error { Realm.verifyUpdatable(info.objectSchema) }
        let created = core.create(info, value: value, policy: update)
        if let d = created as? DynamicObject { return d }
        return core.dynamicObject(info, key: created.cobj.key)
    }

    /// Deletes an object. Its links are removed; embedded objects it owns are deleted.
    public func delete(_ object: ObjectBase) {
        core.delete(object)
    }

    /// Deletes every object of a sequence (a Results, a List, an array...).
    public func delete<S: Sequence>(_ objects: S) where S.Element: ObjectBase {
        let all = Array(objects)
        for o in all where !o.isInvalidated { core.delete(o) }
    }

    /// Deletes the objects of a list (the list is emptied).
    public func delete<Element: ObjectBase>(_ objects: List<Element>) {
        let all = Array(objects)
        for o in all where !o.isInvalidated { core.delete(o) }
    }

    /// Deletes the objects of a map's values (the keys stay, with nil values).
    public func delete<Element: ObjectBase>(_ map: Map<String, Element?>) {
        let all = map.values.compactMap { $0 }
        for o in all where !o.isInvalidated { core.delete(o) }
    }

    /// Deletes the objects of a Results.
    public func delete<Element: ObjectBase>(_ objects: Results<Element>) {
        let all = Array(objects)
        for o in all where !o.isInvalidated { core.delete(o) }
    }

    /// Deletes every object in the Realm.
    public func deleteAll() {
        core.deleteAll()
    }

    // MARK: Reads

    /// Every object of a class, as a live Results.
    public func objects<Element: RealmFetchable>(_ type: Element.Type) -> Results<Element> {
        core.verifyThread()
        return Results(core: core, source: .table(core.info(for: Element._rlmObjectType)))
    }

    /// Every object of the class named `typeName` (dynamic API).
    public func dynamicObjects(_ typeName: String) -> Results<DynamicObject> {
        core.verifyThread()
        guard let info = core.info(named: typeName) else {
            preconditionFailure("Object type '\(typeName)' is not managed by the Realm.")
        }
        return Results(core: core, source: .table(core.dynamicInfo(info)))
    }

    /// The object of class `type` whose primary key is `key`, or nil. Traps if the class has
    /// no primary key. One index lookup (`cs_table_find_primary`).
    public func object<Element: Object, KeyType>(ofType type: Element.Type, forPrimaryKey key: KeyType) -> Element? {
        core.object(core.info(for: type), primaryKey: key) as? Element
    }

    /// The object of the class named `typeName` whose primary key is `key` (dynamic API).
    public func dynamicObject(ofType typeName: String, forPrimaryKey key: Any) -> DynamicObject? {
        guard let info = core.info(named: typeName) else {
            preconditionFailure("Object type '\(typeName)' is not managed by the Realm.")
        }
        return core.object(core.dynamicInfo(info), primaryKey: key) as? DynamicObject
    }

    // MARK: Lifecycle

    /// Moves to the newest version committed by any thread or process, first delivering the
    /// pending notifications of this Realm's observers (synchronously, as RealmSwift does).
    /// Returns whether the version moved. Does nothing inside a write transaction.
    @discardableResult
    public func refresh() -> Bool {
        core.refresh()
    }

    /// Ends the read transaction so the version it pinned can be reclaimed. Objects and
    /// results read before become invalid; the next read begins a new transaction.
    public func invalidate() {
        core.invalidate()
    }

    /// Whether a Realm file (or, for in-memory configurations, a live in-memory Realm)
    /// exists for `config`.
    public static func fileExists(for config: Configuration) -> Bool {
        FileManager.default.fileExists(atPath: config.path)
    }

    /// Deletes the file of `config` and its lock file. Returns whether a file existed.
    ///
    /// - Throws: `Realm.Error.fileOperationFailed` when a file exists but cannot be deleted,
    ///   `.fileAccess` when the Realm is open in this process.
    @discardableResult
    public static func deleteFiles(for config: Configuration) throws -> Bool {
        let path = config.path
        if RealmCore.isOpen(path) {
            throw Realm.Error(.alreadyOpen, "Cannot delete files of an open Realm: '\(path)' is still in use.",
                              fileURL: URL(fileURLWithPath: path))
        }
        var existed = false
        for p in [path, path + ".lock"] where FileManager.default.fileExists(atPath: p) {
            existed = existed || p == path
            do {
                try FileManager.default.removeItem(atPath: p)
            } catch {
                throw Realm.Error(.fileOperationFailed, "Cannot delete '\(p)': \(error.localizedDescription)",
                                  fileURL: URL(fileURLWithPath: p))
            }
        }
        return existed
    }

    /// Opens the Realm of `configuration` only to run its migration (if its schema version is
    /// higher than the file's), then closes it.
    ///
    /// - Throws: what opening throws.
    public static func performMigration(for configuration: Configuration = .defaultConfiguration) throws {
        _ = try RealmCore.open(configuration, queue: nil)
    }

    /// Instances are equal when they are the same cached instance.
    public static func == (a: Realm, b: Realm) -> Bool { a.core === b.core }
}

/// The schema version stored in the file at `fileURL`.
///
/// - Throws: `Realm.Error.invalidDatabase` when there is no file ("has not been initialized",
///   as RealmSwift) or the file is not a database, `.fileAccess` when the path cannot be read as
///   a file (a directory, an I/O error), `.filePermissionDenied` when reading it is not allowed,
///   `.unsupportedFileFormatVersion` for a newer file format.
public func schemaVersionAtURL(_ fileURL: URL, encryptionKey: Data? = nil) throws -> UInt64 {
    try FileSchema.version(ofFileAt: fileURL)
}

/// Classes whose objects `Realm.objects(_:)` can list: `Object` and `EmbeddedObject` subclasses.
public protocol RealmFetchable: RealmCollectionValue {
    /// The class to read.
    static var _rlmObjectType: ObjectBase.Type { get }
}

extension Object: RealmFetchable {
    public static var _rlmObjectType: ObjectBase.Type { self }
}

extension EmbeddedObject: RealmFetchable {
    public static var _rlmObjectType: ObjectBase.Type { self }
}
