import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

struct OutboxStateTests {
    @Test func snapshotsReflectEachStateAnItemPassesThrough() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let stream = await outbox.snapshots()
        let collector = Task { await StreamReading.read(stream) { $0.changed?.state == .rejected }.elements }
        let id = try await outbox.enqueue(order(1))
        h.transport.script(.hang)
        let flushing = Task { await outbox.flush() }
        await eventually("the request to hang") { h.transport.hangingCount == 1 }
        #expect(await outbox.stateCounts() == [.sent: 1])
        h.transport.release(.rejected(reason: "no", fieldErrors: []))
        _ = await flushing.value
        let seen = await collector.value
        let states = seen.compactMap { $0.changed?.id == id ? $0.changed?.state : nil }
        #expect(states.first == .savedOnDevice)
        #expect(states.contains(.sent))
        #expect(states.last == .rejected)
        #expect(seen.last?.counts == [.rejected: 1])
        #expect(seen.last?.needsAttention == 1)
    }

    @Test func aConsumerThatNeverReadsDoesNotHoldTheOutboxBack() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let ignored = await outbox.snapshots()
        for n in 0..<200 { try await outbox.enqueue(order(Int64(n % 10 + 1))) }
        let report = await outbox.flush()
        #expect(report.sent == 200)
        var iterator = ignored.makeAsyncIterator()
        let newest = await iterator.next()
        #expect(newest?.counts == [.confirmed: 200])  // only the newest snapshot was kept
    }

    @Test func submitReturnsConfirmedWhenTheServerAcknowledgesTheFirstAttempt() async throws {
        let h = try Harness()
        let outbox = try h.open()
        h.transport.script(.done(ServerAcknowledgement(serverID: 42, version: "v1")))
        let result = try await outbox.submit(order(1), timeout: .seconds(60))
        #expect(result == .confirmed(id: 1, ServerAcknowledgement(serverID: 42, version: "v1")))
    }

    @Test func submitReturnsTheServersFieldErrorsWhileTheFormIsStillOpen() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let errors = [FieldError(pointer: "#/lines/0/quantity", code: "stock", detail: "Only 3 left.")]
        h.transport.script(.rejected(reason: "422", fieldErrors: errors))
        let result = try await outbox.submit(order(1, quantity: 9), timeout: .seconds(60))
        #expect(result == .rejected(id: 1, reason: "422", fieldErrors: errors))
        #expect(try await outbox.item(1)?.state == .rejected)  // and it is parked, durably
    }

    @Test func submitReturnsQueuedWhenTheFirstAttemptDoesNotSettleInTime() async throws {
        let h = try Harness()
        let outbox = try h.open()
        h.transport.script(.hang)
        let result = try await outbox.submit(order(1), timeout: .milliseconds(50))
        #expect(result == .queued(id: 1, state: .sent))
        // Released once the attempt is held: a release before it reached the transport let go of
        // nothing, the attempt then hung for good, and the next submit waited out its minute.
        await eventually("the first attempt hangs in the transport") { h.transport.hangingCount == 1 }
        h.transport.release(.transient(reason: "offline", retryAfter: nil))
        h.transport.script(.transient(reason: "offline", retryAfter: nil))
        let offline = try await outbox.submit(order(2), timeout: .seconds(60))
        #expect(offline == .queued(id: 2, state: .savedOnDevice))
    }
}
