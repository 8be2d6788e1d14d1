/// Every error a FormSync server answers with: the `code` member (and the type
/// `urn:formsync:problem:<code>`) of an `application/problem+json` reply, as docs/PROTOCOL.md
/// lists them in "Error codes". The server writes them, the client's transport and
/// `formsync conformance` read them, and nothing else spells them: a new code is one case here.
public enum ProblemCode: String, Sendable, CaseIterable {
    /// The request line, a header or a chunked body is not HTTP/1.1, or a body is shorter than announced.
    case malformed
    /// A method the route does not take.
    case methodNotAllowed = "method-not-allowed"
    /// `Idempotency-Key` is missing or breaks its syntax.
    case badIdempotencyKey = "bad-idempotency-key"
    /// `FormSync-Document` is missing or breaks its syntax.
    case badDocumentID = "bad-document-id"
    /// `FormSync-Workspace` is missing or breaks its syntax.
    case badWorkspace = "bad-workspace"
    /// `If-Match` breaks its syntax.
    case badIfMatch = "bad-if-match"
    /// `FormSync-Form` is malformed.
    case badFormHeader = "bad-form-header"
    /// An upload without `Content-Digest` (or `Repr-Digest`).
    case digestMissing = "digest-missing"
    /// An upload whose bytes do not have the digest it announced.
    case digestMismatch = "digest-mismatch"
    /// A resumable upload's `Upload-Length` is missing or absurd.
    case badUploadLength = "bad-upload-length"
    /// A resumable upload's `Upload-Offset` is missing or absurd.
    case badUploadOffset = "bad-upload-offset"
    /// An append that would take a resumable upload past its announced length.
    case uploadTooLong = "upload-too-long"
    /// An append that says it is the last while bytes are still missing.
    case uploadIncomplete = "upload-incomplete"
    /// A resumable upload that does not exist (or is another workspace's).
    case noSuchUpload = "no-such-upload"
    /// An append at another offset than the server's; the reply carries `Upload-Offset`.
    case mismatchingUploadOffset = "mismatching-upload-offset"
    /// No token, or one the server never issued.
    case badToken = "bad-token"
    /// An access token past its lifetime: refresh it.
    case tokenExpired = "token-expired"
    /// A refresh token unused for longer than the server keeps one: the device enrols again.
    case refreshExpired = "refresh-expired"
    /// The device's credentials were revoked (by the back office, or because a retired refresh
    /// token was used again): stop, keep what is queued, enrol again.
    case deviceRevoked = "device-revoked"
    /// An enrolment code the server never issued.
    case enrolmentUnknown = "enrolment-unknown"
    /// An enrolment code past its expiry.
    case enrolmentExpired = "enrolment-expired"
    /// An enrolment code a device already used.
    case enrolmentUsed = "enrolment-used"
    /// A route of the back office asked with a device's token.
    case backOfficeOnly = "back-office-only"
    /// A device the workspace does not hold.
    case noSuchDevice = "no-such-device"
    /// The bundle answers no support request open for this device.
    case noSuchSupportRequest = "no-such-support-request"
    /// A webhook the workspace does not hold.
    case noSuchWebhook = "no-such-webhook"
    /// A delivery that webhook does not hold, or one that is not a dead letter (to resend).
    case noSuchDelivery = "no-such-delivery"
    /// `FormSync-Workspace` names a workspace the token was not issued for.
    case workspaceForbidden = "workspace-forbidden"
    /// A device's form deletes a record whose type does not let devices delete it.
    case deleteNotAllowed = "delete-not-allowed"
    /// `GET /changes` with a cursor that is not one.
    case badCursor = "bad-cursor"
    /// `GET /changes` with a limit that is not one.
    case badLimit = "bad-limit"
    /// A query the route does not take.
    case badQuery = "bad-query"
    /// `GET /changes?subscription=` naming a type, a field or a value the server's specs do
    /// not let devices subscribe by.
    case badSubscription = "bad-subscription"
    /// A form the server does not know.
    case unknownForm = "unknown-form"
    /// A form sent to a path that is not its endpoint.
    case wrongPath = "wrong-path"
    /// A document the caller may not see, or that does not exist.
    case noSuchDocument = "no-such-document"
    /// A record the caller may not see, or that does not exist.
    case noSuchRecord = "no-such-record"
    /// A path no route answers.
    case noRoute = "no-route"
    /// A stored file the caller may not read, or that does not exist.
    case noSuchFile = "no-such-file"
    /// A range outside the file; the reply carries `Content-Range: bytes */<total>`.
    case badRange = "bad-range"
    /// The head or the body took too long to arrive.
    case timeout
    /// The key's first request is still being processed (transient, with `Retry-After`).
    case keyInFlight = "key-in-flight"
    /// A create for a document held with other content; the reply carries the record and `ETag`.
    case documentExists = "document-exists"
    /// A document id used under another form, or as a file.
    case documentFormMismatch = "document-form-mismatch"
    /// A document id used in another workspace.
    case documentWorkspaceMismatch = "document-workspace-mismatch"
    /// A document id used by another principal.
    case documentPrincipalMismatch = "document-principal-mismatch"
    /// Another append to the same upload is being written (transient, with `Retry-After`).
    case uploadBusy = "upload-busy"
    /// An edit changes a field the server owns; the reply carries the record and `ETag`.
    case authorityConflict = "authority-conflict"
    /// The feed's cursor is ahead of the server's history: pull from the start.
    case cursorExpired = "cursor-expired"
    /// `If-Match` names an old version; the reply carries the record and `ETag`.
    case staleVersion = "stale-version"
    /// The body is over the route's limit.
    case tooLarge = "too-large"
    /// The server does not host the workspace named.
    case wrongWorkspace = "wrong-workspace"
    /// The key was used for another request.
    case keyReused = "key-reused"
    /// The payload breaks the form's rules; `errors` lists them.
    case invalidPayload = "invalid-payload"
    /// An upload that is not what a document of the uploader's principal announced for its digest.
    case fileMismatch = "file-mismatch"
    /// A negative (placeholder) id reached the server.
    case placeholder
    /// The form's version is newer than the server knows.
    case unknownFormVersion = "unknown-form-version"
    /// The record a create or an edit would leave breaks the record's rules; `errors` lists them.
    case invalidRecord = "invalid-record"
    /// An edit of a record without `If-Match`.
    case ifMatchRequired = "if-match-required"
    /// Too many requests; with `Retry-After`.
    case rateLimited = "rate-limited"
    /// Too many unfinished resumable uploads, or too many bytes announced; with `Retry-After`.
    case uploadQuota = "upload-quota"
    /// The head is over its size or field count.
    case headerTooLarge = "header-too-large"
    /// The server failed; the detail holds only a reference, internals go to its log.
    case `internal`
    /// A transfer coding other than `chunked`.
    case unsupportedEncoding = "unsupported-encoding"
    /// Too many connections, too much being received at once, or the store cannot answer; with `Retry-After`.
    case busy

    /// The HTTP status a reply with this code has.
    public var status: Int {
        switch self {
        case .malformed, .badIdempotencyKey, .badDocumentID, .badWorkspace, .badIfMatch, .badFormHeader, .digestMissing, .digestMismatch,
            .badUploadLength, .badUploadOffset, .uploadTooLong, .uploadIncomplete, .badCursor, .badLimit, .badQuery,
            .badSubscription:
            return 400
        case .badToken, .tokenExpired, .refreshExpired, .deviceRevoked, .enrolmentUnknown, .enrolmentExpired, .enrolmentUsed: return 401
        case .workspaceForbidden, .backOfficeOnly, .deleteNotAllowed: return 403
        case .noSuchUpload, .unknownForm, .wrongPath, .noSuchDocument, .noSuchRecord, .noRoute, .noSuchFile, .noSuchDevice,
            .noSuchSupportRequest, .noSuchWebhook, .noSuchDelivery:
            return 404
        case .methodNotAllowed: return 405
        case .timeout: return 408
        case .keyInFlight, .documentExists, .documentFormMismatch, .documentWorkspaceMismatch, .documentPrincipalMismatch, .uploadBusy,
            .authorityConflict, .mismatchingUploadOffset:
            return 409
        case .cursorExpired: return 410
        case .staleVersion: return 412
        case .tooLarge: return 413
        case .badRange: return 416
        case .wrongWorkspace: return 421
        case .keyReused, .invalidPayload, .fileMismatch, .placeholder, .unknownFormVersion, .invalidRecord: return 422
        case .ifMatchRequired: return 428
        case .rateLimited, .uploadQuota: return 429
        case .headerTooLarge: return 431
        case .internal: return 500
        case .unsupportedEncoding: return 501
        case .busy: return 503
        }
    }

    /// The problem type URI that goes with the code.
    public var type: String { "urn:formsync:problem:" + rawValue }
}
