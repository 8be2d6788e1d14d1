import FieldForms
import FormSyncClient
import FormSyncModel
import FormSyncServer
import FormSyncTesting
import Foundation
import Synchronization
import Testing

/// Files never hold back a submission (docs/PROTOCOL.md, "Deferred files"): against the real
/// server over HTTP, a delivery reaches the server before its photo, the photo completes it,
/// shared bytes travel once, and a server without the feature gets files first.
@Suite(.serialized)
struct DeferredFileTests {
    static let photoBytes = 3_000_000

    /// A delivery with one photo of `photo` and a small signature, captured offline into `db`
    /// (workspace `demo`, as `formsync demo-device` syncs it).
    static func captureDelivery(_ world: World, db: String, photo: URL, document: String) async throws {
        let outbox = try Outbox(path: db, forms: FormCatalog.forms, transport: CrashTests.Offline())
        let (shot, signature) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
        let delivery = DeliveryConfirmation(
            deliveryId: EntityRef(4711), outcome: .delivered, deliveredAt: Timestamp("2026-12-03T10:00:00Z"), recipientName: "Ana Lima",
            proofPhotos: [FileRef(id: shot, contentType: "image/jpeg")], signature: FileRef(id: signature, contentType: "image/png"))
        try await outbox.enqueue(
            delivery,
            attachments: [
                .init(placeholder: shot, source: photo, contentType: "image/jpeg"),
                .init(placeholder: signature, source: try world.file("\(document)-sig.png", bytes: 2_000), contentType: "image/png"),
            ], documentID: document)
    }

    @Test func aDeliveryIsConfirmedWhileItsPhotoUploadsOnASlowLinkAndAKilledUploadResumes() async throws {
        try await OffThePool.run {
            let binary = DemoProcessTests.formsync
            try #require(FileManager.default.isExecutableFile(atPath: binary.path), "build formsync first (swift build)")
            let world = try World()
            // A slow uplink: the 3 MB photo needs ten seconds; the delivery, a few hundred bytes.
            world.server.faults.limitBandwidth(bytesPerSecond: 300_000)
            let db = world.directory.appendingPathComponent("courier.sqlite").path
            let photo = try world.file("door.jpg", bytes: Self.photoBytes)
            try await Self.captureDelivery(world, db: db, photo: photo, document: "delivery-1")

            // Each process's end is the event waited for: its own deadline is out of the way (a
            // loaded machine stretches a resumed 5 MB upload), and a hang is the watchdog's.
            var logs: [String] = []
            func device() throws -> ChildProcess {
                let log = world.directory.appendingPathComponent("device-\(UUID().uuidString).log").path
                logs.append(log)
                return try ChildProcess(
                    binary.path,
                    [
                        "demo-device", "--db", db, "--server", world.server.baseURL.absoluteString, "--refresh-token", world.refreshToken,
                        "--timeout", "15", "--lease-ms", "16000", "--resumable-from", "1000000", "--chunk-bytes", "262144",
                        "--deadline", "3600",
                    ], standardOutput: .file(log), standardError: .file(log))
            }
            func photoBytesReceived() -> Int { world.server.requestLog().filter { $0.method == "PATCH" }.map(\.bodyBytes).reduce(0, +) }

            // 1. A third of the photo goes in, and its fifth append is held on the server: the
            // photo cannot finish, whatever the machine's speed, until the test lets it.
            world.server.faults.add(.delay(milliseconds: 0), count: 4, target: .appends)
            world.server.faults.add(.hold, count: 1, target: .appends)
            let first = try device()
            var turns = 0
            while first.isRunning, turns < 60_000,
                !(photoBytesReceived() >= 4 * 262_144 && world.server.faults.waitUntilHolding(1, seconds: 0))
            {
                try await Task.sleep(for: .milliseconds(5))
                turns += 1
            }
            // 2. The delivery lands while the photo is held on its way (only the signature is
            // stored when it does).
            turns = 0
            while first.isRunning, turns < 60_000, world.server.document("delivery-1") == nil {
                try await Task.sleep(for: .milliseconds(5))
                turns += 1
            }
            #expect(world.server.document("delivery-1") != nil, "the delivery did not land while its photo was held")
            #expect(world.server.fileIDs().count == 1, "the delivery reached the server only after its photo")
            // 3. Killed mid-upload; the held append then goes on without its device.
            first.signal(SIGKILL)
            _ = first.waitUntilExit()
            world.server.faults.releaseHeld(1)
            let before = photoBytesReceived()
            #expect(before > 0 && before < Self.photoBytes)
            #expect(world.server.fileIDs().count == 1, "the photo is not stored yet")

            // 4. A new process resumes from the server's offset, and the photo completes the delivery.
            let second = try device()
            #expect(second.waitUntilExit() == .exit(0), "\((try? String(contentsOfFile: logs.last!, encoding: .utf8)) ?? "")")
            let held = try #require(world.server.document("delivery-1"))
            #expect(held.appliedWrites == 1)
            #expect(held.version == 2, "created once, completed once by its photo")
            let stored = try JSONDecoder().decode(DeliveryConfirmation.self, from: held.payload)
            let photoID = try #require(stored.proofPhotos.first?.id)
            #expect(photoID > 0)
            #expect(world.server.fileBytes(photoID) == (try Data(contentsOf: photo)))
            // At most the chunk on the wire when the process died is sent again.
            #expect(photoBytesReceived() <= Self.photoBytes + 262_144)
            #expect(world.server.requestLog().filter { $0.path == "/deliveries/4711/confirmations" && $0.status == 201 }.count == 1)
        }
    }

    @Test func twoSubmissionsThatShareAFiveMegabytePhotoStashAndSendItOnce() async throws {
        let world = try World()
        let outbox = try world.device()
        let bytes = try Data(contentsOf: try world.file("damage.jpg", bytes: 5_000_000))
        // The courier attaches the same photo to the delivery and to the damage claim (two files
        // on disk with the same bytes, as two pickers would leave them).
        var documents: [String] = []
        for n in 0..<2 {
            let copy = world.directory.appendingPathComponent("damage-\(n).jpg")
            try bytes.write(to: copy)
            let (shot, signature) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
            let delivery = DeliveryConfirmation(
                deliveryId: EntityRef(4711 + Int64(n)), outcome: .delivered, deliveredAt: Timestamp("2026-12-03T10:00:00Z"),
                recipientName: "Rui",
                proofPhotos: [FileRef(id: shot, contentType: "image/jpeg")], signature: FileRef(id: signature, contentType: "image/png"))
            try await outbox.enqueue(
                delivery,
                attachments: [
                    .init(placeholder: shot, source: copy, contentType: "image/jpeg"),
                    .init(placeholder: signature, source: try world.file("sig-\(n).png", bytes: 1_000 + n), contentType: "image/png"),
                ], documentID: "claim-\(n)")
            documents.append("claim-\(n)")
        }
        let stash = try FileManager.default.contentsOfDirectory(atPath: world.directory.appendingPathComponent("phone.sqlite.stash").path)
            .filter { $0.hasSuffix(".blob") }
        #expect(stash.count == 3, "one copy of the photo, and the two signatures")
        let report = try await world.drain()
        #expect(report.remaining == 0)
        let log = world.server.requestLog()
        let fileBytes = log.filter { ($0.method == "POST" && $0.path == "/files") || $0.method == "PATCH" }.map(\.bodyBytes).reduce(0, +)
        #expect(fileBytes == 5_000_000 + 1_000 + 1_001, "the photo's bytes travel once")
        #expect(
            log.contains { $0.method == "GET" && $0.path.hasPrefix("/files/sha-256/") && $0.status == 200 },
            "the second upload found the first by its digest")
        let photos = try documents.map {
            try JSONDecoder().decode(DeliveryConfirmation.self, from: #require(world.server.document($0)).payload).proofPhotos.first?.id
        }
        #expect(photos[0] != nil && photos[0] == photos[1])
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: world.directory.appendingPathComponent("phone.sqlite.stash").path).filter {
                $0.hasSuffix(".blob")
            }.isEmpty)
    }

    @Test func aServerWithoutDeferredFilesGetsTheFilesFirstAndNothingIsParked() async throws {
        let world = try World()
        world.server.acceptsDeferredFiles = false
        let outbox = try world.device()
        let (shot, signature) = (outbox.placeholderIDs.next(), outbox.placeholderIDs.next())
        let delivery = DeliveryConfirmation(
            deliveryId: EntityRef(4711), outcome: .delivered, deliveredAt: Timestamp("2026-12-03T10:00:00Z"), recipientName: "Ana",
            proofPhotos: [FileRef(id: shot, contentType: "image/jpeg")], signature: FileRef(id: signature, contentType: "image/png"))
        let id = try await outbox.enqueue(
            delivery,
            attachments: [
                .init(placeholder: shot, source: try world.file("a.jpg", bytes: 100_000), contentType: "image/jpeg"),
                .init(placeholder: signature, source: try world.file("a.png", bytes: 1_000), contentType: "image/png"),
            ])
        #expect(try await world.drain().remaining == 0)
        let posts = world.server.requestLog().filter { $0.method == "POST" }.map(\.path)
        #expect(posts == ["/files", "/files", "/deliveries/4711/confirmations"], "both files before the delivery")
        #expect(try await outbox.item(id)?.state == .confirmed)

        // The server is downgraded after the device learnt it took deferred files: the refused
        // request is sent again as files first, and nothing waits for a person.
        world.server.acceptsDeferredFiles = true
        let learnt = try world.device("second")
        let warmUp = learnt.placeholderIDs.next()
        try await learnt.enqueue(
            DeliveryConfirmation(
                deliveryId: EntityRef(1), outcome: .refused, deliveredAt: Timestamp("2026-12-03T09:00:00Z"),
                proofPhotos: [FileRef(id: warmUp, contentType: "image/jpeg")]),
            attachments: [.init(placeholder: warmUp, source: try world.file("w.jpg", bytes: 1_000), contentType: "image/jpeg")])
        #expect(try await world.drain("second").remaining == 0)
        world.server.acceptsDeferredFiles = false
        let later = learnt.placeholderIDs.next()
        let second = try await learnt.enqueue(
            DeliveryConfirmation(
                deliveryId: EntityRef(2), outcome: .refused, deliveredAt: Timestamp("2026-12-03T11:00:00Z"),
                proofPhotos: [FileRef(id: later, contentType: "image/jpeg")]),
            attachments: [.init(placeholder: later, source: try world.file("l.jpg", bytes: 200_000), contentType: "image/jpeg")])
        #expect(try await world.drain("second").remaining == 0)
        let refused = world.server.requestLog().filter { $0.path == "/deliveries/2/confirmations" }.map(\.status)
        #expect(refused.first == 422, "sent naming its photo by digest, as the device had learnt")
        #expect(refused.last == 201)
        let item = try #require(try await world.device("second").item(second))
        #expect(item.state == .confirmed)
        #expect(item.attempts == 1, "the refusal by a server without the feature is not counted against it")
        #expect(world.server.document(item.documentID)?.appliedWrites == 1)
    }

    @Test func anEditBehindADeliveryWhosePhotoIsPendingIsNotHeldByThePhoto() async throws {
        let world = try World()
        let stop = try world.server.putRecord(
            Delivery(courierId: "ada", status: .assigned, stopOrder: 1, address: "Rua 1"), workspace: "acme")
        let outbox = try world.device("ada", principal: "ada")
        _ = try await outbox.pull()
        let shot = outbox.placeholderIDs.next()
        // Nobody home: a photo of the door, no signature.
        try await outbox.enqueue(
            DeliveryConfirmation(
                deliveryId: EntityRef(stop.id), outcome: .notHome, deliveredAt: Timestamp("2026-12-03T10:00:00Z"),
                proofPhotos: [FileRef(id: shot, contentType: "image/jpeg")]),
            attachments: [.init(placeholder: shot, source: try world.file("door.jpg", bytes: 100_000), contentType: "image/jpeg")])
        // The edit of the same delivery queues behind the confirmation, in the delivery's lane.
        try await outbox.edit(DeliveryUpdate.self, id: stop.id) { $0.notes = "left with the neighbour" }
        // The photo's upload is held until the edit has landed: if the edit waited for the photo,
        // the drain would never end (the release is bounded at 60 s, and the order checked below).
        world.server.faults.add(.hold, count: 1, target: .files)
        let server = world.server
        let deliveryPath = "/deliveries/\(stop.id)"
        let releaser = Task(executorPreference: DedicatedThreads.shared) {
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                let edited = server.requestLog().contains {
                    $0.path.hasPrefix(deliveryPath) && !$0.path.hasSuffix("/confirmations") && (200..<300).contains($0.status ?? 0)
                }
                if edited { break }
                try? await Task.sleep(for: .milliseconds(5))
            }
            server.faults.releaseHeld()
        }
        _ = try await world.drain("ada", principal: "ada")
        await releaser.value
        let log = world.server.requestLog()
        let photoStored = try #require(log.lastIndex { $0.method == "POST" && $0.path == "/files" && $0.status == 201 })
        let edit = try #require(
            log.firstIndex {
                $0.path == "/deliveries/\(stop.id)/updates"
                    || ($0.method == "POST" && $0.path.hasPrefix("/deliveries/\(stop.id)") && !$0.path.hasSuffix("/confirmations"))
            })
        let confirmation = try #require(log.firstIndex { $0.path == "/deliveries/\(stop.id)/confirmations" && $0.status == 201 })
        #expect(confirmation < edit, "in lane order")
        #expect(edit < photoStored, "the edit did not wait for the confirmation's photo")
        #expect(await (try world.device("ada", principal: "ada")).stateCounts()[.confirmed] == 3)
    }
}
