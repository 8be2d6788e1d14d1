import FormSyncProtocol
import Foundation

/// Who may do what (docs/PROTOCOL.md, "Access rules"; the rules themselves are `AccessControl`):
/// the roles, the grants tokens carry, issuing tokens, enrolling and revoking devices
/// (docs/PROTOCOL.md, "Devices and credentials"; the logic is `DeviceService`).
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

    /// A refresh token for a new device of `grant`'s principal, role and workspaces, made by the
    /// server itself (tests, tools; a real device enrols with a code from `makeEnrolment`). It
    /// rotates at every refresh and lives `refreshTokenLifetime` unused, as an enrolled device's
    /// does. The server stores only its digest.
    public func issueRefreshToken(_ grant: Grant) throws -> String {
        let devices = DeviceService(context: context)
        return try locked { try store.transaction { try devices.issueDeviceToken(grant, name: "issued by the server") } }
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

    /// How long a refresh token lives unused (30 days by default): a device that does not
    /// refresh for longer enrols again (`401 refresh-expired`).
    public var refreshTokenLifetime: Duration {
        get { .milliseconds(context.settings.refreshLifetimeMilliseconds) }
        set {
            let (seconds, attoseconds) = newValue.components
            let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            let total = overflow ? Int64.max : milliseconds.addingReportingOverflow(attoseconds / 1_000_000_000_000_000).partialValue
            context.settings.refreshLifetimeMilliseconds = max(1000, total)
        }
    }

    /// An enrolment: a single-use code that enrols one device for `principal` in `workspace`,
    /// valid for `lifetime` (a minute to a week), and when it stops being taken (milliseconds
    /// since 1970). Show it as `EnrolmentLink(server:workspace:code:)`.
    public func makeEnrolment(
        principal: String, workspace: String, role: Role = .device, lifetime: Duration = .seconds(3600)
    ) throws
        -> (code: EnrolmentCode, expiresAt: Int64)
    {
        let seconds = lifetime.components.seconds
        guard CredentialRules.enrolmentSeconds.contains(seconds) else {
            throw GrantError(
                reason:
                    "an enrolment lives \(CredentialRules.enrolmentSeconds.lowerBound) to \(CredentialRules.enrolmentSeconds.upperBound) seconds"
            )
        }
        let devices = DeviceService(context: context)
        return try locked {
            try store.transaction {
                try devices.makeEnrolment(Grant(principal: principal, workspaces: [workspace], role: role), seconds: seconds, by: "server")
            }
        }
    }

    /// The devices that may name `workspace` (of one principal, or all), oldest first.
    public func devices(workspace: String, principal: String? = nil) throws -> [DeviceSummary] {
        try locked { try store.devices(workspace: workspace, principal: principal, limit: Int.max) }.map(DeviceService.summary)
    }

    /// Revokes one device of `workspace`; the ids revoked now (empty when it already was), or
    /// nil when the workspace holds no such device. Its next request is refused on every node.
    @discardableResult
    public func revokeDevice(_ id: String, workspace: String, reason: String = "revoked by the server") throws -> [String]? {
        try DeviceService(context: context).revokeDevices(id: id, principal: nil, workspace: workspace, reason: reason)
    }

    /// Revokes every device of `principal` in `workspace` (and its tokens issued without a
    /// device); the ids revoked now.
    @discardableResult
    public func revokeDevices(principal: String, workspace: String, reason: String = "revoked by the server") throws -> [String] {
        try DeviceService(context: context).revokeDevices(id: nil, principal: principal, workspace: workspace, reason: reason) ?? []
    }

    /// Stores a refresh token as a server before devices stored one: no device, no expiry
    /// (the upgrade's tests).
    package func storeRefreshTokenWithoutDevice(_ token: String, principal: String, workspaces: [String]) throws {
        try locked {
            try store.transaction {
                try store.addToken(
                    token, kind: "refresh", grant: Grant(principal: principal, workspaces: workspaces), expiresAt: .max, device: nil)
            }
        }
    }
}
