import CStore
import CStoreCall

/// The bits of a decimal as the core stores them (IEEE 754-2008 decimal128, BID encoding).
package typealias DecimalBits = cs_decimal128

/// The core's decimal arithmetic (decimal.c), which `Decimal128` wraps so that values behave
/// in Swift exactly as in queries and sorting.
enum DecimalCore {
    @inline(__always) static func fromInt(_ v: Int64) -> DecimalBits { cs_decimal_from_int(v) }
    @inline(__always) static func fromDouble(_ v: Double) -> DecimalBits { cs_decimal_from_double(v) }
    @inline(__always) static func isNaN(_ x: UnsafePointer<DecimalBits>) -> Bool { cs_decimal_is_nan(x) }
    @inline(__always) static func toDouble(_ x: UnsafePointer<DecimalBits>) -> Double { cs_decimal_to_double(x) }

    /// Writes the decimal's text into `buffer` (NUL-terminated when it fits) and returns its
    /// length, which may exceed the buffer.
    @inline(__always)
    static func format(_ x: UnsafePointer<DecimalBits>, _ buffer: UnsafeMutablePointer<CChar>, _ size: Int) -> Int {
        cs_decimal_format(x, buffer, size)
    }

    /// Parses `length` bytes of text into `out`; nonzero when the text is not a decimal
    /// (the reason is then `lastFailure`).
    @inline(__always)
    static func parse(_ text: UnsafePointer<CChar>?, _ length: Int, _ out: UnsafeMutablePointer<DecimalBits>) -> Int32 {
        cs_decimal_parse(text, length, out)
    }

    /// The core's message for the last failure on this thread (why a parse failed).
    static var lastFailure: String { CStoreError.lastMessage }

    /// <0, 0 or >0; NaN equals NaN and orders before every number.
    @inline(__always)
    static func compare(_ a: UnsafePointer<DecimalBits>, _ b: UnsafePointer<DecimalBits>) -> Int32 {
        cs_decimal_compare(a, b)
    }

    @inline(__always)
    static func add(_ a: UnsafePointer<DecimalBits>, _ b: UnsafePointer<DecimalBits>) -> DecimalBits { cs_decimal_add(a, b) }
    @inline(__always)
    static func sub(_ a: UnsafePointer<DecimalBits>, _ b: UnsafePointer<DecimalBits>) -> DecimalBits { cs_decimal_sub(a, b) }
    @inline(__always)
    static func mul(_ a: UnsafePointer<DecimalBits>, _ b: UnsafePointer<DecimalBits>) -> DecimalBits { cs_decimal_mul(a, b) }
    @inline(__always)
    static func div(_ a: UnsafePointer<DecimalBits>, _ b: UnsafePointer<DecimalBits>) -> DecimalBits { cs_decimal_div(a, b) }
}
