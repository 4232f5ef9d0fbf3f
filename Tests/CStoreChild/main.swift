// cstore-testchild: the child process that multi-process and crash tests start and kill.
// Usage: cstore-testchild COMMAND [ARGS...]; see the commands below.
import CStore
import Foundation

let args = CommandLine.arguments
guard args.count >= 2 else {
    FileHandle.standardError.write(Data("usage: cstore-testchild COMMAND ARGS...\n".utf8))
    exit(64)
}
switch args[1] {
case "version":
    print(String(cString: cs_library_version()))
default:
    FileHandle.standardError.write(Data("unknown command \(args[1])\n".utf8))
    exit(64)
}
