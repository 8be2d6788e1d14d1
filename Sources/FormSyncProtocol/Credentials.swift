/// What `POST /auth/enrol` and `POST /auth/refresh` answer: a short-lived access token, and the
/// refresh token that replaces the one sent (refresh tokens rotate: the one sent is retired).
/// The device keeps the new refresh token before it uses the access token; a reply it never
/// read can be asked for again with the retired token, as long as the new one was never used
/// (docs/PROTOCOL.md, "Devices and credentials").
public struct Credentials: Codable, Sendable, Equatable {
    /// The server's id of this device: what the back office revokes.
    public var deviceID: String
    public var principal: String
    /// The device's role (`device` or `back-office`).
    public var role: String
    public var workspaces: [String]
    public var accessToken: String
    /// Always `Bearer`.
    public var tokenType: String
    /// Seconds the access token lives.
    public var expiresIn: Int64
    public var refreshToken: String
    /// Seconds the refresh token lives unless it is used (each refresh starts it again).
    public var refreshExpiresIn: Int64

    public init(
        deviceID: String, principal: String, role: String, workspaces: [String], accessToken: String, expiresIn: Int64,
        refreshToken: String, refreshExpiresIn: Int64
    ) {
        self.deviceID = deviceID
        self.principal = principal
        self.role = role
        self.workspaces = workspaces
        self.accessToken = accessToken
        self.tokenType = "Bearer"
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.refreshExpiresIn = refreshExpiresIn
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case principal, role, workspaces
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case refreshExpiresIn = "refresh_expires_in"
    }
}
