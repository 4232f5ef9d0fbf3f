import Foundation

/// A 128-bit IEEE 754-2008 decimal floating-point number, as MongoDB's BSON Decimal128.
///
/// A `Decimal128` holds up to 34 significant decimal digits and an exponent from -6176 to
/// 6111 (so values up to about 10^6145), plus NaN and signed infinities. Decimal fractions are
/// exact: `0.1 + 0.2 == 0.3`. Every result is rounded once to 34 digits, half to even;
/// overflow gives infinity and invalid operations (`0 / 0`, infinity minus infinity) give NaN.
///
/// ```swift
/// let price: Decimal128 = "12.50"
/// let total = price * 3          // 37.50
/// print(total.stringValue)       // "37.50"
/// ```
///
/// Values keep the exponent they were written with, as IEEE prescribes: `1.0` and `1.00`
/// print differently but compare (and hash) equal. NaN equals NaN and orders before every
/// number, so sorting and hashing stay consistent.
///
/// The arithmetic, parsing, formatting and comparison are the storage core's
/// (`cs_decimal_*` in CStore), so values behave here exactly as they do in queries.
/// A `Decimal128` can be shared between threads and tasks. Like RealmSwift's, it is a class,
/// and one operation changes an instance in place: ``negate()``, which SignedNumeric declares
/// and RealmSwift code calls on a `let`. Every other operation makes a new value. Negating a
/// decimal that another thread reads at the same time, or that is an element of a Set or a
/// dictionary key, is a programming error; a decimal read from a managed property is a fresh
/// instance, so negating it never changes what is stored.
public final class Decimal128: Sendable {
    /// The value in the BID encoding (`w.0` holds the low 64 bits). Only ``negate()`` writes it
    /// after initialization.
    nonisolated(unsafe) private var value: DecimalBits

    // MARK: Storage-layer access

    /// Creates a decimal from the storage core's representation.
    package init(_ c: DecimalBits) {
        value = c
    }

    /// The storage core's representation, for a `cs_value` of type `CS_TYPE_DECIMAL`.
    package var cValue: DecimalBits { value }

    // MARK: Creating decimals

    /// Creates a decimal equal to zero (wraps `cs_decimal_from_int`).
    public convenience init() {
        self.init(DecimalCore.fromInt(0))
    }

    /// Converts a number, string or decimal to a `Decimal128`.
    ///
    /// Accepted values: `Decimal128`, integers of every width (rounded to 34 digits if they
    /// have more), `Double` and `Float` (the shortest decimal that reads back as the same
    /// binary value, so `0.1` gives `0.1`), `String` and `Substring` (as ``init(string:)``),
    /// Foundation's `Decimal`, and `NSNumber` (as ``init(number:)``).
    ///
    /// Passing any other type, or a string that is not a decimal, stops the program, as in
    /// RealmSwift. Use ``init(string:)`` for text that may be invalid.
    ///
    /// - Parameter value: the value to convert.
    public convenience init(value: Any) {
        switch value {
        case let decimal as Decimal128:
            self.init(decimal.value)
        case let string as String:
            self.init(Self.parseOrTrap(string, caller: "Decimal128(value:)"))
        case let string as Substring:
            self.init(Self.parseOrTrap(String(string), caller: "Decimal128(value:)"))
        case let number as NSNumber:
            self.init(number: number)
        case let double as Double:
            self.init(DecimalCore.fromDouble(double))
        case let float as Float:
            self.init(Self.fromFloat(float))
        case let integer as any BinaryInteger:
            self.init(Self.fromInteger(integer))
        case let decimal as Decimal:
            self.init(Self.fromFoundationDecimal(decimal))
        default:
            preconditionFailure("Decimal128(value:) cannot convert a value of type \(type(of: value))")
        }
    }

    /// Converts an `NSNumber` to a `Decimal128`.
    ///
    /// Integers (and Booleans, as 0 and 1) convert exactly; a floating-point number gives the
    /// shortest decimal that reads back as the same binary value; an `NSDecimalNumber`
    /// converts through its decimal text. Wraps `cs_decimal_from_int`,
    /// `cs_decimal_from_double` and `cs_decimal_parse`.
    ///
    /// - Parameter number: the number to convert.
    public convenience init(number: NSNumber) {
        if let decimal = number as? NSDecimalNumber {
            self.init(Self.fromFoundationDecimal(decimal.decimalValue))
            return
        }
        switch String(cString: number.objCType) {
        case "f":
            self.init(Self.fromFloat(number.floatValue))
        case "d":
            self.init(DecimalCore.fromDouble(number.doubleValue))
        case "C", "S", "I", "L", "Q":
            self.init(Self.fromInteger(number.uint64Value))
        default:
            self.init(DecimalCore.fromInt(number.int64Value))
        }
    }

    /// Parses a decimal from text such as `"12.50"`, `"-3"`, `"1E+3"`, `"2.5e-7"`, `"NaN"`,
    /// `"Inf"` or `"-Infinity"` (wraps `cs_decimal_parse`).
    ///
    /// The exponent written is kept (`"12.50"` prints back as `"12.50"`). More than 34
    /// significant digits are rounded half to even; a value beyond the largest decimal gives
    /// infinity. Words are case-insensitive; no spaces are allowed.
    ///
    /// - Parameter string: the text to parse.
    /// - Throws: ``SwiftStoreValueError`` when the text is not a decimal number.
    public convenience init(string: String) throws {
        guard let c = Self.parse(string) else {
            throw Self.parseError(string)
        }
        self.init(c)
    }

    /// Converts an integer when the result equals it exactly, that is when it has at most 34
    /// significant digits (not counting trailing zeros); otherwise returns nil.
    ///
    /// Wraps `cs_decimal_from_int`, and `cs_decimal_parse` beyond 64 bits.
    ///
    /// - Parameter source: the integer to convert.
    public convenience init?<T: BinaryInteger>(exactly source: T) {
        if let small = Int64(exactly: source) {
            self.init(DecimalCore.fromInt(small))
            return
        }
        let text = String(source)
        let digits = text.drop { $0 == "-" }
        let significant = digits.count - digits.reversed().prefix { $0 == "0" }.count
        guard significant <= 34, let c = Self.parse(text) else { return nil }
        self.init(c)
    }

    // MARK: Limits

    private static let largest = Decimal128(parseOrTrap("9999999999999999999999999999999999E+6111", caller: "max"))
    private static let smallest = Decimal128(parseOrTrap("-9999999999999999999999999999999999E+6111", caller: "min"))

    /// The most negative finite decimal, `-9.999999999999999999999999999999999E+6144`
    /// (34 nines at the largest exponent; made once with `cs_decimal_parse`).
    public static var min: Decimal128 { smallest }

    /// The largest finite decimal, `9.999999999999999999999999999999999E+6144`
    /// (34 nines at the largest exponent; made once with `cs_decimal_parse`).
    public static var max: Decimal128 { largest }

    // MARK: Reading decimals

    /// Whether this is NaN (not a number), for example the result of `0 / 0`
    /// (wraps `cs_decimal_is_nan`).
    public var isNaN: Bool {
        var x = value
        return DecimalCore.isNaN(&x)
    }

    /// Whether this is a signaling NaN; the same as ``isNaN``.
    ///
    /// The storage core does not tell quiet and signaling NaNs apart (it ignores the
    /// signaling bit), so every NaN counts, as in RealmSwift.
    public var isSignaling: Bool { isNaN }

    /// Whether this is a signaling NaN; the same as ``isNaN`` (see ``isSignaling``).
    public var isSignalingNaN: Bool { isNaN }

    /// The decimal as text, exactly as RealmSwift writes it: the coefficient's digits with the
    /// point moved left while more than one digit stands before it and the exponent is not 0,
    /// then `E` and the remaining exponent without a plus sign (`"12.50"`, `"150"`, `"1.5E2"`,
    /// `"2.5E-1"`, `"1E-3"`, `"-0"`, `"0E-2"`); a coefficient wider than 64 bits as sign,
    /// digits and signed exponent (`"+1234567890123456789012345678901234E+1"`); `"NaN"`,
    /// `"Inf"` or `"-Inf"` (a NaN whose sign bit is set: `"-NaN"`).
    ///
    /// ``init(string:)`` reads it back to an identical value.
    public var stringValue: String {
        DecimalCore.realmText(value)
    }

    /// The storage core's text (IEEE 754 scientific form: `"1.5E+2"`, `"0.25"`), which the
    /// tool and the query language print (wraps `cs_decimal_format`).
    private var coreText: String {
        var x = value
        var buffer = [CChar](repeating: 0, count: 64)
        var length = DecimalCore.format(&x, &buffer, buffer.count)
        if length >= buffer.count {
            buffer = [CChar](repeating: 0, count: length + 1)
            length = DecimalCore.format(&x, &buffer, buffer.count)
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The nearest `Double`, correctly rounded; infinities and NaN carry over
    /// (wraps `cs_decimal_to_double`).
    public var doubleValue: Double {
        var x = value
        return DecimalCore.toDouble(&x)
    }

    /// The value as a Foundation `Decimal`, which may round: `Decimal` keeps 38 digits but
    /// exponents only from -128 to 127. Infinities, NaN and values out of its range give
    /// `Decimal.nan`. Converts through the storage core's text (`cs_decimal_format`).
    public var decimalValue: Decimal {
        Decimal(string: coreText, locale: Locale(identifier: "en_US_POSIX")) ?? .nan
    }

    // MARK: Helpers

    /// Parses text with the storage core, or returns nil.
    private static func parse(_ string: String) -> DecimalBits? {
        var text = string
        var out = DecimalBits()
        let rc = text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { DecimalCore.parse($0.baseAddress, $0.count, &out) }
        }
        return rc == 0 ? out : nil
    }

    /// The error for text `parse` rejected, with the storage core's reason.
    private static func parseError(_ string: String) -> SwiftStoreValueError {
        // The core's parser leaves its reason as the thread's last failure.
        let reason = DecimalCore.lastFailure
        let quoted = SwiftStoreValueError.quote(string)
        return SwiftStoreValueError(
            message: reason.isEmpty ? "invalid Decimal128 string \(quoted)" : "invalid Decimal128 string \(quoted): \(reason)")
    }

    private static func parseOrTrap(_ string: String, caller: String) -> DecimalBits {
        guard let c = parse(string) else {
            preconditionFailure("\(caller): \(parseError(string).message)")
        }
        return c
    }

    /// An integer of any width; beyond 64 bits it is rounded to 34 digits.
    private static func fromInteger(_ integer: some BinaryInteger) -> DecimalBits {
        if let small = Int64(exactly: integer) { return DecimalCore.fromInt(small) }
        return parseOrTrap(String(integer), caller: "Decimal128")
    }

    /// A `Float` through its own shortest text, so `Float(0.1)` gives 0.1, not 0.100000001...
    private static func fromFloat(_ float: Float) -> DecimalBits {
        if float.isNaN { return DecimalCore.fromDouble(.nan) }
        return parse(float.description) ?? DecimalCore.fromDouble(Double(float))
    }

    private static func fromFoundationDecimal(_ decimal: Decimal) -> DecimalBits {
        if decimal.isNaN { return DecimalCore.fromDouble(.nan) }
        return parse(decimal.description) ?? DecimalCore.fromDouble(.nan)
    }

    /// Applies one of the storage core's binary operations.
    private static func apply(
        _ lhs: Decimal128, _ rhs: Decimal128,
        _ operation: (UnsafePointer<DecimalBits>, UnsafePointer<DecimalBits>) -> DecimalBits
    ) -> Decimal128 {
        withUnsafePointer(to: lhs.value) { a in
            withUnsafePointer(to: rhs.value) { b in Decimal128(operation(a, b)) }
        }
    }

    /// `cs_decimal_compare`: <0, 0 or >0; NaN equals NaN and orders before every number.
    private static func compare(_ lhs: Decimal128, _ rhs: Decimal128) -> Int32 {
        withUnsafePointer(to: lhs.value) { a in
            withUnsafePointer(to: rhs.value) { b in DecimalCore.compare(a, b) }
        }
    }

    /// The value with its sign bit set to `negative` (exact, unlike arithmetic on zero).
    private func withSign(negative: Bool) -> Decimal128 {
        var c = value
        c.w.1 = negative ? c.w.1 | (1 << 63) : c.w.1 & ~(1 << 63)
        return Decimal128(c)
    }
}

// MARK: - Literals

extension Decimal128: ExpressibleByIntegerLiteral {
    /// Creates a decimal from an integer literal: `let d: Decimal128 = 42`
    /// (wraps `cs_decimal_from_int`).
    public convenience init(integerLiteral value: Int64) {
        self.init(DecimalCore.fromInt(value))
    }
}

extension Decimal128: ExpressibleByFloatLiteral {
    /// Creates a decimal from a floating-point literal: `let d: Decimal128 = 0.1` gives
    /// exactly 0.1, the shortest decimal that reads back as the literal's `Double`
    /// (wraps `cs_decimal_from_double`). Use a string literal to keep trailing zeros or more
    /// than 17 digits.
    public convenience init(floatLiteral value: Double) {
        self.init(DecimalCore.fromDouble(value))
    }
}

extension Decimal128: ExpressibleByStringLiteral {
    /// Creates a decimal from a string literal: `let d: Decimal128 = "12.50"`
    /// (wraps `cs_decimal_parse`).
    ///
    /// Stops the program when the literal is not a decimal; use ``init(string:)`` for text
    /// known only at run time.
    public convenience init(stringLiteral value: String) {
        self.init(Self.parseOrTrap(value, caller: "Decimal128 string literal"))
    }
}

// MARK: - Text

extension Decimal128: CustomStringConvertible {
    /// The same as ``stringValue``.
    public var description: String { stringValue }
}

// MARK: - Comparison and hashing

extension Decimal128: Comparable {
    /// Whether two decimals are numerically equal (wraps `cs_decimal_compare`).
    ///
    /// `1.0 == 1.00` and `-0 == 0`; unlike `Double`, NaN equals NaN.
    public static func == (lhs: Decimal128, rhs: Decimal128) -> Bool {
        compare(lhs, rhs) == 0
    }

    /// Whether `lhs` is numerically smaller (wraps `cs_decimal_compare`).
    ///
    /// NaN orders before every number, including negative infinity.
    public static func < (lhs: Decimal128, rhs: Decimal128) -> Bool {
        compare(lhs, rhs) < 0
    }
}

extension Decimal128: Hashable {
    /// Hashes the numeric value, so that equal decimals hash equally: `1.0` and `1.00`,
    /// `0` and `-0`, and every NaN.
    ///
    /// Decodes the BID encoding as `dec_decode` in the core's decimal.c does (a coefficient
    /// above 10^34 - 1 counts as zero, an exponent above 6111 as 6111) and hashes the
    /// coefficient with its trailing zeros moved into the exponent.
    public func hash(into hasher: inout Hasher) {
        let high = value.w.1, low = value.w.0
        let negative = high >> 63 != 0
        switch (high >> 58) & 0x1F {
        case 0x1F: // NaN
            hasher.combine(0 as UInt8)
            return
        case 0x1E: // infinity
            hasher.combine(1 as UInt8)
            hasher.combine(negative)
            return
        default:
            break
        }
        var coefficient: UInt128 = 0
        var exponent: Int
        if (high >> 61) & 3 == 3 {
            // the large-coefficient form: every such coefficient exceeds 10^34 - 1
            exponent = Int((high >> 47) & 0x3FFF) - 6176
        } else {
            coefficient = UInt128(high & 0x1_FFFF_FFFF_FFFF) << 64 | UInt128(low)
            exponent = Int((high >> 49) & 0x3FFF) - 6176
            if coefficient > Self.largestCoefficient { coefficient = 0 }
        }
        if coefficient == 0 {
            hasher.combine(2 as UInt8)
            return
        }
        exponent = Swift.min(exponent, 6111)
        while coefficient % 10 == 0 {
            coefficient /= 10
            exponent += 1
        }
        hasher.combine(3 as UInt8)
        hasher.combine(negative)
        hasher.combine(coefficient)
        hasher.combine(exponent)
    }

    /// 10^34 - 1.
    private static let largestCoefficient: UInt128 = 9_999_999_999_999_999_999_999_999_999_999_999
}

// MARK: - Arithmetic

extension Decimal128: SignedNumeric {
    /// The type of ``magnitude``: a decimal.
    public typealias Magnitude = Decimal128

    /// The absolute value, exactly (the sign bit cleared); NaN stays NaN.
    public var magnitude: Decimal128 { withSign(negative: false) }

    /// The sum, rounded to 34 digits (wraps `cs_decimal_add`).
    ///
    /// The result keeps the smaller exponent: `1.00 + 2 == 3.00`. Infinity minus infinity
    /// is NaN.
    public static func + (lhs: Decimal128, rhs: Decimal128) -> Decimal128 {
        apply(lhs, rhs) { DecimalCore.add($0, $1) }
    }

    /// The difference, rounded to 34 digits (wraps `cs_decimal_sub`).
    public static func - (lhs: Decimal128, rhs: Decimal128) -> Decimal128 {
        apply(lhs, rhs) { DecimalCore.sub($0, $1) }
    }

    /// The product, rounded to 34 digits (wraps `cs_decimal_mul`).
    ///
    /// Zero times infinity is NaN; a product beyond ``max`` is infinity.
    public static func * (lhs: Decimal128, rhs: Decimal128) -> Decimal128 {
        apply(lhs, rhs) { DecimalCore.mul($0, $1) }
    }

    /// The quotient, rounded to 34 digits (wraps `cs_decimal_div`).
    ///
    /// Dividing a nonzero number by zero gives a signed infinity; `0 / 0` and infinity over
    /// infinity give NaN. An exact quotient keeps the preferred exponent: `1.00 / 2 == 0.50`.
    public static func / (lhs: Decimal128, rhs: Decimal128) -> Decimal128 {
        apply(lhs, rhs) { DecimalCore.div($0, $1) }
    }

    /// Adds `rhs` to `lhs` (wraps `cs_decimal_add`).
    public static func += (lhs: inout Decimal128, rhs: Decimal128) {
        lhs = lhs + rhs
    }

    /// Subtracts `rhs` from `lhs` (wraps `cs_decimal_sub`).
    public static func -= (lhs: inout Decimal128, rhs: Decimal128) {
        lhs = lhs - rhs
    }

    /// Multiplies `lhs` by `rhs` (wraps `cs_decimal_mul`).
    public static func *= (lhs: inout Decimal128, rhs: Decimal128) {
        lhs = lhs * rhs
    }

    /// Divides `lhs` by `rhs` (wraps `cs_decimal_div`).
    public static func /= (lhs: inout Decimal128, rhs: Decimal128) {
        lhs = lhs / rhs
    }

    /// The value with its sign flipped, exactly: `-(0)` is `-0`, `-(-Inf)` is `Inf`.
    public static prefix func - (operand: Decimal128) -> Decimal128 {
        operand.withSign(negative: operand.value.w.1 >> 63 == 0)
    }

    /// Flips the sign of this instance in place, exactly as prefix `-` does; callable on a
    /// `let`, as in RealmSwift where `Decimal128` is a class. Every reference to this instance
    /// sees the change (see the type's notes on sharing).
    public func negate() {
        value.w.1 ^= 1 << 63
    }
}

extension Decimal128 {
    /// The type of a distance between decimals: a decimal.
    public typealias Stride = Decimal128

    /// The distance from this value to `other`, that is `other - self`.
    ///
    /// - Parameter other: the value to measure to.
    /// - Returns: `other - self` (wraps `cs_decimal_sub`).
    public func distance(to other: Decimal128) -> Decimal128 {
        other - self
    }

    /// This value moved by `n`, that is `self + n`.
    ///
    /// - Parameter n: the distance to move.
    /// - Returns: `self + n` (wraps `cs_decimal_add`).
    public func advanced(by n: Decimal128) -> Decimal128 {
        self + n
    }
}

// MARK: - Codable

extension Decimal128: Codable {
    /// Decodes a decimal from a string (as ``init(string:)``) or a number (an integer
    /// exactly, otherwise through `Double`), in a single-value container.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the value is neither a number nor a
    ///   decimal string (for a bad string its underlying error is the
    ///   ``SwiftStoreValueError``).
    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            guard let c = Self.parse(string) else {
                let error = Self.parseError(string)
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: container.codingPath, debugDescription: error.message, underlyingError: error))
            }
            self.init(c)
        } else if let integer = try? container.decode(Int64.self) {
            self.init(DecimalCore.fromInt(integer))
        } else if let double = try? container.decode(Double.self) {
            self.init(DecimalCore.fromDouble(double))
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected a Decimal128 as a string or a number")
        }
    }

    /// Encodes the decimal as its ``stringValue``, in a single-value container, so no digit
    /// or trailing zero is lost.
    ///
    /// - Throws: the encoder's error if it cannot encode a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stringValue)
    }
}
