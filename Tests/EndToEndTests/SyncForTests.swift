import FieldForms
import Foundation
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Testing

/// Issue 32: `SyncEngine.sync(for:)`, what an app's background task runs: against the reference
/// server it retries through a lost reply and a 503, then pulls, and stops once everything is
/// delivered and pulled; with too small a budget it stops at the deadline and says what is left.
struct SyncForTests {
    /// A sleep on the world's virtual clock that also lets real time pass (20 ms per virtual
    /// second, at most 5 s), so that requests on the wire finish before a deadline timer ends
    /// them, even on a loaded machine; a cancelled sleep moves the clock not at all.
    static func virtualSleep(_ clock: ManualClock) -> @Sendable (Int64) async -> Void {
        { milliseconds in
            do {
                try await Task.sleep(for: .milliseconds(min(5000, max(1, milliseconds / 50))))
                clock.advance(by: milliseconds)
            } catch {}
        }
    }

    @Test func aBudgetedSyncRetriesThroughALostReplyAndA503ThenPullsAndFinishes() async throws {
        let world = try World()
        let shop = try world.server.putRecord(Customer(name: "Shop", segment: .retail), workspace: "acme")
        let outbox = try world.device()
        for n in 1...3 { try await outbox.enqueue(SalesOrder(
            customerId: EntityRef(shop.id), orderDate: LocalDate("2026-12-03"),
            lines: [.init(sku: "AB-\(1000 + n)", quantity: n, unitPrice: Money(minorUnits: 250, currency: "EUR"))]), documentID: "order-\(n)") }
        world.server.faults.add(.dropAfterCommit, count: 1, target: .submissions)
        world.server.faults.add(.unavailable(retryAfterSeconds: 2), count: 1, target: .submissions)
        let clock = world.clock
        let engine = SyncEngine(
            outbox: outbox, configuration: .init(networkBackoff: RetryPolicy(baseDelayMilliseconds: 500, maxDelayMilliseconds: 2000)),
            environment: OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID),
            sleep: Self.virtualSleep(clock))
        let report = await engine.sync(for: .seconds(120))
        #expect(report.finished, "\(report)")
        #expect(report.passes >= 3, "a lost reply and a 503 each need another pass: \(report)")
        #expect(report.pushed.sent == 3 && report.remaining == 0 && report.needsAttention == 0)
        #expect(report.pulled?.caughtUp == true)
        #expect(try await outbox.record(Customer.self, id: shop.id)?.name == "Shop", "pulled")
        let held = world.server.documents()
        #expect(held.count == 3 && held.allSatisfy { $0.appliedWrites == 1 }, "the lost reply's retry was a replay, not a second write")
        #expect(world.server.requestLog().contains { $0.replayed }, "the retry after the lost reply was answered from the ledger")
    }

    @Test func aBudgetTooSmallStopsAtTheDeadlineAndSaysWhatIsLeft() async throws {
        let world = try World()
        let outbox = try world.device()
        try await outbox.enqueue(NewCustomer(name: "Late shop", segment: .retail), documentID: "late")
        world.server.faults.add(.unavailable(retryAfterSeconds: 3600), count: 1, target: .submissions)
        let clock = world.clock
        let engine = SyncEngine(
            outbox: outbox, environment: OutboxEnvironment(now: { clock.now }, random: { 0.5 }, newID: OutboxEnvironment.live.newID),
            sleep: Self.virtualSleep(clock))
        let started = clock.now
        let report = await engine.sync(for: .seconds(30))
        #expect(!report.finished)
        #expect(report.remaining == 1 && report.pushed.retrying == 1)
        #expect(report.stoppedBecause != nil)
        #expect(clock.now - started <= 30_000, "it never waited past its budget for a retry an hour away")
        #expect(world.server.documents().isEmpty)
    }
}
