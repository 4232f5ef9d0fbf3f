@_spi(Reflection) import Swift
import CStore

/// How one model class is stored in one open Realm: its table, the column of each property,
/// and what binding a new managed instance to a row takes.
@usableFromInline
final class ClassInfo {
    let objectSchema: ObjectSchema
    let table: UInt32
    let isEmbedded: Bool
    /// Column key per property index (`CS_NONE` for LinkingObjects).
    var columns: [UInt32]
    /// Per property index, for LinkingObjects: the origin table and link column.
    var backlinks: [(table: UInt32, col: UInt32)?]
    /// Per property index, for LinkingObjects: the core's hidden backlink column of this table
    /// that mirrors the origin's link column (notification key paths name it); else `CS_NONE`.
    var backlinkColumns: [UInt32]
    /// Per property index, for links and collections of links: the target class.
    var targets: [ClassInfo?]
    /// Property index per column key.
    var propertyByColumn: [UInt32: Int] = [:]
    /// What `bind` writes into a new instance: each @Persisted field's offset, accessor and
    /// column (the property index for LinkingObjects), and the legacy boxes.
    var bindings: [(offset: Int, field: any PersistedField.Type, col: UInt32, stored: Bool)] = []
    var legacyBindings: [(offset: Int, col: UInt32)] = []
    /// The primary key's column, or `CS_NONE`.
    var primaryColumn: UInt32 = CS_NONE
    /// A stored property whose unmanaged value is read as its own type (`DirectKind`).
    struct DirectField {
        let offset: Int
        let col: UInt32
        let kind: DirectKind
    }
    /// The stored properties `add` creates a new object's row with (`cs_obj_create_values`),
    /// read without a generic call, the primary key among them; their columns in the same order.
    private(set) var directFields: [DirectField] = []
    private(set) var directColumns: [UInt32] = []
    /// The index of the primary key in `directFields`, or -1.
    private(set) var directPrimary = -1
    /// The stored properties (not the primary key) `add` copies into the row after creating it,
    /// in declaration order: those not in `directFields`, and every one after the first that can
    /// hold objects (see `prepareDirectFields`).
    private(set) var laterFields: [(offset: Int, field: any PersistedField.Type, col: UInt32)] = []
    /// Whether `add` creates a new object with its values in one core call: a class of the
    /// model's own (not the dynamic API's) that is not embedded, whose primary key, if any, is
    /// among `directFields` (docs/ARCHITECTURE.md, Creating an object with its values).
    private(set) var createsWithValues = false
    /// Whether instances need their wrappers bound when they become managed (Encodable
    /// classes: a wrapper encodes itself without seeing its object).
    var bindsEagerly = false
    /// Whether a managed instance holds nothing but its accessor, so a pass over objects may
    /// move one instance from row to row while nobody else references it (`RLMIterator`,
    /// sectioning): no legacy boxes or eager bindings, no collection or LinkingObjects property
    /// (their wrappers cache an accessor), and no stored field of the class's own besides the
    /// managed properties' wrappers (an ignored property or a plain `var` keeps a value per
    /// instance).
    private(set) var reusesAccessors = false
    /// Per 8-byte word of the instance: the column (for LinkingObjects, the property index)
    /// of the `@Persisted` field starting there, or `CS_NONE`.
    @exclusivity(unchecked) private var columnsByWord: [UInt32] = []

    /// The column of the wrapper at `offset` bytes into an instance, or `CS_NONE`.
    @inline(__always)
    func column(atFieldOffset offset: Int) -> UInt32 {
        let word = offset &>> 3
        guard offset & 7 == 0, word >= 0, word < columnsByWord.count else { return CS_NONE }
        return columnsByWord[word]
    }

    /// The same table seen through the dynamic API (`DynamicObject` instances, no fields).
    func dynamicCopy() -> ClassInfo {
        let schema = ObjectSchema(className: objectSchema.className, properties: objectSchema.allProperties,
                                  objectClass: DynamicObject.self, isEmbedded: objectSchema.isEmbedded)
        let copy = ClassInfo(schema: schema, table: table)
        copy.columns = columns
        copy.backlinks = backlinks
        copy.backlinkColumns = backlinkColumns
        copy.targets = targets
        copy.prepareBindings()
        return copy
    }

    init(schema: ObjectSchema, table: UInt32) {
        objectSchema = schema
        self.table = table
        isEmbedded = schema.isEmbedded
        columns = Array(repeating: CS_NONE, count: schema.allProperties.count)
        backlinks = Array(repeating: nil, count: schema.allProperties.count)
        backlinkColumns = Array(repeating: CS_NONE, count: schema.allProperties.count)
        targets = Array(repeating: nil, count: schema.allProperties.count)
    }

    /// The column of the property named `name` (its Swift name), or nil.
    func column(named name: String) -> UInt32? {
        guard let i = objectSchema.byName[name], columns[i] != CS_NONE else { return nil }
        return columns[i]
    }

    /// The column a notification key path names for the property `name`: its stored column, or
    /// for a LinkingObjects property its backlink column; nil if there is none.
    func keyPathColumn(named name: String) -> UInt32? {
        guard let i = objectSchema.byName[name] else { return nil }
        let col = objectSchema.allProperties[i].type == .linkingObjects ? backlinkColumns[i] : columns[i]
        return col != CS_NONE ? col : nil
    }

    /// The index in `objectSchema.allProperties` of the property stored in column `col`.
    func propertyIndex(column col: UInt32) -> Int? { propertyByColumn[col] }

    /// The property stored in column `col` (for a hidden backlink column, its LinkingObjects
    /// property).
    func property(column col: UInt32) -> Property? {
        propertyByColumn[col].map { objectSchema.allProperties[$0] }
    }

    /// The target class of the link (or collection of links) in column `col`.
    func target(column col: UInt32) -> ClassInfo? {
        propertyByColumn[col].flatMap { targets[$0] }
    }

    /// Whether the stored fields of the schema's class are those of the SwiftStore class it
    /// derives from plus one wrapper per managed property.
    static func holdsOnlyPersistedFields(_ schema: ObjectSchema) -> Bool {
        var base: AnyClass = schema.objectClass
        while base != Object.self && base != EmbeddedObject.self && base != ObjectBase.self {
            guard let up = _getSuperclass(base) else { return false }
            base = up
        }
        func fields(_ type: Any.Type) -> Int {
            var n = 0
            // Option 1 is `.classType` (its static is not concurrency-safe to reference).
            _ = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1)) { _, _, _, _ in
                n += 1
                return true
            }
            return n
        }
        let wrappers = schema.allProperties.filter { $0.field != nil }.count
        return fields(schema.objectClass) == fields(base) + wrappers
    }

    /// Finishes the tables after every table's columns are known.
    func prepareBindings() {
        bindings = []
        legacyBindings = []
        let dynamic = objectSchema.objectClass == DynamicObject.self
        bindsEagerly = objectSchema.objectClass is Encodable.Type
        columnsByWord = []
        reusesAccessors = !dynamic && !bindsEagerly
            && !objectSchema.allProperties.contains { $0.legacy || $0.isCollection || $0.type == .linkingObjects }
            && ClassInfo.holdsOnlyPersistedFields(objectSchema)
        for (i, p) in objectSchema.allProperties.enumerated() {
            if p.isPrimary { primaryColumn = columns[i] }
            if columns[i] != CS_NONE { propertyByColumn[columns[i]] = i }
            if backlinkColumns[i] != CS_NONE { propertyByColumn[backlinkColumns[i]] = i }
            if dynamic { continue }
            if p.legacy {
                legacyBindings.append((p.offset, columns[i]))
            } else if let field = p.field {
                let backlinks = p.type == .linkingObjects
                let col = backlinks ? UInt32(i) : columns[i]
                bindings.append((p.offset, field, col, !backlinks))
                let word = p.offset >> 3
                if p.offset & 7 == 0 && word >= 0 {
                    if columnsByWord.count <= word {
                        columnsByWord.append(contentsOf: repeatElement(CS_NONE, count: word + 1 - columnsByWord.count))
                    }
                    columnsByWord[word] = col
                }
            }
        }
        prepareDirectFields(dynamic: dynamic)
    }

    private func prepareDirectFields(dynamic: Bool) {
        directFields = []
        directColumns = []
        directPrimary = -1
        laterFields = []
        createsWithValues = false
        if dynamic || isEmbedded { return }
        // A property that can hold objects (a link, a collection of links, AnyRealmValue or a
        // collection of them) may add other objects when it is stored, one of which may update
        // this object's row (the same primary key under `.modified`/`.all`): the plain values
        // declared after it are stored again after it, so each ends as the single add's store in
        // declaration order leaves it. The other properties not read directly (Date, Data,
        // ObjectId, collections of values, ...) are stored after the create, once.
        var reaching = false
        for b in bindings where b.stored {
            let kind = DirectKind.of(b.field)
            if let kind {
                if b.col == primaryColumn { directPrimary = directFields.count }
                directFields.append(DirectField(offset: b.offset, col: b.col, kind: kind))
                directColumns.append(b.col)
            } else if let i = propertyIndex(column: b.col) {
                let type = objectSchema.allProperties[i].type
                if type == .object || type == .any { reaching = true }
            } else {
                reaching = true
            }
            if (kind == nil || reaching) && b.col != primaryColumn { laterFields.append((b.offset, b.field, b.col)) }
        }
        createsWithValues = primaryColumn == CS_NONE || directPrimary >= 0
    }
}
