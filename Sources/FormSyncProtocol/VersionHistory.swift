/// A document's or a record's history, oldest first (`GET /documents/{id}/history`,
/// `GET /records/{type}/{id}/history`, back office): each version with its author and the
/// fields it changed, and for a document each review.
public struct VersionHistory: Codable, Sendable, Equatable {
    /// The document's identity, for a document's history.
    public var documentID: String?
    /// The record's type, for a record's history.
    public var type: String?
    /// The document's or the record's id.
    public var id: Int64
    public var entries: [Entry]
    /// Whether older entries were left out (a history holds at most `maxEntries`, the newest).
    public var truncated: Bool

    /// The most entries a history reply holds.
    public static let maxEntries = 1000

    /// One point of the history.
    public struct Entry: Codable, Sendable, Equatable {
        public var event: HistoryEvent
        /// The version the event made (or, for a review, the version reviewed; for a deletion,
        /// the last version).
        public var version: Int
        public var author: ChangeAuthor
        /// The fields the version changed against the one before (empty for a first version
        /// and a review).
        public var changes: [FieldChange]
        public var review: Review?

        public init(event: HistoryEvent, version: Int, author: ChangeAuthor, changes: [FieldChange], review: Review?) {
            self.event = event
            self.version = version
            self.author = author
            self.changes = changes
            self.review = review
        }
    }

    public init(documentID: String?, type: String?, id: Int64, entries: [Entry], truncated: Bool) {
        self.documentID = documentID
        self.type = type
        self.id = id
        self.entries = entries
        self.truncated = truncated
    }

    enum CodingKeys: String, CodingKey {
        case documentID = "document_id"
        case type, id, entries, truncated
    }
}
