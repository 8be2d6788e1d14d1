/// What every generated record type is: an entity the server owns (a delivery, a customer, a
/// site) that devices pull into their local store, read without the network, and change
/// through forms that create or edit it. The record's JSON on the wire holds its fields only;
/// its server id and version travel beside it.
public protocol SyncRecord: Codable, Sendable, Equatable {
    /// The record type's name, as the change feed and `/records/{type}/{id}` name it.
    static var recordType: String { get }
    /// The spec version of the record's shape.
    static var recordVersion: Int { get }
    /// The text field whose value decides which devices receive the record (compared with the
    /// device's principal); nil when every device of the workspace receives every record.
    static var scopeField: String? { get }
    /// The fields local queries can look records up by.
    static var indexedFields: [String] { get }
    /// Whether a file field of the record says `download: eager`: devices fetch its files as
    /// soon as they pull it.
    static var fetchesFilesEagerly: Bool { get }
    /// Whether devices may delete a record of this type (`device_deletes: true`), through a
    /// form that `deletes:` it; otherwise only the back office deletes.
    static var devicesMayDelete: Bool { get }
    /// The fields devices subscribe to records of this type by (`subscribe_by:`). Not empty:
    /// the records reach a device only through the subscriptions it holds
    /// (`Outbox.subscribe`).
    static var subscriptionFields: [SubscriptionField] { get }

    /// The server's id of the record; negative (a placeholder) for one created on this device
    /// whose creating submission has not landed yet.
    var id: Int64 { get set }
    /// The server's version of the record (its ETag is `"<version>"`); 0 for one created
    /// on this device that the server has not acknowledged yet.
    var version: Int { get set }
    /// Every rule the record breaks.
    func validate() -> [FieldError]
    /// The values of the indexed fields that are set, for local queries.
    var indexEntries: [RecordIndexEntry] { get }
}

/// One indexed value of a record: the field's spec name and its value in canonical text form
/// (text as is, integers and references in decimal, booleans `true`/`false`, choices by
/// value, dates as `YYYY-MM-DD`).
public struct RecordIndexEntry: Sendable, Hashable {
    public var field: String
    public var value: String

    public init(field: String, value: String) {
        self.field = field
        self.value = value
    }
}

/// A local query for records of one type: all of them (in the device's scope), one by id, or
/// those whose indexed field holds a value. Generated code builds them (`Delivery.byStatus(.assigned)`);
/// the device's record store runs them.
public struct RecordQuery<Record: SyncRecord>: Sendable, Equatable {
    public enum Filter: Sendable, Equatable {
        case all
        case id(Int64)
        case field(String, String)
    }

    public var filter: Filter

    public init(_ filter: Filter) {
        self.filter = filter
    }

    /// Every record of the type on the device.
    public static var all: RecordQuery<Record> { RecordQuery(.all) }

    /// The record with this id (a placeholder id finds one created offline).
    public static func id(_ id: Int64) -> RecordQuery<Record> { RecordQuery(.id(id)) }

    /// Whether `record` satisfies the query.
    public func matches(_ record: Record) -> Bool {
        switch filter {
        case .all: return true
        case .id(let id): return record.id == id
        case .field(let field, let value): return record.indexEntries.contains(RecordIndexEntry(field: field, value: value))
        }
    }
}

/// What a form does to a record, as generated from its spec's `creates:` or `edits:`: the
/// server applies an accepted submission to the record, and the device overlays an unsent one
/// on its local copy.
public struct RecordAction: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        /// An accepted submission creates the record, with the submission's server id.
        case creates
        /// An accepted submission changes the record its `keyField` refers to.
        case edits
        /// An accepted submission deletes the record its `keyField` refers to (when the record
        /// type lets devices delete it).
        case deletes
    }

    public var kind: Kind
    /// The record type's name.
    public var recordType: String
    /// For an edit, the reference field naming the record edited (the form's entity).
    public var keyField: String?
    /// The form's fields that are fields of the record, which the submission sets.
    public var fields: [String]

    public init(kind: Kind, recordType: String, keyField: String?, fields: [String]) {
        self.kind = kind
        self.recordType = recordType
        self.keyField = keyField
        self.fields = fields
    }
}

/// A form's list whose every item creates a record, as generated from `creates:` on the list:
/// the server makes one record per item in the submission's transaction, and the device shows
/// each at once under a placeholder id of its own.
public struct ListRecordAction: Sendable, Equatable {
    /// The list's field name in the payload.
    public var list: String
    /// The record type's name.
    public var recordType: String
    /// The item's fields that are fields of the record.
    public var itemFields: [String]
    /// The form's own fields each record also takes.
    public var formFields: [String]

    public init(list: String, recordType: String, itemFields: [String], formFields: [String]) {
        self.list = list
        self.recordType = recordType
        self.itemFields = itemFields
        self.formFields = formFields
    }
}

extension FormPayload {
    /// Nil: the form neither creates nor edits a record.
    public static var recordAction: RecordAction? { nil }

    /// None: no list of the form creates records.
    public static var listRecordActions: [ListRecordAction] { [] }
}

extension SyncRecord {
    /// Every record of this type on the device.
    public static var all: RecordQuery<Self> { .all }

    /// The record with this id (a placeholder id finds one created offline).
    public static func withID(_ id: Int64) -> RecordQuery<Self> { .id(id) }
}

extension SyncRecord {
    /// Records generated before `download:` existed fetch their files on first use.
    public static var fetchesFilesEagerly: Bool { false }

    /// Only the back office deletes, unless the spec says `device_deletes: true`.
    public static var devicesMayDelete: Bool { false }

    /// Every device receives every record of the type (in its scope) unless the spec says
    /// `subscribe_by:`.
    public static var subscriptionFields: [SubscriptionField] { [] }
}
