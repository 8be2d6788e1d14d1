import FormSyncModel
import Foundation

/// What the server made of one attempt, classified by the transport before the outbox decides
/// anything.
public enum DeliveryOutcome: Sendable, Equatable {
    /// Acknowledged: the server holds the document (or file).
    case done(ServerAcknowledgement)
    /// The server answered and asked us to come back (408, 409 in flight, 425, 429, 5xx). Counts
    /// as an attempt. `retryAfter` is the server's Retry-After, when it sent one.
    case transient(reason: String, retryAfter: Duration?)
    /// No server answered: DNS failure, refused, reset, timeout, TLS failure, any redirect, a
    /// captive portal's page, a cancelled request. The network's fault, not the item's: it is
    /// not counted as an attempt, keeps its attempt identity, and stops the drain until the
    /// server is reachable again.
    case unreachable(reason: String)
    /// The token expired (401): pause everything, refresh, resume. Not an attempt.
    case authExpired
    /// The edit's base is stale (412): the server's current record and its version.
    case conflict(current: Data, version: String)
    /// The server will never accept this payload (422, 400, 403, 404, 413).
    case rejected(reason: String, fieldErrors: [FieldError])
}

/// The server's acknowledgement of a delivered item.
public struct ServerAcknowledgement: Sendable, Equatable, Codable {
    /// The id the server gave the file or record (what placeholders are swapped for).
    public var serverID: Int64?
    /// The record's version after this write (its ETag), the base of later edits.
    public var version: String?
    /// The record the write created or changed, as the server now holds it (`entity`), for the
    /// device's record store.
    public var record: RecordChange?
    /// The records the submission's lists created (`created_records`), one per item: what each
    /// item's placeholder is swapped for, and the record for the device's store.
    public var createdRecords: [CreatedListRecord]

    public init(serverID: Int64? = nil, version: String? = nil, record: RecordChange? = nil, createdRecords: [CreatedListRecord] = []) {
        self.serverID = serverID
        self.version = version
        self.record = record
        self.createdRecords = createdRecords
    }
}

/// A record an item of a submission's list created: the list, the item's index (from 0), and
/// the record as the server holds it (without fields when it has been deleted since).
public struct CreatedListRecord: Sendable, Equatable, Codable {
    public var list: String
    public var index: Int
    public var record: RecordChange

    public init(list: String, index: Int, record: RecordChange) {
        self.list = list
        self.index = index
        self.record = record
    }
}

extension DeliveryOutcome {
    /// The outcome's name for a log line or an attempt's history: `done`, `transient`,
    /// `unreachable`, `authExpired`, `conflict` or `rejected`.
    public var name: String {
        switch self {
        case .done: return "done"
        case .transient: return "transient"
        case .unreachable: return "unreachable"
        case .authExpired: return "authExpired"
        case .conflict: return "conflict"
        case .rejected: return "rejected"
        }
    }
}

extension DeliveryOutcome {
    /// How FormSync reads a server's reply to one submission or file upload (docs/PROTOCOL.md
    /// §4), for an app whose request went through a transfer service of its own (an iOS
    /// background `URLSession` that uploads while the app is suspended): it hands back the
    /// status, the headers (any case) and the body, with the `FormSync-Document` the request
    /// carried, and gets exactly the outcome `HTTPTransport` would have made of them. Only a 2xx
    /// JSON reply echoing the document is an acknowledgement; a captive portal's page or a
    /// redirect is `unreachable`; `Retry-After` is bounded.
    public init(status: Int, headers: [String: String], body: Data, documentID: String) {
        var lowered: [String: String] = [:]
        for (name, value) in headers { lowered[name.lowercased()] = value }
        self = HTTPTransport.classify(status: status, headers: lowered, body: body, documentID: documentID)
    }
}
