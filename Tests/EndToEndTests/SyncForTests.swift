import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation
import Synchronization
import Testing

/// Issue 32: `SyncEngine.sync(for:)`, what an app's background task runs: against the reference
/// server it retries through a lost reply and a 503, then pulls, and stops once everything is
/// delivered and pulled; with too small a budget it stops at the deadline and says what is left.
struct SyncForTests {
    /// A device on the real clock (the world's devices run on its virtual one): `sync(for:)`
    /// is about time passing, and its deadline must not cut a request short on a loaded machine.
    static func liveDevice(_ world: World, _ name: String) throws -> Outbox {
        // The client's own timeout stays out of it: these tests are about the budget, and on a
        // busy core a reply can pause longer than the world's 5 s between bytes.
        world.timeout = 60
        return try Outbox(
            path: world.directory.appendingPathComponent("\(name).sqlite").path, forms: FormCatalog.forms, records: FormCatalog.records,
            transport: world.transport(),
            configuration: Outbox.Configuration(retry: RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(2), maxAttempts: 8)))
    }

    @Test func aBudgetedSyncRetriesThroughALostReplyAndA503ThenPullsAndFinishes() async throws {
        let world = try World()
        let shop = try world.server.putRecord(Customer(name: "Shop", segment: .retail), workspace: "acme")
        let outbox = try Self.liveDevice(world, "live")
        for n in 1...3 {
            try await outbox.enqueue(
                SalesOrder(
                    customerId: EntityRef(shop.id), orderDate: LocalDate("2026-12-03"),
                    lines: [.init(sku: "AB-\(1000 + n)", quantity: n, unitPrice: Money(minorUnits: 250, currency: "EUR"))]),
                documentID: "order-\(n)")
        }
        world.server.faults.add(.dropAfterCommit, count: 1, target: .submissions)
        world.server.faults.add(.unavailable(retryAfterSeconds: 1), count: 1, target: .submissions)
        let engine = SyncEngine(
            outbox: outbox, configuration: .init(networkBackoff: RetryPolicy(baseDelay: .milliseconds(200), maxDelay: .seconds(1))))
        let report = await engine.sync(for: .seconds(60))
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
        let outbox = try Self.liveDevice(world, "late")
        try await outbox.enqueue(NewCustomer(name: "Late shop", segment: .retail), documentID: "late")
        world.server.faults.add(.unavailable(retryAfterSeconds: 3600), count: 1, target: .submissions)
        // The engine's clock moves only by the waits it completes: the budget is time the engine
        // waits, and how long a loaded machine takes over a request is no part of it. A wait
        // lasts until the engine cancels it (the timer of a request that ended) and then does not
        // move the clock; one that is never cancelled is a wait the engine really meant, and
        // moves the clock by what it asked after a while (5 minutes, only when it is wrong).
        final class Waits: Sendable {
            let asked = Mutex<[Int64]>([])
            let clock = Mutex<Int64>(OutboxEnvironment.live.now())
        }
        let waits = Waits()
        let clock = OutboxEnvironment(now: { waits.clock.withLock { $0 } }, random: { 0.5 }, newID: { UUID().uuidString })
        let engine = SyncEngine(outbox: outbox, environment: clock) { milliseconds in
            waits.asked.withLock { $0.append(milliseconds) }
            guard (try? await Task.sleep(for: .seconds(300))) != nil else { return }
            waits.clock.withLock { $0 = $0.addingReportingOverflow(milliseconds).partialValue }
        }
        let report = await engine.sync(for: .seconds(30))
        #expect(!report.finished)
        #expect(report.remaining == 1 && report.pushed.retrying == 1)
        #expect(report.stoppedBecause == "what is left is due after the deadline")
        let asked = waits.asked.withLock { $0 }
        #expect(asked.allSatisfy { $0 < 30_000 }, "it never waited past its budget for a retry an hour away: \(asked)")
        #expect(world.server.documents().isEmpty)
    }
}
