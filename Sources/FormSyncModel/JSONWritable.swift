import Foundation

/// A value that writes its own JSON into a `JSONOutput`, byte for byte what its `Encodable`
/// conformance gives under `FormRegistry.encode`. Generated payloads conform, and
/// `FormRegistry.encode` uses it instead of `JSONEncoder`: encoding was half of an enqueue's CPU.
public protocol JSONWritable {
    /// Writes the value's JSON. Throws only for a value JSON cannot hold (a NaN).
    func writeJSON(to output: inout JSONOutput) throws
}

extension JSONOutput {
    /// A member `name` with `value`, left out when `value` is nil (as `encodeIfPresent` does).
    @inlinable
    public mutating func member<Value: JSONWritable>(_ name: String, _ value: Value?) throws {
        guard let value else { return }
        key(name)
        try value.writeJSON(to: &self)
    }
}

extension JSONWritable where Self: RawRepresentable, RawValue == String {
    /// A string-backed choice writes its raw value.
    public func writeJSON(to output: inout JSONOutput) throws { output.string(rawValue) }
}

extension String: JSONWritable {
    /// Writes the escaped string.
    public func writeJSON(to output: inout JSONOutput) throws { output.string(self) }
}

extension Int: JSONWritable {
    /// Writes the integer.
    public func writeJSON(to output: inout JSONOutput) throws { output.integer(Int64(self)) }
}

extension Int64: JSONWritable {
    /// Writes the integer.
    public func writeJSON(to output: inout JSONOutput) throws { output.integer(self) }
}

extension Bool: JSONWritable {
    /// Writes `true` or `false`.
    public func writeJSON(to output: inout JSONOutput) throws { output.boolean(self) }
}

extension Double: JSONWritable {
    /// Writes the number; NaN and infinity throw.
    public func writeJSON(to output: inout JSONOutput) throws { try output.double(self) }
}

extension Decimal: JSONWritable {
    /// Writes the exact decimal; NaN throws.
    public func writeJSON(to output: inout JSONOutput) throws { try output.decimal(self) }
}

extension Array: JSONWritable where Element: JSONWritable {
    /// Writes the elements in order.
    public func writeJSON(to output: inout JSONOutput) throws {
        output.beginArray()
        for element in self {
            output.separate()
            try element.writeJSON(to: &output)
        }
        output.endArray()
    }
}

extension Money: JSONWritable {
    /// Writes `{"currency":…,"minor_units":…}`.
    public func writeJSON(to output: inout JSONOutput) throws {
        output.beginObject()
        try output.member("currency", currency)
        try output.member("minor_units", minorUnits)
        output.endObject()
    }
}

extension GeoPoint: JSONWritable {
    /// Writes `{"accuracy":…,"latitude":…,"longitude":…}`, without `accuracy` when unknown.
    public func writeJSON(to output: inout JSONOutput) throws {
        output.beginObject()
        try output.member("accuracy", accuracy)
        try output.member("latitude", latitude)
        try output.member("longitude", longitude)
        output.endObject()
    }
}

extension FileRef: JSONWritable {
    /// Writes `{"byte_count":…,"content_type":…,"id":…}`, without the parts not yet known (a
    /// pending file: its `digest` and no id).
    public func writeJSON(to output: inout JSONOutput) throws {
        output.beginObject()
        try output.member("byte_count", byteCount)
        try output.member("content_type", contentType)
        try output.member("digest", digest)
        if !isPending { try output.member("id", id) }
        output.endObject()
    }
}

extension EntityRef: JSONWritable {
    /// Writes the id.
    public func writeJSON(to output: inout JSONOutput) throws { output.integer(id) }
}

extension LocalDate: JSONWritable {
    /// Writes `"YYYY-MM-DD"`.
    public func writeJSON(to output: inout JSONOutput) throws { output.string(description) }
}

extension LocalTime: JSONWritable {
    /// Writes the time as its spec text.
    public func writeJSON(to output: inout JSONOutput) throws { output.string(description) }
}

extension Timestamp: JSONWritable {
    /// Writes the ISO 8601 text.
    public func writeJSON(to output: inout JSONOutput) throws { output.string(description) }
}
