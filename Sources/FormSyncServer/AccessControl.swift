import FormSyncHTTP
import FormSyncModel
import FormSyncProtocol
import Foundation

/// The access rules (docs/PROTOCOL.md, "Access rules"): a token is issued to one principal, in
/// one role, for an explicit list of workspaces, and every request but `GET /health` and
/// `POST /auth/refresh` must name one of those workspaces in `FormSync-Workspace`. Inside it, a
/// device reads and edits only what its own principal created (and the records of its scope);
/// the back office reads and edits everything of the workspace. Nothing crosses a workspace.
/// It also issues tokens and answers `POST /auth/refresh`.
struct AccessControl: ServerPart {
    let context: ServerContext

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

    private func caller(of request: HTTPRequest, grant: SyncServer.Grant?) -> CallerCheck {
        if let refusal = misdirected(request) { return .refused(refusal) }
        guard let grant else { return .refused(unauthorized()) }
        guard let workspace = request.header("formsync-workspace"), WireSyntax.isIdentifier(workspace) else {
            return .refused(.problem(.badWorkspace, detail: "FormSync-Workspace is required: \(WireSyntax.identifierRule)"))
        }
        guard grant.workspaces.contains(workspace) else {
            return .refused(.problem(.workspaceForbidden, detail: "this token is not issued for workspace \(workspace)"))
        }
        return .allowed(Caller(principal: grant.principal, role: grant.role, workspace: workspace))
    }

    /// The grant of the request's access token, when it is valid now.
    func grant(of request: HTTPRequest) throws -> SyncServer.Grant? {
        guard let token = Self.bearerToken(request) else { return nil }
        // Nodes sharing a store cache nothing: another node may revoke the token at any time.
        let cached = store.sharedAcrossNodes ? nil : context.accessTokens.entry(token)
        return try (cached ?? locked { try accessGrant(token) }).flatMap(valid)
    }

    /// An access token as the grants table holds it, cached once found when no other node
    /// shares the store.
    private func accessGrant(_ token: String) throws -> AccessTokenCache.Entry? {
        guard let found = try store.grant(ofToken: token, kind: "access") else { return nil }
        let entry = AccessTokenCache.Entry(grant: found.grant, expiresAt: found.expiresAt)
        if !store.sharedAcrossNodes { context.accessTokens.insert(token, entry) }
        return entry
    }

    /// The grant of a known token that has not expired by the server's clock.
    private func valid(_ known: AccessTokenCache.Entry) -> SyncServer.Grant? {
        known.expiresAt > now() ? known.grant : nil
    }

    static func bearerToken(_ request: HTTPRequest) -> String? {
        guard let header = request.header("authorization"), header.hasPrefix("Bearer "), header.utf8.count <= 512 else { return nil }
        return String(header.dropFirst("Bearer ".count))
    }

    func unauthorized() -> HTTPResponse {
        .problem(.badToken, detail: "a valid bearer token is required", headers: [("WWW-Authenticate", "Bearer")])
    }

    /// `421 wrong-workspace` for a request naming a workspace other than the one this server
    /// hosts. A malformed name is no workspace at all: `400 bad-workspace` (the caller's check
    /// says so), as on a server of several workspaces.
    func misdirected(_ request: HTTPRequest) -> HTTPResponse? {
        guard let workspace = context.workspace, let named = request.header("formsync-workspace"), named != workspace,
            request.path != "/health", WireSyntax.isIdentifier(named)
        else {
            return nil
        }
        return .problem(.wrongWorkspace, detail: "this server hosts workspace \(workspace), not \(named)")
    }

    /// A refusal when `documentID` already belongs to another workspace, another principal
    /// (unless the caller is the back office) or another form (a file when `form` is nil): a
    /// document id is bound to all three for good. The workspace is checked first and the form
    /// last, so that nobody learns anything of a document that is not theirs.
    func boundElsewhere(_ documentID: String, form: String?, caller: Caller) -> HTTPResponse? {
        guard let owner = store.owner(of: documentID) else { return nil }
        if owner.workspace != caller.workspace {
            return .problem(.documentWorkspaceMismatch, detail: "document \(documentID) belongs to another workspace")
        }
        if !caller.owns(owner.principal) {
            return .problem(.documentPrincipalMismatch, detail: "document \(documentID) belongs to another principal")
        }
        if owner.form != form {
            return .problem(
                .documentFormMismatch,
                detail: "document \(documentID) belongs to \(owner.form ?? "a file upload"), not \(form ?? "a file upload")")
        }
        return nil
    }

    // MARK: Tokens

    /// `POST /auth/refresh`: a new access token for a known refresh token.
    func refresh(_ request: HTTPRequest) -> HTTPResponse {
        guard let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            let refreshToken = object["refresh_token"] as? String
        else { return .problem(.malformed, detail: "send {\"refresh_token\": \"…\"}") }
        return locked {
            let stored: StoredGrant?
            do {
                stored = refreshToken.utf8.count <= 512 ? try store.grant(ofToken: refreshToken, kind: "refresh") : nil
            } catch {
                return Self.storeUnavailable()
            }
            guard let found = stored, found.expiresAt > now() else {
                return .problem(.badToken, detail: "unknown refresh token")
            }
            guard let token = try? issueAccessTokenLocked(found.grant) else {
                return .problem(.internal, detail: "the server could not store the token")
            }
            return .json(200, ["access_token": token, "token_type": "Bearer", "expires_in": context.tokenLifetimeMilliseconds / 1000])
        }
    }

    /// An access token valid for the configured lifetime; runs under the lock.
    func issueAccessTokenLocked(_ grant: SyncServer.Grant) throws -> String {
        try issueToken(
            kind: "access", grant: grant, expiresAt: now().addingReportingOverflow(context.tokenLifetimeMilliseconds).partialValue)
    }

    /// A new token of `kind` for `grant`, stored by its digest; runs under the lock.
    func issueToken(kind: String, grant: SyncServer.Grant, expiresAt: Int64) throws -> String {
        guard !grant.workspaces.isEmpty else { throw SyncServer.GrantError(reason: "it names no workspace") }
        for workspace in grant.workspaces where !WireSyntax.isIdentifier(workspace) {
            throw SyncServer.GrantError(reason: "workspace \"\(workspace.prefix(40))\" is not \(WireSyntax.identifierRule)")
        }
        guard (1...128).contains(grant.principal.utf8.count), !grant.principal.contains("\n") else {
            throw SyncServer.GrantError(reason: "a principal is 1 to 128 bytes on one line")
        }
        let token = (kind == "access" ? "a-" : "r-") + UUID().uuidString.lowercased() + "-" + UUID().uuidString.lowercased()
        try store.addToken(token, kind: kind, grant: grant, expiresAt: expiresAt)
        return token
    }
}
