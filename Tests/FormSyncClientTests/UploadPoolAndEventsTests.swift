import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

@testable import FormSyncClient

/// Uploads fill a pool of their own, attachments pass through the transform hook before they
/// are stashed, and every attempt shows up in the event stream and the item's history.
struct UploadPoolAndEventsTests {
    @Test func aSubmissionIsNotHeldBehindAnotherItemsUpload() async throws {
        let h = try Harness()
        h.configuration = Outbox.Configuration(concurrency: 1, uploadConcurrency: 1)
        let outbox = try h.open()
        let photo = outbox.placeholderIDs.next()
        try await outbox.enqueue(
            NewCustomer(name: "Big photo", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: try h.cameraFile("front.jpg", bytes: 200_000), contentType: "image/jpeg")])
        try await outbox.enqueue(order(1), documentID: "order")
        h.transport.script(.hang) { $0.isFileUpload }  // the upload takes forever
        let flush = Task { await outbox.flush() }
        await eventually("the order to go out while the upload hangs") { h.transport.requests.contains { $0.documentID == "order" } }
        #expect(h.transport.hangingCount == 1)
        #expect(h.transport.requests.first?.isFileUpload == true)  // the upload went first, and the order did not wait for it
        h.transport.release(.done(ServerAcknowledgement(serverID: 77)))
        let report = await flush.value
        #expect(report.sent == 3)
    }

    @Test func theAttachmentTransformRunsBeforeStashingAndTheStashMeasuresWhatItMade() async throws {
        let h = try Harness()
        h.configuration = Outbox.Configuration(attachmentTransform: { source, _, scratch in
            // "Downscale": keep every fourth byte, re-encoded as JPEG.
            let original = try Data(contentsOf: source)
            try MediaSignature.stamped(
                Data(original.enumerated().compactMap { $0.offset % 4 == 0 ? $0.element : nil }), asFileNamed: "small.jpg"
            ).write(to: scratch)
            return (scratch, "image/jpeg")
        })
        let outbox = try h.open()
        let source = try h.cameraFile("huge.png", bytes: 40_000)
        let photo = outbox.placeholderIDs.next()
        let id = try await outbox.enqueue(
            NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo)),
            attachments: [.init(placeholder: photo, source: source, contentType: "image/png")])
        let stored = try #require(try await outbox.item(id)?.decodedPayload(as: NewCustomer.self))
        #expect(stored.shopFront?.byteCount == 10_000)
        #expect(stored.shopFront?.contentType == "image/jpeg")
        _ = await outbox.flush()
        let upload = try #require(h.transport.requests.first { $0.isFileUpload })
        guard case .file(let path, let type, let count, let sha) = upload.body else { return }
        #expect(count == 10_000)
        #expect(type == "image/jpeg")
        let expected = MediaSignature.stamped(
            Data(try Data(contentsOf: source).enumerated().compactMap { $0.offset % 4 == 0 ? $0.element : nil }), asFileNamed: "small.jpg")
        #expect(sha == SHA256.hash(expected))
        #expect(!FileManager.default.fileExists(atPath: path))  // deleted once confirmed
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash").filter { $0.hasPrefix("scratch-") }
        #expect(leftovers.isEmpty)
    }

    @Test func aTransformThatFailsRefusesTheEnqueueAndStoresNothing() async throws {
        struct Unreadable: Error {}
        let h = try Harness()
        h.configuration = Outbox.Configuration(attachmentTransform: { _, _, _ in throw Unreadable() })
        let outbox = try h.open()
        let photo = outbox.placeholderIDs.next()
        await #expect(throws: OutboxError.self) {
            try await outbox.enqueue(
                NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo)),
                attachments: [.init(placeholder: photo, source: try h.cameraFile("a.jpg"), contentType: "image/jpeg")])
        }
        #expect(await outbox.stateCounts().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash").isEmpty)
    }

    @Test func theEventStreamAndTheHistoryTellEveryAttempt() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let events = outbox.events()
        let id = try await outbox.enqueue(order(1), documentID: "d1")
        h.transport.script(.transient(reason: "HTTP 503", retryAfter: .milliseconds(5000)))
        h.transport.script(.rejected(reason: "HTTP 422", fieldErrors: [FieldError(pointer: "#/lines", code: "required", detail: "")]))
        _ = await outbox.flush()
        h.clock.advance(by: 60_000)
        _ = await outbox.flush()
        h.transport.script(.unreachable(reason: "no signal"))
        try await outbox.retry(id)
        _ = await outbox.flush()
        h.transport.reachable = true
        _ = await outbox.probe()

        let seen = await StreamReading.read(events) { $0 == .online }.elements
        #expect(seen.count == 10)
        #expect(seen[0] == .attemptStarted(item: id, kind: .submission, form: "SalesOrder", attempt: 1))
        guard case .attemptFinished(id, .transient, _, _, _, _) = seen[1] else {
            Issue.record("\(seen[1])")
            return
        }
        guard case .backoffScheduled(id, let until, "HTTP 503") = seen[2] else {
            Issue.record("\(seen[2])")
            return
        }
        #expect(until.millisecondsSince1970 >= h.clock.now - 60_000 + 5000)
        #expect(seen[3] == .attemptStarted(item: id, kind: .submission, form: "SalesOrder", attempt: 2))
        guard case .attemptFinished(id, .rejected, _, _, _, _) = seen[4] else {
            Issue.record("\(seen[4])")
            return
        }
        guard case .parked(id, .rejected, "HTTP 422") = seen[5] else {
            Issue.record("\(seen[5])")
            return
        }
        guard case .attemptStarted(id, .submission, "SalesOrder", _) = seen[6] else {
            Issue.record("\(seen[6])")
            return
        }
        guard case .attemptFinished(id, .unreachable, _, _, _, _) = seen[7] else {
            Issue.record("\(seen[7])")
            return
        }
        #expect(seen[8] == .offline(reason: "no signal"))
        #expect(seen[9] == .online)

        let history = try await outbox.history(of: id)
        #expect(history.map(\.outcome) == ["transient", "rejected", "unreachable"])
        #expect(history.map(\.reason) == ["HTTP 503", "HTTP 422", "no signal"])
    }

    @Test func theHistoryKeepsTheNewestTwentyAttempts() async throws {
        let h = try Harness()
        h.configuration = Outbox.Configuration(
            retry: RetryPolicy(baseDelay: .milliseconds(1000), maxDelay: .milliseconds(1000), maxAttempts: 100))
        let outbox = try h.open()
        let id = try await outbox.enqueue(order(1))
        for n in 0..<25 {
            h.transport.script(.transient(reason: "HTTP 503 #\(n)", retryAfter: nil))
            _ = await outbox.flush()
            h.clock.advance(by: 2000)
        }
        let history = try await outbox.history(of: id)
        #expect(history.count == 20)
        #expect(history.first?.reason == "HTTP 503 #5")
        #expect(history.last?.reason == "HTTP 503 #24")
    }
}
