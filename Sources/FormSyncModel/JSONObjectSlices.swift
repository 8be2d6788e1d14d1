import Foundation

/// The top-level members of a JSON object, each value kept as the exact bytes it was written
/// with (so that a decimal keeps every digit). Records and the forms that change them share
/// fields by name; moving a field from one to the other is moving its bytes.
package struct JSONObjectSlices: Sendable, Equatable {
    /// The members in order, later duplicates replacing earlier ones.
    package private(set) var members: [(key: String, value: Data)] = []

    package static func == (a: JSONObjectSlices, b: JSONObjectSlices) -> Bool {
        a.members.elementsEqual(b.members) { $0.key == $1.key && $0.value == $1.value }
    }

    package init() {}

    /// Reads a JSON object; nil for anything else, or for text that is not well-formed JSON at
    /// the top level (nested values are checked when they are decoded).
    package init?(_ data: Data) {
        var scanner = JSONScanner(data)
        scanner.skipSpace()
        let read = scanner.readObject { key, scanner in
            let start = scanner.index
            guard scanner.skipValue() else { return false }
            set(key, scanner.bytes(from: start))
            return true
        }
        scanner.skipSpace()
        guard read, scanner.atEnd else { return nil }
    }

    /// The elements of a JSON array, each as the exact bytes it was written with; nil for
    /// anything else.
    package static func elements(ofArray data: Data) -> [Data]? {
        var scanner = JSONScanner(data)
        var elements: [Data] = []
        scanner.skipSpace()
        guard scanner.consume(0x5B) else { return nil }
        scanner.skipSpace()
        if !scanner.consume(0x5D) {
            while true {
                scanner.skipSpace()
                let start = scanner.index
                guard scanner.skipValue() else { return nil }
                elements.append(scanner.bytes(from: start))
                scanner.skipSpace()
                if scanner.consume(0x2C) { continue }
                guard scanner.consume(0x5D) else { return nil }
                break
            }
        }
        scanner.skipSpace()
        return scanner.atEnd ? elements : nil
    }

    /// The value's bytes for `key`.
    package subscript(key: String) -> Data? {
        members.last { $0.key == key }?.value
    }

    /// Sets (or, with nil or `null`, removes) the member `key`.
    package mutating func set(_ key: String, _ value: Data?) {
        members.removeAll { $0.key == key }
        guard let value, value != Data("null".utf8) else { return }
        members.append((key, value))
    }

    /// The object as JSON with its keys sorted, as the outbox and the server store payloads.
    package var data: Data {
        var out = Data("{".utf8)
        for (offset, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
            if offset > 0 { out.append(0x2C) }
            var key = JSONOutput(capacity: member.key.utf8.count + 2)
            key.string(member.key)
            out.append(contentsOf: key.bytes)
            out.append(0x3A)
            out.append(member.value)
        }
        out.append(0x7D)
        return out
    }
}

/// Moves over JSON text without building values: strings (escapes included) and brackets are
/// followed, nesting is counted without recursion, so no input can exhaust the stack.
package struct JSONScanner {
    package let bytes: [UInt8]
    package var index = 0

    package init(_ data: Data) {
        bytes = [UInt8](data)
    }

    package var atEnd: Bool { index == bytes.count }
    package var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    package func bytes(from start: Int) -> Data { Data(bytes[start..<index]) }

    /// The string just skipped (from its opening quote at `start`): copied as is when it holds
    /// no escape and no control character, decoded as JSON otherwise (which refuses a control
    /// character).
    package func string(from start: Int) -> String? {
        let inner = bytes[(start + 1)..<(index - 1)]
        var plain = true
        var ascii = true
        for byte in inner {
            if byte == 0x5C || byte < 0x20 { plain = false }
            if byte >= 0x80 { ascii = false }
        }
        guard plain else { return try? JSONDecoder().decode(String.self, from: bytes(from: start)) }
        // ASCII needs no validation (`String(validating:as:)` looks its generic metadata up at
        // run time, on every call).
        return ascii ? String(decoding: inner, as: UTF8.self) : String(validating: inner, as: UTF8.self)
    }

    package mutating func consume(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    package mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    /// Moves past one string (the index at its opening quote); false when it never closes.
    package mutating func skipString() -> Bool {
        let end: Int? = bytes.withUnsafeBufferPointer { buffer in
            var at = index + 1
            while at < buffer.count {
                switch buffer[at] {
                case 0x5C: at += 2
                case 0x22: return at + 1
                default: at += 1
                }
            }
            return nil
        }
        index = end ?? bytes.count
        return end != nil
    }

    /// Whether `byte` ends a number or a literal (`true`, `false`, `null`).
    @inline(__always)
    static func endsScalar(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x2C, 0x3A, 0x5D, 0x7D, 0x22, 0x7B, 0x5B, 0x20, 0x0A, 0x0D, 0x09: true
        default: false
        }
    }

    /// Moves over one object (the scanner at its opening brace), calling `member` with each
    /// key (decoded) and the scanner at the start of its value; `member` moves past the value,
    /// or returns false. False when the object is not well-formed or `member` returned false.
    package mutating func readObject(_ member: (_ key: String, _ scanner: inout JSONScanner) -> Bool) -> Bool {
        guard consume(0x7B) else { return false }
        skipSpace()
        if consume(0x7D) { return true }
        while true {
            skipSpace()
            guard peek == 0x22 else { return false }
            let keyStart = index
            guard skipString(), let key = string(from: keyStart) else { return false }
            skipSpace()
            guard consume(0x3A) else { return false }
            skipSpace()
            guard member(key, &self) else { return false }
            skipSpace()
            if consume(0x2C) { continue }
            return consume(0x7D)
        }
    }

    /// Moves past one value; false when it is cut short or its brackets do not match.
    package mutating func skipValue() -> Bool {
        var depth = 0
        repeat {
            guard let byte = peek else { return false }
            switch byte {
            case 0x22:
                guard skipString() else { return false }
            case 0x7B, 0x5B:
                depth += 1
                index += 1
            case 0x7D, 0x5D:
                guard depth > 0 else { return false }
                depth -= 1
                index += 1
            case 0x2C, 0x3A:
                guard depth > 0 else { return false }
                index += 1
            default:
                let start = index
                while index < bytes.count, !Self.endsScalar(bytes[index]) { index += 1 }
                if index == start { return false }
            }
            if depth > 0 { skipSpace() }
        } while depth > 0
        return true
    }
}
