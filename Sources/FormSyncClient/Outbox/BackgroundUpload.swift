import Foundation

/// A file upload handed to an OS background-transfer service (an iOS background `URLSession`),
/// which runs it while the app is suspended and reports back later, perhaps to a relaunched
/// app: the request to make (`HTTPTransport.backgroundRequest(for:)`), the stashed file to
/// send as its body, and the identities to hand back with the reply
/// (`Outbox.finishBackgroundUpload`). Codable, so the app can keep it with the task's
/// identifier across a relaunch.
public struct BackgroundUpload: Sendable, Codable, Equatable {
    /// The upload item.
    public var itemID: ItemID
    /// The attempt this upload is (its `Idempotency-Key`).
    public var attemptID: String
    /// The file's own document identity (`FormSync-Document`).
    public var documentID: String
    /// The workspace it belongs to.
    public var workspace: String
    /// The person whose credential it goes under (see `OutboundRequest.principal`).
    public var principal: String?
    /// The stashed copy to upload from; the outbox keeps it until the upload is confirmed.
    public var file: URL
    public var contentType: String
    public var byteCount: Int64
    /// The file's SHA-256 (`Content-Digest`).
    public var sha256: Data

    public init(
        itemID: ItemID, attemptID: String, documentID: String, workspace: String, principal: String? = nil, file: URL,
        contentType: String, byteCount: Int64, sha256: Data
    ) {
        self.itemID = itemID
        self.attemptID = attemptID
        self.documentID = documentID
        self.workspace = workspace
        self.principal = principal
        self.file = file
        self.contentType = contentType
        self.byteCount = byteCount
        self.sha256 = sha256
    }
}
