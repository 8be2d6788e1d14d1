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

    /// The caller of `request`, or the reply that refuses it: `401` for a missing or unknown
    /// token (`bad-token`), an expired one (`token-expired`) or a revoked device's
    /// (`device-revoked`), `400 bad-workspace` for a missing or malformed `FormSync-Workspace`,
    /// `421` for a workspace this server does not host, `403 workspace-forbidden` for one the
    /// token was not issued for.
    func caller(of request: HTTPRequest) -> CallerCheck {
        guard let check = lookUp(request) else { return .refused(Self.storeUnavailable()) }
        return caller(of: request, token: check)
    }

    /// What the request's token is worth now; nil (said on standard error) when the store could
    /// not answer.
    private func lookUp(_ request: HTTPRequest) -> TokenCheck? {
        do {
            return try tokenCheck(of: request)
        } catch {
            FileHandle.standardError.write(Data("formsync server: the token could not be looked up: \(error)\n".utf8))
            return nil
        }
    }

    /// The caller of a document write, and (on a store shared across nodes) the token it was
    /// found by, for the write's transaction to check again: there the look-up the request's
    /// preflight made (`HeadCheck`) is taken as it is, since the transaction checks it anyway.
    func writer(of request: HTTPRequest) -> (CallerCheck, TokenProof?) {
        guard let (found, head) = sharedCaller(of: request, reusing: request.preflightNote as? HeadCheck) else {
            return (caller(of: request), nil)
        }
        guard case .allowed = found, let head, case .valid(let grant, let device) = head.check else { return (found, nil) }
        return (found, TokenProof(digest: StoredGrant.digest(head.token), grant: grant, device: device))
    }

    /// What a request's preflight found of its access token, handed on with the request
    /// (`HTTPRequest.preflightNote`) so that its write does not look the token up again.
    struct HeadCheck: Sendable {
        let token: String
        let check: TokenCheck
    }

    /// The caller of a request's head, and what its write may take on from it (see `writer(of:)`).
    func preflightCaller(of head: HTTPRequest) -> (CallerCheck, HeadCheck?) {
        sharedCaller(of: head, reusing: nil) ?? (caller(of: head), nil)
    }

    /// On a store shared across nodes, the caller of a request that carries a bearer token and
    /// what its token was found to be: `reused` when it is of the same token, else looked up
    /// now. Nil elsewhere (the cached look-up of `caller(of:)` serves).
    private func sharedCaller(of request: HTTPRequest, reusing reused: HeadCheck?) -> (CallerCheck, HeadCheck?)? {
        guard store.sharedAcrossNodes, let token = Self.bearerToken(request) else { return nil }
        guard let check = reused?.token == token ? reused?.check : lookUp(request) else {
            return (.refused(Self.storeUnavailable()), nil)
        }
        return (caller(of: request, token: check), HeadCheck(token: token, check: check))
    }

    private func caller(of request: HTTPRequest, token: TokenCheck) -> CallerCheck {
        if let refusal = misdirected(request) { return .refused(refusal) }
        let grant: SyncServer.Grant
        let device: String?
        switch token {
        case .valid(let valid, let owner):
            grant = valid
            device = owner
        case .missing, .unknown:
            return .refused(unauthorized())
        case .expired:
            return .refused(
                .problem(
                    .tokenExpired, detail: "the access token expired; refresh it",
                    headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")]))
        case .revoked:
            return .refused(
                .problem(
                    .deviceRevoked, detail: "this device's credentials were revoked; enrol it again",
                    headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")]))
        }
        guard let workspace = request.header(ProtocolHeader.workspace), WireSyntax.isIdentifier(workspace) else {
            return .refused(.problem(.badWorkspace, detail: "FormSync-Workspace is required: \(WireSyntax.identifierRule)"))
        }
        guard grant.workspaces.contains(workspace) else {
            return .refused(.problem(.workspaceForbidden, detail: "this token is not issued for workspace \(workspace)"))
        }
        if let device { noteSighting(of: device) }
        return .allowed(Caller(principal: grant.principal, role: grant.role, workspace: workspace, device: device))
    }

    /// What a request's access token is worth now.
    enum TokenCheck: Sendable {
        case missing
        case unknown
        case expired
        case revoked
        /// A valid token, and the device it was issued to (nil for one issued without).
        case valid(SyncServer.Grant, device: String?)
    }

    /// What the request's access token is worth now, by the server's clock.
    func tokenCheck(of request: HTTPRequest) throws -> TokenCheck {
        guard let token = Self.bearerToken(request) else { return .missing }
        // Nodes sharing a store cache nothing: another node may revoke the token at any time.
        let cached = store.sharedAcrossNodes ? nil : context.accessTokens.entry(token)
        guard let entry = try cached ?? locked({ try accessGrant(token) }) else { return .unknown }
        if entry.revoked { return .revoked }
        guard entry.expiresAt > now() else { return .expired }
        return .valid(entry.grant, device: entry.device)
    }

    /// The grant of the request's access token, when it is valid now.
    func grant(of request: HTTPRequest) throws -> SyncServer.Grant? {
        if case .valid(let grant, _) = try tokenCheck(of: request) { return grant }
        return nil
    }

    /// An access token as the grants table holds it, cached once found when no other node
    /// shares the store (a revocation empties the cache under the same lock).
    private func accessGrant(_ token: String) throws -> AccessTokenCache.Entry? {
        guard let found = try store.grant(ofToken: token, kind: "access") else { return nil }
        let entry = AccessTokenCache.Entry(
            grant: found.grant, expiresAt: found.expiresAt, device: found.device, revoked: found.deviceRevoked)
        if !store.sharedAcrossNodes { context.accessTokens.insert(token, entry) }
        return entry
    }

    /// Records that `device` was seen now, at most once a minute per device and node.
    private func noteSighting(of device: String) {
        let now = now()
        guard context.sightings.isDue(device, now: now) else { return }
        do {
            try locked { try store.transaction { try store.touchDevice(device, at: now, staleBefore: now &- DeviceSightings.interval) } }
            context.sightings.record(device, now: now)
        } catch {
            FileHandle.standardError.write(Data("formsync server: a device's last sighting could not be recorded: \(error)\n".utf8))
        }
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
        guard let workspace = context.workspace, let named = request.header(ProtocolHeader.workspace), named != workspace,
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

    /// Refuses a grant that could never be used: no workspace, a workspace or principal that
    /// breaks the protocol's syntax.
    static func check(_ grant: SyncServer.Grant) throws {
        guard !grant.workspaces.isEmpty else { throw SyncServer.GrantError(reason: "it names no workspace") }
        for workspace in grant.workspaces where !WireSyntax.isIdentifier(workspace) {
            throw SyncServer.GrantError(reason: "workspace \"\(workspace.prefix(40))\" is not \(WireSyntax.identifierRule)")
        }
        guard CredentialRules.isPrincipal(grant.principal) else {
            throw SyncServer.GrantError(reason: "a principal is 1 to \(CredentialRules.maxPrincipalBytes) bytes on one line")
        }
    }

    /// An access token valid for the configured lifetime; runs under the lock.
    func issueAccessTokenLocked(_ grant: SyncServer.Grant) throws -> String {
        try issueToken(
            kind: "access", grant: grant, expiresAt: now().addingReportingOverflow(context.tokenLifetimeMilliseconds).partialValue,
            device: nil)
    }

    /// A new token of `kind` for `grant` (and `device`'s generation), stored by its digest;
    /// runs under the lock.
    func issueToken(kind: String, grant: SyncServer.Grant, expiresAt: Int64, device: (id: String, generation: Int64)?) throws -> String {
        try Self.check(grant)
        let token = (kind == "access" ? "a-" : "r-") + UUID().uuidString.lowercased() + "-" + UUID().uuidString.lowercased()
        try store.addToken(token, kind: kind, grant: grant, expiresAt: expiresAt, device: device)
        return token
    }
}
