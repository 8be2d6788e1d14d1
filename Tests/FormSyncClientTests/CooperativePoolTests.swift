import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

/// Issue 32: no thread of Swift's cooperative pool waits for the disk. More outboxes than the
/// pool has threads each wait for an fsync that is held; unrelated async work must still run.
/// Before, a lone enqueue ran its fsync on the actor's thread and a shared one in a detached
/// task, both threads of the pool: with the disk slow, the app's other async work stalled.
struct CooperativePoolTests {
    final class Flags: Sendable {
        let armed = Atomic<Bool>(false)
        let entered = Atomic<Int>(0)
        let ran = Atomic<Bool>(false)
    }

    @Test func asyncWorkRunsWhileEveryOutboxWaitsForAHeldFsync() async throws {
        // The fsync of each log blocks once armed, until released.
        try await expectThePoolFree(heldIn: "their fsync") { h, hold in
            h.syncLog = { descriptor in
                hold()
                return fdatasync(descriptor)
            }
            return try h.open()
        }
    }

    /// Before, every statement ran on the actor's thread, one of the pool's: an outbox held
    /// inside a commit (a slow disk, a lock) held a pool thread with it. Now each outbox's
    /// statements run on its database's own thread.
    @Test func asyncWorkRunsWhileEveryOutboxIsHeldInsideACommit() async throws {
        // Called inside each commit, on the thread that runs the outbox's statements.
        try await expectThePoolFree(heldIn: "a commit") { h, hold in
            let outbox = try h.open()
            await outbox.observeCommits { _ in hold() }
            return outbox
        }
    }

    /// Opens more outboxes than the pool has threads, each through `open`, which installs
    /// `hold` where the outbox should block (it blocks once armed, until released); then every
    /// outbox enqueues, and a task started while all of them are held must run.
    private func expectThePoolFree(
        heldIn place: String, open: (Harness, @escaping @Sendable () -> Void) async throws -> Outbox
    ) async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 2
        let held = DispatchSemaphore(value: 0)
        let flags = Flags()
        let hold: @Sendable () -> Void = {
            guard flags.armed.load(ordering: .relaxed) else { return }
            flags.entered.add(1, ordering: .relaxed)
            _ = held.wait(timeout: .now() + 400)  // past the watch below, however loaded the machine
        }
        var harnesses: [Harness] = []
        var outboxes: [Outbox] = []
        for _ in 0..<count {
            let h = try Harness()
            outboxes.append(try await open(h, hold))
            harnesses.append(h)
        }
        flags.armed.store(true, ordering: .relaxed)
        let enqueues = outboxes.enumerated().map { index, outbox in
            Task { try await outbox.enqueue(order(Int64(index + 1)), documentID: "held-\(index)") }
        }
        let (reached, observed) = await watch(flags, until: count)
        #expect(reached == count, "only \(reached) of \(count) outboxes reached \(place): the others found no thread")
        for _ in 0..<count { held.signal() }
        #expect(observed, "a task could not run while \(count) outboxes were held in \(place): the pool was blocked")
        for task in enqueues { _ = try await task.value }
        for outbox in outboxes { #expect(await outbox.stateCounts()[.savedOnDevice] == 1) }
        _ = harnesses
    }

    /// Watched from a thread outside the pool, so that the watching needs no pool thread:
    /// waits until `count` outboxes are held, then starts a task and reports whether it ran.
    private func watch(_ flags: Flags, until count: Int) async -> (reached: Int, ran: Bool) {
        await withCheckedContinuation { (continuation: CheckedContinuation<(Int, Bool), Never>) in
            Thread.detachNewThread {
                // Generous windows: beside the rest of the suite (a simulation can hold a pool
                // thread for a minute), the pool can be busy for a while.
                var until = Date().addingTimeInterval(120)
                while flags.entered.load(ordering: .relaxed) < count && Date() < until { usleep(1000) }
                let reached = flags.entered.load(ordering: .relaxed)
                Task.detached { flags.ran.store(true, ordering: .relaxed) }
                until = Date().addingTimeInterval(120)
                while !flags.ran.load(ordering: .relaxed) && Date() < until { usleep(1000) }
                continuation.resume(returning: (reached, flags.ran.load(ordering: .relaxed)))
            }
        }
    }

    /// `Outbox.open` reads, migrates and fsyncs the database on a queue of its own: the open's
    /// fsync of the log (the injected `syncLog`) runs there, not on the awaiting task's thread.
    @Test func openingFromAsyncCodeRunsTheOpenOffThePool() async throws {
        let h = try Harness()
        let onOpenQueue = Mutex<[Bool]>([])
        var environment = OutboxEnvironment(now: { 1_796_025_600_000 }, random: { 0.5 }, newID: { UUID().uuidString })
        environment.syncLog = { descriptor in
            onOpenQueue.withLock { $0.append(DispatchQueue.getSpecific(key: Outbox.openQueueKey) == true) }
            return fdatasync(descriptor)
        }
        let outbox = try await Outbox.open(
            path: h.path, forms: Harness.forms, transport: h.transport, configuration: h.configuration, environment: environment)
        #expect(onOpenQueue.withLock { $0 } == [true], "the open's fsync ran off the open queue")
        try await outbox.enqueue(order(1), documentID: "after-open")
        #expect(await outbox.stateCounts()[.savedOnDevice] == 1)
    }

    /// Each outbox has a thread of its own: it must end with the outbox, or an app that opens
    /// outboxes (one per signed-in account, say) would keep a thread per outbox it ever opened.
    /// The executor is held by its thread until the thread ends.
    @Test func anOutboxsThreadEndsWhenTheOutboxIsReleased() async throws {
        let h = try Harness()
        weak var executor: AnyObject?
        do {
            let outbox = try h.open()
            try await outbox.enqueue(order(1), documentID: "one")
            _ = await outbox.flush()
            executor = outbox.executorObject
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while executor != nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(executor == nil, "the outbox's thread outlived it")
    }

    #if os(Linux)
        /// The outbox's thread carries its name where the system shows threads (`perf`, `top -H`,
        /// `/proc`): Foundation's `Thread.name` alone leaves it named after the pool thread that
        /// opened the outbox, and a profile then cannot tell the database's work from the pool's.
        @Test func anOutboxsThreadIsNamedForTheSystem() async throws {
            let h = try Harness()
            let outbox = try h.open()
            try await outbox.enqueue(order(1), documentID: "one")
            func names() -> [String] {
                let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
                return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while !names().contains(where: { $0.hasPrefix("formsync.outbox") }) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(names().contains { $0.hasPrefix("formsync.outbox") }, "threads: \(Set(names()).sorted())")
            _ = outbox
        }
    #endif
}
