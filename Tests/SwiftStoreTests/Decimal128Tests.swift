// Decimal128: parsing and printing, exact decimal arithmetic, comparison (NaN included),
// limits, hashing of equal values, literals, conversions and Codable.
import CStore
import Foundation
import Testing
@testable import SwiftStore

@Suite struct Decimal128Tests {
    /// Parses or records a failure (the tests' inputs are all valid).
    static func d(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Decimal128 {
        do {
            return try Decimal128(string: text)
        } catch {
            Issue.record("\(text) did not parse: \(error)", sourceLocation: sourceLocation)
            return Decimal128()
        }
    }

    static func sameBits(_ a: Decimal128, _ b: Decimal128) -> Bool {
        a.cValue.w.0 == b.cValue.w.0 && a.cValue.w.1 == b.cValue.w.1
    }

    // MARK: Text

    // RealmSwift's text (its core's Decimal128::to_string): the coefficient's digits with the
    // point moved left while more than one digit is before it and the exponent is not 0, then
    // "E" and the exponent without a plus sign when it is not 0; a coefficient of more than 64
    // bits as sign, all digits, "E" and a signed exponent.
    @Test(arguments: [
        ("12.50", "12.50"),
        ("150", "150"),
        ("1.5E2", "1.5E2"),
        ("0.25", "2.5E-1"),
        ("11.111110", "11.111110"),
        ("-1.0", "-1.0"),
        ("-0.05", "-5E-2"),
        ("1E+3", "1E3"),
        ("1e3", "1E3"),
        ("1000", "1000"),
        ("-0", "-0"),
        ("0", "0"),
        ("0.00", "0E-2"),
        ("+7", "7"),
        ("-12.345", "-12.345"),
        (".5", "5E-1"),
        ("0.001", "1E-3"),
        ("0.0000001", "1E-7"),
        ("1.5e-9", "1.5E-9"),
        ("1.5E+40", "1.5E40"),
        ("NaN", "NaN"),
        ("nan", "NaN"),
        ("-NaN", "-NaN"),
        ("Inf", "Inf"),
        ("inf", "Inf"),
        ("Infinity", "Inf"),
        ("-Infinity", "-Inf"),
        ("1E+6145", "Inf"),
        ("9999999999999999999999999999999999", "+9999999999999999999999999999999999E+0"),
        // 35 digits: the last is dropped, rounding half to even
        ("12345678901234567890123456789012345", "+1234567890123456789012345678901234E+1"),
        ("12345678901234567890123456789012355", "+1234567890123456789012345678901236E+1"),
    ])
    func parsesAndFormats(input: String, expected: String) throws {
        let value = try Decimal128(string: input)
        #expect(value.stringValue == expected)
        #expect(value.description == expected)
        // what it prints reads back to the same bits
        #expect(Self.sameBits(try Decimal128(string: value.stringValue), value))
    }

    @Test(arguments: [
        ("", "invalid Decimal128 string \"\": not a decimal: no digits"),
        ("abc", "invalid Decimal128 string \"abc\": not a decimal: unexpected character at offset 0"),
        ("1.2.3", "invalid Decimal128 string \"1.2.3\": not a decimal: second '.' at offset 3"),
        ("1e", "invalid Decimal128 string \"1e\": not a decimal: exponent without digits"),
        (" 1", "invalid Decimal128 string \" 1\": not a decimal: unexpected character at offset 0"),
        ("1,5", "invalid Decimal128 string \"1,5\": not a decimal: unexpected character at offset 1"),
        ("12abc", "invalid Decimal128 string \"12abc\": not a decimal: unexpected character at offset 2"),
    ])
    func invalidStringsThrow(input: String, message: String) {
        #expect(throws: SwiftStoreValueError(message: message)) {
            try Decimal128(string: input)
        }
    }

    @Test func invalidLiteralStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            let bad: Decimal128 = "twelve"
            _ = bad
        }
    }

    @Test func unsupportedValueTypeStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            _ = Decimal128(value: Date())
        }
    }

    // MARK: Arithmetic

    @Test func decimalFractionsAreExact() {
        let sum = Self.d("0.1") + Self.d("0.2")
        #expect(sum == Self.d("0.3"))
        #expect(sum.stringValue == "3E-1")
        #expect(Self.sameBits(sum, Self.d("0.3")))
        // from float literals too: 0.1 is read as the decimal 0.1
        let fromLiterals: Decimal128 = 0.1 + 0.2
        #expect(fromLiterals == 0.3)
        #expect(fromLiterals.stringValue == "3E-1")
        // unlike Double
        #expect(0.1 + 0.2 != 0.3 as Double)
    }

    @Test func operatorsGiveExactResults() {
        #expect((Self.d("1.00") + 2).stringValue == "3.00")
        #expect((Self.d("12.50") * 3).stringValue == "37.50")
        #expect((Self.d("10") - Self.d("0.01")).stringValue == "9.99")
        #expect((Self.d("1.00") / 2).stringValue == "5.0E-1")
        #expect((Decimal128(1) / 3).stringValue == "+3333333333333333333333333333333333E-34")
        #expect((Decimal128(2) / 3).stringValue == "+6666666666666666666666666666666667E-34")
        #expect((Self.d("1.1") * Self.d("1.1")).stringValue == "1.21")
        #expect((Self.d("-2.5") * Self.d("4")).stringValue == "-10.0")

        var x: Decimal128 = 10
        x += Self.d("0.5")
        #expect(x.stringValue == "10.5")
        x -= 3
        #expect(x.stringValue == "7.5")
        x *= 2
        #expect(x.stringValue == "15.0")
        x /= 4
        #expect(x.stringValue == "3.75")
    }

    @Test func signAndMagnitudeAreExact() {
        #expect((-Self.d("1.50")).stringValue == "-1.50")
        #expect((-Self.d("-1.50")).stringValue == "1.50")
        #expect((-Decimal128()).stringValue == "-0")
        #expect((-Self.d("Inf")).stringValue == "-Inf")
        #expect(Self.d("-2.50").magnitude.stringValue == "2.50")
        #expect(Self.d("2.50").magnitude.stringValue == "2.50")
        #expect(Self.d("-Inf").magnitude.stringValue == "Inf")
        #expect(Self.d("NaN").magnitude.isNaN)
        let y = Self.d("4.25")
        y.negate()
        #expect(y.stringValue == "-4.25")
    }

    @Test func specialResults() {
        let zero: Decimal128 = 0
        #expect((Decimal128(1) / zero).stringValue == "Inf")
        #expect((Decimal128(-1) / zero).stringValue == "-Inf")
        #expect((zero / zero).isNaN)
        #expect((Self.d("Inf") - Self.d("Inf")).isNaN)
        #expect((zero * Self.d("Inf")).isNaN)
        #expect((Decimal128.max * 10).stringValue == "Inf")
        #expect((Decimal128.max + Decimal128.max).stringValue == "Inf")
        #expect((Decimal128.min - Decimal128.max).stringValue == "-Inf")
        #expect((Self.d("NaN") + 1).isNaN)
    }

    @Test func strideHelpers() {
        #expect(Self.d("1.5").distance(to: Self.d("4")).stringValue == "2.5")
        #expect(Self.d("1.5").advanced(by: Self.d("-0.25")).stringValue == "1.25")
    }

    // MARK: Comparison and hashing

    @Test func comparesNumerically() {
        #expect(Self.d("1.0") == Self.d("1.00"))
        #expect(Self.d("100") == Self.d("1E+2"))
        #expect(Self.d("-0") == Self.d("0"))
        #expect(Self.d("1") < Self.d("2"))
        #expect(Self.d("-1.5") < Self.d("-1.25"))
        #expect(Self.d("0.999") < Self.d("1"))
        #expect(Self.d("1E+3") > Self.d("999.9"))
        #expect(Self.d("-Inf") < Decimal128.min)
        #expect(Decimal128.max < Self.d("Inf"))
        #expect(Self.d("1.00") <= Self.d("1"))
        #expect(Self.d("1.00") >= Self.d("1"))
        #expect(Self.d("1.5") != Self.d("1.50001"))
    }

    @Test func nanEqualsNaNAndSortsFirst() {
        let nan = Self.d("NaN")
        #expect(nan == Self.d("nan"))
        #expect(nan != 0)
        #expect(nan < Self.d("-Inf"))
        #expect(nan < Decimal128.min)
        #expect(nan < 0)
        #expect(!(Decimal128(0) < nan))
        #expect(!(nan < nan))
        #expect(nan <= nan)
        let values = [Decimal128(1), nan, Self.d("-Inf"), 0, Self.d("-2.5"), Self.d("Inf")]
        #expect(values.sorted().map(\.stringValue) == ["NaN", "-Inf", "-2.5", "0", "1", "Inf"])
        #expect(nan.isNaN && nan.isSignaling && nan.isSignalingNaN)
        #expect(!Decimal128(1).isNaN && !Decimal128(1).isSignaling)
        #expect(!Self.d("Inf").isNaN)
    }

    @Test func equalValuesHashEqually() {
        let groups: [[Decimal128]] = [
            [Self.d("1"), Self.d("1.0"), Self.d("1.00"), Self.d("10E-1"), Self.d("0.1E+1"), 1, 1.0],
            [Self.d("0"), Self.d("-0"), Self.d("0.000"), Self.d("0E+10"), Self.d("-0E-5"), Decimal128()],
            [Self.d("NaN"), Self.d("-nan"), Decimal128(0) / 0],
            [Self.d("1200"), Self.d("1.2E+3"), Self.d("12E+2"), Self.d("1200.000")],
            [Self.d("-0.5"), Self.d("-0.50"), Self.d("-5E-1")],
            [Self.d("Inf"), Decimal128(1) / 0],
            [Self.d("-Inf"), Decimal128(-1) / 0],
        ]
        for group in groups {
            for value in group {
                #expect(value == group[0], "\(value) == \(group[0])")
                #expect(value.hashValue == group[0].hashValue, "\(value) hashes as \(group[0])")
            }
        }
        // one entry per group in a set
        #expect(Set(groups.flatMap { $0 }).count == groups.count)
        #expect(Set([Self.d("1.0"), Self.d("1.00")]).count == 1)
        #expect(Self.d("1.0").hashValue == Self.d("1.00").hashValue)
    }

    @Test func nonCanonicalEncodingsHashAsTheValueTheyCompareAs() {
        // a coefficient above 10^34 - 1 counts as zero (as in the core's decimal.c)
        let oversized = Decimal128(cs_decimal128(w: (UInt64.max, 0x3040_0000_0000_0000 | 0x1_FFFF_FFFF_FFFF)))
        #expect(oversized == 0)
        #expect(oversized.hashValue == Decimal128(0).hashValue)
        // the large-coefficient form counts as zero too
        let large = Decimal128(cs_decimal128(w: (12345, 0x6000_0000_0000_0000 | (UInt64(6176) << 47))))
        #expect(large == 0)
        #expect(large.hashValue == Decimal128(0).hashValue)
        // a NaN with a payload and the signaling bit is still NaN
        let signaling = Decimal128(cs_decimal128(w: (42, 0xFE00_0000_0000_0000)))
        #expect(signaling.isNaN)
        #expect(signaling == Self.d("NaN"))
        #expect(signaling.hashValue == Self.d("NaN").hashValue)
    }

    // MARK: Limits

    @Test func minAndMaxAreTheLargestFiniteDecimals() {
        #expect(Decimal128.max.stringValue == "+9999999999999999999999999999999999E+6111")
        #expect(Decimal128.min.stringValue == "-9999999999999999999999999999999999E+6111")
        #expect(Decimal128.min == -Decimal128.max)
        #expect(Decimal128.max.cValue.w.1 == 0x5FFF_ED09_BEAD_87C0)
        #expect(Decimal128.max.cValue.w.0 == 0x378D_8E63_FFFF_FFFF)
        #expect(Decimal128.max > Self.d("9.999999999999999999999999999999998E+6144"))
        #expect(Decimal128.max.doubleValue == .infinity)
        #expect(!Decimal128.max.isNaN)
    }

    // MARK: Literals and conversions

    @Test func literals() {
        let int: Decimal128 = 42
        let negative: Decimal128 = -7
        let float: Decimal128 = 0.1
        let trailing: Decimal128 = 2.50
        let string: Decimal128 = "2.50"
        let big: Decimal128 = "123456789012345678901234567890.1234"
        #expect(int.stringValue == "42")
        #expect(negative.stringValue == "-7")
        #expect(float.stringValue == "1E-1")
        #expect(trailing.stringValue == "2.5")
        #expect(string.stringValue == "2.50")
        #expect(big.stringValue == "+1234567890123456789012345678901234E-4")
        #expect(Decimal128(integerLiteral: .min).stringValue == "-9223372036854775808")
        #expect(Decimal128().stringValue == "0")
        #expect(Decimal128.zero == 0)
    }

    @Test func exactlyFromIntegers() {
        #expect(Decimal128(exactly: UInt64.max)?.stringValue == "18446744073709551615")
        #expect(Decimal128(exactly: Int8(-5))?.stringValue == "-5")
        #expect(Decimal128(exactly: Int64.min)?.stringValue == "-9223372036854775808")
        let tenTo35 = UInt128(10_000_000_000_000_000_000) * UInt128(10_000_000_000_000_000)
        #expect(Decimal128(exactly: tenTo35)?.stringValue == "+1000000000000000000000000000000000E+2")
        let thirtyFourNines: Int128 = -9_999_999_999_999_999_999_999_999_999_999_999
        #expect(Decimal128(exactly: thirtyFourNines)?.stringValue == "-9999999999999999999999999999999999E+0")
        #expect(Decimal128(exactly: UInt128.max) == nil)
        #expect(Decimal128(exactly: Int128.min) == nil)
    }

    @Test func fromAnyValue() {
        #expect(Decimal128(value: 5).stringValue == "5")
        #expect(Decimal128(value: "12.50").stringValue == "12.50")
        #expect(Decimal128(value: "x12.50y".dropFirst().dropLast()).stringValue == "12.50")
        #expect(Decimal128(value: 0.25).stringValue == "2.5E-1")
        #expect(Decimal128(value: Float(0.1)).stringValue == "1E-1")
        #expect(Decimal128(value: Double.nan).isNaN)
        #expect(Decimal128(value: UInt64.max).stringValue == "18446744073709551615")
        #expect(Decimal128(value: Int16(-300)).stringValue == "-300")
        #expect(Decimal128(value: UInt128.max).stringValue == "+3402823669209384634633746074317682E+5")
        #expect(Decimal128(value: Self.d("1.50")).stringValue == "1.50")
        #expect(Decimal128(value: Decimal(string: "1.25")!).stringValue == "1.25")
        #expect(Decimal128(value: NSNumber(value: 3.5)).stringValue == "3.5")
        #expect(Decimal128(value: NSNumber(value: UInt64.max)).stringValue == "18446744073709551615")
    }

    @Test func fromNSNumber() {
        #expect(Decimal128(number: NSNumber(value: 1.5 as Float)).stringValue == "1.5")
        #expect(Decimal128(number: NSNumber(value: 0.1 as Float)).stringValue == "1E-1")
        #expect(Decimal128(number: NSNumber(value: 0.1)).stringValue == "1E-1")
        #expect(Decimal128(number: NSNumber(value: -42)).stringValue == "-42")
        #expect(Decimal128(number: NSNumber(value: Int64.max)).stringValue == "9223372036854775807")
        #expect(Decimal128(number: NSNumber(value: UInt64.max)).stringValue == "18446744073709551615")
        #expect(Decimal128(number: NSNumber(value: true)).stringValue == "1")
        #expect(Decimal128(number: NSDecimalNumber(string: "12.345")).stringValue == "12.345")
    }

    @Test func toDoubleAndDecimal() {
        #expect(Self.d("0.1").doubleValue == 0.1)
        #expect(Self.d("12.50").doubleValue == 12.5)
        #expect(Self.d("-1E+3").doubleValue == -1000)
        #expect(Self.d("NaN").doubleValue.isNaN)
        #expect(Self.d("-Inf").doubleValue == -.infinity)
        #expect(Self.d("12.50").decimalValue == Decimal(string: "12.5"))
        #expect(Self.d("-1E-3").decimalValue == Decimal(string: "-0.001"))
        #expect(Self.d("NaN").decimalValue.isNaN)
        #expect(Self.d("Inf").decimalValue.isNaN)
    }

    // MARK: Codable

    @Test func jsonRoundTrip() throws {
        struct Price: Codable, Equatable {
            var amount: Decimal128
            var history: [Decimal128]
        }
        let price = Price(amount: Self.d("12.50"), history: [Self.d("NaN"), Self.d("-Inf"), Self.d("1E+3")])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(price)
        #expect(String(decoding: data, as: UTF8.self) == #"{"amount":"12.50","history":["NaN","-Inf","1E3"]}"#)
        let back = try JSONDecoder().decode(Price.self, from: data)
        #expect(back == price)
        #expect(back.amount.stringValue == "12.50")
        #expect(back.history.map(\.stringValue) == ["NaN", "-Inf", "1E3"])
    }

    @Test func decodesNumbers() throws {
        let data = Data(#"["12.50", 3, -7, 0.25, 9223372036854775807, 1e300]"#.utf8)
        let values = try JSONDecoder().decode([Decimal128].self, from: data)
        #expect(values.map(\.stringValue) == ["12.50", "3", "-7", "2.5E-1", "9223372036854775807", "1E300"])
    }

    @Test func decodingRejectsBadValues() {
        let error = #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Decimal128].self, from: Data(#"["abc"]"#.utf8))
        }
        if case .dataCorrupted(let context) = error {
            #expect(context.debugDescription
                == "invalid Decimal128 string \"abc\": not a decimal: unexpected character at offset 0")
            #expect(context.underlyingError is SwiftStoreValueError)
        } else {
            Issue.record("expected dataCorrupted, got \(String(describing: error))")
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Decimal128].self, from: Data("[true]".utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Decimal128].self, from: Data("[null]".utf8))
        }
    }
}
