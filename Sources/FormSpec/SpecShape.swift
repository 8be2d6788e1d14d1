import Foundation

/// What a spec promises on the wire at one version: its fields with their types and rules,
/// its endpoint and lane, the record it touches. Documentation is left out: changing it
/// changes no shape. The lock file records one shape per released version, and `diff`
/// compares two shapes.
public struct SpecShape: Codable, Sendable, Equatable {
    /// `form` or `record`.
    public var kind: String
    public var name: String
    public var version: Int
    public var endpoint: String?
    public var entity: String?
    public var creates: String?
    public var edits: String?
    public var deletes: String?
    public var scope: String?
    /// A record's `device_deletes: true`.
    public var deviceDeletes: Bool?
    /// A record's `subscribe_by:` fields.
    public var subscribeBy: [String]?
    public var index: [String]?
    public var fields: [FieldShape]

    /// One field: its type and every rule that decides what a payload may hold.
    public struct FieldShape: Codable, Sendable, Equatable {
        public var name: String
        public var type: String
        public var required: Bool
        /// `sibling=value|value` conditions of `required_if`.
        public var requiredIf: [String]?
        public var conflict: String?
        public var authority: String?
        public var minLength: Int?
        public var maxLength: Int?
        public var pattern: String?
        public var min: String?
        public var max: String?
        public var currency: String?
        public var options: [String]?
        public var minCount: Int?
        public var maxCount: Int?
        public var multiple: Bool?
        public var maxBytes: Int64?
        public var contentTypes: [String]?
        public var to: String?
        public var fields: [FieldShape]?
        /// For a list whose items create records: the record type, then the form fields each
        /// record copies (`Finding+site_code,visit_date`).
        public var creates: String?
        /// The field's expressions, in canonical text.
        public var relevant: String?
        public var constraint: String?
        public var calculate: String?
        public var choiceFilter: String?

        enum CodingKeys: String, CodingKey {
            case name, type, required, conflict, authority, pattern, min, max, currency, options, multiple, to, fields, creates
            case relevant, constraint, calculate
            case choiceFilter = "choice_filter"
            case requiredIf = "required_if"
            case minLength = "min_length"
            case maxLength = "max_length"
            case minCount = "min_count"
            case maxCount = "max_count"
            case maxBytes = "max_bytes"
            case contentTypes = "content_types"
        }
    }

    public init(form: FormDefinition) {
        kind = "form"
        name = form.name
        version = form.version
        endpoint = form.endpoint
        entity = form.entity
        creates = form.binding?.action == .creates ? form.binding?.record : nil
        edits = form.binding?.action == .edits ? form.binding?.record : nil
        deletes = form.binding?.action == .deletes ? form.binding?.record : nil
        fields = form.fields.map(Self.shape)
    }

    public init(record: RecordDefinition) {
        kind = "record"
        name = record.name
        version = record.version
        scope = record.scope
        index = record.indexes.isEmpty ? nil : record.indexes
        deviceDeletes = record.deviceDeletes ? true : nil
        subscribeBy = record.subscribeBy.isEmpty ? nil : record.subscribeBy
        fields = record.fields.map(Self.shape)
    }

    static func shape(_ field: FieldDefinition) -> FieldShape {
        var shape = FieldShape(name: field.name, type: field.kind.typeName, required: field.required)
        if !field.requiredIf.isEmpty { shape.requiredIf = field.requiredIf.map { "\($0.field)=\($0.values.joined(separator: "|"))" } }
        if field.conflict != .merge { shape.conflict = field.conflict.rawValue }
        if field.serverAuthority { shape.authority = "server" }
        shape.relevant = field.relevant?.expression.canonicalText
        shape.constraint = field.constraint?.expression.canonicalText
        shape.calculate = field.calculate?.expression.canonicalText
        shape.choiceFilter = field.choiceFilter?.expression.canonicalText
        switch field.kind {
        case .text(let minLength, let maxLength, let pattern):
            (shape.minLength, shape.maxLength, shape.pattern) = (minLength, maxLength, pattern)
        case .integer(let min, let max):
            (shape.min, shape.max) = (min.map(String.init), max.map(String.init))
        case .decimal(let min, let max):
            (shape.min, shape.max) = (min, max)
        case .money(let min, let max, let currency):
            (shape.min, shape.max, shape.currency) = (min.map(String.init), max.map(String.init), currency)
        case .choice(let set):
            shape.options = set.options.map(\.value)
        case .multiChoice(let set, let count):
            (shape.options, shape.minCount, shape.maxCount) = (set.options.map(\.value), count.min, count.max)
        case .reference(let to):
            shape.to = to
        case .file(_, let rule):
            (shape.multiple, shape.minCount, shape.maxCount, shape.maxBytes) = (
                rule.multiple, rule.count.min, rule.count.max, rule.maxBytes
            )
            shape.contentTypes = rule.contentTypes.isEmpty ? nil : rule.contentTypes
        case .list(let list):
            (shape.minCount, shape.maxCount) = (list.count.min, list.count.max)
            shape.fields = list.fields.map(Self.shape)
            shape.creates = list.creates.map { creation in
                creation.formFields.isEmpty ? creation.record : creation.record + "+" + creation.formFields.joined(separator: ",")
            }
        case .boolean, .date, .time, .datetime, .geopoint:
            break
        }
        return shape
    }
}

extension SpecShape.FieldShape {
    init(name: String, type: String, required: Bool) {
        self.name = name
        self.type = type
        self.required = required
    }
}
