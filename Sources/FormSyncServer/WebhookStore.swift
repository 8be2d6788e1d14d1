import FormSyncProtocol
import Foundation

/// A receiver as the store keeps it, with its signing secrets and how far into the submissions
/// feed its deliveries were made.
package struct StoredWebhook: Sendable, Equatable {
    package var id: Int64
    package var workspace: String
    package var url: String
    package var events: [HistoryEvent]
    /// Empty: every form.
    package var forms: [String]
    package var secret: String
    /// A rotated secret that still signs beside `secret` until `previousUntil` (server ms).
    package var previousSecret: String?
    package var previousUntil: Int64?
    package var createdBy: String
    package var createdAt: Int64
    /// The feed position up to which its deliveries were made.
    package var cursor: Int64

    package init(
        id: Int64, workspace: String, url: String, events: [HistoryEvent], forms: [String], secret: String, previousSecret: String?,
        previousUntil: Int64?, createdBy: String, createdAt: Int64, cursor: Int64
    ) {
        self.id = id
        self.workspace = workspace
        self.url = url
        self.events = events
        self.forms = forms
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousUntil = previousUntil
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.cursor = cursor
    }

    /// Whether it receives `event`.
    func wants(_ event: StoredDocumentEvent) -> Bool {
        events.contains(event.event) && (forms.isEmpty || forms.contains(event.form))
    }
}

/// One event's delivery to one receiver, as the store keeps it.
package struct StoredDelivery: Sendable, Equatable {
    package var id: Int64
    package var webhookID: Int64
    package var eventID: Int64
    /// The event's feed position: a document's deliveries go in this order.
    package var seq: Int64
    package var documentID: String
    package var event: HistoryEvent
    package var state: WebhookDelivery.State
    package var attempts: Int
    package var firstAttemptAt: Int64?
    package var lastAttemptAt: Int64?
    package var nextAttemptAt: Int64
    package var lastStatus: Int?
    package var lastError: String?
    package var deliveredAt: Int64?

    package init(
        id: Int64, webhookID: Int64, eventID: Int64, seq: Int64, documentID: String, event: HistoryEvent, state: WebhookDelivery.State,
        attempts: Int, firstAttemptAt: Int64?, lastAttemptAt: Int64?, nextAttemptAt: Int64, lastStatus: Int?, lastError: String?,
        deliveredAt: Int64?
    ) {
        self.id = id
        self.webhookID = webhookID
        self.eventID = eventID
        self.seq = seq
        self.documentID = documentID
        self.event = event
        self.state = state
        self.attempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.nextAttemptAt = nextAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.deliveredAt = deliveredAt
    }
}

/// What became of one attempt, as the store records it.
package struct DeliveryAttempt: Sendable, Equatable {
    package var state: WebhookDelivery.State
    package var status: Int?
    package var error: String?
    /// When to try again (pending), by the server's clock.
    package var nextAttemptAt: Int64
    package var at: Int64

    package init(state: WebhookDelivery.State, status: Int?, error: String?, nextAttemptAt: Int64, at: Int64) {
        self.state = state
        self.status = status
        self.error = error
        self.nextAttemptAt = nextAttemptAt
        self.at = at
    }
}

/// Where the server keeps webhooks and their deliveries (docs/PROTOCOL.md, "Webhooks"): a
/// durable queue in the same database as the events, so that a delivery survives a restart and
/// a node's death. Part of every `ServerStore`.
package protocol WebhookStore: AnyObject, Sendable {
    /// Registers a receiver whose deliveries begin after feed position `cursor`; its id.
    func addWebhook(_ webhook: StoredWebhook) throws -> Int64
    /// The receivers of `workspace`, or of every workspace (nil), oldest first.
    func webhooks(workspace: String?) throws -> [StoredWebhook]
    /// One receiver of `workspace`; inside a transaction, `locked` holds it until the end (one
    /// node at a time makes its deliveries).
    func webhook(_ id: Int64, workspace: String?, locked: Bool) throws -> StoredWebhook?
    func setSecrets(_ id: Int64, secret: String, previous: String?, previousUntil: Int64?) throws
    /// Removes a receiver and its deliveries; false when there was none.
    func deleteWebhook(_ id: Int64) throws -> Bool
    /// Queues `events` for the receiver (one it has already is left alone) and moves its cursor.
    func addDeliveries(webhook: Int64, events: [StoredDocumentEvent], cursor: Int64, at now: Int64) throws
    /// Claims up to `limit` deliveries due at `now` until `leaseUntil`: only the oldest pending
    /// delivery of each receiver's document, so that a document's events go in order.
    func claimDeliveries(now: Int64, leaseUntil: Int64, limit: Int) throws -> [StoredDelivery]
    /// Records an attempt's outcome and releases the claim.
    func finishDelivery(_ id: Int64, _ attempt: DeliveryAttempt) throws
    /// One delivery of a receiver.
    func delivery(_ id: Int64, webhook: Int64) throws -> StoredDelivery?
    /// A receiver's deliveries, newest first (of one state when given).
    func deliveries(webhook: Int64, state: WebhookDelivery.State?, limit: Int) throws -> [StoredDelivery]
    /// How many of a receiver's deliveries are pending, and dead.
    func deliveryCounts(webhook: Int64) throws -> (pending: Int, dead: Int)
    /// A dead letter back to pending, with a fresh retry window; false when it is not one.
    func resendDelivery(_ id: Int64, webhook: Int64, at now: Int64) throws -> Bool
}
