import CorpusForms
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import Foundation
import Testing

/// Several records from one submission (docs/PROTOCOL.md, "Several records from one
/// submission"), request by request on the store this run tests: a list with `creates:` makes a
/// record per item with the document, in one transaction, a repeat names the same records, a
/// file in an item completes that item's record, and an item its record refuses refuses it all.
struct ListRecordServerTests {
    typealias Setup = PendingFileServerTests.Setup

    static func tasting(_ s: Setup, _ document: String, _ tasting: Tasting) throws -> (status: Int, json: [String: Any]) {
        let reply = s.send(
            "POST", "/tastings",
            headers: ["formsync-document": document, "formsync-form": "Tasting; version=1", "content-type": "application/json"],
            body: try FormRegistry.encode(tasting))
        return (reply.status, reply.json)
    }

    /// `created_records` as (list, index, type, id, version).
    static func created(_ json: [String: Any]) -> [(list: String, index: Int, type: String, id: Int64, version: Int)] {
        ((json[Acknowledgement.createdRecords] as? [[String: Any]]) ?? []).map {
            (
                $0[Acknowledgement.list] as? String ?? "", ($0[Acknowledgement.position] as? NSNumber)?.intValue ?? -1,
                $0["type"] as? String ?? "", ($0["id"] as? NSNumber)?.int64Value ?? 0, ($0["version"] as? NSNumber)?.intValue ?? 0
            )
        }
    }

    @Test func aSubmissionsListsCreateARecordPerItemWithItAndARepeatNamesTheSameRecords() throws {
        let s = try Setup()
        let photo = PendingFileServerTests.jpeg(3_000, seed: 41)
        let pending = FileRef.pending(sha256: SHA256.hash(photo), byteCount: Int64(photo.count), contentType: "image/jpeg")
        let tasting = Tasting(
            kitchen: "Norte", plates: [.init(name: "Caldo verde", photo: pending, score: 4), .init(name: "Bacalhau")],
            courses: [.init(name: "Sopa")])
        let first = try Self.tasting(s, "tasting-1", tasting)
        try #require(first.status == 201, "\(first.json)")
        let made = Self.created(first.json)
        #expect(
            made.map { "\($0.list)/\($0.index) \($0.type) v\($0.version)" } == [
                "plates/0 Plate v1", "plates/1 Plate v1", "courses/0 Course v1",
            ])
        let documentID = try #require((first.json[Acknowledgement.id] as? NSNumber)?.int64Value)
        #expect(Set(made.map(\.id)).count == 3 && made.allSatisfy { $0.id > 0 && $0.id != documentID }, "ids of their own")

        // Each record holds its item's fields and the form fields its list copies.
        let records = s.server.records(workspace: "acme")
        let course = try #require(records.first { $0.id == made[2].id })
        #expect(try JSONSerialization.jsonObject(with: course.fields) as? [String: String] == ["name": "Sopa", "kitchen": "Norte"])
        let plate = try #require(records.first { $0.id == made[1].id })
        #expect(try JSONDecoder().decode(Plate.self, from: plate.fields).name == "Bacalhau")

        // The same submission again (a lost reply, a new attempt): the same records, none made twice.
        let again = try Self.tasting(s, "tasting-1", tasting)
        #expect(again.status == 200)
        #expect(Self.created(again.json).map(\.id) == made.map(\.id))
        #expect(s.server.records(workspace: "acme").count == records.count)

        // The photo arrives: it completes the plate it is in (a new version), not the other one.
        try #require(s.upload(photo, document: "tasting-1-photo", type: "image/jpeg").status == 201)
        let completed = try #require(s.server.records(workspace: "acme").first { $0.id == made[0].id })
        #expect(completed.version == 2)
        #expect(try JSONDecoder().decode(Plate.self, from: completed.fields).photo?.id ?? 0 > 0)
        #expect(s.server.records(workspace: "acme").first { $0.id == made[1].id }?.version == 1)

        // The feed carries every record to the devices.
        let feed = s.send("GET", "/changes", query: "limit=100")
        let changes = (feed.json["changes"] as? [[String: Any]]) ?? []
        for record in made {
            #expect(changes.contains { ($0["id"] as? NSNumber)?.int64Value == record.id && $0["type"] as? String == record.type })
        }
    }

    @Test func anItemThatBreaksItsRecordsRulesRefusesTheWholeSubmission() throws {
        let s = try Setup()
        let before = s.server.records(workspace: "acme").count
        let reply = try Self.tasting(
            s, "tasting-2",
            Tasting(kitchen: "Sul", plates: [.init(name: "Polvo")], courses: [.init(name: "Entrada"), .init(name: "Prato principal")]))
        #expect(reply.status == 422)
        #expect(reply.json["code"] as? String == ProblemCode.invalidRecord.rawValue)
        let errors = (reply.json["errors"] as? [[String: Any]]) ?? []
        #expect(errors.map { $0["pointer"] as? String } == ["#/courses/1/name"], "\(reply.json)")
        #expect(s.server.document("tasting-2") == nil)
        #expect(s.server.records(workspace: "acme").count == before, "no plate, no course: all or nothing")
    }
}
