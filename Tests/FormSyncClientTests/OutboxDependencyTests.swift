import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

struct OutboxDependencyTests {
    @Test func photosAreStashedUploadedFirstAndRemappedWhileTheStoredPayloadKeepsItsPlaceholders() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let p1 = outbox.placeholderIDs.next()
        let p2 = outbox.placeholderIDs.next()
        let sig = outbox.placeholderIDs.next()
        var delivery = GeneratedFixtures.delivery()
        delivery.proofPhotos = [FileRef(id: p1, contentType: "image/jpeg"), FileRef(id: p2, contentType: "image/jpeg")]
        delivery.signature = FileRef(id: sig, contentType: "image/png")
        let cameraFiles = try [h.cameraFile("a.jpg", bytes: 3000), h.cameraFile("b.jpg", bytes: 70_000), h.cameraFile("s.png", bytes: 10)]
        let id = try await outbox.enqueue(
            delivery,
            attachments: [
                .init(placeholder: p1, source: cameraFiles[0], contentType: "image/jpeg"),
                .init(placeholder: p2, source: cameraFiles[1], contentType: "image/jpeg"),
                .init(placeholder: sig, source: cameraFiles[2], contentType: "image/png"),
            ])
        // The camera cache is purged: the outbox owns its copies.
        for file in cameraFiles { try FileManager.default.removeItem(at: file) }
        let stash = h.path + ".stash"
        let copies = try FileManager.default.contentsOfDirectory(atPath: stash)
        #expect(copies.count == 3)
        for copy in copies {
            let attributes = try FileManager.default.attributesOfItem(atPath: stash + "/" + copy)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }

        outbox = try h.open()
        let report = await outbox.flush()
        #expect(report.sent == 4)
        let requests = h.transport.requests
        #expect(requests.prefix(3).allSatisfy { $0.isFileUpload })
        guard case .file(_, let type, let bytes, let sha) = requests[1].body else { return }
        #expect(type == "image/jpeg")
        #expect(bytes == 70_000)
        #expect(sha == SHA256.hash(MediaSignature.stamped(Data((0..<70_000).map { UInt8($0 % 251) }), asFileNamed: "b.jpg")))
        let sent = try JSONDecoder().decode(DeliveryConfirmation.self, from: #require(requests[3].payload))
        #expect(sent.placeholders.isEmpty)
        #expect(sent.proofPhotos.map(\.id) == [1001, 1002])
        #expect(sent.signature?.id == 1003)
        let stored = try #require(try await outbox.item(id)?.decodedPayload(as: DeliveryConfirmation.self))
        #expect(stored.placeholders == [p1, p2, sig])
        #expect(try FileManager.default.contentsOfDirectory(atPath: stash).isEmpty)  // deleted after acknowledgement
    }

    @Test func nestedListFileFieldsAreRemapped() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let a = outbox.placeholderIDs.next()
        let b = outbox.placeholderIDs.next()
        let inspection = SiteInspection(
            siteCode: "LIS-0042", inspectorId: EntityRef(7), visitDate: LocalDate("2026-11-30"),
            location: GeoPoint(latitude: 38.7, longitude: -9.1), hazards: [.gas],
            findings: [
                .init(title: "Rust", severity: .low), .init(title: "Crack", severity: .high, photos: [FileRef(id: a), FileRef(id: b)]),
            ])
        try await outbox.enqueue(
            inspection,
            attachments: [
                .init(placeholder: a, source: try h.cameraFile("a.jpg", bytes: 100)),
                .init(placeholder: b, source: try h.cameraFile("b.jpg", bytes: 200)),
            ])
        _ = await outbox.flush()
        // The two uploads run side by side: each photo takes the server id of its own upload,
        // in whatever order they arrived.
        let uploads = h.transport.requests.prefix(2).map { request -> Int64 in
            guard case .file(_, _, let bytes, _) = request.body else { return -1 }
            return bytes
        }
        let idOfA: Int64 = uploads.firstIndex(of: 100) == 0 ? 1001 : 1002
        let sent = try JSONDecoder().decode(SiteInspection.self, from: #require(h.transport.requests.last?.payload))
        #expect(Set(uploads) == [100, 200])
        #expect(sent.findings[1].photos.map(\.id) == [idOfA, 2003 - idOfA])
        #expect(sent.inspectorId == EntityRef(7))
    }

    @Test func aRecordCreatedOfflineIsReferencedByALaterSubmissionThatWaitsForIt() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let customer = outbox.placeholderIDs.next()
        let created = try await outbox.enqueue(NewCustomer(name: "Café Lima", segment: .horeca), creates: customer)
        let orderID = try await outbox.enqueue(order(customer), documentID: "order")
        h.transport.script(.transient(reason: "offline", retryAfter: nil), when: { $0.form == "NewCustomer" })
        _ = await outbox.flush()
        #expect(h.sentDocuments.count == 1)  // the order waits for its customer
        #expect(try await outbox.item(orderID)?.state == .savedOnDevice)

        outbox = try h.open()
        h.clock.advance(by: 60_000)
        h.transport.script(.done(ServerAcknowledgement(serverID: 501, version: "v1")), when: { $0.form == "NewCustomer" })
        let report = await outbox.flush()
        #expect(report.sent == 2)
        let last = try #require(h.transport.requests.last)
        #expect(last.endpoint == "/customers/501/orders")
        #expect(try JSONDecoder().decode(SalesOrder.self, from: #require(last.payload)).customerId == EntityRef(501))
        #expect(try await outbox.item(created)?.serverID == 501)
        // The landed id is durable: an order enqueued later with the same placeholder goes straight out.
        outbox = try h.open()
        try await outbox.enqueue(order(customer), documentID: "later")
        _ = await outbox.flush()
        #expect(h.transport.requests.last?.endpoint == "/customers/501/orders")
    }

    @Test func dependentsAreBlockedWhenTheParentIsRejectedAndReleasedWhenItsFixLands() async throws {
        let h = try Harness()
        var outbox = try h.open()
        let customer = outbox.placeholderIDs.next()
        let parent = try await outbox.enqueue(NewCustomer(name: "Ana", segment: .retail), creates: customer)
        let child = try await outbox.enqueue(order(customer))
        let unrelated = try await outbox.enqueue(order(9))
        h.transport.script(.rejected(reason: "duplicate tax id", fieldErrors: []), when: { $0.form == "NewCustomer" })
        let report = await outbox.flush()
        #expect(report.rejected == 1)
        #expect(report.blocked == 1)
        #expect(report.sent == 1)
        #expect(try await outbox.item(child)?.state == .blocked)
        #expect(try await outbox.item(unrelated)?.state == .confirmed)
        #expect(h.sentDocuments.count == 2)  // never sent half-formed

        // An order enqueued while the parent is parked is blocked at once, and says why (found
        // by `formsync-lab torture sim`: it was listed with no reason).
        let another = try await outbox.enqueue(order(customer))
        #expect(try await outbox.item(another)?.state == .blocked)
        #expect(try await outbox.item(another)?.lastError == "waiting for an item it depends on, which needs attention")

        outbox = try h.open()
        try await outbox.resubmit(parent, with: NewCustomer(name: "Ana", taxId: "PT123456789", segment: .retail))
        #expect(try await outbox.item(child)?.state == .savedOnDevice)
        h.transport.script(.done(ServerAcknowledgement(serverID: 777)), when: { $0.form == "NewCustomer" })
        let second = await outbox.flush()
        #expect(second.sent == 3)
        #expect(h.transport.requests.suffix(2).map(\.endpoint) == ["/customers/777/orders", "/customers/777/orders"])
    }

    @Test func discardingAParentLeavesItsDependentsBlockedUntilTheyAreDiscarded() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let customer = outbox.placeholderIDs.next()
        let parent = try await outbox.enqueue(NewCustomer(name: "Ana", segment: .retail), creates: customer)
        let child = try await outbox.enqueue(order(customer))
        h.transport.script(.rejected(reason: "no", fieldErrors: []))
        _ = await outbox.flush()
        try await outbox.discard(parent)
        #expect(try await outbox.item(child)?.state == .blocked)
        #expect(await outbox.flush().sent == 0)
        try await outbox.discard(child)
        #expect(try await outbox.parkedItems().isEmpty)
    }

    @Test func aPlaceholderNothingProvidesIsRefusedAtEnqueue() async throws {
        let h = try Harness()
        let outbox = try h.open()
        await #expect(throws: OutboxError.unknownPlaceholder(-42)) { try await outbox.enqueue(order(-42)) }
        #expect(try await outbox.items(in: Set(SyncState.allCases)).isEmpty)
    }
}
