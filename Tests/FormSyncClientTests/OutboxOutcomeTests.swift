import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

struct OutboxOutcomeTests {
    @Test func backoffIsExponentialWithJitterAboveAFloorOfHalfTheStepCappedAndDrawnPerItem() {
        let policy = RetryPolicy(baseDelay: .milliseconds(1000), maxDelay: .milliseconds(60_000), maxAttempts: 10)
        #expect(policy.delay(afterAttempts: 1, random: 0.5, retryAfterMilliseconds: nil) == 750)  // 500 + 0.5 × 500
        #expect(policy.delay(afterAttempts: 2, random: 0.5, retryAfterMilliseconds: nil) == 1500)
        #expect(policy.delay(afterAttempts: 4, random: 0.25, retryAfterMilliseconds: nil) == 5000)  // 4000 + 0.25 × 4000
        #expect(policy.delay(afterAttempts: 9, random: 0.5, retryAfterMilliseconds: nil) == 45_000)  // capped step 60 s
        #expect(policy.delay(afterAttempts: 60, random: 0.999, retryAfterMilliseconds: nil) == 59_970)
        #expect(policy.delay(afterAttempts: 3, random: 0, retryAfterMilliseconds: nil) == 2000)  // a zero draw still waits half the step
        #expect(policy.delay(afterAttempts: 1, random: 0.5, retryAfterMilliseconds: 7000) == 7000)
        #expect(policy.delay(afterAttempts: 1, random: .nan, retryAfterMilliseconds: nil) == 750)
    }

    @Test func aTransientFailureStoresTheAbsoluteNextAttemptTime() async throws {
        let h = try Harness()
        h.randomValue = 0.25
        var outbox = try h.open()
        let id = try await outbox.enqueue(order(1))
        h.transport.script(.transient(reason: "503", retryAfter: nil))
        h.transport.script(.transient(reason: "503", retryAfter: nil))
        _ = await outbox.flush()
        var item = try #require(try await outbox.item(id))
        #expect(item.attempts == 1)
        #expect(item.nextAttemptAt.millisecondsSince1970 == h.clock.now + 625)  // 500 + 500 × 0.25
        #expect(item.lastError == "503")
        h.clock.advance(by: 625)
        outbox = try h.open()
        _ = await outbox.flush()
        item = try #require(try await outbox.item(id))
        #expect(item.attempts == 2)
        #expect(item.nextAttemptAt.millisecondsSince1970 == h.clock.now + 1250)  // 1000 + 1000 × 0.25
    }

    @Test func retryAfterIsHonouredAsAFloor() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let id = try await outbox.enqueue(order(1))
        h.transport.script(.transient(reason: "429", retryAfter: .milliseconds(120_000)))
        _ = await outbox.flush()
        #expect(try await outbox.item(id)?.nextAttemptAt.millisecondsSince1970 == h.clock.now + 120_000)
        h.clock.advance(by: 119_999)
        #expect(await outbox.flush().sent == 0)
        h.clock.advance(by: 1)
        #expect(await outbox.flush().sent == 1)
    }

    @Test func anItemIsParkedAsExhaustedAfterMaxAttempts() async throws {
        let h = try Harness()
        h.configuration.retry.maxAttempts = 3
        var outbox = try h.open()
        let id = try await outbox.enqueue(order(1), documentID: "X")
        try await outbox.enqueue(order(1), documentID: "Y")
        for _ in 0..<3 { h.transport.script(.transient(reason: "offline", retryAfter: nil), when: { $0.documentID == "X" }) }
        var exhausted = 0
        for _ in 0..<3 {
            exhausted += await outbox.flush().exhausted
            h.clock.advance(by: 60_000)
            outbox = try h.open()
        }
        #expect(exhausted == 1)
        let item = try #require(try await outbox.item(id))
        #expect(item.state == .exhausted)
        #expect(item.attempts == 3)
        #expect(item.lastError?.contains("offline") == true)
        #expect(h.sentDocuments == ["X", "X", "X", "Y"])  // the lane carried on after parking
    }

    @Test func authExpiryPausesRefreshesOnceAndResumesWithoutCountingAnAttempt() async throws {
        let h = try Harness()
        let refreshes = Counter()
        h.refresh = {
            refreshes.increment()
            return true
        }
        let outbox = try h.open()
        for n in 1...3 { try await outbox.enqueue(order(Int64(n)), documentID: "d\(n)") }
        for _ in 0..<3 { h.transport.script(.authExpired) }
        let report = await outbox.flush()
        #expect(refreshes.value == 1)
        #expect(report.sent == 3)
        #expect(!report.authenticationRequired)
        for id in (Int64(1)...3).map({ ItemID($0) }) {
            let item = try #require(try await outbox.item(id))
            #expect(item.attempts == 1)  // the delivery counts; the 401 before it does not
            #expect(item.state == .confirmed)
        }
        // Each attempt identity went out twice: before and after the refresh.
        let keys = h.transport.requests.map(\.attemptID)
        #expect(Set(keys).count == 3)
        #expect(keys.count == 6)
    }

    @Test func aFailedRefreshStopsTheFlushAndDropsNothing() async throws {
        let h = try Harness()
        h.refresh = { false }
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        h.transport.script(.authExpired)
        let report = await outbox.flush()
        #expect(report.authenticationRequired)
        #expect(report.remaining == 1)
        #expect(try await outbox.item(1)?.state == .savedOnDevice)
        #expect(try await outbox.item(1)?.attempts == 0)
    }

    @Test func aRejectedItemIsParkedWithFieldErrorsAndTheLaneCarriesOn() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let id = try await outbox.enqueue(order(1), documentID: "bad")
        try await outbox.enqueue(order(1), documentID: "good")
        let errors = [FieldError(pointer: "#/lines/0/sku", code: "unknown_sku", detail: "No such product.")]
        h.transport.script(.rejected(reason: "422 validation failed", fieldErrors: errors), when: { $0.documentID == "bad" })
        let report = await outbox.flush()
        #expect(report.rejected == 1)
        #expect(report.sent == 1)
        outbox = try h.open()
        let item = try #require(try await outbox.item(id))
        #expect(item.state == .rejected)
        #expect(item.fieldErrors == errors)
        #expect(SalesOrder.Field(pointer: item.fieldErrors[0].pointer) == .lines(index: 0, field: .sku))
        #expect(try await outbox.parkedItems().map(\.id) == [id])
        // A parked item is never retried on its own.
        h.clock.advance(by: 3_600_000)
        #expect(await outbox.flush().sent == 0)
    }

    @Test func aCleanMergeIsResentUnderANewAttemptIdentityWithTheServersVersionAsBase() async throws {
        let h = try Harness()
        var outbox = try h.open()
        var base = GeneratedFixtures.delivery()
        base.note = "ring twice"
        var local = base
        local.recipientName = "Ana M. Lima"
        let id = try await outbox.enqueue(local, base: (base, "\"v1\""))
        var server = base
        server.leftWithNeighbour = true
        h.transport.script(.conflict(current: try FormRegistry.encode(server), version: "\"v2\""))
        let report = await outbox.flush()
        #expect(report.sent == 1)
        #expect(report.conflicts == 0)
        let requests = h.transport.requests
        #expect(requests.count == 2)
        #expect(requests[0].attemptID != requests[1].attemptID)
        #expect(requests[0].documentID == requests[1].documentID)
        guard case .submission(_, _, _, let payload, let baseVersion) = requests[1].body else {
            Issue.record("expected a submission")
            return
        }
        #expect(baseVersion == "\"v2\"")
        let sent = try JSONDecoder().decode(DeliveryConfirmation.self, from: payload)
        #expect(sent.recipientName == "Ana M. Lima")
        #expect(sent.leftWithNeighbour == true)
        outbox = try h.open()
        #expect(try await outbox.item(id)?.state == .confirmed)
    }

    @Test func aRealClashIsParkedAsAConflictHoldingBaseLocalAndServer() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let base = GeneratedFixtures.delivery()
        var local = base
        local.codAmount = Money(minorUnits: 1500, currency: "EUR")
        let id = try await outbox.enqueue(local, base: (base, "\"v1\""))
        var server = base
        server.codAmount = Money(minorUnits: 1300, currency: "EUR")
        h.transport.script(.conflict(current: try FormRegistry.encode(server), version: "\"v7\""))
        let report = await outbox.flush()
        #expect(report.conflicts == 1)
        outbox = try h.open()
        let item = try #require(try await outbox.item(id))
        #expect(item.state == .conflict)
        #expect(item.conflicts.map(\.pointer) == ["#/cod_amount"])
        #expect(try item.basePayload.map { try JSONDecoder().decode(DeliveryConfirmation.self, from: $0) } == base)
        #expect(try item.decodedPayload(as: DeliveryConfirmation.self) == local)
        #expect(try item.serverPayload.map { try JSONDecoder().decode(DeliveryConfirmation.self, from: $0) } == server)
        #expect(item.serverVersion == "\"v7\"")

        // The person keeps the server's amount: sent as an edit of v7 under a new attempt.
        try await outbox.resolveConflict(id, with: server)
        _ = await outbox.flush()
        let last = try #require(h.transport.requests.last)
        guard case .submission(_, _, _, _, let baseVersion) = last.body else { return }
        #expect(baseVersion == "\"v7\"")
        #expect(last.attemptID != h.transport.requests[0].attemptID)
        #expect(try await outbox.item(id)?.state == .confirmed)
    }
}

/// A thread-safe counter for hooks.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

enum GeneratedFixtures {
    static func delivery() -> DeliveryConfirmation {
        DeliveryConfirmation(
            deliveryId: EntityRef(4711), outcome: .delivered, deliveredAt: Timestamp("2026-11-30T08:26:57Z"),
            codAmount: Money(minorUnits: 1250, currency: "EUR"), recipientName: "Ana Lima",
            proofPhotos: [FileRef(id: 77, contentType: "image/jpeg")], signature: FileRef(id: 78, contentType: "image/png"))
    }
}
