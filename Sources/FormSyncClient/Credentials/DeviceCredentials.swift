import Dispatch
import FormSyncProtocol
import Foundation

/// A device's own credentials (docs/PROTOCOL.md, "Devices and credentials"): it enrols with
/// the link an operator shows, keeps each rotated refresh token in its vault before it uses the
/// access token that came with it, refreshes one at a time, and knows when the server revoked
/// the device. Give the outbox's transport `accessToken()` and the outbox `refresh()`:
///
///     let credentials = try await DeviceCredentials(vault: FileCredentialVault(path: vaultPath), device: report)
///     try await credentials.enrol(link, installation: installationID)
///     let transport = HTTPTransport(workspace: link.workspace, baseURL: URL(string: link.server)!) {
///         await credentials.accessToken()
///     }
///
/// Its tokens go only to the server it enrolled with.
public actor DeviceCredentials {
    /// Where the device stands.
    public enum Status: Sendable, Equatable {
        /// Never enrolled, or its credentials were erased.
        case notEnrolled
        /// Enrolled: requests carry its tokens.
        case enrolled(deviceID: String, principal: String)
        /// The server revoked it: nothing is sent under its credentials again; enrol anew.
        case revoked(reason: String)
        /// Its refresh token expired or is unknown to the server: enrol anew.
        case mustEnrolAgain(reason: String)
    }

    /// Why an enrolment did not happen.
    public enum EnrolmentError: Error, Equatable, CustomStringConvertible {
        /// The server refused the code (`enrolment-used`, `enrolment-expired`, `enrolment-unknown`).
        case refused(code: ProblemCode?, detail: String)
        /// No FormSync server answered; the code is unspent (or can be sent again).
        case unreachable(String)
        /// The link names another server or workspace than the transport it was given.
        case linkMismatch(String)
        /// The vault could not keep the credentials; the device is not enrolled.
        case vault(String)
        /// What the device says of itself breaks the protocol's bounds (`DeviceReport.problem`).
        case badReport(String)

        public var description: String {
            switch self {
            case .refused(let code, let detail): return "the server refused the enrolment (\(code?.rawValue ?? "no code")): \(detail)"
            case .unreachable(let reason): return "no FormSync server answered the enrolment: \(reason)"
            case .linkMismatch(let reason): return reason
            case .vault(let reason): return reason
            case .badReport(let problem): return "the device's report: \(problem)"
            }
        }
    }

    private let vault: any CredentialVault
    private let device: DeviceReport
    private let makeTransport: @Sendable (_ server: URL, _ workspace: String) -> HTTPTransport
    private var stored: StoredCredentials?
    private var access: String?
    private var refreshing: Task<Bool, Never>?
    private var revocationHandlers: [@Sendable (String) async -> Void] = []
    /// The vault's calls run here, off the cooperative pool.
    private static let vaultQueue = DispatchQueue(label: "formsync.credentials.vault")

    /// Opens the vault. `device` is what the device says of itself at every enrolment and
    /// refresh: one that breaks the protocol's bounds is refused here (`EnrolmentError.badReport`),
    /// not by every refresh to come. `transport` makes the transport its enrolments and refreshes
    /// go through, for a server and workspace (by default an `HTTPTransport` that sends no token).
    public init(
        vault: any CredentialVault, device: DeviceReport,
        transport: (@Sendable (_ server: URL, _ workspace: String) -> HTTPTransport)? = nil
    ) async throws {
        if let problem = device.problem { throw EnrolmentError.badReport(problem) }
        self.vault = vault
        self.device = device
        self.makeTransport = transport ?? { server, workspace in HTTPTransport(workspace: workspace, baseURL: server, token: { nil }) }
        stored = try await Self.offPool { try vault.load() }
    }

    /// Where the device stands now.
    public var status: Status {
        guard let stored else { return .notEnrolled }
        if let reason = stored.revokedReason { return .revoked(reason: reason) }
        if let reason = expiredReason { return .mustEnrolAgain(reason: reason) }
        return .enrolled(deviceID: stored.deviceID, principal: stored.principal)
    }

    private var expiredReason: String?

    /// What the device is enrolled as (nil before it enrols).
    public var credentials: StoredCredentials? { stored }

    /// Calls `handler` when the server says this device is revoked (at once if it already did),
    /// so that the app can stop its engine and apply its purge policy.
    public func onRevocation(_ handler: @escaping @Sendable (String) async -> Void) async {
        revocationHandlers.append(handler)
        if let reason = stored?.revokedReason { await handler(reason) }
    }

    /// Enrols with `link`'s code through `transport` (which must point at the link's server
    /// and workspace), from this installation (`installation`: an id the app made once and
    /// keeps; with it a lost reply can be asked for again). Replaces whatever credentials the
    /// vault held.
    @discardableResult
    public func enrol(_ link: EnrolmentLink, installation: String) async throws -> Credentials {
        guard let server = URL(string: link.server) else { throw EnrolmentError.linkMismatch("the link's server is not a URL") }
        let transport = makeTransport(server, link.workspace)
        let reply = await transport.enrol(EnrolRequest(code: link.code.description, installation: installation, device: device))
        switch reply {
        case .issued(let credentials):
            let kept = StoredCredentials(
                server: link.server, deviceID: credentials.deviceID, principal: credentials.principal, role: credentials.role,
                workspaces: credentials.workspaces, refreshToken: credentials.refreshToken)
            do {
                try await Self.offPool { [vault] in try vault.save(kept) }
            } catch {
                throw EnrolmentError.vault("\(error)")
            }
            stored = kept
            access = credentials.accessToken
            expiredReason = nil
            return credentials
        case .refused(let code, let detail):
            throw EnrolmentError.refused(code: code, detail: detail)
        case .unreachable(let reason):
            throw EnrolmentError.unreachable(reason)
        }
    }

    /// The access token to send now; nil before enrolment, after revocation, or before the
    /// first refresh of a launch (the outbox's refresh hook gets one).
    public func accessToken() -> String? {
        guard stored?.revokedReason == nil else { return nil }
        return access
    }

    /// Trades the refresh token for new credentials; true when a new access token is held.
    /// Calls made while one is under way wait for it (one refresh at a time, as the protocol
    /// asks). The new refresh token is used only once the vault kept it: a device that dies in
    /// between presents the one it kept, which the server takes once more.
    public func refresh() async -> Bool {
        if let refreshing { return await refreshing.value }
        let task = Task { await refreshOnce() }
        refreshing = task
        let result = await task.value
        refreshing = nil
        return result
    }

    private func refreshOnce() async -> Bool {
        guard var kept = stored, kept.revokedReason == nil, let server = URL(string: kept.server),
            let workspace = kept.workspaces.first
        else { return false }
        let reply = await makeTransport(server, workspace).refresh(RefreshRequest(refreshToken: kept.refreshToken, device: device))
        switch reply {
        case .issued(let credentials):
            guard credentials.deviceID == kept.deviceID else { return false }
            access = credentials.accessToken
            kept.refreshToken = credentials.refreshToken
            if (try? await Self.offPool({ [vault, kept] in try vault.save(kept) })) != nil { stored = kept }
            return true
        case .refused(.deviceRevoked, let detail):
            access = nil
            kept.revokedReason = detail.isEmpty ? "revoked" : detail
            stored = kept
            try? await Self.offPool { [vault, kept] in try vault.save(kept) }
            for handler in revocationHandlers { await handler(kept.revokedReason ?? "revoked") }
            return false
        case .refused(.refreshExpired, let detail), .refused(.badToken, let detail):
            access = nil
            expiredReason = detail.isEmpty ? "the refresh token is no longer valid" : detail
            return false
        case .refused, .unreachable:
            return false
        }
    }

    /// Forgets the credentials (the app signs the device out, or a person hands it back).
    public func erase() async throws {
        try await Self.offPool { [vault] in try vault.save(nil) }
        stored = nil
        access = nil
        expiredReason = nil
    }

    private static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            vaultQueue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
