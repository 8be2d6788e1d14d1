/// The body of `POST /auth/refresh`: the device's current refresh token, and what the device
/// says of itself now (its app may have been updated since it enrolled).
public struct RefreshRequest: Codable, Sendable, Equatable {
    public var refreshToken: String
    public var device: DeviceReport?

    public init(refreshToken: String, device: DeviceReport? = nil) {
        self.refreshToken = refreshToken
        self.device = device
    }

    enum CodingKeys: String, CodingKey {
        case refreshToken = "refresh_token"
        case device
    }
}
