import Foundation

/// Moves fields between a record's JSON and the JSON of a form that creates or edits it, by
/// name and byte for byte (the spec checker proved that shared fields have the same shape).
/// The server applies accepted submissions with it; the device overlays unsent ones with it.
public enum RecordProjection {
    /// Why a projection could not be made.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// The form payload an edit starts from: the key field set to `id`, and each field the form
    /// shares with the record taken from the record.
    public static func editPayload(record: Data, id: Int64, action: RecordAction) throws -> Data {
        guard let source = JSONObjectSlices(record) else { throw Failure(description: "the record is not a JSON object") }
        var form = JSONObjectSlices()
        if let key = action.keyField { form.set(key, Data(String(id).utf8)) }
        for field in action.fields { form.set(field, source[field]) }
        return form.data
    }

    /// The record after an accepted create or edit: the fields the form shares with it taken
    /// from the form's payload (a field the payload leaves out is cleared), every other field
    /// kept. `record` is nil for a create.
    public static func apply(form payload: Data, to record: Data?, action: RecordAction) throws -> Data {
        guard let form = JSONObjectSlices(payload) else { throw Failure(description: "the payload is not a JSON object") }
        var result = JSONObjectSlices()
        if let record {
            guard let existing = JSONObjectSlices(record) else { throw Failure(description: "the record is not a JSON object") }
            result = existing
        }
        for field in action.fields { result.set(field, form[field]) }
        return result.data
    }

    /// The records a submission's list creates, one per item in order: each item's fields the
    /// record shares, then the form's fields it copies (a field the payload leaves out is left
    /// out of the record).
    public static func listRecords(form payload: Data, action: ListRecordAction) throws -> [Data] {
        guard let form = JSONObjectSlices(payload) else { throw Failure(description: "the payload is not a JSON object") }
        guard let list = form[action.list] else { return [] }
        guard let items = JSONObjectSlices.elements(ofArray: list) else {
            throw Failure(description: "'\(action.list)' is not a JSON array")
        }
        return try items.map { bytes in
            guard let item = JSONObjectSlices(bytes) else { throw Failure(description: "an item of '\(action.list)' is not a JSON object") }
            var record = JSONObjectSlices()
            for field in action.itemFields { record.set(field, item[field]) }
            for field in action.formFields { record.set(field, form[field]) }
            return record.data
        }
    }

    /// How many items a submission's list holds (0 when it holds none, or is not a list).
    public static func itemCount(form payload: Data, list: String) -> Int {
        guard let bytes = JSONObjectSlices(payload)?[list] else { return 0 }
        return JSONObjectSlices.elements(ofArray: bytes)?.count ?? 0
    }

    /// The id of the record an edit payload changes (its key field), if it holds one.
    public static func editedID(form payload: Data, action: RecordAction) -> Int64? {
        guard let key = action.keyField, let value = JSONObjectSlices(payload)?[key] else { return nil }
        return Int64(String(decoding: value, as: UTF8.self))
    }

    /// A record's JSON with its id and version stripped, as the wire carries it.
    public static func fields<R: SyncRecord>(of record: R) throws -> Data {
        try FormRegistry.encode(record)
    }

    /// A typed record from its fields' JSON, its id and its version.
    public static func decode<R: SyncRecord>(_ type: R.Type, fields: Data, id: Int64, version: Int) throws -> R {
        var record = try FormRegistry.decodePayload(R.self, from: fields)
        record.id = id
        record.version = version
        return record
    }
}
