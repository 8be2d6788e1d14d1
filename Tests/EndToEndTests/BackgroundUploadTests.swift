import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An upload in the form an OS background-transfer service runs: a request and a file on disk,
/// sent by `URLSession.uploadTask(with:fromFile:)` outside the outbox, its reply handed back to
/// an outbox opened again (as after a relaunch), through the same reading of replies.
struct BackgroundUploadTests {
    @Test func anUploadRunByURLSessionFromItsFileIsRecordedByARelaunchedOutbox() async throws {
        let world = try World()
        var outbox = try world.device("courier")
        let photo = outbox.placeholderIDs.next()
        let shop = try await outbox.enqueue(
            NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: try world.file("front.jpg", bytes: 50_000), contentType: "image/jpeg")])
        let leased = try await outbox.leaseBackgroundUploads()
        #expect(leased.count == 1)
        #expect(try await outbox.leaseBackgroundUploads().isEmpty, "leased once")
        // The app keeps what it handed over with the task, and is then suspended and killed.
        let kept = try JSONEncoder().encode(leased)
        _ = await outbox.flush()
        #expect(!world.server.requestLog().contains { $0.path == "/files" }, "the outbox does not send what the service holds")

        // The OS runs the upload from the stashed file.
        let upload = try #require(try JSONDecoder().decode([BackgroundUpload].self, from: kept).first)
        let request = await world.transport().backgroundRequest(for: upload)
        let (body, response) = try await withCheckedThrowingContinuation {
            (done: CheckedContinuation<(Data, HTTPURLResponse), any Error>) in
            URLSession.shared.uploadTask(with: request, fromFile: upload.file) { data, response, error in
                if let error { return done.resume(throwing: error) }
                done.resume(returning: (data ?? Data(), response as! HTTPURLResponse))
            }.resume()
        }
        #expect(response.statusCode == 201)

        // A relaunched app hears of it and records it with the outbox's own reading of replies.
        outbox = try world.device("courier")
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        let outcome = DeliveryOutcome(status: response.statusCode, headers: headers, body: body, documentID: upload.documentID)
        guard case .done(let ack) = outcome else {
            Issue.record("the reply was not read as an acknowledgement: \(outcome)")
            return
        }
        try await outbox.finishBackgroundUpload(upload, outcome: outcome)
        #expect(try await outbox.item(upload.itemID)?.state == .confirmed)
        #expect(!FileManager.default.fileExists(atPath: upload.file.path), "the stashed copy goes once confirmed")
        _ = await outbox.flush()
        #expect(try await outbox.item(shop)?.state == .confirmed)
        let held = try #require(world.server.documents().first { $0.form == "NewCustomer" })
        #expect(held.appliedWrites == 1)
        #expect(try JSONDecoder().decode(NewCustomer.self, from: held.payload).shopFront?.id == ack.serverID)
        #expect(world.server.requestLog().filter { $0.path == "/files" }.count == 1, "sent once, by the service")
    }

    @Test func aBackgroundUploadTheServiceLostGoesAgainAfterItsLeaseUnderTheSameKey() async throws {
        let world = try World()
        let outbox = try world.device("courier")
        let photo = outbox.placeholderIDs.next()
        try await outbox.enqueue(
            NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo, contentType: "image/jpeg")),
            attachments: [.init(placeholder: photo, source: try world.file("front.jpg", bytes: 5_000), contentType: "image/jpeg")])
        let upload = try #require(try await outbox.leaseBackgroundUploads().first)
        world.clock.advance(by: 86_400_000 + 1)  // a day: the service never reported back
        _ = try await world.drain("courier")
        let sent = world.server.requestLog().filter { $0.path == "/files" }
        #expect(sent.count == 1)
        #expect(sent.first?.idempotencyKey == upload.attemptID)
        // A report that arrives after the item was sent again changes nothing.
        try await outbox.finishBackgroundUpload(upload, outcome: .unreachable(reason: "the service gave up"))
        #expect(try await outbox.item(upload.itemID)?.state == .confirmed)
    }
}
