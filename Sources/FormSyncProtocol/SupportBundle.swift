/// What a device tells support of its queue (docs/PROTOCOL.md, "Support bundles"): counts,
/// the items with their reasons and attempt history, versions and settings. It holds no token
/// and no file bytes; payloads only when the app opted in (`includesPayloads`). A device sends
/// it with `POST /support/bundles`, unasked or `answering` a back-office request that reached it
/// in its last pull; the back office reads it with `GET /support/bundles`.
public struct SupportBundle: Codable, Sendable, Equatable {
    /// The shape's version: 1.
    public var formsyncBundle: Int
    /// When the device made it (RFC 3339, the device's clock).
    public var createdAt: String
    /// The support request it answers (`SupportRequest.id`), nil when sent unasked.
    public var answering: Int64?
    /// What the device says of itself: its name, app and spec versions.
    public var device: DeviceReport?
    /// The outbox's schema version.
    public var outboxSchema: Int
    /// The workspaces the outbox holds items or records of.
    public var workspaces: [String]
    /// Items per state (`SyncState` names).
    public var counts: [String: Int]
    /// How many pulled records the device holds, every person's.
    public var recordsHeld: Int
    /// The outbox's settings, by name (concurrency, retry policy, leases, limits).
    public var settings: [String: String]
    /// The people signed in on a shared phone, and who is current.
    public var people: [Person]
    /// Why the device was revoked, when it was.
    public var revoked: String?
    /// Whether item payloads are included (the app's choice; never by default).
    public var includesPayloads: Bool
    /// The items: every one that needs a person, then the newest, up to `maxItems`.
    public var items: [Item]

    /// One person on a shared phone.
    public struct Person: Codable, Sendable, Equatable {
        public var principal: String
        /// Whether their credential is on the device (their items may go out).
        public var signedIn: Bool
        /// Whether they are the one capturing now.
        public var current: Bool

        public init(principal: String, signedIn: Bool, current: Bool) {
            self.principal = principal
            self.signedIn = signedIn
            self.current = current
        }

        enum CodingKeys: String, CodingKey {
            case principal
            case signedIn = "signed_in"
            case current
        }
    }

    /// One queued item, as `OutboxItem` describes it.
    public struct Item: Codable, Sendable, Equatable {
        /// The outbox's id of it.
        public var id: Int64
        public var workspace: String
        /// Who captured it (or was handed it) on a shared phone.
        public var principal: String?
        /// `submission` or `file`.
        public var kind: String
        /// The form's name and spec version (nil for a file).
        public var form: String?
        public var formVersion: Int?
        /// Its `SyncState` name.
        public var state: String
        /// Counted attempts.
        public var attempts: Int
        /// Why the last attempt did not land, or why it is parked or sealed.
        public var lastError: String?
        /// Its `FormSync-Document`.
        public var documentID: String
        /// The ordering lane it waits in.
        public var lane: String
        /// The server's field errors, as `pointer: detail`.
        public var fieldErrors: [String]
        public var history: [Attempt]
        /// The payload's JSON text, only when the app opted in.
        public var payload: String?

        public init(
            id: Int64, workspace: String, principal: String?, kind: String, form: String?, formVersion: Int?, state: String,
            attempts: Int, lastError: String?, documentID: String, lane: String, fieldErrors: [String], history: [Attempt],
            payload: String?
        ) {
            self.id = id
            self.workspace = workspace
            self.principal = principal
            self.kind = kind
            self.form = form
            self.formVersion = formVersion
            self.state = state
            self.attempts = attempts
            self.lastError = lastError
            self.documentID = documentID
            self.lane = lane
            self.fieldErrors = fieldErrors
            self.history = history
            self.payload = payload
        }

        enum CodingKeys: String, CodingKey {
            case id, workspace, principal, kind, form
            case formVersion = "form_version"
            case state, attempts
            case lastError = "last_error"
            case documentID = "document_id"
            case lane
            case fieldErrors = "field_errors"
            case history, payload
        }
    }

    /// One attempt of an item (`AttemptRecord`).
    public struct Attempt: Codable, Sendable, Equatable {
        /// When it finished (RFC 3339, the device's clock).
        public var at: String
        /// `done`, `transient`, `unreachable`, `authExpired`, `conflict` or `rejected`.
        public var outcome: String
        /// The HTTP status, when a server answered.
        public var status: Int?
        /// The reason given, when it did not land.
        public var reason: String?
        /// How long it took.
        public var milliseconds: Int64

        public init(at: String, outcome: String, status: Int?, reason: String?, milliseconds: Int64) {
            self.at = at
            self.outcome = outcome
            self.status = status
            self.reason = reason
            self.milliseconds = milliseconds
        }
    }

    public init(
        createdAt: String, answering: Int64?, device: DeviceReport?, outboxSchema: Int, workspaces: [String], counts: [String: Int],
        recordsHeld: Int, settings: [String: String], people: [Person], revoked: String?, includesPayloads: Bool, items: [Item]
    ) {
        formsyncBundle = Self.version
        self.createdAt = createdAt
        self.answering = answering
        self.device = device
        self.outboxSchema = outboxSchema
        self.workspaces = workspaces
        self.counts = counts
        self.recordsHeld = recordsHeld
        self.settings = settings
        self.people = people
        self.revoked = revoked
        self.includesPayloads = includesPayloads
        self.items = items
    }

    enum CodingKeys: String, CodingKey {
        case formsyncBundle = "formsync_bundle"
        case createdAt = "created_at"
        case answering, device
        case outboxSchema = "outbox_schema"
        case workspaces, counts
        case recordsHeld = "records_held"
        case settings, people, revoked
        case includesPayloads = "includes_payloads"
        case items
    }

    /// The shape's version.
    public static let version = 1
    /// The most bytes of a bundle's JSON a server takes (and a device sends).
    public static let maxBytes = 1 << 20
    /// The most items a bundle lists.
    public static let maxItems = 500

    /// Why a server cannot take the bundle, or nil.
    public var problem: String? {
        if formsyncBundle != Self.version { return "formsync_bundle is \(Self.version)" }
        if items.count > Self.maxItems { return "a bundle lists at most \(Self.maxItems) items" }
        if let answering, answering <= 0 { return "answering is a support request's id" }
        if let problem = device?.problem { return problem }
        return nil
    }
}
