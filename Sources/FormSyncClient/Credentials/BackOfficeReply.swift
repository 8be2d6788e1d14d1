import FormSyncProtocol

/// What a server made of a back-office request (`HTTPTransport.makeEnrolment`, `devices`,
/// `revoke`).
public enum BackOfficeReply<Value: Sendable>: Sendable {
    /// Done: the server's answer.
    case done(Value)
    /// The server refused: `code` says why (`back-office-only`, `no-such-device`, `bad-token`, …).
    case refused(code: ProblemCode?, detail: String)
    /// No FormSync server answered.
    case unreachable(reason: String)
}
