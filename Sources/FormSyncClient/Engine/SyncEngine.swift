import FormSyncModel
import Foundation
import Synchronization

/// Runs an outbox by itself: an app starts it once and it flushes whenever work is due — at the
/// earliest due time, right after an enqueue or a fix, and when the app's connectivity stream
/// says "online" — and gets out of the way when there is no network.
///
/// After a pass finds no server (`FlushReport.offline`) the engine sends nothing more: it waits
/// with its own backoff, asks the server's health endpoint (`Outbox.probe()`), and resumes the
/// drain only when that answers. Connectivity from the OS is a hint that cuts the wait short,
/// never a verdict. Cancelling the task that runs `run(connectivity:)`, or calling `stop()`,
/// stops new attempts at once; the engine stops waiting for the requests on the wire (each ends
/// by its reply or its timeout, never cancelled mid-reply) and their items go back to pending
/// with the same idempotency key, which the server's ledger answers if one was committed.
public final class SyncEngine: Sendable {
    /// What the engine is doing, for a status line.
    public enum State: Sendable, Equatable {
        /// Nothing to send now; `nextDue` is when something is, nil for nothing.
        case idle(nextDue: Date?)
        /// A pass is sending.
        case syncing
        /// No server answered; the next probe is at `until`.
        case waitingForNetwork(until: Date)
        /// The token could not be refreshed; waiting for the app (or the next try).
        case waitingForToken
        /// The server revoked the device (`Outbox.deviceRevoked`): the engine stopped; nothing
        /// more goes out until the device is enrolled again and `Outbox.clearRevocation` runs.
        case revoked(reason: String)
        /// Not running: never started, stopped or cancelled.
        case paused
    }

    /// How the engine waits.
    public struct Configuration: Sendable {
        /// Backoff between health probes while no server answers (jittered, never zero).
        public var networkBackoff: RetryPolicy
        /// The longest wait before trying again after a token refresh failed; the waits start at
        /// a second and double up to it (a refresh can fail for a passing reason, such as a
        /// captive portal answering `/auth/refresh`).
        public var tokenRetry: Duration { .milliseconds(tokenRetryMilliseconds) }
        /// The least time between two passes that made no progress, so a lane that cannot be
        /// leased never spins the engine.
        public var idleFloor: Duration { .milliseconds(idleFloorMilliseconds) }
        /// How often the records are pulled when nothing else happens (1 second to a day); nil
        /// never pulls. A pull also follows every pass that delivered something, and the first
        /// pass of a run.
        public var pullInterval: Duration? { pullIntervalMilliseconds.map { .milliseconds($0) } }
        /// In the foreground (`run`), with a server that says `wait-for-changes`: the longest a
        /// pull lets the server hold an empty page, pulling again as soon as it answers, so that
        /// a change reaches the device in about a second instead of at the next `pullInterval`
        /// (which it replaces while it works; without the feature, or with nil, the engine polls).
        /// The transport asks for a few seconds less than its own timeout at most.
        public var waitForChanges: Duration? { waitForChangesMilliseconds.map { .milliseconds($0) } }

        var tokenRetryMilliseconds: Int64
        var idleFloorMilliseconds: Int64
        var pullIntervalMilliseconds: Int64?
        var waitForChangesMilliseconds: Int64?

        public init(
            networkBackoff: RetryPolicy = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(120)),
            tokenRetry: Duration = .seconds(60), idleFloor: Duration = .milliseconds(250), pullInterval: Duration? = .seconds(300),
            waitForChanges: Duration? = .seconds(25)
        ) {
            self.networkBackoff = networkBackoff
            self.tokenRetryMilliseconds = max(1, tokenRetry.clampedMilliseconds)
            self.idleFloorMilliseconds = max(1, idleFloor.clampedMilliseconds)
            self.pullIntervalMilliseconds = pullInterval.map { min(max(1000, $0.clampedMilliseconds), 86_400_000) }
            self.waitForChangesMilliseconds = waitForChanges.map { min(max(1000, $0.clampedMilliseconds), 600_000) }
        }
    }

    enum Event: Sendable {
        case work, online
        case timer(Int)
        case stop
    }

    private struct Shared {
        var state: State = .paused
        var running = false
        var stopped = false
        var events: AsyncStream<Event>.Continuation?
        var flush: Task<FlushReport, Never>?
        var lastReport: FlushReport?
        var lastPull: PullReport?
        var pullRunning = false
        /// Whether the live loop runs (asking the server, or holding pulls).
        var live = false
        /// Whether the server holds the live loop's pulls (interval pulls are not needed then).
        var liveHolding = false
        var pullAgain = false
        var listeners: [UUID: AsyncStream<State>.Continuation] = [:]
    }

    private let outbox: Outbox
    private let configuration: Configuration
    private let now: @Sendable () -> Int64
    private let random: @Sendable () -> Double
    private let sleep: @Sendable (Int64) async -> Void
    private let shared = Mutex(Shared())

    /// - Parameters:
    ///   - now: the clock, ms since 1970 (the outbox's clock, normally).
    ///   - sleep: waits the given milliseconds (or until cancelled); injected so that a test can
    ///     run hours of backoff on a virtual clock.
    public init(
        outbox: Outbox, configuration: Configuration = Configuration(), environment: OutboxEnvironment = .live,
        sleep: @escaping @Sendable (Int64) async -> Void = { try? await Task.sleep(for: .milliseconds($0)) }
    ) {
        self.outbox = outbox
        self.configuration = configuration
        self.now = environment.now
        self.random = environment.random
        self.sleep = sleep
    }

    /// The current state.
    public var state: State { shared.withLock { $0.state } }

    /// What the engine's outbox does, attempt by attempt (see `SyncEvent`).
    public func events() -> AsyncStream<SyncEvent> { outbox.events() }

    /// The report of the last pass, if any.
    public var lastReport: FlushReport? { shared.withLock { $0.lastReport } }

    /// The report of the last pull, if any.
    public var lastPullReport: PullReport? { shared.withLock { $0.lastPull } }

    /// The engine's states, starting with the present; a slow reader only misses intermediate ones.
    public func states() -> AsyncStream<State> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: State.self, bufferingPolicy: .bufferingNewest(1))
        shared.withLock {
            $0.listeners[id] = continuation
            continuation.yield($0.state)
        }
        continuation.onTermination = { [weak self] _ in self?.shared.withLock { _ = $0.listeners.removeValue(forKey: id) } }
        return stream
    }

    private func set(_ state: State) {
        shared.withLock {
            guard $0.state != state else { return }
            $0.state = state
            for listener in $0.listeners.values { listener.yield(state) }
        }
    }

    /// Stops the engine: no new attempt starts; the engine stops waiting for requests on the
    /// wire and their items return to pending. `run` returns soon after.
    public func stop() {
        let (events, flush) = shared.withLock { s -> (AsyncStream<Event>.Continuation?, Task<FlushReport, Never>?) in
            s.stopped = true
            return (s.events, s.flush)
        }
        flush?.cancel()
        events?.yield(.stop)
    }

    /// `run(connectivity:)` fed from the app's network readings (on iOS, each `NWPath` as
    /// `NetworkPath(isReachable: path.status == .satisfied, cost: path.isConstrained ?
    /// .constrained : path.isExpensive ? .expensive : .unmetered)`): each reading's cost goes
    /// to the outbox (`Outbox.setNetworkCost`), and a reachable path wakes the engine.
    public func run(paths: AsyncStream<NetworkPath>) async {
        let (hints, continuation) = AsyncStream.makeStream(of: Bool.self)
        let outbox = self.outbox
        let forwarding = Task {
            for await path in paths {
                try? await outbox.setNetworkCost(path.cost)
                continuation.yield(path.isReachable)
            }
            continuation.finish()
        }
        defer { forwarding.cancel() }
        await run(connectivity: hints)
    }

    /// Runs until the calling task is cancelled or `stop()` is called. `connectivity` is the
    /// app's hint stream (on iOS from `NWPathMonitor`): `true` means "maybe online now", which
    /// wakes the engine to probe or flush at once. Calling `run` while it runs returns at once.
    public func run(connectivity: AsyncStream<Bool>? = nil) async {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let started = shared.withLock { s -> Bool in
            guard !s.running else { return false }
            s.running = true
            s.stopped = false
            s.events = continuation
            return true
        }
        guard started else { return }
        let signals = outbox.workSignals()
        let forwarders = [
            Task { for await _ in signals { continuation.yield(.work) } },
            Task {
                guard let connectivity else { return }
                for await online in connectivity where online { continuation.yield(.online) }
            },
        ]
        defer {
            for forwarder in forwarders { forwarder.cancel() }
            continuation.finish()
            shared.withLock {
                $0.running = false
                $0.events = nil
            }
            if case .revoked = state {} else { set(.paused) }
        }
        var iterator = events.makeAsyncIterator()
        var timerID = 0
        var networkSteps = 0
        var tokenSteps = 0
        var waitingForNetwork = await outbox.isWaitingForNetwork
        // Pulls run beside the passes, never in front of them: a pass started while a pull
        // waits on the network sends at once. A pull asked for while one runs follows it (the
        // running one may have read the feed before the delivery it should reflect).
        var pullTask: Task<Void, Never>?
        var lastPullAt: Int64?
        defer { pullTask?.cancel() }
        let outbox = self.outbox
        func startPull() {
            guard configuration.pullIntervalMilliseconds != nil else { return }
            lastPullAt = now()
            let start = shared.withLock { s -> Bool in
                if s.pullRunning {
                    s.pullAgain = true
                    return false
                }
                s.pullRunning = true
                return true
            }
            guard start else { return }
            pullTask = Task { [self] in
                while !Task.isCancelled {
                    let report = try? await outbox.pull()
                    // The files of pulled records marked `download: eager`, beside the pull too.
                    if report != nil { _ = await outbox.fetchEagerFiles() }
                    let again = shared.withLock { s -> Bool in
                        s.lastPull = report
                        if s.pullAgain {
                            s.pullAgain = false
                            return true
                        }
                        s.pullRunning = false
                        return false
                    }
                    if !again { return }
                }
                shared.withLock { $0.pullRunning = false }
            }
        }

        // Changes in seconds: a pull the server holds until something changes, again and again,
        // started once the server answers and says it waits (asked again a minute after a no).
        var liveTask: Task<Void, Never>?
        var liveAskedAt: Int64?
        defer { liveTask?.cancel() }
        func startLive() async {
            guard let wait = configuration.waitForChangesMilliseconds, !shared.withLock({ $0.live }) else { return }
            if let asked = liveAskedAt, now() >= asked, now() < asked.addingClamped(60_000) { return }
            liveAskedAt = now()
            guard await outbox.serverWaitsForChanges() == true else { return }
            shared.withLock {
                $0.live = true
                $0.liveHolding = true
            }
            liveTask = Task { [self] in await live(waiting: wait) }
        }

        let tokenBackoff = RetryPolicy(
            baseDelay: .milliseconds(min(1000, configuration.tokenRetryMilliseconds)),
            maxDelay: .milliseconds(configuration.tokenRetryMilliseconds))

        /// Waits `milliseconds` (forever when nil) or for a wake-up; false when the engine must end.
        func wait(_ milliseconds: Int64?, wakeOnWork: Bool) async -> Bool {
            timerID += 1
            let id = timerID
            let timer = milliseconds.map { delay in
                Task { [sleep] in
                    await sleep(delay)
                    continuation.yield(.timer(id))
                }
            }
            defer { timer?.cancel() }
            while let event = await iterator.next() {
                switch event {
                case .stop: return false
                case .timer(let fired) where fired == id: return true
                case .timer: continue
                case .work: if wakeOnWork { return true }
                case .online: return true
                }
            }
            return false
        }

        while !Task.isCancelled && !shared.withLock({ $0.stopped }) {
            if waitingForNetwork {
                networkSteps += 1
                let delay = configuration.networkBackoff.delay(afterAttempts: networkSteps, random: random(), retryAfterMilliseconds: nil)
                set(.waitingForNetwork(until: Date(millisecondsSince1970: now().addingClamped(delay))))
                guard await wait(delay, wakeOnWork: false) else { break }
                guard await outbox.probe() else { continue }
                waitingForNetwork = false
                networkSteps = 0
            }
            set(.syncing)
            let report = await flushOnce()
            if Task.isCancelled || shared.withLock({ $0.stopped }) { break }
            if report.offline {
                waitingForNetwork = true
                continue
            }
            if let reason = report.deviceRevoked {
                set(.revoked(reason: reason))
                return
            }
            if report.authenticationRequired {
                tokenSteps += 1
                set(.waitingForToken)
                let delay = tokenBackoff.delay(afterAttempts: tokenSteps, random: random(), retryAfterMilliseconds: nil)
                guard await wait(delay, wakeOnWork: true) else { break }
                continue
            }
            tokenSteps = 0
            await startLive()
            if report.sent > 0 || lastPullAt == nil { startPull() }
            let live = shared.withLock { $0.liveHolding }
            if !live, let interval = configuration.pullIntervalMilliseconds, let last = lastPullAt,
                now() >= last.addingClamped(interval) || now() < last
            {
                startPull()
            }
            let due = await outbox.nextDueMilliseconds()
            set(.idle(nextDue: due.map { Date(millisecondsSince1970: $0) }))
            let nextPull =
                live
                ? nil
                : configuration.pullIntervalMilliseconds.flatMap { interval in
                    lastPullAt.map { max(0, $0.addingClamped(interval) - now()) }
                }
            guard var delay = [due.map({ max(0, $0 - now()) }), nextPull].compactMap({ $0 }).min() else {
                guard await wait(nil, wakeOnWork: true) else { break }
                continue
            }
            if report.sent == 0 && report.rejected == 0 && report.conflicts == 0 && report.exhausted == 0 {
                delay = max(delay, configuration.idleFloorMilliseconds)
            }
            if delay > 0 {
                guard await wait(delay, wakeOnWork: true) else { break }
            }
        }
    }

    /// The live loop, started once the server said it waits for changes: pulls with `waiting`
    /// milliseconds of wait, again as soon as each answers. It ends at a pull that failed (no
    /// network, an expired token, a server error), and with a server without the feature: the
    /// engine then polls by `pullInterval`, and starts the loop again after its next pass that
    /// reached the server (a minute after the last start at the soonest).
    ///
    /// A pull that came back empty within a second was not held (a server, or a proxy, that
    /// answers at once): the loop ends rather than spin, and polling takes over.
    private func live(waiting: Int64) async {
        defer {
            shared.withLock {
                $0.live = false
                $0.liveHolding = false
            }
        }
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let started = clock.now
            guard let report = try? await outbox.pull(wait: .milliseconds(waiting)) else { return }
            shared.withLock { $0.lastPull = report }
            if report.upserted > 0 { _ = await outbox.fetchEagerFiles() }
            if report.stoppedBecause != nil { return }
            if report.upserted == 0 && report.deleted == 0 && report.reviews == 0 && started.duration(to: clock.now) < .seconds(1) {
                return
            }
        }
    }

    /// Syncs both ways within `budget` (an iOS background task has about 30 seconds): sends
    /// what is due, retrying what comes back transient and probing through an outage, then
    /// pulls; it stops as soon as everything is delivered and the pull caught up, or when the
    /// budget is spent, and reports what is left. Requests still on the wire at the end are
    /// given up waiting for; their items return to pending with the same key. Not meant to run
    /// beside `run()`.
    public func sync(for budget: Duration) async -> SyncReport {
        let milliseconds = budget.components.seconds.multipliedReportingOverflow(by: 1000)
        let total =
            milliseconds.overflow
            ? Int64.max : milliseconds.partialValue.addingClamped(budget.components.attoseconds / 1_000_000_000_000_000)
        return await sync(deadline: now().addingClamped(max(0, total)))
    }

    /// `sync(for:)` until `date` (by the engine's clock).
    public func sync(until date: Date) async -> SyncReport {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { return await sync(deadline: seconds > 0 ? Int64.max : 0) }
        return await sync(deadline: Int64(max(-9e15, min(9e15, seconds * 1000))))
    }

    private func sync(deadline: Int64) async -> SyncReport {
        var report = SyncReport()
        // Nothing is started that could not end before the deadline.
        let margin = min(1000, max(0, deadline.subtractingClamped(now())) / 4)
        var networkSteps = 0
        push: while !Task.isCancelled, now() < deadline.subtractingClamped(margin) {
            if await outbox.isWaitingForNetwork {
                networkSteps += 1
                let delay = configuration.networkBackoff.delay(afterAttempts: networkSteps, random: random(), retryAfterMilliseconds: nil)
                let left = deadline.subtractingClamped(margin).subtractingClamped(now())
                guard left > 0 else { break }
                await sleep(min(delay, left))
                guard await outbox.probe() else { continue }
            }
            let pass = await bounded(by: deadline.subtractingClamped(margin)) { outbox in await outbox.flush() }
            guard let pass else { break }
            report.add(pass)
            shared.withLock { $0.lastReport = pass }
            if pass.offline { continue }
            if pass.authenticationRequired {
                report.stoppedBecause = "the token could not be refreshed"
                break
            }
            networkSteps = 0
            guard await outbox.hasWorkToSend() else { break push }
            // What is left waits for its retry: wait for it if it falls before the deadline.
            guard now() < deadline.subtractingClamped(margin) else { break }
            guard let due = await outbox.nextDueMilliseconds() else {
                report.stoppedBecause = "what is left waits for something a person must settle"
                break
            }
            guard due < deadline.subtractingClamped(margin) else {
                report.stoppedBecause = "what is left is due after the deadline"
                break
            }
            let wait = due.subtractingClamped(now())
            if wait > 0 { await sleep(wait) }
        }
        let delivered = await !outbox.hasWorkToSend()
        if configuration.pullIntervalMilliseconds != nil, now() < deadline.subtractingClamped(margin), !Task.isCancelled {
            report.pulled = await bounded(by: deadline.subtractingClamped(margin)) { outbox in try? await outbox.pull() } ?? nil
            shared.withLock { $0.lastPull = report.pulled }
        }
        let counts = await outbox.stateCounts()
        report.remaining = [.savedOnDevice, .waitingForNetwork, .sending, .sent].reduce(0) { $0 + (counts[$1] ?? 0) }
        report.needsAttention = [.rejected, .conflict, .exhausted, .blocked].reduce(0) { $0 + (counts[$1] ?? 0) }
        report.finished =
            delivered && report.remaining == 0 && (configuration.pullIntervalMilliseconds == nil || report.pulled?.caughtUp == true)
        if !report.finished && report.stoppedBecause == nil {
            report.stoppedBecause =
                Task.isCancelled ? "cancelled" : now() >= deadline.subtractingClamped(margin) ? "the deadline came" : nil
        }
        return report
    }

    /// Runs `work` on the outbox and gives up waiting for it at `deadline` (its task is then
    /// cancelled: requests on the wire are abandoned and their items return to pending).
    private func bounded<T: Sendable>(by deadline: Int64, _ work: @escaping @Sendable (Outbox) async -> T) async -> T? {
        let window = deadline.subtractingClamped(now())
        guard window > 0 else { return nil }
        let outbox = self.outbox
        let task = Task { await work(outbox) }
        let timer = Task { [sleep] in
            await sleep(window)
            task.cancel()
        }
        let result = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            task.cancel()
        }
        timer.cancel()
        return result
    }

    private func flushOnce() async -> FlushReport {
        let outbox = self.outbox
        let flush = Task { await outbox.flush() }
        if shared.withLock({ s -> Bool in
            s.flush = flush
            return s.stopped
        }) {
            flush.cancel()
        }
        let report = await withTaskCancellationHandler {
            await flush.value
        } onCancel: {
            flush.cancel()
        }
        shared.withLock {
            $0.flush = nil
            $0.lastReport = report
        }
        return report
    }
}
