/// The protocol's own header names (docs/PROTOCOL.md, §1, and the upload drafts it follows), as
/// a request or reply spells them. A server reads them without regard to case; every part of
/// FormSync names them from here.
public enum ProtocolHeader {
    public static let workspace = "FormSync-Workspace"
    public static let document = "FormSync-Document"
    public static let form = "FormSync-Form"
    /// The optional parts of the protocol a server implements (`Feature`), on every reply.
    public static let features = "FormSync-Features"
    public static let idempotencyKey = "Idempotency-Key"
    /// `true` on a reply the idempotency ledger replayed.
    public static let idempotentReplayed = "Idempotent-Replayed"
    public static let ifMatch = "If-Match"
    /// On a submission: when its person captured it, RFC 3339 by the device's clock (kept as
    /// the version's `ChangeAuthor.capturedAt`, never used for order).
    public static let capturedAt = "FormSync-Captured-At"
    /// On a webhook's delivery: the event's id (`SubmissionEvent.eventID`; a receiver drops a
    /// duplicate by it), its name, the receiver's id, and the signature
    /// (`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, one `v1` per signing secret).
    public static let eventID = "FormSync-Event-ID"
    public static let event = "FormSync-Event"
    public static let webhook = "FormSync-Webhook"
    public static let signature = "FormSync-Signature"
    /// RFC 9530: the digest of a whole upload's body.
    public static let contentDigest = "Content-Digest"
    /// RFC 9530: the digest of the whole file a resumable upload carries, or a range is part of.
    public static let reprDigest = "Repr-Digest"
    public static let uploadOffset = "Upload-Offset"
    public static let uploadLength = "Upload-Length"
    public static let uploadComplete = "Upload-Complete"

    /// Every name above.
    public static let all = [
        workspace, document, form, features, idempotencyKey, idempotentReplayed, ifMatch, capturedAt, eventID, event, webhook, signature,
        contentDigest, reprDigest,
        uploadOffset,
        uploadLength, uploadComplete,
    ]
}
