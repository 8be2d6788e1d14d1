/// The reply to `POST /support/bundles`: the bundle's id on the server.
public struct SupportBundleReceipt: Codable, Sendable, Equatable {
    public var id: Int64

    public init(id: Int64) { self.id = id }
}

/// One bundle a device sent, as `GET /support/bundles` lists it for the back office.
public struct ReceivedSupportBundle: Codable, Sendable, Equatable {
    /// The server's id of the bundle.
    public var id: Int64
    /// The device that sent it (nil for a credential that has no device).
    public var deviceID: String?
    /// The principal whose token sent it.
    public var principal: String
    /// When it arrived (RFC 3339, the server's clock).
    public var receivedAt: String
    /// The bundle as the device sent it.
    public var bundle: SupportBundle

    public init(id: Int64, deviceID: String?, principal: String, receivedAt: String, bundle: SupportBundle) {
        self.id = id
        self.deviceID = deviceID
        self.principal = principal
        self.receivedAt = receivedAt
        self.bundle = bundle
    }

    enum CodingKeys: String, CodingKey {
        case id
        case deviceID = "device_id"
        case principal
        case receivedAt = "received_at"
        case bundle
    }
}

/// The body of `GET /support/bundles`: the newest first.
public struct SupportBundleList: Codable, Sendable, Equatable {
    public var bundles: [ReceivedSupportBundle]

    public init(bundles: [ReceivedSupportBundle]) { self.bundles = bundles }
}
