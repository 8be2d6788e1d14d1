import FormSpec
import FormSyncModel
import Foundation

/// The field rules of a server's specs, and for each a payload that breaks it alone: made by
/// trying values of the field's kind on a valid sample and keeping the first that the specs'
/// own interpreted validator refuses with that rule's code, at that field, and nothing else.
/// `formsync conformance` sends one per rule kind, so a server that ignores `pattern`,
/// `max_length`, a range, `constraint`, `not_relevant`, `calculated` or `not_offered` fails.
enum ConformanceFieldRules {
    /// The codes of the rules `field` carries (docs/PROTOCOL.md §6).
    static func codes(_ field: FieldDefinition) -> [String] {
        var codes: [String] = []
        switch field.kind {
        case .text(let minLength, let maxLength, let pattern):
            if (minLength ?? 0) > 0 { codes.append("min_length") }
            if maxLength != nil { codes.append("max_length") }
            if pattern != nil { codes.append("pattern") }
        case .integer(let min, let max):
            if min != nil { codes.append("min") }
            if max != nil { codes.append("max") }
        case .decimal(let min, let max):
            if min != nil { codes.append("min") }
            if max != nil { codes.append("max") }
        case .money(let min, let max, let currency):
            if min != nil { codes.append("min") }
            if max != nil { codes.append("max") }
            if currency != nil { codes.append("currency") }
        case .file(_, let rule):
            if rule.maxBytes != nil { codes.append("max_bytes") }
            if !rule.contentTypes.isEmpty { codes.append("content_type") }
        default:
            break
        }
        if field.constraint != nil { codes.append("constraint") }
        if field.relevant != nil { codes.append("not_relevant") }
        if field.calculate != nil { codes.append("calculated") }
        if field.choiceFilter != nil { codes.append("not_offered") }
        return codes
    }

    /// Values of `field`'s kind worth trying: each bound's far side, common shapes, every option.
    static func candidates(_ field: FieldDefinition, sample: Any?, fileID: Int64) -> [Any] {
        switch field.kind {
        case .text(let minLength, let maxLength, _):
            var values: [Any] = ["~", "x", "0", "ZZ", "a b", "x@y.z", String(repeating: "x", count: 12)]
            if let maxLength, maxLength < 100_000 { values.append(String(repeating: "x", count: maxLength + 1)) }
            if let minLength, minLength > 1 { values.append(String(repeating: "x", count: minLength - 1)) }
            return values
        case .integer(let min, let max):
            return numbers(min.map(Int64.init), max.map(Int64.init)).map { $0 as Any }
        case .decimal(let min, let max):
            return numbers(
                min.flatMap { Int64(Double($0)?.rounded(.down) ?? .nan) }, max.flatMap { Int64(Double($0)?.rounded(.up) ?? .nan) }
            )
            .map { $0 as Any }
        case .money(let min, let max, let currency):
            let held = (sample as? [String: Any])?["currency"] as? String ?? currency ?? "EUR"
            var values: [Any] = numbers(min, max).map { ["minor_units": $0, "currency": held] as [String: Any] }
            values.append(["minor_units": 100, "currency": held == "XTS" ? "XXX" : "XTS"] as [String: Any])
            return values
        case .boolean:
            return [true, false]
        case .date:
            return ["1900-01-01", "2026-12-06", "2999-12-31"]
        case .time:
            return ["00:00", "12:00", "23:59"]
        case .datetime:
            return ["1900-01-01T00:00:00Z", "2026-12-06T12:00:00Z", "2999-12-31T23:59:59Z"]
        case .choice(let set):
            return set.options.map(\.value)
        case .multiChoice(let set, _):
            return set.options.map { [$0.value] } + [set.options.map(\.value)]
        case .file(_, let rule):
            let accepted = rule.contentTypes.first.map { $0.hasSuffix("/*") ? $0.dropLast() + "png" : Substring($0) } ?? "image/jpeg"
            var refs: [[String: Any]] = [["id": fileID, "byte_count": 10, "content_type": "application/x-formsync-probe"]]
            if let maxBytes = rule.maxBytes { refs.append(["id": fileID, "byte_count": maxBytes + 1, "content_type": String(accepted)]) }
            refs.append(["id": fileID, "byte_count": 10, "content_type": String(accepted)])
            return rule.multiple ? refs.map { [$0] } : refs
        default:
            return []
        }
    }

    static func numbers(_ min: Int64?, _ max: Int64?) -> [Int64] {
        var values: [Int64] = [-1, 0, 1, 7, 100, 1_000_000, -1_000_000]
        if let min, min > Int64.min { values.append(min - 1) }
        if let max, max < Int64.max { values.append(max + 1) }
        return values
    }

    /// `sample` with `field` set to a value that breaks `code` alone, per `entry`; nil when no
    /// value tried does.
    static func breaking(
        _ field: FieldDefinition, _ code: String, sample: [String: Any], entry: FormRegistry.Entry, fileID: Int64
    ) -> [String: Any]? {
        for value in candidates(field, sample: sample[field.name], fileID: fileID) {
            var object = sample
            object[field.name] = value
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { continue }
            let errors = entry.validate(data)
            if errors.count == 1, errors[0].pointer == "#/\(field.name)", errors[0].code == code { return object }
        }
        return nil
    }
}
