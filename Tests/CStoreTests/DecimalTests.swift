// Decimal128 (BID) in the core: parsing, printing, arithmetic, comparison, and the exact
// ordering of decimals against ints, floats and doubles in cs_value_compare (docs/ARCHITECTURE.md, Values and their order).

import CStore
import Foundation
import Testing

/// Small wrappers around the C functions, kept private to this file.
private enum Dec {
    static func parse(_ s: String) -> cs_decimal128? {
        var out = cs_decimal128()
        let bytes = Array(s.utf8)
        let rc = bytes.withUnsafeBufferPointer { b in
            b.withMemoryRebound(to: CChar.self) { cs_decimal_parse($0.baseAddress, $0.count, &out) }
        }
        return rc == CS_OK ? out : nil
    }

    /// Parses text the test knows to be valid.
    static func d(_ s: String, sourceLocation: SourceLocation = #_sourceLocation) -> cs_decimal128 {
        guard let v = parse(s) else {
            Issue.record("could not parse \(s)", sourceLocation: sourceLocation)
            return cs_decimal128()
        }
        return v
    }

    static func format(_ d: cs_decimal128) -> String {
        var x = d
        var buf = [CChar](repeating: 0, count: 128)
        let n = cs_decimal_format(&x, &buf, buf.count)
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func bits(_ d: cs_decimal128) -> (lo: UInt64, hi: UInt64) { (d.w.0, d.w.1) }

    static func same(_ a: cs_decimal128, _ b: cs_decimal128) -> Bool { a.w.0 == b.w.0 && a.w.1 == b.w.1 }

    static func int(_ v: Int64) -> cs_decimal128 { cs_decimal_from_int(v) }

    static func add(_ a: cs_decimal128, _ b: cs_decimal128) -> cs_decimal128 { var x = a, y = b; return cs_decimal_add(&x, &y) }
    static func sub(_ a: cs_decimal128, _ b: cs_decimal128) -> cs_decimal128 { var x = a, y = b; return cs_decimal_sub(&x, &y) }
    static func mul(_ a: cs_decimal128, _ b: cs_decimal128) -> cs_decimal128 { var x = a, y = b; return cs_decimal_mul(&x, &y) }
    static func div(_ a: cs_decimal128, _ b: cs_decimal128) -> cs_decimal128 { var x = a, y = b; return cs_decimal_div(&x, &y) }
    static func cmp(_ a: cs_decimal128, _ b: cs_decimal128) -> Int32 { var x = a, y = b; return cs_decimal_compare(&x, &y) }
    static func isNaN(_ a: cs_decimal128) -> Bool { var x = a; return cs_decimal_is_nan(&x) }
    static func toDouble(_ a: cs_decimal128) -> Double { var x = a; return cs_decimal_to_double(&x) }

    static func apply(_ op: Character, _ a: cs_decimal128, _ b: cs_decimal128) -> cs_decimal128 {
        switch op {
        case "+": return add(a, b)
        case "-": return sub(a, b)
        case "*": return mul(a, b)
        default: return div(a, b)
        }
    }

    // cs_value builders for cs_value_compare
    static func value(_ d: cs_decimal128) -> cs_value { var v = cs_value(); v.type = CS_TYPE_DECIMAL; v.v.dec = d; return v }
    static func value(_ i: Int64) -> cs_value { var v = cs_value(); v.type = CS_TYPE_INT; v.v.i = i; return v }
    static func value(_ x: Double) -> cs_value { var v = cs_value(); v.type = CS_TYPE_DOUBLE; v.v.d = x; return v }
    static func value(_ f: Float) -> cs_value { var v = cs_value(); v.type = CS_TYPE_FLOAT; v.v.f = f; return v }

    static func compare(_ a: cs_value, _ b: cs_value) -> Int {
        var x = a, y = b
        let c = cs_value_compare(&x, &y)
        return c < 0 ? -1 : (c > 0 ? 1 : 0)
    }
}

private let tenTo34Minus1 = String(repeating: "9", count: 34)

@Suite struct DecimalTests {
    // MARK: - Encoding

    @Test func knownBitPatterns() {
        // BID: biased exponent 6176 = 0x1820, shifted to bit 49 of the high word = 0x3040 << 48.
        #expect(Dec.bits(Dec.int(1)) == (1, 0x3040_0000_0000_0000))
        #expect(Dec.bits(Dec.int(0)) == (0, 0x3040_0000_0000_0000))
        #expect(Dec.bits(Dec.int(-1)) == (1, 0xB040_0000_0000_0000))
        #expect(Dec.bits(Dec.int(1234)) == (1234, 0x3040_0000_0000_0000))
        // Int64.min has no positive Int64 counterpart; its magnitude is 2^63.
        #expect(Dec.bits(Dec.int(Int64.min)) == (0x8000_0000_0000_0000, 0xB040_0000_0000_0000))
        #expect(Dec.format(Dec.int(Int64.min)) == "-9223372036854775808")
        #expect(Dec.format(Dec.int(Int64.max)) == "9223372036854775807")

        #expect(Dec.bits(Dec.d("1")) == (1, 0x3040_0000_0000_0000))
        #expect(Dec.bits(Dec.d("-1")) == (1, 0xB040_0000_0000_0000))
        #expect(Dec.bits(Dec.d("0")) == (0, 0x3040_0000_0000_0000))
        #expect(Dec.bits(Dec.d("-0")) == (0, 0xB040_0000_0000_0000))
        #expect(Dec.bits(Dec.d("NaN")) == (0, 0x7C00_0000_0000_0000))
        #expect(Dec.bits(Dec.d("Inf")) == (0, 0x7800_0000_0000_0000))
        #expect(Dec.bits(Dec.d("-Infinity")) == (0, 0xF800_0000_0000_0000))
        // 12.50 = 1250 x 10^-2: biased exponent 6174 = 0x181E -> 0x303C << 48.
        #expect(Dec.bits(Dec.d("12.50")) == (1250, 0x303C_0000_0000_0000))
        // 1E+3 keeps coefficient 1 and exponent 3 (0x1823 << 49 = 0x3046 << 48).
        #expect(Dec.bits(Dec.d("1E+3")) == (1, 0x3046_0000_0000_0000))
        // Largest finite: coefficient 10^34 - 1 = 0x1ED09BEAD87C0378D8E63FFFFFFFF, exponent 6111
        // (biased 12287 = 0x2FFF, << 49 = 0x5FFE << 48).
        #expect(Dec.bits(Dec.d("9.999999999999999999999999999999999E+6144")) ==
            (0x378D_8E63_FFFF_FFFF, 0x5FFF_ED09_BEAD_87C0))
        // Smallest positive: 1E-6176, biased exponent 0.
        #expect(Dec.bits(Dec.d("1E-6176")) == (1, 0))
    }

    @Test func nonCanonicalEncodingsReadAsZeroAndSignallingNaNAsNaN() {
        // Coefficient 10^34 (one above the maximum) at exponent 0: non-canonical, so zero.
        let big = cs_decimal128(w: (0x378D_8E64_0000_0000, 0x3041_ED09_BEAD_87C0))
        #expect(Dec.format(big) == "0")
        #expect(Dec.cmp(big, Dec.int(0)) == 0)
        // The large-coefficient form (bits 126-125 = 11) is always non-canonical: zero, with
        // its exponent in bits 124..111 (here biased 6176 -> 0x1820 << 47 = 0x0010 << 48).
        let large = cs_decimal128(w: (12345, 0x6000_0000_0000_0000 | (UInt64(6176) << 47)))
        #expect(Dec.format(large) == "0")
        #expect(!Dec.isNaN(large))
        let negLarge = cs_decimal128(w: (0, 0xE000_0000_0000_0000 | (UInt64(6178) << 47)))
        #expect(Dec.format(negLarge) == "-0E+2")
        // Signalling NaN (bit 121 set) and NaN with a payload are NaN.
        let snan = cs_decimal128(w: (0, 0x7E00_0000_0000_0000))
        #expect(Dec.isNaN(snan))
        #expect(Dec.format(snan) == "NaN")
        #expect(Dec.isNaN(cs_decimal128(w: (42, 0xFC00_0000_0000_0000))))
        #expect(!Dec.isNaN(Dec.d("Inf")))
        #expect(!Dec.isNaN(Dec.int(7)))
        // Arithmetic on them: 0 + 5 = 5 (exponent of the non-canonical zero is 0).
        #expect(Dec.format(Dec.add(big, Dec.int(5))) == "5")
        #expect(Dec.bits(Dec.add(snan, Dec.int(5))) == (0, 0x7C00_0000_0000_0000))
    }

    // MARK: - Text

    @Test func formatRoundTrips() {
        let canonical = [
            "12.50", "-0", "0", "0.00", "0E+3", "-0.00000", "0E-7", "1.5E+40", "0.0001", "1E-7", "0.000001",
            "1.23E-7", "123", "-123.456", "1E+3", "1.0E+3", "NaN", "Inf", "-Inf",
            "1.000000000000000000000000000000000E+34", "9.999999999999999999999999999999999E+6144",
            "1E-6176", "-1E-6176", "1.234567890123456789012345678901234E-6143",
            "0.3333333333333333333333333333333333", "9223372036854775807", "0E-6176", "0E+6111",
            "1.000000000000000000000000000000000E+6144", "123456789012345678901234567890.1234",
        ]
        for s in canonical {
            #expect(Dec.format(Dec.d(s)) == s, "round trip of \(s)")
        }
        // Other spellings print canonically.
        let spellings: [(String, String)] = [
            ("1e3", "1E+3"), ("+5", "5"), (".5", "0.5"), ("5.", "5"), ("-.5e-1", "-0.05"),
            ("Infinity", "Inf"), ("-infinity", "-Inf"), ("+INF", "Inf"), ("nan", "NaN"), ("NAN", "NaN"),
            ("0.1E1", "1"), ("100E-2", "1.00"), ("0.00001E+2", "0.001"), ("000123", "123"),
            ("0.0000001", "1E-7"), ("1000000E-12", "0.000001000000"), ("12E-9", "1.2E-8"),
            ("5E+0", "5"), ("5E-0", "5"), ("5e+000000000000000000003", "5E+3"),
        ]
        for (input, want) in spellings {
            #expect(Dec.format(Dec.d(input)) == want, "format(parse(\(input)))")
        }
    }

    @Test func parseRoundsBeyond34DigitsAndClampsTheExponent() {
        let one34 = "1" + String(repeating: "0", count: 33)
        // 10^34 + 5: the 35th digit is a tie; half to even keeps ...000.
        #expect(Dec.format(Dec.d(one34 + "5")) == "1.000000000000000000000000000000000E+34")
        // 10^34 + 15: ...01|5 rounds to the even ...02.
        #expect(Dec.format(Dec.d(String(one34.dropLast()) + "15")) == "1.000000000000000000000000000000002E+34")
        // 10^34 + 5.000...1: above the tie, rounds up.
        #expect(Dec.format(Dec.d(one34 + "5.0000000000001")) == "1.000000000000000000000000000000001E+34")
        // 35 nines: rounds up into a 35-digit number, so one more digit goes.
        #expect(Dec.format(Dec.d(String(repeating: "9", count: 35))) == "1.000000000000000000000000000000000E+35")
        // Leading zeros are not significant digits.
        #expect(Dec.format(Dec.d("0.000" + String(repeating: "1", count: 34))) ==
            "0.000" + String(repeating: "1", count: 34))
        // Exponent clamping: 1E+6144 fits as 10^33 x 10^6111; 1E+6145 does not.
        #expect(Dec.format(Dec.d("1E+6144")) == "1.000000000000000000000000000000000E+6144")
        #expect(Dec.format(Dec.d("1E+6145")) == "Inf")
        #expect(Dec.format(Dec.d("-1E+99999999999999999999")) == "-Inf")
        #expect(Dec.format(Dec.d("0E+99999")) == "0E+6111")
        // Below the subnormal exponent: 0.1, 0.5 (tie, to even 0) and 0.6 units of 1E-6176.
        #expect(Dec.format(Dec.d("1E-6177")) == "0E-6176")
        #expect(Dec.format(Dec.d("5E-6177")) == "0E-6176")
        #expect(Dec.format(Dec.d("6E-6177")) == "1E-6176")
        #expect(Dec.format(Dec.d("15E-6177")) == "2E-6176")
        #expect(Dec.format(Dec.d("-1E-99999999999")) == "-0E-6176")
    }

    @Test func parseHonoursTheLength() {
        let text = Array("12.5xyz".utf8).map { CChar(bitPattern: $0) }
        var out = cs_decimal128()
        #expect(cs_decimal_parse(text, 4, &out) == CS_OK)
        #expect(Dec.format(out) == "12.5")
        #expect(cs_decimal_parse(text, 5, &out) == CS_TYPE)
        // No terminating NUL is needed, and an embedded NUL is an error.
        let nul: [CChar] = [0x31, 0, 0x31]
        #expect(cs_decimal_parse(nul, 3, &out) == CS_TYPE)
    }

    @Test func parseErrorsAreTypeErrors() {
        let bad = [
            "", "+", "-", ".", "abc", "1.2.3", "1e", "1e+", "1E-", "--1", "+-1", " 1", "1 ", "1,5",
            "0x10", "NaNa", "Infin", "Infinityy", "e5", ".e5", "1e5.5", "1_000", "∞", "1e 5",
            "1..", "+.", "N", "-nan0", "12a", "١٢",
        ]
        for s in bad {
            var out = cs_decimal128(w: (0xDEAD, 0xBEEF))
            let bytes = Array(s.utf8).map { CChar(bitPattern: $0) }
            let rc = cs_decimal_parse(bytes, bytes.count, &out)
            #expect(rc == CS_TYPE, "parse(\"\(s)\") gave \(rc)")
            let msg = cs_errmsg().map { String(validatingCString: $0) ?? "?" } ?? ""
            #expect(!msg.isEmpty, "message for \"\(s)\"")
        }
    }

    @Test func formatReportsTheNeededLength() {
        var d = Dec.d("-12.50")
        var buf = [CChar](repeating: 0x7F, count: 16)
        // Too small (no room for the NUL): the length is returned and nothing is written.
        #expect(cs_decimal_format(&d, &buf, 6) == 6)
        #expect(buf.allSatisfy { $0 == 0x7F })
        #expect(cs_decimal_format(&d, nil, 0) == 6)
        #expect(cs_decimal_format(&d, &buf, 7) == 6)
        #expect(buf[6] == 0)
        #expect(String(decoding: buf[0..<6].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "-12.50")
        // The longest forms fit in 64 bytes.
        for s in ["-1.234567890123456789012345678901234E-6143", "-0.000001234567890123456789012345678901234"] {
            var x = Dec.d(s)
            #expect(cs_decimal_format(&x, nil, 0) == s.utf8.count)
            #expect(Dec.format(x) == s)
        }
    }

    // MARK: - Arithmetic vectors

    /// (a, op, b, expected text). Each expectation follows from decimal arithmetic by hand:
    /// the exact result, then rounded to 34 significant digits half to even, at the IEEE
    /// preferred exponent (the smaller exponent for + and -, the sum for *, the difference
    /// for / when exact).
    static let vectors: [(String, Character, String, String)] = [
        ("0.1", "+", "0.2", "0.3"),                  // exact in decimal, unlike binary
        ("1.00", "+", "2", "3.00"),                  // exponent of the sum is the smaller one
        ("1", "/", "3", "0." + String(repeating: "3", count: 34)),
        ("2", "/", "3", "0." + String(repeating: "6", count: 33) + "7"), // ...666|6 rounds up
        ("1", "/", "4", "0.25"),                     // exact: stops as soon as the remainder is 0
        ("1.00", "/", "2", "0.50"),                  // exact at the preferred exponent -2
        ("10", "/", "5", "2"),
        ("1E+2", "/", "1", "1E+2"),
        ("-7", "/", "-7", "1"),
        ("1", "/", "8", "0.125"),
        ("1", "/", "7", "0.1428571428571428571428571428571429"), // 142857 repeats; 34th digit 8|5.. up
        (tenTo34Minus1, "+", "1", "1.000000000000000000000000000000000E+34"),
        ("9.999999999999999999999999999999999E+6144", "*", "10", "Inf"),
        ("-9.999999999999999999999999999999999E+6144", "*", "10", "-Inf"),
        ("9.999999999999999999999999999999999E+6144", "+", "1E+6111", "Inf"),
        ("1E-6176", "/", "10", "0E-6176"),            // 0.1 of the smallest unit: underflows to 0
        ("1E-6176", "/", "2", "0E-6176"),             // 0.5: a tie, to the even 0
        ("3E-6176", "/", "2", "2E-6176"),             // 1.5: a tie, to the even 2
        ("1E-6176", "*", "0.6", "1E-6176"),           // 0.6 rounds up
        ("0", "/", "0", "NaN"),
        ("-1", "/", "0", "-Inf"),
        ("1", "/", "-0", "-Inf"),
        ("0", "/", "5", "0"),
        ("0.00", "/", "5", "0.00"),
        ("5", "/", "Inf", "0E-6176"),
        ("-5", "/", "Inf", "-0E-6176"),
        ("Inf", "/", "Inf", "NaN"),
        ("Inf", "/", "-2", "-Inf"),
        ("Inf", "-", "Inf", "NaN"),
        ("Inf", "+", "-Inf", "NaN"),
        ("Inf", "+", "Inf", "Inf"),
        ("Inf", "+", "-1E+6144", "Inf"),
        ("-Inf", "-", "5", "-Inf"),
        ("0", "*", "Inf", "NaN"),
        ("-2", "*", "Inf", "-Inf"),
        ("NaN", "+", "1", "NaN"),
        ("1", "*", "NaN", "NaN"),
        ("NaN", "/", "0", "NaN"),
        ("123.45", "*", "100", "12345.00"),
        ("1.5", "*", "1.5", "2.25"),
        ("-0.5", "*", "0.2", "-0.10"),
        ("-0", "*", "5", "-0"),
        ("1", "-", "1", "0"),                        // an exact zero sum is +0 ...
        ("-1", "+", "1", "0"),
        ("-0", "+", "-0", "-0"),                     // ... unless both are -0
        ("-0", "-", "0", "-0"),
        ("0", "-", "0", "0"),
        ("1.10", "-", "1.1", "0.00"),
        ("1E+34", "-", "0.5", "1.000000000000000000000000000000000E+34"), // ...999.5: tie, to even
        ("1E+34", "-", "1.5", "9999999999999999999999999999999998"),       // ...998.5: tie, to even
        ("1E+34", "-", "0.51", tenTo34Minus1),                              // ...999.49: down
        ("1", "-", "1E-100", "1.000000000000000000000000000000000"),        // 0.99..9 (100 nines)
        ("1", "+", "1E-100", "1.000000000000000000000000000000000"),
        ("1", "+", "5E-34", "1.000000000000000000000000000000000"),         // tie, even 0 stays
        ("1", "+", "5.000001E-34", "1.000000000000000000000000000000001"),  // just above the tie
        ("1", "+", "1.5E-33", "1.000000000000000000000000000000002"),       // ...001|5 to even
        ("1E+6111", "+", "1E-6176", "1.000000000000000000000000000000000E+6111"),
        ("-1E+6111", "+", "1E-6176", "-1.000000000000000000000000000000000E+6111"), // -0.99..9 rounds back
        // Just below 10^60 the last of 34 digits is worth 10^26; subtracting half of it (5E+25,
        // written with 34 digits so its exponent is far below) is a tie, to the even 10^60;
        // a hair more goes down to 34 nines; a hair less stays at 10^60.
        ("1E+60", "-", "5000000000000000000000000000000001E-8", "9.999999999999999999999999999999999E+59"),
        ("1E+60", "-", "5000000000000000000000000000000000E-8", "1.000000000000000000000000000000000E+60"),
        ("1E+60", "-", "4999999999999999999999999999999999E-8", "1.000000000000000000000000000000000E+60"),
        ("1000000000000000000000000000000001E+27", "+", "5000000000000000000000000000000000E-8",
         "1.000000000000000000000000000000001E+60"),
        ("1E+6111", "*", "1E-6176", "1E-65"),
        ("1E+6000", "*", "1E+144", "1.000000000000000000000000000000000E+6144"),  // folded down
        ("1E+6000", "*", "1E+145", "Inf"),
        (tenTo34Minus1, "*", tenTo34Minus1, "9.999999999999999999999999999999998E+67"),
        ("12345678901234567", "*", "98765432109876543", "1219326311370217861743636654061881"),
        ("1E-6000", "/", "1E+200", "0E-6176"),
        ("1E-6100", "/", "1E+50", "1E-6150"),
    ]

    @Test func arithmeticVectors() {
        for (a, op, b, want) in Self.vectors {
            let got = Dec.format(Dec.apply(op, Dec.d(a), Dec.d(b)))
            #expect(got == want, "\(a) \(op) \(b)")
        }
    }

    @Test func resultsAreCanonicalEncodings() {
        // NaN results carry no payload; infinities have an empty coefficient.
        #expect(Dec.bits(Dec.div(Dec.int(0), Dec.int(0))) == (0, 0x7C00_0000_0000_0000))
        #expect(Dec.bits(Dec.div(Dec.int(-1), Dec.int(0))) == (0, 0xF800_0000_0000_0000))
        #expect(Dec.bits(Dec.add(Dec.d("0.1"), Dec.d("0.2"))) == (3, 0x303E_0000_0000_0000))
        // 1/3: coefficient 3333...3 (34 digits) at exponent -34 (biased 6142 = 0x17FE -> 0x2FFC << 48).
        let third = Dec.div(Dec.int(1), Dec.int(3))
        #expect(third.w.1 >> 48 == 0x2FFC)
        #expect(Dec.same(third, Dec.d("3333333333333333333333333333333333E-34")))
    }

    @Test func subtractionIsAdditionOfTheNegation() {
        var rng = SeededRNG(seed: 17)
        for _ in 0..<500 {
            let a = Dec.d("\(Int64.random(in: -1_000_000...1_000_000, using: &rng))E\(Int.random(in: -40...40, using: &rng))")
            let b = Dec.d("\(Int64.random(in: -1_000_000...1_000_000, using: &rng))E\(Int.random(in: -40...40, using: &rng))")
            var nb = b
            nb.w.1 ^= 0x8000_0000_0000_0000
            #expect(Dec.same(Dec.sub(a, b), Dec.add(a, nb)))
            #expect(Dec.same(Dec.add(a, b), Dec.add(b, a)))
            #expect(Dec.same(Dec.mul(a, b), Dec.mul(b, a)))
        }
    }

    // MARK: - Properties against an integer model

    /// The decimal with coefficient `c` (any size that parses exactly, at most 34 digits) and
    /// exponent `e`, built from text so the model never touches the code under test's arithmetic.
    private static func exact(_ c: Int, _ e: Int) -> cs_decimal128 { Dec.d("\(c)E\(e)") }

    @Test func twoDecimalValuesAddSubtractMultiplyExactly() {
        var rng = SeededRNG(seed: 0xDEC1)
        for _ in 0..<3000 {
            // a/100 and b/100, plus an integer i: scaled Int arithmetic gives the exact answers
            let a = Int.random(in: -10_000_000...10_000_000, using: &rng)
            let b = Int.random(in: -10_000_000...10_000_000, using: &rng)
            let i = Int.random(in: -100_000...100_000, using: &rng)
            let da = Dec.d(Self.cents(a)), db = Dec.d(Self.cents(b)), di = Dec.int(Int64(i))
            #expect(Dec.format(da) == Self.cents(a))
            #expect(Dec.same(Dec.add(da, db), Self.exact(a + b, -2)), "\(a) + \(b) cents")
            #expect(Dec.same(Dec.sub(da, db), Self.exact(a - b, -2)), "\(a) - \(b) cents")
            #expect(Dec.same(Dec.mul(da, db), Self.exact(a * b, -4)), "\(a) * \(b) cents")
            #expect(Dec.same(Dec.add(da, di), Self.exact(a + 100 * i, -2)))
            #expect(Dec.same(Dec.mul(da, di), Self.exact(a * i, -2)))
            #expect(Dec.cmp(da, db) == Int32((a > b ? 1 : 0) - (a < b ? 1 : 0)))
            // Integer division where it is exact keeps the preferred exponent 0 - 0.
            if i != 0 {
                let prod = Dec.int(Int64(i) * Int64(b))
                #expect(Dec.same(Dec.div(prod, di), Dec.int(Int64(b))))
            }
            // Exact zero sums are +0 at the smaller exponent.
            #expect(Dec.bits(Dec.sub(da, da)) == (0, 0x303C_0000_0000_0000))
        }
    }

    /// a/100 as plain text: "-12.05".
    private static func cents(_ a: Int) -> String {
        let m = a.magnitude
        let frac = m % 100
        return (a < 0 ? "-" : "") + "\(m / 100)." + (frac < 10 ? "0" : "") + "\(frac)"
    }

    /// The correctly rounded quotient n / d of two Ints, by schoolbook long division on
    /// decimal digits: (coefficient digits, exponent).
    private static func modelQuotient(_ n: Int, _ d: Int) -> (digits: [Int], exp: Int, negative: Bool) {
        let negative = (n < 0) != (d < 0)
        let num = n.magnitude, den = d.magnitude
        var digits = String(num / den).compactMap { $0.wholeNumberValue }
        if digits == [0] { digits = [] }
        var r = num % den
        var exp = 0
        while r != 0 && digits.count < 35 {
            r *= 10
            let q = Int(r / den)
            r %= den
            exp -= 1
            if digits.isEmpty && q == 0 { continue } // leading zero: not significant
            digits.append(q)
        }
        if digits.isEmpty { digits = [0] }
        if digits.count > 34 {
            // round the 35th digit away, half to even, with the remainder as sticky
            let rd = digits.removeLast()
            exp += 1
            let up = rd > 5 || (rd == 5 && (r != 0 || digits.last! % 2 == 1))
            if up {
                var k = digits.count - 1
                while k >= 0 && digits[k] == 9 { digits[k] = 0; k -= 1 }
                if k >= 0 { digits[k] += 1 } else { digits.insert(1, at: 0); digits.removeLast(); exp += 1 }
            }
        }
        return (digits, exp, negative)
    }

    @Test func divisionMatchesLongDivision() {
        var rng = SeededRNG(seed: 0xD1)
        for round in 0..<3000 {
            let n = Int.random(in: -1_000_000_000...1_000_000_000, using: &rng)
            var d = Int.random(in: -1_000_000...1_000_000, using: &rng)
            if round % 5 == 0 { d = Int.random(in: 1...12, using: &rng) } // 1/3, 1/7, ... style
            if d == 0 { d = 7 }
            let m = Self.modelQuotient(n, d)
            let text = (m.negative ? "-" : "") + m.digits.map(String.init).joined() + "E\(m.exp)"
            let got = Dec.div(Dec.int(Int64(n)), Dec.int(Int64(d)))
            #expect(Dec.same(got, Dec.d(text)), "\(n) / \(d): got \(Dec.format(got)), model \(text)")
        }
    }

    @Test func integersFromIntAgreeWithText() {
        var rng = SeededRNG(seed: 99)
        for _ in 0..<2000 {
            let v = Int64.random(in: Int64.min...Int64.max, using: &rng)
            #expect(Dec.format(Dec.int(v)) == String(v))
            #expect(Dec.same(Dec.int(v), Dec.d(String(v))))
        }
    }

    // MARK: - Comparison

    @Test func decimalComparison() {
        #expect(Dec.cmp(Dec.d("1.50"), Dec.d("1.5")) == 0)
        #expect(Dec.cmp(Dec.d("1.0"), Dec.d("1.00")) == 0)
        #expect(Dec.cmp(Dec.d("1E+3"), Dec.d("1000.000")) == 0)
        #expect(Dec.cmp(Dec.d("-0"), Dec.d("0")) == 0)
        #expect(Dec.cmp(Dec.d("0E+6111"), Dec.d("-0E-6176")) == 0)
        #expect(Dec.cmp(Dec.d("NaN"), Dec.d("NaN")) == 0)
        #expect(Dec.cmp(Dec.d("NaN"), Dec.d("-NaN")) == 0)
        // Ascending; each compares below every later one.
        let ascending = [
            "NaN", "-Inf", "-9.999999999999999999999999999999999E+6144", "-1E+100", "-1000.01",
            "-1000.001", "-1", "-0.5", "-1E-6176", "0", "1E-6176", "2E-6176", "1E-100",
            "0.09999999999999999999999999999999999", "0.1", "0.1000000000000000000000000000000001",
            "1", "1.000000000000000000000000000000001", "1.01", "9999999999999999999999999999999999",
            "1.000000000000000000000000000000000E+34", "1.000000000000000000000000000000001E+34",
            "1E+6144", "9.999999999999999999999999999999999E+6144", "Inf",
        ]
        for (i, s) in ascending.enumerated() {
            for (j, t) in ascending.enumerated() {
                let want: Int32 = i < j ? -1 : (i > j ? 1 : 0)
                #expect(Dec.cmp(Dec.d(s), Dec.d(t)) == want, "compare(\(s), \(t))")
            }
        }
    }

    @Test func valueCompareAcrossNumericTypes() {
        let three = [Dec.value(Dec.int(3)), Dec.value(Dec.d("3.000")), Dec.value(Dec.d("0.3E+1")),
                     Dec.value(Int64(3)), Dec.value(3.0), Dec.value(Float(3.0))]
        for a in three {
            for b in three { #expect(Dec.compare(a, b) == 0) }
        }
        // Decimal 0.1 against double 0.1: the double is exactly
        // 0.1000000000000000055511151231257827021181583404541015625, so the decimal 0.1 is
        // smaller; decimals just below and above that expansion at 34 digits bracket it, and no
        // decimal128 equals it (it has 55 significant digits).
        #expect(Dec.compare(Dec.value(Dec.d("0.1")), Dec.value(0.1)) == -1)
        #expect(Dec.compare(Dec.value(0.1), Dec.value(Dec.d("0.1"))) == 1)
        #expect(Dec.compare(Dec.value(Dec.d("0.1000000000000000055511151231257827")), Dec.value(0.1)) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("0.1000000000000000055511151231257828")), Dec.value(0.1)) == 1)
        // The decimal made from the double (shortest round trip) is "0.1", below the double.
        #expect(Dec.format(cs_decimal_from_double(0.1)) == "0.1")
        #expect(Dec.compare(Dec.value(cs_decimal_from_double(0.1)), Dec.value(0.1)) == -1)
        // Float 0.1 is exactly 0.100000001490116119384765625 (27 digits): equal to that decimal.
        #expect(Dec.compare(Dec.value(Dec.d("0.100000001490116119384765625")), Dec.value(Float(0.1))) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("0.1000000014901161193847656251")), Dec.value(Float(0.1))) == 1)
        // Beyond 2^53 doubles are sparse: decimal 2^53 + 1 is above the double 2^53.
        #expect(Dec.compare(Dec.value(Dec.d("9007199254740993")), Dec.value(9_007_199_254_740_992.0)) == 1)
        #expect(Dec.compare(Dec.value(Dec.d("9007199254740992")), Dec.value(9_007_199_254_740_992.0)) == 0)
        // Int64 extremes, exactly.
        #expect(Dec.compare(Dec.value(Dec.d("9223372036854775807")), Dec.value(Int64.max)) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("9223372036854775806.9999999999")), Dec.value(Int64.max)) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("9223372036854775808")), Dec.value(Int64.max)) == 1)
        #expect(Dec.compare(Dec.value(Int64.min), Dec.value(Dec.d("-9223372036854775808.000"))) == 0)
        #expect(Dec.compare(Dec.value(Int64.min), Dec.value(Dec.d("-9223372036854775807.5"))) == -1)
        // Beyond the double range and below the smallest subnormal.
        #expect(Dec.compare(Dec.value(Dec.d("1E+6144")), Dec.value(Double.greatestFiniteMagnitude)) == 1)
        #expect(Dec.compare(Dec.value(Dec.d("1.7976931348623157E+308")), Dec.value(Double.greatestFiniteMagnitude)) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("1E-6176")), Dec.value(0.0)) == 1)
        #expect(Dec.compare(Dec.value(Dec.d("-1E-6176")), Dec.value(-0.0)) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("1E-6176")), Dec.value(Double.leastNonzeroMagnitude)) == -1)
        // The smallest subnormal is 4.9406564584124654417656879286822137...E-324.
        #expect(Dec.compare(Dec.value(Dec.d("4.9406564584124654E-324")), Dec.value(Double.leastNonzeroMagnitude)) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("4.9406564584124655E-324")), Dec.value(Double.leastNonzeroMagnitude)) == 1)
        // Zeros, infinities and NaN.
        #expect(Dec.compare(Dec.value(Dec.d("-0.00")), Dec.value(Int64(0))) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("0E+300")), Dec.value(-0.0)) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("Inf")), Dec.value(Double.infinity)) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("-Inf")), Dec.value(-Double.infinity)) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("-Inf")), Dec.value(Int64.min)) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("9.999999999999999999999999999999999E+6144")), Dec.value(Double.infinity)) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("NaN")), Dec.value(Double.nan)) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("NaN")), Dec.value(Float.nan)) == 0)
        #expect(Dec.compare(Dec.value(Dec.d("NaN")), Dec.value(-Double.infinity)) == -1)
        #expect(Dec.compare(Dec.value(Double.nan), Dec.value(Dec.d("-Inf"))) == -1)
        #expect(Dec.compare(Dec.value(Dec.d("NaN")), Dec.value(Int64.min)) == -1)
        #expect(Dec.compare(Dec.value(Int64.min), Dec.value(Dec.d("NaN"))) == 1)
    }

    @Test func valueCompareAgainstExactBinaryFractions() {
        // k/1024 is exact both as a double and as a decimal (k x 9765625 x 10^-10), so the
        // two compare equal; nudging the decimal's last digit moves it to either side.
        var rng = SeededRNG(seed: 0xB1)
        for _ in 0..<2000 {
            let k = Int.random(in: -1_000_000_000...1_000_000_000, using: &rng)
            let x = Double(k) / 1024
            let c = k * 9_765_625
            let dec = Dec.d("\(c)E-10")
            #expect(Dec.compare(Dec.value(dec), Dec.value(x)) == 0, "\(c)E-10 vs \(x)")
            #expect(Dec.compare(Dec.value(x), Dec.value(dec)) == 0)
            #expect(Dec.compare(Dec.value(Dec.d("\(c * 10 + 1)E-11")), Dec.value(x)) == 1)
            #expect(Dec.compare(Dec.value(Dec.d("\(c * 10 - 1)E-11")), Dec.value(x)) == -1)
            // and against ints: c x 10^-10 vs floor(k / 1024)
            let fl = Int64((Double(k) / 1024).rounded(.down))
            let want = (Double(k) / 1024) == Double(fl) ? 0 : 1
            #expect(Dec.compare(Dec.value(dec), Dec.value(fl)) == want)
            #expect(Dec.compare(Dec.value(fl), Dec.value(dec)) == -want)
        }
    }

    // MARK: - Doubles

    @Test func doubleConversions() {
        let cases: [(Double, String)] = [
            (0.1, "0.1"), (3.0, "3"), (100.0, "100"), (-2.5, "-2.5"), (1e20, "1E+20"),
            (1e16, "10000000000000000"), (123.456, "123.456"), (-0.0, "-0"), (0.0, "0"),
            (Double.greatestFiniteMagnitude, "1.7976931348623157E+308"),
            (Double.leastNonzeroMagnitude, "5E-324"), (1.0 / 3.0, "0.3333333333333333"),
            (.infinity, "Inf"), (-.infinity, "-Inf"), (.nan, "NaN"),
        ]
        for (x, want) in cases {
            #expect(Dec.format(cs_decimal_from_double(x)) == want, "from_double(\(x))")
        }
        #expect(Dec.toDouble(Dec.d("0.1")) == 0.1)
        #expect(Dec.toDouble(Dec.d("12.50")) == 12.5)
        #expect(Dec.toDouble(Dec.d("-0")).sign == .minus)
        #expect(Dec.toDouble(Dec.d("1E+400")) == .infinity)
        #expect(Dec.toDouble(Dec.d("-1E+400")) == -.infinity)
        #expect(Dec.toDouble(Dec.d("1E-400")) == 0)
        #expect(Dec.toDouble(Dec.d("Inf")) == .infinity)
        #expect(Dec.toDouble(Dec.d("NaN")).isNaN)
        // to_double rounds correctly: 2^53 + 1 is a tie between 2^53 and 2^53 + 2, to even.
        #expect(Dec.toDouble(Dec.d("9007199254740993")) == 9_007_199_254_740_992.0)
        #expect(Dec.toDouble(Dec.d("9007199254740993.000000000000001")) == 9_007_199_254_740_994.0)
        // Random doubles survive double -> decimal -> double, and the decimal is the text Swift
        // prints (Swift's description is also the shortest round-tripping form).
        var rng = SeededRNG(seed: 0xF10A7)
        for _ in 0..<3000 {
            let x = Double(bitPattern: rng.next())
            guard x.isFinite else { continue }
            let d = cs_decimal_from_double(x)
            #expect(Dec.toDouble(d) == x, "round trip of \(x)")
            #expect(Dec.cmp(d, Dec.d(x.description)) == 0, "from_double(\(x)) = \(Dec.format(d))")
        }
    }
}
