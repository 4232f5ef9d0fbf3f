import Foundation

/// The form a value takes in a query's argument list: as given, with optionals unwrapped, nil
/// as `NSNull` (as RealmSwift passes it), and sequences (`in(_:)`, `containsAny(in:)`) as an
/// `[Any]` of such values (an array argument is normalized the same way).
///
/// Values keep their Swift types: enums, `CustomPersistable` wrappers, `AnyRealmValue` and
/// objects are passed as themselves. Every persistable one is a `_StorableValue`, so the code
/// binding arguments for the core converts them with `_rlmEncode()`.
enum QueryArgument {
    /// `value` with optionals unwrapped and nil as `NSNull`.
    static func normalize(_ value: Any?) -> Any {
        guard let value else { return NSNull() }
        if let optional = value as? any AnyOptional {
            return normalize(optional.wrappedAny)
        }
        if let array = value as? [Any] {
            return array.map { normalize($0) }
        }
        return value
    }

    /// The elements of a sequence argument, each normalized.
    static func normalize<S: Sequence>(sequence: S) -> [Any] {
        sequence.map { normalize($0) }
    }
}
