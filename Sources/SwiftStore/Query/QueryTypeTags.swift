import Foundation

// The tag protocols that name which stored types an operator applies to, as RealmSwift names
// them. Generic code that builds predicates constrains on them (through `PersistedType` for
// enums and custom types):
//
//     func atLeast<T: _QueryNumeric>(_ q: Query<T>, _ v: T) -> Query<Bool> { q >= v }
//     func avgOver<T>(_ q: Query<T>) -> Query<T> where T: _HasPersistedType, T.PersistedType: _QueryNumeric { q.avg }
//
// The operators themselves also accept every storable type and check the stored type when the
// query is built (QueryTypeCheck), so a constraint is never required, only allowed.

/// Types that compare with `<`, `>`, and aggregate with `min`, `max`, `avg`, `sum` in a query:
/// integers, Float, Double, Decimal128, Date, AnyRealmValue and their optionals.
public protocol _QueryNumeric: _StorableValue {}
extension Int: _QueryNumeric {}
extension Int8: _QueryNumeric {}
extension Int16: _QueryNumeric {}
extension Int32: _QueryNumeric {}
extension Int64: _QueryNumeric {}
extension Float: _QueryNumeric {}
extension Double: _QueryNumeric {}
extension Decimal128: _QueryNumeric {}
extension Date: _QueryNumeric {}
extension AnyRealmValue: _QueryNumeric {}
extension Optional: _QueryNumeric where Wrapped: _QueryNumeric & _RealmOptionalWrappable {}

/// Types the binary string operators apply to (`contains`, `starts(with:)`, `ends(with:)`,
/// `equals`, `notEquals`): Data, String and their optionals.
public protocol _QueryBinary: _StorableValue {}
extension Data: _QueryBinary {}
extension Optional: _QueryBinary where Wrapped: _QueryBinary & _RealmOptionalWrappable {}

/// Types `like` and the case and diacritic options apply to: String and String?.
public protocol _QueryString: _QueryBinary {}
extension String: _QueryString {}
extension Optional: _QueryString where Wrapped: _QueryString & _RealmOptionalWrappable {}

/// An Optional, for constraining generic query code on its wrapped type (RealmSwift's
/// `OptionalProtocol`; the same protocol as `_QueryOptional`).
public typealias OptionalProtocol = _QueryOptional
