/// One device as `GET /auth/devices` lists it for the back office: whose it is, what it said of
/// itself, when it was last seen, and whether it was revoked. Times are RFC 3339, UTC.
public struct DeviceSummary: Codable, Sendable, Equatable {
    public var deviceID: String
    public var principal: String
    public var role: String
    public var workspaces: [String]
    public var name: String
    public var appVersion: String
    public var specVersion: String
    public var enrolledAt: String
    /// The last request the server saw from it (to within a minute).
    public var lastSeenAt: String
    public var revokedAt: String?
    public var revokedReason: String?

    public init(
        deviceID: String, principal: String, role: String, workspaces: [String], name: String, appVersion: String, specVersion: String,
        enrolledAt: String, lastSeenAt: String, revokedAt: String?, revokedReason: String?
    ) {
        self.deviceID = deviceID
        self.principal = principal
        self.role = role
        self.workspaces = workspaces
        self.name = name
        self.appVersion = appVersion
        self.specVersion = specVersion
        self.enrolledAt = enrolledAt
        self.lastSeenAt = lastSeenAt
        self.revokedAt = revokedAt
        self.revokedReason = revokedReason
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case principal, role, workspaces, name
        case appVersion = "app_version"
        case specVersion = "spec_version"
        case enrolledAt = "enrolled_at"
        case lastSeenAt = "last_seen_at"
        case revokedAt = "revoked_at"
        case revokedReason = "revoked_reason"
    }
}

/// The body of `GET /auth/devices`.
public struct DeviceList: Codable, Sendable, Equatable {
    public var devices: [DeviceSummary]

    public init(devices: [DeviceSummary]) { self.devices = devices }
}
