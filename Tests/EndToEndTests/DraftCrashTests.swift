import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncTesting
import FormSyncTorture
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A draft filled by a real process (`formsync-lab torture draft-device`) that is SIGKILLed at
/// the drafts' named moments, one after another, and restarted on the same outbox: each run
/// resumes from what the draft holds. No kill loses a photo whose attach returned, none leaves a
/// copy nobody names, and the form lands once with every photo.
struct DraftCrashTests {
    @Test func aDraftWithThreePhotosSurvivesSIGKILLsAtNamedMomentsWithItsPhotos() async throws {
        try await OffThePool.run {
            let binary = DemoProcessTests.lab
            try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build the lab first (swift build)")
            let world = try World()
            let name = "drafts"
            let db = world.directory.appendingPathComponent("\(name).sqlite").path
            let stash = db + ".stash"
            func run(_ crash: String?) throws -> ChildProcess.Termination {
                let log = world.directory.appendingPathComponent("draft-device-\(UUID().uuidString).log")
                let process = try ChildProcess(
                    binary.path, ["torture", "draft-device", "--db", db] + (crash.map { ["--crash", $0] } ?? []),
                    standardOutput: .file(log.path), standardError: .file(log.path))
                let ended = process.waitUntilExit()
                if ended != .signal(SIGKILL) && ended != .exit(0) {
                    Issue.record("the draft device failed on its own (\(ended)): \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
                }
                return ended
            }
            // Each kill at a named moment, in turn; the number is which time the moment is reached
            // in that run (every run saves the draft once before attaching what is missing).
            // After each: how many files the draft holds.
            let kills: [(moment: String, attached: Int, queued: Bool)] = [
                ("draft-saved:1", 0, false),  // the first save, nothing attached
                ("draft-attached:1", 0, false),  // the first photo copied, not yet named by the draft
                ("draft-saved:2", 1, false),  // the first photo attached and saved
                ("draft-attached:2", 2, false),  // the second attached; the third copied, not named
                ("draft-submitted:1", 4, true),  // everything attached; the item queued, the draft not yet gone
            ]
            for kill in kills {
                #expect(try run(kill.moment) == .signal(SIGKILL), "the device reached \(kill.moment)")
                let outbox = try world.device(name)
                let drafts = try await outbox.drafts()
                #expect(drafts.map(\.id) == [DraftDevice.draft], "after \(kill.moment)")
                let draft = try #require(try await outbox.draft(DraftDevice.draft, as: DeliveryConfirmation.self))
                #expect(draft.documentID == DraftDevice.documentID)
                #expect(draft.attachments.count == kill.attached, "after \(kill.moment): \(draft.attachments.map(\.placeholder))")
                for attachment in draft.attachments {
                    let n = try #require(DraftDevice.placeholders.firstIndex(of: attachment.placeholder))
                    #expect(FileManager.default.contents(atPath: attachment.path) == DraftDevice.bytes(n), "attachment \(n)")
                }
                let items = try await outbox.items(in: Set(SyncState.allCases))
                #expect(items.contains { $0.kind == .submission } == kill.queued, "after \(kill.moment)")
                // The open's sweep leaves in the stash only the copies the draft and the queue name.
                let named = Set(draft.attachments.map { ($0.path as NSString).lastPathComponent })
                let kept = try FileManager.default.contentsOfDirectory(atPath: stash).filter { $0.hasSuffix(".blob") }
                let queuedCopies = kill.queued ? 4 : 0
                #expect(kept.count == named.count + queuedCopies, "after \(kill.moment): \(kept.sorted())")
                #expect(named.isSubset(of: Set(kept)))
            }

            // A run that nothing kills finds the item the killed run queued and ends the draft.
            #expect(try run(nil) == .exit(0))
            let outbox = try world.device(name)
            #expect(try await outbox.drafts().isEmpty)
            let items = try await outbox.items(in: Set(SyncState.allCases))
            #expect(items.filter { $0.kind == .submission }.count == 1 && items.filter { $0.kind == .file }.count == 4)
            let kept = try FileManager.default.contentsOfDirectory(atPath: stash).filter { $0.hasSuffix(".blob") }
            #expect(kept.count == 4, "the queued uploads' copies alone: \(kept.sorted())")

            // Delivered over HTTP: one document, its three photos and signature the bytes captured.
            let report = await outbox.flush()
            #expect(report.sent == 5 && report.remaining == 0, "\(report)")
            let document = try #require(world.server.document(DraftDevice.documentID))
            #expect(document.appliedWrites == 1)
            let payload = try JSONDecoder().decode(DeliveryConfirmation.self, from: document.payload)
            let files = payload.proofPhotos.map(\.id) + [try #require(payload.signature?.id)]
            #expect(files.count == 4 && files.allSatisfy { $0 > 0 })
            for (n, id) in files.enumerated() { #expect(world.server.fileBytes(id) == DraftDevice.bytes(n), "file \(n)") }
        }
    }
}
