// The Markdown table and the JSON report (Benchmarks/README.md, "Protocol"), and the machine facts
// that go with them.

import Foundation

struct Machine {
    let cores: Int
    let cpu: String
    let os: String

    static func current() -> Machine {
        Machine(
            cores: ProcessInfo.processInfo.activeProcessorCount,
            cpu: field(in: "/proc/cpuinfo", key: "model name", separator: ":") ?? "unknown",
            os: field(in: "/etc/os-release", key: "PRETTY_NAME", separator: "=") ?? "Linux")
    }

    /// The value of the first line `key <sep> value` of a text file, unquoted.
    private static func field(in path: String, key: String, separator: Character) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            guard let i = line.firstIndex(of: separator) else { continue }
            if line[..<i].trimmingCharacters(in: .whitespaces) == key {
                var v = line[line.index(after: i)...].trimmingCharacters(in: .whitespaces)
                if v.count >= 2, v.first == "\"", v.last == "\"" { v = String(v.dropFirst().dropLast()) }
                return v
            }
        }
        return nil
    }
}

/// Milliseconds with about four significant digits.
func formatMs(_ ms: Double) -> String {
    switch ms {
    case ..<1: return String(format: "%.4f", ms)
    case ..<10: return String(format: "%.3f", ms)
    case ..<100: return String(format: "%.2f", ms)
    default: return String(format: "%.1f", ms)
    }
}

func formatRatio(_ r: Double) -> String {
    r < 0.1 ? String(format: "%.4fx", r) : String(format: "%.3fx", r)
}

enum Report {
    static let header = """
        | id | size | SwiftStore ms | peer | peer ms | ratio | goal | spread |
        |---|---:|---:|---|---:|---:|---|---:|
        """

    /// One table line. A size row shows bytes ("12345678 B") in the two figure columns, and
    /// the spread of its sizes.
    static func line(_ r: RowResult) -> String {
        let bytes = r.row.unit == .bytes
        let ours = bytes ? formatBytes(r.swiftstoreBytes) : formatMs(r.swiftstoreMs)
        let peer = bytes ? formatBytes(r.peerBytes) : r.peerMs.map(formatMs) ?? "n/a"
        let ratio = r.ratio.map(formatRatio) ?? "n/a"
        let spread = String(format: "%.1f%%", r.spread * 100)
        return "| \(r.row.id) | \(r.size) | \(ours) | \(r.row.peer) | \(peer) "
            + "| \(ratio) | \(r.row.goal) | \(spread) |"
    }

    static func formatBytes(_ b: Double?) -> String {
        guard let b, b.isFinite else { return "n/a" }
        return "\(Int64(b.rounded())) B"
    }

    /// The JSON report: machine facts and one object per row that ran.
    static func json(machine: Machine, options: Options, results: [RowResult]) -> String {
        func num(_ x: Double?, _ digits: Int) -> String {
            guard let x, x.isFinite else { return "null" }
            return String(format: "%.\(digits)g", x)
        }
        var rows: [String] = []
        for r in results {
            rows.append("""
                    {"id": \(quote(r.row.id)), "size": \(r.size), "mode": \(quote(r.row.mode)), \
                "swiftstore_ms": \(num(r.swiftstoreMs, 6)), "peer": \(quote(r.row.peer)), \
                "peer_ms": \(num(r.peerMs, 6)), "ratio": \(num(r.ratio, 4)), \
                "spread": \(num(r.spread, 3)), "peer_spread": \(num(r.peerSpread, 3)), \
                "unit": \(quote(r.row.unit.rawValue)), "swiftstore_bytes": \(num(r.swiftstoreBytes, 15)), \
                "peer_bytes": \(num(r.peerBytes, 15))}
                """)
        }
        return """
            {"machine": {"cores": \(machine.cores), "cpu": \(quote(machine.cpu)), \
            "os": \(quote(machine.os))},
             "quick": \(options.quick), "reps": \(options.reps),
             "rows": [
            \(rows.joined(separator: ",\n"))
            ]}

            """
    }

    /// A JSON string literal.
    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if u.value < 0x20 {
                    out += String(format: "\\u%04x", u.value)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
