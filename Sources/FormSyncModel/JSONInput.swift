import Foundation

/// Reads payload JSON for the generated `init(json:)`, without `JSONDecoder` (a third of the
/// reference server's work per write was decoding). It takes only the plain JSON a payload's
/// own writer gives: strings without escapes, integers as plain digits, each member once and
/// every member known. Anything else it declines by throwing `JSONInput.Declined`, and the
/// caller decodes with `JSONDecoder` instead, which gives the same value or the exact error:
/// what it does read, it reads as `JSONDecoder` would.
public struct JSONInput {
    /// The input is not the plain JSON this reader takes: decode it with `JSONDecoder`.
    public struct Declined: Error, Sendable {
        public init() {}
    }

    /// Whitespace, single bytes and the position, as `JSONObjectSlices` moves over JSON.
    var scanner: JSONScanner
    var bytes: [UInt8] { scanner.bytes }
    var index: Int {
        get { scanner.index }
        set { scanner.index = newValue }
    }

    init(_ data: Data) {
        scanner = JSONScanner(data)
    }

    /// Reads a whole document with `read`; only whitespace may follow what it read.
    public static func read<T>(_ data: Data, _ read: (inout JSONInput) throws -> T) throws -> T {
        var input = JSONInput(data)
        let value = try read(&input)
        input.scanner.skipSpace()
        guard input.scanner.atEnd else { throw Declined() }
        return value
    }

    /// `type` read from `data` by its own `init(json:)`, or nil when the reader declined it.
    public static func value<T: JSONReadable>(_ type: T.Type, from data: Data) -> T? {
        try? read(data) { try T(json: &$0) }
    }

    /// The next byte after whitespace, not consumed.
    mutating func peek() throws -> UInt8 {
        scanner.skipSpace()
        guard let byte = scanner.peek else { throw Declined() }
        return byte
    }

    mutating func expect(_ byte: UInt8) throws {
        scanner.skipSpace()
        guard scanner.consume(byte) else { throw Declined() }
    }

    /// Reads an object, calling `member` with each key; `member` reads the value.
    public mutating func readObject(_ member: (_ key: String, _ input: inout JSONInput) throws -> Void) throws {
        try expect(UInt8(ascii: "{"))
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            let key = try readString()
            try expect(UInt8(ascii: ":"))
            try member(key, &self)
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return
            default: throw Declined()
            }
        }
    }

    /// Reads an array, calling `element` for each element.
    public mutating func readArray(_ element: (inout JSONInput) throws -> Void) throws {
        try expect(UInt8(ascii: "["))
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            try element(&self)
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return
            default: throw Declined()
            }
        }
    }

    /// Marks member `bit` of an object as read; a member read twice is declined.
    public static func claim(_ seen: inout UInt64, _ bit: Int) throws {
        let mask: UInt64 = 1 << UInt64(bit & 63)
        guard seen & mask == 0 else { throw Declined() }
        seen |= mask
    }

    /// A value that may be `null` (nil, as `decodeIfPresent` gives).
    public mutating func optional<T: JSONReadable>() throws -> T? {
        if try peek() == UInt8(ascii: "n") {
            try literal("null")
            return nil
        }
        return try T(json: &self)
    }

    /// `word`, which must end where a value may end.
    mutating func literal(_ word: StaticString) throws {
        scanner.skipSpace()
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw Declined() }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw Declined() }
        index += count
        try requireEndOfValue()
    }

    /// Whatever follows a scalar must be a delimiter, whitespace or the end.
    mutating func requireEndOfValue() throws {
        guard index < bytes.count else { return }
        switch bytes[index] {
        case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 32, 9, 10, 13: return
        default: throw Declined()
        }
    }

    /// A string read with `parse`, which declines by returning nil.
    mutating func readString<T>(as parse: (String) -> T?) throws -> T {
        guard let value = parse(try readString()) else { throw Declined() }
        return value
    }

    /// A string with no escapes and no control characters, valid UTF-8.
    mutating func readString() throws -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        // One pass over the bytes by pointer: every string of every payload and record is read
        // here (the pull's hundred thousand records, each enqueue's payload).
        let read: (text: String?, end: Int)? = scanner.bytes.withUnsafeBufferPointer { buffer in
            var at = start
            var ascii = true
            while at < buffer.count {
                let byte = buffer[at]
                if byte == UInt8(ascii: "\"") {
                    let slice = UnsafeBufferPointer(rebasing: buffer[start..<at])
                    // ASCII needs no validation; `String(validating:as:)` is generic at run time
                    // (a metadata look-up per call, a tenth of a pull's CPU when every string took it).
                    return (ascii ? String(decoding: slice, as: UTF8.self) : String(validating: slice, as: UTF8.self), at)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                if byte >= 0x80 { ascii = false }
                at += 1
            }
            return nil
        }
        guard let read, let text = read.text else { throw Declined() }
        index = read.end + 1
        return text
    }

    /// An integer in plain digits (`0` or no leading zero, an optional minus, at most 18
    /// digits, so that it cannot overflow); no fraction or exponent.
    mutating func readInteger() throws -> Int64 {
        scanner.skipSpace()
        var negative = false
        if index < bytes.count && bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let start = index
        var value: Int64 = 0
        while index < bytes.count, (48...57).contains(bytes[index]), index - start < 18 {
            value = value * 10 + Int64(bytes[index] - 48)
            index += 1
        }
        let digits = index - start
        guard digits > 0, digits == 1 || bytes[start] != 48, !(negative && value == 0) else { throw Declined() }
        try requireEndOfValue()
        return negative ? -value : value
    }

    /// A number in JSON's grammar, read as `Double` does (correctly rounded, as `JSONDecoder`
    /// reads it); one too large to be finite, or too small to be anything but zero, is declined.
    mutating func readDouble() throws -> Double {
        scanner.skipSpace()
        let start = index
        func digits() -> Int {
            let first = index
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
            return index - first
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != 48 else { throw Declined() }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw Declined() }
        }
        let mantissaEnd = index
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) { index += 1 }
            guard digits() > 0 else { throw Declined() }
        }
        guard index - start <= 64 else { throw Declined() }
        try requireEndOfValue()
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw Declined() }
        // `JSONDecoder` refuses a number that is not zero yet rounds to zero.
        guard value != 0 || !bytes[start..<mantissaEnd].contains(where: { (49...57).contains($0) }) else { throw Declined() }
        return value
    }
}
