import FormSyncHTTP
import FormSyncProtocol
import Foundation

/// Who changed what (docs/PROTOCOL.md, "History" and "Review"): a document's or a record's
/// versions with their authors and changed fields (`GET /documents/{id}/history`,
/// `GET /records/{type}/{id}/history`), the back office's verdict on a document
/// (`POST /documents/{id}/reviews`), and the author a conflict reply names.
struct HistoryService: ServerPart {
    let context: ServerContext

    /// `GET /documents/{id}/history` (back office).
    func documentHistory(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        let id = String(request.path.dropFirst("/documents/".count).dropLast("/history".count))
        guard WireSyntax.isIdentifier(id) else { return .problem(.noRoute, detail: "use /documents/{document id}/history") }
        return locked {
            do {
                guard let owner = store.owner(of: id), owner.form != nil, owner.workspace == caller.workspace,
                    let document = store.document(id)
                else { return .problem(.noSuchDocument, detail: "no document \(id) here") }
                // One more than is shown: the oldest shown version's changes are against it.
                let events = try store.history.documentEvents(document: id, limit: VersionHistory.maxEntries + 1)
                var previous: Data?
                var entries: [VersionHistory.Entry] = []
                for event in events {
                    var changes: [FieldChange] = []
                    if let payload = event.payload {
                        if event.event != .accepted { changes = FieldDiff.changes(old: previous, new: payload) }
                        previous = payload
                    }
                    entries.append(
                        VersionHistory.Entry(
                            event: event.event, version: event.version, author: event.author.wire, changes: changes,
                            review: Self.review(event)))
                }
                let truncated = entries.count > VersionHistory.maxEntries
                let history = VersionHistory(
                    documentID: id, type: nil, id: document.id, entries: Array(entries.suffix(VersionHistory.maxEntries)),
                    truncated: truncated)
                return DeviceService.encoded(200, history)
            } catch {
                return failure(error, "document history")
            }
        }
    }

    /// `GET /records/{type}/{id}/history` (back office): across a deletion and a re-creation.
    func recordHistory(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, let id = Int64(parts[3]), id > 0, !parts[2].isEmpty else {
            return .problem(.noRoute, detail: "use /records/{type}/{id}/history")
        }
        let type = String(parts[2])
        return locked {
            do {
                let versions = try store.history.recordVersions(
                    workspace: caller.workspace, type: type, id: id, limit: VersionHistory.maxEntries + 1)
                guard !versions.isEmpty else { return .problem(.noSuchRecord, detail: "no \(type.prefix(140)) \(id) here, now or before") }
                var previous: Data?
                var entries: [VersionHistory.Entry] = []
                for version in versions {
                    let changes =
                        version.event == .created || version.event == .deleted ? [] : FieldDiff.changes(old: previous, new: version.payload)
                    previous = version.payload
                    entries.append(
                        VersionHistory.Entry(
                            event: version.event, version: version.version, author: version.author.wire, changes: changes, review: nil))
                }
                let history = VersionHistory(
                    documentID: nil, type: type, id: id, entries: Array(entries.suffix(VersionHistory.maxEntries)),
                    truncated: entries.count > VersionHistory.maxEntries)
                return DeviceService.encoded(200, history)
            } catch {
                return failure(error, "record history")
            }
        }
    }

    /// `POST /documents/{id}/reviews` (back office): a verdict on the document's current version
    /// (`412 stale-version` when the request names an older one). The same verdict sent again for
    /// the same version by the same person (a retry whose reply was lost) is answered with the
    /// review already kept, not kept twice.
    func review(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        let id = String(request.path.dropFirst("/documents/".count).dropLast("/reviews".count))
        guard WireSyntax.isIdentifier(id) else { return .problem(.noRoute, detail: "use /documents/{document id}/reviews") }
        guard let asked = DeviceService.decode(ReviewRequest.self, request.body) else {
            return .problem(
                .malformed,
                detail:
                    "send {\"verdict\": \"approved\" | \"has-issues\" | \"rejected\"}, with a comment, issues and the version if you like")
        }
        if let problem = asked.problem { return .problem(.malformed, detail: problem) }
        let stored = StoredReview(verdict: asked.verdict, comment: asked.comment ?? "", issues: asked.issues ?? [])
        do {
            return try locked {
                try store.transaction { () throws -> HTTPResponse in
                    guard let owner = store.owner(of: id), owner.form != nil, owner.workspace == caller.workspace,
                        let document = store.document(id)
                    else { return .problem(.noSuchDocument, detail: "no document \(id) here") }
                    if let version = asked.version, version != document.version {
                        return .problem(
                            .staleVersion, detail: "document \(id) is at version \(document.version); review what it holds now",
                            extra: try lastChangeMember(document: id), headers: [("ETag", WireSyntax.etag(document.version))])
                    }
                    if let last = try store.history.documentEvents(document: id, limit: 1).last, last.event == .reviewed,
                        last.version == document.version, last.review == stored, last.author.principal == caller.principal,
                        let review = Self.review(last)
                    {
                        return DeviceService.encoded(200, review)
                    }
                    let author = versions.author(caller, capturedAt: nil, via: .review, document: id)
                    let eventID = try versions.review(document, stored, workspace: owner.workspace, owner: owner.principal, by: author)
                    return DeviceService.encoded(
                        201,
                        Review(
                            id: eventID, documentID: id, version: document.version, verdict: stored.verdict, comment: stored.comment,
                            issues: stored.issues, reviewer: caller.principal, at: WireSyntax.timestamp(author.at)))
                }
            }
        } catch {
            return failure(error, "review")
        }
    }

    /// A review event as the wire says it; nil for any other event.
    static func review(_ event: StoredDocumentEvent) -> Review? {
        guard let review = event.review else { return nil }
        return Review(
            id: event.id, documentID: event.documentID, version: event.version, verdict: review.verdict, comment: review.comment,
            issues: review.issues, reviewer: event.author.principal ?? "", at: WireSyntax.timestamp(event.author.at))
    }

    /// `last_change` for a reply about a document: who made its current version.
    func lastChangeMember(document id: String) throws -> [String: Any] {
        guard let event = try store.history.latestVersionEvent(document: id) else { return [:] }
        return [Acknowledgement.lastChange: Self.object(event.author.wire)]
    }

    /// `last_change` for a reply about a record: who made its current version.
    func lastChangeMember(workspace: String, type: String, id: Int64) throws -> [String: Any] {
        guard let version = try store.history.recordVersions(workspace: workspace, type: type, id: id, limit: 1).last else { return [:] }
        return [Acknowledgement.lastChange: Self.object(version.author.wire)]
    }

    private static func object(_ author: ChangeAuthor) -> Any {
        (try? JSONSerialization.jsonObject(with: DeviceService.json(author))) ?? [:]
    }
}
