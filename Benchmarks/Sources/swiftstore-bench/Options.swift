// Command-line flags of swiftstore-bench (Benchmarks/README.md, "Running").

import Foundation

struct Options {
    var filter: [String] = []   // row-id prefixes; empty runs every row
    var quick = false           // every row at 1/10 size
    var jsonPath: String?       // where to write the JSON report
    var reps = 5                // repetitions after the warm-up
    var list = false            // print the row ids and exit
    var scaleMax = 10_000_000   // the largest size of the scaling rows (documented size)

    static let usage = """
        usage: swiftstore-bench [--filter LIST] [--quick] [--json FILE] [--reps N] [--scale-max SIZE] [--list]

          --filter LIST  comma-separated row-id prefixes (default: every row)
          --quick        every row at 1/10 of its size (a smoke test, not a measurement)
          --json FILE    also write the figures as JSON to FILE
          --reps N       repetitions after the warm-up (default 5)
          --scale-max SIZE  the largest scaling rows to run: 1k, 100k, 10M (default) or 100M
                         (100M builds two files of several GB and takes most of an hour)
          --list         print the row ids with their goals and exit
        """

    /// Parses the arguments; prints a message and exits on a bad one.
    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        func value(_ flag: String) -> String {
            i += 1
            guard i < args.count else { fail("\(flag) needs a value") }
            return args[i]
        }
        while i < args.count {
            let a = args[i]
            switch a {
            case "--filter":
                o.filter = value(a).split(separator: ",")
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                    .filter { !$0.isEmpty }
            case "--quick":
                o.quick = true
            case "--json":
                o.jsonPath = value(a)
            case "--reps":
                let v = value(a)
                guard let n = Int(v), n >= 1 else { fail("--reps needs a positive integer, not \(v)") }
                o.reps = n
            case "--list":
                o.list = true
            case "--scale-max":
                let v = value(a)
                guard let n = scaleSizes.first(where: { $0.label == v })?.n else {
                    fail("--scale-max is one of \(scaleSizes.map(\.label).joined(separator: ", ")), not \(v)")
                }
                o.scaleMax = n
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                if a.hasPrefix("--filter=") {
                    o.filter = a.dropFirst("--filter=".count).split(separator: ",").map(String.init)
                } else if a.hasPrefix("--json=") {
                    o.jsonPath = String(a.dropFirst("--json=".count))
                } else if a.hasPrefix("--reps="), let n = Int(a.dropFirst("--reps=".count)), n >= 1 {
                    o.reps = n
                } else {
                    fail("unknown argument \(a)")
                }
            }
            i += 1
        }
        return o
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("swiftstore-bench: \(message)\n\(usage)\n".utf8))
        exit(2)
    }

    /// True when the row is selected by --filter.
    func selects(_ id: String) -> Bool {
        filter.isEmpty || filter.contains { id.hasPrefix($0) }
    }
}
