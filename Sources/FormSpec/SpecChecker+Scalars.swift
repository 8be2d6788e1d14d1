import FormSyncPattern
import Foundation

/// Reading typed scalars strictly (YAML 1.1 booleans, octal-looking numbers and nulls are refused).
extension SpecChecker {
    static let yaml11Booleans: Set<String> = [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
        "True", "TRUE", "False", "FALSE",
    ]
    static let yamlNulls: Set<String> = ["", "~", "null", "Null", "NULL"]

    mutating func mapping(_ node: YAMLNode, _ what: String) -> [Pair]? {
        if case .invalid = node.kind { return nil }
        guard case .mapping(let pairs) = node.kind else {
            error(node.location, "\(what) must be a mapping of keys to values, found \(node.kindName)")
            return nil
        }
        return pairs
    }

    /// The pairs of a mapping by key; with `allowed`, unknown keys are reported.
    mutating func keyed(_ pairs: [Pair], allowed: [String]?, context: String) -> [String: Pair] {
        var result: [String: Pair] = [:]
        for pair in pairs {
            guard let key = pair.key.scalar else { continue }
            if let allowed, !allowed.contains(key) {
                error(pair.key.location, "unknown key '\(key)' \(context)\(suggestion(key, allowed, orList: true))")
                continue
            }
            result[key] = pair
        }
        return result
    }

    /// A text value. Plain scalars that other YAML tools would read as booleans or null are
    /// refused, so a spec means the same thing everywhere.
    mutating func text(_ node: YAMLNode, _ what: String) -> String? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind else {
            error(node.location, "\(what) must be a single value, found \(node.kindName)")
            return nil
        }
        if plain {
            if Self.yamlNulls.contains(value) {
                error(node.location, "\(what) has no value")
                return nil
            }
            if Self.yaml11Booleans.contains(value) || value == "true" || value == "false" {
                error(
                    node.location, "plain '\(value)' is read as a boolean by YAML 1.1 tools; quote it (\"\(value)\") if you mean the text")
                return nil
            }
        }
        return value
    }

    mutating func bool(_ node: YAMLNode, _ what: String) -> Bool? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind else {
            error(node.location, "\(what) must be true or false, found \(node.kindName)")
            return nil
        }
        if plain && value == "true" { return true }
        if plain && value == "false" { return false }
        if plain && Self.yaml11Booleans.contains(value) {
            error(node.location, "'\(value)' is not a boolean in a FormSync spec (YAML 1.1 reads it as one); write true or false")
        } else {
            error(node.location, "\(what) must be true or false, found '\(value)'")
        }
        return nil
    }

    mutating func integer(_ node: YAMLNode, _ what: String) -> Int? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind else {
            error(node.location, "\(what) must be an integer, found \(node.kindName)")
            return nil
        }
        guard plain else {
            error(node.location, "\(what) must be an integer, found the quoted text '\(value)'")
            return nil
        }
        let digits = value.hasPrefix("-") ? value.dropFirst() : Substring(value)
        if digits.count > 1, digits.hasPrefix("0"), digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
            let fixed = digits.drop { $0 == "0" }
            error(
                node.location,
                "'\(value)' has a leading zero, which YAML 1.1 reads as an octal number; write \(value.hasPrefix("-") ? "-" : "")\(fixed.isEmpty ? "0" : String(fixed))"
            )
            return nil
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            error(node.location, "\(what) must be an integer, found '\(value)'")
            return nil
        }
        guard let number = Int(value) else {
            error(node.location, "\(what) '\(value)' is outside the 64-bit range the generated Int64 holds exactly")
            return nil
        }
        return number
    }

    /// An exact decimal literal such as `12.50`, kept as written.
    mutating func decimal(_ node: YAMLNode, _ what: String) -> String? {
        if case .invalid = node.kind { return nil }
        guard case .scalar(let value, let plain) = node.kind, plain,
            Self.isDecimalLiteral(value)
        else {
            error(node.location, "\(what) must be a decimal number such as 12.5, found \(node.scalar.map { "'\($0)'" } ?? node.kindName)")
            return nil
        }
        let significant = value.filter(\.isNumber).drop { $0 == "0" }
        guard significant.count <= 38 else {
            error(node.location, "\(what) '\(value)' has more than 38 significant digits, more than the generated Decimal holds exactly")
            return nil
        }
        // Decimal's exponent stops at -128: a bound with more digits after the point would be
        // read as 0 by the generated code, as no bound by the interpreter, and as itself by the
        // JSON Schema.
        let fractionDigits = value.split(separator: ".", omittingEmptySubsequences: false).dropFirst().first?.count ?? 0
        guard fractionDigits <= 128, Decimal(string: value, locale: Locale(identifier: "en_US_POSIX")) != nil else {
            error(
                node.location,
                "\(what) '\(value.prefix(40))…' has \(fractionDigits) digits after the point; a decimal bound holds at most 128, so that every check reads it exactly"
            )
            return nil
        }
        return value
    }

    mutating func stringList(_ node: YAMLNode, _ what: String) -> [(value: String, location: SourceLocation)] {
        guard case .sequence(let items) = node.kind else {
            error(node.location, "\(what) must be a list")
            return []
        }
        return items.compactMap { item in text(item, what).map { ($0, item.location) } }
    }

    /// `type/subtype` or `type/*`, lower case, as `content_types` takes them.
    static func isMediaType(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].unicodeScalars.allSatisfy(\.isASCIILowercase) else { return false }
        if parts[1] == "*" { return true }
        guard let first = parts[1].unicodeScalars.first, first.isASCIILowercase || first.isASCIIDigit else { return false }
        return parts[1].unicodeScalars.allSatisfy { $0.isASCIILowercase || $0.isASCIIDigit || ".+-".unicodeScalars.contains($0) }
    }

    /// `-12.50`, `0`, `3`: an optional minus, an integer part without a leading zero, an optional fraction.
    static func isDecimalLiteral(_ text: String) -> Bool {
        var rest = Substring(text)
        if rest.hasPrefix("-") { rest = rest.dropFirst() }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty,
            whole.unicodeScalars.allSatisfy(\.isASCIIDigit), whole == "0" || !whole.hasPrefix("0")
        else { return false }
        return parts.count == 1 || (!parts[1].isEmpty && parts[1].unicodeScalars.allSatisfy(\.isASCIIDigit))
    }

    /// ` (did you mean 'x'?)` for a near miss, or the list of choices when asked and none is near.
    func suggestion(_ word: String, _ candidates: [String], orList: Bool = false) -> String {
        Self.suggestion(word, candidates, orList: orList)
    }

    static func suggestion(_ word: String, _ candidates: [String], orList: Bool = false) -> String {
        let limit = max(1, word.count / 3)
        var best: (name: String, distance: Int)?
        for candidate in candidates.sorted() {
            let distance = Self.editDistance(word.lowercased(), candidate.lowercased())
            if distance <= limit, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        if let best { return " (did you mean '\(best.name)'?)" }
        if orList && !candidates.isEmpty { return " (expected one of: \(candidates.joined(separator: ", ")))" }
        return ""
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            previous = current
        }
        return previous[b.count]
    }
}
