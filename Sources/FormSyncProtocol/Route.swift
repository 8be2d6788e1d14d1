/// Every route of the protocol (docs/PROTOCOL.md, "Endpoints"): its method, its path as the
/// document spells it, and what it reads. The server dispatches by it, takes a route's body
/// limit and fault class from it, and PROTOCOL.md is held to it by a test: a new route is one
/// case here and its handler.
public enum Route: String, Sendable, CaseIterable {
    /// `GET /health`: who answers, and what it supports.
    case health
    /// `POST /auth/refresh`: a refresh token for a new access token and its successor.
    case refresh
    /// `POST /auth/enrol`: an enrolment code for a device's first credentials.
    case enrol
    /// `POST /auth/enrolments`: the back office makes an enrolment code.
    case enrolmentCreate
    /// `GET /auth/devices`: the back office lists the workspace's devices.
    case devices
    /// `POST /auth/revocations`: the back office revokes a device, or a principal's devices.
    case revocation
    /// `POST /support/requests`: the back office asks a device for a support bundle.
    case supportRequestCreate
    /// `GET /support/bundles`: the back office reads the bundles devices sent.
    case supportBundles
    /// `POST /support/bundles`: a device sends a support bundle.
    case supportBundleUpload
    /// `GET /files/sha-256/<hex>`: a stored file looked up by its digest.
    case fileLookup
    /// `GET /files/<id>`: a stored file's bytes, whole or a range.
    case fileFetch
    /// `GET /pending-files`: the caller's documents still waiting for a file.
    case pendingFiles
    /// `GET /changes`: the change feed of records.
    case changes
    /// `GET /records/<type>/<id>`: one record.
    case record
    /// `GET /documents/<document id>`: one document and its record.
    case document
    /// `GET /submissions`: the back office's feed of documents' versions and reviews.
    case submissions
    /// `GET /documents/<document id>/history`: a document's versions, authors and reviews.
    case documentHistory
    /// `GET /records/<type>/<id>/history`: a record's versions and their authors.
    case recordHistory
    /// `POST /documents/<document id>/reviews`: the back office's verdict on a document.
    case review
    /// `POST /webhooks`: the back office registers a receiver of document events.
    case webhookCreate
    /// `GET /webhooks`: the workspace's receivers.
    case webhooks
    /// `POST /webhooks/<id>/secret`: a new signing secret (the old one signs beside it a while).
    case webhookSecret
    /// `DELETE /webhooks/<id>`: a receiver removed, with its deliveries.
    case webhookDelete
    /// `GET /webhooks/<id>/deliveries`: a receiver's deliveries and their last outcome.
    case webhookDeliveries
    /// `POST /webhooks/<id>/deliveries/<delivery>/resend`: a dead letter sent again.
    case webhookResend
    /// `POST /files`: a file uploaded whole.
    case fileUpload
    /// `POST /uploads`: a resumable upload created.
    case uploadCreate
    /// `HEAD /uploads/<id>`: how far a resumable upload has come.
    case uploadOffset
    /// `PATCH /uploads/<id>`: bytes appended to a resumable upload.
    case uploadAppend
    /// `POST <form endpoint>`: a document created or edited.
    case submission

    /// What a route's request carries.
    public enum Body: Sendable {
        /// Nothing.
        case none
        /// A small JSON object of the protocol's own (a credential, a back-office request): 4 KiB at most.
        case message
        /// A document's JSON payload.
        case payload
        /// A file's bytes.
        case file
    }

    /// The request method.
    public var method: String {
        switch self {
        case .health, .fileLookup, .fileFetch, .pendingFiles, .changes, .record, .document, .devices, .supportBundles, .submissions,
            .documentHistory, .recordHistory, .webhooks, .webhookDeliveries:
            return "GET"
        case .refresh, .enrol, .enrolmentCreate, .revocation, .supportRequestCreate, .supportBundleUpload, .fileUpload, .uploadCreate,
            .submission, .review, .webhookCreate, .webhookSecret, .webhookResend:
            return "POST"
        case .webhookDelete: return "DELETE"
        case .uploadOffset: return "HEAD"
        case .uploadAppend: return "PATCH"
        }
    }

    /// The path as docs/PROTOCOL.md writes it, placeholders in angle brackets.
    public var template: String {
        switch self {
        case .health: return "/health"
        case .refresh: return "/auth/refresh"
        case .enrol: return "/auth/enrol"
        case .enrolmentCreate: return "/auth/enrolments"
        case .devices: return "/auth/devices"
        case .revocation: return "/auth/revocations"
        case .supportRequestCreate: return "/support/requests"
        case .supportBundles, .supportBundleUpload: return "/support/bundles"
        case .fileLookup: return "/files/sha-256/<hex>"
        case .fileFetch: return "/files/<id>"
        case .pendingFiles: return "/pending-files"
        case .changes: return "/changes"
        case .record: return "/records/<type>/<id>"
        case .document: return "/documents/<document id>"
        case .submissions: return "/submissions"
        case .documentHistory: return "/documents/<document id>/history"
        case .recordHistory: return "/records/<type>/<id>/history"
        case .review: return "/documents/<document id>/reviews"
        case .webhookCreate, .webhooks: return "/webhooks"
        case .webhookSecret: return "/webhooks/<id>/secret"
        case .webhookDelete: return "/webhooks/<id>"
        case .webhookDeliveries: return "/webhooks/<id>/deliveries"
        case .webhookResend: return "/webhooks/<id>/deliveries/<delivery>/resend"
        case .fileUpload: return "/files"
        case .uploadCreate: return "/uploads"
        case .uploadOffset, .uploadAppend: return "/uploads/<id>"
        case .submission: return "<form endpoint>"
        }
    }

    /// What the request carries.
    public var body: Body {
        switch self {
        case .refresh, .enrol, .enrolmentCreate, .revocation, .supportRequestCreate, .webhookCreate: return .message
        case .submission, .supportBundleUpload, .review: return .payload
        case .fileUpload, .uploadAppend: return .file
        default: return .none
        }
    }

    /// Whether the request names a workspace and needs an access token (all but the health
    /// check, the refresh, which carries its own token in its body, and the enrolment, which
    /// carries its code).
    public var needsAccessToken: Bool { self != .health && self != .refresh && self != .enrol }

    /// Whether only the back office may ask it (`403 back-office-only` for a device).
    public var isBackOfficeOnly: Bool {
        [
            .enrolmentCreate, .devices, .revocation, .supportRequestCreate, .supportBundles, .submissions, .documentHistory, .recordHistory,
            .review, .webhookCreate, .webhooks, .webhookSecret, .webhookDelete, .webhookDeliveries, .webhookResend,
        ]
        .contains(self)
    }

    /// Whether the request writes under an `Idempotency-Key` and a `FormSync-Document`.
    public var isDocumentWrite: Bool { self == .submission || self == .fileUpload || self == .uploadCreate }

    /// What the route is for, in one line.
    public var summary: String {
        switch self {
        case .health: return "Who answers, and the features it supports."
        case .refresh: return "Trade a refresh token for a new access token and the refresh token that replaces it."
        case .enrol: return "Trade an enrolment code for a device's first credentials."
        case .enrolmentCreate: return "Make a single-use code that enrols one device for a principal."
        case .devices: return "The workspace's devices: whose, what they run, when last seen, whether revoked."
        case .revocation: return "Revoke a device, or every device of a principal, at once."
        case .supportRequestCreate: return "Ask a device for a support bundle; it learns of it in its next pull."
        case .supportBundles: return "The support bundles the workspace's devices sent, newest first."
        case .supportBundleUpload: return "Send this device's support bundle, unasked or answering a request."
        case .fileLookup: return "Whether the workspace holds a file with these bytes."
        case .fileFetch: return "A stored file's bytes, whole or a range."
        case .pendingFiles: return "Files that documents named before their bytes arrived, oldest first."
        case .changes: return "The changes of records in the caller's scope after a cursor, in commit order."
        case .record: return "One record in the caller's scope, with its version as the ETag."
        case .document: return "One document of the caller's, with its record and version."
        case .submissions: return "Documents' versions and reviews after a cursor, in commit order, with their authors and files."
        case .documentHistory: return "A document's versions with their authors and changed fields, and its reviews."
        case .recordHistory: return "A record's versions with their authors and changed fields."
        case .review: return "Approve a document's version, send it back with issues, or reject it."
        case .webhookCreate: return "Register a receiver of the workspace's document events; its signing secret is shown once."
        case .webhooks: return "The workspace's receivers, with their pending deliveries and dead letters."
        case .webhookSecret: return "Rotate a receiver's signing secret; the old one signs beside it for a day."
        case .webhookDelete: return "Remove a receiver; nothing more is sent to it."
        case .webhookDeliveries: return "A receiver's deliveries, newest first, with their last outcome."
        case .webhookResend: return "Send a dead letter again, from a fresh retry window."
        case .fileUpload: return "Upload a file whole; the same document again is an idempotent repeat."
        case .uploadCreate: return "Create a resumable upload of a file document, or find the one begun."
        case .uploadOffset: return "How many bytes of a resumable upload the server holds."
        case .uploadAppend: return "Append bytes at the server's offset; with Upload-Complete, finish the file."
        case .submission: return "Create or edit a document of a form."
        }
    }

    /// The path as OpenAPI writes it, placeholders in braces; nil for a submission, whose path is
    /// the endpoint its form's spec names.
    public var openAPIPath: String? {
        switch self {
        case .submission: return nil
        case .fileLookup: return "/files/sha-256/{hex}"
        case .fileFetch: return "/files/{id}"
        case .record: return "/records/{type}/{id}"
        case .document: return "/documents/{documentID}"
        case .documentHistory: return "/documents/{documentID}/history"
        case .review: return "/documents/{documentID}/reviews"
        case .recordHistory: return "/records/{type}/{id}/history"
        case .webhookSecret: return "/webhooks/{id}/secret"
        case .webhookDelete: return "/webhooks/{id}"
        case .webhookDeliveries: return "/webhooks/{id}/deliveries"
        case .webhookResend: return "/webhooks/{id}/deliveries/{delivery}/resend"
        case .uploadOffset, .uploadAppend: return "/uploads/{id}"
        default: return template
        }
    }

    /// What it reads besides the body (and, when `needsAccessToken`, the `Authorization` header).
    public var parameters: [RouteParameter] {
        typealias P = RouteParameter
        let access = needsAccessToken ? [P.workspace] : []
        switch self {
        case .health, .refresh, .enrol, .enrolmentCreate, .revocation, .supportRequestCreate, .supportBundleUpload:
            return access
        case .supportBundles:
            return access + [
                P("device", in: .query, required: false, "Only this device's bundles."),
                P("limit", in: .query, required: false, "How many, from 1 to 50 (10 when absent)."),
            ]
        case .devices:
            return access + [P("principal", in: .query, required: false, "Only this principal's devices.")]
        case .fileLookup:
            return access + [P("hex", in: .path, required: true, "The file's SHA-256 as 64 lower-case hex digits.")]
        case .fileFetch:
            return access + [
                P("id", in: .path, required: true, "The stored file's id."),
                P("Range", in: .header, required: false, "bytes=<first>-[<last>] or bytes=-<count>: one range (RFC 9110 §14.1.2)."),
                P("If-Range", in: .header, required: false, "The file's ETag; another sends the file whole."),
            ]
        case .pendingFiles:
            return access + [P("limit", in: .query, required: false, "How many, from 1 to 1000 (100 when absent).")]
        case .changes:
            return access + [
                P("cursor", in: .query, required: false, "The cursor of the last page taken; absent, from the start."),
                P(
                    "limit", in: .query, required: false,
                    "How many changes, 1 or more; above 1000 it is served as 1000 (10,000 for a compact page, feature compact-feed)."),
                P(
                    "wait", in: .query, required: false,
                    "Seconds the server may hold an empty page until a change the caller may see commits (feature wait-for-changes)."),
                P(
                    "subscription", in: .query, required: false,
                    "One subscription's feed (feature subscription-feeds): JSON {type, values: {field: [text]}, windows: {field: {from, to}}}."
                ),
            ]
        case .record:
            return access + [
                P("type", in: .path, required: true, "The record type."), P("id", in: .path, required: true, "The record's id."),
            ]
        case .document, .documentHistory, .review:
            return access + [P("documentID", in: .path, required: true, "The document's identity (FormSync-Document).")]
        case .recordHistory:
            return access + [
                P("type", in: .path, required: true, "The record type."), P("id", in: .path, required: true, "The record's id."),
            ]
        case .webhookCreate, .webhooks:
            return access
        case .webhookSecret, .webhookDelete:
            return access + [P("id", in: .path, required: true, "The webhook's id.")]
        case .webhookDeliveries:
            return access + [
                P("id", in: .path, required: true, "The webhook's id."),
                P("state", in: .query, required: false, "Only deliveries in this state: pending, delivered or dead."),
                P("limit", in: .query, required: false, "How many, from 1 to 200 (50 when absent)."),
            ]
        case .webhookResend:
            return access + [
                P("id", in: .path, required: true, "The webhook's id."), P("delivery", in: .path, required: true, "The delivery's id."),
            ]
        case .submissions:
            return access + [
                P("cursor", in: .query, required: false, "The cursor of the last page taken; absent, from the start."),
                P("limit", in: .query, required: false, "How many events, 1 or more; above 500 it is served as 500 (100 when absent)."),
                P("form", in: .query, required: false, "Only this form's documents."),
                P("since", in: .query, required: false, "Only events the server committed at or after this RFC 3339 time."),
                P("until", in: .query, required: false, "Only events the server committed before this RFC 3339 time."),
            ]
        case .fileUpload:
            return access + [
                P.idempotencyKey, P.document,
                P("Content-Digest", in: .header, required: true, "sha-256=:<base64>: of the body (RFC 9530)."),
            ]
        case .uploadCreate:
            return access + [
                P.document, P("Upload-Length", in: .header, required: true, "The whole file's size in bytes."),
                P("Repr-Digest", in: .header, required: true, "sha-256=:<base64>: of the whole file (RFC 9530)."),
            ]
        case .uploadOffset:
            return access + [P.uploadID]
        case .uploadAppend:
            return access + [
                P.uploadID, P("Upload-Offset", in: .header, required: true, "Where the body goes: the offset the server holds."),
                P("Upload-Complete", in: .header, required: false, "?1 when the body ends the file."),
            ]
        case .submission:
            return access + [
                P.idempotencyKey, P.document,
                P("FormSync-Form", in: .header, required: true, "<Name>; version=<n>: the form and the version of the payload's shape."),
                P("If-Match", in: .header, required: false, "The version (ETag) an edit is based on; absent on creates."),
            ]
        }
    }

    /// The statuses it answers when it succeeds (any other is a problem, `ProblemCode`).
    public var successes: [Int] {
        switch self {
        case .health, .refresh, .fileLookup, .pendingFiles, .changes, .record, .document, .devices, .revocation, .supportBundles,
            .submissions, .documentHistory, .recordHistory, .webhooks, .webhookSecret, .webhookDelete, .webhookDeliveries, .webhookResend:
            return [200]
        case .enrol, .enrolmentCreate, .supportRequestCreate, .supportBundleUpload, .webhookCreate: return [201]
        case .review: return [201, 200]
        case .fileFetch: return [200, 206]
        case .fileUpload, .uploadCreate, .submission: return [200, 201]
        case .uploadOffset: return [204]
        case .uploadAppend: return [200, 201, 204]
        }
    }

    /// The route a request takes, nil for none. A POST to any other path is a submission (a
    /// form's endpoint is the spec's to name); a path the routes fix, asked with another method,
    /// is no route (`isFixedPath` tells 405 from 404).
    public static func match(method: String, path: String) -> Route? {
        switch (method, path) {
        case ("GET", "/health"): return .health
        case ("GET", let path) where path.hasPrefix("/files/sha-256/"): return .fileLookup
        case ("GET", let path) where path.hasPrefix("/files/"): return .fileFetch
        case ("GET", "/pending-files"): return .pendingFiles
        case ("GET", "/changes"): return .changes
        case ("GET", let path) where path.hasPrefix("/records/") && path.hasSuffix("/history"): return .recordHistory
        case ("GET", let path) where path.hasPrefix("/records/"): return .record
        case ("GET", let path) where path.hasPrefix("/documents/") && path.hasSuffix("/history"): return .documentHistory
        case ("GET", let path) where path.hasPrefix("/documents/"): return .document
        case ("GET", "/submissions"): return .submissions
        case ("POST", let path) where path.hasPrefix("/documents/") && path.hasSuffix("/reviews"): return .review
        case ("POST", "/webhooks"): return .webhookCreate
        case ("GET", "/webhooks"): return .webhooks
        case ("POST", let path) where path.hasPrefix("/webhooks/") && path.hasSuffix("/secret"): return .webhookSecret
        case ("POST", let path) where path.hasPrefix("/webhooks/") && path.hasSuffix("/resend"): return .webhookResend
        case ("GET", let path) where path.hasPrefix("/webhooks/") && path.hasSuffix("/deliveries"): return .webhookDeliveries
        case ("DELETE", let path) where path.hasPrefix("/webhooks/"): return .webhookDelete
        case ("GET", "/auth/devices"): return .devices
        case ("POST", "/auth/refresh"): return .refresh
        case ("POST", "/auth/enrol"): return .enrol
        case ("POST", "/auth/enrolments"): return .enrolmentCreate
        case ("POST", "/auth/revocations"): return .revocation
        case ("POST", "/support/requests"): return .supportRequestCreate
        case ("GET", "/support/bundles"): return .supportBundles
        case ("POST", "/support/bundles"): return .supportBundleUpload
        case ("POST", "/files"): return .fileUpload
        case ("POST", "/uploads"): return .uploadCreate
        case ("HEAD", let path) where path.hasPrefix("/uploads/"): return .uploadOffset
        case ("PATCH", let path) where path.hasPrefix("/uploads/"): return .uploadAppend
        case ("POST", _): return .submission
        default: return nil
        }
    }

    /// Whether `path` is a route's fixed path: asked with a method no route takes there, the
    /// answer is `405 method-not-allowed`, not `404 no-route`.
    public static func isFixedPath(_ path: String) -> Bool {
        allCases.contains { !$0.template.contains("<") && $0.template == path }
    }
}
