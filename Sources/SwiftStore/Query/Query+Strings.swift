// String and binary searches: CONTAINS, BEGINSWITH, ENDSWITH, ==/!= with options, LIKE.

extension Query where T: _StorableValue {
    /// Matches where the String or Data value contains `value`:
    /// `(name CONTAINS %@)`, `(name CONTAINS[cd] %@)` with options.
    public func contains(_ value: T, options: StringOptions = []) -> Query<Bool> {
        search(.contains, .constant(value), options, "contains")
    }

    /// Matches where the value contains the other property's value: `(name CONTAINS other)`.
    public func contains<U: _StorableValue>(_ column: Query<U>, options: StringOptions = []) -> Query<Bool> {
        QueryTypeCheck.require(U.self, in: QueryTypeCheck.binary, for: "contains")
        return search(.contains, column.node, options, "contains")
    }

    /// Matches where the value starts with `value`: `(name BEGINSWITH %@)`.
    public func starts(with value: T, options: StringOptions = []) -> Query<Bool> {
        search(.beginsWith, .constant(value), options, "starts(with:)")
    }

    /// Matches where the value starts with the other property's value.
    public func starts<U: _StorableValue>(with column: Query<U>, options: StringOptions = []) -> Query<Bool> {
        QueryTypeCheck.require(U.self, in: QueryTypeCheck.binary, for: "starts(with:)")
        return search(.beginsWith, column.node, options, "starts(with:)")
    }

    /// Matches where the value ends with `value`: `(name ENDSWITH %@)`.
    public func ends(with value: T, options: StringOptions = []) -> Query<Bool> {
        search(.endsWith, .constant(value), options, "ends(with:)")
    }

    /// Matches where the value ends with the other property's value.
    public func ends<U: _StorableValue>(with column: Query<U>, options: StringOptions = []) -> Query<Bool> {
        QueryTypeCheck.require(U.self, in: QueryTypeCheck.binary, for: "ends(with:)")
        return search(.endsWith, column.node, options, "ends(with:)")
    }

    /// Matches where the value equals `value` under `options`: `(name ==[c] %@)`.
    public func equals(_ value: T, options: StringOptions = []) -> Query<Bool> {
        search(.equal, .constant(value), options, "equals")
    }

    /// Matches where the value equals the other property's value under `options`.
    public func equals<U: _StorableValue>(_ column: Query<U>, options: StringOptions = []) -> Query<Bool> {
        QueryTypeCheck.require(U.self, in: QueryTypeCheck.binary, for: "equals")
        return search(.equal, column.node, options, "equals")
    }

    /// Matches where the value differs from `value` under `options`: `(name !=[c] %@)`.
    public func notEquals(_ value: T, options: StringOptions = []) -> Query<Bool> {
        search(.notEqual, .constant(value), options, "notEquals")
    }

    /// Matches where the value differs from the other property's value under `options`.
    public func notEquals<U: _StorableValue>(_ column: Query<U>, options: StringOptions = []) -> Query<Bool> {
        QueryTypeCheck.require(U.self, in: QueryTypeCheck.binary, for: "notEquals")
        return search(.notEqual, column.node, options, "notEquals")
    }

    /// Matches where the String value matches the wildcard pattern `value` (`?` one character,
    /// `*` any run): `(name LIKE %@)`, `(name LIKE[c] %@)` when case-insensitive.
    public func like(_ value: T, caseInsensitive: Bool = false) -> Query<Bool> {
        QueryTypeCheck.require(T.self, in: QueryTypeCheck.string, for: "like")
        return Query<Bool>(.comparison(.like, node, .constant(value), caseInsensitive ? [.caseInsensitive] : []))
    }

    /// Matches where the String value matches the pattern held in another property.
    public func like<U: _StorableValue>(_ column: Query<U>, caseInsensitive: Bool = false) -> Query<Bool> {
        QueryTypeCheck.require(T.self, in: QueryTypeCheck.string, for: "like")
        QueryTypeCheck.require(U.self, in: QueryTypeCheck.string, for: "like")
        return Query<Bool>(.comparison(.like, node, column.node, caseInsensitive ? [.caseInsensitive] : []))
    }

    private func search(_ op: QueryNode.Operator, _ rhs: QueryNode, _ options: StringOptions,
                        _ name: String) -> Query<Bool> {
        QueryTypeCheck.require(T.self, in: QueryTypeCheck.binary, for: name)
        return Query<Bool>(.comparison(op, node, rhs, options))
    }
}
