import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The device of the drafts' crash test (`formsync-lab torture draft-device`): a courier fills a
/// delivery confirmation over several saves, attaching three proof photos and a signature, then
/// submits it. Run as its own process so it can be killed at a named moment; a run after a kill
/// resumes from what the draft holds, never from what the process remembered. Offline: the
/// submission is queued, and the test delivers it.
package struct DraftDevice {
    package var database: String
    package var crash: (point: CrashPoint, occurrence: Int)?

    package static let workspace = "acme"
    package static let draft = DraftID(rawValue: "confirmation-17")
    package static let documentID = "draft-confirmation-17"
    /// The placeholders of the three photos, then of the signature.
    package static let placeholders: [Int64] = [-4_000_000_001, -4_000_000_002, -4_000_000_003, -4_000_000_004]

    package init(database: String, crash: (point: CrashPoint, occurrence: Int)?) {
        self.database = database
        self.crash = crash
    }

    /// The bytes of attachment `n` (0…2 photos, 3 the signature), the same in every run.
    package static func bytes(_ n: Int) -> Data {
        var random = SplitMix64(state: 0xD2AF_7000 &+ UInt64(n))
        let count = n == 3 ? 1_500 : 40_000 + n * 1_000
        let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        return MediaSignature.stamped(Data(bytes), asFileNamed: n == 3 ? "signature.png" : "photo.jpg")
    }

    /// The confirmation as submitted.
    package static var submitted: DeliveryConfirmation {
        var form = DeliveryConfirmation(
            deliveryId: EntityRef(17), outcome: .delivered, deliveredAt: Timestamp("2026-12-06T10:00:00Z"), recipientName: "Ana Lima")
        form.proofPhotos = placeholders.prefix(3).map { FileRef(id: $0, contentType: "image/jpeg") }
        form.signature = FileRef(id: placeholders[3], contentType: "image/png")
        return form
    }

    /// Fills and submits the draft from wherever an earlier run left it; prints what it did.
    package func run() async throws -> Int32 {
        if let crash { CrashPoint.arm(crash.point, occurrence: crash.occurrence) }
        let outbox = try Outbox(
            path: database, workspace: Self.workspace, registry: FormRegistry(FormCatalog.forms),
            records: RecordRegistry(FormCatalog.records), transports: { $0 == Self.workspace ? Unreachable(workspace: $0) : nil })
        let scratch = URL(fileURLWithPath: database + ".camera-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        let held = try await outbox.draft(Self.draft, as: DeliveryConfirmation.self)
        if held == nil, try await outbox.items(in: Set(SyncState.allCases)).contains(where: { $0.documentID == Self.documentID }) {
            print("already submitted")
            return 0
        }
        var form = held?.payload ?? DeliveryConfirmation(deliveryId: EntityRef(17), outcome: .delivered)
        let attached = Set(held?.attachments.map(\.placeholder) ?? [])
        try await outbox.saveDraft(form, id: Self.draft, documentID: Self.documentID)
        for (n, placeholder) in Self.placeholders.enumerated() where !attached.contains(placeholder) {
            let camera = scratch.appendingPathComponent("capture-\(n)")
            try Self.bytes(n).write(to: camera)
            let type = n == 3 ? "image/png" : "image/jpeg"
            try await outbox.attach(camera, to: Self.draft, placeholder: placeholder, contentType: type)
            try FileManager.default.removeItem(at: camera)
            if n < 3 {
                form.proofPhotos.append(FileRef(id: placeholder, contentType: type))
            } else {
                form.signature = FileRef(id: placeholder, contentType: type)
            }
            try await outbox.saveDraft(form, id: Self.draft)
        }
        let item = try await outbox.submitDraft(Self.draft, as: DeliveryConfirmation.self) {
            $0 = Self.submitted
        }
        print("submitted \(item)")
        return 0
    }
}
