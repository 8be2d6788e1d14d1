import FormSyncPattern
import Foundation

/// Checking rule values: options, counts, bounds, sizes.
extension SpecChecker {
    /// The options of a list, and the columns they carry: an option is a value (`harbour`) or a
    /// mapping with its value and the same columns as every other (`{ value: harbour, region: north }`).
    mutating func options(_ node: YAMLNode, context: String) -> (options: [ChoiceOption], columns: [String])? {
        guard case .sequence(let items) = node.kind else {
            error(node.location, "\(context) options must be a list such as [delivered, refused]")
            return nil
        }
        if items.isEmpty {
            error(node.location, "\(context) needs at least one option")
            return nil
        }
        var options: [ChoiceOption] = []
        var seenValues: [String: SourceLocation] = [:]
        var seenCases: [String: String] = [:]
        var columns: [String]?
        for item in items {
            var columnValues: [String] = []
            var valueNode = item
            if case .mapping(let pairs) = item.kind {
                let keys = keyed(pairs, allowed: nil, context: "")
                guard let node = keys["value"]?.value else {
                    error(item.location, "an option with columns needs its 'value', such as { value: harbour, region: north }")
                    continue
                }
                valueNode = node
                let names = pairs.compactMap(\.key.scalar).filter { $0 != "value" }
                for (key, _) in pairs where key.scalar != "value" {
                    let name = key.scalar ?? ""
                    if !Naming.isIdentifier(name, firstLowercase: true) || Self.reservedColumns.contains(name) {
                        error(
                            key.location,
                            "column '\(name)' must be a lower-case name other than \(Self.reservedColumns.joined(separator: ", "))")
                    }
                }
                if let expected = columns {
                    if names != expected {
                        error(
                            item.location,
                            "every option of \(context) carries the columns \(expected.joined(separator: ", ")) in that order; this one has \(names.isEmpty ? "none" : names.joined(separator: ", "))"
                        )
                        continue
                    }
                } else {
                    columns = names
                }
                columnValues = names.compactMap { keys[$0].flatMap { text($0.value, "column '\($0.key.scalar ?? "")'") } }
                guard columnValues.count == names.count else { continue }
            } else if let expected = columns, !expected.isEmpty {
                error(
                    item.location, "every option of \(context) carries the columns \(expected.joined(separator: ", ")); this one has none")
                continue
            } else {
                columns = []
            }
            guard let value = text(valueNode, "option") else { continue }
            let item = valueNode
            guard let first = value.unicodeScalars.first, first.isASCIILetter || first.isASCIIDigit,
                value.unicodeScalars.allSatisfy({ $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" })
            else {
                error(item.location, "option '\(value)' must hold only letters, digits and underscores")
                continue
            }
            if let first = seenValues[value] {
                error(item.location, "option '\(value)' is listed twice (first at line \(first.line), column \(first.column))")
                continue
            }
            var caseName = Naming.lowerCamel(value)
            if caseName.first!.isNumber { caseName = "_" + caseName }
            if let other = seenCases[caseName] {
                error(item.location, "options '\(value)' and '\(other)' both become the Swift case '\(caseName)'")
                continue
            }
            seenValues[value] = item.location
            seenCases[caseName] = value
            options.append(ChoiceOption(value: value, caseName: caseName, columnValues: columnValues))
        }
        return options.isEmpty ? nil : (options, columns ?? [])
    }

    /// Column names an option may not use: the generated enum has members by these names.
    static let reservedColumns = ["value", "raw_value", "all_cases", "hash_value", "description", "init"]

    mutating func counts(_ keys: [String: Pair]) -> CountRule {
        let min = keys["min_count"].flatMap { nonNegative($0.value, "min_count") }
        let max = keys["max_count"].flatMap { positive($0.value, "max_count") }
        orderCheck(min, max, keys["max_count"], "max_count", "min_count")
        return CountRule(min: min, max: max)
    }

    mutating func orderCheck<T: Comparable>(_ min: T?, _ max: T?, _ maxPair: Pair?, _ maxName: String, _ minName: String) {
        if let min, let max, let node = maxPair?.value, max < min {
            error(node.location, "\(maxName) (\(max)) is less than \(minName) (\(min))")
        }
    }

    mutating func nonNegative(_ node: YAMLNode, _ what: String) -> Int? {
        guard let value = integer(node, what) else { return nil }
        if value < 0 {
            error(node.location, "\(what) must be 0 or more")
            return nil
        }
        return value
    }

    mutating func positive(_ node: YAMLNode, _ what: String) -> Int? {
        guard let value = integer(node, what) else { return nil }
        if value < 1 {
            error(node.location, "\(what) must be 1 or more")
            return nil
        }
        return value
    }

    /// `8MB`, `500KB`, `1GB` (powers of 1024) or a plain number of bytes.
    mutating func byteSize(_ node: YAMLNode) -> Int64? {
        guard let raw = node.scalar else {
            error(node.location, "max_bytes must be a size such as 8MB, 500KB or 1048576")
            return nil
        }
        if raw.allSatisfy(\.isNumber) {
            guard let value = integer(node, "max_bytes") else { return nil }
            if value < 1 {
                error(node.location, "max_bytes must be 1 or more")
                return nil
            }
            return Int64(value)
        }
        let units: [(String, Int64)] = [("KB", 1024), ("MB", 1024 * 1024), ("GB", 1024 * 1024 * 1024), ("B", 1)]
        for (suffix, factor) in units where raw.hasSuffix(suffix) {
            let digits = raw.dropLast(suffix.count)
            if let number = Int64(digits), number > 0, !digits.hasPrefix("0"), number <= Int64.max / factor {
                return number * factor
            }
        }
        error(node.location, "max_bytes '\(raw)' must be a size such as 8MB, 500KB or 1048576")
        return nil
    }
}
