/// The body of `POST /auth/revocations`: one device, or every device of a principal, cut off at
/// once on every node. Exactly one of `deviceID` and `principal`.
public struct RevocationRequest: Codable, Sendable, Equatable {
    public var deviceID: String?
    public var principal: String?
    /// Why, for the device list and the support trail ("lost on route 12"): at most
    /// `CredentialRules.maxReasonCharacters` characters on one line.
    public var reason: String?

    public init(deviceID: String? = nil, principal: String? = nil, reason: String? = nil) {
        self.deviceID = deviceID
        self.principal = principal
        self.reason = reason
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case principal, reason
    }
}

/// What `POST /auth/revocations` answers: the devices it revoked now (a device revoked before
/// is not named again; revoking twice is harmless).
public struct Revocation: Codable, Sendable, Equatable {
    public var revoked: [String]

    public init(revoked: [String]) { self.revoked = revoked }
}
