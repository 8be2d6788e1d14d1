/// A checked record spec (`record:`): a type of entity the server owns and devices pull into
/// their local store. Forms create or edit records (`creates:`, `edits:`) and refer to them
/// (`reference` fields' `to:`).
public struct RecordDefinition: Sendable, Equatable {
    /// The Swift type name of the record (`record:`).
    public var name: String
    /// The record shape's version (`version:`).
    public var version: Int
    /// Free text from `description:`, emitted as the type's doc comment.
    public var summary: String?
    /// Choice lists declared once at the top of the spec, in declaration order.
    public var choiceLists: [ChoiceSet]
    /// The fields, in declaration order.
    public var fields: [FieldDefinition]
    /// The text field whose value decides which devices receive a record (`scope:`): a device
    /// receives the records whose scope field equals its principal. Nil: every device of the
    /// workspace receives every record.
    public var scope: String?
    /// The fields local queries can look records up by (`index:`), in declaration order.
    public var indexes: [String]
    /// The spec's file name, for the do-not-edit header.
    public var sourceName: String
    /// Where the record's name is written.
    public var nameLocation: SourceLocation
    /// Where each top-level field is declared, for diagnostics that compare specs.
    public var fieldLocations: [String: SourceLocation]
    /// Every `reference` field's target, checked against the declared records.
    public var references: [ReferenceUse]
    /// Where `version:` is written.
    public var versionLocation: SourceLocation?
    /// Whether a device may delete a record of this type (`device_deletes: true`), through a
    /// form that `deletes:` it; otherwise only the back office deletes.
    public var deviceDeletes: Bool = false
    /// The fields a device may subscribe to records of this type by (`subscribe_by:`), in
    /// declaration order. Not empty: records of the type reach a device only through the
    /// subscriptions it holds (a region, a date window), never all at once.
    public var subscribeBy: [String] = []

    /// The top-level field with this spec name.
    public func field(named name: String) -> FieldDefinition? {
        fields.first { $0.name == name }
    }
}

/// What a form does to a record: creates one (`creates: Customer`), edits one
/// (`edits: Customer`, the form's `entity` being the reference to the record edited), or
/// deletes one (`deletes: Finding`, the `entity` naming it likewise).
public struct RecordBinding: Sendable, Equatable {
    public enum Action: String, Sendable, Equatable {
        case creates, edits, deletes
    }

    public var action: Action
    /// The record type's name.
    public var record: String
    /// Where the binding is written.
    public var location: SourceLocation
}

/// One `reference` field's `to:`, with where it is written.
public struct ReferenceUse: Sendable, Equatable {
    /// The field's path, `lines.customer` for a field inside a list.
    public var field: String
    /// The record type it names.
    public var target: String
    public var location: SourceLocation
}

extension FieldKind {
    /// Whether two fields hold values of the same shape on the wire: the same type, the same
    /// options for choices, the same target for references, the same item fields for lists.
    /// Rules such as bounds may differ: a form can be stricter than its record.
    public func sameShape(as other: FieldKind) -> Bool {
        switch (self, other) {
        case (.choice(let a), .choice(let b)), (.multiChoice(let a, _), .multiChoice(let b, _)):
            return Set(a.options.map(\.value)) == Set(b.options.map(\.value))
        case (.reference(let a), .reference(let b)):
            return a == b
        case (.file(_, let a), .file(_, let b)):
            return a.multiple == b.multiple
        case (.list(let a), .list(let b)):
            guard a.fields.count == b.fields.count else { return false }
            return a.fields.allSatisfy { field in
                b.fields.first { $0.name == field.name }.map { field.kind.sameShape(as: $0.kind) } ?? false
            }
        default:
            return typeName == other.typeName
        }
    }

    /// Whether devices may subscribe by a field of this kind: a date by a window, a text, a
    /// choice, a reference or an integer by a list of values.
    public var isSubscribable: Bool {
        switch self {
        case .text, .integer, .date, .choice, .reference: return true
        default: return false
        }
    }

    /// Whether local queries can look records up by a field of this kind.
    public var isIndexable: Bool {
        switch self {
        case .text, .integer, .boolean, .date, .choice, .reference: return true
        default: return false
        }
    }
}

extension RecordDefinition {
    /// Whether a file field at any depth says `download: eager`: devices fetch the record's
    /// files as soon as they pull it (the generator and the interpreter both ask).
    public var fetchesFilesEagerly: Bool { Self.eager(fields, depth: 0) }

    private static func eager(_ fields: [FieldDefinition], depth: Int) -> Bool {
        guard depth < 64 else { return false }
        return fields.contains { field in
            switch field.kind {
            case .file(_, let rule): return rule.eager
            case .list(let list): return eager(list.fields, depth: depth + 1)
            default: return false
            }
        }
    }
}

extension RecordDefinition {
    /// One `subscribe_by:` field with how a subscription matches it.
    public struct SubscriptionKey: Sendable, Equatable {
        public var name: String
        /// A date field, matched by a window of dates; any other by a list of values.
        public var byWindow: Bool
    }

    /// The `subscribe_by:` fields with how each is matched.
    public var subscriptionKeys: [SubscriptionKey] {
        subscribeBy.compactMap { name in
            field(named: name).map { field in
                if case .date = field.kind { return SubscriptionKey(name: name, byWindow: true) }
                return SubscriptionKey(name: name, byWindow: false)
            }
        }
    }
}
