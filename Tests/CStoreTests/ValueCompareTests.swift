// cs_value_compare: the total order (docs/ARCHITECTURE.md, Values and their order) that sets and sorting use.

import CStore
import Foundation
import Testing

@Suite struct ValueCompareTests {
    /// Groups of values in ascending order; values within a group compare equal.
    static let ranked: [[Val]] = [
        [.null],
        [.bool(false)],
        [.bool(true)],
        [.double(.nan), .float(.nan)],
        [.double(-.infinity), .float(-.infinity)],
        [.int(Int64.min)],
        [.int(-1234)],
        [.double(-123.5), .float(-123.5), .decimal(1235, 0xB03E_0000_0000_0000)], // -123.5
        [.decimal(12346, 0xB03C_0000_0000_0000)],                  // -123.46
        [.decimal(12345, 0xB03C_0000_0000_0000)],                  // -123.45
        [.int(-123)],
        [.double(-0.5), .float(-0.5)],
        [.int(0), .double(0), .double(-0.0), .float(0), .decimal(0, 0x3040_0000_0000_0000)],
        [.double(0.5), .float(0.5)],
        [.int(1), .double(1), .float(1), .decimal(1, 0x3040_0000_0000_0000), .decimal(10, 0x303E_0000_0000_0000)],
        [.double(1.5)],
        [.int(2)],
        [.double(9_007_199_254_740_992)],  // 2^53
        [.int(9_007_199_254_740_993)],     // 2^53 + 1: larger than the double above, exactly
        [.int(Int64.max)],
        [.double(9_223_372_036_854_775_808)], // 2^63: larger than Int64.max
        [.double(.infinity), .float(.infinity)],
        [.str("")],
        [.string([0])],
        [.str("B")],
        [.str("a")],
        [.string([0x61, 0])],
        [.str("ab")],
        [.str("z")],
        [.str("é")],          // C3 A9: after every ASCII byte
        [.str("\u{FFFD}")],   // EF BF BD
        [.str("🙂")],          // F0 9F 99 82: byte order, not UTF-16 order
        [.binary([])],
        [.binary([0])],
        [.binary([1])],
        [.binary([1, 0])],
        [.binary([2])],
        [.timestamp(Int64.min / 2, 0)],
        [.timestamp(-2, 0)],
        [.timestamp(-1, -999_999_999)],
        [.timestamp(-1, -5)],
        [.timestamp(-1, 0)],
        [.timestamp(0, 0)],
        [.timestamp(0, 5)],
        [.timestamp(1, 0)],
        [.objectId([UInt8](repeating: 0, count: 12))],
        [.objectId([UInt8](repeating: 0, count: 11) + [1])],
        [.objectId([1] + [UInt8](repeating: 0, count: 11))],
        [.uuid([UInt8](repeating: 0, count: 16))],
        [.uuid([UInt8](repeating: 0, count: 15) + [1])],
        [.uuid([UInt8](repeating: 0xFF, count: 16))],
        [.link(0, 0)],
        [.link(0, 1)],
        [.link(0, 2)],
    ]

    @Test func documentedTotalOrder() {
        var flat: [(rank: Int, value: Val)] = []
        for (rank, group) in Self.ranked.enumerated() {
            for v in group { flat.append((rank, v)) }
        }
        var failures = 0
        for a in flat {
            for b in flat {
                // NaN against NaN is not pinned down by the header; skip it.
                if a.rank == 3 && b.rank == 3 { continue }
                let c = compareVals(a.value, b.value)
                let want = a.rank < b.rank ? -1 : (a.rank > b.rank ? 1 : 0)
                let got = c < 0 ? -1 : (c > 0 ? 1 : 0)
                if got != want {
                    failures += 1
                    if failures <= 20 {
                        Issue.record("compare(\(a.value), \(b.value)) = \(c), expected sign \(want)")
                    }
                }
            }
        }
        #expect(failures == 0, "\(failures) comparisons out of order")
    }
}
