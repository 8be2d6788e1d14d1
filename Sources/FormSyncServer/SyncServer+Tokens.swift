import Foundation

/// Who may do what (docs/PROTOCOL.md, "Access rules"; the rules themselves are `AccessControl`):
/// the roles, the grants tokens carry, and issuing tokens.
extension SyncServer {
    /// What a token's holder is.
    public enum Role: String, Sendable, CaseIterable {
        /// A device acting for its principal: its own documents, files and uploads, and the
        /// records of its scope.
        case device
        /// The back office: every document and record of its workspaces, every scope.
        case backOffice = "back-office"
    }

    /// What a token allows: who it acts for, in which role, in which workspaces.
    public struct Grant: Sendable, Equatable {
        public var principal: String
        public var workspaces: [String]
        public var role: Role

        public init(principal: String, workspaces: [String], role: Role = .device) {
            self.principal = principal
            self.workspaces = workspaces
            self.role = role
        }
    }

    /// A grant that could never be used, refused when a token is issued for it.
    public struct GrantError: Error, CustomStringConvertible, Equatable {
        public var reason: String
        public var description: String { "cannot issue a token: \(reason)" }
    }

    /// A refresh token a device trades for access tokens at `/auth/refresh`, for `grant`'s
    /// principal, role and workspaces (access tokens obtained with it carry the same grant).
    /// The server stores only its digest.
    public func issueRefreshToken(_ grant: Grant) throws -> String {
        let access = AccessControl(context: context)
        return try access.locked { try access.issueToken(kind: "refresh", grant: grant, expiresAt: Int64.max) }
    }

    /// A refresh token for `principal` in `workspaces` (see `issueRefreshToken(_:)`).
    public func issueRefreshToken(principal: String = "default", workspaces: [String], role: Role = .device) throws -> String {
        try issueRefreshToken(Grant(principal: principal, workspaces: workspaces, role: role))
    }

    /// An access token valid for the configured lifetime, carrying `grant`.
    public func issueAccessToken(_ grant: Grant) throws -> String {
        let access = AccessControl(context: context)
        return try access.locked { try access.issueAccessTokenLocked(grant) }
    }

    /// An access token for `principal` in `workspaces` (see `issueAccessToken(_:)`).
    public func issueAccessToken(principal: String = "default", workspaces: [String], role: Role = .device) throws -> String {
        try issueAccessToken(Grant(principal: principal, workspaces: workspaces, role: role))
    }

    /// Expires every access token now, as if they had all aged out.
    public func expireAccessTokens() {
        store.exclusive { store.expireAccessTokens(at: context.now()) }
        context.accessTokens.removeAll()
    }
}
