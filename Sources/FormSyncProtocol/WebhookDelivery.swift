/// One event's delivery to one receiver, as the back office lists it
/// (`GET /webhooks/{id}/deliveries`): its state and the last attempt's outcome.
public struct WebhookDelivery: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable, CaseIterable {
        /// Waiting for its first or next attempt (or for an earlier event of its document).
        case pending
        /// The receiver answered 2xx.
        case delivered
        /// The retry window closed without a 2xx: a dead letter, which the back office may
        /// resend (`POST /webhooks/{id}/deliveries/{delivery}/resend`).
        case dead
    }

    public var id: Int64
    public var webhookID: Int64
    /// The event it carries (`SubmissionEvent.eventID`, the receiver's key for duplicates).
    public var eventID: Int64
    public var event: HistoryEvent
    public var documentID: String
    public var state: State
    public var attempts: Int
    /// The last attempt's HTTP status (nil: no answer), and what went wrong.
    public var lastStatus: Int?
    public var lastError: String?
    /// RFC 3339, the server's clock.
    public var lastAttemptAt: String?
    public var nextAttemptAt: String?
    public var deliveredAt: String?

    public init(
        id: Int64, webhookID: Int64, eventID: Int64, event: HistoryEvent, documentID: String, state: State, attempts: Int,
        lastStatus: Int?, lastError: String?, lastAttemptAt: String?, nextAttemptAt: String?, deliveredAt: String?
    ) {
        self.id = id
        self.webhookID = webhookID
        self.eventID = eventID
        self.event = event
        self.documentID = documentID
        self.state = state
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.lastAttemptAt = lastAttemptAt
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
    }

    enum CodingKeys: String, CodingKey {
        case id
        case webhookID = "webhook_id"
        case eventID = "event_id"
        case event
        case documentID = "document_id"
        case state, attempts
        case lastStatus = "last_status"
        case lastError = "last_error"
        case lastAttemptAt = "last_attempt_at"
        case nextAttemptAt = "next_attempt_at"
        case deliveredAt = "delivered_at"
    }
}

/// A receiver's deliveries, newest first (`GET /webhooks/{id}/deliveries`).
public struct WebhookDeliveryList: Codable, Sendable, Equatable {
    public var deliveries: [WebhookDelivery]

    public init(deliveries: [WebhookDelivery]) {
        self.deliveries = deliveries
    }
}
