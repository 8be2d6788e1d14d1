import FormSyncProtocol
import Foundation

/// One event of a document as the store keeps it: a version (with its payload) or a review.
package struct StoredDocumentEvent: Sendable, Equatable {
    /// Unique in the server; what webhooks and the feed name the event by.
    package var id: Int64
    /// Its place in the submissions feed (commit order); 0 until it has one.
    package var seq: Int64
    package var workspace: String
    package var documentID: String
    /// The document's numeric id.
    package var entityID: Int64
    package var form: String
    package var formVersion: Int
    package var event: HistoryEvent
    package var version: Int
    /// The version's payload; nil for a review.
    package var payload: Data?
    package var author: Authorship
    package var review: StoredReview?
    /// The principal who created the document (whose devices a review reaches).
    package var owner: String?

    package init(
        id: Int64 = 0, seq: Int64 = 0, workspace: String, documentID: String, entityID: Int64, form: String, formVersion: Int,
        event: HistoryEvent, version: Int, payload: Data?, author: Authorship, review: StoredReview?, owner: String?
    ) {
        self.owner = owner
        self.id = id
        self.seq = seq
        self.workspace = workspace
        self.documentID = documentID
        self.entityID = entityID
        self.form = form
        self.formVersion = formVersion
        self.event = event
        self.version = version
        self.payload = payload
        self.author = author
        self.review = review
    }
}

/// A review's verdict and words as the store keeps them (the reviewer is the event's author).
package struct StoredReview: Sendable, Equatable {
    package var verdict: Review.Verdict
    package var comment: String
    package var issues: [Review.Issue]

    package init(verdict: Review.Verdict, comment: String, issues: [Review.Issue]) {
        self.verdict = verdict
        self.comment = comment
        self.issues = issues
    }

    /// The issues as stored (a JSON array).
    package var issuesJSON: Data { (try? JSONEncoder().encode(issues)) ?? Data("[]".utf8) }

    package static func issues(from json: Data?) -> [Review.Issue] {
        json.flatMap { try? JSONDecoder().decode([Review.Issue].self, from: $0) } ?? []
    }
}

/// One version of a record as the store keeps it.
package struct StoredRecordVersion: Sendable, Equatable {
    package var workspace: String
    package var type: String
    package var id: Int64
    package var version: Int
    package var event: HistoryEvent
    /// The record's payload at that version; nil for a deletion.
    package var payload: Data?
    package var author: Authorship

    package init(workspace: String, type: String, id: Int64, version: Int, event: HistoryEvent, payload: Data?, author: Authorship) {
        self.workspace = workspace
        self.type = type
        self.id = id
        self.version = version
        self.event = event
        self.payload = payload
        self.author = author
    }
}

/// Where the server keeps every version of documents and records with its author, and the
/// reviews of documents (docs/PROTOCOL.md, "History" and "The submissions feed"). Part of every
/// `ServerStore`, written in the same transaction as the version itself.
package protocol HistoryStore: AnyObject, Sendable {
    /// Adds a document's event; its id. It joins the submissions feed once it commits (in
    /// commit order across nodes).
    func addDocumentEvent(_ event: StoredDocumentEvent) throws -> Int64
    /// `addDocumentEvent` for a caller that needs no id: a store may send it with the
    /// transaction's next statement (an error it raises then fails that statement, and the
    /// transaction).
    func noteDocumentEvent(_ event: StoredDocumentEvent) throws
    /// The newest `limit` events of one document, oldest first.
    func documentEvents(document documentID: String, limit: Int) throws -> [StoredDocumentEvent]
    /// One event by its id.
    func documentEvent(id: Int64) throws -> StoredDocumentEvent?
    /// The event that made the document's current version (not a review), if any.
    func latestVersionEvent(document documentID: String) throws -> StoredDocumentEvent?
    /// Up to `limit` events of `workspace` after feed position `cursor`, in commit order, of
    /// `form` alone when given, and committed in `since ..< until` (server milliseconds) when given.
    func submissionEvents(
        workspace: String, after cursor: Int64, form: String?, since: Int64?, until: Int64?, limit: Int
    ) throws
        -> [StoredDocumentEvent]
    /// Up to `limit` reviews after feed position `cursor` of documents `principal` created in
    /// `workspace`, in commit order.
    func reviews(workspace: String, principal: String, after cursor: Int64, limit: Int) throws -> [StoredDocumentEvent]
    /// The newest `limit` events of `workspace` (of `form` alone when given), newest first.
    func recentEvents(workspace: String, form: String?, limit: Int) throws -> [StoredDocumentEvent]
    /// The highest feed position handed out.
    func lastSubmissionEvent() throws -> Int64
    /// Adds a record's version.
    func addRecordVersion(_ version: StoredRecordVersion) throws
    /// The newest `limit` versions of one record (across a deletion and a re-creation), oldest first.
    func recordVersions(workspace: String, type: String, id: Int64, limit: Int) throws -> [StoredRecordVersion]
}

extension HistoryStore {
    package func noteDocumentEvent(_ event: StoredDocumentEvent) throws { _ = try addDocumentEvent(event) }
}
