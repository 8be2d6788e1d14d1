/// The back office asks one device for a support bundle (`POST /support/requests`): the
/// request reaches the device in its next pull (`FeedPage.supportRequest`) and is answered by
/// the bundle it sends next (`SupportBundle.answering`).
public struct SupportRequestCreate: Codable, Sendable, Equatable {
    /// The device asked (`DeviceSummary.deviceID`).
    public var deviceID: String
    /// Why support asks, for the device's log: at most `CredentialRules.maxReasonCharacters`.
    public var reason: String?

    public init(deviceID: String, reason: String? = nil) {
        self.deviceID = deviceID
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case reason
    }
}

/// A support request as the server keeps it: the reply to `POST /support/requests`, and what a
/// feed page carries to its device (`id` and `reason`).
public struct SupportRequest: Codable, Sendable, Equatable {
    /// What the bundle that answers it names (`SupportBundle.answering`).
    public var id: Int64
    public var deviceID: String
    /// Why support asks (the back office's words, or who asked).
    public var reason: String
    /// When it was asked (RFC 3339, the server's clock).
    public var requestedAt: String
    /// When a bundle answered it; nil while it is open.
    public var answeredAt: String?

    public init(id: Int64, deviceID: String, reason: String, requestedAt: String, answeredAt: String?) {
        self.id = id
        self.deviceID = deviceID
        self.reason = reason
        self.requestedAt = requestedAt
        self.answeredAt = answeredAt
    }

    enum CodingKeys: String, CodingKey {
        case id
        case deviceID = "device_id"
        case reason
        case requestedAt = "requested_at"
        case answeredAt = "answered_at"
    }
}
