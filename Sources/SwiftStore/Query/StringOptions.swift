/// Options for the string and binary comparisons of a type-safe query (`contains`,
/// `starts(with:)`, `ends(with:)`, `equals`, `notEquals`), as RealmSwift's `StringOptions`.
///
/// In the predicate text they become the modifiers `[c]`, `[d]` and `[cd]`:
///
/// ```swift
/// realm.objects(Person.self).where { $0.name.contains("ann", options: [.caseInsensitive]) }
/// // "(name CONTAINS[c] %@)"
/// ```
public struct StringOptions: OptionSet, Sendable {
    /// The raw bits: 1 case-insensitive, 2 diacritic-insensitive.
    public let rawValue: Int8

    /// Creates options from their raw bits.
    public init(rawValue: Int8) {
        self.rawValue = rawValue
    }

    /// Compare without regard to case (`[c]`).
    public static let caseInsensitive = StringOptions(rawValue: 1)
    /// Compare without regard to diacritic marks (`[d]`).
    public static let diacriticInsensitive = StringOptions(rawValue: 2)

    /// The modifier the options add after an operator: "", "[c]", "[d]" or "[cd]".
    var modifier: String {
        if isEmpty { return "" }
        return "[" + (contains(.caseInsensitive) ? "c" : "") + (contains(.diacriticInsensitive) ? "d" : "") + "]"
    }
}
