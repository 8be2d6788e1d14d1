import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Synchronization
import Testing

/// The engine schedules flushes by itself: on enqueue, at the earliest due time, on an "online"
/// hint; after an outage it probes with backoff and only then drains again.
struct SyncEngineTests {
    func environment(_ h: Harness) -> OutboxEnvironment {
        let clock = h.clock
        return OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: { h.ids.next() })
    }

    /// A sleep that moves the harness clock instead of waiting: hours pass in microseconds.
    func virtualSleep(_ h: Harness) -> @Sendable (Int64) async -> Void {
        let clock = h.clock
        return { milliseconds in
            clock.advance(by: milliseconds)
            await Task.yield()
        }
    }

    @Test func itSendsWhatIsEnqueuedWithoutAnyoneCallingFlush() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let engine = SyncEngine(outbox: outbox, environment: environment(h), sleep: virtualSleep(h))
        let running = Task { await engine.run() }
        for n in 1...5 { try await outbox.enqueue(order(Int64(n)), documentID: "d\(n)") }
        await eventually("five deliveries") { await outbox.stateCounts() == [.confirmed: 5] }
        running.cancel()
        await running.value
        #expect(engine.state == .paused)
        #expect(Set(h.sentDocuments) == ["d1", "d2", "d3", "d4", "d5"])
    }

    @Test func itPullsAfterItsFirstPassAndAfterEveryPassThatDelivered() async throws {
        let h = try Harness()
        let outbox = try h.open()
        // Time never passes here (every sleep waits until cancelled): only events can pull.
        let engine = SyncEngine(outbox: outbox, environment: environment(h), sleep: { _ in try? await Task.sleep(for: .seconds(3600)) })
        let running = Task { await engine.run() }
        await eventually("the first pull") { h.transport.feedCursors.count == 1 }
        try await outbox.enqueue(order(1))
        await eventually("the delivery") { await outbox.stateCounts() == [.confirmed: 1] }
        await eventually("a pull after it") { h.transport.feedCursors.count == 2 }
        running.cancel()
        await running.value
        #expect(engine.lastPullReport?.caughtUp == true)
    }

    @Test func itPullsAgainOnItsScheduleWhenNothingElseHappens() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let start = h.clock.now
        let engine = SyncEngine(
            outbox: outbox, configuration: SyncEngine.Configuration(pullInterval: .milliseconds(60_000)), environment: environment(h),
            sleep: virtualSleep(h))
        let running = Task { await engine.run() }
        await eventually("three pulls") { h.transport.feedCursors.count >= 3 }
        running.cancel()
        await running.value
        #expect(h.clock.now - start >= 120_000)  // two intervals passed on the virtual clock
        #expect(h.transport.requests.isEmpty)
    }

    @Test func aPullHangingOnTheNetworkDoesNotHoldUpTheEnginesSends() async throws {
        let h = try Harness()
        let outbox = try h.open()
        h.transport.scriptFeed(.hang)
        let engine = SyncEngine(outbox: outbox, environment: environment(h), sleep: virtualSleep(h))
        let running = Task { await engine.run() }
        await eventually("the pull to hang") { h.transport.hangingFeedCount == 1 }
        for n in 1...3 { try await outbox.enqueue(order(Int64(n)), documentID: "d\(n)") }
        await eventually("three deliveries") { await outbox.stateCounts() == [.confirmed: 3] }
        #expect(h.transport.hangingFeedCount == 1)  // still waiting, and nothing waited for it
        h.transport.releaseFeed(.page(ChangePage(changes: [], cursor: "c1", more: false)))
        running.cancel()
        await running.value
    }

    @Test func itWakesAtTheEarliestDueTimeAfterABackoff() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        h.transport.script(.transient(reason: "503", retryAfter: .milliseconds(30_000)))
        let start = h.clock.now
        let engine = SyncEngine(outbox: outbox, environment: environment(h), sleep: virtualSleep(h))
        let running = Task { await engine.run() }
        await eventually("the retry to land") { await outbox.stateCounts() == [.confirmed: 1] }
        running.cancel()
        await running.value
        #expect(h.transport.requests.count == 2)
        #expect(h.clock.now - start >= 30_000)  // not before the server asked
    }

    @Test func afterAnOutageItProbesWithBackoffAndSendsOnlyOnceTheServerAnswers() async throws {
        let h = try Harness()
        h.transport.reachable = false
        let outbox = try h.open()
        for n in 1...20 { try await outbox.enqueue(order(Int64(n)), documentID: "d\(n)") }
        for _ in 0..<4 { h.transport.script(.unreachable(reason: "no network")) }
        let start = h.clock.now
        let outageEnds = start + 10 * 60_000
        let clock = h.clock
        let transport = h.transport
        let engine = SyncEngine(
            outbox: outbox, environment: environment(h),
            sleep: { milliseconds in
                clock.advance(by: milliseconds)
                if clock.now >= outageEnds { transport.reachable = true }
                await Task.yield()
            })
        let running = Task { await engine.run() }
        await eventually("everything to land") { await outbox.stateCounts() == [.confirmed: 20] }
        running.cancel()
        await running.value
        #expect(h.transport.requests.count == 4 + 20)  // the first pass's 4 in-flight sends, then each once
        // One probe per backoff step: 1, 2, 4 … 120 s over ten minutes is about a dozen, never one per lane.
        #expect(h.transport.probeCount >= 5)
        #expect(h.transport.probeCount <= 15)
        #expect(try await outbox.parkedItems().isEmpty)
        #expect(try await outbox.items(in: [.confirmed]).allSatisfy { $0.attempts == 1 })
    }

    @Test func anOnlineHintCutsTheNetworkWaitShort() async throws {
        let h = try Harness()
        h.transport.reachable = false
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        h.transport.script(.unreachable(reason: "no network"))
        let (hints, hint) = AsyncStream.makeStream(of: Bool.self)
        // Real sleeps, and a first backoff of a minute: only the hint can end the wait in time.
        let engine = SyncEngine(
            outbox: outbox,
            configuration: SyncEngine.Configuration(
                networkBackoff: RetryPolicy(baseDelay: .milliseconds(60_000), maxDelay: .milliseconds(60_000))),
            environment: environment(h))
        let states = engine.states()
        let running = Task { await engine.run(connectivity: hints) }
        let waiting = await StreamReading.read(states) { state in
            if case .waitingForNetwork = state { return true } else { return false }
        }
        #expect(waiting.reached)
        h.transport.reachable = true
        hint.yield(true)
        await eventually("the delivery") { await outbox.stateCounts() == [.confirmed: 1] }
        engine.stop()
        await running.value
        #expect(h.transport.probeCount == 1)
    }

    @Test func stoppingCancelsWhatIsOnTheWireAndKeepsItsKey() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await outbox.enqueue(order(1), documentID: "d1")
        h.transport.script(.hang)
        let engine = SyncEngine(outbox: outbox, environment: environment(h), sleep: virtualSleep(h))
        let running = Task { await engine.run() }
        await eventually("the request on the wire") { h.transport.hangingCount == 1 }
        engine.stop()
        await running.value
        #expect(engine.state == .paused)
        let item = try #require(try await outbox.item(1))
        #expect(item.state == .savedOnDevice)
        #expect(item.attempts == 0)
        let key = h.transport.requests[0].attemptID
        #expect(await outbox.flush().sent == 1)
        #expect(h.transport.requests.map(\.attemptID) == [key, key])
    }

    @Test func aBudgetedSyncReturnsBeforeItsDeadlineAndGivesUpWhatIsStillOnTheWire() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await outbox.enqueue(order(1), documentID: "quick")
        try await outbox.enqueue(order(2), documentID: "slow")
        h.transport.script(.hang) { $0.documentID == "slow" }
        let clock = h.clock
        let transport = h.transport
        // Time passes (on the virtual clock) while the slow request hangs on the wire.
        let engine = SyncEngine(
            outbox: outbox, environment: environment(h),
            sleep: { milliseconds in
                while transport.hangingCount == 0 { await Task.yield() }
                clock.advance(by: milliseconds)
            })
        let deadline = h.clock.now + 30_000
        let report = await engine.sync(for: .seconds(30))
        #expect(h.clock.now < deadline)
        #expect(report.pushed.sent == 1)
        #expect(!report.finished && report.remaining == 1 && report.stoppedBecause == "the deadline came")
        let left = try await outbox.items(in: [.savedOnDevice])
        #expect(left.map(\.documentID) == ["slow"])
        #expect(left.first?.attempts == 0)
    }

    @Test func aFailedTokenRefreshIsRetriedSoonNotAfterAMinute() async throws {
        let h = try Harness()
        let refreshes = Counter()
        h.refresh = {
            refreshes.increment()
            return refreshes.value > 1
        }  // the first refresh fails (a portal answered it)
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        h.transport.script(.authExpired)
        h.transport.script(.authExpired)
        let start = h.clock.now
        let engine = SyncEngine(
            outbox: outbox, configuration: SyncEngine.Configuration(pullInterval: nil), environment: environment(h), sleep: virtualSleep(h))
        let running = Task { await engine.run() }
        await eventually("the delivery") { await outbox.stateCounts() == [.confirmed: 1] }
        running.cancel()
        await running.value
        #expect(refreshes.value == 2)
        #expect(h.clock.now - start < 5_000)  // a second or so of (virtual) waiting, not the one-minute cap
    }

    @Test func itReportsItsStateForAStatusLine() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let engine = SyncEngine(outbox: outbox, environment: environment(h), sleep: virtualSleep(h))
        #expect(engine.state == .paused)
        let states = engine.states()
        // The stream keeps only the newest state, so each step is held until it was read.
        #expect(await StreamReading.read(states) { _ in true }.elements == [.paused])
        try await outbox.enqueue(order(1))
        h.transport.script(.hang)
        let running = Task { await engine.run() }
        #expect(await StreamReading.read(states) { $0 == .syncing }.reached)
        await eventually("the request to hang") { h.transport.hangingCount == 1 }
        h.transport.release(.done(ServerAcknowledgement(serverID: 1)))
        let rest = await StreamReading.read(states) { $0 == .idle(nextDue: nil) }
        running.cancel()
        await running.value
        #expect(rest.reached)
        #expect(await outbox.stateCounts() == [.confirmed: 1])
    }
}
