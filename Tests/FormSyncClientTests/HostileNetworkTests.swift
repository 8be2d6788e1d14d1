import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

/// What a network or a clock can do to a flush: an outage, a jumped clock, a zero jitter draw,
/// absurd Retry-After values, a lost wake-up, a cancelled caller.
struct HostileNetworkTests {
    @Test func anOutageOfAnyLengthNeverExhaustsAnItemNorCountsAnAttempt() async throws {
        let h = try Harness()
        let outbox = try h.open()
        for n in 1...10 { try await outbox.enqueue(order(Int64(n)), documentID: "d\(n)") }
        for round in 0..<40 {
            for _ in 0..<4 { h.transport.script(.unreachable(reason: "no route to host")) }
            let before = h.transport.requests.count
            let report = await outbox.flush()
            #expect(report.offline, "round \(round)")
            #expect(report.exhausted == 0)
            // The drain stops at the first "no answer": only what was already on the wire went.
            #expect(h.transport.requests.count - before <= h.configuration.concurrency)
            h.clock.advance(by: 3_600_000)
        }
        #expect(try await outbox.parkedItems().isEmpty)
        let items = try await outbox.items(in: Set(SyncState.allCases))
        #expect(items.allSatisfy { $0.attempts == 0 && $0.state == .waitingForNetwork })
        #expect(await outbox.stateCounts() == [.waitingForNetwork: 10])
        // Same attempt identities throughout: the server's ledger can answer a replay.
        let keys = Dictionary(grouping: h.transport.requests, by: \.documentID).mapValues { Set($0.map(\.attemptID)) }
        #expect(keys.values.allSatisfy { $0.count == 1 })

        let back = await outbox.flush()
        #expect(back.sent == 10)
        #expect(!back.offline)
        let delivered = try await outbox.items(in: [.confirmed])
        #expect(delivered.count == 10)
        #expect(delivered.allSatisfy { $0.attempts == 1 })  // a delivered item counts its attempt
    }

    @Test func itemsCapturedWhileTheClockRanSeventyTwoHoursAheadGoOutWhenItIsCorrected() async throws {
        let h = try Harness()
        let outbox = try h.open()
        h.clock.advance(by: 72 * 3_600_000)
        try await outbox.enqueue(order(1), documentID: "ahead-1")
        try await outbox.enqueue(order(2), documentID: "ahead-2")
        h.clock.advance(by: -72 * 3_600_000)
        let report = await outbox.flush()
        #expect(report.sent == 2)
        #expect(h.sentDocuments == ["ahead-1", "ahead-2"])
        #expect(await outbox.nextDueTime() == nil)
    }

    @Test func aLeaseTakenUnderAClockThatJumpedBackIsReclaimedOnOpen() async throws {
        let h = try Harness()
        let first = try h.open()
        try await first.enqueue(order(1), documentID: "stuck")
        h.clock.advance(by: 72 * 3_600_000)
        h.transport.script(.hang)
        let flushing = Task { await first.flush() }
        await eventually("the request to hang") { h.transport.hangingCount == 1 }
        // The device is switched off with the item leased until "three days from now", and its
        // clock is corrected before the next start.
        h.clock.advance(by: -72 * 3_600_000)
        let outbox = try h.open()
        let report = await outbox.flush()
        #expect(report.sent == 1)
        h.transport.release(.unreachable(reason: "switched off"))
        _ = await flushing.value
    }

    @Test func aRetryWithAZeroJitterDrawIsNeverAttemptedAgainInTheSameFlush() async throws {
        let h = try Harness()
        // A clock that runs ten seconds per reading: every backoff is over by the next look.
        let clock = Mutex<Int64>(1_800_000_000_000)
        let outbox = try Outbox(
            path: h.path, forms: Harness.forms, transport: h.transport, configuration: h.configuration,
            environment: OutboxEnvironment(
                now: {
                    clock.withLock {
                        $0 += 10_000
                        return $0
                    }
                }, random: { 0 }, newID: { h.ids.next() }))
        try await outbox.enqueue(order(1))
        for _ in 0..<6 { h.transport.script(.transient(reason: "503", retryAfter: .milliseconds(0))) }
        let report = await outbox.flush()
        #expect(h.transport.requests.count == 1)
        #expect(report.retrying == 1)
        #expect(report.exhausted == 0)
        #expect(try await outbox.item(1)?.attempts == 1)
    }

    @Test func anAbsurdRetryAfterIsCappedAndNeverTraps() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        h.transport.script(.transient(reason: "503", retryAfter: .milliseconds(Int64.max)))
        _ = await outbox.flush()
        let item = try #require(try await outbox.item(1))
        #expect(item.nextAttemptAt.millisecondsSince1970 == h.clock.now + h.configuration.retry.maxRetryAfterMilliseconds)
        #expect(RetryPolicy().delay(afterAttempts: .max, random: 1, retryAfterMilliseconds: .max) == 3_600_000)
        #expect(RetryPolicy().delay(afterAttempts: 3, random: 0.5, retryAfterMilliseconds: .min) > 0)
        h.clock.advance(by: 3_600_000)
        #expect(await outbox.flush().sent == 1)
    }

    @Test func aFlushCalledAfterAnEnqueueAlwaysConsidersThatItem() async throws {
        let h = try Harness()
        let outbox = try h.open()
        for round in 0..<300 {
            let running = Task { await outbox.flush() }
            if round % 3 == 0 { await Task.yield() }
            let id = try await outbox.enqueue(order(Int64(round % 7 + 1)), documentID: "r\(round)")
            _ = await outbox.flush()
            #expect(try await outbox.item(id)?.state == .confirmed, "round \(round)")
            _ = await running.value
        }
        #expect(Set(h.sentDocuments).count == 300)
        #expect(h.sentDocuments.count == 300)
    }

    @Test func twoSubmitsInARowAreBothAttemptedOnTheFastPath() async throws {
        let h = try Harness()
        let outbox = try h.open()
        for n in 0..<50 {
            let first = try await outbox.submit(order(1), documentID: "a\(n)", timeout: .seconds(60))
            let second = try await outbox.submit(order(2), documentID: "b\(n)", timeout: .seconds(60))
            guard case .confirmed = first, case .confirmed = second else {
                Issue.record("round \(n): \(first), \(second)")
                return
            }
        }
    }

    @Test func cancellingTheFlushingTaskStopsAttemptsAndReturnsInFlightItemsWithTheSameKey() async throws {
        let h = try Harness()
        let outbox = try h.open()
        for n in 1...8 { try await outbox.enqueue(order(Int64(n)), documentID: "d\(n)") }
        for _ in 0..<4 { h.transport.script(.hang) }
        let flushing = Task { await outbox.flush() }
        await eventually("four requests on the wire") { h.transport.hangingCount == 4 }
        flushing.cancel()
        let report = await flushing.value
        #expect(report.sent == 0)
        #expect(h.transport.requests.count == 4)  // nothing new started
        let pending = try await outbox.items(in: [.savedOnDevice])
        #expect(pending.count == 8)
        #expect(pending.allSatisfy { $0.attempts == 0 })
        let firstKeys = Set(h.transport.requests.map(\.attemptID))
        #expect(await outbox.flush().sent == 8)
        #expect(firstKeys.isSubset(of: Set(h.transport.requests.map(\.attemptID))))
    }

    @Test func aServerAnsweringAgainEndsWaitingForNetwork() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        h.transport.script(.unreachable(reason: "captive portal"))
        _ = await outbox.flush()
        #expect(await outbox.isWaitingForNetwork)
        #expect(try await outbox.item(1)?.state == .waitingForNetwork)
        h.transport.reachable = true
        #expect(await outbox.probe())
        #expect(try await outbox.item(1)?.state == .savedOnDevice)
    }
}
