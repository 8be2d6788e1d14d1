/// Every route of the protocol (docs/PROTOCOL.md, "Endpoints"): its method, its path as the
/// document spells it, and what it reads. The server dispatches by it, takes a route's body
/// limit and fault class from it, and PROTOCOL.md is held to it by a test: a new route is one
/// case here and its handler.
public enum Route: String, Sendable, CaseIterable {
    /// `GET /health`: who answers, and what it supports.
    case health
    /// `POST /auth/refresh`: a refresh token for a new access token.
    case refresh
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
        /// A small JSON object (a refresh token).
        case token
        /// A document's JSON payload.
        case payload
        /// A file's bytes.
        case file
    }

    /// The request method.
    public var method: String {
        switch self {
        case .health, .fileLookup, .fileFetch, .pendingFiles, .changes, .record, .document: return "GET"
        case .refresh, .fileUpload, .uploadCreate, .submission: return "POST"
        case .uploadOffset: return "HEAD"
        case .uploadAppend: return "PATCH"
        }
    }

    /// The path as docs/PROTOCOL.md writes it, placeholders in angle brackets.
    public var template: String {
        switch self {
        case .health: return "/health"
        case .refresh: return "/auth/refresh"
        case .fileLookup: return "/files/sha-256/<hex>"
        case .fileFetch: return "/files/<id>"
        case .pendingFiles: return "/pending-files"
        case .changes: return "/changes"
        case .record: return "/records/<type>/<id>"
        case .document: return "/documents/<document id>"
        case .fileUpload: return "/files"
        case .uploadCreate: return "/uploads"
        case .uploadOffset, .uploadAppend: return "/uploads/<id>"
        case .submission: return "<form endpoint>"
        }
    }

    /// What the request carries.
    public var body: Body {
        switch self {
        case .refresh: return .token
        case .submission: return .payload
        case .fileUpload, .uploadAppend: return .file
        default: return .none
        }
    }

    /// Whether the request names a workspace and needs an access token (all but the health
    /// check and the refresh, which carries its own token in its body).
    public var needsAccessToken: Bool { self != .health && self != .refresh }

    /// Whether the request writes under an `Idempotency-Key` and a `FormSync-Document`.
    public var isDocumentWrite: Bool { self == .submission || self == .fileUpload || self == .uploadCreate }

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
        case ("GET", let path) where path.hasPrefix("/records/"): return .record
        case ("GET", let path) where path.hasPrefix("/documents/"): return .document
        case ("POST", "/auth/refresh"): return .refresh
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
