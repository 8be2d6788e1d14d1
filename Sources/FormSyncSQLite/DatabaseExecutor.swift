import Foundation

/// The serial executor of one database's owner: a thread of its own that runs the owner's jobs
/// one at a time. Every SQLite call and every fsync the owner makes runs there, never on Swift's
/// cooperative pool, whose few threads the app's other async work needs while the disk is slow.
///
/// Actors that share the owner's connection (the outbox, the record store) return this
/// executor as their `unownedExecutor`, so calls between them switch no thread, and a
/// connection is only ever used by the one thread.
///
/// The thread ends once `shutdown()` was called and its queue is empty (the owner calls it from
/// its `deinit`, after which no actor holds the executor any more).
package final class DatabaseExecutor: SerialExecutor, TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var stopping = false

    /// A new executor whose thread is named `name` (debuggers and `perf` show it).
    package init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.qualityOfService = .userInitiated
        // As large as a default thread's: a flush's deliveries, and the parsing of their
        // replies, run here too (address space only; pages are used as touched).
        thread.stackSize = 8 << 20
        thread.start()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    package func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// How many jobs wait behind the running one: an owner that finds none may block its thread
    /// on a short fsync instead of handing it to another thread, since nobody waits for it.
    package var waitingJobs: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count - head
    }

    /// Ends the thread once it has run every job already queued.
    package func shutdown() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while true {
            while head == jobs.count && !stopping { condition.wait() }
            if head == jobs.count {
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedSerialExecutor())
            condition.lock()
        }
    }
}
