import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncProtocol
import FormSyncTesting
import FormSyncTorture
import Foundation
import Synchronization
import Testing

@testable import FormSyncServer

/// Subscriptions (issue 47): a type whose spec says `subscribe_by:` reaches a device only
/// through the subscriptions it holds; each brings exactly its records, keeps them current,
/// lets go of those that leave it, and when it expires its records leave the device except one
/// a queued edit names. Over real HTTP, on the store this run tests.
struct SubscriptionTests {
    static func job(_ region: Job.Region, _ day: String, _ title: String) -> Job {
        Job(region: region, dueOn: LocalDate(day), siteCode: "LIS-0042", title: title, status: .planned)
    }

    static func titles(_ outbox: Outbox) async throws -> Set<String> {
        Set(try await outbox.records(Job.all).compactMap(\.title))
    }

    @Test func aRegionAndADateWindowBringExactlyTheirJobsAndTheExpiredOneLeavesExceptAJobAnEditNames() async throws {
        let world = try World()
        let server = world.server
        let northToday = try server.putRecord(Self.job(.north, "2026-12-07", "north today"), workspace: "acme")
        var northLater = try server.putRecord(Self.job(.north, "2026-12-20", "north later"), workspace: "acme")
        let southToday = try server.putRecord(Self.job(.south, "2026-12-07", "south today"), workspace: "acme")
        var southFriday = try server.putRecord(Self.job(.south, "2026-12-11", "south friday"), workspace: "acme")
        _ = try server.putRecord(Self.job(.east, "2026-12-08", "east tuesday"), workspace: "acme")
        _ = try server.putRecord(Self.job(.west, "2026-12-30", "west later"), workspace: "acme")
        let finding = try server.putRecord(DeleteTests.finding("Loose cable"), workspace: "acme")

        // Without a subscription a device has no job, and the types every device gets as before.
        let outbox = try world.device()
        _ = try await outbox.pull()
        #expect(try await outbox.records(Job.all).isEmpty)
        #expect(try await outbox.records(Finding.all).map(\.id) == [finding.id])

        try await outbox.subscribe(RecordSubscription("north", of: Job.self, where: [.oneOf("region", ["north"])], for: .seconds(86_400)))
        try await outbox.subscribe(
            RecordSubscription(
                "this week", of: Job.self, where: [.between("due_on", from: LocalDate("2026-12-07"), to: LocalDate("2026-12-13"))],
                for: .seconds(3_600)))
        let first = try await outbox.pull()
        #expect(first.caughtUp)
        #expect(try await Self.titles(outbox) == ["north today", "north later", "south today", "south friday", "east tuesday"])

        // The office moves one north job west and one south job a fortnight on, and plans a
        // new one this week: each subscription lets go of what left it and takes what joined.
        northLater.region = .west
        northLater = try server.putRecord(northLater, workspace: "acme")
        southFriday.dueOn = LocalDate("2026-12-25")
        southFriday = try server.putRecord(southFriday, workspace: "acme")
        _ = try server.putRecord(Self.job(.west, "2026-12-09", "west wednesday"), workspace: "acme")
        _ = try await outbox.pull()
        #expect(try await Self.titles(outbox) == ["north today", "south today", "east tuesday", "west wednesday"])
        #expect(try await outbox.subscriptions().map(\.records) == [1, 4], "north: north today; this week: it and three more")

        // An edit of a job only "this week" holds, queued offline; then the hour runs out.
        let edit = try await outbox.edit(JobUpdate.self, id: southToday.id) { $0.status = .started }
        world.clock.advance(by: 3_600_000)
        _ = try await outbox.pull()
        #expect(try await outbox.subscriptions().map(\.name) == ["north"])
        #expect(
            try await Self.titles(outbox) == ["north today", "south today"],
            "the week's jobs left, but the one the queued edit names stays")
        #expect(try await outbox.record(Job.self, id: southToday.id)?.status == .started, "shown with the person's change")

        // Once the edit has landed nothing names it: the next pull lets it go.
        _ = try await world.drain()
        #expect(try await outbox.item(edit)?.state == .confirmed)
        _ = try await outbox.pull()
        #expect(try await outbox.records(Job.all).map(\.id) == [northToday.id])

        // Unsubscribing lets go at once; the types every device gets stay.
        #expect(try await outbox.unsubscribe("north"))
        #expect(try await outbox.records(Job.all).isEmpty)
        #expect(try await outbox.records(Finding.all).map(\.id) == [finding.id])
    }

    @Test func aSubscriptionOfAHigherPriorityIsPulledBeforeTheArchiveAndThePullReportsItsProgress() async throws {
        let world = try World()
        for index in 0..<30 { _ = try world.server.putRecord(DeleteTests.finding("Archived finding \(index)"), workspace: "acme") }
        for index in 0..<3 { _ = try world.server.putRecord(Self.job(.north, "2026-12-07", "today \(index)"), workspace: "acme") }
        let outbox = try world.device()
        try await outbox.subscribe(
            RecordSubscription(
                "today", of: Job.self, where: [.between("due_on", from: LocalDate("2026-12-07"), to: LocalDate("2026-12-07"))],
                for: .seconds(86_400), priority: 1))
        let changes = await outbox.recordChanges()
        let progress = Mutex<[Int?]>([])
        let events = outbox.events()
        let watcher = Task {
            for await event in events {
                if case .pullProgress(_, _, let remaining) = event { progress.withLock { $0.append(remaining) } }
            }
        }
        defer { watcher.cancel() }
        let report = try await outbox.pull(pageSize: 5)
        #expect(report.caughtUp && report.upserted == 33)

        // The notices in the order the pages committed: today's jobs first, then the archive.
        var order: [String] = []
        for await notice in changes {
            order.append(contentsOf: notice.changes.keys.sorted())
            if order.filter({ $0 == "Finding" }).count == 6 { break }
        }
        #expect(order.first == "Job" && order.dropFirst().allSatisfy { $0 == "Finding" }, "\(order)")
        try await LiveChangesTests.until { progress.withLock { $0.count } == 7 }
        #expect(progress.withLock { $0 } == [0, 25, 20, 15, 10, 5, 0], "the job page, then the archive counted down")
    }

    @Test func aHeldPullIsAnsweredByANewJobOfASubscribedTypeAndThePullBringsIt() async throws {
        let world = try World()
        let waiters = world.server.feedWaiters
        // Longer than this test may take: only a change can answer the pull.
        waiters.maxWaitSeconds = 3_600
        let outbox = try world.device()
        try await outbox.subscribe(RecordSubscription("north", of: Job.self, where: [.oneOf("region", ["north"])], for: .seconds(86_400)))
        #expect(try await outbox.pull().caughtUp)

        // The device's own feed holds no job, but a new job of its crew answers the held pull,
        // and the same pull reads the subscription's feed.
        let held = Task { try await outbox.pull(wait: .seconds(100)) }
        try await LiveChangesTests.until { waiters.count == 1 && waiters.tally.rechecks >= 1 }
        let urgent = try world.server.putRecord(Self.job(.north, "2026-12-07", "urgent"), workspace: "acme")
        let report = try await held.value
        #expect(report.upserted == 1 && report.caughtUp)
        #expect(try await outbox.record(Job.self, id: urgent.id)?.title == "urgent")
        #expect(waiters.tally.answeredByChange == 1 && waiters.tally.answeredAtDeadline == 0)
    }

    @Test func whenTheLastSubscriptionExpiresItsRecordsLeaveAtTheNextPull() async throws {
        let world = try World()
        _ = try world.server.putRecord(Self.job(.east, "2026-12-07", "east today"), workspace: "acme")
        let outbox = try world.device()
        try await outbox.subscribe(RecordSubscription("east", of: Job.self, where: [.oneOf("region", ["east"])], for: .seconds(60)))
        _ = try await outbox.pull()
        #expect(try await Self.titles(outbox) == ["east today"])
        world.clock.advance(by: 60_000)
        _ = try await outbox.pull()
        #expect(try await outbox.subscriptions().isEmpty)
        #expect(try await outbox.records(Job.all).isEmpty)
    }

    @Test func aSubscriptionTheSpecsDoNotAllowIsRefusedOnTheDeviceAndOnTheServer() async throws {
        let world = try World()
        let outbox = try world.device()
        let refused: [RecordSubscription] = [
            RecordSubscription("a", of: Job.self, where: [.oneOf("title", ["x"])], for: .seconds(60)),
            RecordSubscription("b", of: Job.self, where: [.oneOf("due_on", ["2026-12-07"])], for: .seconds(60)),
            RecordSubscription("c", of: Job.self, where: [.between("region", from: nil, to: nil)], for: .seconds(60)),
            RecordSubscription("d", of: Finding.self, for: .seconds(60)),
            RecordSubscription(
                "e", of: Job.self, where: [.between("due_on", from: LocalDate("2026-12-08"), to: LocalDate("2026-12-07"))],
                for: .seconds(60)),
            RecordSubscription("f", of: Job.self, for: .zero),
        ]
        for subscription in refused {
            await #expect(throws: OutboxError.self, "\(subscription.name)") { try await outbox.subscribe(subscription) }
        }
        #expect(try await outbox.subscriptions().isEmpty)

        // The server checks what it is sent, whatever the device checked.
        let transport = world.transport()
        for query in [
            SubscriptionQuery(type: "Job", values: ["title": ["x"]]), SubscriptionQuery(type: "Finding"),
            SubscriptionQuery(type: "Nope"), SubscriptionQuery(type: "Job", windows: ["due_on": .init(from: "yesterday", to: nil)]),
            SubscriptionQuery(type: "Job", values: ["region": []]),
            // Absurd sizes: too many values, a value too long, JSON over 8 KiB.
            SubscriptionQuery(type: "Job", values: ["region": (0..<201).map { "r\($0)" }]),
            SubscriptionQuery(type: "Job", values: ["region": [String(repeating: "n", count: 257)]]),
            SubscriptionQuery(type: "Job", values: ["region": (0..<150).map { _ in String(repeating: "x", count: 60) }]),
        ] {
            let outcome = await transport.fetchChanges(cursor: nil, limit: 10, as: nil, subscription: query)
            guard case .failed(let reason, _) = outcome else {
                Issue.record("\(query.json) was served: \(outcome)")
                continue
            }
            #expect(reason.hasPrefix("HTTP 400: "), "\(reason)")
        }
    }

    /// A visit of one technician's, subscribed to by region: a subscription narrows what the
    /// scope lets a person see, never widens it.
    struct CrewVisit: SyncRecord {
        static let recordType = "CrewVisit"
        static let recordVersion = 1
        static let scopeField: String? = "technician"
        static let indexedFields: [String] = []
        static let subscriptionFields = [SubscriptionField("region", .values)]
        var id: Int64 = 0
        var version = 0
        var technician: String
        var region: String

        enum CodingKeys: String, CodingKey { case technician, region }
        func validate() -> [FieldError] { [] }
        var indexEntries: [RecordIndexEntry] { [] }
    }

    @Test func aSubscriptionBringsOnlyWhatThePersonsScopeAllows() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("subscription-scope-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try TestStore.server(directory: directory.path, forms: FormCatalog.forms, records: [CrewVisit.self])
        _ = try server.start()
        defer { server.stop() }
        let adaNorth = try server.putRecord(CrewVisit(technician: "ada", region: "north"), workspace: "acme")
        _ = try server.putRecord(CrewVisit(technician: "ada", region: "south"), workspace: "acme")
        _ = try server.putRecord(CrewVisit(technician: "bob", region: "north"), workspace: "acme")
        let token = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
        let transport = HTTPTransport(workspace: "acme", baseURL: server.baseURL, timeout: .seconds(120)) { token }

        let north = SubscriptionQuery(type: "CrewVisit", values: ["region": ["north"]])
        guard case .page(let page) = await transport.fetchChanges(cursor: nil, limit: 100, as: nil, subscription: north) else {
            Issue.record("no page")
            return
        }
        #expect(page.changes.map(\.id) == [adaNorth.id], "ada's north visit, not bob's")
        guard case .page(let own) = await transport.fetchChanges(cursor: nil, limit: 100, as: nil) else {
            Issue.record("no page")
            return
        }
        #expect(own.changes.isEmpty, "a subscribed type is not in the device's own feed")
    }
}
