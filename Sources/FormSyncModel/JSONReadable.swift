import Foundation

/// A value that reads itself from plain JSON (`JSONInput`) as its `Decodable` conformance
/// reads it under `JSONDecoder`, declining what it does not take. Generated payloads, their
/// items and choices conform; `FormRegistry` tries it before `JSONDecoder`.
public protocol JSONReadable: SendableMetatype {
    /// Reads the value, or throws `JSONInput.Declined`.
    init(json input: inout JSONInput) throws
}

extension JSONReadable where Self: RawRepresentable, RawValue == String {
    /// A string-backed choice reads its raw value; another string is declined.
    public init(json input: inout JSONInput) throws { self = try input.readString(as: Self.init(rawValue:)) }
}

extension String: JSONReadable {
    /// Reads a string without escapes.
    public init(json input: inout JSONInput) throws { self = try input.readString() }
}

extension Int: JSONReadable {
    /// Reads a plain integer.
    public init(json input: inout JSONInput) throws {
        guard let value = Int(exactly: try input.readInteger()) else { throw JSONInput.Declined() }
        self = value
    }
}

extension Int64: JSONReadable {
    /// Reads a plain integer.
    public init(json input: inout JSONInput) throws { self = try input.readInteger() }
}

extension Bool: JSONReadable {
    /// Reads `true` or `false`.
    public init(json input: inout JSONInput) throws {
        if try input.peek() == UInt8(ascii: "t") {
            try input.literal("true")
            self = true
        } else {
            try input.literal("false")
            self = false
        }
    }
}

extension Double: JSONReadable {
    /// Reads a finite number.
    public init(json input: inout JSONInput) throws { self = try input.readDouble() }
}

extension Decimal: JSONReadable {
    /// Always declined: `JSONDecoder` reads a decimal from its digits by rules of its own, and
    /// a payload holding one is decoded by it.
    public init(json input: inout JSONInput) throws { throw JSONInput.Declined() }
}

extension Array: JSONReadable where Element: JSONReadable {
    /// Reads the elements in order.
    public init(json input: inout JSONInput) throws {
        var elements: [Element] = []
        try input.readArray { elements.append(try Element(json: &$0)) }
        self = elements
    }
}

extension LocalDate: JSONReadable {
    /// Reads `YYYY-MM-DD`.
    public init(json input: inout JSONInput) throws { self = try input.readString(as: LocalDate.init) }
}

extension LocalTime: JSONReadable {
    /// Reads `HH:MM` or `HH:MM:SS`.
    public init(json input: inout JSONInput) throws { self = try input.readString(as: LocalTime.init) }
}

extension Timestamp: JSONReadable {
    /// Reads an ISO 8601 date-time with a time zone.
    public init(json input: inout JSONInput) throws { self = try input.readString(as: Timestamp.init) }
}

extension EntityRef: JSONReadable {
    /// Reads the bare id.
    public init(json input: inout JSONInput) throws { self.init(try input.readInteger()) }
}

extension Money: JSONReadable {
    /// Reads `{"currency": …, "minor_units": …}`.
    public init(json input: inout JSONInput) throws {
        var minorUnits: Int64?
        var currency: String?
        var seen: UInt64 = 0
        try input.readObject { key, input in
            switch key {
            case "minor_units":
                try JSONInput.claim(&seen, 0)
                minorUnits = try input.readInteger()
            case "currency":
                try JSONInput.claim(&seen, 1)
                currency = try input.readString()
            default: throw JSONInput.Declined()
            }
        }
        guard let minorUnits, let currency else { throw JSONInput.Declined() }
        self.init(minorUnits: minorUnits, currency: currency)
    }
}

extension FileRef: JSONReadable {
    /// Reads `{"byte_count": …, "content_type": …, "id": …}`, or a pending file's
    /// `{"byte_count": …, "content_type": …, "digest": …}`.
    public init(json input: inout JSONInput) throws {
        var id: Int64?
        var byteCount: Int64?
        var contentType: String?
        var digest: String?
        var seen: UInt64 = 0
        try input.readObject { key, input in
            switch key {
            case "id":
                try JSONInput.claim(&seen, 0)
                id = try input.readInteger()
            case "byte_count":
                try JSONInput.claim(&seen, 1)
                byteCount = try input.optional()
            case "content_type":
                try JSONInput.claim(&seen, 2)
                contentType = try input.optional()
            case "digest":
                try JSONInput.claim(&seen, 3)
                digest = try input.optional()
            default: throw JSONInput.Declined()
            }
        }
        guard let id = id ?? (digest != nil ? 0 : nil) else { throw JSONInput.Declined() }
        self.init(id: id, byteCount: byteCount, contentType: contentType, digest: digest)
    }
}

extension GeoPoint: JSONReadable {
    /// Reads `{"accuracy": …, "latitude": …, "longitude": …}`.
    public init(json input: inout JSONInput) throws {
        var latitude: Double?
        var longitude: Double?
        var accuracy: Double?
        var seen: UInt64 = 0
        try input.readObject { key, input in
            switch key {
            case "latitude":
                try JSONInput.claim(&seen, 0)
                latitude = try input.readDouble()
            case "longitude":
                try JSONInput.claim(&seen, 1)
                longitude = try input.readDouble()
            case "accuracy":
                try JSONInput.claim(&seen, 2)
                accuracy = try input.optional()
            default: throw JSONInput.Declined()
            }
        }
        guard let latitude, let longitude else { throw JSONInput.Declined() }
        self.init(latitude: latitude, longitude: longitude, accuracy: accuracy)
    }
}
