import FormSyncProtocol
import Foundation
import Synchronization

/// What the outbox and the engine do, one event at a time, for logs, metrics and support:
/// every attempt with its status, duration and bytes, backoffs with their reason, parked
/// items, file upload progress, pulls, and the network going away and coming back.
public enum SyncEvent: Sendable, Equatable {
    /// An attempt went on the wire. `attempt` counts from 1.
    case attemptStarted(item: ItemID, kind: OutboxItem.Kind, form: String?, attempt: Int)
    /// What came of it, as the transport classified the reply (`outcome.name` is its name for a
    /// log line); `status` the HTTP status when a server answered.
    case attemptFinished(item: ItemID, outcome: DeliveryOutcome, status: Int?, duration: Duration, bytesSent: Int64, bytesReceived: Int64)
    /// A file upload's progress: bytes the server holds of `total`.
    case uploadProgress(item: ItemID, sent: Int64, total: Int64)
    /// The item waits until `until` before its next attempt.
    case backoffScheduled(item: ItemID, until: Date, reason: String)
    /// The item needs a person.
    case parked(item: ItemID, state: SyncState, reason: String)
    /// A pull ended.
    case pulled(upserted: Int, deleted: Int, caughtUp: Bool)
    /// A page of a pull committed: the records this pull stored so far, the bytes of them, and
    /// how many changes the server said follow (nil when it did not say): a long first pull's
    /// progress.
    case pullProgress(records: Int, bytes: Int, remaining: Int?)
    /// No server answers; the engine waits and probes.
    case offline(reason: String)
    /// A server answers again.
    case online
    /// The network's cost changed (`Outbox.setNetworkCost`): `waitingFiles` files now wait for
    /// an unmetered network.
    case networkCost(NetworkCost, waitingFiles: Int)
    /// The server revoked the device's credentials (`Outbox.deviceRevoked`): `sealed` items
    /// that had not gone out are kept for support and never sent.
    case revoked(reason: String, sealed: Int)
    /// The server revoked one person's credential on a shared phone (`Outbox.personRevoked`):
    /// their `sealed` items are kept for support, and the others work on.
    case personRevoked(principal: String, reason: String, sealed: Int)
    /// The device sent its support bundle, answering the back office's request `request`.
    case supportBundleSent(request: Int64)
    /// The back office reviewed a document this device sent (`Outbox.reviews(of:)`): `item`, the
    /// item that sent it when the device still holds it; `reopened` when the review sent it back
    /// and the item is now `rejected` for its person to fix.
    case reviewed(item: ItemID?, review: Review, reopened: Bool)
}

/// One attempt as the outbox remembers it (the newest 20 per item are kept).
public struct AttemptRecord: Sendable, Equatable, Codable {
    /// When it finished, by the outbox's clock.
    public var at: Date
    /// `done`, `transient`, `unreachable`, `authExpired`, `conflict` or `rejected`.
    public var outcome: String
    /// The HTTP status, when a server answered.
    public var status: Int?
    /// The reason given, when it did not land.
    public var reason: String?
    /// How long it took, from the request's start to its classified reply.
    public var duration: Duration
}
