import CorpusForms
import FormSyncHTTP
import FormSyncModel
import FormSyncServer
import FormSyncTorture
import Foundation
import Testing

/// The server's side of deferred files and of the checks it makes of every file reference
/// (docs/PROTOCOL.md, "Deferred files"), request by request, on the store this run tests.
struct PendingFileServerTests {
    /// A server for the corpus (`NewPlate` creates a `Plate` record holding its photo), with
    /// tokens for two couriers and the back office of `acme`, and one of `globex`.
    final class Setup: @unchecked Sendable {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pending-\(UUID().uuidString)")
        let server: SyncServer
        var tokens: [String: String] = [:]
        var key = 0

        init() throws {
            server = try TestStore.server(directory: folder.path, forms: FormCatalog.forms, records: FormCatalog.records)
            tokens["ada"] = try server.issueAccessToken(principal: "ada", workspaces: ["acme"])
            tokens["bob"] = try server.issueAccessToken(principal: "bob", workspaces: ["acme"])
            tokens["office"] = try server.issueAccessToken(principal: "office", workspaces: ["acme"], role: .backOffice)
            tokens["globex"] = try server.issueAccessToken(principal: "ada", workspaces: ["globex"])
        }

        deinit { try? FileManager.default.removeItem(at: folder) }

        func send(
            _ method: String, _ path: String, query: String? = nil, as who: String = "ada", workspace: String = "acme",
            headers extra: [String: String] = [:],
            body: Data = Data()
        ) -> (status: Int, json: [String: Any], headers: [(String, String)]) {
            key += 1
            var headers = ["authorization": "Bearer \(tokens[who]!)", "idempotency-key": "k-\(key)", "formsync-workspace": workspace]
            headers.merge(extra) { _, new in new }
            let response = server.handle(HTTPRequest(method: method, path: path, query: query, headers: headers, body: body))
            let json = response.flatMap { try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any] } ?? [:]
            return (response?.status ?? 0, json, response?.headers ?? [])
        }

        /// Creates a plate whose photo is `photo` (a FileRef as the device sends it).
        func plate(
            _ document: String, photo: FileRef, as who: String = "ada", workspace: String = "acme"
        ) -> (status: Int, json: [String: Any], headers: [(String, String)]) {
            let body = try! FormRegistry.encode(NewPlate(name: "Bacalhau", photo: photo))
            return send(
                "POST", "/plates", as: who, workspace: workspace,
                headers: ["formsync-document": document, "formsync-form": "NewPlate; version=1", "content-type": "application/json"],
                body: body)
        }

        func upload(
            _ bytes: Data, document: String, type: String, as who: String = "ada", workspace: String = "acme"
        ) -> (status: Int, json: [String: Any], headers: [(String, String)]) {
            send(
                "POST", "/files", as: who, workspace: workspace,
                headers: [
                    "formsync-document": document, "content-type": type, "content-digest": FileRef.digestText(SHA256.hash(bytes)),
                ], body: bytes)
        }

        func errors(_ json: [String: Any]) -> [[String: String]] {
            (json["errors"] as? [[String: Any]] ?? []).map { $0.compactMapValues { $0 as? String } }
        }
    }

    static func jpeg(_ count: Int, seed: UInt8 = 1) -> Data {
        MediaSignature.stamped(Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }), asFileNamed: "photo.jpg")
    }

    @Test func aPlateNamingItsPhotoByDigestIsStoredPendingListedAndCompletedByTheUpload() throws {
        let s = try Setup()
        let photo = Self.jpeg(30_000)
        let pending = FileRef.pending(sha256: SHA256.hash(photo), byteCount: 30_000, contentType: "image/jpeg")
        let created = s.plate("plate-1", photo: pending)
        #expect(created.status == 201)
        let record = try #require(created.json["record"] as? [String: Any])
        let held = try #require(record["photo"] as? [String: Any])
        #expect(held["digest"] as? String == pending.digest)
        #expect(held["id"] == nil)

        // Listed for its courier and the back office, as "delivered, photo pending"; not for another courier.
        let listed = s.send("GET", "/pending-files")
        let entries = try #require(listed.json["pending"] as? [[String: Any]])
        #expect(entries.count == 1)
        #expect(entries.first?["document_id"] as? String == "plate-1")
        #expect(entries.first?["pointer"] as? String == "#/photo")
        #expect(entries.first?["form"] as? String == "NewPlate")
        #expect((s.send("GET", "/pending-files", as: "office").json["pending"] as? [Any])?.count == 1)
        #expect((s.send("GET", "/pending-files", as: "bob").json["pending"] as? [Any])?.count == 0)

        // The upload completes the document and its record: a new version of each, one write applied.
        let stored = s.upload(photo, document: "file-1", type: "image/jpeg")
        #expect(stored.status == 201)
        let fileID = try #require((stored.json["id"] as? NSNumber)?.int64Value)
        let document = try #require(s.server.document("plate-1"))
        #expect(document.version == 2)
        #expect(document.appliedWrites == 1)
        let completed = try JSONDecoder().decode(NewPlate.self, from: document.payload)
        #expect(completed.photo == FileRef(id: fileID, byteCount: 30_000, contentType: "image/jpeg"))
        let feed = s.send("GET", "/changes", query: "limit=100", as: "office")
        let change = try #require((feed.json["changes"] as? [[String: Any]])?.last { $0["type"] as? String == "Plate" })
        #expect(change["version"] as? String == "\"2\"" || (change["version"] as? NSNumber)?.intValue == 2)
        #expect(((change["record"] as? [String: Any])?["photo"] as? [String: Any])?["id"] as? NSNumber == NSNumber(value: fileID))
        #expect((s.send("GET", "/pending-files", as: "office").json["pending"] as? [Any])?.count == 0)
    }

    /// Issue 44, defect 9: a back-office edit made the pending files the back office's, and
    /// they left the list of the device that was to upload them.
    @Test func aBackOfficeEditLeavesADocumentsPendingFileOnItsOwnersList() throws {
        let s = try Setup()
        let photo = Self.jpeg(12_000)
        let pending = FileRef.pending(sha256: SHA256.hash(photo), byteCount: 12_000, contentType: "image/jpeg")
        #expect(s.plate("plate-1", photo: pending).status == 201)
        let body = try FormRegistry.encode(NewPlate(name: "Bacalhau à Brás", photo: pending))
        let edited = s.send(
            "POST", "/plates", as: "office",
            headers: [
                "formsync-document": "plate-1", "formsync-form": "NewPlate; version=1", "content-type": "application/json",
                "if-match": "*",
            ], body: body)
        #expect(edited.status == 200, "\(edited.json)")
        let listed = try #require(s.send("GET", "/pending-files").json["pending"] as? [[String: Any]])
        #expect(listed.map { $0["document_id"] as? String } == ["plate-1"], "still ada's to upload")
        #expect((s.send("GET", "/pending-files", as: "office").json["pending"] as? [Any])?.count == 1)
        // ada's upload completes it as before.
        #expect(s.upload(photo, document: "file-1", type: "image/jpeg").status == 201)
        #expect((s.send("GET", "/pending-files").json["pending"] as? [Any])?.count == 0)
    }

    /// Issue 44, defect 2: bob's announcement of a digest with another size blocked ada's
    /// upload of the same bytes (422 naming bob's document) and left ada's document pending.
    @Test func anotherPrincipalsMismatchedAnnouncementNeitherBlocksNorIsNamedToAnUpload() throws {
        let s = try Setup()
        let photo = Self.jpeg(9_000)
        let digest = SHA256.hash(photo)
        #expect(s.plate("plate-bob", photo: .pending(sha256: digest, byteCount: 1, contentType: "image/jpeg"), as: "bob").status == 201)
        #expect(s.plate("plate-ada", photo: .pending(sha256: digest, byteCount: 9_000, contentType: "image/jpeg")).status == 201)

        let stored = s.upload(photo, document: "file-ada", type: "image/jpeg")
        #expect(stored.status == 201, "\(stored.json)")
        #expect(!"\(stored.json)".contains("plate-bob"))
        let completed = try JSONDecoder().decode(NewPlate.self, from: try #require(s.server.document("plate-ada")).payload)
        #expect(completed.photo?.id ?? 0 > 0, "ada's document names the stored file")
        // bob's announcement still waits: the bytes are not what it said.
        let bobs = try #require(s.send("GET", "/pending-files", as: "bob").json["pending"] as? [[String: Any]])
        #expect(bobs.map { $0["document_id"] as? String } == ["plate-bob"])
        #expect((s.send("GET", "/pending-files").json["pending"] as? [Any])?.count == 0)

        // A resumable upload is checked the same way, at its creation.
        let other = Self.jpeg(9_500, seed: 3)
        #expect(
            s.plate("plate-bob-2", photo: .pending(sha256: SHA256.hash(other), byteCount: 2, contentType: "image/jpeg"), as: "bob")
                .status == 201)
        let created = s.send(
            "POST", "/uploads",
            headers: [
                "formsync-document": "upload-ada", "upload-length": "9500", "upload-complete": "?0", "content-type": "image/jpeg",
                "repr-digest": "sha-256=:\(SHA256.hash(other).base64EncodedString()):",
            ])
        #expect(created.status == 201, "\(created.json)")
        // bob's own upload of bytes his announcement does not match is refused, naming his document.
        let refused = s.upload(other, document: "file-bob", type: "image/jpeg", as: "bob")
        #expect(refused.status == 422)
        #expect(s.errors(refused.json).map { $0["document_id"] } == ["plate-bob-2"])
    }

    @Test func aPendingFileTheWorkspaceAlreadyHoldsIsCompletedAtOnce() throws {
        let s = try Setup()
        let photo = Self.jpeg(5_000)
        let stored = s.upload(photo, document: "file-1", type: "image/jpeg")
        let fileID = try #require((stored.json["id"] as? NSNumber)?.int64Value)
        let created = s.plate("plate-1", photo: .pending(sha256: SHA256.hash(photo), byteCount: 5_000, contentType: "image/jpeg"))
        #expect(created.status == 201)
        #expect(((created.json["record"] as? [String: Any])?["photo"] as? [String: Any])?["id"] as? NSNumber == NSNumber(value: fileID))
        #expect((s.send("GET", "/pending-files").json["pending"] as? [Any])?.count == 0)
        // The same bytes in another workspace are not this workspace's: there they stay pending.
        let elsewhere = s.plate(
            "plate-2", photo: .pending(sha256: SHA256.hash(photo), byteCount: 5_000, contentType: "image/jpeg"), as: "globex",
            workspace: "globex")
        #expect(elsewhere.status == 201)
        #expect(((elsewhere.json["record"] as? [String: Any])?["photo"] as? [String: Any])?["id"] == nil)
    }

    @Test func anUploadThatIsNotWhatADocumentAnnouncedIsRefusedAndNothingIsStored() throws {
        let s = try Setup()
        let photo = Self.jpeg(8_000)
        let digest = SHA256.hash(photo)
        // Announced with another size, then with another type.
        #expect(s.plate("plate-1", photo: .pending(sha256: digest, byteCount: 9_000, contentType: "image/jpeg")).status == 201)
        let refused = s.upload(photo, document: "file-1", type: "image/jpeg")
        #expect(refused.status == 422)
        #expect(refused.json["type"] as? String == "urn:formsync:problem:file-mismatch")
        #expect(s.errors(refused.json).map(\.["pointer"]) == ["#/photo"])
        #expect(s.errors(refused.json).first?["document_id"] == "plate-1")
        #expect(s.server.fileIDs().isEmpty)
        #expect(s.server.document("plate-1")?.version == 1)
        #expect((s.send("GET", "/pending-files").json["pending"] as? [Any])?.count == 1, "it stays pending: nothing is dropped")

        // Bytes that are not the JPEG they are said to be, on the file's own path and the resumable one.
        let png = MediaSignature.stamped(Data(count: 6_000), asFileNamed: "x.png")
        #expect(s.plate("plate-2", photo: .pending(sha256: SHA256.hash(png), byteCount: 6_000, contentType: "image/jpeg")).status == 201)
        let lying = s.upload(png, document: "file-2", type: "image/jpeg")
        #expect(lying.status == 422)
        #expect(s.errors(lying.json).first?["detail"]?.contains("image/png") == true)
        let relabelled = s.upload(png, document: "file-3", type: "image/png")
        #expect(relabelled.status == 422, "the upload says image/png; the document announced image/jpeg")
        let resumable = s.send(
            "POST", "/uploads",
            headers: [
                "formsync-document": "upload-2", "upload-length": "6000", "repr-digest": FileRef.digestText(SHA256.hash(png)),
                "content-type": "image/png",
                "upload-complete": "?0",
            ])
        #expect(resumable.status == 422, "refused before any byte travels")
        #expect(s.server.fileIDs().isEmpty)
    }

    @Test func aFileReferenceMustNameAFileOfTheWorkspaceWithItsSizeTypeAndBytes() throws {
        let s = try Setup()
        let photo = Self.jpeg(4_000)
        let id = try #require((s.upload(photo, document: "file-1", type: "image/jpeg").json["id"] as? NSNumber)?.int64Value)
        let foreign = try #require(
            (s.upload(Self.jpeg(4_000, seed: 9), document: "file-g", type: "image/jpeg", as: "globex", workspace: "globex").json["id"]
                as? NSNumber)?.int64Value)
        let notJPEG = try #require(
            (s.upload(Data(repeating: 1, count: 4_000), document: "file-2", type: "image/jpeg").json["id"] as? NSNumber)?.int64Value)

        func refusal(_ ref: FileRef) -> [String: String]? {
            let reply = s.plate("plate-\(UUID().uuidString)", photo: ref)
            guard reply.status == 422 else { return nil }
            return s.errors(reply.json).first
        }
        #expect(s.plate("plate-ok", photo: FileRef(id: id, byteCount: 4_000, contentType: "image/jpeg")).status == 201)
        #expect(refusal(FileRef(id: id, byteCount: 4_001, contentType: "image/jpeg"))?["code"] == "file-mismatch")
        #expect(refusal(FileRef(id: id, byteCount: 4_000, contentType: "image/png"))?["code"] == "content_type")  // the field's own rule
        #expect(refusal(FileRef(id: foreign, byteCount: 4_000, contentType: "image/jpeg"))?["code"] == "file-unknown")
        #expect(refusal(FileRef(id: 987_654, byteCount: 4_000, contentType: "image/jpeg"))?["code"] == "file-unknown")
        let bytes = refusal(FileRef(id: notJPEG, byteCount: 4_000, contentType: "image/jpeg"))
        #expect(bytes?["code"] == "content_type")
        #expect(bytes?["pointer"] == "#/photo")
        #expect(bytes?["detail"]?.contains("not image/jpeg") == true)
        // A pending file whose digest is not SHA-256 of 32 bytes is refused by the rules.
        #expect(refusal(FileRef(id: 0, byteCount: 4_000, contentType: "image/jpeg", digest: "sha-256=:AAAA:"))?["code"] == "invalid")
    }

    @Test func aFileIsFoundByItsDigestInItsOwnWorkspaceOnly() throws {
        let s = try Setup()
        let photo = Self.jpeg(2_000)
        let id = try #require((s.upload(photo, document: "file-1", type: "image/jpeg").json["id"] as? NSNumber)?.int64Value)
        let hex = SHA256.hash(photo).map { String(format: "%02x", $0) }.joined()
        let found = s.send("GET", "/files/sha-256/\(hex)")
        #expect(found.status == 200)
        #expect((found.json["id"] as? NSNumber)?.int64Value == id)
        #expect((found.json["byte_count"] as? NSNumber)?.intValue == 2_000)
        #expect(found.json["digest"] as? String == FileRef.digestText(SHA256.hash(photo)))
        #expect(s.send("GET", "/files/sha-256/\(hex)", as: "globex", workspace: "globex").status == 404)
        #expect(s.send("GET", "/files/sha-256/\(String(repeating: "0", count: 64))").status == 404)
        #expect(s.send("GET", "/files/sha-256/\(hex.uppercased())").status == 400)
        #expect(s.send("GET", "/files/sha-256/abc").status == 400)
    }

    @Test func theServerAnnouncesDeferredFilesInHealthAndOnEveryReply() throws {
        let s = try Setup()
        let health = s.send("GET", "/health")
        #expect((health.json["features"] as? [String])?.contains("deferred-files") == true)
        let reply = s.upload(Self.jpeg(100), document: "file-1", type: "image/jpeg")
        #expect(reply.headers.contains { $0.0 == "FormSync-Features" && $0.1.contains("deferred-files") })
    }
}
