import FieldForms
import FormSyncModel
import FormSyncSQLite
import FormSyncTesting
import Foundation
import Synchronization
import Testing

@testable import FormSyncClient

#if canImport(Glibc)
    import Glibc
#endif

/// The outbox's files on disk: what it opens, what it refuses, who may read them, what a killed
/// process leaves behind, and that attachments are judged by the bytes really copied.
struct OutboxFileSafetyTests {
    func mode(_ path: String) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    /// A refused delivery with one proof photo: one submission and one upload.
    func enqueueRefusedDeliveryWithAPhoto(_ h: Harness, _ outbox: Outbox) async throws {
        let photo = outbox.placeholderIDs.next()
        try await outbox.enqueue(
            DeliveryConfirmation(
                deliveryId: EntityRef(1), outcome: .refused, deliveredAt: Timestamp("2026-11-30T10:00:00Z"),
                proofPhotos: [FileRef(id: photo, contentType: "image/jpeg")]),
            attachments: [.init(placeholder: photo, source: try h.cameraFile("p.jpg"), contentType: "image/jpeg")])
    }

    @Test func theDatabaseItsLogsAndTheStashAreOwnerOnly() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await enqueueRefusedDeliveryWithAPhoto(h, outbox)
        for suffix in ["", "-wal", "-shm"] {
            #expect(try mode(h.path + suffix) == 0o600, "\(suffix)")
        }
        #expect(try mode(h.path + ".stash") == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash") {
            #expect(try mode(h.path + ".stash/" + name) == 0o600)
        }
    }

    @Test(arguments: ["empty", "truncated", "foreign", "newer", "text"])
    func aFileThatIsNotAnOutboxIsRefusedAndLeftUntouched(_ kind: String) throws {
        let h = try Harness()
        switch kind {
        case "empty":
            try Data().write(to: URL(fileURLWithPath: h.path))
        case "truncated":
            _ = try h.open()
            let bytes = try Data(contentsOf: URL(fileURLWithPath: h.path))
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: h.path + suffix) }
            try bytes.prefix(100).write(to: URL(fileURLWithPath: h.path))
        case "foreign":
            let db = try SQLiteConnection(path: h.path)
            try db.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, caption TEXT); INSERT INTO photos VALUES (1, 'mine')")
        case "newer":
            _ = try h.open()
            let db = try SQLiteConnection(path: h.path)
            try db.run("INSERT INTO migrations (version, name, applied_at) VALUES (99, 'from the future', 0)")
        default:
            try Data("not a database at all, just a note".utf8).write(to: URL(fileURLWithPath: h.path))
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: h.path))
        #expect {
            _ = try h.open()
        } throws: { error in
            guard case OutboxError.notAnOutbox(let path, let reason) = error else { return false }
            return path == h.path && !reason.isEmpty
        }
        if kind != "newer" {  // a newer outbox may have a live WAL; the others must be byte-identical
            #expect(try Data(contentsOf: URL(fileURLWithPath: h.path)) == before)
        }
    }

    @Test func anOutboxWrittenByTheFirstBuildOpensAndIsMigratedKeepingItsItems() async throws {
        let h = try Harness()
        do {  // the first build's file: schema version 1, no application id
            let db = try SQLiteConnection(path: h.path)
            try db.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
            try db.execute(OutboxMigrations.all.migrations[0].sql)
            try db.execute("INSERT INTO migrations VALUES (1, 'outbox', 0)")
            try db.run(
                """
                INSERT INTO items (kind, workspace, lane, document_id, attempt_id, form, form_version, payload, state, next_attempt_at, created_at, updated_at)
                VALUES ('submission', 'acme', 'Customer:1', 'old-doc', 'old-key', 'SalesOrder', ?, ?, 'pending', 0, 0, 0)
                """, [.integer(Int64(SalesOrder.formVersion)), .blob(try FormRegistry.encode(order(1)))])
            try db.run("INSERT INTO lanes (workspace, lane, head, due_at) VALUES ('acme', 'Customer:1', 1, 0)")
        }
        let outbox = try h.open()
        #expect(await outbox.flush().sent == 1)
        #expect(h.transport.requests.map(\.attemptID) == ["old-key"])
        let db = try SQLiteConnection(path: h.path)
        #expect(try db.query("PRAGMA application_id") { $0.int(0) } == [OutboxStore.applicationID])
        #expect(try db.query("SELECT MAX(version) FROM migrations") { $0.int(0) } == [Int64(OutboxMigrations.all.latestVersion)])
    }

    @Test func partialAndUncommittedCopiesOfADeadProcessAreRemovedOnOpen() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await enqueueRefusedDeliveryWithAPhoto(h, outbox)
        let stash = h.path + ".stash"
        let kept = try FileManager.default.contentsOfDirectory(atPath: stash)
        #expect(kept.count == 1)
        // A process that is gone (it ran and exited) left a half-written copy and a copy whose
        // row never committed; a live process (this one's parent) has a copy in progress.
        let dead = try ChildProcess("/bin/true", [])
        dead.waitUntilExit()
        let gone = dead.pid
        let live = getppid()
        let leftovers = ["x.p\(gone).blob.partial", "y.p\(gone).blob", "legacy.blob.partial"]
        for name in leftovers + ["z.p\(live).blob.partial"] {
            try Data("half".utf8).write(to: URL(fileURLWithPath: stash + "/" + name))
        }
        _ = try h.open()
        let after = Set(try FileManager.default.contentsOfDirectory(atPath: stash))
        #expect(after == Set(kept + ["z.p\(live).blob.partial"]))
    }

    @Test func anAttachmentWhoseBytesAreNotTheTypeItClaimsIsRefusedAtEnqueueWithItsPointer() async throws {
        let h = try Harness()
        let outbox = try h.open()
        func enqueue(_ source: URL, as type: String) async throws {
            let photo = outbox.placeholderIDs.next()
            try await outbox.enqueue(
                NewCustomer(name: "Shop", segment: .retail, shopFront: FileRef(id: photo, contentType: type)),
                attachments: [.init(placeholder: photo, source: source, contentType: type)])
        }
        func refusal(_ source: URL, as type: String) async -> [FieldError] {
            do {
                try await enqueue(source, as: type)
                return []
            } catch OutboxError.invalidPayload(let errors) {
                return errors
            } catch {
                return [FieldError(pointer: "?", code: "\(error)", detail: "")]
            }
        }
        // A PNG sent as a JPEG, and bytes that are no image at all.
        let png = await refusal(try h.cameraFile("front.png", bytes: 3000), as: "image/jpeg")
        #expect(png.map(\.pointer) == ["#/shop_front"])
        #expect(png.map(\.code) == ["content_type"])
        #expect(png.first?.detail.contains("image/png") == true)
        let noise = await refusal(try h.cameraFile("front.bin", bytes: 3000), as: "image/jpeg")
        #expect(noise.map(\.code) == ["content_type"])
        #expect(try await outbox.items(in: Set(SyncState.allCases)).isEmpty, "nothing was queued")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash").filter { $0.hasSuffix(".blob") }.isEmpty,
            "nothing stashed")
        // A real JPEG goes in.
        try await enqueue(try h.cameraFile("front.jpg", bytes: 3000), as: "image/jpeg")
        #expect(try await outbox.items(in: Set(SyncState.allCases)).count == 2)
    }

    @Test func anAttachmentIsJudgedByTheBytesReallyCopiedNotByWhatTheAppDeclared() async throws {
        let h = try Harness()
        let outbox = try h.open()
        let photo = outbox.placeholderIDs.next()
        let signature = outbox.placeholderIDs.next()
        // The signature field takes at most 512 KB of image/png; the app claims 1 KB.
        let delivery = DeliveryConfirmation(
            deliveryId: EntityRef(1), outcome: .delivered, deliveredAt: Timestamp("2026-11-30T10:00:00Z"), recipientName: "Ana",
            proofPhotos: [FileRef(id: photo, byteCount: 1000, contentType: "image/jpeg")],
            signature: FileRef(id: signature, byteCount: 1000, contentType: "image/png"))
        #expect(delivery.validate().isEmpty)
        let photoFile = try h.cameraFile("p.jpg", bytes: 2000)
        let tooBig = try h.cameraFile("sig.png", bytes: 600 * 1024)
        await #expect {
            try await outbox.enqueue(
                delivery,
                attachments: [
                    .init(placeholder: photo, source: photoFile, contentType: "image/jpeg"),
                    .init(placeholder: signature, source: tooBig, contentType: "image/png"),
                ])
        } throws: { error in
            guard case OutboxError.invalidPayload(let errors) = error else { return false }
            return errors.map(\.pointer) == ["#/signature"] && errors.map(\.code) == ["max_bytes"]
        }
        await #expect {
            try await outbox.enqueue(
                delivery,
                attachments: [
                    .init(placeholder: photo, source: photoFile, contentType: "image/gif"),
                    .init(placeholder: signature, source: try h.cameraFile("ok.png", bytes: 3000), contentType: "image/png"),
                ])
        } throws: { error in
            guard case OutboxError.invalidPayload(let errors) = error else { return false }
            return errors.map(\.pointer) == ["#/proof_photos/0"] && errors.map(\.code) == ["content_type"]
        }
        #expect(try await outbox.items(in: Set(SyncState.allCases)).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: h.path + ".stash").isEmpty)

        // Accepted: the stored payload carries the measured size, so the server sees the truth.
        let id = try await outbox.enqueue(
            delivery,
            attachments: [
                .init(placeholder: photo, source: photoFile, contentType: "image/jpeg"),
                .init(placeholder: signature, source: try h.cameraFile("fine.png", bytes: 3000), contentType: "image/png"),
            ])
        let stored = try #require(try await outbox.item(id)?.decodedPayload(as: DeliveryConfirmation.self))
        #expect(stored.proofPhotos.map(\.byteCount) == [2000])
        #expect(stored.signature?.byteCount == 3000)
    }

    @Test func aStashCopyIsDeletedOnlyAfterItsConfirmationIsCommittedFull() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await enqueueRefusedDeliveryWithAPhoto(h, outbox)
        let stash = h.path + ".stash"
        let commits = Mutex<[(OutboxDatabase.Durability, Bool)]>([])
        await outbox.observeCommits { durability in
            let present = ((try? FileManager.default.contentsOfDirectory(atPath: stash)) ?? []).isEmpty == false
            commits.withLock { $0.append((durability, present)) }
        }
        #expect(await outbox.flush().sent == 2)
        let log = commits.withLock { $0 }
        let gone = try #require(log.firstIndex { !$0.1 }, "the copy was removed")
        #expect(gone > 0)
        #expect(log[gone - 1].0 == .full, "the commit before the copy went: \(log.map { "\($0.0)" })")
        #expect(try FileManager.default.contentsOfDirectory(atPath: stash).isEmpty)
    }

    /// Found by `formsync-lab torture crash`: a process killed after an upload's confirmation
    /// committed but before its copy was unlinked left the copy behind for good, since the
    /// confirmed row still named it.
    @Test func aCopyLeftBehindAfterItsUploadWasConfirmedIsRemovedOnOpen() async throws {
        let h = try Harness()
        let outbox = try h.open()
        try await enqueueRefusedDeliveryWithAPhoto(h, outbox)
        #expect(await outbox.flush().sent == 2)
        let stash = h.path + ".stash"
        let dead = try ChildProcess("/bin/true", [])
        dead.waitUntilExit()
        let leftover = stash + "/w.p\(dead.pid).blob"
        try Data("photo".utf8).write(to: URL(fileURLWithPath: leftover))
        let db = try SQLiteConnection(path: h.path, create: false)
        #expect(try db.run("UPDATE items SET file_path = ? WHERE kind = 'file' AND state = 'confirmed'", [.text(leftover)]) == 1)
        _ = try h.open()
        #expect(try FileManager.default.contentsOfDirectory(atPath: stash).isEmpty)
    }
}
