import Foundation

/// An object of a class known only by name: the dynamic API (`dynamicObjects(_:)`,
/// `dynamicCreate`) and migrations read and write it by property name.
///
/// ```swift
/// for dog in realm.dynamicObjects("Dog") { print(dog["name"] ?? "", dog.age ?? 0) }
/// ```
///
/// Scalars read as their Swift types (Int, String, Date, ...); links as `DynamicObject`;
/// lists as `List<DynamicObject>` (links) or `List<AnyRealmValue>` (values), sets and maps
/// likewise.
@dynamicMemberLookup
public final class DynamicObject: Object {
    /// `dog.name` for `dog["name"]`.
    public subscript(dynamicMember member: String) -> Any? {
        get { KeyValueCoding.value(self, forKey: member) }
        set { KeyValueCoding.setValue(self, newValue, forKey: member) }
    }

    /// The list property `propertyName` of links.
    public func dynamicList(_ propertyName: String) -> List<DynamicObject> {
        KeyValueCoding.value(self, forKey: propertyName) as! List<DynamicObject>
    }

    /// The set property `propertyName` of links.
    public func dynamicMutableSet(_ propertyName: String) -> MutableSet<DynamicObject> {
        KeyValueCoding.value(self, forKey: propertyName) as! MutableSet<DynamicObject>
    }

    /// The map property `propertyName` of links.
    public func dynamicMap(_ propertyName: String) -> Map<String, DynamicObject?> {
        KeyValueCoding.value(self, forKey: propertyName) as! Map<String, DynamicObject?>
    }
}

/// Reads and writes properties by their schema alone, for objects without typed fields.
enum DynamicAccess {
    /// A property's value as a Swift value chosen by its stored type.
    static func value(_ object: ObjectBase, _ p: Property, core: RealmCore, info: ClassInfo) -> Any? {
        let i = info.objectSchema.byName[p.name]!
        if p.type == .linkingObjects {
            guard let (table, col) = info.backlinks[i], let origin = info.targets[i] else { return nil }
            return Results<DynamicObject>(core: core, source: .backlinks(object, table, col, core.dynamicInfo(origin)))
        }
        let col = info.columns[i]
        if p.isCollection {
            if p.type == .object {
                if p.isArray { return List<DynamicObject>(managedBy: object, column: col) }
                if p.isSet { return MutableSet<DynamicObject>(managedBy: object, column: col) }
                return Map<String, DynamicObject?>(managedBy: object, column: col)
            }
            return typedCollection(p, ManagedCollection(owner: object, column: col))
        }
        if p.type == .any { return AnyRealmValue._rlmGet(object, col) }
        return swiftValue(object.readColumn(col))
    }

    /// A managed collection of values typed by the property (`List<Int>`, `List<String?>`,
    /// `MutableSet<Date>`, `Map<String, Double>`...), as RealmSwift's dynamic API returns them.
    static func typedCollection(_ p: Property, _ c: ManagedCollection) -> Any {
        func make<T: RealmCollectionValue>(_: T.Type) -> Any {
            if p.isArray { return List<T>(managed: c) }
            if p.isSet { return MutableSet<T>(managed: c) }
            return Map<String, T>(managed: c)
        }
        switch (p.type, p.isOptional) {
        case (.int, false): return make(Int.self)
        case (.int, true): return make(Int?.self)
        case (.bool, false): return make(Bool.self)
        case (.bool, true): return make(Bool?.self)
        case (.float, false): return make(Float.self)
        case (.float, true): return make(Float?.self)
        case (.double, false): return make(Double.self)
        case (.double, true): return make(Double?.self)
        case (.string, false): return make(String.self)
        case (.string, true): return make(String?.self)
        case (.data, false): return make(Data.self)
        case (.data, true): return make(Data?.self)
        case (.date, false): return make(Date.self)
        case (.date, true): return make(Date?.self)
        case (.objectId, false): return make(ObjectId.self)
        case (.objectId, true): return make(ObjectId?.self)
        case (.decimal128, false): return make(Decimal128.self)
        case (.decimal128, true): return make(Decimal128?.self)
        case (.UUID, false): return make(UUID.self)
        case (.UUID, true): return make(UUID?.self)
        default: return make(AnyRealmValue.self)
        }
    }

    /// A core value as the Swift value the dynamic API returns.
    static func swiftValue(_ v: StoredValue) -> Any? {
        switch v {
        case .null: return nil
        case .int(let i): return Int(i)
        case .bool(let b): return b
        case .float(let f): return f
        case .double(let d): return d
        case .string(let s): return s
        case .data(let d): return d
        case .date(let d): return d
        case .objectId(let o): return o
        case .decimal(let d): return d
        case .uuid(let u): return u
        case .object(let o): return o
        case .list(let l): return l
        case .dictionary(let m): return m
        }
    }

    /// Writes a property from a loosely typed value by its stored type.
    static func setValue(_ object: ObjectBase, _ p: Property, _ value: Any, core: RealmCore,
                         info: ClassInfo, policy: Realm.UpdatePolicy) {
        let col = info.column(named: p.name)!
        if p.isCollection {
            let items: [Any]
            if let seq = value as? any _DynamicSequence { items = seq.dynamicElements } else if let a = value as? [Any] { items = a }
            else if let d = value as? [String: Any], p.isMap { items = d.map { ($0.key, $0.value) } }
            else { KeyValueCoding.invalidValue(value, p, info.objectSchema.className) }
            // Through the same collection accessor as the typed API (links, embedded objects and
            // nested collections included).
            let target = ManagedCollection(owner: object, column: col)
            target.removeAll()
            for item in items {
                if p.isMap {
                    guard let (k, v) = item as? (String, Any) else { continue }
                    target.mapSet(k, stored(v, p, info, core, policy), policy: policy)
                } else if p.isSet {
                    target.setInsert(stored(item, p, info, core, policy), policy: policy)
                } else {
                    target.append(stored(item, p, info, core, policy), policy: policy)
                }
            }
            return
        }
        if let target = info.target(column: col), target.isEmbedded, !(KeyValueCoding.unwrap(value) is ObjectBase),
           KeyValueCoding.unwrap(value) != nil {
            // Values for an embedded object: make the embedded row, then set them through a
            // dynamic accessor of it (there may be no model class to hold them unmanaged).
            let embedded = core.dynamicObject(target, key: object.createEmbeddedRow(column: col))
            let values = KeyValueCoding.propertyValues(embedded.objectSchema, from: value)
            for ep in embedded.objectSchema.properties {
                if let v = values[ep.name] { KeyValueCoding.setManaged(embedded, ep, v, policy: policy) }
            }
            core.didMutate()
            return
        }
        let sv = stored(value, p, info, core, policy)
        if case .object(let o) = sv, info.target(column: col)?.isEmbedded == true, o.core == nil {
            core.embed(o, in: object, column: col, policy: policy)
            return
        }
        core.write(sv, to: object, column: col, policy: policy)
    }

    /// A loose value converted for a property (objects from dictionaries are created).
    private static func stored(_ value: Any, _ p: Property, _ info: ClassInfo, _ core: RealmCore,
                               _ policy: Realm.UpdatePolicy) -> StoredValue {
        if value is NSNull { return .null }
        if p.type == .object {
            if let o = KeyValueCoding.unwrap(value) as? ObjectBase {
                if o.core === core || o.core == nil { return .object(o) }
                if let other = o.core, other.isMigrationView(of: core), let table = o.info?.table,
                   let same = core.infosByTable[table] {
                    // The same row seen through the other schema of a migration.
                    return .object(core.object(same, key: o.cobj.key))
                }
                // An object of another Realm (or of the old schema in a migration): copy it.
                let target = info.targets[info.objectSchema.byName[p.name]!]!
                return .object(copy(o, into: target, core: core, policy: policy))
            }
            if KeyValueCoding.unwrap(value) == nil { return .null }
            let target = info.targets[info.objectSchema.byName[p.name]!]!
            if target.isEmbedded {
                // An unmanaged instance holding the values; embedding it copies them in.
                let o = target.objectSchema.objectClass.init()
                if o is DynamicObject {
                    preconditionFailure("An embedded '\(target.objectSchema.className)' can only be given as an object of its model class here")
                }
                KeyValueCoding.fill(o, from: value)
                return .object(o)
            }
            return .object(core.create(target, value: value, policy: policy))
        }
        if p.type == .any {
            if let a = value as? AnyRealmValue { return a._rlmEncode().value }
            if let s = KeyValueCoding.unwrap(value) as? any _StorableValue { return s._rlmEncode().value }
            return .null
        }
        return KeyValueCoding.stored(value, for: p, className: info.objectSchema.className)
    }

    /// Copies an object of another Realm into `target`'s table (by property name).
    static func copy(_ o: ObjectBase, into target: ClassInfo, core: RealmCore, policy: Realm.UpdatePolicy) -> ObjectBase {
        var values: [String: Any] = [:]
        for p in o.objectSchema.properties where p.type != .linkingObjects && target.objectSchema[p.name] != nil {
            values[p.name] = KeyValueCoding.value(o, forKey: p.name) ?? NSNull()
        }
        return core.create(target, value: values, policy: policy == .error ? .all : policy)
    }

    /// The default value of a property's type, for a new row.
    static func defaultStored(_ p: Property) -> StoredValue {
        if p.isOptional { return .null }
        switch p.type {
        case .int: return .int(0)
        case .string: return .string("")
        case .objectId: return .objectId(ObjectId.generate())
        case .UUID: return .uuid(UUID._rlmDefaultValue())
        default: return .null
        }
    }
}

/// Collections whose elements the dynamic API can copy.
protocol _DynamicSequence {
    var dynamicElements: [Any] { get }
}
