import Foundation

/// A filter in NSPredicate's format language (RealmSwift's `NSPredicate` use), kept as its
/// format text and arguments; the core's query parser reads them when the predicate is used.
///
/// Foundation on Linux has an `NSPredicate` that cannot parse formats; this one takes its place.
/// A file that imports SwiftStore without Foundation sees only this class. A file that imports
/// both sees two: as a type the bare name is ambiguous (a compile error), and in a call such as
/// `NSPredicate(format:...)` the compiler may pick either. There, name it
/// `SwiftStore.NSPredicate`, or declare once in the file (or, without `private`, once per module)
///
/// ```swift
/// private typealias NSPredicate = SwiftStore.NSPredicate
/// private typealias NSCompoundPredicate = SwiftStore.NSCompoundPredicate
/// ```
///
/// which makes the bare names this module's.
///
/// ```swift
/// let p = NSPredicate(format: "age > %@ AND name BEGINSWITH[c] %@", 3, "a")
/// realm.objects(Person.self).filter(p)
/// ```
///
/// `%@` and `%K` (and `%d`, `%f` and the like) take the arguments in order. Arguments keep their
/// Swift types (Int, String, Date, ObjectId, an object, an array, ...); nil is `NSNull`.
public class NSPredicate: NSObject {
    /// The format text, with its `%@`/`%K` placeholders (not substituted).
    public let predicateFormat: String
    /// The arguments for the placeholders, in order.
    public let arguments: [Any]

    /// A predicate from `format` and the arguments for its placeholders.
    public convenience init(format predicateFormat: String, _ args: Any...) {
        self.init(format: predicateFormat, argumentArray: args)
    }

    /// A predicate from `format` and an array of arguments for its placeholders.
    public init(format predicateFormat: String, argumentArray arguments: [Any]?) {
        self.predicateFormat = predicateFormat
        self.arguments = (arguments ?? []).map { QueryArgument.normalize($0) }
        super.init()
    }

    /// A predicate that always (`TRUEPREDICATE`) or never (`FALSEPREDICATE`) matches.
    public convenience init(value: Bool) {
        self.init(format: value ? "TRUEPREDICATE" : "FALSEPREDICATE", argumentArray: nil)
    }

    /// The format with the arguments written in (strings quoted, nil as `nil`), for reading:
    /// `age > 3 AND name BEGINSWITH[c] "a"`.
    public override var description: String {
        PredicateFormatter.substitute(predicateFormat, arguments)
    }

    /// Whether `object` is a predicate with the same format text and equal arguments.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSPredicate, type(of: other) == type(of: self) else { return false }
        return predicateFormat == other.predicateFormat
            && arguments.count == other.arguments.count
            && zip(arguments, other.arguments).allSatisfy { PredicateFormatter.argumentsEqual($0, $1) }
    }

    /// A hash of the format text and the number of arguments.
    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(predicateFormat)
        hasher.combine(arguments.count)
        return hasher.finalize()
    }

    /// The predicate a type-safe query stands for (what `where(_:)` filters with).
    static func _fromQuery<T>(_ query: Query<T>) -> NSPredicate {
        let (format, arguments) = query._constructPredicate()
        return NSPredicate(format: format, argumentArray: arguments)
    }
}

/// A predicate combining others with AND, OR or NOT, written out as parenthesised text whose
/// arguments are the subpredicates' in order:
///
/// ```swift
/// NSCompoundPredicate(andPredicateWithSubpredicates: [a, b]).predicateFormat  // "(a) AND (b)"
/// NSCompoundPredicate(notPredicateWithSubpredicate: a).predicateFormat        // "NOT (a)"
/// ```
///
/// AND of no predicates is `TRUEPREDICATE`, OR of none `FALSEPREDICATE`.
public final class NSCompoundPredicate: NSPredicate {
    /// How the subpredicates combine (Foundation's `NSCompoundPredicate.LogicalType`).
    public enum LogicalType: UInt, Sendable {
        /// NOT of the subpredicates (of their AND when there are several).
        case not = 0
        /// All subpredicates match.
        case and = 1
        /// At least one subpredicate matches.
        case or = 2
    }

    /// How the subpredicates combine.
    public let compoundPredicateType: LogicalType
    /// The combined predicates (`NSPredicate`s).
    public let subpredicates: [Any]

    /// Combines `subpredicates` with `type`; NOT needs at least one.
    public init(type: LogicalType, subpredicates: [NSPredicate]) {
        compoundPredicateType = type
        self.subpredicates = subpredicates
        let parts = subpredicates.map { "(\($0.predicateFormat))" }
        let format: String
        switch type {
        case .and:
            format = parts.isEmpty ? "TRUEPREDICATE" : parts.joined(separator: " AND ")
        case .or:
            format = parts.isEmpty ? "FALSEPREDICATE" : parts.joined(separator: " OR ")
        case .not:
            precondition(!parts.isEmpty, "A NOT predicate needs a subpredicate")
            format = parts.count == 1 ? "NOT \(parts[0])" : "NOT (\(parts.joined(separator: " AND ")))"
        }
        super.init(format: format, argumentArray: subpredicates.flatMap(\.arguments))
    }

    /// Matches where every one of `subpredicates` matches: `(a) AND (b)`.
    public convenience init(andPredicateWithSubpredicates subpredicates: [NSPredicate]) {
        self.init(type: .and, subpredicates: subpredicates)
    }

    /// Matches where any of `subpredicates` matches: `(a) OR (b)`.
    public convenience init(orPredicateWithSubpredicates subpredicates: [NSPredicate]) {
        self.init(type: .or, subpredicates: subpredicates)
    }

    /// Matches where `predicate` does not: `NOT (a)`.
    public convenience init(notPredicateWithSubpredicate predicate: NSPredicate) {
        self.init(type: .not, subpredicates: [predicate])
    }
}
