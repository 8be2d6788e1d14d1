/// The body of `POST /auth/enrolments`: the back office asks for a code that enrols one device
/// for `principal`, in the workspace the request names, in `role`.
public struct EnrolmentRequest: Codable, Sendable, Equatable {
    public var principal: String
    /// `device` (the default) or `back-office`.
    public var role: String?
    /// Seconds the code stays valid (`CredentialRules.enrolmentSeconds`; an hour by default).
    public var expiresIn: Int64?

    public init(principal: String, role: String? = nil, expiresIn: Int64? = nil) {
        self.principal = principal
        self.role = role
        self.expiresIn = expiresIn
    }

    enum CodingKeys: String, CodingKey {
        case principal, role
        case expiresIn = "expires_in"
    }
}
