import Foundation

/// A back-office request for one device's support bundle, as the store keeps it.
package struct StoredSupportRequest: Sendable, Equatable {
    package var id: Int64
    package var workspace: String
    package var deviceID: String
    package var reason: String
    package var requestedBy: String
    package var requestedAt: Int64
    /// When a bundle answered it (nil: open), and which.
    package var answeredAt: Int64?
    package var bundleID: Int64?

    package init(
        id: Int64, workspace: String, deviceID: String, reason: String, requestedBy: String, requestedAt: Int64, answeredAt: Int64?,
        bundleID: Int64?
    ) {
        self.id = id
        self.workspace = workspace
        self.deviceID = deviceID
        self.reason = reason
        self.requestedBy = requestedBy
        self.requestedAt = requestedAt
        self.answeredAt = answeredAt
        self.bundleID = bundleID
    }
}

/// A support bundle a device sent, as received (its JSON, checked before it was kept).
package struct StoredSupportBundle: Sendable, Equatable {
    package var id: Int64
    package var workspace: String
    package var deviceID: String?
    package var principal: String
    package var receivedAt: Int64
    package var body: Data

    package init(id: Int64, workspace: String, deviceID: String?, principal: String, receivedAt: Int64, body: Data) {
        self.id = id
        self.workspace = workspace
        self.deviceID = deviceID
        self.principal = principal
        self.receivedAt = receivedAt
        self.body = body
    }
}

/// Where the server keeps support requests and the bundles devices send (docs/PROTOCOL.md,
/// "Support bundles"). Part of every `ServerStore`.
package protocol SupportStore: AnyObject, Sendable {
    /// Stores a new open request; its id.
    func addSupportRequest(workspace: String, deviceID: String, reason: String, requestedBy: String, at now: Int64) throws -> Int64
    /// The oldest open request for `device` in `workspace`, if any.
    func openSupportRequest(workspace: String, device: String) throws -> StoredSupportRequest?
    /// One request of `workspace` by id.
    func supportRequest(_ id: Int64, workspace: String) throws -> StoredSupportRequest?
    /// Marks a request answered by `bundle`.
    func answerSupportRequest(_ id: Int64, bundle: Int64, at now: Int64) throws
    /// Stores a received bundle; its id.
    func addSupportBundle(workspace: String, deviceID: String?, principal: String, body: Data, at now: Int64) throws -> Int64
    /// The newest `limit` bundles of `workspace` (of `device` alone when given), newest first.
    func supportBundles(workspace: String, device: String?, limit: Int) throws -> [StoredSupportBundle]
}
