// ObjectId: generation (uniqueness across threads, BSON layout), parsing and printing,
// the timestamp, ordering, hashing and Codable.
import Foundation
import Testing
@testable import SwiftStore

/// Ids gathered from several threads (an NSLock, which ThreadSanitizer understands).
private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [ObjectId] = []

    func append(_ more: [ObjectId]) {
        lock.lock()
        defer { lock.unlock() }
        ids += more
    }

    var all: [ObjectId] {
        lock.lock()
        defer { lock.unlock() }
        return ids
    }
}

@Suite struct ObjectIdTests {
    static let sample = "5f0c1b2a9d3e4f5a6b7c8d9e"

    // MARK: Creation

    @Test func defaultInitIsAllZeros() {
        let zero = ObjectId()
        #expect(zero.stringValue == "000000000000000000000000")
        #expect(zero.bytes == [UInt8](repeating: 0, count: 12))
        #expect(zero.timestamp == Date(timeIntervalSince1970: 0))
        #expect(zero == ObjectId())
    }

    @Test func tenThousandIdsFromFourThreadsAreDistinct() {
        let perThread = 2_500
        let collected = Collected()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            var mine: [ObjectId] = []
            mine.reserveCapacity(perThread)
            for _ in 0..<perThread { mine.append(ObjectId.generate()) }
            collected.append(mine)
        }
        let all = collected.all
        #expect(all.count == 10_000)
        #expect(Set(all).count == 10_000)
        #expect(Set(all.map(\.stringValue)).count == 10_000)
        // one process: the same five random bytes in every id, and no counter value twice
        #expect(Set(all.map { Array($0.bytes[4..<9]) }).count == 1)
        #expect(Set(all.map { Array($0.bytes[9..<12]) }).count == 10_000)
    }

    @Test func generatedIdsRecordTheCurrentSecond() {
        let before = Date().timeIntervalSince1970.rounded(.down)
        let id = ObjectId.generate()
        let after = Date().timeIntervalSince1970.rounded(.down)
        let seconds = id.timestamp.timeIntervalSince1970
        #expect(seconds >= before && seconds <= after)
        #expect(seconds == seconds.rounded(.down))
        #expect(ObjectId.generate() != id)
    }

    @Test func timestampMachineAndProcessFillTheirBytes() {
        let date = Date(timeIntervalSince1970: 1_600_000_000.75) // 0x5F5E1000 seconds
        let id = ObjectId(timestamp: date, machineId: 0xABCDEF, processId: 0x1234)
        #expect(id.stringValue.hasPrefix("5f5e1000" + "abcdef" + "1234"))
        #expect(id.timestamp == Date(timeIntervalSince1970: 1_600_000_000))

        // only the low 24 and 16 bits are kept
        let truncated = ObjectId(timestamp: date, machineId: 0x7_ABCDEF, processId: 0x5_1234)
        #expect(Array(truncated.bytes[0..<9]) == Array(id.bytes[0..<9]))

        // the counter differs between two ids made from the same fields
        #expect(truncated != id)
    }

    @Test func timestampsWrapModulo2To32() {
        let beforeEpoch = ObjectId(timestamp: Date(timeIntervalSince1970: -1), machineId: 0, processId: 0)
        #expect(beforeEpoch.stringValue.hasPrefix("ffffffff"))
        let lastSecond = ObjectId(timestamp: Date(timeIntervalSince1970: 4_294_967_295.5), machineId: 0, processId: 0)
        #expect(lastSecond.stringValue.hasPrefix("ffffffff"))
        #expect(lastSecond.timestamp == Date(timeIntervalSince1970: 4_294_967_295))
        let wrapped = ObjectId(timestamp: Date(timeIntervalSince1970: 4_294_967_296 + 7), machineId: 0, processId: 0)
        #expect(wrapped.stringValue.hasPrefix("00000007"))
    }

    // MARK: Text

    @Test func stringRoundTrip() throws {
        let id = try ObjectId(string: Self.sample)
        #expect(id.stringValue == Self.sample)
        #expect(id.description == Self.sample)
        #expect("\(id)" == Self.sample)
        #expect(id.bytes == [0x5F, 0x0C, 0x1B, 0x2A, 0x9D, 0x3E, 0x4F, 0x5A, 0x6B, 0x7C, 0x8D, 0x9E])
        #expect(id.timestamp == Date(timeIntervalSince1970: 0x5F0C_1B2A))
        #expect(try ObjectId(string: id.stringValue) == id)

        let upper = try ObjectId(string: Self.sample.uppercased())
        #expect(upper == id)
        #expect(upper.stringValue == Self.sample)

        let max = try ObjectId(string: "FFFFFFFFFFFFFFFFFFFFFFFF")
        #expect(max.bytes == [UInt8](repeating: 0xFF, count: 12))

        let generated = ObjectId.generate()
        #expect(try ObjectId(string: generated.stringValue) == generated)
    }

    @Test func staticStringInitParses() {
        let id = ObjectId("5f0c1b2a9d3e4f5a6b7c8d9e")
        #expect(id.stringValue == Self.sample)
    }

    @Test(arguments: [
        ("", "invalid ObjectId string \"\": expected 24 hexadecimal characters, got 0"),
        ("5f0c1b2a9d3e4f5a6b7c8d9", "invalid ObjectId string \"5f0c1b2a9d3e4f5a6b7c8d9\": expected 24 hexadecimal characters, got 23"),
        ("5f0c1b2a9d3e4f5a6b7c8d9e0", "invalid ObjectId string \"5f0c1b2a9d3e4f5a6b7c8d9e0\": expected 24 hexadecimal characters, got 25"),
        ("5f0c1b2a9d3e4f5a6b7c8d9g", "invalid ObjectId string \"5f0c1b2a9d3e4f5a6b7c8d9g\": 'g' at offset 23 is not a hexadecimal digit"),
        (" f0c1b2a9d3e4f5a6b7c8d9e", "invalid ObjectId string \" f0c1b2a9d3e4f5a6b7c8d9e\": ' ' at offset 0 is not a hexadecimal digit"),
        ("0x0c1b2a9d3e4f5a6b7c8d9e", "invalid ObjectId string \"0x0c1b2a9d3e4f5a6b7c8d9e\": 'x' at offset 1 is not a hexadecimal digit"),
        // 24 characters, but a fullwidth digit is not a hexadecimal digit here
        ("５f0c1b2a9d3e4f5a6b7c8d9e", "invalid ObjectId string \"５f0c1b2a9d3e4f5a6b7c8d9e\": '５' at offset 0 is not a hexadecimal digit"),
    ])
    func invalidStringsThrow(input: String, message: String) {
        #expect(throws: SwiftStoreValueError(message: message)) {
            try ObjectId(string: input)
        }
    }

    @Test func longInvalidStringsAreShortenedInTheMessage() {
        let long = String(repeating: "a", count: 100)
        let error = #expect(throws: SwiftStoreValueError.self) { try ObjectId(string: long) }
        #expect(error?.message == "invalid ObjectId string \"\(String(repeating: "a", count: 64))...\" (100 characters): expected 24 hexadecimal characters, got 100")
        #expect(error?.description == error?.message)
    }

    @Test func invalidStaticStringStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            _ = ObjectId("not an object id")
        }
    }

    @Test func wrongByteCountStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            _ = ObjectId(bytes: [1, 2, 3])
        }
    }

    // MARK: Ordering and hashing

    @Test func orderIsByteOrder() throws {
        let ids = try [
            "000000000000000000000001",
            "000000000000000000000100",
            "00000000000000000000ff00",
            "0000000100000000000000ff",
            "7fffffffffffffffffffffff",
            "800000000000000000000000",
            "ffffffffffffffffffffffff",
        ].map { try ObjectId(string: $0) }
        for (a, b) in zip(ids, ids.dropFirst()) {
            #expect(a < b)
            #expect(b > a)
            #expect(!(b < a))
            #expect(a != b)
        }
        #expect(ids.reversed().sorted() == ids)
        #expect(ids.shuffled().sorted().map(\.stringValue) == ids.map(\.stringValue))
        #expect(ObjectId() < ids[0])
        #expect(!(ids[0] < ids[0]))
        #expect(ids[0] <= ids[0])
    }

    @Test func laterTimestampsSortLater() {
        let early = ObjectId(timestamp: Date(timeIntervalSince1970: 1_000), machineId: 0xFFFFFF, processId: 0xFFFF)
        let late = ObjectId(timestamp: Date(timeIntervalSince1970: 1_001), machineId: 0, processId: 0)
        #expect(early < late)
    }

    @Test func equalIdsHashEqually() throws {
        let a = try ObjectId(string: Self.sample)
        let b = try ObjectId(string: Self.sample.uppercased())
        let c = ObjectId(bytes: a.bytes)
        #expect(a == b && b == c)
        #expect(a.hashValue == b.hashValue)
        #expect(a.hashValue == c.hashValue)
        #expect(Set([a, b, c, ObjectId()]).count == 2)
        #expect(a !== b) // distinct objects, equal values
    }

    @Test func bytesRoundTrip() {
        let bytes: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xFE, 0xFF]
        let id = ObjectId(bytes: bytes)
        #expect(id.bytes == bytes)
        #expect(id.stringValue == "000102030405060708" + "09feff")
    }

    // MARK: Codable

    @Test func jsonRoundTrip() throws {
        struct Record: Codable, Equatable {
            var id: ObjectId
            var others: [ObjectId]
        }
        let record = try Record(
            id: ObjectId(string: Self.sample),
            others: [ObjectId(), ObjectId(string: "ffffffffffffffffffffffff")])
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(record)
        #expect(String(decoding: data, as: UTF8.self)
            == #"{"id":"5f0c1b2a9d3e4f5a6b7c8d9e","others":["000000000000000000000000","ffffffffffffffffffffffff"]}"#)
        #expect(try JSONDecoder().decode(Record.self, from: data) == record)

        let single = try JSONEncoder().encode(ObjectId(string: Self.sample))
        #expect(String(decoding: single, as: UTF8.self) == "\"\(Self.sample)\"")
        #expect(try JSONDecoder().decode(ObjectId.self, from: single) == ObjectId(string: Self.sample))
    }

    @Test func decodingRejectsBadValues() throws {
        let badString = Data(#"["5f0c1b2a9d3e4f5a6b7c8d9"]"#.utf8)
        let error = #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([ObjectId].self, from: badString)
        }
        guard case .dataCorrupted(let context) = error else {
            Issue.record("expected dataCorrupted, got \(String(describing: error))")
            return
        }
        #expect(context.debugDescription
            == "invalid ObjectId string \"5f0c1b2a9d3e4f5a6b7c8d9\": expected 24 hexadecimal characters, got 23")
        #expect(context.underlyingError is SwiftStoreValueError)
        #expect(context.codingPath.count == 1)

        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([ObjectId].self, from: Data("[42]".utf8))
        }
    }
}
