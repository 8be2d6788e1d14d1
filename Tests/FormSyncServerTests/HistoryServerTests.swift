import CorpusForms
import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import FormSyncServer
import Foundation
import Testing

/// History, the submissions feed and reviews, request by request on the store this run tests
/// (docs/PROTOCOL.md, "History", "The submissions feed", "Review"): every version keeps its
/// author and what it changed, the feed carries each event once in commit order, a review
/// reaches only its document's owner, and a conflict names whose version it met.
struct HistoryServerTests {
    typealias Setup = PendingFileServerTests.Setup

    static func decode<T: Decodable>(_ type: T.Type, _ json: [String: Any]) throws -> T {
        try JSONDecoder().decode(type, from: try JSONSerialization.data(withJSONObject: json))
    }

    /// A plate created by `who` with its photo pending, then the photo's upload.
    static func plateWithItsPhoto(_ s: Setup, _ document: String, as who: String = "ada", captured: String? = nil) throws {
        // A seed of the name's bytes, the same in every run (`hashValue` is not: one run in 256
        // gave two documents the same photo, which the server then held already).
        let photo = PendingFileServerTests.jpeg(4_000, seed: document.utf8.reduce(UInt8(17)) { $0 &* 31 &+ $1 })
        var headers = ["formsync-document": document, "formsync-form": "NewPlate; version=1", "content-type": "application/json"]
        if let captured { headers[ProtocolHeader.capturedAt.lowercased()] = captured }
        let pending = FileRef.pending(sha256: SHA256.hash(photo), byteCount: Int64(photo.count), contentType: "image/jpeg")
        let created = s.send(
            "POST", "/plates", as: who, headers: headers, body: try FormRegistry.encode(NewPlate(name: "Bacalhau", photo: pending)))
        try #require(created.status == 201, "\(created.json)")
        try #require(s.upload(photo, document: "\(document)-photo", type: "image/jpeg", as: who).status == 201)
    }

    static func editPlate(
        _ s: Setup, _ document: String, name: String, ifMatch: String, as who: String = "ada"
    ) -> (
        status: Int, json: [String: Any], headers: [(String, String)]
    ) {
        let held = s.server.document(document)!
        var payload = (try! JSONSerialization.jsonObject(with: held.payload) as! [String: Any])
        payload["name"] = name
        return s.send(
            "POST", "/plates", as: who,
            headers: [
                "formsync-document": document, "formsync-form": "NewPlate; version=1", "content-type": "application/json",
                "if-match": ifMatch,
            ], body: try! JSONSerialization.data(withJSONObject: payload))
    }

    @Test func aDocumentsHistoryNamesEachVersionsAuthorAndTheFieldsItChanged() throws {
        let s = try Setup()
        try Self.plateWithItsPhoto(s, "plate-1", captured: "2026-12-06T10:41:07Z")
        #expect(Self.editPlate(s, "plate-1", name: "Bacalhau à Brás", ifMatch: "\"2\"").status == 200)

        let reply = s.send("GET", "/documents/plate-1/history", as: "office")
        try #require(reply.status == 200, "\(reply.json)")
        let history = try Self.decode(VersionHistory.self, reply.json)
        #expect(history.entries.map(\.event) == [.accepted, .fileCompleted, .edited])
        #expect(history.entries.map(\.version) == [1, 2, 3])
        let (accepted, completed, edited) = (history.entries[0], history.entries[1], history.entries[2])
        #expect(accepted.author.principal == "ada" && accepted.author.via == .submission && accepted.author.documentID == "plate-1")
        #expect(accepted.author.capturedAt == "2026-12-06T10:41:07Z", "the device's capture time, kept as told")
        #expect(accepted.changes.isEmpty)
        #expect(completed.author.principal == nil && completed.author.via == .fileCompleted)
        #expect(completed.author.documentID == "plate-1-photo", "the file document whose bytes completed it")
        #expect(completed.changes.contains { $0.pointer == "#/photo/digest" && $0.new == nil })
        #expect(completed.changes.contains { $0.pointer == "#/photo/id" && $0.old == nil && $0.new != nil })
        #expect(edited.changes == [FieldChange(pointer: "#/name", old: .string("Bacalhau"), new: .string("Bacalhau à Brás"))])
        #expect(edited.author.principal == "ada" && edited.author.capturedAt == nil)

        // The record the document created keeps the same authors.
        let recordID = try #require(history.id as Int64?)
        let record = try Self.decode(VersionHistory.self, s.send("GET", "/records/Plate/\(recordID)/history", as: "office").json)
        #expect(record.entries.map(\.event) == [.created, .fileCompleted, .edited])
        #expect(record.entries.last?.changes.map(\.pointer) == ["#/name"])

        // Only the back office reads histories; another workspace's back office finds none.
        #expect(s.send("GET", "/documents/plate-1/history", as: "ada").json["code"] as? String == "back-office-only")
        #expect(s.send("GET", "/documents/no-such/history", as: "office").json["code"] as? String == "no-such-document")
        #expect(s.send("GET", "/records/Plate/999999/history", as: "office").json["code"] as? String == "no-such-record")
    }

    @Test func aRecordsHistoryGoesOnAcrossItsDeletionAndNamesTheBackOfficesPerson() throws {
        let s = try Setup()
        let plate = try s.server.putRecord(
            Plate(name: "Caldo verde", photo: nil), workspace: "acme", author: "dispatcher")
        var changed = plate
        changed.name = "Caldo verde com chouriço"
        _ = try s.server.putRecord(changed, workspace: "acme", author: "dispatcher")
        #expect(try s.server.deleteRecord("Plate", id: plate.id, workspace: "acme", author: "supervisor"))
        let history = try Self.decode(VersionHistory.self, s.send("GET", "/records/Plate/\(plate.id)/history", as: "office").json)
        #expect(history.entries.map(\.event) == [.created, .edited, .deleted])
        #expect(history.entries.map { $0.author.principal } == ["dispatcher", "dispatcher", "supervisor"])
        #expect(history.entries.allSatisfy { $0.author.via == .backOffice })
        #expect(history.entries[1].changes.map(\.pointer) == ["#/name"])
    }

    @Test func aStaleEditIsRefusedNamingWhoMadeTheVersionItMet() throws {
        let s = try Setup()
        try Self.plateWithItsPhoto(s, "plate-2")
        let stale = Self.editPlate(s, "plate-2", name: "Another name", ifMatch: "\"1\"")
        #expect(stale.status == 412)
        let author = try Self.decode(ChangeAuthor.self, try #require(stale.json[Acknowledgement.lastChange] as? [String: Any]))
        #expect(author.via == .fileCompleted && author.principal == nil && author.documentID == "plate-2-photo")
        #expect(Self.editPlate(s, "plate-2", name: "Another name", ifMatch: "\"2\"").status == 200)
        let again = Self.editPlate(s, "plate-2", name: "A third name", ifMatch: "\"2\"")
        let named = try Self.decode(ChangeAuthor.self, try #require(again.json[Acknowledgement.lastChange] as? [String: Any]))
        #expect(again.status == 412 && named.principal == "ada" && named.via == .submission)
    }

    @Test func theSubmissionsFeedCarriesEachEventOnceInOrderWithItsFilesAndFilters() throws {
        let s = try Setup()
        try Self.plateWithItsPhoto(s, "plate-a")
        try Self.plateWithItsPhoto(s, "plate-b", as: "bob")
        #expect(Self.editPlate(s, "plate-a", name: "Arroz", ifMatch: "\"2\"").status == 200)

        var events: [SubmissionEvent] = []
        var cursor: String?
        var pages = 0
        repeat {
            let query = "limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
            let reply = s.send("GET", "/submissions", query: query, as: "office")
            try #require(reply.status == 200, "\(reply.json)")
            let page = try Self.decode(SubmissionsPage.self, reply.json)
            events += page.submissions
            cursor = page.cursor
            pages += 1
            if !page.more { break }
        } while pages < 10
        #expect(pages == 3)
        #expect(
            events.map { "\($0.documentID) \($0.event.rawValue) \($0.version)" } == [
                "plate-a accepted 1", "plate-a file-completed 2", "plate-b accepted 1", "plate-b file-completed 2", "plate-a edited 3",
            ])
        #expect(Set(events.map(\.eventID)).count == 5)
        let first = events[0]
        #expect(first.files?.map(\.state) == [.pending] && first.files?.first?.pointer == "#/photo")
        #expect(first.author.principal == "ada" && first.form == "NewPlate" && first.record?["name"] == .string("Bacalhau"))
        let stored = try #require(events[1].files?.first)
        #expect(stored.state == .stored && stored.fileID != nil && stored.digest == first.files?.first?.digest)
        #expect(events[2].author.principal == "bob")
        // Read again from the last cursor: nothing new.
        let after = try Self.decode(SubmissionsPage.self, s.send("GET", "/submissions", query: "cursor=\(cursor!)", as: "office").json)
        #expect(after.submissions.isEmpty && after.cursor == cursor)

        #expect(
            try Self.decode(SubmissionsPage.self, s.send("GET", "/submissions", query: "form=Survey", as: "office").json)
                .submissions.isEmpty)
        #expect(s.send("GET", "/submissions", query: "form=NoSuchForm", as: "office").json["code"] as? String == "unknown-form")
        let future = s.send("GET", "/submissions", query: "since=2999-01-01T00:00:00Z", as: "office")
        #expect(try Self.decode(SubmissionsPage.self, future.json).submissions.isEmpty)
        let past = s.send("GET", "/submissions", query: "until=2000-01-01T00:00:00Z", as: "office")
        #expect(try Self.decode(SubmissionsPage.self, past.json).submissions.isEmpty)
        let all = s.send("GET", "/submissions", query: "since=2000-01-01T00:00:00%2B01:00", as: "office")
        #expect(try Self.decode(SubmissionsPage.self, all.json).submissions.count == 5)
        for query in ["since=yesterday", "cursor=c1.5", "cursor=s1.99999", "limit=0", "limit=x", "colour=red", "form=a&form=b"] {
            let refused = s.send("GET", "/submissions", query: query, as: "office")
            #expect(refused.status >= 400, "\(query)")
        }
        #expect(s.send("GET", "/submissions", as: "ada").json["code"] as? String == "back-office-only")
    }

    @Test func aReviewReachesOnlyItsDocumentsOwnerInTheirNextPullAndIsKeptOnce() throws {
        let s = try Setup()
        try Self.plateWithItsPhoto(s, "plate-r")
        let asked = ReviewRequest(
            verdict: .hasIssues, version: 2, comment: "The photo is blurred",
            issues: [Review.Issue(pointer: "#/photo", detail: "Take it again in daylight")])
        let body = try JSONEncoder().encode(asked)
        let made = s.send("POST", "/documents/plate-r/reviews", as: "office", body: body)
        try #require(made.status == 201, "\(made.json)")
        let review = try Self.decode(Review.self, made.json)
        #expect(review.verdict == .hasIssues && review.version == 2 && review.reviewer == "office" && review.issues.count == 1)
        // The same verdict again (a retry whose reply was lost) is the same review.
        let again = s.send("POST", "/documents/plate-r/reviews", as: "office", body: body)
        let repeated = try Self.decode(Review.self, again.json)
        #expect(again.status == 200 && repeated == review)

        let adaPage = s.send("GET", "/changes", as: "ada")
        let reviews = try #require(adaPage.json[FeedPage.reviews] as? [[String: Any]])
        #expect(reviews.count == 1 && reviews.first?["document_id"] as? String == "plate-r")
        #expect(s.send("GET", "/changes", as: "bob").json[FeedPage.reviews] == nil, "bob's documents were not reviewed")
        let cursor = try #require(adaPage.json[FeedPage.cursor] as? String)
        #expect(s.send("GET", "/changes", query: "cursor=\(cursor)", as: "ada").json[FeedPage.reviews] == nil, "delivered once")

        // A verdict on a version nobody read now is refused, naming who made the current one.
        #expect(Self.editPlate(s, "plate-r", name: "Fixed", ifMatch: "\"2\"").status == 200)
        let stale = s.send("POST", "/documents/plate-r/reviews", as: "office", body: body)
        #expect(stale.status == 412 && (stale.json[Acknowledgement.lastChange] as? [String: Any])?["principal"] as? String == "ada")
        let approved = s.send(
            "POST", "/documents/plate-r/reviews", as: "office", body: try JSONEncoder().encode(ReviewRequest(verdict: .approved)))
        let approval = try Self.decode(Review.self, approved.json)
        #expect(approved.status == 201 && approval.version == 3)

        let history = try Self.decode(VersionHistory.self, s.send("GET", "/documents/plate-r/history", as: "office").json)
        #expect(history.entries.map(\.event) == [.accepted, .fileCompleted, .reviewed, .edited, .reviewed])
        #expect(history.entries.compactMap { $0.review?.verdict } == [.hasIssues, .approved])

        for bad in [
            #"{"verdict":"maybe"}"#, #"{"verdict":"has-issues"}"#, #"{"verdict":"approved","version":0}"#,
            #"{"verdict":"rejected","issues":[{"pointer":"photo","detail":"x"}]}"#, "not json",
        ] {
            #expect(
                s.send("POST", "/documents/plate-r/reviews", as: "office", body: Data(bad.utf8)).json["code"] as? String == "malformed",
                "\(bad)")
        }
        #expect(s.send("POST", "/documents/plate-r/reviews", as: "ada", body: body).json["code"] as? String == "back-office-only")
        #expect(s.send("POST", "/documents/none/reviews", as: "office", body: body).json["code"] as? String == "no-such-document")
    }

    /// `FormSync-Captured-At` is the device's word: anything that is not an RFC 3339 time within
    /// years 1970 to 9999 is refused with `400 malformed` before anything is stored.
    @Test func aCaptureTimeThatIsNotOneIsRefusedAndNothingIsStored() throws {
        let s = try Setup()
        for (n, value) in [
            "yesterday", "2026-13-40T00:00:00Z", "10000-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2026-12-06",
            "2026-12-06T10:41:07Z" + String(repeating: "0", count: 30), "2026-12-06T10:41:07+99:00",
        ].enumerated() {
            let photo = FileRef(id: 0, byteCount: 10, contentType: "image/jpeg", digest: FileRef.digestText(SHA256.hash(Data([UInt8(n)]))))
            let refused = s.send(
                "POST", "/plates",
                headers: [
                    "formsync-document": "captured-\(n)", "formsync-form": "NewPlate; version=1", "content-type": "application/json",
                    ProtocolHeader.capturedAt.lowercased(): value,
                ], body: try FormRegistry.encode(NewPlate(name: "Sopa", photo: photo)))
            #expect(refused.status == 400 && refused.json["code"] as? String == "malformed", "\(value): \(refused.json)")
            #expect(s.server.document("captured-\(n)") == nil, "\(value)")
        }
    }
}
