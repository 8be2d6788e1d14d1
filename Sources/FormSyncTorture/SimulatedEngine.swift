import FormSyncClient
import Foundation

/// The app's `SyncEngine` inside a simulation: it runs beside the schedule on the outbox of
/// the moment, sleeping on `VirtualTimers`. After every step the simulation lets it settle
/// (it is then waiting on the virtual clock or for work), and when time passes it is woken at
/// each of its own timers on the way, so its backoff, probes and token waits run as they
/// would on a device, in virtual time.
final class SimulatedEngine {
    private let timers: VirtualTimers
    private let environment: OutboxEnvironment
    private let trueNow: @Sendable () -> Int64
    private let setTrueTime: @Sendable (Int64) -> Void
    private let trace: SimulationTrace
    private var engine: SyncEngine?
    private var task: Task<Void, Never>?
    /// How many times the engine was woken by its own timers.
    private(set) var wakes = 0

    init(
        environment: OutboxEnvironment, trueNow: @escaping @Sendable () -> Int64, setTrueTime: @escaping @Sendable (Int64) -> Void,
        trace: SimulationTrace
    ) {
        self.timers = VirtualTimers(now: trueNow)
        self.environment = environment
        self.trueNow = trueNow
        self.setTrueTime = setTrueTime
        self.trace = trace
    }

    /// Starts an engine on `outbox` (the app's launch), once it runs.
    func start(_ outbox: Outbox) async throws {
        let timers = timers
        let engine = SyncEngine(
            outbox: outbox,
            configuration: SyncEngine.Configuration(
                networkBackoff: RetryPolicy(baseDelay: .milliseconds(1000), maxDelay: .milliseconds(120_000)),
                tokenRetry: .milliseconds(60_000),
                pullInterval: nil),
            environment: environment, sleep: { await timers.sleep($0) })
        self.engine = engine
        task = Task { await engine.run() }
        try await settle()
    }

    /// Stops the engine (the app goes away); what it had on the wire goes back to pending.
    func stop() async throws {
        guard let engine, let task else { return }
        engine.stop()
        task.cancel()
        guard await poll({ engine.state == .paused }) else { throw TortureError("the sync engine did not stop (state \(engine.state))") }
        await task.value
        self.engine = nil
        self.task = nil
    }

    /// Waits, in real time and bounded, until the engine is waiting: on a virtual timer, or
    /// for work when nothing is due.
    func settle() async throws {
        guard let engine else { return }
        let timers = timers
        var idleChecks = 0
        let settled = await poll {
            switch engine.state {
            case .paused, .syncing:
                idleChecks = 0
                return false
            case .idle(nextDue: nil):
                // No timer: it waits for work. A capture's signal may still be on its way.
                idleChecks += 1
                return idleChecks > 50
            case .idle, .waitingForNetwork, .waitingForToken:
                idleChecks = 0
                return timers.waiting > 0
            case .revoked:
                return true  // the engine ended: nothing more happens
            }
        }
        guard settled else { throw TortureError("the sync engine did not settle (state \(engine.state))") }
    }

    /// Lets `milliseconds` of virtual time pass with the engine running, waking it at each of
    /// its timers on the way.
    func pass(_ milliseconds: Int64) async throws {
        let end = trueNow().addingClamped(max(0, milliseconds))
        var steps = 0
        while true {
            try await settle()
            guard engine != nil, let next = timers.earliest, next <= end, steps < 1_000 else { break }
            steps += 1
            wakes += 1
            setTrueTime(max(trueNow(), next))
            let state = engine.map { "\($0.state)" } ?? "-"
            timers.wake(through: next)
            trace.add("  engine woken (\(state))")
        }
        setTrueTime(max(trueNow(), end))
    }

    /// Polls `condition` between yields for the first 5 ms (the outbox works on its own
    /// thread meanwhile), then between 1 ms sleeps, at most 60,000 of them: about a minute on
    /// an idle machine. The bound counts this task's own turns, not the wall clock, so a busy
    /// machine that keeps the task waiting for a thread does not use it up: only a hang does.
    private func poll(_ condition: () -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let start = clock.now
        var sleeps = 0
        while sleeps < 60_000 {
            if condition() { return true }
            if start.duration(to: clock.now) < .milliseconds(5) {
                await Task.yield()
            } else {
                try? await Task.sleep(for: .milliseconds(1))
                sleeps += 1
            }
        }
        return condition()
    }
}
