// swiftstore-bench: SwiftStore side by side with SQLite (raw C API) and GRDB, as Benchmarks/README.md
// describes (rows, protocol, peers' settings). Prints a Markdown table on standard output (progress and errors go to
// standard error) and, with --json FILE, the same figures as JSON.

import Foundation

/// Writes a line to standard output at once (the table appears row by row, even in a pipe).
func out(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let rows = allRows(scaleMax: options.scaleMax).filter { options.selects($0.id) }

if options.list {
    for r in allRows(scaleMax: options.scaleMax) { out("\(r.id)\t\(r.size)\t\(r.peer)\t\(r.goal)") }
    exit(0)
}
if rows.isEmpty {
    FileHandle.standardError.write(Data("swiftstore-bench: no row matches --filter \(options.filter.joined(separator: ","))\n".utf8))
    exit(2)
}

let scratch: URL
do {
    scratch = try Scratch.make()
} catch {
    FileHandle.standardError.write(Data("swiftstore-bench: cannot make a scratch directory: \(error)\n".utf8))
    exit(1)
}
FileHandle.standardError.write(Data("database files in \(scratch.path)\n".utf8))

let machine = Machine.current()
let harness = Harness(options: options, scratch: scratch)
out("SwiftStore vs peers: \(machine.cpu), \(machine.cores) cores, \(machine.os); "
    + "median of \(options.reps) repetitions after a warm-up\(options.quick ? ", --quick sizes" : "")")
out("")
out(Report.header)
for row in rows {
    if let result = harness.run(row) {
        out(Report.line(result))
    }
}
Scratch.remove(scratch)
for line in scaleSummary(harness.results, quick: options.quick) { out(line) }

if !harness.leftOut.isEmpty {
    out("")
    out("Left out (the SwiftStore side failed):")
    for l in harness.leftOut {
        let peer = l.peerMs.map { "; peer alone: \(formatMs($0)) ms" } ?? ""
        out("- \(l.id): \(l.reason)\(peer)")
    }
}

if let path = options.jsonPath {
    let text = Report.json(machine: machine, options: options, results: harness.results)
    do {
        let parent = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        FileHandle.standardError.write(Data("wrote \(path)\n".utf8))
    } catch {
        FileHandle.standardError.write(Data("swiftstore-bench: cannot write \(path): \(error)\n".utf8))
        exit(1)
    }
}
