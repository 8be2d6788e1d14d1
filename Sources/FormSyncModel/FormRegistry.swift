import Foundation

/// The forms an outbox (or a server) knows, by name, with their generated behaviour reachable
/// from stored JSON: the runtime stores payloads as bytes and needs the typed code back to
/// validate, remap and merge them.
public struct FormRegistry: Sendable {
    /// The generated behaviour of one form over its JSON.
    public struct Entry: Sendable {
        public let name: String
        public let version: Int
        /// The record the form creates or edits, if any.
        public let recordAction: RecordAction?
        /// The form's lists whose items create records.
        public let listRecordActions: [ListRecordAction]
        /// How payloads of older versions become this one.
        public let upgrades: [FormUpgrade]
        let decodeAndValidate: @Sendable (Data) throws -> [FieldError]
        package let placeholders: @Sendable (Data) throws -> [Int64]
        package let remap: @Sendable (Data, [Int64: Int64]) throws -> (payload: Data, endpoint: String)
        package let merge: @Sendable (Data, Data, Data) throws -> (merged: Data, conflicts: [FieldConflict])
        /// The payload with every file reference passed through the transform (the outbox names
        /// a deferred file by its digest with it); nil leaves files as they are.
        package let mapFiles: (@Sendable (Data, (FileRef) -> FileRef) throws -> Data)?
        /// `admit` from one decoding (generated forms); nil composes the closures above.
        let admitting: (@Sendable (Data) throws -> Admission)?
        /// The payload as its form's `recalculated()` returns it.
        package let recalculate: @Sendable (Data) throws -> Data

        package init(
            name: String, version: Int, recordAction: RecordAction?, upgrades: [FormUpgrade],
            decodeAndValidate: @escaping @Sendable (Data) throws -> [FieldError],
            placeholders: @escaping @Sendable (Data) throws -> [Int64],
            remap: @escaping @Sendable (Data, [Int64: Int64]) throws -> (payload: Data, endpoint: String),
            merge: @escaping @Sendable (Data, Data, Data) throws -> (merged: Data, conflicts: [FieldConflict]),
            mapFiles: (@Sendable (Data, (FileRef) -> FileRef) throws -> Data)? = nil,
            admitting: (@Sendable (Data) throws -> Admission)? = nil,
            recalculate: @escaping @Sendable (Data) throws -> Data = { $0 },
            listRecordActions: [ListRecordAction] = []
        ) {
            self.listRecordActions = listRecordActions
            self.recalculate = recalculate
            self.admitting = admitting
            self.mapFiles = mapFiles
            self.name = name
            self.version = version
            self.recordAction = recordAction
            self.upgrades = upgrades
            self.decodeAndValidate = decodeAndValidate
            self.placeholders = placeholders
            self.remap = remap
            self.merge = merge
        }

        /// A payload of `version` brought to this form's version through its upgrade steps.
        public func upgrade(_ json: Data, from version: Int) throws -> Data {
            try FormUpgrade.upgrade(json, from: version, to: self.version, steps: upgrades)
        }

        /// Decodes and validates; a payload that does not decode yields one error per decoding problem.
        public func validate(_ json: Data) -> [FieldError] {
            FieldError.validating { try decodeAndValidate(json) }
        }

        /// The file references `json` holds, with their pointers and their fields' rules (none
        /// when it does not decode).
        package func fileUses(_ json: Data) -> [FileUse] {
            FileUse.gathering { FieldError.validating { try decodeAndValidate(json) } }.1
        }

        /// What a server checks before it accepts a submission, in this order: the field
        /// errors (a payload that does not decode yields its decoding problem), then the
        /// placeholder ids it still holds, then its canonical bytes and endpoint.
        package enum Admission: Sendable {
            case invalid([FieldError])
            case holdsPlaceholders([Int64])
            case admitted(payload: Data, endpoint: String)
        }

        /// `validate`, `placeholders` and `remap(json, [:])` as the server runs them on each
        /// submission, from one decoding of `json` instead of three. Throws only when a payload
        /// that decoded cannot be encoded again.
        package func admit(_ json: Data) throws -> Admission {
            if let admitting { return try admitting(json) }
            let errors = validate(json)
            guard errors.isEmpty else { return .invalid(errors) }
            let placeholders = try placeholders(json)
            guard placeholders.isEmpty else { return .holdsPlaceholders(placeholders) }
            let canonical = try remap(json, [:])
            return .admitted(payload: canonical.payload, endpoint: canonical.endpoint)
        }
    }

    private let entries: [String: Entry]

    /// A registry of `forms`, typically a generated `FormCatalog.forms`.
    public init(_ forms: [any FormPayload.Type]) {
        var entries: [String: Entry] = [:]
        for form in forms {
            entries[form.formName] = Self.entry(for: form)
        }
        self.entries = entries
    }

    /// A registry of entries made without generated types (the spec interpreter's).
    package init(entries: [Entry]) {
        self.entries = Dictionary(entries.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The form registered under `name`.
    public subscript(name: String) -> Entry? { entries[name] }

    /// The registered form names, sorted.
    public var names: [String] { entries.keys.sorted() }

    /// JSON as the outbox stores and sends it: sorted keys, so the same payload is the same bytes.
    /// Generated payloads write themselves (`JSONWritable`), the same bytes without the encoder.
    public static func encode<P: Encodable>(_ value: P) throws -> Data {
        if let writable = value as? any JSONWritable {
            var output = JSONOutput()
            try writable.writeJSON(to: &output)
            return output.data
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// `type` from `data`: by its generated reader when it takes the bytes (the plain JSON
    /// devices send), else by `JSONDecoder`, which gives the same value or the exact error.
    static func decodePayload<P: Decodable & SendableMetatype>(_ type: P.Type, from data: Data) throws -> P {
        guard let readable = P.self as? any JSONReadable.Type else { return try JSONDecoder().decode(P.self, from: data) }
        return try read(readable, as: P.self, from: data)
    }

    /// `decodePayload` for one type, its reader chosen once: a registry's entries decode every
    /// payload and record of their type (a pull's hundred thousand), and the look-up of `P`'s
    /// conformance and the cast of each value back cost as much as a small record's reading.
    static func decoder<P: Decodable & SendableMetatype>(for type: P.Type) -> @Sendable (Data) throws -> P {
        guard let readable = P.self as? any JSONReadable.Type else { return { try JSONDecoder().decode(P.self, from: $0) } }
        return plainDecoder(readable, as: P.self)
    }

    private static func plainDecoder<R: JSONReadable, P: Decodable & SendableMetatype>(
        _ readable: R.Type, as type: P.Type
    ) -> @Sendable (Data) throws -> P {
        { try read(R.self, as: P.self, from: $0) }
    }

    /// `data` read by `R`'s plain reader, else by `JSONDecoder`. `R` is `P` itself (the type a
    /// caller opened from `P.self`), so a value of one is a value of the other.
    private static func read<R: JSONReadable, P: Decodable>(_ readable: R.Type, as type: P.Type, from data: Data) throws -> P {
        precondition(R.self == P.self)
        if let value = JSONInput.value(R.self, from: data) { return unsafeBitCast(value, to: P.self) }
        return try JSONDecoder().decode(P.self, from: data)
    }

    static func entry<P: FormPayload>(for type: P.Type) -> Entry {
        let decode = decoder(for: P.self)
        return Entry(
            name: P.formName, version: P.formVersion, recordAction: P.recordAction, upgrades: P.upgrades,
            decodeAndValidate: { try decode($0).validate() },
            placeholders: { try decode($0).placeholders },
            remap: { data, ids in
                let remapped = try decode(data).remapped(ids)
                return (try encode(remapped), remapped.endpoint)
            },
            merge: { base, local, server in
                let result = P.merge(base: try decode(base), local: try decode(local), server: try decode(server))
                return (try encode(result.merged), result.conflicts)
            },
            mapFiles: { data, transform in try encode(try decode(data).mappingFiles(transform)) },
            admitting: { data in
                let value: P
                do {
                    value = try decode(data)
                } catch {
                    return .invalid([FieldError(decoding: error)])
                }
                let errors = value.validate()
                guard errors.isEmpty else { return .invalid(errors) }
                let placeholders = value.placeholders
                guard placeholders.isEmpty else { return .holdsPlaceholders(placeholders) }
                let remapped = value.remapped([:])
                return .admitted(payload: try encode(remapped), endpoint: remapped.endpoint)
            },
            recalculate: { try encode(try decode($0).recalculated()) }, listRecordActions: P.listRecordActions)
    }
}

extension FieldError {
    /// The errors `body` finds, or the decoding failure that kept it from looking.
    static func validating(_ body: () throws -> [FieldError]) -> [FieldError] {
        do {
            return try body()
        } catch {
            return [FieldError(decoding: error)]
        }
    }

    /// A decoding failure as a field error, pointing at the value that did not decode.
    public init(decoding error: any Error) {
        guard let error = error as? DecodingError else {
            self.init(pointer: JSONPointer.root, code: "invalid", detail: "The payload is not valid JSON.")
            return
        }
        let path: [any CodingKey]
        let detail: String
        switch error {
        case .typeMismatch(let type, let context):
            path = context.codingPath
            detail = "Expected \(type)."
        case .valueNotFound(let type, let context):
            path = context.codingPath
            detail = "Expected \(type), found null."
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
            detail = "This field is missing."
        case .dataCorrupted(let context):
            path = context.codingPath
            detail = context.debugDescription
        @unknown default:
            path = []
            detail = "The value could not be read."
        }
        let pointer = path.reduce(JSONPointer.root) { pointer, key in
            key.intValue.map { JSONPointer.appending(pointer, $0) } ?? JSONPointer.appending(pointer, key.stringValue)
        }
        self.init(pointer: pointer, code: "invalid", detail: detail)
    }
}
