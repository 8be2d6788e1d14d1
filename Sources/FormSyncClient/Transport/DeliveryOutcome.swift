import Foundation
import FormSyncModel

/// What the server made of one attempt, classified by the transport before the outbox decides
/// anything.
public enum DeliveryOutcome: Sendable, Equatable {
    /// Acknowledged: the server holds the document (or file).
    case done(ServerAcknowledgement)
    /// Try again later: network trouble, a timeout, 408/429/5xx, a reply that is not the
    /// server's. `retryAfterMilliseconds` is the server's Retry-After, when it sent one.
    case transient(reason: String, retryAfterMilliseconds: Int64?)
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

    public init(serverID: Int64? = nil, version: String? = nil) {
        self.serverID = serverID
        self.version = version
    }
}

