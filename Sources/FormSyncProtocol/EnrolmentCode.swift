/// A device enrolment's single-use code (docs/PROTOCOL.md, "Devices and credentials"): 100
/// random bits written as 20 symbols of Crockford's base 32 in groups of four
/// (`7KQM-3RTX-A9PD-W2HE-N6FB`), so that a person can read it out or type it when a QR code
/// cannot be scanned. Reading forgives what people do: lower case, spaces or no dashes, `O` for
/// `0`, `I` or `L` for `1`.
public struct EnrolmentCode: Sendable, Equatable, CustomStringConvertible {
    /// The 20 symbols, without dashes.
    public let symbols: String

    /// Crockford's alphabet: no I, L, O or U.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    /// Symbols in a code.
    public static let length = 20

    /// The code that `random` (at least 13 bytes from a secure source) spells.
    public init(randomBytes random: [UInt8]) {
        precondition(random.count >= 13, "an enrolment code takes 100 random bits")
        var symbols: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in random.prefix(13) {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5, symbols.count < Self.length {
                bits -= 5
                symbols.append(Self.alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        self.symbols = String(decoding: symbols, as: UTF8.self)
    }

    /// The code a person typed or a link carried, or nil when it is not 20 symbols of the
    /// alphabet (after dashes and spaces are dropped and look-alikes read as digits).
    public init?(reading text: String) {
        guard text.utf8.count <= 64 else { return nil }
        var symbols: [UInt8] = []
        for byte in text.utf8 {
            if byte == UInt8(ascii: "-") || byte == UInt8(ascii: " ") { continue }
            var upper = byte
            if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(upper) { upper -= 32 }
            switch upper {
            case UInt8(ascii: "O"): upper = UInt8(ascii: "0")
            case UInt8(ascii: "I"), UInt8(ascii: "L"): upper = UInt8(ascii: "1")
            default: break
            }
            guard Self.alphabet.contains(upper), symbols.count < Self.length else { return nil }
            symbols.append(upper)
        }
        guard symbols.count == Self.length else { return nil }
        self.symbols = String(decoding: symbols, as: UTF8.self)
    }

    /// The code in groups of four, as people are shown it.
    public var description: String {
        var groups: [Substring] = []
        var rest = Substring(symbols)
        while !rest.isEmpty {
            groups.append(rest.prefix(4))
            rest = rest.dropFirst(4)
        }
        return groups.joined(separator: "-")
    }
}
