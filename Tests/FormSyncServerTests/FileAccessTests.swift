import CorpusForms
import FormSyncHTTP
import FormSyncModel
import Foundation
import Testing

@testable import FormSyncServer

/// Who may fetch a stored file (`GET /files/<id>`): the principal that uploaded it, a device
/// that sees a record naming it, and the back office; nobody else of the workspace, however
/// the id was learnt (issue 44, defect 1: ids are sequential, and a digest look-up names one).
struct FileAccessTests {
    typealias Setup = PendingFileServerTests.Setup

    static func report(_ count: Int) -> Data { PendingFileServerTests.jpeg(count, seed: 9) }

    @Test func anotherPrincipalOfTheWorkspaceCannotFetchAFileNoRecordItSeesNames() throws {
        let s = try Setup()
        let photo = Self.report(6_000)
        let stored = s.upload(photo, document: "file-ada", type: "image/jpeg")
        #expect(stored.status == 201)
        let id = try #require((stored.json["id"] as? NSNumber)?.int64Value)

        #expect(s.send("GET", "/files/\(id)").status == 200, "its uploader")
        #expect(s.send("GET", "/files/\(id)", as: "office").status == 200, "the back office")
        let other = s.send("GET", "/files/\(id)", as: "bob")
        #expect(other.status == 404)
        #expect(other.json["code"] as? String == "no-such-file")
        // A range asks for the same bytes: refused alike.
        #expect(s.send("GET", "/files/\(id)", as: "bob", headers: ["range": "bytes=0-0"]).status == 404)

        // Knowing the digest tells bob the id, not the bytes.
        let lookup = s.send("GET", "/files/sha-256/\(SHA256.hash(photo).map { String(format: "%02x", $0) }.joined())", as: "bob")
        #expect(lookup.status == 200)
        #expect((lookup.json["id"] as? NSNumber)?.int64Value == id)
        #expect(s.send("GET", "/files/\(id)", as: "bob").status == 404)
    }

    @Test func aRecordNamingAFileLetsEveryDeviceThatSeesItFetchItUntilItNoLongerNamesIt() throws {
        let s = try Setup()
        let photo = Self.report(7_000)
        let created = s.plate("plate-1", photo: .pending(sha256: SHA256.hash(photo), byteCount: 7_000, contentType: "image/jpeg"))
        #expect(created.status == 201)
        #expect(s.upload(photo, document: "file-1", type: "image/jpeg").status == 201)
        let record = try #require(s.server.records(workspace: "acme").first { $0.type == "Plate" })
        let plate = try JSONDecoder().decode(Plate.self, from: record.fields)
        let id = try #require(plate.photo?.id)
        // The Plate (unscoped) names the photo: bob's device pulls it and may fetch its photo.
        #expect(s.send("GET", "/files/\(id)", as: "bob").status == 200)

        // The back office takes the photo off the record: bob loses the file, ada keeps hers.
        _ = try s.server.putRecord("Plate", id: record.id, fields: try FormRegistry.encode(Plate(name: "No photo")), workspace: "acme")
        #expect(s.send("GET", "/files/\(id)", as: "bob").status == 404)
        #expect(s.send("GET", "/files/\(id)").status == 200)
    }

    @Test func aFileOfAnotherWorkspaceIsNotFoundEvenForItsUploader() throws {
        let s = try Setup()
        let stored = s.upload(Self.report(3_000), document: "file-g", type: "image/jpeg", as: "globex", workspace: "globex")
        let id = try #require((stored.json["id"] as? NSNumber)?.int64Value)
        #expect(s.send("GET", "/files/\(id)", as: "globex", workspace: "globex").status == 200)
        #expect(s.send("GET", "/files/\(id)").status == 404)
        #expect(s.send("GET", "/files/\(id)", as: "office").status == 404)
    }

    /// Issue 44, defect 3: a 1-byte range of a file read the whole file into memory. The reply
    /// now holds no bytes of its own: its body is read from the range alone as it is sent.
    @Test func aRangeOfAStoredFileIsReadFromItsOwnBytesAlone() throws {
        let s = try Setup()
        let photo = PendingFileServerTests.jpeg(3_000_000)
        let stored = s.upload(photo, document: "file-big", type: "image/jpeg")
        let id = try #require((stored.json["id"] as? NSNumber)?.int64Value)
        let token = try #require(s.tokens["ada"])
        let reply = FileService(context: s.server.context).fileDownload(
            HTTPRequest(
                method: "GET", path: "/files/\(id)", query: nil,
                headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme", "range": "bytes=2999999-"], body: Data()))
        #expect(reply.status == 206)
        #expect(reply.body.isEmpty, "nothing read before it is sent")
        let stream = try #require(reply.stream)
        #expect(stream.count == 1)
        #expect(try stream.read(0, 1) == photo.suffix(1))
        let whole = try #require(
            FileService(context: s.server.context).fileDownload(
                HTTPRequest(
                    method: "GET", path: "/files/\(id)", query: nil,
                    headers: ["authorization": "Bearer \(token)", "formsync-workspace": "acme"],
                    body: Data())
            ).stream)
        #expect(try whole.readAll() == photo)
    }
}
