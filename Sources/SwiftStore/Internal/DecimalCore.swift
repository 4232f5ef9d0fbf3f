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

    /// RealmSwift's text for a decimal (its core's `Decimal128::to_string`, docs/REALMSWIFT.md,
    /// Values). NaN and infinities: the sign when it is set, then "NaN" or "Inf". A coefficient
    /// whose stored bits fit 64: its digits, the point moved left while more than one digit
    /// stands before it and the exponent is not 0 (each move adds 1 to the exponent), then "E"
    /// and the exponent when it is not 0, with no plus sign ("12.50", "1.5E2", "2.5E-1", "0E-2").
    /// Wider stored bits: sign ("+" or "-"), every digit of the coefficient (0 when it is not
    /// canonical), "E", and the exponent with its sign ("+1234567890123456789012345678901234E+1").
    static func realmText(_ x: DecimalBits) -> String {
        let hi = x.w.1, lo = x.w.0
        let negative = hi >> 63 == 1
        if hi & 0x7800_0000_0000_0000 == 0x7800_0000_0000_0000 {
            let isNaN = hi & 0x7C00_0000_0000_0000 == 0x7C00_0000_0000_0000
            return (negative ? "-" : "") + (isNaN ? "NaN" : "Inf")
        }
        let rawHigh = hi & 0x0001_FFFF_FFFF_FFFF
        var exponent: Int
        var coefficient: UInt128
        if hi & 0x6000_0000_0000_0000 == 0x6000_0000_0000_0000 {
            // the second encoding form only holds coefficients past 10^34: not canonical, 0
            exponent = Int(((hi << 2) >> 49) & 0x3FFF) - 6176
            coefficient = 0
        } else {
            exponent = Int((hi >> 49) & 0x3FFF) - 6176
            coefficient = UInt128(rawHigh) << 64 | UInt128(lo)
            if coefficient > UInt128(9_999_999_999_999_999) * 1_000_000_000_000_000_000 + 999_999_999_999_999_999 {
                coefficient = 0
            }
        }
        let digits = String(coefficient)
        if rawHigh != 0 {
            return (negative ? "-" : "+") + digits + "E" + (exponent < 0 ? "-" : "+") + String(exponent.magnitude)
        }
        var before = digits.count
        while before > 1 && exponent != 0 {
            before -= 1
            exponent += 1
        }
        var text = negative ? "-" : ""
        text += digits.prefix(before)
        if before < digits.count { text += "." + digits.dropFirst(before) }
        if exponent != 0 { text += "E" + String(exponent) }
        return text
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
