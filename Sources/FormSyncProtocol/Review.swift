/// A back-office verdict on one version of a document (`POST /documents/{id}/reviews`,
/// docs/PROTOCOL.md, "Review"). It reaches the device that submitted the document in its next
/// pull (`FeedPage.reviews`); "has issues" reopens the document there for its person to fix.
public struct Review: Codable, Sendable, Equatable {
    public enum Verdict: String, Codable, Sendable, CaseIterable {
        case approved
        /// The person who submitted it should fix what `issues` names and send it again.
        case hasIssues = "has-issues"
        case rejected
    }

    /// One field the reviewer points at.
    public struct Issue: Codable, Sendable, Equatable {
        /// A JSON Pointer into the payload as a URI fragment, as field errors name fields
        /// (`#/photo`), or `#` for the whole document.
        public var pointer: String
        public var detail: String

        public init(pointer: String, detail: String) {
            self.pointer = pointer
            self.detail = detail
        }
    }

    /// The review's own id (unique in the server).
    public var id: Int64
    public var documentID: String
    /// The version reviewed.
    public var version: Int
    public var verdict: Verdict
    public var comment: String
    public var issues: [Issue]
    /// The back-office principal who reviewed it.
    public var reviewer: String
    /// When (RFC 3339, the server's clock).
    public var at: String

    public init(
        id: Int64, documentID: String, version: Int, verdict: Verdict, comment: String, issues: [Issue], reviewer: String, at: String
    ) {
        self.id = id
        self.documentID = documentID
        self.version = version
        self.verdict = verdict
        self.comment = comment
        self.issues = issues
        self.reviewer = reviewer
        self.at = at
    }

    enum CodingKeys: String, CodingKey {
        case id
        case documentID = "document_id"
        case version, verdict, comment, issues, reviewer, at
    }
}
