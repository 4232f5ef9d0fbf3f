// Where the database files of a run live: a fresh directory on a disk (never tmpfs, which
// would make every sync free), removed at the end of the run.

import Foundation

enum Scratch {
    /// The system temporary directory when it is on a disk, else `.bench-tmp/` in the
    /// current directory. Each run makes its own subdirectory.
    static func make() throws -> URL {
        let fm = FileManager.default
        let tmp = fm.temporaryDirectory
        let base: URL
        if !isMemoryFileSystem(tmp.path) {
            base = tmp
        } else {
            base = URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent(".bench-tmp", isDirectory: true)
            if isMemoryFileSystem(base.deletingLastPathComponent().path) {
                FileHandle.standardError.write(Data("warning: no disk-backed directory found; syncs will cost nothing\n".utf8))
            }
        }
        let dir = base.appendingPathComponent("swiftstore-bench-\(getpid())", isDirectory: true)
        try? fm.removeItem(at: dir)
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    static func remove(_ dir: URL) {
        let fm = FileManager.default
        try? fm.removeItem(at: dir)
        // Remove .bench-tmp too when no other run uses it.
        let parent = dir.deletingLastPathComponent()
        if parent.lastPathComponent == ".bench-tmp",
           (try? fm.contentsOfDirectory(atPath: parent.path))?.isEmpty == true
        {
            try? fm.removeItem(at: parent)
        }
    }

    /// True for tmpfs and ramfs: the type of the mount (in /proc/mounts) that holds `path`.
    static func isMemoryFileSystem(_ path: String) -> Bool {
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return false }
        var best = ""
        var bestType = ""
        for line in mounts.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count >= 3 else { continue }
            let point = f[1].replacingOccurrences(of: "\\040", with: " ")
            let inside = point == "/" || real == point || real.hasPrefix(point + "/")
            if inside && point.count >= best.count {
                best = point
                bestType = String(f[2])
            }
        }
        return bestType == "tmpfs" || bestType == "ramfs"
    }
}
