import FieldForms
import FormSyncClient
import FormSyncHTTP
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncServer

/// Changes in seconds (issue 47): a pull the server holds while the device's page is empty is
/// answered by the first change the device may see, not by its deadline; a change it may not see
/// leaves it held. Over real HTTP, on the store this run tests.
struct LiveChangesTests {
    /// Waits, by looking again, until `condition` holds (events, not deadlines: the test's own
    /// watchdog ends a run that never gets there).
    static func until(_ condition: () -> Bool) async throws {
        while !condition() { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test func aHeldPullIsAnsweredByTheFirstChangeTheDeviceMaySeeAndNotByOneItMayNot() async throws {
        let world = try World()
        let waiters = world.server.feedWaiters
        // Longer than this test may take: only a change can answer the pull.
        waiters.maxWaitSeconds = 3_600
        let outbox = try world.device("ada", principal: "ada")
        let waits = await outbox.serverWaitsForChanges()
        #expect(waits == true)
        #expect(try await outbox.pull().caughtUp)

        let held = Task { try await outbox.pull(wait: .seconds(100)) }
        try await Self.until { waiters.count == 1 && waiters.tally.rechecks >= 1 }
        let before = waiters.tally

        // Another courier's delivery: the server looks again, and keeps holding ada's pull.
        _ = try world.server.putRecord(Delivery(courierId: "bob", status: .assigned, stopOrder: 1, address: "Rua B"), workspace: "acme")
        try await Self.until { waiters.tally.rechecks > before.rechecks }
        #expect(waiters.count == 1, "a change ada may not see does not answer her")
        #expect(waiters.tally.answeredByChange == 0)

        // Hers: answered now, with it.
        let mine = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 2, address: "Rua A"), workspace: "acme")
        let report = try await held.value
        #expect(report.upserted == 1 && report.caughtUp)
        #expect(try await outbox.record(Delivery.self, id: mine.id)?.address == "Rua A")
        #expect(waiters.tally.answeredByChange == 1 && waiters.tally.answeredAtDeadline == 0)
        #expect(waiters.count == 0)
    }

    @Test func theEngineInTheForegroundHasANewJobAsSoonAsTheBackOfficeCommitsIt() async throws {
        let world = try World()
        let waiters = world.server.feedWaiters
        waiters.maxWaitSeconds = 3_600
        let outbox = try world.device("ada", principal: "ada")
        // Polling alone would bring it in five minutes.
        let engine = SyncEngine(outbox: outbox, configuration: .init(pullInterval: .seconds(300), waitForChanges: .seconds(100)))
        let running = Task { await engine.run() }
        defer { running.cancel() }
        try await Self.until { waiters.count == 1 }
        let job = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 9, address: "Urgent: Rua Nova"), workspace: "acme")
        var found: Delivery?
        while found == nil {
            found = try await outbox.record(Delivery.self, id: job.id)
            if found == nil { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(found?.address == "Urgent: Rua Nova")
        #expect(waiters.tally.answeredByChange >= 1 && waiters.tally.answeredAtDeadline == 0)
        engine.stop()
    }

    @Test func aLongFirstPullReportsItsProgressPageByPage() async throws {
        let world = try World()
        try world.server.putRecords(
            (0..<1_200).map { n in
                SyncServer.RecordSeed(
                    type: "Customer", fields: Data(#"{"name":"Shop \#(n)","segment":"retail"}"#.utf8), workspace: "acme")
            })
        let outbox = try world.device()
        let events = outbox.events()
        let report = try await outbox.pull(pageSize: 500)
        #expect(report.upserted == 1_200 && report.pages == 3)
        var progress: [(records: Int, remaining: Int?)] = []
        for await event in events {
            if case .pullProgress(let records, let bytes, let remaining) = event {
                #expect(bytes > records * 20, "the records' bytes are counted")
                progress.append((records, remaining))
            }
            if case .pulled = event { break }
        }
        #expect(progress.map(\.records) == [500, 1_000, 1_200])
        #expect(progress.map(\.remaining) == [700, 200, 0], "what the server said follows each page")
    }

    @Test func aHeldPullEndsAtItsDeadlineWithAnEmptyPageAndABadWaitIsRefused() async throws {
        let world = try World()
        let waiters = world.server.feedWaiters
        waiters.maxWaitSeconds = 1
        let outbox = try world.device()
        _ = try await outbox.pull()
        let report = try await outbox.pull(wait: .seconds(60))
        #expect(report.caughtUp && report.upserted == 0)
        #expect(waiters.tally.answeredAtDeadline == 1 && waiters.tally.answeredByChange == 0, "served as the server's longest wait")

        let token = try world.server.issueAccessToken(workspaces: ["acme"])
        let refused = world.server.handle(
            HTTPRequest(
                method: "GET", path: "/changes", query: "wait=soon",
                headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme"], body: Data()))
        let text = String(decoding: refused?.body ?? Data(), as: UTF8.self)
        #expect(refused?.status == 400 && text.contains("bad-query"), "\(text)")
    }
}
