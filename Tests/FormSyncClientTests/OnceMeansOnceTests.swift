import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

/// The same document enqueued again never reaches the server twice, and an edit made before the
/// first one left the device replaces it.
struct OnceMeansOnceTests {
    @Test func theSameDocumentWithTheSamePayloadIsQueuedAndSentOnce() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let first = try await outbox.enqueue(order(1, quantity: 3), documentID: "doc-1")
        let again = try await outbox.enqueue(order(1, quantity: 3), documentID: "doc-1")
        #expect(again == first)
        #expect(await outbox.flush().sent == 1)
        // After it was confirmed and even purged, the same enqueue still changes nothing.
        let purged = try await outbox.purgeConfirmed(acknowledgedBefore: Date(millisecondsSince1970: h.clock.now + 1))
        #expect(purged == 1)
        #expect(try await outbox.enqueue(order(1, quantity: 3), documentID: "doc-1") == first)
        #expect(await outbox.flush().sent == 0)
        #expect(h.sentDocuments == ["doc-1"])
    }

    @Test func aDocumentEnqueuedAgainIsFoundWithoutATransactionOrAnFsync() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let first = try await outbox.enqueue(order(1, quantity: 3), documentID: "doc-1")
        let commits = Atomic<Int>(0)
        await outbox.observeCommits { _ in commits.add(1, ordering: .relaxed) }
        let fsyncs = outbox.walSync.fsyncCount
        for _ in 0..<5 { #expect(try await outbox.enqueue(order(1, quantity: 3), documentID: "doc-1") == first) }
        #expect(commits.load(ordering: .relaxed) == 0, "a re-enqueue of a stored document wrote nothing")
        #expect(outbox.walSync.fsyncCount == fsyncs)
    }

    @Test func aReopenedOutboxMakesItsLogDurableBeforeARepeatedEnqueueIsReportedSaved() async throws {
        // The last process may have been killed between a save's commit and its fsync: the
        // save is in the log (the page cache outlives a killed process) but not yet on disk.
        // A repeated enqueue finds it without a transaction, so the open itself syncs the log.
        let h = try Harness()
        let first = try await h.open().enqueue(order(1, quantity: 3), documentID: "doc-1")
        let reopened = try h.open()
        #expect(reopened.walSync.fsyncCount == 1, "the open fsynced what the last process left in the log")
        #expect(try await reopened.enqueue(order(1, quantity: 3), documentID: "doc-1") == first)
        #expect(reopened.walSync.fsyncCount == 1)
    }

    @Test func anEditEnqueuedTwiceIsAppliedOnce() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let base = (payload: order(5, quantity: 1), version: "\"1\"")
        let edit = try await outbox.enqueue(order(5, quantity: 2), documentID: "order-5", base: base)
        #expect(try await outbox.enqueue(order(5, quantity: 2), documentID: "order-5", base: base) == edit)
        #expect(await outbox.flush().sent == 1)
        #expect(h.transport.requests.count == 1)
    }

    @Test func aNewPayloadForADocumentThatNeverLeftTheDeviceReplacesItAgainstTheEarliestBase() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let base = (payload: order(5, quantity: 1), version: "\"1\"")
        let first = try await outbox.enqueue(order(5, quantity: 2), documentID: "order-5", base: base)
        let firstKey = try #require(try await outbox.item(first)).attemptID
        let later = (payload: order(5, quantity: 2), version: "\"2\"")
        let second = try await outbox.enqueue(order(5, quantity: 3), documentID: "order-5", base: later)
        #expect(second == first)
        let item = try #require(try await outbox.item(first))
        #expect(item.attemptID != firstKey)  // a new exact payload, a new key
        #expect(try item.decodedPayload(as: SalesOrder.self)?.lines.first?.quantity == 3)
        #expect(await outbox.flush().sent == 1)
        let sent = try #require(h.transport.requests.first)
        #expect(h.transport.requests.count == 1)
        guard case .submission(_, _, _, _, let baseVersion) = sent.body else { throw Failure.notASubmission }
        #expect(baseVersion == "\"1\"")
    }

    @Test func aNewPayloadForADocumentAlreadyOnTheWireQueuesBehindItInTheSameLane() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let first = try await outbox.enqueue(order(5, quantity: 2), documentID: "order-5")
        h.transport.script(.hang)
        let flushing = Task { await outbox.flush() }
        await eventually("the first payload on the wire") { h.transport.hangingCount == 1 }
        // The entity changed too, but the document's order is what counts.
        let second = try await outbox.enqueue(order(6, quantity: 3), documentID: "order-5")
        #expect(second != first)
        let lanes = try await [outbox.item(first)?.lane, outbox.item(second)?.lane]
        #expect(lanes[0] == lanes[1])
        h.transport.release(.done(ServerAcknowledgement(serverID: 1, version: "\"1\"")))
        let during = await flushing.value
        let after = await outbox.flush()
        #expect(during.sent + after.sent == 2)
        #expect(h.transport.requests.map(\.documentID) == ["order-5", "order-5"])
        #expect(
            try h.transport.requests.map { try JSONDecoder().decode(SalesOrder.self, from: $0.payload ?? Data()).lines[0].quantity } == [
                2, 3,
            ])
    }

    @Test func aDiscardedDocumentCanBeCapturedAgain() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let first = try await outbox.enqueue(order(1), documentID: "doc-1")
        h.transport.script(.rejected(reason: "no", fieldErrors: []))
        _ = await outbox.flush()
        try await outbox.discard(first)
        let again = try await outbox.enqueue(order(1), documentID: "doc-1")
        #expect(again != first)
        #expect(await outbox.flush().sent == 1)
    }

    enum Failure: Error { case notASubmission }
}
