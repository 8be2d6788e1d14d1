import FormSyncProtocol
import Foundation

/// One change from the server's feed: a record's latest state, its removal from the
/// device's scope (deleted, or moved to someone else), or, in a subscription's feed, its
/// leaving the subscription.
public struct RecordChange: Sendable, Equatable, Codable {
    public var type: String
    public var id: Int64
    /// The record's version after the change; 0 for a deletion.
    public var version: Int
    /// The record's fields' JSON; nil for a deletion or a record outside the subscription.
    public var fields: Data?
    /// In a subscription's feed: the record changed and no longer matches the subscription.
    public var isOutside: Bool

    public init(type: String, id: Int64, version: Int, fields: Data?, isOutside: Bool = false) {
        self.type = type
        self.id = id
        self.version = version
        self.fields = fields
        self.isOutside = isOutside && fields == nil
    }

    private enum CodingKeys: String, CodingKey { case type, id, version, fields, isOutside }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            type: try container.decode(String.self, forKey: .type), id: try container.decode(Int64.self, forKey: .id),
            version: try container.decode(Int.self, forKey: .version), fields: try container.decodeIfPresent(Data.self, forKey: .fields),
            isOutside: try container.decodeIfPresent(Bool.self, forKey: .isOutside) ?? false)
    }

    /// Whether the record left the device's scope.
    public var isDeletion: Bool { fields == nil && !isOutside }
}

/// One page of the change feed and where the next one starts.
public struct ChangePage: Sendable, Equatable {
    public var changes: [RecordChange]
    /// Opaque: resumes exactly after the last change of this page.
    public var cursor: String
    /// Whether the server holds more changes after this page.
    public var more: Bool
    /// A back-office request for this device's support bundle, open on the server.
    public var supportRequest: SupportRequest?
    /// The back office's reviews of this person's documents made since the cursor: kept with
    /// the page, then acted on (a document that has issues is reopened for its person).
    public var reviews: [Review]
    /// With `more`: how many changes follow this page, as the server counted them (nil when it
    /// did not say), for a pull's progress.
    public var remaining: Int?

    public init(
        changes: [RecordChange], cursor: String, more: Bool, supportRequest: SupportRequest? = nil, reviews: [Review] = [],
        remaining: Int? = nil
    ) {
        self.remaining = remaining
        self.reviews = reviews
        self.changes = changes
        self.cursor = cursor
        self.more = more
        self.supportRequest = supportRequest
    }
}

extension ChangePage {
    /// Whether the page says "more" without moving (nothing in it, or the cursor it was asked
    /// after): a server that did so would keep a device pulling forever, so the pull stops.
    func stalls(after cursor: String?) -> Bool {
        more && ((changes.isEmpty && reviews.isEmpty) || self.cursor == cursor)
    }
}

/// What became of one request for a page of the change feed.
public enum PullOutcome: Sendable, Equatable {
    case page(ChangePage)
    /// No server answered (as `DeliveryOutcome.unreachable`).
    case unreachable(reason: String)
    /// The token expired (401).
    case authExpired
    /// The server no longer knows the cursor (410): the device must pull again from the start.
    case cursorExpired
    /// The server refused or failed; `retryAfter` when it said when to come back.
    case failed(reason: String, retryAfter: Duration?)
}

/// What one `Outbox.pull()` did.
public struct PullReport: Sendable, Equatable {
    /// Pages committed.
    public var pages = 0
    /// Records written (created or changed).
    public var upserted = 0
    /// Records removed.
    public var deleted = 0
    /// Whether the device caught up with the server's feed.
    public var caughtUp = false
    /// Why the pull stopped early, when it did.
    public var stoppedBecause: PullOutcome?
    /// A back-office request for this device's support bundle that a page carried: the sync
    /// engine answers it (`Outbox.sendSupportBundle`).
    public var supportRequest: SupportRequest?
    /// Reviews of this person's documents the pull brought (`SyncEvent.reviewed` tells of each).
    public var reviews = 0

    public init() {}

    /// Adds what a pull of another feed did.
    mutating func absorb(_ other: PullReport) {
        pages += other.pages
        upserted += other.upserted
        deleted += other.deleted
        reviews += other.reviews
        caughtUp = caughtUp && other.caughtUp
        stoppedBecause = stoppedBecause ?? other.stoppedBecause
        supportRequest = supportRequest ?? other.supportRequest
    }
}
