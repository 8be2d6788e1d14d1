import FormSpec
import FormSyncCommandLine
import FormSyncModel
import FormSyncPattern
import Foundation

/// Valid payloads for a server's own forms, made from their specs, so that `formsync
/// conformance --specs DIR` can test a server that hosts none of FormSync's examples. A payload
/// holds every required field (and each field a `required_if` asks for) with the smallest value
/// its rules accept; `variant` changes one text or number so that two samples differ. References
/// take the ids `recordIDs` holds, files the ids `fileID` uploads. A field no value can be made
/// for is named in `missing`, and the caller reports its checks as not checked.
struct ConformanceSamples {
    /// Record ids the server holds, by type (references point at them).
    var recordIDs: [String: Int64] = [:]
    /// Uploaded files by media type (`mediaTypes(of:)` says which a form needs).
    var files: [String: (id: Int64, byteCount: Int, contentType: String)] = [:]
    let run: String

    /// The payload's JSON object, or the reason none could be made.
    func payload(_ form: FormDefinition, variant: Int = 0, including extra: Set<String> = []) -> Result<[String: Any], Unmakeable> {
        var object: [String: Any] = [:]
        var varied = false
        do {
            for field in form.fields where Self.needed(field) || extra.contains(field.name) {
                object[field.name] = try value(field, variant: variant, varied: &varied, depth: 0)
            }
            // A required_if whose condition the values above made true.
            for field in form.fields where object[field.name] == nil && field.requiredIf.contains(where: { holds($0, object) }) {
                object[field.name] = try value(field, variant: variant, varied: &varied, depth: 0)
            }
            if variant != 0 && !varied {
                // Nothing required could carry the variant: an optional plain text can.
                for field in form.fields where object[field.name] == nil {
                    if case .text(let min, let max, nil) = field.kind, (max ?? 100) >= 12 {
                        object[field.name] = text(min: min, max: max, variant: variant)
                        varied = true
                        break
                    }
                }
            }
            if variant != 0 && !varied { throw Unmakeable(reason: "no field of \(form.name) can hold a second, different value") }
        } catch let error as Unmakeable {
            return .failure(error)
        } catch {
            return .failure(Unmakeable(reason: "\(error)"))
        }
        return .success(object)
    }

    /// Whether a sample must hold the field: required, or holding several values with a
    /// `min_count` (which the rules ask for whenever the field is there, and JSON Schema lists
    /// as required).
    static func needed(_ field: FieldDefinition) -> Bool {
        if field.required { return true }
        switch field.kind {
        case .multiChoice(_, let count): return (count.min ?? 0) > 0
        case .file(_, let rule): return rule.multiple && (rule.count.min ?? 0) > 0
        case .list(let list): return (list.count.min ?? 0) > 0
        default: return false
        }
    }

    struct Unmakeable: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    private func holds(_ condition: Condition, _ object: [String: Any]) -> Bool {
        guard let value = object[condition.field] else { return false }
        let text: String
        switch value {
        case let bool as Bool: text = bool ? "true" : "false"
        case let number as NSNumber: text = number.stringValue
        case let string as String: text = string
        default: return false
        }
        return condition.values.contains(text)
    }

    func text(min: Int?, max: Int?, variant: Int) -> String {
        var value = "Conformance \(run) \(variant)"
        let upper = max ?? 200
        if value.unicodeScalars.count > upper { value = String(String.UnicodeScalarView(value.unicodeScalars.suffix(Swift.max(1, upper)))) }
        while value.unicodeScalars.count < (min ?? 1) { value += "x" }
        return value
    }

    private func value(_ field: FieldDefinition, variant: Int, varied: inout Bool, depth: Int) throws -> Any {
        guard depth < 16 else { throw Unmakeable(reason: "\(field.name) nests too deep") }
        switch field.kind {
        case .text(let min, let max, let pattern):
            guard let pattern else {
                defer { varied = true }
                return text(min: min, max: max, variant: variant)
            }
            guard let compiled = try? Pattern(pattern),
                let example = compiled.example(minLength: Swift.max(min ?? 0, field.required ? 1 : 0), maxLength: max ?? 256),
                !example.allSatisfy(\.isWhitespace)
            else { throw Unmakeable(reason: "no value of \(field.name) matches its pattern within its lengths") }
            return example
        case .integer(let min, let max):
            var value = Swift.max(min ?? 1, Swift.min(max ?? Int.max, 1))
            if let max, value + variant <= max {
                value += variant
                varied = varied || variant != 0
            } else if max == nil {
                value += variant
                varied = varied || variant != 0
            }
            return value
        case .decimal(let min, let max):
            let low = min.flatMap { Decimal(string: $0) } ?? 1
            let high = max.flatMap { Decimal(string: $0) }
            var value = Swift.max(low, Decimal(1))
            if let high, value > high { value = low }
            return NSDecimalNumber(decimal: value)
        case .boolean: return true
        case .date: return "2026-11-30"
        case .time: return "09:15"
        case .datetime: return "2026-11-30T09:15:00Z"
        case .choice(let set):
            guard let first = set.options.first else { throw Unmakeable(reason: "\(field.name) has no options") }
            return first.value
        case .multiChoice(let set, let count):
            let wanted = Swift.max(count.min ?? 1, 1)
            guard set.options.count >= wanted else { throw Unmakeable(reason: "\(field.name) asks for more options than it has") }
            return set.options.prefix(wanted).map(\.value)
        case .money(let min, let max, let currency):
            var minor = Swift.max(min ?? 100, Swift.min(max ?? Int64.max, 100))
            if let max, minor > max { minor = max }
            return ["minor_units": minor, "currency": currency ?? "EUR"] as [String: Any]
        case .geopoint:
            return ["latitude": 38.7223, "longitude": -9.1393] as [String: Any]
        case .reference(let type):
            guard let id = recordIDs[type] else {
                throw Unmakeable(reason: "\(field.name) refers to a \(type), and the server's feed holds none")
            }
            return id
        case .file(_, let rule):
            let type = Self.mediaType(accepted: rule.contentTypes)
            guard let file = files[type] else { throw Unmakeable(reason: "no \(type) file could be uploaded for \(field.name)") }
            let reference: [String: Any] = ["id": file.id, "byte_count": file.byteCount, "content_type": file.contentType]
            return rule.multiple ? Array(repeating: reference, count: Swift.max(rule.count.min ?? 1, 1)) : reference
        case .list(let list):
            let count = Swift.max(list.count.min ?? 1, 1)
            var items: [[String: Any]] = []
            for _ in 0..<count {
                var item: [String: Any] = [:]
                for inner in list.fields where Self.needed(inner) {
                    item[inner.name] = try value(inner, variant: variant, varied: &varied, depth: depth + 1)
                }
                for inner in list.fields where item[inner.name] == nil && inner.requiredIf.contains(where: { holds($0, item) }) {
                    item[inner.name] = try value(inner, variant: variant, varied: &varied, depth: depth + 1)
                }
                items.append(item)
            }
            return items
        }
    }

    /// The media types of the files a sample of `form` holds (its required file fields, and
    /// those `extra` names, at any depth of required lists).
    static func mediaTypes(of form: FormDefinition, including extra: Set<String> = []) -> Set<String> {
        var types: Set<String> = []
        func walk(_ fields: [FieldDefinition], top: Bool, depth: Int) {
            guard depth < 16 else { return }
            for field in fields where needed(field) || !field.requiredIf.isEmpty || (top && extra.contains(field.name)) {
                switch field.kind {
                case .file(_, let rule): types.insert(mediaType(accepted: rule.contentTypes))
                case .list(let list): walk(list.fields, top: false, depth: depth + 1)
                default: break
                }
            }
        }
        walk(form.fields, top: true, depth: 0)
        return types
    }

    /// A concrete media type among `accepted` (`image/*` becomes `image/png`); any when empty.
    static func mediaType(accepted: [String]) -> String {
        guard let first = accepted.first else { return "application/octet-stream" }
        guard first.hasSuffix("/*") else { return first }
        let major = first.dropLast(2).lowercased()
        return [
            "image": "image/png", "audio": "audio/mp4", "video": "video/mp4", "text": "text/plain",
            "application": "application/octet-stream",
        ][major]
            ?? "\(major)/octet-stream"
    }
}
