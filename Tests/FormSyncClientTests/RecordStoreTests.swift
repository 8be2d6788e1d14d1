import FieldForms
import FormSyncModel
import FormSyncSQLite
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

/// The device's record store against a scripted feed: pages commit with their cursor, a pull
/// never holds up sending, an expired cursor starts over safely, an older change never
/// overwrites a newer one, and hostile pages are refused.
struct RecordStoreTests {
    let harness: Harness

    init() throws {
        harness = try Harness()
    }

    func open() throws -> Outbox { try harness.openWithRecords() }

    static func delivery(_ id: Int64, version: Int = 1, stop: Int, courier: String = "ada") -> RecordChange {
        let record = Delivery(courierId: courier, status: .assigned, stopOrder: stop, address: "Rua \(stop)")
        return RecordChange(type: "Delivery", id: id, version: version, fields: try! FormRegistry.encode(record))
    }

    static func page(_ changes: [RecordChange], _ cursor: String, more: Bool = false) -> ScriptedTransport.FeedStep {
        .outcome(.page(ChangePage(changes: changes, cursor: cursor, more: more)))
    }

    @Test func aPullWaitingOnTheNetworkNeverHoldsUpTheSendingOfCapturedWork() async throws {
        let outbox = try open()
        harness.transport.scriptFeed(.hang)
        let pull = Task { try await outbox.pull() }
        while harness.transport.hangingFeedCount == 0 { await Task.yield() }
        try await outbox.enqueue(order(7))
        let report = await outbox.flush()
        #expect(report.sent == 1)
        #expect(harness.transport.hangingFeedCount == 1)  // the pull is still waiting
        harness.transport.releaseFeed(.page(ChangePage(changes: [Self.delivery(5, stop: 1)], cursor: "c1", more: false)))
        let pulled = try await pull.value
        #expect(pulled.upserted == 1)
        #expect(pulled.caughtUp)
        #expect(try await outbox.records(Delivery.all).map(\.id) == [5])
    }

    @Test func eachPageCommitsWithItsCursorSoAPullThatStopsResumesAfterTheLastCommittedPage() async throws {
        var outbox = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1), Self.delivery(2, stop: 2)], "c2", more: true))
        harness.transport.scriptFeed(.outcome(.failed(reason: "HTTP 503", retryAfter: .milliseconds(1000))))
        let first = try await outbox.pull()
        #expect(first.pages == 1)
        #expect(!first.caughtUp)
        #expect(first.stoppedBecause == .failed(reason: "HTTP 503", retryAfter: .milliseconds(1000)))
        #expect(try await outbox.records(Delivery.all).map(\.id) == [1, 2])

        outbox = try open()  // a restarted app resumes from the committed cursor
        harness.transport.scriptFeed(Self.page([Self.delivery(3, stop: 3)], "c3"))
        let second = try await outbox.pull()
        #expect(second.caughtUp)
        #expect(harness.transport.feedCursors == [nil, "c2", "c2"])
        #expect(try await outbox.records(Delivery.all).map(\.id) == [1, 2, 3])
        #expect(try await outbox.records(Delivery.byStopOrder(3)).map(\.id) == [3])

        // Handed to another courier: the store and the cursor go, and the next pull starts over.
        try await outbox.forgetPulledRecords()
        #expect(try await outbox.storedRecordCount() == 0)
        #expect(try await outbox.records(Delivery.byStopOrder(3)).isEmpty)
        _ = try await outbox.pull()
        #expect(harness.transport.feedCursors.last == .some(nil))
    }

    @Test func anOlderChangeNeverOverwritesANewerOneAndDeletionsAreIdempotent() async throws {
        let outbox = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, version: 3, stop: 9)], "c1"))
        harness.transport.scriptFeed(
            Self.page([Self.delivery(1, version: 2, stop: 4), RecordChange(type: "Delivery", id: 77, version: 0, fields: nil)], "c2"))
        _ = try await outbox.pull()
        _ = try await outbox.pull()
        let stored = try #require(try await outbox.record(Delivery.self, id: 1))
        #expect(stored.version == 3)
        #expect(stored.stopOrder == 9)
        #expect(try await outbox.records(Delivery.byStopOrder(4)).isEmpty)
        #expect(try await outbox.records(Delivery.byStopOrder(9)).map(\.id) == [1])
    }

    @Test func aMovedRecordLeavesTheOldIndexValueBehindNothing() async throws {
        let outbox = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, version: 1, stop: 1)], "c1"))
        harness.transport.scriptFeed(Self.page([Self.delivery(1, version: 2, stop: 2)], "c2"))
        harness.transport.scriptFeed(Self.page([RecordChange(type: "Delivery", id: 1, version: 0, fields: nil)], "c3"))
        _ = try await outbox.pull()
        _ = try await outbox.pull()
        #expect(try await outbox.records(Delivery.byStopOrder(1)).isEmpty)
        #expect(try await outbox.records(Delivery.byStopOrder(2)).map(\.id) == [1])
        _ = try await outbox.pull()
        #expect(try await outbox.records(Delivery.byStopOrder(2)).isEmpty)
        #expect(try await outbox.storedRecordCount() == 0)
    }

    @Test func anExpiredCursorStartsOverAndSwapsTheStoreOnlyWhenTheNewFirstPageCommits() async throws {
        let outbox = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1), Self.delivery(2, stop: 2)], "c2"))
        _ = try await outbox.pull()
        // The server's data was reset: the cursor is unknown there. A failure right after leaves
        // the old store in place; the next pull starts over and replaces it.
        harness.transport.scriptFeed(.outcome(.cursorExpired))
        harness.transport.scriptFeed(.outcome(.unreachable(reason: "gone")))
        let interrupted = try await outbox.pull()
        #expect(interrupted.stoppedBecause == .unreachable(reason: "gone"))
        #expect(try await outbox.records(Delivery.all).map(\.id) == [1, 2])
        harness.transport.scriptFeed(.outcome(.cursorExpired))
        harness.transport.scriptFeed(Self.page([Self.delivery(10, stop: 1)], "n1"))
        let restarted = try await outbox.pull()
        #expect(restarted.caughtUp)
        #expect(try await outbox.records(Delivery.all).map(\.id) == [10])
        #expect(try await outbox.records(Delivery.byStopOrder(2)).isEmpty)
        #expect(harness.transport.feedCursors == [nil, "c2", nil, "c2", nil])
    }

    @Test func aPageHoldingARecordThisBuildCannotReadIsNotCommitted() async throws {
        let outbox = try open()
        let unreadable = RecordChange(type: "Delivery", id: 9, version: 1, fields: Data(#"{"status":"teleported"}"#.utf8))
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1), unreadable], "c2"))
        let report = try await outbox.pull()
        #expect(!report.caughtUp)
        guard case .failed(let reason, _) = report.stoppedBecause else {
            Issue.record("expected a failure, got \(String(describing: report.stoppedBecause))")
            return
        }
        #expect(reason.contains("Delivery 9"))
        #expect(try await outbox.storedRecordCount() == 0)  // not even the readable one: the page is one unit
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1)], "c2"))
        _ = try await outbox.pull()
        #expect(harness.transport.feedCursors == [nil, nil])  // the cursor did not move past the bad page
    }

    @Test func aPageReadAheadThatCannotBeReadLeavesTheEarlierPageCommittedAndTheCursorAfterIt() async throws {
        let outbox = try open()
        let unreadable = RecordChange(type: "Delivery", id: 9, version: 1, fields: Data(#"{"status":"teleported"}"#.utf8))
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1), Self.delivery(2, stop: 2)], "c1", more: true))
        harness.transport.scriptFeed(Self.page([Self.delivery(3, stop: 3), unreadable], "c2"))
        let report = try await outbox.pull()
        #expect(report.pages == 1)
        #expect(report.upserted == 2)
        #expect(!report.caughtUp)
        #expect(try await outbox.records(Delivery.all).map(\.id).sorted() == [1, 2])
        harness.transport.scriptFeed(Self.page([Self.delivery(3, stop: 3)], "c2"))
        let resumed = try await outbox.pull()
        #expect(resumed.caughtUp)
        #expect(harness.transport.feedCursors == [nil, "c1", "c1"])  // resumed after the committed page, not after the refused one
        #expect(try await outbox.records(Delivery.all).map(\.id).sorted() == [1, 2, 3])
    }

    @Test func aFeedThatSaysMoreWithoutAdvancingStopsThePull() async throws {
        let outbox = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1)], "c1", more: true))
        harness.transport.scriptFeed(Self.page([Self.delivery(2, stop: 2)], "c1", more: true))  // the same cursor again
        for _ in 0..<50 { harness.transport.scriptFeed(Self.page([], "c9", more: true)) }
        let first = try await outbox.pull()
        guard case .failed = first.stoppedBecause else {
            Issue.record("expected the pull to stop, got \(first)")
            return
        }
        #expect(first.pages == 1)
        let second = try await outbox.pull()
        guard case .failed = second.stoppedBecause else {
            Issue.record("an empty page that says more must stop the pull, got \(second)")
            return
        }
        #expect(harness.transport.feedCursors.count == 3)
    }

    @Test func anAppUpdateThatIndexesOtherFieldsRebuildsTheIndexWhenTheOutboxOpens() async throws {
        var outbox: Outbox? = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1), Self.delivery(2, stop: 2)], "c1"))
        _ = try await outbox!.pull()
        outbox = nil
        // As if an older build, which indexed only `status`, had pulled these records.
        let db = try SQLiteConnection(path: harness.path, create: false)
        _ = try db.run("UPDATE records SET key2 = NULL WHERE type = 'Delivery'")
        _ = try db.run("UPDATE record_index_fields SET fields = 'status' WHERE type = 'Delivery'")
        let reopened = try open()
        #expect(try await reopened.records(Delivery.byStopOrder(2)).map(\.id) == [2])
        #expect(try await reopened.records(Delivery.byStatus(.assigned)).count == 2)
        #expect(try db.query("SELECT fields FROM record_index_fields WHERE type = 'Delivery'") { $0.text(0) } == ["status,stop_order"])
    }

    /// The key indexes a pull into an empty store leaves out while it inserts.
    static func keyIndexes(_ path: String) throws -> [String] {
        let db = try SQLiteConnection(path: path, create: false)
        return try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'records_key%' ORDER BY name") {
            $0.text(0) ?? ""
        }
    }

    /// The cursor the store's pulls have committed, read beside the outbox.
    static func pullCursor(_ path: String) throws -> String? {
        let db = try SQLiteConnection(path: path, create: false)
        return try db.query("SELECT cursor FROM pull_cursors") { $0.text(0) }.first ?? nil
    }

    /// A pull into an empty store inserts its records without the indexes of the keys its
    /// types use and builds them when it ends: during its second page they are gone, after it
    /// every one is back and a query by field finds what it found before.
    @Test func aPullIntoAnEmptyStoreBuildsTheKeyIndexesAtItsEnd() async throws {
        let outbox = try open()
        let all = (1...8).map { "records_key\($0)" }
        #expect(try Self.keyIndexes(harness.path) == all)
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1), Self.delivery(2, stop: 2)], "c1", more: true))
        harness.transport.scriptFeed(.hang)
        let ended = Counter()
        let pulling = Task {
            defer { ended.increment() }
            return try await outbox.pull()
        }
        // The second page hangs; the first commits with its cursor, without the indexes of the
        // two keys Delivery uses (the other six, which cost its records nothing, stay). Both are
        // events the pull reaches on its own, in either order (the next page is fetched while
        // this one commits): waited for without a clock, so that a machine whose cooperative
        // pool is busy with other tests for minutes still sees them; a pull that ends instead
        // (it failed) stops the wait.
        let unused = (3...8).map { "records_key\($0)" }
        while try (harness.transport.hangingFeedCount == 0 || Self.pullCursor(harness.path) != "c1") && ended.value == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        let during = try Self.keyIndexes(harness.path)
        #expect(during == unused, "the key indexes stayed while the first page went in")
        try #require(harness.transport.hangingFeedCount == 1, "the pull ended without asking for its second page")
        harness.transport.releaseFeed(.page(ChangePage(changes: [Self.delivery(3, stop: 2)], cursor: "c2", more: false)))
        let report = try await pulling.value
        #expect(report.upserted == 3 && report.caughtUp)
        #expect(try Self.keyIndexes(harness.path) == all)
        #expect(try await outbox.records(Delivery.byStopOrder(2)).map(\.id) == [2, 3])
    }

    @Test func aPullFromScratchBuildsTheKeyIndexesWhileItsLastPagesAreFetched() async throws {
        let outbox = try open()
        let all = (1...8).map { "records_key\($0)" }
        // The server says 1,000,000 changes follow the first page, then 3 the second: the key
        // indexes are left out until the second commits, then built before the third arrives.
        // The second and third requests are held until the test has looked.
        harness.transport.scriptFeed(
            .outcome(.page(ChangePage(changes: [Self.delivery(1, stop: 1)], cursor: "c1", more: true, remaining: 1_000_000))))
        harness.transport.scriptFeed(.hang)
        harness.transport.scriptFeed(.hang)
        let events = outbox.events()
        let pages = Counter()
        let watching = Task {
            for await event in events {
                if case .pullProgress = event { pages.increment() }
            }
        }
        defer { watching.cancel() }
        let ended = Counter()
        let pulling = Task {
            defer { ended.increment() }
            return try await outbox.pull(pageSize: 2)
        }
        // Each page's progress is told once what the pull does after the page is done; waited
        // for as events (see the test above), a pull that ends instead stopping the wait.
        func waitFor(pages count: Int, hanging: Int) async throws {
            while (pages.value < count || harness.transport.hangingFeedCount < hanging) && ended.value == 0 {
                try await Task.sleep(for: .milliseconds(5))
            }
            try #require(ended.value == 0, "the pull ended before its page \(count + 1)")
        }
        try await waitFor(pages: 1, hanging: 1)
        #expect(try Self.keyIndexes(harness.path) == (3...8).map { "records_key\($0)" }, "left out while much remains")
        harness.transport.releaseFeed(.page(ChangePage(changes: [Self.delivery(2, stop: 2)], cursor: "c2", more: true, remaining: 3)))
        try await waitFor(pages: 2, hanging: 1)
        #expect(try Self.keyIndexes(harness.path) == all, "built before the last page came")
        harness.transport.releaseFeed(.page(ChangePage(changes: [Self.delivery(3, stop: 2)], cursor: "c3", more: false)))
        let report = try await pulling.value
        #expect(report.upserted == 3 && report.caughtUp)
        #expect(try await outbox.records(Delivery.byStopOrder(2)).map(\.id) == [2, 3])
    }

    @Test func aServerThatMisstatesWhatRemainsOnlyMovesWhenTheKeyIndexesAreBuilt() async throws {
        // The first page says nothing remains yet more follows, the second a count far past
        // the feed: the indexes are built early or late, and every record is found by its keys.
        for (first, second) in [(0, 9_999_999), (9_999_999, 0)] {
            let outbox = try open()
            try await outbox.forgetPulledRecords()
            harness.transport.scriptFeed(
                .outcome(.page(ChangePage(changes: [Self.delivery(1, stop: 1)], cursor: "c1", more: true, remaining: first))))
            harness.transport.scriptFeed(
                .outcome(.page(ChangePage(changes: [Self.delivery(2, stop: 2)], cursor: "c2", more: true, remaining: second))))
            harness.transport.scriptFeed(Self.page([Self.delivery(3, stop: 2)], "c3"))
            let report = try await outbox.pull(pageSize: 2)
            #expect(report.upserted == 3 && report.caughtUp)
            #expect(try Self.keyIndexes(harness.path) == (1...8).map { "records_key\($0)" })
            #expect(try await outbox.records(Delivery.byStopOrder(2)).map(\.id) == [2, 3])
            #expect(try await outbox.records(Delivery.byStatus(.assigned)).map(\.id) == [1, 2, 3])
        }
    }

    /// A process killed during such a pull leaves the store without its key indexes: the next
    /// open creates them again, and queries by field use them.
    @Test func aStoreLeftWithoutItsKeyIndexesGetsThemBackAtOpen() async throws {
        var outbox: Outbox? = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, stop: 1), Self.delivery(2, stop: 2)], "c1"))
        _ = try await outbox!.pull()
        outbox = nil
        let db = try SQLiteConnection(path: harness.path, create: false)
        for slot in 1...8 { _ = try db.run("DROP INDEX records_key\(slot)") }
        let reopened = try open()
        #expect(try Self.keyIndexes(harness.path).count == 8)
        let fresh = try SQLiteConnection(path: harness.path, create: false)
        let plan = try fresh.query(
            """
            EXPLAIN QUERY PLAN SELECT id, version, payload FROM records WHERE view = ?1 AND type = ?2
            AND id IN (SELECT id FROM records WHERE view = ?1 AND type = ?2 AND key2 = ?3) ORDER BY id
            """, [.text("acme"), .text("Delivery"), .text("2")]
        ) { $0.text(3) ?? "" }
        #expect(plan.contains { $0.contains("records_key2") }, "\(plan)")
        #expect(try await reopened.records(Delivery.byStopOrder(2)).map(\.id) == [2])
    }

    @Test func recordChangesAnnounceWhatAPullWrote() async throws {
        let outbox = try open()
        let notices = await outbox.recordChanges()
        var iterator = notices.makeAsyncIterator()
        harness.transport.scriptFeed(Self.page([Self.delivery(4, stop: 1), Self.delivery(5, stop: 2)], "c1"))
        _ = try await outbox.pull()
        #expect(await iterator.next()?.changes == ["Delivery": [4, 5]])
    }

    @Test func aPageWrittenInBatchesAppliesEachChangeInTheFeedsOrderAndAnnouncesOnlyWhatItWrote() async throws {
        let outbox = try open()
        harness.transport.scriptFeed(Self.page([Self.delivery(1, version: 5, stop: 1)], "c1"))
        _ = try await outbox.pull()
        let notices = await outbox.recordChanges()
        var iterator = notices.makeAsyncIterator()
        // 41 records (batches of 8 and one), a removal, then 71 (one of 64 and seven of one):
        // record 1 older than the stored one, record 10 twice, record 20 removed and back.
        var changes = (2...40).map { Self.delivery(Int64($0), stop: $0) }
        changes.insert(Self.delivery(1, version: 3, stop: 999), at: 17)
        changes.append(Self.delivery(10, version: 2, stop: 100))
        changes.append(RecordChange(type: "Delivery", id: 20, version: 0, fields: nil))
        changes.append(Self.delivery(20, version: 2, stop: 200))
        changes += (41...110).map { Self.delivery(Int64($0), stop: $0) }
        harness.transport.scriptFeed(Self.page(changes, "c2"))
        let report = try await outbox.pull()
        #expect(report.upserted == 112)
        #expect(report.deleted == 1)
        #expect(await iterator.next()?.changes == ["Delivery": Set((2...110).map { Int64($0) })])
        let kept = try #require(try await outbox.record(Delivery.self, id: 1))
        #expect(kept.version == 5)
        #expect(kept.stopOrder == 1)
        #expect(try await outbox.records(Delivery.byStopOrder(999)).isEmpty)
        #expect(try await outbox.record(Delivery.self, id: 10)?.stopOrder == 100)
        #expect(try await outbox.records(Delivery.byStopOrder(10)).isEmpty)
        #expect(try await outbox.record(Delivery.self, id: 20)?.version == 2)
        #expect(try await outbox.records(Delivery.byStopOrder(200)).map(\.id) == [20])
        #expect(try await outbox.storedRecordCount() == 110)
        // Back after its removal, record 20 keeps no tombstone (which would hide it from an acknowledgement).
        let db = try SQLiteConnection(path: harness.path, create: false)
        #expect(try db.query("SELECT id FROM record_tombstones") { $0.int(0) }.isEmpty)
    }

    @Test func editingThroughAFormThatEditsNothingOrARecordNotHereIsRefused() async throws {
        let outbox = try open()
        await #expect(throws: OutboxError.notAnEditForm("SalesOrder")) {
            try await outbox.edit(SalesOrder.self, id: 1) { _ in }
        }
        await #expect(throws: OutboxError.noSuchRecord(type: "Customer", id: 42)) {
            try await outbox.edit(CustomerUpdate.self, id: 42) { $0.phone = "1" }
        }
        #expect(await outbox.stateCounts().values.reduce(0, +) == 0)
    }

    @Test func hostileFeedPagesAreRefusedNotStored() {
        let json = ["content-type": "application/json"]
        func page(_ text: String, status: Int = 200, headers: [String: String]? = nil) -> PullOutcome {
            HTTPTransport.classifyPage(status: status, headers: headers ?? json, body: Data(text.utf8))
        }
        #expect(page(#"{"changes":[],"cursor":"c1","more":false}"#) == .page(ChangePage(changes: [], cursor: "c1", more: false)))
        if case .unreachable = page("<html>Log in</html>", headers: ["content-type": "text/html"]) {
        } else {
            Issue.record("a portal's page is no feed")
        }
        if case .failed = page(#"{"changes":[{"type":"Delivery","id":-4,"version":1,"record":{}}],"cursor":"c1"}"#) {
        } else {
            Issue.record("a negative id")
        }
        if case .failed = page(#"{"changes":[{"type":"Delivery","id":1e300,"version":1,"record":{}}],"cursor":"c1"}"#) {
        } else {
            Issue.record("a huge id")
        }
        if case .failed = page(#"{"changes":[{"type":"Delivery","id":3,"version":0,"record":{}}],"cursor":"c1"}"#) {
        } else {
            Issue.record("version 0")
        }
        if case .failed = page(#"{"changes":[{"type":"Delivery","id":3,"version":1,"record":[1]}],"cursor":"c1"}"#) {
        } else {
            Issue.record("fields not an object")
        }
        if case .failed = page(#"{"changes":[],"cursor":"c1\r\nX-Evil: 1"}"#) {} else { Issue.record("a cursor with control characters") }
        if case .failed = page(#"{"changes":[{"type":"","id":3,"version":1,"record":{}}],"cursor":"c1"}"#) {
        } else {
            Issue.record("an empty type")
        }
        #expect(page("", status: 401) == .authExpired)
        #expect(page("", status: 410) == .cursorExpired)
        if case .unreachable = page("", status: 302) {} else { Issue.record("a redirect") }
    }
}
