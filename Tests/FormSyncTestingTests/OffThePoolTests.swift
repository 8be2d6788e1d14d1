import FormSyncTesting
import Foundation
import Synchronization
import Testing

/// `OffThePool`: a test's blocking work runs on threads of its own, never one of the
/// cooperative pool's few, and still in the test's task.
struct OffThePoolTests {
    @Test func workRunOffThePoolRunsOnADedicatedThreadInTheSameTask() async {
        #expect(await OffThePool.run { OffThePool.isOffThePool })
        // The test's task-locals (Swift Testing's current test among them) come along.
        #expect(await OffThePool.run { Test.current?.name } == Test.current?.name)
    }

    /// Eight jobs that each block until all eight have started: on the cooperative pool (a
    /// thread per core) they would wait for each other until the bound.
    @Test func jobsThatBlockEachGetAThreadOfTheirOwn() async {
        final class Count: Sendable { let value = Atomic<Int>(0) }
        let started = Count()
        let allMet = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask(executorPreference: DedicatedThreads.shared) {
                    started.value.add(1, ordering: .relaxed)
                    let giveUp = Date().addingTimeInterval(60)
                    while started.value.load(ordering: .relaxed) < 8 && Date() < giveUp { usleep(1000) }
                    return started.value.load(ordering: .relaxed) == 8
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(allMet)
    }

    @Test func anErrorThrownOffThePoolReachesTheCaller() async {
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await OffThePool.run { throw Refused() } }
    }

    /// Work that computes gets at most a thread per core: a job beyond them waits for one.
    @Test func computingWorkRunsAtMostAThreadPerCoreAtOnce() async {
        final class Count: Sendable {
            let running = Atomic<Int>(0)
            let most = Atomic<Int>(0)
        }
        let count = Count()
        let cores = ProcessInfo.processInfo.activeProcessorCount
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<(cores + 3) {
                group.addTask(executorPreference: DedicatedThreads.computing) {
                    let now = count.running.add(1, ordering: .relaxed).newValue
                    _ = count.most.max(now, ordering: .relaxed)
                    usleep(50_000)
                    count.running.subtract(1, ordering: .relaxed)
                }
            }
        }
        #expect(count.most.load(ordering: .relaxed) <= cores)
        #expect(await OffThePool.compute { OffThePool.isOffThePool })
    }
}
