/// A predicate as text and arguments, parsed by the core when a query runs (replaced by the
/// full NSPredicate when it lands).
public final class NSPredicate: CustomStringConvertible {
    /// The predicate text.
    public let predicateFormat: String
    /// The values of its `%@` placeholders.
    public let arguments: [Any]

    /// A predicate from a format and its arguments.
    public init(format: String, _ args: Any...) {
        predicateFormat = format
        arguments = args
    }

    /// A predicate from a format and an array of arguments.
    public init(format: String, argumentArray: [Any]?) {
        predicateFormat = format
        arguments = argumentArray ?? []
    }

    /// The format.
    public var description: String { predicateFormat }
}
