import FormSyncModel
import FormSyncProtocol
import Foundation

/// One attempt as the transport sees it: everything needed to send it, with the payload's
/// placeholders already swapped for server ids. Tokens are not here: a transport asks for one
/// at send time, so they are never stored.
public struct OutboundRequest: Sendable, Equatable {
    /// What is sent: a form submission or a file upload.
    public enum Body: Sendable, Equatable {
        /// A form submission: JSON for `endpoint`, with the base version for `If-Match` on edits.
        case submission(form: String, version: Int, endpoint: String, payload: Data, baseVersion: String?)
        /// A stashed file upload.
        case file(path: String, contentType: String?, byteCount: Int64, sha256: Data)
    }

    /// The outbox's id for the item.
    public var itemID: ItemID
    /// Stable for the logical document: the server never creates it twice.
    public var documentID: String
    /// One per exact payload: the `Idempotency-Key`.
    public var attemptID: String
    /// The workspace (server + tenant) the item was captured in.
    public var workspace: String
    /// The person whose credential the request goes under (on a shared phone, the one who
    /// captured the item or was handed it); nil when nobody was signed in.
    public var principal: String?
    /// When its person captured it, by the device's clock: sent as `FormSync-Captured-At` with
    /// a submission, so the server's history shows it beside its own time.
    public var capturedAt: Date?
    public var body: Body

    /// Whether this is the upload of a stashed file.
    public var isFileUpload: Bool {
        if case .file = body { return true }
        return false
    }

    public init(
        itemID: ItemID, documentID: String, attemptID: String, workspace: String, principal: String? = nil, capturedAt: Date? = nil,
        body: Body
    ) {
        self.capturedAt = capturedAt
        self.itemID = itemID
        self.documentID = documentID
        self.attemptID = attemptID
        self.workspace = workspace
        self.principal = principal
        self.body = body
    }
}

/// Delivers attempts for one workspace. The HTTP transport is one; tests script another.
public protocol OutboxTransport: Sendable {
    /// The workspace (server + tenant) this transport talks to; it refuses any other's request.
    var workspace: String { get }
    /// Sends one attempt and classifies the reply. Never throws: every failure is an outcome.
    /// A cancelled task ends the request and answers `.unreachable`.
    func send(_ request: OutboundRequest) async -> DeliveryOutcome
    /// Whether the server itself answers now (its health endpoint), the verdict on "online";
    /// the OS's connectivity is only ever a hint.
    func probe() async -> Bool
    /// Fetches one page of the record change feed after `cursor` (nil: from the start).
    func fetchChanges(cursor: String?, limit: Int) async -> PullOutcome
    /// Up to `maxBytes` of stored file `id` from `offset` (`GET /files/<id>` with a range).
    func fetchFile(id: Int64, from offset: Int64, maxBytes: Int) async -> FilePiece
    /// What the server says it supports (`GET /health`'s `features`), nil when no FormSync
    /// server answers. Asked once per outbox launch; a transport that cannot tell says nil.
    func serverFeatures() async -> Set<String>?
    /// `send` with the attempt's cost and a file upload's progress.
    func deliver(
        _ request: OutboundRequest, progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void
    ) async -> (DeliveryOutcome, DeliveryDetails)
    /// `fetchChanges` under `principal`'s credential: the feed as that person may see it.
    func fetchChanges(cursor: String?, limit: Int, as principal: String?) async -> PullOutcome
    /// `fetchFile` under `principal`'s credential.
    func fetchFile(id: Int64, from offset: Int64, maxBytes: Int, as principal: String?) async -> FilePiece
    /// `fetchChanges` that, when the page after `cursor` is empty, lets the server hold it up to
    /// `wait` until a change the caller may see commits (`wait-for-changes`).
    func fetchChanges(cursor: String?, limit: Int, as principal: String?, waitingUpTo wait: Duration) async -> PullOutcome
    /// One page of a subscription's feed (`GET /changes?subscription=`): the records of its type
    /// that match it, and after the start the ones that left it, marked outside.
    func fetchChanges(cursor: String?, limit: Int, as principal: String?, subscription: SubscriptionQuery) async -> PullOutcome
    /// Sends the device's support bundle (`POST /support/bundles`) under `principal`'s credential.
    func sendSupportBundle(_ bundle: SupportBundle, as principal: String?) async -> BackOfficeReply<SupportBundleReceipt>
}

extension OutboxTransport {
    /// A transport that holds one credential answers for whoever is signed in.
    public func fetchChanges(cursor: String?, limit: Int, as principal: String?) async -> PullOutcome {
        await fetchChanges(cursor: cursor, limit: limit)
    }

    /// A transport that cannot wait on the server answers at once.
    public func fetchChanges(cursor: String?, limit: Int, as principal: String?, waitingUpTo wait: Duration) async -> PullOutcome {
        await fetchChanges(cursor: cursor, limit: limit, as: principal)
    }

    /// A transport that cannot read a subscription's feed says so.
    public func fetchChanges(cursor: String?, limit: Int, as principal: String?, subscription: SubscriptionQuery) async -> PullOutcome {
        .failed(reason: "this transport does not read subscriptions", retryAfter: nil)
    }

    /// A transport that cannot send support bundles says so.
    public func sendSupportBundle(_ bundle: SupportBundle, as principal: String?) async -> BackOfficeReply<SupportBundleReceipt> {
        .unreachable(reason: "this transport does not send support bundles")
    }

    /// A transport that holds one credential answers for whoever is signed in.
    public func fetchFile(id: Int64, from offset: Int64, maxBytes: Int, as principal: String?) async -> FilePiece {
        await fetchFile(id: id, from: offset, maxBytes: maxBytes)
    }
}

/// What one attempt cost on the wire, for the engine's events.
public struct DeliveryDetails: Sendable, Equatable {
    /// The final HTTP status, when a server answered.
    public var status: Int?
    /// Bytes of request bodies sent (for a resumable upload, only what this attempt sent).
    public var bytesSent: Int64
    /// Bytes of reply bodies received.
    public var bytesReceived: Int64
    /// What the server said it supports in its last reply (`FormSync-Features`, such as
    /// `deferred-files`); nil when the reply did not say.
    public var serverFeatures: Set<String>?
    /// For a conflict (`409`, `412`): who made the server's version the write met, as the reply
    /// named it (`Acknowledgement.lastChange`).
    public var lastChange: ChangeAuthor?

    public init(
        status: Int? = nil, bytesSent: Int64 = 0, bytesReceived: Int64 = 0, serverFeatures: Set<String>? = nil,
        lastChange: ChangeAuthor? = nil
    ) {
        self.lastChange = lastChange
        self.status = status
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.serverFeatures = serverFeatures
    }

    /// The features a `FormSync-Features` header lists (comma-separated tokens; at most 32 of
    /// at most 64 characters are read).
    package static func features(_ header: String?) -> Set<String>? {
        guard let header, header.utf8.count <= 4_096 else { return nil }
        return Set(
            header.split(separator: ",").prefix(32).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty && $0.utf8.count <= 64
            })
    }
}

extension OutboxTransport {
    /// Sends one attempt and also says what it cost and how a file upload progresses
    /// (`progress(sent, total)`, bytes of the whole file). A transport without these details
    /// sends as `send` does.
    public func deliver(
        _ request: OutboundRequest, progress: @escaping @Sendable (_ sent: Int64, _ total: Int64) -> Void
    ) async -> (DeliveryOutcome, DeliveryDetails) {
        (await send(request), DeliveryDetails())
    }

    /// A transport that fetches no files.
    public func fetchFile(id: Int64, from offset: Int64, maxBytes: Int) async -> FilePiece {
        .failed(reason: "this transport does not fetch files", retryAfter: nil)
    }

    /// A transport that cannot tell what the server supports.
    public func serverFeatures() async -> Set<String>? { nil }

    /// A transport that only pushes: pulling is refused, and nothing is lost.
    public func fetchChanges(cursor: String?, limit: Int) async -> PullOutcome {
        .failed(reason: "this transport does not pull records", retryAfter: nil)
    }
}

extension OutboundRequest {
    /// The submission's form name, or nil for a file upload.
    public var form: String? {
        if case .submission(let form, _, _, _, _) = body { return form }
        return nil
    }

    /// The JSON sent, for submissions.
    public var payload: Data? {
        if case .submission(_, _, _, let payload, _) = body { return payload }
        return nil
    }

    /// The path a submission goes to, for submissions.
    public var endpoint: String? {
        if case .submission(_, _, let endpoint, _, _) = body { return endpoint }
        return nil
    }
}
