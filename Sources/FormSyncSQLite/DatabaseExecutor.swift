import Foundation
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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
    /// The identity of the executor's thread (0 until it starts).
    private let threadID = Atomic<UInt>(0)

    /// A new executor whose thread is named `name` (debuggers and `perf` show it).
    package init(name: String) {
        let thread = Thread { [self] in
            // Before any job runs; until then no caller is on this thread, and none is told so.
            threadID.store(Self.currentThreadID(), ordering: .releasing)
            Self.nameCurrentThread(name)
            run()
        }
        thread.name = name
        thread.qualityOfService = .userInitiated
        // As large as a default thread's: a flush's deliveries, and the parsing of their
        // replies, run here too (address space only; pages are used as touched).
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Whether the caller runs on this executor's thread.
    package var isCurrent: Bool { threadID.load(ordering: .acquiring) == Self.currentThreadID() }

    /// Stops the process when the caller is not on this executor's thread (what
    /// `assumeIsolated` and `preconditionIsolated` ask of a custom executor).
    package func checkIsolated() {
        precondition(isCurrent, "not on the database's thread")
    }

    /// The calling thread's identity, as a number.
    static func currentThreadID() -> UInt {
        #if canImport(Darwin)
            return UInt(bitPattern: pthread_self())
        #elseif canImport(Glibc)
            return UInt(pthread_self())
        #elseif canImport(Musl)
            return unsafeBitCast(pthread_self(), to: UInt.self)
        #endif
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

    /// Names the calling thread as the system sees it (`perf`, `top -H`, crash reports):
    /// Foundation's `Thread.name` does not reach the kernel on Linux, where a thread otherwise
    /// keeps the name of the one that started it. Linux takes at most 15 bytes, written to
    /// `/proc/thread-self/comm` (`pthread_setname_np` is not in Swift's Glibc module); a
    /// system without it leaves the name as it was.
    private static func nameCurrentThread(_ name: String) {
        #if canImport(Darwin)
            _ = pthread_setname_np(name)
        #elseif canImport(Glibc) || canImport(Musl)
            let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        #endif
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
