/// An error thrown when text cannot be turned into one of SwiftStore's value types.
///
/// `ObjectId(string:)` and `Decimal128(string:)` throw it; RealmSwift throws an `NSError` in the
/// same places, so code that only catches (or `try?`s) the error works with both.
///
/// ```swift
/// do {
///     _ = try ObjectId(string: "not an id")
/// } catch let error as SwiftStoreValueError {
///     print(error.message)
/// }
/// ```
public struct SwiftStoreValueError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What was wrong with the input, in a sentence that names the input.
    public let message: String

    /// Creates an error with the given message.
    package init(message: String) {
        self.message = message
    }

    /// The message, so that `print(error)` and string interpolation show it.
    public var description: String { message }
}

extension SwiftStoreValueError {
    /// Quotes user input for a message, cut short when it is long.
    static func quote(_ text: String) -> String {
        let limit = 64
        if text.count <= limit { return "\"\(text)\"" }
        return "\"\(text.prefix(limit))...\" (\(text.count) characters)"
    }
}
