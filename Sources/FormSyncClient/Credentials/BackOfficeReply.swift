import FormSyncProtocol

/// What a server made of a request that carries no item: the back office's
/// (`HTTPTransport.makeEnrolment`, `devices`, `revoke`, `requestSupportBundle`,
/// `supportBundles`) and a device's support bundle (`sendSupportBundle`).
public enum BackOfficeReply<Value: Sendable>: Sendable {
    /// Done: the server's answer.
    case done(Value)
    /// The server refused: `code` says why (`back-office-only`, `no-such-device`, `bad-token`, …).
    case refused(code: ProblemCode?, detail: String)
    /// No FormSync server answered.
    case unreachable(reason: String)
}
