import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

struct OutboxParkingTests {
    @Test func resubmittingAFixKeepsTheDocumentIdentityUnderANewAttemptIdentity() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let id = try await outbox.enqueue(order(1, sku: "OLD-0001"), documentID: "order-1")
        h.transport.script(
            .rejected(reason: "unknown sku", fieldErrors: [FieldError(pointer: "#/lines/0/sku", code: "unknown", detail: "")]))
        _ = await outbox.flush()
        outbox = try h.open()
        let parked = try #require(try await outbox.item(id))
        try await outbox.resubmit(id, with: order(1, sku: "NEW-0001"))
        let reopened = try #require(try await outbox.item(id))
        #expect(reopened.state == .savedOnDevice)
        #expect(reopened.documentID == "order-1")
        #expect(reopened.attemptID != parked.attemptID)
        #expect(reopened.fieldErrors.isEmpty)
        #expect(reopened.attempts == 0)
        _ = await outbox.flush()
        let last = try #require(h.transport.requests.last)
        #expect(last.documentID == "order-1")
        #expect(last.attemptID == reopened.attemptID)
        #expect(try JSONDecoder().decode(SalesOrder.self, from: #require(last.payload)).lines[0].sku == "NEW-0001")
    }

    @Test func aFixIsValidatedBeforeItReplacesAnything() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let id = try await outbox.enqueue(order(1))
        h.transport.script(.rejected(reason: "no", fieldErrors: []))
        _ = await outbox.flush()
        var broken = order(1)
        broken.lines = []
        await #expect(throws: OutboxError.self) { try await outbox.resubmit(id, with: broken) }
        #expect(try await outbox.item(id)?.state == .rejected)
        await #expect(throws: OutboxError.formMismatch(expected: "SalesOrder", got: "NewCustomer")) {
            try await outbox.resubmit(id, with: NewCustomer(name: "Ana", segment: .retail))
        }
    }

    @Test func retrySendsTheSameAttemptAgainWithAFreshBudget() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let id = try await outbox.enqueue(order(1))
        h.transport.script(.rejected(reason: "server bug", fieldErrors: []))
        _ = await outbox.flush()
        try await outbox.retry(id)
        _ = await outbox.flush()
        let keys = h.transport.requests.map(\.attemptID)
        #expect(keys.count == 2)
        #expect(keys[0] == keys[1])
        #expect(try await outbox.item(id)?.state == .confirmed)
    }

    @Test func onlyParkedOrBlockedItemsCanBeDiscarded() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let pending = try await outbox.enqueue(order(1))
        await #expect(throws: OutboxError.notAllowed(id: pending, state: .savedOnDevice, action: "discard")) {
            try await outbox.discard(pending)
        }
        await #expect(throws: OutboxError.notAllowed(id: pending, state: .savedOnDevice, action: "retry")) {
            try await outbox.retry(pending)
        }
        _ = await outbox.flush()
        await #expect(throws: OutboxError.self) { try await outbox.discard(pending) }  // confirmed
        let rejected = try await outbox.enqueue(order(2))
        h.transport.script(.rejected(reason: "no", fieldErrors: []))
        _ = await outbox.flush()
        try await outbox.discard(rejected)
        #expect(try await outbox.item(rejected) == nil)
        await #expect(throws: OutboxError.noSuchItem(rejected)) { try await outbox.discard(rejected) }
    }

    @Test func anExpiredLeaseIsReclaimedOnOpenAndResentWithTheSameAttemptIdentity() async throws {
        let h = try Harness()
        let first = try h.open()
        let id = try await first.enqueue(order(1))
        h.transport.script(.hang)
        let crashed = Task { await first.flush() }
        await eventually("the request to hang") { h.transport.hangingCount == 1 }
        #expect(try await first.item(id)?.state == .sent)

        // The app dies here. A new process opens after the lease expired.
        h.clock.advance(by: 30_001)
        let second = try h.open()
        let reclaimed = try #require(try await second.item(id))
        #expect(reclaimed.state == .savedOnDevice)
        #expect(reclaimed.attempts == 0)
        #expect(await second.flush().sent == 1)
        let keys = h.transport.requests.map(\.attemptID)
        #expect(keys.count == 2)
        #expect(keys[0] == keys[1])
        // The dead process's late reply changes nothing.
        h.transport.release(.transient(reason: "late", retryAfter: nil))
        _ = await crashed.value
        #expect(try await second.item(id)?.state == .confirmed)
    }

    @Test func aLiveLeaseIsNotReclaimedUntilItExpires() async throws {
        let h = try Harness()
        let first = try h.open()
        let id = try await first.enqueue(order(1))
        h.transport.script(.hang)
        let crashed = Task { await first.flush() }
        await eventually("the request to hang") { h.transport.hangingCount == 1 }

        h.clock.advance(by: 10_000)
        let second = try h.open()
        #expect(try await second.item(id)?.state == .sending)
        #expect(await second.flush().sent == 0)
        #expect(h.transport.requests.count == 1)
        h.clock.advance(by: 20_001)
        #expect(await second.flush().sent == 1)
        #expect(Set(h.transport.requests.map(\.attemptID)).count == 1)
        h.transport.release(.transient(reason: "late", retryAfter: nil))
        _ = await crashed.value
    }

    /// The cutoff is the app's `Date`: one before 1970, beyond `Int64` milliseconds, infinite
    /// or NaN is pinned, never traps, and purges what it says (nothing before the epoch,
    /// everything confirmed at the far end).
    @Test func anAbsurdPurgeCutoffIsPinnedAndNeverTraps() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await outbox.enqueue(order(1))
        _ = await outbox.flush()
        for cutoff in [Date(timeIntervalSince1970: -1e300), Date(timeIntervalSince1970: -.infinity), Date(timeIntervalSince1970: .nan)] {
            #expect(try await outbox.purgeConfirmed(acknowledgedBefore: cutoff) == 0)
        }
        #expect(Date(timeIntervalSince1970: 1e300).millisecondsSince1970 == .max)
        #expect(Date(timeIntervalSince1970: .infinity).millisecondsSince1970 == .max)
        #expect(try await outbox.purgeConfirmed(acknowledgedBefore: Date(timeIntervalSince1970: .infinity)) == 1)
    }

    @Test func purgingConfirmedItemsKeepsLandedIDsResolvable() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let customer = outbox.placeholderIDs.next()
        try await outbox.enqueue(NewCustomer(name: "Ana", segment: .retail), creates: customer)
        try await outbox.enqueue(order(customer))
        h.transport.script(.done(ServerAcknowledgement(serverID: 321)), when: { $0.form == "NewCustomer" })
        _ = await outbox.flush()
        let pending = try await outbox.enqueue(order(9))
        h.clock.advance(by: 1000)
        #expect(try await outbox.purgeConfirmed(acknowledgedBefore: Date(millisecondsSince1970: h.clock.now)) == 2)
        #expect(await outbox.stateCounts() == [.savedOnDevice: 1])
        #expect(try await outbox.item(pending)?.state == .savedOnDevice)  // only confirmed items go
        outbox = try h.open()
        try await outbox.enqueue(order(customer))
        _ = await outbox.flush()
        #expect(h.transport.requests.last?.endpoint == "/customers/321/orders")
    }
}
