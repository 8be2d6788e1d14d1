import FormSpec
import FormSyncClient
import Foundation

/// Seeded random JSON for a checked form: each field absent, null, a fitting value, a value
/// breaking a rule, or a value of the wrong type, with lists and nested lists. Valid and
/// invalid payloads in one stream, so every rule and every decoding path is reached.
public struct RandomPayloads: Sendable {
    var random: SplitMix64
    /// Every value of its field's JSON type and decodable (rules may still break): a form with
    /// many fields then decodes often enough for its expressions to be reached.
    public var wellTyped = false

    public init(seed: UInt64) {
        random = SplitMix64(state: seed)
    }

    public mutating func int(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
    public mutating func pick<T>(_ values: [T]) -> T { values[int(values.count)] }
    public mutating func chance(_ percent: Int) -> Bool { int(100) < percent }

    public mutating func payload(_ fields: [FieldDefinition], depth: Int = 0) -> String {
        var members: [String] = []
        for field in fields {
            let roll = int(100)
            if roll < 25 { continue }
            if roll < 30 {
                members.append("\"\(field.name)\":null")
                continue
            }
            let wrongType = roll >= 92 && !wellTyped
            members.append("\"\(field.name)\":" + value(field.kind, wrongType: wrongType, depth: depth))
        }
        if chance(5) && !wellTyped { members.append("\"unknown_key\":1") }
        return "{" + members.joined(separator: ",") + "}"
    }

    mutating func string(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data(), as: UTF8.self)
    }

    mutating func value(_ kind: FieldKind, wrongType: Bool, depth: Int) -> String {
        if wrongType {
            switch kind {
            case .text, .choice, .date, .time, .datetime: return pick(["7", "true", "[]", "{}"])
            case .list: return pick(["\"x\"", "[1]", "{}", "[null]"])
            default: return pick(["\"x\"", "true", "[\"a\"]", "1.5"])
            }
        }
        switch kind {
        case .text:
            // (A form's text box cannot hold "" apart from nothing: well-typed payloads leave it out.)
            let texts = ["", " ", "AB12", "ab", "ZZ9999", String(repeating: "x", count: 45), "special", "é✓", "AB123", "Rua 1", "AB1"]
            return string(pick(wellTyped ? Array(texts.dropFirst()) : texts))
        case .integer:
            return pick(["0", "1", "13", "50", "51", "-3", "5", "2", "4", "3"])
        case .decimal:
            return pick(["0.5", "0.4", "99.75", "100", "12.345", "-1", "7"])
        case .boolean:
            return pick(["true", "false"])
        case .date where wellTyped:
            return string(pick(["2026-11-30", "2026-01-01", "2025-06-15", "2026-06-01", "2026-06-02"]))
        case .date:
            return string(pick(["2026-11-30", "2026-02-30", "nope", "2026-01-01"]))
        case .time where wellTyped:
            return string(pick(["09:15", "23:59", "12:00", "07:30"]))
        case .time:
            return string(pick(["09:15", "25:00", "23:59"]))
        case .datetime where wellTyped:
            return string(pick(["2026-11-30T09:00:00Z", "2026-11-30T09:00:00+01:00", "2026-12-01T00:00:00Z"]))
        case .datetime:
            return string(pick(["2026-11-30T09:00:00Z", "2026-11-30 09:00", "2026-11-30T09:00:00+01:00"]))
        case .choice(let set):
            return string(chance(85) || wellTyped ? pick(set.options).value : pick(["huge", "bogus", "partial"]))
        case .multiChoice(let set, _):
            let count = int(5)
            let values = (0..<count).map { _ in chance(85) || wellTyped ? pick(set.options).value : "bogus" }
            return "[" + values.map { string($0) }.joined(separator: ",") + "]"
        case .money:
            let units = pick(["-5", "0", "100", "600000", "2500"])
            let currency = pick(["EUR", "EUR", "USD", "eur", "EURO"])
            return "{\"minor_units\":\(units),\"currency\":\(string(currency))}"
        case .geopoint:
            let accuracy = chance(30) ? ",\"accuracy\":\(pick(["-1", "5"]))" : ""
            return "{\"latitude\":\(pick(["0", "91", "-90", "38.7"])),\"longitude\":\(pick(["181", "10", "-9.1"]))\(accuracy)}"
        case .reference:
            return pick(["-3", "0", "5", "7", "-8"])
        case .file where wellTyped:
            return "null"
        case .file(_, let rule):
            if rule.multiple {
                return "[" + (0..<int(5)).map { _ in file() }.joined(separator: ",") + "]"
            }
            return file()
        case .list(let list):
            guard depth < 3 else { return "[]" }
            return "[" + (0..<int(6)).map { _ in payload(list.fields, depth: depth + 1) }.joined(separator: ",") + "]"
        }
    }

    mutating func file() -> String {
        var members = ["\"id\":\(pick(["-2", "0", "8", "-9", "12"]))"]
        if chance(70) { members.append("\"byte_count\":\(pick(["10", "3000000", "0"]))") }
        if chance(70) { members.append("\"content_type\":\(string(pick(["image/jpeg", "image/png", "IMAGE/JPEG", "text/plain"])))") }
        return "{" + members.joined(separator: ",") + "}"
    }
}
