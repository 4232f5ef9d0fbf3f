// Subscripts into the nested lists and dictionaries an AnyRealmValue can hold.

extension Query where T == AnyRealmValue {
    /// The element at `position` of a nested list: `$0.value[0] == 1` is
    /// `(value[%@] == %@)` with the position as an argument.
    public subscript(position: Int) -> Query<AnyRealmValue> {
        Query<AnyRealmValue>(appendingMixedSubscript(.index(position)))
    }

    /// The value for `key` of a nested dictionary: `(value[%@] == %@)`.
    public subscript(key: String) -> Query<AnyRealmValue> {
        Query<AnyRealmValue>(appendingMixedSubscript(.key(key)))
    }

    /// Every element or value of a nested collection: `$0.value.any == 1` is
    /// `(value[%K] == %@)` with `#any` as the `%K` argument.
    public var any: Query<AnyRealmValue> {
        Query<AnyRealmValue>(appendingMixedSubscript(.all))
    }

    private func appendingMixedSubscript(_ key: MixedSubscript) -> QueryNode {
        switch node {
        case .keyPath:
            return .mixedSubscripts(keyPathErasingAny(), [key])
        case .mixedSubscripts(let keyPath, let keys):
            return .mixedSubscripts(keyPath, keys + [key])
        default:
            preconditionFailure("Cannot add subscript to \(QueryPredicateBuilder.describe(node))")
        }
    }
}
