// The measuring protocol (Benchmarks/README.md, "Protocol"): one warm-up, then N repetitions with SwiftStore
// and its peer interleaved (A B A B ...), medians, the spread of SwiftStore's repetitions,
// and an answer check on every repetition of both sides.

import Foundation

/// What one repetition checks: the value it computed and the value it should have computed.
struct Check {
    let what: String   // what was compared, for the message when they differ
    let got: Int64     // the answer the repetition computed
    let want: Int64    // the answer it must compute
}

/// The result of one repetition of one side: the timed block in milliseconds, its answer, and
/// for a size row the bytes on disk it left.
struct Sample {
    let ms: Double     // the whole timed block of this repetition
    let check: Check   // the answer the harness compares
    var bytes: Int64? = nil // a size row's figure (Row.unit == .bytes); nil for time rows
}

/// What a row compares: the time of its timed block, or the bytes on disk its work left.
enum RowUnit: String {
    case ms
    case bytes
}

/// One side of a row, set up (untimed) once per row and run once per repetition.
struct Runner {
    /// Runs repetition `rep` (0 is the warm-up) and returns its time and answer.
    let run: (_ rep: Int) throws -> Sample
    /// Closes what the set-up opened. Files are removed by the harness afterwards.
    var tearDown: () -> Void = {}
}

/// What a side is given when it is set up.
struct RowContext {
    let size: Int        // the row's size after --quick
    let quick: Bool      // every size is 1/10 of the documented one
    let directory: URL   // scratch directory of this side of this row (on disk, removed later)

    /// A size of the documented workload, divided by 10 under --quick.
    func scaled(_ n: Int) -> Int { quick ? max(1, n / 10) : n }

    /// A new empty directory for one repetition ("new file" rows); remove it with `remove`.
    func freshDirectory(_ rep: Int) throws -> URL {
        let url = directory.appendingPathComponent("rep\(rep)", isDirectory: true)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A row of the suite. Its id, size, goal and peer are those of the tables in Benchmarks/README.md.
struct Row {
    let id: String                                   // exactly as in Benchmarks/README.md
    let size: Int                                    // documented size (rows, objects, operations)
    let mode: String                                 // "durable" or "nosync"
    let peer: String                                 // "sqlite" or "grdb"
    let goal: String                                 // SwiftStore / peer, as in Benchmarks/README.md
    let swiftstore: (RowContext) throws -> Runner    // the SwiftStore side
    let peerSide: ((RowContext) throws -> Runner)?   // nil when the row has no peer
    var unit: RowUnit = .ms                          // what the ratio compares
}

/// The figures of one row that ran.
struct RowResult {
    let row: Row
    let size: Int
    let swiftstoreMs: Double
    let spread: Double
    let peerMs: Double?
    let peerSpread: Double?
    var swiftstoreBytes: Double? = nil // a size row's median bytes on disk
    var peerBytes: Double? = nil

    /// SwiftStore / peer: of the times, or for a size row of the bytes.
    var ratio: Double? {
        if row.unit == .bytes {
            guard let s = swiftstoreBytes, let p = peerBytes, p > 0 else { return nil }
            return s / p
        }
        return peerMs.map { swiftstoreMs / $0 }
    }
}

/// A row left out of the report, and why.
struct LeftOut {
    let id: String
    let reason: String
    let peerMs: Double?   // the peer's median, for orientation only (never in the report)
}

/// Nanoseconds of the monotonic clock.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Runs `body` and returns its duration in milliseconds.
@inline(__always)
func measure(_ body: () throws -> Void) rethrows -> Double {
    let start = nowNanoseconds()
    try body()
    return Double(nowNanoseconds() - start) / 1e6
}

func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    let n = s.count
    if n == 0 { return .nan }
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
}

func spread(_ values: [Double]) -> Double {
    guard let lo = values.min(), let hi = values.max() else { return .nan }
    let m = median(values)
    return m > 0 ? (hi - lo) / m : 0
}

/// Runs the selected rows and collects their figures.
final class Harness {
    let options: Options
    let scratch: URL   // root of every database file of this run
    private(set) var results: [RowResult] = []
    private(set) var leftOut: [LeftOut] = []

    init(options: Options, scratch: URL) {
        self.options = options
        self.scratch = scratch
    }

    /// Stops the run: a wrong answer is a bug, not a figure.
    func abort(_ message: String) -> Never {
        FileHandle.standardError.write(Data("swiftstore-bench: \(message)\n".utf8))
        try? FileManager.default.removeItem(at: scratch)
        exit(1)
    }

    private func note(_ message: String) {
        FileHandle.standardError.write(Data("\(message)\n".utf8))
    }

    private func verify(_ sample: Sample, _ side: String, _ row: Row, _ rep: Int) {
        let c = sample.check
        if c.got != c.want {
            abort("\(row.id): wrong answer from \(side) in repetition \(rep): "
                + "\(c.what) is \(c.got), expected \(c.want)")
        }
        if !(sample.ms >= 0) {
            abort("\(row.id): \(side) returned an invalid time \(sample.ms)")
        }
        if row.unit == .bytes && !(sample.bytes.map { $0 > 0 } ?? false) {
            abort("\(row.id): \(side) returned no size for a size row")
        }
    }

    private func setUp(_ make: (RowContext) throws -> Runner, _ side: String, _ row: Row,
                       _ size: Int) -> (Runner?, Error?)
    {
        let dir = scratch.appendingPathComponent(row.id, isDirectory: true)
            .appendingPathComponent(side, isDirectory: true)
        let ctx = RowContext(size: size, quick: options.quick, directory: dir)
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            return (try make(ctx), nil)
        } catch {
            return (nil, error)
        }
    }

    /// Runs one row: set-up of both sides, a warm-up, then the interleaved repetitions.
    /// Returns the result, or nil when the SwiftStore side failed (the row is left out).
    @discardableResult
    func run(_ row: Row) -> RowResult? {
        let size = options.quick ? max(1, row.size / 10) : row.size
        note("\(row.id): setting up (size \(size))")

        let (ssRunner, setUpError) = setUp(row.swiftstore, "swiftstore", row, size)
        var ssError = setUpError
        var peerRunner: Runner?
        var peerError: Error?
        if let make = row.peerSide {
            (peerRunner, peerError) = setUp(make, row.peer, row, size)
        }

        var ssTimes: [Double] = []
        var peerTimes: [Double] = []
        var ssBytes: [Double] = []
        var peerBytes: [Double] = []
        for rep in 0...options.reps {
            if ssError == nil, let r = ssRunner {
                do {
                    let s = try r.run(rep)
                    verify(s, "SwiftStore", row, rep)
                    if rep > 0 {
                        ssTimes.append(s.ms)
                        if let b = s.bytes { ssBytes.append(Double(b)) }
                    }
                } catch {
                    ssError = error
                }
            }
            if peerError == nil, let r = peerRunner {
                do {
                    let s = try r.run(rep)
                    verify(s, row.peer, row, rep)
                    if rep > 0 {
                        peerTimes.append(s.ms)
                        if let b = s.bytes { peerBytes.append(Double(b)) }
                    }
                } catch {
                    peerError = error
                }
            }
        }
        ssRunner?.tearDown()
        peerRunner?.tearDown()
        try? FileManager.default.removeItem(
            at: scratch.appendingPathComponent(row.id, isDirectory: true))

        let peerMs = peerError == nil && !peerTimes.isEmpty ? median(peerTimes) : nil
        if let peerError {
            note("\(row.id): the \(row.peer) side failed: \(peerError)")
        }
        if let ssError {
            note("\(row.id): the SwiftStore side failed, row left out: \(ssError)")
            leftOut.append(LeftOut(id: row.id, reason: "\(ssError)", peerMs: peerMs))
            return nil
        }
        let bytesRow = row.unit == .bytes
        let result = RowResult(
            row: row, size: size, swiftstoreMs: median(ssTimes), spread: spread(bytesRow ? ssBytes : ssTimes),
            peerMs: peerMs, peerSpread: peerMs == nil ? nil : spread(bytesRow ? peerBytes : peerTimes),
            swiftstoreBytes: bytesRow ? median(ssBytes) : nil,
            peerBytes: bytesRow && peerMs != nil ? median(peerBytes) : nil)
        results.append(result)
        return result
    }
}
