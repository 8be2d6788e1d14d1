/// The credentials of the people signed in on a shared phone, one `DeviceCredentials` each
/// (each with its own vault): what a shared phone's transport asks for a token for the person
/// a request is for, and what its outbox's refresh hook refreshes.
///
///     let people = SharedPhoneCredentials()
///     try await people.add(anasCredentials)
///     let transport = HTTPTransport(workspace: "acme", baseURL: server) { principal in
///         await people.accessToken(for: principal)
///     }
///
/// A person who is not here has no token: their items wait (`Outbox.signOut`).
public actor SharedPhoneCredentials {
    private var byPrincipal: [String: DeviceCredentials] = [:]

    public init() {}

    /// Adds an enrolled person's credentials, replacing any that person had here; returns who
    /// they are. Credentials that are not enrolled (or were revoked) are refused.
    @discardableResult
    public func add(_ credentials: DeviceCredentials) async throws -> String {
        guard case .enrolled(_, let principal) = await credentials.status else {
            throw DeviceCredentials.EnrolmentError.vault("these credentials are not enrolled")
        }
        byPrincipal[principal] = credentials
        return principal
    }

    /// Takes a person's credentials off the phone (they are not erased: `DeviceCredentials.erase`).
    @discardableResult
    public func remove(_ principal: String) -> DeviceCredentials? {
        byPrincipal.removeValue(forKey: principal)
    }

    /// The people whose credentials are here, sorted.
    public var principals: [String] { byPrincipal.keys.sorted() }

    /// The credentials of `principal`, if they are here.
    public func credentials(of principal: String) -> DeviceCredentials? { byPrincipal[principal] }

    /// The access token of `principal`; nil for nobody, and for a person not here.
    public func accessToken(for principal: String?) async -> String? {
        guard let principal, let credentials = byPrincipal[principal] else { return nil }
        return await credentials.accessToken()
    }

    /// Refreshes every person's credentials (each one at a time, as `DeviceCredentials.refresh`);
    /// true when at least one holds a new access token. The outbox's refresh hook.
    public func refresh() async -> Bool {
        var any = false
        for credentials in byPrincipal.values where await credentials.refresh() { any = true }
        return any
    }
}
