/// A checked form spec: every name resolved, every rule known to fit its field's type. This is
/// what the generator translates; it never sees YAML.
public struct FormDefinition: Sendable, Equatable {
    /// The Swift type name of the payload (`form:`).
    public var name: String
    /// The payload-shape version (`version:`), stamped on every queued item.
    public var version: Int
    /// Free text from `description:`, emitted as the type's doc comment.
    public var summary: String?
    /// The endpoint template (`endpoint:`), with `{field}` placeholders.
    public var endpoint: String
    /// The endpoint split into literal text and the fields its placeholders name, in order.
    public var endpointSegments: [EndpointSegment]
    /// The field whose value names the ordering lane (`entity:`), if any.
    public var entity: String?
    /// Choice lists declared once at the top of the spec (`choices:`), in declaration order.
    public var choiceLists: [ChoiceSet]
    /// The top-level fields, in declaration order.
    public var fields: [FieldDefinition]
    /// The spec's file name, for the do-not-edit header.
    public var sourceName: String
    /// Where the form's name is written, for diagnostics that span several specs.
    public var nameLocation: SourceLocation
    /// The record this form creates or edits (`creates:`, `edits:`), if any.
    public var binding: RecordBinding?
    /// Where each top-level field is declared, for diagnostics that compare specs.
    public var fieldLocations: [String: SourceLocation] = [:]
    /// Every `reference` field's target, checked against the declared records.
    public var references: [ReferenceUse] = []
    /// Where `version:` is written.
    public var versionLocation: SourceLocation?
    /// How items of older versions are brought to this one (`upgrades:`), by the version they
    /// start from.
    public var upgrades: [UpgradeStep] = []
    /// The fields with `relevant:` or `calculate:`, in the order that settles them: each after
    /// every field its expressions read (`recalculated()` runs them in this order).
    public var settleSteps: [SettleStep] = []

    public init(
        name: String, version: Int, summary: String?, endpoint: String, endpointSegments: [EndpointSegment],
        entity: String?, choiceLists: [ChoiceSet], fields: [FieldDefinition], sourceName: String,
        nameLocation: SourceLocation, binding: RecordBinding? = nil
    ) {
        self.binding = binding
        self.nameLocation = nameLocation
        self.name = name
        self.version = version
        self.summary = summary
        self.endpoint = endpoint
        self.endpointSegments = endpointSegments
        self.entity = entity
        self.choiceLists = choiceLists
        self.fields = fields
        self.sourceName = sourceName
    }

    /// The field names the endpoint's placeholders refer to, in order of appearance.
    public var endpointFields: [String] {
        endpointSegments.compactMap { segment in
            if case .field(let name) = segment { return name }
            return nil
        }
    }

    /// The top-level field with this spec name.
    public func field(named name: String) -> FieldDefinition? {
        fields.first { $0.name == name }
    }

    /// The lists whose items create records, each with the item fields the record shares and
    /// the form fields it copies, given the declared records by name (a list whose record is
    /// not among them is left out: the cross-spec check reports it).
    public func listCreations(
        records: [String: RecordDefinition]
    ) -> [(
        list: String, record: String, itemFields: [String], formFields: [String]
    )] {
        fields.compactMap { field in
            guard case .list(let list) = field.kind, let creation = list.creates, let record = records[creation.record] else { return nil }
            let shared = list.fields.map(\.name).filter { record.field(named: $0) != nil }
            return (field.name, record.name, shared, creation.formFields)
        }
    }
}

/// One field `recalculated()` settles: cleared when it is not relevant, else calculated.
public struct SettleStep: Sendable, Hashable, CustomStringConvertible {
    /// The lists, outermost first, whose every item holds the field; empty for a form's field.
    public var lists: [String]
    public var field: String

    public init(lists: [String], field: String) {
        self.lists = lists
        self.field = field
    }

    public var description: String { (lists + [field]).joined(separator: ".") }
}

/// An expression of a field (`relevant:`, `constraint:`, `calculate:`, `choice_filter:`),
/// checked and typed, with the text the author wrote.
public struct FieldExpression: Sendable, Equatable {
    /// The text as written in the spec.
    public var text: String
    public var expression: SpecExpression
    /// Where the text starts in the spec.
    public var location: SourceLocation

    public init(text: String, expression: SpecExpression, location: SourceLocation) {
        self.text = text
        self.expression = expression
        self.location = location
    }
}

/// A piece of an endpoint template: literal path text, or a `{field}` placeholder.
public enum EndpointSegment: Sendable, Equatable {
    case literal(String)
    case field(String)
}

/// A set of options for choice and multi-choice fields; becomes one Swift enum.
public struct ChoiceSet: Sendable, Equatable {
    /// The name in the spec (`choices:` key), or the field's name for inline options.
    public var specName: String
    /// The generated enum's type name.
    public var typeName: String
    /// Whether it was declared in `choices:` (shared) rather than inline on one field.
    public var isNamed: Bool
    public var options: [ChoiceOption]
    /// The extra columns every option carries (`{ value: harbour, region: north }`), which a
    /// `choice_filter:` reads as `option.region`.
    public var columns: [String] = []
}

/// One option: its wire value and its Swift case name.
public struct ChoiceOption: Sendable, Equatable {
    public var value: String
    public var caseName: String
    /// The option's value in each of its list's `columns`, in order.
    public var columnValues: [String] = []
}

/// How two edits of one field are reconciled when the server's record moved on.
public enum ConflictPolicy: String, Sendable, Equatable, CaseIterable {
    /// Three-way: take whichever side changed; a clash on this field is a conflict.
    case merge
    /// The device's value is sent, overwriting the server's.
    case client
    /// The server's value stands; the device's edit is dropped silently.
    case server
    /// Any server change to this field that differs from the device's value needs a person.
    case ask
}

/// The kinds of file a file field holds; all are uploaded and referenced the same way.
public enum FileKind: String, Sendable, Equatable, CaseIterable {
    case photo, signature, audio, video, file
}

/// A condition of `required_if`: the sibling field holds one of these values.
public struct Condition: Sendable, Equatable {
    /// The sibling field's spec name.
    public var field: String
    /// The accepted values, as written (option values, `true`/`false`, integers or text).
    public var values: [String]
}

/// A field of a form or of a list item.
public struct FieldDefinition: Sendable, Equatable {
    /// The spec name, which is also the JSON key.
    public var name: String
    /// The Swift property name (lower camel case).
    public var swiftName: String
    /// Free text from `description:` (or `label:`), emitted as the property's doc comment.
    public var summary: String?
    public var kind: FieldKind
    public var required: Bool
    public var requiredIf: [Condition]
    public var conflict: ConflictPolicy
    /// A money field whose value the server owns (`authority: server`).
    public var serverAuthority: Bool
    /// When the field applies (`relevant:`): otherwise it is hidden, cleared and not validated.
    public var relevant: FieldExpression?
    /// What the field's value must satisfy (`constraint:`), checked when it holds a value.
    public var constraint: FieldExpression?
    /// The error's sentence when the constraint fails (`constraint_message:`).
    public var constraintMessage: String?
    /// How the field is derived from others (`calculate:`): read-only, set by `recalculated()`.
    public var calculate: FieldExpression?
    /// Which options are offered (`choice_filter:`), evaluated for each option.
    public var choiceFilter: FieldExpression?

    public init(
        name: String, swiftName: String, summary: String?, kind: FieldKind, required: Bool,
        requiredIf: [Condition], conflict: ConflictPolicy, serverAuthority: Bool
    ) {
        self.name = name
        self.swiftName = swiftName
        self.summary = summary
        self.kind = kind
        self.required = required
        self.requiredIf = requiredIf
        self.conflict = conflict
        self.serverAuthority = serverAuthority
    }
}

/// Minimum and maximum counts of a field holding several values.
public struct CountRule: Sendable, Equatable {
    public var min: Int?
    public var max: Int?
    public init(min: Int? = nil, max: Int? = nil) {
        self.min = min
        self.max = max
    }
}

/// The rules of a file field.
public struct FileRule: Sendable, Equatable {
    /// Whether the field holds a list of files (`min_count` or `max_count` given) or one.
    public var multiple: Bool
    public var count: CountRule
    /// The largest accepted file, in bytes.
    public var maxBytes: Int64?
    /// Accepted media types (`image/jpeg`, `image/*`); empty means any.
    public var contentTypes: [String]
    /// Whether the field's files may reach the server after the submission that holds them
    /// (`defer:`; on by default for photos, audio and video, off for signatures and files).
    public var defers: Bool
    /// Whether devices fetch the field's files as soon as they pull a record holding them
    /// (`download: eager`), rather than on first use (`on_access`, the default).
    public var eager: Bool = false

    /// Whether a field of `kind` defers its files when the spec does not say.
    public static func defersByDefault(_ kind: FileKind) -> Bool {
        kind == .photo || kind == .audio || kind == .video
    }
}

/// A repeat group: a list of items, each with its own fields.
public struct ListDefinition: Sendable, Equatable {
    /// The generated item struct's name.
    public var itemTypeName: String
    public var fields: [FieldDefinition]
    public var count: CountRule
    /// The record each item creates (`creates:` on a form's list), if any.
    public var creates: ListRecordBinding? = nil
}

/// A form's list whose every item creates a record (`creates: Finding`, or
/// `creates: { record: Finding, form_fields: [site_code] }`): the item's fields the record shares
/// by name, and the form's own fields each record also takes.
public struct ListRecordBinding: Sendable, Equatable {
    /// The record type's name.
    public var record: String
    /// Top-level fields of the form copied into every record made from the list.
    public var formFields: [String]
    /// Where `creates:` is written.
    public var location: SourceLocation

    public init(record: String, formFields: [String], location: SourceLocation) {
        self.record = record
        self.formFields = formFields
        self.location = location
    }
}

/// A field's type with the rules that belong to it.
public indirect enum FieldKind: Sendable, Equatable {
    case text(minLength: Int?, maxLength: Int?, pattern: String?)
    case integer(min: Int?, max: Int?)
    /// Bounds as exact decimal literals.
    case decimal(min: String?, max: String?)
    case boolean
    case date
    case time
    case datetime
    case choice(ChoiceSet)
    case multiChoice(ChoiceSet, CountRule)
    /// Bounds in minor units; `currency` fixes the ISO 4217 code when given.
    case money(min: Int64?, max: Int64?, currency: String?)
    case geopoint
    /// An id of another entity (`to:`), possibly one created offline.
    case reference(to: String)
    case file(FileKind, FileRule)
    case list(ListDefinition)

    /// Whether a field of this kind holds a list of values (a multi-choice, a list, a file field
    /// with a count): empty rather than absent, in Swift and in JSON.
    public var holdsSeveralValues: Bool {
        switch self {
        case .multiChoice, .list: return true
        case .file(_, let rule): return rule.multiple
        default: return false
        }
    }

    /// The spec's name of the type.
    public var typeName: String {
        switch self {
        case .text: return "text"
        case .integer: return "integer"
        case .decimal: return "decimal"
        case .boolean: return "boolean"
        case .date: return "date"
        case .time: return "time"
        case .datetime: return "datetime"
        case .choice: return "choice"
        case .multiChoice: return "multi_choice"
        case .money: return "money"
        case .geopoint: return "geopoint"
        case .reference: return "reference"
        case .file(let kind, _): return kind.rawValue
        case .list: return "list"
        }
    }
}

/// One step of `upgrades:`: how a payload of version `from` becomes one of the next version.
/// Applied in this order: renames, value maps, drops, defaults (a default fills only a field
/// the payload does not hold).
public struct UpgradeStep: Sendable, Equatable {
    public var from: Int
    /// Old field name → new field name.
    public var renames: [(old: String, new: String)]
    /// Field → (old option → new option), for choice and multi-choice fields.
    public var maps: [(field: String, values: [(old: String, new: String)])]
    /// Fields whose old values are discarded.
    public var drops: [String]
    /// Field → the value to fill in when a payload does not hold one, as JSON text.
    public var defaults: [(field: String, json: String)]
    /// Where the step is written.
    public var location: SourceLocation

    public static func == (a: UpgradeStep, b: UpgradeStep) -> Bool {
        a.from == b.from && a.drops == b.drops && a.location == b.location
            && a.renames.elementsEqual(b.renames) { $0 == $1 }
            && a.defaults.elementsEqual(b.defaults) { $0 == $1 }
            && a.maps.elementsEqual(b.maps) { $0.field == $1.field && $0.values.elementsEqual($1.values) { $0 == $1 } }
    }

    /// Whether this step says what becomes of the old field `name`.
    public func handles(_ name: String) -> Bool {
        drops.contains(name) || renames.contains { $0.old == name }
    }
}
