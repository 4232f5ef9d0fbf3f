import Foundation

/// The path of a helper executable of this package (`cstore-testchild`, `swiftstore-testchild`),
/// or nil if it cannot be found (build with `swift build --build-tests`).
///
/// SwiftPM puts every product of a build in one directory, so it is looked for next to the test
/// binary (and up from inside a bundle), then in the debug directory of every scratch path
/// (`.build*`) under the package root and the current directory.
public func testExecutable(named name: String) -> String? {
    let fm = FileManager.default
    var dirs: [URL] = []
    // The test binary: /proc/self/exe is the most reliable on Linux; the others cover macOS
    // bundles (X.xctest/Contents/MacOS/X) and runners that exec through a wrapper.
    if let exe = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        dirs.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
    }
    if let exe = Bundle.main.executableURL { dirs.append(exe.resolvingSymlinksInPath().deletingLastPathComponent()) }
    dirs.append(Bundle.main.bundleURL.deletingLastPathComponent())
    if let first = CommandLine.arguments.first {
        dirs.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent())
    }
    for a in CommandLine.arguments where a.hasSuffix(".xctest") {
        dirs.append(URL(fileURLWithPath: a).deletingLastPathComponent())
    }
    var candidates: [URL] = []
    for d in dirs {
        var u = d
        for _ in 0..<4 { // up from inside a bundle to the build directory
            candidates.append(u.appendingPathComponent(name))
            u = u.deletingLastPathComponent()
        }
    }
    // The package root is this file's directory's grandparent; scratch paths are .build*.
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    for base in [root, URL(fileURLWithPath: fm.currentDirectoryPath)] {
        let scratch = ((try? fm.contentsOfDirectory(atPath: base.path)) ?? []).filter { $0.hasPrefix(".build") }
        for s in scratch.sorted() {
            candidates.append(base.appendingPathComponent(s).appendingPathComponent("debug").appendingPathComponent(name))
        }
    }
    return candidates.first { fm.isExecutableFile(atPath: $0.path) }?.path
}

/// The `swiftstore` tool as its own package builds it (tools/swiftstore, `make tool`, which
/// `make test` runs first), or nil when it is not built.
public let swiftstoreToolPath: String? = {
    let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    let p = repo.appendingPathComponent("tools/swiftstore/.build/debug/swiftstore").path
    var isDir: ObjCBool = false
    guard FileManager.default.fileExists(atPath: p, isDirectory: &isDir), !isDir.boolValue,
          FileManager.default.isExecutableFile(atPath: p) else { return nil }
    return p
}()
