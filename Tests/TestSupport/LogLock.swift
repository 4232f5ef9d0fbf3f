// The core's log function and level are one for the process, and both test targets are
// linked into one test executable: a test in either that replaces them holds this lock.

import Foundation

/// Held by every test that replaces the core's log function or level (`cs_log_set`,
/// `Logger.shared`, `Logger.setLogLevel`) while it does, and that puts back what it found
/// before unlocking: suites run in parallel, and one test's function would take another's
/// messages, or leave the core without the function the Swift layer installed.
public let processLogLock = NSLock()
