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

    @Test func answersThatComeAtOnceAreRecordedTogetherWithNoMoreOnTheWireThanTheConcurrency() async throws {
        let h = try Harness()
        h.configuration.concurrency = 4
        let outbox = try h.open()
        try await enqueueLanes(outbox, customers: 48, perCustomer: 1)
        let commits = Mutex(0)
        await outbox.observeCommits { _ in commits.withLock { $0 += 1 } }
        let report = await outbox.flush()
        #expect(report.sent == 48)
        #expect(report.remaining == 0)
        #expect(h.transport.peakInFlight <= 4)
        #expect(Set(h.sentDocuments).count == 48)
        // The transport answers within a turn of the outbox's thread: the pass leases twelve
        // submissions ahead of its four slots and records sixteen answers per commit, about
        // four commits. One commit per turn of four answers took thirteen.
        #expect(commits.withLock { $0 } <= 6, "\(commits.withLock { $0 }) commits for 48 items")
    }

    @Test func aConcurrencyAsLargeAsAnIntHoldsSendsEverythingOnce() async throws {
        let h = try Harness()
        h.configuration.concurrency = .max
        h.configuration.uploadConcurrency = .max
        let outbox = try h.open()
        try await enqueueLanes(outbox, customers: 30, perCustomer: 2)
        let report = await outbox.flush()
        #expect(report.sent == 60)
        #expect(report.remaining == 0)
        #expect(h.sentDocuments.count == 60 && Set(h.sentDocuments).count == 60)
        expectLaneOrder(h, customers: 30, perCustomer: 2)
    }

    @Test func leasesTakenAheadAreHandedBackUnsentWhenTheNetworkGoesAway() async throws {
        let h = try Harness()
        h.configuration.concurrency = 2
        let outbox = try h.open()
        try await enqueueLanes(outbox, customers: 20, perCustomer: 1)
        // Answers at once until the sixth lane's: by then the pass holds leases ahead.
        h.transport.script(.unreachable(reason: "no route to host")) { $0.documentID == "c6-1" }
        let report = await outbox.flush()
        #expect(report.offline)
        let sent = h.transport.requests.count
        #expect(sent >= 6 && sent < 20)
        #expect(h.transport.peakInFlight <= 2)
        // Nothing stays leased; what was leased ahead and not sent counts no send (an item
        // never sent can still be replaced by a newer enqueue of its document).
        let db = try SQLiteConnection(path: h.path, create: false)
        #expect(try db.query("SELECT COUNT(*) FROM items WHERE state = 'leased'") { $0.int(0) } == [0])
        #expect(try db.query("SELECT COUNT(*) FROM items WHERE state = 'pending' AND sends = 0") { $0.int(0) } == [Int64(20 - sent)])
        #expect(try await outbox.items(in: [.sending, .sent]).isEmpty)
        let again = await outbox.flush()
        #expect(again.remaining == 0)
        #expect(Set(h.sentDocuments).count == 20, "every document reached the server")
        #expect(h.sentDocuments.count == 21, "once each, and the one no server answered again")
    }
}
