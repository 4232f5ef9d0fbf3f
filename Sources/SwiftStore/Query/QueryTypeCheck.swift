/// Checks, when a query is built, that an operator applies to the stored type of its operand
/// (for enums and custom persistable types: the type they are stored as), and traps with a
/// message naming the operator and the type otherwise.
///
/// RealmSwift states these rules in generic constraints on `PersistedType`; here the operators
/// are available on every storable value and check the stored type instead, because
/// `PersistableEnum` and `CustomPersistable` types cannot be given such a conformance from
/// outside their protocols' declarations.
enum QueryTypeCheck {
    /// Types `>`, `>=`, `<`, `<=` compare.
    static let ordered: Set<PropertyType> = [.int, .float, .double, .date, .decimal128, .any, .string, .data]
    /// Types `@min`, `@max`, `@avg`, `@sum` aggregate (RealmSwift's `_QueryNumeric`).
    static let numeric: Set<PropertyType> = [.int, .float, .double, .date, .decimal128, .any]
    /// Types `CONTAINS`, `BEGINSWITH`, `ENDSWITH` and the string equalities search.
    static let binary: Set<PropertyType> = [.string, .data]
    /// Types `LIKE` matches.
    static let string: Set<PropertyType> = [.string]

    /// Traps unless values of `type` are stored as one of `allowed`.
    static func require(_ type: any _RealmSchemaDiscoverable.Type, in allowed: Set<PropertyType>,
                        for operation: String) {
        let stored = type._rlmShape.type
        guard allowed.contains(stored) else {
            preconditionFailure("Query operation '\(operation)' is not supported for values of type '\(type)' (stored as \(stored)); it needs \(expected(allowed)).")
        }
    }

    private static func expected(_ allowed: Set<PropertyType>) -> String {
        switch allowed {
        case ordered: return "a number, Date, Decimal128, AnyRealmValue, String or Data value"
        case numeric: return "a number, Date, Decimal128 or AnyRealmValue value"
        case binary: return "a String or Data value"
        default: return "a String value"
        }
    }
}
