import FormSyncProtocol

/// What a server made of an enrolment or a refresh (docs/PROTOCOL.md, "Devices and
/// credentials").
public enum CredentialExchange: Sendable, Equatable {
    /// New credentials: keep the refresh token before using the access token.
    case issued(Credentials)
    /// The server answered and refused: `code` says why (`device-revoked`, `refresh-expired`,
    /// `enrolment-used`, …; nil when the reply named none).
    case refused(code: ProblemCode?, detail: String)
    /// No FormSync server answered (no network, a portal, a redirect, a timeout, a reply that
    /// is not the protocol's): ask again later, with the same token.
    case unreachable(reason: String)
}
