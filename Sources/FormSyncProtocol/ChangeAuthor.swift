/// Who made a version of a document or a record, when, and through what (docs/PROTOCOL.md,
/// "History"): in a version's history, in the submissions feed, and in a `409`/`412` reply
/// (`Acknowledgement.lastChange`), so that an app can say "changed by the dispatcher at 10:42".
public struct ChangeAuthor: Codable, Sendable, Equatable {
    /// How the change was made.
    public enum Via: String, Codable, Sendable, CaseIterable {
        /// A form's submission created or edited a document (and the record it writes).
        case submission
        /// A form that edits a record.
        case recordEdit = "record-edit"
        /// The server itself: a file a document named by its digest arrived.
        case fileCompleted = "file-completed"
        /// The back office wrote the record (its API, or seeding).
        case backOffice = "back-office"
        /// A back-office review of a document.
        case review
    }

    /// Whose credential made it; nil when the server made it itself (`fileCompleted`) or the back
    /// office wrote without one.
    public var principal: String?
    /// The device whose credential made it, when it had one.
    public var deviceID: String?
    /// When the server committed it (RFC 3339, the server's clock).
    public var at: String
    /// When the device says its person captured it (RFC 3339, the device's clock, which may be
    /// wrong: kept as told, never used for order).
    public var capturedAt: String?
    public var via: Via
    /// The document whose submission made it (`FormSync-Document`), or the file document whose
    /// bytes completed it.
    public var documentID: String?

    public init(principal: String?, deviceID: String?, at: String, capturedAt: String?, via: Via, documentID: String?) {
        self.principal = principal
        self.deviceID = deviceID
        self.at = at
        self.capturedAt = capturedAt
        self.via = via
        self.documentID = documentID
    }

    enum CodingKeys: String, CodingKey {
        case principal
        case deviceID = "device_id"
        case at
        case capturedAt = "captured_at"
        case via
        case documentID = "document_id"
    }
}
