import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The submissions feed (`GET /submissions`, back office; docs/PROTOCOL.md, "The submissions
/// feed"): every document's versions and reviews after a cursor, in commit order, filtered by
/// form and by the server's time, each version with its payload, its author and its files.
struct SubmissionFeed: ServerPart {
    let context: ServerContext

    /// How many events a page holds when the request does not say.
    static let defaultLimit = 100

    func submissions(_ request: HTTPRequest, caller: Caller) -> HTTPResponse {
        guard let query = WireSyntax.queryMembers(request.query) else {
            return .problem(.badQuery, detail: "the query takes cursor=, limit=, form=, since= and until= once each")
        }
        if let unknown = query.keys.sorted().first(where: { !["cursor", "limit", "form", "since", "until"].contains($0) }) {
            return .problem(.badQuery, detail: "the query takes cursor=, limit=, form=, since= and until=, not \(unknown.prefix(40))=")
        }
        var limit = Self.defaultLimit
        if let text = query["limit"] {
            guard !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }), (Int(text) ?? Int.max) >= 1 else {
                return .problem(
                    .badLimit,
                    detail: "limit is a whole number from 1 (above \(SubmissionsPage.maxLimit) it is served as \(SubmissionsPage.maxLimit))"
                )
            }
            limit = min(Int(text) ?? Int.max, SubmissionsPage.maxLimit)
        }
        var after: Int64 = 0
        if let cursor = query["cursor"], !cursor.isEmpty {
            guard let position = WireSyntax.parseSubmissionsCursor(cursor) else {
                return .problem(.badCursor, detail: "the cursor is not one this server's submissions feed issued")
            }
            after = position
        }
        let form = query["form"]
        if let form, registry[form] == nil {
            return .problem(.unknownForm, detail: "this server holds no form \(form.prefix(140))")
        }
        var bounds: [Int64?] = []
        for name in ["since", "until"] {
            guard let text = query[name] else {
                bounds.append(nil)
                continue
            }
            guard let time = WireSyntax.parseTimestamp(text) else {
                return .problem(.badQuery, detail: "\(name) is an RFC 3339 time, such as 2026-12-06T09:00:00Z")
            }
            bounds.append(time)
        }
        return locked {
            do {
                guard after <= (try store.history.lastSubmissionEvent()) else {
                    return .problem(
                        .cursorExpired, detail: "the cursor is ahead of this server's feed (its data was reset); read again from the start")
                }
                let events = try store.history.submissionEvents(
                    workspace: caller.workspace, after: after, form: form, since: bounds[0], until: bounds[1], limit: limit + 1)
                let page = events.prefix(limit)
                var body = Data("{\"submissions\":[".utf8)
                for (offset, event) in page.enumerated() {
                    if offset > 0 { body.append(0x2C) }
                    body.append(try json(event))
                }
                body.append(contentsOf: "],\"cursor\":".utf8)
                body.append(WireSyntax.jsonBytes(WireSyntax.submissionsCursor(page.last?.seq ?? after)))
                body.append(contentsOf: ",\"more\":\(events.count > limit)}".utf8)
                return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
            } catch {
                return failure(error, "submissions feed")
            }
        }
    }

    /// One event as the feed and webhooks carry it (`SubmissionEvent`): the stored payload's
    /// own bytes as its `record`.
    func json(_ event: StoredDocumentEvent) throws -> Data {
        let described = SubmissionEvent(
            eventID: event.id, event: event.event, documentID: event.documentID, form: event.form, formVersion: event.formVersion,
            id: event.entityID, version: event.version, author: event.author.wire, record: nil,
            files: event.payload == nil ? nil : try files(of: event), review: HistoryService.review(event))
        var body = try Self.encoder.encode(described)
        if let payload = event.payload, body.last == 0x7D {
            body.removeLast()
            body.append(contentsOf: ",\"record\":".utf8)
            body.append(payload)
            body.append(0x7D)
        }
        return body
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The files a version's payload names, stored or pending, as its form's rules find them.
    func files(of event: StoredDocumentEvent) throws -> [SubmissionEvent.File] {
        guard let entry = registry[event.form], var payload = event.payload else { return [] }
        if event.formVersion < entry.version, let upgraded = try? entry.upgrade(payload, from: event.formVersion) { payload = upgraded }
        let (_, uses) = FormClock.$current.withValue(.unknown) { FileUse.gathering { try? entry.admit(payload) } }
        var found: [SubmissionEvent.File] = []
        for use in uses {
            let ref = use.ref
            if ref.isPending {
                found.append(
                    SubmissionEvent.File(
                        pointer: use.pointer, state: .pending, fileID: nil, digest: ref.digest, byteCount: ref.byteCount,
                        contentType: ref.contentType))
            } else if ref.id > 0 {
                let stored = try store.storedFile(id: ref.id)
                found.append(
                    SubmissionEvent.File(
                        pointer: use.pointer, state: .stored, fileID: ref.id, digest: stored.map { WireSyntax.digestHeader($0.digest) },
                        byteCount: stored?.byteCount ?? ref.byteCount, contentType: stored?.contentType ?? ref.contentType))
            }
        }
        return found
    }
}
