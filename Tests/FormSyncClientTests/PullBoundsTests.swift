import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

/// Issue 31, 14: a server that always says there is more, and moves its cursor each time, no
/// longer keeps a pull going for ever: the pull stops at its bound of pages, bytes or time,
/// keeps what it committed, and the next pull goes on from there.
struct PullBoundsTests {
    let records: RecordStoreTests
    var harness: Harness { records.harness }

    init() throws {
        records = try RecordStoreTests()
    }

    func open() throws -> Outbox { try records.open() }

    func scriptEndlessFeed(pages: Int, recordBytes: Int = 0) {
        for n in 1...pages {
            let address = "Rua \(n) " + String(repeating: "x", count: recordBytes)
            let record = Delivery(courierId: "ada", status: .assigned, stopOrder: n, address: address)
            let change = RecordChange(type: "Delivery", id: Int64(n), version: 1, fields: try! FormRegistry.encode(record))
            harness.transport.scriptFeed(.outcome(.page(ChangePage(changes: [change], cursor: "c\(n)", more: true))))
        }
    }

    @Test func aFeedThatNeverEndsStopsAtThePageBoundAndTheNextPullGoesOn() async throws {
        let outbox = try open()
        scriptEndlessFeed(pages: 60)
        let report = try await outbox.pull(limits: PullLimits(maxPages: 25))
        #expect(report.pages == 25)
        #expect(!report.caughtUp)
        guard case .failed(let reason, _) = report.stoppedBecause else {
            Issue.record("expected a stop at the bound, got \(String(describing: report.stoppedBecause))")
            return
        }
        #expect(reason.contains("25 pages"))
        #expect(try await outbox.storedRecordCount() == 25)
        let next = try await outbox.pull(limits: PullLimits(maxPages: 25))
        #expect(next.pages == 25)
        #expect(harness.transport.feedCursors.contains("c25"), "the second pull resumed after the first one's last page")
        #expect(try await outbox.storedRecordCount() == 50)
    }

    @Test func aFeedOfHugePagesStopsAtTheByteBound() async throws {
        let outbox = try open()
        scriptEndlessFeed(pages: 40, recordBytes: 10_000)
        let report = try await outbox.pull(limits: PullLimits(maxBytes: 100_000))
        #expect(report.pages >= 9 && report.pages <= 11)
        guard case .failed(let reason, _) = report.stoppedBecause else {
            Issue.record("expected a stop at the bound, got \(String(describing: report.stoppedBecause))")
            return
        }
        #expect(reason.contains("100000 bytes"))
    }

    @Test func aSlowEndlessFeedStopsAtTheTimeBound() async throws {
        let outbox = try open()
        scriptEndlessFeed(pages: 100_000)
        let report = try await outbox.pull(limits: PullLimits(maxDuration: .milliseconds(200)))
        #expect(!report.caughtUp && report.pages < 100_000)
        guard case .failed(let reason, _) = report.stoppedBecause else {
            Issue.record("expected a stop at the bound, got \(String(describing: report.stoppedBecause))")
            return
        }
        #expect(reason.contains("0.2 seconds"))
    }

    @Test func theDefaultBoundsAreFinite() {
        let limits = PullLimits()
        #expect(limits.maxPages == 10_000 && limits.maxBytes == 1 << 30 && limits.maxDuration == .seconds(600))
        #expect(PullLimits(maxPages: 0, maxBytes: -5).maxPages == 1, "a bound below one page is one page")
    }
}
