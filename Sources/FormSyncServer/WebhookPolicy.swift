extension SyncServer {
    /// How the server delivers webhooks (docs/PROTOCOL.md, "Webhooks"): how long it keeps
    /// retrying a delivery before it becomes a dead letter, how it backs off, how long it waits
    /// for a receiver, and how long a rotated secret keeps signing.
    public struct WebhookPolicy: Sendable, Equatable {
        /// From a delivery's first attempt to its last: then it is a dead letter. Three days.
        public var retryWindowSeconds: Int64 = 3 * 24 * 3600
        /// The wait after the first failure, doubling after each, at most `maxDelaySeconds`;
        /// each wait is cut to a random point of its upper half (jitter).
        public var firstDelaySeconds: Int64 = 10
        public var maxDelaySeconds: Int64 = 3600
        /// How long one post may take, the receiver's whole reply included.
        public var timeoutSeconds: Double = 10
        /// How long the secret a rotation replaced still signs beside the new one. A day.
        public var previousSecretSeconds: Int64 = 24 * 3600
        /// How many deliveries go out at once (one per document at a time, always).
        public var concurrency = 8

        public init() {}
    }

    /// What one delivery pass did.
    public struct WebhookPass: Sendable, Equatable {
        /// Deliveries queued for new events.
        public var queued = 0
        /// Posts made, and how many the receivers took (2xx).
        public var attempted = 0
        public var delivered = 0
        /// Deliveries that became dead letters.
        public var dead = 0

        public init() {}
    }
}
