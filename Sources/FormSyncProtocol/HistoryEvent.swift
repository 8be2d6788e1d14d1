/// What happened to a document or a record at one point of its history; the submissions feed
/// and webhooks carry the document's events by these names.
public enum HistoryEvent: String, Codable, Sendable, CaseIterable {
    /// A document's first version (its submission was accepted).
    case accepted
    /// A new version of a document or a record, from a device or the back office.
    case edited
    /// A file the version named by its digest arrived: the server's own new version.
    case fileCompleted = "file-completed"
    /// The back office reviewed a document's version (`Review`).
    case reviewed
    /// A record's first version.
    case created
    /// A record removed.
    case deleted

    /// The events of a document, which the submissions feed and webhooks carry.
    public static let documentEvents: [HistoryEvent] = [.accepted, .edited, .fileCompleted, .reviewed]
}
