/// What every generated form model is: a typed payload that knows its form, its lane and endpoint,
/// its own validation, which of its fields hold placeholder ids, and how to merge three versions
/// of itself. The outbox and the server work only through this protocol.
public protocol FormPayload: Codable, Sendable, Equatable {
    /// The form's name, sent as `FormSync-Form`.
    static var formName: String { get }
    /// The spec version of the payload's shape, stamped on every queued item.
    static var formVersion: Int { get }
    /// The endpoint with its `{field}` placeholders, as written in the spec.
    static var endpointTemplate: String { get }

    /// The ordering lane: payloads with the same lane are delivered in order. Nil when the form
    /// declares no entity, in which case each document is its own lane.
    var lane: String? { get }
    /// The endpoint path with this payload's values filled in (percent-encoded).
    var endpoint: String { get }
    /// Every rule violation, each with a JSON Pointer into the payload. Empty means valid.
    func validate() -> [FieldError]
    /// A copy with the spec's calculations done and the fields that do not apply cleared
    /// (`calculate:`, `relevant:`): what the outbox queues.
    func recalculated() -> Self
    /// The placeholder ids (negative) held in file and reference fields, at any depth, each once,
    /// in field order.
    var placeholders: [Int64] { get }
    /// A copy with placeholder ids replaced by server ids where `ids` knows them.
    func remapped(_ ids: [Int64: Int64]) -> Self
    /// A copy with every file reference, at any depth, passed through `transform`: the outbox
    /// writes the measured size and media type of each stashed file into the payload with it.
    func mappingFiles(_ transform: (FileRef) -> FileRef) -> Self
    /// Reconciles a local edit with the server's current record, field by field, from their
    /// common base, applying each field's conflict policy.
    static func merge(base: Self, local: Self, server: Self) -> MergeResult<Self>
    /// The record the form creates or edits (`creates:`/`edits:` in its spec), if any.
    static var recordAction: RecordAction? { get }
    /// The lists whose every item creates a record (`creates:` on a list), if any.
    static var listRecordActions: [ListRecordAction] { get }
    /// How payloads of older versions become this one (`upgrades:` in its spec).
    static var upgrades: [FormUpgrade] { get }
}

extension FormPayload {
    /// A payload without calculations or relevance is its own recalculation.
    public func recalculated() -> Self { self }
}
