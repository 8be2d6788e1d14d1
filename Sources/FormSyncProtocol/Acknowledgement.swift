/// The reply that acknowledges a write (docs/PROTOCOL.md, "Replies and what the client does
/// with them"): a 2xx `application/json` object that echoes the document's id. Its members'
/// names, and the one test of whether a reply is an acknowledgement, live here: the server
/// writes them, and the client's transport and `formsync conformance` read them.
public enum Acknowledgement {
    /// The document's id, echoed: what makes a reply an acknowledgement.
    public static let documentID = "document_id"
    /// The server's id of the document's record or of a stored file.
    public static let id = "id"
    /// The version, as the `ETag` also carries it.
    public static let version = "version"
    /// The form and its version the document is held under.
    public static let form = "form"
    public static let formVersion = "form_version"
    /// The record as the form sees it.
    public static let record = "record"
    /// The whole record a create or an edit left, for the device's store.
    public static let entity = "entity"
    /// The records a submission's lists created (`creates:` on a list), one per item: each an
    /// `entity` with the `list` and the item's `index` (from 0) it came from.
    public static let createdRecords = "created_records"
    public static let list = "list"
    public static let position = "index"
    /// A stored file's size.
    public static let byteCount = "byte_count"
    /// In a `409` or `412` reply about a document or a record: who made the server's current
    /// version, when and through what (`ChangeAuthor`), so that a person sees whose change they
    /// conflict with.
    public static let lastChange = "last_change"

    /// Whether a reply acknowledges `document`: a 2xx, JSON, whose `document_id` is the
    /// document's. Anything else (a portal's page, another document's reply) is not one.
    public static func acknowledges(status: Int, contentType: String?, object: [String: Any]?, document: String) -> Bool {
        (200..<300).contains(status) && contentType?.lowercased().hasPrefix("application/json") == true
            && object?[documentID] as? String == document
    }
}
