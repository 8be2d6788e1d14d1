import Foundation

/// Where a device keeps its credentials between launches: its device id, its grant, the
/// server it enrolled with and its current refresh token (never an access token: those live in
/// memory only). On Apple platforms an app may keep them in the Keychain with a vault of its
/// own; `FileCredentialVault` is a file only its owner reads. Calls are made off the
/// cooperative pool, one at a time.
public protocol CredentialVault: Sendable {
    /// What was saved last; nil when nothing was (or it was erased).
    func load() throws -> StoredCredentials?
    /// Replaces what is kept, durably, before it returns; nil erases it.
    func save(_ credentials: StoredCredentials?) throws
}

/// What a device keeps of its credentials.
public struct StoredCredentials: Codable, Sendable, Equatable {
    /// The server's base URL the device enrolled with: the only place its tokens go.
    public var server: String
    public var deviceID: String
    public var principal: String
    public var role: String
    public var workspaces: [String]
    public var refreshToken: String
    /// When the server said the device was revoked, and why; nil while it is not.
    public var revokedReason: String?

    public init(
        server: String, deviceID: String, principal: String, role: String, workspaces: [String], refreshToken: String,
        revokedReason: String? = nil
    ) {
        self.server = server
        self.deviceID = deviceID
        self.principal = principal
        self.role = role
        self.workspaces = workspaces
        self.refreshToken = refreshToken
        self.revokedReason = revokedReason
    }
}
