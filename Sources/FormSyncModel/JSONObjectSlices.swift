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
        let bytes = [UInt8](data)
        var index = 0
        func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
        }
        /// Moves past one string (index at its opening quote); false when it never closes.
        func skipString() -> Bool {
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case 0x5C: index += 2
                case 0x22:
                    index += 1
                    return true
                default: index += 1
                }
            }
            return false
        }
        /// Moves past one value, counting brackets without recursion.
        func skipValue() -> Bool {
            var depth = 0
            repeat {
                guard index < bytes.count else { return false }
                switch bytes[index] {
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
                    while index < bytes.count, !",:]}\"{[ \n\r\t".utf8.contains(bytes[index]) { index += 1 }
                    if index == start { return false }
                }
                if depth > 0 { skipSpace() }
            } while depth > 0
            return true
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == 0x7B else { return nil }
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == 0x7D {
            index += 1
        } else {
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == 0x22 else { return nil }
                let keyStart = index
                guard skipString(), let key = try? JSONDecoder().decode(String.self, from: Data(bytes[keyStart..<index])) else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == 0x3A else { return nil }
                index += 1
                skipSpace()
                let valueStart = index
                guard skipValue() else { return nil }
                set(key, Data(bytes[valueStart..<index]))
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == 0x2C {
                    index += 1
                    continue
                }
                guard bytes[index] == 0x7D else { return nil }
                index += 1
                break
            }
        }
        skipSpace()
        guard index == bytes.count else { return nil }
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
            out.append((try? JSONEncoder().encode(member.key)) ?? Data("\"\"".utf8))
            out.append(0x3A)
            out.append(member.value)
        }
        out.append(0x7D)
        return out
    }
}
