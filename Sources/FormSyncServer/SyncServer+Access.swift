import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The access rules (docs/PROTOCOL.md, "Access rules"): a token is issued to one principal, in
/// one role, for an explicit list of workspaces, and every request but `GET /health` and
/// `POST /auth/refresh` must name one of those workspaces in `FormSync-Workspace`. Inside it, a
/// device reads and edits only what its own principal created (and the records of its scope);
/// the back office reads and edits everything of the workspace. Nothing crosses a workspace.
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

    /// Who a request acts for, once it passed the access rules.
    struct Caller {
        var principal: String
        var role: Role
        /// The workspace it named, one its token was issued for.
        var workspace: String

        /// Whether it may read or edit what `owner` created.
        func owns(_ owner: String?) -> Bool { role == .backOffice || owner == principal }

        /// Whether it may see a record of `scope`.
        func sees(scope: String) -> Bool { role == .backOffice || scope.isEmpty || scope == principal }

        /// The principal whose scope the change feed is cut to; nil for the back office (all).
        var feedPrincipal: String? { role == .backOffice ? nil : principal }
    }

    /// A request's caller, or the reply that refuses it.
    enum CallerCheck {
        case allowed(Caller)
        case refused(HTTPResponse)
    }

    /// The caller of `request`, or the reply that refuses it: `401` for a missing, unknown or
    /// expired token, `400 bad-workspace` for a missing or malformed `FormSync-Workspace`, `421`
    /// for a workspace this server does not host, `403 workspace-forbidden` for one the token was
    /// not issued for.
    func caller(of request: HTTPRequest) -> CallerCheck {
        do {
            return caller(of: request, grant: try grant(of: request))
        } catch {
            FileHandle.standardError.write(Data("formsync server: the token could not be looked up: \(error)\n".utf8))
            return .refused(Self.storeUnavailable())
        }
    }

    /// The reply to a request that failed with `error`: `503` when the store cannot answer now
    /// (retried by the client), `500` otherwise; either way the details (paths, SQL) go to
    /// the server's log under a reference, never to the client.
    func failure(_ error: any Error, _ context: String = "error") -> HTTPResponse {
        let reference = UUID().uuidString.lowercased()
        FileHandle.standardError.write(Data("formsync server: \(context) \(reference): \(error)\n".utf8))
        if store.isUnavailable(error) { return Self.storeUnavailable() }
        return .problem(.internal, detail: "an internal error occurred (reference \(reference))")
    }

    /// The store could not answer (its database is down or restarting): transient, retried.
    static func storeUnavailable() -> HTTPResponse {
        .problem(
            .busy, detail: "the server's database is not available; retry",
            headers: [("Retry-After", "1")])
    }

    private func caller(of request: HTTPRequest, grant: Grant?) -> CallerCheck {
        if let refusal = misdirected(request) { return .refused(refusal) }
        guard let grant else { return .refused(unauthorized()) }
        guard let workspace = request.header("formsync-workspace"), Self.isIdentifier(workspace) else {
            return .refused(
                .problem(.badWorkspace, detail: "FormSync-Workspace is required: 1 to 128 characters from A-Z a-z 0-9 - . _ ~ :"))
        }
        guard grant.workspaces.contains(workspace) else {
            return .refused(
                .problem(.workspaceForbidden, detail: "this token is not issued for workspace \(workspace)"))
        }
        return .allowed(Caller(principal: grant.principal, role: grant.role, workspace: workspace))
    }

    /// The grant of the request's access token, when it is valid now.
    func grant(of request: HTTPRequest) throws -> Grant? {
        guard let token = Self.bearerToken(request) else { return nil }
        // Nodes sharing a store cache nothing: another node may revoke the token at any time.
        let cached = store.sharedAcrossNodes ? nil : accessTokens.entry(token)
        return try (cached ?? locked { try accessGrant(token) }).flatMap(valid)
    }

    /// An access token as the grants table holds it, cached once found when no other node
    /// shares the store.
    private func accessGrant(_ token: String) throws -> AccessTokenCache.Entry? {
        guard let found = try store.grant(ofToken: token, kind: "access") else { return nil }
        let entry = AccessTokenCache.Entry(grant: found.grant, expiresAt: found.expiresAt)
        if !store.sharedAcrossNodes { accessTokens.insert(token, entry) }
        return entry
    }

    /// The grant of a known token that has not expired by the server's clock.
    private func valid(_ known: AccessTokenCache.Entry) -> Grant? {
        known.expiresAt > now() ? known.grant : nil
    }

    static func bearerToken(_ request: HTTPRequest) -> String? {
        guard let header = request.header("authorization"), header.hasPrefix("Bearer "), header.utf8.count <= 512 else { return nil }
        return String(header.dropFirst("Bearer ".count))
    }

    func unauthorized() -> HTTPResponse {
        .problem(.badToken, detail: "a valid bearer token is required", headers: [("WWW-Authenticate", "Bearer")])
    }

    func misdirected(_ request: HTTPRequest) -> HTTPResponse? {
        // A malformed name is no workspace at all: `400 bad-workspace` (the caller's check says
        // so), as on a server of several workspaces.
        guard let workspace, let named = request.header("formsync-workspace"), named != workspace, request.path != "/health",
            Self.isIdentifier(named)
        else {
            return nil
        }
        return .problem(.wrongWorkspace, detail: "this server hosts workspace \(workspace), not \(named)")
    }

    // MARK: Issuing

    /// A refresh token a device trades for access tokens at `/auth/refresh`, for `grant`'s
    /// principal, role and workspaces (access tokens obtained with it carry the same grant).
    /// The server stores only its digest.
    public func issueRefreshToken(_ grant: Grant) throws -> String {
        try locked { try issueToken(kind: "refresh", grant: grant, expiresAt: Int64.max) }
    }

    /// A refresh token for `principal` in `workspaces` (see `issueRefreshToken(_:)`).
    public func issueRefreshToken(principal: String = "default", workspaces: [String], role: Role = .device) throws -> String {
        try issueRefreshToken(Grant(principal: principal, workspaces: workspaces, role: role))
    }

    /// An access token valid for the configured lifetime, carrying `grant`.
    public func issueAccessToken(_ grant: Grant) throws -> String {
        try locked { try issueAccessTokenLocked(grant) }
    }

    /// An access token for `principal` in `workspaces` (see `issueAccessToken(_:)`).
    public func issueAccessToken(principal: String = "default", workspaces: [String], role: Role = .device) throws -> String {
        try issueAccessToken(Grant(principal: principal, workspaces: workspaces, role: role))
    }

    func issueAccessTokenLocked(_ grant: Grant) throws -> String {
        try issueToken(kind: "access", grant: grant, expiresAt: now().addingReportingOverflow(tokenLifetimeMilliseconds).partialValue)
    }

    /// A grant that could never be used, refused when a token is issued for it.
    public struct GrantError: Error, CustomStringConvertible, Equatable {
        public var reason: String
        public var description: String { "cannot issue a token: \(reason)" }
    }

    private func issueToken(kind: String, grant: Grant, expiresAt: Int64) throws -> String {
        guard !grant.workspaces.isEmpty else { throw GrantError(reason: "it names no workspace") }
        for workspace in grant.workspaces where !Self.isIdentifier(workspace) {
            throw GrantError(reason: "workspace \"\(workspace.prefix(40))\" is not 1 to 128 characters from A-Z a-z 0-9 - . _ ~ :")
        }
        guard (1...128).contains(grant.principal.utf8.count), !grant.principal.contains("\n") else {
            throw GrantError(reason: "a principal is 1 to 128 bytes on one line")
        }
        let token = (kind == "access" ? "a-" : "r-") + UUID().uuidString.lowercased() + "-" + UUID().uuidString.lowercased()
        try store.addToken(token, kind: kind, grant: grant, expiresAt: expiresAt)
        return token
    }
}
