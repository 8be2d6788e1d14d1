/// What the back office sends to review a document (`POST /documents/{id}/reviews`).
public struct ReviewRequest: Codable, Sendable, Equatable {
    public var verdict: Review.Verdict
    /// The version reviewed (the document's ETag's number); a document edited since is refused
    /// (`412 stale-version`), so a verdict never lands on a version nobody read. Absent: the
    /// current version.
    public var version: Int?
    /// Words for the person (at most `maxCommentCharacters`).
    public var comment: String?
    /// The fields at fault (at most `maxIssues`); "has issues" needs a comment or one issue.
    public var issues: [Review.Issue]?

    public static let maxCommentCharacters = 2000
    public static let maxIssues = 100
    /// The longest issue's detail and pointer, in characters.
    public static let maxIssueCharacters = 500

    public init(verdict: Review.Verdict, version: Int? = nil, comment: String? = nil, issues: [Review.Issue]? = nil) {
        self.verdict = verdict
        self.version = version
        self.comment = comment
        self.issues = issues
    }

    /// Why the server refuses it, or nil.
    public var problem: String? {
        if let comment, comment.count > Self.maxCommentCharacters {
            return "comment is at most \(Self.maxCommentCharacters) characters"
        }
        let issues = issues ?? []
        if issues.count > Self.maxIssues { return "at most \(Self.maxIssues) issues" }
        for issue in issues {
            if issue.detail.isEmpty || issue.detail.count > Self.maxIssueCharacters || issue.pointer.count > Self.maxIssueCharacters {
                return "an issue has a detail of 1 to \(Self.maxIssueCharacters) characters and a pointer of at most as many"
            }
            if !(issue.pointer == "#" || issue.pointer.hasPrefix("#/")) {
                return "an issue's pointer is a JSON Pointer as a URI fragment (\"#/field\"), or \"#\" for the whole document"
            }
        }
        if verdict == .hasIssues, (comment ?? "").isEmpty, issues.isEmpty {
            return "a has-issues verdict says what to fix: a comment or at least one issue"
        }
        if let version, version < 1 { return "version is a document version, 1 or more" }
        return nil
    }
}
