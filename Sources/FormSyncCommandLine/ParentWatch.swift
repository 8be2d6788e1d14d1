import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tool's process started by a test or harness exits when that parent is gone.
package enum ParentWatch {
    /// Started by a test or harness (`ChildProcess` sets `FORMSYNC_PARENT_PID`): exit when that
    /// parent is gone, so a server or device never outlives a crashed test run (it would hold
    /// the runner's output pipe open, and the runner would wait for it forever).
    package static func exitWithParent() {
        guard let text = ProcessInfo.processInfo.environment["FORMSYNC_PARENT_PID"] else { return }
        // Not passed on: this process's own children (the demo's devices) have another parent.
        unsetenv("FORMSYNC_PARENT_PID")
        guard let parent = Int32(text), parent > 1 else { return }
        guard getppid() == parent else { exit(70) }
        Thread.detachNewThread {
            while getppid() == parent { usleep(200_000) }
            FileHandle.standardError.write(Data("formsync: the process that started this one is gone; exiting\n".utf8))
            exit(70)
        }
    }
}
