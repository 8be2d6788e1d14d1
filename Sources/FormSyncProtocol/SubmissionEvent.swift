/// One event of a document, as the submissions feed (`GET /submissions`) and webhooks carry it
/// (docs/PROTOCOL.md, "The submissions feed"): a version accepted, edited or completed by a
/// file, with its payload and files, or a review of one.
public struct SubmissionEvent: Codable, Sendable, Equatable {
    /// The event's id, unique in the server and the same in every delivery of it: a receiver
    /// drops a duplicate by it.
    public var eventID: Int64
    public var event: HistoryEvent
    public var documentID: String
    public var form: String
    /// The version of the form's shape the payload has.
    public var formVersion: Int
    /// The document's id (the id of the record it created, if it created one).
    public var id: Int64
    /// The version the event made, or the version reviewed.
    public var version: Int
    public var author: ChangeAuthor
    /// The payload of that version (absent for a review).
    public var record: WireValue?
    /// The files the payload names (absent for a review).
    public var files: [File]?
    /// The review, for a `reviewed` event.
    public var review: Review?

    /// A file a version names: stored (with its id and digest) or still pending (named by its
    /// digest; its bytes have not arrived).
    public struct File: Codable, Sendable, Equatable {
        public enum State: String, Codable, Sendable {
            case stored, pending
        }

        /// Where the reference sits in the payload (a JSON Pointer).
        public var pointer: String
        public var state: State
        /// The stored file's id (`GET /files/{id}`); absent while pending.
        public var fileID: Int64?
        /// `sha-256=:<base64>:` of the bytes.
        public var digest: String?
        public var byteCount: Int64?
        public var contentType: String?

        public init(pointer: String, state: State, fileID: Int64?, digest: String?, byteCount: Int64?, contentType: String?) {
            self.pointer = pointer
            self.state = state
            self.fileID = fileID
            self.digest = digest
            self.byteCount = byteCount
            self.contentType = contentType
        }

        enum CodingKeys: String, CodingKey {
            case pointer, state
            case fileID = "file_id"
            case digest
            case byteCount = "byte_count"
            case contentType = "content_type"
        }
    }

    public init(
        eventID: Int64, event: HistoryEvent, documentID: String, form: String, formVersion: Int, id: Int64, version: Int,
        author: ChangeAuthor, record: WireValue?, files: [File]?, review: Review?
    ) {
        self.eventID = eventID
        self.event = event
        self.documentID = documentID
        self.form = form
        self.formVersion = formVersion
        self.id = id
        self.version = version
        self.author = author
        self.record = record
        self.files = files
        self.review = review
    }

    enum CodingKeys: String, CodingKey {
        case eventID = "event_id"
        case event
        case documentID = "document_id"
        case form
        case formVersion = "form_version"
        case id, version, author, record, files, review
    }
}

/// A page of the submissions feed: its events in commit order, the cursor the next page begins
/// after, and whether more follow now.
public struct SubmissionsPage: Codable, Sendable, Equatable {
    public var submissions: [SubmissionEvent]
    public var cursor: String
    public var more: Bool

    /// The most events a page holds (`limit` above it is served as it).
    public static let maxLimit = 500

    public init(submissions: [SubmissionEvent], cursor: String, more: Bool) {
        self.submissions = submissions
        self.cursor = cursor
        self.more = more
    }
}
