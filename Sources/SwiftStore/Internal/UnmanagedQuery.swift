import CStore
import Foundation

/// Predicates evaluated on objects that no Realm manages (RealmSwift's `index(matching:)` on an
/// unmanaged `List`), with the core's own parser, type checks and evaluation
/// (docs/ARCHITECTURE.md, Queries on unmanaged objects).
///
/// The query is parsed and bound against a scratch in-memory Realm whose schema is the element
/// class and every class it reaches, so a predicate means exactly what it means on managed
/// objects and a bad one fails with the same message. `cs_query_match_source` then evaluates it
/// per element, pulling each value it needs from the Swift objects through three callbacks; an
/// object is named by a handle, its position in `objects`.
final class UnmanagedQuery {
    private let core: RealmCore
    private let realm: Realm
    private var objects: [ObjectBase] = []
    private var handles: [ObjectIdentifier: Int64] = [:]
    /// The bytes of every string and binary handed to the core, alive until the evaluation ends.
    private var arena: QueryArguments!
    /// Collection contents already converted, by object handle and column.
    private var collections: [Key: [(key: cs_value, value: cs_value)]] = [:]
    private var query: OpaquePointer?

    private struct Key: Hashable {
        let handle: Int64
        let col: UInt32
    }

    /// Parses `text` with `args` for objects of `type`; the parser's message on failure.
    init(_ type: ObjectBase.Type, _ text: String, _ args: [Any]) throws {
        realm = try Self.scratchRealm(for: type)
        core = realm.core
        arena = try QueryArguments(args, core: core, objectLink: { [unowned self] in self.link($0) })
        let info = core.info(for: type)
        let txn = core.txn
        query = try core.newQuery(arena) { values, count, names, q in
            cs_query_new_named(txn, info.table, text, text.utf8.count, values, count, names, &q)
        }
    }

    /// Parses `text` with `args` for values of `type` (an unmanaged List of values, where
    /// `self` names the element); the parser's message on failure.
    init(values type: PropertyType, _ text: String, _ args: [Any]) throws {
        realm = try Self.scratchRealm(for: nil)
        core = realm.core
        arena = try QueryArguments(args, core: core, objectLink: { [unowned self] in self.link($0) })
        var q: OpaquePointer?
        var rc: Int32 = 0
        var failure = ""
        arena.values.withUnsafeBufferPointer { a in
            rc = cs_query_new_values(core.txn, CoreType.core(type), text, text.utf8.count, a.baseAddress, a.count, nil, &q)
            if rc != 0 { failure = CoreCall.lastMessage }
        }
        if rc != 0 { throw Realm.Error(.invalidInput, failure) }
        query = q
    }

    deinit {
        if let query { cs_query_free(query) }
    }

    /// Whether the predicate of a query over values holds for `value`.
    func matches(value: StoredValue) -> Bool {
        var v = cValue(value)
        var result = false
        CoreCall.must(cs_query_match_value(query, &v, &result), "Evaluating a predicate")
        return result
    }

    /// Whether the predicate holds for `object`.
    func matches(_ object: ObjectBase) -> Bool {
        let handle = self.handle(object)
        var source = cs_query_source(
            ctx: Unmanaged.passUnretained(self).toOpaque(),
            get: { ctx, _, handle, col, out in
                let me = Unmanaged<UnmanagedQuery>.fromOpaque(ctx!).takeUnretainedValue()
                out!.pointee = me.value(handle, col)
                return 0
            },
            coll_size: { ctx, _, handle, col, out in
                let me = Unmanaged<UnmanagedQuery>.fromOpaque(ctx!).takeUnretainedValue()
                out!.pointee = me.entries(handle, col).count
                return 0
            },
            coll_get: { ctx, _, handle, col, i, key, out in
                let me = Unmanaged<UnmanagedQuery>.fromOpaque(ctx!).takeUnretainedValue()
                let entry = me.entries(handle, col)[i]
                key!.pointee = entry.key
                out!.pointee = entry.value
                return 0
            })
        var result = false
        CoreCall.must(cs_query_match_source(query, &source, handle, &result), "Evaluating a predicate")
        return result
    }

    // MARK: Values

    private func handle(_ object: ObjectBase) -> Int64 {
        let id = ObjectIdentifier(object)
        if let h = handles[id] { return h }
        let h = Int64(objects.count)
        objects.append(object)
        handles[id] = h
        return h
    }

    /// The object's class in the scratch schema, or nil for a class the predicate's classes do
    /// not reach (an object held by an AnyRealmValue, an object argument of another class).
    private func info(_ object: ObjectBase) -> ClassInfo? {
        core.info(named: object.objectSchema.className)
    }

    /// An object as a link value: its class's table in the scratch schema (CS_NONE for a class
    /// outside it, which equals no element) and its handle.
    private func link(_ object: ObjectBase) -> cs_value {
        cs_link(info(object)?.table ?? CS_NONE, handle(object))
    }

    /// The property of the object behind `handle` stored in scratch column `col`, or nil.
    private func property(_ handle: Int64, _ col: UInt32) -> (ObjectBase, Property)? {
        let object = objects[Int(handle)]
        guard let p = info(object)?.property(column: col) else { return nil }
        return (object, p)
    }

    private func value(_ handle: Int64, _ col: UInt32) -> cs_value {
        guard let (object, p) = property(handle, col) else { return cs_null() }
        return cValue(KeyValueCoding.value(object, forKey: p.name))
    }

    private func cValue(_ any: Any?) -> cs_value {
        guard let any else { return cs_null() }
        if let o = any as? ObjectBase { return link(o) }
        guard let s = any as? any _StorableValue else { return cs_null() }
        return cValue(s._rlmEncode().value)
    }

    private func cValue(_ v: StoredValue) -> cs_value {
        switch v {
        case .object(let o): return link(o)
        // Collections nested in an AnyRealmValue are not read by unmanaged evaluation.
        case .list, .dictionary: return cs_null()
        default: return arena.value(of: v)
        }
    }

    /// The elements (and for a map the keys) of the List, MutableSet or Map in column `col`.
    private func entries(_ handle: Int64, _ col: UInt32) -> [(key: cs_value, value: cs_value)] {
        let key = Key(handle: handle, col: col)
        if let e = collections[key] { return e }
        var out: [(key: cs_value, value: cs_value)] = []
        if let (object, p) = property(handle, col),
           let c = KeyValueCoding.value(object, forKey: p.name) as? any _UnmanagedQueryEntries {
            out = c._rlmQueryEntries().map { (key: $0.key.map { arena.value(of: .string($0)) } ?? cs_null(),
                                              value: cValue($0.value)) }
        }
        collections[key] = out
        return out
    }

    // MARK: The scratch schema

    /// Keeps each thread's scratch Realms open (by class), so a predicate costs no open.
    private final class ScratchRealms {
        var byType: [ObjectIdentifier: Realm] = [:]
    }

    private static let configurations = Locked<[ObjectIdentifier: Realm.Configuration]>([:])

    /// The calling thread's scratch Realm for objects of `type` (nil: values, no classes).
    private static func scratchRealm(for type: ObjectBase.Type?) throws -> Realm {
        let key = "SwiftStore.UnmanagedQuery.scratch"
        let cache: ScratchRealms
        if let c = Thread.current.threadDictionary[key] as? ScratchRealms {
            cache = c
        } else {
            cache = ScratchRealms()
            Thread.current.threadDictionary[key] = cache
        }
        let id = ObjectIdentifier(type ?? ObjectBase.self)
        if let realm = cache.byType[id] { return realm }
        let config = configurations.withLock { $0[id] }
            ?? type.map(scratchConfiguration(for:))
            ?? Realm.Configuration(inMemoryIdentifier: "SwiftStore.unmanaged-query.values", objectTypes: [])
        configurations.withLock { $0[id] = config }
        let realm = try Realm(configuration: config)
        cache.byType[id] = realm
        return realm
    }

    /// An in-memory Realm's configuration whose schema is `type` and every class it reaches.
    private static func scratchConfiguration(for type: ObjectBase.Type) -> Realm.Configuration {
        var types: [ObjectBase.Type] = []
        var seen = Set<ObjectIdentifier>()
        var pending = [type]
        var byName: [String: ObjectBase.Type]?
        while let t = pending.popLast() {
            guard seen.insert(ObjectIdentifier(t)).inserted else { continue }
            types.append(t)
            for p in SchemaDiscovery.objectSchema(for: t).allProperties {
                guard let name = p.objectClassName else { continue }
                if let target = p.field?.shape.objectType {
                    pending.append(target)
                } else {
                    if byName == nil {
                        byName = Dictionary(SchemaDiscovery.defaultObjectTypes().map { ($0.className(), $0) },
                                            uniquingKeysWith: { a, _ in a })
                    }
                    if let target = byName?[name] { pending.append(target) }
                }
            }
        }
        let names = types.map { $0.className() }.sorted().joined(separator: ",")
        return Realm.Configuration(inMemoryIdentifier: "SwiftStore.unmanaged-query.\(names)", objectTypes: types)
    }
}

/// The contents of a collection as a predicate reads them: each element's value and, for a map,
/// its key.
protocol _UnmanagedQueryEntries {
    func _rlmQueryEntries() -> [(key: String?, value: StoredValue)]
}

extension List: _UnmanagedQueryEntries {
    func _rlmQueryEntries() -> [(key: String?, value: StoredValue)] {
        map { (key: nil, value: $0._rlmEncode().value) }
    }
}

extension MutableSet: _UnmanagedQueryEntries {
    func _rlmQueryEntries() -> [(key: String?, value: StoredValue)] {
        map { (key: nil, value: $0._rlmEncode().value) }
    }
}

extension Map: _UnmanagedQueryEntries {
    func _rlmQueryEntries() -> [(key: String?, value: StoredValue)] {
        keys.map { k in (key: "\(k)", value: self[k]?._rlmEncode().value ?? .null) }
    }
}
