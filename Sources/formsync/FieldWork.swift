import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The demo's field work beyond one form per record: a courier whose app is killed half-way
/// through a form and who resumes the draft, and crews that hold only their region's jobs.
struct FieldWork {
    /// The draft device 1's courier was filling when the app was killed.
    static let draft = DraftID(rawValue: "interrupted-delivery")
    /// The draft's document identity and the photos attached before the kill.
    var draftDocument = ""
    var draftPhotos: [URL] = []
    /// Whether the resumed draft was submitted.
    var resumed = false

    /// The regions whose crews the devices are, by worker.
    static func region(_ worker: Int) -> Job.Region { [.north, .south, .east][(worker - 1) % 3] }
}

extension FieldDay {
    /// The back office plans two days of jobs in every region.
    func seedJobs(_ server: SyncServer) throws {
        for region in [Job.Region.north, .south, .east, .west] {
            for day in ["2026-11-30", "2026-12-01"] {
                _ = try server.putRecord(
                    Job(region: region, dueOn: LocalDate(day), siteCode: "LIS-0042", title: "\(region.rawValue) \(day)", status: .planned),
                    workspace: "demo")
            }
        }
    }

    /// The crew's subscription: its region's jobs, for the day.
    static func crewSubscription(_ worker: Int) -> RecordSubscription {
        RecordSubscription("crew", of: Job.self, where: [.oneOf("region", [FieldWork.region(worker).rawValue])], for: .seconds(86_400))
    }

    /// Device 1's courier is half-way through a delivery confirmation, two photos attached, when
    /// the app is killed: a process of its own, SIGKILLed once it says the draft is saved.
    mutating func killMidForm(server: SyncServer) async throws {
        guard let path = Bundle.main.executablePath else { throw DemoError.device("cannot find the formsync executable") }
        fieldWork.draftDocument = String(format: "demo-draft-%016llx", random.next())
        fieldWork.draftPhotos = [try file("w1-draft-p0.jpg", bytes: 30_000), try file("w1-draft-p1.jpg", bytes: 45_000)]
        let log = folder.appendingPathComponent("draft-device.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = [
            "demo-device", "--db", database(1).path, "--server", server.baseURL.absoluteString, "--vault", vault(1).path, "--draft",
            FieldWork.draft.rawValue, "--draft-document", fieldWork.draftDocument, "--draft-photos",
            fieldWork.draftPhotos.map(\.path).joined(separator: ","), "--deadline", "600",
        ]
        process.standardOutput = try FileHandle(forWritingTo: log)
        try process.run()
        // Killed on its word that the draft is saved (an event, not a delay).
        while process.isRunning, (try? String(contentsOf: log, encoding: .utf8))?.contains("draft saved") != true {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard process.isRunning else {
            throw DemoError.device(
                "the draft device ended before its draft was saved: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        note("device 1's app killed (SIGKILL) mid-form: a delivery confirmation with 2 photos, saved as a draft")
    }

    /// The courier opens the app again: the draft is there with its photos; the signature is
    /// taken and the form submitted. Nil when there is no draft to resume.
    mutating func resumeDraft(_ outbox: Outbox) async throws -> ItemID? {
        guard let held = try await outbox.draft(FieldWork.draft, as: DeliveryConfirmation.self) else { return nil }
        let signature = outbox.placeholderIDs.next()
        try await outbox.attach(
            try file("w1-draft-sig.png", bytes: 3000), to: FieldWork.draft, placeholder: signature, contentType: "image/png")
        let item = try await outbox.submitDraft(FieldWork.draft, as: DeliveryConfirmation.self) {
            $0.deliveredAt = Timestamp("2026-11-30T08:30:00Z")
            $0.recipientName = "w1-resumed"
            $0.signature = FileRef(id: signature, contentType: "image/png")
        }
        fieldWork.resumed = held.attachments.count == fieldWork.draftPhotos.count
        return item
    }

    /// Whether the resumed delivery is on the server once with the photos attached before the
    /// kill, byte for byte, and its signature, and no draft is left on the phone.
    /// (`sentBack`: the document the supervisor sent back, written twice.)
    func draftLanded(_ server: SyncServer, sentBack: String?) async throws -> Bool {
        guard fieldWork.resumed, let document = server.documents().first(where: { $0.documentID == fieldWork.draftDocument }),
            document.appliedWrites == (sentBack == document.documentID ? 2 : 1),
            let object = try JSONSerialization.jsonObject(with: document.payload) as? [String: Any],
            let photos = object["proof_photos"] as? [[String: Any]], object["signature"] != nil
        else { return false }
        let ids = photos.compactMap { ($0["id"] as? NSNumber)?.int64Value }
        let captured = try fieldWork.draftPhotos.map { try Data(contentsOf: $0) }
        let outbox = try Outbox(path: database(1).path, forms: FormCatalog.forms, transport: OfflineTransport())
        let left = try await outbox.drafts()
        return ids.count == captured.count && zip(ids, captured).allSatisfy { server.fileBytes($0) == $1 } && left.isEmpty
    }
}
