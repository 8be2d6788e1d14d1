/// What `POST /auth/enrolments` answers: the single-use code, shown to a person once (the server
/// keeps only its digest), and what it enrols.
public struct Enrolment: Codable, Sendable, Equatable {
    /// The code in groups of four (`EnrolmentCode`).
    public var code: String
    public var principal: String
    public var role: String
    public var workspace: String
    /// When the code stops being taken (RFC 3339, UTC).
    public var expiresAt: String

    public init(code: String, principal: String, role: String, workspace: String, expiresAt: String) {
        self.code = code
        self.principal = principal
        self.role = role
        self.workspace = workspace
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case code, principal, role, workspace
        case expiresAt = "expires_at"
    }
}
