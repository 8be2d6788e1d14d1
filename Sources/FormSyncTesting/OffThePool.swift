import Foundation

/// Runs a test's blocking or long CPU-bound work on threads of its own, off Swift's cooperative
/// pool, in the same task (its task-locals, and so Swift Testing's `#expect`, still apply).
///
/// Every test of a `swift test` run is a task on the one cooperative pool, which has a thread
/// per core: two on a two-core machine. A test that waits for a process, reads a socket with a
/// timeout or runs for seconds without a suspension holds one of them, and every other test's
/// tasks (an engine, a poll, a reply's continuation) wait behind it. On a busy machine that
/// wait reached a minute and a half, and tests whose code had already answered failed.
///
/// Two kinds of work, two executors. `run` is for work that waits (a process, a socket, a
/// semaphore): a thread for each, however many wait at once. `compute` is for work that keeps
/// a core busy for seconds (differential runs, fuzzing, scans of the sources): at most a thread
/// per core at once, so that such tests, all started together, do not take every core's time
/// from the servers and clocks of the tests running beside them (on one core, dozens of them at
/// once stretched a reply past a one-second timeout).
package enum OffThePool {
    /// Runs `body`, which waits, on a thread outside the cooperative pool; what it returns.
    package static func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        try await withTaskExecutorPreference(DedicatedThreads.shared, operation: body)
    }

    /// Runs `body`, which computes for long, on one of at most a thread per core outside the
    /// cooperative pool; what it returns.
    package static func compute<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        try await withTaskExecutorPreference(DedicatedThreads.computing, operation: body)
    }

    /// Whether the caller runs on one of `DedicatedThreads`' threads (a test checks its own).
    package static var isOffThePool: Bool { Thread.current.threadDictionary[DedicatedThreads.threadName] != nil }
}

/// A task executor with threads of its own: a thread for every job that runs at once, up to
/// `maxThreads` (later jobs wait for one). Idle threads end after five seconds.
package final class DedicatedThreads: TaskExecutor, @unchecked Sendable {
    /// For work that waits: up to 64 threads.
    package static let shared = DedicatedThreads(maxThreads: 64)
    /// For work that computes: a thread per core.
    package static let computing = DedicatedThreads(maxThreads: ProcessInfo.processInfo.activeProcessorCount)
    static let threadName = "formsync.off"

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var idle = 0
    private var threads = 0
    private let maxThreads: Int

    init(maxThreads: Int) {
        self.maxThreads = max(1, maxThreads)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if jobs.count > idle && threads < maxThreads {
            threads += 1
            let thread = Thread { [self] in work() }
            thread.name = Self.threadName
            thread.stackSize = 8 << 20
            thread.start()
        }
        condition.signal()
        condition.unlock()
    }

    private func work() {
        Thread.current.threadDictionary[Self.threadName] = true
        condition.lock()
        while true {
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
                condition.lock()
                continue
            }
            idle += 1
            let woken = condition.wait(until: Date().addingTimeInterval(5))
            idle -= 1
            if !woken && jobs.isEmpty {
                threads -= 1
                condition.unlock()
                return
            }
        }
    }
}
