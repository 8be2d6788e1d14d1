import Foundation

/// The record types a device or a server knows, by name, with their generated behaviour
/// reachable from stored JSON (the stores keep records as bytes).
public struct RecordRegistry: Sendable {
    /// The generated behaviour of one record type over its JSON.
    public struct Entry: Sendable {
        public let name: String
        public let version: Int
        public let scopeField: String?
        public let indexedFields: [String]
        let decodeAndValidate: @Sendable (Data) throws -> [FieldError]
        package let indexEntries: @Sendable (Data) throws -> [RecordIndexEntry]
        package let scopeValue: @Sendable (Data) -> String?
        /// Whether a file field says `download: eager`.
        package let fetchesFilesEagerly: Bool
        /// Whether devices may delete records of the type (`device_deletes: true`).
        public let devicesMayDelete: Bool
        /// The fields devices subscribe to the type by; not empty, the type reaches devices
        /// only through subscriptions.
        public let subscriptionFields: [SubscriptionField]

        /// The file references `json` holds, with their fields' rules (none when it does not decode).
        package func fileUses(_ json: Data) -> [FileUse] {
            FileUse.gathering { FieldError.validating { try decodeAndValidate(json) } }.1
        }

        package init(
            name: String, version: Int, scopeField: String?, indexedFields: [String],
            decodeAndValidate: @escaping @Sendable (Data) throws -> [FieldError],
            indexEntries: @escaping @Sendable (Data) throws -> [RecordIndexEntry],
            scopeValue: @escaping @Sendable (Data) -> String?, fetchesFilesEagerly: Bool = false, devicesMayDelete: Bool = false,
            subscriptionFields: [SubscriptionField] = []
        ) {
            self.subscriptionFields = subscriptionFields
            self.devicesMayDelete = devicesMayDelete
            self.fetchesFilesEagerly = fetchesFilesEagerly
            self.name = name
            self.version = version
            self.scopeField = scopeField
            self.indexedFields = indexedFields
            self.decodeAndValidate = decodeAndValidate
            self.indexEntries = indexEntries
            self.scopeValue = scopeValue
        }

        /// Decodes and validates a record's fields; a record that does not decode yields the
        /// decoding problem as a field error.
        public func validate(_ json: Data) -> [FieldError] {
            FieldError.validating { try decodeAndValidate(json) }
        }
    }

    private let entries: [String: Entry]

    /// A registry of `records`, typically a generated `FormCatalog.records`.
    public init(_ records: [any SyncRecord.Type]) {
        var entries: [String: Entry] = [:]
        for record in records {
            entries[record.recordType] = Self.entry(for: record)
        }
        self.entries = entries
    }

    /// A registry of entries made without generated types (the spec interpreter's).
    package init(entries: [Entry]) {
        self.entries = Dictionary(entries.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The record type registered under `name`.
    public subscript(name: String) -> Entry? { entries[name] }

    /// The registered record type names, sorted.
    public var names: [String] { entries.keys.sorted() }

    /// The types that reach devices only through subscriptions (`subscribe_by:`), sorted.
    public var subscribedTypes: [String] { names.filter { entries[$0]?.subscriptionFields.isEmpty == false } }

    /// The scope field's text in a record's JSON, read without decoding the rest.
    package static func scopeValue(_ data: Data, field: String?) -> String? {
        guard let field, let raw = JSONObjectSlices(data)?[field] else { return nil }
        return try? JSONDecoder().decode(String.self, from: raw)
    }

    static func entry<R: SyncRecord>(for type: R.Type) -> Entry {
        let decode = FormRegistry.decoder(for: R.self)
        return Entry(
            name: R.recordType, version: R.recordVersion, scopeField: R.scopeField, indexedFields: R.indexedFields,
            decodeAndValidate: { try decode($0).validate() },
            indexEntries: { try decode($0).indexEntries },
            scopeValue: { scopeValue($0, field: R.scopeField) }, fetchesFilesEagerly: R.fetchesFilesEagerly,
            devicesMayDelete: R.devicesMayDelete, subscriptionFields: R.subscriptionFields)
    }
}
