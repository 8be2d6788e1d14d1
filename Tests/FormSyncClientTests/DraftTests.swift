import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// Drafts (issue 47): a form half filled is kept in the outbox's database across restarts, with
/// durable copies of its photos, per person, until it is submitted (as one document, once) or
/// discarded (its copies with it).
struct DraftTests {
    let h: Harness

    init() throws {
        h = try Harness()
    }

    /// The files in the outbox's stash.
    var stashed: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: h.path + ".stash")) ?? []).filter { $0.hasSuffix(".blob") }.sorted()
    }

    @Test func aDraftWithThreePhotosSurvivesARestartAndIsSubmittedAsOneDocumentOnce() async throws {
        var outbox: Outbox? = try h.open()
        var photos: [Int64] = []
        var delivery = DeliveryConfirmation(deliveryId: EntityRef(17), outcome: .delivered)
        let id = try await outbox!.saveDraft(delivery)
        for n in 0..<3 {
            let placeholder = outbox!.placeholderIDs.next()
            photos.append(placeholder)
            try await outbox!.attach(
                try h.cameraFile("p\(n).jpg", bytes: 5_000 + n), to: id, placeholder: placeholder, contentType: "image/jpeg")
            delivery.proofPhotos.append(FileRef(id: placeholder, contentType: "image/jpeg"))
            try await outbox!.saveDraft(delivery, id: id)
        }
        // The camera's own files may go: the draft holds durable copies.
        for n in 0..<3 { try FileManager.default.removeItem(at: h.directory.appendingPathComponent("p\(n).jpg")) }
        #expect(stashed.count == 3)
        outbox = nil

        let reopened = try h.open()
        let listed = try await reopened.drafts()
        #expect(listed.map(\.id) == [id] && listed.first?.attachments == 3 && listed.first?.form == "DeliveryConfirmation")
        let restored = try #require(try await reopened.draft(id, as: DeliveryConfirmation.self))
        #expect(restored.payload.proofPhotos.map(\.id) == photos)
        #expect(Set(restored.attachments.map(\.placeholder)) == Set(photos))
        #expect(restored.attachments.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
        #expect(stashed.count == 3, "the open's sweep keeps a draft's copies")

        // Incomplete: refused with field errors, and the draft stays.
        await #expect(throws: OutboxError.self) { try await reopened.submitDraft(id, as: DeliveryConfirmation.self) }
        #expect(try await reopened.drafts().count == 1)
        let signature = reopened.placeholderIDs.next()
        try await reopened.attach(try h.cameraFile("signature.png", bytes: 800), to: id, placeholder: signature, contentType: "image/png")
        let item = try await reopened.submitDraft(id, as: DeliveryConfirmation.self) {
            $0.recipientName = "Ana Lima"
            $0.deliveredAt = Timestamp("2026-12-06T10:00:00Z")
            $0.signature = FileRef(id: signature, contentType: "image/png")
        }
        #expect(try await reopened.drafts().isEmpty)
        let queued = try #require(try await reopened.item(item))
        #expect(queued.documentID == restored.documentID)
        #expect(await reopened.stateCounts().values.reduce(0, +) == 5, "the submission, its three photos and its signature")
        #expect(stashed.count == 4, "the draft's copies went; the queued uploads hold their own")
        let sent = await reopened.flush()
        #expect(sent.sent == 5 && h.sentDocuments == [restored.documentID])
    }

    @Test func aDiscardedDraftTakesItsPhotosWithItAndDraftsArePerPerson() async throws {
        let outbox = try h.openWithRecords()
        try await outbox.signIn("ana")
        let mine = try await outbox.saveDraft(NewCustomer(name: "Half typed"))
        try await outbox.attach(
            try h.cameraFile("front.jpg"), to: mine, placeholder: outbox.placeholderIDs.next(), contentType: "image/jpeg")
        try await outbox.signIn("bo")
        #expect(try await outbox.drafts().isEmpty, "Bo does not see Ana's draft")
        #expect(try await outbox.draft(mine, as: NewCustomer.self) == nil)
        await #expect(throws: OutboxError.self) { try await outbox.discardDraft(mine) }
        try await outbox.signIn("ana")
        #expect(try await outbox.drafts().map(\.id) == [mine])
        #expect(stashed.count == 1)
        try await outbox.discardDraft(mine)
        #expect(try await outbox.drafts().isEmpty && stashed.isEmpty)
        #expect(try await outbox.draft(mine, as: NewCustomer.self) == nil)
    }

    @Test func aSavedDraftKeepsItsDocumentAndTheLatestSaveWins() async throws {
        let outbox = try h.open()
        let id = DraftID(rawValue: "screen-new-customer")
        try await outbox.saveDraft(NewCustomer(name: "Ca"), id: id)
        let first = try #require(try await outbox.draft(id, as: NewCustomer.self))
        h.clock.advance(by: 1000)
        try await outbox.saveDraft(NewCustomer(name: "Casa Ana", segment: .retail), id: id)
        let second = try #require(try await outbox.draft(id, as: NewCustomer.self))
        #expect(second.payload.name == "Casa Ana" && second.documentID == first.documentID && second.updatedAt > first.updatedAt)
        await #expect(throws: OutboxError.self) { try await outbox.saveDraft(order(1), id: id) }
    }
}
