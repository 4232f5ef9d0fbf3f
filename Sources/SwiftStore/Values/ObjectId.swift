import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A 12-byte identifier that is unique with high probability, as MongoDB's BSON ObjectId.
///
/// An id made by ``generate()`` holds, most significant byte first:
///
/// | Bytes | Meaning                                                              |
/// |-------|----------------------------------------------------------------------|
/// | 0-3   | seconds since the Unix epoch, big-endian                             |
/// | 4-8   | five random bytes chosen once per process (again after a `fork`)     |
/// | 9-11  | a big-endian counter that starts at a random value and wraps at 2^24 |
///
/// So ids need no central authority, and sorting by id roughly sorts by creation time
/// (exactly, for ids made by one process within one second).
///
/// ```swift
/// let id = ObjectId.generate()
/// let same = try ObjectId(string: id.stringValue)
/// assert(id == same)
/// ```
///
/// An `ObjectId` is immutable, so it can be shared freely between threads and tasks.
/// The storage core keeps it as the 12 bytes above (`cs_value.v.oid`).
public final class ObjectId: Sendable {
    /// Bytes 0-7, the first in the most significant position.
    private let high: UInt64
    /// Bytes 8-11, the first in the most significant position.
    private let low: UInt32

    private init(high: UInt64, low: UInt32) {
        self.high = high
        self.low = low
    }

    // MARK: Creating ids

    /// Creates the all-zero id, `000000000000000000000000`.
    ///
    /// As in RealmSwift, this is *not* a new unique id: use ``generate()`` for one.
    public init() {
        high = 0
        low = 0
    }

    /// Returns a new id, distinct from every other id this process generates.
    ///
    /// Thread-safe. Ids generated later in the same second by the same process sort after
    /// earlier ones until the 24-bit counter wraps.
    public static func generate() -> ObjectId {
        let seconds = secondsSince1970(Date())
        return Generator.shared.withLock { state in
            state.next(seconds: seconds)
        }
    }

    /// Parses an id from its 24 hexadecimal digits, upper or lower case.
    ///
    /// ```swift
    /// let id = try ObjectId(string: "5f0c1b2a9d3e4f5a6b7c8d9e")
    /// ```
    ///
    /// - Parameter string: exactly 24 characters, each `0-9`, `a-f` or `A-F`.
    /// - Throws: ``SwiftStoreValueError`` when the string has another length or holds a
    ///   character that is not a hexadecimal digit.
    public convenience init(string: String) throws {
        guard let bytes = Self.parseHex(string) else {
            throw Self.parseError(string)
        }
        self.init(bytes: bytes)
    }

    /// Creates an id from a string literal, stopping the program when it is not a valid id.
    ///
    /// ```swift
    /// let id = ObjectId("5f0c1b2a9d3e4f5a6b7c8d9e")
    /// ```
    ///
    /// Use ``init(string:)`` for text that is only known at run time.
    public convenience init(_ str: StaticString) {
        let text = str.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        guard let bytes = Self.parseHex(text) else {
            preconditionFailure(Self.parseError(text).message)
        }
        self.init(bytes: bytes)
    }

    /// Creates an id from a time and the two identifying fields of the original BSON layout.
    ///
    /// The bytes are: the whole seconds of `timestamp` since the Unix epoch (modulo 2^32,
    /// big-endian), the low 24 bits of `machineId` and the low 16 bits of `processId` (both
    /// big-endian), then the next value of the process-wide counter that ``generate()`` uses.
    ///
    /// - Parameters:
    ///   - timestamp: the time the id records; ``timestamp`` returns it rounded down to a second.
    ///   - machineId: a machine identifier; only its low 24 bits are kept.
    ///   - processId: a process identifier; only its low 16 bits are kept.
    public convenience init(timestamp: Date, machineId: Int, processId: Int) {
        let seconds = Self.secondsSince1970(timestamp)
        let counter = Generator.shared.withLock { state in state.nextCounter() }
        let machine = UInt64(truncatingIfNeeded: machineId) & 0xFF_FFFF
        let process = UInt64(truncatingIfNeeded: processId) & 0xFFFF
        self.init(
            high: UInt64(seconds) << 32 | machine << 8 | process >> 8,
            low: UInt32(truncatingIfNeeded: process & 0xFF) << 24 | counter
        )
    }

    // MARK: Reading ids

    /// The id as 24 lowercase hexadecimal digits, for example `5f0c1b2a9d3e4f5a6b7c8d9e`.
    public var stringValue: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(24)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The time recorded in the first four bytes, to the second.
    public var timestamp: Date {
        Date(timeIntervalSince1970: TimeInterval(high >> 32))
    }

    // MARK: Storage-layer access

    /// The 12 bytes, most significant first, as the storage core stores them.
    package var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 {
            out[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
        }
        for i in 0..<4 {
            out[8 + i] = UInt8(truncatingIfNeeded: low >> (24 - 8 * UInt32(i)))
        }
        return out
    }

    /// Creates an id from its 12 bytes, most significant first, as the storage core stores them.
    ///
    /// - Precondition: `bytes.count == 12`.
    package convenience init(bytes: [UInt8]) {
        precondition(bytes.count == 12, "an ObjectId has 12 bytes, not \(bytes.count)")
        var high: UInt64 = 0
        for i in 0..<8 {
            high = high << 8 | UInt64(bytes[i])
        }
        var low: UInt32 = 0
        for i in 8..<12 {
            low = low << 8 | UInt32(bytes[i])
        }
        self.init(high: high, low: low)
    }

    // MARK: Helpers

    /// Whole seconds since the epoch, rounded down and taken modulo 2^32 (as BSON does).
    private static func secondsSince1970(_ date: Date) -> UInt32 {
        let interval = date.timeIntervalSince1970.rounded(.down)
        guard interval.isFinite else { return 0 }
        // Int64(exactly:) would trap far outside its range; clamp first.
        let clamped = Swift.min(Swift.max(interval, -9.0e18), 9.0e18)
        return UInt32(truncatingIfNeeded: Int64(clamped))
    }

    /// The 12 bytes of a valid id string, or nil.
    private static func parseHex(_ string: String) -> [UInt8]? {
        let utf8 = string.utf8
        guard utf8.count == 24 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(12)
        var pending: UInt8 = 0
        for (i, unit) in utf8.enumerated() {
            guard let nibble = hexValue(unit) else { return nil }
            if i % 2 == 0 {
                pending = nibble << 4
            } else {
                out.append(pending | nibble)
            }
        }
        return out
    }

    private static func hexValue(_ unit: UInt8) -> UInt8? {
        switch unit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return unit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return unit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return unit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The error for a string that `parseHex` rejected.
    private static func parseError(_ string: String) -> SwiftStoreValueError {
        let quoted = SwiftStoreValueError.quote(string)
        let length = string.count
        if length != 24 {
            return SwiftStoreValueError(
                message: "invalid ObjectId string \(quoted): expected 24 hexadecimal characters, got \(length)")
        }
        for (offset, character) in string.enumerated() {
            let isHex = character.utf8.count == 1 && hexValue(character.utf8.first!) != nil
            if !isHex {
                return SwiftStoreValueError(
                    message: "invalid ObjectId string \(quoted): '\(character)' at offset \(offset) is not a hexadecimal digit")
            }
        }
        return SwiftStoreValueError(message: "invalid ObjectId string \(quoted)")
    }
}

// MARK: - Generation

extension ObjectId {
    /// The per-process generator state behind ``generate()``.
    private struct Generator {
        /// The one generator of this process.
        static let shared = Locked(Generator())

        /// The process the random bytes and counter belong to; a forked child starts afresh.
        private var pid: Int32 = -1
        /// Bytes 4-8 of every generated id, the first in bits 39..32.
        private var random: UInt64 = 0
        /// The counter in bytes 9-11; only the low 24 bits are used.
        private var counter: UInt32 = 0

        /// Draws new random bytes and a new counter start when the process is new.
        private mutating func reseedIfForked() {
            let current = getpid()
            guard current != pid else { return }
            var rng = SystemRandomNumberGenerator()
            pid = current
            random = rng.next() & 0xFF_FFFF_FFFF
            counter = rng.next() & 0xFF_FFFF
        }

        /// Returns the next counter value, 24 bits wide.
        mutating func nextCounter() -> UInt32 {
            reseedIfForked()
            let value = counter
            counter = (counter &+ 1) & 0xFF_FFFF
            return value
        }

        /// Returns a new id for the given second.
        mutating func next(seconds: UInt32) -> ObjectId {
            let count = nextCounter()
            // bytes 0-3: seconds; bytes 4-7: the first four random bytes
            let high = UInt64(seconds) << 32 | random >> 8
            // byte 8: the last random byte; bytes 9-11: the counter
            let low = UInt32(truncatingIfNeeded: random & 0xFF) << 24 | count
            return ObjectId(high: high, low: low)
        }
    }
}

// MARK: - Protocols

extension ObjectId: CustomStringConvertible {
    /// The same as ``stringValue``.
    public var description: String { stringValue }
}

extension ObjectId: Hashable {
    /// Two ids are equal when their 12 bytes are.
    public static func == (lhs: ObjectId, rhs: ObjectId) -> Bool {
        lhs.high == rhs.high && lhs.low == rhs.low
    }

    /// Hashes the 12 bytes.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(high)
        hasher.combine(low)
    }
}

extension ObjectId: Comparable {
    /// Orders ids by their bytes, first byte most significant (so roughly by creation time).
    public static func < (lhs: ObjectId, rhs: ObjectId) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

extension ObjectId: Codable {
    /// Decodes an id from its 24-character hexadecimal string.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the string is not a valid id (its
    ///   underlying error is the ``SwiftStoreValueError``), or the decoder's error when the
    ///   value is not a string.
    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let bytes = Self.parseHex(string) else {
            let error = Self.parseError(string)
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: container.codingPath, debugDescription: error.message, underlyingError: error))
        }
        self.init(bytes: bytes)
    }

    /// Encodes the id as its 24-character ``stringValue``, in a single-value container.
    ///
    /// - Throws: the encoder's error if it cannot encode a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(stringValue)
    }
}
