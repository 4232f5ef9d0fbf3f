// The core's log function (cstore.h, "Logging"): the function and context set are read back by
// cs_log_get, so a caller that replaces them for a while can put back what it found.

import CStore
import Foundation
import Testing

@Suite struct LogFunctionTests {
    @Test func theFunctionFoundIsPutBack() {
        processLogLock.lock()
        defer { processLogLock.unlock() }
        var outerFn: cs_log_fn?
        var outerCtx: UnsafeMutableRawPointer?
        cs_log_get(&outerFn, &outerCtx)
        defer { cs_log_set(outerFn, outerCtx) }

        let first = CoreLogSink(), second = CoreLogSink()
        let fn: cs_log_fn = { ctx, level, _, message in
            Unmanaged<CoreLogSink>.fromOpaque(ctx!).takeUnretainedValue().add(level, String(cString: message!))
        }
        cs_log_set(fn, Unmanaged.passUnretained(first).toOpaque())
        var foundFn: cs_log_fn?
        var foundCtx: UnsafeMutableRawPointer?
        cs_log_get(&foundFn, &foundCtx)
        #expect(foundFn != nil)
        #expect(foundCtx == Unmanaged.passUnretained(first).toOpaque())

        cs_log_set(fn, Unmanaged.passUnretained(second).toOpaque())
        cs_log_message(Int32(CS_LOG_WARN), "Realm.Storage", "to the second")
        cs_log_set(foundFn, foundCtx)
        cs_log_message(Int32(CS_LOG_WARN), "Realm.Storage", "to the first")
        #expect(second.lines.map(\.1) == ["to the second"])
        #expect(first.lines.map(\.1) == ["to the first"])

        cs_log_set(nil, nil)
        cs_log_get(&foundFn, &foundCtx)
        #expect(foundFn == nil)
        #expect(foundCtx == nil)
    }
}
