import FieldForms
import FormSyncModel
import FormSyncTesting
import Foundation
import Testing

/// The generated `writeJSON(to:)` against `JSONEncoder`: the outbox digests and stores the
/// writer's bytes, so for every form and record they must be exactly what the encoder gave
/// before (an app update must not make a queued payload look new). Payloads are random, made
/// by decoding from a seeded random source, with hostile strings and extreme numbers.
struct JSONWriterEquivalenceTests {
    static func encoderBytes<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static func compare<T: Codable & JSONWritable>(_ type: T.Type, seeds: Range<UInt64>) throws -> Int {
        var compared = 0
        for seed in seeds {
            let source = RandomValues(seed: seed)
            let value = try T(from: RandomDecoder(source: source, depth: 0))
            var output = JSONOutput()
            try value.writeJSON(to: &output)
            let expected = try encoderBytes(value)
            #expect(
                output.data == expected,
                "\(T.self), seed \(seed):\n\(String(decoding: output.bytes, as: UTF8.self))\n\(String(decoding: expected, as: UTF8.self))")
            #expect(try FormRegistry.encode(value) == expected)
            compared += 1
        }
        return compared
    }

    @Test func everyGeneratedFormAndRecordWritesTheEncodersBytes() async throws {
        try await OffThePool.compute {
            var types = 0
            for form in FormCatalog.forms {
                let cast = form as? any (Codable & JSONWritable).Type
                let writable = try #require(cast, "\(form) is not JSONWritable")
                #expect(try Self.compare(writable, seeds: 0..<400) == 400)
                types += 1
            }
            for record in FormCatalog.records {
                let cast = record as? any (Codable & JSONWritable).Type
                let writable = try #require(cast, "\(record) is not JSONWritable")
                #expect(try Self.compare(writable, seeds: 0..<400) == 400)
                types += 1
            }
            #expect(types == FormCatalog.forms.count + FormCatalog.records.count)
        }
    }

    @Test func numbersJSONCannotHoldAreRefusedAsTheEncoderRefusesThem() throws {
        for bad in [Double.nan, .infinity, -.infinity] {
            let inspection = SiteInspection(location: GeoPoint(latitude: bad, longitude: 9.1))
            #expect(throws: EncodingError.self) { try FormRegistry.encode(inspection) }
            #expect(throws: EncodingError.self) { try Self.encoderBytes(inspection) }
        }
        var output = JSONOutput()
        #expect(throws: EncodingError.self) { try output.decimal(Decimal.nan) }
    }

    @Test func theRandomPayloadsReachEveryKindOfValue() throws {
        // The comparison above proves little if the payloads are empty: count what they held.
        let source = RandomValues(seed: 7)
        var bytes = Data()
        for seed in 0..<50 {
            source.reseed(UInt64(seed))
            bytes += try Self.encoderBytes(try SiteInspection(from: RandomDecoder(source: source, depth: 0)))
            bytes += try Self.encoderBytes(try SalesOrder(from: RandomDecoder(source: source, depth: 0)))
        }
        let text = String(decoding: bytes, as: UTF8.self)
        for needle in [
            "\\u00", "\\\"", "\\\\", "\\n", "😀", "/", "\"minor_units\":", "\"latitude\":", "e-", "\"findings\":[{", "\"photos\":[{",
        ] {
            #expect(text.contains(needle), "no payload held \(needle)")
        }
    }
}

/// Seeded random values, hostile where JSON is fragile.
final class RandomValues {
    var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(state: seed) }

    func reseed(_ seed: UInt64) { random = SplitMix64(state: seed) }

    func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

    func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    static let pieces: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "é", "\u{2028}", "😀", "日本", "e\u{301}", "\u{7F}", "\u{0}", "\n", "\t", "\r", "\u{8}",
        "\u{C}", "\u{1}", "\u{1F}", "</script>", "%20", "{", "]",
    ]

    /// Strings without a character JSON escapes, and integers of at most 18 digits: what
    /// `JSONInput` reads itself (`JSONReaderEquivalenceTests`).
    var plain = false

    static let plainPieces: [String] = [
        "a", "Z", "0", " ", "/", "é", "😀", "日本", "e\u{301}", "</script>", "%20", "{", "]", "\u{2028}", "\u{7F}",
    ]

    func string() -> String {
        let pieces = plain ? Self.plainPieces : Self.pieces
        return (0..<int(0...10)).map { _ in pieces[int(0...pieces.count - 1)] }.joined()
    }

    func int64() -> Int64 {
        if plain { return Int64(int(-999_999_999_999...999_999_999_999)) }
        switch int(0...3) {
        case 0: return [Int64.min, Int64.max, 0, -1][int(0...3)]
        case 1: return Int64(int(-1000...1000))
        default: return Int64(bitPattern: random.next())
        }
    }

    func double() -> Double {
        switch int(0...4) {
        case 0:
            return [0.1, -0.0, 1e-7, 1e21, 1e16, 52.123456789, -180, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude][
                int(0...8)]
        case 1: return Double(int(-1000...1000))
        case 2: return Double(int(-90_000_000...90_000_000)) / 1_000_000
        default:
            let value = Double(bitPattern: random.next())
            return value.isFinite ? value : 1.5
        }
    }

    func decimal() -> Decimal {
        let digits = (0..<int(1...30)).map { _ in String(int(0...9)) }.joined()
        let point = int(0...digits.count)
        let text = (chance(30) ? "-" : "") + String(digits.prefix(point)) + (point < digits.count ? "." + digits.dropFirst(point) : "")
        return Decimal(string: text.hasPrefix(".") || text.hasPrefix("-.") ? text.replacingOccurrences(of: ".", with: "0.") : text) ?? 0
    }

    /// A value of `type`: the leaves here, anything else decoded from more random values.
    func value<T: Decodable>(_ type: T.Type, depth: Int) throws -> T {
        switch type {
        case is String.Type: return string() as! T
        case is Int.Type: return Int(int64()) as! T
        case is Int64.Type: return int64() as! T
        case is Bool.Type: return chance(50) as! T
        case is Double.Type: return double() as! T
        case is Decimal.Type: return decimal() as! T
        case is LocalDate.Type: return LocalDate(year: int(1...9999), month: int(1...12), day: int(1...28))! as! T
        case is LocalTime.Type: return LocalTime(hour: int(0...23), minute: int(0...59), second: int(0...59))! as! T
        case is Timestamp.Type: return Timestamp(millisecondsSince1970: Int64(int(0...4_000_000_000_000))) as! T
        default:
            if let cases = type as? any CaseIterable.Type { return pick(cases) as! T }
            return try T(from: RandomDecoder(source: self, depth: depth + 1))
        }
    }

    func pick<C: CaseIterable>(_ type: C.Type) -> C {
        let all = Array(type.allCases)
        return all[int(0...all.count - 1)]
    }
}

/// A `Decoder` that answers every question with a random value: which keys are present, how
/// long a list is, what each leaf holds. Lists stop growing three levels down.
struct RandomDecoder: Decoder {
    let source: RandomValues
    let depth: Int
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    init(source: RandomValues, depth: Int) {
        self.source = source
        self.depth = depth
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Keyed(source: source, depth: depth))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        Unkeyed(source: source, depth: depth, count: depth > 3 ? 0 : source.int(0...3))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(source: source, depth: depth) }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let source: RandomValues
        let depth: Int
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] = []

        func contains(_ key: Key) -> Bool { source.chance(75) }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try source.value(type, depth: depth) }
        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            KeyedDecodingContainer(Keyed<NestedKey>(source: source, depth: depth + 1))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            Unkeyed(source: source, depth: depth + 1, count: source.int(0...3))
        }
        func superDecoder() throws -> any Decoder { RandomDecoder(source: source, depth: depth + 1) }
        func superDecoder(forKey key: Key) throws -> any Decoder { RandomDecoder(source: source, depth: depth + 1) }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let source: RandomValues
        let depth: Int
        let count: Int?
        var codingPath: [any CodingKey] = []
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex >= count ?? 0 }

        init(source: RandomValues, depth: Int, count: Int) {
            self.source = source
            self.depth = depth
            self.count = count
        }

        mutating func decodeNil() throws -> Bool { false }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            currentIndex += 1
            return try source.value(type, depth: depth)
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            currentIndex += 1
            return KeyedDecodingContainer(Keyed<NestedKey>(source: source, depth: depth + 1))
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            currentIndex += 1
            return Unkeyed(source: source, depth: depth + 1, count: source.int(0...3))
        }
        mutating func superDecoder() throws -> any Decoder { RandomDecoder(source: source, depth: depth + 1) }
    }

    struct Single: SingleValueDecodingContainer {
        let source: RandomValues
        let depth: Int
        var codingPath: [any CodingKey] = []

        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try source.value(type, depth: depth) }
    }
}
