// KeyOrder: the visit of sorted results' elements in object-key order that the section pass
// makes (docs/ARCHITECTURE.md, Sectioned results). Both of its paths, the table over a dense
// key range and the radix sort, must give the positions a plain sort gives.

import Foundation
import Testing
import TestSupport
@testable import SwiftStore

@Suite struct SectionKeyOrderTests {
    /// What `KeyOrder.ascending` must return for distinct keys: positions by ascending key.
    private func reference(_ keys: [Int64]) -> (positions: [Int32], keys: [Int64]) {
        let order = keys.indices.sorted { keys[$0] < keys[$1] }
        return (order.map { Int32($0) }, order.map { keys[$0] })
    }

    private func shuffled(_ keys: [Int64], seed: UInt64) -> [Int64] {
        var rng = SeededRNG(seed: seed)
        return keys.shuffled(using: &rng)
    }

    @Test(arguments: [
        // dense: every key of a range, a range with gaps (under twice the count), one far away
        // from zero, negative keys
        (Array(Int64(0)..<5000), "permutation of 0..<5000"),
        ((Int64(0)..<9000).filter { $0 % 3 != 1 }, "two of every three"),
        (Array(Int64(1 << 40)..<(1 << 40) + 3000), "a range far from zero"),
        (Array(Int64(-1500)..<1500), "negative keys"),
        // sparse: the radix sort
        ((Int64(0)..<4000).map { $0 * 7919 }, "spread keys"),
        ((Int64(0)..<3000).map { $0 &* 0x9E37_79B9 ^ ($0 << 40) }, "keys over 64 bits"),
    ] as [([Int64], String)])
    func positionsAreThoseOfASort(keys: [Int64], what: String) throws {
        let mixed = shuffled(keys, seed: UInt64(keys.count))
        let got = try #require(KeyOrder.ascending(mixed), "\(what): not in order, so a visit order is needed")
        let want = reference(mixed)
        #expect(got.positions == want.positions, "\(what)")
        #expect(got.keys == want.keys, "\(what)")
        // collect stores each value at its element's position in the results
        var visited: [Int64] = []
        let values = KeyOrder.collect(mixed) { k in
            visited.append(k)
            return k * 2
        }
        #expect(values == mixed.map { $0 * 2 }, "\(what)")
        #expect(visited == want.keys, "\(what): visited in key order")
        // collectInVisitOrder keeps the values in visit order and says where each position's is
        visited = []
        let (inVisit, index) = KeyOrder.collectInVisitOrder(mixed) { k in
            visited.append(k)
            return k * 3
        }
        #expect(visited == want.keys, "\(what): visited in key order")
        #expect(inVisit == want.keys.map { $0 * 3 }, "\(what)")
        let ix = try #require(index, "\(what)")
        #expect(mixed.indices.map { inVisit[Int(ix[$0])] } == mixed.map { $0 * 3 }, "\(what)")
    }

    /// `KeyOrder.visit`: keys visited in ascending order, and for each position the index of its
    /// key in the visit; every key of a range once is visited as the range itself (no array).
    @Test(arguments: [
        (Array(Int64(0)..<5000), true),
        (Array(Int64(1 << 40)..<(1 << 40) + 3000), true),
        (Array(Int64(-1500)..<1500), true),
        ((Int64(0)..<9000).filter { $0 % 3 != 1 }, false),
        ((Int64(0)..<4000).map { $0 * 7919 }, false),
        // a range's count of keys, one repeated and one missing
        ([3, 0, 3, 1] as [Int64], false),
        ([5, 7, 6, 7, 4] as [Int64], false),
    ] as [([Int64], Bool)])
    func visitIndexesEachPosition(keys: [Int64], range: Bool) throws {
        let mixed = keys.count > 10 ? shuffled(keys, seed: UInt64(keys.count) + 1) : keys
        let visit = try #require(KeyOrder.visit(mixed))
        #expect((visit.ascending == nil) == range, "\(keys.prefix(3))")
        let visited = (0..<mixed.count).map { visit.key($0) }
        #expect(visited == mixed.sorted(), "\(keys.prefix(3))")
        #expect(visit.index.count == mixed.count)
        #expect(mixed.indices.map { visit.key(Int(visit.index[$0])) } == mixed, "\(keys.prefix(3))")
        // a repeated key: each of its positions has an index of its own
        #expect(Set(visit.index).count == mixed.count)
        #expect(KeyOrder.visit(mixed.sorted()) == nil)
    }

    @Test func keysInOrderAreVisitedInPlace() {
        let keys = Array(Int64(10)..<60)
        let (values, index) = KeyOrder.collectInVisitOrder(keys) { $0 + 1 }
        #expect(values == keys.map { $0 + 1 })
        #expect(index == nil)
    }

    @Test func keysInOrderNeedNoVisitOrder() {
        #expect(KeyOrder.ascending(Array(Int64(0)..<100)) == nil)
        #expect(KeyOrder.ascending([5]) == nil)
        #expect(KeyOrder.ascending([]) == nil)
    }

    @Test func repeatedKeysInADenseRangeFallBackToTheSort() throws {
        // the dense path stops at a repeated key; the radix sort keeps repeats in given order
        let keys: [Int64] = [4, 2, 9, 2, 7, 4, 0, 3, 1, 8, 6, 5]
        let got = try #require(KeyOrder.ascending(keys))
        let order = keys.indices.sorted { keys[$0] < keys[$1] || (keys[$0] == keys[$1] && $0 < $1) }
        #expect(got.positions == order.map { Int32($0) })
        #expect(got.keys == order.map { keys[$0] })
    }
}
