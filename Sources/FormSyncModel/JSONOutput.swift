import Foundation

/// A JSON byte buffer that generated payloads write themselves into, producing exactly the
/// bytes `FormRegistry.encode` (a `JSONEncoder` with sorted keys and unescaped slashes) would,
/// without building the encoder's boxed tree. The outbox digests and stores these bytes, so they
/// must not change between releases: `JSONWriterEquivalenceTests` compares them with
/// `JSONEncoder`'s.
public struct JSONOutput: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty buffer with room for `capacity` bytes.
    public init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    /// The bytes written, as `Data`.
    public var data: Data { Data(bytes) }

    /// Opens an object.
    public mutating func beginObject() { bytes.append(UInt8(ascii: "{")) }

    /// Closes an object.
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")) }

    /// Opens an array.
    public mutating func beginArray() { bytes.append(UInt8(ascii: "[")) }

    /// Closes an array.
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")) }

    /// Starts the next member or element: a comma unless it is the first in its container.
    /// (No value ends in `{` or `[`, so the last byte tells.)
    public mutating func separate() {
        guard let last = bytes.last, last != UInt8(ascii: "{"), last != UInt8(ascii: "[") else { return }
        bytes.append(UInt8(ascii: ","))
    }

    /// Starts an object member named `name`; its value is written next.
    public mutating func key(_ name: String) {
        separate()
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// A string, escaped as `JSONEncoder` escapes it: quote, backslash and the control
    /// characters; everything else (slashes and non-ASCII included) as UTF-8.
    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if start < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index])) }
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(Self.hex[Int(byte >> 4)])
                    bytes.append(Self.hex[Int(byte & 0x0F)])
                }
            }
            if start < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// An integer, in decimal.
    public mutating func integer(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // The magnitude as UInt64, so that Int64.min does not trap; digits come least
        // significant first and are turned round in place.
        var magnitude = value.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[start...].reverse()
    }

    /// `true` or `false`.
    public mutating func boolean(_ value: Bool) {
        bytes.append(contentsOf: value ? Self.trueBytes : Self.falseBytes)
    }

    /// A binary floating-point number as `JSONEncoder` writes it (its shortest description,
    /// without a trailing `.0`). JSON has no NaN or infinity: those throw, as they do there.
    public mutating func double(_ value: Double) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "\(value) cannot be written as a JSON number."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A decimal number, in its exact decimal description. NaN throws (JSON has no NaN).
    public mutating func decimal(_ value: Decimal) throws {
        guard !value.isNaN else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "NaN cannot be written as a JSON number."))
        }
        bytes.append(contentsOf: value.description.utf8)
    }

    static let hex = Array("0123456789abcdef".utf8)
    static let trueBytes = Array("true".utf8)
    static let falseBytes = Array("false".utf8)
}
