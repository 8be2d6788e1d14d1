import FieldForms
import FormSyncModel
import FormSyncSQLite
import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

/// A flush records the answers that came back and leases the slots they freed in one
/// transaction: one commit per turn of its loop, not two, and the lane order kept.
struct FlushTransactionTests {
    @Test func eachAnswerAndTheNextLeaseOfItsSlotCommitTogether() async throws {
        let h = try Harness()
        h.configuration.concurrency = 1
        let outbox = try h.open()
        for n in 1...10 { try await outbox.enqueue(order(1, sku: "AB-\(1000 + n)"), documentID: "doc-\(n)") }
        let commits = Mutex(0)
        await outbox.observeCommits { _ in commits.withLock { $0 += 1 } }
        let report = await outbox.flush()
        #expect(report.sent == 10)
        #expect(h.sentDocuments == (1...10).map { "doc-\($0)" }, "one lane, sent in order")
        // The first lease, then one commit per answer (which leases the next head with it):
        // 11. Recording and leasing apart took 20.
        #expect(commits.withLock { $0 } <= 12, "\(commits.withLock { $0 }) commits for 10 items")
        #expect(report.remaining == 0)
    }

    @Test func noSlotIsLeasedTwiceWhenAnswersFreeSeveralAtOnce() async throws {
        let h = try Harness()
        h.configuration.concurrency = 3
        let outbox = try h.open()
        try await enqueueLanes(outbox, customers: 6, perCustomer: 4)
        let report = await outbox.flush()
        #expect(report.sent == 24)
        #expect(h.transport.peakInFlight <= 3)
        expectLaneOrder(h, customers: 6, perCustomer: 4)
    }
}
