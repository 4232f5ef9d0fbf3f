/// The expression tree a `Query` builds: each operator of the DSL returns a new `Query` whose
/// node combines its operands' nodes. `QueryPredicateBuilder` turns a tree into predicate text
/// and arguments, in the form RealmSwift 10.54 produces (which our query parser reads).
///
/// Invariants:
/// 1. Only `.keyPath` nodes grow by member lookup; a key path step after a map subscript is a
///    misuse and traps.
/// 2. `KeyPathOptions.requiresAny` is set when a path steps into a collection through an
///    object's property, and dropped by every operation that turns the collection into a
///    single value (`@count`, `@min`, `IN`, subscripts).
indirect enum QueryNode {
    /// The binary operators, spelled as in the predicate text.
    enum Operator: String {
        case or = "||"
        case and = "&&"
        case equal = "=="
        case notEqual = "!="
        case lessThan = "<"
        case lessThanEqual = "<="
        case greaterThan = ">"
        case greaterThanEqual = ">="
        case `in` = "IN"
        case contains = "CONTAINS"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case like = "LIKE"
    }

    /// `!query`.
    case not(QueryNode)
    /// A value passed as a `%@` argument (nil becomes `NSNull`).
    case constant(Any?)
    /// A dotted property path.
    case keyPath(QueryKeyPath)
    /// `lhs op rhs`, with string options for the string operators.
    case comparison(Operator, QueryNode, QueryNode, StringOptions)
    /// `lhs BETWEEN {lower, upper}`.
    case between(QueryNode, lower: QueryNode, upper: QueryNode)
    /// `SUBQUERY(collection, $colN, predicate).@count`.
    case subqueryCount(QueryNode)
    /// `map[%@]`.
    case mapSubscript(QueryNode, key: Any)
    /// `any[%@][%K]...`: subscripts into a nested collection held in an AnyRealmValue.
    case mixedSubscripts(QueryNode, [MixedSubscript])

    /// Whether the node is a Bool-valued term (rather than a comparison): a key path or a
    /// subscript, which stands for `term == true` where a predicate is expected.
    var isBooleanTerm: Bool {
        switch self {
        case .keyPath, .mapSubscript, .mixedSubscripts: return true
        default: return false
        }
    }
}

/// One subscript into an AnyRealmValue's nested collection.
enum MixedSubscript {
    /// `[n]`: a list position.
    case index(Int)
    /// `["key"]`: a dictionary key.
    case key(String)
    /// `.any`: every position or key (`[%K]` with `#any`).
    case all
}

/// How a key path reaches its value.
struct KeyPathOptions: OptionSet {
    let rawValue: UInt8
    /// The path goes through a collection property.
    static let isCollection = KeyPathOptions(rawValue: 1)
    /// A comparison on the path needs `ANY` in front (implicit any over the collection).
    static let requiresAny = KeyPathOptions(rawValue: 2)
    /// A collection operator (`@count`, `@min`, ...) makes the path one value.
    static let isAggregate = KeyPathOptions(rawValue: 4)
}

/// A property path: the names of its steps, and where the first collection is.
struct QueryKeyPath {
    /// The property names (and collection operators like `@count`), joined with dots.
    var components: [String]
    /// See `KeyPathOptions`.
    var options: KeyPathOptions
    /// The index in `components` of the first step whose value is a collection, if known.
    var collectionIndex: Int?

    /// The dotted path.
    var joined: String { components.joined(separator: ".") }

    /// Whether the path stands for several values (a collection not reduced by an aggregate).
    /// Comparing two such paths is not permitted. (RealmSwift also refuses two aggregates,
    /// `$0.a.count == $0.b.count`; that comparison is allowed here.)
    var isMultiValued: Bool {
        options.contains(.isCollection) && !options.contains(.isAggregate)
    }
}
